//! A deterministic simulation of the engine and the compactor (FoundationDB's and TigerBeetle's
//! approach): one seeded generator drives appends, reads, trims, compaction passes and crashes
//! of the broker's engine and of the compactor, over in-memory object and metadata stores that
//! delay calls, fail them, or apply writes and lose the answer. Everything runs on one thread
//! in a paused tokio runtime, so a seed replays exactly. After every check step the invariants
//! of `check` must hold: acknowledged appends readable at their offsets, offsets dense from
//! the log start, failed appends never readable, nothing twice, bounds never moving back; and
//! the streams' Iceberg table lists each file once, only files that exist, and once healed
//! exactly the index's Parquet files (`table`).
//!
//! `cargo test -p compactor --test simulation` runs `SIM_SEEDS` seeds (default 300) from
//! `SIM_FIRST_SEED` (default 1); `scripts/simulate.sh N` runs many more in release mode and
//! prints a failing seed, which `SIM_FIRST_SEED=<seed> SIM_SEEDS=1` replays.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and timestamps of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

mod check;
mod faults;
mod model;
mod rng;
mod table;
mod world;

use std::time::Duration;

use rng::Rng;
use world::World;

/// Steps per seed.
const STEPS: usize = 300;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One seed, on a fresh paused single-threaded runtime; the first violated invariant.
fn simulate(seed: u64) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let mut world = World::new(Rng::new(seed));
        world.create_topic().await;
        for step in 0..STEPS {
            world
                .step()
                .await
                .map_err(|e| format!("step {step}: {e}"))?;
        }
        world
            .heal_and_check()
            .await
            .map_err(|e| format!("end: {e}"))?;
        if std::env::var_os("SIM_VERBOSE").is_some() {
            eprintln!("seed {seed}: {}", world.summary().await);
        }
        Ok(())
    })
}

#[test]
fn every_seed_keeps_acknowledged_appends_dense_and_readable() {
    let first = env_u64("SIM_FIRST_SEED", 1);
    let seeds = env_u64("SIM_SEEDS", 300);
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    for seed in first..first + seeds {
        if let Err(violation) = simulate(seed) {
            eprintln!("simulation seed {seed} failed: {violation}");
            failures.push(seed);
        }
    }
    let elapsed = started.elapsed();
    eprintln!("simulated {seeds} seeds from {first} in {elapsed:?}");
    assert!(
        failures.is_empty(),
        "failing seeds (replay with SIM_FIRST_SEED=<seed> SIM_SEEDS=1): {failures:?}"
    );
}

#[test]
fn a_seed_replays_exactly() {
    let trace = |seed| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut world = World::new(Rng::new(seed));
            world.create_topic().await;
            for _ in 0..STEPS / 2 {
                world.step().await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            world.trace()
        })
    };
    assert_eq!(trace(7), trace(7));
    assert_ne!(trace(7), trace(8));
}
