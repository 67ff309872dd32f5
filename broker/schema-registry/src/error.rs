//! The errors of Confluent's API: each has its HTTP status and its `error_code`, answered as
//! `{"error_code": N, "message": "..."}`.

use metastore::MetaError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    #[error("Version {0} not found.")]
    VersionNotFound(String),
    #[error("Schema {0} not found")]
    SchemaNotFound(String),
    #[error("Subject '{0}' was soft deleted. Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    #[error(
        "Subject '{0}' Version {1} was soft deleted. Set permanent=true to delete permanently"
    )]
    VersionSoftDeleted(String, i32),
    #[error("Subject '{0}' Version {1} was not deleted first before being permanently deleted")]
    VersionNotSoftDeleted(String, i32),
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    SubjectConfigNotFound(String),
    #[error("Subject '{0}' does not have subject-level mode configured")]
    SubjectModeNotFound(String),
    #[error("Schema being registered is incompatible with an earlier schema for subject \"{subject}\", details: [{}]", details.join(", "))]
    Incompatible {
        subject: String,
        details: Vec<String>,
    },
    #[error("Invalid schema: {0}")]
    InvalidSchema(String),
    #[error("The specified version '{0}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"")]
    InvalidVersion(String),
    #[error("Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")]
    InvalidCompatibilityLevel,
    #[error("Invalid mode. Valid values are READWRITE, READONLY, IMPORT")]
    InvalidMode,
    #[error("{0}")]
    OperationNotPermitted(String),
    #[error("One or more references exist to the schema {{subject={0},version={1}}}")]
    ReferenceExists(String, i32),
    #[error("Overwrite new schema with id {0} is not permitted.")]
    IdInUse(i32),
    #[error("{0}")]
    BadRequest(String),
    #[error("Unauthorized")]
    Unauthenticated,
    #[error("User is denied operation {operation} on {resource}")]
    Forbidden { operation: String, resource: String },
    #[error("HTTP 404 Not Found")]
    NotFound,
    #[error("Error in the backend data store: {0}")]
    Store(String),
    #[error("Operation timed out")]
    Timeout,
}

impl RegistryError {
    /// The HTTP status and Confluent's `error_code`.
    pub fn codes(&self) -> (u16, u32) {
        use RegistryError::*;
        match self {
            SubjectNotFound(_) => (404, 40401),
            VersionNotFound(_) => (404, 40402),
            SchemaNotFound(_) => (404, 40403),
            SubjectSoftDeleted(_) => (404, 40404),
            SubjectNotSoftDeleted(_) => (404, 40405),
            VersionSoftDeleted(..) => (404, 40406),
            VersionNotSoftDeleted(..) => (404, 40407),
            SubjectConfigNotFound(_) => (404, 40408),
            SubjectModeNotFound(_) => (404, 40409),
            NotFound => (404, 404),
            Incompatible { .. } => (409, 409),
            InvalidSchema(_) => (422, 42201),
            InvalidVersion(_) => (422, 42202),
            InvalidCompatibilityLevel => (422, 42203),
            InvalidMode => (422, 42204),
            OperationNotPermitted(_) => (422, 42205),
            ReferenceExists(..) => (422, 42206),
            IdInUse(_) => (422, 42207),
            BadRequest(_) => (400, 400),
            Unauthenticated => (401, 401),
            Forbidden { .. } => (403, 403),
            Store(_) => (500, 50001),
            Timeout => (500, 50002),
        }
    }
}

impl From<MetaError> for RegistryError {
    fn from(error: MetaError) -> RegistryError {
        match error {
            MetaError::Timeout => RegistryError::Timeout,
            other => RegistryError::Store(other.to_string()),
        }
    }
}

impl From<serde_json::Error> for RegistryError {
    /// A stored record that does not parse: the store holds something we did not write.
    fn from(error: serde_json::Error) -> RegistryError {
        RegistryError::Store(format!("stored record unreadable: {error}"))
    }
}

pub type RegistryResult<T> = Result<T, RegistryError>;
