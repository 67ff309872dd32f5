//! The authorizer every handler asks, with Kafka's StandardAuthorizer semantics: super users
//! may do anything; otherwise the ACLs on the resource's exact name, on every PREFIXED name it
//! starts with and on the LITERAL `*` decide, for the principal and `User:*`, from the client's
//! host or `*`; DENY wins over ALLOW; ALLOW READ/WRITE/DELETE/ALTER imply DESCRIBE, ALLOW
//! ALTER_CONFIGS implies DESCRIBE_CONFIGS, ALL is every operation; with no ACL matching, a
//! resource that has ACLs for others is refused, one without any follows
//! `--allow-everyone-if-no-acl-found` (default: refused).
//!
//! `--authorizer none` (the default) checks nothing, as Kafka without `authorizer.class.name`,
//! and the ACL APIs answer SECURITY_DISABLED. With `acl`, decisions read the in-memory index
//! ([`store`]) and never the MetaStore. What each API checks is [`operations`].

mod index;
pub mod operations;
mod store;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use metastore::{MetaError, MetaStore};

pub use index::{AclIndex, Asker, Verdict};
pub use operations::Rule;
pub use store::{AclError, AclStore};

use super::acl::{
    AclOperation, PatternType, PermissionType, ResourceType, WILDCARD, WILDCARD_PRINCIPAL,
};
use super::Principal;
use crate::handlers::RequestContext;

/// Which authorizer a broker runs (`--authorizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizerKind {
    /// Nothing is checked.
    None,
    /// ACLs from the MetaStore, as Kafka's StandardAuthorizer.
    Acl,
}

impl AuthorizerKind {
    pub fn parse(text: &str) -> Option<AuthorizerKind> {
        match text {
            "none" => Some(AuthorizerKind::None),
            "acl" => Some(AuthorizerKind::Acl),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct AuthorizerConfig {
    pub kind: AuthorizerKind,
    /// `Type:name` of each super user.
    pub super_users: Vec<String>,
    pub allow_everyone_if_no_acl_found: bool,
    /// ACLs CreateAcls may store in the cluster at most.
    pub acls_max: usize,
}

/// Kafka's `super.users`: `;`-separated principals, blanks ignored, each `Type:name`.
pub fn parse_super_users(text: &str) -> Result<Vec<String>, String> {
    let mut users = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        if Principal::parse(entry).is_none() {
            return Err(format!(
                "{entry:?} is not a principal: write Type:name, e.g. User:admin"
            ));
        }
        users.push(entry.to_string());
    }
    Ok(users)
}

/// What decides beyond the ACLs.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub super_users: HashSet<String>,
    pub allow_everyone_if_no_acl_found: bool,
}

/// How a decision was reached, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    SuperUser,
    Acls(Verdict),
}

impl Decision {
    pub fn allowed(&self, policy: &Policy) -> bool {
        match self {
            Decision::SuperUser => true,
            Decision::Acls(Verdict::Allow(_)) => true,
            Decision::Acls(Verdict::Deny(_)) => false,
            Decision::Acls(Verdict::Unmatched { resource_has_acls }) => {
                !resource_has_acls && policy.allow_everyone_if_no_acl_found
            }
        }
    }
}

impl Policy {
    /// StandardAuthorizerData's `authorize` on one LITERAL resource.
    pub fn decide(
        &self,
        index: &AclIndex,
        asker: Asker<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> Decision {
        if self.super_users.contains(asker.principal) {
            return Decision::SuperUser;
        }
        Decision::Acls(index.verdict(asker, operation, resource_type, name))
    }

    pub fn allows(
        &self,
        index: &AclIndex,
        asker: Asker<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.decide(index, asker, operation, resource_type, name)
            .allowed(self)
    }

    /// Kafka's `Authorizer.authorizeByResourceType` (KIP-679: an idempotent producer needs
    /// WRITE on some topic): whether `operation` is allowed on at least one resource of the
    /// type. Implied operations do not count here, and neither does the default, except
    /// through the first check, on a resource named `hardcode`, as in Kafka.
    pub fn allows_on_any(
        &self,
        index: &AclIndex,
        asker: Asker<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if self.allows(index, asker, operation, resource_type, "hardcode") {
            return true;
        }
        let mut deny_literal = HashSet::new();
        let mut deny_prefixed = HashSet::new();
        let mut allows = Vec::new();
        let mut wildcard_allowed = false;
        for binding in index.bindings_of(resource_type) {
            let entry = &binding.entry;
            let applies = (entry.host == asker.host || entry.host == WILDCARD)
                && (entry.principal == asker.principal || entry.principal == WILDCARD_PRINCIPAL)
                && (entry.operation == operation || entry.operation == AclOperation::All);
            if !applies {
                continue;
            }
            let pattern = binding.pattern;
            match (entry.permission, pattern.pattern_type) {
                (PermissionType::Deny, PatternType::Literal) if pattern.name == WILDCARD => {
                    return false
                }
                (PermissionType::Deny, PatternType::Literal) => {
                    deny_literal.insert(pattern.name);
                }
                (PermissionType::Deny, _) => {
                    deny_prefixed.insert(pattern.name);
                }
                // A DENY on `*` seen later still wins.
                (PermissionType::Allow, PatternType::Literal) if pattern.name == WILDCARD => {
                    wildcard_allowed = true
                }
                (PermissionType::Allow, pattern_type) => allows.push((pattern_type, pattern.name)),
                _ => {}
            }
        }
        wildcard_allowed
            || allows.iter().any(|(pattern_type, name)| {
                let denied_literally =
                    *pattern_type == PatternType::Literal && deny_literal.contains(name);
                let dominated = name
                    .char_indices()
                    .map(|(i, c)| &name[..i + c.len_utf8()])
                    .any(|prefix| deny_prefixed.contains(prefix));
                !denied_literally && !dominated
            })
    }
}

/// The client's address as Kafka compares it with ACL hosts: Java's
/// `InetAddress.getHostAddress()`, which writes IPv6 in full (`0:0:0:0:0:0:0:1`, not `::1`)
/// and IPv4-mapped addresses as IPv4.
pub fn host_address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

/// The authorizer of one broker.
pub struct Authorizer {
    acl: Option<AclAuthorizer>,
}

struct AclAuthorizer {
    policy: Policy,
    store: Arc<AclStore>,
}

impl Authorizer {
    /// `--authorizer none`: everything is allowed.
    pub fn none() -> Authorizer {
        Authorizer { acl: None }
    }

    /// The configured authorizer; with ACLs, loads them and follows their changes.
    pub async fn open(
        config: &AuthorizerConfig,
        meta: Arc<dyn MetaStore>,
    ) -> Result<Authorizer, MetaError> {
        if config.kind == AuthorizerKind::None {
            return Ok(Authorizer::none());
        }
        let store = AclStore::open(meta, config.acls_max).await?;
        let policy = Policy {
            super_users: config.super_users.iter().cloned().collect(),
            allow_everyone_if_no_acl_found: config.allow_everyone_if_no_acl_found,
        };
        tracing::info!(super_users = ?config.super_users, allow_everyone_if_no_acl_found = policy.allow_everyone_if_no_acl_found, "acl authorizer started");
        Ok(Authorizer {
            acl: Some(AclAuthorizer { policy, store }),
        })
    }

    pub fn enabled(&self) -> bool {
        self.acl.is_some()
    }

    /// The ACLs, for the ACL APIs; `None` without an authorizer (SECURITY_DISABLED).
    pub fn acls(&self) -> Option<&AclStore> {
        self.acl.as_ref().map(|a| a.store.as_ref())
    }

    /// Whether `context` may do what `rule` checks on the resource `name`. A refusal is
    /// logged at debug with who asked for what.
    pub fn allows(&self, context: &RequestContext, rule: &Rule, name: &str) -> bool {
        self.decide(context, rule, name, true)
    }

    /// [`Self::allows`] for checks that only filter what is listed (all topics of a Metadata,
    /// ListGroups): a refusal is logged at trace, as Kafka's `logIfDenied = false`.
    pub fn allows_quietly(&self, context: &RequestContext, rule: &Rule, name: &str) -> bool {
        self.decide(context, rule, name, false)
    }

    /// Whether `principal` from `peer` may do `operation` on the resource: for the HTTP
    /// listener, which serves no Kafka API and so has no [`Rule`]. A refusal is logged at debug.
    pub fn allows_http(
        &self,
        principal: &Principal,
        peer: IpAddr,
        path: &str,
        (operation, resource, name): (AclOperation, ResourceType, &str),
    ) -> bool {
        let Some(acl) = &self.acl else {
            return true;
        };
        let (principal, host) = (principal.to_string(), host_address(peer));
        let asker = Asker {
            principal: &principal,
            host: &host,
        };
        let decision = acl
            .policy
            .decide(&acl.store.read(), asker, operation, resource, name);
        let allowed = decision.allowed(&acl.policy);
        if !allowed {
            tracing::debug!(principal, host, path, %operation, resource_type = %resource, resource = name, "http request denied");
        }
        allowed
    }

    /// `Err(the rule's refusal code)` when refused.
    pub fn check(
        &self,
        context: &RequestContext,
        rule: &Rule,
        name: &str,
    ) -> Result<(), ResponseError> {
        if self.allows(context, rule, name) {
            Ok(())
        } else {
            Err(rule.error.unwrap_or(ResponseError::UnknownServerError))
        }
    }

    fn decide(&self, context: &RequestContext, rule: &Rule, name: &str, log_denied: bool) -> bool {
        let Some(acl) = &self.acl else {
            return true;
        };
        let (principal, host) = (
            context.principal.to_string(),
            host_address(context.peer.ip()),
        );
        let asker = Asker {
            principal: &principal,
            host: &host,
        };
        let decision = acl.policy.decide(
            &acl.store.read(),
            asker,
            rule.operation,
            rule.resource,
            name,
        );
        let allowed = decision.allowed(&acl.policy);
        if !allowed {
            let reason = match &decision {
                Decision::Acls(Verdict::Deny(binding)) => format!("denied by {binding}"),
                Decision::Acls(Verdict::Unmatched {
                    resource_has_acls: true,
                }) => "no acl allows it (the resource has acls)".to_string(),
                _ => "no acl allows it (default deny)".to_string(),
            };
            if log_denied {
                tracing::debug!(principal, host, api = ?rule.api, operation = %rule.operation, resource_type = %rule.resource, resource = name, client_id = %context.client_id, reason, "request denied");
            } else {
                tracing::trace!(principal, host, api = ?rule.api, operation = %rule.operation, resource_type = %rule.resource, resource = name, reason, "request denied");
            }
        }
        allowed
    }

    /// Kafka's `authorized_operations` bit field for a resource: the supported operations the
    /// principal may do (all of them without an authorizer).
    pub fn authorized_operations(
        &self,
        context: &RequestContext,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        let ops = resource_type.supported_operations();
        let allowed: Vec<AclOperation> = match &self.acl {
            None => ops.to_vec(),
            Some(acl) => {
                let (principal, host) = (
                    context.principal.to_string(),
                    host_address(context.peer.ip()),
                );
                let asker = Asker {
                    principal: &principal,
                    host: &host,
                };
                let index = acl.store.read();
                ops.iter()
                    .copied()
                    .filter(|op| acl.policy.allows(&index, asker, *op, resource_type, name))
                    .collect()
            }
        };
        allowed.iter().fold(0, |bits, op| bits | (1 << op.code()))
    }

    /// Whether `operation` is allowed on at least one resource of the type (see
    /// [`Policy::allows_on_any`]).
    pub fn allows_on_any(
        &self,
        context: &RequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        let Some(acl) = &self.acl else {
            return true;
        };
        let (principal, host) = (
            context.principal.to_string(),
            host_address(context.peer.ip()),
        );
        let asker = Asker {
            principal: &principal,
            host: &host,
        };
        acl.policy
            .allows_on_any(&acl.store.read(), asker, operation, resource_type)
    }
}
