//! One record of a magic-2 batch:
//! `length varint, attributes i8, timestamp_delta varlong, offset_delta varint,
//! key_length varint, key, value_length varint, value, header_count varint,
//! [header_key_length varint, header_key, header_value_length varint, header_value]`.
//! A length of -1 is a null. Kafka reads any other negative key or value length as a null too,
//! but consumers (librdkafka) fail on it, so the parser reads it as a null for stored batches and
//! reports it in [`Fields::bad_length`] for produce validation to refuse. A negative header
//! count or header key length is invalid. `length` must cover the fields exactly.

use bytes::{BufMut, Bytes, BytesMut};

use crate::input::Input;
use crate::varint::{narrow_varint, put_varlong, varlong_len};
use crate::RecordBatchError;

fn invalid(what: &str) -> RecordBatchError {
    RecordBatchError::Invalid(what.to_string())
}

/// One record's fields; `F` is whatever the input makes of a byte field.
pub(crate) struct Fields<F> {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<F>,
    pub value: Option<F>,
    /// The first negative length other than -1 (which field, the length), read as a null.
    pub bad_length: Option<(&'static str, i32)>,
}

/// The record's body, read within its declared length.
struct Body<'i, I> {
    input: &'i mut I,
    left: usize,
    bad_length: Option<(&'static str, i32)>,
}

impl<I: Input> Body<'_, I> {
    fn spend(&mut self, n: usize) -> Result<(), RecordBatchError> {
        self.left = self
            .left
            .checked_sub(n)
            .ok_or_else(|| invalid("record fields run past its length"))?;
        Ok(())
    }
    fn varlong(&mut self) -> Result<i64, RecordBatchError> {
        let (value, len) = self.input.varlong()?;
        self.spend(len)?;
        Ok(value)
    }
    fn varint(&mut self) -> Result<i32, RecordBatchError> {
        let found = self.input.varlong()?;
        self.spend(found.1)?;
        narrow_varint(found)
    }
    fn field(&mut self, len: usize) -> Result<I::Field, RecordBatchError> {
        self.spend(len)?;
        self.input.field(len)
    }
    fn nullable(&mut self, what: &'static str) -> Result<Option<I::Field>, RecordBatchError> {
        let len = self.varint()?;
        if len < -1 && self.bad_length.is_none() {
            self.bad_length = Some((what, len));
        }
        match usize::try_from(len) {
            Ok(len) => self.field(len).map(Some),
            Err(_) => Ok(None),
        }
    }
}

/// The length prefix of the next record.
pub(crate) fn length(found: (i64, usize)) -> Result<usize, RecordBatchError> {
    usize::try_from(narrow_varint(found)?).map_err(|_| invalid("negative record length"))
}

/// Reads the next record; its headers go to `headers` (cleared first, so that one vector
/// serves a whole batch).
pub(crate) fn parse<I: Input>(
    input: &mut I,
    headers: &mut Vec<(I::Field, Option<I::Field>)>,
) -> Result<Fields<I::Field>, RecordBatchError> {
    let len = length(input.varlong()?)?;
    parse_body(input, len, headers)
}

/// Reads a record's fields, which must take exactly `len` bytes.
pub(crate) fn parse_body<I: Input>(
    input: &mut I,
    len: usize,
    headers: &mut Vec<(I::Field, Option<I::Field>)>,
) -> Result<Fields<I::Field>, RecordBatchError> {
    headers.clear();
    let mut body = Body {
        input,
        left: len,
        bad_length: None,
    };
    body.spend(1)?;
    let attributes = i8::from_be_bytes([body.input.byte()?]);
    let timestamp_delta = body.varlong()?;
    let offset_delta = body.varint()?;
    let key = body.nullable("key")?;
    let value = body.nullable("value")?;
    let count = body.varint()?;
    if count < 0 {
        return Err(invalid("negative header count"));
    }
    for _ in 0..count {
        let key_len =
            usize::try_from(body.varint()?).map_err(|_| invalid("negative header key length"))?;
        let key = body.field(key_len)?;
        headers.push((key, body.nullable("header value")?));
    }
    if body.left != 0 {
        return Err(invalid("bytes left after a record's headers"));
    }
    Ok(Fields {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        bad_length: body.bad_length,
    })
}

/// One record, with its deltas as stored in the batch; fields share the batch's buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordRow {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

impl RecordRow {
    pub(crate) fn from_fields(f: Fields<Bytes>, headers: Vec<(Bytes, Option<Bytes>)>) -> Self {
        RecordRow {
            attributes: f.attributes,
            timestamp_delta: f.timestamp_delta,
            offset_delta: f.offset_delta,
            key: f.key,
            value: f.value,
            headers,
        }
    }
}

/// One record's fields borrowed from wherever they live (a decoded batch, Parquet columns),
/// so that a batch can be built without copying them first.
#[derive(Clone, Debug)]
pub struct RecordRef<'a> {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
}

impl<'a> From<&'a RecordRow> for RecordRef<'a> {
    fn from(r: &'a RecordRow) -> Self {
        RecordRef {
            attributes: r.attributes,
            timestamp_delta: r.timestamp_delta,
            offset_delta: r.offset_delta,
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (&k[..], v.as_deref()))
                .collect(),
        }
    }
}

/// A length in memory as a varlong: at most `isize::MAX`, so it always fits an `i64`.
fn len_varlong(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

fn nullable_len(v: Option<&[u8]>) -> usize {
    match v {
        None => varlong_len(-1),
        Some(b) => varlong_len(len_varlong(b.len())) + b.len(),
    }
}

fn put_nullable(out: &mut BytesMut, v: Option<&[u8]>) {
    match v {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, len_varlong(b.len()));
            out.put_slice(b);
        }
    }
}

/// Appends one record: each field copied once, from where it lives into `out`.
pub fn encode(out: &mut BytesMut, r: &RecordRef<'_>) {
    let mut body = 1
        + varlong_len(r.timestamp_delta)
        + varlong_len(i64::from(r.offset_delta))
        + nullable_len(r.key)
        + nullable_len(r.value)
        + varlong_len(len_varlong(r.headers.len()));
    for (k, v) in &r.headers {
        body += nullable_len(Some(k)) + nullable_len(*v);
    }
    out.reserve(body + varlong_len(len_varlong(body)));
    put_varlong(out, len_varlong(body));
    out.put_i8(r.attributes);
    put_varlong(out, r.timestamp_delta);
    put_varlong(out, i64::from(r.offset_delta));
    put_nullable(out, r.key);
    put_nullable(out, r.value);
    put_varlong(out, len_varlong(r.headers.len()));
    for (k, v) in &r.headers {
        put_nullable(out, Some(k));
        put_nullable(out, *v);
    }
}
