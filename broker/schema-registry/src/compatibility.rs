//! Compatibility levels and which earlier versions a new schema is judged against, as
//! Confluent defines them: BACKWARD (the new schema reads data of the latest), FORWARD (the
//! latest reads data of the new), FULL (both), their `_TRANSITIVE` forms against every earlier
//! version, and NONE.

use crate::schema::Parsed;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    None,
    Backward,
    BackwardTransitive,
    Forward,
    ForwardTransitive,
    Full,
    FullTransitive,
}

impl Level {
    pub const DEFAULT: Level = Level::Backward;

    pub fn name(self) -> &'static str {
        match self {
            Level::None => "NONE",
            Level::Backward => "BACKWARD",
            Level::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Level::Forward => "FORWARD",
            Level::ForwardTransitive => "FORWARD_TRANSITIVE",
            Level::Full => "FULL",
            Level::FullTransitive => "FULL_TRANSITIVE",
        }
    }

    /// Case-insensitive, as Confluent accepts it.
    pub fn parse(text: &str) -> Option<Level> {
        [
            Level::None,
            Level::Backward,
            Level::BackwardTransitive,
            Level::Forward,
            Level::ForwardTransitive,
            Level::Full,
            Level::FullTransitive,
        ]
        .into_iter()
        .find(|level| level.name().eq_ignore_ascii_case(text))
    }

    fn transitive(self) -> bool {
        matches!(
            self,
            Level::BackwardTransitive | Level::ForwardTransitive | Level::FullTransitive
        )
    }

    fn backward(self) -> bool {
        matches!(
            self,
            Level::Backward | Level::BackwardTransitive | Level::Full | Level::FullTransitive
        )
    }

    fn forward(self) -> bool {
        matches!(
            self,
            Level::Forward | Level::ForwardTransitive | Level::Full | Level::FullTransitive
        )
    }
}

/// Why `new` may not follow `earlier` (live versions, oldest first) under `level`; empty when
/// it may. Non-transitive levels look at the latest version only.
pub fn incompatibilities(level: Level, new: &Parsed, earlier: &[(i32, Parsed)]) -> Vec<String> {
    let judged: &[(i32, Parsed)] = if level.transitive() {
        earlier
    } else {
        earlier.last().map(std::slice::from_ref).unwrap_or(&[])
    };
    let mut messages = Vec::new();
    // Newest first, as Confluent reports them.
    for (version, old) in judged.iter().rev() {
        if level.backward() {
            for reason in new.incompatibilities_reading(old) {
                messages.push(format!(
                    "{reason} (the new schema cannot read data written with version {version})"
                ));
            }
        }
        if level.forward() {
            for reason in old.incompatibilities_reading(new) {
                messages.push(format!(
                    "{reason} (version {version} cannot read data written with the new schema)"
                ));
            }
        }
    }
    messages
}
