"""Topics as Iceberg tables, judged by real engines: pyiceberg (REST catalog) and DuckDB with
its packaged iceberg extension (ATTACH to the broker's REST catalog) read the same rows a
read_committed consumer reads, from the very Parquet files the compactor wrote for Kafka.
The tables are ours: every test here is skipped against the reference Kafka."""

import glob
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                  ResourceType)

from conftest import create_topic
from targets import BrokerProcess, free_port
from test_compacted_topics import compactor_once, live_view, produce_updates
from waiting import wait_until

FAST_COMPACTION = {"compaction.min.age.ms": "0", "compaction.grace.period.ms": "0",
                   "compaction.interval.ms": "300"}


def catalog_broker(data_dir, settings: dict) -> BrokerProcess:
    """Our broker with its Iceberg REST catalog on a port of its own (`catalog_url`)."""
    port = free_port()
    b = BrokerProcess("ours", data_dir, settings={"iceberg.catalog.listen": f"127.0.0.1:{port}", **settings})
    b.catalog_url = f"http://127.0.0.1:{port}"
    return b


def started(target, tmp_path, **settings) -> BrokerProcess:
    if target != "ours":
        pytest.skip("Iceberg tables are ours")
    b = catalog_broker(tmp_path / "broker", settings)
    b.start()
    return b


def rest_catalog(b):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("ours", uri=b.catalog_url)


def duckdb_attached(b):
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_httpfs
    import duckdb_extension_iceberg
    con = duckdb.connect()
    for ext in (duckdb_extension_httpfs, duckdb_extension_avro, duckdb_extension_iceberg):
        con.load_extension(glob.glob(ext.__path__[0] + "/extensions/*/*.duckdb_extension")[0])
    con.sql(f"ATTACH 'ours' AS lake (TYPE iceberg, ENDPOINT '{b.catalog_url}', AUTHORIZATION_TYPE 'none')")
    return con


def table_rows(b, topic: str) -> dict:
    """(partition, offset) -> (key, value, headers) as pyiceberg reads the table."""
    table = rest_catalog(b).load_table(f"kafka.{topic}")
    rows = table.scan(selected_fields=("partition", "offset", "key", "value", "headers")).to_arrow().to_pylist()
    return {(r["partition"], r["offset"]): (r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]])
            for r in rows}


def table_count(b, topic: str) -> int:
    from pyiceberg.exceptions import NoSuchTableError
    try:
        return rest_catalog(b).load_table(f"kafka.{topic}").scan().to_arrow().num_rows
    except NoSuchTableError:
        return -1


def consume(bootstrap: str, topic: str, partitions: int) -> dict:
    """(partition, offset) -> (key, value, headers) as a read_committed consumer reads them."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, eof, deadline = {}, set(), time.monotonic() + 60
    while len(eof) < partitions and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            eof.add(m.partition())
            continue
        got[(m.partition(), m.offset())] = (m.key(), m.value(), list(m.headers() or []))
    c.close()
    return got


def produce(bootstrap: str, topic: str, count: int, partitions: int, codec: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5})
    for i in range(count):
        headers = [("n", str(i).encode())] if i % 3 else []
        p.produce(topic, key=f"k{i}".encode(), value=None if i % 97 == 0 else f"v{i}".encode(),
                  partition=i % partitions, headers=headers)
    assert p.flush(30) == 0


def test_a_topic_table_holds_exactly_the_records_a_consumer_reads_in_pyiceberg_and_duckdb(target, tmp_path):
    b = started(target, tmp_path, **FAST_COMPACTION)
    try:
        topic = create_topic(b.bootstrap, f"e2e-ice-{uuid.uuid4().hex[:8]}", 3, {"iceberg.enable": "true"})
        plain = create_topic(b.bootstrap, f"e2e-plain-{uuid.uuid4().hex[:8]}", 1)
        produce(b.bootstrap, topic, 1500, 3, "zstd")
        produce(b.bootstrap, plain, 10, 1, "none")
        wait_until(lambda: table_count(b, topic) == 1500, 60, "the table to hold every record")
        consumed = consume(b.bootstrap, topic, 3)
        assert len(consumed) == 1500
        assert table_rows(b, topic) == consumed

        # The operators' view of the same catalog listener.
        import json
        import urllib.request
        with urllib.request.urlopen(f"{b.catalog_url}/tables", timeout=10) as response:
            states = {t["table"]: t for t in json.load(response)["tables"]}
        assert states[f"kafka.{topic}"]["records"] == 1500
        assert f"kafka.{plain}" not in states

        # The SQL catalog beside the embedded MetaStore lists and loads the same table.
        from pyiceberg.catalog.sql import SqlCatalog
        sql = SqlCatalog("diskless", uri=f"sqlite:///{b.data_dir}/iceberg/catalog.db")
        assert ("kafka", topic) in sql.list_tables("kafka")
        assert sql.load_table(f"kafka.{topic}").scan().to_arrow().num_rows == 1500

        catalog = rest_catalog(b)
        assert ("kafka", topic) in catalog.list_tables("kafka")
        assert ("kafka", plain) not in catalog.list_tables("kafka"), "a topic without iceberg.enable"

        # More records: a new snapshot appends the new files, the older snapshot stays.
        produce(b.bootstrap, topic, 600, 3, "lz4")
        wait_until(lambda: table_count(b, topic) == 2100, 60, "the table to hold the new records")
        table = catalog.load_table(f"kafka.{topic}")
        assert len(table.metadata.snapshots) >= 2
        assert table_rows(b, topic) == consume(b.bootstrap, topic, 3)

        con = duckdb_attached(b)
        count, partitions, nulls, offsets = con.sql(
            f'SELECT count(*), count(DISTINCT partition), count(*) FILTER (WHERE value IS NULL), '
            f'sum("offset") FROM lake.kafka."{topic}"').fetchone()
        assert (count, partitions) == (2100, 3)
        assert nulls == sum(1 for _, v, _ in consumed.values() if v is None) + sum(
            1 for i in range(600) if i % 97 == 0)
        assert offsets == sum(o for _, o in table_rows(b, topic))
        sample = con.sql(f'SELECT partition, "offset", key, value FROM lake.kafka."{topic}" '
                         f'WHERE partition = 1 ORDER BY "offset" LIMIT 5').fetchall()
        assert [(p, o, bytes(k), v and bytes(v)) for p, o, k, v in sample] == [
            (1, o, consumed[(1, o)][0], consumed[(1, o)][1]) for o in range(5)]
    finally:
        b.stop()


def test_a_compacted_topic_table_holds_what_the_compacted_log_holds(target, tmp_path):
    b = started(target, tmp_path, compaction="false")
    try:
        topic = f"e2e-ice-compact-{uuid.uuid4().hex[:8]}"
        config = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
                  "delete.retention.ms": "100", "min.compaction.lag.ms": "0", "iceberg.enable": "true"}
        create_topic(b.bootstrap, topic, 1, config)
        produced = produce_updates(b.bootstrap, topic)
        # Compact, then again once the tombstones' horizon passed: key compaction replaces
        # files, and each pass's table commit swaps them in the table too.
        for _ in range(4):
            compactor_once(b.data_dir)
            time.sleep(0.2)
        consumed = consume(b.bootstrap, topic, 1)
        rows = table_rows(b, topic)
        assert rows == consumed
        live = {k: v for k, (_, v) in live_view(produced).items() if v is not None}
        # The latest row per key, as docs/iceberg.md queries it.
        con = duckdb_attached(b)
        latest = con.sql(f'SELECT key, value FROM lake.kafka."{topic}" '
                         f'QUALIFY row_number() OVER (PARTITION BY key ORDER BY "offset" DESC) = 1').fetchall()
        got = {bytes(k).decode(): bytes(v).decode() for k, v in latest if v is not None}
        sentinel = max(produced)
        assert {k: v for k, v in got.items() if k != produced[sentinel][0]} == {
            k: v for k, v in live.items() if k != produced[sentinel][0]}
    finally:
        b.stop()


def test_retention_drops_files_from_the_table_before_the_compactor_deletes_them(target, tmp_path):
    b = started(target, tmp_path, compaction="false")
    try:
        topic = create_topic(b.bootstrap, f"e2e-ice-retention-{uuid.uuid4().hex[:8]}", 1,
                             {"iceberg.enable": "true", "segment.ms": "100"})
        produce(b.bootstrap, topic, 300, 1, "none")
        time.sleep(0.3)
        produce(b.bootstrap, topic, 200, 1, "none")
        compactor_once(b.data_dir)
        assert table_count(b, topic) == 500

        def every_listed_file_exists() -> None:
            table = rest_catalog(b).load_table(f"kafka.{topic}")
            for task in table.scan().plan_files():
                path = task.file.file_path.removeprefix("file://")
                assert glob.glob(path), f"{path} is listed but gone"

        every_listed_file_exists()
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        entry = ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)
        for _ in range(3):
            compactor_once(b.data_dir)
            every_listed_file_exists()
        # Retention removed whole files: the table shows what the log still holds.
        assert table_count(b, topic) == len(consume(b.bootstrap, topic, 1))
        assert table_count(b, topic) < 500
    finally:
        b.stop()


def duckdb_count(b, topic: str) -> int:
    return duckdb_attached(b).sql(f'SELECT count(*) FROM lake.kafka."{topic}"').fetchone()[0]


def test_aborted_transactions_and_markers_are_no_rows_of_the_table(target, tmp_path):
    b = started(target, tmp_path, compaction="false")
    try:
        topic = create_topic(b.bootstrap, f"e2e-ice-txn-{uuid.uuid4().hex[:8]}", 2, {"iceberg.enable": "true"})
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": f"t-{uuid.uuid4().hex[:8]}",
                      "linger.ms": 5})
        p.init_transactions(30)
        for round_no in range(6):
            p.begin_transaction()
            for i in range(50):
                p.produce(topic, key=f"r{round_no}-{i}".encode(), value=b"x", partition=i % 2)
            if round_no % 3 == 1:
                p.abort_transaction(30)
            else:
                p.commit_transaction(30)
        plain = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(40):
            plain.produce(topic, key=f"plain-{i}".encode(), value=b"y", partition=i % 2)
        assert plain.flush(30) == 0
        compactor_once(b.data_dir)
        consumed = consume(b.bootstrap, topic, 2)
        assert len(consumed) == 4 * 50 + 40, "read_committed sees committed and plain records"
        assert table_rows(b, topic) == consumed
        assert duckdb_count(b, topic) == len(consumed)
    finally:
        b.stop()


def test_delete_records_inside_a_file_hides_the_rows_below_the_new_log_start(target, tmp_path):
    b = started(target, tmp_path, compaction="false")
    try:
        topic = create_topic(b.bootstrap, f"e2e-ice-delrec-{uuid.uuid4().hex[:8]}", 1, {"iceberg.enable": "true"})
        produce(b.bootstrap, topic, 400, 1, "snappy")
        compactor_once(b.data_dir)
        assert table_count(b, topic) == 400
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        done = admin.delete_records([TopicPartition(topic, 0, 123)])
        [f.result(timeout=30) for f in done.values()]
        compactor_once(b.data_dir)
        consumed = consume(b.bootstrap, topic, 1)
        assert min(o for _, o in consumed) == 123
        assert table_rows(b, topic) == consumed
        assert duckdb_count(b, topic) == 400 - 123
    finally:
        b.stop()


def test_a_topic_turned_into_a_table_later_is_backfilled_with_its_compacted_history(target, tmp_path):
    b = started(target, tmp_path, compaction="false")
    try:
        topic = create_topic(b.bootstrap, f"e2e-ice-backfill-{uuid.uuid4().hex[:8]}", 2)
        produce(b.bootstrap, topic, 300, 2, "gzip")
        compactor_once(b.data_dir)
        assert table_count(b, topic) == -1, "not a table yet"
        produce(b.bootstrap, topic, 100, 2, "none")
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        entry = ConfigEntry("iceberg.enable", "true", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)
        compactor_once(b.data_dir)
        assert table_rows(b, topic) == consume(b.bootstrap, topic, 2)
        assert table_count(b, topic) == 400
        # Turned off again: the table leaves the catalog, the topic stays whole.
        entry = ConfigEntry("iceberg.enable", "false", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)
        compactor_once(b.data_dir)
        assert table_count(b, topic) == -1
        assert len(consume(b.bootstrap, topic, 2)) == 400
    finally:
        b.stop()
