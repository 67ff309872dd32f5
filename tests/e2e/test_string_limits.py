"""Kafka's strings are at most 32,767 bytes (a STRING's length is an INT16; Readable.readString
refuses longer COMPACT_STRINGs). A request carrying a longer one is malformed: the broker closes
the connection, as Kafka does, and keeps serving other clients."""

import socket
import struct

import wire

OVER_LIMIT_BYTES = 40_000
API_FIND_COORDINATOR, API_INIT_PRODUCER_ID, API_METADATA = 10, 22, 3
CLOSE_WAIT_S = 10


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def flexible_header(api_key: int, version: int, correlation_id: int) -> bytes:
    """Request header v2: v1 plus an empty tagged-field section."""
    return wire.request_header(api_key, version, correlation_id) + b"\x00"


def closes_connection(bootstrap: str, payload: bytes) -> bool:
    with wire.connect(bootstrap) as s:
        s.sendall(wire.frame(payload))
        s.settimeout(CLOSE_WAIT_S)
        try:
            return wire.read_frame(s) is None
        except socket.timeout:
            return False


def test_a_40000_byte_group_id_closes_the_connection(broker):
    body = compact_string("g" * OVER_LIMIT_BYTES) + b"\x00" + b"\x00"  # key, key_type group, tags
    assert closes_connection(broker.bootstrap, flexible_header(API_FIND_COORDINATOR, 3, 1) + body)
    assert wire.api_versions_ok(broker.bootstrap)


def test_a_group_id_at_the_limit_is_answered(broker):
    body = compact_string("g" * 32_767) + b"\x00" + b"\x00"
    assert not closes_connection(broker.bootstrap, flexible_header(API_FIND_COORDINATOR, 3, 2) + body)


def test_a_40000_byte_transactional_id_closes_the_connection(broker):
    body = compact_string("t" * OVER_LIMIT_BYTES) + struct.pack(">i", 60_000) + b"\x00"
    assert closes_connection(broker.bootstrap, flexible_header(API_INIT_PRODUCER_ID, 2, 3) + body)
    assert wire.api_versions_ok(broker.bootstrap)


def test_a_40000_byte_client_id_closes_the_connection(broker):
    # The header's client id is a STRING: 40,000 in its INT16 length reads as negative.
    client = b"c" * OVER_LIMIT_BYTES
    header = struct.pack(">hhiH", API_METADATA, 4, 4, len(client)) + client
    body = struct.pack(">i", -1) + b"\x00"  # all topics, no auto-creation
    assert closes_connection(broker.bootstrap, header + body)
    assert wire.api_versions_ok(broker.bootstrap)
