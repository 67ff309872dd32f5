"""Drivers for clients that run as programs: kcat, and our Java, franz-go and sarama programs."""

import json
import os
import re
import subprocess
from pathlib import Path

from driver import ClientError, Driver, run_lines, spawn_consumer
from targets import REPO

# E2E_BIN_DIR: franz and sarama built elsewhere (a worktree whose tests/.work is shared).
BIN = Path(os.environ.get("E2E_BIN_DIR", REPO / "tests/.work/bin"))
JAVA_DIR = REPO / "tests/clients/java/target"


class ProgramDriver(Driver):
    """A program speaking the tests/clients protocol: MODE --bootstrap B --topic T [--flag value]..."""

    command = []

    def _cmd(self, mode: str, topic: str, **flags) -> list:
        cmd = self.command + [mode, "--bootstrap", self.bootstrap, "--topic", topic]
        for k, v in flags.items():
            cmd += ["--" + k.replace("_", "-"), str(v)]
        return cmd

    def produce(self, topic, records, codec="none"):
        stdin = "".join(json.dumps(r) + "\n" for r in records)
        lines = run_lines(self._cmd("produce", topic, codec=codec), stdin)
        return [(line["partition"], line["offset"]) for line in lines]

    def consume_async(self, topic, partition, start, count, timeout_s=20):
        return spawn_consumer(self._cmd("consume", topic, partition=partition, start=start, count=count,
                                        timeout_ms=int(timeout_s * 1000)))

    def list_offsets(self, topic, partition, timestamps):
        lines = run_lines(self._cmd("offsets", topic, partition=partition, ts=",".join(map(str, timestamps))))
        return [line["offset"] for line in lines]

    def create_topic(self, topic, partitions, config):
        run_lines(self._cmd("create-topic", topic, partitions=partitions,
                            config=",".join(f"{k}={v}" for k, v in config.items())))

    def describe_configs(self, topic):
        return run_lines(self._cmd("describe-configs", topic))[0]["configs"]

    def create_partitions(self, topic, total):
        run_lines(self._cmd("create-partitions", topic, partitions=total))

    def delete_topic(self, topic):
        run_lines(self._cmd("delete-topic", topic))

    def partition_count(self, topic):
        try:
            return run_lines(self._cmd("describe-topic", topic))[0]["partitions"]
        except ClientError as e:
            if "UNKNOWN_TOPIC" in str(e) or "UnknownTopicOrPartition" in str(e) or "does not exist" in str(e) or "not found" in str(e):
                return None
            raise


class JavaDriver(ProgramDriver):
    name = "java"
    command = ["java", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-cp",
               f"{JAVA_DIR}/e2e-client.jar:{JAVA_DIR}/lib/*", "e2e.Main"]


class FranzDriver(ProgramDriver):
    name = "franz"
    command = [str(BIN / "franz")]
    ts_after_last_is_end = True  # kadm.ListOffsetsAfterMilli documents this mapping


class SaramaDriver(ProgramDriver):
    name = "sarama"
    command = [str(BIN / "sarama")]


class KcatDriver(Driver):
    """Debian's kcat (librdkafka 2.0.2). It cannot set timestamps, report produced offsets or
    administer topics; the contract tests use a helper client for those steps."""

    name = "kcat"
    can_set_timestamp = False
    can_admin = False
    reports_offsets = False

    def _base(self, *args) -> list:
        return ["kcat", "-b", self.bootstrap, "-X", "socket.timeout.ms=10000", *args]

    def produce(self, topic, records, codec="none"):
        # One invocation per record: headers (-H) and the key (-k) apply to a whole invocation.
        for r in records:
            # -K: "key<TAB>value"; no TAB means a null key, and with -Z an empty value is null.
            cmd = self._base("-P", "-t", topic, "-p", str(r.get("partition", 0)), "-Z", "-K", "\\t",
                             "-X", f"compression.codec={codec}", "-X", "acks=all", "-X", "message.timeout.ms=15000")
            for k, v in r.get("headers") or []:
                cmd += ["-H", f"{k}={v}"]
            key, value = r.get("key"), r.get("value") or ""
            line = value if key is None else f"{key}\t{value}"
            assert r.get("value") is not None or key is not None, "kcat cannot send a null key with a null value"
            p = subprocess.run(cmd, input=line + "\n", capture_output=True, text=True, timeout=30)
            if p.returncode != 0:
                raise ClientError(f"kcat produce: {p.stderr[-2000:]}")
        return [None] * len(records)

    def consume_async(self, topic, partition, start, count, timeout_s=20):
        cmd = self._base("-C", "-t", topic, "-p", str(partition), "-o", str(start), "-c", str(count), "-J",
                         "-X", f"topic.message.timeout.ms={int(timeout_s * 1000)}")
        return spawn_consumer(["timeout", str(int(timeout_s)), *cmd], ready_on_stderr="Reached end",
                              parse=_parse_kcat_json)

    def list_offsets(self, topic, partition, timestamps):
        out = []
        for ts in timestamps:
            p = subprocess.run(self._base("-Q", "-t", f"{topic}:{partition}:{ts}"), capture_output=True,
                               text=True, timeout=60)
            if p.returncode != 0:
                raise ClientError(f"kcat -Q: {p.stderr[-2000:]}")
            m = re.search(r"\[(\d+)\] offset (-?\d+)", p.stdout)  # "<topic> [<partition>] offset <N>"
            if m is None:
                raise ClientError(f"kcat -Q: unexpected output {p.stdout!r}")
            out.append(int(m.group(2)))
        return out

    def partition_count(self, topic):
        # Looking a topic up must not create it (librdkafka's producer default would).
        p = subprocess.run(self._base("-L", "-J", "-t", topic, "-X", "allow.auto.create.topics=false"),
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise ClientError(f"kcat -L: {p.stderr[-2000:]}")
        md = json.loads(p.stdout)
        for t in md["topics"]:
            if t["topic"] == topic:
                if t.get("error"):
                    return None
                return len(t["partitions"])
        return None


def _parse_kcat_json(line: str) -> dict:
    m = json.loads(line)
    if "payload" not in m:
        return m
    flat = m.get("headers") or []
    return {"partition": m["partition"], "offset": m["offset"], "ts": m["ts"], "key": m["key"],
            "value": m["payload"], "headers": [[flat[i], flat[i + 1]] for i in range(0, len(flat), 2)]}
