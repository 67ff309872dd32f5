"""Broker CPU and produce throughput with metrics recorded and not, side by side.

Each round starts one fresh release broker per setting (local-folder store) and runs the same
librdkafka max-throughput produce against it (bench/rdkafka_bench.py), reading the broker's
CPU time from /proc before and after. Prints the per-round figures and the medians."""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".venv", "bin", "python")
RDK = [PY, os.path.join(ROOT, "bench", "rdkafka_bench.py")]
BROKER = os.path.join(ROOT, "target", "release", "broker")
RECORDS = int(os.environ.get("BENCH_METRICS_RECORDS", "500000"))
ROUNDS = int(os.environ.get("BENCH_METRICS_ROUNDS", "3"))
TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def run(enabled):
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        proc = subprocess.Popen([BROKER, "--listen", f"127.0.0.1:{port}", "--data-dir", data,
                                 "--http-listen", "none", "--metrics-enabled", enabled],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            bootstrap = f"127.0.0.1:{port}"
            for _ in range(50):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            subprocess.run(RDK + ["create", "--bootstrap", bootstrap, "--topic", "m", "--partitions", "8"],
                           check=True, capture_output=True)
            before = cpu_s(proc.pid)
            out = subprocess.run(RDK + ["produce", "--bootstrap", bootstrap, "--topic", "m", "--count",
                                        str(RECORDS), "--size", "1024", "-X", "linger.ms=5",
                                        "-X", "batch.size=1048576", "-X", "acks=all"],
                                 check=True, capture_output=True, text=True).stdout
            used = cpu_s(proc.pid) - before
            result = json.loads(out.strip().splitlines()[-1])
            gib = RECORDS * 1024 / 2**30
            return {"mib_per_s": result["mib_per_s"], "cpu_s_per_gib": used / gib}
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main():
    rows = {"true": [], "false": []}
    for round_no in range(ROUNDS):
        # Alternate which goes first: a run leaves dirty pages that the next one pays to write.
        order = ("true", "false") if round_no % 2 == 0 else ("false", "true")
        for enabled in order:
            r = run(enabled)
            rows[enabled].append(r)
            print(f"round {round_no + 1} metrics_enabled={enabled}: {r['mib_per_s']:.1f} MiB/s, "
                  f"{r['cpu_s_per_gib']:.2f} broker CPU s/GiB", flush=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("mib_per_s", "cpu_s_per_gib")}
           for k, v in rows.items()}
    print(f"median on:  {med['true']['mib_per_s']:.1f} MiB/s, {med['true']['cpu_s_per_gib']:.2f} CPU s/GiB")
    print(f"median off: {med['false']['mib_per_s']:.1f} MiB/s, {med['false']['cpu_s_per_gib']:.2f} CPU s/GiB")
    print(f"on/off: throughput {med['true']['mib_per_s'] / med['false']['mib_per_s']:.3f}, "
          f"CPU per GiB {med['true']['cpu_s_per_gib'] / med['false']['cpu_s_per_gib']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
