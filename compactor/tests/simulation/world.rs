//! The simulated world: shared stores, one broker engine and one compactor (each a process that
//! can crash and be replaced), the model, and the steps the generator picks from.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use compactor::{Compactor, CompactorConfig};
use metastore::{MemoryStore, MetaOptions, MetaStore};
use object_store::memory::InMemory;
use object_store::ObjectStore;
use storage::clock::{Clock, TokioClock};
use storage::compacted::{BatchHeader, RecordRow};
use storage::objects::Intercepted;
use storage::record_batch::encode_batch;
use storage::{BatchMeta, Storage, StorageConfig};
use tokio::task::JoinHandle;

use super::check::{self, lock, Tag};
use super::faults::{FaultRates, Faults, MetaFaults, ObjectFaults};
use super::model::{classify, Model, Outcome};
use super::rng::Rng;
use super::table;

const STREAMS: usize = 4;
/// Wall time at the start of every run (November 2023), so timestamps are the same each run.
const EPOCH_MS: u64 = 1_700_000_000_000;

const FAULTY: FaultRates = FaultRates {
    fail_before_per_mille: 30,
    fail_after_write_per_mille: 20,
    delay_per_mille: 200,
    delay_max_ms: 40,
};
const HEALTHY: FaultRates = FaultRates {
    fail_before_per_mille: 0,
    fail_after_write_per_mille: 0,
    delay_per_mille: 0,
    delay_max_ms: 1,
};

/// A process's way to the shared stores, through its own faults.
struct Process {
    faults: Arc<Faults>,
    objects: Arc<dyn ObjectStore>,
    meta: Arc<dyn MetaStore>,
    /// Its MetaStore session, ended when it crashes.
    session_id: i64,
}

struct Node {
    epoch: u64,
    process: Process,
    storage: Arc<Storage>,
}

struct CompactorProcess {
    process: Process,
    compactor: Arc<Compactor>,
    pass: Option<JoinHandle<()>>,
}

pub struct World {
    rng: Rng,
    clock: Arc<dyn Clock>,
    meta: MemoryStore,
    objects: Arc<dyn ObjectStore>,
    model: Arc<Mutex<Model>>,
    node: Node,
    compactor: CompactorProcess,
    epochs: u64,
    /// What happened, step by step, for the replay test.
    log: Vec<String>,
}

impl World {
    pub fn new(mut rng: Rng) -> World {
        let clock: Arc<dyn Clock> = Arc::new(TokioClock::new(EPOCH_MS));
        let meta = {
            let clock = clock.clone();
            MemoryStore::with_clock(Arc::new(move || clock.now_ms()))
        };
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let seed = rng.next_u64();
        let mut world = World {
            node: start_node(&mut rng, &meta, &objects, &clock, 0, seed, FAULTY),
            compactor: start_compactor(&mut rng, &meta, &objects, &clock, FAULTY),
            rng,
            clock,
            meta,
            objects,
            model: Arc::new(Mutex::new(Model::new(STREAMS))),
            epochs: 1,
            log: Vec::new(),
        };
        world.log.push(format!("seed {seed}"));
        world
    }

    /// Makes the streams the partitions of a topic that is an Iceberg table.
    pub async fn create_topic(&self) {
        table::create_topic(&self.healthy_meta(), STREAMS, EPOCH_MS).await;
    }

    /// One step the generator picks.
    pub async fn step(&mut self) -> Result<(), String> {
        match self.rng.below(100) {
            0..=44 => self.append(),
            45..=59 => self.wait().await,
            60..=63 => self.trim().await,
            64..=73 => self.compact(),
            74..=76 => self.crash_node().await,
            77..=79 => self.crash_compactor(),
            _ => return self.check_one().await,
        }
        Ok(())
    }

    fn append(&mut self) {
        let stream = self.rng.below(STREAMS as u64) as usize;
        let records = 1 + self.rng.below(5) as u32;
        let id = lock(&self.model).start(stream, self.node.epoch);
        let name = lock(&self.model).streams[stream].name.clone();
        let (payload, meta) = batch(id, records, self.clock.now_ms());
        let storage = self.node.storage.clone();
        let faults = self.node.process.faults.clone();
        let model = self.model.clone();
        tokio::spawn(async move {
            let result = storage.append(&name, payload, vec![meta]).await;
            let outcome = match result {
                // The client of a crashed broker hears nothing.
                _ if faults.is_dead() => Outcome::Unknown,
                Ok(o) => Outcome::Acked {
                    base: o.base_offset,
                    end: o.end_offset,
                },
                Err(e) => classify(&e),
            };
            let mut model = lock(&model);
            if let Outcome::Acked { base, end } = outcome {
                assert_eq!(
                    end - base,
                    u64::from(records),
                    "append {id} got a wrong range"
                );
            }
            if model.appends[id].outcome == Outcome::Pending {
                model.appends[id].outcome = outcome;
            }
        });
        self.log.push(format!("append {id} to {stream}"));
    }

    async fn wait(&mut self) {
        let ms = 1 + self.rng.below(60);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    async fn trim(&mut self) {
        let stream = self.rng.below(STREAMS as u64) as usize;
        let name = lock(&self.model).streams[stream].name.clone();
        let Ok(bounds) = self.node.storage.bounds(&name).await else {
            return;
        };
        let span = bounds.high_watermark - bounds.log_start_offset;
        let to = bounds.log_start_offset + self.rng.below(span / 2 + 1);
        if let Ok(after) = self.node.storage.trim(&name, to).await {
            let mut model = lock(&self.model);
            let seen = &mut model.streams[stream];
            seen.trimmed_to = seen.trimmed_to.max(after.log_start_offset);
            self.log.push(format!("trim {stream} to {to}"));
        }
    }

    fn compact(&mut self) {
        if self
            .compactor
            .pass
            .as_ref()
            .is_some_and(|p| !p.is_finished())
        {
            return;
        }
        let compactor = self.compactor.compactor.clone();
        self.compactor.pass = Some(tokio::spawn(async move {
            let _ = compactor.run_once().await;
        }));
        self.log.push("compaction pass".into());
    }

    async fn crash_node(&mut self) {
        let seed = self.rng.next_u64();
        let old = std::mem::replace(
            &mut self.node,
            start_node(
                &mut self.rng,
                &self.meta,
                &self.objects,
                &self.clock,
                self.epochs,
                seed,
                FAULTY,
            ),
        );
        self.epochs += 1;
        kill(&self.meta, &old.process);
        lock(&self.model).crashed(old.epoch);
        // Its writer winds down: nothing it sends arrives any more.
        tokio::spawn(async move { old.storage.shutdown().await });
        self.log.push(format!("crash node {}", old.epoch));
    }

    fn crash_compactor(&mut self) {
        let old = std::mem::replace(
            &mut self.compactor,
            start_compactor(
                &mut self.rng,
                &self.meta,
                &self.objects,
                &self.clock,
                FAULTY,
            ),
        );
        kill(&self.meta, &old.process);
        if let Some(pass) = old.pass {
            pass.abort();
        }
        self.log.push("crash compactor".into());
    }

    async fn check_one(&mut self) -> Result<(), String> {
        let stream = self.rng.below(STREAMS as u64) as usize;
        let done = check::check_stream(&self.node.storage, &self.model, stream).await?;
        self.log.push(format!("check {stream}: {done}"));
        table::check_listed(&self.objects, &self.healthy_meta()).await?;
        Ok(())
    }

    /// A handle on the shared MetaStore without faults, for checks.
    fn healthy_meta(&self) -> Arc<dyn MetaStore> {
        Arc::new(self.meta.handle(MetaOptions::default()))
    }

    /// Faults stop, pending work settles, the compactor runs to the end; then every stream
    /// must check, with every append decided.
    pub async fn heal_and_check(&mut self) -> Result<(), String> {
        self.crash_node().await;
        self.crash_compactor();
        let seed = self.rng.next_u64();
        self.node = start_node(
            &mut self.rng,
            &self.meta,
            &self.objects,
            &self.clock,
            self.epochs,
            seed,
            HEALTHY,
        );
        self.compactor = start_compactor(
            &mut self.rng,
            &self.meta,
            &self.objects,
            &self.clock,
            HEALTHY,
        );
        tokio::time::sleep(Duration::from_secs(40)).await;
        for _ in 0..3 {
            let _ = self.compactor.compactor.run_once().await;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        for stream in 0..STREAMS {
            if !check::check_stream(&self.node.storage, &self.model, stream).await? {
                return Err(format!("stream {stream} unreadable without faults"));
            }
        }
        let meta = self.healthy_meta();
        let listed = table::check_listed(&self.objects, &meta).await?;
        let streams: Vec<String> = lock(&self.model)
            .streams
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let indexed = table::indexed(&meta, &streams).await;
        if listed != indexed {
            return Err(format!(
                "the table lists {listed:?}, the index holds {indexed:?}"
            ));
        }
        let pending = lock(&self.model)
            .outcomes()
            .iter()
            .filter(|o| **o == Outcome::Pending)
            .count();
        if pending > 0 {
            return Err(format!("{pending} appends never completed"));
        }
        Ok(())
    }

    /// How the run went: appends by outcome, checks with a verdict, objects left in the store.
    pub async fn summary(&self) -> String {
        let outcomes = lock(&self.model).outcomes();
        let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
        let checks = self.log.iter().filter(|l| l.ends_with(": true")).count();
        let crashes = self.log.iter().filter(|l| l.starts_with("crash")).count();
        let objects: Vec<_> = futures::TryStreamExt::try_collect::<Vec<_>>(self.objects.list(None))
            .await
            .unwrap_or_default();
        let parquet = objects
            .iter()
            .filter(|o| o.location.as_ref().ends_with(".parquet"))
            .count();
        format!(
            "appends acked {} failed {} unknown {}; checks {checks}; crashes {crashes}; objects {} ({parquet} parquet)",
            count(|o| matches!(o, Outcome::Acked { .. })),
            count(|o| *o == Outcome::Failed),
            count(|o| *o == Outcome::Unknown),
            objects.len(),
        )
    }

    /// The run so far, for comparing two runs of one seed.
    pub fn trace(&self) -> String {
        let model = lock(&self.model);
        format!(
            "{:?}\n{:?}\n{}",
            model.outcomes(),
            model.streams,
            self.log.join("\n")
        )
    }
}

fn process(
    rng: &mut Rng,
    meta: &MemoryStore,
    objects: &Arc<dyn ObjectStore>,
    rates: FaultRates,
) -> Process {
    let faults = Faults::new(rng.fork(), rates);
    let handle = meta.handle(MetaOptions::default());
    let session_id = handle.session_id();
    Process {
        objects: Arc::new(Intercepted::wrap(
            objects.clone(),
            ObjectFaults(faults.clone()),
        )),
        meta: Arc::new(MetaFaults {
            inner: Arc::new(handle),
            faults: faults.clone(),
        }),
        faults,
        session_id,
    }
}

/// The process is gone: its calls fail from now on and its session ends (ephemeral records
/// such as the compactor's leadership go).
fn kill(meta: &MemoryStore, process: &Process) {
    process.faults.kill();
    meta.expire_session(process.session_id);
}

fn start_node(
    rng: &mut Rng,
    meta: &MemoryStore,
    objects: &Arc<dyn ObjectStore>,
    clock: &Arc<dyn Clock>,
    epoch: u64,
    seed: u64,
    rates: FaultRates,
) -> Node {
    let process = process(rng, meta, objects, rates);
    let config = StorageConfig {
        write_buffer_size: 2 << 10,
        write_buffer_puts_per_sec_max: Some(200),
        max_pending_bytes: 16 << 10,
        max_puts_in_flight: 4,
        write_cache_bytes: 8 << 10,
        read_cache_bytes: 8 << 10,
        compacted_cache_bytes: 16 << 10,
        compacted_footer_cache_bytes: 16 << 10,
        add_entry_timeout_ms: 3_000,
        index_cache_entries_per_stream: 4,
        stream_states_max: 2,
        wal_object_id_seed: Some(seed),
        cpu_work_inline: true,
        ..StorageConfig::default()
    };
    let storage = Storage::open_with_clock(
        config,
        process.objects.clone(),
        process.meta.clone(),
        clock.clone(),
    );
    storage.spawn_bounds_poller();
    Node {
        epoch,
        process,
        storage,
    }
}

fn start_compactor(
    rng: &mut Rng,
    meta: &MemoryStore,
    objects: &Arc<dyn ObjectStore>,
    clock: &Arc<dyn Clock>,
    rates: FaultRates,
) -> CompactorProcess {
    let process = process(rng, meta, objects, rates);
    let config = CompactorConfig {
        min_bytes: 0,
        min_age_ms: 0,
        file_bytes_max: 4 << 10,
        grace_period_ms: 2_000,
        retry_backoff_ms: 10,
        retry_backoff_max_ms: 100,
        task_attempts_max: 1_000,
        cpu_work_inline: true,
        ..CompactorConfig::default()
    };
    let compactor = Compactor::new(
        process.objects.clone(),
        process.meta.clone(),
        process.meta.clone(),
        config,
    )
    .with_clock(clock.clone());
    CompactorProcess {
        process,
        compactor: Arc::new(compactor),
        pass: None,
    }
}

/// One Kafka batch of `records` records tagged with their append.
fn batch(append: usize, records: u32, now_ms: u64) -> (Bytes, BatchMeta) {
    let timestamp = i64::try_from(now_ms).unwrap_or(i64::MAX);
    let header = BatchHeader {
        base_offset: 0,
        partition_leader_epoch: 0,
        attributes: 0,
        last_offset_delta: records as i32 - 1,
        base_timestamp: timestamp,
        max_timestamp: timestamp,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
    let rows: Vec<RecordRow> = (0..records)
        .map(|record| RecordRow {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: record as i32,
            key: None,
            value: Some(Bytes::from(check::tag_value(Tag { append, record }))),
            headers: vec![],
        })
        .collect();
    let bytes = encode_batch(&header, &rows, 0).expect("a batch of small records encodes");
    let meta = BatchMeta {
        len: bytes.len() as u32,
        records,
        max_timestamp: timestamp,
        producer: None,
    };
    (bytes, meta)
}
