"""DescribeTopicPartitions (KIP-966) on the wire: pages of `response_partition_limit`
partitions, the cursor to the next page, and an unknown topic; the same answers from ours and
from Kafka 4.1 (E2E_TARGET=kafka)."""

import struct

import wire
from conftest import create_topic, unique_topic

API_KEY = 75


def uvarint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def compact_string(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


class Reader:
    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.pos = data, pos

    def take(self, fmt: str):
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def string(self):
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def ints(self):
        n = self.uvarint() - 1
        return [self.take(">i") for _ in range(max(n, 0))] if n >= 0 else None

    def skip_tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


def describe(bootstrap: str, topics: list, limit: int, cursor=None) -> dict:
    body = uvarint(len(topics) + 1) + b"".join(compact_string(t) + b"\x00" for t in topics)
    body += struct.pack(">i", limit)
    if cursor is None:
        body += b"\xff"
    else:
        body += b"\x01" + compact_string(cursor[0]) + struct.pack(">i", cursor[1]) + b"\x00"
    body += b"\x00"
    header = struct.pack(">hhi", API_KEY, 0, 11) + wire.string("e2e-dtp") + b"\x00"
    with wire.connect(bootstrap, timeout_s=10) as sock:
        sock.sendall(wire.frame(header + body))
        response = wire.read_frame(sock)
    r = Reader(response, 4)
    r.skip_tags()
    r.take(">i")  # throttle
    answered = []
    for _ in range(r.uvarint() - 1):
        error = r.take(">h")
        name = r.string()
        r.pos += 17  # topic id, is_internal
        partitions = []
        for _ in range(r.uvarint() - 1):
            r.take(">h")
            index = r.take(">i")
            r.take(">ii")
            replicas, isr, elr, last_elr, _offline = r.ints(), r.ints(), r.ints(), r.ints(), r.ints()
            r.skip_tags()
            partitions.append((index, len(replicas), len(isr), elr, last_elr))
        r.take(">i")  # authorized operations
        r.skip_tags()
        answered.append((name, error, partitions))
    next_cursor = None
    if r.take(">b") >= 0:
        next_cursor = (r.string(), r.take(">i"))
        r.skip_tags()
    return {"topics": answered, "next_cursor": next_cursor}


def test_a_topic_is_described_in_pages_and_the_cursor_moves_on_to_the_next_topic(broker):
    b = broker.bootstrap
    suffix = unique_topic("dtp")
    # Named so that the missing topic sorts after the described one.
    topic, missing = create_topic(b, f"a-{suffix}", partitions=4), f"b-{suffix}"
    first = describe(b, [topic, missing], 2)
    assert [(name, error, [p[0] for p in parts]) for name, error, parts in first["topics"]] == [(topic, 0, [0, 1])]
    assert first["next_cursor"] == (topic, 2)
    # One replica and ISR each, and empty (not null) eligible-leader lists.
    assert all(p[1:] == (1, 1, [], []) for p in first["topics"][0][2])
    second = describe(b, [topic, missing], 2, cursor=first["next_cursor"])
    assert [(name, [p[0] for p in parts]) for name, _, parts in second["topics"]] == [(topic, [2, 3])]
    assert second["next_cursor"] == (missing, 0)
    third = describe(b, [topic, missing], 2, cursor=second["next_cursor"])
    assert third == {"topics": [(missing, 3, [])], "next_cursor": None}  # UNKNOWN_TOPIC_OR_PARTITION


def test_a_cursor_outside_the_topics_asked_for_is_an_invalid_request(broker):
    b, topic = broker.bootstrap, create_topic(broker.bootstrap, unique_topic("dtp-cursor"))
    answer = describe(b, [topic], 10, cursor=("elsewhere", 0))
    assert answer == {"topics": [(topic, 42, [])], "next_cursor": None}  # INVALID_REQUEST
