//! Opening a store from a URL: `file:///abs/path`, `memory://`, `s3://bucket/prefix`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};

use super::ObjectsError;

/// Settings for [`open_with`]. Timeouts and retries only apply to remote stores.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Time allowed to establish a connection.
    pub connect_timeout_ms: u64,
    /// Time allowed for one request, body included.
    pub request_timeout_ms: u64,
    /// Retries of one failed request (after the first attempt).
    pub max_retries: usize,
    /// Total time after the first attempt past which no retry starts.
    pub retry_timeout_ms: u64,
    /// fsync files and folders before a local put returns, as remote stores are durable on ack.
    pub local_fsync: bool,
    /// S3 settings applied after the `AWS_*` environment, by object_store's config key names
    /// (`aws_endpoint`, `aws_access_key_id`, `aws_secret_access_key`, `aws_region`, ...).
    pub s3_config: Vec<(String, String)>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            connect_timeout_ms: 5_000,
            request_timeout_ms: 30_000,
            max_retries: 3,
            retry_timeout_ms: 60_000,
            local_fsync: true,
            s3_config: Vec::new(),
        }
    }
}

/// `store` with the latency of `profile` added to every call (none: `store` itself).
pub fn with_latency(
    store: Arc<dyn ObjectStore>,
    profile: super::LatencyProfile,
) -> Arc<dyn ObjectStore> {
    if profile == super::LatencyProfile::None {
        return store;
    }
    tracing::warn!(
        ?profile,
        "object-store calls are delayed by a latency model (benchmarks only)"
    );
    let seed = u64::from(std::process::id()) ^ crate::clock::system_now_ms();
    Arc::new(super::ModeledObjectStore::wrap(
        store,
        super::ModeledLatency::new(profile, seed),
    ))
}

/// Opens the store a URL names, with default [`OpenOptions`].
pub fn open(url: &str) -> Result<Arc<dyn ObjectStore>, ObjectsError> {
    open_with(url, &OpenOptions::default())
}

/// Opens the store a URL names.
///
/// - `file:///abs/path`: a local folder, created if missing (a relative path after `file://`
///   is resolved against the working directory);
/// - `memory://`: a fresh in-memory store (each call returns a new, empty one);
/// - `s3://bucket[/prefix]`: S3 or an S3-compatible server, configured from the `AWS_*`
///   environment (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
///   `AWS_REGION`) and then `options.s3_config`. An `http://` endpoint is allowed; requests are
///   path-style (object_store's default), as emulators expect.
pub fn open_with(url: &str, options: &OpenOptions) -> Result<Arc<dyn ObjectStore>, ObjectsError> {
    if let Some(rest) = url.strip_prefix("file://") {
        open_local(url, rest, options)
    } else if let Some(rest) = url.strip_prefix("memory://") {
        if !rest.is_empty() && rest != "/" {
            return Err(invalid(url, "memory:// takes no path"));
        }
        Ok(Arc::new(InMemory::new()))
    } else if let Some(rest) = url.strip_prefix("s3://") {
        open_s3(url, rest, options)
    } else {
        Err(ObjectsError::UnsupportedScheme {
            url: url.to_owned(),
        })
    }
}

fn open_local(
    url: &str,
    rest: &str,
    options: &OpenOptions,
) -> Result<Arc<dyn ObjectStore>, ObjectsError> {
    if rest.is_empty() {
        return Err(invalid(url, "file:// needs a folder path"));
    }
    let folder = PathBuf::from(rest);
    let folder_error = |source| ObjectsError::LocalFolder {
        path: rest.to_owned(),
        source,
    };
    std::fs::create_dir_all(&folder).map_err(folder_error)?;
    let store = LocalFileSystem::new_with_prefix(&folder)
        .map_err(|source| ObjectsError::Build {
            url: url.to_owned(),
            source,
        })?
        .with_fsync(options.local_fsync);
    tracing::debug!(folder = %folder.display(), fsync = options.local_fsync, "opened local object store");
    if options.local_fsync {
        return Ok(Arc::new(super::folder::SyncedFolder::new(store)));
    }
    Ok(Arc::new(store))
}

fn open_s3(
    url: &str,
    rest: &str,
    options: &OpenOptions,
) -> Result<Arc<dyn ObjectStore>, ObjectsError> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(invalid(url, "s3:// needs a bucket name"));
    }
    let prefix = prefix.trim_end_matches('/');
    let build_error = |source| ObjectsError::Build {
        url: url.to_owned(),
        source,
    };

    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
            format!("{}ms", options.connect_timeout_ms),
        )
        .with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
            format!("{}ms", options.request_timeout_ms),
        )
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(50),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
            max_retries: options.max_retries,
            retry_timeout: Duration::from_millis(options.retry_timeout_ms),
        });
    for (key, value) in &options.s3_config {
        let key: AmazonS3ConfigKey = key.parse().map_err(build_error)?;
        builder = builder.with_config(key, value);
    }
    let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
    if endpoint
        .as_deref()
        .is_some_and(|e| e.starts_with("http://"))
    {
        builder = builder.with_allow_http(true);
    }
    let s3 = builder.build().map_err(build_error)?;
    tracing::debug!(
        bucket,
        prefix,
        endpoint = endpoint.as_deref().unwrap_or("aws"),
        "opened s3 object store"
    );
    if prefix.is_empty() {
        return Ok(Arc::new(s3));
    }
    let prefix = Path::parse(prefix).map_err(|e| invalid(url, &format!("bad prefix: {e}")))?;
    Ok(Arc::new(PrefixStore::new(s3, prefix)))
}

fn invalid(url: &str, reason: &str) -> ObjectsError {
    ObjectsError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_scheme_is_rejected() {
        assert!(matches!(
            open("gs://bucket"),
            Err(ObjectsError::UnsupportedScheme { .. })
        ));
        assert!(matches!(
            open("/plain/path"),
            Err(ObjectsError::UnsupportedScheme { .. })
        ));
    }

    #[test]
    fn s3_url_without_bucket_is_rejected() {
        assert!(matches!(
            open("s3://"),
            Err(ObjectsError::InvalidUrl { .. })
        ));
        assert!(matches!(
            open("s3:///prefix"),
            Err(ObjectsError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn memory_url_with_path_is_rejected() {
        assert!(open("memory://").is_ok());
        assert!(matches!(
            open("memory://x"),
            Err(ObjectsError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn file_url_creates_missing_folder() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a/b/objects");
        open(&format!("file://{}", folder.display())).unwrap();
        assert!(folder.is_dir());
    }

    #[test]
    fn s3_url_with_bad_config_key_is_rejected() {
        let options = OpenOptions {
            s3_config: vec![("no_such_key".into(), "x".into())],
            ..Default::default()
        };
        assert!(matches!(
            open_with("s3://bucket", &options),
            Err(ObjectsError::Build { .. })
        ));
    }
}
