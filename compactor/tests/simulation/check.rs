//! The invariants, checked against what one engine reads back: offsets dense from the log
//! start to the high watermark, every acknowledged append at the offsets it was given, no
//! failed append readable, nothing twice, bounds that never move back.

use std::collections::HashMap;
use std::sync::Mutex;

use storage::record_batch::decode_batch;
use storage::{Storage, StorageError, StreamBounds};

use super::model::{Model, Outcome};

/// Bytes asked per read.
const READ_BYTES: usize = 16 << 10;
/// Attempts at one read before giving up on this check (faults are injected at random).
const READ_ATTEMPTS: usize = 20;

/// A record read back: which append wrote it, which of its records it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag {
    pub append: usize,
    pub record: u32,
}

pub fn tag_value(tag: Tag) -> String {
    format!("a{}r{}", tag.append, tag.record)
}

fn parse_tag(value: &[u8]) -> Option<Tag> {
    let text = std::str::from_utf8(value).ok()?.strip_prefix('a')?;
    let (append, record) = text.split_once('r')?;
    Some(Tag {
        append: append.parse().ok()?,
        record: record.parse().ok()?,
    })
}

/// Reads one stream whole and checks it against the model; `Ok(false)` when injected faults
/// kept the read from finishing (nothing to conclude), `Err` on a violated invariant. What was
/// acknowledged before the read must be in it; what failed, before or after, must not.
pub async fn check_stream(
    storage: &Storage,
    model: &Mutex<Model>,
    stream: usize,
) -> Result<bool, String> {
    let (name, before) = {
        let model = lock(model);
        (model.streams[stream].name.clone(), model.outcomes())
    };
    let Some((bounds, records)) = read_all(storage, &name).await? else {
        return Ok(false);
    };
    let mut model = lock(model);
    check_bounds(&mut model, stream, bounds)?;
    check_records(&model, &before, stream, bounds, &records)?;
    Ok(true)
}

pub fn lock(model: &Mutex<Model>) -> std::sync::MutexGuard<'_, Model> {
    model.lock().unwrap_or_else(|p| p.into_inner())
}

async fn read_all(
    storage: &Storage,
    stream: &str,
) -> Result<Option<(StreamBounds, Vec<(u64, Tag)>)>, String> {
    let Some(bounds) = retry(|| storage.refresh_bounds(stream)).await? else {
        return Ok(None);
    };
    let mut records = Vec::new();
    let mut next = bounds.log_start_offset;
    while next < bounds.high_watermark {
        let Some(read) = retry(|| storage.read(stream, next, READ_BYTES)).await? else {
            return Ok(None);
        };
        if read.chunks.is_empty() {
            return Err(format!("{stream}: empty read at {next} below {bounds:?}"));
        }
        for chunk in &read.chunks {
            if chunk.base_offset > next {
                return Err(format!(
                    "{stream}: gap, next {next}, chunk at {}",
                    chunk.base_offset
                ));
            }
            decode_chunk(chunk, &mut records)?;
            next = next.max(chunk.end_offset());
        }
    }
    Ok(Some((bounds, records)))
}

/// A read that failed on an injected fault is retried; a trim racing it (out of range) or
/// persistent faults end the check without a verdict.
async fn retry<T, F, Fut>(mut op: F) -> Result<Option<T>, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StorageError>>,
{
    for _ in 0..READ_ATTEMPTS {
        match op().await {
            Ok(value) => return Ok(Some(value)),
            Err(StorageError::Corrupt(why)) => return Err(format!("corrupt data served: {why}")),
            Err(StorageError::OffsetOutOfRange { .. }) => return Ok(None),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
        }
    }
    Ok(None)
}

fn decode_chunk(chunk: &storage::ReadChunk, out: &mut Vec<(u64, Tag)>) -> Result<(), String> {
    let mut base = chunk.base_offset;
    let mut at = 0usize;
    for meta in &chunk.batches {
        let end = at + meta.len as usize;
        let bytes = chunk.bytes.slice(at..end.min(chunk.bytes.len()));
        let decoded = decode_batch(&bytes).map_err(|e| format!("undecodable batch: {e}"))?;
        if decoded.records.len() != meta.records as usize {
            return Err(format!(
                "batch at {base}: {} records, index says {}",
                decoded.records.len(),
                meta.records
            ));
        }
        for record in &decoded.records {
            let value = record.value.as_deref().unwrap_or_default();
            let tag = parse_tag(value).ok_or("a record this simulation never wrote")?;
            out.push((base + record.offset_delta as u64, tag));
        }
        base += u64::from(meta.records);
        at = end;
    }
    Ok(())
}

fn check_bounds(model: &mut Model, stream: usize, bounds: StreamBounds) -> Result<(), String> {
    let seen = &mut model.streams[stream];
    if bounds.log_start_offset > bounds.high_watermark
        || bounds.high_watermark < seen.last_high_watermark
        || bounds.log_start_offset < seen.last_log_start
        || bounds.log_start_offset < seen.trimmed_to
    {
        return Err(format!("bounds {bounds:?} after {seen:?}"));
    }
    seen.last_high_watermark = bounds.high_watermark;
    seen.last_log_start = bounds.log_start_offset;
    Ok(())
}

fn check_records(
    model: &Model,
    before: &[Outcome],
    stream: usize,
    bounds: StreamBounds,
    records: &[(u64, Tag)],
) -> Result<(), String> {
    let mut at: HashMap<u64, Tag> = HashMap::new();
    let mut seen: HashMap<Tag, u64> = HashMap::new();
    let first = records.first().map_or(0, |(o, _)| *o);
    for (expected, &(offset, tag)) in (first..).zip(records) {
        if offset != expected {
            return Err(format!(
                "offsets not dense: {offset} where {expected} was due"
            ));
        }
        if let Some(first) = seen.insert(tag, offset) {
            return Err(format!("{tag:?} read twice, at {first} and {offset}"));
        }
        let append = model.appends.get(tag.append).ok_or("unknown append")?;
        if append.outcome == Outcome::Failed {
            return Err(format!("failed {tag:?} readable at {offset}"));
        }
        if let Outcome::Acked { base, .. } = append.outcome {
            if base + u64::from(tag.record) != offset {
                return Err(format!("acked {tag:?} of [{base}..) read at {offset}"));
            }
        }
        if append.stream != stream {
            return Err(format!(
                "{tag:?} of stream {} read in {stream}",
                append.stream
            ));
        }
        at.insert(offset, tag);
    }
    check_acked_present(model, before, stream, bounds, &at)
}

/// Every append acknowledged before the read, in full from the log start on.
fn check_acked_present(
    model: &Model,
    before: &[Outcome],
    stream: usize,
    bounds: StreamBounds,
    at: &HashMap<u64, Tag>,
) -> Result<(), String> {
    for (id, outcome) in before.iter().enumerate() {
        let Outcome::Acked { base, end } = *outcome else {
            continue;
        };
        if model.appends[id].stream != stream || end <= bounds.log_start_offset {
            continue;
        }
        if end > bounds.high_watermark {
            return Err(format!(
                "acked append {id} [{base}, {end}) beyond {bounds:?}"
            ));
        }
        for offset in base.max(bounds.log_start_offset)..end {
            let want = super::check::Tag {
                append: id,
                record: (offset - base) as u32,
            };
            if at.get(&offset) != Some(&want) {
                return Err(format!(
                    "acked {want:?} missing at {offset}: {:?}",
                    at.get(&offset)
                ));
            }
        }
    }
    Ok(())
}
