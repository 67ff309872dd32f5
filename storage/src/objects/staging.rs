//! Upload staging files of the local-folder store. object_store's `LocalFileSystem` writes every
//! PUT and multipart upload to `<key>#<n>` and renames it into place when done; a process killed
//! in between leaves the staging file behind, and listings never show it (object_store hides
//! such names), so nothing else would ever delete it.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The folder a `file://` URL names, as [`super::open`] resolves it; `None` for other stores.
pub fn local_folder(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("file://")?;
    (!rest.is_empty()).then(|| PathBuf::from(rest))
}

/// Whether `name` is a staging file name: `<name>#<digits>`.
fn is_staging_name(name: &str) -> bool {
    name.rsplit_once('#').is_some_and(|(base, suffix)| {
        !base.is_empty() && !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit())
    })
}

/// What a sweep found and removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StagingSweep {
    pub files_removed: u64,
    pub bytes_removed: u64,
    /// Staging files left because they were written to recently (an upload may be running).
    pub files_kept: u64,
}

/// Removes the staging files under `root` not modified for `idle_for` (an upload in progress
/// writes its file continuously, so an idle one belongs to a dead process). Entries that vanish
/// or cannot be read during the walk are skipped; only failing to read `root` itself is an
/// error.
pub fn sweep_staging_files(root: &Path, idle_for: Duration) -> io::Result<StagingSweep> {
    let cutoff = SystemTime::now()
        .checked_sub(idle_for)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut sweep = StagingSweep::default();
    let mut folders = vec![root.to_path_buf()];
    let mut first = true;
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(error) if first => return Err(error),
            Err(_) => continue,
        };
        first = false;
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                folders.push(entry.path());
                continue;
            }
            if !kind.is_file() || !entry.file_name().to_str().is_some_and(is_staging_name) {
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.modified().map_or(true, |modified| modified > cutoff) {
                sweep.files_kept += 1;
                continue;
            }
            if std::fs::remove_file(entry.path()).is_ok() {
                tracing::info!(path = %entry.path().display(), bytes = meta.len(), "removed abandoned upload staging file");
                sweep.files_removed += 1;
                sweep.bytes_removed += meta.len();
            }
        }
    }
    Ok(sweep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, bytes: usize, age: Duration) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = std::fs::File::create(path).unwrap();
        file.set_len(bytes as u64).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    #[test]
    fn idle_staging_files_go_and_everything_else_stays() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let hour = Duration::from_secs(3600);
        write(&root.join("compacted/s1/f.parquet#1"), 100, hour);
        write(&root.join("wal/2026/x#12"), 20, hour);
        write(&root.join("compacted/s1/g.parquet#2"), 5, Duration::ZERO);
        write(&root.join("compacted/s1/f.parquet"), 7, hour);
        write(&root.join("wal/2026/odd#name"), 7, hour);
        write(&root.join("wal/2026/#3"), 7, hour);
        let sweep = sweep_staging_files(root, Duration::from_secs(600)).unwrap();
        assert_eq!(
            sweep,
            StagingSweep {
                files_removed: 2,
                bytes_removed: 120,
                files_kept: 1
            }
        );
        assert!(!root.join("compacted/s1/f.parquet#1").exists());
        assert!(!root.join("wal/2026/x#12").exists());
        for kept in [
            "compacted/s1/g.parquet#2",
            "compacted/s1/f.parquet",
            "wal/2026/odd#name",
            "wal/2026/#3",
        ] {
            assert!(root.join(kept).exists(), "{kept} was removed");
        }
    }

    #[test]
    fn a_missing_root_is_an_error_and_urls_name_their_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(sweep_staging_files(&dir.path().join("absent"), Duration::ZERO).is_err());
        assert_eq!(
            local_folder("file:///data/objects"),
            Some(PathBuf::from("/data/objects"))
        );
        assert_eq!(local_folder("s3://bucket/prefix"), None);
        assert_eq!(local_folder("memory://"), None);
        assert_eq!(local_folder("file://"), None);
    }
}
