//! The MetaStore metrics of `docs/metrics.md`: latency and errors of every operation by kind,
//! recorded by a layer [`open_meta_store`](crate::open_meta_store) puts over every backend.

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::{
    Comparison, Expect, MetaResult, MetaStore, Notification, PutOptions, PutResult, Record,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

struct Metrics {
    latency: telemetry::LatencyFamily<OperationLabels>,
    errors: Family<OperationLabels, Counter>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    Metrics {
    latency: telemetry::histogram_family(
        "diskless_metastore_operation_duration",
        "Seconds a MetaStore operation took, by kind (put, get, delete, delete_range, list, range_scan)",
    ),
    errors: telemetry::counter_family(
        "diskless_metastore_errors",
        "MetaStore operations that failed, by kind (a failed conditional put counts: it is an answer the caller handles)",
    ),
}
});

/// Registers the metrics so that they are listed before the first operation.
pub fn register_metrics() {
    LazyLock::force(&METRICS);
}

/// Any MetaStore, with each operation timed.
pub struct MeteredMetaStore {
    inner: Arc<dyn MetaStore>,
}

impl MeteredMetaStore {
    pub fn wrap(inner: Arc<dyn MetaStore>) -> Self {
        MeteredMetaStore { inner }
    }
}

async fn timed<T>(
    operation: &'static str,
    run: impl Future<Output = MetaResult<T>>,
) -> MetaResult<T> {
    if !telemetry::enabled() {
        return run.await;
    }
    let started = Instant::now();
    let result = run.await;
    let labels = OperationLabels { operation };
    METRICS
        .latency
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    if result.is_err() {
        METRICS.errors.get_or_create(&labels).inc();
    }
    result
}

#[async_trait]
impl MetaStore for MeteredMetaStore {
    async fn put(&self, key: &str, value: Bytes, options: PutOptions) -> MetaResult<PutResult> {
        timed("put", self.inner.put(key, value, options)).await
    }

    async fn get(
        &self,
        key: &str,
        comparison: Comparison,
        partition_key: Option<&str>,
    ) -> MetaResult<Option<Record>> {
        timed("get", self.inner.get(key, comparison, partition_key)).await
    }

    async fn delete(
        &self,
        key: &str,
        expect: Expect,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        timed("delete", self.inner.delete(key, expect, partition_key)).await
    }

    async fn delete_range(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<()> {
        let run = self.inner.delete_range(min_key, max_key, partition_key);
        timed("delete_range", run).await
    }

    async fn list(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
    ) -> MetaResult<Vec<String>> {
        timed("list", self.inner.list(min_key, max_key, partition_key)).await
    }

    async fn range_scan(
        &self,
        min_key: &str,
        max_key: &str,
        partition_key: Option<&str>,
        limit: usize,
    ) -> MetaResult<Vec<Record>> {
        let run = self
            .inner
            .range_scan(min_key, max_key, partition_key, limit);
        timed("range_scan", run).await
    }

    async fn notifications(&self) -> MetaResult<BoxStream<'static, Notification>> {
        self.inner.notifications().await
    }

    async fn close(&self) -> MetaResult<()> {
        self.inner.close().await
    }
}
