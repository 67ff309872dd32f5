//! Where a batch's records are read from: the batch's own bytes when uncompressed, a streaming
//! decompressor otherwise. One record parser ([`crate::record`]) runs over either; what a
//! key, value or header becomes (a borrowed slice, a shared `Bytes`, nothing at all when only
//! validating) is the input's choice.

use std::io::{BufRead, BufReader, ErrorKind, Read};

use bytes::Bytes;

use crate::varint::{decode_varlong, VARLONG_BYTES_MAX};
use crate::RecordBatchError;

/// A source of record bytes.
pub(crate) trait Input {
    type Field;
    fn byte(&mut self) -> Result<u8, RecordBatchError>;
    /// A varlong and the bytes it took.
    fn varlong(&mut self) -> Result<(i64, usize), RecordBatchError>;
    /// The next `len` bytes as a field.
    fn field(&mut self, len: usize) -> Result<Self::Field, RecordBatchError>;
    /// Whether nothing is left (a stream reads ahead to know).
    fn at_end(&mut self) -> Result<bool, RecordBatchError>;
}

fn premature_end() -> RecordBatchError {
    RecordBatchError::Invalid("records end before the batch's record count".into())
}

/// Uncompressed records, borrowed.
pub(crate) struct SliceInput<'a>(pub &'a [u8]);

impl<'a> Input for SliceInput<'a> {
    type Field = &'a [u8];
    fn byte(&mut self) -> Result<u8, RecordBatchError> {
        let (&b, rest) = self.0.split_first().ok_or_else(premature_end)?;
        self.0 = rest;
        Ok(b)
    }
    fn varlong(&mut self) -> Result<(i64, usize), RecordBatchError> {
        let found = decode_varlong(self.0)?;
        self.0 = &self.0[found.1..];
        Ok(found)
    }
    fn field(&mut self, len: usize) -> Result<&'a [u8], RecordBatchError> {
        if len > self.0.len() {
            return Err(premature_end());
        }
        let (field, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(field)
    }
    fn at_end(&mut self) -> Result<bool, RecordBatchError> {
        Ok(self.0.is_empty())
    }
}

/// Uncompressed records as shared slices of the batch (no copy).
pub(crate) struct BytesInput(pub Bytes);

impl Input for BytesInput {
    type Field = Bytes;
    fn byte(&mut self) -> Result<u8, RecordBatchError> {
        let b = SliceInput(&self.0).byte()?;
        let _ = self.0.split_to(1);
        Ok(b)
    }
    fn varlong(&mut self) -> Result<(i64, usize), RecordBatchError> {
        let found = decode_varlong(&self.0)?;
        let _ = self.0.split_to(found.1);
        Ok(found)
    }
    fn field(&mut self, len: usize) -> Result<Bytes, RecordBatchError> {
        if len > self.0.len() {
            return Err(premature_end());
        }
        Ok(self.0.split_to(len))
    }
    fn at_end(&mut self) -> Result<bool, RecordBatchError> {
        Ok(self.0.is_empty())
    }
}

/// The error a [`Limited`] reader reports once its limit is passed.
#[derive(Debug, thiserror::Error)]
#[error("decompressed records above {0} bytes")]
struct LimitExceeded(usize);

/// A reader that fails once it has produced more than `limit` bytes: decompression stops at
/// the limit, not at the end of a bomb.
pub(crate) struct Limited<R> {
    inner: R,
    left: usize,
    limit: usize,
}

impl<R: Read> Limited<R> {
    pub(crate) fn new(inner: R, limit: usize) -> Self {
        Limited {
            inner,
            left: limit,
            limit,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte past the limit is asked for, so that exactly `limit` bytes still succeed.
        let want = buf.len().min(self.left.saturating_add(1));
        let n = self.inner.read(&mut buf[..want])?;
        if n > self.left {
            return Err(std::io::Error::other(LimitExceeded(self.limit)));
        }
        self.left -= n;
        Ok(n)
    }
}

/// What an I/O error from a decompressing reader means for the batch.
pub(crate) fn stream_error(e: std::io::Error) -> RecordBatchError {
    if let Some(limit) = e.get_ref().and_then(|i| i.downcast_ref::<LimitExceeded>()) {
        return RecordBatchError::TooLarge(limit.to_string());
    }
    if let Some(inner) = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<RecordBatchError>())
    {
        return inner.clone();
    }
    if e.kind() == ErrorKind::UnexpectedEof {
        return premature_end();
    }
    RecordBatchError::Invalid(format!("records do not decompress: {e}"))
}

/// Bytes read through by a stream input between refills.
const STREAM_BUFFER_BYTES: usize = 32 << 10;

/// Decompressed records read as they come, through one buffer whatever the batch's size.
pub(crate) struct Stream<R> {
    reader: BufReader<R>,
}

impl<R: Read> Stream<R> {
    pub(crate) fn new(reader: R) -> Self {
        Stream {
            reader: BufReader::with_capacity(STREAM_BUFFER_BYTES, reader),
        }
    }

    fn available(&mut self) -> Result<&[u8], RecordBatchError> {
        self.reader.fill_buf().map_err(stream_error)
    }

    fn byte(&mut self) -> Result<u8, RecordBatchError> {
        let b = *self.available()?.first().ok_or_else(premature_end)?;
        self.reader.consume(1);
        Ok(b)
    }

    pub(crate) fn varlong(&mut self) -> Result<(i64, usize), RecordBatchError> {
        let buffered = self.available()?;
        if let Ok(found) = decode_varlong(buffered) {
            self.reader.consume(found.1);
            return Ok(found);
        }
        if buffered.len() >= VARLONG_BYTES_MAX {
            return decode_varlong(buffered);
        }
        // The varint straddles a refill (or the end): gather it byte by byte.
        let mut bytes = [0u8; VARLONG_BYTES_MAX];
        for i in 0..VARLONG_BYTES_MAX {
            bytes[i] = self.byte()?;
            if bytes[i] & 0x80 == 0 {
                return decode_varlong(&bytes[..=i]);
            }
        }
        decode_varlong(&bytes)
    }

    fn skip(&mut self, mut len: usize) -> Result<(), RecordBatchError> {
        while len > 0 {
            let n = self.available()?.len().min(len);
            if n == 0 {
                return Err(premature_end());
            }
            self.reader.consume(n);
            len -= n;
        }
        Ok(())
    }

    /// The next `len` bytes, owned (one copy out of the decompressor).
    pub(crate) fn capture(&mut self, len: usize) -> Result<Bytes, RecordBatchError> {
        // Nothing allocated up front: a record may claim more than the stream holds, so memory
        // grows with the bytes that really arrive (and the reader's limit bounds those).
        let mut out = Vec::new();
        (&mut self.reader)
            .take(len as u64)
            .read_to_end(&mut out)
            .map_err(stream_error)?;
        if out.len() != len {
            return Err(premature_end());
        }
        Ok(Bytes::from(out))
    }

    pub(crate) fn at_end(&mut self) -> Result<bool, RecordBatchError> {
        Ok(self.available()?.is_empty())
    }
}

/// A stream whose fields are skipped: validation holds one buffer, whatever the batch's size.
pub(crate) struct Skipping<R>(pub Stream<R>);

impl<R: Read> Input for Skipping<R> {
    type Field = ();
    fn byte(&mut self) -> Result<u8, RecordBatchError> {
        self.0.byte()
    }
    fn varlong(&mut self) -> Result<(i64, usize), RecordBatchError> {
        self.0.varlong()
    }
    fn field(&mut self, len: usize) -> Result<(), RecordBatchError> {
        self.0.skip(len)
    }
    fn at_end(&mut self) -> Result<bool, RecordBatchError> {
        self.0.at_end()
    }
}
