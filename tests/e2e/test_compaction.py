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
from waiting import wait_until

RECORDS = 100_000
PARTITIONS = 2
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
FAST_COMPACTION = ("--compaction-min-age-ms 0 --compaction-grace-period-ms 0 "
                   "--compaction-interval-ms 300")


def files(root: Path, prefix: str) -> list:
    base = root / "objects" / prefix
    return [p for p in base.rglob("*") if p.is_file()] if base.exists() else []


def expected_records() -> list:
    """[partition] -> [(offset, key, value, headers)] in produce order; keys repeat, codecs mix."""
    out = [[] for _ in range(PARTITIONS)]
    per_codec = RECORDS // len(CODECS)
    for codec in CODECS:
        for i in range(per_codec):
            part = out[i % PARTITIONS]
            key, value = f"{codec}-{i % 1400}", f"{codec}-value-{i}-" + "x" * (i % 64)
            part.append((len(part), key, value, [["codec", codec]]))
    return out


def produce(bootstrap: str, topic: str, expected: list) -> None:
    """Bulk produce, one producer per codec, in the order `expected` lists (per partition)."""
    per_codec = RECORDS // len(CODECS)
    cursor = [0] * PARTITIONS
    for codec in CODECS:
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20,
                      "batch.num.messages": 2000, "acks": "all", "enable.idempotence": True})
        failures = []

        def on_delivery(err, _msg):
            if err is not None:
                failures.append(err)

        for i in range(per_codec):
            part = i % PARTITIONS
            _, key, value, headers = expected[part][cursor[part]]
            cursor[part] += 1
            while True:
                try:
                    p.produce(topic, key=key.encode(), value=value.encode(), partition=part,
                              headers=[(k, v.encode()) for k, v in headers], on_delivery=on_delivery)
                    break
                except BufferError:  # local queue full: let deliveries drain
                    p.poll(0.05)
        assert p.flush(60) == 0 and not failures, failures[:3]


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


def as_tuples(records: list) -> list:
    return [(r["offset"], r["key"], r["value"], [list(h) for h in r["headers"]]) for r in records]


def ensure_table_readers():
    try:
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "duckdb", "pyarrow"], check=True)


def test_100k_compacted_records_read_back_exactly_by_every_client_and_duckdb(broker_factory, target,
                                                                              monkeypatch):
    if target != "ours":
        pytest.skip("compaction is ours")
    from clients_cli import JavaDriver
    from clients_py import ConfluentDriver, KafkaPythonDriver

    monkeypatch.setenv("BROKER_ARGS", FAST_COMPACTION)
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("compaction"), PARTITIONS)
    expected = expected_records()
    produce(b.bootstrap, topic, expected)
    wait_until(lambda: not files(b.data_dir, "wal") and files(b.data_dir, "compacted"), 120,
               "wal objects to be compacted and reclaimed")
    listed = subprocess.run(compactor_command(b.data_dir, "--list-tasks"), capture_output=True, text=True,
                            check=True).stdout
    assert listed.strip() == "", f"task records left behind:\n{listed}"

    # Every client, from offset 0, record by record, all from Parquet now.
    for driver_class in (ConfluentDriver, JavaDriver, KafkaPythonDriver):
        driver = driver_class(b.bootstrap)
        for part in range(PARTITIONS):
            want = expected[part]
            got = as_tuples(driver.consume(topic, part, 0, len(want), timeout_s=90))
            assert len(got) == len(want), f"{driver.name} partition {part}: {len(got)} of {len(want)}"
            for i, (g, w) in enumerate(zip(got, want)):
                assert g == w, f"{driver.name} partition {part} record {i}: {g} != {w}"

    ensure_table_readers()
    import duckdb
    import pyarrow.parquet as pq
    parquet = [p for p in files(b.data_dir, "compacted") if p.suffix == ".parquet"]
    by_partition = {}
    for p in parquet:  # compacted/<topic id>-<partition>/<base>-<end>.parquet
        by_partition.setdefault(int(p.parent.name.rsplit("-", 1)[1]), []).append(str(p))
    assert sorted(by_partition) == list(range(PARTITIONS))
    everything = [str(p) for p in parquet]
    rows = duckdb.sql(f"select count(*), count(distinct key) from read_parquet({everything!r})").fetchall()[0]
    all_keys = {k for part in expected for _, k, _, _ in part}
    assert rows == (RECORDS, len(all_keys))
    for part, paths in by_partition.items():
        keys = duckdb.sql(f'select "offset", key from read_parquet({paths!r}) order by "offset"').fetchall()
        assert [(o, bytes(k).decode()) for o, k in keys] == [(o, k) for o, k, _, _ in expected[part]]
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in everything) == RECORDS


REPO = Path(__file__).resolve().parents[2]


def compactor_command(data_dir: Path, *extra: str) -> list:
    return [os.environ.get("COMPACTOR_BIN", str(REPO / "target/debug/compactor")), "--data-dir", str(data_dir),
            "--object-store", f"file://{data_dir}/objects", "--metastore", "embedded",
            "--compaction-min-bytes", "0", "--compaction-min-age-ms", "0",
            "--compaction-grace-period-ms", "0", *extra]


def finish_compaction(data_dir: Path) -> None:
    """After a compactor was killed: once its leader session lapses, `--once` passes take over
    and compact every WAL object left."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run(compactor_command(data_dir, "--once"), capture_output=True, text=True,
                             check=True).stdout
        if "leader: true" in out and not files(data_dir, "wal"):
            break
        time.sleep(1)
    assert not files(data_dir, "wal"), "wal objects left after a full pass"


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
        proc = subprocess.Popen(compactor_command(b.data_dir, "--compaction-interval-ms", "50",
                                                  "--compaction-session-timeout-ms", "400"),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(rng.uniform(0.05, 0.6))
        proc.kill()
        proc.wait(timeout=10)
        log.close()
        got = consume_all(b.bootstrap, topic, len(sent))
        assert [(k, v) for _, k, v, _ in got] == sent, f"after kill {round_no}"
        assert [o for o, *_ in got] == list(range(len(sent)))
    finish_compaction(b.data_dir)
    got = consume_all(b.bootstrap, topic, len(sent))
    assert [(k, v) for _, k, v, _ in got] == sent


def test_compactor_killed_while_producers_and_consumers_run(broker_factory, target, monkeypatch,
                                                            tmp_path):
    """The compactor is SIGKILLed at random moments while an idempotent producer writes and a
    consumer tails two partitions, and catch-up readers read from offset 0 during the swaps: the
    tail and every catch-up read are exactly the acknowledged records, in order, once each."""
    if target != "ours":
        pytest.skip("compaction is ours")
    import random
    import threading
    from confluent_kafka import TopicPartition

    monkeypatch.setenv("BROKER_ARGS", "--compaction false")
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("compaction-live"), partitions=2)
    acked = {0: [], 1: []}
    errors, stop, produced = [], threading.Event(), threading.Event()
    lock = threading.Lock()

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
            return
        with lock:
            acked[msg.partition()].append((msg.offset(), msg.value()))

    def producer():
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all",
                      "linger.ms": 5, "compression.type": "zstd"})
        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, value=f"v-{i}".encode(), key=str(i).encode(), partition=i % 2,
                          on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            p.poll(0.001 if i % 100 else 0.02)
        assert p.flush(60) == 0
        produced.set()

    tailed = {0: [], 1: []}

    def tail():
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": unique_topic("tail"),
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        deadline = None
        while not (produced.is_set() and all(len(tailed[p]) >= len(acked[p]) for p in tailed)):
            if stop.is_set():
                deadline = deadline or time.monotonic() + 90
                if time.monotonic() > deadline:
                    break
            m = c.poll(0.2)
            if m is not None and not m.error():
                tailed[m.partition()].append((m.offset(), m.value()))
        c.close()

    threads = [threading.Thread(target=producer), threading.Thread(target=tail)]
    for t in threads:
        t.start()
    rng = random.Random(11)
    try:
        for round_no in range(12):
            time.sleep(0.5)
            log = open(tmp_path / f"compactor-{round_no}.log", "wb")
            # A short session: the next round's compactor takes over from the killed leader.
            proc = subprocess.Popen(compactor_command(b.data_dir, "--compaction-interval-ms", "50",
                                                      "--compaction-session-timeout-ms", "400"),
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, "RUST_LOG": "info"})
            time.sleep(rng.uniform(0.1, 0.9))
            if round_no % 3 == 0:
                # A catch-up reader from offset 0 while the compactor swaps entries under it.
                with lock:
                    want = list(acked[0])
                got = read_partition(b.bootstrap, topic, 0, len(want))
                assert got == want, f"catch-up read during round {round_no} differs"
            proc.kill()
            proc.wait(timeout=10)
            log.close()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=120)
    assert not errors, errors[:3]
    assert all(not t.is_alive() for t in threads), "producer or tail did not finish"
    assert files(b.data_dir, "compacted"), "the killed compactors never compacted anything"
    for p in (0, 1):
        assert len(acked[p]) > 500, f"too little produced on partition {p}"
        assert [o for o, _ in acked[p]] == list(range(len(acked[p])))
        assert tailed[p] == acked[p], f"tailing consumer of partition {p} differs"
    finish_compaction(b.data_dir)
    assert files(b.data_dir, "compacted")
    for p in (0, 1):
        assert read_partition(b.bootstrap, topic, p, len(acked[p])) == acked[p]


def read_partition(bootstrap: str, topic: str, partition: int, count: int) -> list:
    """(offset, value) of the first `count` records of one partition, read from offset 0."""
    from confluent_kafka import TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("catchup"),
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, 0)])
    got, deadline = [], time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.offset(), m.value()))
    c.close()
    return got
