"""A transactional producer never waits out its timeout: until this broker serves transactions,
`init_transactions` fails at once with the error Kafka gives a client it will not serve a
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal for the producer). Against
Apache Kafka the same calls succeed, just as quickly."""

import time

from confluent_kafka import KafkaError, KafkaException, Producer

from clients_cli import JavaDriver
from conftest import unique_topic
from driver import run_lines

# Far below the clients' own timeouts (60 s): a retrying client would still be waiting.
FAST_S = 15


def test_librdkafka_init_transactions_answers_at_once(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": unique_topic("txn-rdkafka")})
    started = time.monotonic()
    try:
        p.init_transactions(60)
        refused = None
    except KafkaException as e:
        refused = e.args[0]
    elapsed_s = time.monotonic() - started
    assert elapsed_s < FAST_S, f"init_transactions took {elapsed_s:.1f}s"
    if refused is not None:
        assert refused.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, refused
        assert refused.fatal(), refused


def test_java_init_transactions_answers_at_once(broker):
    java = JavaDriver(broker.bootstrap)
    [line] = run_lines(java._cmd("init-transactions", "unused",
                                 transactional_id=unique_topic("txn-java")), timeout_s=120)
    assert line["ms"] < FAST_S * 1000, line
    if not line["initialized"]:
        assert line["exception"] == "TransactionalIdAuthorizationException", line
