//! Which bindings a DescribeAcls or DeleteAcls filter selects, as Kafka's
//! `ResourcePatternFilter.matches` and `AccessControlEntryFilter.matches`.

use super::{AclBinding, AclOperation, PatternType, PermissionType, ResourceType, WILDCARD};

/// Matches resource patterns. `name` `None` matches any name. Pattern type ANY matches both
/// stored types by exact name; MATCH also selects the LITERAL `*` and the PREFIXED patterns
/// that would apply to a resource called `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternFilter {
    pub resource_type: ResourceType,
    pub name: Option<String>,
    pub pattern_type: PatternType,
}

/// Matches access control entries; `None` fields match any value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryFilter {
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: AclOperation,
    pub permission: PermissionType,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclBindingFilter {
    pub pattern: PatternFilter,
    pub entry: EntryFilter,
}

impl AclBindingFilter {
    /// A filter from the wire fields of DescribeAcls and DeleteAcls (unknown codes decode as
    /// UNKNOWN, which [`Self::check_known`] refuses).
    pub fn from_codes(
        resource_type: i8,
        name: Option<String>,
        pattern_type: i8,
        principal: Option<String>,
        host: Option<String>,
        operation: i8,
        permission: i8,
    ) -> AclBindingFilter {
        AclBindingFilter {
            pattern: PatternFilter {
                resource_type: ResourceType::from_code(resource_type),
                name,
                pattern_type: PatternType::from_code(pattern_type),
            },
            entry: EntryFilter {
                principal,
                host,
                operation: AclOperation::from_code(operation),
                permission: PermissionType::from_code(permission),
            },
        }
    }

    /// Kafka refuses filters with an UNKNOWN field; `Err` names the part (its message).
    pub fn check_known(&self) -> Result<(), &'static str> {
        if self.pattern.resource_type == ResourceType::Unknown
            || self.pattern.pattern_type == PatternType::Unknown
        {
            return Err("Unknown patternFilter.");
        }
        if self.entry.operation == AclOperation::Unknown
            || self.entry.permission == PermissionType::Unknown
        {
            return Err("Unknown entryFilter.");
        }
        Ok(())
    }

    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(binding) && self.entry.matches(binding)
    }
}

impl PatternFilter {
    fn matches(&self, binding: &AclBinding) -> bool {
        let pattern = &binding.pattern;
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != pattern.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == pattern.pattern_type {
            return *name == pattern.name;
        }
        // MATCH: the patterns that apply to a resource named `name`.
        match pattern.pattern_type {
            PatternType::Literal => *name == pattern.name || pattern.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&pattern.name),
            _ => false,
        }
    }
}

impl EntryFilter {
    fn matches(&self, binding: &AclBinding) -> bool {
        let entry = &binding.entry;
        self.principal
            .as_ref()
            .is_none_or(|p| *p == entry.principal)
            && self.host.as_ref().is_none_or(|h| *h == entry.host)
            && (self.operation == AclOperation::Any || self.operation == entry.operation)
            && (self.permission == PermissionType::Any || self.permission == entry.permission)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AccessControlEntry, ResourcePattern};
    use super::*;

    fn acl(name: &str, pattern_type: PatternType) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::Topic,
                name: name.into(),
                pattern_type,
            },
            entry: AccessControlEntry {
                principal: "User:alice".into(),
                host: "*".into(),
                operation: AclOperation::Read,
                permission: PermissionType::Allow,
            },
        }
    }

    fn filter(name: Option<&str>, pattern_type: PatternType) -> AclBindingFilter {
        AclBindingFilter {
            pattern: PatternFilter {
                resource_type: ResourceType::Any,
                name: name.map(str::to_string),
                pattern_type,
            },
            entry: EntryFilter {
                principal: None,
                host: None,
                operation: AclOperation::Any,
                permission: PermissionType::Any,
            },
        }
    }

    // Cases of Kafka's ResourcePatternFilterTest.
    #[test]
    fn pattern_filters_select_as_kafkas() {
        use PatternType::*;
        assert!(filter(Some("Name"), Literal).matches(&acl("Name", Literal)));
        assert!(!filter(Some("Name"), Literal).matches(&acl("Name", Prefixed)));
        assert!(!filter(Some("Name"), Literal).matches(&acl("*", Literal)));
        assert!(filter(Some("Name"), Any).matches(&acl("Name", Prefixed)));
        assert!(!filter(Some("Name"), Any).matches(&acl("*", Literal)));
        assert!(filter(Some("Name"), Match).matches(&acl("*", Literal)));
        assert!(filter(Some("Name"), Match).matches(&acl("Na", Prefixed)));
        assert!(filter(Some("Name"), Match).matches(&acl("Name", Prefixed)));
        assert!(!filter(Some("Name"), Match).matches(&acl("Name2", Prefixed)));
        assert!(!filter(Some("Name"), Match).matches(&acl("Nam", Literal)));
        assert!(filter(None, Match).matches(&acl("anything", Prefixed)));
        assert!(filter(Some("Name"), Prefixed).matches(&acl("Name", Prefixed)));
        assert!(!filter(Some("Name"), Prefixed).matches(&acl("Na", Prefixed)));
    }

    #[test]
    fn entry_filters_match_fields_exactly_or_any() {
        let mut f = filter(None, PatternType::Any);
        f.entry.principal = Some("User:alice".into());
        assert!(f.matches(&acl("t", PatternType::Literal)));
        f.entry.principal = Some("User:*".into());
        assert!(
            !f.matches(&acl("t", PatternType::Literal)),
            "no wildcard in filters"
        );
        f.entry.principal = None;
        f.entry.operation = AclOperation::Describe;
        assert!(
            !f.matches(&acl("t", PatternType::Literal)),
            "no implied ops in filters"
        );
    }

    #[test]
    fn unknown_parts_are_named() {
        let mut f = filter(None, PatternType::Unknown);
        assert_eq!(f.check_known(), Err("Unknown patternFilter."));
        f.pattern.pattern_type = PatternType::Any;
        f.entry.permission = PermissionType::Unknown;
        assert_eq!(f.check_known(), Err("Unknown entryFilter."));
    }
}
