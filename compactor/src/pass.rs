//! One full pass: become leader, compact every stream the WAL names, reclaim what is safe.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metastore::MetaStore;
use object_store::ObjectStore;

use crate::clock::{Clock, SystemClock};
use crate::orphans::OrphanSweeper;
use crate::reclaim::Reclaimer;
use crate::scheduler::Scheduler;
use crate::tasks::TaskStore;
use crate::throttle::ReadThrottle;
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
    /// Tasks that finished this pass.
    pub tasks_done: u64,
    /// Task attempts that failed this pass (retried after backoff, or dead).
    pub tasks_failed: u64,
    /// DEAD tasks on record after this pass (never retried automatically).
    pub tasks_dead: u64,
    /// Compacted files no index entry referenced, deleted this pass.
    pub orphans_deleted: u64,
    /// Abandoned upload staging files removed from a local-folder store this pass.
    pub staging_files_removed: u64,
    /// Key compaction of compacted topics this pass.
    pub keyed: crate::keyed::KeyedReport,
    /// Iceberg table commits this pass.
    pub tables: crate::tables::TablesReport,
    pub retyped: crate::keyed::RetypeReport,
}

/// How often a local folder is walked for abandoned staging files (a walk visits every file).
const STAGING_SWEEP_INTERVAL_MS: u64 = 600_000;
/// A service's first retention run comes this long after it starts, as Kafka's first check
/// (`log.initial.task.delay.ms`), unless the check interval is shorter.
const RETENTION_FIRST_CHECK_DELAY_MS: u64 = 30_000;

pub struct Compactor {
    objects: Arc<dyn ObjectStore>,
    index_meta: Arc<dyn MetaStore>,
    coord_meta: Arc<dyn MetaStore>,
    config: CompactorConfig,
    owner: String,
    clock: Arc<dyn Clock>,
    /// Shared by every worker of every pass.
    throttle: ReadThrottle,
    /// When the local folder was last swept for staging files (0: not yet).
    staging_swept_ms: AtomicU64,
    /// The topics' Iceberg tables, committed in each pass.
    tables: tables::TableStore,
    /// The tables' typed columns, refreshed from the schema registry each pass.
    typing: tables::typed::Typing,
}

impl Compactor {
    pub fn new(
        objects: Arc<dyn ObjectStore>,
        index_meta: Arc<dyn MetaStore>,
        coord_meta: Arc<dyn MetaStore>,
        config: CompactorConfig,
    ) -> Self {
        let owner = format!("{}-{}", std::process::id(), storage::clock::system_now_ms());
        let throttle = ReadThrottle::new(config.read_bytes_per_sec);
        let tables = tables::TableStore::new(
            objects.clone(),
            coord_meta.clone(),
            config.table_base_url.clone(),
        );
        let typing = tables::typed::Typing::new(coord_meta.clone());
        Compactor {
            typing,
            objects,
            index_meta,
            coord_meta,
            config,
            owner,
            clock: Arc::new(SystemClock),
            throttle,
            staging_swept_ms: AtomicU64::new(0),
            tables,
        }
    }

    /// Uses `clock` for task backoff and grace periods (tests drive it by hand).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// One full pass, retention included.
    pub async fn run_once(&self) -> Result<PassReport, CompactorError> {
        self.run_pass(true).await
    }

    async fn run_pass(&self, retention: bool) -> Result<PassReport, CompactorError> {
        let mut report = PassReport::default();
        if !leader::acquire(&self.coord_meta, &self.owner).await? {
            tracing::info!("another compactor is leader; skipping this pass");
            return Ok(report);
        }
        report.leader = true;
        let result = self.pass(&mut report, retention).await;
        if let Err(e) = leader::release(&self.coord_meta, &self.owner).await {
            tracing::warn!(error = %e, "could not release leadership");
        }
        result.map(|()| report)
    }

    /// Runs passes every `interval_ms` until `shutdown` resolves; retention in those due by
    /// `retention_check_interval_ms`.
    pub async fn run(&self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let check_interval_ms = self.config.retention_check_interval_ms;
        let mut retention_due_ms =
            self.clock.now_ms() + RETENTION_FIRST_CHECK_DELAY_MS.min(check_interval_ms);
        loop {
            let now_ms = self.clock.now_ms();
            let retention = now_ms >= retention_due_ms;
            if retention {
                retention_due_ms = now_ms.saturating_add(check_interval_ms);
            }
            match self.run_pass(retention).await {
                Ok(r) => tracing::debug!(?r, "compaction pass done"),
                Err(e) => tracing::warn!(error = %e, "compaction pass failed"),
            }
            tokio::select! {
                _ = &mut shutdown => return,
                _ = tokio::time::sleep(std::time::Duration::from_millis(self.config.interval_ms)) => {}
            }
        }
    }

    /// Removes upload staging files left in a local-folder store by killed processes, at most
    /// once per [`STAGING_SWEEP_INTERVAL_MS`]; how many. Failures are logged, not fatal: the
    /// files only take space.
    async fn sweep_staging_files(&self) -> u64 {
        let Some(folder) = self.config.local_folder.clone() else {
            return 0;
        };
        let now_ms = self.clock.now_ms();
        let last_ms = self.staging_swept_ms.load(Ordering::Acquire);
        if last_ms != 0 && now_ms.saturating_sub(last_ms) < STAGING_SWEEP_INTERVAL_MS {
            return 0;
        }
        self.staging_swept_ms
            .store(now_ms.max(1), Ordering::Release);
        let idle_for = Duration::from_millis(self.config.staging_idle_ms);
        let walk = tokio::task::spawn_blocking(move || {
            storage::objects::sweep_staging_files(&folder, idle_for)
        });
        match walk.await {
            // Each removed file is logged by the sweep itself.
            Ok(Ok(sweep)) => sweep.files_removed,
            Ok(Err(error)) => {
                tracing::warn!(%error, "cannot sweep upload staging files");
                0
            }
            Err(error) => {
                tracing::warn!(%error, "staging file sweep failed");
                0
            }
        }
    }

    async fn pass(&self, report: &mut PassReport, retention: bool) -> Result<(), CompactorError> {
        let wal = wal_scan::scan(&self.objects, &self.config.wal_prefix).await?;
        let mut streams: Vec<String> = wal.iter().flat_map(|o| o.streams.clone()).collect();
        streams.sort();
        streams.dedup();
        let scheduler = Scheduler {
            objects: &self.objects,
            index_meta: &self.index_meta,
            coord_meta: &self.coord_meta,
            config: &self.config,
            owner: &self.owner,
            clock: self.clock.as_ref(),
            throttle: &self.throttle,
            typing: &self.typing,
        };
        crate::tables::refresh_typing(&self.typing, &self.coord_meta, &self.config).await;
        // Retention first: entries it drops are not rewritten to Parquet only to be freed.
        if retention {
            let defaults = &self.config.topic_defaults;
            let now_ms = self.clock.now_ms();
            crate::retention::enforce(&self.index_meta, &self.coord_meta, defaults, now_ms).await;
        }
        scheduler.run(streams, report).await?;
        // Key compaction works on what is Parquet now, so it runs after the rewrite.
        let keyed = crate::keyed::KeyCompactor {
            objects: &self.objects,
            meta: &self.index_meta,
            config: &self.config,
            throttle: &self.throttle,
            clock: self.clock.as_ref(),
            typing: &self.typing,
        };
        report.keyed = crate::keyed::compact_topics(&keyed, &self.coord_meta).await;
        // Files compacted before their table had typed columns get them, before the table
        // commit that swaps them in.
        report.retyped = crate::keyed::retype_tables(&keyed, &self.coord_meta).await;
        for (topic, records) in self.typing.take_undecodable() {
            crate::metrics::table_records_undecodable(&topic, records);
        }
        // Tables after every index change of the pass, before the sweep that deletes files.
        let now_ms = self.clock.now_ms();
        let (tables, index_meta) = (&self.tables, &self.index_meta);
        report.tables = crate::tables::sync_all(tables, index_meta, &self.config, now_ms).await;
        // A table that cannot be read protects its files by stopping the sweep (never the WAL
        // reclamation): no compacted file is deleted this pass.
        let table_files = match tables.referenced_keys().await {
            Ok(keys) => Some(keys),
            Err(error) => {
                tracing::warn!(%error, "cannot read the tables' files; no orphan sweep this pass");
                None
            }
        };
        let sweeper = OrphanSweeper {
            objects: &self.objects,
            index_meta: &self.index_meta,
            coord_meta: &self.coord_meta,
            config: &self.config,
        };
        let tasks = TaskStore {
            meta: &self.coord_meta,
        }
        .list()
        .await?;
        if let Some(table_files) = &table_files {
            report.orphans_deleted = sweeper
                .run(&tasks, table_files, self.clock.now_ms())
                .await?;
        }
        let reclaimer = Reclaimer {
            objects: &self.objects,
            meta: &self.index_meta,
            config: &self.config,
        };
        report.wal_objects_deleted = reclaimer.run(&wal, self.clock.now_ms()).await?;
        report.staging_files_removed = self.sweep_staging_files().await;
        Ok(())
    }
}
