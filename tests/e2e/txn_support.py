"""What the transaction tests share: reading a topic to its end in either isolation level,
committed group offsets (OffsetFetch), and the reference Kafka set to the transaction protocol
our broker speaks.

Our broker advertises `transaction.version` 1 (no KIP-890 part 2), so every client uses the
classic protocol (AddPartitionsToTxn before producing, EndTxn without an epoch bump). Kafka 4.1
formats new clusters at transaction.version 2, where the Java client switches to the new one
(Produce v12 adds partitions implicitly, EndTxn v5 bumps the epoch). `use_transaction_version_1`
downgrades the reference to 1 so that both brokers are proven through the same requests."""

import subprocess
import time
import uuid

from confluent_kafka import Consumer, KafkaError, TopicPartition

from targets import REPO

READ_TIMEOUT_S = 60


def use_transaction_version_1(broker) -> None:
    """On the reference Kafka, finalize transaction.version at 1 (a no-op when it already is);
    nothing on ours, which never advertised more."""
    if broker.target != "kafka":
        return
    classpath = subprocess.run([str(REPO / "scripts/kafka-reference.sh"), "classpath"], check=True,
                               capture_output=True, text=True).stdout.strip()
    p = subprocess.run(["java", "-cp", classpath, "org.apache.kafka.tools.FeatureCommand",
                        "--bootstrap-server", broker.bootstrap, "downgrade", "--feature",
                        "transaction.version=1"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 or "already" in p.stdout + p.stderr, p.stdout + p.stderr


def read_to_end(bootstrap: str, topic: str, partitions: int, isolation: str) -> list:
    """Every record of `topic` from offset 0 to the end a consumer in `isolation`
    ("read_committed" or "read_uncommitted") sees (the last stable offset for read_committed), as
    (partition, offset, key, value) with str keys and values, in offset order per partition."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        records, at_end = [], set()
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"{topic} not read to its end in {READ_TIMEOUT_S}s ({isolation})"
            for m in c.consume(num_messages=1000, timeout=0.5):
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                records.append((m.partition(), m.offset(), _text(m.key()), _text(m.value())))
        return records
    finally:
        c.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict:
    """The group's committed offset per partition (OffsetFetch; -1001 when none)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def values(records: list) -> list:
    return [r[3] for r in records]


def _text(b):
    return None if b is None else b.decode()
