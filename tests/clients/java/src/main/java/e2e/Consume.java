package e2e;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads one partition by assign/seek (no group), and answers ListOffsets queries. */
final class Consume {
    static KafkaConsumer<byte[], byte[]> consumer(Map<String, String> args) {
        Properties p = Main.common(args);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("fetch.max.wait.ms", "200");
        return new KafkaConsumer<>(p);
    }

    static void run(Map<String, String> args) {
        TopicPartition tp = new TopicPartition(Main.need(args, "topic"), Integer.parseInt(args.getOrDefault("partition", "0")));
        int count = Integer.parseInt(Main.need(args, "count"));
        long deadline = System.currentTimeMillis() + Long.parseLong(args.getOrDefault("timeout-ms", "15000"));
        String start = args.getOrDefault("start", "beginning");
        try (KafkaConsumer<byte[], byte[]> c = consumer(args)) {
            c.assign(List.of(tp));
            switch (start) {
                case "beginning" -> c.seekToBeginning(List.of(tp));
                case "end" -> c.seekToEnd(List.of(tp));
                default -> c.seek(tp, Long.parseLong(start));
            }
            // Resolve the position now so "end" means the end before anything produced afterwards.
            Main.emit(Main.obj("position", c.position(tp)));
            int seen = 0;
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (seen >= count) {
                        break;
                    }
                    List<List<String>> headers = new ArrayList<>();
                    for (Header h : r.headers()) {
                        headers.add(java.util.Arrays.asList(h.key(), str(h.value())));
                    }
                    Main.emit(Main.obj("partition", r.partition(), "offset", r.offset(), "ts", r.timestamp(),
                        "key", str(r.key()), "value", str(r.value()), "headers", headers));
                    seen++;
                }
            }
        }
    }

    static void offsets(Map<String, String> args) {
        TopicPartition tp = new TopicPartition(Main.need(args, "topic"), Integer.parseInt(args.getOrDefault("partition", "0")));
        try (KafkaConsumer<byte[], byte[]> c = consumer(args)) {
            for (String t : Main.need(args, "ts").split(",")) {
                long ts = Long.parseLong(t);
                Long offset;
                if (ts == -2) {
                    offset = c.beginningOffsets(List.of(tp)).get(tp);
                } else if (ts == -1) {
                    offset = c.endOffsets(List.of(tp)).get(tp);
                } else {
                    Map<TopicPartition, Long> q = new HashMap<>();
                    q.put(tp, ts);
                    OffsetAndTimestamp o = c.offsetsForTimes(q).get(tp);
                    offset = o == null ? -1L : o.offset();
                }
                Main.emit(Main.obj("ts", ts, "offset", offset));
            }
        }
    }

    private static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private Consume() {}
}
