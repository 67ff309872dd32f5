#!/usr/bin/env python3
"""The schema registry built into the broker (issue 24), on our release broker (local folder,
embedded MetaStore):

- API rates with bench/registry-load (Go, keep-alive connections): `GET /schemas/ids/{id}`
  (what every deserializer asks once per id) with 16 connections, and registrations of new
  Avro schemas (each a conditional MetaStore write of the id, the fingerprint and the version)
  with 4;
- produce throughput of pre-encoded records in the Confluent wire format (Avro ~300 B,
  Protobuf ~300 B) into one-partition topics with `confluent.value.schema.validation` off and
  on, librdkafka (linger 5 ms, 1 MiB batches, acks=all), BENCH_SR_ROUNDS rounds alternating off
  and on; medians, and the ratio on/off. Validation decodes every record once more on a
  blocking thread.

Run through bench/schema_registry.sh. Knobs: BENCH_SR_RECORDS (default 300000),
BENCH_SR_ROUNDS (default 3), BENCH_SR_SECONDS (API runs, default 10), BENCH_SR_FORMATS
(default "avro protobuf").
"""
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

WORK = os.path.join(bench.ROOT, "bench", ".work", "schema_registry")
REGISTRY_PORT = bench.PORT + 40
URL = f"http://127.0.0.1:{REGISTRY_PORT}"
RECORDS = int(os.environ.get("BENCH_SR_RECORDS", "300000"))
ROUNDS = int(os.environ.get("BENCH_SR_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_SR_SECONDS", "10"))
FORMATS = os.environ.get("BENCH_SR_FORMATS", "avro protobuf").split()
LOAD = os.path.join(bench.ROOT, "bench", ".work", "registry-load")

AVRO = {"type": "record", "name": "Event", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "user", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "score", "type": "double"}, {"name": "body", "type": "string"}]}


def protobuf_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    f = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    proto = descriptor_pb2.FileDescriptorProto(name="event.proto", package="bench", syntax="proto3")
    message = proto.message_type.add(name="Event")
    for number, (name, kind, label) in enumerate([
            ("id", f.TYPE_INT64, f.LABEL_OPTIONAL), ("user", f.TYPE_STRING, f.LABEL_OPTIONAL),
            ("email", f.TYPE_STRING, f.LABEL_OPTIONAL), ("tags", f.TYPE_STRING, f.LABEL_REPEATED),
            ("score", f.TYPE_DOUBLE, f.LABEL_OPTIONAL), ("body", f.TYPE_STRING, f.LABEL_OPTIONAL)], 1):
        message.field.add(name=name, number=number, type=kind, label=label)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Event"))


def event(i):
    return {"id": i, "user": f"user-{i % 1000}", "email": f"u{i}@example.com",
            "tags": ["a", "bb", "ccc"], "score": i / 7, "body": "x" * 200}


def avro_payloads(client, topic):
    import fastavro
    from confluent_kafka.schema_registry import Schema
    schema_id = client.register_schema(f"{topic}-value", Schema(json.dumps(AVRO), "AVRO"))
    parsed = fastavro.parse_schema(AVRO)
    out = []
    for i in range(1000):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, event(i))
        out.append(b"\0" + schema_id.to_bytes(4, "big") + buf.getvalue())
    return out


def protobuf_payloads(client, topic):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    cls = protobuf_class()
    serializer = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [serializer(cls(**event(i)), ctx) for i in range(1000)]


def create(topic, validate):
    admin = AdminClient({"bootstrap.servers": bench.BOOTSTRAP})
    config = {"confluent.value.schema.validation": "true"} if validate else {}
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(30)


def produce(topic, payloads):
    producer = Producer({"bootstrap.servers": bench.BOOTSTRAP, "linger.ms": 5, "batch.size": 1 << 20,
                         "acks": "all", "queue.buffering.max.messages": 1_000_000})
    failed = []
    start = time.monotonic()
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(topic, payloads[i % len(payloads)],
                                 on_delivery=lambda err, _m: err and failed.append(err))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(300)
    elapsed = time.monotonic() - start
    if failed:
        raise RuntimeError(f"{len(failed)} records failed: {failed[0]}")
    size = sum(len(payloads[i % len(payloads)]) for i in range(RECORDS))
    return {"records_per_s": RECORDS / elapsed, "mib_per_s": size / elapsed / (1 << 20)}


def load(mode, workers):
    out = subprocess.run([LOAD, "-url", URL, "-mode", mode, "-seconds", str(SECONDS),
                          "-workers", str(workers), "-id", "1"],
                         capture_output=True, text=True, timeout=SECONDS + 120, check=True)
    return json.loads(out.stdout)


def main():
    from confluent_kafka.schema_registry import SchemaRegistryClient
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    data = os.path.join(WORK, "broker")
    os.makedirs(data)
    argv = [bench.BROKER_BIN, "--listen", bench.BOOTSTRAP, "--data-dir", data, "--compaction", "false",
            "--schema-registry-listen", f"127.0.0.1:{REGISTRY_PORT}", "--http-listen", "none"]
    process = bench.Process("ours", argv, os.path.join(WORK, "broker.log"))
    process.start()
    try:
        client = SchemaRegistryClient({"url": URL})
        formats = {name: make for name, make in (("avro", avro_payloads), ("protobuf", protobuf_payloads))
                   if name in FORMATS}
        payloads = {name: make(client, f"sr-{name}-on-0") for name, make in formats.items()}
        lookup = load("lookup", 16)
        register = load("register", 4)
        results = {name: {"off": [], "on": []} for name in formats}
        for round_ in range(ROUNDS):
            for name in formats:
                for mode in ("off", "on"):
                    topic = f"sr-{name}-{mode}-{round_}"
                    if mode == "on" and round_ > 0:
                        client.register_schema(f"{topic}-value", client.get_schema(
                            int.from_bytes(payloads[name][0][1:5], "big")))
                    create(topic, mode == "on")
                    cpu_before = process.cpu_s()
                    result = produce(topic, payloads[name])
                    result["broker_cpu_us_per_record"] = (process.cpu_s() - cpu_before) / RECORDS * 1e6
                    results[name][mode].append(result)
                    bench.log(f"{name} validation {mode} round {round_}: {results[name][mode][-1]}")
    finally:
        process.stop()
    print()
    print(f"| API call | connections | requests/s | p50 ms | p99 ms | errors |")
    print("|---|---|---|---|---|---|")
    for row, workers in ((lookup, 16), (register, 4)):
        print(f"| {row['mode']} | {workers} | {row['per_sec']:.0f} | {row['p50_ms']:.2f} | "
              f"{row['p99_ms']:.2f} | {row['errors']} |")
    print()
    print(f"| format | validation off rec/s | on rec/s | on/off | off MiB/s | on MiB/s | broker CPU µs/record off | on |  ({RECORDS} records, median of {ROUNDS})")
    print("|---|---|---|---|---|---|---|---|")
    for name, modes in results.items():
        off = statistics.median(r["records_per_s"] for r in modes["off"])
        on = statistics.median(r["records_per_s"] for r in modes["on"])
        off_mib = statistics.median(r["mib_per_s"] for r in modes["off"])
        on_mib = statistics.median(r["mib_per_s"] for r in modes["on"])
        cpu_off = statistics.median(r["broker_cpu_us_per_record"] for r in modes["off"])
        cpu_on = statistics.median(r["broker_cpu_us_per_record"] for r in modes["on"])
        print(f"| {name} | {off:.0f} | {on:.0f} | {on / off:.2f} | {off_mib:.1f} | {on_mib:.1f} | "
              f"{cpu_off:.2f} | {cpu_on:.2f} |")


if __name__ == "__main__":
    main()
