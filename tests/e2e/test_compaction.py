"""Compaction end to end: keyed records with mixed compression go through the broker, the
in-process compactor moves them to Parquet and reclaims the WAL, consumers from offset 0 get
exactly what was produced, and DuckDB/pyarrow read the same records from the files."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from conftest import create_topic, unique_topic

RECORDS_PER_CODEC = 5000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
FAST_COMPACTION = ("--compaction-min-age-ms 0 --compaction-grace-period-ms 0 "
                   "--compaction-interval-ms 300")


def files(root: Path, prefix: str) -> list:
    base = root / "objects" / prefix
    return [p for p in base.rglob("*") if p.is_file()] if base.exists() else []


def produce(bootstrap: str, topic: str) -> list:
    sent = []
    for codec in CODECS:
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5})
        for i in range(RECORDS_PER_CODEC):
            key, value = f"{codec}-{i % 700}".encode(), f"{codec}-value-{i}".encode() * 3
            p.produce(topic, key=key, value=value, headers=[("codec", codec.encode())])
            sent.append((key, value))
            if i % 1000 == 0:
                p.poll(0)
        assert p.flush(30) == 0
    return sent


def consume_all(bootstrap: str, topic: str, count: int) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None or m.error():
            continue
        got.append((m.offset(), m.key(), m.value(), m.headers()))
    c.close()
    return got


def wait_until(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def ensure_table_readers():
    try:
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "duckdb", "pyarrow"], check=True)


def test_compacted_records_read_back_exactly_and_wal_objects_are_gone(broker_factory, target, monkeypatch):
    if target != "ours":
        pytest.skip("compaction is ours")
    monkeypatch.setenv("BROKER_ARGS", FAST_COMPACTION)
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("compaction"))
    sent = produce(b.bootstrap, topic)
    wait_until(lambda: not files(b.data_dir, "wal") and files(b.data_dir, "compacted"), 60,
               "wal objects to be compacted and reclaimed")

    got = consume_all(b.bootstrap, topic, len(sent))
    assert [o for o, *_ in got] == list(range(len(sent))), "offsets lost, duplicated or reordered"
    assert [(k, v) for _, k, v, _ in got] == sent
    assert all(h == [("codec", k.split(b"-")[0])] for _, k, _, h in got)

    ensure_table_readers()
    import duckdb
    import pyarrow.parquet as pq
    parquet = [str(p) for p in files(b.data_dir, "compacted") if p.suffix == ".parquet"]
    assert parquet
    rows = duckdb.sql(f"select count(*), count(distinct key) from read_parquet({parquet!r})").fetchall()[0]
    assert rows == (len(sent), len({k for k, _ in sent}))
    keys = duckdb.sql(f'select key from read_parquet({parquet!r}) order by "offset"').fetchall()
    assert [bytes(k) for (k,) in keys] == [k for k, _ in sent]
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in parquet) == len(sent)


REPO = Path(__file__).resolve().parents[2]


def compactor_command(data_dir: Path, *extra: str) -> list:
    return [os.environ.get("COMPACTOR_BIN", str(REPO / "target/debug/compactor")), "--data-dir", str(data_dir),
            "--object-store", f"file://{data_dir}/objects", "--metastore", "embedded",
            "--min-bytes", "0", "--min-age-ms", "0", "--grace-period-ms", "0", *extra]


def test_compactor_killed_at_random_points_loses_nothing(broker_factory, target, monkeypatch, tmp_path):
    if target != "ours":
        pytest.skip("compaction is ours")
    import random
    subprocess.run(["cargo", "build", "-q", "-p", "compactor"], cwd=REPO, check=True)
    monkeypatch.setenv("BROKER_ARGS", "--compaction false")
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("compaction-kill"))
    p = Producer({"bootstrap.servers": b.bootstrap, "compression.type": "lz4", "linger.ms": 2})
    sent, rng = [], random.Random(7)
    for round_no in range(6):
        for i in range(1500):
            key, value = f"r{round_no}-{i % 300}".encode(), f"v{round_no}-{i}".encode()
            p.produce(topic, key=key, value=value)
            sent.append((key, value))
        p.flush(30)
        # A compactor service (a pass every 50 ms) killed with SIGKILL at a random moment.
        log = open(tmp_path / f"compactor-{round_no}.log", "wb")
        proc = subprocess.Popen(compactor_command(b.data_dir, "--interval-ms", "50"),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(rng.uniform(0.05, 0.6))
        proc.kill()
        proc.wait(timeout=10)
        log.close()
        got = consume_all(b.bootstrap, topic, len(sent))
        assert [(k, v) for _, k, v, _ in got] == sent, f"after kill {round_no}"
        assert [o for o, *_ in got] == list(range(len(sent)))
    # The killed leader's session lapses; then one full pass finishes the work.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run(compactor_command(b.data_dir, "--once"), capture_output=True, text=True,
                             check=True).stdout
        if "leader: true" in out and not files(b.data_dir, "wal"):
            break
        time.sleep(1)
    assert not files(b.data_dir, "wal"), "wal objects left after a full pass"
    got = consume_all(b.bootstrap, topic, len(sent))
    assert [(k, v) for _, k, v, _ in got] == sent
