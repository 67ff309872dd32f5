package e2e;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A static group member ("static-member" mode): subscribes to --topic in --group with
 * --instance-id, --protocol classic|consumer (classic also takes --session-timeout-ms and
 * --heartbeat-interval-ms; consumer-protocol timeouts are the broker's) and polls until it reads
 * "close" or the end of stdin, or --duration-ms passes. Then it closes the way a static member
 * does by default: without leaving the group (classic: no LeaveGroup; consumer protocol: the
 * heartbeat with epoch -2), so its instance may come back within the session timeout.
 *
 * <p>Prints JSON lines, each with the wall-clock "ts" in ms: {"event":"assigned"|"revoked"|"lost",
 * "partitions":[[t,p]...],"generation":g}, {"event":"member","member_id":m,"generation":g} when
 * the member id or generation (the member epoch, for the consumer protocol) changes, and
 * {"event":"closed"} once close() returned. Nothing is committed.
 */
final class StaticMembers {
    static void run(Map<String, String> args) throws Exception {
        Properties p = Main.common(args);
        p.put("group.id", Main.need(args, "group"));
        p.put("group.instance.id", Main.need(args, "instance-id"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        String protocol = args.getOrDefault("protocol", "classic");
        p.put("group.protocol", protocol);
        if (protocol.equals("classic")) {
            p.put("session.timeout.ms", args.getOrDefault("session-timeout-ms", "10000"));
            p.put("heartbeat.interval.ms", args.getOrDefault("heartbeat-interval-ms", "1000"));
            // Eager: any rebalance would revoke every partition of every member, so the tests
            // see one as a callback.
            p.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor");
        }
        long deadline = System.currentTimeMillis() + Long.parseLong(args.getOrDefault("duration-ms", "120000"));

        KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
        AtomicBoolean running = new AtomicBoolean(true);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("close")) {
                    // Only "close" means something.
                }
            } catch (Exception e) {
                // A broken stdin ends the member like "close".
            }
            running.set(false);
            c.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
        try {
            c.subscribe(Arrays.asList(Main.need(args, "topic").split(",")), listener(c));
            String memberId = "";
            int generation = -1;
            while (running.get() && System.currentTimeMillis() < deadline) {
                try {
                    c.poll(Duration.ofMillis(100));
                } catch (WakeupException e) {
                    break;
                }
                ConsumerGroupMetadata m = c.groupMetadata();
                if (!m.memberId().equals(memberId) || m.generationId() != generation) {
                    memberId = m.memberId();
                    generation = m.generationId();
                    Main.emit(Main.obj("event", "member", "member_id", memberId, "generation", generation,
                        "ts", System.currentTimeMillis()));
                }
            }
        } finally {
            c.close();
            Main.emit(Main.obj("event", "closed", "ts", System.currentTimeMillis()));
            System.out.flush();
        }
    }

    private static ConsumerRebalanceListener listener(KafkaConsumer<byte[], byte[]> c) {
        return new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                event(c, "revoked", partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                event(c, "assigned", partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                event(c, "lost", partitions);
            }
        };
    }

    private static void event(KafkaConsumer<byte[], byte[]> c, String name, Collection<TopicPartition> partitions) {
        List<List<Object>> out = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            out.add(Arrays.asList(tp.topic(), tp.partition()));
        }
        Main.emit(Main.obj("event", name, "partitions", out, "generation", c.groupMetadata().generationId(),
            "ts", System.currentTimeMillis()));
    }

    private StaticMembers() {}
}
