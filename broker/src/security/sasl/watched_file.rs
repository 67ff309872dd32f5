//! A file the broker reads at start and again whenever it changes (the PLAIN users file, the
//! OAUTHBEARER JWKS): its size and modification time are looked at most once per
//! `recheck_interval`, on use, so no watcher thread is needed. A change that does not parse
//! keeps the previous contents (a half-written file must not lock every client out) and is
//! logged; only the first load is fatal.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often a watched file is looked at by default.
pub const RECHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Largest file read (a users file of 100,000 users, or a JWKS of hundreds of keys, is smaller).
pub const FILE_BYTES_MAX: u64 = 16 << 20;

#[derive(Debug, Clone, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{path} is invalid: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("{path} may be read by others (mode {mode:o}): make it readable by its owner only (chmod 600), as a private key")]
    Permissions { path: PathBuf, mode: u32 },
}

pub type Parse<T> = fn(&[u8]) -> Result<T, String>;

pub struct WatchedFile<T> {
    path: PathBuf,
    parse: Parse<T>,
    /// Refuse files that group or others may read (files holding secrets).
    private: bool,
    recheck_interval: Duration,
    state: Mutex<Loaded<T>>,
}

struct Loaded<T> {
    value: Arc<T>,
    stamp: (SystemTime, u64),
    checked_at: Instant,
}

impl<T: Send + Sync + 'static> WatchedFile<T> {
    /// Reads and parses the file once; fails when it cannot.
    pub async fn open(
        path: &Path,
        parse: Parse<T>,
        private: bool,
        recheck_interval: Duration,
    ) -> Result<WatchedFile<T>, FileError> {
        let (stamp, value) = load(path, parse, private).await?;
        Ok(WatchedFile {
            path: path.to_path_buf(),
            parse,
            private,
            recheck_interval,
            state: Mutex::new(Loaded {
                value: Arc::new(value),
                stamp,
                checked_at: Instant::now(),
            }),
        })
    }

    /// The contents, re-read first if the file changed since it was last looked at.
    pub async fn current(&self) -> Arc<T> {
        let (value, stamp, due) = {
            let state = self.lock();
            let due = state.checked_at.elapsed() >= self.recheck_interval;
            (state.value.clone(), state.stamp, due)
        };
        if !due {
            return value;
        }
        let fresh = match tokio::fs::metadata(&self.path).await {
            Ok(meta) if stamp_of(&meta) == stamp => None,
            Ok(_) => Some(load(&self.path, self.parse, self.private).await),
            Err(e) => Some(Err(read_error(&self.path, &e))),
        };
        let mut state = self.lock();
        state.checked_at = Instant::now();
        match fresh {
            None => {}
            Some(Ok((stamp, value))) => {
                tracing::info!(path = %self.path.display(), "reloaded changed file");
                state.value = Arc::new(value);
                state.stamp = stamp;
            }
            Some(Err(error)) => {
                tracing::warn!(%error, "keeping the previous contents of a changed file");
            }
        }
        state.value.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded<T>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

async fn load<T>(
    path: &Path,
    parse: Parse<T>,
    private: bool,
) -> Result<((SystemTime, u64), T), FileError> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| read_error(path, &e))?;
    if private {
        check_private(path, &meta)?;
    }
    if meta.len() > FILE_BYTES_MAX {
        return Err(FileError::Invalid {
            path: path.to_path_buf(),
            reason: format!("larger than {FILE_BYTES_MAX} bytes"),
        });
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| read_error(path, &e))?;
    let value = parse(&bytes).map_err(|reason| FileError::Invalid {
        path: path.to_path_buf(),
        reason,
    })?;
    Ok((stamp_of(&meta), value))
}

fn stamp_of(meta: &std::fs::Metadata) -> (SystemTime, u64) {
    (
        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        meta.len(),
    )
}

fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), FileError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(FileError::Permissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn read_error(path: &Path, error: &std::io::Error) -> FileError {
    FileError::Read {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn parse_lines(bytes: &[u8]) -> Result<Vec<String>, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        if text.contains("bad") {
            return Err("bad line".into());
        }
        Ok(text.lines().map(str::to_string).collect())
    }

    #[tokio::test]
    async fn a_change_is_read_and_a_broken_change_keeps_the_old_contents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "a\n").unwrap();
        let file = WatchedFile::open(&path, parse_lines, false, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(*file.current().await, vec!["a"]);
        std::fs::write(&path, "a\nb\n").unwrap();
        assert_eq!(*file.current().await, vec!["a", "b"]);
        std::fs::write(&path, "bad\nbad\nbad\n").unwrap();
        assert_eq!(*file.current().await, vec!["a", "b"]);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(*file.current().await, vec!["a", "b"]);
    }

    #[tokio::test]
    async fn a_private_file_readable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users");
        std::fs::write(&path, "a\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = WatchedFile::open(&path, parse_lines, true, RECHECK_INTERVAL).await;
        assert!(matches!(
            refused,
            Err(FileError::Permissions { mode: 0o644, .. })
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(
            WatchedFile::open(&path, parse_lines, true, RECHECK_INTERVAL)
                .await
                .is_ok()
        );
        assert!(WatchedFile::open(
            &dir.path().join("none"),
            parse_lines,
            true,
            RECHECK_INTERVAL
        )
        .await
        .is_err());
    }
}
