//! One client connection. Kafka applies the requests of a connection strictly one after the
//! other, and so do we, with one exception nobody can observe: consecutive Produce requests
//! overlap their object writes and index commits, because their appends are submitted to
//! storage in request order (see `sequencer`) before any of them waits for durability. Every
//! other request waits until all earlier ones have taken effect, and holds back every later
//! one until it has (see `docs/request-order.md`). Responses leave in request order.
//!
//! Limits: at most `max_inflight_requests` requests and `max_frame_bytes` request bytes are in
//! flight per connection; past either, reading pauses until earlier requests complete.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use protocol::codec::{self, RequestError};
use protocol::frame::{self, FrameError};
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock, Semaphore};
use tokio::task::JoinHandle;

use crate::context::Broker;
use crate::handlers;
use crate::sequencer::Sequencer;

/// A request's place in the connection's order, held until its handler has returned.
/// Produce requests share the order with each other; every other request has it alone.
enum Turn {
    Shared { _guard: OwnedRwLockReadGuard<()> },
    Exclusive { _guard: OwnedRwLockWriteGuard<()> },
}

/// Waits, in request order, until `api_key` may start: a Produce once no earlier non-Produce
/// request is running, any other request once every earlier request has finished.
async fn take_turn(order: &Arc<RwLock<()>>, api_key: ApiKey) -> Turn {
    if api_key == ApiKey::Produce {
        Turn::Shared {
            _guard: order.clone().read_owned().await,
        }
    } else {
        Turn::Exclusive {
            _guard: order.clone().write_owned().await,
        }
    }
}

/// What the writer does for one request, in order.
enum Reply {
    Frame(Bytes),
    /// No response for this request (Produce with acks=0).
    Nothing,
    /// Stop: the connection is closed after the responses before it.
    Close,
}

pub async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let max_frame_bytes = broker.config.max_frame_bytes;
    let max_inflight = broker.config.max_inflight_requests;
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set nodelay");
    }
    let (mut reader, writer) = stream.into_split();
    let (queue, replies) = mpsc::channel::<JoinHandle<Reply>>(max_inflight);
    let writer_task = tokio::spawn(write_replies(writer, replies, peer));
    // Request bytes in flight; max_frame_bytes <= i32::MAX is checked by the config.
    let inflight_bytes = Arc::new(Semaphore::new(max_frame_bytes));
    let produce_order = Sequencer::default();
    // Taken by the reader alone, one request at a time, so turns are granted in request order.
    let order = Arc::new(RwLock::new(()));

    loop {
        let frame = tokio::select! {
            frame = frame::read_frame(&mut reader, max_frame_bytes) => frame,
            _ = shutdown.changed() => break,
            _ = queue.closed() => break,
        };
        let frame = match frame {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(FrameError::TooLarge {
                size_bytes,
                max_bytes,
            }) => {
                tracing::warn!(%peer, size_bytes, max_bytes, "closing connection: frame too large");
                break;
            }
            Err(error) => {
                tracing::debug!(%peer, %error, "connection read ended");
                break;
            }
        };
        let permits = u32::try_from(frame.len().max(1)).unwrap_or(u32::MAX);
        let Ok(permit) = inflight_bytes.clone().acquire_many_owned(permits).await else {
            break;
        };
        let reply = match codec::decode_request(frame) {
            Ok(request) => {
                let turn = tokio::select! {
                    turn = take_turn(&order, request.api_key) => turn,
                    _ = shutdown.changed() => break,
                };
                let broker = broker.clone();
                // Taken here, in request order, before the request runs on its own task.
                let ticket = (request.api_key == ApiKey::Produce).then(|| produce_order.ticket());
                tokio::spawn(async move {
                    let _permit = permit;
                    let reply = respond(&broker, request, ticket, peer).await;
                    drop(turn);
                    reply
                })
            }
            Err(RequestError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                version,
                correlation_id,
            }) => {
                tracing::debug!(%peer, version, "answering unsupported api versions request");
                let reply = match codec::encode_unsupported_api_versions(correlation_id) {
                    Ok(bytes) => Reply::Frame(bytes),
                    Err(error) => {
                        tracing::error!(%peer, %error, "cannot encode api versions error");
                        Reply::Close
                    }
                };
                tokio::spawn(async move { reply })
            }
            Err(error) => {
                // Kafka closes the connection on unknown APIs, unsupported versions and
                // malformed requests; the client sees a disconnect and reconnects.
                tracing::info!(%peer, %error, "closing connection: bad request");
                let _ = queue.send(tokio::spawn(async { Reply::Close })).await;
                break;
            }
        };
        if queue.send(reply).await.is_err() {
            break;
        }
    }
    // Dropping the queue lets the writer finish the responses already owed, then stop.
    drop(queue);
    if let Err(error) = writer_task.await {
        tracing::error!(%peer, %error, "connection writer failed");
    }
}

async fn respond(
    broker: &Arc<Broker>,
    request: codec::Request,
    ticket: Option<crate::sequencer::Ticket>,
    peer: SocketAddr,
) -> Reply {
    let api_key = request.api_key;
    let version = request.version();
    let correlation_id = request.correlation_id();
    match handlers::handle(broker, request, ticket, peer).await {
        Ok(Some(body)) => match codec::encode_response(api_key, version, correlation_id, &body) {
            Ok(bytes) => Reply::Frame(bytes),
            Err(error) => {
                tracing::error!(%peer, ?api_key, version, %error, "cannot encode response");
                Reply::Close
            }
        },
        Ok(None) => Reply::Nothing,
        Err(error) => {
            tracing::warn!(%peer, ?api_key, version, %error, "closing connection: request not served");
            Reply::Close
        }
    }
}

async fn write_replies(
    writer: tokio::net::tcp::OwnedWriteHalf,
    mut replies: mpsc::Receiver<JoinHandle<Reply>>,
    peer: SocketAddr,
) {
    let mut writer = BufWriter::new(writer);
    while let Some(handle) = replies.recv().await {
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
        // Flush once the queue is momentarily empty, so pipelined responses share a syscall.
        if replies.is_empty() {
            if let Err(error) = writer.flush().await {
                tracing::debug!(%peer, %error, "connection flush failed");
                return;
            }
        }
    }
    let _ = writer.flush().await;
    let _ = writer.shutdown().await;
}
