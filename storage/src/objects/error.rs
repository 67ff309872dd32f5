/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    /// The URL names a scheme we do not serve (supported: `file://`, `memory://`, `s3://`).
    #[error("unsupported object store url scheme in {url:?}")]
    UnsupportedScheme { url: String },
    /// The URL has a supported scheme but a malformed rest (empty bucket, bad prefix, ...).
    #[error("invalid object store url {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
    /// The local folder for a `file://` store could not be created or resolved.
    #[error("cannot prepare object folder {path:?}: {source}")]
    LocalFolder {
        path: String,
        source: std::io::Error,
    },
    /// The object_store builder rejected the configuration (bad credentials setting, bad endpoint).
    #[error("cannot build object store for {url:?}: {source}")]
    Build {
        url: String,
        source: object_store::Error,
    },
}
