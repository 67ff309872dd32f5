#!/usr/bin/env python3
"""Produce and consume MiB/s over TLS and SASL_SSL (SCRAM-SHA-512) against plaintext, on our broker
and on Apache Kafka, side by side: one broker of each kind with a PLAINTEXT, an SSL and a SASL_SSL
listener (same certificate, no client certificates; one SCRAM user made through the Admin API),
the same librdkafka load client (bench/rdkafka_bench.py) on both.

Run through bench/tls.sh. Knobs (environment): BENCH_TLS_RECORDS (records of 1 KiB per
workload, default 1000000), BENCH_TLS_PARTITIONS (default 8), BENCH_BROKERS (default
"kafka ours"). Prints a markdown table and writes bench/.work/tls/results.json.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (Kafka's JVM settings, the classpath, process accounting)

ROOT = bench.ROOT
WORK = os.path.join(ROOT, "bench", ".work", "tls")
PLAIN_PORT, SSL_PORT, SASL_PORT = bench.PORT, bench.PORT + 10, bench.PORT + 20
SCRAM_USER, SCRAM_PASSWORD = "bench", "bench-secret"
RECORDS = int(os.environ.get("BENCH_TLS_RECORDS", "1000000"))
PARTITIONS = int(os.environ.get("BENCH_TLS_PARTITIONS", "8"))
PRODUCE_PROPS = ["acks=all", "linger.ms=5", "batch.size=1048576"]


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(directory):
    """A test CA and a P-256 server certificate for localhost / 127.0.0.1."""
    os.makedirs(directory)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench ca", cwd=directory)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=directory)
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", "server.pem", "-extfile", "server.ext",
            cwd=directory)
    os.chmod(os.path.join(directory, "server.key"), 0o600)


def pem_line(path):
    with open(path) as f:
        return f.read().strip().replace("\n", "\\n")


def start_kafka(directory, classpath, pki):
    """run.py's Kafka (its JVM settings) with an SSL listener added."""
    process = bench.start_kafka(directory, classpath, extra_properties=f"""
listeners=PLAINTEXT://127.0.0.1:{PLAIN_PORT},SSL://127.0.0.1:{SSL_PORT},SASL_SSL://127.0.0.1:{SASL_PORT},CONTROLLER://127.0.0.1:{bench.CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:{PLAIN_PORT},SSL://127.0.0.1:{SSL_PORT},SASL_SSL://127.0.0.1:{SASL_PORT}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.certificate.chain={pem_line(os.path.join(pki, "server.pem"))}
ssl.keystore.key={pem_line(os.path.join(pki, "server.key"))}
""")
    bench.wait_for_port(SSL_PORT)
    bench.wait_for_port(SASL_PORT)
    return process


def start_ours(directory, pki):
    os.makedirs(directory)
    argv = [bench.BROKER_BIN,
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{PLAIN_PORT},SSL://127.0.0.1:{SSL_PORT},SASL_SSL://127.0.0.1:{SASL_PORT}",
            "--sasl-enabled-mechanisms", "SCRAM-SHA-512",
            "--ssl-cert-file", os.path.join(pki, "server.pem"),
            "--ssl-key-file", os.path.join(pki, "server.key"),
            "--data-dir", directory, "--compaction", "false"]
    process = bench.Process("ours", argv, os.path.join(directory, "broker.log"))
    process.start()
    bench.wait_for_port(SSL_PORT)
    bench.wait_for_port(SASL_PORT)
    return process


def add_scram_user():
    """The load client's SCRAM-SHA-512 credential, through AlterUserScramCredentials."""
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{PLAIN_PORT}"})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    upsert = UserScramCredentialUpsertion(SCRAM_USER, info, SCRAM_PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    # Kafka applies it through its metadata log: a moment later.
    time.sleep(2)


def checked(argv):
    out, err = bench.run(argv)
    if err:
        raise RuntimeError(f"{' '.join(argv[2:4])}: {err}")
    return json.loads(out.strip().splitlines()[-1])


def rdk(mode, bootstrap, topic, props):
    flags = [arg for p in props for arg in ("-X", p)]
    return checked(bench.RDK + [mode, "--bootstrap", bootstrap, "--topic", topic,
                                "--count", str(RECORDS), "--size", str(bench.RECORD_BYTES)] + flags)


def workloads(process, pki):
    """Produce then consume RECORDS on each listener; MiB/s and the broker's CPU seconds."""
    results = {}
    ca = f"ssl.ca.location={os.path.join(pki, 'ca.pem')}"
    tls = ["security.protocol=ssl", ca]
    sasl = ["security.protocol=sasl_ssl", ca, "sasl.mechanisms=SCRAM-SHA-512",
            f"sasl.username={SCRAM_USER}", f"sasl.password={SCRAM_PASSWORD}"]
    add_scram_user()
    for listener, port, props in [("plaintext", PLAIN_PORT, []), ("tls", SSL_PORT, tls),
                                  ("sasl_ssl", SASL_PORT, sasl)]:
        topic = f"bench-{listener}-{time.monotonic_ns()}"
        checked(bench.RDK + ["create", "--bootstrap", f"127.0.0.1:{PLAIN_PORT}", "--topic", topic,
                             "--partitions", str(PARTITIONS)])
        bootstrap = f"127.0.0.1:{port}"
        for mode, extra in [("produce", PRODUCE_PROPS), ("consume", [])]:
            cpu = process.cpu_s()
            result = rdk(mode, bootstrap, topic, props + extra)
            result["broker_cpu_s"] = round(process.cpu_s() - cpu, 2)
            results[f"{listener}_{mode}"] = result
            bench.log(f"{process.name} {listener} {mode}: {result['mib_per_s']} MiB/s, "
                      f"broker cpu {result['broker_cpu_s']} s")
    return results


LISTENERS = [("plaintext", "plaintext"), ("tls", "TLS"), ("sasl_ssl", "SASL_SSL")]


def table(summaries):
    header = ["broker"] + [f"{mode} MiB/s {title}" for mode in ("produce", "consume") for _, title in LISTENERS] \
        + [f"broker CPU s {title}" for _, title in LISTENERS]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in summaries.items():
        cells = [name] + [str(r[f"{l}_{mode}"]["mib_per_s"]) for mode in ("produce", "consume") for l, _ in LISTENERS] \
            + [f"{r[f'{l}_produce']['broker_cpu_s'] + r[f'{l}_consume']['broker_cpu_s']:.1f}" for l, _ in LISTENERS]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    pki = os.path.join(WORK, "pki")
    make_pki(pki)
    summaries = {}
    for name in os.environ.get("BENCH_BROKERS", "kafka ours").split():
        bench.log(f"starting {name}")
        if name == "kafka":
            process = start_kafka(os.path.join(WORK, "kafka"), bench.kafka_classpath(), pki)
        else:
            process = start_ours(os.path.join(WORK, "ours"), pki)
        try:
            summaries[name] = workloads(process, pki)
        finally:
            process.stop()
    with open(os.path.join(WORK, "results.json"), "w") as f:
        json.dump(summaries, f, indent=2)
    print(f"{RECORDS} records of {bench.RECORD_BYTES} bytes, {PARTITIONS} partitions, librdkafka, "
          f"acks=all; TLS without client certificates; SASL_SSL: SCRAM-SHA-512 over the same TLS; "
          f"broker CPU: produce and consume together\n")
    print(table(summaries))


if __name__ == "__main__":
    main()
