//! Kafka principals: `User:alice`, `User:ANONYMOUS` (no authentication), and the wildcard
//! `User:*` that ACLs use.

use std::fmt;

/// An authenticated (or anonymous) identity, as Kafka's `KafkaPrincipal`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    /// `User` for every principal this broker builds; ACLs may name other types.
    pub principal_type: String,
    pub name: String,
}

impl Principal {
    pub const USER_TYPE: &'static str = "User";

    pub fn user(name: impl Into<String>) -> Principal {
        Principal {
            principal_type: Self::USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    /// Who a PLAINTEXT client (or a TLS one without a client certificate) is.
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }

    /// Parses `Type:name` (the form of `--super-users` entries and ACL principals).
    pub fn parse(text: &str) -> Option<Principal> {
        let (principal_type, name) = text.split_once(':')?;
        (!principal_type.is_empty() && !name.is_empty()).then(|| Principal {
            principal_type: principal_type.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_print_and_parse_as_kafka_writes_them() {
        assert_eq!(Principal::anonymous().to_string(), "User:ANONYMOUS");
        assert_eq!(
            Principal::parse("User:alice"),
            Some(Principal::user("alice"))
        );
        assert_eq!(Principal::parse("User:CN=a,O=b").unwrap().name, "CN=a,O=b");
        assert_eq!(Principal::parse("alice"), None);
        assert_eq!(Principal::parse("User:"), None);
    }
}
