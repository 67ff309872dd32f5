//! The read side: what a read_committed consumer may see. The last stable offset of a
//! partition is the lowest first offset of its open transactions (or the high watermark); a
//! read_committed fetch returns only batches below it, with the aborted transactions of the
//! range so the client drops their records. Only reads that return a transactional batch
//! consult the MetaStore: a batch that is not transactional is visible once durable, and the
//! data up to an open transaction's first batch is always visible.
//!
//! Order matters: the bounds are read before the open entries, and every open entry is
//! durable before its first batch is appended, so no transactional batch below the bounds
//! read can be missing from the scan; an entry is deleted only after its abort was indexed.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use record_batch::header::declared_len;
use record_batch::BatchHeader;

use super::keys;
use super::records::{decode, AbortedTxn, OpenTxn};
use crate::context::Broker;

/// Open entries read for one partition at most (each is one open transaction there).
pub const OPEN_SCAN_MAX: usize = 10_000;
/// Aborted transactions read per MetaStore call.
const ABORTED_PAGE: usize = 256;
/// Aborted transactions one fetch reports at most per partition; a range with more is cut
/// short before the first batch they would not cover.
pub const ABORTED_PER_FETCH_MAX: usize = 10_000;

/// One batch of a fetch response's bytes.
struct BatchAt {
    end: usize,
    base_offset: i64,
    last_offset: i64,
    transactional: bool,
}

fn batches(bytes: &[u8]) -> Vec<BatchAt> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(len) = declared_len(&bytes[pos..]) {
        let end = pos + len;
        let Ok(header) = BatchHeader::parse(&bytes[pos..]) else {
            break;
        };
        if end > bytes.len() {
            break;
        }
        out.push(BatchAt {
            end,
            base_offset: header.base_offset,
            last_offset: header.base_offset + i64::from(header.last_offset_delta),
            transactional: header.is_transactional(),
        });
        pos = end;
    }
    out
}

/// The last stable offset of `stream` and its high watermark.
pub async fn last_stable_offset(
    broker: &Broker,
    stream: &str,
) -> Result<(u64, u64), ResponseError> {
    let bounds = broker
        .storage
        .bounds(stream)
        .await
        .map_err(|e| crate::storage_errors::read_error(&e))?;
    let (start, end) = keys::open_range(stream);
    let open = broker
        .transactions
        .meta()
        .range_scan(&start, &end, None, OPEN_SCAN_MAX)
        .await
        .map_err(|e| {
            tracing::warn!(stream, error = %e, "open transactions not readable");
            ResponseError::KafkaStorageError
        })?;
    let lso = open
        .iter()
        .filter_map(|r| decode::<OpenTxn>(&r.value).ok())
        .map(|o| o.first_offset)
        .fold(bounds.high_watermark, u64::min);
    Ok((lso, bounds.high_watermark))
}

/// Aborted transactions of `stream` overlapping `[from, upper)` (Kafka's
/// `collectAbortedTransactions`: scanned by marker offset, until one whose stable offset
/// after it reaches `upper`).
pub async fn aborted(
    broker: &Broker,
    stream: &str,
    from: u64,
    upper: u64,
) -> Result<Vec<AbortedTxn>, ResponseError> {
    let meta = broker.transactions.meta();
    let (mut start, end) = keys::aborted_range_from(stream, from);
    let mut found = Vec::new();
    loop {
        let page = meta
            .range_scan(&start, &end, None, ABORTED_PAGE)
            .await
            .map_err(|e| {
                tracing::warn!(stream, error = %e, "aborted transactions not readable");
                ResponseError::KafkaStorageError
            })?;
        for record in &page {
            let Ok(aborted) = decode::<AbortedTxn>(&record.value) else {
                continue;
            };
            if aborted.first_offset < upper {
                found.push(aborted);
            }
            if aborted.stable_after >= upper || found.len() >= ABORTED_PER_FETCH_MAX {
                return Ok(found);
            }
        }
        match page.last() {
            Some(last) if page.len() == ABORTED_PAGE => start = format!("{}\u{1}", last.key),
            _ => return Ok(found),
        }
    }
}

/// What a read_committed fetch returns of `records` read from `stream` at `from`: the
/// batches below the last stable offset, the aborted transactions among them, and the last
/// stable offset to report (`None`: no transactional batch read, report the high watermark).
pub async fn committed_view(
    broker: &Broker,
    stream: &str,
    from: u64,
    records: Bytes,
) -> Result<(Bytes, Vec<AbortedTxn>, Option<u64>), ResponseError> {
    let all = batches(&records);
    if !all.iter().any(|b| b.transactional) {
        return Ok((records, Vec::new(), None));
    }
    let (lso, _) = last_stable_offset(broker, stream).await?;
    let lso_kafka = i64::try_from(lso).unwrap_or(i64::MAX);
    let kept: Vec<&BatchAt> = all
        .iter()
        .take_while(|b| b.base_offset < lso_kafka)
        .collect();
    let cut = kept.last().map_or(0, |b| b.end);
    let records = records.slice(..cut);
    if !kept.iter().any(|b| b.transactional) {
        return Ok((records, Vec::new(), Some(lso)));
    }
    let upper = kept
        .last()
        .map_or(from, |b| u64::try_from(b.last_offset + 1).unwrap_or(0));
    let aborted = aborted(broker, stream, from, upper).await?;
    Ok((records, aborted, Some(lso)))
}
