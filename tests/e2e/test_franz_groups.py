"""franz-go consumer groups (issue 4): three kgo members over six partitions while members join
and leave mid-stream (every record consumed, no partition owned by two members at once), and
committed offsets that resume after the broker is SIGKILLed and restarted. The members are our
Go program's `group` mode (tests/clients/franz/group.go)."""

import json
import signal
import subprocess
import threading
import time
import uuid

from confluent_kafka import Producer

from clients_cli import BIN
from conftest import create_topic, unique_topic
from waiting import wait_until

PARTITIONS = 6
MEMBER_TIMEOUT_MS = 180_000


class Member:
    """One `franz group` process; its JSON events are collected as they arrive."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str):
        self.name = name
        self.events = []
        self.proc = subprocess.Popen(
            [str(BIN / "franz"), "group", "--bootstrap", bootstrap, "--topic", topic, "--group", group,
             "--timeout-ms", str(MEMBER_TIMEOUT_MS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.strip():
                self.events.append(json.loads(line))

    def of(self, kind: str) -> list:
        return [e for e in list(self.events) if e["event"] == kind]

    def owned(self) -> set:
        """Partitions owned now, from this member's assignment events."""
        owned = set()
        for e in list(self.events):
            if e["event"] == "assigned":
                owned |= set(e["partitions"])
            elif e["event"] in ("revoked", "lost"):
                owned -= set(e["partitions"])
        return owned

    def leave(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.reader.join(timeout=10)
        assert self.proc.returncode == 0, f"{self.name} exited {self.proc.returncode}: {self.proc.stderr.read()}"
        assert self.of("left"), f"{self.name} did not leave the group"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def ownership_intervals(member: Member) -> list:
    """(partition, start_ms, end_ms) for every stretch of ownership, from the member's own clock."""
    start, intervals = {}, []
    for e in member.events:
        if e["event"] == "assigned":
            for p in e["partitions"]:
                start.setdefault(p, e["ts_ms"])
        elif e["event"] in ("revoked", "lost"):
            for p in e["partitions"]:
                if p in start:
                    intervals.append((p, start.pop(p), e["ts_ms"]))
        elif e["event"] == "left":
            intervals += [(p, s, e["ts_ms"]) for p, s in start.items()]
            start = {}
    return intervals


def assert_never_owned_twice(members: list) -> None:
    spans = [(p, s, e, m.name) for m in members for p, s, e in ownership_intervals(m)]
    for i, (p, s, e, name) in enumerate(spans):
        for q, s2, e2, other in spans[i + 1:]:
            if p == q and name != other:
                assert e <= s2 or e2 <= s, f"partition {p} owned by {name} and {other} at once"


def consumed_values(members: list) -> dict:
    """value -> (partition, offset) over every member's records."""
    seen = {}
    for m in members:
        for e in m.of("record"):
            seen.setdefault(e["value"], (e["partition"], e["offset"]))
    return seen


class Producing:
    """A confluent-kafka producer writing numbered values until stopped; records what was acked."""

    def __init__(self, bootstrap: str, topic: str, prefix: str):
        self.acked, self.errors = {}, []
        self.stop_event = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.thread = threading.Thread(target=self._run, args=(topic, prefix), daemon=True)
        self.thread.start()

    def _on_ack(self, err, msg):
        if err is None:
            self.acked[msg.value().decode()] = (msg.partition(), msg.offset())
        else:
            self.errors.append(str(err))

    def _run(self, topic, prefix):
        i = 0
        while not self.stop_event.is_set():
            self.producer.produce(topic, key=str(i).encode(), value=f"{prefix}-{i}".encode(), on_delivery=self._on_ack)
            self.producer.poll(0)
            i += 1
            time.sleep(0.005)

    def stop(self) -> dict:
        self.stop_event.set()
        self.thread.join(timeout=30)
        assert self.producer.flush(60) == 0
        assert not self.errors, self.errors[:5]
        return self.acked


def test_three_franz_members_share_six_partitions_while_members_join_and_leave(broker):
    topic = create_topic(broker.bootstrap, unique_topic("franz-group"), PARTITIONS)
    group = f"g-{uuid.uuid4().hex[:8]}"
    members = []

    def join(name):
        m = Member(broker.bootstrap, topic, group, name)
        members.append(m)
        return m

    producing = Producing(broker.bootstrap, topic, "v")
    try:
        a = join("a")
        wait_until(lambda: a.owned() == set(range(PARTITIONS)), 60, "the first member to own every partition")
        time.sleep(1)
        b, c = join("b"), join("c")
        wait_until(lambda: [len(m.owned()) for m in (a, b, c)] == [2, 2, 2], 60, "three members with two each")
        time.sleep(1)
        a.leave()  # mid-stream: its partitions move to b and c
        wait_until(lambda: len(b.owned() | c.owned()) == PARTITIONS, 60, "b and c to take over a's partitions")
        time.sleep(1)
        d = join("d")
        wait_until(lambda: [len(m.owned()) for m in (b, c, d)] == [2, 2, 2], 60, "the new member to get its share")
        time.sleep(1)
        acked = producing.stop()
        wait_until(lambda: set(acked) <= set(consumed_values(members)), 60, "every acknowledged record to be consumed")
        for m in (b, c, d):
            m.leave()
    finally:
        producing.stop_event.set()
        for m in members:
            m.kill()
    assert len(acked) > 500
    seen = consumed_values(members)
    missing = set(acked) - set(seen)
    assert not missing, f"{len(missing)} records never consumed, e.g. {sorted(missing)[:5]}"
    for value, where in acked.items():
        assert seen[value] == where, f"{value} consumed at {seen[value]}, acked at {where}"
    assert_never_owned_twice(members)
    for m in members:
        last = {}
        for e in m.of("record"):
            assert e["offset"] > last.get(e["partition"], -1), f"{m.name}: p{e['partition']} out of order"
            last[e["partition"]] = e["offset"]
        assert not m.of("commit-error"), f"{m.name}: {m.of('commit-error')[:3]}"


def test_franz_members_resume_from_committed_offsets_after_broker_sigkill(broker_factory):
    broker = broker_factory()
    topic = create_topic(broker.bootstrap, unique_topic("franz-group-kill"), PARTITIONS)
    group = f"g-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(600):
        producer.produce(topic, key=str(i).encode(), value=f"first-{i}".encode())
    assert producer.flush(30) == 0
    first = [Member(broker.bootstrap, topic, group, f"first-{n}") for n in range(3)]
    try:
        wait_until(lambda: len(consumed_values(first)) == 600, 60, "the first 600 records")
        for m in first:
            m.leave()
    finally:
        for m in first:
            m.kill()

    for i in range(300):
        producer.produce(topic, key=str(i).encode(), value=f"second-{i}".encode())
    assert producer.flush(30) == 0
    broker.kill(signal.SIGKILL)
    broker.start()

    later = [Member(broker.bootstrap, topic, group, f"later-{n}") for n in range(3)]
    try:
        wait_until(lambda: len(consumed_values(later)) >= 300, 60, "the 300 records after the commit")
        time.sleep(2)  # anything re-read from before the commit would show up by now
        for m in later:
            m.leave()
    finally:
        for m in later:
            m.kill()
    seen = consumed_values(later)
    assert set(seen) == {f"second-{i}" for i in range(300)}, \
        f"re-read after restart: {sorted(v for v in seen if v.startswith('first-'))[:5]}"
