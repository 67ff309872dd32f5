"""Client quotas set with Kafka's own `kafka-configs` and enforced with Kafka's semantics: a
producer held to its byte rate, the throttle time reported to the client. The same test
passes against the reference Kafka (E2E_TARGET=kafka)."""

import json
import time

from confluent_kafka import Producer

from conftest import create_topic, unique_topic
from targets import BrokerProcess
from test_kafka_tools import CONFIGS, tool

QUOTA_BYTES_PER_S = 1024 * 1024
# Rates are measured over `quota.window.num` one-second samples, so a client may send about
# that many windows' worth at once before it is throttled (Kafka's default of 11 lets a fresh
# client send 10 s of quota in a burst, then nothing for 10 s). Two samples keep the bursts at
# about two seconds' worth, so a 24 s measurement shows the rate to a few percent.
WINDOW_NUM = 2
RUN_S = 30
STEADY_FROM_S = 5
STEADY_TO_S = 29


def test_a_produce_byte_rate_quota_holds_a_producer_within_ten_percent(target, tmp_path):
    broker = BrokerProcess(target, tmp_path / "broker", settings={"quota.window.num": WINDOW_NUM})
    broker.start()
    try:
        held_to_its_quota(broker)
    finally:
        broker.stop()


def held_to_its_quota(broker):
    b, topic = broker.bootstrap, create_topic(broker.bootstrap, unique_topic("quota"), partitions=2)
    client_id = unique_topic("quota-client")
    tool(b, CONFIGS, "--entity-type", "clients", "--entity-name", client_id, "--alter",
         "--add-config", f"producer_byte_rate={QUOTA_BYTES_PER_S}")
    described = tool(b, CONFIGS, "--entity-type", "clients", "--entity-name", client_id, "--describe")
    assert f"Quota configs for client-id '{client_id}' are producer_byte_rate={QUOTA_BYTES_PER_S}.0" in described
    time.sleep(2)  # the quota reaches every broker (Kafka: through its metadata log)

    throttles_ms = []
    delivered = []  # (time, bytes)

    def on_stats(text):
        stats = json.loads(text)
        for broker_stats in stats.get("brokers", {}).values():
            throttles_ms.append(broker_stats.get("throttle", {}).get("max", 0))

    def on_delivery(error, message):
        if error is None:
            delivered.append((time.monotonic(), len(message.value())))

    producer = Producer({"bootstrap.servers": b, "client.id": client_id, "linger.ms": 5,
                         "batch.size": 64 * 1024, "statistics.interval.ms": 1000, "stats_cb": on_stats,
                         "queue.buffering.max.kbytes": 4096})
    value = b"x" * 1000
    start = time.monotonic()
    while time.monotonic() - start < RUN_S:
        try:
            producer.produce(topic, value=value, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.flush(60)

    per_second = [0] * (RUN_S + 5)
    for t, n in delivered:
        per_second[min(int(t - start), RUN_S + 4)] += n
    print("PER_SECOND", [round(x / 1048576, 2) for x in per_second], max(throttles_ms, default=0))
    window = [n for t, n in delivered if start + STEADY_FROM_S <= t < start + STEADY_TO_S]
    rate = sum(window) / (STEADY_TO_S - STEADY_FROM_S)
    assert abs(rate - QUOTA_BYTES_PER_S) / QUOTA_BYTES_PER_S < 0.10, f"{rate:.0f} B/s against {QUOTA_BYTES_PER_S}"
    assert max(throttles_ms, default=0) > 0, "no throttle time was reported to the client"

    tool(b, CONFIGS, "--entity-type", "clients", "--entity-name", client_id, "--alter",
         "--delete-config", "producer_byte_rate")
    assert "producer_byte_rate" not in tool(b, CONFIGS, "--entity-type", "clients", "--entity-name", client_id,
                                            "--describe")
