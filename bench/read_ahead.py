#!/usr/bin/env python3
"""Catch-up reads of compacted (Parquet) files under an object-store latency model, with the
read-ahead of compacted row groups on and off (run through bench/read_ahead.sh).

A release broker (`--compaction false`) takes BENCH_READ_AHEAD_MIB MiB (default 256) of 1 KiB
records into BENCH_READ_AHEAD_PARTITIONS partitions (default 1); `compactor --once` rewrites
them to Parquet. Then, BENCH_READ_AHEAD_ROUNDS times (default 3), a fresh broker (cold caches)
under BENCH_READ_AHEAD_PROFILE (default s3-standard, docs/object-latency.md) with
`compacted_read_ahead_groups` 0 and then BENCH_READ_AHEAD_GROUPS (default 4, the setting's default; order alternating) serves a confluent-kafka
consumer that reads every record from offset 0: MiB/s and the broker's GETs, medians.
"""
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

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from conftest import create_topic  # noqa: E402
from targets import BrokerProcess  # noqa: E402

MIB = int(os.environ.get("BENCH_READ_AHEAD_MIB", "256"))
PARTITIONS = int(os.environ.get("BENCH_READ_AHEAD_PARTITIONS", "1"))
ROUNDS = int(os.environ.get("BENCH_READ_AHEAD_ROUNDS", "3"))
PROFILE = os.environ.get("BENCH_READ_AHEAD_PROFILE", "s3-standard")
AHEAD = int(os.environ.get("BENCH_READ_AHEAD_GROUPS", "4"))
COMPACTOR_BIN = str(ROOT / "target" / "release" / "compactor")
TOPIC = "bench-read-ahead"
RECORD_BYTES = 1024


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def broker(data: Path, settings: dict) -> BrokerProcess:
    return BrokerProcess("ours", data, settings={"compaction": "false", **settings})


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
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    started, seen = time.monotonic(), 0
    while seen < count and time.monotonic() < started + 600:
        seen += sum(1 for m in c.consume(1000, 1.0) if m.error() is None)
    elapsed = time.monotonic() - started
    c.close()
    assert seen == count, f"read {seen} of {count}"
    return elapsed


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
    subprocess.run([COMPACTOR_BIN, "--data-dir", str(data), "--object-store", f"file://{data}/objects",
                    "--metastore", "embedded", "--once", "--compaction-min-bytes", "0",
                    "--compaction-min-age-ms", "0", "--compaction-grace-period-ms", "0"],
                   check=True, capture_output=True)
    runs = {0: [], AHEAD: []}
    for r in range(ROUNDS):
        for ahead in ([0, AHEAD] if r % 2 == 0 else [AHEAD, 0]):
            b = broker(data, {"object.store.latency.profile": PROFILE, "compacted.read.ahead.groups": str(ahead)})
            b.start()
            try:
                elapsed = catch_up(b.bootstrap, count)
            finally:
                b.stop()
            gets = gets_of(data / f"process-{b.starts}.log")
            log(f"round {r + 1}, read-ahead {ahead}: {MIB / elapsed:.1f} MiB/s, {gets} GETs")
            runs[ahead].append((MIB / elapsed, gets))
    print(f"| catch-up from Parquet, {MIB} MiB of 1 KiB records, {PARTITIONS} partition(s), {PROFILE}, "
          f"confluent-kafka, median of {ROUNDS} | read |\n|---|---|")
    for ahead, label in ((0, "read-ahead off"), (AHEAD, f"read-ahead {AHEAD} row groups")):
        mib_s = statistics.median(m for m, _ in runs[ahead])
        gets = statistics.median(g for _, g in runs[ahead])
        print(f"| {label} | {mib_s:.1f} MiB/s, {gets:.0f} GETs ({gets * 1024 / MIB:.0f} per GiB) |")


if __name__ == "__main__":
    main()
