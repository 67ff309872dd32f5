//! Kafka's topic-name rules. Clients expect INVALID_TOPIC_EXCEPTION with these messages.
//! (Topic configs are defined in `storage::topics`, where the compactor reads them too.)

pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Kafka's topic name rules.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(format!(
            "Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LEN} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
    {
        return Err(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// Kafka refuses names that differ from an existing one only by '.' vs '_' (metric collision).
pub fn collides(a: &str, b: &str) -> bool {
    a != b && a.replace('.', "_") == b.replace('.', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(validate_topic_name("orders.v1_x-2").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("a/b").is_err());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
        assert!(collides("a.b", "a_b"));
        assert!(!collides("a.b", "a.b"));
    }
}
