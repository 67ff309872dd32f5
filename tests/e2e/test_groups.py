"""Consumer groups with real clients (librdkafka, kafka-python, and the Java client on the classic
protocol): consumers share a six-partition topic while members join and leave mid-stream; every
produced record is consumed, no partition is owned by two members at once, and committed offsets
resume exactly after the broker is SIGKILLed. The Java client's KIP-848 protocol is in
test_kip848.py."""

import signal
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from conftest import create_topic, unique_topic
from java_group import JavaMember, Timeline, describe_group
from waiting import wait_until

PARTITIONS = 6
COORDINATOR_LOADING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE)
RECORDS = 3000


def produce(bootstrap, topic, count, start=0, pace_s=0.0):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": False})
    failed = []
    for i in range(start, start + count):
        producer.produce(topic, key=str(i).encode(), value=f"v-{i}".encode(),
                         on_delivery=lambda err, msg: err and failed.append(err))
        producer.poll(0)
        if pace_s and i % 50 == 0:
            time.sleep(pace_s)
    assert producer.flush(60) == 0, "records still unacknowledged after 60 s"
    assert not failed, failed[:3]


class Ownership:
    """Who holds which partition, from the clients' own assign/revoke callbacks."""

    def __init__(self):
        self.lock = threading.Lock()
        self.owner = {}
        self.violations = []
        self.events = []

    def assigned(self, member, partitions):
        with self.lock:
            for p in partitions:
                current = self.owner.get(p)
                if current is not None and current != member:
                    self.violations.append((p, current, member))
                self.owner[p] = member
            self.events.append(("assign", member, sorted(partitions)))

    def revoked(self, member, partitions):
        with self.lock:
            for p in partitions:
                if self.owner.get(p) == member:
                    del self.owner[p]
            self.events.append(("revoke", member, sorted(partitions)))


class GroupMember:
    """A confluent-kafka consumer in its own thread, committing after every batch."""

    def __init__(self, name, bootstrap, group, topic, assignor, ownership, seen):
        self.name = name
        self.ownership = ownership
        self.seen = seen
        self.stop = threading.Event()
        self.error = None
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "partition.assignment.strategy": assignor,
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
            "topic.metadata.refresh.interval.ms": 2000,
        })
        self.thread = threading.Thread(target=self.run, args=(topic,), daemon=True)
        self.thread.start()

    def on_assign(self, consumer, partitions):
        self.ownership.assigned(self.name, [p.partition for p in partitions])

    def on_revoke(self, consumer, partitions):
        # Commit what was processed before giving the partitions away.
        try:
            consumer.commit(asynchronous=False)
        except Exception:
            pass  # nothing consumed yet since the last commit
        self.ownership.revoked(self.name, [p.partition for p in partitions])

    def run(self, topic):
        try:
            self.consumer.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke,
                                    on_lost=self.on_revoke)
            while not self.stop.is_set():
                batch = self.consumer.consume(num_messages=200, timeout=0.2)
                fresh = False
                for m in batch:
                    if m.error():
                        continue
                    self.seen.add((m.partition(), m.offset()))
                    fresh = True
                if fresh:
                    try:
                        self.consumer.commit(asynchronous=False)
                    except Exception as e:  # a commit racing a rebalance is retried by the next one
                        if "REBALANCE" not in str(e) and "ILLEGAL_GENERATION" not in str(e):
                            raise
            self.consumer.close()  # commits nothing more, leaves the group
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"

    def leave(self):
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), f"{self.name} did not close"
        assert self.error is None, self.error


def committed(bootstrap, group, topic):
    """Committed offsets; a coordinator that is still loading after a restart (Kafka answers
    NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for a while) is asked again."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                return {tp.partition: tp.offset
                        for tp in c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                              timeout=20)}
            except KafkaException as e:
                if not e.args[0].retriable() and e.args[0].code() not in COORDINATOR_LOADING \
                        or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def high_watermarks(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e-watermarks"})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        c.close()


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_confluent_group_shares_partitions_while_members_come_and_go_and_resumes_after_sigkill(
        broker_factory, assignor):
    broker = broker_factory()
    topic = create_topic(broker.bootstrap, unique_topic("groups"), PARTITIONS)
    group = f"e2e-group-{uuid.uuid4().hex[:8]}"
    ownership, seen = Ownership(), set()
    member = lambda name: GroupMember(name, broker.bootstrap, group, topic, assignor, ownership, seen)

    members = {name: member(name) for name in ("a", "b", "c")}
    producer = threading.Thread(target=produce, args=(broker.bootstrap, topic, RECORDS), kwargs={"pace_s": 0.05})
    producer.start()
    owned_by = lambda names: lambda: (set(ownership.owner) == set(range(PARTITIONS))
                                      and set(ownership.owner.values()) <= set(names))
    wait_until(owned_by("abc"), 60, "every partition assigned to a, b, c")
    wait_until(lambda: len(seen) > RECORDS // 5, 60, "first records consumed")
    members.pop("a").leave()
    wait_until(owned_by("bc"), 60, "a's partitions taken over by b and c")
    members["d"] = member("d")
    wait_until(lambda: "d" in ownership.owner.values(), 60, "d given partitions")
    producer.join(timeout=120)
    wait_until(lambda: len(seen) >= RECORDS, 60, "every produced record consumed")
    hw = high_watermarks(broker.bootstrap, topic)
    assert sum(hw.values()) == RECORDS
    assert seen == {(p, o) for p, n in hw.items() for o in range(n)}, "a produced record was never consumed"
    wait_until(lambda: committed(broker.bootstrap, group, topic) == hw, 30, "offsets committed up to the end")
    for m in members.values():
        m.leave()
    assert not ownership.violations, f"partitions owned by two members at once: {ownership.violations[:5]}"
    assert {e[1] for e in ownership.events if e[0] == "assign" and e[2]} >= {"b", "c", "d"}

    broker.kill(signal.SIGKILL)
    broker.start()
    assert committed(broker.bootstrap, group, topic) == hw, "committed offsets changed across the restart"
    produce(broker.bootstrap, topic, 60, start=RECORDS)
    fresh = set()
    resumed = GroupMember("e", broker.bootstrap, group, topic, assignor, Ownership(), fresh)
    wait_until(lambda: len(fresh) >= 60, 60, "records produced after the restart")
    time.sleep(1)  # anything re-read from before the restart would show up by now
    resumed.leave()
    assert all(o >= hw[p] for p, o in fresh), "the group re-read records it had committed"
    assert len(fresh) == 60


def test_kafka_python_group_commits_and_resumes_after_sigkill(broker_factory):
    from kafka import KafkaConsumer
    broker = broker_factory()
    topic = create_topic(broker.bootstrap, unique_topic("kp-groups"), PARTITIONS)
    group = f"e2e-kp-{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap, topic, 600)

    def consumer():
        return KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=10000, heartbeat_interval_ms=500)

    seen, errors = set(), []

    def run(c, stop):
        try:
            while not stop.is_set():
                batch = c.poll(timeout_ms=200)
                for records in batch.values():
                    for r in records:
                        seen.add((r.partition, r.offset))
                if batch:
                    try:
                        c.commit()
                    except Exception as e:  # CommitFailedError during a rebalance is expected
                        if "CommitFailed" not in type(e).__name__:
                            raise
            c.close()
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")

    stops, threads = [], []
    for _ in range(2):
        stop = threading.Event()
        t = threading.Thread(target=run, args=(consumer(), stop), daemon=True)
        t.start()
        stops.append(stop)
        threads.append(t)
    wait_until(lambda: len(seen) >= 600, 90, "kafka-python group consumed everything")
    hw = high_watermarks(broker.bootstrap, topic)
    wait_until(lambda: committed(broker.bootstrap, group, topic) == hw, 30, "kafka-python commits")
    for stop, t in zip(stops, threads):
        stop.set()
        t.join(timeout=30)
    assert not errors, errors

    broker.kill(signal.SIGKILL)
    broker.start()
    assert committed(broker.bootstrap, group, topic) == hw
    produce(broker.bootstrap, topic, 30, start=600)
    c = consumer()
    fresh = set()
    deadline = time.monotonic() + 60
    while len(fresh) < 30 and time.monotonic() < deadline:
        for records in c.poll(timeout_ms=500).values():
            fresh.update((r.partition, r.offset) for r in records)
    c.close()
    assert len(fresh) == 30 and all(o >= hw[p] for p, o in fresh)


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_java_classic_group_shares_partitions_while_members_come_and_go_and_resumes_after_sigkill(
        broker_factory, assignor):
    broker = broker_factory()
    topic = create_topic(broker.bootstrap, unique_topic("java-groups"), PARTITIONS)
    group = f"e2e-java-{uuid.uuid4().hex[:8]}"
    timeline = Timeline()
    member = lambda name: JavaMember(name, broker.bootstrap, group, topic, timeline, protocol="classic",
                                     assignor=assignor)
    total = 1500
    members = {name: member(name) for name in ("a", "b")}
    try:
        producer = threading.Thread(target=produce, args=(broker.bootstrap, topic, total), kwargs={"pace_s": 0.1})
        producer.start()
        shared_by = lambda names: lambda: (len(timeline.owners()) == PARTITIONS
                                           and set(timeline.owners().values()) == set(names))
        wait_until(shared_by("ab"), 90, "every partition assigned, a and b holding some")
        wait_until(lambda: len(timeline.seen) > total // 5, 60, "first records consumed")
        members.pop("a").leave()
        wait_until(shared_by("b"), 60, "a's partitions taken over by b")
        members["c"] = member("c")
        wait_until(shared_by("bc"), 60, "c given its share")
        producer.join(timeout=180)
        wait_until(lambda: len(timeline.seen) >= total, 60, "every produced record consumed")
        hw = high_watermarks(broker.bootstrap, topic)
        assert timeline.seen == {(p, o) for p, n in hw.items() for o in range(n)}, "a record was never consumed"
        wait_until(lambda: committed(broker.bootstrap, group, topic) == hw, 30, "offsets committed up to the end")
        # The Java admin asks ConsumerGroupDescribe first and falls back to DescribeGroups.
        described = describe_group(broker.bootstrap, group)
        assert described["type"].lower() == "classic", described
        assert len(described["members"]) == 2, described
        for m in members.values():
            m.leave()
        members.clear()
    finally:
        for m in members.values():
            m.kill()
    assert not timeline.violations(), f"partitions owned by two members at once: {timeline.violations()[:5]}"

    broker.kill(signal.SIGKILL)
    broker.start()
    assert committed(broker.bootstrap, group, topic) == hw, "committed offsets changed across the restart"
    produce(broker.bootstrap, topic, 30, start=total)
    late = Timeline()
    d = JavaMember("d", broker.bootstrap, group, topic, late, protocol="classic", assignor=assignor)
    try:
        wait_until(lambda: len(late.seen) >= 30, 60, "records produced after the restart")
        d.leave()
    finally:
        d.kill()
    assert len(late.seen) == 30 and all(o >= hw[p] for p, o in late.seen), "the group re-read committed records"
