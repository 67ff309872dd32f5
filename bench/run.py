#!/usr/bin/env python3
"""Benchmarks our broker (local-folder store, S3 store) against Apache Kafka, one after the other.

Run through bench/run.sh. Knobs (environment): BENCH_RECORDS (records per throughput workload,
default 400000 of 1 KiB), BENCH_LATENCY_S (length of the fixed-rate runs, default 15),
BENCH_E2E_JAVA_RECORDS (default 300), BENCH_BROKERS (default "kafka ours-file ours-s3"; kafka
first because the fixed rate is a third of its maximum), BENCH_OBJECT_LATENCY (object-store
latency profiles each of our brokers runs under, space-separated: none, s3-standard, s3-express;
default "none"; see docs/object-latency.md; a broker named with its profile, `ours-s3@s3-standard`,
runs only under that one), BENCH_OLD_BROKER_BIN / BENCH_OLD_COMPACTOR_BIN (an earlier build, run
as `ours-old-file` or `ours-old-s3`, with ratio columns against this build). Writes BENCHMARKS.md
and bench/.work/results.json.
"""
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "bench", ".work")
PY = os.path.join(ROOT, ".venv", "bin", "python")
RDK = [PY, os.path.join(ROOT, "bench", "rdkafka_bench.py")]
BROKER_BIN = os.path.join(ROOT, "target", "release", "broker")
COMPACTOR_BIN = os.path.join(ROOT, "target", "release", "compactor")
PORT = 29492
CONTROLLER_PORT = 29493
S3_PORT = 29490
BOOTSTRAP = f"127.0.0.1:{PORT}"
RECORD_BYTES = 1024
RECORDS = int(os.environ.get("BENCH_RECORDS", "400000"))
LATENCY_S = int(os.environ.get("BENCH_LATENCY_S", "15"))
E2E_JAVA_RECORDS = int(os.environ.get("BENCH_E2E_JAVA_RECORDS", "300"))
E2E_RDK_RATE = 100
E2E_RDK_S = 10
WORKLOAD_TIMEOUT_S = int(os.environ.get("BENCH_WORKLOAD_TIMEOUT_S", "300"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
# Kafka's own kafka-server-start.sh settings (heap and G1 tuning), not the test harness's C1-only JIT.
KAFKA_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
             "-Djava.awt.headless=true"]
TOOL_JVM = ["-Xmx512M", "-Djava.awt.headless=true"]
MAX_PROPS = {"acks": "all", "linger.ms": "5", "batch.size": "1048576"}
LATENCY_PROFILES = os.environ.get("BENCH_OBJECT_LATENCY", "none").split()


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def kafka_classpath():
    return subprocess.run([os.path.join(ROOT, "scripts", "kafka-reference.sh"), "classpath"],
                          check=True, capture_output=True, text=True).stdout.strip()


def wait_for_port(port, timeout_s=90):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"port {port} did not open")


class Process:
    """A broker process and its resource use, summed over restarts."""

    def __init__(self, name, argv, log_path, env=None):
        self.name, self.argv, self.log_path, self.env = name, argv, log_path, env
        self.cpu_s_done = 0.0
        self.hwm_kib = 0
        self.proc = None
        self.object_store = None
        self.data_dir = None

    def wal_objects(self):
        """WAL objects in our broker's store: with in-process compaction off, nothing deletes
        them during a run, so the difference across a workload is the PUTs it caused."""
        if self.data_dir is None:
            return None
        if self.object_store is None:
            root = os.path.join(self.data_dir, "objects", "wal")
            return sum(len(files) for _, _, files in os.walk(root))
        import boto3
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{S3_PORT}", region_name="us-east-1",
                          aws_access_key_id="bench", aws_secret_access_key="bench")
        count = 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix="wal/"):
            count += sum(1 for o in page.get("Contents", []) if o["Key"].endswith(".wal"))
        return count

    def start(self):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", PORT)) == 0:
                raise RuntimeError(f"port {PORT} is already taken by another process")
        log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=log_file, stderr=log_file, env=self.env,
                                     cwd=WORK)
        wait_for_port(PORT)

    def cpu_s(self):
        if self.proc is None:
            return self.cpu_s_done
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return self.cpu_s_done + (int(fields[11]) + int(fields[12])) / CLK_TCK

    def sample_hwm(self):
        if self.proc is None:
            return
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    self.hwm_kib = max(self.hwm_kib, int(line.split()[1]))

    def stop(self):
        if self.proc is None:
            return
        self.sample_hwm()
        self.cpu_s_done = self.cpu_s()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        # Wait for the listener to close so the next start binds cleanly.
        time.sleep(1)


def start_kafka(directory, classpath, extra_properties=""):
    """`extra_properties` are appended: a later line wins (bench/tls.py adds an SSL listener)."""
    os.makedirs(directory)
    props = os.path.join(directory, "server.properties")
    with open(props, "w") as f:
        f.write(f"""process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{CONTROLLER_PORT}
listeners=PLAINTEXT://127.0.0.1:{PORT},CONTROLLER://127.0.0.1:{CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:{PORT}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={directory}/logs
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
""")
        f.write(extra_properties)
    with open(os.path.join(directory, "log4j2.properties"), "w") as f:
        f.write("status = error\nappender.file.type = File\nappender.file.name = file\n"
                "appender.file.fileName = ${sys:kafka.logs.dir}/server.log\n"
                "appender.file.layout.type = PatternLayout\n"
                "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
                "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = file\n")
    jvm = KAFKA_JVM + [f"-Dkafka.logs.dir={directory}",
                       f"-Dlog4j2.configurationFile={directory}/log4j2.properties", "-cp", classpath]
    cluster_id = subprocess.run(["java", "-cp", classpath, "kafka.tools.StorageTool", "random-uuid"],
                                check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["java"] + jvm + ["kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", props],
                   check=True, capture_output=True)
    process = Process("kafka", ["java"] + jvm + ["kafka.Kafka", props],
                      os.path.join(directory, "stdout.log"))
    process.start()
    return process


def start_moto(directory):
    os.makedirs(directory)
    log_file = open(os.path.join(directory, "moto.log"), "ab")
    moto = subprocess.Popen([os.path.join(ROOT, ".venv", "bin", "moto_server"), "-H", "127.0.0.1",
                             "-p", str(S3_PORT)], stdout=log_file, stderr=log_file)
    wait_for_port(S3_PORT)
    subprocess.run([PY, "-c", f"""
import boto3
boto3.client('s3', endpoint_url='http://127.0.0.1:{S3_PORT}', region_name='us-east-1',
             aws_access_key_id='bench', aws_secret_access_key='bench').create_bucket(Bucket='bench')
"""], check=True)
    return moto


def start_ours(directory, object_store, env, binary=None, compactor=None, latency="none"):
    os.makedirs(directory)
    # In-process compaction off: the WAL catch-up then reads WAL objects, and the Parquet one
    # reads what the `compactor` binary wrote (run between the two).
    argv = [binary or BROKER_BIN, "--listen", BOOTSTRAP, "--data-dir", directory,
            "--group-initial-rebalance-delay-ms", "0", "--compaction", "false"]
    if object_store:
        argv += ["--object-store", object_store]
    process = Process("ours", argv + latency_args(latency), os.path.join(directory, "broker.log"), env)
    process.object_store = object_store
    process.data_dir = directory
    process.compactor_bin = compactor or COMPACTOR_BIN
    process.latency = latency
    process.start()
    return process


def latency_args(profile):
    """The modelled object-store latency (both binaries take the flag)."""
    return [] if profile == "none" else ["--object-store-latency-profile", profile]


def broker_names(brokers):
    """Each of our brokers once per latency profile: `ours-s3@s3-standard`; `none` keeps the name.
    A name given with its profile (`ours-old-s3@s3-standard`) runs once, as given."""
    names = []
    for name in brokers:
        if name.startswith("ours-") and "@" not in name:
            names += [name if p == "none" else f"{name}@{p}" for p in LATENCY_PROFILES]
        else:
            names.append(name)
    return names


def run(argv, timeout_s=WORKLOAD_TIMEOUT_S):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if done.returncode != 0:
        return None, (done.stdout[-2000:] + done.stderr[-2000:])
    return done.stdout, None


def java_tool(classpath, tool, args):
    return ["java"] + TOOL_JVM + ["-cp", classpath, f"org.apache.kafka.tools.{tool}"] + args


PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg "
                       r"latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, "
                       r"(\d+) ms 99.9th")


def producer_perf(classpath, topic, records, props, rate=-1):
    prop_args = [f"bootstrap.servers={BOOTSTRAP}"] + [f"{k}={v}" for k, v in props.items()]
    out, err = run(java_tool(classpath, "ProducerPerformance",
                             ["--topic", topic, "--num-records", str(records), "--record-size",
                              str(RECORD_BYTES), "--throughput", str(rate), "--producer-props"]
                             + prop_args))
    if err:
        return {"error": err}
    match = PERF_LINE.search(out.strip().splitlines()[-1])
    if not match:
        return {"error": out[-500:]}
    g = match.groups()
    return {"records": int(g[0]), "records_per_s": float(g[1]), "mib_per_s": float(g[2]),
            "avg_ms": float(g[3]), "p50_ms": int(g[5]), "p99_ms": int(g[7]), "p999_ms": int(g[8])}


def rdk(mode, topic, *extra):
    out, err = run(RDK + [mode, "--bootstrap", BOOTSTRAP, "--topic", topic] + list(extra))
    if err:
        return {"error": err}
    return json.loads(out.strip().splitlines()[-1])


def rdk_props(props):
    args = []
    for k, v in props.items():
        args += ["-X", f"{k}={v}"]
    return args


def create_topic(topic, partitions):
    result = rdk("create", topic, "--partitions", str(partitions))
    if "error" in result:
        raise RuntimeError(f"cannot create {topic}: {result['error']}")


def parallel(argvs):
    procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in argvs]
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=WORKLOAD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append((p.returncode, out, err))
    return outs


def four_producers_java(classpath, topic):
    prop_args = [f"bootstrap.servers={BOOTSTRAP}"] + [f"{k}={v}" for k, v in MAX_PROPS.items()]
    argv = java_tool(classpath, "ProducerPerformance",
                     ["--topic", topic, "--num-records", str(RECORDS // 4), "--record-size",
                      str(RECORD_BYTES), "--throughput", "-1", "--producer-props"] + prop_args)
    total = 0.0
    for code, out, err in parallel([argv] * 4):
        match = PERF_LINE.search(out) if code == 0 else None
        if not match:
            return {"error": (out + err)[-1000:]}
        total += float(match.group(3))
    return {"mib_per_s": round(total, 2)}


def four_producers_rdk(topic):
    argv = RDK + ["produce", "--bootstrap", BOOTSTRAP, "--topic", topic, "--count", str(RECORDS // 4),
                  "--size", str(RECORD_BYTES)] + rdk_props(MAX_PROPS)
    total = 0.0
    for code, out, err in parallel([argv] * 4):
        if code != 0:
            return {"error": (out + err)[-1000:]}
        total += json.loads(out.strip().splitlines()[-1])["mib_per_s"]
    return {"mib_per_s": round(total, 2)}


def consumer_perf(classpath, topic, records):
    out, err = run(java_tool(classpath, "ConsumerPerformance",
                             ["--bootstrap-server", BOOTSTRAP, "--topic", topic, "--messages", str(records),
                              "--timeout", "60000"]))
    if err:
        return {"error": err}
    lines = [l for l in out.strip().splitlines() if l and l[0].isdigit()]
    fields = [f.strip() for f in lines[-1].split(",")]
    # fetch.MB.sec excludes the group join, which is not what catch-up speed is about.
    return {"records": int(fields[4]), "mib_per_s": float(fields[8])}


def end_to_end_java(classpath, topic):
    out, err = run(java_tool(classpath, "EndToEndLatency",
                             [BOOTSTRAP, topic, str(E2E_JAVA_RECORDS), "all", str(RECORD_BYTES)]))
    if err:
        return {"error": err}
    match = re.search(r"50th = (\d+), 99th = (\d+), 99.9th = (\d+)", out)
    if not match:
        return {"error": out[-500:]}
    return {"p50_ms": int(match.group(1)), "p99_ms": int(match.group(2)), "p999_ms": int(match.group(3))}


def measured(process, results, key, produce_mib, fn):
    """Runs one workload and records its result plus the broker CPU seconds it used."""
    log(f"{process.name}: {key}")
    before = process.cpu_s()
    objects_before = process.wal_objects()
    started = time.monotonic()
    result = fn()
    result["wall_s"] = round(time.monotonic() - started, 1)
    if objects_before is not None and produce_mib:
        result["wal_puts"] = process.wal_objects() - objects_before
    result["broker_cpu_s"] = round(process.cpu_s() - before, 2)
    result["produced_mib"] = produce_mib
    process.sample_hwm()
    results[key] = result
    log(f"{process.name}: {key} -> {json.dumps(result)[:300]}")


def workloads(process, classpath, fixed_rate, restart, compact=None):
    results = {}
    total_mib = RECORDS * RECORD_BYTES / 2**20
    for topic, partitions in [("max-java", 8), ("max-rdk", 8), ("def-java", 8), ("def-rdk", 8),
                              ("lat-java", 8), ("lat-rdk", 8), ("p100-java", 100), ("p100-rdk", 100),
                              ("e2e-java", 1), ("e2e-rdk", 1)]:
        create_topic(topic, partitions)
    measured(process, results, "max_java", total_mib,
             lambda: producer_perf(classpath, "max-java", RECORDS, MAX_PROPS))
    measured(process, results, "max_rdk", total_mib,
             lambda: rdk("produce", "max-rdk", "--count", str(RECORDS), "--size", str(RECORD_BYTES),
                         *rdk_props(MAX_PROPS)))
    measured(process, results, "default_java", total_mib,
             lambda: producer_perf(classpath, "def-java", RECORDS, {}))
    measured(process, results, "default_rdk", total_mib,
             lambda: rdk("produce", "def-rdk", "--count", str(RECORDS), "--size", str(RECORD_BYTES)))
    if fixed_rate is None:
        fixed_rate = max(100, int(results["max_java"].get("records_per_s", 3000) / 3))
    lat_records = fixed_rate * LATENCY_S
    lat_mib = lat_records * RECORD_BYTES / 2**20
    measured(process, results, "latency_java", lat_mib,
             lambda: producer_perf(classpath, "lat-java", lat_records, MAX_PROPS, rate=fixed_rate))
    measured(process, results, "latency_rdk", lat_mib,
             lambda: rdk("produce", "lat-rdk", "--count", str(lat_records), "--size", str(RECORD_BYTES),
                         "--rate", str(fixed_rate), *rdk_props(MAX_PROPS)))
    measured(process, results, "p100_java", total_mib, lambda: four_producers_java(classpath, "p100-java"))
    measured(process, results, "p100_rdk", total_mib, lambda: four_producers_rdk("p100-rdk"))
    # Restart with cold caches, so our catch-up reads come from WAL objects (Kafka keeps the page cache).
    restart()
    measured(process, results, "catchup_java", 0,
             lambda: consumer_perf(classpath, "max-java", RECORDS))
    measured(process, results, "catchup_rdk", 0,
             lambda: rdk("consume", "max-rdk", "--count", str(RECORDS)))
    if process.name == "kafka":
        # Kafka has no Parquet tier: its log catch-up is the figure to compare with.
        results["catchup_parquet"] = dict(results["catchup_java"])
        results["catchup_parquet_rdk"] = dict(results["catchup_rdk"])
    elif compact is not None and os.path.exists(COMPACTOR_BIN):
        log(f"{process.name}: compacting")
        compact_error = compact()
        restart()
        if compact_error:
            results["catchup_parquet"] = {"error": compact_error}
        else:
            measured(process, results, "catchup_parquet", 0,
                     lambda: consumer_perf(classpath, "max-java", RECORDS))
            measured(process, results, "catchup_parquet_rdk", 0,
                     lambda: rdk("consume", "max-rdk", "--count", str(RECORDS)))
    measured(process, results, "e2e_java", E2E_JAVA_RECORDS * RECORD_BYTES / 2**20,
             lambda: end_to_end_java(classpath, "e2e-java"))
    measured(process, results, "e2e_rdk", E2E_RDK_RATE * E2E_RDK_S * RECORD_BYTES / 2**20,
             lambda: rdk("e2e", "e2e-rdk", "--count", str(E2E_RDK_RATE * E2E_RDK_S), "--size",
                         str(RECORD_BYTES), "--rate", str(E2E_RDK_RATE)))
    return results, fixed_rate


def object_totals(log_path):
    """Sums the `object store totals` lines our broker logs at each shutdown."""
    totals = {"puts": 0, "gets": 0}
    with open(log_path, errors="replace") as f:
        for line in f:
            if "object store totals" in line:
                for key in totals:
                    match = re.search(rf"\b{key}=(\d+)", line)
                    if match:
                        totals[key] += int(match.group(1))
    return totals


def old_build():
    """An earlier build, side by side in the same run (BENCH_OLD_BROKER_BIN, _COMPACTOR_BIN)."""
    return os.environ["BENCH_OLD_BROKER_BIN"], os.environ.get("BENCH_OLD_COMPACTOR_BIN")


def bench_broker(name, classpath, fixed_rate):
    directory = os.path.join(WORK, name)
    base, _, latency = name.partition("@")
    latency = latency or "none"
    moto = None
    if base == "kafka":
        process = start_kafka(directory, classpath)
    elif base == "ours-file":
        process = start_ours(directory, None, None, latency=latency)
    elif base == "ours-old-file":
        process = start_ours(directory, None, None, *old_build(), latency=latency)
    else:
        moto = start_moto(f"{directory}-moto")
        env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{S3_PORT}", AWS_ACCESS_KEY_ID="bench",
                   AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
        binaries = old_build() if base == "ours-old-s3" else (None, None)
        process = start_ours(directory, "s3://bench/wal", env, *binaries, latency=latency)

    def restart():
        process.stop()
        process.start()

    def compact():
        """Stops the broker and runs one compactor pass on its storage; the caller restarts it."""
        process.stop()
        argv = [process.compactor_bin, "--once", "--data-dir", directory] + latency_args(process.latency)
        if process.object_store:
            argv += ["--object-store", process.object_store]
        done = subprocess.run(argv, capture_output=True, text=True, env=process.env,
                              timeout=WORKLOAD_TIMEOUT_S)
        process.proc = None
        return None if done.returncode == 0 else f"compactor failed: {done.stderr[-500:]}"

    try:
        results, fixed_rate = workloads(process, classpath, fixed_rate, restart, None if name == "kafka" else compact)
    finally:
        process.stop()
        if moto:
            moto.terminate()
            moto.wait(30)
    summary = {"results": results, "cpu_s": round(process.cpu_s_done, 1),
               "peak_rss_mib": round(process.hwm_kib / 1024, 1), "fixed_rate": fixed_rate}
    if name != "kafka":
        summary["objects"] = object_totals(process.log_path)
    return summary, fixed_rate


def fmt(value, digits=1):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(summaries):
    names = sorted((n for n in summaries if n != "kafka"), key=column_order) + \
        [n for n in summaries if n == "kafka"]
    rows = []

    def figure(label, getter, digits=1):
        values = {}
        for n in names:
            try:
                values[n] = getter(summaries[n])
            except (KeyError, TypeError, ZeroDivisionError):
                values[n] = None
        row = [label] + [fmt(values[n], digits) for n in names]
        for n, base in ratios(names):
                ours, other = values[n], values[base]
                row.append(f"{ours / other:.2f}" if isinstance(ours, (int, float)) and other else "n/a")
        rows.append(row)

    r = lambda key, field: (lambda s: s["results"][key][field])
    for client, suffix in (("Java", "java"), ("librdkafka", "rdk")):
        figure(f"max produce MiB/s ({client}, acks=all, linger 5, batch 1 MiB)", r(f"max_{suffix}", "mib_per_s"))
        figure(f"produce MiB/s, client defaults ({client})", r(f"default_{suffix}", "mib_per_s"))
        for p in ("p50", "p99", "p999"):
            figure(f"produce {p} ms at fixed rate ({client})", r(f"latency_{suffix}", f"{p}_ms"))
        figure(f"100 partitions, 4 producers, MiB/s ({client})", r(f"p100_{suffix}", "mib_per_s"))
        figure(f"catch-up consume MiB/s from WAL/log ({client})", r(f"catchup_{suffix}", "mib_per_s"))
        for p in ("p50", "p99", "p999"):
            figure(f"end-to-end {p} ms ({client})", r(f"e2e_{suffix}", f"{p}_ms"))
    figure("catch-up consume MiB/s from Parquet (Java)", lambda s: s["results"]["catchup_parquet"]["mib_per_s"])
    figure("catch-up consume MiB/s from Parquet (librdkafka)",
           lambda s: s["results"]["catchup_parquet_rdk"]["mib_per_s"])
    figure("broker CPU s (whole run)", lambda s: s["cpu_s"])
    figure("broker CPU s per GiB produced", lambda s: s["cpu_s"] / produced_gib(s), 2)
    figure("broker peak RSS MiB (VmHWM)", lambda s: s["peak_rss_mib"])
    figure("object PUTs per GiB produced (whole run, broker)", lambda s: s["objects"]["puts"] / produced_gib(s), 1)
    figure("WAL PUTs per GiB at max produce (Java and librdkafka max workloads)",
           lambda s: puts_per_gib(s, MAX_RATE), 1)
    figure("WAL PUTs per GiB, max-throughput workloads (max, defaults, 100 partitions)",
           lambda s: puts_per_gib(s, HIGH_RATE), 1)
    figure("WAL PUTs per GiB, fixed-rate and end-to-end workloads", lambda s: puts_per_gib(s, LOW_RATE), 1)
    figure("object GETs per GiB consumed in catch-up",
           lambda s: s["objects"]["gets"] / consumed_gib(s), 1)
    header = ["figure"] + names + [f"{n}/{b}" for n, b in ratios(names)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def column_order(name):
    base, _, latency = name.partition("@")
    bases = ["ours-file", "ours-old-file", "ours-s3", "ours-old-s3"]
    profiles = ["", "s3-express", "s3-standard"]
    return (bases.index(base) if base in bases else len(bases),
            profiles.index(latency) if latency in profiles else len(profiles), name)


def ratios(names):
    """Ratio columns: each of ours against Kafka, and this build against an earlier one."""
    pairs = [(n, "kafka") for n in names
             if n != "kafka" and not n.startswith("ours-old-") and "kafka" in names]
    for n in names:
        old = n.replace("ours-", "ours-old-", 1)
        if n.startswith("ours-") and not n.startswith("ours-old-") and old in names:
            pairs.append((n, old))
    return pairs

MAX_RATE = ("max_java", "max_rdk")
HIGH_RATE = ("max_java", "max_rdk", "default_java", "default_rdk", "p100_java", "p100_rdk")
LOW_RATE = ("latency_java", "latency_rdk", "e2e_java", "e2e_rdk")


def puts_per_gib(summary, keys):
    rows = [summary["results"][k] for k in keys if "wal_puts" in summary["results"][k]]
    return sum(r["wal_puts"] for r in rows) / (sum(r["produced_mib"] for r in rows) / 1024)


def produced_gib(summary):
    return sum(r.get("produced_mib", 0) for r in summary["results"].values() if "error" not in r) / 1024


def consumed_gib(summary):
    keys = ("catchup_java", "catchup_rdk", "catchup_parquet", "catchup_parquet_rdk")
    return sum(summary["results"].get(k, {}).get("records", 0) for k in keys) * RECORD_BYTES / 2**30


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kib = 0
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return f"{platform.system()} {platform.release()}, {os.cpu_count()} vCPU ({cpu}), {mem_kib // 2**20} GiB RAM"


def versions(classpath):
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    kafka = re.search(r"kafka_2\.13-([\d.]+)\.jar", classpath)
    rdk = subprocess.run([PY, "-c", "import confluent_kafka as c; print(c.__version__, c.libversion()[0])"],
                         capture_output=True, text=True).stdout.split()
    moto = subprocess.run([PY, "-c", "import moto; print(moto.__version__)"], capture_output=True,
                          text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return {"ours": commit + (" (with uncommitted changes)" if dirty else ""),
            "kafka": kafka.group(1) if kafka else "?", "java": java,
            "confluent-kafka": rdk[0] if rdk else "?", "librdkafka": rdk[1] if len(rdk) > 1 else "?",
            "moto": moto}


def main():
    names = broker_names(os.environ.get("BENCH_BROKERS", "kafka ours-file ours-s3").split())
    if os.path.exists(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    classpath = kafka_classpath()
    started = datetime.datetime.now(datetime.timezone.utc)
    summaries = {}
    fixed_rate = int(os.environ["BENCH_FIXED_RATE"]) if os.environ.get("BENCH_FIXED_RATE") else None
    for name in names:
        log(f"=== {name}")
        summaries[name], fixed_rate = bench_broker(name, classpath, fixed_rate)
        for summary in summaries.values():
            for key in ("catchup_parquet", "catchup_parquet_rdk"):
                summary["results"].setdefault(key, {"error": "not measured: no compactor binary"})
        with open(os.path.join(WORK, "results.json"), "w") as f:
            json.dump(summaries, f, indent=2)
    elapsed_min = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds() / 60
    rendered = table(summaries)
    print(rendered)
    errors = {n: {k: v["error"][:200] for k, v in s["results"].items() if "error" in v}
              for n, s in summaries.items()}
    write_report(rendered, classpath, started, elapsed_min, fixed_rate, errors)


def old_build_note():
    old = os.environ.get("BENCH_OLD_BROKER_BIN")
    return f"\n- ours-old-*: an earlier build of ours (`{old}`), same settings" if old else ""


def write_report(rendered, classpath, started, elapsed_min, fixed_rate, errors):
    v = versions(classpath)
    command = " ".join(f"{k}={os.environ[k]}" for k in sorted(os.environ) if k.startswith("BENCH_"))
    report = os.environ.get("BENCH_REPORT", os.path.join(ROOT, "BENCHMARKS.md"))
    with open(report, "w") as f:
        f.write(f"""# Benchmarks: our broker vs Apache Kafka

Generated by `{(command + ' ') if command else ''}bench/run.sh` on {started:%Y-%m-%d %H:%M} UTC, one run, {elapsed_min:.0f} minutes.

- machine: {machine()}, shared with other builds while measuring (figures are noisy)
- ours: commit {v['ours']}, release build; local-folder store (`file://`, fsync on) with
  defaults (PUT budget 100/s); S3 store on moto {v['moto']} (in-memory S3 emulator, Python) on
  loopback with defaults (PUT budget 4/s); columns named `...@<profile>` ran with that modelled
  object-store latency over their store (`--object-store-latency-profile`, `docs/object-latency.md`:
  s3-standard PUT 60/160 ms median/p99, s3-express 6/15 ms); in-process compaction off (`--compaction
  false`), the `compactor` binary runs once before the Parquet catch-up{old_build_note()}
- Apache Kafka {v['kafka']} single-node KRaft from Maven Central jars, {v['java']},
  JVM flags of `kafka-server-start.sh` (`{' '.join(KAFKA_JVM[:3])} ... G1`); log flush left to the
  OS as Kafka does by default (ours fsyncs every local object before acking)
- clients: Kafka {v['kafka']} `ProducerPerformance`/`ConsumerPerformance`/`EndToEndLatency`;
  confluent-kafka {v['confluent-kafka']} on librdkafka {v['librdkafka']} (`bench/rdkafka_bench.py`)

Workloads (scaled down to fit ~30 minutes on 2 vCPUs): 1 KiB records; {RECORDS} records per
throughput workload ({RECORDS * RECORD_BYTES / 2**20:.0f} MiB; the issue's 2 GiB catch-up is scaled to this);
8 partitions except the 100-partition test (4 producers of {RECORDS // 4} records each);
fixed-rate latency at {fixed_rate} records/s (a third of Kafka's Java maximum) for {LATENCY_S} s;
catch-up consume reads the max-throughput topics after a broker restart (our caches cold), first
from the WAL objects, then again after `compactor --once` rewrote them to Parquet;
WAL PUTs per workload are WAL objects created during it (counted in the store);
end-to-end: Java `EndToEndLatency` ({E2E_JAVA_RECORDS} records, one at a time, acks=all) and
librdkafka at {E2E_RDK_RATE} records/s for {E2E_RDK_S} s. MiB/s are client-side figures; for the
Java consumer, `fetch.MB.sec` (group join excluded). Ratios are ours/Kafka: above 1 is better for
throughput, worse for latency, CPU, RSS.

{rendered}

Errors or unmeasured figures: {json.dumps({n: e for n, e in errors.items() if e}) or 'none'}

Raw results: `bench/.work/results.json` (not committed). Broker logs in `bench/.work/<broker>/`.
""")


if __name__ == "__main__":
    main()
