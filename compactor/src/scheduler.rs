//! Compaction as tasks: the leader reconciles the task records with the index, plans one task
//! per stream (its next due range), and workers run them, `workers` streams at a time. A
//! stream's ranges run in offset order (the compacted offset only moves forward), so a stream
//! has at most one live task; after a success the worker plans and runs the stream's next range.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use metastore::MetaStore;
use object_store::ObjectStore;

use crate::clock::Clock;
use crate::swap::{Located, StreamCompactor};
use crate::tasks::{Task, TaskState, TaskStore};
use crate::throttle::ReadThrottle;
use crate::{CompactorConfig, CompactorError, PassReport};

pub struct Scheduler<'a> {
    pub objects: &'a Arc<dyn ObjectStore>,
    pub index_meta: &'a Arc<dyn MetaStore>,
    pub coord_meta: &'a Arc<dyn MetaStore>,
    pub config: &'a CompactorConfig,
    pub owner: &'a str,
    pub clock: &'a dyn Clock,
    pub throttle: &'a ReadThrottle,
    /// Which topics' files carry typed columns.
    pub typing: &'a tables::typed::Typing,
}

/// A task and the index entries of its range, read just before it runs.
struct Planned {
    task: Task,
    entries: Vec<Located>,
}

#[derive(Default)]
struct StreamOutcome {
    files_written: u64,
    records_compacted: u64,
    bytes_read: u64,
    tasks_done: u64,
    tasks_failed: u64,
}

impl Scheduler<'_> {
    fn tasks(&self) -> TaskStore<'_> {
        TaskStore {
            meta: self.coord_meta,
        }
    }

    fn stream_compactor(&self) -> StreamCompactor<'_> {
        StreamCompactor {
            objects: self.objects,
            meta: self.index_meta,
            config: self.config,
            throttle: self.throttle,
            clock: self.clock,
            typing: self.typing,
        }
    }

    /// Compacts what is due in `streams` (and in streams that have task records).
    pub async fn run(
        &self,
        streams: Vec<String>,
        report: &mut PassReport,
    ) -> Result<(), CompactorError> {
        let mut existing = self.recover().await?;
        let streams: BTreeSet<String> = streams
            .into_iter()
            .chain(existing.keys().cloned())
            .collect();
        report.streams = streams.len();
        crate::metrics::backlog_pass_started();

        // The leader plans every stream's next task first, so pending work is on record (only
        // the task is kept: entries are read again when it runs, so memory stays per worker)...
        let planned: Vec<_> = futures::stream::iter(streams)
            .map(|s| {
                let task = existing.remove(&s);
                async move {
                    let planned = self.plan(&s, task).await.map(|p| p.map(|p| p.task));
                    (s, planned)
                }
            })
            .buffer_unordered(self.config.workers.max(1))
            .collect()
            .await;
        crate::metrics::backlog_pass_planned();
        // ...then workers run the tasks, each stream's ranges in order.
        let runs: Vec<_> = futures::stream::iter(planned)
            .map(|(s, planned)| async move {
                let outcome = match planned {
                    Ok(p) => self.drive(&s, p).await,
                    Err(e) => Err(e),
                };
                (s, outcome)
            })
            .buffer_unordered(self.config.workers.max(1))
            .collect()
            .await;
        for (stream, outcome) in runs {
            match outcome {
                Ok(o) => {
                    report.files_written += o.files_written;
                    report.records_compacted += o.records_compacted;
                    report.bytes_read += o.bytes_read;
                    report.tasks_done += o.tasks_done;
                    report.tasks_failed += o.tasks_failed;
                    if o.tasks_failed > 0 {
                        report.streams_failed += 1;
                    }
                }
                Err(e) => {
                    report.streams_failed += 1;
                    tracing::warn!(stream = %stream, error = %e, "stream compaction failed; will retry");
                }
            }
        }
        let dead: Vec<Task> = self
            .tasks()
            .list()
            .await?
            .into_iter()
            .filter(|t| matches!(t.state, TaskState::Dead { .. }))
            .collect();
        report.tasks_dead = dead.len() as u64;
        if !dead.is_empty() {
            let keys: Vec<String> = dead.iter().map(Task::key).collect();
            tracing::error!(count = dead.len(), tasks = ?keys, "dead compaction tasks block their streams; see compactor --list-tasks, requeue with --retry-dead");
        }
        Ok(())
    }

    /// Loads the task records: DONE ones are dropped, RUNNING ones (their compactor died, since
    /// we hold leadership now) go back to PENDING, at most one live task per stream is kept.
    async fn recover(&self) -> Result<BTreeMap<String, Task>, CompactorError> {
        let store = self.tasks();
        let mut by_stream: BTreeMap<String, Task> = BTreeMap::new();
        for mut task in store.list().await? {
            match &task.state {
                TaskState::Done { .. } => {
                    store.remove(&task).await?;
                    continue;
                }
                TaskState::Running { owner, started_ms } => {
                    tracing::warn!(task = %task.key(), %owner, started_ms, "replaying a task whose compactor stopped mid-way");
                    task.interruptions = task.interruptions.saturating_add(1);
                    task.state = TaskState::Pending;
                    store.save(&mut task).await?;
                }
                TaskState::Pending | TaskState::Failed { .. } | TaskState::Dead { .. } => {}
            }
            // Keys sort by range, so the first task of a stream is its lowest one.
            if by_stream.contains_key(&task.stream) {
                tracing::warn!(task = %task.key(), "dropping a second live task of one stream");
                store.remove(&task).await?;
            } else {
                by_stream.insert(task.stream.clone(), task);
            }
        }
        Ok(by_stream)
    }

    /// The stream's next task: its existing one if the index still holds that range as RAW,
    /// else a new PENDING task for the next due range, if any.
    async fn plan(
        &self,
        stream: &str,
        existing: Option<Task>,
    ) -> Result<Option<Planned>, CompactorError> {
        let compactor = self.stream_compactor();
        let (compacted, entries) = compactor.prepare(stream).await?;
        let raw_bytes: u64 = entries
            .iter()
            .filter(|e| e.entry.file_type == storage::FileType::Raw)
            .map(|e| u64::from(e.entry.byte_len))
            .sum();
        crate::metrics::backlog_seen(raw_bytes);
        if let Some(task) = existing {
            if task.end_offset <= compacted {
                // Its swap finished but the DONE record was lost.
                self.tasks().remove(&task).await?;
            } else if let Some(n) = covering(&entries, &task) {
                return Ok(Some(Planned {
                    task,
                    entries: entries[..n].to_vec(),
                }));
            } else {
                tracing::warn!(task = %task.key(), compacted, "dropping a task whose range the index no longer holds");
                self.tasks().remove(&task).await?;
            }
        }
        let now_ms = self.clock.now_ms();
        let Some(range) = compactor.due_range(&entries, now_ms) else {
            return Ok(None);
        };
        let (Some(first), Some(last)) = (range.first(), range.last()) else {
            return Ok(None);
        };
        let input_bytes = range.iter().map(|e| u64::from(e.entry.byte_len)).sum();
        let mut task = Task::new(
            stream,
            first.base_offset,
            last.end_offset,
            input_bytes,
            now_ms,
        );
        self.tasks().save(&mut task).await?;
        tracing::debug!(task = %task.key(), input_bytes, "planned compaction task");
        Ok(Some(Planned {
            task,
            entries: range.to_vec(),
        }))
    }

    /// Runs the stream's tasks one after the other until nothing is due or one fails.
    async fn drive(
        &self,
        stream: &str,
        planned: Option<Task>,
    ) -> Result<StreamOutcome, CompactorError> {
        let store = self.tasks();
        let compactor = self.stream_compactor();
        let mut outcome = StreamOutcome::default();
        let mut done = Vec::new();
        let mut next = match planned {
            Some(task) => self.plan(stream, Some(task)).await?,
            None => None,
        };
        while let Some(Planned { mut task, entries }) = next.take() {
            let now_ms = self.clock.now_ms();
            if !task.is_runnable(now_ms) {
                break;
            }
            task.state = TaskState::Running {
                owner: self.owner.to_string(),
                started_ms: now_ms,
            };
            store.save(&mut task).await?;
            match compactor.compact_range(stream, &entries).await {
                Ok((records, bytes)) => {
                    outcome.files_written += 1;
                    outcome.records_compacted += records;
                    outcome.bytes_read += bytes;
                    outcome.tasks_done += 1;
                    task.state = TaskState::Done {
                        finished_ms: self.clock.now_ms(),
                    };
                    store.save(&mut task).await?;
                    done.push(task);
                }
                Err(e) => {
                    let error = e.to_string();
                    outcome.tasks_failed += 1;
                    if task.fail(&error, self.clock.now_ms(), self.config) {
                        tracing::error!(task = %task.key(), attempts = task.attempts, %error, "compaction task is dead; it will not be retried automatically");
                    } else {
                        tracing::warn!(task = %task.key(), attempts = task.attempts, %error, "compaction task failed; will retry after backoff");
                    }
                    store.save(&mut task).await?;
                    break;
                }
            }
            next = self.plan(stream, None).await?;
        }
        // DONE records are only worth keeping while the pass runs.
        for task in &done {
            store.remove(task).await?;
        }
        Ok(outcome)
    }
}

/// How many leading entries make up exactly the task's range, all RAW and contiguous.
fn covering(entries: &[Located], task: &Task) -> Option<usize> {
    let mut expected_base = task.base_offset;
    for (i, e) in entries.iter().enumerate() {
        if e.entry.file_type != storage::FileType::Raw || e.base_offset != expected_base {
            return None;
        }
        if e.end_offset == task.end_offset {
            return Some(i + 1);
        }
        if e.end_offset > task.end_offset {
            return None;
        }
        expected_base = e.end_offset;
    }
    None
}
