"""Malformed input on one connection must never hurt the broker: it answers with an error or closes
that connection, keeps serving other clients, and its memory does not grow without bound."""

import socket
import struct

import pytest
import zstandard

import wire

INVALID_RECORD, CORRUPT_MESSAGE, UNKNOWN_SERVER_ERROR = 87, 2, -1

CLOSE_WAIT_S = 10
ROUNDS_FOR_RSS = 300


def closed_or_error_within(sock: socket.socket, timeout_s: float = CLOSE_WAIT_S) -> str:
    """'closed' if the broker closed the connection, 'answered' if it sent a frame back."""
    sock.settimeout(timeout_s)
    try:
        return "closed" if wire.read_frame(sock) is None else "answered"
    except socket.timeout:
        return "timeout"


def test_broker_answers_api_versions_on_a_fresh_connection(broker):
    assert wire.api_versions_ok(broker.bootstrap)


def test_truncated_frame_does_not_block_other_clients(broker):
    with wire.connect(broker.bootstrap) as s:
        s.sendall(struct.pack(">i", 100) + b"\x00\x12\x00\x00")  # promises 100 bytes, sends 4
        assert wire.api_versions_ok(broker.bootstrap)
        s.shutdown(socket.SHUT_WR)
        assert closed_or_error_within(s) in ("closed", "answered")
    assert wire.api_versions_ok(broker.bootstrap)


@pytest.mark.parametrize("length", [0x7FFFFFFF, 1 << 30, -1])
def test_oversized_or_negative_length_prefix_closes_the_connection(broker, length):
    with wire.connect(broker.bootstrap) as s:
        s.sendall(struct.pack(">i", length) + b"\x00" * 64)
        assert closed_or_error_within(s) == "closed"
    assert wire.api_versions_ok(broker.bootstrap)


def test_garbage_after_a_valid_header_is_refused(broker):
    body = struct.pack(">i", 1_000_000) + b"\xff" * 20  # Metadata v4: a topic array that is not there
    with wire.connect(broker.bootstrap) as s:
        s.sendall(wire.frame(wire.request_header(wire.API_METADATA, 4, 11) + body))
        assert closed_or_error_within(s) in ("closed", "answered")
    assert wire.api_versions_ok(broker.bootstrap)


def test_unknown_api_key_is_refused(broker):
    with wire.connect(broker.bootstrap) as s:
        s.sendall(wire.frame(wire.request_header(9999, 0, 12)))
        assert closed_or_error_within(s) in ("closed", "answered")
    assert wire.api_versions_ok(broker.bootstrap)


def test_produce_with_bad_crc_is_rejected_and_a_good_one_accepted(broker, new_topic):
    topic = new_topic()
    with wire.connect(broker.bootstrap) as s:
        s.sendall(wire.produce_request(topic, wire.record_batch(b"good"), 21))
        resp = wire.read_frame(s)
        assert resp is not None and struct.unpack_from(">i", resp)[0] == 21
        assert wire.produce_error_code(resp) == 0, "a well-formed produce must succeed"
    with wire.connect(broker.bootstrap) as s:
        s.sendall(wire.produce_request(topic, wire.record_batch(b"evil", corrupt_crc=True), 22))
        resp = wire.read_frame(s)
        if resp is not None:
            assert struct.unpack_from(">i", resp)[0] == 22
            assert wire.produce_error_code(resp) == 2, "expected CORRUPT_MESSAGE (2)"
    assert wire.api_versions_ok(broker.bootstrap)


def test_rss_stays_bounded_under_repeated_bad_input(broker, target):
    def abuse():
        for i in range(ROUNDS_FOR_RSS):
            with wire.connect(broker.bootstrap) as s:
                if i % 3 == 0:
                    s.sendall(struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 1024)
                elif i % 3 == 1:
                    s.sendall(wire.frame(wire.request_header(9999, 0, i)))
                else:
                    # 64 MiB promised, 8 KiB sent, then the client goes away: the buffer must be freed.
                    s.sendall(struct.pack(">i", 64 << 20) + b"\x01" * 8192)
                    continue
                closed_or_error_within(s, 2)

    abuse()  # warm up: allocator pools, JIT, buffers
    before = broker.rss_bytes()
    abuse()
    growth = broker.rss_bytes() - before
    # A JVM grows its heap lazily, so Kafka gets more slack than our broker.
    limit = (256 if target == "kafka" else 32) << 20
    assert growth < limit, f"RSS grew by {growth >> 20} MiB over {ROUNDS_FOR_RSS} bad connections"
    assert wire.api_versions_ok(broker.bootstrap)


def produce(broker, topic: str, records: bytes, correlation_id: int = 31) -> int:
    """Partition 0's error code for one Produce v8 carrying `records`."""
    with wire.connect(broker.bootstrap, timeout_s=60) as s:
        s.sendall(wire.produce_request(topic, records, correlation_id))
        resp = wire.read_frame(s)
    assert resp is not None and struct.unpack_from(">i", resp)[0] == correlation_id
    return wire.produce_error_code(resp)


def zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(data)


def zstd_zeros(total: int) -> bytes:
    """`total` zero bytes through zstd, streamed: a few bytes per 128 KiB block."""
    c = zstandard.ZstdCompressor(level=3).compressobj()
    chunk = b"\0" * (1 << 20)
    return b"".join(c.compress(chunk) for _ in range(total >> 20)) + c.flush()


def latest_offset(broker, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "e2e-bad-input"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


R0, R1 = wire.record(b"v0", 0), wire.record(b"v1", 1)
BAD_BATCHES = {
    # A header promising more records than the batch holds (the 2^31-1 record batch).
    "count_above_records": (wire.batch(R0, 0x7FFFFFFF), INVALID_RECORD),
    "count_above_records_zstd": (wire.batch(R0, 2, codec=4, compress=zstd), INVALID_RECORD),
    "count_below_records": (wire.batch(R0 + R1, 1), INVALID_RECORD),
    "two_batches": (wire.batch(R0, 1) + wire.batch(R0, 1), INVALID_RECORD),
    "truncated_record": (wire.batch(R0 + R1[:-2], 2), INVALID_RECORD),
    "record_longer_than_batch": (wire.batch(wire.varint(100) + R0[1:], 1), INVALID_RECORD),
    "truncated_batch": (wire.batch(R0 + R1, 2)[:-3], INVALID_RECORD),
    "bad_crc": (wire.record_batch(b"x", corrupt_crc=True), CORRUPT_MESSAGE),
    # 2 GiB of zeros in ~64 KiB of zstd: its first record is malformed.
    "zstd_bomb": (wire.batch(zstd_zeros(2 << 30), 1, codec=4), INVALID_RECORD),
}


@pytest.mark.parametrize("case", sorted(BAD_BATCHES))
def test_a_malformed_batch_is_refused_whole_with_kafkas_code(broker, new_topic, case):
    records, code = BAD_BATCHES[case]
    topic = new_topic()
    assert produce(broker, topic, wire.batch(R0, 1)) == 0
    before = broker.rss_bytes()
    assert produce(broker, topic, records) == code
    # Nothing of it was stored: the next batch lands right after the first.
    assert produce(broker, topic, wire.batch(R0, 1)) == 0
    assert latest_offset(broker, topic) == 2
    growth = broker.rss_bytes() - before
    assert growth < 256 << 20, f"RSS grew by {growth >> 20} MiB"
    assert wire.api_versions_ok(broker.bootstrap)


def keyed(key_length: int, offset_delta: int) -> bytes:
    """A record whose key length field says `key_length` (no key bytes follow), value b"v"."""
    body = bytes([0]) + wire.varint(0) + wire.varint(offset_delta) + wire.varint(key_length)
    body += wire.varint(1) + b"v" + wire.varint(0)
    return wire.varint(len(body)) + body


# Records Kafka 4.1 acknowledges and a librdkafka consumer then stalls on: (records, count,
# record index at fault, our message, Kafka's code per codec).
UNREADABLE = {
    "key_length_minus_7": (R0 + keyed(-7, 1), 2, 1, "invalid key length -7", {0: 0, 4: 0}),
    # Kafka rebuilds a compressed batch with wrong deltas and fails doing so (its bug).
    "offset_deltas_0_0": (R0 + wire.record(b"v1", 0), 2, 1, "offset delta 0", {0: 0, 4: UNKNOWN_SERVER_ERROR}),
}


@pytest.mark.parametrize("codec", [0, 4])
@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_record_a_consumer_cannot_read_is_refused_at_its_index(broker, target, new_topic, case, codec):
    """We are stricter than Kafka here (docs/produce-validation.md says why)."""
    records, count, index, message, kafka_code = UNREADABLE[case]
    topic = new_topic()
    assert produce(broker, topic, wire.batch(R0, 1)) == 0
    bad = wire.batch(records, count, codec=codec, compress=zstd if codec == 4 else None)
    with wire.connect(broker.bootstrap, timeout_s=60) as s:
        s.sendall(wire.produce_request(topic, bad, 41))
        error, record_errors, _ = wire.produce_v8_partition(wire.read_frame(s))
    if target == "kafka":
        assert error == kafka_code[codec]
        return
    assert error == INVALID_RECORD
    assert len(record_errors) == 1 and record_errors[0][0] == index
    assert message in record_errors[0][1]
    assert produce(broker, topic, wire.batch(R0, 1)) == 0
    assert latest_offset(broker, topic) == 2


def test_a_partition_named_three_times_in_one_produce_is_appended_once_with_its_last_batch(broker, new_topic):
    """Kafka collects a Produce's batches in a map by partition: the last one named is appended,
    once, and answered once."""
    topic = new_topic()
    batches = [wire.record_batch(v) for v in (b"first", b"second", b"last")]
    body = struct.pack(">hhi", -1, -1, 10_000) + struct.pack(">i", 1) + wire.string(topic)
    body += struct.pack(">i", len(batches))
    for batch in batches:
        body += struct.pack(">ii", 0, len(batch)) + batch
    with wire.connect(broker.bootstrap, timeout_s=60) as s:
        s.sendall(wire.frame(wire.request_header(wire.API_PRODUCE, 8, 41) + body))
        resp = wire.read_frame(s)
    assert resp is not None
    pos = 4 + 4
    (name_len,) = struct.unpack_from(">h", resp, pos)
    (partitions,) = struct.unpack_from(">i", resp, pos + 2 + name_len)
    assert partitions == 1
    assert wire.produce_error_code(resp) == 0
    assert latest_offset(broker, topic) == 1
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "e2e-bad-input-dup",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        message = c.poll(15)
        assert message is not None and message.error() is None
        assert message.value() == b"last"
    finally:
        c.close()


def timed(value: bytes, timestamp_delta: int, offset_delta: int) -> bytes:
    """One record `timestamp_delta` ms after its batch's base timestamp."""
    body = bytes([0]) + wire.varint(timestamp_delta) + wire.varint(offset_delta) + wire.varint(-1)
    body += wire.varint(len(value)) + value + wire.varint(0)
    return wire.varint(len(body)) + body


@pytest.mark.parametrize("codec", [0, 4])
def test_a_batch_claiming_a_later_max_timestamp_is_found_by_its_records_times(broker, new_topic, codec):
    """Kafka sets a CreateTime batch's max_timestamp to its largest record's (LogValidator's
    setMaxTimestamp): a producer claiming a year ahead moves neither a search by time, nor the
    max-timestamp lookup (KIP-734), nor retention."""
    import time
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    topic = new_topic()
    now = int(time.time() * 1000)
    records = timed(b"v0", 0, 0) + timed(b"v1", 5, 1)
    lying = wire.batch(records, 2, codec=codec, compress=zstd if codec == 4 else None,
                       max_timestamp=now + 365 * 24 * 3600 * 1000)
    assert produce(broker, topic, lying) == 0
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    partition = TopicPartition(topic, 0)
    found = admin.list_offsets({partition: OffsetSpec.max_timestamp()})[partition].result(timeout=30)
    assert found.offset == 1 and 0 <= found.timestamp - now < 60_000, found
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "e2e-bad-input"})
    try:
        in_an_hour = int(time.time() * 1000) + 3_600_000
        found = c.offsets_for_times([TopicPartition(topic, 0, in_an_hour)], timeout=10)
        assert found[0].offset == -1, f"a record at or after an hour from now: {found[0]}"
        a_minute_ago = int(time.time() * 1000) - 60_000
        found = c.offsets_for_times([TopicPartition(topic, 0, a_minute_ago)], timeout=10)
        assert found[0].offset == 0
    finally:
        c.close()
