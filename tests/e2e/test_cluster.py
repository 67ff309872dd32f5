"""Three stateless brokers over a real Oxia server and a moto S3 server (see cluster.py):
leaders by rendezvous hash, zone preference, non-leader produce refused, failover under
SIGKILL with producers and a consumer group running, and cross-broker visibility delay."""

import json
import os
import signal
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import wire
from cluster import Cluster, tools_available

NOT_LEADER_OR_FOLLOWER = 6


@pytest.fixture
def cluster(tmp_path):
    if not tools_available():
        if os.environ.get("CI"):
            pytest.fail("oxia or moto_server missing: run scripts/install-oxia.sh and scripts/install-s3.sh")
        pytest.skip("oxia or moto_server missing (scripts/install-oxia.sh, scripts/install-s3.sh)")
    c = Cluster(tmp_path / "cluster").start()
    yield c
    c.stop()

# Producers whose per-partition order (and exactly-once) the failover test checks: the
# idempotent ones (librdkafka producer 0 and the Java client, idempotent by default).
ORDERED_PRODUCERS = ("0", "j")


def make_topic(bootstrap: str, partitions: int) -> str:
    name = f"e2e-cluster-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(timeout=30)
    return name


def leaders(bootstrap: str, topic: str, client_id: str = "e2e-cluster") -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": client_id})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        t = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            return {p: meta.leader for p, meta in t.partitions.items()}
        time.sleep(0.2)
    raise AssertionError(f"no metadata for {topic}")


def test_every_broker_names_the_same_leaders_spread_over_all_brokers(cluster):
    topic = make_topic(cluster.bootstrap, 24)
    views = [leaders(b.bootstrap, topic) for b in cluster.brokers]
    assert views[0] == views[1] == views[2]
    assert set(views[0].values()) == {1, 2, 3}


def test_produce_to_a_non_leader_is_refused_with_not_leader(cluster):
    topic = make_topic(cluster.bootstrap, 1)
    leader = leaders(cluster.bootstrap, topic)[0]
    other = next(b for b in cluster.brokers if b.broker_id != leader)
    mine = next(b for b in cluster.brokers if b.broker_id == leader)
    for broker, expected in ((other, NOT_LEADER_OR_FOLLOWER), (mine, 0)):
        with wire.connect(broker.bootstrap) as sock:
            sock.sendall(wire.produce_request(topic, wire.record_batch(b"v"), 1))
            assert wire.produce_error_code(wire.read_frame(sock)) == expected


def test_clients_get_leaders_in_their_zone_and_any_broker_when_their_zone_has_none(cluster):
    topic = make_topic(cluster.bootstrap, 12)
    zone_a = {b.broker_id for b in cluster.brokers if b.rack == "zone-a"}
    zone_b = {b.broker_id for b in cluster.brokers if b.rack == "zone-b"}
    assert set(leaders(cluster.bootstrap, topic, "app,zone=zone-a").values()) == zone_a
    assert set(leaders(cluster.bootstrap, topic, "app,zone=zone-b").values()) == zone_b
    # The only zone-a broker stops (and deregisters at once): zone-a clients get zone-b leaders.
    only_a = next(b for b in cluster.brokers if b.rack == "zone-a")
    only_a.stop()
    survivors = [b for b in cluster.brokers if b is not only_a]
    cluster.wait_members(2, via=survivors[0])
    bootstrap = ",".join(b.bootstrap for b in survivors)
    assert set(leaders(bootstrap, topic, "app,zone=zone-a").values()) == zone_b
    only_a.start()
    cluster.wait_members(3)
    assert set(leaders(cluster.bootstrap, topic, "app,zone=zone-a").values()) == zone_a


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def test_records_acknowledged_by_one_broker_are_soon_fetched_from_another(cluster):
    topic = make_topic(cluster.bootstrap, 1)
    writer = set(leaders(cluster.bootstrap, topic, "w,zone=zone-a").values())
    reader = set(leaders(cluster.bootstrap, topic, "r,zone=zone-b").values())
    assert writer.isdisjoint(reader), "zones must put the writer and the reader on different brokers"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": "r,zone=zone-b",
                         "group.id": f"g-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "w,zone=zone-a",
                         "linger.ms": 0, "acks": "all"})
    acked_at, seen_at = {}, {}
    stop = threading.Event()

    def consume():
        while not stop.is_set():
            m = consumer.poll(0.05)
            if m is not None and m.error() is None:
                seen_at.setdefault(m.value().decode(), time.monotonic())

    reader_thread = threading.Thread(target=consume)
    reader_thread.start()
    try:
        count = 200
        for i in range(count):
            def on_ack(err, _msg, i=i):
                assert err is None, err
                acked_at[str(i)] = time.monotonic()
            producer.produce(topic, value=str(i).encode(), on_delivery=on_ack)
            producer.flush(10)
            time.sleep(0.02)
        deadline = time.monotonic() + 30
        while len(seen_at) < count and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        reader_thread.join()
        consumer.close()
    assert len(acked_at) == count and set(seen_at) == set(acked_at)
    delays_ms = [max(0.0, (seen_at[k] - acked_at[k]) * 1000) for k in acked_at]
    p50, p99 = percentile(delays_ms, 0.50), percentile(delays_ms, 0.99)
    print(f"cross-broker visibility delay: p50={p50:.0f}ms p99={p99:.0f}ms max={max(delays_ms):.0f}ms")
    with open(cluster.dir / "visibility.txt", "w") as out:
        out.write(f"p50_ms={p50:.0f} p99_ms={p99:.0f}\n")
    assert p99 < 2000


class JavaProducer:
    """The Java client (idempotence on, acks=all) producing `j:<i>` values fed over stdin as the
    test goes; it prints each record's partition and offset, in input order, once stdin closes."""

    def __init__(self, bootstrap: str, topic: str):
        from clients_cli import JavaDriver
        self.values = []
        self.proc = subprocess.Popen(
            JavaDriver.command + ["produce", "--bootstrap", bootstrap, "--topic", topic,
                                  "--idempotence", "true", "--acks", "all", "--timeout-ms", "120000"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def send(self, i: int) -> None:
        value = f"j:{i}"
        self.values.append(value)
        self.proc.stdin.write(json.dumps({"key": f"j-{i % 50}", "value": value}) + "\n")
        self.proc.stdin.flush()

    def finish(self) -> dict:
        """value -> (partition, offset) for every record, once all are acknowledged."""
        out, err = self.proc.communicate(timeout=180)
        assert self.proc.returncode == 0, f"java producer failed: {out[-2000:]} {err[-2000:]}"
        lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert len(lines) == len(self.values)
        return {v: (r["partition"], r["offset"]) for v, r in zip(self.values, lines)}


def compacted_ranges(cluster) -> dict:
    """partition -> [(base, end)] of the Parquet files in the object store (one topic per cluster)."""
    ranges = {}
    for key in cluster.compacted_keys():
        stream, name = key.split("/")[-2:]
        base, end = name.removesuffix(".parquet").split("-")
        ranges.setdefault(int(stream.rsplit("-", 1)[1]), []).append((int(base), int(end)))
    return ranges


def test_clients_fail_over_when_a_broker_is_killed_and_lose_no_acknowledged_record(cluster):
    assert cluster.compactor is not None, "the compactor binary is missing (cargo build -p compactor)"
    partitions = 6
    topic = make_topic(cluster.bootstrap, partitions)
    group = f"g-{uuid.uuid4().hex[:8]}"
    acked = {}  # value -> (partition, offset)
    errors = []
    stop_producing = threading.Event()

    def produce(producer_id: str):
        # librdkafka: producer 0 idempotent, producer 1 with its defaults (idempotence off) and
        # one request in flight. Without idempotence librdkafka sends to a partition's new leader
        # while a request to the old one is still out, and re-queues that one if it fails, so its
        # order across a leader change is not guaranteed (by Kafka either): only loss is checked.
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": f"p-{producer_id}",
                             "acks": "all", "linger.ms": 5, "max.in.flight.requests.per.connection": 1,
                             "enable.idempotence": producer_id in ORDERED_PRODUCERS,
                             "message.timeout.ms": 120000})
        def on_ack(err, msg):
            if err is None:
                acked[msg.value().decode()] = (msg.partition(), msg.offset())
            else:
                errors.append(err)
        i = 0
        while not stop_producing.is_set():
            producer.produce(topic, key=f"{producer_id}-{i % 50}".encode(),
                             value=f"{producer_id}:{i}".encode(), on_delivery=on_ack)
            producer.poll(0)
            i += 1
            time.sleep(0.005)
        producer.flush(120)

    java = JavaProducer(cluster.bootstrap, topic)

    def produce_java():
        i = 0
        while not stop_producing.is_set():
            java.send(i)
            i += 1
            time.sleep(0.005)

    consumed = {}  # partition -> [(offset, value)]
    stop_consuming = threading.Event()

    def consume(member: int):
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                             "client.id": f"c-{member}", "auto.offset.reset": "earliest",
                             "enable.auto.commit": True, "auto.commit.interval.ms": 500,
                             "session.timeout.ms": 10000})
        consumer.subscribe([topic])
        while not stop_consuming.is_set():
            m = consumer.poll(0.2)
            if m is None or m.error() is not None:
                continue
            consumed.setdefault(m.partition(), []).append((m.offset(), m.value().decode()))
        consumer.close()  # commits the final positions

    producers = [threading.Thread(target=produce, args=(str(n),)) for n in range(2)]
    producers.append(threading.Thread(target=produce_java))
    consumers = [threading.Thread(target=consume, args=(n,)) for n in range(2)]
    for t in producers + consumers:
        t.start()
    try:
        time.sleep(5)
        victim = cluster.brokers[1]
        victim.kill(signal.SIGKILL)
        # Offsets below these were written before the kill; the compactor must get past them.
        at_kill = {}
        for p, offset in list(acked.values()):
            at_kill[p] = max(at_kill.get(p, 0), offset + 1)
        time.sleep(15)  # past the 10 s session timeout: the others drop the victim
        victim.start()
        time.sleep(8)
    finally:
        stop_producing.set()
        for t in producers:
            t.join()
        acked.update(java.finish())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = {v for records in consumed.values() for _, v in records}
            if set(acked) <= seen:
                break
            time.sleep(0.5)
        stop_consuming.set()
        for t in consumers:
            t.join()
    assert not errors, errors[:5]
    assert len(acked) > 500
    assert any(v.startswith("j:") for v in acked)
    seen = {v for records in consumed.values() for _, v in records}
    missing = set(acked) - seen
    assert not missing, f"{len(missing)} acknowledged records never consumed, e.g. {sorted(missing)[:5]}"
    # Per partition, offsets map to one value each, and each idempotent producer's records come
    # in order, once each.
    ends = {}
    for partition, records in consumed.items():
        by_offset = {}
        for offset, value in records:
            assert by_offset.setdefault(offset, value) == value, f"offset {offset} changed value"
        last = {}
        for offset in sorted(by_offset):
            producer_id, n = by_offset[offset].split(":")
            if producer_id not in ORDERED_PRODUCERS:
                continue
            assert int(n) > last.get(producer_id, -1), \
                f"p{partition} out of order at {offset}: {producer_id}:{n} after {last.get(producer_id)}"
            last[producer_id] = int(n)
        for value, (p, offset) in acked.items():
            if p == partition:
                assert by_offset.get(offset) == value
        ends[partition] = max(by_offset) + 1
    # Committed offsets hold: the group's final commits are where its members stopped.
    check = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    committed = check.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    check.close()
    assert {tp.partition: tp.offset for tp in committed} == {p: ends.get(p, -1001) for p in range(partitions)}

    # The compactor kept working: it compacts what was written after the kill...
    assert cluster.compactor.poll() is None, "the compactor died"
    ends_acked = {}
    for p, offset in acked.values():
        ends_acked[p] = max(ends_acked.get(p, 0), offset + 1)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ranges = compacted_ranges(cluster)
        if all(max((e for _, e in ranges.get(p, [])), default=0) >= end for p, end in ends_acked.items()):
            break
        time.sleep(1)
    ranges = compacted_ranges(cluster)
    for p, end in ends_acked.items():
        compacted_end = max((e for _, e in ranges.get(p, [])), default=0)
        assert compacted_end >= end, f"p{p}: compacted up to {compacted_end} of {end} (kill at {at_kill.get(p)})"
        assert any(e > at_kill.get(p, 0) for _, e in ranges[p]), f"p{p}: nothing after the kill compacted"
    # ...reclaims the WAL objects nobody references any more...
    wal_before = cluster.wal_keys()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and wal_before <= cluster.wal_keys():
        time.sleep(1)
    wal_after = cluster.wal_keys()
    assert not wal_before <= wal_after, "no WAL object was reclaimed after compaction"
    print(f"failover: {len(acked)} acked ({sum(v.startswith('j:') for v in acked)} by java), "
          f"kill at {at_kill}, compacted {compacted_ranges(cluster)}, "
          f"wal objects {len(wal_before)} -> {len(wal_after)}")
    # ...and the compacted ranges read back as what was acknowledged.
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:8]}",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    read_back, next_offset, deadline = {}, {}, time.monotonic() + 60
    while any(next_offset.get(p, 0) < end for p, end in ends_acked.items()) and time.monotonic() < deadline:
        m = reader.poll(0.5)
        if m is not None and m.error() is None:
            read_back[(m.partition(), m.offset())] = m.value().decode()
            next_offset[m.partition()] = m.offset() + 1
    reader.close()
    wrong = [(v, where, read_back.get(where)) for v, where in acked.items() if read_back.get(where) != v]
    assert not wrong, f"{len(wrong)} acknowledged records read back wrong from compacted ranges: {wrong[:5]}"


def test_committed_offsets_hold_when_the_coordinator_is_killed(cluster):
    partitions = 3
    topic = make_topic(cluster.bootstrap, partitions)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    consumed, deadline = 0, time.monotonic() + 60
    while consumed < 30 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            consumed += 1
    assert consumed == 30
    consumer.commit(asynchronous=False)
    consumer.close()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    coordinator = admin.describe_consumer_groups([group])[group].result(timeout=30).coordinator.id
    victim = next(b for b in cluster.brokers if b.broker_id == coordinator)
    victim.kill(signal.SIGKILL)
    survivors = [b for b in cluster.brokers if b is not victim]
    cluster.wait_members(2, via=survivors[0])
    check = Consumer({"bootstrap.servers": ",".join(b.bootstrap for b in survivors), "group.id": group})
    committed = check.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    check.close()
    assert [tp.offset for tp in committed] == [10] * partitions


def compose_command():
    import shutil
    import subprocess
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return None


def test_docker_compose_file_is_valid_and_publishes_every_advertised_broker():
    import subprocess
    from targets import REPO
    command = compose_command()
    if command is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose missing: apt-get install -y docker-compose")
        pytest.skip("docker-compose missing (apt-get install -y docker-compose)")
    compose_file = str(REPO / "docker-compose.yml")
    subprocess.run(command + ["-f", compose_file, "config", "-q"], check=True)
    # `config` prints the resolved file (YAML; no parser is installed, so check lines).
    resolved = subprocess.run(command + ["-f", compose_file, "config"], check=True,
                              capture_output=True, text=True).stdout
    for service in ("minio", "oxia", "broker-1", "broker-2", "broker-3", "compactor"):
        assert f"\n  {service}:\n" in resolved, f"service {service} missing"
    for port in (9092, 9093, 9094):
        assert f"localhost:{port}" in resolved, f"no broker advertises localhost:{port}"
        assert f"published: {port}" in resolved or f"{port}:{port}" in resolved, f"port {port} not published"
