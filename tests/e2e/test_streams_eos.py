"""Kafka Streams 4.1 under processing.guarantee=exactly_once_v2 (tests/clients/streams,
EosWordCount.java): a stateful word count over 100,000 input lines (300,000 words) while
brokers are SIGKILLed and restarted mid-run. The output topic, read in read_committed, must
hold for every word exactly the updates 1, 2, ..., its final count: nothing lost, nothing
counted twice, no update of an aborted transaction. The store cache is off, so each input word
yields one update."""

import os
import signal
import struct
import subprocess
import threading
import time
import uuid
from collections import Counter, defaultdict

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from cluster import Cluster, tools_available
from conftest import create_topic
from test_kafka_streams import app_classpath
from txn_support import use_transaction_version_1
from waiting import wait_until

LINES, VOCABULARY, PARTITIONS, PHASES = 100_000, 200, 2, 3
WORDS = LINES * 3
PROGRESS = 1_000  # updates of a phase seen before its broker kill: the kill lands mid-run
DONE_S = 300


def line(i: int) -> str:
    return f"w{i % VOCABULARY} w{(i * 7 + 3) % VOCABULARY} w{(i * 13 + 5) % VOCABULARY}"


EXPECTED = Counter(word for i in range(LINES) for word in line(i).split())


class EosApp:
    def __init__(self, bootstrap: str, app_id: str, source: str, sink: str, state_dir, log):
        self.lines, self.log = [], open(log, "ab")
        self.timeline, self.started = [], time.monotonic()
        self.proc = subprocess.Popen(
            ["java", "-Xmx384m", "-cp", app_classpath(), "e2e.EosWordCount", bootstrap, app_id, source, sink,
             str(state_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for out in self.proc.stdout:
            self.lines.append(out.decode().strip())
            self.timeline.append((round(time.monotonic() - self.started, 1), self.lines[-1]))

    def running(self) -> bool:
        assert self.proc.poll() is None, f"the app exited: {self.lines}"
        assert '{"state":"ERROR"}' not in self.lines, self.lines
        return '{"state":"RUNNING"}' in self.lines

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=90)
        self.log.close()
        assert '{"closed":true}' in self.lines, self.lines


class UpdatesReader(threading.Thread):
    """Every count update of the output topic a read_committed consumer sees, per word, from
    offset 0 until told to stop and at the end of every partition."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.updates = defaultdict(list)
        self.count = 0
        self.stop = threading.Event()

    def run(self):
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"eos-reader-{uuid.uuid4().hex[:6]}",
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "enable.partition.eof": True, "fetch.wait.max.ms": 100, "log_level": 0})
        c.assign([TopicPartition(self.topic, p, 0) for p in range(PARTITIONS)])
        at_end = set()
        try:
            while not (self.stop.is_set() and len(at_end) == PARTITIONS):
                for m in c.consume(num_messages=1000, timeout=0.5):
                    if m.error() is None:
                        at_end.discard(m.partition())
                        self.updates[m.key().decode()].append(struct.unpack(">q", m.value())[0])
                        self.count += 1
                    elif m.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(m.partition())
        finally:
            c.close()


def produce_lines(bootstrap: str, topic: str, lines: range) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "log_level": 0})
    for i in lines:
        while True:
            try:
                p.produce(topic, key=f"line-{i}", value=line(i))
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def count_words_while(bootstrap: str, tmp_path, kills: list) -> dict:
    """Runs the app over LINES lines fed in PHASES phases, calling one of `kills` (kill a broker,
    restart it) once the app is `PROGRESS` updates into each phase after the first; returns the
    updates per word once all WORDS are counted."""
    source = create_topic(bootstrap, f"eos-in-{uuid.uuid4().hex[:8]}", PARTITIONS)
    sink = create_topic(bootstrap, f"eos-out-{uuid.uuid4().hex[:8]}", PARTITIONS)
    reader = UpdatesReader(bootstrap, sink)
    reader.start()
    at_kills = []
    app = EosApp(bootstrap, f"eos-{uuid.uuid4().hex[:8]}", source, sink, tmp_path / "state", tmp_path / "app.log")
    try:
        wait_until(app.running, 120, "the app to run")
        step = LINES // PHASES
        bounds = [range(k * step, LINES if k == PHASES - 1 else (k + 1) * step) for k in range(PHASES)]
        produce_lines(bootstrap, source, bounds[0])
        for k, kill in enumerate(kills, start=1):
            before = 3 * bounds[k - 1].start
            wait_until(lambda: reader.count >= before + PROGRESS, 180, f"the app into phase {k}")
            at_kills.append((reader.count, round(time.monotonic() - app.started, 1)))
            kill()
            produce_lines(bootstrap, source, bounds[k])
        for rest in bounds[len(kills) + 1:]:
            produce_lines(bootstrap, source, rest)
        wait_until(lambda: reader.count >= WORDS, DONE_S, f"{WORDS} updates")
        time.sleep(3)  # an update counted twice would still arrive
        assert not any(out.startswith('{"state":"ERROR"') for out in app.lines), app.lines
    finally:
        app.stop()
        reader.stop.set()
        reader.join(timeout=60)
    print(f"app states (s since start): {app.timeline}")
    print(f"updates={reader.count} updates_and_s_at_each_kill={at_kills} done_s={round(time.monotonic() - app.started, 1)} replaced_threads={sum(1 for out in app.lines if 'replaced' in out)}")
    return reader.updates


def assert_exactly_once(updates: dict) -> None:
    wrong = {w: (u[:3], u[-3:], len(u)) for w, u in updates.items() if u != list(range(1, EXPECTED[w] + 1))}
    assert not wrong, f"{len(wrong)} words whose updates are not 1..count, e.g. {list(wrong.items())[:3]}"
    assert set(updates) == set(EXPECTED), sorted(set(EXPECTED) - set(updates))[:5]


def restart(broker):
    def kill():
        broker.kill(signal.SIGKILL)
        time.sleep(0.3)
        broker.start()
    return kill


def test_exactly_once_v2_counts_are_exact_across_two_broker_sigkills(broker_factory, tmp_path):
    app_classpath()
    broker = broker_factory()
    use_transaction_version_1(broker)
    assert_exactly_once(count_words_while(broker.bootstrap, tmp_path, [restart(broker), restart(broker)]))


def test_exactly_once_v2_counts_are_exact_across_a_cluster_broker_sigkill(target, tmp_path):
    """Ours only: the reference Kafka of this suite (scripts/kafka-reference.sh) is a single
    KRaft node, so there is no cluster in which to kill one broker of three."""
    if target == "kafka":
        pytest.skip("the reference Kafka is a single broker: no cluster to kill one broker of")
    if not tools_available():
        if os.environ.get("CI"):
            pytest.fail("oxia or moto_server missing: run scripts/install-oxia.sh and scripts/install-s3.sh")
        pytest.skip("oxia or moto_server missing (scripts/install-oxia.sh, scripts/install-s3.sh)")
    app_classpath()
    cluster = Cluster(tmp_path / "cluster").start()
    try:
        assert_exactly_once(count_words_while(cluster.bootstrap, tmp_path, [restart(cluster.brokers[1])]))
    finally:
        cluster.stop()
