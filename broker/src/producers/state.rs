//! The idempotence state machine of one partition: per producer id, its epoch, last sequence
//! and last few batches, checked for every batch in submission order (Kafka's rules).
//!
//! Pure and synchronous; the caller serialises access and supplies the time. `S` is what the
//! caller keeps per accepted write to answer duplicates with (the write's offset slot).

use std::collections::{HashMap, VecDeque};

use super::sequence::{follows, last_sequence};

/// Batches remembered per producer for duplicate detection (Kafka keeps five).
pub const RETAINED_BATCHES: usize = 5;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Producers tracked per partition; the least recently seen is forgotten past it.
    pub producers_max: usize,
    /// A producer not seen for this long is forgotten (Kafka's `producer.id.expiration.ms`).
    pub expiration_ms: u64,
}

/// One batch's producer header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub producer_id: i64,
    pub epoch: i16,
    pub base_sequence: i32,
    pub records: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    #[error("producer {producer_id} epoch {epoch} is older than the current epoch {current}")]
    StaleEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },
    #[error("producer {producer_id}: sequence {got} does not follow {last:?} (epoch {epoch})")]
    OutOfOrder {
        producer_id: i64,
        epoch: i16,
        last: Option<i32>,
        got: i32,
    },
}

/// What to do with a batch.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<S> {
    /// Accepted and recorded: write it.
    Append,
    /// Already written (or being written) as `slot`, `offset_delta` records into that write.
    Duplicate { slot: S, offset_delta: u64 },
}

#[derive(Clone, Debug)]
struct RetainedBatch<S> {
    first_seq: i32,
    last_seq: i32,
    write_id: u64,
    slot: S,
    offset_delta: u64,
    /// The producer's (epoch, last sequence) before this batch; `None` if it was unknown.
    before: Option<(i16, Option<i32>)>,
}

#[derive(Clone, Debug)]
struct ProducerEntry<S> {
    epoch: i16,
    /// `None` when any sequence is accepted next (no batch seen in this epoch).
    last_seq: Option<i32>,
    batches: VecDeque<RetainedBatch<S>>,
    last_seen_ms: u64,
}

/// One producer as a snapshot sees it: what [`ProducerTable::export`] gives and
/// [`ProducerTable::restore`] takes back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerView<S> {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_seq: Option<i32>,
    pub last_seen_ms: u64,
    /// Retained batches, oldest first.
    pub batches: Vec<BatchView<S>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchView<S> {
    pub first_seq: i32,
    pub last_seq: i32,
    pub slot: S,
    pub offset_delta: u64,
}

pub struct ProducerTable<S> {
    producers: HashMap<i64, ProducerEntry<S>>,
    limits: Limits,
}

impl<S: Clone> ProducerTable<S> {
    pub fn new(limits: Limits) -> Self {
        ProducerTable {
            producers: HashMap::new(),
            limits,
        }
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Checks one batch and, when it is to be written, records it as part of write `write_id`
    /// (`offset_delta` records after the write's base offset), answered later through `slot`.
    pub fn check(
        &mut self,
        batch: BatchHeader,
        write_id: u64,
        slot: &S,
        offset_delta: u64,
        now_ms: u64,
    ) -> Result<Verdict<S>, SequenceError> {
        let first_seq = batch.base_sequence;
        let last_seq = last_sequence(first_seq, batch.records);
        self.forget_if_expired(batch.producer_id, now_ms);
        let before = match self.producers.get(&batch.producer_id) {
            None => None,
            Some(entry) => {
                if batch.epoch < entry.epoch {
                    return Err(SequenceError::StaleEpoch {
                        producer_id: batch.producer_id,
                        epoch: batch.epoch,
                        current: entry.epoch,
                    });
                }
                if batch.epoch == entry.epoch {
                    if let Some(dup) = entry
                        .batches
                        .iter()
                        .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
                    {
                        return Ok(Verdict::Duplicate {
                            slot: dup.slot.clone(),
                            offset_delta: dup.offset_delta,
                        });
                    }
                    if let Some(last) = entry.last_seq {
                        if !follows(last, first_seq) {
                            return Err(SequenceError::OutOfOrder {
                                producer_id: batch.producer_id,
                                epoch: batch.epoch,
                                last: Some(last),
                                got: first_seq,
                            });
                        }
                    }
                } else if first_seq != 0 {
                    // A new epoch starts its sequence at zero.
                    return Err(SequenceError::OutOfOrder {
                        producer_id: batch.producer_id,
                        epoch: batch.epoch,
                        last: None,
                        got: first_seq,
                    });
                }
                Some((entry.epoch, entry.last_seq))
            }
        };
        // An unknown producer (new, expired, or older than what the log still holds) may start
        // at any sequence, as in Kafka.
        if before.is_none() {
            self.make_room(now_ms);
        }
        self.record(
            batch.producer_id,
            batch.epoch,
            RetainedBatch {
                first_seq,
                last_seq,
                write_id,
                slot: slot.clone(),
                offset_delta,
                before,
            },
            now_ms,
        );
        Ok(Verdict::Append)
    }

    /// Undoes write `write_id` (it failed or was abandoned): its batches and any later batch of
    /// the same producers are forgotten, and each producer's epoch and last sequence go back to
    /// what they were before, so that the client's retry of the same batch is accepted.
    pub fn roll_back(&mut self, write_id: u64) {
        let mut emptied = Vec::new();
        for (id, entry) in self.producers.iter_mut() {
            let Some(pos) = entry.batches.iter().position(|b| b.write_id == write_id) else {
                continue;
            };
            let first_removed = entry.batches[pos].before;
            entry.batches.truncate(pos);
            match first_removed {
                None => emptied.push(*id),
                Some((epoch, last_seq)) => {
                    entry.epoch = epoch;
                    entry.last_seq = last_seq;
                }
            }
        }
        for id in emptied {
            self.producers.remove(&id);
        }
    }

    /// Applies a batch read back from the log (state recovery): no checks, the log is the truth.
    pub fn replay(&mut self, batch: BatchHeader, slot: &S, write_time_ms: u64, now_ms: u64) {
        if now_ms.saturating_sub(write_time_ms) > self.limits.expiration_ms {
            return;
        }
        if let Some(entry) = self.producers.get(&batch.producer_id) {
            if batch.epoch < entry.epoch {
                return;
            }
        } else {
            self.make_room(now_ms);
        }
        let first_seq = batch.base_sequence;
        let before = self
            .producers
            .get(&batch.producer_id)
            .map(|e| (e.epoch, e.last_seq));
        self.record(
            batch.producer_id,
            batch.epoch,
            RetainedBatch {
                first_seq,
                last_seq: last_sequence(first_seq, batch.records),
                write_id: 0,
                slot: slot.clone(),
                offset_delta: 0,
                before,
            },
            write_time_ms,
        );
    }

    /// Every producer with its retained batches, most recently seen first (a snapshot keeps
    /// a prefix of this when it must be cut to size).
    pub fn export(&self) -> Vec<ProducerView<S>> {
        let mut views: Vec<ProducerView<S>> = self
            .producers
            .iter()
            .map(|(id, e)| ProducerView {
                producer_id: *id,
                epoch: e.epoch,
                last_seq: e.last_seq,
                last_seen_ms: e.last_seen_ms,
                batches: e
                    .batches
                    .iter()
                    .map(|b| BatchView {
                        first_seq: b.first_seq,
                        last_seq: b.last_seq,
                        slot: b.slot.clone(),
                        offset_delta: b.offset_delta,
                    })
                    .collect(),
            })
            .collect();
        views.sort_by_key(|v| std::cmp::Reverse(v.last_seen_ms));
        views
    }

    /// Puts back a producer from a snapshot (state recovery): no checks, expired ones are
    /// skipped. With `sequence_known` false only the epoch is kept (the snapshot is older than
    /// the log still replayed, so a later batch may have moved the sequence on unseen).
    pub fn restore(&mut self, view: ProducerView<S>, sequence_known: bool, now_ms: u64) {
        if now_ms.saturating_sub(view.last_seen_ms) > self.limits.expiration_ms {
            return;
        }
        self.make_room(now_ms);
        let batches = if sequence_known {
            view.batches
                .into_iter()
                .rev()
                .take(RETAINED_BATCHES)
                .rev()
                .map(|b| RetainedBatch {
                    first_seq: b.first_seq,
                    last_seq: b.last_seq,
                    write_id: 0,
                    slot: b.slot,
                    offset_delta: b.offset_delta,
                    before: None,
                })
                .collect()
        } else {
            VecDeque::new()
        };
        self.producers.insert(
            view.producer_id,
            ProducerEntry {
                epoch: view.epoch,
                last_seq: if sequence_known { view.last_seq } else { None },
                batches,
                last_seen_ms: view.last_seen_ms,
            },
        );
    }

    fn record(&mut self, producer_id: i64, epoch: i16, batch: RetainedBatch<S>, now_ms: u64) {
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch,
                last_seq: None,
                batches: VecDeque::new(),
                last_seen_ms: now_ms,
            });
        if epoch != entry.epoch {
            entry.batches.clear();
            entry.epoch = epoch;
        }
        entry.last_seq = Some(batch.last_seq);
        entry.last_seen_ms = entry.last_seen_ms.max(now_ms);
        entry.batches.push_back(batch);
        while entry.batches.len() > RETAINED_BATCHES {
            entry.batches.pop_front();
        }
    }

    fn forget_if_expired(&mut self, producer_id: i64, now_ms: u64) {
        let expired = self
            .producers
            .get(&producer_id)
            .is_some_and(|e| now_ms.saturating_sub(e.last_seen_ms) > self.limits.expiration_ms);
        if expired {
            self.producers.remove(&producer_id);
        }
    }

    /// Keeps the table under its limit before a producer is added: expired producers go
    /// first, then the least recently seen.
    fn make_room(&mut self, now_ms: u64) {
        if self.producers.len() < self.limits.producers_max {
            return;
        }
        let expiration_ms = self.limits.expiration_ms;
        self.producers
            .retain(|_, e| now_ms.saturating_sub(e.last_seen_ms) <= expiration_ms);
        while self.producers.len() >= self.limits.producers_max.max(1) {
            let Some(oldest) = self
                .producers
                .iter()
                .min_by_key(|(_, e)| e.last_seen_ms)
                .map(|(id, _)| *id)
            else {
                break;
            };
            tracing::debug!(
                producer_id = oldest,
                "forgetting least recently seen producer"
            );
            self.producers.remove(&oldest);
        }
    }
}

#[cfg(test)]
// Test code: producer ids and offsets of test batches converted with `as`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        producers_max: 3,
        expiration_ms: 1000,
    };

    fn batch(producer_id: i64, epoch: i16, base_sequence: i32, records: i32) -> BatchHeader {
        BatchHeader {
            producer_id,
            epoch,
            base_sequence,
            records,
        }
    }

    fn check(
        table: &mut ProducerTable<u64>,
        b: BatchHeader,
        write_id: u64,
    ) -> Result<Verdict<u64>, SequenceError> {
        table.check(b, write_id, &write_id, 0, 10)
    }

    #[test]
    fn consecutive_batches_are_appended() {
        let mut t = ProducerTable::new(LIMITS);
        assert_eq!(check(&mut t, batch(1, 0, 0, 3), 1), Ok(Verdict::Append));
        assert_eq!(check(&mut t, batch(1, 0, 3, 2), 2), Ok(Verdict::Append));
    }

    #[test]
    fn a_retried_batch_is_a_duplicate_of_its_first_write() {
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, 0, 3), 1).unwrap();
        check(&mut t, batch(1, 0, 3, 2), 2).unwrap();
        assert_eq!(
            check(&mut t, batch(1, 0, 0, 3), 3),
            Ok(Verdict::Duplicate {
                slot: 1,
                offset_delta: 0
            })
        );
        assert_eq!(
            check(&mut t, batch(1, 0, 3, 2), 4),
            Ok(Verdict::Duplicate {
                slot: 2,
                offset_delta: 0
            })
        );
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut t = ProducerTable::new(LIMITS);
        for i in 0..6 {
            check(&mut t, batch(1, 0, i, 1), i as u64).unwrap();
        }
        assert!(matches!(
            check(&mut t, batch(1, 0, 0, 1), 9),
            Err(SequenceError::OutOfOrder { .. })
        ));
        assert!(matches!(
            check(&mut t, batch(1, 0, 1, 1), 9),
            Ok(Verdict::Duplicate { slot: 1, .. })
        ));
    }

    #[test]
    fn a_gap_is_out_of_order() {
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, 0, 3), 1).unwrap();
        assert_eq!(
            check(&mut t, batch(1, 0, 4, 1), 2),
            Err(SequenceError::OutOfOrder {
                producer_id: 1,
                epoch: 0,
                last: Some(2),
                got: 4
            })
        );
    }

    #[test]
    fn an_older_epoch_is_fenced() {
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 2, 0, 1), 1).unwrap();
        assert!(matches!(
            check(&mut t, batch(1, 1, 1, 1), 2),
            Err(SequenceError::StaleEpoch { current: 2, .. })
        ));
    }

    #[test]
    fn a_new_epoch_must_start_at_sequence_zero() {
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, 0, 5), 1).unwrap();
        assert!(matches!(
            check(&mut t, batch(1, 1, 5, 1), 2),
            Err(SequenceError::OutOfOrder { .. })
        ));
        assert_eq!(check(&mut t, batch(1, 1, 0, 1), 3), Ok(Verdict::Append));
        // The old epoch's batches are no longer duplicates: they are fenced.
        assert!(matches!(
            check(&mut t, batch(1, 0, 0, 5), 4),
            Err(SequenceError::StaleEpoch { .. })
        ));
    }

    #[test]
    fn an_unknown_producer_may_start_at_any_sequence() {
        let mut t = ProducerTable::new(LIMITS);
        assert_eq!(check(&mut t, batch(7, 0, 42, 1), 1), Ok(Verdict::Append));
        assert_eq!(check(&mut t, batch(7, 0, 43, 1), 2), Ok(Verdict::Append));
    }

    #[test]
    fn sequences_wrap_at_the_maximum() {
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, i32::MAX - 1, 2), 1).unwrap();
        assert_eq!(check(&mut t, batch(1, 0, 0, 2), 2), Ok(Verdict::Append));
        check(&mut t, batch(1, 0, 2, 1), 3).unwrap();
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, i32::MAX - 1, 4), 1).unwrap();
        assert_eq!(check(&mut t, batch(1, 0, 2, 1), 2), Ok(Verdict::Append));
    }

    #[test]
    fn a_rolled_back_write_lets_the_same_batch_be_retried() {
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, 0, 2), 1).unwrap();
        check(&mut t, batch(1, 0, 2, 2), 2).unwrap();
        check(&mut t, batch(1, 0, 4, 2), 3).unwrap();
        t.roll_back(2);
        assert_eq!(check(&mut t, batch(1, 0, 2, 2), 4), Ok(Verdict::Append));
        assert!(matches!(
            check(&mut t, batch(1, 0, 0, 2), 5),
            Ok(Verdict::Duplicate { slot: 1, .. })
        ));
    }

    #[test]
    fn rolling_back_a_producers_first_write_forgets_it() {
        let mut t = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, 0, 2), 1).unwrap();
        t.roll_back(1);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn replayed_batches_restore_sequences_and_duplicates() {
        let mut t: ProducerTable<u64> = ProducerTable::new(LIMITS);
        t.replay(batch(1, 0, 0, 3), &100, 5, 10);
        t.replay(batch(1, 0, 3, 3), &103, 5, 10);
        assert!(matches!(
            check(&mut t, batch(1, 0, 3, 3), 1),
            Ok(Verdict::Duplicate { slot: 103, .. })
        ));
        assert!(matches!(
            check(&mut t, batch(1, 0, 7, 1), 2),
            Err(SequenceError::OutOfOrder { .. })
        ));
        assert_eq!(check(&mut t, batch(1, 0, 6, 1), 3), Ok(Verdict::Append));
    }

    #[test]
    fn an_exported_table_restores_to_the_same_answers() {
        let mut t: ProducerTable<u64> = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 0, 0, 3), 1).unwrap();
        check(&mut t, batch(1, 0, 3, 2), 2).unwrap();
        check(&mut t, batch(2, 4, 10, 1), 3).unwrap();
        let mut restored: ProducerTable<u64> = ProducerTable::new(LIMITS);
        for view in t.export() {
            restored.restore(view, true, 10);
        }
        assert_eq!(restored.len(), 2);
        assert!(matches!(
            check(&mut restored, batch(1, 0, 3, 2), 9),
            Ok(Verdict::Duplicate { slot: 2, .. })
        ));
        assert!(matches!(
            check(&mut restored, batch(1, 0, 6, 1), 9),
            Err(SequenceError::OutOfOrder { .. })
        ));
        assert!(matches!(
            check(&mut restored, batch(2, 3, 0, 1), 9),
            Err(SequenceError::StaleEpoch { .. })
        ));
        assert_eq!(
            check(&mut restored, batch(2, 4, 11, 1), 9),
            Ok(Verdict::Append)
        );
    }

    #[test]
    fn a_restore_without_sequences_keeps_only_the_epoch() {
        let mut t: ProducerTable<u64> = ProducerTable::new(LIMITS);
        check(&mut t, batch(1, 2, 0, 3), 1).unwrap();
        let mut restored: ProducerTable<u64> = ProducerTable::new(LIMITS);
        for view in t.export() {
            restored.restore(view, false, 10);
        }
        assert_eq!(
            check(&mut restored, batch(1, 2, 40, 1), 2),
            Ok(Verdict::Append)
        );
        assert!(matches!(
            check(&mut restored, batch(1, 1, 0, 1), 3),
            Err(SequenceError::StaleEpoch { .. })
        ));
    }

    #[test]
    fn idle_producers_expire_and_the_table_stays_bounded() {
        let mut t: ProducerTable<u64> = ProducerTable::new(LIMITS);
        t.check(batch(1, 0, 0, 1), 1, &1, 0, 10).unwrap();
        // Expired: a gapped sequence is accepted as from an unknown producer.
        assert_eq!(
            t.check(batch(1, 0, 9, 1), 2, &2, 0, 2000),
            Ok(Verdict::Append)
        );
        for id in 2..10 {
            t.check(batch(id, 0, 0, 1), id as u64, &0, 0, 2000 + id as u64)
                .unwrap();
        }
        assert_eq!(t.len(), LIMITS.producers_max);
    }
}
