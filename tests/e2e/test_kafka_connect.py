"""Kafka Connect 4.1 in distributed mode on the broker: two workers from the Maven Central jars
(connect-runtime and connect-json from the reference Kafka's libs, connect-file fetched from
Maven Central), their internal topics created by Connect itself (which requires the config
topic to be `cleanup.policy=compact`), a FileStream source and sink moving 10,000 lines, a
worker SIGKILLed and restarted, the connectors resuming with their configs and offsets.
Passes against the reference Kafka too (E2E_TARGET=kafka)."""

import json
import os
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from targets import REPO, free_port
from waiting import wait_until

LIBS = REPO / "tests/.work/kafka/libs"
CONNECT_FILE = "connect-file-4.1.1.jar"
MAVEN = "https://repo1.maven.org/maven2/org/apache/kafka/connect-file/4.1.1/" + CONNECT_FILE


def connect_file_jar() -> Path:
    """The FileStream connectors: with Kafka's jars when installed there, else fetched once."""
    installed = LIBS / CONNECT_FILE
    if installed.exists():
        return installed
    cached = Path.home() / ".cache/e2e-jars" / CONNECT_FILE
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".part")
        urllib.request.urlretrieve(MAVEN, partial)
        partial.rename(cached)
    return cached


class Worker:
    def __init__(self, directory: Path, bootstrap: str, group: str):
        self.dir = directory
        self.port = free_port()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.properties = self.dir / "worker.properties"
        self.properties.write_text("\n".join([
            f"bootstrap.servers={bootstrap}",
            f"group.id={group}",
            "key.converter=org.apache.kafka.connect.storage.StringConverter",
            "value.converter=org.apache.kafka.connect.storage.StringConverter",
            f"offset.storage.topic={group}-offsets",
            f"config.storage.topic={group}-configs",
            f"status.storage.topic={group}-status",
            "offset.storage.replication.factor=1",
            "config.storage.replication.factor=1",
            "status.storage.replication.factor=1",
            "offset.flush.interval.ms=500",
            "scheduled.rebalance.max.delay.ms=5000",
            f"listeners=http://127.0.0.1:{self.port}",
        ]) + "\n")
        self.proc = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        classpath = ":".join([str(p) for p in sorted(LIBS.glob("*.jar"))] + [str(connect_file_jar())])
        log = open(self.dir / f"worker-{self.starts}.log", "wb")
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", classpath, "org.apache.kafka.connect.cli.ConnectDistributed",
             str(self.properties)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_until(self.ready, 90, f"connect worker on port {self.port}", interval_s=0.5)

    def ready(self) -> bool:
        assert self.proc.poll() is None, f"worker exited; see {self.dir}"
        try:
            return "version" in self.get("/")
        except OSError:
            return False

    def get(self, path: str):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
            return json.loads(r.read())

    def put_connector(self, name: str, config: dict):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/connectors/{name}/config",
                                         data=json.dumps(config).encode(), method="PUT",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


def lines(path: Path) -> list:
    return path.read_text().splitlines() if path.exists() else []


def running(worker: Worker, name: str) -> bool:
    try:
        status = worker.get(f"/connectors/{name}/status")
    except OSError:
        return False
    return status["connector"]["state"] == "RUNNING" and bool(status["tasks"]) and \
        all(t["state"] == "RUNNING" for t in status["tasks"])


def test_two_distributed_workers_move_lines_and_resume_after_a_kill(broker, tmp_path):
    if not (LIBS / "connect-runtime-4.1.1.jar").exists():
        pytest.skip("Kafka's jars are not installed (scripts/install-test-deps.sh)")
    group = f"connect-{uuid.uuid4().hex[:8]}"
    topic = f"{group}-lines"
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    sent = [f"line-{i}" for i in range(10_000)]
    source_file.write_text("\n".join(sent) + "\n")
    workers = [Worker(tmp_path / f"w{i}", broker.bootstrap, group) for i in range(2)]
    try:
        for w in workers:
            w.start()
        workers[0].put_connector("source", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source_file), "topic": topic, "tasks.max": "1"})
        workers[1].put_connector("sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file), "topics": topic, "tasks.max": "1"})
        wait_until(lambda: len(lines(sink_file)) >= len(sent), 120, "10,000 lines through Connect")
        assert lines(sink_file) == sent

        # Connect created its internal topics compacted (it refuses to run otherwise).
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for name in (f"{group}-configs", f"{group}-offsets", f"{group}-status"):
            resource = ConfigResource(ResourceType.TOPIC, name)
            described = admin.describe_configs([resource])[resource].result(timeout=30)
            assert described["cleanup.policy"].value == "compact", name

        # Offsets are flushed every 500 ms: let them land, then kill a worker and restart it.
        time.sleep(3)
        workers[0].kill()
        workers[0].start()
        more = [f"line-{i}" for i in range(10_000, 12_000)]
        with source_file.open("a") as f:
            f.write("\n".join(more) + "\n")
        wait_until(lambda: len(lines(sink_file)) >= len(sent) + len(more), 180,
                   "the lines appended after the restart")
        assert lines(sink_file) == sent + more, "resumed from the stored offsets, nothing twice"
        assert sorted(workers[0].get("/connectors")) == ["sink", "source"]
        assert workers[0].get("/connectors/source/config")["file"] == str(source_file)
        wait_until(lambda: running(workers[0], "source") and running(workers[0], "sink"), 60,
                   "both connectors running after the restart")
    finally:
        for w in workers:
            w.kill()
