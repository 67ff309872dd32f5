"""Java consumer group members (tests/clients/java, mode "group") as subprocesses, and a checker
that no partition is ever owned by two members at once, from the members' own callbacks."""

import json
import signal
import subprocess
import threading
import time

from clients_cli import JavaDriver


class Timeline:
    """Assignment events of every member, with the wall-clock ms the client printed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events = []  # (ts, member, kind, [(topic, partition)])
        self.seen = set()  # (partition, offset)
        self.records = []  # (member, partition, offset)

    def add(self, member, line):
        with self.lock:
            if line["event"] == "record":
                self.seen.add((line["partition"], line["offset"]))
                self.records.append((member, line["partition"], line["offset"]))
            elif line["event"] in ("assigned", "revoked", "lost"):
                parts = [tuple(p) for p in line["partitions"]]
                self.events.append((line["ts"], member, line["event"], parts))

    def owners(self):
        """partition -> member, as of the latest events."""
        return self._replay()[0]

    def violations(self):
        """Times a partition was assigned to a member while another still owned it."""
        return self._replay()[1]

    def _replay(self):
        with self.lock:
            # On equal ms a release sorts before an acquisition: they can only be that close
            # when the release came first.
            events = sorted(self.events, key=lambda e: (e[0], e[2] == "assigned"))
        owner, violations = {}, []
        for ts, member, kind, parts in events:
            for p in parts:
                if kind == "assigned":
                    if owner.get(p) not in (None, member):
                        violations.append((ts, p, owner[p], member))
                    owner[p] = member
                elif owner.get(p) == member:
                    del owner[p]
        return {p[1]: m for p, m in owner.items()}, violations


class JavaMember:
    """One Java consumer in its own JVM; leave() sends SIGTERM, so it commits and leaves."""

    def __init__(self, name, bootstrap, group, topic, timeline, protocol="consumer", assignor=None,
                 duration_ms=300_000, pattern=None):
        """`pattern` (a broker-side regex, consumer protocol) replaces `topic` when given."""
        self.name = name
        self.timeline = timeline
        self.lines = []
        subscription = ["--pattern", pattern] if pattern else ["--topic", topic]
        cmd = JavaDriver.command + ["group", "--bootstrap", bootstrap, "--group", group, *subscription,
                                    "--protocol", protocol, "--duration-ms", str(duration_ms)]
        if assignor:
            cmd += ["--assignor", assignor]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for raw in self.proc.stdout:
            if not raw.startswith("{"):
                continue
            line = json.loads(raw)
            self.lines.append(line)
            if "event" in line:
                self.timeline.add(self.name, line)

    def _read_stderr(self):
        for raw in self.proc.stderr:
            self.stderr.append(raw)
            del self.stderr[:-50]

    def errors(self):
        return [line for line in self.lines if "error" in line or line.get("event") == "commit-failed"]

    def leave(self, timeout_s=60):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"java member {self.name} did not close within {timeout_s}s")
        deadline = time.monotonic() + 5
        while not any(line.get("event") == "closed" for line in self.lines) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert any(line.get("event") == "closed" for line in self.lines), \
            f"{self.name} did not close cleanly: {self.lines[-3:]} {''.join(self.stderr)[-1000:]}"

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def describe_group(bootstrap, group):
    """The group as the Java Admin's describeConsumerGroups sees it."""
    from driver import run_lines
    return run_lines(JavaDriver.command + ["describe-group", "--bootstrap", bootstrap, "--group", group])[0]
