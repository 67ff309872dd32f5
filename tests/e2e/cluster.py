"""The cluster topology as processes: a real Oxia server, a moto S3 server, three `broker`
processes on different ports sharing both, and a `compactor` process when its binary exists.
Everything is started and stopped here; binaries come from scripts/install-oxia.sh and
scripts/install-s3.sh (OXIA_BIN and MOTO_SERVER_BIN override the default paths)."""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from targets import REPO, BrokerProcess, free_port

SERVER_READY_TIMEOUT_S = 60
BUCKET = "cluster"
OBJECT_PREFIX = "data"
# The compactor runs often and compacts anything a couple of seconds old, so tests see data
# produced during a test compacted (and its WAL objects reclaimed) within seconds.
COMPACTOR_ENV = {"COMPACTOR_COMPACTION_MIN_AGE_MS": "2000", "COMPACTOR_COMPACTION_INTERVAL_MS": "1000",
                 "COMPACTOR_COMPACTION_GRACE_PERIOD_MS": "2000"}


def _wait_port(port: int, proc: subprocess.Popen, name: str, log: Path, ready_line: str = "") -> None:
    """Waits until `proc` accepts on `port` and, if given, `ready_line` is in its log."""
    deadline = time.monotonic() + SERVER_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}; see {log}")
        if ready_line and ready_line not in log.read_text(errors="replace"):
            time.sleep(0.05)
            continue
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{name} not listening on {port} after {SERVER_READY_TIMEOUT_S}s; see {log}")


def _stop(proc) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class ClusterBroker(BrokerProcess):
    """One broker of the cluster: Oxia metastore, S3 objects, its own id, port and rack."""

    def __init__(self, cluster: "Cluster", broker_id: int, rack: str):
        super().__init__("ours", cluster.dir / f"broker-{broker_id}")
        self.cluster = cluster
        self.broker_id = broker_id
        self.rack = rack
        self.registry_port = free_port()
        self.registry_url = f"http://127.0.0.1:{self.registry_port}"

    def command(self) -> list:
        binary = os.environ.get("BROKER_BIN", str(REPO / "target/debug/broker"))
        # Compaction is the separate compactor process's job in a cluster (as in docker-compose).
        return [binary, "--listen", self.bootstrap, "--data-dir", str(self.data_dir), "--compaction", "false",
                "--broker-id", str(self.broker_id), "--rack", self.rack,
                "--object-store", f"s3://{BUCKET}/{OBJECT_PREFIX}",
                "--metastore", f"oxia://127.0.0.1:{self.cluster.oxia_port}/default",
                "--schema-registry-listen", f"127.0.0.1:{self.registry_port}"] + list(self.cluster.broker_args)

    def start(self) -> None:
        # BrokerProcess.start passes os.environ through; the S3 settings must reach the broker.
        saved = dict(os.environ)
        os.environ.update(self.cluster.s3_env())
        try:
            super().start()
        finally:
            os.environ.clear()
            os.environ.update(saved)


class Cluster:
    """`broker_args` are passed to every broker (e.g. `--authorizer acl`)."""

    def __init__(self, directory: Path, racks=("zone-a", "zone-b", "zone-b"), broker_args=(),
                 compactor_args=()):
        self.dir = directory
        self.racks = racks
        self.broker_args = broker_args
        self.compactor_args = compactor_args
        self.oxia_port = free_port()
        self.s3_port = free_port()
        self.oxia = None
        self.moto = None
        self.compactor = None
        self.brokers = []

    def s3_env(self) -> dict:
        return {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.s3_port}", "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self) -> "Cluster":
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start_oxia()
            self._start_moto()
            for i, rack in enumerate(self.racks):
                broker = ClusterBroker(self, i + 1, rack)
                self.brokers.append(broker)
                broker.start()
            self._start_compactor()
            self.wait_members(len(self.brokers))
        except BaseException:
            self.stop()
            raise
        return self

    def _start_oxia(self) -> None:
        binary = os.environ.get("OXIA_BIN", str(REPO / ".tools/bin/oxia"))
        log = self.dir / "oxia.log"
        with open(log, "wb") as out:
            self.oxia = subprocess.Popen(
                [binary, "standalone", "-p", f"127.0.0.1:{self.oxia_port}", "-m", f"127.0.0.1:{free_port()}",
                 "--data-dir", str(self.dir / "oxia/db"), "--wal-dir", str(self.dir / "oxia/wal"),
                 "--wal-sync-data=false"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        # Upstream's standalone server opens its port before it can serve shard assignments and
        # crashes on a client that asks in that window; the wrapper logs this line once it can.
        _wait_port(self.oxia_port, self.oxia, "oxia", log, ready_line="oxia standalone ready")

    def _start_moto(self) -> None:
        binary = os.environ.get("MOTO_SERVER_BIN", str(REPO / ".venv/bin/moto_server"))
        log = self.dir / "moto.log"
        with open(log, "wb") as out:
            self.moto = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(self.s3_port)],
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        _wait_port(self.s3_port, self.moto, "moto", log)
        request = urllib.request.Request(f"http://127.0.0.1:{self.s3_port}/{BUCKET}", method="PUT")
        urllib.request.urlopen(request, timeout=10).read()

    def compactor_binary(self):
        binary = Path(os.environ.get("COMPACTOR_BIN", str(REPO / "target/debug/compactor")))
        return binary if binary.exists() else None

    def _start_compactor(self) -> None:
        binary = self.compactor_binary()
        if binary is None:
            return
        log = self.dir / "compactor.log"
        env = dict(os.environ, **self.s3_env(), **COMPACTOR_ENV)
        env.setdefault("RUST_LOG", "info")
        with open(log, "wb") as out:
            self.compactor = subprocess.Popen(
                [str(binary), "--data-dir", str(self.dir / "compactor"), "--object-store", f"s3://{BUCKET}/data",
                 "--metastore", f"oxia://127.0.0.1:{self.oxia_port}/default", *self.compactor_args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)

    def object_keys(self, prefix: str) -> set:
        """Keys under `<OBJECT_PREFIX>/<prefix>/` in the cluster's bucket (a ListObjectsV2 on moto)."""
        import boto3
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{self.s3_port}", aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        keys = set()
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{OBJECT_PREFIX}/{prefix}/"):
            keys |= {o["Key"] for o in page.get("Contents", [])}
        return keys

    def compacted_keys(self) -> set:
        return self.object_keys("compacted")

    def wal_keys(self) -> set:
        return self.object_keys("wal")

    def wait_members(self, count: int, via=None, timeout_s: float = 30) -> None:
        """Waits until Metadata from `via` (every running broker by default) lists `count` brokers."""
        import wire
        targets = [via] if via else [b for b in self.brokers if b.proc and b.proc.poll() is None]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(wire.metadata_broker_count(b.bootstrap) == count for b in targets):
                return
            time.sleep(0.2)
        raise AssertionError(f"brokers do not all see {count} members after {timeout_s}s")

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop()
        _stop(self.compactor)
        _stop(self.moto)
        _stop(self.oxia)


def tools_available() -> bool:
    oxia = Path(os.environ.get("OXIA_BIN", str(REPO / ".tools/bin/oxia")))
    moto = Path(os.environ.get("MOTO_SERVER_BIN", str(REPO / ".venv/bin/moto_server")))
    return oxia.exists() and moto.exists() and shutil.which(str(moto)) is not None
