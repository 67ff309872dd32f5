//! CPU-heavy work (decoding, encoding, compressing) runs off the async threads, on tokio's
//! blocking pool, so that it never stalls other requests. The deterministic simulation runs it
//! inline instead: a second thread would make the order of events depend on real time.

/// The work's own outcome, or how it failed to run (it panicked or was cancelled).
pub async fn run<T: Send + 'static>(
    inline: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    if inline {
        return Ok(work());
    }
    tokio::task::spawn_blocking(work).await
}
