"""Kafka's topic configs through real clients (confluent-kafka's AdminClient, producer and
consumer; the Java AdminClient, producer and consumer): create with many configs, alter and
incrementally alter, describe (source, default, synonyms), refusals, TOPIC_ALREADY_EXISTS,
broker-level defaults, LogAppendTime, timestamp bounds, compression.type re-encoding.
Every test passes against the reference Kafka too (E2E_TARGET=kafka)."""

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

from clients_cli import JavaDriver
from conftest import create_topic, unique_topic, wait_for_leaders
from driver import run_lines
from targets import BrokerProcess

# Kafka 4.1's topic configs, as DescribeConfigs lists them (the internal one is not listed).
KAFKA_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.message.bytes", "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms",
    "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
}

MANY_CONFIGS = {
    "cleanup.policy": "delete",
    "compression.type": "zstd",
    "compression.zstd.level": "5",
    "min.insync.replicas": "1",
    "message.timestamp.type": "CreateTime",
    "message.timestamp.after.max.ms": "7200000",
    "segment.ms": "600000",
    "segment.bytes": "1048576",
    "segment.jitter.ms": "10",
    "segment.index.bytes": "1048576",
    "unclean.leader.election.enable": "false",
    "retention.ms": "86400000",
    "retention.bytes": "1073741824",
    "max.message.bytes": "2000000",
    "preallocate": "false",
    "min.cleanable.dirty.ratio": "0.25",
    "flush.messages": "1000",
    "index.interval.bytes": "8192",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "1000",
    "local.retention.ms": "-2",
    "leader.replication.throttled.replicas": "*",
}

DYNAMIC_TOPIC = "DYNAMIC_TOPIC_CONFIG"
STATIC_BROKER = "STATIC_BROKER_CONFIG"
DEFAULT = "DEFAULT_CONFIG"
# confluent-kafka reports sources by Kafka's codes, and synonyms in a dict by name (so it keeps
# one synonym per name): synonym lists are checked through the Java AdminClient.
SOURCE_CODES = {1: DYNAMIC_TOPIC, 4: STATIC_BROKER, 5: DEFAULT}


def now_ms() -> int:
    return int(time.time() * 1000)


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def describe(broker, resource: ConfigResource) -> dict:
    a = admin(broker)  # kept alive until the result is in
    return a.describe_configs([resource])[resource].result(timeout=30)


def describe_topic(broker, topic: str) -> dict:
    return describe(broker, ConfigResource(ResourceType.TOPIC, topic))


def value_source(entry) -> tuple:
    return entry.value, SOURCE_CODES.get(entry.source, entry.source)


def create_error(broker, topic: str, config: dict, validate_only: bool = False):
    """The KafkaError of a refused creation, None when it succeeded."""
    a = admin(broker)
    futures = a.create_topics([NewTopic(topic, 1, 1, config=config)], validate_only=validate_only,
                              operation_timeout=10)
    try:
        futures[topic].result(timeout=30)
        return None
    except Exception as e:  # KafkaException wrapping a KafkaError
        return e.args[0]


def java(b, mode: str, topic: str, **flags) -> list:
    return run_lines(JavaDriver(b.bootstrap)._cmd(mode, topic, **flags))


def consume_all(broker, topic: str, count: int, timeout_s: float = 20) -> list:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    out, deadline = [], time.monotonic() + timeout_s
    try:
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append(m)
    finally:
        c.close()
    return out


def produce_confluent(broker, topic: str, records: list, **config) -> list:
    """Produces (timestamp, value) pairs one by one; returns each delivery's (error, offset)."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0, **config})
    out = []
    for ts, value in records:
        got = []
        p.produce(topic, value=value, key=b"k", partition=0, timestamp=ts,
                  on_delivery=lambda err, msg: got.append((err, msg.offset() if err is None else None)))
        p.flush(30)
        out.append(got[0])
    return out


def test_a_topic_created_with_many_kafka_configs_describes_them(broker):
    topic = create_topic(broker.bootstrap, unique_topic("many"), 1, MANY_CONFIGS)
    described = describe_topic(broker, topic)
    assert KAFKA_TOPIC_CONFIGS <= set(described), KAFKA_TOPIC_CONFIGS - set(described)
    for name, value in MANY_CONFIGS.items():
        entry = described[name]
        assert (*value_source(entry), entry.is_default) == (value, DYNAMIC_TOPIC, False), name
    defaults = described["flush.ms"]
    assert (*value_source(defaults), defaults.is_default) == ("9223372036854775807", DEFAULT, True)
    assert value_source(described["max.compaction.lag.ms"]) == ("9223372036854775807", DEFAULT)

    # The Java AdminClient: same values, Kafka's types, documentation.
    configs = java(broker, "configs-describe", topic)[0]["configs"]
    assert KAFKA_TOPIC_CONFIGS <= set(configs)
    assert configs["segment.ms"] == {"value": "600000", "source": DYNAMIC_TOPIC, "default": False,
                                     "read_only": False, "type": "LONG", "documented": True,
                                     "synonyms": [["segment.ms", "600000", DYNAMIC_TOPIC]]}
    types = {name: configs[name]["type"] for name in ("cleanup.policy", "compression.type", "max.message.bytes",
                                                       "min.cleanable.dirty.ratio", "preallocate")}
    assert types == {"cleanup.policy": "LIST", "compression.type": "STRING", "max.message.bytes": "INT",
                     "min.cleanable.dirty.ratio": "DOUBLE", "preallocate": "BOOLEAN"}
    assert configs["retention.bytes"]["synonyms"] == [["retention.bytes", "1073741824", DYNAMIC_TOPIC],
                                                      ["log.retention.bytes", "-1", DEFAULT]]
    assert configs["compression.type"]["synonyms"] == [["compression.type", "zstd", DYNAMIC_TOPIC],
                                                       ["compression.type", "producer", DEFAULT]]
    assert configs["max.compaction.lag.ms"]["synonyms"] == [
        ["log.cleaner.max.compaction.lag.ms", "9223372036854775807", DEFAULT]]
    # Kafka keeps a synonym list from its main broker setting on: log.retention.ms has no default.
    assert configs["flush.ms"]["synonyms"] == []


def test_the_java_admin_creates_with_configs_and_validate_only_creates_nothing(broker):
    topic = unique_topic("java-create")
    checked = java(broker, "configs-create", topic, config="segment.ms=1000;retention.bytes=-1", validate_only="true")
    assert checked == [{"ok": True}]
    assert topic not in admin(broker).list_topics(timeout=10).topics
    assert java(broker, "configs-create", topic, config="segment.ms=1000;min.insync.replicas=1") == [{"ok": True}]
    wait_for_leaders(broker.bootstrap, topic, 1)
    assert describe_topic(broker, topic)["segment.ms"].value == "1000"


def test_unknown_names_and_bad_values_are_refused_with_kafkas_messages(broker):
    cases = [
        ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
        ({"segment.bytes": "1000"}, "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
        ({"retention.ms": "soon"}, "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
        ({"message.timestamp.type": "logappendtime"},
         "Invalid value logappendtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
        ({"min.cleanable.dirty.ratio": "2"},
         "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ]
    for config, message in cases:
        for validate_only in (False, True):
            error = create_error(broker, unique_topic("bad"), config, validate_only)
            assert error is not None and error.code() == KafkaError.INVALID_CONFIG, (config, error)
            assert message in error.str(), error.str()
        [line] = java(broker, "configs-create", unique_topic("bad-java"),
                      config=";".join(f"{k}={v}" for k, v in config.items()))
        assert line["exception"] == "InvalidConfigurationException" and message in line["message"], line


def test_an_existing_topic_is_topic_already_exists_whatever_configs_are_asked_for(broker, new_topic):
    topic = new_topic()
    for config in ({}, {"retention.ms": "-7"}, {"no.such.config": "x"}, {"segment.bytes": "10"}):
        for validate_only in (False, True):
            error = create_error(broker, topic, config, validate_only)
            assert error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS, (config, error)
        [line] = java(broker, "configs-create", topic, config=";".join(f"{k}={v}" for k, v in config.items()))
        assert line["exception"] == "TopicExistsException", line


def test_configs_are_altered_whole_and_incrementally(broker, new_topic):
    topic = new_topic(config={"retention.ms": "1000"})
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("segment.ms", "5000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("leader.replication.throttled.replicas", "0:1,1:1", incremental_operation=AlterConfigOpType.APPEND),
    ])
    a = admin(broker)
    a.incremental_alter_configs([resource])[resource].result(timeout=30)
    described = describe_topic(broker, topic)
    assert value_source(described["segment.ms"]) == ("5000", DYNAMIC_TOPIC)
    assert value_source(described["retention.ms"]) == ("604800000", DEFAULT)
    assert described["leader.replication.throttled.replicas"].value == "0:1,1:1"

    # The Java AdminClient: SUBTRACT, validate_only, refusals.
    assert java(broker, "configs-alter", topic, ops="SUBTRACT:leader.replication.throttled.replicas=0:1") == [{"ok": True}]
    assert java(broker, "configs-alter", topic, ops="SET:message.timestamp.type=LogAppendTime",
                validate_only="true") == [{"ok": True}]
    [line] = java(broker, "configs-alter", topic, ops="APPEND:retention.ms=5")
    assert line["exception"] == "InvalidConfigurationException", line
    assert "Can't APPEND to key retention.ms because its type is not LIST." in line["message"]
    [line] = java(broker, "configs-alter", topic, ops="SET:segment.jitter.ms=-1")
    assert "Invalid value -1 for configuration segment.jitter.ms: Value must be at least 0" in line["message"], line
    configs = java(broker, "configs-describe", topic)[0]["configs"]
    assert configs["leader.replication.throttled.replicas"]["value"] == "1:1"
    assert configs["message.timestamp.type"]["value"] == "CreateTime"
    assert configs["segment.jitter.ms"]["source"] == DEFAULT


def test_the_broker_describes_its_log_defaults(broker):
    broker_id = str(next(iter(admin(broker).list_topics(timeout=10).brokers)))
    described = describe(broker, ConfigResource(ResourceType.BROKER, broker_id))
    expected = {"log.retention.hours": "168", "log.retention.bytes": "-1", "log.segment.bytes": "1073741824",
                "message.max.bytes": "1048588", "compression.type": "producer",
                "log.message.timestamp.type": "CreateTime", "log.roll.hours": "168",
                "log.message.timestamp.after.max.ms": "3600000"}
    for name, value in expected.items():
        assert value_source(described[name]) == (value, DEFAULT), name
    assert described["log.retention.ms"].value is None
    assert described["broker.id"].value == broker_id


@pytest.fixture
def broker_with_defaults(target, tmp_path):
    settings = {"log.retention.ms": 3_600_000, "compression.type": "lz4", "log.segment.bytes": 2_097_152,
                "log.message.timestamp.type": "LogAppendTime"}
    b = BrokerProcess(target, tmp_path / "with-defaults", settings)
    b.start()
    yield b
    b.stop()


def test_broker_level_defaults_apply_and_are_described_as_static(broker_with_defaults):
    broker = broker_with_defaults
    topic = create_topic(broker.bootstrap, unique_topic("defaults"), 1, {"segment.bytes": "1048576"})
    described = describe_topic(broker, topic)
    retention = described["retention.ms"]
    assert (*value_source(retention), retention.is_default) == ("3600000", STATIC_BROKER, False)
    assert value_source(described["compression.type"]) == ("lz4", STATIC_BROKER)
    configs = java(broker, "configs-describe", topic)[0]["configs"]
    assert configs["retention.ms"]["synonyms"] == [["log.retention.ms", "3600000", STATIC_BROKER],
                                                   ["log.retention.hours", "168", DEFAULT]]
    assert configs["compression.type"]["synonyms"] == [["compression.type", "lz4", STATIC_BROKER],
                                                       ["compression.type", "producer", DEFAULT]]
    assert configs["segment.bytes"]["synonyms"] == [["segment.bytes", "1048576", DYNAMIC_TOPIC],
                                                    ["log.segment.bytes", "2097152", STATIC_BROKER],
                                                    ["log.segment.bytes", "1073741824", DEFAULT]]
    broker_id = str(next(iter(admin(broker).list_topics(timeout=10).brokers)))
    broker_configs = java(broker, "configs-describe", topic, broker=broker_id)[0]["configs"]
    assert broker_configs["log.retention.ms"]["value"] == "3600000"
    assert broker_configs["log.retention.ms"]["source"] == STATIC_BROKER
    assert broker_configs["log.retention.ms"]["synonyms"][0] == ["log.retention.ms", "3600000", STATIC_BROKER]
    # The broker's default timestamp type applies: the consumer sees the append time.
    before = now_ms()
    assert produce_confluent(broker, topic, [(1_000_000_000_000, b"old")]) == [(None, 0)]
    [m] = consume_all(broker, topic, 1)
    kind, ts = m.timestamp()
    assert kind == 2 and before <= ts <= now_ms(), (kind, ts)  # TIMESTAMP_LOG_APPEND_TIME


def test_log_append_time_is_what_consumers_and_producers_see(broker, new_topic):
    topic = new_topic(config={"message.timestamp.type": "LogAppendTime"})
    before = now_ms()
    assert produce_confluent(broker, topic, [(1_000_000_000_000, b"v0")], **{"compression.type": "lz4"}) == [(None, 0)]
    # The Java producer reports the broker's append time from the produce response.
    [line] = java(broker, "configs-produce", topic, ts=str(1_000_000_000_001))
    after = now_ms()
    assert line["offset"] == 1 and before <= line["timestamp"] <= after, line
    messages = consume_all(broker, topic, 2)
    assert [m.value() for m in messages] == [b"v0", b"value-0"]
    for m in messages:
        kind, ts = m.timestamp()
        assert kind == 2 and before <= ts <= after, (kind, ts)
    java_consumed = JavaDriver(broker.bootstrap).consume(topic, 0, "beginning", 2)
    assert all(before <= r["ts"] <= after for r in java_consumed), java_consumed
    first_ts = messages[0].timestamp()[1]
    assert JavaDriver(broker.bootstrap).list_offsets(topic, 0, [first_ts]) == [0]


def test_timestamps_out_of_bounds_are_refused_with_invalid_timestamp(broker, new_topic):
    topic = new_topic(config={"message.timestamp.before.max.ms": "3600000",
                              "message.timestamp.after.max.ms": "3600000"})
    now = now_ms()
    lines = java(broker, "configs-produce", topic, ts=f"{now - 7_200_000},{now + 7_200_000},{now}")
    assert [line.get("exception") for line in lines] == ["InvalidTimestampException", "InvalidTimestampException", None], lines
    assert lines[2]["offset"] == 0
    results = produce_confluent(broker, topic, [(now - 7_200_000, b"old"), (now + 1000, b"ok")])
    assert results[0][0] is not None and results[0][0].code() == KafkaError.INVALID_TIMESTAMP, results
    assert results[1] == (None, 1)
    assert [m.value() for m in consume_all(broker, topic, 2)] == [b"value-2", b"ok"]
    assert JavaDriver(broker.bootstrap).list_offsets(topic, 0, [-1]) == [2], "nothing else was stored"


def test_compression_type_gzip_reencodes_what_producers_send(broker, new_topic):
    topic = new_topic(config={"compression.type": "gzip"})
    values = [f"value-{i}-".encode() * 50 for i in range(5)]
    ts = now_ms()
    assert produce_confluent(broker, topic, [(ts, v) for v in values[:3]], **{"compression.type": "snappy"}) == \
        [(None, 0), (None, 1), (None, 2)]
    JavaDriver(broker.bootstrap).produce(topic, [{"partition": 0, "key": "k", "value": v.decode(), "headers": [],
                                                  "ts": ts} for v in values[3:]], codec="zstd")
    assert [m.value() for m in consume_all(broker, topic, 5)] == values
    java_consumed = JavaDriver(broker.bootstrap).consume(topic, 0, "beginning", 5)
    assert [r["value"].encode() for r in java_consumed] == values


def test_refused_admin_requests_are_logged_with_the_client(broker, target):
    if target != "ours":
        pytest.skip("our broker's log lines")
    topic = unique_topic("logged")
    create_error(broker, topic, {"no.such.config": "1"})
    log = broker.data_dir / f"process-{broker.starts}.log"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [line for line in log.read_text(errors="replace").splitlines()
                 if "admin request refused" in line and topic in line]
        if lines:
            break
        time.sleep(0.2)
    assert lines, "no log line"
    assert "api=\"create_topics\"" in lines[0] or "api=create_topics" in lines[0], lines[0]
    assert "Unknown topic config name" in lines[0] and "peer=127.0.0.1:" in lines[0], lines[0]
