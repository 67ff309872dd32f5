"""Acknowledged means durable: produce with acks=all while the broker is SIGKILLed and restarted on
the same data dir, then every acknowledged record must be in the log at the offset it was acked
with, the log's offsets dense, and the acked records in production order."""

import signal
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from conftest import create_topic, unique_topic

KILLS = 3
UP_BEFORE_KILL_S = 2.0
MESSAGES_MAX = 100_000
PACE_MESSAGES_PER_10MS = 10  # ~1000/s, so records are in flight at every kill


def test_acked_records_survive_sigkill_restarts_in_order_with_dense_offsets(broker_factory):
    broker = broker_factory()
    topic = create_topic(broker.bootstrap, unique_topic("crash"), 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": False,
                         "max.in.flight": 1, "retries": 1_000_000, "retry.backoff.ms": 100,
                         "message.timeout.ms": 120_000, "linger.ms": 5, "compression.type": "lz4",
                         "reconnect.backoff.max.ms": 500,
                         "log_level": 2})
    acked = {}  # seq -> offset
    failed = []
    stop = threading.Event()

    def on_delivery(err, msg):
        seq = int(msg.value().decode().split("-")[1])
        if err is None:
            acked[seq] = msg.offset()
        else:
            failed.append((seq, str(err)))

    def produce_loop():
        seq = 0
        while not stop.is_set() and seq < MESSAGES_MAX:
            for _ in range(PACE_MESSAGES_PER_10MS):
                try:
                    producer.produce(topic, value=f"seq-{seq}".encode(), key=str(seq % 7).encode(), partition=0,
                                     on_delivery=on_delivery)
                    seq += 1
                except BufferError:  # local queue full while the broker is down
                    break
            producer.poll(0.01)

    t = threading.Thread(target=produce_loop, daemon=True)
    t.start()
    for _ in range(KILLS):
        time.sleep(UP_BEFORE_KILL_S)
        broker.kill(signal.SIGKILL)
        time.sleep(0.3)
        broker.start()
    time.sleep(UP_BEFORE_KILL_S)
    stop.set()
    t.join(timeout=30)
    assert producer.flush(120) == 0, "records still unacknowledged 120s after the last restart"
    assert not failed, failed[:5]
    assert len(acked) > 100, f"only {len(acked)} records acknowledged"

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "e2e-unused",
                         "enable.auto.commit": False})
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    log = []
    deadline = time.monotonic() + 60
    while len(log) < high and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=1000, timeout=0.5):
            assert m.error() is None, m.error()
            log.append((m.offset(), int(m.value().decode().split("-")[1])))
    consumer.close()

    assert [o for o, _ in log] == list(range(high)), "offsets are not dense from 0 to the high watermark"
    at_offset = dict(log)
    for seq, offset in acked.items():
        assert at_offset.get(offset) == seq, f"acked seq {seq} at offset {offset}, log has {at_offset.get(offset)}"
    in_ack_order = [acked[s] for s in sorted(acked)]
    assert in_ack_order == sorted(in_ack_order), "acknowledged records are out of production order"
    duplicates = len(log) - len({s for _, s in log})
    print(f"acked={len(acked)} log={len(log)} duplicates_from_retries={duplicates} starts={broker.starts}")
