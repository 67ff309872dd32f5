package e2e;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Kafka test client driven by the e2e suite. Usage: {@code MODE --bootstrap B --topic T [--flag value]...}.
 * Modes: produce (records as JSON lines on stdin), consume, offsets, create-topic, describe-topic,
 * describe-configs, create-partitions, delete-topic, group (a consumer group member), describe-group,
 * commit-async (one commitAsync per record), init-transactions, txn-ctp (consume-transform-produce in
 * transactions), txn-fence (a zombie transactional producer fenced by its successor),
 * static-member (a member with a group.instance.id that closes without leaving).
 * {@code --property k=v} (repeatable) adds a client property to every client, e.g. the
 * {@code security.protocol} and {@code ssl.*} settings of a TLS listener.
 * Every result is one JSON object per stdout line;
 * a failure prints {"error": "..."} and exits 1.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();
    /** The --property k=v pairs, applied by {@link #common}. */
    static final List<String> PROPERTIES = new ArrayList<>();

    public static void main(String[] argv) {
        if (argv.length < 1) {
            fail("usage: MODE --bootstrap B --topic T [--flag value]...");
        }
        Map<String, String> args = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                fail("expected a --flag, got " + argv[i]);
            }
            if (argv[i].equals("--property")) {
                PROPERTIES.add(argv[i + 1]);
                continue;
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        try {
            switch (argv[0]) {
                case "produce" -> Produce.run(args);
                case "consume" -> Consume.run(args);
                case "offsets" -> Consume.offsets(args);
                case "group" -> Group.run(args);
                case "describe-group" -> Group.describe(args);
                case "commit-async" -> Ordering.commitAsync(args);
                case "init-transactions" -> Transactions.init(args);
                case "txn-ctp" -> TxnPipeline.run(args);
                case "txn-fence" -> TxnFencing.run(args);
                case "static-member" -> StaticMembers.run(args);
                case "create-topic", "describe-topic", "describe-configs", "create-partitions", "delete-topic" ->
                    Admin.run(argv[0], args);
                case "configs-create", "configs-describe", "configs-alter", "configs-produce" -> Configs.run(argv[0], args);
                default -> fail("unknown mode " + argv[0]);
            }
        } catch (Exception e) {
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            fail(root.getClass().getSimpleName() + ": " + root.getMessage());
        }
        System.out.flush();
        System.exit(0);
    }

    static Properties common(Map<String, String> args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", need(args, "bootstrap"));
        p.put("client.id", "e2e-java");
        for (String property : PROPERTIES) {
            int eq = property.indexOf('=');
            if (eq < 1) {
                fail("--property expects k=v, got " + property);
            }
            p.put(property.substring(0, eq), property.substring(eq + 1));
        }
        return p;
    }

    static String need(Map<String, String> args, String name) {
        String v = args.get(name);
        if (v == null) {
            fail("missing --" + name);
        }
        return v;
    }

    static void emit(Map<String, Object> line) {
        try {
            System.out.println(JSON.writeValueAsString(line));
        } catch (Exception e) {
            fail("json: " + e);
        }
    }

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static void fail(String message) {
        emit(obj("error", message));
        System.out.flush();
        System.exit(1);
    }

    private Main() {}
}
