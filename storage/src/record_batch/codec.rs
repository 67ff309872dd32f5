//! The compression codecs of Kafka record batches (attribute bits 0-2: none, gzip, snappy,
//! lz4, zstd), with decompression bounded by a byte limit (a compression bomb stops there, not
//! at the allocator) and compression at a chosen level, as Kafka's `compression.*.level`.
//!
//! Formats, as Kafka's Java client writes them: gzip (RFC 1952), snappy in xerial's framing
//! (raw snappy is read too), the LZ4 frame format with independent blocks, zstd frames.

use std::io::{Read, Write};

use bytes::{BufMut, BytesMut};

use super::RecordBatchError;

/// The header xerial's `SnappyOutputStream` starts its stream with (as Kafka's client does).
const XERIAL_MAGIC: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// Bytes per snappy block when compressing, as xerial's default.
const SNAPPY_BLOCK_BYTES: usize = 32 * 1024;
/// LZ4's level without an explicit one (the `lz4` crate's fast mode tops out near 4).
const LZ4_DEFAULT_LEVEL: i32 = 4;

fn codec_error(codec: i16, e: impl std::fmt::Display) -> RecordBatchError {
    RecordBatchError::Codec(format!("codec {codec}: {e}"))
}

/// Decompresses the records of a batch compressed with `codec`; more than `limit` bytes out is
/// an error.
pub fn decompress(
    codec: i16,
    compressed: &[u8],
    limit: usize,
) -> Result<Vec<u8>, RecordBatchError> {
    let out = match codec {
        0 => compressed.to_vec(),
        1 => read_bounded(flate2::read::GzDecoder::new(compressed), limit)
            .map_err(|e| codec_error(1, e))?,
        2 => snappy_decompress(compressed, limit)?,
        3 => {
            let decoder = lz4::Decoder::new(compressed).map_err(|e| codec_error(3, e))?;
            read_bounded(decoder, limit).map_err(|e| codec_error(3, e))?
        }
        4 => {
            let decoder =
                zstd::stream::read::Decoder::new(compressed).map_err(|e| codec_error(4, e))?;
            read_bounded(decoder, limit).map_err(|e| codec_error(4, e))?
        }
        other => {
            return Err(RecordBatchError::Corrupt(format!(
                "unknown compression codec {other}"
            )))
        }
    };
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(out)
}

fn too_large(limit: usize) -> RecordBatchError {
    RecordBatchError::TooLarge(format!("decompressed batch above {limit} bytes"))
}

/// Reads everything up to `limit` bytes; one byte more is left unread and reported by the
/// caller's length check.
fn read_bounded(reader: impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut out)?;
    Ok(out)
}

fn snappy_decompress(compressed: &[u8], limit: usize) -> Result<Vec<u8>, RecordBatchError> {
    let raw = |block: &[u8], out: &mut Vec<u8>| -> Result<(), RecordBatchError> {
        let len = snap::raw::decompress_len(block).map_err(|e| codec_error(2, e))?;
        if out.len() + len > limit {
            return Err(too_large(limit));
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(|e| codec_error(2, e))?;
        Ok(())
    };
    let mut out = Vec::new();
    let Some(mut rest) = compressed.strip_prefix(&XERIAL_MAGIC[..]) else {
        raw(compressed, &mut out)?;
        return Ok(out);
    };
    while !rest.is_empty() {
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| codec_error(2, "truncated xerial block length"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if len > tail.len() {
            return Err(codec_error(2, "truncated xerial block"));
        }
        raw(&tail[..len], &mut out)?;
        rest = &tail[len..];
    }
    Ok(out)
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
                flate2::Compression::new(l.clamp(0, 9) as u32)
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
                out.put_u32(compressed.len() as u32);
                out.put_slice(&compressed);
            }
        }
        3 => {
            let mut encoder = lz4::EncoderBuilder::new()
                .level(level.unwrap_or(LZ4_DEFAULT_LEVEL).max(0) as u32)
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
            return Err(RecordBatchError::Corrupt(format!(
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
