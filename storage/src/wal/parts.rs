//! A WAL object held as the buffers it is made of: its header and directory, each append's
//! payload as the broker received it, and its footer. The PUT sends the parts as they are
//! (object_store writes them one after another), so no payload byte is copied into the object;
//! the write cache keeps the same parts, and a tailing read of a range inside one part is a
//! slice of it.

use bytes::{Bytes, BytesMut};
use object_store::PutPayload;

use crate::cache::{BoundedCache, Weigh};

/// Whole WAL objects recently written, by object key: tailing reads never touch the store.
pub type WriteCache = BoundedCache<String, std::sync::Arc<ObjectParts>>;

#[derive(Clone, Debug, Default)]
pub struct ObjectParts {
    parts: Vec<Bytes>,
    /// Where each part starts in the object, ascending; the object's length last.
    starts: Vec<u64>,
}

impl ObjectParts {
    pub fn new() -> ObjectParts {
        ObjectParts {
            parts: Vec::new(),
            starts: vec![0],
        }
    }

    /// Appends `part` (empty parts are skipped: they would make ranges ambiguous).
    pub fn push(&mut self, part: Bytes) {
        if part.is_empty() {
            return;
        }
        let end = self.len() + part.len() as u64;
        self.parts.push(part);
        self.starts.push(end);
    }

    pub fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The payload of a PUT: the parts themselves, uncopied.
    pub fn payload(&self) -> PutPayload {
        self.parts.iter().cloned().collect()
    }

    /// `len` bytes from `offset`: a slice of one part when the range lies inside it, else a
    /// copy of the range; `None` when the range runs past the object.
    pub fn range(&self, offset: u64, len: u32) -> Option<Bytes> {
        let end = offset.checked_add(u64::from(len))?;
        if end > self.len() {
            return None;
        }
        if len == 0 {
            return Some(Bytes::new());
        }
        let first = self.part_at(offset);
        if end > self.starts[first + 1] {
            return self.joined_range(offset, len);
        }
        let at = usize::try_from(offset - self.starts[first]).ok()?;
        Some(self.parts[first].slice(at..at + len as usize))
    }

    /// Whether `range` would have to copy: the range lies within the object across parts.
    pub fn spans_parts(&self, offset: u64, len: u32) -> bool {
        let Some(end) = offset.checked_add(u64::from(len)) else {
            return false;
        };
        len > 0 && end <= self.len() && end > self.starts[self.part_at(offset) + 1]
    }

    /// The part holding `offset`: the last one starting at or before it.
    fn part_at(&self, offset: u64) -> usize {
        self.starts.partition_point(|&start| start <= offset) - 1
    }

    /// A copy of a range spanning several parts.
    fn joined_range(&self, offset: u64, len: u32) -> Option<Bytes> {
        let first = self.part_at(offset);
        let mut copy = BytesMut::with_capacity(len as usize);
        let mut at = usize::try_from(offset - self.starts[first]).ok()?;
        for part in &self.parts[first..] {
            let wanted = len as usize - copy.len();
            let take = wanted.min(part.len() - at);
            copy.extend_from_slice(&part[at..at + take]);
            at = 0;
            if copy.len() == len as usize {
                break;
            }
        }
        Some(copy.freeze())
    }

    /// The whole object in one buffer (a copy unless it is a single part).
    pub fn to_bytes(&self) -> Bytes {
        match self.parts.as_slice() {
            [only] => only.clone(),
            parts => {
                let mut whole = BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
                parts.iter().for_each(|part| whole.extend_from_slice(part));
                whole.freeze()
            }
        }
    }
}

impl Weigh for ObjectParts {
    fn weight_bytes(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }
}

#[cfg(test)]
// Test data of a few bytes: offsets fit any usize.
#[allow(clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn three_parts() -> ObjectParts {
        let mut parts = ObjectParts::new();
        for part in [&b"abc"[..], b"", b"defg", b"h"] {
            parts.push(Bytes::copy_from_slice(part));
        }
        parts
    }

    #[test]
    fn every_range_reads_the_bytes_of_the_whole_object() {
        let parts = three_parts();
        let whole = parts.to_bytes();
        assert_eq!(&whole[..], b"abcdefgh");
        for offset in 0..=8u64 {
            for len in 0..=(8 - offset) as u32 {
                let range = parts.range(offset, len).unwrap();
                assert_eq!(
                    &range[..],
                    &whole[offset as usize..(offset as usize + len as usize)]
                );
            }
        }
        assert!(parts.range(7, 2).is_none());
        assert!(parts.range(u64::MAX, 1).is_none());
    }

    #[test]
    fn a_range_inside_one_part_shares_its_buffer() {
        let parts = three_parts();
        let payload = parts.payload();
        let part = payload.iter().nth(1).unwrap();
        let range = parts.range(4, 2).unwrap();
        assert_eq!(&range[..], b"ef");
        assert_eq!(range.as_ptr(), part[1..].as_ptr());
    }

    #[test]
    fn only_a_range_across_parts_spans_them() {
        let parts = three_parts();
        assert!(!parts.spans_parts(0, 3), "inside the first part");
        assert!(parts.spans_parts(2, 2), "across the first two");
        assert!(!parts.spans_parts(7, 1), "the last part whole");
        assert!(!parts.spans_parts(3, 0), "empty");
        assert!(!parts.spans_parts(7, 2), "past the end");
        assert!(!parts.spans_parts(u64::MAX, 1), "overflowing");
    }

    #[test]
    fn the_payload_is_the_parts_in_order() {
        let parts = three_parts();
        assert_eq!(parts.payload().content_length(), 8);
        assert_eq!(parts.payload().iter().count(), 3);
        assert_eq!(parts.weight_bytes(), 8);
    }
}
