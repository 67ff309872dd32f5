//! The writing half of a connection: responses in request order, each sent as soon as it is
//! ready. Replies are queued as the handles of their (possibly still running) handlers; the
//! writer flushes whatever it has written before it waits for a handler that has not finished,
//! so a response never sits in the buffer behind a slower request pipelined after it.

use std::net::SocketAddr;

use bytes::Bytes;
use protocol::frame;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc::{self, error::TryRecvError};
use tokio::task::JoinHandle;

/// What the writer does for one request, in order.
pub enum Reply {
    Frame(Bytes),
    /// No response for this request (Produce with acks=0).
    Nothing,
    /// Stop: the connection is closed after the responses before it.
    Close,
}

/// Writes the replies of `replies` in order until the queue ends or a reply closes it.
pub async fn write_replies<W: AsyncWrite + Unpin>(
    writer: W,
    mut replies: mpsc::Receiver<JoinHandle<Reply>>,
    peer: SocketAddr,
) {
    let mut writer = BufWriter::new(writer);
    while let Some(handle) = next_handle(&mut writer, &mut replies, peer).await {
        // Pipelined responses that are all ready share a syscall; one that is not yet ready
        // must not hold back those written before it.
        if !handle.is_finished() && !flushed(&mut writer, peer).await {
            return;
        }
        let reply = match handle.await {
            Ok(reply) => reply,
            Err(error) => {
                // A handler panicked: its state is gone, the connection cannot answer in order.
                tracing::error!(%peer, %error, "request handler failed");
                Reply::Close
            }
        };
        let frame = match reply {
            Reply::Frame(frame) => frame,
            Reply::Nothing => continue,
            Reply::Close => break,
        };
        if let Err(error) = frame::write_frame(&mut writer, &frame).await {
            tracing::debug!(%peer, %error, "connection write failed");
            return;
        }
    }
    let _ = writer.flush().await;
    let _ = writer.shutdown().await;
}

/// The next queued handle, flushing what was written before waiting on an empty queue; `None`
/// once the queue has ended or a flush failed.
async fn next_handle<W: AsyncWrite + Unpin>(
    writer: &mut BufWriter<W>,
    replies: &mut mpsc::Receiver<JoinHandle<Reply>>,
    peer: SocketAddr,
) -> Option<JoinHandle<Reply>> {
    match replies.try_recv() {
        Ok(handle) => Some(handle),
        Err(TryRecvError::Disconnected) => None,
        Err(TryRecvError::Empty) => {
            if !flushed(writer, peer).await {
                return None;
            }
            replies.recv().await
        }
    }
}

async fn flushed<W: AsyncWrite + Unpin>(writer: &mut BufWriter<W>, peer: SocketAddr) -> bool {
    if writer.buffer().is_empty() {
        return true;
    }
    match writer.flush().await {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%peer, %error, "connection flush failed");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::sync::oneshot;
    use tokio::time::{timeout, Duration};

    fn frame(body: &[u8]) -> Bytes {
        let mut framed = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        framed.extend_from_slice(body);
        Bytes::from(framed)
    }

    #[tokio::test]
    async fn a_ready_response_is_sent_while_the_request_behind_it_is_still_running() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (queue, replies) = mpsc::channel(8);
        let peer = SocketAddr::from(([127, 0, 0, 1], 1));
        let writer = tokio::spawn(write_replies(server, replies, peer));
        let (finish_second, second_done) = oneshot::channel::<()>();
        queue
            .send(tokio::spawn(async { Reply::Frame(frame(b"first")) }))
            .await
            .unwrap();
        queue
            .send(tokio::spawn(async move {
                let _ = second_done.await;
                Reply::Frame(frame(b"second"))
            }))
            .await
            .unwrap();

        let mut client = client;
        let mut first = [0u8; 9];
        timeout(Duration::from_secs(10), client.read_exact(&mut first))
            .await
            .expect("the first response arrives before the second request completes")
            .unwrap();
        assert_eq!(&first[4..], b"first");

        finish_second.send(()).unwrap();
        let mut second = [0u8; 10];
        client.read_exact(&mut second).await.unwrap();
        assert_eq!(&second[4..], b"second");
        drop(queue);
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn responses_that_are_all_ready_arrive_in_request_order() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let (queue, replies) = mpsc::channel(8);
        let peer = SocketAddr::from(([127, 0, 0, 1], 1));
        for body in [&b"a"[..], b"bb", b"ccc"] {
            let framed = frame(body);
            queue
                .send(tokio::spawn(async move { Reply::Frame(framed) }))
                .await
                .unwrap();
        }
        queue
            .send(tokio::spawn(async { Reply::Nothing }))
            .await
            .unwrap();
        queue
            .send(tokio::spawn(async { Reply::Close }))
            .await
            .unwrap();
        write_replies(server, replies, peer).await;
        let mut all = Vec::new();
        client.read_to_end(&mut all).await.unwrap();
        assert_eq!(
            all,
            [&frame(b"a")[..], &frame(b"bb"), &frame(b"ccc")].concat()
        );
    }
}
