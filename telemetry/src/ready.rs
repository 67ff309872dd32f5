//! Readiness: named checks run concurrently at each `/readyz`, each bounded by a timeout, so a
//! store that hangs makes the answer "not ready", never a hung probe.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// What one check answers: `Err` says why it is not ready.
pub type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

type CheckFn = Arc<dyn Fn() -> CheckFuture + Send + Sync>;

/// The checks `/readyz` runs.
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Vec<(&'static str, CheckFn)>,
    timeout: Option<Duration>,
}

/// The answer: each check by name, with its failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub failures: Vec<(&'static str, String)>,
}

impl Report {
    pub fn ready(&self) -> bool {
        self.failures.is_empty()
    }
}

const CHECK_TIMEOUT_DEFAULT: Duration = Duration::from_secs(2);

impl Readiness {
    pub fn new() -> Self {
        Readiness::default()
    }

    /// Adds a check named `name` (`metastore`, `object_store`, `listener`).
    pub fn check<F, Fut>(mut self, name: &'static str, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let check: CheckFn = Arc::new(move || Box::pin(check()));
        self.checks.push((name, check));
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub async fn run(&self) -> Report {
        let timeout = self.timeout.unwrap_or(CHECK_TIMEOUT_DEFAULT);
        let runs = self.checks.iter().map(|(name, check)| {
            let check = check.clone();
            async move {
                match tokio::time::timeout(timeout, check()).await {
                    Ok(Ok(())) => None,
                    Ok(Err(reason)) => Some((*name, reason)),
                    Err(_) => Some((
                        *name,
                        format!("no answer within {} ms", timeout.as_millis()),
                    )),
                }
            }
        });
        let failures = futures::future::join_all(runs)
            .await
            .into_iter()
            .flatten()
            .collect();
        Report { failures }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failing_or_hanging_check_makes_it_unready_and_names_the_check() {
        let readiness = Readiness::new()
            .check("fine", || async { Ok(()) })
            .check("broken", || async { Err("connection refused".to_string()) })
            .check("hung", futures::future::pending)
            .with_timeout(Duration::from_millis(50));
        let report = readiness.run().await;
        assert!(!report.ready());
        assert_eq!(
            report.failures[0],
            ("broken", "connection refused".to_string())
        );
        assert_eq!(report.failures[1].0, "hung");
    }

    #[tokio::test]
    async fn no_failing_check_is_ready() {
        let report = Readiness::new()
            .check("fine", || async { Ok(()) })
            .run()
            .await;
        assert!(report.ready());
    }
}
