package e2e;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Produces the JSON-line records read from stdin and prints each one's partition and offset, in input order. */
final class Produce {
    static void run(Map<String, String> args) throws Exception {
        Properties p = Main.common(args);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("compression.type", args.getOrDefault("codec", "none"));
        p.put("acks", args.getOrDefault("acks", "all"));
        p.put("linger.ms", "5");
        p.put("enable.idempotence", args.getOrDefault("idempotence", "false"));
        p.put("max.in.flight.requests.per.connection", "1");
        p.put("delivery.timeout.ms", args.getOrDefault("timeout-ms", "30000"));
        p.put("request.timeout.ms", "10000");
        String topic = Main.need(args, "topic");

        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode r = Main.JSON.readTree(line);
                List<org.apache.kafka.common.header.Header> headers = new ArrayList<>();
                for (JsonNode h : r.path("headers")) {
                    headers.add(new RecordHeader(h.get(0).asText(), bytes(h.get(1))));
                }
                Long ts = r.hasNonNull("ts") ? r.get("ts").asLong() : null;
                Integer partition = r.hasNonNull("partition") ? r.get("partition").asInt() : null;
                sent.add(producer.send(new ProducerRecord<>(topic, partition, ts, bytes(r.get("key")), bytes(r.get("value")), headers)));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata m = f.get();
                Main.emit(Main.obj("partition", m.partition(), "offset", m.offset()));
            }
        }
    }

    private static byte[] bytes(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText().getBytes(StandardCharsets.UTF_8);
    }

    private Produce() {}
}
