"""One connection's requests take effect in the order they were sent, as in Kafka (which stops
reading a connection until the current response is queued): a later request always sees, and
wins over, every earlier one, however many are pipelined."""

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.admin.groups import DeleteGroupsRequest
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreateTopicsRequest,
                                         DeleteRecordsRequest, DeleteTopicsRequest)
from kafka.protocol.consumer.group import (JoinGroupRequest, LeaveGroupRequest,
                                           OffsetCommitRequest, OffsetFetchRequest)
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest

import pipeline
import wire
from clients_cli import JavaDriver
from conftest import unique_topic
from driver import run_lines
from waiting import wait_until

COMMITS_PER_ROUND = 1000
ROUNDS = 100
TOPIC_RESOURCE = 2
OP_SET = 0
LATEST, EARLIEST = -1, -2

CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
CommitPartition = CommitTopic.OffsetCommitRequestPartition
FetchTopic = OffsetFetchRequest.OffsetFetchRequestTopic


def commit(group: str, topic: str, offset: int):
    return OffsetCommitRequest[2](
        group_id=group, generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1,
        topics=[CommitTopic(name=topic, partitions=[
            CommitPartition(partition_index=0, committed_offset=offset, committed_metadata="")])])


def fetch_committed(group: str, topic: str):
    return OffsetFetchRequest[1](group_id=group, topics=[FetchTopic(name=topic, partition_indexes=[0])])


def committed_of(response) -> int:
    [partition] = response.topics[0].partitions
    assert partition.error_code == 0, partition
    return partition.committed_offset


def metadata(topic: str):
    return MetadataRequest[4](topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                              allow_auto_topic_creation=False)


def create_topic(topic: str, partitions: int = 1):
    return CreateTopicsRequest[4](topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=10_000, validate_only=False)


def produce(topic: str, value: bytes):
    topic_data = ProduceRequest.TopicProduceData(name=topic, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=wire.record_batch(value))])
    return ProduceRequest[8](transactional_id=None, acks=-1, timeout_ms=10_000, topic_data=[topic_data])


def list_offset(topic: str, timestamp: int):
    partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=0, timestamp=timestamp)
    return ListOffsetsRequest[2](replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])])


def offset_of(response) -> int:
    [partition] = response.topics[0].partitions
    assert partition.error_code == 0, partition
    return partition.offset


def wait_for_coordinator(bootstrap: str, group: str) -> None:
    """Kafka answers COORDINATOR_NOT_AVAILABLE until its offsets topic is loaded."""
    def ready():
        response = pipeline.call_one(bootstrap, FindCoordinatorRequest[1](key=group, key_type=0))
        return response.error_code == 0
    wait_until(ready, 60, "the group coordinator")


def ready_topic(bootstrap: str, topic: str, partitions: int = 1) -> str:
    with wire.connect(bootstrap, timeout_s=30) as sock:
        [created] = pipeline.call(sock, [create_topic(topic, partitions)])
    assert created.topics[0].error_code == 0, created
    wait_until(lambda: pipeline.call_one(bootstrap, metadata(topic)).topics[0].error_code == 0, 30,
               "the topic's metadata")
    return topic


def test_a_thousand_pipelined_offset_commits_leave_the_last_one_committed_every_time(broker):
    topic = ready_topic(broker.bootstrap, unique_topic("order-commits"))
    group = unique_topic("order-commits-group")
    wait_for_coordinator(broker.bootstrap, group)
    with wire.connect(broker.bootstrap, timeout_s=60) as sock:
        for round_ in range(ROUNDS):
            first = round_ * COMMITS_PER_ROUND + 1
            offsets = range(first, first + COMMITS_PER_ROUND)
            requests = [commit(group, topic, o) for o in offsets] + [fetch_committed(group, topic)]
            responses = pipeline.call(sock, requests)
            errors = {p.error_code for r in responses[:-1] for p in r.topics[0].partitions}
            assert errors == {0}, f"round {round_}: {errors}"
            # The fetch pipelined behind the commits sees the last of them...
            assert committed_of(responses[-1]) == offsets[-1], f"round {round_}"
    # ...and so does a fresh connection afterwards.
    last = ROUNDS * COMMITS_PER_ROUND
    assert committed_of(pipeline.call_one(broker.bootstrap, fetch_committed(group, topic))) == last


def test_librdkafka_async_commits_one_per_message_end_at_the_last_offset(broker, new_topic):
    topic = new_topic()
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(50):
        p.produce(topic, value=f"m{i}".encode())
    assert p.flush(30) == 0
    group = unique_topic("order-async-rdkafka")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        seen, deadline = 0, time.monotonic() + 60
        while seen < 50 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            c.commit(offsets=[TopicPartition(topic, 0, m.offset() + 1)], asynchronous=True)
            seen += 1
        assert seen == 50
        # A synchronous commit of nothing new waits for the outstanding async ones.
        wait_until(lambda: c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 50, 30,
                   "the last async commit to be the committed offset")
        # Nothing late overwrites it.
        time.sleep(1)
        assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 50
    finally:
        c.close()


def test_java_commit_async_one_per_record_ends_at_the_last_offset(broker, new_topic):
    topic = new_topic()
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(50):
        p.produce(topic, value=f"m{i}".encode())
    assert p.flush(30) == 0
    java = JavaDriver(broker.bootstrap)
    group = unique_topic("order-async-java")
    [line] = run_lines(java._cmd("commit-async", topic, group=group, count=50))
    assert line == {"consumed": 50, "callbacks": 50, "committed": 50}


def test_admin_changes_are_seen_by_the_requests_pipelined_behind_them(broker):
    topic = unique_topic("order-admin")
    group = unique_topic("order-admin-group")
    with wire.connect(broker.bootstrap, timeout_s=60) as sock:
        created, described, produced = pipeline.call(sock, [
            create_topic(topic, 1), metadata(topic), produce(topic, b"first")])
        assert created.topics[0].error_code == 0, created
        assert described.topics[0].error_code == 0 and len(described.topics[0].partitions) == 1
        assert produced.responses[0].partition_responses[0].error_code == 0, produced

        grow = CreatePartitionsRequest[1](topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name=topic, count=3, assignments=None)], timeout_ms=10_000, validate_only=False)
        grown, described = pipeline.call(sock, [grow, metadata(topic)])
        assert grown.results[0].error_code == 0, grown
        assert len(described.topics[0].partitions) == 3

        more = [produce(topic, f"v{i}".encode()) for i in range(5)]
        responses = pipeline.call(sock, more + [list_offset(topic, LATEST)])
        assert offset_of(responses[-1]) == 6

        delete = DeleteRecordsRequest[1](topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name=topic, partitions=[DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
                partition_index=0, offset=4)])], timeout_ms=10_000)
        deleted, earliest = pipeline.call(sock, [delete, list_offset(topic, EARLIEST)])
        assert deleted.topics[0].partitions[0].error_code == 0, deleted
        assert offset_of(earliest) == 4

        alter = IncrementalAlterConfigsRequest[0](resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=TOPIC_RESOURCE, resource_name=topic, configs=[
                    IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig(
                        name="retention.ms", config_operation=OP_SET, value="123456789")])],
            validate_only=False)
        describe = DescribeConfigsRequest[1](resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=["retention.ms"])],
            include_synonyms=False)
        altered, described = pipeline.call(sock, [alter, describe])
        assert altered.responses[0].error_code == 0, altered
        [entry] = described.results[0].configs
        assert entry.value == "123456789", entry

        wait_for_coordinator(broker.bootstrap, group)
        committed, fetched, dropped, after = pipeline.call(sock, [
            commit(group, topic, 5), fetch_committed(group, topic),
            DeleteGroupsRequest[1](groups_names=[group]), fetch_committed(group, topic)])
        assert committed_of(fetched) == 5
        assert dropped.results[0].error_code == 0, dropped
        assert committed_of(after) == -1

        removed, described = pipeline.call(sock, [
            DeleteTopicsRequest[4](topic_names=[topic], timeout_ms=10_000), metadata(topic)])
        assert removed.responses[0].error_code == 0, removed
        assert described.topics[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION


def join(group: str, member_id: str = "", instance=None):
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00")
    return JoinGroupRequest[5](group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000,
                               member_id=member_id, group_instance_id=instance,
                               protocol_type="consumer", protocols=[protocol])


def test_a_group_join_then_leave_pipelined_leaves_the_group_empty(broker):
    group = unique_topic("order-join-leave")
    wait_for_coordinator(broker.bootstrap, group)
    with wire.connect(broker.bootstrap, timeout_s=60) as sock:
        leave = LeaveGroupRequest[3](group_id=group, members=[
            LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="static-1")])
        joined, left = pipeline.call(sock, [join(group, instance="static-1"), leave])
        # A static member's first join is admitted at once (no member id round trip)...
        assert joined.error_code == 0, joined
        # ...and the leave behind it finds that member, whatever the join's rebalance does.
        assert left.error_code == 0 and left.members[0].error_code == 0, left


def init_producer_id():
    return InitProducerIdRequest[1](transactional_id=None, transaction_timeout_ms=60_000)


def test_pipelined_init_producer_ids_are_answered_with_rising_ids(broker):
    # Kafka answers COORDINATOR_LOAD_IN_PROGRESS until it has its first block of ids.
    wait_until(lambda: pipeline.call_one(broker.bootstrap, init_producer_id()).error_code == 0, 60,
               "a first producer id")
    with wire.connect(broker.bootstrap, timeout_s=60) as sock:
        responses = pipeline.call(sock, [init_producer_id() for _ in range(50)])
    ids = [r.producer_id for r in responses]
    assert all(r.error_code == 0 for r in responses), responses
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids


def test_a_produce_is_visible_to_the_list_offsets_pipelined_behind_it(broker):
    topic = ready_topic(broker.bootstrap, unique_topic("order-produce"))
    with wire.connect(broker.bootstrap, timeout_s=60) as sock:
        for expected in range(1, 21):
            _, latest = pipeline.call(sock, [produce(topic, b"x"), list_offset(topic, LATEST)])
            assert offset_of(latest) == expected
