//! Kafka's varints: zigzag, 7 bits a byte, low bits first (`varint` at most 5 bytes, `varlong`
//! at most 10), on the `integer-encoding` crate. Its zigzag is width-independent, so a Kafka
//! varint decodes as an i64 and is then range-checked.

use bytes::{BufMut, BytesMut};
use integer_encoding::VarInt;

use crate::RecordBatchError;

/// Bytes of the longest varlong.
pub const VARLONG_BYTES_MAX: usize = 10;
const VARINT_BYTES_MAX: usize = 5;

fn invalid(what: &str) -> RecordBatchError {
    RecordBatchError::Invalid(what.to_string())
}

/// Decodes a varlong at the start of `buf`: the value and the bytes it took.
pub fn decode_varlong(buf: &[u8]) -> Result<(i64, usize), RecordBatchError> {
    match i64::decode_var(buf) {
        Some(found) => Ok(found),
        None if buf.len() < VARLONG_BYTES_MAX && buf.iter().all(|b| b & 0x80 != 0) => {
            Err(invalid("truncated varint"))
        }
        None => Err(invalid("varint longer than 10 bytes")),
    }
}

/// A varlong as a Kafka varint: at most 5 bytes and within i32.
pub fn narrow_varint((value, len): (i64, usize)) -> Result<i32, RecordBatchError> {
    if len > VARINT_BYTES_MAX {
        return Err(invalid("varint longer than 5 bytes"));
    }
    i32::try_from(value).map_err(|_| invalid("varint out of i32 range"))
}

/// Reads a varlong from the front of `buf` and advances it.
pub fn read_varlong(buf: &mut &[u8]) -> Result<i64, RecordBatchError> {
    let (value, len) = decode_varlong(buf)?;
    *buf = &buf[len..];
    Ok(value)
}

/// Reads a varint from the front of `buf` and advances it.
pub fn read_varint(buf: &mut &[u8]) -> Result<i32, RecordBatchError> {
    let found = decode_varlong(buf)?;
    *buf = &buf[found.1..];
    narrow_varint(found)
}

/// Bytes `put_varlong` writes for `v`.
pub fn varlong_len(v: i64) -> usize {
    v.required_space()
}

pub fn put_varlong(out: &mut BytesMut, v: i64) {
    let mut buf = [0u8; VARLONG_BYTES_MAX];
    let len = v.encode_var(&mut buf);
    out.put_slice(&buf[..len]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_in_as_many_bytes_as_announced() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            -65,
            8191,
            8192,
            i64::MAX,
            i64::MIN,
            1 << 40,
        ] {
            let mut out = BytesMut::new();
            put_varlong(&mut out, v);
            assert_eq!(varlong_len(v), out.len(), "value {v}");
            assert_eq!(decode_varlong(&out).unwrap(), (v, out.len()));
        }
    }

    #[test]
    fn kafka_varints_are_bounded_to_five_bytes_and_i32() {
        let mut out = BytesMut::new();
        put_varlong(&mut out, i64::from(i32::MIN));
        assert_eq!(read_varint(&mut &out[..]).unwrap(), i32::MIN);
        out.clear();
        put_varlong(&mut out, i64::from(i32::MAX) + 1);
        assert!(read_varint(&mut &out[..]).is_err());
        // Zero written in six bytes: a valid varlong, too long for a varint.
        assert!(read_varint(&mut &[0x80, 0x80, 0x80, 0x80, 0x80, 0x00][..]).is_err());
        assert!(read_varlong(&mut &[0x80, 0x80][..]).is_err());
        assert!(read_varlong(&mut &[0xff; 11][..]).is_err());
        assert!(read_varlong(&mut &[][..]).is_err());
    }
}
