//! Who may call the registry: HTTP Basic authentication against the broker's users and the
//! broker's ACL authorizer, through [`Access`], which the broker implements. The operations are
//! Confluent's; `docs/schema-registry.md` lists the Kafka ACL each maps to.

use std::net::SocketAddr;

use futures::future::BoxFuture;
use telemetry::http::BasicCredentials;

/// Confluent's Schema Registry operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Read a subject's versions and schemas; read a schema by id (granted when the caller may
    /// read one subject holding it).
    SubjectRead,
    /// Register or look up a schema under a subject, test compatibility.
    SubjectWrite,
    SubjectDelete,
    SubjectCompatibilityRead,
    SubjectCompatibilityWrite,
    GlobalCompatibilityRead,
    GlobalCompatibilityWrite,
}

impl Operation {
    pub fn name(self) -> &'static str {
        match self {
            Operation::SubjectRead => "SUBJECT_READ",
            Operation::SubjectWrite => "SUBJECT_WRITE",
            Operation::SubjectDelete => "SUBJECT_DELETE",
            Operation::SubjectCompatibilityRead => "SUBJECT_COMPATIBILITY_READ",
            Operation::SubjectCompatibilityWrite => "SUBJECT_COMPATIBILITY_WRITE",
            Operation::GlobalCompatibilityRead => "GLOBAL_COMPATIBILITY_READ",
            Operation::GlobalCompatibilityWrite => "GLOBAL_COMPATIBILITY_WRITE",
        }
    }
}

pub use telemetry::http::Caller;

/// Authentication and authorization, decided by the process that owns the users and ACLs.
pub trait Access: Send + Sync {
    /// The caller of these credentials; `None` for absent, malformed or wrong ones (401).
    fn authenticate(
        &self,
        credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Option<Caller>>;

    /// Whether `caller` may do `operation` (on `subject` for subject operations).
    fn allows(&self, caller: &Caller, operation: Operation, subject: Option<&str>) -> bool;

    /// Whether [`Access::allows`] ever refuses: when not, reads by id skip finding the
    /// subjects that hold the id.
    fn authorizes(&self) -> bool {
        true
    }
}

/// Lets every caller do everything: the registry listener without authentication or ACLs.
pub struct Open;

impl Access for Open {
    fn authenticate(
        &self,
        _credentials: Option<BasicCredentials>,
        peer: SocketAddr,
    ) -> BoxFuture<'_, Option<Caller>> {
        Box::pin(async move { Some(Caller { user: None, peer }) })
    }

    fn allows(&self, _caller: &Caller, _operation: Operation, _subject: Option<&str>) -> bool {
        true
    }

    fn authorizes(&self) -> bool {
        false
    }
}
