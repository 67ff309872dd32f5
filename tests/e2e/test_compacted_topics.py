"""Compacted topics (cleanup.policy=compact): the configs through real admin clients, records
without a key refused on produce, and key compaction read back by a real consumer. Every test
passes against the reference Kafka too (E2E_TARGET=kafka)."""

import os
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

import wire
from conftest import wait_for_leaders
from targets import BrokerProcess

INVALID_RECORD = 87
DYNAMIC_TOPIC, DEFAULT = 1, 5


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def describe(broker, topic: str) -> dict:
    a = admin(broker)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return a.describe_configs([resource])[resource].result(timeout=30)


def create_error(broker, topic: str, config: dict):
    a = admin(broker)
    futures = a.create_topics([NewTopic(topic, 1, 1, config=config)], operation_timeout=10)
    try:
        futures[topic].result(timeout=30)
        return None
    except Exception as e:  # KafkaException wrapping a KafkaError
        return e.args[0]


def latest_offset(broker, topic: str) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def produce_raw(broker, topic: str, batch: bytes, version: int) -> bytes:
    with wire.connect(broker.bootstrap, timeout_s=30) as s:
        s.sendall(wire.produce_request(topic, batch, 7, version))
        resp = wire.read_frame(s)
    assert resp is not None and struct.unpack_from(">i", resp)[0] == 7
    return resp


def test_every_cleanup_policy_is_accepted_with_the_cleaner_configs_and_described(broker, new_topic):
    configs = {"cleanup.policy": "compact", "min.compaction.lag.ms": "100",
               "max.compaction.lag.ms": "100000", "delete.retention.ms": "1000",
               "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100"}
    topic = new_topic(config=configs)
    described = describe(broker, topic)
    for name, value in configs.items():
        assert (described[name].value, described[name].source) == (value, DYNAMIC_TOPIC), name
    both = new_topic(config={"cleanup.policy": "compact,delete"})
    assert describe(broker, both)["cleanup.policy"].value == "compact,delete"
    plain = new_topic()
    assert (describe(broker, plain)["min.cleanable.dirty.ratio"].value,
            describe(broker, plain)["delete.retention.ms"].value) == ("0.5", "86400000")

    # Alter whole, then incrementally: a delete topic becomes compacted and back.
    a = admin(broker)
    resource = ConfigResource(ResourceType.TOPIC, plain, set_config={"cleanup.policy": "compact"})
    a.alter_configs([resource])[resource].result(timeout=30)
    assert describe(broker, plain)["cleanup.policy"].value == "compact"
    resource = ConfigResource(ResourceType.TOPIC, plain, incremental_configs=[
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND)])
    a.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert describe(broker, plain)["cleanup.policy"].value == "compact,delete"
    resource = ConfigResource(ResourceType.TOPIC, plain, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT)])
    a.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert describe(broker, plain)["cleanup.policy"].value == "delete"


def test_bad_cleaner_configs_are_refused_as_kafka_refuses_them(broker):
    for config in ({"cleanup.policy": "compact,squash"},
                   {"min.cleanable.dirty.ratio": "1.5"},
                   {"min.cleanable.dirty.ratio": "-0.1"},
                   {"delete.retention.ms": "-1"},
                   {"min.compaction.lag.ms": "-1"},
                   {"max.compaction.lag.ms": "0"},
                   {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}):
        name = f"e2e-compact-bad-{uuid.uuid4().hex[:8]}"
        error = create_error(broker, name, config)
        assert error is not None and error.code() == KafkaError.INVALID_CONFIG, (config, error)


def keyless_batch() -> bytes:
    records = wire.keyed_record(b"k", b"a", 0) + wire.keyed_record(None, b"b", 1)
    return wire.batch(records, 2)


def test_a_record_without_a_key_refuses_the_whole_batch_on_a_compacted_topic(broker, new_topic):
    topic = new_topic(config={"cleanup.policy": "compact"})
    ok = wire.batch(wire.keyed_record(b"k", b"v", 0), 1)
    assert wire.produce_error_code(produce_raw(broker, topic, ok, 8)) == 0
    error, record_errors, message = wire.produce_v8_partition(produce_raw(broker, topic, keyless_batch(), 8))
    assert error == INVALID_RECORD
    assert [i for i, _ in record_errors] == [1]
    assert record_errors == [(1, f"Compacted topic cannot accept message without key in topic partition {topic}-0")]
    print(message)
    assert message is not None and "1 record errors" in message, message
    # Kafka 4.1 answers INVALID_RECORD on the versions before KIP-467 (v3-v7) too.
    assert wire.produce_error_code(produce_raw(broker, topic, keyless_batch(), 7)) == INVALID_RECORD
    assert latest_offset(broker, topic) == 1, "nothing of the refused batches was stored"
    # A delete topic takes the same batch.
    plain = new_topic()
    assert wire.produce_error_code(produce_raw(broker, plain, keyless_batch(), 8)) == 0


def test_a_client_producing_without_a_key_gets_invalid_record(broker, new_topic):
    topic = new_topic(config={"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    got = []
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: got.append(err))
    p.flush(30)
    p.produce(topic, key=b"k", value=b"keyed", partition=0, on_delivery=lambda err, msg: got.append(err))
    p.flush(30)
    assert got[0] is not None and got[0].code() == KafkaError.INVALID_RECORD, got
    assert got[1] is None, got
    assert latest_offset(broker, topic) == 1


# --- key compaction, read back by a real client ------------------------------------------------

KEYS, ROUNDS = 40, 8
# (topic, offset) -> the create time the producer stamped.
TIMESTAMPS = {}
DELETED = {f"key-{i}" for i in range(5)}
REPO = Path(__file__).resolve().parents[2]


def compactor_once(data_dir: Path) -> None:
    """One full pass of our compactor on the broker's data dir (the broker compacts nothing)."""
    command = [os.environ.get("COMPACTOR_BIN", str(REPO / "target/debug/compactor")), "--data-dir",
               str(data_dir), "--object-store", f"file://{data_dir}/objects", "--metastore", "embedded",
               "--compaction-min-bytes", "0", "--compaction-min-age-ms", "0",
               "--compaction-grace-period-ms", "0", "--once"]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def produce_updates(bootstrap: str, topic: str) -> dict:
    """Rounds of updates of every key (a segment each: rounds are further apart than segment.ms),
    the last round deleting some keys, then a sentinel in a segment of its own. Returns
    offset -> (key, value or None)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": False})
    produced = {}

    def delivered(err, msg):
        assert err is None, err
        produced[msg.offset()] = (msg.key().decode(), None if msg.value() is None else msg.value().decode())
        TIMESTAMPS[(msg.topic(), msg.offset())] = msg.timestamp()[1]

    for round_no in range(ROUNDS):
        for i in range(KEYS):
            key = f"key-{i}"
            value = None if round_no == ROUNDS - 1 and key in DELETED else f"{key}-v{round_no}"
            p.produce(topic, key=key.encode(), value=None if value is None else value.encode(), partition=0,
                      on_delivery=delivered)
        assert p.flush(30) == 0
        time.sleep(0.3)
    time.sleep(0.3)
    p.produce(topic, key=b"sentinel", value=b"s", partition=0, on_delivery=delivered)
    assert p.flush(30) == 0
    assert len(produced) == KEYS * ROUNDS + 1
    return produced


def read_from(bootstrap: str, topic: str, offset: int, until: int) -> list:
    """(offset, key, value) from `offset` until the record at `until` (the sentinel) was read."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, offset)])
    out, deadline = [], time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append((m.offset(), m.key().decode(), None if m.value() is None else m.value().decode()))
            if m.offset() >= until:
                break
    finally:
        c.close()
    return out


def live_view(produced: dict) -> dict:
    latest = {}
    for offset in sorted(produced):
        key, value = produced[offset]
        latest[key] = (offset, value)
    return latest


def test_keyed_updates_read_back_after_compaction_hold_the_latest_value_of_every_key(target, tmp_path):
    # Kafka's cleaner looks for work every 200 ms; ours compacts only when the test runs it.
    settings = {"log.cleaner.backoff.ms": "200"} if target == "kafka" else {"compaction": "false"}
    b = BrokerProcess(target, tmp_path / "broker", settings=settings)
    b.start()
    try:
        run_compaction_scenario(b, target)
    finally:
        b.stop()


def run_compaction_scenario(b, target) -> None:
    topic = f"e2e-compact-{uuid.uuid4().hex[:8]}"
    config = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
              "delete.retention.ms": "100", "min.compaction.lag.ms": "0"}
    a = admin(b)
    a.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(timeout=30)
    wait_for_leaders(b.bootstrap, topic, 1)
    produced = produce_updates(b.bootstrap, topic)
    sentinel = max(produced)
    latest = live_view(produced)

    def compacted() -> list:
        if target == "ours":
            compactor_once(b.data_dir)
        return read_from(b.bootstrap, topic, 0, sentinel)

    # Kafka's cleaner runs on its own; ours when the compactor passes. Both keep only the latest
    # record of every key below the active segment: wait for that.
    def below_sentinel_once_per_key(got: list) -> bool:
        keys = [k for o, k, _ in got if o < sentinel]
        return bool(got) and got[-1][0] == sentinel and len(keys) == len(set(keys))

    deadline = time.monotonic() + 90
    got = compacted()
    while not below_sentinel_once_per_key(got) and time.monotonic() < deadline:
        time.sleep(1)
        got = compacted()
    assert below_sentinel_once_per_key(got), f"{len(got)} records read, not compacted"

    # Offsets never change, order is kept, and every key reads as its latest record.
    for offset, key, value in got:
        assert produced[offset] == (key, value), offset
    assert [o for o, _, _ in got] == sorted(o for o, _, _ in got)
    seen = {k: (o, v) for o, k, v in got}
    for key, (offset, value) in latest.items():
        if value is not None:
            assert seen[key] == (offset, value), key
        else:
            assert key not in seen or seen[key] == (offset, None), key  # a tombstone, or gone
    assert len(got) < len(produced)
    # Other clients step over the gaps the same way: the Java client, franz-go, kcat.
    from clients_cli import FranzDriver, JavaDriver, KcatDriver
    for driver in (JavaDriver(b.bootstrap), FranzDriver(b.bootstrap), KcatDriver(b.bootstrap)):
        records = driver.consume(topic, 0, 0, len(got), timeout_s=60)
        seen_by = [(r["offset"], r["key"], r["value"]) for r in records]
        assert seen_by == got, f"{driver.name}: {seen_by[:3]}"

    # A consumer seeking into a gap lands on the next record; so does a committed offset there.
    kept = [o for o, _, _ in got]
    gap = next(o for o in range(sentinel) if o not in kept)
    after_gap = next(o for o in kept if o > gap)
    assert read_from(b.bootstrap, topic, gap, sentinel)[0][0] == after_gap
    group = f"g-{uuid.uuid4().hex[:8]}"
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, gap)], asynchronous=False)
    c.close()
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "latest"})
    c.subscribe([topic])
    first, deadline = None, time.monotonic() + 30
    while first is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            first = m.offset()
    c.close()
    assert first == after_gap
    # ListOffsets: the log still starts at 0 and ends after the sentinel; by the time of a
    # removed record it gives the first kept record at or after that time.
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, sentinel + 1)
    at = TIMESTAMPS[(topic, gap)]
    [found] = c.offsets_for_times([TopicPartition(topic, 0, at)], timeout=10)
    assert found.offset == min(o for o in kept if TIMESTAMPS[(topic, o)] >= at), (gap, at)
    c.close()


def test_duckdb_over_a_compacted_topics_files_returns_exactly_the_live_keys(target, tmp_path):
    if target != "ours":
        pytest.skip("the Parquet files are ours")
    from test_compaction import ensure_table_readers
    ensure_table_readers()
    import duckdb

    b = BrokerProcess(target, tmp_path / "broker", settings={"compaction": "false"})
    b.start()
    try:
        topic = f"e2e-compact-duckdb-{uuid.uuid4().hex[:8]}"
        config = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
                  "delete.retention.ms": "100"}
        a = admin(b)
        a.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(timeout=30)
        wait_for_leaders(b.bootstrap, topic, 1)
        produced = produce_updates(b.bootstrap, topic)
        # Compact, then again once the tombstones' horizon passed; the last passes sweep the
        # files the swaps replaced (grace period 0: marked, then deleted).
        for _ in range(4):
            compactor_once(b.data_dir)
            time.sleep(0.2)
    finally:
        b.stop()
    live = {k: v for k, (_, v) in live_view(produced).items() if v is not None}
    paths = [str(p) for p in (b.data_dir / "objects" / "compacted").rglob("*.parquet")]
    assert paths
    rows = duckdb.sql(f'select "offset", key, value from read_parquet({paths!r}) order by "offset"').fetchall()
    got = {bytes(k).decode(): bytes(v).decode() for _, k, v in rows}
    assert got == live
    assert len(rows) == len(live), "one row per live key, no tombstone"
    offsets = {k: o for o, (k, _) in produced.items() if k in live and produced[o][1] == live[k]}
    assert {bytes(k).decode(): o for o, k, _ in rows} == offsets, "every row at its produced offset"
