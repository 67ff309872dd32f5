//! One client connection, plain TCP or TLS (the stream is a `listener::stream::Transport`,
//! split into a reading and a writing half), whose security the listener settled in its
//! `Session` before the first request is read here.
//!
//! Kafka applies the requests of a connection strictly one after the other, and so do we,
//! with one exception nobody can observe: consecutive Produce requests
//! overlap their object writes and index commits, because their appends are submitted to
//! storage in request order (see `sequencer`) before any of them waits for durability. Every
//! other request waits until all earlier ones have taken effect, and holds back every later
//! one until it has (see `docs/request-order.md`). Responses leave in request order.
//!
//! Limits: at most `max_inflight_requests` requests and `max_frame_bytes` request bytes are in
//! flight per connection, and `queued_max_request_bytes` across all of them
//! (`queued_max_unauthenticated_request_bytes` for connections still authenticating); past any,
//! reading pauses until earlier requests complete. Bytes are taken as they arrive, not as a
//! frame declares them, and a frame that stalls while a budget is spent gives way
//! (`budget`). A connection idle for `connections_max_idle_ms` is closed, and so is one whose
//! frame does not arrive within `frame_read_timeout_ms`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use bytes::BytesMut;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::RequestKind;
use protocol::codec::{self, RequestError};
use protocol::frame::{read_frame_len, wait_for_frame, FrameError};
use tokio::io::{AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::{
    mpsc, watch, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, OwnedSemaphorePermit, RwLock,
    Semaphore,
};
use tokio::task::JoinHandle;
use tokio::time::{timeout, Duration};

use crate::config::Config;
use crate::context::Broker;
use crate::handlers;
use crate::listener::stream::Transport;
use crate::produce_hint::{InFlight, ProduceShape};
use crate::security::sasl::MAX_RECEIVE_BYTES;
use crate::security::{Principal, Session};
use crate::sequencer::Sequencer;
use crate::slots::Slot;

pub mod budget;
mod replies;
mod sasl;

use budget::{Budgets, Evicted, FrameTicket, HeldBytes};

use replies::{write_replies, Reply};

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

/// Request bytes being read or served, across every connection.
pub type RequestBytes = Arc<Budgets>;

/// Serves the requests of one connection, plain TCP or TLS (after its handshake), whose
/// security is `session`. On a SASL listener the client must authenticate first: until it has,
/// frames are bounded by `sasl::MAX_RECEIVE_BYTES`, only ApiVersions, SaslHandshake and
/// SaslAuthenticate are answered (anything else closes the connection unanswered, as Kafka),
/// and the slot stays evictable.
pub async fn serve<S: Transport>(
    stream: S,
    session: Session,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
    mut slot: Slot,
    request_bytes: RequestBytes,
) {
    let peer = session.peer;
    let (reader, writer) = stream.into_halves();
    let (queue, replies) = mpsc::channel::<JoinHandle<Reply>>(broker.config.max_inflight_requests);
    let writer_task = tokio::spawn(write_replies(writer, replies, peer));
    let mut frames = FrameReader::new(reader, &broker.config, request_bytes);
    let mut sasl_server = session
        .protocol
        .uses_sasl()
        .then(|| broker.sasl.server(peer));
    if sasl_server.is_some() {
        frames.limit_bytes = frames.max_frame_bytes.min(MAX_RECEIVE_BYTES);
        frames.authenticating = true;
    }
    let mut requests = Requests {
        broker,
        // Replaced when SASL authentication names the client.
        session: Arc::new(session),
        order: Arc::new(RwLock::new(())),
        produce_order: Sequencer::default(),
        produce_shape: Mutex::default(),
    };

    loop {
        let next = tokio::select! {
            next = frames.next(peer) => next,
            _ = slot.evicted() => {
                tracing::debug!(%peer, "closing connection: slot given to a newer one");
                break;
            }
            _ = shutdown.changed() => break,
            _ = queue.closed() => break,
        };
        let Some((frame, permits)) = next else { break };
        let outcome = match sasl_server.as_mut() {
            None => {
                slot.prove();
                frames.proven = true;
                let decoded = codec::decode_request(frame);
                requests.dispatch(decoded, permits, &mut shutdown).await
            }
            Some(server) => sasl::frame(server, frame, permits, &requests, &mut shutdown).await,
        };
        let keep_open = match outcome {
            Dispatched::Reply(reply) => queue.send(reply).await.is_ok(),
            Dispatched::Close => {
                let _ = ready(&queue, Reply::Close).await;
                false
            }
            Dispatched::Stop => false,
            Dispatched::Sasl(sasl::Outcome::Continue(reply)) => ready(&queue, reply).await,
            Dispatched::Sasl(sasl::Outcome::Authenticated(reply, principal)) => {
                requests.authenticated(principal);
                // Only an authenticated client keeps its slot against newcomers.
                slot.prove();
                frames.limit_bytes = frames.max_frame_bytes;
                frames.authenticating = false;
                frames.proven = true;
                ready(&queue, reply).await
            }
            Dispatched::Sasl(sasl::Outcome::Close(reply)) => {
                // Kafka's `connection.failed.authentication.delay.ms`: guessing is slow.
                let delay_ms = requests.broker.sasl.config().failed_authentication_delay_ms;
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
                    _ = shutdown.changed() => {}
                }
                if let Some(reply) = reply {
                    let _ = ready(&queue, reply).await;
                }
                let _ = ready(&queue, Reply::Close).await;
                false
            }
        };
        if !keep_open {
            break;
        }
    }
    // Dropping the queue lets the writer finish the responses already owed, then stop.
    drop(queue);
    if let Err(error) = writer_task.await {
        tracing::error!(%peer, %error, "connection writer failed");
    }
}

/// What the reader does with one frame.
enum Dispatched {
    /// Queue the reply of a request running on its own task.
    Reply(JoinHandle<Reply>),
    /// Close after the replies already queued.
    Close,
    /// Shutting down: stop reading.
    Stop,
    Sasl(sasl::Outcome),
}

/// What the requests of one connection share.
struct Requests {
    broker: Arc<Broker>,
    /// What requests see of the connection's security; shared with their tasks.
    session: Arc<Session>,
    /// Taken by the reader alone, one request at a time, so turns are granted in request order.
    order: Arc<RwLock<()>>,
    produce_order: Sequencer,
    /// Watched for clients whose throughput their small batches bound (`produce_hint`).
    produce_shape: Mutex<ProduceShape>,
}

impl Requests {
    /// Starts serving a decoded request on its own task, once its turn came.
    async fn dispatch(
        &self,
        decoded: Result<codec::Request, RequestError>,
        permits: Permits,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Dispatched {
        let peer = self.session.peer;
        match decoded {
            Ok(request) => {
                let turn = tokio::select! {
                    turn = take_turn(&self.order, request.api_key) => turn,
                    _ = shutdown.changed() => return Dispatched::Stop,
                };
                let broker = self.broker.clone();
                let session = self.session.clone();
                // Taken here, in request order, before the request runs on its own task.
                let ticket =
                    (request.api_key == ApiKey::Produce).then(|| self.produce_order.ticket());
                let in_flight = ticket
                    .as_ref()
                    .and_then(|_| self.produce_arrived(&request, &permits));
                // On its own task, still inside the connection's span.
                let task = async move {
                    let _permits = permits;
                    let _in_flight = in_flight;
                    let reply = respond(&broker, request, ticket, &session).await;
                    drop(turn);
                    reply
                };
                Dispatched::Reply(tokio::spawn(tracing::Instrument::in_current_span(task)))
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
                Dispatched::Reply(tokio::spawn(async move { reply }))
            }
            Err(error) => {
                // Kafka closes the connection on unknown APIs, unsupported versions and
                // malformed requests; the client sees a disconnect and reconnects.
                tracing::info!(%peer, %error, "closing connection: bad request");
                Dispatched::Close
            }
        }
    }

    /// Counts a Produce into the connection's shape; `None` only if the lock is poisoned.
    fn produce_arrived(&self, request: &codec::Request, permits: &Permits) -> Option<InFlight> {
        let mut shape = self.produce_shape.lock().ok()?;
        let client_id = request.header.client_id.as_deref().unwrap_or("");
        let batches = match &request.body {
            RequestKind::Produce(produce) => produce
                .topic_data
                .iter()
                .map(|topic| topic.partition_data.len())
                .sum(),
            _ => 0,
        };
        Some(shape.arrived(
            permits.frame_bytes(),
            batches,
            std::time::Instant::now(),
            self.session.peer,
            client_id,
        ))
    }

    /// Every later request is served as `principal` (SASL authentication or its renewal).
    fn authenticated(&mut self, principal: Principal) {
        let mut renewed = Session::clone(&self.session);
        renewed.principal = principal;
        self.session = Arc::new(renewed);
    }
}

/// Queues a reply that is already known; false once the writer is gone.
async fn ready(queue: &mpsc::Sender<JoinHandle<Reply>>, reply: Reply) -> bool {
    queue.send(tokio::spawn(async move { reply })).await.is_ok()
}

/// The memory a request holds while it is read and served: its share of the connection's
/// `max_frame_bytes` and of its budget, taken step by step as its bytes arrived.
pub struct Permits {
    connection: OwnedSemaphorePermit,
    budget: HeldBytes,
}

impl Permits {
    /// The size of the frame they were taken for (at least 1).
    fn frame_bytes(&self) -> usize {
        self.connection.num_permits()
    }

    fn add(held: &mut Option<Permits>, more: Permits) {
        match held {
            Some(held) => {
                held.connection.merge(more.connection);
                held.budget.merge(more.budget);
            }
            None => *held = Some(more),
        }
    }
}

/// Reads a connection's frames with its limits: the wait for a frame is bounded by
/// `connections_max_idle_ms` (while nothing is in flight), a started frame must arrive within
/// `frame_read_timeout_ms`, and its bytes are taken from the connection's share and its budget
/// one step ahead of what has arrived.
struct FrameReader<R> {
    reader: BufReader<R>,
    max_frame_bytes: usize,
    /// The largest frame read now: `max_frame_bytes`, or less before SASL authentication.
    limit_bytes: usize,
    /// On a SASL listener before authentication: frames read under the unauthenticated budget.
    authenticating: bool,
    /// The connection authenticated or had a request served: a frame's buffer is allocated for
    /// its declared size at once (one allocation, no copy) instead of growing as bytes arrive.
    proven: bool,
    idle: Duration,
    read_timeout: Duration,
    /// This connection's request bytes in flight (`max_frame_bytes` in all).
    connection_bytes: Arc<Semaphore>,
    budgets: RequestBytes,
}

/// Bytes buffered from the socket: small pipelined requests share a read, a big body bypasses
/// the buffer and goes straight to its own allocation.
const READ_BUFFER_BYTES: usize = 16 << 10;

/// Why a frame's body was not read.
enum BodyEnd {
    Read(FrameError),
    Evicted(Evicted),
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    fn new(reader: R, config: &Config, budgets: RequestBytes) -> FrameReader<R> {
        FrameReader {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            max_frame_bytes: config.max_frame_bytes,
            limit_bytes: config.max_frame_bytes,
            authenticating: false,
            proven: false,
            idle: Duration::from_millis(config.connections_max_idle_ms),
            read_timeout: Duration::from_millis(config.frame_read_timeout_ms),
            // max_frame_bytes <= i32::MAX is checked by the config.
            connection_bytes: Arc::new(Semaphore::new(config.max_frame_bytes)),
            budgets,
        }
    }

    /// The next frame and the permits its bytes hold; `None` once the connection is done.
    async fn next(&mut self, peer: SocketAddr) -> Option<(Bytes, Permits)> {
        if !self.wait_for_frame(peer).await {
            return None;
        }
        let size_bytes = match timeout(self.read_timeout, self.read_len()).await {
            Ok(Ok(Some(size_bytes))) => size_bytes,
            Ok(Ok(None)) => return None,
            Ok(Err(error)) => return log_read_end(peer, error),
            Err(_) => return log_slow_frame(peer, self.read_timeout),
        };
        let budget = if self.authenticating {
            &self.budgets.unauthenticated
        } else {
            &self.budgets.authenticated
        };
        let ticket = budget.start_frame();
        let body = tokio::select! {
            body = timeout(self.read_timeout, self.read_body(size_bytes, &ticket)) => body,
            evicted = ticket.evicted() => Ok(Err(BodyEnd::Evicted(evicted))),
        };
        match body {
            Ok(Ok(body)) => Some(body),
            Ok(Err(BodyEnd::Read(error))) => log_read_end(peer, error),
            Ok(Err(BodyEnd::Evicted(evicted))) => {
                tracing::info!(%peer, %evicted, size_bytes, "closing connection: its frame gave way");
                None
            }
            Err(_) => log_slow_frame(peer, self.read_timeout),
        }
    }

    /// Reads a body of `size_bytes` (checked against the limit), taking its bytes one step
    /// ahead of what arrived: a peer that declares a frame and sends nothing holds one step.
    async fn read_body(
        &mut self,
        size_bytes: usize,
        ticket: &FrameTicket,
    ) -> Result<(Bytes, Permits), BodyEnd> {
        let step_bytes = ticket.budget().step_bytes();
        let mut body = BytesMut::with_capacity(if self.proven {
            size_bytes
        } else {
            size_bytes.min(step_bytes)
        });
        // An empty body still holds a permit, so that it counts as in flight.
        let mut held = None;
        if size_bytes == 0 {
            held = Some(self.take(1, ticket).await.map_err(BodyEnd::Evicted)?);
        }
        while body.len() < size_bytes {
            let step = (size_bytes - body.len()).min(step_bytes);
            let more = self.take(step, ticket).await.map_err(BodyEnd::Evicted)?;
            Permits::add(&mut held, more);
            grow(&mut body, step, size_bytes);
            let target = body.len() + step;
            while body.len() < target {
                let limit = (target - body.len()) as u64;
                let read = (&mut self.reader).take(limit).read_buf(&mut body).await;
                match read {
                    Ok(0) => return Err(BodyEnd::Read(FrameError::Truncated)),
                    Ok(_) => {}
                    Err(error) => return Err(BodyEnd::Read(FrameError::Io(error))),
                }
            }
            ticket.stepped();
        }
        debug_assert_eq!(body.len(), size_bytes);
        let permits = held.ok_or(BodyEnd::Read(FrameError::Truncated))?;
        debug_assert_eq!(permits.frame_bytes(), size_bytes.max(1));
        Ok((body.freeze(), permits))
    }

    /// `bytes` of the connection's share first, so that a connection waiting for its own
    /// earlier requests holds nothing more of its budget, then of the budget.
    async fn take(&self, bytes: usize, ticket: &FrameTicket) -> Result<Permits, Evicted> {
        let evicted = Evicted {
            budget: ticket.budget().name(),
        };
        let n = u32::try_from(bytes).map_err(|_| evicted)?;
        let connection = self
            .connection_bytes
            .clone()
            .acquire_many_owned(n)
            .await
            .map_err(|_| evicted)?;
        let budget = ticket.take(bytes).await?;
        Ok(Permits { connection, budget })
    }

    /// Waits for the first byte of a frame; false if the peer closed, the wait failed, or the
    /// connection stayed idle past `connections_max_idle_ms` with nothing in flight.
    async fn wait_for_frame(&mut self, peer: SocketAddr) -> bool {
        loop {
            match timeout(self.idle, wait_for_frame(&mut self.reader)).await {
                Ok(Ok(started)) => return started,
                Ok(Err(error)) => {
                    log_read_end::<()>(peer, error);
                    return false;
                }
                Err(_) if self.is_idle() => {
                    let idle_ms = storage::clock::duration_ms(self.idle);
                    tracing::info!(%peer, idle_ms, "closing idle connection");
                    return false;
                }
                Err(_) => continue,
            }
        }
    }

    async fn read_len(&mut self) -> Result<Option<usize>, FrameError> {
        read_frame_len(&mut self.reader, self.limit_bytes).await
    }

    /// No request of this connection is being read or served.
    fn is_idle(&self) -> bool {
        self.connection_bytes.available_permits() == self.max_frame_bytes
    }
}

/// Makes room in `body` for `step` more bytes of a `size_bytes` frame: a buffer that grows
/// with what arrived doubles (one copy of the frame at most), never past the frame's size.
fn grow(body: &mut BytesMut, step: usize, size_bytes: usize) {
    let needed = body.len() + step;
    debug_assert!(needed <= size_bytes);
    if body.capacity() >= needed {
        return;
    }
    let capacity = (body.capacity() * 2).clamp(needed, size_bytes);
    let mut grown = BytesMut::with_capacity(capacity);
    grown.extend_from_slice(body);
    *body = grown;
}

/// A TLS ClientHello read as a frame length: record type 22 (handshake), version 3.x.
fn is_tls_hello(size_bytes: i64) -> bool {
    size_bytes >> 16 == 0x1603
}

fn log_read_end<T>(peer: SocketAddr, error: FrameError) -> Option<T> {
    match error {
        FrameError::TooLarge { size_bytes, .. } if is_tls_hello(size_bytes) => {
            tracing::info!(%peer, "closing connection: a tls handshake on a plaintext listener");
        }
        FrameError::TooLarge {
            size_bytes,
            max_bytes,
        } => {
            tracing::warn!(%peer, size_bytes, max_bytes, "closing connection: frame too large");
        }
        error => tracing::debug!(%peer, %error, "connection read ended"),
    }
    None
}

fn log_slow_frame<T>(peer: SocketAddr, read_timeout: Duration) -> Option<T> {
    let timeout_ms = storage::clock::duration_ms(read_timeout);
    tracing::info!(%peer, timeout_ms, "closing connection: frame not received in time");
    None
}

async fn respond(
    broker: &Arc<Broker>,
    request: codec::Request,
    ticket: Option<crate::sequencer::Ticket>,
    session: &Session,
) -> Reply {
    let peer = session.peer;
    let api_key = request.api_key;
    let version = request.version();
    let correlation_id = request.correlation_id();
    match handlers::handle(broker, request, ticket, session).await {
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
