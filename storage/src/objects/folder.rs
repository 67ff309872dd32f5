//! The local-folder store (`file://`) with fsync on. Every call but a single-request put goes to
//! object_store's `LocalFileSystem`; a put is done the same way (a staging file `<key>#<n>`
//! renamed into place, so no reader sees a partial object, and a crash leaves only a staging
//! file for `sweep_staging_files`), with its fsyncs grouped: the file's data by `fdatasync`,
//! then ONE fsync of the folder for every rename into that folder made before that fsync
//! started. Concurrent puts into one folder (the WAL's hourly folder) share the folder fsync
//! instead of paying one each, as the embedded MetaStore shares one commit fsync among the
//! index commits that follow them.

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, Extensions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    Result,
};

const STORE: &str = "SyncedFolder";
/// Staging names tried before a put gives up (each is taken only by a put still running or
/// one a crash left behind).
const STAGING_ATTEMPTS_MAX: u32 = 1_000;

#[derive(Debug)]
pub struct SyncedFolder {
    inner: LocalFileSystem,
    folders: Arc<FolderSyncs>,
}

impl SyncedFolder {
    /// `inner` must have fsync on: the calls it serves (multipart uploads, copies, renames,
    /// deletes) keep their own fsyncs.
    pub fn new(inner: LocalFileSystem) -> SyncedFolder {
        SyncedFolder {
            inner,
            folders: Arc::new(FolderSyncs::default()),
        }
    }
}

impl fmt::Display for SyncedFolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{STORE}({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for SyncedFolder {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        // Create and Update need the inner store's checks; only plain puts are grouped.
        if !matches!(opts.mode, PutMode::Overwrite) || !opts.attributes.is_empty() {
            return self.inner.put_opts(location, payload, opts).await;
        }
        let path = self.inner.path_to_filesystem(location)?;
        let folders = self.folders.clone();
        tokio::task::spawn_blocking(move || put_file(&path, &payload, &folders))
            .await
            .map_err(|source| object_store::Error::JoinError { source })?
            .map_err(|source| object_store::Error::Generic {
                store: STORE,
                source: Box::new(source),
            })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

/// Writes `payload` durably at `path`: staging file, its data synced, renamed, folder synced.
fn put_file(path: &FsPath, payload: &PutPayload, folders: &FolderSyncs) -> io::Result<PutResult> {
    let folder = path
        .parent()
        .ok_or_else(|| invalid("an object path has a folder"))?;
    let (file, staging) = create_staging(path, folder)?;
    let written = write_synced(file, payload).and_then(|metadata| {
        std::fs::rename(&staging, path)?;
        Ok(metadata)
    });
    let metadata = match written {
        Ok(metadata) => metadata,
        Err(e) => {
            let _ = std::fs::remove_file(&staging);
            return Err(e);
        }
    };
    folders.sync(folder)?;
    Ok(PutResult {
        e_tag: Some(e_tag(&metadata)),
        version: None,
        extensions: Extensions::default(),
    })
}

fn write_synced(mut file: File, payload: &PutPayload) -> io::Result<std::fs::Metadata> {
    for part in payload.iter() {
        file.write_all(part)?;
    }
    file.sync_data()?;
    file.metadata()
}

/// A fresh `<path>#<n>` (the staging names object_store uses and hides from listings),
/// creating the folder, durably, if it is missing.
fn create_staging(path: &FsPath, folder: &FsPath) -> io::Result<(File, PathBuf)> {
    for n in 1..=STAGING_ATTEMPTS_MAX {
        let mut staging = path.as_os_str().to_owned();
        staging.push(format!("#{n}"));
        let staging = PathBuf::from(staging);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staging)
        {
            Ok(file) => return Ok((file, staging)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => create_folder(folder)?,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{STAGING_ATTEMPTS_MAX} staging files of {} exist",
            path.display()
        ),
    ))
}

/// Creates `folder` and its missing ancestors, each made durable in its parent.
fn create_folder(folder: &FsPath) -> io::Result<()> {
    let missing: Vec<&FsPath> = folder.ancestors().take_while(|a| !a.exists()).collect();
    std::fs::create_dir_all(folder)?;
    for created in missing {
        if let Some(parent) = created.parent() {
            fsync_folder(parent)?;
        }
    }
    Ok(())
}

fn fsync_folder(folder: &FsPath) -> io::Result<()> {
    File::open(folder)?.sync_all()
}

/// object_store's local ETag (inode, mtime, size), so a later get's ETag matches the put's.
fn e_tag(metadata: &std::fs::Metadata) -> String {
    let inode = std::os::unix::fs::MetadataExt::ino(metadata);
    let mtime_us = metadata
        .modified()
        .ok()
        .and_then(|mtime| mtime.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default()
        .as_micros();
    format!("\"{inode:x}-{mtime_us:x}-{:x}\"", metadata.len())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_owned())
}

/// One [`FolderSync`] per folder with a sync in progress or awaited.
#[derive(Debug, Default)]
struct FolderSyncs {
    folders: Mutex<HashMap<PathBuf, Arc<FolderSync>>>,
}

impl FolderSyncs {
    fn sync(&self, folder: &FsPath) -> io::Result<()> {
        let group = self.lock().entry(folder.to_owned()).or_default().clone();
        let result = group.sync(|| fsync_folder(folder));
        drop(group);
        // A folder nobody waits on is forgotten (the WAL moves to a new folder every hour).
        // Should a put pick an entry up just as it goes, it makes a new one: the fsyncs stay
        // right, that put merely shares none.
        self.lock().retain(|_, group| Arc::strong_count(group) > 1);
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<FolderSync>>> {
        self.folders.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Group commit of one folder's fsync: a caller is done once an fsync that STARTED after it
/// asked has succeeded; while one runs, the callers that arrive wait and the next fsync
/// covers them all.
#[derive(Debug, Default)]
struct FolderSync {
    state: Mutex<SyncState>,
    finished: Condvar,
}

#[derive(Debug, Default)]
struct SyncState {
    /// Tickets handed out, one per caller.
    asked: u64,
    /// Every ticket up to this one is covered by a successful fsync.
    synced: u64,
    running: bool,
}

impl FolderSync {
    fn sync(&self, fsync: impl Fn() -> io::Result<()>) -> io::Result<()> {
        let mut state = self.lock();
        state.asked += 1;
        let ticket = state.asked;
        loop {
            if state.synced >= ticket {
                return Ok(());
            }
            if state.running {
                state = self.finished.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            state.running = true;
            let covers = state.asked;
            drop(state);
            let result = fsync();
            state = self.lock();
            state.running = false;
            if result.is_ok() {
                state.synced = state.synced.max(covers);
            }
            self.finished.notify_all();
            // A failed fsync fails its caller; the callers it would have covered try again.
            result?;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[test]
    fn callers_that_arrive_during_a_folder_fsync_share_the_next_one() {
        let group = Arc::new(FolderSync::default());
        let fsyncs = Arc::new(AtomicU64::new(0));
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let (group, fsyncs) = (group.clone(), fsyncs.clone());
                std::thread::spawn(move || {
                    group.sync(|| {
                        fsyncs.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(50));
                        Ok(())
                    })
                })
            })
            .collect();
        for caller in callers {
            caller.join().unwrap().unwrap();
        }
        let fsyncs = fsyncs.load(Ordering::SeqCst);
        assert!((1..8).contains(&fsyncs), "8 callers took {fsyncs} fsyncs");
    }

    #[test]
    fn a_caller_is_done_only_after_an_fsync_that_started_after_it_asked() {
        let group = Arc::new(FolderSync::default());
        let started = Arc::new(AtomicU64::new(0));
        let (first_running, release) = (
            Arc::new(std::sync::Barrier::new(2)),
            Arc::new(std::sync::Barrier::new(2)),
        );
        let first = {
            let (group, started) = (group.clone(), started.clone());
            let (first_running, release) = (first_running.clone(), release.clone());
            std::thread::spawn(move || {
                group.sync(|| {
                    started.fetch_add(1, Ordering::SeqCst);
                    first_running.wait();
                    release.wait();
                    Ok(())
                })
            })
        };
        first_running.wait();
        // This caller asks while the first fsync runs: that fsync cannot cover it.
        let second = {
            let (group, started) = (group.clone(), started.clone());
            std::thread::spawn(move || {
                group.sync(|| {
                    started.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        release.wait();
        first.join().unwrap().unwrap();
        second.join().unwrap().unwrap();
        assert_eq!(started.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_fsync_fails_its_caller_and_the_next_caller_syncs_again() {
        let group = FolderSync::default();
        let failed = group.sync(|| Err(io::Error::other("disk gone")));
        assert_eq!(failed.unwrap_err().to_string(), "disk gone");
        let calls = AtomicU64::new(0);
        group
            .sync(|| {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_put_creates_its_folder_and_reads_back_with_the_same_etag() {
        let dir = tempfile::tempdir().unwrap();
        let inner = LocalFileSystem::new_with_prefix(dir.path())
            .unwrap()
            .with_fsync(true);
        let store = SyncedFolder::new(inner);
        let key = Path::from("wal/2026-12-01/22/object.wal");
        let payload: PutPayload = [Bytes::from_static(b"head"), Bytes::from_static(b"-body")]
            .into_iter()
            .collect();
        let put = store
            .put_opts(&key, payload, PutOptions::default())
            .await
            .unwrap();
        let got = store.get_opts(&key, GetOptions::default()).await.unwrap();
        assert_eq!(got.meta.e_tag, put.e_tag);
        assert_eq!(&got.bytes().await.unwrap()[..], b"head-body");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("wal/2026-12-01/22"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["object.wal"], "no staging file is left");
        assert!(
            store.folders.lock().is_empty(),
            "idle folders are forgotten"
        );
    }
}
