//! The compression codecs of Kafka record batches (attribute bits 0-2: none, gzip, snappy,
//! lz4, zstd), with decompression bounded by a byte limit (a compression bomb stops there, not
//! at the allocator) and compression at a chosen level, as Kafka's `compression.*.level`.
//!
//! Formats, as Kafka's Java client writes them: gzip (RFC 1952), snappy in xerial's framing
//! (raw snappy is read too), the LZ4 frame format with independent blocks, zstd frames.

use std::io::{Read, Write};

use bytes::{BufMut, BytesMut};

use crate::input::{stream_error, Limited};
use crate::RecordBatchError;

/// The header xerial's `SnappyOutputStream` starts its stream with (as Kafka's client does).
const XERIAL_MAGIC: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// Bytes per snappy block when compressing, as xerial's default.
const SNAPPY_BLOCK_BYTES: usize = 32 * 1024;
/// LZ4's level without an explicit one (the `lz4` crate's fast mode tops out near 4).
const LZ4_DEFAULT_LEVEL: i32 = 4;

fn codec_error(codec: i16, e: impl std::fmt::Display) -> RecordBatchError {
    RecordBatchError::Codec(format!("codec {codec}: {e}"))
}

/// A streaming decompressor of the records of a batch compressed with `codec`; it fails once
/// it has produced more than `limit` bytes, so a compression bomb costs at most `limit` bytes
/// of work and one buffer of memory, never `limit` bytes of memory.
pub fn reader<'a>(
    codec: i16,
    compressed: &'a [u8],
    limit: usize,
) -> Result<Box<dyn Read + 'a>, RecordBatchError> {
    let inner: Box<dyn Read + 'a> = match codec {
        0 => Box::new(compressed),
        1 => Box::new(flate2::read::GzDecoder::new(compressed)),
        2 => Box::new(SnappyReader::new(compressed, limit)),
        3 => Box::new(lz4::Decoder::new(compressed).map_err(|e| corrupt_stream(3, e))?),
        4 => Box::new(
            zstd::stream::read::Decoder::with_buffer(compressed)
                .map_err(|e| corrupt_stream(4, e))?,
        ),
        other => {
            return Err(RecordBatchError::Invalid(format!(
                "unknown compression codec {other}"
            )))
        }
    };
    Ok(Box::new(Limited::new(inner, limit)))
}

fn corrupt_stream(codec: i16, e: impl std::fmt::Display) -> RecordBatchError {
    RecordBatchError::Invalid(format!("codec {codec}: records do not decompress: {e}"))
}

/// Decompresses the whole records section of a batch compressed with `codec` (for re-encoding);
/// more than `limit` bytes out is an error, found before more than `limit` bytes are held.
pub fn decompress(
    codec: i16,
    compressed: &[u8],
    limit: usize,
) -> Result<Vec<u8>, RecordBatchError> {
    let mut out = Vec::new();
    reader(codec, compressed, limit)?
        .read_to_end(&mut out)
        .map_err(stream_error)?;
    Ok(out)
}

/// Snappy as Kafka's clients write it: xerial's framing (a magic header, then blocks with a
/// big-endian length each) or one raw block. One block is decompressed at a time.
struct SnappyReader<'a> {
    /// Blocks not decompressed yet; `None` once a raw (unframed) payload is consumed.
    rest: Option<&'a [u8]>,
    framed: bool,
    block: Vec<u8>,
    pos: usize,
    limit: usize,
}

/// Snappy's densest element (a 3-byte copy of 64 bytes) bounds what a block can expand to; a
/// larger declared length is a lie, refused before its buffer is allocated.
const SNAPPY_EXPANSION_MAX: usize = 22;

impl<'a> SnappyReader<'a> {
    fn new(compressed: &'a [u8], limit: usize) -> Self {
        let (rest, framed) = match compressed.strip_prefix(&XERIAL_MAGIC[..]) {
            Some(rest) => (rest, true),
            None => (compressed, false),
        };
        SnappyReader {
            rest: Some(rest),
            framed,
            block: Vec::new(),
            pos: 0,
            limit,
        }
    }

    /// Decompresses the next block into `self.block`; false at the end.
    fn next_block(&mut self) -> Result<bool, RecordBatchError> {
        let Some(rest) = self.rest.filter(|r| !r.is_empty()) else {
            return Ok(false);
        };
        let (block, tail) = if self.framed {
            let (len, tail) = rest
                .split_first_chunk::<4>()
                .ok_or_else(|| corrupt_stream(2, "truncated xerial block length"))?;
            let len = u32::from_be_bytes(*len) as usize;
            if len > tail.len() {
                return Err(corrupt_stream(2, "truncated xerial block"));
            }
            tail.split_at(len)
        } else {
            (rest, &rest[rest.len()..])
        };
        self.rest = Some(tail);
        let len = snap::raw::decompress_len(block).map_err(|e| corrupt_stream(2, e))?;
        if len > self.limit {
            return Err(too_large(self.limit));
        }
        if len > block.len().saturating_mul(SNAPPY_EXPANSION_MAX) + 64 {
            return Err(corrupt_stream(2, "block declares more than it can hold"));
        }
        self.block.resize(len, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut self.block)
            .map_err(|e| corrupt_stream(2, e))?;
        self.pos = 0;
        Ok(true)
    }
}

impl Read for SnappyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.block.len() {
            if !self.next_block().map_err(std::io::Error::other)? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.block.len() - self.pos);
        buf[..n].copy_from_slice(&self.block[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn too_large(limit: usize) -> RecordBatchError {
    RecordBatchError::TooLarge(format!("decompressed records above {limit} bytes"))
}

/// Compresses `plain` with `codec` into `out`. `level` is Kafka's `compression.*.level`
/// (`None` or -1: the codec's default; snappy has none). The defaults are the levels batches
/// rebuilt from compacted files have always used: gzip 6, lz4 4 (fast), zstd 3.
pub fn compress(
    codec: i16,
    level: Option<i32>,
    plain: &[u8],
    out: &mut BytesMut,
) -> Result<(), RecordBatchError> {
    let level = level.filter(|l| *l != -1);
    match codec {
        0 => out.put_slice(plain),
        1 => {
            let level = level.map_or(flate2::Compression::default(), |l| {
                // Negative levels are 0 and levels above 9 are 9, as a clamp to 0..=9.
                flate2::Compression::new(u32::try_from(l).map_or(0, |l| l.min(9)))
            });
            let mut encoder = flate2::write::GzEncoder::new(out.writer(), level);
            encoder.write_all(plain).map_err(|e| codec_error(1, e))?;
            encoder.finish().map_err(|e| codec_error(1, e))?;
        }
        2 => {
            out.put_slice(XERIAL_MAGIC);
            let mut encoder = snap::raw::Encoder::new();
            for block in plain.chunks(SNAPPY_BLOCK_BYTES) {
                let compressed = encoder.compress_vec(block).map_err(|e| codec_error(2, e))?;
                let len = u32::try_from(compressed.len()).map_err(|e| codec_error(2, e))?;
                out.put_u32(len);
                out.put_slice(&compressed);
            }
        }
        3 => {
            let mut encoder = lz4::EncoderBuilder::new()
                .level(u32::try_from(level.unwrap_or(LZ4_DEFAULT_LEVEL)).unwrap_or(0))
                .block_mode(lz4::BlockMode::Independent)
                .build(out.writer())
                .map_err(|e| codec_error(3, e))?;
            encoder.write_all(plain).map_err(|e| codec_error(3, e))?;
            let (_, finished) = encoder.finish();
            finished.map_err(|e| codec_error(3, e))?;
        }
        4 => {
            let compressed =
                zstd::bulk::compress(plain, level.unwrap_or(3)).map_err(|e| codec_error(4, e))?;
            out.put_slice(&compressed);
        }
        other => {
            return Err(RecordBatchError::Invalid(format!(
                "unknown compression codec {other}"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_at_its_levels() {
        let plain: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for (codec, levels) in [
            (0, vec![None]),
            (1, vec![None, Some(-1), Some(1), Some(9)]),
            (2, vec![None]),
            (3, vec![None, Some(1), Some(17)]),
            (4, vec![None, Some(-5), Some(22)]),
        ] {
            for level in levels {
                let mut out = BytesMut::new();
                compress(codec, level, &plain, &mut out).unwrap();
                assert_eq!(
                    decompress(codec, &out, plain.len()).unwrap(),
                    plain,
                    "{codec} {level:?}"
                );
            }
        }
    }

    #[test]
    fn decompression_stops_at_the_limit() {
        let zeros = vec![0u8; 1 << 20];
        for codec in 1..=4 {
            let mut out = BytesMut::new();
            compress(codec, None, &zeros, &mut out).unwrap();
            assert!(
                out.len() < zeros.len() / 10,
                "codec {codec} compresses zeros"
            );
            let err = decompress(codec, &out, 1000).unwrap_err();
            assert!(
                matches!(err, RecordBatchError::TooLarge(_)),
                "{codec}: {err}"
            );
        }
    }

    #[test]
    fn the_clients_own_formats_decode() {
        use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy, Zstd};
        let plain = b"kafka-protocol's codecs write what Kafka's Java client writes".repeat(50);
        let encode = |codec: i16| {
            let mut out = BytesMut::new();
            let put = |b: &mut BytesMut| -> anyhow::Result<()> {
                b.put_slice(&plain);
                Ok(())
            };
            match codec {
                1 => Gzip::compress(&mut out, put),
                2 => Snappy::compress(&mut out, put),
                3 => Lz4::compress(&mut out, put),
                _ => Zstd::compress(&mut out, put),
            }
            .unwrap();
            out
        };
        for codec in 1..=4 {
            assert_eq!(decompress(codec, &encode(codec), 1 << 20).unwrap(), plain);
        }
        let raw = snap::raw::Encoder::new().compress_vec(&plain).unwrap();
        assert_eq!(decompress(2, &raw, 1 << 20).unwrap(), plain);
    }
}
