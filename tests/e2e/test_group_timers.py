"""Group timers and static membership (KIP-345, and its KIP-848 form) with real clients:
librdkafka through confluent-kafka and the Java client (tests/clients/java, "static-member" mode)
on the classic protocol, and the Java client on the consumer protocol (KIP-848).

- Static members that close without leaving stay members until their session timeout, and no
  longer: DeleteGroups answers NON_EMPTY_GROUP until then and succeeds right after.
- A static member restarted within its session timeout gets its partitions back and nobody else
  notices: no revocation or new assignment on the other member, the same generation (member
  epoch), and nothing happens either when the old incarnation's session would have run out.

The broker (one for this module) runs with a 6 s consumer-protocol session timeout, Kafka's
smallest classic one, which the classic members ask for too, and a 1 s heartbeat interval; the
reference Kafka is given the same settings. Times are taken from this process's monotonic clock
around each client's close, so margins cover the client's own heartbeat interval on one side and
a loaded machine on the other."""

import json
import os
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from clients_cli import JavaDriver
from conftest import create_topic, unique_topic
from targets import BrokerProcess
from waiting import wait_until

SESSION_MS = 6000
SESSION_S = SESSION_MS / 1000
# Classic members heartbeat this often (they choose); consumer-protocol members as the broker says.
CLASSIC_HEARTBEAT_MS = 500
CONSUMER_HEARTBEAT_MS = 1000
# Expiry may come this much before "last close + session timeout - heartbeat interval" (clock
# granularity, a heartbeat sent a little early) ...
EARLY_S = 0.5
# ... and this much after the session timeout counted from the end of the last close.
LATE_S = 2.0
PARTITIONS = 4

# Our broker reads its flags from the environment; the reference Kafka from
# KAFKA_REFERENCE_PROPERTIES (scripts/kafka-reference.sh).
BROKER_ENV = {
    "BROKER_GROUP_CONSUMER_SESSION_TIMEOUT_MS": str(SESSION_MS),
    "BROKER_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": str(CONSUMER_HEARTBEAT_MS),
    # As the reference Kafka is configured.
    "BROKER_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_REFERENCE_PROPERTIES": " ".join([
        f"group.consumer.session.timeout.ms={SESSION_MS}",
        f"group.consumer.min.session.timeout.ms={SESSION_MS}",
        f"group.consumer.heartbeat.interval.ms={CONSUMER_HEARTBEAT_MS}",
        f"group.consumer.min.heartbeat.interval.ms={CONSUMER_HEARTBEAT_MS}",
    ]),
}

CLIENTS = ["librdkafka", "java-classic", "java-consumer"]


@pytest.fixture(scope="module")
def timer_broker(target, tmp_path_factory):
    saved = {k: os.environ.get(k) for k in BROKER_ENV}
    os.environ.update(BROKER_ENV)
    try:
        broker = BrokerProcess(target, tmp_path_factory.mktemp(f"{target}-timers"))
        broker.start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield broker
    broker.stop()


class RdStaticMember:
    """A confluent-kafka static member (eager range assignor) polling in its own thread.
    `events`: (monotonic s, kind, frozenset of partitions)."""

    heartbeat_s = CLASSIC_HEARTBEAT_MS / 1000

    def __init__(self, bootstrap, group, topic, instance):
        self.events = []
        self.error = None
        self.closing = self.closed = None
        self.stop = threading.Event()
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance,
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": CLASSIC_HEARTBEAT_MS,
            "partition.assignment.strategy": "range", "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        })
        self.thread = threading.Thread(target=self._run, args=(topic,), daemon=True)
        self.thread.start()

    def _event(self, kind, partitions):
        self.events.append((time.monotonic(), kind, frozenset(p.partition for p in partitions)))

    def _run(self, topic):
        try:
            self.consumer.subscribe([topic], on_assign=lambda c, ps: self._event("assigned", ps),
                                    on_revoke=lambda c, ps: self._event("revoked", ps),
                                    on_lost=lambda c, ps: self._event("lost", ps))
            while not self.stop.is_set():
                self.consumer.poll(0.1)
            self.closing = time.monotonic()
            self.consumer.close()  # a static member: no LeaveGroup
            self.closed = time.monotonic()
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"

    def close(self):
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "librdkafka member did not close"
        assert self.error is None, self.error

    def kill(self):
        """Cleanup after a failure: closes without checking anything."""
        self.stop.set()
        self.thread.join(timeout=30)


class JavaStaticMember:
    """A Java static member in its own JVM ("static-member" mode); closes on "close" on stdin.
    `events`: (monotonic s when read, kind, frozenset of partitions or the generation)."""

    def __init__(self, bootstrap, group, topic, instance, protocol):
        self.heartbeat_s = (CLASSIC_HEARTBEAT_MS if protocol == "classic" else CONSUMER_HEARTBEAT_MS) / 1000
        self.events = []
        self.lines = []
        self.stderr = []
        self.closing = self.closed = None
        cmd = JavaDriver.command + [
            "static-member", "--bootstrap", bootstrap, "--group", group, "--topic", topic,
            "--instance-id", instance, "--protocol", protocol,
            "--session-timeout-ms", str(SESSION_MS), "--heartbeat-interval-ms", str(CLASSIC_HEARTBEAT_MS)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for raw in self.proc.stdout:
            now = time.monotonic()
            if not raw.startswith("{"):
                continue
            line = json.loads(raw)
            self.lines.append(line)
            kind = line.get("event")
            if kind in ("assigned", "revoked", "lost"):
                self.events.append((now, kind, frozenset(p for _, p in line["partitions"])))
            elif kind == "member":
                self.events.append((now, "generation", line["generation"]))
            elif kind == "closed":
                self.closed = now

    def _read_stderr(self):
        for raw in self.proc.stderr:
            self.stderr.append(raw)
            del self.stderr[:-50]

    @property
    def generation(self):
        generations = [value for _, kind, value in self.events if kind == "generation"]
        return generations[-1] if generations else None

    def close(self):
        self.closing = time.monotonic()
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("java member did not close within 30 s")
        wait_until(lambda: self.closed is not None, 5, "the closed line")
        assert self.proc.returncode == 0, f"{self.lines[-3:]} {''.join(self.stderr)[-1000:]}"

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def member_factory(client, bootstrap, group, topic):
    if client == "librdkafka":
        return lambda instance: RdStaticMember(bootstrap, group, topic, instance)
    protocol = "classic" if client == "java-classic" else "consumer"
    return lambda instance: JavaStaticMember(bootstrap, group, topic, instance, protocol)


def owned(member):
    """The partitions a member holds, from its own callbacks."""
    held = set()
    for _, kind, value in member.events:
        if kind == "assigned":
            held |= value
        elif kind in ("revoked", "lost"):
            held -= value
    return frozenset(held)


def settled(members):
    """Whether the members report one generation (the Java client reports it, as the member
    epoch on the consumer protocol; it may lag the callbacks): then no rebalance is under way."""
    generations = {getattr(m, "generation", 1) for m in members}
    return len(generations) == 1 and generations.isdisjoint({None, -1, 0})


def wait_shared(members, timeout_s=60):
    """Until every partition is held, each member holding its share, all in one generation."""
    share = PARTITIONS // len(members)
    wait_until(lambda: sorted(p for m in members for p in owned(m)) == list(range(PARTITIONS))
               and all(len(owned(m)) == share for m in members) and settled(members), timeout_s,
               f"{PARTITIONS} partitions shared by {len(members)} members")


def delete_when_empty(bootstrap, group, timeout_s):
    """Sends DeleteGroups every 100 ms until it succeeds; until then the only acceptable
    answer is NON_EMPTY_GROUP. Returns when the successful request was sent and when its
    answer came: the group emptied in between (or before)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        sent = time.monotonic()
        try:
            admin.delete_consumer_groups([group], request_timeout=10)[group].result()
            return sent, time.monotonic()
        except KafkaException as e:
            assert e.args[0].code() == KafkaError.NON_EMPTY_GROUP, e
        time.sleep(0.1)
    raise AssertionError(f"group {group} still not deletable after {timeout_s}s")


@pytest.mark.parametrize("client", CLIENTS)
def test_static_members_closed_without_leaving_expire_at_the_session_timeout(timer_broker, client):
    bootstrap = timer_broker.bootstrap
    topic = create_topic(bootstrap, unique_topic("timers-expiry"), PARTITIONS)
    group = f"e2e-timers-{uuid.uuid4().hex[:8]}"
    make = member_factory(client, bootstrap, group, topic)
    members = [make("a"), make("b")]
    try:
        wait_shared(members)
        for m in members:
            m.close()
        sent, answered = delete_when_empty(bootstrap, group, SESSION_S + 30)
    finally:
        for m in members:
            m.kill()
    # The group empties when the session of the member that heartbeat last runs out.
    last_closing = max(m.closing for m in members)
    last_closed = max(m.closed for m in members)
    earliest = last_closing - members[0].heartbeat_s + SESSION_S - EARLY_S
    latest = last_closed + SESSION_S + LATE_S
    print(f"{client}: deleted {sent - last_closing:.2f}s after the last close began "
          f"({sent - last_closed:.2f}s after it ended); session timeout {SESSION_S}s")
    assert answered >= earliest, f"members expired {earliest - answered:.2f}s before their session timeout"
    assert sent <= latest, f"members expired {sent - latest + LATE_S:.2f}s after their session timeout"


@pytest.mark.parametrize("client", CLIENTS)
def test_static_member_restarted_within_its_session_timeout_gets_its_partitions_back_unnoticed(
        timer_broker, client):
    bootstrap = timer_broker.bootstrap
    topic = create_topic(bootstrap, unique_topic("timers-restart"), PARTITIONS)
    group = f"e2e-timers-{uuid.uuid4().hex[:8]}"
    make = member_factory(client, bootstrap, group, topic)
    members = {"a": make("a"), "b": make("b")}
    everyone = list(members.values())
    try:
        wait_shared(list(members.values()))
        kept = {name: owned(m) for name, m in members.items()}
        generation = {name: getattr(m, "generation", None) for name, m in members.items()}
        # Each instance restarts in turn, so that the group leader (classic) is among them.
        for name in ("a", "b"):
            old = members[name]
            seen = {other: len(m.events) for other, m in members.items() if other != name}
            old.close()
            new = members[name] = make(name)
            everyone.append(new)
            wait_until(lambda: owned(new) == kept[name] and settled(members.values()), SESSION_S + 30,
                       f"restarted {name} given {sorted(kept[name])} back")
            back_at = max(t for t, kind, _ in new.events if kind == "assigned")
            assert back_at < old.closing + SESSION_S, \
                "the partitions came back only after the old incarnation's session ran out"
            for other, count in seen.items():
                assert members[other].events[count:] == [], \
                    f"{other} noticed {name}'s restart: {members[other].events[count:]}"
        # Past the old incarnations' session timeouts nothing happens either.
        quiet = {name: len(m.events) for name, m in members.items()}
        time.sleep(max(0.0, old.closing + SESSION_S + LATE_S - time.monotonic()))
        for name, m in members.items():
            assert m.events[quiet[name]:] == [], f"{name} saw {m.events[quiet[name]:]}"
            assert owned(m) == kept[name]
            assert [kind for _, kind, _ in m.events if kind in ("revoked", "lost")] == []
            if generation[name] is not None:
                assert m.generation == generation[name], f"{name}'s generation changed"
    finally:
        for m in everyone:
            m.kill()
