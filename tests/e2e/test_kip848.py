"""The consumer group protocol of KIP-848 with the Java client (group.protocol=consumer): three
members share a six-partition topic while members join and leave mid-stream; every record is
consumed, no partition is owned by two members at once, the Admin sees a "consumer" group, and
both live members and committed offsets carry on after the broker is SIGKILLed and restarted."""

import signal
import threading
import uuid

import pytest

from conftest import create_topic, unique_topic
from java_group import JavaMember, Timeline, describe_group
from waiting import wait_until
from test_groups import PARTITIONS, committed, high_watermarks, produce

RECORDS = 3000


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_java_consumer_protocol_group_rebalances_and_survives_broker_sigkill(broker_factory, target, assignor):
    broker = broker_factory()
    topic = create_topic(broker.bootstrap, unique_topic("kip848"), PARTITIONS)
    group = f"e2e-kip848-{uuid.uuid4().hex[:8]}"
    timeline = Timeline()
    member = lambda name: JavaMember(name, broker.bootstrap, group, topic, timeline, assignor=assignor)
    members = {name: member(name) for name in ("a", "b", "c")}
    try:
        producer = threading.Thread(target=produce, args=(broker.bootstrap, topic, RECORDS),
                                    kwargs={"pace_s": 0.1})
        producer.start()
        owned_by = lambda names: lambda: (set(timeline.owners()) == set(range(PARTITIONS))
                                          and set(timeline.owners().values()) <= set(names))
        shared_by = lambda names: lambda: (len(timeline.owners()) == PARTITIONS
                                           and set(timeline.owners().values()) == set(names))
        wait_until(shared_by("abc"), 90, "every partition assigned, each of a, b, c holding some")
        wait_until(lambda: len(timeline.seen) > RECORDS // 5, 60, "first records consumed")

        members.pop("a").leave()
        wait_until(owned_by("bc"), 60, "a's partitions taken over by b and c")
        members["d"] = member("d")
        wait_until(shared_by("bcd"), 60, "d given its share")
        producer.join(timeout=180)
        wait_until(lambda: len(timeline.seen) >= RECORDS, 60, "every produced record consumed")
        hw = high_watermarks(broker.bootstrap, topic)
        assert sum(hw.values()) == RECORDS
        assert timeline.seen == {(p, o) for p, n in hw.items() for o in range(n)}, "a record was never consumed"
        wait_until(lambda: committed(broker.bootstrap, group, topic) == hw, 30, "offsets committed up to the end")

        described = describe_group(broker.bootstrap, group)
        assert described["type"].lower() == "consumer", described
        assert described["state"].lower() == "stable", described
        assert described["assignor"] == assignor
        assert len(described["members"]) == 3
        assigned = sorted(p for m in described["members"] for _, p in m["partitions"])
        assert assigned == list(range(PARTITIONS))

        # The broker dies under live members; they carry on with the restarted one.
        broker.kill(signal.SIGKILL)
        broker.start()
        assert committed(broker.bootstrap, group, topic) == hw, "committed offsets changed across the restart"
        before = len(timeline.records)
        produce(broker.bootstrap, topic, 60, start=RECORDS)
        wait_until(lambda: len(timeline.seen) >= RECORDS + 60, 90, "records produced after the restart")
        fresh = timeline.records[before:]
        assert all(o >= hw[p] for _, p, o in fresh), "a member re-read records committed before the restart"
        for m in members.values():
            m.leave()
        members.clear()
        assert not timeline.violations(), f"partitions owned by two members at once: {timeline.violations()[:5]}"
    finally:
        for m in members.values():
            m.kill()

    # A new member after everyone left resumes from the committed offsets.
    final = committed(broker.bootstrap, group, topic)
    assert sum(final.values()) == RECORDS + 60
    produce(broker.bootstrap, topic, 30, start=RECORDS + 60)
    late = Timeline()
    e = JavaMember("e", broker.bootstrap, group, topic, late, assignor=assignor)
    try:
        wait_until(lambda: len(late.seen) >= 30, 60, "the late member read the new records")
        e.leave()
    finally:
        e.kill()
    assert all(o >= final[p] for p, o in late.seen) and len(late.seen) == 30


def test_java_consumer_protocol_rejects_unknown_server_assignor(broker, new_topic):
    topic = new_topic(PARTITIONS)
    timeline = Timeline()
    m = JavaMember("x", broker.bootstrap, f"e2e-kip848-bad-{uuid.uuid4().hex[:8]}", topic, timeline,
                   assignor="no-such-assignor", duration_ms=20_000)
    try:
        m.proc.wait(timeout=60)
    finally:
        m.kill()
    errors = [line["error"] for line in m.lines if "error" in line]
    assert errors and "assignor" in errors[0].lower(), m.lines[-3:]
