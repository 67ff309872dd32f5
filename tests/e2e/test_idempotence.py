"""Idempotent producer: produce responses are lost on the way back, the client retries, and the log
still holds exactly one copy of each record, in order.

A TCP proxy sits between client and broker. The broker advertises the proxy's address, so every
client connection goes through it. The proxy forwards requests untouched; for some Produce
requests it swallows the broker's response and cuts the connection, so the client cannot know
whether the write happened and must retry it.
"""

import socket
import struct
import threading

import pytest

from conftest import create_topic, unique_topic
from targets import BrokerProcess, free_port

PRODUCE_API_KEY = 0
RECORDS = 3000


class DroppingProxy:
    """Forwards Kafka connections; drops the response to every `every`-th Produce, `limit` times."""

    def __init__(self, listen_port: int, upstream_port: int, every: int = 7, limit: int = 5):
        self.upstream = ("127.0.0.1", upstream_port)
        self.every, self.limit = every, limit
        self.produce_seen = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", listen_port))
        self.server.listen(64)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.closed = True
        self.server.close()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            doomed = set()  # correlation ids whose responses this connection will swallow
            threading.Thread(target=self._requests, args=(client, upstream, doomed), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, doomed), daemon=True).start()

    @staticmethod
    def _frames(sock):
        buf = b""
        while True:
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                n = struct.unpack(">i", buf[:4])[0]
                yield buf[:4 + n]
                buf = buf[4 + n:]
            chunk = sock.recv(1 << 16)
            if not chunk:
                return
            buf += chunk

    def _requests(self, client, upstream, doomed):
        try:
            for frame in self._frames(client):
                api_key, _version, correlation_id = struct.unpack(">hhi", frame[4:12])
                if api_key == PRODUCE_API_KEY:
                    with self.lock:
                        self.produce_seen += 1
                        if self.produce_seen % self.every == 0 and self.dropped < self.limit:
                            self.dropped += 1
                            doomed.add(correlation_id)
                upstream.sendall(frame)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.close()
                except OSError:
                    pass

    def _responses(self, upstream, client, doomed):
        try:
            for frame in self._frames(upstream):
                (correlation_id,) = struct.unpack(">i", frame[4:8])
                if correlation_id in doomed:
                    # The broker did the write; the client never hears of it.
                    break
                client.sendall(frame)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


class ProxiedBroker(BrokerProcess):
    """Our broker, advertising the proxy so clients reconnect through it after every cut."""

    def __init__(self, target, data_dir, advertised_port):
        super().__init__(target, data_dir)
        self.advertised_port = advertised_port

    def command(self):
        return super().command() + ["--advertised-listener", f"127.0.0.1:{self.advertised_port}"]


def test_lost_produce_responses_leave_exactly_one_copy_of_each_record(target, tmp_path):
    if target != "ours":
        pytest.skip("needs --advertised-listener on the broker under test")
    confluent_kafka = pytest.importorskip("confluent_kafka")
    proxy_port = free_port()
    broker = ProxiedBroker(target, tmp_path / "broker", proxy_port)
    broker.start()
    proxy = None
    try:
        proxy = DroppingProxy(proxy_port, broker.port)
        topic = create_topic(broker.bootstrap, unique_topic("idempotence"), 1)
        errors = []
        producer = confluent_kafka.Producer({
            "bootstrap.servers": f"127.0.0.1:{proxy_port}",
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
            "retry.backoff.ms": 50,
            "message.timeout.ms": 120000,
        })

        def on_delivery(err, _msg):
            if err is not None:
                errors.append(err)

        for i in range(RECORDS):
            producer.produce(topic, key=f"k{i}", value=f"v{i}", partition=0, on_delivery=on_delivery)
            producer.poll(0)
        assert producer.flush(120) == 0, "every record delivered"
        assert errors == []
        assert proxy.dropped >= 3, f"the proxy cut {proxy.dropped} produce responses"

        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"check-{topic}",
            "enable.auto.commit": False,
        })
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        seen = []
        while len(seen) < RECORDS + 10:
            msg = consumer.poll(5)
            if msg is None:
                break
            assert msg.error() is None, msg.error()
            seen.append((msg.offset(), msg.value().decode()))
        consumer.close()
        assert [v for _, v in seen] == [f"v{i}" for i in range(RECORDS)], "one copy each, in order"
        assert [o for o, _ in seen] == list(range(RECORDS)), "offsets dense"
    finally:
        if proxy is not None:
            proxy.close()
        broker.kill()
