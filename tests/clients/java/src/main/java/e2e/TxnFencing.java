package e2e;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;

/**
 * txn-fence: a zombie and its successor with the same --transactional-id. The zombie opens a
 * transaction and sends --count records ("zombie-i" to partition i % --partitions) and flushes;
 * the successor's initTransactions fences it (and aborts its open transaction), then commits
 * "successor-i". The zombie then sends once more, commits, and (as an application does after a
 * failed commit) aborts. Prints {"send", "commit", "abort"}: each step's exception, by its simple
 * class name, or null.
 */
final class TxnFencing {
    static void run(Map<String, String> args) throws Exception {
        String topic = Main.need(args, "topic");
        int count = Integer.parseInt(Main.need(args, "count"));
        int partitions = Integer.parseInt(Main.need(args, "partitions"));
        Properties props = TxnPipeline.producerProps(args);
        try (KafkaProducer<byte[], byte[]> zombie = new KafkaProducer<>(props);
             KafkaProducer<byte[], byte[]> successor = new KafkaProducer<>(props)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            sendAll(zombie, topic, "zombie", count, partitions);
            zombie.flush();

            successor.initTransactions();
            successor.beginTransaction();
            sendAll(successor, topic, "successor", count, partitions);
            successor.commitTransaction();

            String sendError = null;
            try {
                zombie.send(record(topic, 0, "zombie-late")).get();
            } catch (ExecutionException e) {
                sendError = e.getCause().getClass().getSimpleName();
            } catch (KafkaException e) {
                sendError = e.getClass().getSimpleName();
            }
            String commitError = null;
            try {
                zombie.commitTransaction();
            } catch (KafkaException e) {
                commitError = e.getClass().getSimpleName();
            }
            String abortError = null;
            try {
                zombie.abortTransaction();
            } catch (KafkaException e) {
                abortError = e.getClass().getSimpleName();
            }
            Main.emit(Main.obj("send", sendError, "commit", commitError, "abort", abortError));
        }
    }

    private static void sendAll(KafkaProducer<byte[], byte[]> p, String topic, String prefix, int count, int partitions) {
        for (int i = 0; i < count; i++) {
            p.send(record(topic, i % partitions, prefix + "-" + i));
        }
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, int partition, String value) {
        return new ProducerRecord<>(topic, partition, null, value.getBytes(StandardCharsets.UTF_8));
    }

    private TxnFencing() {}
}
