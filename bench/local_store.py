#!/usr/bin/env python3
"""Produce on the local-folder store: Apache Kafka, an earlier build of ours and this build,
interleaved round by round so that the shared machine's noise hits all three alike. Each round
starts every broker afresh and runs the Java ProducerPerformance and the librdkafka producer at
the same fixed rate (acks=all, linger 5 ms, batch 1 MiB, 1 KiB records, 8 partitions), reads
our brokers' mean time per produce stage from /metrics, then runs the librdkafka producer at
its maximum rate and takes the broker's CPU seconds per GiB it produced. Last, the first test a
newcomer runs: the Java ProducerPerformance with the client's defaults (acks=all, linger 5 ms,
batch 16 KiB, 5 requests in flight) at its maximum rate into a one-partition topic.

Run through bench/local_store.sh. Knobs (environment): BENCH_FIXED_RATE (records/s, default
22000: a third of Kafka's Java maximum in BENCHMARKS.md), BENCH_LATENCY_S (seconds per run,
default 10), BENCH_RECORDS (records of the max-rate run, default 300000), BENCH_DEFAULTS_RECORDS
(records of the Java-defaults run, default 200000), BENCH_ROUNDS (default 3), BENCH_OLD_BROKER_BIN (an earlier build; its column is left out when unset). Prints a
markdown table of medians over the rounds and writes bench/.work/local_store/results.json.
"""
import json
import os
import re
import shutil
import statistics
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (broker start-up, client runners, Kafka's JVM settings)

WORK = os.path.join(bench.ROOT, "bench", ".work", "local_store")
RATE = int(os.environ.get("BENCH_FIXED_RATE", "22000"))
SECONDS = int(os.environ.get("BENCH_LATENCY_S", "10"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
MAX_RECORDS = int(os.environ.get("BENCH_RECORDS", "300000"))
DEFAULTS_RECORDS = int(os.environ.get("BENCH_DEFAULTS_RECORDS", "200000"))
OLD_BIN = os.environ.get("BENCH_OLD_BROKER_BIN")
METRICS_URL = "http://127.0.0.1:9644/metrics"
STAGE = re.compile(r'^diskless_produce_stage_duration_seconds_(sum|count)\{stage="(\w+)"\} ([\d.e+-]+)$', re.M)


def stage_means_ms():
    """Mean seconds per stage since the broker started, from the histogram sums and counts."""
    with urllib.request.urlopen(METRICS_URL, timeout=10) as response:
        text = response.read().decode()
    sums, counts = {}, {}
    for kind, stage, value in STAGE.findall(text):
        (sums if kind == "sum" else counts)[stage] = float(value)
    return {s: round(1000 * sums[s] / counts[s], 2) for s in sums if counts.get(s)}


def one_round(name, classpath, round_no):
    directory = os.path.join(WORK, f"{name}-{round_no}")
    if name == "kafka":
        process = bench.start_kafka(directory, classpath)
    else:
        process = bench.start_ours(directory, None, None, OLD_BIN if name == "ours-old" else None)
    records = RATE * SECONDS
    try:
        for topic in ("lat-java", "lat-rdk", "max-rdk"):
            bench.create_topic(topic, 8)
        bench.create_topic("defaults-java", 1)
        result = {
            "java": bench.producer_perf(classpath, "lat-java", records, bench.MAX_PROPS, rate=RATE),
            "rdk": bench.rdk("produce", "lat-rdk", "--count", str(records), "--size",
                             str(bench.RECORD_BYTES), "--rate", str(RATE), *bench.rdk_props(bench.MAX_PROPS)),
        }
        if name != "kafka":
            result["stages_ms"] = stage_means_ms()
        cpu_before = process.cpu_s()
        result["max"] = bench.rdk("produce", "max-rdk", "--count", str(MAX_RECORDS), "--size",
                                  str(bench.RECORD_BYTES), *bench.rdk_props(bench.MAX_PROPS))
        gib = MAX_RECORDS * bench.RECORD_BYTES / 2**30
        result["max"]["broker_cpu_s_per_gib"] = round((process.cpu_s() - cpu_before) / gib, 2)
        result["defaults"] = bench.producer_perf(classpath, "defaults-java", DEFAULTS_RECORDS, {})
    finally:
        process.stop()
    bench.log(f"{name} round {round_no}: {json.dumps(result)}")
    return result


def median(values):
    values = [v for v in values if isinstance(v, (int, float))]
    return round(statistics.median(values), 1) if values else None


def table(results, names):
    rows = []
    for client, label in (("java", "Java"), ("rdk", "librdkafka")):
        for p in ("p50_ms", "p99_ms", "p999_ms"):
            row = [f"produce {p[:-3]} ms ({label})"]
            row += [str(median([r[client].get(p) for r in results[n]])) for n in names]
            rows.append(row)
    for key, label in (("mib_per_s", "max produce MiB/s (librdkafka)"),
                       ("broker_cpu_s_per_gib", "broker CPU s per GiB at max produce (librdkafka)")):
        rows.append([label] + [str(median([r["max"].get(key) for r in results[n]])) for n in names])
    for key, label in (("mib_per_s", "MB/s"), ("avg_ms", "avg latency ms"), ("p99_ms", "p99 ms")):
        row = [f"Java defaults, one partition: {label}"]
        row += [str(median([r["defaults"].get(key) for r in results[n]])) for n in names]
        rows.append(row)
    stages = sorted({s for n in names if n != "kafka" for r in results[n] for s in r.get("stages_ms", {})})
    for stage in stages:
        row = [f"mean {stage} stage ms (both clients)"]
        row += ["n/a" if n == "kafka" else str(median([r["stages_ms"].get(stage) for r in results[n]]))
                for n in names]
        rows.append(row)
    lines = ["| figure | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def main():
    if os.path.exists(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    bench.WORK = WORK
    classpath = bench.kafka_classpath()
    names = ["kafka"] + (["ours-old"] if OLD_BIN else []) + ["ours"]
    results = {n: [] for n in names}
    for round_no in range(ROUNDS):
        for name in names:
            results[name].append(one_round(name, classpath, round_no))
    with open(os.path.join(WORK, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    print(f"{RATE} records/s of {bench.RECORD_BYTES} B for {SECONDS} s, medians of {ROUNDS} rounds\n")
    print(table(results, names))


if __name__ == "__main__":
    main()
