package e2e;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Topic configs through the Java AdminClient and producer. Every outcome is a JSON line; an
 * expected failure is reported as {"exception": SimpleName, "message": ...} (exit 0).
 * <ul>
 *   <li>{@code configs-create --topic T --config k=v;k=v [--validate-only true]}</li>
 *   <li>{@code configs-describe --topic T [--broker ID]}: every entry with value, source, read-only,
 *       type, whether documented, synonyms</li>
 *   <li>{@code configs-alter --topic T --ops SET:k=v;DELETE:k;APPEND:k=v;SUBTRACT:k=v [--validate-only true]}</li>
 *   <li>{@code configs-produce --topic T --ts t1,t2,... [--codec C]}: one record per timestamp;
 *       prints each one's offset and the timestamp the broker reports, or its exception</li>
 * </ul>
 */
final class Configs {
    static void run(String mode, Map<String, String> args) throws Exception {
        try {
            switch (mode) {
                case "configs-create" -> create(args);
                case "configs-describe" -> describe(args);
                case "configs-alter" -> alter(args);
                case "configs-produce" -> produce(args);
                default -> Main.fail("unknown configs mode " + mode);
            }
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            Main.emit(Main.obj("exception", cause.getClass().getSimpleName(), "message", cause.getMessage()));
        }
    }

    private static Map<String, String> pairs(String spec) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String kv : spec.split(";")) {
            if (!kv.isEmpty()) {
                String[] parts = kv.split("=", 2);
                out.put(parts[0], parts.length > 1 ? parts[1] : null);
            }
        }
        return out;
    }

    private static boolean validateOnly(Map<String, String> args) {
        return Boolean.parseBoolean(args.getOrDefault("validate-only", "false"));
    }

    private static void create(Map<String, String> args) throws Exception {
        String topic = Main.need(args, "topic");
        try (AdminClient admin = AdminClient.create(Main.common(args))) {
            NewTopic t = new NewTopic(topic, Optional.of(1), Optional.empty())
                .configs(pairs(args.getOrDefault("config", "")));
            admin.createTopics(List.of(t), new CreateTopicsOptions().validateOnly(validateOnly(args))).all().get();
            Main.emit(Main.obj("ok", true));
        }
    }

    private static void describe(Map<String, String> args) throws Exception {
        ConfigResource r = args.containsKey("broker")
            ? new ConfigResource(ConfigResource.Type.BROKER, args.get("broker"))
            : new ConfigResource(ConfigResource.Type.TOPIC, Main.need(args, "topic"));
        try (AdminClient admin = AdminClient.create(Main.common(args))) {
            DescribeConfigsOptions options = new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true);
            Config c = admin.describeConfigs(List.of(r), options).all().get().get(r);
            Map<String, Object> out = new TreeMap<>();
            for (ConfigEntry e : c.entries()) {
                List<List<String>> synonyms = new ArrayList<>();
                for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
                    synonyms.add(java.util.Arrays.asList(s.name(), s.value(), s.source().name()));
                }
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("value", e.value());
                entry.put("source", e.source().name());
                entry.put("default", e.isDefault());
                entry.put("read_only", e.isReadOnly());
                entry.put("type", e.type().name());
                entry.put("documented", e.documentation() != null && !e.documentation().isEmpty());
                entry.put("synonyms", synonyms);
                out.put(e.name(), entry);
            }
            Main.emit(Main.obj("configs", out));
        }
    }

    private static void alter(Map<String, String> args) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, Main.need(args, "topic"));
        Collection<AlterConfigOp> ops = new ArrayList<>();
        for (String spec : Main.need(args, "ops").split(";")) {
            String[] opAndPair = spec.split(":", 2);
            String[] kv = opAndPair[1].split("=", 2);
            AlterConfigOp.OpType type = AlterConfigOp.OpType.valueOf(opAndPair[0]);
            ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv.length > 1 ? kv[1] : null), type));
        }
        Map<ConfigResource, Collection<AlterConfigOp>> request = new HashMap<>();
        request.put(r, ops);
        try (AdminClient admin = AdminClient.create(Main.common(args))) {
            admin.incrementalAlterConfigs(request, new AlterConfigsOptions().validateOnly(validateOnly(args))).all().get();
            Main.emit(Main.obj("ok", true));
        }
    }

    private static void produce(Map<String, String> args) throws Exception {
        Properties p = Main.common(args);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("compression.type", args.getOrDefault("codec", "none"));
        p.put("acks", "all");
        p.put("linger.ms", "0");
        p.put("retries", "0");
        p.put("enable.idempotence", "false");
        p.put("max.in.flight.requests.per.connection", "1");
        p.put("delivery.timeout.ms", "30000");
        p.put("request.timeout.ms", "10000");
        String topic = Main.need(args, "topic");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            int i = 0;
            for (String ts : Main.need(args, "ts").split(",")) {
                byte[] value = ("value-" + i++).getBytes(StandardCharsets.UTF_8);
                // One record per request: each gets its own outcome.
                Future<RecordMetadata> f = producer.send(new ProducerRecord<>(topic, 0, Long.parseLong(ts), null, value));
                producer.flush();
                try {
                    RecordMetadata m = f.get();
                    Main.emit(Main.obj("offset", m.offset(), "timestamp", m.timestamp()));
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause() == null ? e : e.getCause();
                    Main.emit(Main.obj("exception", cause.getClass().getSimpleName(), "message", cause.getMessage()));
                }
            }
        }
    }

    private Configs() {}
}
