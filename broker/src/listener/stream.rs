//! What a connection needs of its stream: a half to read requests from and a half to write
//! responses to, used by two tasks at once. Plain TCP splits without a lock; a TLS stream
//! shares one session between its halves, behind `tokio::io::split`'s lock (held only while
//! a read or write is being polled).

use tokio::io::{AsyncRead, AsyncWrite, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

pub trait Transport: Send + 'static {
    type Reader: AsyncRead + Unpin + Send + 'static;
    type Writer: AsyncWrite + Unpin + Send + 'static;

    fn into_halves(self) -> (Self::Reader, Self::Writer);
}

impl Transport for TcpStream {
    type Reader = OwnedReadHalf;
    type Writer = OwnedWriteHalf;

    fn into_halves(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        self.into_split()
    }
}

impl Transport for TlsStream<TcpStream> {
    type Reader = ReadHalf<TlsStream<TcpStream>>;
    type Writer = WriteHalf<TlsStream<TcpStream>>;

    fn into_halves(self) -> (Self::Reader, Self::Writer) {
        tokio::io::split(self)
    }
}
