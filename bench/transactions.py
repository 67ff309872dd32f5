#!/usr/bin/env python3
"""Transactional produce on our broker and on Apache Kafka, side by side: one librdkafka
transactional producer (confluent-kafka, the same settings on both) writing records of 1 KiB
over 8 partitions in transactions of 100 and of 10,000 records. Per size: produce MiB/s over the
whole run (begin of the first transaction to the end of the last commit) and the commit latency
p50/p99/max: the time of commit_transaction after a flush, i.e. the EndTxn round trip with the
markers it makes the broker write. Kafka runs at transaction.version 1 (the classic protocol,
as ours advertises; librdkafka speaks only that one anyway).

Run through bench/transactions.sh. Knobs (environment): BENCH_TXN_RECORDS (records per
workload, default 200000), BENCH_TXN_PARTITIONS (default 8), BENCH_BROKERS (default
"kafka ours"). Prints a markdown table and writes bench/.work/transactions/results.json.
"""
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rdkafka_bench  # noqa: E402  (percentiles)
import run as bench  # noqa: E402  (Kafka's JVM settings, the classpath, process accounting)

WORK = os.path.join(bench.ROOT, "bench", ".work", "transactions")
RECORDS = int(os.environ.get("BENCH_TXN_RECORDS", "200000"))
PARTITIONS = int(os.environ.get("BENCH_TXN_PARTITIONS", "8"))
TXN_SIZES = (100, 10_000)
API_TIMEOUT_S = 60


def create_topic(topic):
    out, err = bench.run(bench.RDK + ["create", "--bootstrap", bench.BOOTSTRAP, "--topic", topic,
                                      "--partitions", str(PARTITIONS)])
    if err:
        raise RuntimeError(f"create {topic}: {err}")


def transactional_load(topic, txn_records):
    """RECORDS records in transactions of `txn_records`; MiB/s and commit latencies."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bench.BOOTSTRAP, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}",
                  "linger.ms": 5, "batch.size": 1048576, "queue.buffering.max.kbytes": 1048576})
    p.init_transactions(API_TIMEOUT_S)
    payload = os.urandom(bench.RECORD_BYTES)
    commits_ms = []
    started = time.monotonic()
    for first in range(0, RECORDS, txn_records):
        p.begin_transaction()
        for i in range(first, min(first + txn_records, RECORDS)):
            while True:
                try:
                    p.produce(topic, value=payload, partition=i % PARTITIONS)
                    break
                except BufferError:
                    p.poll(0.001)
        if p.flush(API_TIMEOUT_S) != 0:
            raise RuntimeError("records still undelivered after the flush")
        before = time.monotonic()
        p.commit_transaction(API_TIMEOUT_S)
        commits_ms.append((time.monotonic() - before) * 1000)
    elapsed = time.monotonic() - started
    summary = rdkafka_bench.latency_summary(commits_ms)
    return {"mib_per_s": round(RECORDS * bench.RECORD_BYTES / elapsed / 2**20, 1),
            "transactions": len(commits_ms),
            "commit_p50_ms": round(summary["p50_ms"], 2), "commit_p99_ms": round(summary["p99_ms"], 2),
            "commit_max_ms": round(summary["max_ms"], 2)}


def transaction_version_1(classpath):
    subprocess.run(["java", "-cp", classpath, "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server",
                    bench.BOOTSTRAP, "downgrade", "--feature", "transaction.version=1"],
                   check=True, capture_output=True, timeout=120)


def workloads(process):
    results = {}
    for size in TXN_SIZES:
        topic = f"bench-txn-{size}-{time.monotonic_ns()}"
        create_topic(topic)
        cpu = process.cpu_s()
        try:
            result = transactional_load(topic, size)
        except Exception as e:  # e.g. a broker without transactions: report it, measure the rest
            result = {"error": f"{type(e).__name__}: {e}"}
        result["broker_cpu_s"] = round(process.cpu_s() - cpu, 2)
        results[f"txn_{size}"] = result
        bench.log(f"{process.name} transactions of {size}: {result}")
    return results


def cell(result, key):
    return "failed" if "error" in result else str(result[key])


def table(summaries):
    header = ["broker"] + [f"{title} txn of {size}" for size in TXN_SIZES
                           for title in ("MiB/s", "commit p50 ms", "commit p99 ms")]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in summaries.items():
        cells = [name] + [cell(r[f"txn_{size}"], key) for size in TXN_SIZES
                          for key in ("mib_per_s", "commit_p50_ms", "commit_p99_ms")]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    summaries = {}
    for name in os.environ.get("BENCH_BROKERS", "kafka ours").split():
        bench.log(f"starting {name}")
        if name == "kafka":
            classpath = bench.kafka_classpath()
            process = bench.start_kafka(os.path.join(WORK, "kafka"), classpath)
            transaction_version_1(classpath)
        else:
            process = bench.start_ours(os.path.join(WORK, "ours"), None, None)
        try:
            summaries[name] = workloads(process)
        finally:
            process.stop()
    with open(os.path.join(WORK, "results.json"), "w") as f:
        json.dump(summaries, f, indent=2)
    print(f"{RECORDS} records of {bench.RECORD_BYTES} bytes per workload, {PARTITIONS} partitions, one "
          f"librdkafka transactional producer, acks=all; commit: commit_transaction after a flush\n")
    print(table(summaries))


if __name__ == "__main__":
    main()
