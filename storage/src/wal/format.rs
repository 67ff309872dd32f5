//! The WAL object format: one object packs payload slices of many streams.
//!
//! Layout (all integers little-endian; `storage/FORMAT.md` has the byte table):
//! `header | directory | payloads | footer`. CRC32C protects the header, the directory, the
//! footer and every payload. Offsets in the Kafka sense are not stored here: they come from the
//! index. The decoder never trusts a length before checking it against the input size and the
//! limits below, so corrupt input yields a [`FormatError`], never a panic or a huge allocation.

use super::parts::ObjectParts;
use bytes::{BufMut, Bytes, BytesMut};

/// First four bytes of the header and last four bytes of the footer.
pub const MAGIC: [u8; 4] = *b"KWAL";
/// The only version this code writes and reads. See FORMAT.md for the versioning rule.
pub const FORMAT_VERSION: u16 = 1;
/// Size of the fixed header of version 1.
pub const HEADER_LEN: usize = HEADER_LEN_FIELD as usize;
/// [`HEADER_LEN`] as the header records it.
const HEADER_LEN_FIELD: u32 = 32;
/// Size of the fixed footer; a reader can fetch the last `FOOTER_LEN` bytes to find the directory.
pub const FOOTER_LEN: usize = 24;
/// Size of a directory entry without its stream id.
pub const DIRECTORY_ENTRY_FIXED_LEN: usize = 42;
/// Longest stream id accepted (Kafka topic names are at most 249 bytes).
pub const STREAM_ID_BYTES_MAX: usize = 512;
/// Most slices one object may hold.
pub const SLICE_COUNT_MAX: usize = 16_384;
/// Largest object accepted by the encoder and the decoder.
pub const OBJECT_BYTES_MAX: u64 = 1 << 30;

const DIRECTORY_CRC_LEN: usize = 4;

/// One stream's slice to pack; `payload` chunks are concatenated in order.
#[derive(Debug, Clone, Copy)]
pub struct SliceSpec<'a> {
    pub stream: &'a str,
    pub payload: &'a [Bytes],
    pub batch_count: u32,
    pub record_count: u32,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
}

/// A directory entry; `offset` is the absolute byte offset of the payload in the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceEntry {
    pub stream: String,
    pub offset: u64,
    pub len: u32,
    pub crc32c: u32,
    pub batch_count: u32,
    pub record_count: u32,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
}

/// Where the directory sits, as recorded by the footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    pub directory_offset: u64,
    pub directory_len: u32,
    pub slice_count: u32,
}

/// Which checksummed region failed verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Header,
    Directory,
    Footer,
    Slice(usize),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("truncated: need {needed_bytes} bytes, have {actual_bytes}")]
    Truncated {
        needed_bytes: u64,
        actual_bytes: u64,
    },
    #[error("object of {bytes} bytes exceeds the limit of {max_bytes}")]
    TooLarge { bytes: u64, max_bytes: u64 },
    #[error("bad magic in {0:?}")]
    BadMagic(Region),
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u16),
    #[error("unknown flags {0:#06x}")]
    UnknownFlags(u16),
    #[error("checksum mismatch in {region:?}: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        region: Region,
        stored: u32,
        computed: u32,
    },
    #[error("inconsistent {field}: expected {expected}, found {found}")]
    LengthMismatch {
        field: &'static str,
        expected: u64,
        found: u64,
    },
    #[error("object holds no slices")]
    NoSlices,
    #[error("{count} slices exceed the limit of {max}")]
    TooManySlices { count: u64, max: usize },
    #[error("stream id of {len} bytes is empty or exceeds the limit of {max}")]
    BadStreamIdLength { len: usize, max: usize },
    #[error("stream id is not utf-8")]
    StreamIdNotUtf8,
    #[error("slice {index} has an empty payload")]
    EmptySlice { index: usize },
    #[error("slice {index} has min_timestamp {min} > max_timestamp {max}")]
    BadTimestamps { index: usize, min: i64, max: i64 },
}

/// Builds the object as parts: header and directory in one buffer, each payload chunk as given
/// (shared, not copied), the footer in another.
pub fn encode_object_parts(
    slices: &[SliceSpec<'_>],
) -> Result<(ObjectParts, Vec<SliceEntry>), FormatError> {
    let layout = Layout::of(slices)?;
    let mut head = BytesMut::with_capacity(HEADER_LEN + layout.directory_len as usize);
    head.put_slice(&MAGIC);
    head.put_u16_le(FORMAT_VERSION);
    head.put_u16_le(0);
    head.put_u32_le(HEADER_LEN_FIELD);
    head.put_u32_le(layout.slice_count);
    head.put_u32_le(layout.directory_len);
    head.put_u64_le(layout.payload_len);
    head.put_u32_le(crc32c::crc32c(&head[..HEADER_LEN - 4]));
    let entries = put_directory(&mut head, slices, &layout);
    let mut parts = ObjectParts::new();
    parts.push(head.freeze());
    for slice in slices {
        for chunk in slice.payload {
            parts.push(chunk.clone());
        }
    }
    let mut footer = BytesMut::with_capacity(FOOTER_LEN);
    footer.put_u64_le(HEADER_LEN as u64);
    footer.put_u32_le(layout.directory_len);
    footer.put_u32_le(layout.slice_count);
    footer.put_u32_le(crc32c::crc32c(&footer));
    footer.put_slice(&MAGIC);
    parts.push(footer.freeze());
    debug_assert_eq!(parts.len(), layout.capacity as u64);
    Ok((parts, entries))
}

/// The whole object in one buffer (tests and tools; the writer PUTs the parts).
pub fn encode_object(slices: &[SliceSpec<'_>]) -> Result<(Bytes, Vec<SliceEntry>), FormatError> {
    let (parts, entries) = encode_object_parts(slices)?;
    Ok((parts.to_bytes(), entries))
}

/// The sizes of an object, all checked against the limits before anything is allocated.
struct Layout {
    slice_lens: Vec<u32>,
    slice_count: u32,
    directory_len: u32,
    payload_len: u64,
    capacity: usize,
}

impl Layout {
    fn of(slices: &[SliceSpec<'_>]) -> Result<Layout, FormatError> {
        let too_many = || FormatError::TooManySlices {
            count: slices.len() as u64,
            max: SLICE_COUNT_MAX,
        };
        if slices.is_empty() {
            return Err(FormatError::NoSlices);
        }
        if slices.len() > SLICE_COUNT_MAX {
            return Err(too_many());
        }
        let mut directory_len = DIRECTORY_CRC_LEN as u64;
        let mut payload_len = 0u64;
        let mut slice_lens = Vec::with_capacity(slices.len());
        for (index, slice) in slices.iter().enumerate() {
            let len = check_slice(index, slice)?;
            slice_lens.push(len);
            payload_len += u64::from(len);
            directory_len += (DIRECTORY_ENTRY_FIXED_LEN + slice.stream.len()) as u64;
        }
        let total = HEADER_LEN as u64 + directory_len + payload_len + FOOTER_LEN as u64;
        let too_large = || FormatError::TooLarge {
            bytes: total,
            max_bytes: OBJECT_BYTES_MAX,
        };
        if total > OBJECT_BYTES_MAX {
            return Err(too_large());
        }
        // All fit (directory_len <= total <= OBJECT_BYTES_MAX < u32::MAX, at most
        // SLICE_COUNT_MAX slices); a failed conversion would be the refusal of those checks.
        Ok(Layout {
            slice_lens,
            slice_count: u32::try_from(slices.len()).map_err(|_| too_many())?,
            directory_len: u32::try_from(directory_len).map_err(|_| too_large())?,
            payload_len,
            capacity: usize::try_from(total).map_err(|_| too_large())?,
        })
    }
}

/// A slice's payload length, once its stream id, timestamps and size are acceptable.
fn check_slice(index: usize, slice: &SliceSpec<'_>) -> Result<u32, FormatError> {
    check_stream_id(slice.stream.len())?;
    if slice.min_timestamp > slice.max_timestamp {
        return Err(FormatError::BadTimestamps {
            index,
            min: slice.min_timestamp,
            max: slice.max_timestamp,
        });
    }
    let len: u64 = slice.payload.iter().map(|chunk| chunk.len() as u64).sum();
    if len == 0 {
        return Err(FormatError::EmptySlice { index });
    }
    u32::try_from(len).map_err(|_| FormatError::TooLarge {
        bytes: len,
        max_bytes: OBJECT_BYTES_MAX,
    })
}

/// Writes the directory (an entry per slice with its offset and CRC) and its CRC.
fn put_directory(buf: &mut BytesMut, slices: &[SliceSpec<'_>], layout: &Layout) -> Vec<SliceEntry> {
    let mut entries = Vec::with_capacity(slices.len());
    let mut offset = HEADER_LEN as u64 + u64::from(layout.directory_len);
    for (slice, &len) in slices.iter().zip(&layout.slice_lens) {
        let crc = slice
            .payload
            .iter()
            .fold(0, |crc, chunk| crc32c::crc32c_append(crc, chunk));
        let entry = SliceEntry {
            stream: slice.stream.to_owned(),
            offset,
            len,
            crc32c: crc,
            batch_count: slice.batch_count,
            record_count: slice.record_count,
            min_timestamp: slice.min_timestamp,
            max_timestamp: slice.max_timestamp,
        };
        put_entry(buf, &entry);
        offset += u64::from(len);
        entries.push(entry);
    }
    buf.put_u32_le(crc32c::crc32c(&buf[HEADER_LEN..]));
    entries
}

/// Parses and verifies header, directory, footer and every slice CRC.
pub fn decode_object(bytes: &[u8]) -> Result<Vec<SliceEntry>, FormatError> {
    let actual = bytes.len() as u64;
    if actual > OBJECT_BYTES_MAX {
        return Err(FormatError::TooLarge {
            bytes: actual,
            max_bytes: OBJECT_BYTES_MAX,
        });
    }
    let min_len = (HEADER_LEN + DIRECTORY_CRC_LEN + FOOTER_LEN) as u64;
    if actual < min_len {
        return Err(FormatError::Truncated {
            needed_bytes: min_len,
            actual_bytes: actual,
        });
    }
    let header = parse_header(&bytes[..HEADER_LEN])?;
    let expected_total = HEADER_LEN as u64
        + u64::from(header.directory_len)
        + header.payload_len
        + FOOTER_LEN as u64;
    if expected_total != actual {
        return Err(FormatError::LengthMismatch {
            field: "object length",
            expected: expected_total,
            found: actual,
        });
    }
    let footer = parse_footer(&bytes[bytes.len() - FOOTER_LEN..])?;
    let from_header = Footer {
        directory_offset: HEADER_LEN as u64,
        directory_len: header.directory_len,
        slice_count: header.slice_count,
    };
    if footer != from_header {
        return Err(FormatError::LengthMismatch {
            field: "footer directory position",
            expected: HEADER_LEN as u64,
            found: footer.directory_offset,
        });
    }
    let dir_end = HEADER_LEN + header.directory_len as usize;
    let entries = decode_directory(&bytes[HEADER_LEN..dir_end], &footer)?;
    // Payloads must tile the payload region exactly, in directory order.
    let payload_end = actual - FOOTER_LEN as u64;
    let mut expected_offset = dir_end as u64;
    for (index, entry) in entries.iter().enumerate() {
        if entry.offset != expected_offset {
            return Err(FormatError::LengthMismatch {
                field: "slice offset",
                expected: expected_offset,
                found: entry.offset,
            });
        }
        let end = entry.offset + u64::from(entry.len);
        if end > payload_end {
            return Err(FormatError::LengthMismatch {
                field: "slice end",
                expected: payload_end,
                found: end,
            });
        }
        // Both at most `actual`, the length of `bytes`, so both fit a usize.
        let range = as_index(entry.offset)..as_index(end);
        let payload = &bytes[range];
        verify_crc(Region::Slice(index), payload, entry.crc32c)?;
        expected_offset = end;
    }
    if expected_offset != payload_end {
        return Err(FormatError::LengthMismatch {
            field: "payload length",
            expected: payload_end,
            found: expected_offset,
        });
    }
    Ok(entries)
}

/// Verifies one slice read by a ranged GET against the length and CRC recorded in the index.
pub fn verify_slice(
    bytes: &[u8],
    expected_len: u32,
    expected_crc32c: u32,
) -> Result<(), FormatError> {
    if bytes.len() as u64 != u64::from(expected_len) {
        return Err(FormatError::LengthMismatch {
            field: "slice length",
            expected: u64::from(expected_len),
            found: bytes.len() as u64,
        });
    }
    verify_crc(Region::Slice(0), bytes, expected_crc32c)
}

/// Parses the last [`FOOTER_LEN`] bytes of an object.
pub fn parse_footer(tail: &[u8]) -> Result<Footer, FormatError> {
    let tail: &[u8; FOOTER_LEN] = tail.try_into().map_err(|_| FormatError::Truncated {
        needed_bytes: FOOTER_LEN as u64,
        actual_bytes: tail.len() as u64,
    })?;
    if tail[FOOTER_LEN - 4..] != MAGIC {
        return Err(FormatError::BadMagic(Region::Footer));
    }
    verify_crc(Region::Footer, &tail[..16], le_u32(tail, 16))?;
    let footer = Footer {
        directory_offset: le_u64(tail, 0),
        directory_len: le_u32(tail, 8),
        slice_count: le_u32(tail, 12),
    };
    // Version 1 always places the directory right after its fixed-size header.
    if footer.directory_offset != HEADER_LEN as u64 {
        return Err(FormatError::LengthMismatch {
            field: "directory offset",
            expected: HEADER_LEN as u64,
            found: footer.directory_offset,
        });
    }
    check_slice_count(footer.slice_count)?;
    let min_dir = footer.slice_count as u64 * (DIRECTORY_ENTRY_FIXED_LEN as u64 + 1)
        + DIRECTORY_CRC_LEN as u64;
    if u64::from(footer.directory_len) < min_dir
        || u64::from(footer.directory_len) > OBJECT_BYTES_MAX
    {
        return Err(FormatError::LengthMismatch {
            field: "directory length",
            expected: min_dir,
            found: u64::from(footer.directory_len),
        });
    }
    Ok(footer)
}

/// Parses and verifies a directory (`directory_len` bytes starting at `directory_offset`).
pub fn decode_directory(dir: &[u8], footer: &Footer) -> Result<Vec<SliceEntry>, FormatError> {
    if dir.len() as u64 != u64::from(footer.directory_len) {
        return Err(FormatError::LengthMismatch {
            field: "directory length",
            expected: u64::from(footer.directory_len),
            found: dir.len() as u64,
        });
    }
    check_slice_count(footer.slice_count)?;
    if dir.len() < DIRECTORY_CRC_LEN {
        return Err(FormatError::Truncated {
            needed_bytes: DIRECTORY_CRC_LEN as u64,
            actual_bytes: dir.len() as u64,
        });
    }
    let (body, crc) = dir.split_at(dir.len() - DIRECTORY_CRC_LEN);
    verify_crc(Region::Directory, body, le_u32(crc, 0))?;
    // Bounded by the CRC-verified body size, not only by the stored count.
    let capacity = (footer.slice_count as usize).min(body.len() / (DIRECTORY_ENTRY_FIXED_LEN + 1));
    let mut entries = Vec::with_capacity(capacity);
    let mut rest = body;
    for _ in 0..footer.slice_count {
        let (entry, tail) = take_entry(rest, entries.len())?;
        entries.push(entry);
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(FormatError::LengthMismatch {
            field: "directory trailing bytes",
            expected: 0,
            found: rest.len() as u64,
        });
    }
    Ok(entries)
}

struct Header {
    slice_count: u32,
    directory_len: u32,
    payload_len: u64,
}

fn parse_header(h: &[u8]) -> Result<Header, FormatError> {
    debug_assert_eq!(h.len(), HEADER_LEN);
    if h[..4] != MAGIC {
        return Err(FormatError::BadMagic(Region::Header));
    }
    verify_crc(
        Region::Header,
        &h[..HEADER_LEN - 4],
        le_u32(h, HEADER_LEN - 4),
    )?;
    let version = le_u16(h, 4);
    if version != FORMAT_VERSION {
        return Err(FormatError::UnsupportedVersion(version));
    }
    let flags = le_u16(h, 6);
    if flags != 0 {
        return Err(FormatError::UnknownFlags(flags));
    }
    let header_len = le_u32(h, 8);
    if header_len as usize != HEADER_LEN {
        return Err(FormatError::LengthMismatch {
            field: "header length",
            expected: HEADER_LEN as u64,
            found: u64::from(header_len),
        });
    }
    let header = Header {
        slice_count: le_u32(h, 12),
        directory_len: le_u32(h, 16),
        payload_len: le_u64(h, 20),
    };
    check_slice_count(header.slice_count)?;
    if header.payload_len > OBJECT_BYTES_MAX {
        return Err(FormatError::TooLarge {
            bytes: header.payload_len,
            max_bytes: OBJECT_BYTES_MAX,
        });
    }
    Ok(header)
}

fn take_entry(buf: &[u8], index: usize) -> Result<(SliceEntry, &[u8]), FormatError> {
    let truncated = |needed: usize| FormatError::Truncated {
        needed_bytes: needed as u64,
        actual_bytes: buf.len() as u64,
    };
    if buf.len() < 2 {
        return Err(truncated(2));
    }
    let id_len = usize::from(le_u16(buf, 0));
    check_stream_id(id_len)?;
    let entry_len = DIRECTORY_ENTRY_FIXED_LEN + id_len;
    if buf.len() < entry_len {
        return Err(truncated(entry_len));
    }
    let stream =
        std::str::from_utf8(&buf[2..2 + id_len]).map_err(|_| FormatError::StreamIdNotUtf8)?;
    let f = &buf[2 + id_len..entry_len];
    let entry = SliceEntry {
        stream: stream.to_owned(),
        offset: le_u64(f, 0),
        len: le_u32(f, 8),
        crc32c: le_u32(f, 12),
        batch_count: le_u32(f, 16),
        record_count: le_u32(f, 20),
        min_timestamp: le_i64(f, 24),
        max_timestamp: le_i64(f, 32),
    };
    if entry.len == 0 {
        return Err(FormatError::EmptySlice { index });
    }
    if entry.min_timestamp > entry.max_timestamp {
        return Err(FormatError::BadTimestamps {
            index,
            min: entry.min_timestamp,
            max: entry.max_timestamp,
        });
    }
    Ok((entry, &buf[entry_len..]))
}

fn put_entry(buf: &mut BytesMut, entry: &SliceEntry) {
    // The caller checked the stream id length against STREAM_ID_BYTES_MAX (< u16::MAX).
    buf.put_u16_le(u16::try_from(entry.stream.len()).unwrap_or(u16::MAX));
    buf.put_slice(entry.stream.as_bytes());
    buf.put_u64_le(entry.offset);
    buf.put_u32_le(entry.len);
    buf.put_u32_le(entry.crc32c);
    buf.put_u32_le(entry.batch_count);
    buf.put_u32_le(entry.record_count);
    buf.put_i64_le(entry.min_timestamp);
    buf.put_i64_le(entry.max_timestamp);
}

fn check_stream_id(len: usize) -> Result<(), FormatError> {
    if len == 0 || len > STREAM_ID_BYTES_MAX {
        return Err(FormatError::BadStreamIdLength {
            len,
            max: STREAM_ID_BYTES_MAX,
        });
    }
    Ok(())
}

fn check_slice_count(count: u32) -> Result<(), FormatError> {
    if count == 0 {
        return Err(FormatError::NoSlices);
    }
    if count as usize > SLICE_COUNT_MAX {
        return Err(FormatError::TooManySlices {
            count: u64::from(count),
            max: SLICE_COUNT_MAX,
        });
    }
    Ok(())
}

fn verify_crc(region: Region, bytes: &[u8], stored: u32) -> Result<(), FormatError> {
    let computed = crc32c::crc32c(bytes);
    if computed != stored {
        return Err(FormatError::ChecksumMismatch {
            region,
            stored,
            computed,
        });
    }
    Ok(())
}

// Callers pass slices whose length they checked; indexing past the end is a bug, not bad input.
fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn le_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_le_bytes(a)
}

/// A position within an object in memory as an index: objects are at most OBJECT_BYTES_MAX
/// bytes, so it always fits.
fn as_index(position: u64) -> usize {
    usize::try_from(position).unwrap_or(usize::MAX)
}
