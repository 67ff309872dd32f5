"""What every client driver offers the contract tests, and the subprocess plumbing they share.

Records are dicts: {"partition", "key", "value", "headers": [[k, v], ...], "ts"}; consumed records
also carry "offset". Keys, values and header values are str or None.
"""

import json
import subprocess
import threading
import time

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


class ClientError(Exception):
    """The client reported a failure (its message is the client's)."""


class ConsumeHandle:
    """A consumer running in the background; ready() once its start offset is fixed."""

    def __init__(self):
        self.records = []
        self.error = None
        self._ready = threading.Event()
        self._done = threading.Event()

    def mark_ready(self):
        self._ready.set()

    def finish(self, error=None):
        self.error = error
        self._ready.set()
        self._done.set()

    def wait_ready(self, timeout_s: float = 60) -> None:
        if not self._ready.wait(timeout_s):
            raise TimeoutError("consumer never became ready")
        if self.error:
            raise ClientError(self.error)

    def result(self, timeout_s: float = 60) -> list:
        if not self._done.wait(timeout_s):
            raise TimeoutError("consumer did not finish")
        if self.error:
            raise ClientError(self.error)
        return self.records


class Driver:
    name = "?"
    can_set_timestamp = True
    can_admin = True
    reports_offsets = True
    ts_after_last_is_end = False  # some clients map "no such record" (-1) to the end offset

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def produce(self, topic: str, records: list, codec: str = "none") -> list:
        """Produce in order; returns [(partition, offset)] per record (None if the client can't tell)."""
        raise NotImplementedError

    def consume_async(self, topic: str, partition: int, start, count: int, timeout_s: float = 20) -> ConsumeHandle:
        raise NotImplementedError

    def consume(self, topic: str, partition: int, start, count: int, timeout_s: float = 20) -> list:
        return self.consume_async(topic, partition, start, count, timeout_s).result(timeout_s + 60)

    def list_offsets(self, topic: str, partition: int, timestamps: list) -> list:
        """Offsets for ListOffsets timestamps (-2 earliest, -1 latest, or ms); -1 when none."""
        raise NotImplementedError

    def create_topic(self, topic: str, partitions: int, config: dict) -> None:
        raise NotImplementedError

    def describe_configs(self, topic: str) -> dict:
        raise NotImplementedError

    def create_partitions(self, topic: str, total: int) -> None:
        raise NotImplementedError

    def delete_topic(self, topic: str) -> None:
        raise NotImplementedError

    def partition_count(self, topic: str):
        """Number of partitions, or None when the broker says the topic does not exist."""
        raise NotImplementedError


def run_lines(cmd: list, stdin_text: str = "", timeout_s: float = 90) -> list:
    """Run a client program that prints JSON lines; raise ClientError on {"error"} or a bad exit."""
    p = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True, timeout=timeout_s)
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    errors = [line["error"] for line in lines if "error" in line]
    if errors or p.returncode != 0:
        raise ClientError(f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''}: {errors or p.stderr[-2000:]}")
    return lines


def spawn_consumer(cmd: list, ready_on_stderr=None, parse=json.loads) -> ConsumeHandle:
    """Start a consumer process; lines with "offset" are records, "position"/"ready" mark readiness."""
    h = ConsumeHandle()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr_tail = []

    def read_stderr():
        for line in p.stderr:
            stderr_tail.append(line)
            del stderr_tail[:-50]
            if ready_on_stderr and ready_on_stderr in line:
                h.mark_ready()

    def read_stdout():
        error = None
        for line in p.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            msg = parse(line)
            if "error" in msg:
                error = msg["error"]
            elif "offset" in msg:
                h.records.append(msg)
            elif "position" in msg or "ready" in msg:
                h.mark_ready()
        rc = p.wait()
        err_thread.join(timeout=5)
        if error is None and rc != 0:
            error = f"{cmd[0]} exited {rc}: {''.join(stderr_tail)[-2000:]}"
        h.finish(error)

    err_thread = threading.Thread(target=read_stderr, daemon=True)
    err_thread.start()
    threading.Thread(target=read_stdout, daemon=True).start()
    return h


def eventually(check, timeout_s: float = 15, interval_s: float = 0.3):
    """Retry check() until it returns a truthy value; return it, or the last value after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)
