//! Kafka's ACL model: a binding is a resource pattern (type, name, LITERAL or PREFIXED) and an
//! access control entry (principal, host, operation, ALLOW or DENY). Codes and names are
//! Kafka's (`org.apache.kafka.common.acl` / `common.resource`), so that the wire values and what
//! `kafka-acls` prints mean the same here.

mod filter;
pub mod key;

use std::fmt;

pub use filter::{AclBindingFilter, EntryFilter, PatternFilter};

/// The name of the one CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A LITERAL resource name (or an ACL host) that matches any.
pub const WILDCARD: &str = "*";
/// The ACL principal that matches any user.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// Declares a Kafka enum by its wire codes and printed names; unknown codes decode as `Unknown`
/// (Kafka's `fromCode`).
macro_rules! kafka_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($variant,)*
        }

        impl $name {
            pub const ALL_VALUES: &'static [$name] = &[$($name::$variant,)*];

            pub fn from_code(code: i8) -> $name {
                match code {
                    $($code => $name::$variant,)*
                    _ => $name::Unknown,
                }
            }

            pub fn code(self) -> i8 {
                match self {
                    $($name::$variant => $code,)*
                }
            }

            /// Kafka's name (`TOPIC`, `PREFIXED`, `DESCRIBE_CONFIGS`, `ALLOW`).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// The value of a Kafka name, case-insensitively, as Kafka's `fromString`.
            pub fn parse(text: &str) -> Option<$name> {
                Self::ALL_VALUES
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(text))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

kafka_enum! {
    /// What an ACL protects.
    ResourceType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Topic = 2, "TOPIC";
        Group = 3, "GROUP";
        Cluster = 4, "CLUSTER";
        TransactionalId = 5, "TRANSACTIONAL_ID";
        DelegationToken = 6, "DELEGATION_TOKEN";
        User = 7, "USER";
    }
}

kafka_enum! {
    /// How an ACL's resource name matches: exactly (or `*`), or as a prefix. ANY and MATCH occur
    /// in filters only.
    PatternType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Match = 2, "MATCH";
        Literal = 3, "LITERAL";
        Prefixed = 4, "PREFIXED";
    }
}

kafka_enum! {
    /// What a request does to a resource.
    AclOperation {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        All = 2, "ALL";
        Read = 3, "READ";
        Write = 4, "WRITE";
        Create = 5, "CREATE";
        Delete = 6, "DELETE";
        Alter = 7, "ALTER";
        Describe = 8, "DESCRIBE";
        ClusterAction = 9, "CLUSTER_ACTION";
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        AlterConfigs = 11, "ALTER_CONFIGS";
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        CreateTokens = 13, "CREATE_TOKENS";
        DescribeTokens = 14, "DESCRIBE_TOKENS";
        TwoPhaseCommit = 15, "TWO_PHASE_COMMIT";
    }
}

kafka_enum! {
    /// Whether an ACL grants or refuses.
    PermissionType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Deny = 2, "DENY";
        Allow = 3, "ALLOW";
    }
}

impl ResourceType {
    /// The operations an ACL on this resource type can grant, as Kafka's
    /// `AclEntry.supportedOperations` (what `authorized_operations` fields report).
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Delete,
                Alter,
                Describe,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Delete, Describe, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                Alter,
                Describe,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
            ],
            ResourceType::TransactionalId => &[Write, Describe, TwoPhaseCommit],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }
}

/// A resource pattern of a stored ACL: LITERAL or PREFIXED, never a filter's ANY or MATCH.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern_type: PatternType,
}

/// Who may (or may not) do what from where. `principal` is `Type:name` as Kafka stores it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessControlEntry {
    pub principal: String,
    pub host: String,
    pub operation: AclOperation,
    pub permission: PermissionType,
}

/// One ACL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessControlEntry,
}

/// Why a binding cannot be stored: Kafka's INVALID_REQUEST messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAcl {
    #[error("The only valid name for the CLUSTER resource is {CLUSTER_NAME}")]
    ClusterName,
    #[error("Invalid empty resource name")]
    EmptyName,
    #[error("Invalid resourceType {0}")]
    ResourceType(ResourceType),
    #[error("Invalid patternType {0}")]
    PatternType(PatternType),
    #[error("Invalid operation {0}")]
    Operation(AclOperation),
    #[error("Invalid permissionType {0}")]
    Permission(PermissionType),
    #[error("Could not parse principal from `{0}` (no colon is present separating the principal type from the principal name)")]
    Principal(String),
    /// Ours: every binding is one MetaStore key, which must stay small.
    #[error("ACL too long: its resource name, principal and host take {0} bytes, at most {max} are accepted", max = key::BINDING_BYTES_MAX)]
    TooLong(usize),
}

impl AclBinding {
    /// Kafka's checks of a new ACL (`AclApis.handleCreateAcls`, then the controller's
    /// `AclControlManager.validateNewAcl`), in their order.
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        let (pattern, entry) = (&self.pattern, &self.entry);
        if pattern.resource_type == ResourceType::Cluster && pattern.name != CLUSTER_NAME {
            return Err(InvalidAcl::ClusterName);
        }
        if pattern.name.is_empty() {
            return Err(InvalidAcl::EmptyName);
        }
        if matches!(
            pattern.resource_type,
            ResourceType::Unknown | ResourceType::Any
        ) {
            return Err(InvalidAcl::ResourceType(pattern.resource_type));
        }
        if !matches!(
            pattern.pattern_type,
            PatternType::Literal | PatternType::Prefixed
        ) {
            return Err(InvalidAcl::PatternType(pattern.pattern_type));
        }
        if matches!(entry.operation, AclOperation::Unknown | AclOperation::Any) {
            return Err(InvalidAcl::Operation(entry.operation));
        }
        if !matches!(
            entry.permission,
            PermissionType::Allow | PermissionType::Deny
        ) {
            return Err(InvalidAcl::Permission(entry.permission));
        }
        if !entry.principal.contains(':') {
            return Err(InvalidAcl::Principal(entry.principal.clone()));
        }
        let bytes = pattern.name.len() + entry.principal.len() + entry.host.len();
        if bytes > key::BINDING_BYTES_MAX {
            return Err(InvalidAcl::TooLong(bytes));
        }
        Ok(())
    }
}

impl fmt::Display for AclBinding {
    /// As Kafka's `AclBinding.toString`, which `kafka-acls` users know.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(pattern=ResourcePattern(resourceType={}, name={}, patternType={}), entry=(principal={}, host={}, operation={}, permissionType={}))",
            self.pattern.resource_type,
            self.pattern.name,
            self.pattern.pattern_type,
            self.entry.principal,
            self.entry.host,
            self.entry.operation,
            self.entry.permission
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn binding(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        operation: AclOperation,
        permission: PermissionType,
    ) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type,
                name: name.into(),
                pattern_type,
            },
            entry: AccessControlEntry {
                principal: principal.into(),
                host: WILDCARD.into(),
                operation,
                permission,
            },
        }
    }

    #[test]
    fn codes_and_names_are_kafkas() {
        assert_eq!(ResourceType::from_code(5), ResourceType::TransactionalId);
        assert_eq!(ResourceType::from_code(42), ResourceType::Unknown);
        assert_eq!(AclOperation::IdempotentWrite.code(), 12);
        assert_eq!(
            AclOperation::parse("describe_configs"),
            Some(AclOperation::DescribeConfigs)
        );
        assert_eq!(PatternType::Prefixed.to_string(), "PREFIXED");
        assert_eq!(PermissionType::from_code(3), PermissionType::Allow);
    }

    #[test]
    fn new_acls_are_checked_in_kafkas_order() {
        use AclOperation::Read;
        use PermissionType::Allow;
        let ok = binding(
            ResourceType::Topic,
            "t",
            PatternType::Literal,
            "User:a",
            Read,
            Allow,
        );
        assert_eq!(ok.validate(), Ok(()));
        let cluster = binding(
            ResourceType::Cluster,
            "c",
            PatternType::Literal,
            "User:a",
            Read,
            Allow,
        );
        assert_eq!(cluster.validate(), Err(InvalidAcl::ClusterName));
        let empty = binding(
            ResourceType::Topic,
            "",
            PatternType::Match,
            "a",
            Read,
            Allow,
        );
        assert_eq!(empty.validate(), Err(InvalidAcl::EmptyName));
        let matching = binding(
            ResourceType::Topic,
            "t",
            PatternType::Match,
            "a",
            Read,
            Allow,
        );
        assert_eq!(
            matching.validate(),
            Err(InvalidAcl::PatternType(PatternType::Match))
        );
        let any = binding(
            ResourceType::Topic,
            "t",
            PatternType::Literal,
            "a",
            AclOperation::Any,
            Allow,
        );
        assert_eq!(
            any.validate(),
            Err(InvalidAcl::Operation(AclOperation::Any))
        );
        let no_colon = binding(
            ResourceType::Topic,
            "t",
            PatternType::Literal,
            "alice",
            Read,
            Allow,
        );
        assert_eq!(
            no_colon.validate().unwrap_err().to_string(),
            "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"
        );
    }
}
