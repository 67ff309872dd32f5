package e2e;

import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * init-transactions: a producer with {@code --transactional-id} calls initTransactions() and
 * prints how long it took; a refusal is printed as {"error": ...} by Main, with the time too.
 */
final class Transactions {
    static void init(Map<String, String> args) {
        Properties p = Main.common(args);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("transactional.id", Main.need(args, "transactional-id"));
        p.put("max.block.ms", args.getOrDefault("max-block-ms", "60000"));
        long started = System.currentTimeMillis();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            Main.emit(Main.obj("initialized", true, "ms", System.currentTimeMillis() - started));
        } catch (RuntimeException e) {
            Main.emit(Main.obj("initialized", false, "ms", System.currentTimeMillis() - started,
                "exception", e.getClass().getSimpleName(), "message", String.valueOf(e.getMessage())));
        }
    }

    private Transactions() {}
}
