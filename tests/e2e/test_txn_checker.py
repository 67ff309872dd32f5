"""Transactions stay atomic while the broker is SIGKILLed and restarted on the same data dir
every few seconds (txn_checker.py): three transactional writers committing, aborting, and
crashing (transaction open, or commit in flight) at random over four partitions, a
read_committed reader all along, then a final read_committed read. No aborted read, no lost committed write, no torn transaction (committed or of unknown
outcome), no duplicate, in either history. Runs on ours and on the reference Kafka (whose JVM
takes longer to come back, so it is killed less often)."""

import signal
import threading
import time

from conftest import create_topic, unique_topic
from txn_checker import Reader, Txn, Writer, check, outcome_counts
from txn_support import read_to_end, use_transaction_version_1

RUN_S = 60
UP_BEFORE_KILL_S = {"ours": 5, "kafka": 6}
DOWN_S = 0.3
WRITERS, PARTITIONS = 3, 4
FINISH_S = 180  # writers end their last transaction, the reader reaches the end


def test_transactions_are_all_or_nothing_and_never_lost_across_broker_sigkills(broker_factory, target):
    broker = broker_factory()
    use_transaction_version_1(broker)
    topic = create_topic(broker.bootstrap, unique_topic("txn-checker"), PARTITIONS)
    stop, written = threading.Event(), threading.Event()
    writers = [Writer(broker.bootstrap, topic, PARTITIONS, i, stop) for i in range(WRITERS)]
    reader = Reader(broker.bootstrap, topic, PARTITIONS, written)
    for t in writers + [reader]:
        t.start()

    started, restarts_s = time.monotonic(), []
    while time.monotonic() - started + UP_BEFORE_KILL_S[target] < RUN_S:
        time.sleep(UP_BEFORE_KILL_S[target])
        broker.kill(signal.SIGKILL)
        killed = time.monotonic()
        time.sleep(DOWN_S)
        broker.start()
        restarts_s.append(round(time.monotonic() - killed, 1))
    time.sleep(max(0.0, RUN_S - (time.monotonic() - started)))
    stop.set()
    for t in writers:
        t.join(timeout=FINISH_S)
        assert not t.is_alive(), f"writer {t.index} still running {FINISH_S}s after the end"
    written.set()  # the reader now stops once it has read to the end of every partition
    reader.join(timeout=FINISH_S)
    assert not reader.is_alive(), f"the reader is not at the end {FINISH_S}s after the writers"
    assert [w.crashed for w in writers] == [None] * WRITERS

    txns = [t for w in writers for t in w.txns]
    final = [(p, o, v) for p, o, _, v in read_to_end(broker.bootstrap, topic, PARTITIONS, "read_committed")]
    counts = outcome_counts(txns, final)
    violations = {"final read": check(txns, final, complete=True),
                  "live reader": check(txns, reader.history, complete=True)}
    client_errors = sum(len(w.errors) for w in writers)
    print(f"kills={len(restarts_s)} down_s={restarts_s} {counts} values_read={len(final)} client_errors={client_errors} "
          f"violations={ {k: {kind: len(v) for kind, v in found.items()} for k, found in violations.items()} }")
    assert violations == {"final read": {}, "live reader": {}}, violations
    assert counts["committed"] >= 30 and counts["aborted"] >= 10, counts
    assert len(restarts_s) >= 3, restarts_s


def test_the_checker_finds_every_kind_of_violation():
    def txn(key, outcome, writes):
        t = Txn(key)
        t.outcome = outcome
        for partition, values in writes.items():
            t.writes[partition] = values
        return t

    txns = [txn("c", "committed", {0: ["c:0"], 1: ["c:1"]}), txn("a", "aborted", {0: ["a:0"]}),
            txn("u", "unknown", {0: ["u:0"], 1: ["u:1"]}), txn("d", "committed", {1: ["d:1"]})]
    clean = [(0, 0, "c:0"), (1, 0, "c:1"), (1, 1, "d:1")]
    assert check(txns, clean, complete=True) == {}
    assert check(txns, clean + [(0, 5, "u:0"), (1, 5, "u:1")], complete=True) == {}
    history = [(0, 0, "c:0"), (0, 1, "a:0"), (0, 2, "u:0"), (1, 3, "d:1"), (1, 2, "d:1")]
    assert check(txns, history, complete=True) == {
        "duplicates": ["d:1"], "aborted reads": ["a:0"], "offsets backwards": [(1, 2, "d:1")],
        "lost writes": ["c"], "torn transactions": ["u"]}
    assert "lost writes" not in check(txns, history, complete=False)
