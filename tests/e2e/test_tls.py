"""TLS listeners: every client produces and consumes over SSL, and over mTLS with a principal
mapped from its certificate by ssl.principal.mapping.rules; Metadata on each listener names that
listener's port; a required client certificate refuses clients without one. The same tests run
against Apache Kafka configured the same way (PEM keystore and truststore properties).

The CA, server and client certificates are made here with openssl; nothing is checked in."""

import subprocess
import time
from pathlib import Path

import pytest

from clients_cli import FranzDriver, JavaDriver, KcatDriver, SaramaDriver
from clients_py import ConfluentDriver, KafkaPythonDriver
from conftest import create_topic, unique_topic
from driver import ClientError
from targets import BrokerProcess

LISTENERS = [("PLAINTEXT", "PLAINTEXT"), ("EXTERNAL", "SSL")]
# CN=alice,OU=eng,O=acme -> alice; any other subject keeps its full name.
RULES = "RULE:^CN=([^,]+),OU=eng,O=acme$/$1/L,DEFAULT"
CLIENTS = ["kcat", "confluent", "kafka-python", "java", "franz", "sarama"]


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def issue(pki: Path, name: str, subject: str, usage: str, extra: str = "") -> None:
    """A P-256 key (PKCS#8, mode 600) and a certificate for it signed by the test CA."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=pki)
    (pki / f"{name}.ext").write_text(f"extendedKeyUsage={usage}\n{extra}")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext", cwd=pki)
    (pki / f"{name}.key").chmod(0o600)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    pki = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=e2e test ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=pki)
    issue(pki, "server", "/CN=localhost", "serverAuth", "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for user in ("alice", "bob"):
        issue(pki, user, f"/O=acme/OU=eng/CN={user}", "clientAuth")
    return pki


def inline(path: Path) -> str:
    """A PEM file as one properties line (Java reads each \\n back as a newline)."""
    return path.read_text().strip().replace("\n", "\\n")


def tls_settings(target: str, pki: Path, client_auth: str) -> dict:
    """The broker's TLS settings; Kafka also gets an authorizer, so that its mapped principals
    show: only User:alice (and the PLAINTEXT side, User:ANONYMOUS) may do anything."""
    common = {"ssl.client.auth": client_auth, "ssl.principal.mapping.rules": RULES}
    if target == "kafka":
        return {**common,
                "ssl.keystore.type": "PEM",
                "ssl.keystore.certificate.chain": inline(pki / "server.pem"),
                "ssl.keystore.key": inline(pki / "server.key"),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.certificates": inline(pki / "ca.pem"),
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:ANONYMOUS;User:alice"}
    return {**common, "ssl.cert.file": pki / "server.pem", "ssl.key.file": pki / "server.key",
            "ssl.ca.file": pki / "ca.pem"}


def start_broker(target, pki, data_dir, client_auth) -> BrokerProcess:
    b = BrokerProcess(target, data_dir, tls_settings(target, pki, client_auth), LISTENERS,
                      env={"RUST_LOG": "info,broker::server=debug"})
    b.start()
    return b


@pytest.fixture(scope="module")
def tls_broker(target, pki, tmp_path_factory):
    b = start_broker(target, pki, tmp_path_factory.mktemp(f"{target}-tls"), "requested")
    yield b
    b.stop()


def driver(client: str, bootstrap: str, pki: Path, user):
    """`client` speaking TLS to `bootstrap`, presenting `user`'s certificate if given."""
    ca = str(pki / "ca.pem")
    cert, key = (str(pki / f"{user}.pem"), str(pki / f"{user}.key")) if user else (None, None)
    if client == "kcat":
        options = {"security.protocol": "ssl", "ssl.ca.location": ca}
        if user:
            options.update({"ssl.certificate.location": cert, "ssl.key.location": key})
        flags = [arg for k, v in options.items() for arg in ("-X", f"{k}={v}")]

        class TlsKcat(KcatDriver):
            def _base(self, *args):
                return super()._base(*flags, *args)
        return TlsKcat(bootstrap)
    if client == "confluent":
        security = {"security.protocol": "ssl", "ssl.ca.location": ca}
        if user:
            security.update({"ssl.certificate.location": cert, "ssl.key.location": key})
        return ConfluentDriver(bootstrap, security)
    if client == "kafka-python":
        security = {"security_protocol": "SSL", "ssl_cafile": ca}
        if user:
            security.update({"ssl_certfile": cert, "ssl_keyfile": key})
        return KafkaPythonDriver(bootstrap, security)
    if client == "java":
        properties = ["security.protocol=SSL", "ssl.truststore.type=PEM", f"ssl.truststore.location={ca}"]
        if user:
            properties += ["ssl.keystore.type=PEM",
                           f"ssl.keystore.certificate.chain={Path(cert).read_text()}",
                           f"ssl.keystore.key={Path(key).read_text()}"]
        flags = [arg for p in properties for arg in ("--property", p)]
        base = JavaDriver
    else:
        flags = ["--tls-ca", ca] + (["--tls-cert", cert, "--tls-key", key] if user else [])
        base = FranzDriver if client == "franz" else SaramaDriver

    class TlsProgram(base):
        def _cmd(self, mode, topic, **kw):
            return super()._cmd(mode, topic, **kw) + flags
    return TlsProgram(bootstrap)


def records(tag: str) -> list:
    return [{"partition": 0, "key": f"{tag}-k{i}", "value": f"{tag}-v{i}", "headers": [], "ts": None}
            for i in range(3)]


def round_trip(client, tls_broker, pki, user) -> None:
    topic = create_topic(tls_broker.bootstrap, unique_topic(f"tls-{client}"))
    d = driver(client, tls_broker.address("EXTERNAL"), pki, user)
    sent = records(user or "anon")
    d.produce(topic, sent)
    got = d.consume(topic, 0, "beginning", len(sent))
    assert [(r["offset"], r["key"], r["value"]) for r in got] == \
        [(i, r["key"], r["value"]) for i, r in enumerate(sent)]


@pytest.mark.parametrize("client", CLIENTS)
def test_produce_and_consume_over_tls(client, tls_broker, pki):
    round_trip(client, tls_broker, pki, None)


@pytest.mark.parametrize("client", CLIENTS)
def test_produce_and_consume_over_mtls_as_a_mapped_principal(client, tls_broker, pki):
    round_trip(client, tls_broker, pki, "alice")


def test_the_broker_sees_the_principal_the_rules_map_the_certificate_to(target, tls_broker, pki):
    topic = create_topic(tls_broker.bootstrap, unique_topic("tls-principal"))
    alice = driver("confluent", tls_broker.address("EXTERNAL"), pki, "alice")
    alice.produce(topic, records("alice"))
    bob = driver("confluent", tls_broker.address("EXTERNAL"), pki, "bob")
    if target == "kafka":
        # Only User:alice is a super user: bob's certificate maps to User:bob, who may not write.
        with pytest.raises(ClientError, match="TOPIC_AUTHORIZATION_FAILED"):
            bob.produce(topic, records("bob"))
        return
    # No authorizer yet: the broker's log names the principals.
    bob.produce(topic, records("bob"))
    log = "".join(p.read_text(errors="replace") for p in tls_broker.data_dir.glob("process-*.log"))
    assert "principal=User:alice" in log
    assert "principal=User:bob" in log
    assert "principal=User:CN=" not in log


def test_metadata_names_the_port_of_the_listener_asked(tls_broker, pki):
    from confluent_kafka.admin import AdminClient
    tls = driver("confluent", tls_broker.address("EXTERNAL"), pki, None)
    over_tls = tls.admin.list_topics(timeout=10).brokers
    over_plaintext = AdminClient({"bootstrap.servers": tls_broker.bootstrap}).list_topics(timeout=10).brokers
    assert [b.port for b in over_tls.values()] == [tls_broker.ports["EXTERNAL"]]
    assert [b.port for b in over_plaintext.values()] == [tls_broker.port]


def test_a_required_client_certificate_refuses_clients_without_one(target, pki, tmp_path):
    b = start_broker(target, pki, tmp_path / "required", "required")
    try:
        topic = create_topic(b.bootstrap, unique_topic("tls-required"))
        started = time.monotonic()
        anonymous = driver("kcat", b.address("EXTERNAL"), pki, None)
        with pytest.raises(ClientError):
            anonymous.produce(topic, records("anon")[:1])
        assert time.monotonic() - started < 60
        round_trip_on(b, pki, topic)
    finally:
        b.stop()


def round_trip_on(b, pki, topic) -> None:
    alice = driver("confluent", b.address("EXTERNAL"), pki, "alice")
    alice.produce(topic, records("alice"))
    assert len(alice.consume(topic, 0, "beginning", 3)) == 3
