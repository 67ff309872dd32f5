package e2e;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * txn-ctp: consume-transform-produce. Reads --topic in read_committed as --group, writes each
 * record's value prefixed with "out-" to --output (same partition and key) and the consumed
 * offsets in the same transaction (sendOffsetsToTransaction); every --abort-every-th transaction
 * is aborted on purpose and the consumer rewound to the group's committed offsets. Stops once
 * --count input records are committed. After each transaction prints
 * {"txn", "outcome": "commit"|"abort", "records", "sent": {partition: offset}, "committed": {...}}
 * where "committed" is what OffsetFetch (consumer.committed) answers right after.
 */
final class TxnPipeline {
    static void run(Map<String, String> args) throws Exception {
        String input = Main.need(args, "topic");
        String output = Main.need(args, "output");
        int count = Integer.parseInt(Main.need(args, "count"));
        int abortEvery = Integer.parseInt(args.getOrDefault("abort-every", "3"));
        long deadline = System.currentTimeMillis() + Long.parseLong(args.getOrDefault("timeout-ms", "90000"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(args));
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps(args))) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            int done = 0;
            int txn = 0;
            while (done < count) {
                if (System.currentTimeMillis() > deadline) {
                    Main.fail("only " + done + " of " + count + " input records committed");
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> sent = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    byte[] value = ("out-" + new String(r.value(), StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
                    producer.send(new ProducerRecord<>(output, r.partition(), r.key(), value));
                    sent.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(sent, consumer.groupMetadata());
                txn++;
                boolean abort = txn % abortEvery == 0;
                if (abort) {
                    producer.abortTransaction();
                    rewind(consumer);
                } else {
                    producer.commitTransaction();
                    done += records.count();
                }
                Main.emit(Main.obj("txn", txn, "outcome", abort ? "abort" : "commit", "records", records.count(),
                    "sent", byPartition(sent), "committed", byPartition(consumer.committed(consumer.assignment()))));
            }
        }
    }

    /** Back to the group's committed offsets (the beginning where none), to redo an aborted transaction. */
    private static void rewind(KafkaConsumer<byte[], byte[]> consumer) {
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(consumer.assignment());
        for (TopicPartition tp : consumer.assignment()) {
            OffsetAndMetadata at = committed.get(tp);
            if (at == null) {
                consumer.seekToBeginning(List.of(tp));
            } else {
                consumer.seek(tp, at.offset());
            }
        }
    }

    private static Map<String, Long> byPartition(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Long> out = new TreeMap<>();
        offsets.forEach((tp, at) -> {
            if (at != null) {
                out.put(String.valueOf(tp.partition()), at.offset());
            }
        });
        return out;
    }

    private static Properties consumerProps(Map<String, String> args) {
        Properties p = Main.common(args);
        p.put("group.id", Main.need(args, "group"));
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("isolation.level", "read_committed");
        p.put("max.poll.records", args.getOrDefault("max-poll-records", "40"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return p;
    }

    static Properties producerProps(Map<String, String> args) {
        Properties p = Main.common(args);
        p.put("transactional.id", Main.need(args, "transactional-id"));
        p.put("linger.ms", "5");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return p;
    }

    private TxnPipeline() {}
}
