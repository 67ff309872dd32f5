"""Subscriptions by regular expression in KIP-848 groups: a Java 4.1 consumer with
group.protocol=consumer subscribes with a SubscriptionPattern, which the broker resolves. It
reads every record of the two topics the pattern matches, then of a third one created while it
runs; a topic whose name merely contains a match is not read, and the Admin sees the pattern's
topics assigned."""

import uuid

from conftest import create_topic
from java_group import JavaMember, Timeline, describe_group
from test_groups import produce
from waiting import wait_until

PARTITIONS = 3
RECORDS = 150


def records_by_topic(member):
    """topic -> [value] of every record the member printed, in arrival order."""
    out = {}
    for line in list(member.lines):
        if line.get("event") == "record":
            out.setdefault(line["topic"], []).append(line["value"])
    return out


def test_java_consumer_subscribed_by_pattern_reads_matching_topics_including_one_created_later(broker):
    uid = uuid.uuid4().hex[:8]
    prefix = f"regex-{uid}-"
    first = create_topic(broker.bootstrap, f"{prefix}a", PARTITIONS)
    second = create_topic(broker.bootstrap, f"{prefix}b", PARTITIONS)
    decoy = create_topic(broker.bootstrap, f"x{prefix}a", 1)  # contains a match, is not one
    for topic in (first, second, decoy):
        produce(broker.bootstrap, topic, RECORDS)
    expected = {f"v-{i}" for i in range(RECORDS)}
    group = f"e2e-kip848-regex-{uid}"
    member = JavaMember("a", broker.bootstrap, group, None, Timeline(), pattern=f"{prefix}.*")
    try:
        consumed = lambda topic: set(records_by_topic(member).get(topic, ()))
        wait_until(lambda: consumed(first) == expected and consumed(second) == expected, 90,
                   "every record of the two matching topics consumed")

        third = create_topic(broker.bootstrap, f"{prefix}c", PARTITIONS)
        produce(broker.bootstrap, third, RECORDS)
        wait_until(lambda: consumed(third) == expected, 120,
                   "every record of the topic created later consumed")

        seen = records_by_topic(member)
        assert decoy not in seen, "a topic the pattern matches only in part was consumed"
        for topic in (first, second, third):
            assert len(seen[topic]) == RECORDS, f"{topic}: a record was consumed twice"
        described = describe_group(broker.bootstrap, group)
        assert described["type"].lower() == "consumer", described
        assigned = sorted(tuple(p) for m in described["members"] for p in m["partitions"])
        assert assigned == [(t, p) for t in (first, second, third) for p in range(PARTITIONS)], described
        assert not member.errors(), member.errors()[:3]
        member.leave()
    finally:
        member.kill()


def test_java_consumer_with_an_invalid_pattern_is_refused(broker):
    group = f"e2e-kip848-regex-bad-{uuid.uuid4().hex[:8]}"
    member = JavaMember("x", broker.bootstrap, group, None, Timeline(), pattern="regex-(", duration_ms=20_000)
    try:
        member.proc.wait(timeout=60)
    finally:
        member.kill()
    errors = [line["error"] for line in member.lines if "error" in line]
    assert errors and errors[0].startswith("InvalidRegularExpression"), member.lines[-3:]
