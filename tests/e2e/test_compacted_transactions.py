"""Transactions on a compacted topic: key compaction never lets an aborted (or undecided)
transactional record make an older committed record of its key go, so a read_committed
consumer still reads the latest committed value of every key after compaction. Passes against
the reference Kafka too (its cleaner runs on its own; ours when the test runs the compactor)."""

import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from conftest import wait_for_leaders
from targets import BrokerProcess
from test_compacted_topics import admin, compactor_once

KEYS = 10


def produce_plain(bootstrap: str, topic: str, round_no: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(KEYS):
        p.produce(topic, key=f"k{i}".encode(), value=f"plain-{round_no}".encode(), partition=0)
    assert p.flush(30) == 0


def produce_transaction(bootstrap: str, topic: str, keys: range, value: str, commit: bool) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in keys:
        p.produce(topic, key=f"k{i}".encode(), value=value.encode(), partition=0)
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)


def read_all(bootstrap: str, topic: str, isolation: str) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "isolation.level": isolation, "enable.partition.eof": True,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out, deadline = [], time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # end of partition
                    break
                continue
            out.append((m.offset(), m.key().decode(), m.value().decode()))
    finally:
        c.close()
    return out


def latest_by_key(records: list) -> dict:
    return {key: value for _, key, value in records if key.startswith("k")}


def test_aborted_transactions_never_shadow_committed_values_when_compacted(target, tmp_path):
    settings = {"log.cleaner.backoff.ms": "200"} if target == "kafka" else {"compaction": "false"}
    b = BrokerProcess(target, tmp_path / "broker", settings=settings)
    b.start()
    try:
        topic = f"e2e-compact-txn-{uuid.uuid4().hex[:8]}"
        config = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
                  "delete.retention.ms": "100", "min.compaction.lag.ms": "0"}
        a = admin(b)
        a.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(timeout=30)
        wait_for_leaders(b.bootstrap, topic, 1)
        produce_plain(b.bootstrap, topic, 0)
        time.sleep(0.3)
        produce_plain(b.bootstrap, topic, 1)
        time.sleep(0.3)
        produce_transaction(b.bootstrap, topic, range(0, 5), "committed-txn", commit=True)
        time.sleep(0.3)
        produce_transaction(b.bootstrap, topic, range(0, KEYS), "aborted-txn", commit=False)
        time.sleep(0.3)
        # The sentinel closes the segments above (both cleaners leave the active one alone).
        p = Producer({"bootstrap.servers": b.bootstrap})
        p.produce(topic, key=b"sentinel", value=b"s", partition=0)
        assert p.flush(30) == 0
        expected = {f"k{i}": "committed-txn" if i < 5 else "plain-1" for i in range(KEYS)}
        assert latest_by_key(read_all(b.bootstrap, topic, "read_committed")) == expected

        # Compacted: the first round of plain values is gone (shadowed by the second) ...
        deadline = time.monotonic() + 90
        while True:
            if target == "ours":
                compactor_once(b.data_dir)
            uncommitted = read_all(b.bootstrap, topic, "read_uncommitted")
            if not any(v == "plain-0" for _, _, v in uncommitted) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert not any(v == "plain-0" for _, _, v in uncommitted), "never compacted"
        # ... and a read_committed reader still sees every key's latest committed value.
        committed = read_all(b.bootstrap, topic, "read_committed")
        assert latest_by_key(committed) == expected
        assert not any(v == "aborted-txn" for _, _, v in committed)
    finally:
        b.stop()
