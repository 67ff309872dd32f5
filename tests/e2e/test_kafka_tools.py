"""Kafka's own command-line tools (the classes behind `kafka-topics.sh`, `kafka-consumer-groups.sh`,
`kafka-configs.sh`, `kafka-get-offsets.sh`, `kafka-delete-records.sh`, `kafka-log-dirs.sh`,
`kafka-broker-api-versions.sh`, `kafka-cluster.sh`), run from the Maven Central jars against
the broker; every assertion holds against the reference Kafka as well (E2E_TARGET=kafka)."""

import json
import re
import subprocess
import time
from pathlib import Path

from confluent_kafka import Producer

from conftest import consume_and_commit, unique_topic

REPO = Path(__file__).resolve().parents[2]


def run_tool(bootstrap: str, main: str, *args: str) -> tuple[int, str]:
    """The tool's exit code and output (stdout then stderr, without SLF4J's notices)."""
    cmd = ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{REPO}/tests/.work/kafka/libs/*", main,
           "--bootstrap-server", bootstrap, *args]
    if main == "org.apache.kafka.tools.ClusterTool":
        cmd = cmd[:5] + [args[0], "--bootstrap-server", bootstrap, *args[1:]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = "\n".join(line for line in (p.stdout + p.stderr).splitlines() if not line.startswith("SLF4J"))
    return p.returncode, out


def tool(bootstrap: str, main: str, *args: str) -> str:
    code, out = run_tool(bootstrap, main, *args)
    assert code == 0, f"{main} {args}: exit {code}\n{out}"
    return out


TOPICS = "org.apache.kafka.tools.TopicCommand"
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONFIGS = "kafka.admin.ConfigCommand"


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def test_topics_are_created_described_altered_and_deleted_with_kafka_topics(broker):
    b, topic = broker.bootstrap, unique_topic("tools-topics")
    assert f"Created topic {topic}." in tool(b, TOPICS, "--create", "--topic", topic, "--partitions", "3",
                                             "--replication-factor", "1")
    described = tool(b, TOPICS, "--describe", "--topic", topic)
    assert re.search(rf"Topic: {topic}\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 1", described), described
    assert len(re.findall(rf"\tTopic: {topic}\tPartition: \d\tLeader: \d+\tReplicas: \d+\tIsr: \d+", described)) == 3
    tool(b, TOPICS, "--alter", "--topic", topic, "--partitions", "5")
    assert "PartitionCount: 5" in tool(b, TOPICS, "--describe", "--topic", topic)
    assert topic in tool(b, TOPICS, "--list").splitlines()
    tool(b, TOPICS, "--delete", "--topic", topic)
    deadline = time.monotonic() + 20
    while topic in tool(b, TOPICS, "--list").splitlines() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert topic not in tool(b, TOPICS, "--list").splitlines()


def test_consumer_groups_are_listed_described_with_lag_reset_and_deleted(broker):
    b, topic, group = broker.bootstrap, unique_topic("tools-groups"), unique_topic("g")
    tool(b, TOPICS, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    produce(b, topic, 10)
    consume_and_commit(b, topic, group, 10)
    produce(b, topic, 5)
    assert group in tool(b, GROUPS, "--list").splitlines()
    described = tool(b, GROUPS, "--describe", "--group", group)
    assert re.search(rf"{group}\s+{topic}\s+0\s+10\s+15\s+5\s", described), described
    earliest = tool(b, GROUPS, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert re.search(rf"{group}\s+{topic}\s+0\s+0\s*$", earliest, re.M), earliest
    latest = tool(b, GROUPS, "--reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute")
    assert re.search(rf"{group}\s+{topic}\s+0\s+15\s*$", latest, re.M), latest
    dated = tool(b, GROUPS, "--reset-offsets", "--group", group, "--topic", topic,
                 "--to-datetime", "2020-01-01T00:00:00.000", "--execute")
    assert re.search(rf"{group}\s+{topic}\s+0\s+0\s*$", dated, re.M), dated
    assert f"Deletion of requested consumer groups ('{group}') was successful." in tool(b, GROUPS, "--delete", "--group", group)


def test_topic_and_broker_configs_are_described_and_altered_with_kafka_configs(broker):
    b, topic = broker.bootstrap, unique_topic("tools-configs")
    tool(b, TOPICS, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    altered = tool(b, CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--alter",
                   "--add-config", "retention.ms=3600000,cleanup.policy=delete")
    assert f"Completed updating config for topic {topic}." in altered
    described = tool(b, CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--describe")
    assert f"Dynamic configs for topic {topic} are:" in described
    assert "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000" in described
    everything = tool(b, CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--describe", "--all")
    assert re.search(r"segment.bytes=\d+ sensitive=false synonyms=\{DEFAULT_CONFIG:log.segment.bytes=", everything)
    tool(b, CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--alter", "--delete-config", "retention.ms")
    assert "retention.ms=3600000" not in tool(b, CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--describe")
    assert "Dynamic configs for broker 1 are:" in tool(b, CONFIGS, "--entity-type", "brokers", "--entity-name", "1",
                                                       "--describe")
    tool(b, CONFIGS, "--entity-type", "users", "--describe")


def test_offsets_are_read_and_records_deleted_with_get_offsets_and_delete_records(broker, tmp_path):
    b, topic = broker.bootstrap, unique_topic("tools-offsets")
    tool(b, TOPICS, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    produce(b, topic, 20, partition=0)
    latest = tool(b, "org.apache.kafka.tools.GetOffsetShell", "--topic", topic, "--time", "-1")
    assert sorted(line for line in latest.splitlines() if line.startswith(topic)) == [f"{topic}:0:20", f"{topic}:1:0"]
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 5}], "version": 1}))
    deleted = tool(b, "org.apache.kafka.tools.DeleteRecordsCommand", "--offset-json-file", str(plan))
    assert f"partition: {topic}-0\tlow_watermark: 5" in deleted, deleted
    earliest = tool(b, "org.apache.kafka.tools.GetOffsetShell", "--topic", topic, "--time", "-2")
    assert f"{topic}:0:5" in earliest.splitlines()


def test_log_dirs_api_versions_and_cluster_id_are_reported(broker):
    b, topic = broker.bootstrap, unique_topic("tools-logdirs")
    tool(b, TOPICS, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    produce(b, topic, 50, partition=0)
    out = tool(b, "org.apache.kafka.tools.LogDirsCommand", "--describe", "--topic-list", topic)
    assert "Querying brokers for log directories information" in out
    report = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    partitions = {p["partition"]: p for broker_dirs in report["brokers"] for d in broker_dirs["logDirs"]
                  for p in d["partitions"]}
    assert set(partitions) == {f"{topic}-0", f"{topic}-1"}
    assert partitions[f"{topic}-0"]["size"] > 50 * 2
    assert partitions[f"{topic}-1"]["size"] == 0
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in partitions.values())
    versions = tool(b, "org.apache.kafka.tools.BrokerApiVersionsCommand")
    assert re.search(r"\(id: 1 rack: .*\) -> \(", versions), versions
    assert re.search(r"Produce\(0\): \d+ to \d+ \[usable: \d+\]", versions)
    assert re.search(r"Cluster ID: \S+", tool(b, "org.apache.kafka.tools.ClusterTool", "cluster-id"))


def test_leader_election_and_reassignment_find_nothing_to_do(broker, tmp_path):
    b, topic = broker.bootstrap, unique_topic("tools-elect")
    tool(b, TOPICS, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    elected = tool(b, "org.apache.kafka.tools.LeaderElectionCommand", "--election-type", "preferred",
                   "--topic", topic, "--partition", "0")
    assert f"Valid replica already elected for partitions {topic}-0" in elected, elected
    tool(b, "org.apache.kafka.tools.LeaderElectionCommand", "--election-type", "preferred", "--all-topic-partitions")
    reassign = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
    assert "No partition reassignments found." in tool(b, reassign, "--list")
    described = tool(b, TOPICS, "--describe", "--topic", topic)
    leader = re.search(rf"\tTopic: {topic}\tPartition: 0\tLeader: (\d+)", described).group(1)
    plan = tmp_path / "reassign.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0,
                                                              "replicas": [int(leader)]}]}))
    done = tool(b, reassign, "--reassignment-json-file", str(plan), "--execute")
    assert f"Successfully started partition reassignment for {topic}-0" in done, done
    assert "No partition reassignments found." in tool(b, reassign, "--list")


def test_features_are_described_as_kafka_lists_them(broker, target):
    out = tool(broker.bootstrap, "org.apache.kafka.tools.FeatureCommand", "describe")
    features = dict(re.findall(r"^Feature: (\S+)\t(SupportedMinVersion: .*)$", out, re.M))
    assert re.fullmatch(r"SupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: \d+",
                        features["group.version"]), out
    # Kafka 4.1 supports KIP-890 part 2 (level 2) and finalizes it, unless a transactions test
    # on the same broker downgraded it to 1 (txn_support.use_transaction_version_1); ours stops
    # at 1, transactions without it.
    supported, finalized = ("1", "1") if target == "ours" else ("2", "[12]")
    assert re.fullmatch(rf"SupportedMinVersion: 0\tSupportedMaxVersion: {supported}\t"
                        rf"FinalizedVersionLevel: {finalized}\tEpoch: \d+", features["transaction.version"]), out


def test_topics_are_described_in_pages_with_describe_topic_partitions(broker):
    b, topic = broker.bootstrap, unique_topic("tools-paged")
    tool(b, TOPICS, "--create", "--topic", topic, "--partitions", "5", "--replication-factor", "1")
    # Through DescribeTopicPartitions: Elr and LastKnownElr are empty lists (Metadata gives N/A).
    described = tool(b, TOPICS, "--describe", "--topic", topic, "--partition-size-limit-per-response", "2")
    rows = re.findall(rf"^\tTopic: {topic}\tPartition: (\d)\tLeader: \d+\tReplicas: \d+\tIsr: \d+\tElr: \tLastKnownElr: $",
                      described, re.M)
    assert rows == ["0", "1", "2", "3", "4"], described
    everything = tool(b, TOPICS, "--describe", "--partition-size-limit-per-response", "3")
    assert len(re.findall(rf"^\tTopic: {topic}\tPartition: \d", everything, re.M)) == 5


def test_client_metrics_resources_are_listed_and_none_are_configured(broker):
    assert tool(broker.bootstrap, "org.apache.kafka.tools.ClientMetricsCommand", "--list").strip() == ""


def test_metadata_quorum_is_described_by_kraft_only(broker, target):
    code, out = run_tool(broker.bootstrap, "org.apache.kafka.tools.MetadataQuorumCommand", "describe", "--status")
    if target == "kafka":
        assert code == 0 and re.search(r"^ClusterId:\s+\S+", out, re.M), out
    else:
        # No controller quorum here: DescribeQuorum is not advertised, as a ZooKeeper-mode Kafka
        # did not advertise it, and the tool says so (docs/admin-tools.md).
        assert code != 0 and "The node does not support DESCRIBE_QUORUM" in out, out
