"""Pipelined requests on one connection, built with kafka-python's protocol classes: every
request is written before any response is read, as a client with several requests in flight
does, and the responses come back decoded, in order."""

import socket

from kafka.protocol.api_header import ResponseClassRegistry

import wire

CLIENT_ID = "e2e-pipeline"


def encode(requests: list, first_correlation_id: int = 0) -> bytes:
    out = bytearray()
    for i, request in enumerate(requests):
        request.with_header(correlation_id=first_correlation_id + i, client_id=CLIENT_ID)
        out += request.encode(header=True, framed=True)
    return bytes(out)


def call(sock: socket.socket, requests: list, first_correlation_id: int = 0) -> list:
    """Writes every request at once, then reads and decodes one response per request."""
    sock.sendall(encode(requests, first_correlation_id))
    responses = []
    for i, request in enumerate(requests):
        frame = wire.read_frame(sock)
        if frame is None:
            raise ConnectionError(f"closed before response {i} of {len(requests)}")
        response_class = ResponseClassRegistry.get_response_class(request.header)
        response = response_class.decode(frame, header=True)
        if response.header.correlation_id != first_correlation_id + i:
            raise AssertionError(f"response {i} has correlation id {response.header.correlation_id}")
        responses.append(response)
    return responses


def call_one(bootstrap: str, request):
    with wire.connect(bootstrap, timeout_s=30) as sock:
        return call(sock, [request])[0]
