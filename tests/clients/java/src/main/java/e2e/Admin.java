package e2e;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;

/** Topic administration: create (partitions, configs), describe, describe configs, add partitions, delete. */
final class Admin {
    static void run(String mode, Map<String, String> args) throws Exception {
        String topic = Main.need(args, "topic");
        try (AdminClient admin = AdminClient.create(Main.common(args))) {
            switch (mode) {
                case "create-topic" -> {
                    Map<String, String> configs = new HashMap<>();
                    String spec = args.getOrDefault("config", "");
                    for (String kv : spec.split(",")) {
                        if (!kv.isEmpty()) {
                            String[] parts = kv.split("=", 2);
                            configs.put(parts[0], parts[1]);
                        }
                    }
                    int partitions = Integer.parseInt(args.getOrDefault("partitions", "1"));
                    NewTopic t = new NewTopic(topic, Optional.of(partitions), Optional.empty()).configs(configs);
                    admin.createTopics(List.of(t)).all().get();
                    Main.emit(Main.obj("ok", true));
                }
                case "describe-topic" -> {
                    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                    Main.emit(Main.obj("partitions", d.partitions().size()));
                }
                case "describe-configs" -> {
                    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                    Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
                    Map<String, String> out = new TreeMap<>();
                    for (ConfigEntry e : c.entries()) {
                        out.put(e.name(), e.value());
                    }
                    Main.emit(Main.obj("configs", out));
                }
                case "create-partitions" -> {
                    int total = Integer.parseInt(Main.need(args, "partitions"));
                    admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(total))).all().get();
                    Main.emit(Main.obj("ok", true));
                }
                case "delete-topic" -> {
                    admin.deleteTopics(List.of(topic)).all().get();
                    Main.emit(Main.obj("ok", true));
                }
                default -> Main.fail("unknown admin mode " + mode);
            }
        }
    }

    private Admin() {}
}
