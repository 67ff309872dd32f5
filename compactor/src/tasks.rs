//! Task records: one per stream range to compact, stored in the coordination MetaStore under
//! `compactor/tasks/` so that retries, backoff and dead letters survive restarts.
//!
//! PENDING -> RUNNING(owner, started) -> DONE (removed at the end of the pass), or
//! RUNNING -> FAILED(attempts, last error, next retry) -> RUNNING ... and after
//! `task_attempts_max` failures DEAD(reason), which is never retried automatically
//! (`compactor --retry-dead` puts DEAD tasks back to PENDING). A task found RUNNING by a new
//! leader was interrupted by a crash: it is replayed with the same range, so the replay
//! overwrites the same Parquet file; the swap itself is idempotent.

use std::sync::Arc;

use metastore::{Expect, MetaError, MetaStore, PutOptions};
use serde::{Deserialize, Serialize};

use crate::{CompactorConfig, CompactorError};

pub const TASK_PREFIX: &str = "compactor/tasks/";
/// Task records read per page when listing.
const LIST_PAGE_RECORDS: usize = 1024;
/// Last errors are cut to this many bytes so a record stays small.
const ERROR_BYTES_MAX: usize = 512;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "UPPERCASE")]
pub enum TaskState {
    Pending,
    Running {
        owner: String,
        started_ms: u64,
    },
    Done {
        finished_ms: u64,
    },
    Failed {
        last_error: String,
        next_retry_ms: u64,
    },
    Dead {
        reason: String,
        dead_ms: u64,
    },
}

impl TaskState {
    pub fn name(&self) -> &'static str {
        match self {
            TaskState::Pending => "PENDING",
            TaskState::Running { .. } => "RUNNING",
            TaskState::Done { .. } => "DONE",
            TaskState::Failed { .. } => "FAILED",
            TaskState::Dead { .. } => "DEAD",
        }
    }
}

/// Compact the stream's offsets `base_offset..end_offset` (its RAW entries) into one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub stream: String,
    pub base_offset: u64,
    pub end_offset: u64,
    pub input_bytes: u64,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Times a later leader found the task RUNNING (its compactor died); not failures.
    pub interruptions: u32,
    pub created_ms: u64,
    #[serde(flatten)]
    pub state: TaskState,
    /// MetaStore version of the record as last read or written; every update is conditional.
    #[serde(skip)]
    pub version_id: Option<i64>,
}

/// Wait before retry number `attempts` (1 = after the first failure): doubling, capped.
pub fn backoff_ms(config: &CompactorConfig, attempts: u32) -> u64 {
    let doublings = attempts.saturating_sub(1).min(63);
    config
        .retry_backoff_ms
        .saturating_mul(1u64 << doublings)
        .min(config.retry_backoff_max_ms)
}

impl Task {
    pub fn new(
        stream: &str,
        base_offset: u64,
        end_offset: u64,
        input_bytes: u64,
        now_ms: u64,
    ) -> Task {
        Task {
            stream: stream.to_string(),
            base_offset,
            end_offset,
            input_bytes,
            attempts: 0,
            interruptions: 0,
            created_ms: now_ms,
            state: TaskState::Pending,
            version_id: None,
        }
    }

    pub fn key(&self) -> String {
        format!(
            "{TASK_PREFIX}{}@{:020}-{:020}",
            self.stream, self.base_offset, self.end_offset
        )
    }

    /// Whether a worker may start it now.
    pub fn is_runnable(&self, now_ms: u64) -> bool {
        match &self.state {
            TaskState::Pending => true,
            TaskState::Failed { next_retry_ms, .. } => now_ms >= *next_retry_ms,
            TaskState::Running { .. } | TaskState::Done { .. } | TaskState::Dead { .. } => false,
        }
    }

    /// Records a failed attempt: FAILED with the next retry time, or DEAD once the attempts
    /// are used up. Returns true when the task just became DEAD.
    pub fn fail(&mut self, error: &str, now_ms: u64, config: &CompactorConfig) -> bool {
        self.attempts = self.attempts.saturating_add(1);
        let last_error = truncate(error);
        if self.attempts >= config.task_attempts_max.max(1) {
            self.state = TaskState::Dead {
                reason: format!("failed {} times; last error: {last_error}", self.attempts),
                dead_ms: now_ms,
            };
            return true;
        }
        self.state = TaskState::Failed {
            last_error,
            next_retry_ms: now_ms.saturating_add(backoff_ms(config, self.attempts)),
        };
        false
    }

    /// One line for `compactor --list-tasks` and logs.
    pub fn describe(&self) -> String {
        let detail = match &self.state {
            TaskState::Pending => String::new(),
            TaskState::Running { owner, started_ms } => {
                format!(" owner={owner} started_ms={started_ms}")
            }
            TaskState::Done { finished_ms } => format!(" finished_ms={finished_ms}"),
            TaskState::Failed {
                last_error,
                next_retry_ms,
            } => format!(" next_retry_ms={next_retry_ms} last_error={last_error:?}"),
            TaskState::Dead { reason, dead_ms } => format!(" dead_ms={dead_ms} reason={reason:?}"),
        };
        format!(
            "{} stream={} offsets={}..{} input_bytes={} attempts={} interruptions={}{detail}",
            self.state.name(),
            self.stream,
            self.base_offset,
            self.end_offset,
            self.input_bytes,
            self.attempts,
            self.interruptions
        )
    }
}

fn truncate(error: &str) -> String {
    let mut end = error.len().min(ERROR_BYTES_MAX);
    while !error.is_char_boundary(end) {
        end -= 1;
    }
    error[..end].to_string()
}

/// Reads and writes task records.
pub struct TaskStore<'a> {
    pub meta: &'a Arc<dyn MetaStore>,
}

impl TaskStore<'_> {
    /// Every task record, in key order.
    pub async fn list(&self) -> Result<Vec<Task>, CompactorError> {
        let end = format!("{TASK_PREFIX}\u{10FFFF}");
        let mut from = TASK_PREFIX.to_string();
        let mut out = Vec::new();
        loop {
            let page = self
                .meta
                .range_scan(&from, &end, None, LIST_PAGE_RECORDS)
                .await?;
            let full = page.len() == LIST_PAGE_RECORDS;
            let Some(last) = page.last() else { break };
            // The smallest key after `last` at the same depth.
            from = format!("{}\u{1}", last.key);
            for r in page {
                let mut task: Task = serde_json::from_slice(&r.value)
                    .map_err(|e| CompactorError::Corrupt(format!("{}: {e}", r.key)))?;
                task.version_id = Some(r.version.version_id);
                out.push(task);
            }
            if !full {
                break;
            }
        }
        Ok(out)
    }

    /// Writes the task: creates it when it has no version yet, else replaces exactly the
    /// version read. `Conflict` when someone else changed it meanwhile.
    pub async fn save(&self, task: &mut Task) -> Result<(), CompactorError> {
        let value = serde_json::to_vec(task).map_err(|e| CompactorError::Corrupt(e.to_string()))?;
        let expect = match task.version_id {
            None => Expect::NotExists,
            Some(v) => Expect::Version(v),
        };
        let options = PutOptions {
            expect,
            ..Default::default()
        };
        match self.meta.put(&task.key(), value.into(), options).await {
            Ok(r) => {
                task.version_id = Some(r.version.version_id);
                Ok(())
            }
            Err(MetaError::UnexpectedVersion) => Err(CompactorError::Conflict(task.key())),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn remove(&self, task: &Task) -> Result<(), CompactorError> {
        let expect = task.version_id.map_or(Expect::Any, Expect::Version);
        match self.meta.delete(&task.key(), expect, None).await {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            Err(MetaError::UnexpectedVersion) => Err(CompactorError::Conflict(task.key())),
            Err(e) => Err(e.into()),
        }
    }
}

/// Every task record (for `compactor --list-tasks`).
pub async fn list_tasks(meta: &Arc<dyn MetaStore>) -> Result<Vec<Task>, CompactorError> {
    TaskStore { meta }.list().await
}

/// Puts every DEAD task back to PENDING with its attempts reset; returns how many.
pub async fn retry_dead(meta: &Arc<dyn MetaStore>) -> Result<usize, CompactorError> {
    let store = TaskStore { meta };
    let mut n = 0;
    for mut task in store.list().await? {
        if let TaskState::Dead { .. } = task.state {
            task.state = TaskState::Pending;
            task.attempts = 0;
            store.save(&mut task).await?;
            tracing::info!(task = %task.key(), "dead task queued again");
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> CompactorConfig {
        CompactorConfig {
            task_attempts_max: 4,
            retry_backoff_ms: 100,
            retry_backoff_max_ms: 350,
            ..CompactorConfig::default()
        }
    }

    #[test]
    fn backoff_doubles_per_attempt_up_to_the_cap() {
        let c = config();
        let waits: Vec<u64> = (1..=6).map(|a| backoff_ms(&c, a)).collect();
        assert_eq!(waits, [100, 200, 350, 350, 350, 350]);
        assert_eq!(backoff_ms(&c, u32::MAX), 350);
    }

    #[test]
    fn a_failed_task_is_runnable_only_once_its_backoff_passed() {
        let c = config();
        let mut t = Task::new("s-0", 0, 10, 100, 1_000);
        assert!(t.is_runnable(1_000));
        assert!(!t.fail("boom", 1_000, &c));
        assert!(!t.is_runnable(1_099));
        assert!(t.is_runnable(1_100));
        assert!(!t.fail("boom", 1_100, &c));
        assert!(!t.is_runnable(1_299));
        assert!(t.is_runnable(1_300));
    }

    #[test]
    fn the_last_allowed_failure_makes_the_task_dead_with_the_reason() {
        let c = config();
        let mut t = Task::new("s-0", 0, 10, 100, 0);
        for i in 1..4 {
            assert!(!t.fail(&format!("error {i}"), 0, &c), "attempt {i}");
        }
        assert!(t.fail("disk on fire", 5, &c));
        assert_eq!(t.attempts, 4);
        match &t.state {
            TaskState::Dead { reason, dead_ms } => {
                assert!(reason.contains("disk on fire") && reason.contains("4 times"));
                assert_eq!(*dead_ms, 5);
            }
            other => panic!("not dead: {other:?}"),
        }
        assert!(!t.is_runnable(u64::MAX));
    }

    #[test]
    fn a_record_survives_its_encoding_and_long_errors_are_cut() {
        let mut t = Task::new("topic-3", 5, 90, 4096, 7);
        t.fail(&"é".repeat(1000), 8, &config());
        let bytes = serde_json::to_vec(&t).unwrap();
        let back: Task = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, t);
        match back.state {
            TaskState::Failed { last_error, .. } => assert!(last_error.len() <= ERROR_BYTES_MAX),
            other => panic!("{other:?}"),
        }
        assert!(String::from_utf8(bytes)
            .unwrap()
            .contains("\"state\":\"FAILED\""));
    }
}
