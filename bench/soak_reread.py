"""Re-reads one multi-GiB log many times on one broker process and prints the broker's RSS after
each pass, to show that memory levels off below the cache bounds plus a stated overhead.

    bench/soak_reread.sh                    # defaults: 3 GiB, 20 passes
    SOAK_GIB=2 SOAK_PASSES=10 bench/soak_reread.sh

The log is produced with Kafka's ProducerPerformance (1 KiB records, 8 partitions) and read
back from the beginning with kcat (librdkafka) each pass. Compaction is off, so every pass reads
the WAL objects back through the read cache; SOAK_COMPACT=1 compacts first (reads from Parquet).
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BROKER = os.path.join(ROOT, "target/release/broker")
COMPACTOR = os.path.join(ROOT, "target/release/compactor")
RECORD_BYTES = 1024
PARTITIONS = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def classpath():
    return subprocess.run([os.path.join(ROOT, "scripts/kafka-reference.sh"), "classpath"],
                          capture_output=True, text=True, check=True).stdout.strip()


def wait_ready(bootstrap):
    for _ in range(100):
        r = subprocess.run(["kcat", "-b", bootstrap, "-L", "-m", "2"], capture_output=True)
        if r.returncode == 0:
            return
        time.sleep(0.2)
    sys.exit("broker not ready")


def main():
    gib = float(os.environ.get("SOAK_GIB", "3"))
    passes = int(os.environ.get("SOAK_PASSES", "20"))
    records = int(gib * (1 << 30) / RECORD_BYTES)
    data = tempfile.mkdtemp(prefix="soak-")
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    args = [BROKER, "--listen", bootstrap, "--data-dir", data, "--compaction", "false"]
    args += os.environ.get("SOAK_BROKER_ARGS", "").split()
    log = open(os.path.join(data, "broker.log"), "wb")
    broker = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(bootstrap)
        subprocess.run(["kcat", "-b", bootstrap, "-L"], capture_output=True)
        topic = "soak"
        subprocess.run(["java", "-cp", classpath(), "org.apache.kafka.tools.TopicCommand",
                        "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                        "--partitions", str(PARTITIONS)], check=True, capture_output=True)
        started = time.monotonic()
        subprocess.run(["java", "-Xmx1g", "-cp", classpath(),
                        "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                        "--num-records", str(records), "--record-size", str(RECORD_BYTES),
                        "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
                        "acks=all", "linger.ms=20", "batch.size=262144"],
                       check=True, capture_output=True)
        print(f"produced {gib:.1f} GiB in {time.monotonic() - started:.0f} s; "
              f"broker RSS {rss_mib(broker.pid):.0f} MiB", flush=True)
        if os.environ.get("SOAK_COMPACT"):
            subprocess.run([COMPACTOR, "--data-dir", data, "--compaction-min-bytes", "0",
                            "--compaction-min-age-ms", "0", "--once"], check=True, capture_output=True)
            print("compacted", flush=True)
        for n in range(1, passes + 1):
            started = time.monotonic()
            out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning",
                                  "-e", "-q", "-f", "%o\n", "-X", "fetch.message.max.bytes=4194304"],
                                 capture_output=True, text=True, check=True).stdout
            read = out.count("\n")
            print(f"pass {n:2d}: read {read} records in {time.monotonic() - started:5.1f} s, "
                  f"broker RSS {rss_mib(broker.pid):.0f} MiB", flush=True)
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(timeout=60)
        subprocess.run(["rm", "-rf", data])


if __name__ == "__main__":
    main()
