"""Processes the suite runs against: our `broker` binary, or the reference Apache Kafka."""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import wire

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """One broker process on loopback with its own data dir; restartable on the same dir and ports.
    `settings` are broker settings by Kafka's names (e.g. {"log.retention.ms": 1000}): server
    properties for Kafka, the flags of the same names for ours (`--log-retention-ms 1000`).
    `listeners` are (name, security protocol) pairs, the same for both kinds: Kafka's
    `listeners`, `advertised.listeners` and `listener.security.protocol.map`, our flags of
    the same names. The first must be PLAINTEXT: readiness is checked through it, and it is
    `bootstrap`. `env` is added to the process's environment."""

    def __init__(self, target: str, data_dir: Path, settings: dict = None, listeners: list = None,
                 env: dict = None):
        self.target = target
        self.data_dir = data_dir
        self.settings = settings or {}
        self.listeners = listeners or [("PLAINTEXT", "PLAINTEXT")]
        assert self.listeners[0][1] == "PLAINTEXT", "the first listener must be PLAINTEXT"
        self.env = env or {}
        self.ports = {name: free_port() for name, _ in self.listeners}
        self.port = self.ports[self.listeners[0][0]]
        self.controller_port = free_port()
        self.proc = None
        self.starts = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def address(self, listener: str) -> str:
        """host:port of one listener."""
        return f"127.0.0.1:{self.ports[listener]}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _listener_settings(self) -> dict:
        """The listener settings by Kafka's names; empty for the default single PLAINTEXT one."""
        if self.listeners == [("PLAINTEXT", "PLAINTEXT")]:
            return {}
        urls = ",".join(f"{name}://{self.address(name)}" for name, _ in self.listeners)
        protocols = ",".join(f"{name}:{protocol}" for name, protocol in self.listeners)
        if self.target == "kafka":
            return {"listeners": f"{urls},CONTROLLER://127.0.0.1:{self.controller_port}",
                    "advertised.listeners": urls,
                    "listener.security.protocol.map": f"{protocols},CONTROLLER:PLAINTEXT"}
        return {"listeners": urls, "listener.security.protocol.map": protocols}

    def command(self) -> list:
        settings = {**self._listener_settings(), **self.settings}
        if self.target == "kafka":
            properties = [arg for k, v in settings.items() for arg in ("--property", f"{k}={v}")]
            return [str(REPO / "scripts/kafka-reference.sh"), "start", "--dir", str(self.data_dir),
                    "--port", str(self.port), "--controller-port", str(self.controller_port)] + properties
        binary = os.environ.get("BROKER_BIN", str(REPO / "target/debug/broker"))
        listen = [] if "listeners" in settings else ["--listen", self.bootstrap]
        args = [binary, *listen, "--data-dir", str(self.data_dir),
                "--object-store", f"file://{self.data_dir}/objects", "--metastore", "embedded"]
        flags = [arg for k, v in settings.items() for arg in ("--" + k.replace(".", "-"), str(v))]
        return args + flags + os.environ.get("BROKER_ARGS", "").split()

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        log = open(self.data_dir / f"process-{self.starts}.log", "wb")
        env = {**os.environ, **self.env}
        env.setdefault("RUST_LOG", "info")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        log.close()
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.target} broker exited with {self.proc.returncode}; "
                                   f"see {self.data_dir}/process-{self.starts}.log")
            try:
                # Raw requests, not a client library: a client-specific bug must fail that client's
                # tests, not the whole session.
                if wire.api_versions_ok(self.bootstrap) and wire.metadata_broker_count(self.bootstrap) > 0:
                    return
            except Exception as e:  # not up yet
                last = e
            time.sleep(0.3)
        self.kill()
        raise RuntimeError(f"{self.target} broker not ready after {READY_TIMEOUT_S}s: {last}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()

    def restart(self) -> None:
        self.kill()
        self.start()

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")
