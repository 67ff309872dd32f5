#!/usr/bin/env python3
"""Compaction benchmark (run through bench/compaction.sh).

1. A release broker (local-folder object store, embedded MetaStore, `--compaction false`) takes
   BENCH_COMPACTION_MIB MiB (default 512) of keyed 4 KiB records (unique, about 2x compressible), uncompressed, over
   BENCH_COMPACTION_PARTITIONS partitions (default 4), from confluent-kafka.
2. The broker restarts (cold caches) and confluent-kafka reads everything from offset 0: WAL.
3. `compactor --once` (release) compacts it all and reclaims the WAL; wall time and the child's
   CPU time (getrusage via wait4) give MB/s and MB per CPU-second.
4. The broker restarts again and the same consumer reads everything: Parquet.
MB = 10^6 bytes of record keys + values as the client sees them (input bytes for the compactor).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
os.environ.setdefault("BROKER_BIN", str(ROOT / "target" / "release" / "broker"))
os.environ["BROKER_ARGS"] = "--compaction false"
os.environ.setdefault("RUST_LOG", "warn")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402

from conftest import create_topic  # noqa: E402
from targets import BrokerProcess  # noqa: E402

COMPACTOR_BIN = os.environ.get("COMPACTOR_BIN", str(ROOT / "target" / "release" / "compactor"))
MIB = int(os.environ.get("BENCH_COMPACTION_MIB", "512"))
PARTITIONS = int(os.environ.get("BENCH_COMPACTION_PARTITIONS", "4"))
VALUE_BYTES = 4096
TOPIC = "bench-compaction"


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


TEMPLATE = (b'{"service":"checkout","region":"eu-west-1","level":"info","message":"order accepted",'
            b'"tags":["web","mobile","beta"]} ' * 40)[:VALUE_BYTES // 2]


def value() -> bytes:
    """Unique per record, half random hex, half repeated text: about 2x compressible."""
    return os.urandom(VALUE_BYTES // 4).hex().encode() + TEMPLATE


def produce(bootstrap, count):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 1 << 20, "compression.type": "none"})
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    started = time.monotonic()
    for i in range(count):
        while True:
            try:
                p.produce(TOPIC, key=b"key-%08d" % i, value=value(), partition=i % PARTITIONS,
                          on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0 and not failures, failures[:3]
    return time.monotonic() - started


def consume(bootstrap, count):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False,
                  "fetch.max.bytes": 64 << 20, "max.partition.fetch.bytes": 16 << 20})
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen, nbytes = 0, 0
    started = time.monotonic()
    deadline = started + 600
    while seen < count and time.monotonic() < deadline:
        for m in c.consume(num_messages=10_000, timeout=1.0):
            if m.error():
                raise RuntimeError(str(m.error()))
            seen += 1
            nbytes += len(m.value()) + len(m.key())
    elapsed = time.monotonic() - started
    c.close()
    assert seen == count, f"consumed {seen} of {count}"
    return elapsed, nbytes


# A forked child's max RSS starts at its parent's (the pages it was forked with count), so this
# Python process, large after producing and consuming, would be measured instead of the
# compactor. A small interpreter forks the compactor and reports its usage after its output.
MEASURE = ("import os, subprocess, sys, time; t = time.monotonic(); p = subprocess.Popen(sys.argv[1:]); "
           "_, status, u = os.wait4(p.pid, 0); sys.stdout.flush(); "
           "print(f'bench_wall_us: {int((time.monotonic() - t) * 1e6)} "
           "bench_cpu_us: {int((u.ru_utime + u.ru_stime) * 1e6)} bench_maxrss_kb: {u.ru_maxrss}'); "
           "sys.exit(os.waitstatus_to_exitcode(status))")


def compact(data_dir):
    cmd = [COMPACTOR_BIN, "--data-dir", str(data_dir), "--object-store", f"file://{data_dir}/objects",
           "--metastore", "embedded", "--once", "--compaction-min-bytes", "0", "--compaction-min-age-ms", "0",
           "--compaction-grace-period-ms", "0"]
    proc = subprocess.run([sys.executable, "-c", MEASURE, *cmd], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL)
    out = proc.stdout.decode()
    if proc.returncode != 0:
        raise RuntimeError(f"compactor exited {proc.returncode}: {out}")
    fields = dict(re.findall(r"(\w+): (\d+)", out))
    return (int(fields["bench_wall_us"]) / 1e6, int(fields["bench_cpu_us"]) / 1e6,
            int(fields["bench_maxrss_kb"]) * 1024, fields)


def tree_bytes(path):
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def main():
    count = MIB * (1 << 20) // VALUE_BYTES
    work = Path(tempfile.mkdtemp(prefix="bench-compaction-"))
    broker = BrokerProcess("ours", work / "broker")
    try:
        broker.start()
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        log(f"producing {count} records of {VALUE_BYTES} B ({MIB} MiB) over {PARTITIONS} partitions")
        produce_s = produce(broker.bootstrap, count)
        wal_bytes = tree_bytes(broker.data_dir / "objects" / "wal")

        broker.restart()
        log("consuming from the WAL")
        wal_s, payload = consume(broker.bootstrap, count)
        broker.stop()

        log("compactor --once")
        compact_s, cpu_s, rss, report = compact(broker.data_dir)
        input_bytes = int(report.get("bytes_read", 0))
        assert int(report.get("records_compacted", 0)) == count, report
        parquet_bytes = tree_bytes(broker.data_dir / "objects" / "compacted")
        assert tree_bytes(broker.data_dir / "objects" / "wal") == 0, "wal objects left"

        broker.start()
        log("consuming from Parquet")
        parquet_s, payload2 = consume(broker.bootstrap, count)
        assert payload2 == payload
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)

    mb = 1e6
    rows = [
        ("records", f"{count} x {VALUE_BYTES} B, {PARTITIONS} partitions, uncompressed"),
        ("produce (confluent-kafka)", f"{payload / mb / produce_s:.1f} MB/s"),
        ("WAL bytes / Parquet bytes", f"{wal_bytes / mb:.1f} MB / {parquet_bytes / mb:.1f} MB"),
        ("compactor --once wall", f"{compact_s:.2f} s ({report.get('files_written')} files, "
                                  f"{report.get('wal_objects_deleted')} WAL objects deleted)"),
        ("compaction throughput", f"{input_bytes / mb / compact_s:.1f} MB/s (WAL input bytes / wall)"),
        ("compactor CPU", f"{cpu_s:.2f} s user+sys, max RSS {rss / (1 << 20):.0f} MiB"),
        ("compaction per CPU-second", f"{input_bytes / mb / cpu_s:.1f} MB/s per core"),
        ("consume from WAL (cold broker)", f"{payload / mb / wal_s:.1f} MB/s ({wal_s:.2f} s)"),
        ("consume from Parquet (cold broker)", f"{payload / mb / parquet_s:.1f} MB/s ({parquet_s:.2f} s)"),
    ]
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
