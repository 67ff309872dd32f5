#!/usr/bin/env python3
"""Cost and scale curves: one fresh broker per scale point (local-folder store, in-process
compaction off), the same fixed produce load on each, so rows compare.

A point is `p<N>` (one topic of N partitions, one librdkafka producer), `c<N>` (N franz-go
producer clients, one connection each, on 10 partitions) or `g<N>` (10 partitions, one librdkafka
producer, then N consumer groups). Each point has three phases:

- produce: BENCH_SCALE_RATE_MIB MiB/s (default 4) of 1 KiB records for BENCH_SCALE_S seconds
  (default 20), round-robin over all partitions, acks=all, linger 5 ms, batches up to 1 MiB;
- consume: the broker restarted (caches cold, so reads come from the WAL objects), then the
  point's consumer groups (one for p and c points) each read the whole topic once with franz-go,
  committing offsets every second;
- idle: the same groups, caught up, go on polling at the end of the log for BENCH_SCALE_IDLE_S
  seconds (default 10; the time includes their rejoining), with nothing produced: what waiting
  consumers cost.

Broker CPU seconds come from /proc, peak RSS from VmHWM, WAL PUTs from the objects created in
the store, GETs, MetaStore operations and request counts from /metrics scraped before and after
each phase. Run through bench/scale.sh. Knobs (environment): BENCH_SCALE_POINTS (default
"p10 p1000 p10000 c10 c1000 g1 g100"), BENCH_SCALE_S, BENCH_SCALE_RATE_MIB, BENCH_SCALE_IDLE_S,
BENCH_SCALE_BROKER (binary, default target/release/broker), BENCH_SCALE_BROKER_ARGS (more broker
flags, e.g. `--write-buffer-puts-per-sec-max 4` to write the local folder as a remote store's
PUT budget would), BENCH_SCALE_PORT (default 29592; the
metrics listener takes the next port). Prints markdown tables and writes them to
bench/.work/scale.md, the raw figures to bench/.work/scale/results.json.

`scale.py rdk-produce TOPIC PARTITIONS RATE SECONDS` is the librdkafka producer of a point, run
as a process of its own so its CPU is not this script's.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (process accounting, WAL object counts, topic creation)

ROOT = bench.ROOT
WORK = os.path.join(ROOT, "bench", ".work", "scale")
REPORT = os.path.join(ROOT, "bench", ".work", "scale.md")
LOAD_BIN = os.path.join(ROOT, "bench", ".work", "scale-load")
BROKER_BIN = os.path.abspath(os.environ.get("BENCH_SCALE_BROKER", bench.BROKER_BIN))
# e.g. "--write-buffer-puts-per-sec-max 4": the local folder written like a remote store.
BROKER_ARGS = os.environ.get("BENCH_SCALE_BROKER_ARGS", "").split()
POINTS = os.environ.get("BENCH_SCALE_POINTS", "p10 p1000 p10000 c10 c1000 g1 g100").split()
SECONDS = float(os.environ.get("BENCH_SCALE_S", "20"))
RATE_MIB = float(os.environ.get("BENCH_SCALE_RATE_MIB", "4"))
IDLE_S = float(os.environ.get("BENCH_SCALE_IDLE_S", "10"))
RECORD_BYTES = bench.RECORD_BYTES
RATE = int(RATE_MIB * 2**20 / RECORD_BYTES)
BASE_PARTITIONS = 10
# run.py's helpers read these module globals at call time: a port of our own lets this run
# beside bench/run.sh on the shared machine.
bench.PORT = int(os.environ.get("BENCH_SCALE_PORT", "29592"))
bench.BOOTSTRAP = f"127.0.0.1:{bench.PORT}"
METRICS_URL = f"http://127.0.0.1:{bench.PORT + 1}/metrics"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


def parse_point(name):
    kind, count = name[0], int(name[1:])
    if kind == "p":
        return {"partitions": count, "clients": 1, "groups": 1, "producer": "librdkafka"}
    if kind == "c":
        return {"partitions": BASE_PARTITIONS, "clients": count, "groups": 1, "producer": "franz-go"}
    if kind == "g":
        return {"partitions": BASE_PARTITIONS, "clients": 1, "groups": count, "producer": "librdkafka"}
    raise ValueError(f"unknown scale point {name!r} (p<N>, c<N> or g<N>)")


def start_broker(directory):
    """run.py's start_ours with a metrics listener of our own and the chosen binary."""
    os.makedirs(directory)
    argv = [BROKER_BIN, "--listen", bench.BOOTSTRAP, "--data-dir", directory,
            "--group-initial-rebalance-delay-ms", "0", "--compaction", "false",
            "--http-listen", f"127.0.0.1:{bench.PORT + 1}",
            # A franz-go client holds a seed and a broker connection for a while: 1,000 clients
            # need more than the default 1,024 slots (every point gets the same setting).
            "--max-connections", "4096"] + BROKER_ARGS
    process = bench.Process("ours", argv, os.path.join(directory, "broker.log"))
    process.data_dir = directory
    process.start()
    return process


def scrape():
    """Every sample of /metrics summed by name and labels: {(name, labels): value}."""
    with urllib.request.urlopen(METRICS_URL, timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and not line.startswith("#"):
            samples[(match.group(1), match.group(2) or "")] = float(match.group(3))
    return samples


def delta(before, after, name, label=""):
    """The growth of every `name` sample whose labels contain `label`, summed."""
    return sum(v - before.get(k, 0.0) for k, v in after.items() if k[0] == name and label in k[1])


def by_label(before, after, name):
    """The growth of each `name` series, keyed by its labels (for results.json, to diagnose)."""
    grown = {k[1]: v - before.get(k, 0.0) for k, v in after.items() if k[0] == name}
    return {labels: value for labels, value in grown.items() if value}


def status_mib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


class Sampler:
    """Samples the broker's open-connection gauge once a second while a phase runs: the
    connection count is a gauge, so its peak has to be caught while the clients are there."""

    def __init__(self):
        self.peak_connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.wait(1.0):
            try:
                now = scrape().get(("kafka_server_connections", ""), 0)
            except OSError:
                continue
            self.peak_connections = max(self.peak_connections, int(now))

    def done(self):
        self.stop.set()
        self.thread.join()
        return self.peak_connections


def measure(process, fn):
    """Runs one phase; the broker's CPU, wall time, WAL objects and /metrics deltas over it."""
    cpu, objects, metrics, started = process.cpu_s(), process.wal_objects(), scrape(), time.monotonic()
    sampler = Sampler()
    result = fn()
    peak_connections = sampler.done()
    after = scrape()
    result.update({
        "wall_s": time.monotonic() - started,
        "cpu_s": process.cpu_s() - cpu,
        "wal_puts": process.wal_objects() - objects,
        "peak_rss_mib": status_mib(process.proc.pid, "VmHWM"),
        "peak_connections": peak_connections,
        "gets": delta(metrics, after, "diskless_object_store_requests_total", 'operation="get"'),
        "metastore_ops": delta(metrics, after, "diskless_metastore_operation_duration_seconds_count"),
        "metastore_by_operation": by_label(metrics, after, "diskless_metastore_operation_duration_seconds_count"),
        "requests_by_api": by_label(metrics, after, "kafka_network_requests_total"),
        "produce_requests": delta(metrics, after, "kafka_network_requests_total", 'request="Produce"'),
        "fetch_requests": delta(metrics, after, "kafka_network_requests_total", 'request="Fetch"'),
        "commit_requests": delta(metrics, after, "kafka_network_requests_total", 'request="OffsetCommit"'),
    })
    return result


def json_line(argv, timeout_s):
    out, err = bench.run(argv, timeout_s)
    if err:
        return {"error": err[-1000:]}
    return json.loads(out.strip().splitlines()[-1])


def produce(point, topic):
    timeout_s = SECONDS + 180
    if point["producer"] == "franz-go":
        return json_line([LOAD_BIN, "produce", "--bootstrap", bench.BOOTSTRAP, "--topic", topic,
                          "--partitions", str(point["partitions"]), "--clients", str(point["clients"]),
                          "--rate", str(RATE), "--seconds", str(SECONDS), "--size", str(RECORD_BYTES)],
                         timeout_s)
    return json_line([bench.PY, os.path.abspath(__file__), "rdk-produce", topic,
                      str(point["partitions"]), str(RATE), str(SECONDS)], timeout_s)


def consume(point, topic, records, idle_s=0.0):
    return json_line([LOAD_BIN, "consume", "--bootstrap", bench.BOOTSTRAP, "--topic", topic,
                      "--groups", str(point["groups"]), "--records", str(records), "--idle-s", str(idle_s),
                      "--timeout-s", "400"], 450)


def run_point(name):
    point = parse_point(name)
    directory = os.path.join(WORK, name)
    process = start_broker(directory)
    topic = f"scale-{name}"
    try:
        started = time.monotonic()
        bench.create_topic(topic, point["partitions"])
        point["create_s"] = time.monotonic() - started
        point["idle_rss_mib"] = status_mib(process.proc.pid, "VmRSS")
        bench.log(f"{name}: topic of {point['partitions']} partitions in {point['create_s']:.1f} s, producing")
        point["produce"] = measure(process, lambda: produce(point, topic))
        records = point["produce"].get("records", 0)
        # A restart empties the write and read caches: the consumers' reads are then GETs.
        process.stop()
        process.start()
        bench.log(f"{name}: {records} records produced, consuming with {point['groups']} group(s)")
        point["consume"] = measure(process, lambda: consume(point, topic, records))
        bench.log(f"{name}: {point['groups']} group(s) idle at the end of the log for {IDLE_S:g} s")
        # The groups resume at their committed offsets, the end of the log: nothing to read.
        point["idle"] = measure(process, lambda: consume(point, topic, 0, IDLE_S))
    finally:
        process.stop()
    return point


def per_gib(value, records):
    gib = records * RECORD_BYTES / 2**30
    return value / gib if gib else None


def fmt(value, digits=1):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def produce_row(name, p):
    r = p["produce"]
    if "error" in r:
        return [name, "failed: " + r["error"][:80]]
    n = r["records"]
    return [name, fmt(p["partitions"]), f"{p['clients']} {p['producer']}", fmt(r["peak_connections"]),
            fmt(n * RECORD_BYTES / 2**20), fmt(p["create_s"]), fmt(p["idle_rss_mib"], 0),
            fmt(per_gib(r["cpu_s"], n), 2), fmt(100 * r["cpu_s"] / r["wall_s"]),
            fmt(r["peak_rss_mib"], 0), fmt(per_gib(r["wal_puts"], n), 0),
            fmt(r["produce_requests"] / r["wall_s"], 0), fmt(per_gib(r["metastore_ops"], n), 0)]


def consume_row(name, p):
    r = p.get("consume", {"error": "not run"})
    if "error" in r:
        return [name, "failed: " + r["error"][:80]]
    n = r["records"]
    return [name, fmt(p["groups"]), fmt(n * RECORD_BYTES / 2**20), fmt(r["wall_s"]),
            fmt(per_gib(r["cpu_s"], n), 2), fmt(r["peak_rss_mib"], 0), fmt(per_gib(r["gets"], n), 0),
            fmt(per_gib(r["fetch_requests"], n), 0), fmt(r["commit_requests"], 0),
            fmt(per_gib(r["metastore_ops"], n), 0), fmt(r.get("short_groups", 0) + r.get("errors", 0))]


def idle_row(name, p):
    r = p.get("idle", {"error": "not run"})
    if "error" in r:
        return [name, "failed: " + r["error"][:80]]
    return [name, fmt(p["partitions"]), fmt(p["groups"]), fmt(100 * r["cpu_s"] / r["wall_s"]),
            fmt(r["metastore_ops"] / r["wall_s"], 0), fmt(r["fetch_requests"] / r["wall_s"])]


PRODUCE_HEADER = ["point", "partitions", "producers", "connections (peak)", "MiB produced",
                  "topic create s", "RSS after create MiB", "broker CPU s/GiB", "broker CPU %",
                  "peak RSS MiB", "WAL PUTs/GiB", "Produce req/s", "MetaStore ops/GiB"]
CONSUME_HEADER = ["point", "groups", "MiB consumed", "wall s", "broker CPU s/GiB", "peak RSS MiB",
                  "GETs/GiB", "Fetch req/GiB", "OffsetCommit reqs", "MetaStore ops/GiB",
                  "short groups + client errors"]
IDLE_HEADER = ["point", "partitions", "groups", "broker CPU %", "MetaStore ops/s", "Fetch req/s"]


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def report(results, elapsed_min):
    produce_t = markdown(PRODUCE_HEADER, [produce_row(n, p) for n, p in results.items()])
    consume_t = markdown(CONSUME_HEADER, [consume_row(n, p) for n, p in results.items()])
    idle_t = markdown(IDLE_HEADER, [idle_row(n, p) for n, p in results.items()])
    return f"""Scale points (bench/scale.sh), {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {elapsed_min:.0f} minutes;
machine: {bench.machine()}, shared with other work while measuring (figures are noisy).
Fixed load per point: {RATE_MIB:g} MiB/s of {RECORD_BYTES}-byte records for {SECONDS:g} s.

Produce phase (fresh broker; CPU % of one core, mean over the phase):

{produce_t}

Consume phase (broker restarted, caches cold; every group reads the whole topic once):

{consume_t}

Idle phase (the groups caught up, polling at the end of the log for {IDLE_S:g} s, nothing produced):

{idle_t}
"""


def rdk_produce(topic, partitions, rate, seconds):
    """The librdkafka producer of a point: `rate` records/s, round-robin over the partitions
    (an explicit partition: librdkafka's sticky partitioner would touch few of 10,000)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bench.BOOTSTRAP, "acks": "all", "linger.ms": 5,
                         "batch.size": 1048576})
    payload = os.urandom(RECORD_BYTES)
    counts = {"acked": 0, "errors": 0}

    def delivered(err, _msg):
        counts["errors" if err else "acked"] += 1

    started = time.monotonic()
    total, sent = int(rate * seconds), 0
    while sent < total:
        # Whatever is due by now, then a 1 ms poll: cheaper than sleeping before every record.
        due = min(total, int((time.monotonic() - started) * rate) + 1)
        for i in range(sent, due):
            producer.produce(topic, payload, partition=i % partitions, on_delivery=delivered)
        sent = due
        producer.poll(0.001)
    producer.flush(120)
    elapsed = time.monotonic() - started
    print(json.dumps({"records": counts["acked"], "errors": counts["errors"], "elapsed_s": elapsed,
                      "mib_per_s": counts["acked"] * RECORD_BYTES / elapsed / 2**20}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "rdk-produce":
        topic, partitions, rate, seconds = sys.argv[2:6]
        rdk_produce(topic, int(partitions), float(rate), float(seconds))
        return
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    started = time.monotonic()
    results = {}
    for name in POINTS:
        bench.log(f"=== {name}")
        try:
            results[name] = run_point(name)
        except Exception as e:  # a point that cannot run (e.g. topic creation fails) is reported
            results[name] = {"produce": {"error": f"{type(e).__name__}: {e}"}}
        with open(os.path.join(WORK, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
    rendered = report(results, (time.monotonic() - started) / 60)
    with open(REPORT, "w") as f:
        f.write(rendered)
    print(rendered)


if __name__ == "__main__":
    main()
