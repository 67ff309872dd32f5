"""SCRAM credentials through Kafka's own tool, `kafka-configs` (kafka.admin.ConfigCommand from
the 4.x jars): the same commands against ours and the reference Kafka (E2E_TARGET=kafka) must
print the same lines. The tool salts the password itself and sends AlterUserScramCredentials;
--describe asks DescribeClientQuotas, then DescribeUserScramCredentials."""

import subprocess
import uuid
from functools import lru_cache

from targets import REPO

TOOL_TIMEOUT_S = 120


@lru_cache(maxsize=1)
def classpath() -> str:
    out = subprocess.run([str(REPO / "scripts/kafka-reference.sh"), "classpath"], check=True,
                         capture_output=True, text=True, timeout=600)
    return out.stdout.strip().splitlines()[-1]


def kafka_configs(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    cmd = ["java", "-cp", classpath(), "kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)


def lines(result: subprocess.CompletedProcess) -> list:
    """What the tool printed, without JVM and log4j noise."""
    return [line for line in result.stdout.splitlines() if line.strip() and " WARN " not in line]


def user_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_kafka_configs_adds_describes_and_deletes_a_scram_credential(broker):
    user = user_name("alice")
    added = kafka_configs(broker.bootstrap, "--alter", "--add-config",
                          "SCRAM-SHA-512=[iterations=8192,password=alice-secret]",
                          "--entity-type", "users", "--entity-name", user)
    assert added.returncode == 0, added.stderr
    assert lines(added) == [f"Completed updating config for user {user}."]

    described = kafka_configs(broker.bootstrap, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.returncode == 0, described.stderr
    assert lines(described) == [
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-512=iterations=8192"]
    assert "alice-secret" not in described.stdout

    both = kafka_configs(broker.bootstrap, "--alter", "--add-config", "SCRAM-SHA-256=[password=other]",
                         "--entity-type", "users", "--entity-name", user)
    assert both.returncode == 0, both.stderr
    described = kafka_configs(broker.bootstrap, "--describe", "--entity-type", "users", "--entity-name", user)
    assert lines(described) == [
        f"SCRAM credential configs for user-principal '{user}' are "
        "SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192"]

    # One request may change a user once: both mechanisms at once are refused (by Kafka too).
    both = kafka_configs(broker.bootstrap, "--alter", "--delete-config", "SCRAM-SHA-512,SCRAM-SHA-256",
                         "--entity-type", "users", "--entity-name", user)
    assert both.returncode != 0
    assert "A user credential cannot be altered twice in the same request" in both.stdout + both.stderr
    for mechanism in ["SCRAM-SHA-512", "SCRAM-SHA-256"]:
        deleted = kafka_configs(broker.bootstrap, "--alter", "--delete-config", mechanism,
                                "--entity-type", "users", "--entity-name", user)
        assert deleted.returncode == 0, deleted.stderr
        assert lines(deleted) == [f"Completed updating config for user {user}."]
    described = kafka_configs(broker.bootstrap, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.returncode == 0, described.stderr
    assert lines(described) == []


def test_kafka_configs_reports_too_many_iterations_as_kafka_does(broker):
    user = user_name("carol")
    refused = kafka_configs(broker.bootstrap, "--alter", "--add-config",
                            "SCRAM-SHA-256=[iterations=100000,password=x]",
                            "--entity-type", "users", "--entity-name", user)
    assert refused.returncode != 0
    assert "UnacceptableCredentialException: Too many iterations" in refused.stdout + refused.stderr
    described = kafka_configs(broker.bootstrap, "--describe", "--entity-type", "users", "--entity-name", user)
    assert lines(described) == []
