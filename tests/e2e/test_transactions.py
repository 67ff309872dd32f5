"""Transactions through three clients, proven against the reference Kafka (E2E_TARGET=kafka) at
transaction.version 1, the classic protocol our broker speaks (txn_support.py):

- librdkafka (confluent-kafka): commits and aborts over several partitions, consume-transform-
  produce with send_offsets_to_transaction, a zombie fenced, and the abort quirk of
  docs/transactions-clients.md (a raw-request test pins down the coordinator rule behind it).
- the Java client (tests/clients/java, Transactions.java): consume-transform-produce with
  sendOffsetsToTransaction, every third transaction aborted; a zombie producer fenced.
- franz-go (tests/clients/franz, txn.go): a GroupTransactSession consume-transform-produce.

Everywhere: read_committed sees exactly the committed records and never an aborted one,
read_uncommitted sees both, and the group's committed offsets (OffsetFetch) move only with
committed transactions."""

import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka.protocol.producer.transaction import (AddPartitionsToTxnRequest, EndTxnRequest,
                                                 InitProducerIdRequest)

import pipeline
import wire
from clients_cli import FranzDriver, JavaDriver
from driver import run_lines
from txn_support import committed_offsets, read_to_end, use_transaction_version_1, values
from waiting import wait_until

PARTITIONS = 3
INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS = 48, 51
RETRIABLE_COORDINATOR = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


@pytest.fixture(scope="module", autouse=True)
def classic_transaction_protocol(broker):
    use_transaction_version_1(broker)


def txn_id(name: str) -> str:
    return f"txn-{name}-{uuid.uuid4().hex[:8]}"


def rdkafka_producer(bootstrap: str, transactional_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5})
    p.init_transactions(60)
    return p


def produce_spread(p: Producer, topic: str, vals: list) -> None:
    for i, v in enumerate(vals):
        p.produce(topic, key=f"k{i}", value=v, partition=i % PARTITIONS)


def assert_exactly(records: list, want: list, what: str) -> None:
    got = Counter(values(records))
    assert got == Counter(want), f"{what}: missing {sorted(set(want) - set(got))[:5]}, " \
        f"unexpected {sorted(set(got) - set(want))[:5]}, duplicated {[v for v, n in got.items() if n > 1][:5]}"


def test_librdkafka_read_committed_sees_committed_transactions_and_read_uncommitted_sees_all(broker, new_topic):
    topic = new_topic(PARTITIONS)
    p = rdkafka_producer(broker.bootstrap, txn_id("rdkafka"))
    committed, aborted = [], []
    for t in range(12):
        vals = [f"t{t}-r{i}" for i in range(30)]
        p.begin_transaction()
        produce_spread(p, topic, vals)
        if t % 3 == 1:
            assert p.flush(30) == 0
            p.abort_transaction(30)
            aborted += vals
        else:
            p.commit_transaction(30)
            committed += vals

    read = read_to_end(broker.bootstrap, topic, PARTITIONS, "read_committed")
    assert_exactly(read, committed, "read_committed")
    for partition in range(PARTITIONS):
        in_order = [v for p_, _, _, v in read if p_ == partition]
        assert in_order == [v for i, v in enumerate(committed) if i % 30 % PARTITIONS == partition]
    assert_exactly(read_to_end(broker.bootstrap, topic, PARTITIONS, "read_uncommitted"), committed + aborted,
                   "read_uncommitted")


def test_librdkafka_consume_transform_produce_moves_group_offsets_only_with_commits(broker, new_topic):
    source, sink = new_topic(PARTITIONS), new_topic(PARTITIONS)
    inputs = [f"in-{i}" for i in range(300)]
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    produce_spread(plain, source, inputs)
    assert plain.flush(30) == 0
    group = f"ctp-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([source])
    p = rdkafka_producer(broker.bootstrap, txn_id("rdkafka-ctp"))
    done, txns, last_committed, positions = 0, 0, {}, {}
    deadline = time.monotonic() + 90
    while done < len(inputs):
        assert time.monotonic() < deadline, f"only {done} of {len(inputs)} inputs committed"
        batch = [m for m in consumer.consume(num_messages=40, timeout=1) if m.error() is None]
        if not batch:
            continue
        p.begin_transaction()
        for m in batch:
            p.produce(sink, key=m.key(), value=b"out-" + m.value(), partition=m.partition())
            positions[m.partition()] = m.offset() + 1
        p.send_offsets_to_transaction([TopicPartition(source, k, v) for k, v in positions.items()],
                                      consumer.consumer_group_metadata(), 30)
        txns += 1
        if txns % 3 == 0:
            assert p.flush(30) == 0
            p.abort_transaction(30)
            # The aborted offsets must not have moved the group: re-read from what it committed.
            now = committed_offsets(broker.bootstrap, group, source, PARTITIONS)
            assert {k: v for k, v in now.items() if v >= 0} == last_committed, "an abort moved the group's offsets"
            positions = dict(last_committed)
            for tp in consumer.assignment():
                consumer.seek(TopicPartition(source, tp.partition, last_committed.get(tp.partition, 0)))
        else:
            p.commit_transaction(30)
            done += len(batch)
            last_committed = {k: v for k, v in committed_offsets(broker.bootstrap, group, source, PARTITIONS).items()
                              if v >= 0}
            assert last_committed == positions, "a commit did not move the group's offsets to the positions sent"
    consumer.close()
    assert txns >= 3, "no transaction was aborted"
    assert committed_offsets(broker.bootstrap, group, source, PARTITIONS) == \
        {i: len(inputs) // PARTITIONS for i in range(PARTITIONS)}
    assert_exactly(read_to_end(broker.bootstrap, sink, PARTITIONS, "read_committed"),
                   ["out-" + v for v in inputs], "read_committed output")
    everything = values(read_to_end(broker.bootstrap, sink, PARTITIONS, "read_uncommitted"))
    assert len(everything) > len(inputs), "read_uncommitted should also show the aborted transactions' records"


def test_librdkafka_zombie_is_fenced_and_its_open_transaction_never_becomes_visible(broker, new_topic):
    topic = new_topic(PARTITIONS)
    tid = txn_id("rdkafka-zombie")
    zombie = rdkafka_producer(broker.bootstrap, tid)
    zombie.begin_transaction()
    produce_spread(zombie, topic, [f"zombie-{i}" for i in range(9)])
    assert zombie.flush(30) == 0

    successor = rdkafka_producer(broker.bootstrap, tid)  # bumps the epoch, aborts the zombie's transaction
    successor.begin_transaction()
    produce_spread(successor, topic, [f"successor-{i}" for i in range(9)])
    successor.commit_transaction(30)

    with pytest.raises(KafkaException) as fenced:
        zombie.produce(topic, value="zombie-late", partition=0)
        zombie.commit_transaction(30)
    error = fenced.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error

    assert_exactly(read_to_end(broker.bootstrap, topic, PARTITIONS, "read_committed"),
                   [f"successor-{i}" for i in range(9)], "read_committed")
    assert_exactly(read_to_end(broker.bootstrap, topic, PARTITIONS, "read_uncommitted"),
                   [f"zombie-{i}" for i in range(9)] + [f"successor-{i}" for i in range(9)], "read_uncommitted")


def commit_then_abort(p: Producer, topic: str, flush: bool, tries: int = 60) -> tuple:
    """`tries` times: a committed transaction of one record, then one of five records aborted
    at once (after a flush if `flush`). Returns the committed values and the abort's error, if any
    (the producer is unusable after one)."""
    committed = []
    for t in range(tries):
        p.begin_transaction()
        p.produce(topic, value=f"c{t}", partition=t % PARTITIONS)
        p.commit_transaction(30)
        committed.append(f"c{t}")
        p.begin_transaction()
        produce_spread(p, topic, [f"a{t}-{i}" for i in range(5)])
        if flush:
            assert p.flush(30) == 0
        try:
            p.abort_transaction(30)
        except KafkaException as e:
            return committed, e.args[0]
    return committed, None


def test_librdkafka_abort_right_after_a_commit_after_a_flush_always_succeeds(broker, new_topic):
    topic = new_topic(PARTITIONS)
    committed, error = commit_then_abort(rdkafka_producer(broker.bootstrap, txn_id("rdkafka-flushed")), topic, True)
    assert error is None, error
    assert_exactly(read_to_end(broker.bootstrap, topic, PARTITIONS, "read_committed"), committed, "read_committed")


def test_librdkafka_abort_right_after_a_commit_without_a_flush_fails_as_on_kafka_or_passes(broker, new_topic):
    """The quirk of docs/transactions-clients.md: an abort with the new transaction's first
    AddPartitionsToTxn still unanswered, right after a commit whose markers are still being
    written. Kafka answers that AddPartitionsToTxn CONCURRENT_TRANSACTIONS, and the EndTxn(abort)
    behind it CONCURRENT_TRANSACTIONS then, once the markers are written, INVALID_TXN_STATE (the
    coordinator still holds the committed transaction), which librdkafka makes fatal. Whether the
    race is hit depends on the broker's timing, so either outcome is allowed; what may never
    happen: another error, or a record of an aborted transaction (or a lost committed one) in
    read_committed."""
    topic = new_topic(PARTITIONS)
    committed, fatal = commit_then_abort(rdkafka_producer(broker.bootstrap, txn_id("rdkafka-quirk")), topic, False,
                                         tries=150)
    if fatal is not None:
        assert fatal.fatal() and fatal.code() == KafkaError.INVALID_TXN_STATE, fatal
    print(f"unflushed abort after commit: {'INVALID_TXN_STATE after ' + str(len(committed)) if fatal else 'never failed'}")
    assert_exactly(read_to_end(broker.bootstrap, topic, PARTITIONS, "read_committed"), committed, "read_committed")


def until_coordinator_answers(sock, request):
    """Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its transaction log is loaded."""
    deadline = time.monotonic() + 60
    while True:
        [response] = pipeline.call(sock, [request])
        if response.error_code not in RETRIABLE_COORDINATOR or time.monotonic() > deadline:
            return response
        time.sleep(0.3)


def add_partition(tid: str, pid: int, epoch: int, topic: str):
    return AddPartitionsToTxnRequest[0](
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])])


def partition_error(response) -> int:
    [topic] = response.results_by_topic_v3_and_below
    [partition] = topic.results_by_partition
    return partition.partition_error_code


def end_txn(tid: str, pid: int, epoch: int, commit: bool):
    return EndTxnRequest[1](transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)


def test_end_txn_abort_after_a_commit_is_invalid_txn_state_until_a_partition_is_added(broker, new_topic):
    """The coordinator rule behind the quirk, at the versions librdkafka sends (InitProducerId v4,
    AddPartitionsToTxn v0, EndTxn v1): once a transaction is committed, an EndTxn(abort) with no
    AddPartitionsToTxn accepted since is INVALID_TXN_STATE, and a repeated EndTxn(commit) is a
    successful retry; once a partition is added again, the abort is accepted."""
    topic = new_topic(1)
    tid = txn_id("wire")
    with wire.connect(broker.bootstrap, timeout_s=30) as sock:
        init = until_coordinator_answers(sock, InitProducerIdRequest[4](
            transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
        assert init.error_code == 0, init
        pid, epoch = init.producer_id, init.producer_epoch
        [added] = pipeline.call(sock, [add_partition(tid, pid, epoch, topic)])
        assert partition_error(added) == 0, added
        [commit] = pipeline.call(sock, [end_txn(tid, pid, epoch, True)])
        assert commit.error_code == 0, commit

        def settled():  # the markers are written: a retried commit is answered without waiting
            [again] = pipeline.call(sock, [end_txn(tid, pid, epoch, True)])
            assert again.error_code in (0, CONCURRENT_TRANSACTIONS), again
            return again.error_code == 0
        wait_until(settled, 30, "the commit to complete")
        [abort] = pipeline.call(sock, [end_txn(tid, pid, epoch, False)])
        assert abort.error_code == INVALID_TXN_STATE, abort

        [added] = pipeline.call(sock, [add_partition(tid, pid, epoch, topic)])
        assert partition_error(added) == 0, added
        [abort] = pipeline.call(sock, [end_txn(tid, pid, epoch, False)])
        assert abort.error_code == 0, abort


def pipeline_input(bootstrap: str, topic: str, count: int = 300) -> list:
    inputs = [f"in-{i}" for i in range(count)]
    plain = Producer({"bootstrap.servers": bootstrap})
    produce_spread(plain, topic, inputs)
    assert plain.flush(30) == 0
    return inputs


def check_pipeline(bootstrap: str, source: str, sink: str, group: str, inputs: list, lines: list) -> None:
    """The lines a consume-transform-produce program printed per transaction: OffsetFetch right
    after each abort still answers the previous commit's offsets, right after each commit the
    offsets sent with it; the output holds every input transformed exactly once in read_committed,
    and the aborted transactions' records too in read_uncommitted."""
    txns = [line for line in lines if "txn" in line]
    outcomes = Counter(line["outcome"] for line in txns)
    assert outcomes["abort"] >= 1 and outcomes["commit"] >= 1, outcomes
    last = {}
    for line in txns:
        if line["outcome"] == "abort":
            assert line["committed"] == last, f"abort moved the group's offsets: {last} -> {line}"
        else:
            assert {p: line["committed"].get(p) for p in line["sent"]} == line["sent"], line
            last = line["committed"]
    per_partition = len(inputs) // PARTITIONS
    assert committed_offsets(bootstrap, group, source, PARTITIONS) == {p: per_partition for p in range(PARTITIONS)}
    assert_exactly(read_to_end(bootstrap, sink, PARTITIONS, "read_committed"), ["out-" + v for v in inputs],
                   "read_committed output")
    everything = values(read_to_end(bootstrap, sink, PARTITIONS, "read_uncommitted"))
    assert set(everything) == {"out-" + v for v in inputs} and len(everything) > len(inputs), \
        "read_uncommitted must show the aborted transactions' records besides the committed ones"


def test_java_consume_transform_produce_commits_offsets_with_the_output_and_aborts_leave_no_trace(broker, new_topic):
    source, sink = new_topic(PARTITIONS), new_topic(PARTITIONS)
    inputs = pipeline_input(broker.bootstrap, source)
    group = f"java-ctp-{uuid.uuid4().hex[:8]}"
    java = JavaDriver(broker.bootstrap)
    lines = run_lines(java._cmd("txn-ctp", source, output=sink, group=group, transactional_id=txn_id("java-ctp"),
                                count=len(inputs), abort_every=3), timeout_s=180)
    check_pipeline(broker.bootstrap, source, sink, group, inputs, lines)


def test_java_zombie_is_fenced_and_its_open_transaction_never_becomes_visible(broker, new_topic):
    topic = new_topic(PARTITIONS)
    java = JavaDriver(broker.bootstrap)
    [line] = run_lines(java._cmd("txn-fence", topic, transactional_id=txn_id("java-zombie"), count=9,
                                 partitions=PARTITIONS), timeout_s=180)
    # As on Kafka: the send is refused INVALID_PRODUCER_EPOCH (abortable, KIP-588), the commit
    # rethrows it, and the abort's EndTxn is answered PRODUCER_FENCED (fatal).
    assert line == {"send": "InvalidProducerEpochException", "commit": "InvalidProducerEpochException",
                    "abort": "ProducerFencedException"}, line
    assert_exactly(read_to_end(broker.bootstrap, topic, PARTITIONS, "read_committed"),
                   [f"successor-{i}" for i in range(9)], "read_committed")
    uncommitted = values(read_to_end(broker.bootstrap, topic, PARTITIONS, "read_uncommitted"))
    assert Counter(uncommitted) - Counter(["zombie-late"]) == \
        Counter([f"zombie-{i}" for i in range(9)] + [f"successor-{i}" for i in range(9)]), uncommitted


def test_franz_group_transact_session_commits_offsets_with_the_output_and_aborts_leave_no_trace(broker, new_topic):
    source, sink = new_topic(PARTITIONS), new_topic(PARTITIONS)
    inputs = pipeline_input(broker.bootstrap, source)
    group = f"franz-ctp-{uuid.uuid4().hex[:8]}"
    franz = FranzDriver(broker.bootstrap)
    lines = run_lines(franz._cmd("txn-ctp", source, output=sink, group=group, transactional_id=txn_id("franz-ctp"),
                                 count=len(inputs), abort_every=3, partitions=PARTITIONS, timeout_ms=120_000),
                      timeout_s=180)
    check_pipeline(broker.bootstrap, source, sink, group, inputs, lines)
