#!/usr/bin/env python3
"""The front door under attack (issue 23): an authenticated producer and consumer (SCRAM-SHA-512
on a SASL_PLAINTEXT listener, librdkafka through bench/rdkafka_bench.py) measured quiet and
then while BENCH_FRONT_DOOR_ATTACKERS unauthenticated connections to the same listener hold
what they can: half declare a 510 KiB frame and send nothing, half log in half-way (SaslHandshake
PLAIN, then 500 KiB of a 510 KiB SaslAuthenticate) and trickle a byte a second. Attackers whose
connection is closed reconnect at once. Our broker and Apache Kafka side by side, same load.

Prints, per broker, medians of BENCH_FRONT_DOOR_ROUNDS rounds (default 3) of a quiet load then
an attacked one: produce and consume MiB/s, the broker's peak RSS in each phase, its RSS with the
attack held before the load, and how often attackers were closed (their frames gave way). Run
through bench/front_door.sh. Knobs: BENCH_FRONT_DOOR_RECORDS (1 KiB records, default 1000000),
BENCH_FRONT_DOOR_ATTACKERS (default 900), BENCH_FRONT_DOOR_ROUNDS, BENCH_BROKERS (default
"kafka ours").
"""
import json
import os
import resource
import shutil
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402
import tls as tls_bench  # noqa: E402  (the SCRAM user through the Admin API)

WORK = os.path.join(bench.ROOT, "bench", ".work", "front_door")
PLAIN_PORT, SASL_PORT = bench.PORT, bench.PORT + 20
RECORDS = int(os.environ.get("BENCH_FRONT_DOOR_RECORDS", "1000000"))
ATTACKERS = int(os.environ.get("BENCH_FRONT_DOOR_ATTACKERS", "900"))
ROUNDS = int(os.environ.get("BENCH_FRONT_DOOR_ROUNDS", "3"))
PARTITIONS = 8
USER, PASSWORD = tls_bench.SCRAM_USER, tls_bench.SCRAM_PASSWORD
DECLARED_BYTES, SENT_BYTES = 510 << 10, 500 << 10
PRODUCE_PROPS = ["acks=all", "linger.ms=5", "batch.size=1048576"]


def start_kafka(directory, classpath):
    process = bench.start_kafka(directory, classpath, extra_properties=f"""
listeners=PLAINTEXT://127.0.0.1:{PLAIN_PORT},SASL_PLAINTEXT://127.0.0.1:{SASL_PORT},CONTROLLER://127.0.0.1:{bench.CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:{PLAIN_PORT},SASL_PLAINTEXT://127.0.0.1:{SASL_PORT}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required;
""")
    bench.wait_for_port(SASL_PORT)
    return process


def start_ours(directory):
    os.makedirs(directory)
    argv = [bench.BROKER_BIN,
            "--listeners", f"PLAINTEXT://127.0.0.1:{PLAIN_PORT},SASL_PLAINTEXT://127.0.0.1:{SASL_PORT}",
            "--sasl-enabled-mechanisms", "SCRAM-SHA-512,PLAIN",
            "--data-dir", directory, "--compaction", "false"]
    process = bench.Process("ours", argv, os.path.join(directory, "broker.log"))
    process.start()
    bench.wait_for_port(SASL_PORT)
    return process


def rss_kib(process):
    with open(f"/proc/{process.proc.pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def handshake_frame():
    """SaslHandshake v1 for PLAIN, correlation id 1, client id `attacker`."""
    body = struct.pack(">hhi", 17, 1, 1) + struct.pack(">h", 8) + b"attacker" \
        + struct.pack(">h", 5) + b"PLAIN"
    return struct.pack(">i", len(body)) + body


class Attack:
    """ATTACKERS connections that each hold what they can; closed ones reconnect."""

    def __init__(self):
        self.stop = threading.Event()
        self.closed = 0
        self.connected = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, index):
        sock = socket.create_connection(("127.0.0.1", SASL_PORT), timeout=2)
        sock.setblocking(False)
        self.connected += 1
        if index % 2 == 0:
            return [sock, struct.pack(">i", DECLARED_BYTES)]
        # The handshake's answer is left unread: it does not change what the broker holds.
        return [sock, handshake_frame() + struct.pack(">i", DECLARED_BYTES) + b"\0" * SENT_BYTES]

    def push(self, entry):
        sock, pending = entry
        if not pending:
            # A byte now and then: never idle, never a whole step.
            entry[1] = b"\0"
            return
        sent = sock.send(pending[:64 << 10])
        if sent == 0:
            raise OSError("closed")
        entry[1] = pending[sent:]

    def run(self):
        entries = [None] * ATTACKERS
        while not self.stop.is_set():
            for index in range(ATTACKERS):
                if self.stop.is_set():
                    break
                try:
                    if entries[index] is None:
                        entries[index] = self.open(index)
                    self.push(entries[index])
                except BlockingIOError:
                    pass
                except OSError:
                    if entries[index] is not None:
                        entries[index][0].close()
                        self.closed += 1
                    entries[index] = None
            self.stop.wait(1)
        for entry in entries:
            if entry is not None:
                entry[0].close()


def sampled(process, fn):
    """fn() while sampling the broker's RSS every 100 ms; (result, peak RSS MiB)."""
    peak, done = [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_kib(process))
            done.wait(0.1)
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        return fn(), round(peak[0] / 1024)
    finally:
        done.set()
        thread.join()


def load(process, phase):
    props = ["security.protocol=sasl_plaintext", "sasl.mechanisms=SCRAM-SHA-512",
             f"sasl.username={USER}", f"sasl.password={PASSWORD}"]
    topic = f"front-door-{phase}-{time.monotonic_ns()}"
    tls_bench.checked(bench.RDK + ["create", "--bootstrap", f"127.0.0.1:{PLAIN_PORT}", "--topic", topic,
                                   "--partitions", str(PARTITIONS)])
    results = {}
    for mode, extra in [("produce", PRODUCE_PROPS), ("consume", [])]:
        flags = [arg for p in props + extra for arg in ("-X", p)]
        argv = bench.RDK + [mode, "--bootstrap", f"127.0.0.1:{SASL_PORT}", "--topic", topic,
                            "--count", str(RECORDS), "--size", str(bench.RECORD_BYTES)] + flags
        result, peak = sampled(process, lambda: tls_bench.checked(argv))
        results[mode] = {"mib_per_s": result["mib_per_s"], "peak_rss_mib": peak}
        bench.log(f"{process.name} {phase} {mode}: {result['mib_per_s']} MiB/s, peak rss {peak} MiB")
    return results


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def measure(process):
    """ROUNDS rounds of a quiet load then an attacked one; medians of each."""
    tls_bench.PLAIN_PORT = PLAIN_PORT
    tls_bench.add_scram_user()
    runs = {"quiet": [], "attacked": []}
    held, connected, closed = [], 0, 0
    for _ in range(ROUNDS):
        runs["quiet"].append(load(process, "quiet"))
        attack = Attack()
        attack.thread.start()
        time.sleep(10)  # every attacker connected and holding what it can
        held.append(round(rss_kib(process) / 1024))
        bench.log(f"{process.name}: {attack.connected} attacker connections, rss {held[-1]} MiB")
        try:
            runs["attacked"].append(load(process, "attacked"))
        finally:
            attack.stop.set()
            attack.thread.join(60)
        connected, closed = connected + attack.connected, closed + attack.closed
        time.sleep(2)
    summary = {phase: {mode: {key: median([r[mode][key] for r in rounds])
                              for key in ("mib_per_s", "peak_rss_mib")}
                       for mode in ("produce", "consume")}
               for phase, rounds in runs.items()}
    summary.update({"rss_attack_held_mib": median(held), "attacker_connections": connected,
                    "attackers_closed": closed, "rounds": runs})
    return summary


def table(summaries):
    header = ["broker", "produce MiB/s quiet", "produce MiB/s attacked", "consume MiB/s quiet",
              "consume MiB/s attacked", "peak RSS MiB before any attack",
              "RSS MiB attack held", "peak RSS MiB attacked (max)",
              "attacker connections (closed by the broker)"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in summaries.items():
        rounds = r["rounds"]
        before = max(rounds["quiet"][0][m]["peak_rss_mib"] for m in ("produce", "consume"))
        attacked = max(run[m]["peak_rss_mib"] for run in rounds["attacked"] for m in ("produce", "consume"))
        cells = [name, r["quiet"]["produce"]["mib_per_s"], r["attacked"]["produce"]["mib_per_s"],
                 r["quiet"]["consume"]["mib_per_s"], r["attacked"]["consume"]["mib_per_s"],
                 before, r["rss_attack_held_mib"], attacked,
                 f"{r['attacker_connections']} ({r['attackers_closed']})"]
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(rows)


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, ATTACKERS * 4 + 1024)), hard))
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    bench.WORK = WORK
    summaries = {}
    for name in os.environ.get("BENCH_BROKERS", "kafka ours").split():
        bench.log(f"starting {name}")
        if name == "kafka":
            process = start_kafka(os.path.join(WORK, "kafka"), bench.kafka_classpath())
        else:
            process = start_ours(os.path.join(WORK, "ours"))
        try:
            summaries[name] = measure(process)
        finally:
            process.stop()
    with open(os.path.join(WORK, "results.json"), "w") as f:
        json.dump(summaries, f, indent=2)
    print(f"medians of {ROUNDS} rounds; {RECORDS} records of {bench.RECORD_BYTES} bytes, {PARTITIONS} partitions, librdkafka "
          f"over SASL_PLAINTEXT (SCRAM-SHA-512), acks=all; attacked: {ATTACKERS} unauthenticated "
          f"connections to the same listener, half silent after declaring {DECLARED_BYTES >> 10} KiB, "
          f"half holding {SENT_BYTES >> 10} KiB of a SaslAuthenticate, reconnecting when closed\n")
    print(table(summaries))


if __name__ == "__main__":
    main()
