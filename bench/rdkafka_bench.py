#!/usr/bin/env python3
"""A small librdkafka load client (confluent-kafka), the same settings for every broker.

  rdkafka_bench.py create  --bootstrap B --topic T --partitions N
  rdkafka_bench.py produce --bootstrap B --topic T --count N --size BYTES [--rate R] [-X k=v ...]
  rdkafka_bench.py consume --bootstrap B --topic T --count N [-X k=v ...]
  rdkafka_bench.py e2e     --bootstrap B --topic T --count N --size BYTES --rate R

Each mode prints one JSON line on stdout. Produce latency is send-to-delivery-report; e2e latency
is send-to-receive measured in one process (one clock).
"""
import argparse
import json
import os
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

# A consumer that sees no message for this long is considered stuck.
IDLE_TIMEOUT_S = 30.0


def percentile(sorted_values, fraction):
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


def latency_summary(latencies_ms):
    values = sorted(latencies_ms)
    return {
        "p50_ms": percentile(values, 0.50),
        "p99_ms": percentile(values, 0.99),
        "p999_ms": percentile(values, 0.999),
        "max_ms": values[-1] if values else None,
    }


def parse_props(pairs):
    props = {}
    for pair in pairs or []:
        key, _, value = pair.partition("=")
        props[key] = value
    return props


def create(args):
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    futures = admin.create_topics(
        [NewTopic(args.topic, num_partitions=args.partitions, replication_factor=1)],
        operation_timeout=30,
    )
    for future in futures.values():
        future.result(timeout=60)
    # Wait until metadata shows every partition, so the first produce does not race creation.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topic = admin.list_topics(args.topic, timeout=10).topics.get(args.topic)
        if topic is not None and topic.error is None and len(topic.partitions) == args.partitions:
            print(json.dumps({"topic": args.topic, "partitions": args.partitions}))
            return 0
        time.sleep(0.2)
    print(f"topic {args.topic} did not appear", file=sys.stderr)
    return 1


def produce(args):
    config = {"bootstrap.servers": args.bootstrap}
    config.update(parse_props(args.X))
    producer = Producer(config)
    payload = os.urandom(args.size)
    latencies_ms = []
    errors = [0]

    def delivered(err, _msg, sent_ns):
        if err is not None:
            errors[0] += 1
        else:
            latencies_ms.append((time.monotonic_ns() - sent_ns) / 1e6)

    interval_ns = int(1e9 / args.rate) if args.rate > 0 else 0
    start_ns = time.monotonic_ns()
    for i in range(args.count):
        if interval_ns:
            due_ns = start_ns + i * interval_ns
            while True:
                now = time.monotonic_ns()
                if now >= due_ns:
                    break
                producer.poll(min(0.001, (due_ns - now) / 1e9))
        while True:
            sent_ns = time.monotonic_ns()
            try:
                producer.produce(
                    args.topic,
                    payload,
                    on_delivery=lambda err, msg, sent_ns=sent_ns: delivered(err, msg, sent_ns),
                )
                break
            except BufferError:
                producer.poll(0.005)
        if i % 1000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    elapsed_s = (time.monotonic_ns() - start_ns) / 1e9
    acked = len(latencies_ms)
    result = {
        "records": acked,
        "errors": errors[0],
        "undelivered": remaining,
        "elapsed_s": round(elapsed_s, 3),
        "records_per_s": round(acked / elapsed_s, 1),
        "mib_per_s": round(acked * args.size / elapsed_s / 2**20, 2),
    }
    result.update(latency_summary(latencies_ms))
    print(json.dumps(result))
    return 0 if errors[0] == 0 and remaining == 0 else 1


def assigned_consumer(bootstrap, topic, start_at_end=False, props=None):
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rdkafka-bench-{os.getpid()}-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "latest" if start_at_end else "earliest",
            **(props or {}),
        }
    )
    metadata = consumer.list_topics(topic, timeout=30)
    partitions = sorted(metadata.topics[topic].partitions)
    # Manual assignment: measures fetching, not group rebalancing.
    offset = -1 if start_at_end else -2  # OFFSET_END / OFFSET_BEGINNING
    consumer.assign([TopicPartition(topic, p, offset) for p in partitions])
    return consumer


def consume(args):
    consumer = assigned_consumer(args.bootstrap, args.topic, props=parse_props(args.X))
    received = 0
    received_bytes = 0
    start = None
    last_message = time.monotonic()
    while received < args.count:
        messages = consumer.consume(num_messages=10000, timeout=1.0)
        now = time.monotonic()
        if not messages and now - last_message > IDLE_TIMEOUT_S:
            break
        for message in messages:
            if message.error() is not None:
                continue
            if start is None:
                start = now
            received += 1
            received_bytes += len(message.value())
        if messages:
            last_message = now
    elapsed_s = time.monotonic() - (start or time.monotonic())
    consumer.close()
    elapsed_s = max(elapsed_s, 1e-9)
    print(
        json.dumps(
            {
                "records": received,
                "elapsed_s": round(elapsed_s, 3),
                "records_per_s": round(received / elapsed_s, 1),
                "mib_per_s": round(received_bytes / elapsed_s / 2**20, 2),
            }
        )
    )
    return 0 if received >= args.count else 1


def e2e(args):
    consumer = assigned_consumer(args.bootstrap, args.topic, start_at_end=True)
    # Let the assignment settle at the log end before sending.
    deadline = time.monotonic() + 10
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.1)
    consumer.poll(0.5)
    latencies_ms = []
    done = threading.Event()

    def receive():
        last = time.monotonic()
        while len(latencies_ms) < args.count and time.monotonic() - last < IDLE_TIMEOUT_S:
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            sent_ns = int.from_bytes(message.value()[:8], "big")
            latencies_ms.append((time.monotonic_ns() - sent_ns) / 1e6)
            last = time.monotonic()
        done.set()

    receiver = threading.Thread(target=receive, daemon=True)
    receiver.start()
    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "linger.ms": 0})
    padding = os.urandom(max(0, args.size - 8))
    interval_ns = int(1e9 / args.rate)
    start_ns = time.monotonic_ns()
    for i in range(args.count):
        due_ns = start_ns + i * interval_ns
        while time.monotonic_ns() < due_ns:
            producer.poll(0.0005)
        producer.produce(args.topic, time.monotonic_ns().to_bytes(8, "big") + padding)
        producer.poll(0)
    producer.flush(60)
    done.wait(IDLE_TIMEOUT_S + 5)
    consumer.close()
    result = {"records": len(latencies_ms), "rate": args.rate}
    result.update(latency_summary(latencies_ms))
    print(json.dumps(result))
    return 0 if len(latencies_ms) >= args.count else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("mode", choices=["create", "produce", "consume", "e2e"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--count", type=int, default=100000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rate", type=float, default=0, help="records per second, 0 = as fast as possible")
    parser.add_argument("-X", action="append", help="librdkafka property key=value")
    args = parser.parse_args()
    return {"create": create, "produce": produce, "consume": consume, "e2e": e2e}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
