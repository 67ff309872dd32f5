"""Fixtures: a broker per session (ours by default, Apache Kafka with E2E_TARGET=kafka), fresh
broker processes for crash tests, unique topic names and a reliable admin for setup."""

import os
import time
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from targets import BrokerProcess


def pytest_addoption(parser):
    parser.addoption("--target", default=os.environ.get("E2E_TARGET", "ours"), choices=["ours", "kafka"],
                     help="run against our broker (default) or the reference Apache Kafka")


@pytest.fixture(scope="session")
def target(pytestconfig) -> str:
    return pytestconfig.getoption("--target")


@pytest.fixture(scope="session")
def broker(target, tmp_path_factory):
    b = BrokerProcess(target, tmp_path_factory.mktemp(f"{target}-broker"))
    b.start()
    yield b
    b.stop()


@pytest.fixture
def broker_factory(target, tmp_path):
    started = []

    def make() -> BrokerProcess:
        b = BrokerProcess(target, tmp_path / f"broker-{len(started)}")
        started.append(b)
        b.start()
        return b

    yield make
    for b in started:
        b.stop()


def unique_topic(prefix: str) -> str:
    return f"e2e-{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, config=None) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                            config=config or {})], operation_timeout=10)
    futures[name].result(timeout=30)
    wait_for_leaders(bootstrap, name, partitions)
    return name


def consume_and_commit(bootstrap: str, topic: str, group: str, count: int, protocol: str = "classic") -> None:
    """Reads `count` records of `topic` as `group` (group.protocol `protocol`) and commits them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "group.protocol": protocol})
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 30
    while seen < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert seen == count


def wait_for_leaders(bootstrap: str, name: str, partitions: int, timeout_s: float = 20) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        t = admin.list_topics(topic=name, timeout=5).topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions \
                and all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name} has no leaders for {partitions} partitions after {timeout_s}s")


@pytest.fixture
def new_topic(broker, request):
    """new_topic(partitions=1, config=None) -> name of a freshly created, unique topic."""
    prefix = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:40]

    def make(partitions: int = 1, config=None) -> str:
        return create_topic(broker.bootstrap, unique_topic(prefix), partitions, config)

    return make
