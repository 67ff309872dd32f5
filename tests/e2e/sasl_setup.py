"""What the SASL e2e tests share: a broker with SASL_SSL and SASL_PLAINTEXT listeners (SCRAM-SHA-512,
PLAIN, OAUTHBEARER) configured the same way on ours and on Kafka, SCRAM users made through the
Admin API, an RSA key, its JWKS and signed JWTs, each client's SASL settings, and a hand-written
SCRAM client over a raw socket (wire.py framing) for what no client library will send."""

import base64
import hashlib
import hmac
import json
import os
import socket
import ssl
import struct
import time
from pathlib import Path

from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

import wire
from clients_cli import FranzDriver, JavaDriver, KcatDriver, SaramaDriver
from clients_py import ConfluentDriver, KafkaPythonDriver
from targets import BrokerProcess
from test_tls import inline

LISTENERS = [("PLAINTEXT", "PLAINTEXT"), ("SASL_SSL", "SASL_SSL"), ("SASL_PLAINTEXT", "SASL_PLAINTEXT")]
USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
ISSUER, AUDIENCE = "https://e2e.example/issuer", "e2e-kafka"
MECHANISMS = "SCRAM-SHA-512,PLAIN,OAUTHBEARER"
SASL_AUTHENTICATION_FAILED = 58


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_oauth(directory: Path) -> dict:
    """An RSA key, its JWKS (jwks.json) and a JWT for User:alice signed with it (alice.jwt)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = key.public_key().public_numbers()
    jwks = {"keys": [{"kty": "RSA", "kid": "e2e", "use": "sig", "alg": "RS256",
                      "n": b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
                      "e": b64url(numbers.e.to_bytes(3, "big"))}]}
    (directory / "jwks.json").write_text(json.dumps(jwks))

    def sign(claims: dict) -> str:
        header = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "e2e"}).encode())
        body = b64url(json.dumps(claims).encode())
        signature = key.sign(f"{header}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{body}.{b64url(signature)}"

    now = int(time.time())
    token = sign({"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 3600})
    (directory / "alice.jwt").write_text(token)
    return {"jwks": directory / "jwks.json", "token": directory / "alice.jwt", "sign": sign}


def jaas_users() -> str:
    return " ".join(f'user_{u}="{p}"' for u, p in USERS.items())


def sasl_settings(target: str, pki: Path, oauth: dict, users_file: Path, extra: dict) -> dict:
    """The broker's TLS and SASL settings, by Kafka's names (ours: the flags of the same names)."""
    if target == "kafka":
        settings = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": inline(pki / "server.pem"),
            "ssl.keystore.key": inline(pki / "server.key"),
            "sasl.enabled.mechanisms": MECHANISMS,
            "sasl.oauthbearer.jwks.endpoint.url": oauth["jwks"].as_uri(),
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            # Kafka 4.1.1's default (DefaultJwtValidator, built without a key resolver) falls
            # back to ClientJwtValidator, which checks no signature: a token signed by any key
            # gets in. Naming the broker's validator makes it verify against the JWKS.
            "sasl.oauthbearer.jwt.validator.class":
                "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator",
        }
        for listener in ("sasl_ssl", "sasl_plaintext"):
            prefix = f"listener.name.{listener}"
            settings[f"{prefix}.scram-sha-512.sasl.jaas.config"] = \
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            settings[f"{prefix}.plain.sasl.jaas.config"] = \
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas_users()};"
            settings[f"{prefix}.oauthbearer.sasl.jaas.config"] = \
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
            settings[f"{prefix}.oauthbearer.sasl.server.callback.handler.class"] = \
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
        return {**settings, **extra}
    users_file.write_text("".join(f"{u}:{p}\n" for u, p in USERS.items()))
    users_file.chmod(0o600)
    return {"ssl.cert.file": pki / "server.pem", "ssl.key.file": pki / "server.key",
            "sasl.enabled.mechanisms": MECHANISMS,
            "sasl.plain.users.file": users_file,
            "sasl.oauthbearer.jwks.file": oauth["jwks"],
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            **extra}


def authorizer_settings(target: str, super_users: str) -> dict:
    if target == "kafka":
        return {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": super_users}
    return {"authorizer": "acl", "super.users": super_users}


def start_sasl_broker(target: str, pki: Path, oauth: dict, data_dir: Path, extra: dict = None) -> BrokerProcess:
    data_dir.mkdir(parents=True, exist_ok=True)
    settings = sasl_settings(target, pki, oauth, data_dir.parent / f"{data_dir.name}-users", extra or {})
    env = {"RUST_LOG": "info"}
    if target == "kafka":
        env["KAFKA_REFERENCE_JVM_OPTS"] = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={oauth['jwks'].as_uri()}"
    b = BrokerProcess(target, data_dir, settings, LISTENERS, env=env)
    b.start()
    add_scram_users(b)
    return b


def add_scram_users(b: BrokerProcess) -> None:
    """SCRAM-SHA-512 credentials for every user, through AlterUserScramCredentials on PLAINTEXT,
    then waits until alice can log in (Kafka applies them through its metadata log)."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    upserts = [UserScramCredentialUpsertion(u, info, p.encode()) for u, p in USERS.items()]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with wire.connect(b.address("SASL_PLAINTEXT")) as sock:
            if scram_login(sock, "alice", USERS["alice"])[0] == 0:
                return
        time.sleep(0.2)
    raise AssertionError("alice's SCRAM credential never took effect")


def scram_properties(user: str, password: str) -> list:
    return ["sasl.mechanism=SCRAM-SHA-512",
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";']


def sasl_driver(client: str, bootstrap: str, pki: Path, mechanism: str = "SCRAM-SHA-512",
                user: str = "alice", password: str = None, tls: bool = True):
    """`client` logging in to `bootstrap` with `mechanism` as `user` (over TLS unless `tls` is false)."""
    password = USERS.get(user, "x") if password is None else password
    ca = str(pki / "ca.pem")
    protocol = "SASL_SSL" if tls else "SASL_PLAINTEXT"
    if client in ("kcat", "confluent"):
        options = {"security.protocol": protocol.lower(), "sasl.mechanisms": mechanism,
                   "sasl.username": user, "sasl.password": password}
        if tls:
            options["ssl.ca.location"] = ca
        if client == "confluent":
            return ConfluentDriver(bootstrap, options)
        flags = [arg for k, v in options.items() for arg in ("-X", f"{k}={v}")]

        class SaslKcat(KcatDriver):
            def _base(self, *args):
                return super()._base(*flags, *args)
        return SaslKcat(bootstrap)
    if client == "kafka-python":
        security = {"security_protocol": protocol, "sasl_mechanism": mechanism,
                    "sasl_plain_username": user, "sasl_plain_password": password}
        if tls:
            security["ssl_cafile"] = ca
        return KafkaPythonDriver(bootstrap, security)
    if client == "java":
        assert mechanism == "SCRAM-SHA-512"
        properties = [f"security.protocol={protocol}"] + scram_properties(user, password)
        if tls:
            properties += ["ssl.truststore.type=PEM", f"ssl.truststore.location={ca}"]
        return java_driver(bootstrap, properties)
    flags = ["--sasl-mechanism", mechanism, "--sasl-user", user, "--sasl-password", password]
    if tls:
        flags += ["--tls-ca", ca]
    base = FranzDriver if client == "franz" else SaramaDriver

    class SaslProgram(base):
        def _cmd(self, mode, topic, **kw):
            return super()._cmd(mode, topic, **kw) + flags
    return SaslProgram(bootstrap)


def java_driver(bootstrap: str, properties: list, jvm_options: list = ()):
    flags = [arg for p in properties for arg in ("--property", p)]

    class SaslJava(JavaDriver):
        command = JavaDriver.command[:1] + list(jvm_options) + JavaDriver.command[1:]

        def _cmd(self, mode, topic, **kw):
            return super()._cmd(mode, topic, **kw) + flags
    return SaslJava(bootstrap)


def oauth_java_driver(bootstrap: str, pki: Path, token: Path):
    """The Java client with Kafka's own OAUTHBEARER login handler reading a signed JWT from a
    file (a `file:` token endpoint, Kafka's FileJwtRetriever)."""
    properties = ["security.protocol=SASL_SSL", "sasl.mechanism=OAUTHBEARER",
                  "sasl.login.callback.handler.class="
                  "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                  f"sasl.oauthbearer.token.endpoint.url={token.as_uri()}",
                  "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
                  "ssl.truststore.type=PEM", f"ssl.truststore.location={pki / 'ca.pem'}"]
    allowed = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={token.as_uri()}"
    return java_driver(bootstrap, properties, [allowed])


# --- a hand-written SASL client over a raw socket ---------------------------------------------

SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA = 17, 36, 3


def call(sock: socket.socket, api_key: int, version: int, body: bytes, correlation_id: int = 1):
    """One non-flexible request; the response body after the correlation id, or None if closed."""
    sock.sendall(wire.frame(wire.request_header(api_key, version, correlation_id) + body))
    response = wire.read_frame(sock)
    if response is None:
        return None
    (got,) = struct.unpack_from(">i", response, 0)
    assert got == correlation_id, f"correlation id {got}"
    return response[4:]


def handshake(sock: socket.socket, mechanism: str) -> int:
    response = call(sock, SASL_HANDSHAKE, 1, wire.string(mechanism))
    assert response is not None, "SaslHandshake not answered"
    return struct.unpack_from(">h", response, 0)[0]


def authenticate(sock: socket.socket, token: bytes):
    """SaslAuthenticate v1: (error code, error message, auth bytes), or None if closed."""
    response = call(sock, SASL_AUTHENTICATE, 1, struct.pack(">i", len(token)) + token)
    if response is None:
        return None
    error, message_len = struct.unpack_from(">hh", response, 0)
    at = 4
    message = None
    if message_len >= 0:
        message, at = response[at:at + message_len].decode(), at + message_len
    (auth_len,) = struct.unpack_from(">i", response, at)
    return error, message, response[at + 4:at + 4 + auth_len]


def scram_login(sock: socket.socket, user: str, password: str, tamper: bool = False):
    """SCRAM-SHA-512 (RFC 5802) by hand: (error code of the last step, its message). `tamper`
    flips a bit of the client proof, which must never get in."""
    if handshake(sock, "SCRAM-SHA-512") != 0:
        return -1, "handshake refused"
    nonce = b64url(os.urandom(18))
    client_first_bare = f"n={user},r={nonce}"
    answer = authenticate(sock, f"n,,{client_first_bare}".encode())
    if answer is None or answer[0] != 0:
        return (answer[0], answer[1]) if answer else (None, "closed")
    server_first = answer[2].decode()
    attrs = dict(field.split("=", 1) for field in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha512(client_key).digest(), auth_message, "sha512").digest()
    proof = bytearray(k ^ s for k, s in zip(client_key, signature))
    if tamper:
        proof[0] ^= 0x01
    final = f"{without_proof},p={base64.b64encode(bytes(proof)).decode()}".encode()
    answer = authenticate(sock, final)
    if answer is None:
        return None, "closed"
    if answer[0] == 0:
        server_key = hmac.new(salted, b"Server Key", "sha512").digest()
        expected = base64.b64encode(hmac.new(server_key, auth_message, "sha512").digest()).decode()
        assert answer[2].decode() == f"v={expected}", "the server signature does not verify"
    return answer[0], answer[1]


def closed(sock: socket.socket, within_s: float = 10) -> bool:
    """Whether the peer closes `sock` (without sending anything more) within `within_s`."""
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True
    except socket.timeout:
        return False


def tls_socket(address: str, pki: Path) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    return context.wrap_socket(wire.connect(address), server_hostname="localhost")
