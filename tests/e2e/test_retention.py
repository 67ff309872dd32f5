"""Retention end to end: DeleteRecords moves the log start offset that every client sees, a
consumer positioned below it resets by its policy, and `retention.bytes` / `retention.ms` make
the compactor move it too and delete the WAL objects and Parquet files below it."""

import os
import re
import struct
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import wire
from cluster import Cluster, tools_available
from conftest import create_topic, unique_topic
from waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
# Compaction off (nothing is ever due): only retention can make WAL objects unreferenced.
NO_COMPACTION = ["--compaction-min-bytes", str(2**64 - 1), "--compaction-min-age-ms", str(2**64 - 1)]
# Everything due at once, in small files, so that some files end below the trim point.
SMALL_FILES = ["--compaction-min-bytes", "0", "--compaction-min-age-ms", "0", "--compaction-file-bytes-max", "4096"]


def produce(bootstrap: str, topic: str, rounds: int, per_round: int, first: int = 0,
            timestamp_ms=None, round_step_ms: int = 0, value_bytes: int = 0) -> None:
    """`rounds` flushes of `per_round` records (one index entry or more each); with
    `timestamp_ms`, round i's records carry `timestamp_ms + i * round_step_ms`."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    n = first
    for i in range(rounds):
        for _ in range(per_round):
            kwargs = {"timestamp": timestamp_ms + i * round_step_ms} if timestamp_ms is not None else {}
            value = b"v" * value_bytes if value_bytes else f"value-{n}-".encode() * 20
            p.produce(topic, key=f"k{n}".encode(), value=value, **kwargs)
            n += 1
        assert p.flush(30) == 0


def watermarks(bootstrap: str, topic: str) -> tuple:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("wm")})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    finally:
        c.close()


def consume(bootstrap: str, topic: str, count: int, start=None, group=None) -> list:
    """(offset, key) of `count` records, by subscription (from the committed or reset offset)
    or, when `start` is given, from that assigned offset."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group or unique_topic("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    if start is None:
        c.subscribe([topic])
    else:
        c.assign([TopicPartition(topic, 0, start)])
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            got.append((m.offset(), m.key()))
    finally:
        c.close()
    return got


def test_delete_records_moves_the_log_start_for_every_client(broker):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient

    topic = create_topic(broker.bootstrap, unique_topic("delete-records"))
    produce(broker.bootstrap, topic, rounds=4, per_round=25)
    assert watermarks(broker.bootstrap, topic) == (0, 100)

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = admin.delete_records({KTopicPartition(topic, 0): 40}, timeout_ms=10_000)
    finally:
        admin.close()
    [(tp, answer)] = list(result.items())
    assert tp.partition == 0 and answer["low_watermark"] == 40, result
    wait_until(lambda: watermarks(broker.bootstrap, topic) == (40, 100), 10,
               "ListOffsets earliest to report the new log start")

    # A new group starts at the log start, not at 0.
    got = consume(broker.bootstrap, topic, 60)
    assert got == [(o, f"k{o}".encode()) for o in range(40, 100)]
    # librdkafka positioned below the log start gets OFFSET_OUT_OF_RANGE and resets to earliest.
    got = consume(broker.bootstrap, topic, 60, start=10)
    assert got[0] == (40, b"k40") and len(got) == 60
    # So does kafka-python.
    kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, group_id=None,
                       auto_offset_reset="earliest")
    try:
        ktp = KTopicPartition(topic, 0)
        kc.assign([ktp])
        kc.seek(ktp, 5)
        first, deadline = None, time.monotonic() + 30
        while first is None and time.monotonic() < deadline:
            for records in kc.poll(timeout_ms=500).values():
                first = first or records[0]
        assert first is not None and (first.offset, first.key) == (40, b"k40")
    finally:
        kc.close()


def compactor(data_dir: Path, *extra: str) -> str:
    binary = os.environ.get("COMPACTOR_BIN", str(REPO / "target/debug/compactor"))
    command = [binary, "--data-dir", str(data_dir), "--object-store", f"file://{data_dir}/objects",
               "--metastore", "embedded", "--compaction-grace-period-ms", "0", "--once", *extra]
    deadline = time.monotonic() + 60
    while True:
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        if "leader: true" in out:
            return out
        assert time.monotonic() < deadline, "the compactor never became leader"
        time.sleep(0.5)


def files(data_dir: Path, prefix: str) -> set:
    base = data_dir / "objects" / prefix
    return {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()} if base.exists() else set()


def parquet_ranges(data_dir: Path) -> dict:
    """stream -> [(base, end)] of its Parquet files."""
    out = {}
    for name in files(data_dir, "compacted"):
        m = re.fullmatch(r"([^/]+)/(\d+)-(\d+)\.parquet", name)
        if m:
            out.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
    return out


def test_retention_deletes_old_objects_and_moves_the_log_start(broker_factory, target, monkeypatch):
    if target != "ours":
        pytest.skip("the compactor is ours")
    monkeypatch.setenv("BROKER_ARGS", "--compaction false")
    b = broker_factory()
    # Retention deletes whole Kafka segments: a second of record time each here (every round),
    # and an hour for the aged topic, so that its fresh records roll a segment of their own.
    sized = create_topic(b.bootstrap, unique_topic("retention-bytes"),
                         config={"retention.bytes": "10000", "segment.ms": "500"})
    aged = create_topic(b.bootstrap, unique_topic("retention-ms"),
                        config={"retention.ms": "3600000", "segment.ms": "3600000"})
    round_ms = 1000
    start_ms = int(time.time() * 1000) - 100 * round_ms
    produce(b.bootstrap, sized, rounds=20, per_round=10, timestamp_ms=start_ms, round_step_ms=round_ms)
    two_hours_ago_ms = int(time.time() * 1000) - 2 * 3600 * 1000
    produce(b.bootstrap, aged, rounds=3, per_round=10, timestamp_ms=two_hours_ago_ms)
    produce(b.bootstrap, aged, rounds=2, per_round=10, first=30)
    assert watermarks(b.bootstrap, sized) == (0, 200)
    assert watermarks(b.bootstrap, aged) == (0, 50)
    wal_before = files(b.data_dir, "wal")

    # Retention alone (nothing compacted): the trimmed ranges' WAL objects go at once.
    compactor(b.data_dir, *NO_COMPACTION)
    wal_after = files(b.data_dir, "wal")
    assert wal_after < wal_before, "no wal object was deleted"
    # The broker re-reads a stream's bounds at most every 100 ms.
    wait_until(lambda: watermarks(b.bootstrap, aged) == (30, 50), 10, "the expired records to go")
    wait_until(lambda: watermarks(b.bootstrap, sized)[0] > 0, 10, "the oldest bytes to go")
    low, high = watermarks(b.bootstrap, sized)
    # Records are 170 to 230 bytes: at least 10000 bytes are kept (44 records or more), and
    # less than that plus one segment of ~2 KB (at most ~80 records); whole segments go.
    assert 100 <= low <= 156 and high == 200, (low, high)
    assert consume(b.bootstrap, aged, 20) == [(o, f"k{o}".encode()) for o in range(30, 50)]
    assert consume(b.bootstrap, sized, 200 - low) == [(o, f"k{o}".encode()) for o in range(low, 200)]

    # More data: a pass applies retention first (what is past it is dropped, not compacted),
    # then compacts the rest into small Parquet files.
    produce(b.bootstrap, sized, rounds=10, per_round=10, first=200,
            timestamp_ms=start_ms + 20 * round_ms, round_step_ms=round_ms)
    compactor(b.data_dir, *SMALL_FILES)
    compacted = parquet_ranges(b.data_dir)
    wait_until(lambda: watermarks(b.bootstrap, sized)[0] > low, 10, "the log start to move on")
    low_compacted, _ = watermarks(b.bootstrap, sized)
    [stream] = [s for s, ranges in compacted.items() if max(e for _, e in ranges) == 300]
    assert all(end > low_compacted for _, end in compacted[stream]), (compacted[stream], low_compacted)
    # Yet more data: retention moves past some of those files, which are deleted (the pass after
    # they are unreferenced).
    produce(b.bootstrap, sized, rounds=10, per_round=10, first=300,
            timestamp_ms=start_ms + 30 * round_ms, round_step_ms=round_ms)
    compactor(b.data_dir, *SMALL_FILES)
    compactor(b.data_dir, *SMALL_FILES)
    assert not files(b.data_dir, "wal"), "every wal object is compacted or trimmed"
    wait_until(lambda: watermarks(b.bootstrap, sized)[0] > low_compacted, 10, "the log start to move on")
    low_after, high_after = watermarks(b.bootstrap, sized)
    assert high_after == 400
    remaining = parquet_ranges(b.data_dir)
    gone = set(compacted[stream]) - set(remaining[stream])
    assert gone and all(end <= low_after for _, end in gone), (gone, low_after)
    assert all(end > low_after for _, end in remaining[stream]), (remaining[stream], low_after)
    got = consume(b.bootstrap, sized, 400 - low_after)
    assert got == [(o, f"k{o}".encode()) for o in range(low_after, 400)]


def earliest_on(bootstrap: str, topic: str) -> tuple:
    """(error code, offset) of ListOffsets v1 earliest for partition 0, asked of this broker."""
    body = struct.pack(">ii", -1, 1) + wire.string(topic) + struct.pack(">iiq", 1, 0, -2)
    with wire.connect(bootstrap) as sock:
        sock.sendall(wire.frame(wire.request_header(2, 1, 11) + body))
        response = wire.read_frame(sock)
    pos = 4 + 4  # correlation id, topics array length
    (name_len,) = struct.unpack_from(">h", response, pos)
    pos += 2 + name_len + 4  # name, partitions array length
    _partition, error, _timestamp, offset = struct.unpack_from(">ihqq", response, pos)
    return error, offset


def test_delete_records_in_a_cluster_is_served_by_the_leader_and_seen_by_every_broker(tmp_path):
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NotLeaderForPartitionError

    if not tools_available():
        if os.environ.get("CI"):
            pytest.fail("oxia or moto_server missing: run scripts/install-oxia.sh and scripts/install-s3.sh")
        pytest.skip("oxia or moto_server missing (scripts/install-oxia.sh, scripts/install-s3.sh)")
    cluster = Cluster(tmp_path / "cluster").start()
    try:
        topic = create_topic(cluster.bootstrap, unique_topic("cluster-delete-records"))
        produce(cluster.bootstrap, topic, rounds=3, per_round=10)
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique_topic("m")})
        leader = c.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
        c.close()
        other = next(b for b in cluster.brokers if b.broker_id != leader)

        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            tp = KTopicPartition(topic, 0)
            with pytest.raises(NotLeaderForPartitionError):
                admin.delete_records({tp: 10}, timeout_ms=10_000, partition_leader_id=other.broker_id)
            assert admin.delete_records({tp: 10}, timeout_ms=10_000)[tp]["low_watermark"] == 10
        finally:
            admin.close()
        for b in cluster.brokers:
            wait_until(lambda: earliest_on(b.bootstrap, topic) == (0, 10), 10,
                       f"broker {b.broker_id} to report the new log start")
        got = consume(cluster.bootstrap, topic, 20)
        assert got == [(o, f"k{o}".encode()) for o in range(10, 30)]
    finally:
        cluster.stop()


# Retention checked every half second on both brokers (Kafka's default is five minutes, its
# first check 30 s after start), so that what retention would delete goes at once.
FREQUENT_RETENTION = {
    "ours": "--log-retention-check-interval-ms 500 --compaction-interval-ms 200",
    "kafka": "log.retention.check.interval.ms=500;log.initial.task.delay.ms=500",
}
DAY_MS = 86_400_000


def frequent_retention_broker(broker_factory, target, monkeypatch):
    monkeypatch.setenv("BROKER_ARGS", FREQUENT_RETENTION["ours"])
    monkeypatch.setenv("KAFKA_REFERENCE_PROPERTIES", FREQUENT_RETENTION["kafka"])
    return broker_factory()


def test_records_with_old_timestamps_stay_readable_until_the_first_retention_check(broker_factory):
    """A backfill with month-old timestamps into a default topic (7 days of retention): Kafka
    checks retention 30 s after it starts and every 5 minutes, so a consumer reads the records
    from offset 0 in the meantime instead of finding the log start moved to the end."""
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("backfill"))
    month_ago_ms = int(time.time() * 1000) - 30 * DAY_MS
    produce(b.bootstrap, topic, rounds=2, per_round=10, timestamp_ms=month_ago_ms)
    # Longer than a compaction pass of ours (10 s), shorter than the first retention check.
    deadline = time.monotonic() + 11
    while time.monotonic() < deadline:
        assert watermarks(b.bootstrap, topic) == (0, 20)
        time.sleep(1)
    assert consume(b.bootstrap, topic, 20, start=0) == [(o, f"k{o}".encode()) for o in range(20)]


def test_byte_retention_keeps_the_active_segment_whole(broker_factory, target, monkeypatch):
    """`retention.bytes` deletes whole segments only: 40 KB in one 1 GiB segment all stay,
    where a limit of 1000 bytes applied record by record would drop almost everything."""
    b = frequent_retention_broker(broker_factory, target, monkeypatch)
    topic = create_topic(b.bootstrap, unique_topic("bytes-active"), config={"retention.bytes": "1000"})
    produce(b.bootstrap, topic, rounds=20, per_round=10)
    time.sleep(3)  # several retention checks
    assert watermarks(b.bootstrap, topic) == (0, 200)
    assert len(consume(b.bootstrap, topic, 200, start=0)) == 200


def test_byte_retention_drops_closed_segments_by_segment_bytes(broker_factory, target, monkeypatch):
    """With 1 MiB segments, 3 MiB of records and a limit of 1000 bytes: the closed segments
    go, the active one (less than a segment) stays."""
    b = frequent_retention_broker(broker_factory, target, monkeypatch)
    topic = create_topic(b.bootstrap, unique_topic("bytes-closed"),
                         config={"retention.bytes": "1000", "segment.bytes": str(1 << 20)})
    produce(b.bootstrap, topic, rounds=24, per_round=128, value_bytes=1024)
    total = 24 * 128
    wait_until(lambda: watermarks(b.bootstrap, topic)[0] > 0, 15, "the closed segments to go")
    time.sleep(2)
    low, high = watermarks(b.bootstrap, topic)
    assert high == total
    # At least two closed segments of ~1000 records went; the rest is less than a segment.
    assert 2 * 900 <= low < total and total - low <= 1100, (low, high)
    got = consume(b.bootstrap, topic, total - low, start=low)
    assert got == [(o, f"k{o}".encode()) for o in range(low, total)]


def test_time_retention_drops_a_segment_rolled_by_segment_ms(broker_factory, target, monkeypatch):
    """Records two hours old, then fresh ones: with `segment.ms` of an hour the fresh records
    roll a new segment, the old one is closed and wholly past `retention.ms` of an hour."""
    b = frequent_retention_broker(broker_factory, target, monkeypatch)
    topic = create_topic(b.bootstrap, unique_topic("time-rolled"),
                         config={"retention.ms": "3600000", "segment.ms": "3600000"})
    produce(b.bootstrap, topic, rounds=1, per_round=10, timestamp_ms=int(time.time() * 1000) - 7_200_000)
    produce(b.bootstrap, topic, rounds=1, per_round=10, first=10)
    wait_until(lambda: watermarks(b.bootstrap, topic) == (10, 20), 15, "the old segment to go")
    time.sleep(2)
    assert watermarks(b.bootstrap, topic) == (10, 20)
    assert consume(b.bootstrap, topic, 10, start=10) == [(o, f"k{o}".encode()) for o in range(10, 20)]
