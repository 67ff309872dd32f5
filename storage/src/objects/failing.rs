//! A store wrapper that fails chosen operations on demand, for fault-injection tests.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use object_store::path::Path;
use object_store::{ObjectStore, Result};

use super::intercept::{Call, Intercepted, Interceptor};
use super::Operation;

/// Which operations a [`FailingObjectStore`] fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureMode {
    /// Every call is delegated.
    Off,
    /// Calls of one class fail, the others are delegated.
    Only(Operation),
    /// Every call fails.
    All,
}

impl FailureMode {
    fn encode(self) -> u8 {
        match self {
            FailureMode::Off => 0,
            // One of four operations: the code is 1..=4.
            FailureMode::Only(op) => u8::try_from(op.index() + 1).unwrap_or(u8::MAX),
            FailureMode::All => u8::MAX,
        }
    }

    fn decode(code: u8) -> Self {
        match code {
            0 => FailureMode::Off,
            u8::MAX => FailureMode::All,
            n => Operation::ALL
                .get(usize::from(n) - 1)
                .map_or(FailureMode::All, |&op| FailureMode::Only(op)),
        }
    }

    fn fails(self, op: Operation) -> bool {
        match self {
            FailureMode::Off => false,
            FailureMode::Only(failing) => failing == op,
            FailureMode::All => true,
        }
    }
}

/// The source of every injected error; find it with [`is_injected_fault`].
#[derive(Debug, thiserror::Error)]
#[error("injected {operation} failure at {location:?}")]
pub struct InjectedFault {
    pub operation: &'static str,
    pub location: String,
}

/// Whether an object_store error was injected by a [`FailingObjectStore`].
pub fn is_injected_fault(err: &object_store::Error) -> bool {
    match err {
        object_store::Error::Generic { source, .. } => {
            source.downcast_ref::<InjectedFault>().is_some()
        }
        _ => false,
    }
}

/// Wraps any store; fails operations by class ([`FailureMode`]) or the Nth call from now.
///
/// Injected errors are `object_store::Error::Generic`, the variant real transient failures
/// (timeouts, 5xx after retries) surface as, so callers treat them as retriable.
pub type FailingObjectStore = Intercepted<Faults>;

#[derive(Debug)]
pub struct Faults {
    mode: AtomicU8,
    /// Operation number (1-based, counted over all calls) that fails once; 0 when disarmed.
    fail_at_operation: AtomicU64,
    operations: AtomicU64,
    injected: AtomicU64,
}

#[async_trait]
impl Interceptor for Faults {
    async fn before(&self, call: &Call) -> Result<()> {
        self.check(call.operation, &call.location)
    }

    fn name(&self) -> &'static str {
        "FailingObjectStore"
    }
}

impl Faults {
    fn mode(&self) -> FailureMode {
        FailureMode::decode(self.mode.load(Ordering::SeqCst))
    }

    fn check(&self, op: Operation, location: &Path) -> Result<()> {
        let number = self.operations.fetch_add(1, Ordering::SeqCst) + 1;
        let nth = self
            .fail_at_operation
            .compare_exchange(number, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if !nth && !self.mode().fails(op) {
            return Ok(());
        }
        self.injected.fetch_add(1, Ordering::SeqCst);
        tracing::debug!(operation = op.name(), %location, number, "injecting object store failure");
        Err(injected(op, location))
    }
}

/// The error a fault injector answers with, recognised by [`is_injected_fault`].
pub fn injected(op: Operation, location: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "FailingObjectStore",
        source: Box::new(InjectedFault {
            operation: op.name(),
            location: location.to_string(),
        }),
    }
}

impl Intercepted<Faults> {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        let faults = Faults {
            mode: AtomicU8::new(FailureMode::Off.encode()),
            fail_at_operation: AtomicU64::new(0),
            operations: AtomicU64::new(0),
            injected: AtomicU64::new(0),
        };
        Intercepted::wrap(inner, faults)
    }

    pub fn set_mode(&self, mode: FailureMode) {
        self.interceptor()
            .mode
            .store(mode.encode(), Ordering::SeqCst);
    }

    pub fn mode(&self) -> FailureMode {
        self.interceptor().mode()
    }

    /// Makes the `n`-th call from now fail once (`n = 1`: the next call). `n = 0` disarms.
    pub fn fail_nth_operation(&self, n: u64) {
        let faults = self.interceptor();
        let target = if n == 0 {
            0
        } else {
            faults.operations.load(Ordering::SeqCst) + n
        };
        faults.fail_at_operation.store(target, Ordering::SeqCst);
    }

    /// Calls seen so far, failed or not.
    pub fn operation_count(&self) -> u64 {
        self.interceptor().operations.load(Ordering::SeqCst)
    }

    /// Calls failed so far.
    pub fn injected_failures(&self) -> u64 {
        self.interceptor().injected.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use futures::StreamExt;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    fn store() -> FailingObjectStore {
        FailingObjectStore::new(Arc::new(InMemory::new()))
    }

    #[tokio::test]
    async fn failing_puts_leaves_gets_working() {
        let store = store();
        let key = Path::from("k");
        store
            .put(&key, Bytes::from_static(b"v").into())
            .await
            .unwrap();
        store.set_mode(FailureMode::Only(Operation::Put));
        let err = store
            .put(&key, Bytes::from_static(b"w").into())
            .await
            .unwrap_err();
        assert!(is_injected_fault(&err));
        assert_eq!(store.get(&key).await.unwrap().bytes().await.unwrap(), "v");
        store.set_mode(FailureMode::Off);
        store
            .put(&key, Bytes::from_static(b"w").into())
            .await
            .unwrap();
        assert_eq!(store.injected_failures(), 1);
    }

    #[tokio::test]
    async fn failing_all_fails_every_operation_class() {
        let store = store();
        store.set_mode(FailureMode::All);
        let key = Path::from("k");
        assert!(is_injected_fault(
            &store.put(&key, Bytes::new().into()).await.unwrap_err()
        ));
        assert!(is_injected_fault(&store.get(&key).await.unwrap_err()));
        assert!(is_injected_fault(&store.head(&key).await.unwrap_err()));
        assert!(is_injected_fault(&store.delete(&key).await.unwrap_err()));
        let listed: Vec<_> = store.list(None).collect().await;
        assert!(matches!(listed.as_slice(), [Err(e)] if is_injected_fault(e)));
        assert_eq!(store.mode(), FailureMode::All);
    }

    #[tokio::test]
    async fn missing_key_is_not_found_not_injected() {
        let err = store().get(&Path::from("missing")).await.unwrap_err();
        assert!(matches!(err, object_store::Error::NotFound { .. }));
        assert!(!is_injected_fault(&err));
    }

    #[tokio::test]
    async fn nth_operation_fails_exactly_once() {
        let store = store();
        let key = Path::from("k");
        store.fail_nth_operation(3);
        store
            .put(&key, Bytes::from_static(b"1").into())
            .await
            .unwrap();
        store.get(&key).await.unwrap();
        assert!(is_injected_fault(&store.get(&key).await.unwrap_err()));
        for _ in 0..5 {
            store.get(&key).await.unwrap();
        }
        assert_eq!(store.injected_failures(), 1);
        assert_eq!(store.operation_count(), 8);
    }

    #[test]
    fn failure_mode_survives_its_encoding() {
        let modes = [FailureMode::Off, FailureMode::All]
            .into_iter()
            .chain(Operation::ALL.into_iter().map(FailureMode::Only));
        for mode in modes {
            assert_eq!(FailureMode::decode(mode.encode()), mode);
        }
    }
}
