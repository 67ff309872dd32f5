//! Starts a moto S3 server on a free loopback port for the duration of a test.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

pub struct MotoServer {
    child: Child,
    pub endpoint: String,
}

/// Where the moto_server binary is: `MOTO_SERVER_BIN`, else `.venv/bin/moto_server` in the
/// workspace root.
fn binary() -> PathBuf {
    match std::env::var_os("MOTO_SERVER_BIN") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/moto_server"),
    }
}

impl MotoServer {
    /// Starts the server, or returns None when it is not installed and `CI` is unset.
    /// Under `CI` a missing server is a failure: the suite must not silently shrink there.
    pub fn start() -> Option<MotoServer> {
        let bin = binary();
        if !bin.is_file() {
            assert!(
                std::env::var_os("CI").is_none(),
                "moto_server not found at {} and CI is set; run scripts/install-s3.sh",
                bin.display()
            );
            println!("skipped: moto_server not installed");
            return None;
        }
        let port = free_port();
        let child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let server = MotoServer {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        server.wait_ready(port);
        Some(server)
    }

    fn wait_ready(&self, port: u16) {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("moto_server did not listen on port {port} within {STARTUP_TIMEOUT:?}");
    }

    /// Creates a bucket; moto does not check request signatures, so a bare PUT suffices.
    pub fn create_bucket(&self, bucket: &str) {
        let addr = self.endpoint.trim_start_matches("http://");
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(conn, "PUT /{bucket} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut response = String::new();
        conn.read_to_string(&mut response).unwrap();
        assert!(
            response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200"),
            "create bucket: {response}"
        );
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
