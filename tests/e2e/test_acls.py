"""Authorization with Kafka's own ACL tool (`org.apache.kafka.tools.AclCommand`, what
`kafka-acls.sh` runs, from the Kafka 4.1 jars) and real clients (confluent-kafka).

Most tests use PLAINTEXT, where every connection is `User:ANONYMOUS`, so the broker runs with the ACL authorizer and `allow.everyone.if.no.acl.found=true`: the tool may administer
ACLs while no ACL names the cluster, and refusals come from DENY ACLs on `User:ANONYMOUS` or from
ACLs for someone else (a resource with ACLs is refused to everyone they do not allow). Ours runs
`--authorizer acl --allow-everyone-if-no-acl-found true`; the reference Kafka runs
`authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer` with the same
default. The SASL test authenticates User:alice and User:bob with SCRAM-SHA-512 over SASL_SSL
(a broker with the listeners of test_sasl.py, no allow-everyone, User:ANONYMOUS a super user so
that the PLAINTEXT side administers). Every test but the cluster one passes against both
(E2E_TARGET=kafka), with the same expected output.
"""

import os
import re
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

import wire
from cluster import Cluster, tools_available
from conftest import create_topic
from targets import REPO, BrokerProcess
from test_tls import pki  # noqa: F401 (a fixture: the SASL_SSL listener's certificates)

ANONYMOUS = "User:ANONYMOUS"
AUTHORIZER_SETTINGS = {
    "ours": {"authorizer": "acl", "allow.everyone.if.no.acl.found": "true"},
    "kafka": {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": "true"},
}
TOPIC_AUTHORIZATION_FAILED = 29
CREATE_ACLS = 30


@pytest.fixture(scope="module")
def secured(target, tmp_path_factory):
    """A broker with the ACL authorizer (one per module: the reference Kafka takes ~15 s to start)."""
    b = BrokerProcess(target, tmp_path_factory.mktemp(f"{target}-acl-broker"), AUTHORIZER_SETTINGS[target])
    b.start()
    yield b
    b.stop()


def kafka_acls(bootstrap: str, *args: str, check: bool = True) -> str:
    """Runs Kafka's ACL tool; returns what it printed (stdout and stderr, without log noise)."""
    cmd = ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{REPO}/tests/.work/kafka/libs/*",
           "org.apache.kafka.tools.AclCommand", "--bootstrap-server", bootstrap, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = "\n".join(line for line in (p.stdout + p.stderr).splitlines() if not line.startswith("SLF4J"))
    if check and (p.returncode != 0 or "Error while executing ACL command" in out):
        raise AssertionError(f"kafka-acls {' '.join(args)} failed:\n{out}")
    return out


RESOURCE = re.compile(r"ACLs for resource `ResourcePattern\(resourceType=(\w+), name=(.*), patternType=(\w+)\)`")
ENTRY = re.compile(r"\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)")


def parse(out: str) -> dict:
    """What the tool printed, as {(type, name, pattern): {(principal, host, operation, permission)}}:
    the order of resources and entries is a hash set's in Kafka's tool, so only sets compare."""
    acls, current = {}, None
    for line in out.splitlines():
        if m := RESOURCE.search(line):
            current = acls.setdefault(m.groups(), set())
        elif (m := ENTRY.search(line)) and current is not None:
            current.add(m.groups())
    return acls


def unique(prefix: str) -> str:
    return f"e2e-acl-{prefix}-{uuid.uuid4().hex[:8]}"


def produce_one(bootstrap: str, topic: str, security: dict = None) -> int:
    """Produces one record; returns the delivery's error code (0 when stored). `security`: the
    client's librdkafka security settings (SASL, TLS)."""
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 15000, "retries": 0,
                         **(security or {})})
    outcome = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(20)
    assert outcome, "no delivery report"
    return 0 if outcome[0] is None else outcome[0].code()


def test_kafka_acls_adds_lists_and_removes_acls_as_against_kafka(secured):
    topic, group, txn = unique("t"), unique("g"), unique("x")
    b = secured.bootstrap
    added = kafka_acls(b, "--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
                       "--operation", "Read", "--operation", "Write", "--topic", topic)
    assert parse(added) == {("TOPIC", topic, "LITERAL"): {
        ("User:alice", "*", "READ", "ALLOW"), ("User:alice", "*", "WRITE", "ALLOW"),
        ("User:bob", "*", "READ", "ALLOW"), ("User:bob", "*", "WRITE", "ALLOW")}}
    assert added.startswith(f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, "
                            "patternType=LITERAL)`: \n \t(principal=User:")
    kafka_acls(b, "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.9", "--operation", "All",
               "--resource-pattern-type", "prefixed", "--group", group)
    kafka_acls(b, "--add", "--allow-principal", "User:*", "--operation", "Describe", "--transactional-id", txn)
    # Creating an ACL that exists changes nothing.
    kafka_acls(b, "--add", "--allow-principal", "User:*", "--operation", "Describe", "--transactional-id", txn)

    listed = parse(kafka_acls(b, "--list"))
    assert listed[("GROUP", group, "PREFIXED")] == {("User:mallory", "10.0.0.9", "ALL", "DENY")}
    assert listed[("TRANSACTIONAL_ID", txn, "LITERAL")] == {("User:*", "*", "DESCRIBE", "ALLOW")}
    assert len(listed[("TOPIC", topic, "LITERAL")]) == 4
    assert parse(kafka_acls(b, "--list", "--topic", topic)) == {("TOPIC", topic, "LITERAL"): listed[("TOPIC", topic, "LITERAL")]}
    by_principal = parse(kafka_acls(b, "--list", "--principal", "User:bob"))
    assert by_principal == {("TOPIC", topic, "LITERAL"): {("User:bob", "*", "READ", "ALLOW"),
                                                          ("User:bob", "*", "WRITE", "ALLOW")}}
    # MATCH: the ACLs that apply to a group named <group>-1, i.e. the PREFIXED one.
    matching = parse(kafka_acls(b, "--list", "--resource-pattern-type", "match", "--group", f"{group}-1"))
    assert matching == {("GROUP", group, "PREFIXED"): {("User:mallory", "10.0.0.9", "ALL", "DENY")}}

    kafka_acls(b, "--remove", "--force", "--topic", topic, "--operation", "Write", "--allow-principal", "User:alice")
    assert parse(kafka_acls(b, "--list", "--topic", topic)) == {("TOPIC", topic, "LITERAL"): {
        ("User:alice", "*", "READ", "ALLOW"), ("User:bob", "*", "READ", "ALLOW"), ("User:bob", "*", "WRITE", "ALLOW")}}
    kafka_acls(b, "--remove", "--force", "--topic", topic)
    kafka_acls(b, "--remove", "--force", "--resource-pattern-type", "prefixed", "--group", group)
    kafka_acls(b, "--remove", "--force", "--transactional-id", txn)
    left = parse(kafka_acls(b, "--list"))
    assert not {k for k in left if topic in k[1] or group in k[1] or txn in k[1]}, left


def test_a_producer_without_write_gets_topic_authorization_failed(secured):
    topic = create_topic(secured.bootstrap, unique("deny-write"))
    assert produce_one(secured.bootstrap, topic) == 0
    kafka_acls(secured.bootstrap, "--add", "--deny-principal", ANONYMOUS, "--operation", "Write", "--topic", topic)
    try:
        assert produce_one(secured.bootstrap, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        kafka_acls(secured.bootstrap, "--remove", "--force", "--topic", topic)
    assert produce_one(secured.bootstrap, topic) == 0


def consume_error(bootstrap: str, topic: str, group: str, timeout_s: float = 30, security: dict = None):
    """Subscribes in `group` and reads from the start: None once a record arrives, else the error."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000, **(security or {})})
    consumer.subscribe([topic])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is None:
                return None
            if msg.error().code() != KafkaError._PARTITION_EOF:
                return msg.error().code()
        raise AssertionError("neither a record nor an error")
    finally:
        consumer.close()


def test_a_consumer_without_read_on_its_group_cannot_consume_in_it(secured):
    topic = create_topic(secured.bootstrap, unique("deny-group"))
    assert produce_one(secured.bootstrap, topic) == 0
    group = unique("group")
    kafka_acls(secured.bootstrap, "--add", "--deny-principal", ANONYMOUS, "--operation", "Read", "--group", group)
    try:
        assert consume_error(secured.bootstrap, topic, group) == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        kafka_acls(secured.bootstrap, "--remove", "--force", "--group", group)
    assert consume_error(secured.bootstrap, topic, group) is None


def test_a_prefixed_allow_and_a_literal_deny_combine_as_in_kafka(secured):
    b = secured.bootstrap
    prefix = unique("p") + "-"
    ok, blocked = create_topic(b, prefix + "ok"), create_topic(b, prefix + "blocked")
    assert produce_one(b, ok) == 0
    # An ACL for someone else gives the topics ACLs: no longer "no ACL found" for ANONYMOUS.
    kafka_acls(b, "--add", "--allow-principal", "User:alice", "--operation", "Write",
               "--resource-pattern-type", "prefixed", "--topic", prefix)
    try:
        assert produce_one(b, ok) == TOPIC_AUTHORIZATION_FAILED
        kafka_acls(b, "--add", "--allow-principal", ANONYMOUS, "--operation", "Write",
                   "--resource-pattern-type", "prefixed", "--topic", prefix)
        assert produce_one(b, ok) == 0
        assert produce_one(b, blocked) == 0
        kafka_acls(b, "--add", "--deny-principal", ANONYMOUS, "--operation", "Write", "--topic", blocked)
        assert produce_one(b, blocked) == TOPIC_AUTHORIZATION_FAILED
        assert produce_one(b, ok) == 0, "the literal DENY names one topic"
    finally:
        kafka_acls(b, "--remove", "--force", "--resource-pattern-type", "prefixed", "--topic", prefix)
        kafka_acls(b, "--remove", "--force", "--topic", blocked)


def test_metadata_leaves_out_topics_the_client_may_not_describe(secured):
    b = secured.bootstrap
    visible, hidden = create_topic(b, unique("visible")), create_topic(b, unique("hidden"))
    kafka_acls(b, "--add", "--deny-principal", ANONYMOUS, "--operation", "Describe", "--topic", hidden)
    try:
        listed = AdminClient({"bootstrap.servers": b}).list_topics(timeout=10).topics
        assert visible in listed and hidden not in listed
    finally:
        kafka_acls(b, "--remove", "--force", "--topic", hidden)
    assert hidden in AdminClient({"bootstrap.servers": b}).list_topics(timeout=10).topics


def test_listing_acls_needs_describe_on_the_cluster(secured):
    b = secured.bootstrap
    # ALLOW ALL first: once the cluster has ACLs, ANONYMOUS (also Kafka's own brokers and
    # controller on PLAINTEXT) may do on it only what they allow.
    kafka_acls(b, "--add", "--allow-principal", ANONYMOUS, "--operation", "All", "--cluster")
    try:
        kafka_acls(b, "--add", "--deny-principal", ANONYMOUS, "--operation", "Describe", "--cluster")
        refused = kafka_acls(b, "--list", check=False)
        assert "ClusterAuthorizationException" in refused, refused
        # DENY DESCRIBE does not deny ALTER: the DENY can be removed.
        kafka_acls(b, "--remove", "--force", "--deny-principal", ANONYMOUS, "--operation", "Describe", "--cluster")
        assert ("CLUSTER", "kafka-cluster", "LITERAL") in parse(kafka_acls(b, "--list"))
    finally:
        kafka_acls(b, "--remove", "--force", "--cluster", check=False)
    assert ("CLUSTER", "kafka-cluster", "LITERAL") not in parse(kafka_acls(b, "--list"))


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(broker):
    out = kafka_acls(broker.bootstrap, "--list", check=False)
    assert "SecurityDisabledException: No Authorizer is configured" in out, out
    out = kafka_acls(broker.bootstrap, "--add", "--allow-principal", "User:a", "--operation", "Read",
                     "--topic", "t", check=False)
    assert "SecurityDisabledException: No Authorizer is configured." in out, out


# The cluster: three of our brokers on Oxia and S3; an ACL created through one is enforced by
# another within a second.

def create_acls_v1(bootstrap: str, topic: str, principal: str, operation: int, permission: int) -> int:
    """A CreateAcls v1 with one LITERAL topic ACL, sent to this broker only; its error code."""
    creation = struct.pack(">b", 2) + wire.string(topic) + struct.pack(">b", 3) + wire.string(principal)
    creation += wire.string("*") + struct.pack(">bb", operation, permission)
    body = struct.pack(">i", 1) + creation
    with wire.connect(bootstrap) as s:
        s.sendall(wire.frame(wire.request_header(CREATE_ACLS, 1, 11) + body))
        resp = wire.read_frame(s)
    _correlation, _throttle, count, error = struct.unpack_from(">iiih", resp, 0)
    assert count == 1
    return error


def produce_error(bootstrap: str, topic: str) -> int:
    """A raw Produce to this broker: authorization comes before leadership, so a refusal shows
    whichever broker leads the partition (else 0 or NOT_LEADER_OR_FOLLOWER)."""
    with wire.connect(bootstrap) as s:
        s.sendall(wire.produce_request(topic, wire.record_batch(b"v"), 5))
        return wire.produce_error_code(wire.read_frame(s))


@pytest.fixture
def acl_cluster(target, tmp_path):
    if target != "ours":
        pytest.skip("our cluster only")
    if not tools_available():
        if os.environ.get("CI"):
            pytest.fail("oxia or moto_server missing: run scripts/install-oxia.sh and scripts/install-s3.sh")
        pytest.skip("oxia or moto_server missing (scripts/install-oxia.sh, scripts/install-s3.sh)")
    c = Cluster(tmp_path / "cluster", broker_args=("--authorizer", "acl", "--allow-everyone-if-no-acl-found", "true"))
    c.start()
    yield c
    c.stop()


def test_an_acl_made_on_one_broker_is_enforced_by_another_within_a_second(acl_cluster):
    a, b = acl_cluster.brokers[0], acl_cluster.brokers[1]
    topic = create_topic(acl_cluster.bootstrap, unique("cluster"))
    assert produce_error(b.bootstrap, topic) != TOPIC_AUTHORIZATION_FAILED
    write, deny = 4, 2
    assert create_acls_v1(a.bootstrap, topic, ANONYMOUS, write, deny) == 0
    made = time.monotonic()
    while produce_error(b.bootstrap, topic) != TOPIC_AUTHORIZATION_FAILED:
        assert time.monotonic() - made < 1.0, "broker B still lets ANONYMOUS write after 1 s"
        time.sleep(0.02)
    took = time.monotonic() - made
    # And the third broker, through Kafka's tool, lists it.
    listed = parse(kafka_acls(acl_cluster.brokers[2].bootstrap, "--list", "--topic", topic))
    assert listed == {("TOPIC", topic, "LITERAL"): {(ANONYMOUS, "*", "WRITE", "DENY")}}
    print(f"ACL made on broker {a.broker_id} enforced by broker {b.broker_id} after {took * 1000:.0f} ms")


@pytest.fixture(scope="module")
def sasl_secured(target, pki, tmp_path_factory):  # noqa: F811
    from sasl_setup import authorizer_settings, make_oauth, start_sasl_broker
    oauth = make_oauth(tmp_path_factory.mktemp("acl-oauth"))
    b = start_sasl_broker(target, pki, oauth, tmp_path_factory.mktemp("acl-sasl") / target,
                          authorizer_settings(target, ANONYMOUS))
    yield b
    b.stop()


def test_a_scram_principal_is_allowed_and_refused_as_its_acls_say(sasl_secured, pki):  # noqa: F811
    from sasl_setup import sasl_driver
    b = sasl_secured
    alice, bob = (sasl_driver("confluent", b.address("SASL_SSL"), pki, user=u).security for u in ("alice", "bob"))
    topic, group = create_topic(b.bootstrap, unique("sasl")), unique("sasl-group")
    sasl = b.address("SASL_SSL")
    # No ACL names alice: authenticated, she may do nothing.
    assert produce_one(sasl, topic, alice) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    kafka_acls(b.bootstrap, "--add", "--allow-principal", "User:alice", "--operation", "Write",
               "--operation", "Read", "--topic", topic)
    assert produce_one(sasl, topic, alice) == 0
    # The ACL is alice's, not the connection's: bob, on the same listener, is still refused.
    assert produce_one(sasl, topic, bob) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # READ on the topic but not on the group: she cannot consume in it.
    assert consume_error(sasl, topic, group, security=alice) == KafkaError.GROUP_AUTHORIZATION_FAILED
    kafka_acls(b.bootstrap, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", group)
    assert consume_error(sasl, topic, group, security=alice) is None
    assert consume_error(sasl, topic, group, security=bob) in (KafkaError.GROUP_AUTHORIZATION_FAILED,
                                                               KafkaError.TOPIC_AUTHORIZATION_FAILED)
