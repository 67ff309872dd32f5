#!/usr/bin/env python3
"""What a topic's compression.type costs on produce, end to end: one broker, one topic per
compression.type, the same records produced to each by librdkafka (lz4 from the producer, as
a tuned producer sends), throughput and the broker's CPU seconds per GiB of record bytes.

  bench/compression_type.py [--broker target/release/broker] [--records 100000]

The codec work itself, one thread, per codec pair: cargo run --release -p storage --example
reencode_bench.
"""
import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
TYPES = ["producer", "uncompressed", "snappy", "lz4", "zstd", "gzip"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def value(rng: random.Random) -> bytes:
    out = []
    while sum(map(len, out)) < 1024:
        n = rng.getrandbits(31)
        out.append(f'{{"user":"user-{n % 10000}","event":"{["click", "view", "purchase"][n % 3]}",'
                   f'"amount":{n % 1000}.{n % 100:02},"ts":{1_700_000_000_000 + n % 1_000_000}}},')
    return "".join(out).encode()[:1024]


def produce(bootstrap: str, topic: str, values: list) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1 << 20,
                  "compression.type": "lz4", "acks": "all"})
    start = time.monotonic()
    for v in values:
        while True:
            try:
                p.produce(topic, v, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--broker", default=str(REPO / "target/release/broker"))
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    rng = random.Random(7)
    values = [value(rng) for _ in range(args.records)]
    mib = len(values) * 1024 / (1 << 20)
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        broker = subprocess.Popen([args.broker, "--listen", bootstrap, "--data-dir", data, "--compaction", "false"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    admin.list_topics(timeout=1)
                    break
                except Exception:
                    time.sleep(0.2)
            for t in TYPES:
                admin.create_topics([NewTopic(f"c-{t}", 1, 1, config={"compression.type": t})])[f"c-{t}"].result(30)
            produce(bootstrap, "c-producer", values[:2000])  # warm-up
            rows = []
            for t in TYPES:
                cpu = cpu_seconds(broker.pid)
                seconds = produce(bootstrap, f"c-{t}", values)
                cpu = cpu_seconds(broker.pid) - cpu
                rows.append({"compression.type": t, "MiB/s": round(mib / seconds, 1),
                             "broker CPU s/GiB": round(cpu / (mib / 1024), 2)})
                print(json.dumps(rows[-1]), file=sys.stderr)
        finally:
            broker.terminate()
            broker.wait(30)
    print(f"| compression.type | produce MiB/s | broker CPU s per GiB |\n|---|---|---|")
    for r in rows:
        print(f"| {r['compression.type']} | {r['MiB/s']} | {r['broker CPU s/GiB']} |")


if __name__ == "__main__":
    main()
