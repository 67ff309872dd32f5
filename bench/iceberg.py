#!/usr/bin/env python3
"""Iceberg tables benchmark (run through bench/iceberg.sh).

Per round (BENCH_ICEBERG_ROUNDS, default 3), three times, tables off, on, and on with typed
columns (order rotating): a release broker (`--compaction false`) takes BENCH_ICEBERG_MIB MiB
(default 256) of the same keyed ~4 KiB records over 4 partitions (for typed: the same fields as
an Avro record, registered in the broker's schema registry and serialized by confluent-kafka's
AvroSerializer); then `compactor --once` (release) compacts them, timed (wall, CPU); with
tables on its table commit is timed by the commit's own log (`took_ms`).
Bytes written = compacted files + table files (metadata, manifests, deletes), per GiB of
record bytes produced. With tables on, DuckDB (iceberg extension, ATTACH to the broker's REST
catalog) scans the table, then the same rows exported once to one plain Parquet file (medians
of 5); in every mode a confluent-kafka consumer reads every record back from the compacted
files (timed, with the broker's CPU meanwhile: typed files rebuild their elided values). Last, freshness: a broker with in-process compaction at its defaults takes a steady
BENCH_ICEBERG_RATE_MB (default 2) MB/s for BENCH_ICEBERG_FRESHNESS_S (default 150) s; every
5 s DuckDB reads the newest record timestamp in the table; lag = now - that timestamp
(BENCH_ICEBERG_FRESHNESS_S=0 skips it).
"""
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
os.environ.setdefault("BROKER_BIN", str(ROOT / "target" / "release" / "broker"))
os.environ.setdefault("RUST_LOG", "warn")

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from conftest import create_topic  # noqa: E402
from targets import free_port  # noqa: E402
from test_iceberg_tables import catalog_broker, duckdb_attached  # noqa: E402

COMPACTOR_BIN = os.environ.get("COMPACTOR_BIN", str(ROOT / "target" / "release" / "compactor"))
MIB = int(os.environ.get("BENCH_ICEBERG_MIB", "256"))
ROUNDS = int(os.environ.get("BENCH_ICEBERG_ROUNDS", "3"))
RATE_MB = float(os.environ.get("BENCH_ICEBERG_RATE_MB", "2"))
FRESHNESS_S = int(os.environ.get("BENCH_ICEBERG_FRESHNESS_S", "150"))
PARTITIONS = 4
VALUE_BYTES = 4096
TOPIC = "bench-iceberg"
TEMPLATE = (b'{"service":"checkout","region":"eu-west-1","level":"info","message":"order accepted",'
            b'"tags":["web","mobile","beta"]} ' * 40)[:VALUE_BYTES // 2]
MEASURE = ("import os, subprocess, sys, time; t = time.monotonic(); p = subprocess.Popen(sys.argv[1:]); "
           "_, status, u = os.wait4(p.pid, 0); sys.stdout.flush(); "
           "print(f'bench_wall_us: {int((time.monotonic() - t) * 1e6)} "
           "bench_cpu_us: {int((u.ru_utime + u.ru_stime) * 1e6)}'); "
           "sys.exit(os.waitstatus_to_exitcode(status))")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


AVRO_SCHEMA = """{"type": "record", "name": "Event", "fields": [
  {"name": "id", "type": "long"}, {"name": "service", "type": "string"},
  {"name": "region", "type": "string"}, {"name": "level", "type": "string"},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "payload", "type": "string"}, {"name": "text", "type": "string"}]}"""


def value(i: int) -> bytes:
    """Unique per record, half pseudo-random hex (seeded by `i`, the same in every run), half
    repeated text: about 2x compressible, as bench/compaction.py's."""
    return random.Random(i).randbytes(VALUE_BYTES // 4).hex().encode() + TEMPLATE


def typed_value(serializer):
    """The same content as `value` as an Avro record in the Confluent wire format."""
    context = SerializationContext(TOPIC, MessageField.VALUE)

    def encode(i: int) -> bytes:
        return serializer({"id": i, "service": "checkout", "region": "eu-west-1", "level": "info",
                           "tags": ["web", "mobile", "beta"],
                           "payload": random.Random(i).randbytes(VALUE_BYTES // 4).hex(),
                           "text": TEMPLATE.decode()}, context)
    return encode


def produce(bootstrap, count, encode=value):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1 << 20})
    for i in range(count):
        while True:
            try:
                p.produce(TOPIC, key=b"key-%08d" % i, value=encode(i), partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def compact(data_dir: Path):
    cmd = [COMPACTOR_BIN, "--data-dir", str(data_dir), "--object-store", f"file://{data_dir}/objects",
           "--metastore", "embedded", "--once", "--compaction-min-bytes", "0", "--compaction-min-age-ms", "0",
           "--compaction-grace-period-ms", "0"]
    env = {**os.environ, "RUST_LOG": "warn,tables=info"}
    proc = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, env=env)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    if proc.returncode != 0:
        raise RuntimeError(f"compactor exited {proc.returncode}: {out}{err[-2000:]}")
    fields = dict(re.findall(r"(\w+): (\d+)", out))
    commits = [int(ms) for ms in re.findall(r"took_ms=(\d+)", err)]
    return int(fields["bench_wall_us"]) / 1e6, int(fields["bench_cpu_us"]) / 1e6, commits


def timed(con, sql, times=5):
    samples = []
    for _ in range(times):
        started = time.monotonic()
        result = con.sql(sql).fetchall()
        samples.append(time.monotonic() - started)
    return statistics.median(samples), result


def scans(broker, work):
    con = duckdb_attached(broker)
    table = f'lake.kafka."{TOPIC}"'
    query = "SELECT count(*), sum(octet_length(value)), max(\"offset\") FROM {}"
    table_s, table_result = timed(con, query.format(table))
    export = work / "export.parquet"
    con.sql(f"COPY (SELECT * FROM {table}) TO '{export}' (FORMAT parquet)")
    plain_s, plain_result = timed(con, query.format(f"read_parquet('{export}')"))
    assert table_result == plain_result, (table_result, plain_result)
    return table_s, plain_s, table_result[0][0]


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def catch_up(broker, count: int):
    """Seconds a consumer takes to read every record back from the compacted files, and the
    broker's CPU seconds meanwhile."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 64 << 20, "max.partition.fetch.bytes": 16 << 20})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    cpu_before = process_cpu_s(broker.proc.pid)
    started, seen, short = time.monotonic(), 0, 0
    deadline = started + 600
    while seen < count and time.monotonic() < deadline:
        for m in c.consume(1000, 1.0):
            if m.error() is None:
                seen += 1
                short += len(m.value()) <= 5
    elapsed = time.monotonic() - started
    cpu = process_cpu_s(broker.proc.pid) - cpu_before
    c.close()
    assert seen == count and short == 0, f"read back {seen} of {count} records, {short} header-only"
    return elapsed, cpu


def one_run(work: Path, mode: str, count: int):
    tables_on = mode != "off"
    data = work / mode
    port = free_port()
    b = catalog_broker(data, {"compaction": "false", "schema.registry.listen": f"127.0.0.1:{port}"})
    b.start()
    try:
        create_topic(b.bootstrap, TOPIC, PARTITIONS, {"iceberg.enable": str(tables_on).lower()})
        if mode == "typed":
            registry = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
            produce(b.bootstrap, count, typed_value(AvroSerializer(registry, AVRO_SCHEMA)))
        else:
            produce(b.bootstrap, count)
    finally:
        b.stop()
    wall, cpu, commits = compact(data)
    log(f"compacted in {wall:.2f} s wall, {cpu:.2f} s CPU; commits {commits}")
    result = {"wall": wall, "cpu": cpu, "commits": commits,
              "compacted": tree_bytes(data / "objects" / "compacted"),
              "tables": tree_bytes(data / "objects" / "tables")}
    b.start()
    try:
        result["read_s"], result["read_cpu"] = catch_up(b, count)
        log(f"read back in {result['read_s']:.2f} s, broker CPU {result['read_cpu']:.2f} s")
    finally:
        b.stop()
    if tables_on:
        b.start()
        try:
            result["table_s"], result["plain_s"], rows = scans(b, work)
            assert rows == count, f"table rows {rows} != {count}"
            if mode == "typed":
                con = duckdb_attached(b)
                result["typed_s"], typed = timed(
                    con, f'SELECT count(*), max(value_typed.id), count(*) FILTER (WHERE value_error IS NOT NULL) '
                         f'FROM lake.kafka."{TOPIC}" WHERE value_typed.level = \'info\'')
                assert typed == [(count, count - 1, 0)], typed
        finally:
            b.stop()
    shutil.rmtree(data, ignore_errors=True)
    return result


def freshness(work: Path):
    if FRESHNESS_S <= 0:
        return []
    b = catalog_broker(work / "fresh", {})
    b.start()
    lags = []
    try:
        create_topic(b.bootstrap, TOPIC, PARTITIONS, {"iceberg.enable": "true"})
        stop = threading.Event()

        def steady():
            p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
            per_tick, i = max(1, int(RATE_MB * 1e6 / VALUE_BYTES / 10)), 0
            while not stop.is_set():
                tick = time.monotonic()
                for _ in range(per_tick):
                    p.produce(TOPIC, key=b"key-%08d" % i, value=value(i), partition=i % PARTITIONS)
                    i += 1
                p.poll(0)
                time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
            p.flush(30)

        producer = threading.Thread(target=steady)
        producer.start()
        con = None
        deadline = time.monotonic() + FRESHNESS_S
        while time.monotonic() < deadline:
            time.sleep(5)
            try:
                con = con or duckdb_attached(b)
                newest = con.sql(f'SELECT max(timestamp) FROM lake.kafka."{TOPIC}"').fetchone()[0]
            except Exception as e:  # the table is created by the first pass
                log(f"no table yet: {str(e)[:80]}")
                con = None
                continue
            if newest is not None:
                lags.append(time.time() - newest / 1000)
        stop.set()
        producer.join()
    finally:
        b.stop()
    return lags


def main():
    count = MIB * (1 << 20) // VALUE_BYTES
    work = Path(tempfile.mkdtemp(prefix="bench-iceberg-"))
    modes = ["off", "on", "typed"]
    runs = {m: [] for m in modes}
    try:
        for r in range(ROUNDS):
            for mode in modes[r % 3:] + modes[:r % 3]:
                log(f"round {r + 1}: tables {mode}, {MIB} MiB")
                runs[mode].append(one_run(work, mode, count))
        log(f"freshness: {RATE_MB} MB/s for {FRESHNESS_S} s, default compaction settings")
        lags = freshness(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = lambda mode, key: statistics.median(r[key] for r in runs[mode])  # noqa: E731
    produced = count * (VALUE_BYTES + 12)
    gib = produced / (1 << 30)
    on_written = med("on", "compacted") + med("on", "tables")
    typed_written = med("typed", "compacted") + med("typed", "tables")
    commits = [ms for r in runs["on"] + runs["typed"] for ms in r["commits"]]
    steady = lags[len(lags) // 3:] or lags
    rows = [
        ("data", f"{count} x {VALUE_BYTES} B over {PARTITIONS} partitions ({produced / 1e6:.0f} MB), {ROUNDS} rounds"),
        ("compactor --once wall, tables off / on / on + typed Avro (median)",
         f"{med('off', 'wall'):.2f} s / {med('on', 'wall'):.2f} s ({med('on', 'wall') / med('off', 'wall'):.3f}x) / "
         f"{med('typed', 'wall'):.2f} s ({med('typed', 'wall') / med('off', 'wall'):.3f}x)"),
        ("compactor CPU, tables off / on / on + typed Avro (median)",
         f"{med('off', 'cpu'):.2f} s / {med('on', 'cpu'):.2f} s ({med('on', 'cpu') / med('off', 'cpu'):.3f}x) / "
         f"{med('typed', 'cpu'):.2f} s ({med('typed', 'cpu') / med('off', 'cpu'):.3f}x)"),
        ("table commit latency (median / max of commits)",
         f"{statistics.median(commits)} ms / {max(commits)} ms" if commits else "no commit logged"),
        ("bytes written per GiB produced, tables off", f"{med('off', 'compacted') / gib / (1 << 30):.3f} GiB"),
        ("bytes written per GiB produced, tables on",
         f"{on_written / gib / (1 << 30):.3f} GiB, {on_written / med('off', 'compacted'):.4f}x of off "
         f"(table files: {med('on', 'tables') / 1e3:.1f} kB)"),
        ("bytes written per GiB produced, tables on + typed Avro (the typed columns are in the same files)",
         f"{typed_written / gib / (1 << 30):.3f} GiB, {typed_written / med('off', 'compacted'):.4f}x of off"),
        ("Kafka catch-up read of the compacted files (confluent-kafka, median), tables off / on / on + typed Avro",
         " / ".join(f"{produced / med(m, 'read_s') / (1 << 20):.0f} MiB/s" for m in modes)),
        ("broker CPU during that read, tables off / on / on + typed Avro (median)",
         " / ".join(f"{med(m, 'read_cpu'):.2f} s" for m in modes)),
        ("DuckDB scan: table via REST catalog / same rows as one plain Parquet file (median of 5)",
         f"{med('on', 'table_s') * 1e3:.0f} ms / {med('on', 'plain_s') * 1e3:.0f} ms"),
        ("DuckDB typed query (count, max(value_typed.id) where value_typed.level = 'info'), median of 5",
         f"{med('typed', 'typed_s') * 1e3:.0f} ms"),
        (f"freshness lag at {RATE_MB} MB/s, default compaction (median / max, last 2/3 of {len(lags)} samples)",
         f"{statistics.median(steady):.1f} s / {max(steady):.1f} s" if steady else "no sample"),
    ]
    print("| measure | value |\n|---|---|")
    for name, v in rows:
        print(f"| {name} | {v} |")


if __name__ == "__main__":
    main()
