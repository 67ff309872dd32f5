#!/usr/bin/env python3
"""Catch-up reads from object storage under an object-store latency model, with read-ahead on
and off (run through bench/read_ahead.sh).

A release broker (`--compaction false`) takes BENCH_READ_AHEAD_MIB MiB (default 256) of 1 KiB
records into BENCH_READ_AHEAD_PARTITIONS partitions (default 1). With BENCH_READ_AHEAD_SOURCE
`parquet` (the default) `compactor --once` rewrites them to Parquet and the knob is
`compacted_read_ahead_groups` (0 vs BENCH_READ_AHEAD_GROUPS, default 4); with `wal` they stay
in the WAL and the knob is `wal_read_ahead_window_bytes` (0 vs BENCH_READ_AHEAD_WINDOW_MIB,
default 8). Then, BENCH_READ_AHEAD_ROUNDS times (default 3), a fresh broker (cold caches) under
BENCH_READ_AHEAD_PROFILE (default s3-standard, docs/object-latency.md) with read-ahead off and
on (order alternating) serves a consumer that reads every record from offset 0: MiB/s and the
broker's GETs, medians. BENCH_READ_AHEAD_CLIENT `confluent-kafka` (default) or `java`
(Kafka's ConsumerPerformance, from the reference jars).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
os.environ.setdefault("BROKER_BIN", str(ROOT / "target" / "release" / "broker"))
os.environ.setdefault("RUST_LOG", "warn,broker::stats=info")

from confluent_kafka import Producer  # noqa: E402

from conftest import create_topic  # noqa: E402
from targets import BrokerProcess  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import run as kafka_run  # noqa: E402  (the reference Kafka, as bench/run.sh starts it)

MIB = int(os.environ.get("BENCH_READ_AHEAD_MIB", "256"))
PARTITIONS = int(os.environ.get("BENCH_READ_AHEAD_PARTITIONS", "1"))
ROUNDS = int(os.environ.get("BENCH_READ_AHEAD_ROUNDS", "3"))
PROFILE = os.environ.get("BENCH_READ_AHEAD_PROFILE", "s3-standard")
SOURCE = os.environ.get("BENCH_READ_AHEAD_SOURCE", "parquet")
if SOURCE == "wal":
    KNOB = "wal.read.ahead.window.bytes"
    AHEAD = int(os.environ.get("BENCH_READ_AHEAD_WINDOW_MIB", "8")) << 20
    AHEAD_LABEL = f"read-ahead {AHEAD >> 20} MiB per partition"
else:
    KNOB = "compacted.read.ahead.groups"
    AHEAD = int(os.environ.get("BENCH_READ_AHEAD_GROUPS", "4"))
    AHEAD_LABEL = f"read-ahead {AHEAD} row groups"
CLIENT = os.environ.get("BENCH_READ_AHEAD_CLIENT", "confluent-kafka")
COMPACTOR_BIN = str(ROOT / "target" / "release" / "compactor")
TOPIC = "bench-read-ahead"
RECORD_BYTES = 1024


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# More broker settings for every run, e.g. "wal.read.ahead.bytes=134217728,read.cache.bytes=...".
EXTRA = dict(kv.split("=", 1) for kv in os.environ.get("BENCH_READ_AHEAD_SETTINGS", "").split(",") if kv)


def broker(data: Path, settings: dict) -> BrokerProcess:
    return BrokerProcess("ours", data, settings={"compaction": "false", **EXTRA, **settings})


def produce(bootstrap: str, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1 << 20})
    for i in range(count):
        value = (b"%08d" % i) * (RECORD_BYTES // 8)
        while True:
            try:
                p.produce(TOPIC, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0


def catch_up(bootstrap: str, count: int) -> float:
    """MiB/s of one consumer reading every record from offset 0 (timed from its first record)."""
    if CLIENT == "java":
        return catch_up_java(bootstrap, count)
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "rdkafka_bench.py"), "consume", "--bootstrap",
                           bootstrap, "--topic", TOPIC, "--count", str(count)],
                          check=True, capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["records"] >= count, f"read {result['records']} of {count}"
    return result["mib_per_s"]


def catch_up_java(bootstrap: str, count: int) -> float:
    """Kafka's ConsumerPerformance: its fetch.MB.sec (MiB/s, the group join excluded)."""
    done = subprocess.run(["java", "-Xmx512M", "-cp", kafka_run.kafka_classpath(), "org.apache.kafka.tools.ConsumerPerformance",
                           "--bootstrap-server", bootstrap, "--topic", TOPIC, "--messages", str(count),
                           "--timeout", "60000"], check=True, capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.strip().splitlines() if line and line[0].isdigit()]
    fields = [f.strip() for f in lines[-1].split(",")]
    assert int(fields[4]) >= count, f"read {fields[4]} of {count}"
    return float(fields[8])


def gets_of(log_path: Path) -> int:
    """GETs from the broker's `object store totals` line at shutdown."""
    for line in reversed(log_path.read_text().splitlines()):
        if "object store totals" in line:
            return int(line.split("gets=")[1].split()[0])
    return -1


def main():
    count = MIB * (1 << 20) // RECORD_BYTES
    data = Path(tempfile.mkdtemp(prefix="bench-read-ahead-"))
    b = broker(data, {})
    b.start()
    try:
        create_topic(b.bootstrap, TOPIC, PARTITIONS)
        produce(b.bootstrap, count)
    finally:
        b.stop()
    if SOURCE == "parquet":
        compact(data)
    runs = {0: [], AHEAD: []}
    for r in range(ROUNDS):
        for ahead in ([0, AHEAD] if r % 2 == 0 else [AHEAD, 0]):
            b = broker(data, {"object.store.latency.profile": PROFILE, KNOB: str(ahead)})
            b.start()
            try:
                mib_s = catch_up(b.bootstrap, count)
            finally:
                b.stop()
            gets = gets_of(data / f"process-{b.starts}.log")
            log(f"round {r + 1}, {KNOB} {ahead}: {mib_s:.1f} MiB/s, {gets} GETs")
            runs[ahead].append((mib_s, gets))
    kafka = kafka_catch_up(count) if os.environ.get("BENCH_READ_AHEAD_KAFKA") == "1" else []
    print(f"| catch-up from {SOURCE}, {MIB} MiB of 1 KiB records, {PARTITIONS} partition(s), {PROFILE}, "
          f"{CLIENT}, median of {ROUNDS} | read |\n|---|---|")
    for ahead, label in ((0, "read-ahead off"), (AHEAD, AHEAD_LABEL)):
        mib_s = statistics.median(m for m, _ in runs[ahead])
        gets = statistics.median(g for _, g in runs[ahead])
        print(f"| {label} | {mib_s:.1f} MiB/s, {gets:.0f} GETs ({gets * 1024 / MIB:.0f} per GiB) |")
    if kafka:
        print(f"| Kafka (local disk, page cache) | {statistics.median(kafka):.1f} MiB/s |")


def kafka_catch_up(count: int) -> list:
    """The same records read from the reference Kafka on this box, BENCH_READ_AHEAD_ROUNDS times."""
    directory = tempfile.mkdtemp(prefix="bench-read-ahead-kafka-")
    os.rmdir(directory)
    kafka = kafka_run.start_kafka(directory, kafka_run.kafka_classpath())
    try:
        kafka_run.wait_for_port(kafka_run.PORT)
        create_topic(kafka_run.BOOTSTRAP, TOPIC, PARTITIONS)
        produce(kafka_run.BOOTSTRAP, count)
        runs = []
        for r in range(ROUNDS):
            runs.append(catch_up(kafka_run.BOOTSTRAP, count))
            log(f"round {r + 1}, Kafka: {runs[-1]:.1f} MiB/s")
        return runs
    finally:
        kafka.stop()


def compact(data: Path) -> None:
    subprocess.run([COMPACTOR_BIN, "--data-dir", str(data), "--object-store", f"file://{data}/objects",
                    "--metastore", "embedded", "--once", "--compaction-min-bytes", "0",
                    "--compaction-min-age-ms", "0", "--compaction-grace-period-ms", "0"],
                   check=True, capture_output=True)


if __name__ == "__main__":
    main()
