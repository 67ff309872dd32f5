//! Request checks and Oxia's rules that every local backend applies the same way (embedded and
//! memory share this code so they cannot drift apart; the Oxia backend gets them from the server).

use super::{Expect, MetaError, PutOptions};

/// Deltas accepted in one sequence-key put (the offset index uses two).
pub(crate) const SEQUENCE_DELTAS_MAX: usize = 16;

/// Keys are UTF-8 (guaranteed by `&str`) without NUL bytes. There is no length limit, as in the
/// embedded store; bounds on total size are the backend's business.
pub(crate) fn validate_key(key: &str) -> Result<(), MetaError> {
    if key.contains('\0') {
        return Err(MetaError::InvalidArgument(
            "keys must not contain NUL".into(),
        ));
    }
    Ok(())
}

pub(crate) fn validate_sequence_put(options: &PutOptions, deltas: &[u64]) -> Result<(), MetaError> {
    if options.partition_key.is_none() {
        return Err(MetaError::InvalidArgument(
            "sequence-key put requires a partition key".into(),
        ));
    }
    if options.expect != Expect::Any {
        return Err(MetaError::InvalidArgument(
            "sequence-key put cannot expect a version".into(),
        ));
    }
    if deltas.is_empty() || deltas.len() > SEQUENCE_DELTAS_MAX {
        return Err(MetaError::InvalidArgument(format!(
            "a sequence-key put needs 1 to {SEQUENCE_DELTAS_MAX} deltas"
        )));
    }
    // The Oxia server only requires the first delta to be > 0, but the oxia-client crate our
    // Oxia backend uses rejects a zero anywhere; both backends must accept the same requests.
    if deltas.contains(&0) {
        return Err(MetaError::InvalidArgument(
            "sequence deltas must be > 0".into(),
        ));
    }
    Ok(())
}

/// Oxia's version check: `NotExists` and `Version` both fail with `UnexpectedVersion`,
/// including a `Version` expectation on a missing key.
pub(crate) fn check_expect(
    expect: Expect,
    current_version_id: Option<i64>,
) -> Result<(), MetaError> {
    match (expect, current_version_id) {
        (Expect::Any, _) | (Expect::NotExists, None) => Ok(()),
        (Expect::Version(expected), Some(current)) if expected == current => Ok(()),
        _ => Err(MetaError::UnexpectedVersion),
    }
}

/// The exclusive upper bound of a sequence's keys: the caller looks up the highest stored key
/// below it and hands it to [`next_sequence_key`].
pub(crate) fn sequence_upper_bound(prefix: &str) -> String {
    format!("{prefix}-{:020}", u64::MAX)
}

/// Oxia's rule: the numbers continue from `last`, the highest existing key below
/// [`sequence_upper_bound`], when it has the form `prefix-<n>[-<n>...]` (so deleting the newest
/// keys of a sequence rewinds it). Components beyond the existing ones start at zero.
pub(crate) fn next_sequence_key(
    prefix: &str,
    last: Option<&str>,
    deltas: &[u64],
) -> Result<String, MetaError> {
    let dashed = format!("{prefix}-");
    let parts: Vec<&str> = match last.and_then(|k| k.strip_prefix(&dashed)) {
        Some(suffix) => suffix.split('-').collect(),
        None => Vec::new(),
    };
    if parts.len() > deltas.len() {
        return Err(MetaError::InvalidArgument(format!(
            "sequence {prefix} has {} components but only {} deltas were given",
            parts.len(),
            deltas.len()
        )));
    }
    let mut key = prefix.to_string();
    for (i, delta) in deltas.iter().enumerate() {
        let last_value = match parts.get(i) {
            Some(part) => part.parse::<u64>().map_err(|_| {
                MetaError::InvalidArgument(format!(
                    "existing key in sequence {prefix} is not numeric"
                ))
            })?,
            None => 0,
        };
        let value = last_value.checked_add(*delta).ok_or_else(|| {
            MetaError::InvalidArgument(format!("sequence {prefix} would overflow"))
        })?;
        key.push_str(&format!("-{value:020}"));
    }
    Ok(key)
}
