// Prints random ACL scenarios with the real StandardAuthorizer's answers, one JSON line per
// scenario: its ACLs, super users and default, then decisions (authorize), answers of
// authorizeByResourceType, and the ACLs each filter selects (acls(filter)). The broker's test
// broker/tests/kafka_authorizer_cases.rs checks that our authorizer answers the same.
//
//   scripts/kafka-authorizer/generate.sh

import java.net.InetAddress;
import java.util.*;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.resource.*;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.*;

public class AuthorizerCases {
    static final long SEED = 20251201L;
    static final int SCENARIOS = 250;
    static final String[] ACL_NAMES = {"a", "ab", "abc", "b", "ba", "*", "abcd", "é", "éa"};
    static final String[] EXTRA_NAMES = {"abcde", "bab", "c", "x", "*", "a*", "éab"};
    static final String[] SUFFIXES = {"", "", "c", "x", "*"};
    static final String[] ACL_PRINCIPALS = {"User:alice", "User:bob", "User:*", "Group:eng", "User:Alice"};
    static final String[] ASKERS = {"User:alice", "User:bob", "User:carol", "Group:eng"};
    static final String[] ACL_HOSTS = {"*", "*", "10.0.0.1", "10.0.0.2"};
    static final String[] ASK_HOSTS = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
    static final AclOperation[] ACL_OPS = {AclOperation.ALL, AclOperation.READ, AclOperation.WRITE,
        AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE};
    static final AclOperation[] ASK_OPS = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
        AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE};
    static final ResourceType[] TYPES = {ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID};

    public static void main(String[] args) throws Exception {
        Random r = new Random(SEED);
        for (int s = 0; s < SCENARIOS; s++) {
            System.out.println(scenario(r));
        }
    }

    static <T> T pick(Random r, T[] values) {
        return values[r.nextInt(values.length)];
    }

    static String scenario(Random r) throws Exception {
        LinkedHashSet<StandardAcl> acls = new LinkedHashSet<>();
        int count = 1 + r.nextInt(10);
        while (acls.size() < count) {
            acls.add(new StandardAcl(pick(r, TYPES), pick(r, ACL_NAMES),
                r.nextInt(3) == 0 ? PatternType.PREFIXED : PatternType.LITERAL, pick(r, ACL_PRINCIPALS),
                pick(r, ACL_HOSTS), pick(r, ACL_OPS),
                r.nextInt(3) == 0 ? AclPermissionType.DENY : AclPermissionType.ALLOW));
        }
        String superUsers = r.nextInt(4) == 0 ? "User:alice" : "";
        boolean allowEveryone = r.nextBoolean();
        StandardAuthorizer authorizer = new StandardAuthorizer();
        Map<String, Object> configs = new HashMap<>();
        configs.put("super.users", superUsers);
        configs.put("allow.everyone.if.no.acl.found", Boolean.toString(allowEveryone));
        authorizer.configure(configs);
        // Kafka 4.1's authorizer records metrics on every decision.
        authorizer.withPluginMetrics(new PluginMetricsImpl(new Metrics(), Map.of()));
        authorizer.completeInitialLoad();
        List<StandardAcl> list = new ArrayList<>(acls);
        for (StandardAcl acl : list) {
            authorizer.addAcl(Uuid.randomUuid(), acl);
        }
        StringBuilder out = new StringBuilder();
        out.append("{\"super_users\":").append(json(superUsers));
        out.append(",\"allow_everyone\":").append(allowEveryone);
        out.append(",\"acls\":[");
        for (int i = 0; i < list.size(); i++) {
            StandardAcl a = list.get(i);
            if (i > 0) out.append(',');
            out.append('[').append(a.resourceType().code()).append(',').append(json(a.resourceName()))
                .append(',').append(a.patternType().code()).append(',').append(json(a.principal()))
                .append(',').append(json(a.host())).append(',').append(a.operation().code())
                .append(',').append(a.permissionType().code()).append(']');
        }
        out.append("],\"checks\":[");
        for (int i = 0; i < 40; i++) {
            String asker = pick(r, ASKERS);
            String host = pick(r, ASK_HOSTS);
            AclOperation op = pick(r, ASK_OPS);
            ResourceType type = pick(r, TYPES);
            String name = r.nextBoolean()
                ? list.get(r.nextInt(list.size())).resourceName() + pick(r, SUFFIXES)
                : pick(r, EXTRA_NAMES);
            Action action = new Action(op, new ResourcePattern(type, name, PatternType.LITERAL), 1, false, false);
            boolean allowed = authorizer.authorize(context(asker, host), List.of(action)).get(0)
                == AuthorizationResult.ALLOWED;
            if (i > 0) out.append(',');
            out.append('[').append(json(asker)).append(',').append(json(host)).append(',').append(op.code())
                .append(',').append(type.code()).append(',').append(json(name)).append(',').append(allowed).append(']');
        }
        out.append("],\"any\":[");
        for (int i = 0; i < 10; i++) {
            String asker = pick(r, ASKERS);
            String host = pick(r, ASK_HOSTS);
            AclOperation op = pick(r, ASK_OPS);
            ResourceType type = pick(r, TYPES);
            boolean allowed = authorizer.authorizeByResourceType(context(asker, host), op, type)
                == AuthorizationResult.ALLOWED;
            if (i > 0) out.append(',');
            out.append('[').append(json(asker)).append(',').append(json(host)).append(',').append(op.code())
                .append(',').append(type.code()).append(',').append(allowed).append(']');
        }
        out.append("],\"filters\":[");
        for (int i = 0; i < 6; i++) {
            AclBindingFilter filter = filter(r, list);
            List<Integer> matching = new ArrayList<>();
            for (AclBinding binding : authorizer.acls(filter)) {
                for (int j = 0; j < list.size(); j++) {
                    if (list.get(j).toBinding().equals(binding)) matching.add(j);
                }
            }
            Collections.sort(matching);
            ResourcePatternFilter p = filter.patternFilter();
            AccessControlEntryFilter e = filter.entryFilter();
            if (i > 0) out.append(',');
            out.append('[').append(p.resourceType().code()).append(',').append(json(p.name()))
                .append(',').append(p.patternType().code()).append(',').append(json(e.principal()))
                .append(',').append(json(e.host())).append(',').append(e.operation().code())
                .append(',').append(e.permissionType().code()).append(',').append(matching).append(']');
        }
        out.append("]}");
        return out.toString();
    }

    static AclBindingFilter filter(Random r, List<StandardAcl> acls) {
        StandardAcl like = acls.get(r.nextInt(acls.size()));
        ResourceType type = pick(r, new ResourceType[] {ResourceType.ANY, like.resourceType(), ResourceType.TOPIC});
        String name = pick(r, new String[] {null, like.resourceName(), like.resourceName() + "c", "abc"});
        PatternType pattern = pick(r, new PatternType[] {PatternType.ANY, PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED});
        String principal = r.nextBoolean() ? null : like.principal();
        String host = r.nextInt(3) > 0 ? null : like.host();
        AclOperation op = r.nextBoolean() ? AclOperation.ANY : like.operation();
        AclPermissionType permission = pick(r, new AclPermissionType[] {AclPermissionType.ANY, AclPermissionType.ALLOW, AclPermissionType.DENY});
        return new AclBindingFilter(new ResourcePatternFilter(type, name, pattern),
            new AccessControlEntryFilter(principal, host, op, permission));
    }

    static AuthorizableRequestContext context(String principal, String host) throws Exception {
        String[] parts = principal.split(":", 2);
        KafkaPrincipal kafkaPrincipal = new KafkaPrincipal(parts[0], parts[1]);
        InetAddress address = InetAddress.getByName(host);
        return new AuthorizableRequestContext() {
            public String listenerName() { return "PLAINTEXT"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.PLAINTEXT; }
            public KafkaPrincipal principal() { return kafkaPrincipal; }
            public InetAddress clientAddress() { return address; }
            public int requestType() { return 0; }
            public int requestVersion() { return 0; }
            public String clientId() { return "cases"; }
            public int correlationId() { return 0; }
        };
    }

    static String json(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\');
            b.append(c);
        }
        return b.append('"').toString();
    }
}
