//! One full pass: become leader, compact every stream the WAL names, reclaim what is safe.

use std::sync::Arc;

use futures::StreamExt;
use object_store::ObjectStore;
use storage::meta::MetaStore;

use crate::reclaim::Reclaimer;
use crate::swap::{now_ms, StreamCompactor};
use crate::{leader, wal_scan, CompactorConfig, CompactorError};

/// What a pass did, for logs, tests and benchmarks.
#[derive(Clone, Debug, Default)]
pub struct PassReport {
    /// False when another compactor holds leadership and this pass did nothing.
    pub leader: bool,
    pub streams: usize,
    pub files_written: u64,
    pub records_compacted: u64,
    pub bytes_read: u64,
    pub wal_objects_deleted: u64,
    /// Streams whose compaction failed this pass (retried on the next one).
    pub streams_failed: usize,
}

pub struct Compactor {
    objects: Arc<dyn ObjectStore>,
    index_meta: Arc<dyn MetaStore>,
    coord_meta: Arc<dyn MetaStore>,
    config: CompactorConfig,
    owner: String,
}

impl Compactor {
    pub fn new(
        objects: Arc<dyn ObjectStore>,
        index_meta: Arc<dyn MetaStore>,
        coord_meta: Arc<dyn MetaStore>,
        config: CompactorConfig,
    ) -> Self {
        let owner = format!("{}-{}", std::process::id(), now_ms());
        Compactor {
            objects,
            index_meta,
            coord_meta,
            config,
            owner,
        }
    }

    pub async fn run_once(&self) -> Result<PassReport, CompactorError> {
        let mut report = PassReport::default();
        if !leader::acquire(&self.coord_meta, &self.owner).await? {
            tracing::info!("another compactor is leader; skipping this pass");
            return Ok(report);
        }
        report.leader = true;
        let result = self.pass(&mut report).await;
        if let Err(e) = leader::release(&self.coord_meta, &self.owner).await {
            tracing::warn!(error = %e, "could not release leadership");
        }
        result.map(|()| report)
    }

    /// Runs passes every `interval_ms` until `shutdown` resolves.
    pub async fn run(&self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            match self.run_once().await {
                Ok(r) => tracing::debug!(?r, "compaction pass done"),
                Err(e) => tracing::warn!(error = %e, "compaction pass failed"),
            }
            tokio::select! {
                _ = &mut shutdown => return,
                _ = tokio::time::sleep(std::time::Duration::from_millis(self.config.interval_ms)) => {}
            }
        }
    }

    async fn pass(&self, report: &mut PassReport) -> Result<(), CompactorError> {
        let wal = wal_scan::scan(&self.objects, &self.config.wal_prefix).await?;
        let mut streams: Vec<String> = wal.iter().flat_map(|o| o.streams.clone()).collect();
        streams.sort();
        streams.dedup();
        report.streams = streams.len();
        let streams: Vec<String> = streams;
        let now = now_ms();
        let compactor = StreamCompactor {
            objects: &self.objects,
            meta: &self.index_meta,
            config: &self.config,
        };
        let results: Vec<_> = futures::stream::iter(streams)
            .map(|s| {
                let compactor = &compactor;
                async move {
                    let result = compactor.run(&s, now).await;
                    (s, result)
                }
            })
            .buffer_unordered(self.config.workers.max(1))
            .collect()
            .await;
        for (stream, result) in results {
            match result {
                Ok(r) => {
                    report.files_written += r.files_written;
                    report.records_compacted += r.records_compacted;
                    report.bytes_read += r.bytes_read;
                }
                Err(e) => {
                    report.streams_failed += 1;
                    tracing::warn!(stream = %stream, error = %e, "stream compaction failed; will retry");
                }
            }
        }
        let reclaimer = Reclaimer {
            objects: &self.objects,
            meta: &self.index_meta,
            config: &self.config,
        };
        report.wal_objects_deleted = reclaimer.run(&wal, now_ms()).await?;
        Ok(())
    }
}
