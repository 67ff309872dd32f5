"""The metrics and health listener (`--http-listen`): Prometheus text after real traffic,
/healthz, and /readyz following the MetaStore. Ours only: Kafka's metrics are JMX, not an HTTP
endpoint, so there is nothing of Kafka's to compare with."""

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from cluster import Cluster, tools_available
from conftest import consume_and_commit, create_topic, unique_topic
from targets import BrokerProcess, free_port

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.environ.get("E2E_TARGET", "ours") == "kafka",
                                reason="Kafka serves JMX, not a Prometheus endpoint")


def get(port: int, path: str):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except urllib.error.URLError as error:  # not listening (yet)
        return 0, str(error)


def sample(text: str, name: str, **labels) -> float:
    """The value of one series, 0 when absent."""
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = re.escape(name) + (r"\{" + re.escape(wanted) + r"\}" if labels else "") + r" (\S+)$"
    for line in text.splitlines():
        match = re.match(pattern, line)
        if match:
            return float(match.group(1))
    return 0.0


def test_metrics_after_a_produce_and_consume_name_the_topic_and_the_bytes_moved(tmp_path):
    http_port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker", settings={"http.listen": f"127.0.0.1:{http_port}"})
    broker.start()
    try:
        topic = create_topic(broker.bootstrap, unique_topic("metrics"), partitions=2)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(200):
            producer.produce(topic, key=str(i), value=b"x" * 1000)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_topic("g"),
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        received = 0
        deadline = time.monotonic() + 30
        while received < 200 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                received += 1
        consumer.close()
        assert received == 200

        status, text = get(http_port, "/metrics")
        assert status == 200
        assert sample(text, "kafka_server_broker_topic_messages_in_total", topic=topic) == 200
        bytes_in = sample(text, "kafka_server_broker_topic_bytes_in_total", topic=topic)
        assert bytes_in >= 200 * 1000
        assert sample(text, "kafka_server_broker_topic_bytes_out_total", topic=topic) >= bytes_in
        assert sample(text, "kafka_network_requests_total", request="Produce") >= 1
        assert sample(text, "kafka_network_request_errors_total", request="Produce", error="NONE") >= 2
        assert sample(text, "kafka_network_request_duration_seconds_count", request="Fetch") >= 1
        assert sample(text, "diskless_object_store_requests_total", operation="put") >= 1
        assert sample(text, "diskless_object_store_bytes_total", operation="put") >= bytes_in
        assert sample(text, "diskless_metastore_operation_duration_seconds_count", operation="put") >= 1
        assert sample(text, "diskless_produce_pending_bytes_limit") > 0
        # Every stage of a produce and a fetch was observed, and a produce's stages add up to
        # no more than the Produce requests took.
        for stage in ("queue", "put", "commit", "response"):
            assert sample(text, "diskless_produce_stage_duration_seconds_count", stage=stage) >= 1, stage
        staged = sum(sample(text, "diskless_produce_stage_duration_seconds_sum", stage=stage)
                     for stage in ("queue", "commit", "response"))
        assert 0 < staged <= sample(text, "kafka_network_request_duration_seconds_sum", request="Produce")
        for stage in ("wait", "read", "response"):
            assert sample(text, "diskless_fetch_stage_duration_seconds_count", stage=stage) >= 1, stage
        assert sample(text, "diskless_fetch_stage_duration_seconds_sum", stage="read") > 0
        # The consumer read what had just been written: from the write cache.
        assert sample(text, "diskless_cache_lookups_total", cache="write", result="hit") >= 1
        assert sample(text, "diskless_cache_bytes", cache="write") > 0
        assert "kafka_server_connections " in text
        assert 'kafka_server_listener_connections{listener="PLAINTEXT"}' in text
        assert text.rstrip().endswith("# EOF")
        documented = (REPO / "docs/metrics.md").read_text()
        for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
            shown = f"{name}_total" if kind == "counter" else name
            assert f"`{shown}`" in documented, f"{shown} is served but not in docs/metrics.md"
        assert get(http_port, "/healthz") == (200, "ok\n")
        assert get(http_port, "/readyz")[0] == 200
    finally:
        broker.stop()


def test_transactions_are_counted_by_outcome_with_their_markers(tmp_path):
    http_port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker", settings={"http.listen": f"127.0.0.1:{http_port}"})
    broker.start()
    try:
        topic = create_topic(broker.bootstrap, unique_topic("txn-metrics"), partitions=2)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": unique_topic("tx")})
        producer.init_transactions(30)
        for commit in (True, False, True):
            producer.begin_transaction()
            for partition in (0, 1):
                producer.produce(topic, value=b"v", partition=partition)
            producer.flush(30)
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
        status, text = get(http_port, "/metrics")
        assert status == 200
        assert sample(text, "diskless_transactions_completed_total", outcome="commit") == 2
        assert sample(text, "diskless_transactions_completed_total", outcome="abort") == 1
        assert sample(text, "diskless_transaction_markers_written_total", outcome="commit") == 4
        assert sample(text, "diskless_transaction_markers_written_total", outcome="abort") == 2
        assert sample(text, "diskless_transaction_completion_duration_seconds_count", outcome="commit") == 2
        assert sample(text, "diskless_transactions_timed_out_total") == 0
    finally:
        broker.stop()


def test_an_unknown_topic_request_is_counted_under_its_error_code(tmp_path):
    http_port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker",
                           settings={"http.listen": f"127.0.0.1:{http_port}", "auto.create.topics": "false"})
    broker.start()
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 3000,
                             "topic.metadata.refresh.interval.ms": 500})
        producer.produce("e2e-metrics-missing", value=b"x")
        producer.flush(10)
        _, text = get(http_port, "/metrics")
        assert sample(text, "kafka_network_request_errors_total", request="Metadata",
                      error="UNKNOWN_TOPIC_OR_PARTITION") >= 1
    finally:
        broker.stop()


@pytest.mark.skipif(not tools_available(), reason="needs the oxia binary and moto (scripts/install-test-deps.sh)")
def test_readyz_is_unready_while_the_metastore_is_stopped_and_ready_once_it_is_back(tmp_path):
    broker_http, compactor_http = free_port(), free_port()
    cluster = Cluster(tmp_path / "cluster", racks=("zone-a",),
                      broker_args=("--http-listen", f"127.0.0.1:{broker_http}"),
                      compactor_args=("--http-listen", f"127.0.0.1:{compactor_http}")).start()
    try:
        assert get(broker_http, "/readyz")[0] == 200
        deadline = time.monotonic() + 20
        while get(compactor_http, "/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert get(compactor_http, "/readyz")[0] == 200
        os.kill(cluster.oxia.pid, signal.SIGSTOP)
        try:
            status, body = get(broker_http, "/readyz")
            assert status == 503, body
            assert "metastore" in body
            assert get(compactor_http, "/readyz")[0] == 503
            assert get(broker_http, "/healthz")[0] == 200
        finally:
            os.kill(cluster.oxia.pid, signal.SIGCONT)
        deadline = time.monotonic() + 30
        while get(broker_http, "/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert get(broker_http, "/readyz")[0] == 200
        _, text = get(compactor_http, "/metrics")
        assert "diskless_compactor_files_written_total" in text
        assert "diskless_compactor_backlog_bytes " in text
        assert "diskless_metastore_operation_duration_seconds" in text
    finally:
        cluster.stop()


def test_json_logs_are_one_object_per_line_with_the_request_span(tmp_path):
    broker = BrokerProcess("ours", tmp_path / "broker", settings={"log.format": "json", "http.listen": "none"})
    broker.start()
    try:
        topic = create_topic(broker.bootstrap, unique_topic("jsonlog"))
    finally:
        broker.stop()
    lines = (tmp_path / "broker" / "process-1.log").read_text().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    created = [e for e in events if e["fields"].get("message") == "topic created" and e["fields"].get("topic") == topic]
    assert created, lines
    span = created[0]["span"]
    assert span["name"] == "request" and span["api"] == "CreateTopics"
    assert "principal" in span and "client_id" in span and "version" in span
    assert [s["name"] for s in created[0]["spans"]] == ["connection", "request"]
    assert created[0]["spans"][0]["listener"] == "PLAINTEXT"


def produce_to(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, partition=partition)
    assert producer.flush(30) == 0


def wait_for_sample(port: int, name: str, expected: float, **labels) -> str:
    deadline = time.monotonic() + 20
    while True:
        _, text = get(port, "/metrics")
        if sample(text, name, **labels) == expected or time.monotonic() > deadline:
            return text
        time.sleep(0.5)


def test_consumer_lag_is_exported_per_group_and_partition_up_to_the_series_cap(tmp_path):
    http_port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker", settings={
        "http.listen": f"127.0.0.1:{http_port}", "consumer.lag.interval.ms": 1000, "consumer.lag.max.series": 2})
    broker.start()
    try:
        b = broker.bootstrap
        one, two = create_topic(b, unique_topic("lag-one")), create_topic(b, unique_topic("lag-two"), partitions=2)
        # Groups are exported by id: "a-..." fills the cap before "b-...".
        first, second = unique_topic("a-lag"), unique_topic("b-lag")
        produce_to(b, one, 0, 10)
        consume_and_commit(b, one, first, 10)
        produce_to(b, one, 0, 7)
        produce_to(b, two, 0, 3)
        produce_to(b, two, 1, 4)
        consume_and_commit(b, two, second, 7)
        text = wait_for_sample(http_port, "kafka_consumergroup_lag", 7, consumergroup=first, topic=one, partition=0)
        assert sample(text, "kafka_consumergroup_lag", consumergroup=first, topic=one, partition=0) == 7, text
        text = wait_for_sample(http_port, "diskless_consumergroup_lag_groups_dropped", 1)
        exported = re.findall(rf'^kafka_consumergroup_lag\{{consumergroup="{second}",topic="{two}",partition="(\d)"\}} 0$',
                              text, re.M)
        assert len(exported) == 1, text
        assert sample(text, "diskless_consumergroup_lag_groups_dropped") == 1
    finally:
        broker.stop()


def test_consumer_lag_of_a_kip_848_consumer_group_is_exported(tmp_path):
    http_port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker", settings={
        "http.listen": f"127.0.0.1:{http_port}", "consumer.lag.interval.ms": 1000})
    broker.start()
    try:
        b = broker.bootstrap
        topic, group = create_topic(b, unique_topic("lag-848")), unique_topic("g848")
        produce_to(b, topic, 0, 6)
        consume_and_commit(b, topic, group, 6, protocol="consumer")
        produce_to(b, topic, 0, 4)
        text = wait_for_sample(http_port, "kafka_consumergroup_lag", 4, consumergroup=group, topic=topic, partition=0)
        assert sample(text, "kafka_consumergroup_lag", consumergroup=group, topic=topic, partition=0) == 4, text
    finally:
        broker.stop()


def test_consumer_lag_is_not_exported_when_switched_off(tmp_path):
    http_port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker", settings={
        "http.listen": f"127.0.0.1:{http_port}", "consumer.lag.metrics": "false"})
    broker.start()
    try:
        topic = create_topic(broker.bootstrap, unique_topic("lag-off"))
        produce_to(broker.bootstrap, topic, 0, 3)
        consume_and_commit(broker.bootstrap, topic, unique_topic("g"), 3)
        _, text = get(http_port, "/metrics")
        assert "kafka_consumergroup_lag" not in text
    finally:
        broker.stop()


def make_pki(directory: Path) -> None:
    """A CA and a certificate for 127.0.0.1 signed by it (openssl; nothing checked in)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=e2e metrics ca",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (directory / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", "server.pem", "-extfile", "server.ext")
    (directory / "server.key").chmod(0o600)


def curl(port: int, path: str, ca: Path, user: str = None, https: bool = True) -> str:
    """The HTTP status curl got (`000`: no HTTP answer)."""
    scheme = "https" if https else "http"
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
            "--cacert", str(ca), f"{scheme}://127.0.0.1:{port}{path}"]
    if user:
        args += ["-u", user]
    return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout.strip()


def test_metrics_over_https_need_a_scram_user_the_acls_allow_and_health_stays_open(tmp_path):
    """Issue 23 item 5, with curl as the scraper and a SCRAM credential made by confluent-kafka's
    AdminClient: 401 without or with wrong credentials, 403 until an ACL allows DESCRIBE on the
    cluster, 200 after; /healthz and /readyz open; plain HTTP gets no answer."""
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType, ScramCredentialInfo,
                                       ScramMechanism, UserScramCredentialUpsertion)
    pki = tmp_path / "pki"
    pki.mkdir()
    make_pki(pki)
    http_port = free_port()
    broker = BrokerProcess("ours", tmp_path / "broker", settings={
        "http.listen": f"127.0.0.1:{http_port}", "http.tls": "true", "http.basic.auth": "true",
        "ssl.cert.file": pki / "server.pem", "ssl.key.file": pki / "server.key",
        "authorizer": "acl", "super.users": "User:ANONYMOUS"})
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        upsert = UserScramCredentialUpsertion("scraper", info, b"scraper-secret")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)
        ca = pki / "ca.pem"
        assert curl(http_port, "/healthz", ca) == "200"
        assert curl(http_port, "/readyz", ca) == "200"
        assert curl(http_port, "/metrics", ca) == "401"
        assert curl(http_port, "/metrics", ca, "scraper:wrong") == "401"
        assert curl(http_port, "/metrics", ca, "scraper:scraper-secret") == "403"
        acl = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                         "User:scraper", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        for future in admin.create_acls([acl]).values():
            future.result(timeout=30)
        deadline = time.monotonic() + 20
        while curl(http_port, "/metrics", ca, "scraper:scraper-secret") != "200":
            assert time.monotonic() < deadline, "the acl never allowed the scrape"
            time.sleep(0.2)
        assert curl(http_port, "/metrics", ca, "scraper:scraper-secret", https=False) == "000"
    finally:
        broker.stop()
