"""The behaviour every client must see from the broker. Each test_<client>.py subclasses
ClientContract with its driver, so the same assertions run for all seven clients."""

import time

import pytest

from clients_py import ConfluentDriver
from conftest import unique_topic, wait_for_leaders
from driver import CODECS, eventually


def sample_records(base_ts: int, tag: str, with_ts: bool = True) -> list:
    records = [
        {"partition": 0, "key": f"{tag}-k0", "value": f"{tag}-v0 " + "compressible " * 40,
         "headers": [["h1", "a"], ["h2", "b"]]},
        {"partition": 0, "key": None, "value": f"{tag}-no-key", "headers": []},
        {"partition": 0, "key": f"{tag}-tombstone", "value": None, "headers": [["only", "one"]]},
        {"partition": 0, "key": f"{tag}-k3", "value": f"{tag}-v3", "headers": [["dup", "1"], ["dup", "2"]]},
    ]
    for i, r in enumerate(records):
        r["ts"] = base_ts + i if with_ts else None
    return records


def assert_records(consumed: list, expected: list, first_offset: int, check_ts: bool) -> None:
    assert [r["offset"] for r in consumed] == list(range(first_offset, first_offset + len(expected)))
    for got, want in zip(consumed, expected):
        assert (got["key"], got["value"], got["headers"]) == (want["key"], want["value"], want["headers"]), got
        if check_ts:
            assert got["ts"] == want["ts"], got


class ClientContract:
    driver_class = None

    @pytest.fixture
    def client(self, broker):
        return self.driver_class(broker.bootstrap)

    def now_ms(self) -> int:
        # A little in the past: inside any retention and timestamp-skew window.
        return int(time.time() * 1000) - 60_000

    @pytest.mark.parametrize("codec", CODECS)
    def test_produce_returns_exact_offsets_and_consume_from_beginning_returns_exact_records(
            self, client, new_topic, codec):
        topic = new_topic()
        ts = client.can_set_timestamp
        first = sample_records(self.now_ms(), "a", ts)
        second = sample_records(self.now_ms() + 10, "b", ts)
        offsets_a = client.produce(topic, first, codec)
        offsets_b = client.produce(topic, second, codec)
        if client.reports_offsets:
            assert offsets_a == [(0, i) for i in range(4)]
            assert offsets_b == [(0, 4 + i) for i in range(4)]
        consumed = client.consume(topic, 0, "beginning", 8)
        assert_records(consumed, first + second, 0, ts)

    def test_consume_from_end_sees_only_records_produced_afterwards(self, client, new_topic):
        topic = new_topic()
        ts = client.can_set_timestamp
        client.produce(topic, sample_records(self.now_ms(), "old", ts))
        handle = client.consume_async(topic, 0, "end", 4)
        handle.wait_ready()
        later = sample_records(self.now_ms() + 10, "new", ts)
        client.produce(topic, later)
        assert_records(handle.result(), later, 4, ts)

    def test_consume_from_a_given_offset_starts_exactly_there(self, client, new_topic):
        topic = new_topic()
        ts = client.can_set_timestamp
        records = sample_records(self.now_ms(), "x", ts)
        client.produce(topic, records, "lz4")
        assert_records(client.consume(topic, 0, 2, 2), records[2:], 2, ts)

    def test_list_offsets_by_timestamp_returns_first_offset_at_or_after(self, client, broker, new_topic):
        topic = new_topic()
        base = self.now_ms() - 100_000
        batches = [[{"partition": 0, "key": f"k{i}", "value": f"v{i}", "headers": [], "ts": base + i * 1000}
                    for i in range(start, start + 3)] for start in (0, 3)]
        # kcat cannot set record timestamps: the records come from confluent-kafka, the queries from kcat.
        producer = client if client.can_set_timestamp else ConfluentDriver(broker.bootstrap)
        for batch in batches:
            producer.produce(topic, batch, "zstd")
        queries = [-2, -1, base - 5000, base, base + 1500, base + 2000, base + 3500, base + 5000, base + 5001]
        got = client.list_offsets(topic, 0, queries)
        after_last = 6 if client.ts_after_last_is_end else -1
        assert got == [0, 6, 0, 0, 2, 2, 4, 5, after_last]

    def test_topic_admin_creates_describes_grows_and_deletes(self, client, broker):
        topic = unique_topic(f"admin-{client.name}")
        admin = client if client.can_admin else ConfluentDriver(broker.bootstrap)
        admin.create_topic(topic, 3, {"retention.ms": "3600000", "max.message.bytes": "524288"})
        wait_for_leaders(broker.bootstrap, topic, 3)
        assert eventually(lambda: client.partition_count(topic) == 3)
        if client.can_admin:
            configs = client.describe_configs(topic)
            assert configs["retention.ms"] == "3600000"
            assert configs["max.message.bytes"] == "524288"
        admin.create_partitions(topic, 5)
        assert eventually(lambda: client.partition_count(topic) == 5), client.partition_count(topic)
        admin.delete_topic(topic)
        assert eventually(lambda: client.partition_count(topic) is None), client.partition_count(topic)
