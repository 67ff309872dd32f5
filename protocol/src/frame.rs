//! Kafka framing: every request and response is a big-endian `i32` length followed by that many
//! bytes. The length is checked against a limit before anything is allocated, so a peer cannot
//! make us reserve memory by announcing a huge frame. A server reads a frame in three steps
//! ([`wait_for_frame`], [`read_frame_len`], [`read_frame_body`]) so that it can time the idle
//! wait and the frame itself apart, and take its memory permits before the body is allocated.

use bytes::{Bytes, BytesMut};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt,
};

/// Kafka's default `socket.request.max.bytes` (100 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 100 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The announced length is negative or above the limit; the connection must be closed
    /// because the stream cannot be resynchronised.
    #[error("frame of {size_bytes} bytes exceeds the limit of {max_bytes} bytes")]
    TooLarge { size_bytes: i64, max_bytes: usize },
    /// The peer closed the connection in the middle of a frame.
    #[error("connection closed inside a frame")]
    Truncated,
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// Waits until the first byte of the next frame has arrived, without consuming it; false when
/// the peer closed the connection cleanly between frames.
pub async fn wait_for_frame<R>(reader: &mut R) -> Result<bool, FrameError>
where
    R: AsyncBufRead + Unpin,
{
    Ok(!reader.fill_buf().await?.is_empty())
}

/// Reads a frame's length prefix and checks it against `max_frame_bytes`. `Ok(None)` means the
/// peer closed the connection cleanly before it.
pub async fn read_frame_len<R>(
    reader: &mut R,
    max_frame_bytes: usize,
) -> Result<Option<usize>, FrameError>
where
    R: AsyncRead + Unpin,
{
    let mut len_buf = [0u8; 4];
    let mut filled = 0;
    while filled < len_buf.len() {
        let n = reader.read(&mut len_buf[filled..]).await?;
        if n == 0 {
            return if filled == 0 {
                Ok(None)
            } else {
                Err(FrameError::Truncated)
            };
        }
        filled += n;
    }
    let size = i32::from_be_bytes(len_buf);
    let too_large = || FrameError::TooLarge {
        size_bytes: i64::from(size),
        max_bytes: max_frame_bytes,
    };
    let size_bytes = usize::try_from(size).map_err(|_| too_large())?;
    if size_bytes > max_frame_bytes {
        return Err(too_large());
    }
    Ok(Some(size_bytes))
}

/// Reads a frame body of `size_bytes` (checked by [`read_frame_len`]).
pub async fn read_frame_body<R>(reader: &mut R, size_bytes: usize) -> Result<Bytes, FrameError>
where
    R: AsyncRead + Unpin,
{
    // Read into spare capacity: zeroing a buffer that the socket overwrites at once cost a
    // memset and a page fault per page of every produce request.
    let mut body = BytesMut::with_capacity(size_bytes);
    let mut limited = (&mut *reader).take(size_bytes as u64);
    while body.len() < size_bytes {
        if limited.read_buf(&mut body).await? == 0 {
            return Err(FrameError::Truncated);
        }
    }
    Ok(body.freeze())
}

/// Reads one frame. `Ok(None)` means the peer closed the connection cleanly between frames.
pub async fn read_frame<R>(
    reader: &mut R,
    max_frame_bytes: usize,
) -> Result<Option<Bytes>, FrameError>
where
    R: AsyncRead + Unpin,
{
    match read_frame_len(reader, max_frame_bytes).await? {
        Some(size_bytes) => Ok(Some(read_frame_body(reader, size_bytes).await?)),
        None => Ok(None),
    }
}

/// Writes `frame`, which must already start with its 4-byte length prefix (see
/// [`crate::codec::encode_response`]).
pub async fn write_frame<W>(writer: &mut W, frame: &[u8]) -> Result<(), FrameError>
where
    W: AsyncWrite + Unpin,
{
    debug_assert!(frame.len() >= 4, "a frame carries its length prefix");
    writer.write_all(frame).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_consecutive_frames_then_clean_end() {
        let mut input: &[u8] = &[0, 0, 0, 2, 7, 8, 0, 0, 0, 0];
        assert_eq!(
            read_frame(&mut input, 16).await.unwrap().unwrap().as_ref(),
            &[7, 8]
        );
        assert_eq!(read_frame(&mut input, 16).await.unwrap().unwrap().len(), 0);
        assert!(read_frame(&mut input, 16).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversized_frame_is_rejected_before_reading_it() {
        let mut input: &[u8] = &[0, 0, 1, 0];
        let err = read_frame(&mut input, 255).await.unwrap_err();
        assert!(matches!(
            err,
            FrameError::TooLarge {
                size_bytes: 256,
                max_bytes: 255
            }
        ));
    }

    #[tokio::test]
    async fn negative_length_is_rejected() {
        let mut input: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut input, 255).await,
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[tokio::test]
    async fn a_frame_read_in_steps_waits_then_checks_the_length_then_reads_the_body() {
        let mut input = tokio::io::BufReader::new(&[0u8, 0, 0, 2, 7, 8][..]);
        assert!(wait_for_frame(&mut input).await.unwrap());
        assert!(
            wait_for_frame(&mut input).await.unwrap(),
            "nothing consumed"
        );
        let len = read_frame_len(&mut input, 16).await.unwrap().unwrap();
        assert_eq!(
            read_frame_body(&mut input, len).await.unwrap().as_ref(),
            &[7, 8]
        );
        assert!(!wait_for_frame(&mut input).await.unwrap());
        let mut huge = tokio::io::BufReader::new(&[0u8, 0, 1, 0][..]);
        assert!(read_frame_len(&mut huge, 255).await.is_err());
    }

    #[tokio::test]
    async fn truncated_length_or_body_is_an_error() {
        let mut input: &[u8] = &[0, 0];
        assert!(matches!(
            read_frame(&mut input, 16).await,
            Err(FrameError::Truncated)
        ));
        let mut input: &[u8] = &[0, 0, 0, 3, 1];
        assert!(matches!(
            read_frame(&mut input, 16).await,
            Err(FrameError::Truncated)
        ));
    }
}
