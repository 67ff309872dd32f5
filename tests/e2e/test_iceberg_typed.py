"""Typed columns, judged by real engines: values produced with confluent-kafka's Avro, JSON
Schema and Protobuf serializers are decoded (from the broker's own schema registry) into
`value_typed`, which pyiceberg and DuckDB read equal to what the deserializing consumer reads;
a field added mid-stream is a new column; a record that does not decode keeps its bytes and says
why in `value_error`. The tables and the registry are ours: skipped against the reference Kafka."""

import time
import uuid

import pytest
from confluent_kafka import Producer, SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import StringSerializer

from conftest import create_topic
from targets import free_port
from test_iceberg_tables import FAST_COMPACTION, catalog_broker, duckdb_attached, rest_catalog, table_count
from test_schema_registry import JSON_SCHEMA, USER_V1, USER_V2, consume, produce, protobuf_classes
from waiting import wait_until


@pytest.fixture(scope="module")
def lake(target, tmp_path_factory):
    """One broker with its registry and its catalog, compacting every few hundred ms."""
    if target != "ours":
        pytest.skip("Iceberg tables and the schema registry are ours")
    port = free_port()
    b = catalog_broker(tmp_path_factory.mktemp("typed-broker"),
                       {"schema.registry.listen": f"127.0.0.1:{port}", **FAST_COMPACTION})
    b.registry_url = f"http://127.0.0.1:{port}"
    b.start()
    yield b
    b.stop()


def typed_rows(b, topic: str) -> list:
    """(offset, value_typed, value_error) of partition 0 as pyiceberg reads the table."""
    table = rest_catalog(b).load_table(f"kafka.{topic}")
    rows = table.scan(selected_fields=("offset", "value_typed", "value_error")).to_arrow().to_pylist()
    return sorted((r["offset"], r["value_typed"], r["value_error"]) for r in rows)


def table_topic(b, name: str) -> str:
    return create_topic(b.bootstrap, f"e2e-typed-{name}-{uuid.uuid4().hex[:8]}", 1, {"iceberg.enable": "true"})


def test_avro_values_are_typed_columns_and_a_field_added_mid_stream_is_a_new_column(lake):
    topic = table_topic(lake, "avro")
    registry = SchemaRegistryClient({"url": lake.registry_url})
    v1 = [{"name": f"u{i}", "age": i} for i in range(20)]
    produce(lake.bootstrap, topic, AvroSerializer(registry, USER_V1), v1)
    wait_until(lambda: table_count(lake, topic) == 20, 60, "the first records in the table")
    v2 = [{"name": f"w{i}", "age": 100 + i, "email": f"w{i}@x" if i % 2 else None} for i in range(10)]
    produce(lake.bootstrap, topic, AvroSerializer(registry, USER_V2), v2)
    # Records that do not decode: no wire format, and a known schema id with broken bytes.
    raw = Producer({"bootstrap.servers": lake.bootstrap})
    raw.produce(topic, value=b"not avro at all")
    raw.produce(topic, value=b"\x00" + registry.get_latest_version(f"{topic}-value").schema_id.to_bytes(4, "big") + b"\xff")
    assert raw.flush(30) == 0
    wait_until(lambda: table_count(lake, topic) == 32, 60, "every record in the table")

    consumed = consume(lake.bootstrap, topic, AvroDeserializer(registry), 30)
    rows = typed_rows(lake, topic)
    typed = [r[1] for r in rows[:30]]
    assert [{"name": t["name"], "age": t["age"]} for t in typed] == [{"name": c["name"], "age": c["age"]} for c in consumed]
    assert [t["email"] for t in typed] == [None] * 20 + [v["email"] for v in v2], "older files read the new column as null"
    assert all(r[2] is None for r in rows[:30])
    (_, t30, e30), (_, t31, e31) = rows[30:]
    assert t30 is None and "not in the Confluent wire format" in e30
    assert t31 is None and e31.startswith("schema id")

    table = rest_catalog(lake).load_table(f"kafka.{topic}")
    assert len(table.metadata.schemas) >= 2, "the added field is a schema evolution"
    typed_field = table.schema().find_field("value_typed")
    email_id = table.schema().find_field("value_typed.email").field_id
    name_id = table.schema().find_field("value_typed.name").field_id
    assert email_id > name_id > typed_field.field_id

    con = duckdb_attached(lake)
    got = con.sql(f'SELECT value_typed.name, value_typed.age, value_typed.email FROM lake.kafka."{topic}" '
                  f'WHERE value_error IS NULL ORDER BY "offset"').fetchall()
    assert got == [(c["name"], c["age"], c.get("email")) for c in consumed]
    lengths = con.sql(f'SELECT octet_length(value) FROM lake.kafka."{topic}" WHERE value_error IS NULL').fetchall()
    assert lengths == [(5,)] * 30, "an Avro value its typed columns hold is stored once (the header is kept)"
    # The errors "view" of docs/iceberg.md.
    errors = con.sql(f'SELECT "offset", value_error FROM lake.kafka."{topic}" WHERE value_error IS NOT NULL').fetchall()
    assert [o for o, _ in errors] == [30, 31]


def test_json_schema_and_protobuf_values_are_typed_columns_in_pyiceberg_and_duckdb(lake):
    registry = SchemaRegistryClient({"url": lake.registry_url})
    orders = table_topic(lake, "json")
    values = [{"id": i, "item": f"item-{i}"} for i in range(15)]
    produce(lake.bootstrap, orders, JSONSerializer(JSON_SCHEMA, registry), values)

    order_class = protobuf_classes()
    proto = table_topic(lake, "proto")
    messages = []
    for i in range(12):
        m = order_class(id=i)
        m.price.units = 10 * i
        m.price.currency = "EUR" if i % 2 else "NOK"
        messages.append(m)
    produce(lake.bootstrap, proto, ProtobufSerializer(order_class, registry, {"use.deprecated.format": False}), messages)

    wait_until(lambda: table_count(lake, orders) == 15 and table_count(lake, proto) == 12, 60,
               "both tables to hold every record")
    consumed = consume(lake.bootstrap, orders, JSONDeserializer(JSON_SCHEMA), 15)
    assert [r[1] for r in typed_rows(lake, orders)] == consumed
    decoded = consume(lake.bootstrap, proto, ProtobufDeserializer(order_class, {"use.deprecated.format": False}), 12)
    assert [r[1] for r in typed_rows(lake, proto)] == [
        {"id": m.id, "price": {"units": m.price.units, "currency": m.price.currency}} for m in decoded]

    con = duckdb_attached(lake)
    assert con.sql(f'SELECT sum(value_typed.id), count(DISTINCT value_typed.item) FROM lake.kafka."{orders}"').fetchone() == (105, 15)
    assert con.sql(f'SELECT value_typed.price.currency, sum(value_typed.price.units) FROM lake.kafka."{proto}" '
                   f'GROUP BY 1 ORDER BY 1').fetchall() == [("EUR", 360), ("NOK", 300)]


def test_a_topic_made_a_table_later_gets_typed_columns_for_its_compacted_history(lake):
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    topic = create_topic(lake.bootstrap, f"e2e-typed-later-{uuid.uuid4().hex[:8]}", 1)
    registry = SchemaRegistryClient({"url": lake.registry_url})
    users = [{"name": f"b{i}", "age": i} for i in range(25)]
    produce(lake.bootstrap, topic, AvroSerializer(registry, USER_V1), users)
    files = lambda: set(lake.data_dir.glob("objects/compacted/**/*.parquet"))  # noqa: E731
    before = files()
    wait_until(lambda: len(files() - before) > 0, 60, "the history to be compacted before the table exists")
    admin = AdminClient({"bootstrap.servers": lake.bootstrap})
    entry = ConfigEntry("iceberg.enable", "true", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)

    def typed_history():
        if table_count(lake, topic) != 25:
            return False
        return all(r[1] is not None for r in typed_rows(lake, topic))
    wait_until(typed_history, 60, "the backfilled history to be rewritten with typed columns")
    consumed = consume(lake.bootstrap, topic, AvroDeserializer(registry), 25)
    assert [r[1] for r in typed_rows(lake, topic)] == consumed
    # Kafka consumers read the rewritten files exactly as before.
    assert consumed == users


# The crash points of `tables::crash_point`, in the order a pass reaches them.
CRASH_POINTS = ["retype-uploaded", "retype-swapped", "table-manifests-written", "table-manifest-list-written",
                "table-metadata-written", "table-pointer-swapped"]


def test_a_compactor_killed_at_every_step_of_a_commit_leaves_no_dangling_or_duplicate_file(target, tmp_path):
    """Per step, a topic with untyped history is made a table, and the pass that retypes the
    history and creates the table is killed there; for table steps, so is the next commit to the
    existing table. After each kill, the next whole pass leaves a table whose every file exists,
    none listed twice, with every record typed."""
    import os
    import signal
    import subprocess

    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    from test_compacted_topics import REPO, compactor_once
    if target != "ours":
        pytest.skip("Iceberg tables are ours")
    port = free_port()
    b = catalog_broker(tmp_path / "broker", {"compaction": "false", "schema.registry.listen": f"127.0.0.1:{port}"})
    b.start()
    try:
        registry = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
        serializer = AvroSerializer(registry, USER_V1)
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        command = [os.environ.get("COMPACTOR_BIN", str(REPO / "target/debug/compactor")), "--data-dir",
                   str(b.data_dir), "--object-store", f"file://{b.data_dir}/objects", "--metastore", "embedded",
                   "--compaction-min-bytes", "0", "--compaction-min-age-ms", "0",
                   "--compaction-grace-period-ms", "0", "--compaction-session-timeout-ms", "1000", "--once"]

        def killed_then_whole(step, topic, produced):
            killed = subprocess.run(command, capture_output=True, timeout=120,
                                    env={**os.environ, "DISKLESS_CRASH_AT": step})
            assert killed.returncode == -signal.SIGKILL, f"{step}: {killed.stderr.decode()[-1500:]}"
            time.sleep(1.5)  # the killed leader's lock expires (a live one's pass would be skipped)
            subprocess.run(command, check=True, capture_output=True, timeout=120)
            table = rest_catalog(b).load_table(f"kafka.{topic}")
            paths = [task.file.file_path for task in table.scan().plan_files()]
            assert len(paths) == len(set(paths)), f"{step}: a file listed twice"
            for path in paths:
                assert os.path.exists(path.removeprefix("file://")), f"{step}: {path} is listed but gone"
            assert [r[1] for r in typed_rows(b, topic)] == produced, f"{step}: the table after the next pass"

        for step in CRASH_POINTS:
            topic = create_topic(b.bootstrap, f"e2e-typed-kill-{uuid.uuid4().hex[:8]}", 1)
            produced = [{"name": f"h{i}", "age": i} for i in range(10)]
            produce(b.bootstrap, topic, serializer, produced)
            compactor_once(b.data_dir)  # history without typed columns: the retype steps have work
            entry = ConfigEntry("iceberg.enable", "true", incremental_operation=AlterConfigOpType.SET)
            resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
            admin.incremental_alter_configs([resource])[resource].result(timeout=30)
            for round_ in range(2 if step.startswith("table-") else 1):
                more = [{"name": f"r{round_}-{i}", "age": i} for i in range(5)]
                produce(b.bootstrap, topic, serializer, more)
                produced += more
                killed_then_whole(step, topic, produced)
            assert consume(b.bootstrap, topic, AvroDeserializer(registry), len(produced)) == produced
    finally:
        b.stop()


def test_key_compaction_of_a_typed_topic_keeps_the_latest_value_per_key_readable_by_kafka(lake):
    topic = create_topic(lake.bootstrap, f"e2e-typed-keyed-{uuid.uuid4().hex[:8]}", 1,
                         {"iceberg.enable": "true", "cleanup.policy": "compact", "segment.ms": "100",
                          "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"})
    registry = SchemaRegistryClient({"url": lake.registry_url})
    serializer = AvroSerializer(registry, USER_V1)
    produce(lake.bootstrap, topic, serializer, [{"name": f"old{i}", "age": i} for i in range(10)])
    wait_until(lambda: table_count(lake, topic) == 10, 60, "the first round in the table")
    latest = [{"name": f"new{i}", "age": 50 + i} for i in range(10)]
    produce(lake.bootstrap, topic, serializer, latest)
    # A record of another key in a later segment: the newest segment is never cleaned, as in
    # Kafka.
    time.sleep(0.5)
    sentinel = {"name": "sentinel", "age": 0}
    producer = SerializingProducer({"bootstrap.servers": lake.bootstrap, "key.serializer": StringSerializer(),
                                    "value.serializer": serializer})
    producer.produce(topic, key="sentinel", value=sentinel)
    assert producer.flush(30) == 0
    # Key compaction rewrites files whose values are elided: it reads them whole and writes them
    # elided again.
    wait_until(lambda: [r[1] for r in typed_rows(lake, topic)] == latest + [sentinel], 90,
               "key compaction to keep the latest value per key")
    assert consume(lake.bootstrap, topic, AvroDeserializer(registry), 11) == latest + [sentinel]
