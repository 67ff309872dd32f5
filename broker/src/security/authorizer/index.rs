//! The ACLs of every broker's memory, indexed the way StandardAuthorizer searches them: per
//! resource type, LITERAL names (the `*` wildcard among them) in a hash map and PREFIXED names
//! in an ordered map, so that deciding on a resource costs a hash lookup for its name and for
//! `*`, plus one ordered lookup per prefix ACL that applies (at most one per character of the
//! name). Nothing is read from the MetaStore on a check.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use crate::security::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, PatternType, PermissionType,
    ResourcePattern, ResourceType, WILDCARD, WILDCARD_PRINCIPAL,
};

/// What the ACLs say about one action, before super users and the default apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A DENY ACL matched (DENY wins over any ALLOW).
    Deny(AclBinding),
    Allow(AclBinding),
    /// No ACL matched the principal, host and operation. `resource_has_acls`: some ACL applies
    /// to the resource (for anyone), which makes the answer DENY whatever the default.
    Unmatched {
        resource_has_acls: bool,
    },
}

/// Who asks, from where, as ACLs name them.
#[derive(Debug, Clone, Copy)]
pub struct Asker<'a> {
    /// `Type:name`.
    pub principal: &'a str,
    /// The client's address as Java prints it (`InetAddress.getHostAddress`).
    pub host: &'a str,
}

#[derive(Debug, Default)]
struct Section {
    literal: HashMap<String, Vec<AccessControlEntry>>,
    prefixed: BTreeMap<String, Vec<AccessControlEntry>>,
}

#[derive(Debug, Default)]
pub struct AclIndex {
    sections: HashMap<ResourceType, Section>,
    count: usize,
}

impl AclIndex {
    pub fn from_bindings(bindings: impl IntoIterator<Item = AclBinding>) -> AclIndex {
        let mut index = AclIndex::default();
        for binding in bindings {
            index.insert(binding);
        }
        index
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn contains(&self, binding: &AclBinding) -> bool {
        let pattern = &binding.pattern;
        self.sections
            .get(&pattern.resource_type)
            .is_some_and(|section| {
                let entries = match pattern.pattern_type {
                    PatternType::Prefixed => section.prefixed.get(&pattern.name),
                    _ => section.literal.get(&pattern.name),
                };
                entries.is_some_and(|e| e.contains(&binding.entry))
            })
    }

    /// Adds a binding; `false` if it was there already.
    pub fn insert(&mut self, binding: AclBinding) -> bool {
        let AclBinding { pattern, entry } = binding;
        let entries = self.entries_mut(&pattern);
        if entries.contains(&entry) {
            return false;
        }
        entries.push(entry);
        self.count += 1;
        true
    }

    /// Removes a binding; `false` if it was not there.
    pub fn remove(&mut self, binding: &AclBinding) -> bool {
        let pattern = &binding.pattern;
        let Some(section) = self.sections.get_mut(&pattern.resource_type) else {
            return false;
        };
        let map_entries = match pattern.pattern_type {
            PatternType::Prefixed => section.prefixed.get_mut(&pattern.name),
            _ => section.literal.get_mut(&pattern.name),
        };
        let Some(entries) = map_entries else {
            return false;
        };
        let before = entries.len();
        entries.retain(|e| *e != binding.entry);
        let removed = entries.len() < before;
        if entries.is_empty() {
            match pattern.pattern_type {
                PatternType::Prefixed => section.prefixed.remove(&pattern.name),
                _ => section.literal.remove(&pattern.name),
            };
        }
        if removed {
            self.count -= 1;
        }
        removed
    }

    fn entries_mut(&mut self, pattern: &ResourcePattern) -> &mut Vec<AccessControlEntry> {
        let section = self.sections.entry(pattern.resource_type).or_default();
        match pattern.pattern_type {
            PatternType::Prefixed => section.prefixed.entry(pattern.name.clone()).or_default(),
            _ => section.literal.entry(pattern.name.clone()).or_default(),
        }
    }

    /// Every binding the filter selects, in a stable order (type, pattern, entry).
    pub fn matching(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let mut found: Vec<AclBinding> = self
            .bindings()
            .filter(|binding| filter.matches(binding))
            .collect();
        found.sort();
        found
    }

    /// Every binding, in no particular order.
    pub fn bindings(&self) -> impl Iterator<Item = AclBinding> + '_ {
        self.sections
            .keys()
            .flat_map(|resource_type| self.bindings_of(*resource_type))
    }

    /// Every binding on one resource type, in no particular order.
    pub fn bindings_of(
        &self,
        resource_type: ResourceType,
    ) -> impl Iterator<Item = AclBinding> + '_ {
        self.sections
            .get(&resource_type)
            .into_iter()
            .flat_map(move |section| {
                let literal = section
                    .literal
                    .iter()
                    .map(|(name, entries)| (name, PatternType::Literal, entries));
                let prefixed = section
                    .prefixed
                    .iter()
                    .map(|(name, entries)| (name, PatternType::Prefixed, entries));
                literal
                    .chain(prefixed)
                    .flat_map(move |(name, pattern_type, entries)| {
                        entries.iter().map(move |entry| AclBinding {
                            pattern: ResourcePattern {
                                resource_type,
                                name: name.clone(),
                                pattern_type,
                            },
                            entry: entry.clone(),
                        })
                    })
            })
    }

    /// StandardAuthorizerData's `findAclRule`: the ACLs on the resource's name, on every
    /// prefix of it, then on `*` (see below for names starting with `*`), for this principal
    /// (or `User:*`) and host.
    pub fn verdict(
        &self,
        asker: Asker<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> Verdict {
        let Some(section) = self.sections.get(&resource_type) else {
            return Verdict::Unmatched {
                resource_has_acls: false,
            };
        };
        let mut found = Found::default();
        let pattern = |name: &str, pattern_type| ResourcePattern {
            resource_type,
            name: name.to_string(),
            pattern_type,
        };
        if let Some(entries) = section.literal.get(name) {
            found.scan(
                &pattern(name, PatternType::Literal),
                entries,
                asker,
                operation,
            );
        }
        for (prefix, entries) in prefixes_of(&section.prefixed, name) {
            found.scan(
                &pattern(prefix, PatternType::Prefixed),
                entries,
                asker,
                operation,
            );
        }
        // Kafka's search walks its ACLs in reverse name order and skips a LITERAL ACL whose
        // name is a proper prefix of the resource's, before it can tell that ACL is the `*`
        // wildcard: so `*` applies to every name except those starting with `*` (other than
        // `*` itself, which the exact lookup above covers). Kept, to answer as Kafka does.
        if !name.starts_with(WILDCARD) {
            if let Some(entries) = section.literal.get(WILDCARD) {
                found.scan(
                    &pattern(WILDCARD, PatternType::Literal),
                    entries,
                    asker,
                    operation,
                );
            }
        }
        found.verdict()
    }
}

/// What the scan of the applicable ACLs found.
#[derive(Default)]
struct Found {
    deny: Option<AclBinding>,
    allow: Option<AclBinding>,
    resource_has_acls: bool,
}

impl Found {
    fn scan(
        &mut self,
        pattern: &ResourcePattern,
        entries: &[AccessControlEntry],
        asker: Asker<'_>,
        operation: AclOperation,
    ) {
        self.resource_has_acls |= !entries.is_empty();
        if self.deny.is_some() {
            return;
        }
        for entry in entries {
            let binding = || AclBinding {
                pattern: pattern.clone(),
                entry: entry.clone(),
            };
            match applies(entry, asker, operation) {
                Some(PermissionType::Deny) => {
                    self.deny = Some(binding());
                    return;
                }
                Some(_) if self.allow.is_none() => self.allow = Some(binding()),
                _ => {}
            }
        }
    }

    fn verdict(self) -> Verdict {
        match (self.deny, self.allow) {
            (Some(deny), _) => Verdict::Deny(deny),
            (None, Some(allow)) => Verdict::Allow(allow),
            (None, None) => Verdict::Unmatched {
                resource_has_acls: self.resource_has_acls,
            },
        }
    }
}

/// StandardAuthorizerData's `findResult`: whether an entry (on a resource that applies)
/// decides the action, and how. ALLOW READ, WRITE, DELETE and ALTER imply DESCRIBE; ALLOW
/// ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL matches every operation. A DENY implies nothing:
/// DENY READ does not deny DESCRIBE.
pub fn applies(
    entry: &AccessControlEntry,
    asker: Asker<'_>,
    operation: AclOperation,
) -> Option<PermissionType> {
    use AclOperation::*;
    if entry.principal != asker.principal && entry.principal != WILDCARD_PRINCIPAL {
        return None;
    }
    if entry.host != WILDCARD && entry.host != asker.host {
        return None;
    }
    if entry.operation != All {
        let implied = match (entry.permission, operation) {
            (PermissionType::Allow, Describe) => {
                matches!(entry.operation, Describe | Read | Write | Delete | Alter)
            }
            (PermissionType::Allow, DescribeConfigs) => {
                matches!(entry.operation, DescribeConfigs | AlterConfigs)
            }
            _ => entry.operation == operation,
        };
        if !implied {
            return None;
        }
    }
    Some(entry.permission)
}

/// The PREFIXED names in `map` that `name` starts with, longest first. Walks down from the
/// greatest key not above `name`: if it is a prefix, it applies; either way no key between it
/// and `name` does, and the next candidate is at most the part of `name` it shares.
fn prefixes_of<'m, V>(map: &'m BTreeMap<String, V>, name: &str) -> Vec<(&'m str, &'m V)> {
    let mut found = Vec::new();
    let mut bound: &str = name;
    let mut inclusive = true;
    loop {
        let upper = if inclusive {
            Bound::Included(bound)
        } else {
            Bound::Excluded(bound)
        };
        let candidate = map.range::<str, _>((Bound::Unbounded, upper)).next_back();
        let Some((key, value)) = candidate else {
            return found;
        };
        let shared = common_prefix_len(key, name);
        if shared == key.len() {
            found.push((key.as_str(), value));
            bound = key.as_str();
            inclusive = false;
        } else {
            bound = &name[..shared];
            inclusive = true;
        }
    }
}

/// Length in bytes of the longest common prefix, at a character boundary of both.
fn common_prefix_len(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or_else(|| a.len().min(b.len()), |((i, _), _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_walk_finds_exactly_the_prefixes() {
        let keys = [
            "", "f", "fa", "fb", "foo", "foob", "foobar", "fooc", "g", "é", "éa",
        ];
        let map: BTreeMap<String, ()> = keys.iter().map(|k| (k.to_string(), ())).collect();
        for name in ["foobar", "foobaz", "foo", "fa", "f", "x", "", "éaz", "fooé"] {
            let mut got: Vec<&str> = prefixes_of(&map, name)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            got.sort();
            let mut want: Vec<&str> = keys
                .iter()
                .copied()
                .filter(|k| name.starts_with(k))
                .collect();
            want.sort();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn common_prefix_stops_at_character_boundaries() {
        assert_eq!(common_prefix_len("éa", "èa"), 0);
        assert_eq!(common_prefix_len("abc", "abd"), 2);
        assert_eq!(common_prefix_len("ab", "abc"), 2);
    }
}
