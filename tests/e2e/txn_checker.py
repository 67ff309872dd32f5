"""A transactional workload and its checker, in the spirit of Jepsen's Kafka tests.

Writers: several transactional librdkafka producers, each transaction writing unique values
("w<writer>:t<txn>:<partition>.<i>") to a few partitions, then ending at random in one of four
ways: a commit; an abort (flushed first, see docs/transactions-clients.md); a crash with the
transaction open (the producer is dropped; the next instance with the same transactional.id
fences it and must abort that transaction); a crash mid-commit (commit_transaction given a
millisecond, the producer dropped if that was not enough). Outcomes: "committed"
(commit_transaction returned), "aborted" (abort_transaction returned, or abandoned open),
"unknown" (a crash mid-commit, or the client gave up, e.g. the broker died during the commit:
either all visible or none). A read_committed consumer reads the topic all along.

`check` then finds, in any read_committed history (the live reader's, a final read):
- aborted reads: a value of an aborted transaction;
- lost writes: a value of a committed transaction missing from a history read to the end;
- torn transactions: a committed or unknown transaction partly visible (some of its values
  read, others not, in a history read to the end of every partition);
- duplicates: a value read twice; and offsets that go backwards within a partition."""

import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

API_TIMEOUT_S = 30
COMMIT_TRIES = 10
CRASH_RATIO = 0.05  # of transactions ended by a crash with the transaction open, and as many mid-commit


@dataclass
class Txn:
    key: str
    writes: dict = field(default_factory=lambda: defaultdict(list))  # partition -> values
    outcome: str = "open"


def writer_producer(bootstrap: str, transactional_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 2,
                  "transaction.timeout.ms": 15_000, "message.timeout.ms": 15_000,
                  "reconnect.backoff.max.ms": 500, "log_level": 0})
    p.init_transactions(API_TIMEOUT_S)
    return p


class Writer(threading.Thread):
    """One transactional.id writing transactions until `stop` is set."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, index: int, stop: threading.Event,
                 abort_ratio: float = 0.25):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions, self.index = bootstrap, topic, partitions, index
        self.stop, self.abort_ratio = stop, abort_ratio
        self.transactional_id = f"checker-{index}-{uuid.uuid4().hex[:6]}"
        self.txns = []
        self.errors = []
        self.crashed = None
        self.rng = random.Random(index)

    def run(self):
        try:
            self._loop()
        except Exception as e:  # the test fails on any: a writer must survive every broker restart
            self.crashed = f"{type(e).__name__}: {e}"

    def _loop(self):
        producer = None
        n = 0
        while not self.stop.is_set():
            if producer is None:
                producer = self._successor()
                continue
            txn = Txn(f"w{self.index}:t{n}")
            n += 1
            self.txns.append(txn)
            if not self._one(producer, txn):
                producer = None  # dropped: a new instance fences this one and ends its transaction
        while producer is None:  # the last one dropped: its transaction must still be ended
            producer = self._successor()

    def _successor(self):
        """A new instance for the transactional.id (None while the broker is down); its
        init_transactions ends whatever transaction the previous one left."""
        try:
            return writer_producer(self.bootstrap, self.transactional_id)
        except KafkaException as e:
            self.errors.append(str(e.args[0]))
            time.sleep(0.5)
            return None

    def _one(self, producer: Producer, txn: Txn) -> bool:
        """Runs one transaction; False when the producer must be replaced."""
        try:
            producer.begin_transaction()
            for partition in self.rng.sample(range(self.partitions), self.rng.randint(2, self.partitions)):
                for i in range(self.rng.randint(1, 5)):
                    value = f"{txn.key}:{partition}.{i}"
                    txn.writes[partition].append(value)
                    producer.produce(self.topic, value=value, partition=partition)
            ending = self.rng.random()
            if ending < self.abort_ratio:
                return self._abort(producer, txn)
            if ending < self.abort_ratio + CRASH_RATIO:
                return self._crash_open(producer, txn)
            if ending < self.abort_ratio + 2 * CRASH_RATIO:
                return self._crash_committing(producer, txn)
            return self._commit(producer, txn)
        except KafkaException as e:
            return self._failed(producer, txn, e.args[0])
        except BufferError as e:
            self.errors.append(f"buffer: {e}")
            return self._abort(producer, txn)

    def _commit(self, producer: Producer, txn: Txn) -> bool:
        for _ in range(COMMIT_TRIES):
            try:
                producer.commit_transaction(API_TIMEOUT_S)
                txn.outcome = "committed"
                return True
            except KafkaException as e:
                error = e.args[0]
                self.errors.append(f"commit {txn.key}: {error}")
                if not error.retriable():
                    return self._failed(producer, txn, error)
        txn.outcome = "unknown"
        return False

    def _crash_open(self, producer: Producer, txn: Txn) -> bool:
        """The application dies with its transaction open: the successor's init must abort it."""
        producer.flush(API_TIMEOUT_S)
        txn.outcome = "aborted"
        return False

    def _crash_committing(self, producer: Producer, txn: Txn) -> bool:
        """The application dies while its commit is in flight."""
        producer.flush(API_TIMEOUT_S)
        try:
            producer.commit_transaction(0.001)
            txn.outcome = "committed"
            return True
        except KafkaException:
            txn.outcome = "unknown"
            return False

    def _abort(self, producer: Producer, txn: Txn) -> bool:
        try:
            producer.flush(API_TIMEOUT_S)
            producer.abort_transaction(API_TIMEOUT_S)
            txn.outcome = "aborted"
            return True
        except KafkaException as e:
            self.errors.append(f"abort {txn.key}: {e.args[0]}")
            txn.outcome = "unknown"
            return False

    def _failed(self, producer: Producer, txn: Txn, error: KafkaError) -> bool:
        if error.txn_requires_abort():
            return self._abort(producer, txn)
        self.errors.append(f"{txn.key}: {error}")
        txn.outcome = "unknown"
        return False


class Reader(threading.Thread):
    """A read_committed consumer of every partition from offset 0, until `stop` is set and it has
    read to the end of every partition."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions, self.stop = bootstrap, topic, partitions, stop
        self.history = []  # (partition, offset, value)
        self.at_end = set()
        self.errors = []

    def run(self):
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"checker-{uuid.uuid4().hex[:6]}",
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "enable.partition.eof": True, "fetch.wait.max.ms": 100,
                      "reconnect.backoff.max.ms": 500, "log_level": 0})
        c.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        try:
            while not (self.stop.is_set() and len(self.at_end) == self.partitions):
                for m in c.consume(num_messages=500, timeout=0.5):
                    if m.error() is None:
                        self.at_end.discard(m.partition())
                        self.history.append((m.partition(), m.offset(), m.value().decode()))
                    elif m.error().code() == KafkaError._PARTITION_EOF:
                        self.at_end.add(m.partition())
                    else:
                        self.errors.append(str(m.error()))
        finally:
            c.close()


def check(txns: list, history: list, complete: bool) -> dict:
    """Violations of `history` (a read_committed reader's (partition, offset, value) list) against
    the transactions' outcomes; `complete`: the history reaches the end of every partition."""
    owner = {}
    for t in txns:
        for values in t.writes.values():
            for v in values:
                owner[v] = t
    seen = Counter(v for _, _, v in history)
    violations = defaultdict(list)
    violations["duplicates"] = [v for v, n in seen.items() if n > 1]
    violations["unknown values"] = [v for v in seen if v not in owner]
    violations["aborted reads"] = [v for v in seen if v in owner and owner[v].outcome == "aborted"]
    last = {}
    for partition, offset, value in history:
        if offset <= last.get(partition, -1):
            violations["offsets backwards"].append((partition, offset, value))
        last[partition] = offset
    if complete:
        for t in txns:
            values = [v for vs in t.writes.values() for v in vs]
            visible = [v for v in values if v in seen]
            if t.outcome == "committed" and len(visible) < len(values):
                violations["lost writes"].append(t.key)
            elif t.outcome in ("unknown", "open") and 0 < len(visible) < len(values):
                violations["torn transactions"].append(t.key)
    return {k: v for k, v in violations.items() if v}


def outcome_counts(txns: list, history: list) -> dict:
    """Transactions by outcome, and how many of the unknown ones turned out committed."""
    counts = Counter(t.outcome for t in txns)
    seen = {v for _, _, v in history}
    unknown = [t for t in txns if t.outcome in ("unknown", "open")]
    visible = sum(1 for t in unknown if any(v in seen for vs in t.writes.values() for v in vs))
    return {"committed": counts["committed"], "aborted": counts["aborted"], "unknown": len(unknown),
            "unknown_visible": visible}
