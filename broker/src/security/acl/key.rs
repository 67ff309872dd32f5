//! One MetaStore key per ACL binding: `acls/<type>:<pattern type>:<name>:<principal>:<host>:
//! <operation>:<permission>`, e.g. `acls/topic:literal:orders:User%3Aalice:*:read:allow`.
//!
//! The key is the binding (the value repeats it as JSON for people reading the store), so a
//! change notification carries everything a broker needs to update its index without reading
//! the store, creating an existing binding is a conditional put that finds it (idempotent, as in
//! Kafka), and a listing of keys is a full reload. Free-text fields are percent-encoded (`%`,
//! `:`, `/`, control characters), so keys have exactly one `/` and sort under [`PREFIX`].

use bytes::Bytes;

use super::{
    AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType, ResourcePattern,
    ResourceType,
};

use crate::key_escape::{escape, unescape};

/// Characters escaped in names: the separators of a binding key.
const RESERVED: &[char] = &[':', '/'];

pub const PREFIX: &str = "acls/";
/// The end of the range holding every key under [`PREFIX`] (the store orders `/` last).
pub const END: &str = "acls//";
/// Resource name, principal and host of one binding together at most (bytes): every binding is
/// a key, read at every start and on every change.
pub const BINDING_BYTES_MAX: usize = 2048;

/// The key of `binding`.
pub fn encode(binding: &AclBinding) -> String {
    let (pattern, entry) = (&binding.pattern, &binding.entry);
    let fields = [
        pattern.resource_type.name().to_ascii_lowercase(),
        pattern.pattern_type.name().to_ascii_lowercase(),
        escape(&pattern.name, RESERVED),
        escape(&entry.principal, RESERVED),
        escape(&entry.host, RESERVED),
        entry.operation.name().to_ascii_lowercase(),
        entry.permission.name().to_ascii_lowercase(),
    ];
    format!("{PREFIX}{}", fields.join(":"))
}

/// The binding a key names; `None` for keys this version does not understand (left alone).
pub fn decode(key: &str) -> Option<AclBinding> {
    let fields: Vec<&str> = key.strip_prefix(PREFIX)?.split(':').collect();
    let [resource_type, pattern_type, name, principal, host, operation, permission] =
        fields.as_slice()
    else {
        return None;
    };
    let binding = AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::parse(resource_type)?,
            name: unescape(name)?,
            pattern_type: PatternType::parse(pattern_type)?,
        },
        entry: AccessControlEntry {
            principal: unescape(principal)?,
            host: unescape(host)?,
            operation: AclOperation::parse(operation)?,
            permission: PermissionType::parse(permission)?,
        },
    };
    binding.validate().ok().map(|()| binding)
}

/// The value stored with a binding's key: the binding in JSON, for people reading the store.
pub fn value(binding: &AclBinding) -> Bytes {
    let json = serde_json::json!({
        "resource_type": binding.pattern.resource_type.name(),
        "resource_name": binding.pattern.name,
        "pattern_type": binding.pattern.pattern_type.name(),
        "principal": binding.entry.principal,
        "host": binding.entry.host,
        "operation": binding.entry.operation.name(),
        "permission_type": binding.entry.permission.name(),
    });
    Bytes::from(json.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(name: &str, principal: &str, host: &str) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::TransactionalId,
                name: name.into(),
                pattern_type: PatternType::Prefixed,
            },
            entry: AccessControlEntry {
                principal: principal.into(),
                host: host.into(),
                operation: AclOperation::DescribeConfigs,
                permission: PermissionType::Deny,
            },
        }
    }

    #[test]
    fn keys_read_as_the_binding_and_decode_back() {
        let b = binding("orders", "User:alice", "*");
        let key = encode(&b);
        assert_eq!(
            key,
            "acls/transactional_id:prefixed:orders:User%3Aalice:*:describe_configs:deny"
        );
        assert_eq!(decode(&key), Some(b));
    }

    #[test]
    fn separators_and_control_characters_are_escaped() {
        let b = binding("a/b:c%d\u{0}é", "User:CN=x,O=y:z", "::1");
        let key = encode(&b);
        assert_eq!(key.matches('/').count(), 1, "{key}");
        assert!(!key.contains('\u{0}'));
        assert_eq!(decode(&key), Some(b));
    }

    #[test]
    fn foreign_keys_are_ignored() {
        assert_eq!(decode("acls/topic:literal:t"), None);
        assert_eq!(decode("acls/planet:literal:t:User%3Aa:*:read:allow"), None);
        assert_eq!(decode("acls/topic:literal:t:User%3Aa:*:read:%zz"), None);
        assert_eq!(decode("topics/t"), None);
        // A stored binding Kafka would not accept is not loaded either.
        assert_eq!(decode("acls/topic:match:t:User%3Aa:*:read:allow"), None);
    }
}
