package e2e;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * commit-async: a group member that consumes {@code --count} records of partition 0 and commits
 * each one's next offset with commitAsync (pipelined on the coordinator connection), then waits
 * for every callback and prints the offset the group has committed, read back with committed().
 */
final class Ordering {
    static void commitAsync(Map<String, String> args) throws Exception {
        TopicPartition tp = new TopicPartition(Main.need(args, "topic"), 0);
        int count = Integer.parseInt(Main.need(args, "count"));
        Properties p = Main.common(args);
        p.put("group.id", Main.need(args, "group"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        AtomicInteger done = new AtomicInteger();
        AtomicReference<Exception> failed = new AtomicReference<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.assign(List.of(tp));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (seen++ >= count) {
                        break;
                    }
                    c.commitAsync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)), (offsets, e) -> {
                        if (e != null) {
                            failed.compareAndSet(null, e);
                        }
                        done.incrementAndGet();
                    });
                }
            }
            while (done.get() < Math.min(seen, count) && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(50));
            }
            if (failed.get() != null) {
                throw failed.get();
            }
            OffsetAndMetadata committed = c.committed(java.util.Set.of(tp)).get(tp);
            Main.emit(Main.obj("consumed", Math.min(seen, count), "callbacks", done.get(),
                "committed", committed == null ? -1 : committed.offset()));
        }
    }

    private Ordering() {}
}
