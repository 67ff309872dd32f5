"""Kafka Streams 4.1 with a stateful topology (groupBy + count, and a windowed count) on the
broker, `processing.guarantee=at_least_once` (tests/clients/streams): exact counts for 100,000
input records; the app stopped, its local state directory deleted, and on restart the stores
restored from their changelogs (compacted topics Streams created and validated) and the counts
continue exactly. Passes against the reference Kafka too (E2E_TARGET=kafka)."""

import shutil
import struct
import subprocess
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from conftest import create_topic
from targets import REPO
from waiting import wait_until

APP = REPO / "tests/clients/streams"
JAR = APP / "target/e2e-streams.jar"
RECORDS, USERS, WORDS, PARTITIONS = 100_000, 50, 200, 2


def app_classpath() -> str:
    if not JAR.exists():
        if shutil.which("mvn") is None:
            pytest.skip("the Streams app is not built (scripts/install-test-deps.sh)")
        subprocess.run(["mvn", "-q", "-B", "-f", str(APP / "pom.xml"), "package"], check=True, timeout=900)
    return ":".join([str(JAR)] + [str(p) for p in sorted((APP / "target/lib").glob("*.jar"))])


class App:
    def __init__(self, bootstrap: str, app_id: str, topic: str, state_dir: Path, log: Path):
        self.lines, self.log = [], open(log, "ab")
        self.proc = subprocess.Popen(
            ["java", "-Xmx384m", "-cp", app_classpath(), "e2e.CountApp", bootstrap, app_id, topic, str(state_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.decode().strip())

    def running(self) -> bool:
        assert self.proc.poll() is None, f"the app exited: {self.lines}"
        return '{"state":"RUNNING"}' in self.lines

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()
        assert '{"closed":true}' in self.lines, self.lines


def produce(bootstrap: str, topic: str, first: int, timestamp_ms: int):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for i in range(first, first + RECORDS):
        while True:
            try:
                p.produce(topic, key=f"user-{i % USERS}", value=f"word-{i % WORDS}", timestamp=timestamp_ms)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def latest_counts(bootstrap: str, topic: str) -> dict:
    """Latest count per key of an output topic, read from the beginning to its end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    try:
        meta = c.list_topics(topic, timeout=10).topics[topic]
        parts = [TopicPartition(topic, p, 0) for p in meta.partitions]
        ends = {p.partition: c.get_watermark_offsets(p, timeout=10)[1] for p in parts}
        c.assign(parts)
        latest, done, deadline = {}, {p for p, e in ends.items() if e == 0}, time.monotonic() + 60
        while len(done) < len(ends) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
            if m.offset() + 1 >= ends[m.partition()]:
                done.add(m.partition())
        return latest
    finally:
        c.close()


def expected(rounds: int, window_start_ms: int) -> tuple:
    words = Counter(f"word-{i % WORDS}" for i in range(rounds * RECORDS))
    users = Counter(f"user-{i % USERS}@{window_start_ms}" for i in range(rounds * RECORDS))
    return dict(words), dict(users)


def wait_for_counts(bootstrap: str, topic: str, want: tuple) -> None:
    def reached():
        return latest_counts(bootstrap, f"{topic}-word-counts") == want[0] and \
            latest_counts(bootstrap, f"{topic}-user-counts") == want[1]
    wait_until(reached, 180, "exact counts", interval_s=2)


def test_stateful_counts_are_exact_and_restore_from_the_changelogs(broker, tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no java")
    app_classpath()
    topic = create_topic(broker.bootstrap, f"streams-{uuid.uuid4().hex[:8]}", PARTITIONS)
    for suffix in ("-word-counts", "-user-counts"):
        create_topic(broker.bootstrap, topic + suffix, PARTITIONS)
    app_id = f"app-{uuid.uuid4().hex[:8]}"
    hour_ms = 3_600_000
    window = int(time.time() * 1000) // hour_ms * hour_ms
    state = tmp_path / "state"
    produce(broker.bootstrap, topic, 0, window + 1000)

    app = App(broker.bootstrap, app_id, topic, state, tmp_path / "app-1.log")
    wait_until(app.running, 120, "the app to run")
    wait_for_counts(broker.bootstrap, topic, expected(1, window))
    app.stop()

    # Streams created its changelogs compacted (the windowed one compact,delete).
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(app_id) and t.endswith("-changelog")]
    assert len(names) == 2, names
    policies = set()
    for name in names:
        resource = ConfigResource(ResourceType.TOPIC, name)
        policies.add(admin.describe_configs([resource])[resource].result(timeout=30)["cleanup.policy"].value)
    assert policies == {"compact", "compact,delete"}, policies

    # No local state: the stores come back from the changelogs, and counting goes on exactly.
    shutil.rmtree(state)
    produce(broker.bootstrap, topic, RECORDS, window + 2000)
    app = App(broker.bootstrap, app_id, topic, state, tmp_path / "app-2.log")
    wait_until(app.running, 120, "the restarted app to run")
    wait_for_counts(broker.bootstrap, topic, expected(2, window))
    app.stop()
