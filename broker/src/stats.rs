//! Totals a broker reports when it stops: object-store calls, the figure that drives the cost of
//! a diskless broker (benchmarks divide them by the bytes produced).

use storage::objects::CountingObjectStore;

/// Logs the object-store call totals since start.
pub fn log_object_totals(objects: &CountingObjectStore) {
    let counts = objects.counts();
    tracing::info!(
        puts = counts.puts,
        gets = counts.gets,
        deletes = counts.deletes,
        lists = counts.lists,
        put_bytes = counts.put_bytes,
        "object store totals"
    );
}
