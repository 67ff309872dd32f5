"""Compacted topics (cleanup.policy=compact): the configs through real admin clients, records
without a key refused on produce, and key compaction read back by a real consumer. Every test
passes against the reference Kafka too (E2E_TARGET=kafka)."""

import struct
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

import wire

INVALID_RECORD = 87
DYNAMIC_TOPIC, DEFAULT = 1, 5


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def describe(broker, topic: str) -> dict:
    a = admin(broker)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return a.describe_configs([resource])[resource].result(timeout=30)


def create_error(broker, topic: str, config: dict):
    a = admin(broker)
    futures = a.create_topics([NewTopic(topic, 1, 1, config=config)], operation_timeout=10)
    try:
        futures[topic].result(timeout=30)
        return None
    except Exception as e:  # KafkaException wrapping a KafkaError
        return e.args[0]


def latest_offset(broker, topic: str) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def produce_raw(broker, topic: str, batch: bytes, version: int) -> bytes:
    with wire.connect(broker.bootstrap, timeout_s=30) as s:
        s.sendall(wire.produce_request(topic, batch, 7, version))
        resp = wire.read_frame(s)
    assert resp is not None and struct.unpack_from(">i", resp)[0] == 7
    return resp


def test_every_cleanup_policy_is_accepted_with_the_cleaner_configs_and_described(broker, new_topic):
    configs = {"cleanup.policy": "compact", "min.compaction.lag.ms": "100",
               "max.compaction.lag.ms": "100000", "delete.retention.ms": "1000",
               "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100"}
    topic = new_topic(config=configs)
    described = describe(broker, topic)
    for name, value in configs.items():
        assert (described[name].value, described[name].source) == (value, DYNAMIC_TOPIC), name
    both = new_topic(config={"cleanup.policy": "compact,delete"})
    assert describe(broker, both)["cleanup.policy"].value == "compact,delete"
    plain = new_topic()
    assert (describe(broker, plain)["min.cleanable.dirty.ratio"].value,
            describe(broker, plain)["delete.retention.ms"].value) == ("0.5", "86400000")

    # Alter whole, then incrementally: a delete topic becomes compacted and back.
    a = admin(broker)
    resource = ConfigResource(ResourceType.TOPIC, plain, set_config={"cleanup.policy": "compact"})
    a.alter_configs([resource])[resource].result(timeout=30)
    assert describe(broker, plain)["cleanup.policy"].value == "compact"
    resource = ConfigResource(ResourceType.TOPIC, plain, incremental_configs=[
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND)])
    a.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert describe(broker, plain)["cleanup.policy"].value == "compact,delete"
    resource = ConfigResource(ResourceType.TOPIC, plain, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT)])
    a.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert describe(broker, plain)["cleanup.policy"].value == "delete"


def test_bad_cleaner_configs_are_refused_as_kafka_refuses_them(broker):
    for config in ({"cleanup.policy": "compact,squash"},
                   {"min.cleanable.dirty.ratio": "1.5"},
                   {"min.cleanable.dirty.ratio": "-0.1"},
                   {"delete.retention.ms": "-1"},
                   {"min.compaction.lag.ms": "-1"},
                   {"max.compaction.lag.ms": "0"},
                   {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}):
        name = f"e2e-compact-bad-{uuid.uuid4().hex[:8]}"
        error = create_error(broker, name, config)
        assert error is not None and error.code() == KafkaError.INVALID_CONFIG, (config, error)


def keyless_batch() -> bytes:
    records = wire.keyed_record(b"k", b"a", 0) + wire.keyed_record(None, b"b", 1)
    return wire.batch(records, 2)


def test_a_record_without_a_key_refuses_the_whole_batch_on_a_compacted_topic(broker, new_topic):
    topic = new_topic(config={"cleanup.policy": "compact"})
    ok = wire.batch(wire.keyed_record(b"k", b"v", 0), 1)
    assert wire.produce_error_code(produce_raw(broker, topic, ok, 8)) == 0
    error, record_errors, message = wire.produce_v8_partition(produce_raw(broker, topic, keyless_batch(), 8))
    assert error == INVALID_RECORD
    assert [i for i, _ in record_errors] == [1]
    assert record_errors == [(1, f"Compacted topic cannot accept message without key in topic partition {topic}-0")]
    print(message)
    assert message is not None and "1 record errors" in message, message
    # Kafka 4.1 answers INVALID_RECORD on the versions before KIP-467 (v3-v7) too.
    assert wire.produce_error_code(produce_raw(broker, topic, keyless_batch(), 7)) == INVALID_RECORD
    assert latest_offset(broker, topic) == 1, "nothing of the refused batches was stored"
    # A delete topic takes the same batch.
    plain = new_topic()
    assert wire.produce_error_code(produce_raw(broker, plain, keyless_batch(), 8)) == 0


def test_a_client_producing_without_a_key_gets_invalid_record(broker, new_topic):
    topic = new_topic(config={"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    got = []
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: got.append(err))
    p.flush(30)
    p.produce(topic, key=b"k", value=b"keyed", partition=0, on_delivery=lambda err, msg: got.append(err))
    p.flush(30)
    assert got[0] is not None and got[0].code() == KafkaError.INVALID_RECORD, got
    assert got[1] is None, got
    assert latest_offset(broker, topic) == 1
