"""The schema registry built into the broker (issue 24), driven by confluent-kafka's own Schema
Registry client and its Avro, Protobuf and JSON Schema serializers, and by curl: registration
and reads across two brokers of a cluster, evolution per compatibility level, references,
deletes, IMPORT mode, Basic authentication and ACLs over HTTPS, broker-side validation, and ids
that stay dense and unique across a SIGKILL. Apache Kafka has no registry: these tests run
against our broker only."""

import json
import subprocess
import time
import uuid

import pytest
from confluent_kafka import DeserializingConsumer, Producer, SerializingProducer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import StringDeserializer, StringSerializer

from clients_cli import BIN
from cluster import Cluster
from conftest import create_topic, unique_topic
from targets import BrokerProcess, free_port
from test_metrics import make_pki


@pytest.fixture(autouse=True)
def ours_only(target):
    if target != "ours":
        pytest.skip("Apache Kafka has no schema registry")


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory):
    port = free_port()
    b = BrokerProcess("ours", tmp_path_factory.mktemp("registry-broker"),
                      settings={"schema.registry.listen": f"127.0.0.1:{port}"})
    b.start()
    b.registry_url = f"http://127.0.0.1:{port}"
    yield b
    b.stop()


def subject() -> str:
    return f"s-{uuid.uuid4().hex[:10]}"


USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "e2e",
                      "fields": [{"name": "name", "type": "string"},
                                 {"name": "age", "type": "int"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "e2e",
                      "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                                 {"name": "email", "type": ["null", "string"], "default": None}]})
USER_BAD = json.dumps({"type": "record", "name": "User", "namespace": "e2e",
                       "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "string"}]})

JSON_SCHEMA = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
                          "type": "object",
                          "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                          "required": ["id", "item"]})


def protobuf_classes():
    """`common.proto` (Money) and `order.proto` (Order, importing common.proto), built at run
    time, as protoc would: the serializer registers common.proto as a reference of order.proto."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    pool = descriptor_pool.DescriptorPool()
    common = descriptor_pb2.FileDescriptorProto(name="common.proto", package="e2e", syntax="proto3")
    money = common.message_type.add(name="Money")
    money.field.add(name="units", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    money.field.add(name="currency", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    order = descriptor_pb2.FileDescriptorProto(name="order.proto", package="e2e", syntax="proto3",
                                               dependency=["common.proto"])
    message = order.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    message.field.add(name="price", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                      type_name=".e2e.Money", label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool.Add(common)
    pool.Add(order)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("e2e.Order"))


def produce(bootstrap, topic, serializer, values):
    producer = SerializingProducer({"bootstrap.servers": bootstrap, "key.serializer": StringSerializer(),
                                    "value.serializer": serializer})
    for i, value in enumerate(values):
        producer.produce(topic, key=str(i), value=value)
    assert producer.flush(30) == 0


def consume(bootstrap, topic, deserializer, count):
    consumer = DeserializingConsumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                                      "auto.offset.reset": "earliest",
                                      "key.deserializer": StringDeserializer(),
                                      "value.deserializer": deserializer})
    consumer.subscribe([topic])
    seen, deadline = [], time.monotonic() + 60
    while len(seen) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message.value())
    consumer.close()
    return seen


def test_all_three_serializers_register_on_one_broker_and_read_on_another(tmp_path):
    cluster = Cluster(tmp_path / "cluster", racks=("zone-a", "zone-b")).start()
    try:
        one, two = cluster.brokers
        writer = SchemaRegistryClient({"url": one.registry_url})
        reader = SchemaRegistryClient({"url": two.registry_url})
        bootstrap = cluster.bootstrap

        topic = create_topic(bootstrap, unique_topic("sr-avro"))
        users = [{"name": f"user-{i}", "age": i} for i in range(20)]
        produce(bootstrap, topic, AvroSerializer(writer, USER_V1), users)
        assert consume(bootstrap, topic, AvroDeserializer(reader), 20) == users

        topic = create_topic(bootstrap, unique_topic("sr-json"))
        orders = [{"id": i, "item": f"item-{i}"} for i in range(20)]
        produce(bootstrap, topic, JSONSerializer(JSON_SCHEMA, writer), orders)
        assert consume(bootstrap, topic, JSONDeserializer(None, schema_registry_client=reader), 20) == orders

        order_class = protobuf_classes()
        topic = create_topic(bootstrap, unique_topic("sr-proto"))
        messages = [order_class(id=i, price={"units": i * 100, "currency": "EUR"}) for i in range(20)]
        produce(bootstrap, topic, ProtobufSerializer(order_class, writer, {"use.deprecated.format": False}),
                messages)
        got = consume(bootstrap, topic,
                      ProtobufDeserializer(order_class, {"use.deprecated.format": False}), 20)
        assert [(m.id, m.price.units, m.price.currency) for m in got] == \
            [(i, i * 100, "EUR") for i in range(20)]
        # The import was registered as a reference, and the other broker sees both.
        latest = reader.get_latest_version(f"{topic}-value")
        assert latest.schema.schema_type == "PROTOBUF"
        assert [r.name for r in latest.schema.references] == ["common.proto"]
        assert "common.proto" in reader.get_subjects()

        # franz-go's pkg/sr: JSON Schema through its Serde into a validating topic.
        topic = create_topic(bootstrap, unique_topic("sr-franz"),
                             config={"confluent.value.schema.validation": "true"})
        out = subprocess.run([str(BIN / "franz"), "sr", "--bootstrap", bootstrap, "--topic", topic,
                              "--registry", one.registry_url, "--registry-read", two.registry_url,
                              "--count", "10", "--timeout-ms", "60000"],
                             capture_output=True, text=True, timeout=120)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["consumed"] == 10, result
        assert f"{topic}-value" in result["subjects"]
    finally:
        cluster.stop()


def test_evolution_is_accepted_or_refused_as_each_compatibility_level_says(registry_broker):
    client = SchemaRegistryClient({"url": registry_broker.registry_url})
    s = subject()
    first = client.register_schema(s, Schema(USER_V1, "AVRO"))
    assert client.register_schema(s, Schema(USER_V1, "AVRO")) == first, "idempotent"
    assert client.register_schema(s, Schema(USER_V2, "AVRO")) == first + 1
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(s, Schema(USER_BAD, "AVRO"))
    assert refused.value.http_status_code == 409
    assert client.test_compatibility(s, Schema(USER_BAD, "AVRO")) is False
    client.set_compatibility(s, "NONE")
    assert client.get_compatibility(s) == "NONE"
    client.register_schema(s, Schema(USER_BAD, "AVRO"))
    assert client.get_versions(s) == [1, 2, 3]
    # FULL_TRANSITIVE judges against every version: v2's optional email cannot be dropped.
    client.set_compatibility(s, "FULL_TRANSITIVE")
    assert client.test_compatibility(s, Schema(USER_V1, "AVRO")) is False
    lookup = client.lookup_schema(s, Schema(USER_V2, "AVRO"))
    assert (lookup.version, lookup.schema_id) == (2, first + 1)


def test_references_soft_and_permanent_deletes_answer_as_confluent_does(registry_broker):
    client = SchemaRegistryClient({"url": registry_broker.registry_url})
    address_subject, user_subject = subject(), subject()
    address = json.dumps({"type": "record", "name": "Address", "namespace": "e2e",
                          "fields": [{"name": "city", "type": "string"}]})
    client.register_schema(address_subject, Schema(address, "AVRO"))
    user = json.dumps({"type": "record", "name": "Person", "namespace": "e2e",
                       "fields": [{"name": "home", "type": "e2e.Address"}]})
    ref = SchemaReference("e2e.Address", address_subject, 1)
    user_id = client.register_schema(user_subject, Schema(user, "AVRO", [ref]))
    assert client.get_schema(user_id).references[0].subject == address_subject
    with pytest.raises(SchemaRegistryError) as referenced:
        client.delete_subject(address_subject)
    assert referenced.value.error_code == 42206
    assert client.delete_subject(user_subject) == [1]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_latest_version(user_subject)
    assert gone.value.error_code == 40401
    assert user_subject not in client.get_subjects()
    assert client.delete_subject(user_subject, permanent=True) == [1]
    with pytest.raises(SchemaRegistryError) as twice:
        client.delete_subject(user_subject, permanent=True)
    assert twice.value.error_code == 40401


def curl_json(method, url, body=None, user=None, ca=None):
    """(HTTP status, parsed body) of one call, by curl as in Confluent's docs."""
    args = ["curl", "-sS", "--max-time", "10", "-X", method, "-w", "\n%{http_code}",
            "-H", "Content-Type: application/vnd.schemaregistry.v1+json", url]
    if body is not None:
        args += ["--data", json.dumps(body)]
    if user:
        args += ["-u", user]
    if ca:
        args += ["--cacert", str(ca)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=30).stdout
    text, status = out.rsplit("\n", 1)
    return int(status), (json.loads(text) if text else None)


def test_import_mode_keeps_ids_and_readonly_refuses_writes(tmp_path):
    port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker",
                           settings={"schema.registry.listen": f"127.0.0.1:{port}"})
    broker.start()
    try:
        url = f"http://127.0.0.1:{port}"
        assert curl_json("GET", f"{url}/") == (200, {})
        assert curl_json("GET", f"{url}/schemas/types") == (200, ["JSON", "PROTOBUF", "AVRO"])
        assert curl_json("PUT", f"{url}/mode", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
        status, body = curl_json("POST", f"{url}/subjects/imported/versions",
                                 {"schema": USER_V1, "id": 100, "version": 3})
        assert (status, body) == (200, {"id": 100})
        assert curl_json("PUT", f"{url}/mode", {"mode": "READWRITE"})[0] == 200
        status, body = curl_json("GET", f"{url}/subjects/imported/versions/latest")
        assert (body["id"], body["version"]) == (100, 3)
        status, body = curl_json("POST", f"{url}/subjects/next/versions", {"schema": USER_V2})
        assert body == {"id": 101}, "new ids continue above imported ones"
        assert curl_json("PUT", f"{url}/mode/next", {"mode": "READONLY"})[0] == 200
        status, body = curl_json("POST", f"{url}/subjects/next/versions", {"schema": USER_BAD})
        assert (status, body["error_code"]) == (422, 42205)
        status, body = curl_json("PUT", f"{url}/mode", {"mode": "IMPORT"})
        assert (status, body["error_code"]) == (422, 42205), "import needs an empty registry"
    finally:
        broker.stop()


def test_registry_over_https_needs_a_broker_user_and_its_topic_acls(tmp_path):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType, ScramCredentialInfo,
                                       ScramMechanism, UserScramCredentialUpsertion)
    pki = tmp_path / "pki"
    pki.mkdir()
    make_pki(pki)
    port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker", settings={
        "schema.registry.listen": f"127.0.0.1:{port}", "schema.registry.tls": "true",
        "schema.registry.basic.auth": "true", "ssl.cert.file": pki / "server.pem",
        "ssl.key.file": pki / "server.key", "authorizer": "acl", "super.users": "User:ANONYMOUS"})
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        upsert = UserScramCredentialUpsertion("alice", info, b"alice-secret")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)
        url, ca = f"https://127.0.0.1:{port}", pki / "ca.pem"
        body = {"schema": USER_V1}
        assert curl_json("POST", f"{url}/subjects/orders-value/versions", body, ca=ca)[0] == 401
        assert curl_json("POST", f"{url}/subjects/orders-value/versions", body, "alice:wrong", ca)[0] == 401
        status, refused = curl_json("POST", f"{url}/subjects/orders-value/versions", body, "alice:alice-secret", ca)
        assert (status, refused["error_code"]) == (403, 403)
        acls = [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                           operation, AclPermissionType.ALLOW)
                for operation in (AclOperation.WRITE, AclOperation.READ)]
        for future in admin.create_acls(acls).values():
            future.result(timeout=30)
        client = SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:alice-secret",
                                       "ssl.ca.location": str(ca)})
        deadline = time.monotonic() + 20
        while True:
            try:
                schema_id = client.register_schema("orders-value", Schema(USER_V1, "AVRO"))
                break
            except SchemaRegistryError as error:
                assert error.http_status_code == 403 and time.monotonic() < deadline, error
                time.sleep(0.2)
        assert client.get_schema(schema_id).schema_str
        # Another topic's subject, and the global config, stay refused.
        with pytest.raises(SchemaRegistryError) as other:
            client.register_schema("payments-value", Schema(USER_V1, "AVRO"))
        assert other.value.http_status_code == 403
        with pytest.raises(SchemaRegistryError) as config:
            client.set_compatibility(level="NONE")
        assert config.value.http_status_code == 403
        assert client.get_subjects() == ["orders-value"]
    finally:
        broker.stop()


def test_a_validating_topic_refuses_records_without_a_registered_schema(registry_broker):
    client = SchemaRegistryClient({"url": registry_broker.registry_url})
    bootstrap = registry_broker.bootstrap
    topic = create_topic(bootstrap, unique_topic("sr-validate"),
                         config={"confluent.value.schema.validation": "true"})
    serializer = AvroSerializer(client, USER_V1)
    produce(bootstrap, topic, serializer, [{"name": "ok", "age": 1}])
    schema_id = client.get_latest_version(f"{topic}-value").schema_id

    def raw(value):
        errors = []
        producer = Producer({"bootstrap.servers": bootstrap, "retries": 0})
        producer.produce(topic, value=value, on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(30)
        return errors[0]

    assert raw(b"plain bytes").name() == "INVALID_RECORD"
    # A well-formed header with an id the subject does not hold.
    assert raw(b"\x00" + (schema_id + 1000).to_bytes(4, "big") + b"\x02").name() == "INVALID_RECORD"
    # The right id with a payload that does not decode (a string length past the end).
    assert raw(b"\x00" + schema_id.to_bytes(4, "big") + b"\x40ab").name() == "INVALID_RECORD"
    # Valid: "x" (length 1) and age 2.
    assert raw(b"\x00" + schema_id.to_bytes(4, "big") + b"\x02x\x04") is None
    values = consume(bootstrap, topic, AvroDeserializer(client), 2)
    assert values == [{"name": "ok", "age": 1}, {"name": "x", "age": 2}]


def test_ids_stay_dense_and_unique_across_a_sigkill_between_registrations(tmp_path):
    port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker",
                           settings={"schema.registry.listen": f"127.0.0.1:{port}"})
    broker.start()
    try:
        url = f"http://127.0.0.1:{port}"
        ids = []
        for round_ in range(3):
            client = SchemaRegistryClient({"url": url})
            client.set_compatibility(level="NONE")
            for i in range(5):
                fixed = json.dumps({"type": "fixed", "name": f"F{round_}x{i}", "size": i + 1})
                ids.append(client.register_schema(f"kill-{i}", Schema(fixed, "AVRO")))
            broker.kill()
            broker.start()
        assert ids == list(range(1, 16))
        client = SchemaRegistryClient({"url": url})
        assert [len(client.get_versions(f"kill-{i}")) for i in range(5)] == [3] * 5
    finally:
        broker.stop()
