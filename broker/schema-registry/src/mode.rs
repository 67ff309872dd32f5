//! The registry's modes: READWRITE (the default), READONLY (no register or delete), IMPORT
//! (register with explicit ids and versions, without compatibility checks, to migrate a
//! registry with its ids).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadWrite,
    ReadOnly,
    /// Confluent's READONLY_OVERRIDE: READONLY that a subject-level setting cannot lift.
    ReadOnlyOverride,
    Import,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::ReadOnlyOverride => "READONLY_OVERRIDE",
            Mode::Import => "IMPORT",
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        [
            Mode::ReadWrite,
            Mode::ReadOnly,
            Mode::ReadOnlyOverride,
            Mode::Import,
        ]
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(text))
    }
}
