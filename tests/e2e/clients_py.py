"""Drivers for Python clients used in-process: confluent-kafka, kafka-python, aiokafka."""

import asyncio
import threading
import time

from driver import ClientError, ConsumeHandle, Driver


def _b(s):
    return None if s is None else s.encode()


def _s(b):
    return None if b is None else b.decode()


def _headers_out(headers):
    return [[k, _s(v)] for k, v in (headers or [])]


def _run_consumer(poll_batch, count, timeout_s, close) -> ConsumeHandle:
    """Poll in a background thread until count records or timeout; the start offset is already fixed."""
    h = ConsumeHandle()
    h.mark_ready()

    def loop():
        try:
            deadline = time.monotonic() + timeout_s
            while len(h.records) < count and time.monotonic() < deadline:
                for r in poll_batch():
                    if len(h.records) < count:
                        h.records.append(r)
            h.finish()
        except Exception as e:  # reported to the test through the handle
            h.finish(f"{type(e).__name__}: {e}")
        finally:
            close()

    threading.Thread(target=loop, daemon=True).start()
    return h


class ConfluentDriver(Driver):
    name = "confluent"

    def __init__(self, bootstrap, security=None):
        """security: librdkafka settings added to every client (security.protocol, ssl.*)."""
        super().__init__(bootstrap)
        from confluent_kafka.admin import AdminClient
        self.security = security or {}
        self.admin = AdminClient({"bootstrap.servers": bootstrap, **self.security})

    def produce(self, topic, records, codec="none"):
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.bootstrap, "compression.type": codec, "acks": "all",
                      "linger.ms": 5, "enable.idempotence": False, "max.in.flight": 1, **self.security})
        results = [None] * len(records)

        def done(i):
            def cb(err, msg):
                results[i] = err if err else (msg.partition(), msg.offset())
            return cb

        for i, r in enumerate(records):
            p.produce(topic, value=_b(r.get("value")), key=_b(r.get("key")), partition=r.get("partition", 0),
                      timestamp=r.get("ts") or 0, headers=[(k, _b(v)) for k, v in r.get("headers") or []],
                      on_delivery=done(i))
        if p.flush(30) != 0:
            raise ClientError("confluent produce: records still queued after 30s")
        for res in results:
            if not isinstance(res, tuple):
                raise ClientError(f"confluent produce: {res}")
        return results

    def _consumer(self):
        from confluent_kafka import Consumer
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": "e2e-unused",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 200, **self.security})

    def consume_async(self, topic, partition, start, count, timeout_s=20):
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition
        c = self._consumer()
        if start == "end":
            _, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            offset = high
        else:
            offset = OFFSET_BEGINNING if start == "beginning" else int(start)
        c.assign([TopicPartition(topic, partition, offset)])

        def batch():
            out = []
            for m in c.consume(num_messages=100, timeout=0.5):
                if m.error():
                    raise ClientError(str(m.error()))
                out.append({"partition": m.partition(), "offset": m.offset(), "ts": m.timestamp()[1],
                            "key": _s(m.key()), "value": _s(m.value()), "headers": _headers_out(m.headers())})
            return out

        return _run_consumer(batch, count, timeout_s, c.close)

    def list_offsets(self, topic, partition, timestamps):
        from confluent_kafka import TopicPartition
        c = self._consumer()
        try:
            return [c.offsets_for_times([TopicPartition(topic, partition, ts)], timeout=10)[0].offset
                    for ts in timestamps]
        finally:
            c.close()

    def create_topic(self, topic, partitions, config):
        from confluent_kafka.admin import NewTopic
        self.admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                           config=config)])[topic].result(timeout=30)

    def describe_configs(self, topic):
        from confluent_kafka.admin import ConfigResource
        r = ConfigResource("topic", topic)
        entries = self.admin.describe_configs([r])[r].result(timeout=30)
        return {k: e.value for k, e in entries.items()}

    def create_partitions(self, topic, total):
        from confluent_kafka.admin import NewPartitions
        self.admin.create_partitions([NewPartitions(topic, total)])[topic].result(timeout=30)

    def delete_topic(self, topic):
        self.admin.delete_topics([topic])[topic].result(timeout=30)

    def partition_count(self, topic):
        t = self.admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        if t is None or t.error is not None:
            return None
        return len(t.partitions)


class KafkaPythonDriver(Driver):
    name = "kafka-python"

    def __init__(self, bootstrap, security=None):
        """security: keyword arguments added to every client (security_protocol, ssl_*)."""
        super().__init__(bootstrap)
        self.security = security or {}

    def produce(self, topic, records, codec="none"):
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                          compression_type=None if codec == "none" else codec,
                          max_in_flight_requests_per_connection=1, **self.security)
        try:
            futures = [p.send(topic, value=_b(r.get("value")), key=_b(r.get("key")),
                              partition=r.get("partition", 0), timestamp_ms=r.get("ts"),
                              headers=[(k, _b(v)) for k, v in r.get("headers") or []]) for r in records]
            p.flush(30)
            return [(m.partition, m.offset) for m in (f.get(timeout=30) for f in futures)]
        finally:
            p.close(timeout=10)

    def _consumer(self):
        from kafka import KafkaConsumer
        return KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None,
                             fetch_max_wait_ms=200, consumer_timeout_ms=1000, **self.security)

    def consume_async(self, topic, partition, start, count, timeout_s=20):
        from kafka import TopicPartition
        c = self._consumer()
        tp = TopicPartition(topic, partition)
        c.assign([tp])
        if start == "beginning":
            c.seek_to_beginning(tp)
        elif start == "end":
            c.seek_to_end(tp)
        else:
            c.seek(tp, int(start))
        c.position(tp)  # resolve the start offset now

        def batch():
            out = []
            for msgs in c.poll(timeout_ms=500).values():
                for m in msgs:
                    out.append({"partition": m.partition, "offset": m.offset, "ts": m.timestamp,
                                "key": _s(m.key), "value": _s(m.value), "headers": _headers_out(m.headers)})
            return out

        return _run_consumer(batch, count, timeout_s, c.close)

    def list_offsets(self, topic, partition, timestamps):
        from kafka import TopicPartition
        c = self._consumer()
        tp = TopicPartition(topic, partition)
        try:
            out = []
            for ts in timestamps:
                if ts == -2:
                    out.append(c.beginning_offsets([tp])[tp])
                elif ts == -1:
                    out.append(c.end_offsets([tp])[tp])
                else:
                    found = c.offsets_for_times({tp: ts})[tp]
                    out.append(-1 if found is None else found.offset)
            return out
        finally:
            c.close()

    def _admin(self):
        from kafka.admin import KafkaAdminClient
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, **self.security)

    def create_topic(self, topic, partitions, config):
        from kafka.admin import NewTopic
        a = self._admin()
        try:
            a.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                      topic_configs=config)])
        finally:
            a.close()

    def describe_configs(self, topic):
        from kafka.admin import ConfigResource, ConfigResourceType
        a = self._admin()
        try:
            # kafka-python 3.x: {"topic": {name: {config: {"value": ...}}}} (non-default entries only)
            resp = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            return {k: e["value"] for k, e in resp["topic"][topic].items()}
        finally:
            a.close()

    def create_partitions(self, topic, total):
        from kafka.admin import NewPartitions
        a = self._admin()
        try:
            a.create_partitions({topic: NewPartitions(total_count=total)})
        finally:
            a.close()

    def delete_topic(self, topic):
        a = self._admin()
        try:
            a.delete_topics([topic])
        finally:
            a.close()

    def partition_count(self, topic):
        a = self._admin()
        try:
            for t in a.describe_topics([topic]):
                if t.get("name", t.get("topic")) == topic:
                    return None if t["error_code"] != 0 else len(t["partitions"])
            return None
        finally:
            a.close()


class AioKafkaDriver(Driver):
    """aiokafka: each call runs its own event loop, so the contract stays synchronous."""

    name = "aiokafka"

    def produce(self, topic, records, codec="none"):
        from aiokafka import AIOKafkaProducer

        async def go():
            p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                                 compression_type=None if codec == "none" else codec)
            await p.start()
            try:
                futs = [await p.send(topic, value=_b(r.get("value")), key=_b(r.get("key")),
                                     partition=r.get("partition", 0), timestamp_ms=r.get("ts"),
                                     headers=[(k, _b(v)) for k, v in r.get("headers") or []]) for r in records]
                return [(m.partition, m.offset) for m in [await f for f in futs]]
            finally:
                await p.stop()

        return asyncio.run(go())

    def consume_async(self, topic, partition, start, count, timeout_s=20):
        from aiokafka import AIOKafkaConsumer, TopicPartition
        h = ConsumeHandle()

        async def go():
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None,
                                 fetch_max_wait_ms=200)
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                c.assign([tp])
                if start == "beginning":
                    await c.seek_to_beginning(tp)
                elif start == "end":
                    await c.seek_to_end(tp)
                else:
                    c.seek(tp, int(start))
                await c.position(tp)
                h.mark_ready()
                deadline = time.monotonic() + timeout_s
                while len(h.records) < count and time.monotonic() < deadline:
                    for msgs in (await c.getmany(timeout_ms=500)).values():
                        for m in msgs:
                            if len(h.records) < count:
                                h.records.append({"partition": m.partition, "offset": m.offset,
                                                  "ts": m.timestamp, "key": _s(m.key), "value": _s(m.value),
                                                  "headers": _headers_out(m.headers)})
            finally:
                await c.stop()

        def run():
            try:
                asyncio.run(go())
                h.finish()
            except Exception as e:  # reported to the test through the handle
                h.finish(f"{type(e).__name__}: {e}")

        threading.Thread(target=run, daemon=True).start()
        return h

    def list_offsets(self, topic, partition, timestamps):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def go():
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None)
            await c.start()
            tp = TopicPartition(topic, partition)
            try:
                out = []
                for ts in timestamps:
                    if ts == -2:
                        out.append((await c.beginning_offsets([tp]))[tp])
                    elif ts == -1:
                        out.append((await c.end_offsets([tp]))[tp])
                    else:
                        found = (await c.offsets_for_times({tp: ts}))[tp]
                        out.append(-1 if found is None else found.offset)
                return out
            finally:
                await c.stop()

        return asyncio.run(go())

    def _admin_call(self, fn):
        from aiokafka.admin import AIOKafkaAdminClient

        async def go():
            a = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await a.start()
            try:
                return await fn(a)
            finally:
                await a.close()

        return asyncio.run(go())

    def create_topic(self, topic, partitions, config):
        from aiokafka.admin import NewTopic
        resp = self._admin_call(lambda a: a.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1, topic_configs=config)]))
        for name, code, *_ in resp.topic_errors:
            if code != 0:
                raise ClientError(f"aiokafka create_topics {name}: error {code}")

    def describe_configs(self, topic):
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
        resp = self._admin_call(lambda a: a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))
        resources = resp[0].resources
        code, _msg, _type, _name, entries = resources[0][:5]
        if code != 0:
            raise ClientError(f"aiokafka describe_configs: error {code}")
        return {e[0]: e[1] for e in entries}

    def create_partitions(self, topic, total):
        from aiokafka.admin import NewPartitions
        resp = self._admin_call(lambda a: a.create_partitions({topic: NewPartitions(total_count=total)}))
        for name, code, *_ in resp.topic_errors:
            if code != 0:
                raise ClientError(f"aiokafka create_partitions {name}: error {code}")

    def delete_topic(self, topic):
        resp = self._admin_call(lambda a: a.delete_topics([topic]))
        for name, code, *_ in getattr(resp, "topic_error_codes", []):
            if code != 0:
                raise ClientError(f"aiokafka delete_topics {name}: error {code}")

    def partition_count(self, topic):
        resp = self._admin_call(lambda a: a.describe_topics([topic]))
        for t in resp:
            if t["topic"] == topic:
                return None if t["error_code"] != 0 else len(t["partitions"])
        return None
