"""Just enough of the Kafka wire format to send well-formed and malformed requests by hand."""

import socket
import struct
import time

API_PRODUCE, API_METADATA, API_VERSIONS = 0, 3, 18


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def request_header(api_key: int, api_version: int, correlation_id: int, client_id: str = "e2e-wire") -> bytes:
    """Request header v1 (non-flexible requests)."""
    return struct.pack(">hhi", api_key, api_version, correlation_id) + string(client_id)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def record_batch(value: bytes, corrupt_crc: bool = False) -> bytes:
    """A magic-2 batch of one record with a null key; the CRC can be made wrong on purpose."""
    body = bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    record = varint(len(body)) + body
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0, 0, now, now, -1, -1, -1, 1) + record
    crc = crc32c(after_crc) ^ (0xDEADBEEF if corrupt_crc else 0)
    after_length = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def record(value: bytes, offset_delta: int) -> bytes:
    """One magic-2 record with a null key and no headers."""
    body = bytes([0]) + varint(0) + varint(offset_delta) + varint(-1) + varint(len(value)) + value + varint(0)
    return varint(len(body)) + body


def keyed_record(key, value, offset_delta: int) -> bytes:
    """One magic-2 record with `key` and `value` (either may be None: null) and no headers."""
    def field(b):
        return varint(-1) if b is None else varint(len(b)) + b
    body = bytes([0]) + varint(0) + varint(offset_delta) + field(key) + field(value) + varint(0)
    return varint(len(body)) + body


def batch(records: bytes, count: int, codec: int = 0, compress=None, max_timestamp: int = None) -> bytes:
    """A magic-2 batch declaring `count` records (last offset delta `count - 1`) over `records`,
    compressed by `compress` (a function) under the codec bits `codec`, with a valid CRC. Its
    base timestamp is now; its header claims `max_timestamp` (default: now)."""
    now = int(time.time() * 1000)
    claimed = now if max_timestamp is None else max_timestamp
    payload = compress(records) if compress else records
    after_crc = struct.pack(">hiqqqhii", codec, count - 1, now, claimed, -1, -1, -1, count) + payload
    after_length = struct.pack(">ibI", -1, 2, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def produce_request(topic: str, batch: bytes, correlation_id: int, version: int = 8) -> bytes:
    """Produce v3-v8 (one layout): no transactional id, acks=-1, one topic, partition 0."""
    body = struct.pack(">hhi", -1, -1, 10_000) + struct.pack(">i", 1) + string(topic)
    body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(batch)) + batch
    return frame(request_header(API_PRODUCE, version, correlation_id) + body)


def _nullable_string(buf: bytes, pos: int):
    (n,) = struct.unpack_from(">h", buf, pos)
    if n < 0:
        return None, pos + 2
    return buf[pos + 2:pos + 2 + n].decode(), pos + 2 + n


def produce_v8_partition(response: bytes) -> tuple:
    """Partition 0 of a Produce v8 response frame: (error code, [(batch index, message)], message)."""
    pos = 4 + 4
    (name_len,) = struct.unpack_from(">h", response, pos)
    pos += 2 + name_len + 4
    _index, error = struct.unpack_from(">ih", response, pos)
    pos += 4 + 2 + 8 + 8 + 8  # index, error, base offset, log append time, log start offset
    (count,) = struct.unpack_from(">i", response, pos)
    pos += 4
    record_errors = []
    for _ in range(max(count, 0)):
        (batch_index,) = struct.unpack_from(">i", response, pos)
        message, pos = _nullable_string(response, pos + 4)
        record_errors.append((batch_index, message))
    message, pos = _nullable_string(response, pos)
    return error, record_errors, message


def produce_error_code(response: bytes) -> int:
    """Partition 0's error code from a Produce v8 response frame (starting at the correlation id)."""
    pos = 4 + 4  # correlation id, topics array length
    (name_len,) = struct.unpack_from(">h", response, pos)
    pos += 2 + name_len + 4  # name, partitions array length
    _index, error = struct.unpack_from(">ih", response, pos)
    return error


def connect(bootstrap: str, timeout_s: float = 5) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout_s)


def read_frame(sock: socket.socket):
    """The next response frame (without the length prefix), or None if the peer closed."""
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (length,) = struct.unpack(">i", head)
    return _read_exact(sock, length)


def _read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def api_versions_ok(bootstrap: str) -> bool:
    """A fresh connection gets a well-formed ApiVersions v0 answer with error 0."""
    with connect(bootstrap) as s:
        s.sendall(frame(request_header(API_VERSIONS, 0, 7)))
        resp = read_frame(s)
    if resp is None or len(resp) < 6:
        return False
    correlation_id, error = struct.unpack_from(">ih", resp, 0)
    return correlation_id == 7 and error == 0


def metadata_broker_count(bootstrap: str) -> int:
    """Brokers listed by a Metadata v4 answer (no topics asked); raises if the answer is missing."""
    with connect(bootstrap) as s:
        # Metadata v4: an empty topic list, no auto-creation (v0-v3 are gone from Kafka 4).
        s.sendall(frame(request_header(API_METADATA, 4, 8) + struct.pack(">ib", 0, 0)))
        resp = read_frame(s)
    if resp is None:
        raise ConnectionError("metadata: connection closed")
    correlation_id, _throttle_ms, brokers = struct.unpack_from(">iii", resp, 0)
    if correlation_id != 8:
        raise ConnectionError(f"metadata: correlation id {correlation_id}")
    return brokers
