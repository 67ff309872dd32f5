// Prints Apache Kafka's topic configs (LogConfig's ConfigDef), their broker synonyms, and how
// Kafka validates sample values, as JSON lines. Our table in storage/src/topics/ is checked
// against this output by unit tests; regenerate with scripts/kafka-topic-configs/generate.sh.
//
//   {"kind":"topic","name":..,"type":..,"default":..,"validator":..,"internal":..,"synonyms":[..],"doc":..}
//   {"kind":"broker","name":..,"type":..,"default":..,"validator":..,"internal":..,"doc":..}
//   {"kind":"case","name":..,"value":..,"error":null|"message"}

import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.server.config.AbstractKafkaConfig;

public class PrintTopicConfigs {
    static String q(Object o) {
        if (o == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : o.toString().toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c == '\n') b.append("\\n");
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String key(String kind, ConfigDef.ConfigKey k, String extra) {
        String def = !k.hasDefault() ? q("<required>")
            : k.defaultValue == null ? "null" : q(ConfigDef.convertToString(k.defaultValue, k.type));
        return "{\"kind\":" + q(kind) + ",\"name\":" + q(k.name) + ",\"type\":" + q(k.type)
            + ",\"default\":" + def + ",\"validator\":" + q(k.validator)
            + ",\"internal\":" + k.internalConfig + extra + ",\"doc\":" + q(k.documentation) + "}";
    }

    /** Values every config is validated with, plus a few per type. */
    static List<String> samples(ConfigDef.ConfigKey k) {
        List<String> v = new ArrayList<>(List.of("", " ", "abc", "-3", "-2", "-1", "0", "1", " 7 ",
            "2", "9", "10", "17", "22", "23", "-131072", "-131073", "1.5", "1e3", "true", "false",
            "TRUE", "yes", "1048575", "1048576", "2147483647", "2147483648", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "0.5", "1.0", "1.01", "-0.1", "NaN"));
        v.addAll(List.of("delete", "compact", "compact,delete", "delete,compact", "delete,delete",
            "delete,", ",delete", "Delete", "foo", "*", "0:1", "0:1,1:2", "0:1, 1:2", "0:x", "*,0:1",
            "producer", "uncompressed", "gzip", "snappy", "lz4", "zstd", "GZIP", "none",
            "CreateTime", "LogAppendTime", "logappendtime"));
        return v;
    }

    public static void main(String[] args) {
        Map<String, ConfigDef.ConfigKey> broker = AbstractKafkaConfig.CONFIG_DEF.configKeys();
        for (ConfigDef.ConfigKey k : LogConfig.configKeys().values()) {
            List<ConfigSynonym> syn =
                ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.getOrDefault(k.name, List.of());
            StringBuilder s = new StringBuilder(",\"synonyms\":[");
            for (int i = 0; i < syn.size(); i++) s.append(i > 0 ? "," : "").append(q(syn.get(i).name()));
            System.out.println(key("topic", k, s.append(']').toString()));
            for (ConfigSynonym cs : syn) {
                ConfigDef.ConfigKey bk = broker.get(cs.name());
                if (bk != null) System.out.println(key("broker", bk, ""));
            }
        }
        for (ConfigDef.ConfigKey k : LogConfig.configKeys().values()) {
            for (String value : samples(k)) {
                Properties p = new Properties();
                p.put(k.name, value);
                String error = null;
                try {
                    LogConfig.validate(Collections.emptyMap(), p, Collections.emptyMap(), false);
                } catch (Exception e) {
                    error = e.getMessage();
                }
                System.out.println("{\"kind\":\"case\",\"name\":" + q(k.name) + ",\"value\":" + q(value)
                    + ",\"error\":" + q(error) + "}");
            }
        }
    }
}
