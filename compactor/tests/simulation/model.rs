//! What the simulation promised its clients: every append, its outcome as a client saw it, and
//! what each stream's bounds were last seen to be.

use metastore::MetaError;
use storage::StorageError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pending,
    /// Acknowledged with these offsets: must stay readable there (above the log start).
    Acked {
        base: u64,
        end: u64,
    },
    /// Refused for sure: must never be readable.
    Failed,
    /// The client cannot know (timeout, lost answer, crashed broker): may be readable, once.
    Unknown,
}

#[derive(Debug)]
pub struct Append {
    pub stream: usize,
    /// The broker process (node epoch) that took it.
    pub node: u64,
    pub outcome: Outcome,
}

#[derive(Debug, Default, Clone)]
pub struct StreamModel {
    pub name: String,
    /// A trim that was acknowledged moved the log start at least this far.
    pub trimmed_to: u64,
    pub last_log_start: u64,
    pub last_high_watermark: u64,
}

#[derive(Debug, Default)]
pub struct Model {
    pub appends: Vec<Append>,
    pub streams: Vec<StreamModel>,
}

impl Model {
    pub fn new(streams: usize) -> Model {
        Model {
            appends: Vec::new(),
            streams: (0..streams)
                .map(|i| StreamModel {
                    name: format!("{:032x}-{i}", 0xabcdu128),
                    ..StreamModel::default()
                })
                .collect(),
        }
    }

    pub fn start(&mut self, stream: usize, node: u64) -> usize {
        self.appends.push(Append {
            stream,
            node,
            outcome: Outcome::Pending,
        });
        self.appends.len() - 1
    }

    pub fn outcomes(&self) -> Vec<Outcome> {
        self.appends.iter().map(|a| a.outcome).collect()
    }

    /// Every append still pending on `node` when it crashed: its client never heard.
    pub fn crashed(&mut self, node: u64) {
        for append in self.appends.iter_mut().filter(|a| a.node == node) {
            if append.outcome == Outcome::Pending {
                append.outcome = Outcome::Unknown;
            }
        }
    }
}

/// How a client would read an append's error: refused for sure, or maybe applied.
pub fn classify(error: &StorageError) -> Outcome {
    match error {
        StorageError::Overloaded { .. }
        | StorageError::InvalidArgument(_)
        | StorageError::WriteFailed(_)
        | StorageError::OffsetOutOfRange { .. }
        | StorageError::ObjectStore(_) => Outcome::Failed,
        // An index commit that never reached the store.
        StorageError::Meta(MetaError::Unavailable(_)) => Outcome::Failed,
        _ => Outcome::Unknown,
    }
}
