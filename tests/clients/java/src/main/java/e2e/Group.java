package e2e;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer group member ("group" mode) and a group describer ("describe-group" mode).
 *
 * <p>group: subscribes to --topic (comma-separated), or with --pattern to the topics a regular
 * expression matches (consumer protocol only: an RE2J pattern the broker resolves), in --group
 * with --protocol classic|consumer
 * and --assignor (consumer: the server assignor, uniform|range; classic: range|roundrobin|sticky|
 * cooperative-sticky), commits what it processed after every poll and before giving partitions
 * up, and prints JSON lines: {"event":"assigned"|"revoked"|"lost","partitions":[[t,p]...],"ts":ms},
 * {"event":"record",...}, {"event":"committed","offsets":[[t,p,next]...]}, {"event":"closed"}.
 * It stops after --max-records, after --duration-ms, or on SIGTERM, leaving the group cleanly.
 */
final class Group {
    static void run(Map<String, String> args) throws Exception {
        Properties p = Main.common(args);
        p.put("group.id", Main.need(args, "group"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("fetch.max.wait.ms", "200");
        String protocol = args.getOrDefault("protocol", "consumer");
        p.put("group.protocol", protocol);
        String assignor = args.get("assignor");
        if (protocol.equals("consumer")) {
            if (assignor != null) {
                p.put("group.remote.assignor", assignor);
            }
        } else {
            p.put("session.timeout.ms", args.getOrDefault("session-timeout-ms", "10000"));
            p.put("heartbeat.interval.ms", "1000");
            if (assignor != null) {
                p.put("partition.assignment.strategy", classicAssignor(assignor));
            }
        }
        if (args.containsKey("instance-id")) {
            p.put("group.instance.id", args.get("instance-id"));
        }
        String pattern = args.get("pattern");
        List<String> topics = pattern == null ? Arrays.asList(Main.need(args, "topic").split(",")) : List.of();
        long maxRecords = Long.parseLong(args.getOrDefault("max-records", String.valueOf(Long.MAX_VALUE)));
        long deadline = System.currentTimeMillis() + Long.parseLong(args.getOrDefault("duration-ms", "60000"));

        KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
        AtomicBoolean running = new AtomicBoolean(true);
        CountDownLatch closed = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            running.set(false);
            c.wakeup();
            try {
                closed.await();
            } catch (InterruptedException e) {
                main.interrupt();
            }
        }));
        // Next offset to commit per partition: what this member has processed.
        Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        try {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    commit(c, processed, partitions);
                    event("revoked", partitions);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    event("assigned", partitions);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    partitions.forEach(processed::remove);
                    event("lost", partitions);
                }
            };
            if (pattern != null) {
                c.subscribe(new SubscriptionPattern(pattern), listener);
            } else {
                c.subscribe(topics, listener);
            }
            long seen = 0;
            while (running.get() && seen < maxRecords && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    Main.emit(Main.obj("event", "record", "topic", r.topic(), "partition", r.partition(),
                        "offset", r.offset(), "key", str(r.key()), "value", str(r.value())));
                    processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    seen++;
                }
                commit(c, processed, new ArrayList<>(processed.keySet()));
            }
            commit(c, processed, new ArrayList<>(processed.keySet()));
        } catch (WakeupException e) {
            commit(c, processed, new ArrayList<>(processed.keySet()));
        } finally {
            c.close();
            Main.emit(Main.obj("event", "closed"));
            System.out.flush();
            closed.countDown();
        }
    }

    /** Commits the processed offsets of {@code partitions} that are not committed yet. */
    private static void commit(KafkaConsumer<byte[], byte[]> c, Map<TopicPartition, OffsetAndMetadata> processed,
                               Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> due = new HashMap<>();
        for (TopicPartition tp : partitions) {
            OffsetAndMetadata o = processed.remove(tp);
            if (o != null) {
                due.put(tp, o);
            }
        }
        if (due.isEmpty()) {
            return;
        }
        try {
            c.commitSync(due);
            List<List<Object>> out = new ArrayList<>();
            due.forEach((tp, o) -> out.add(Arrays.asList(tp.topic(), tp.partition(), o.offset())));
            Main.emit(Main.obj("event", "committed", "offsets", out));
        } catch (WakeupException e) {
            // Closing: try once more without being woken up, then give up on these offsets.
            try {
                c.commitSync(due);
            } catch (Exception again) {
                Main.emit(Main.obj("event", "commit-failed", "error", again.toString()));
            }
        } catch (Exception e) {
            Main.emit(Main.obj("event", "commit-failed", "error", e.toString()));
        }
    }

    private static void event(String name, Collection<TopicPartition> partitions) {
        List<List<Object>> out = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            out.add(Arrays.asList(tp.topic(), tp.partition()));
        }
        Main.emit(Main.obj("event", name, "partitions", out, "ts", System.currentTimeMillis()));
    }

    private static String classicAssignor(String name) {
        return switch (name) {
            case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
            case "roundrobin" -> "org.apache.kafka.clients.consumer.RoundRobinAssignor";
            case "sticky" -> "org.apache.kafka.clients.consumer.StickyAssignor";
            case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            default -> throw new IllegalArgumentException("unknown classic assignor " + name);
        };
    }

    /** Describes --group with the Admin API (ConsumerGroupDescribe, or DescribeGroups for classic groups). */
    static void describe(Map<String, String> args) throws Exception {
        String group = Main.need(args, "group");
        try (AdminClient admin = AdminClient.create(Main.common(args))) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            List<Map<String, Object>> members = new ArrayList<>();
            for (MemberDescription m : d.members()) {
                List<List<Object>> partitions = new ArrayList<>();
                for (TopicPartition tp : m.assignment().topicPartitions()) {
                    partitions.add(Arrays.asList(tp.topic(), tp.partition()));
                }
                members.add(Main.obj("member_id", m.consumerId(), "client_id", m.clientId(),
                    "epoch", m.memberEpoch().orElse(null), "partitions", partitions));
            }
            Main.emit(Main.obj("group", d.groupId(), "type", d.type().toString(), "state", d.groupState().toString(),
                "assignor", d.partitionAssignor(), "group_epoch", d.groupEpoch().orElse(null), "members", members));
        }
    }

    private static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private Group() {}
}
