//! `compactor`: WAL -> Parquet, index swap, reclamation. `--once` runs one pass and exits.

use std::path::PathBuf;

use clap::Parser;
use compactor::topic_flags::TopicDefaultFlags;
use compactor::{Compactor, CompactorConfig};
use storage::meta::{open_meta_store, MetaOptions};

#[derive(Parser, Debug)]
#[command(name = "compactor", about = "Compacts WAL objects into Parquet files")]
struct Args {
    #[arg(long, env = "COMPACTOR_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    /// Object store URL; defaults to `<data-dir>/objects`.
    #[arg(long, env = "COMPACTOR_OBJECT_STORE")]
    object_store: Option<String>,
    #[arg(long, env = "COMPACTOR_METASTORE", default_value = "embedded")]
    metastore: String,
    /// Run one pass (compact what is due, reclaim what is safe) and exit.
    #[arg(long)]
    once: bool,
    #[arg(long, env = "COMPACTOR_MIN_BYTES", default_value_t = 8 << 20)]
    min_bytes: u64,
    #[arg(long, env = "COMPACTOR_MIN_AGE_MS", default_value_t = 60_000)]
    min_age_ms: u64,
    #[arg(long, env = "COMPACTOR_FILE_BYTES_MAX", default_value_t = 128 << 20)]
    file_bytes_max: u64,
    #[arg(long, env = "COMPACTOR_READ_BYTES_PER_SEC", default_value_t = 0)]
    read_bytes_per_sec: u64,
    #[arg(long, env = "COMPACTOR_WORKERS", default_value_t = 2)]
    workers: usize,
    #[arg(long, env = "COMPACTOR_GRACE_PERIOD_MS", default_value_t = 60_000)]
    grace_period_ms: u64,
    #[arg(long, env = "COMPACTOR_INTERVAL_MS", default_value_t = 10_000)]
    interval_ms: u64,
    /// Retention is applied at most this often (`--once` always applies it).
    #[arg(
        long,
        env = "COMPACTOR_LOG_RETENTION_CHECK_INTERVAL_MS",
        default_value_t = 300_000
    )]
    log_retention_check_interval_ms: u64,
    /// A task failing this many times becomes DEAD (not retried automatically).
    #[arg(long, env = "COMPACTOR_TASK_ATTEMPTS_MAX", default_value_t = 5)]
    task_attempts_max: u32,
    /// Wait before the first retry of a failed task; doubles per failure up to the max.
    #[arg(long, env = "COMPACTOR_RETRY_BACKOFF_MS", default_value_t = 1_000)]
    retry_backoff_ms: u64,
    #[arg(
        long,
        env = "COMPACTOR_RETRY_BACKOFF_MAX_MS",
        default_value_t = 300_000
    )]
    retry_backoff_max_ms: u64,
    /// How long the leader lock outlives a compactor that stopped renewing it (a killed one).
    #[arg(long, env = "COMPACTOR_SESSION_TIMEOUT_MS", default_value_t = 10_000)]
    session_timeout_ms: u64,
    /// Print the task records (state, range, attempts, errors) and exit.
    #[arg(long)]
    list_tasks: bool,
    /// Put DEAD tasks back to PENDING (attempts reset) and exit.
    #[arg(long)]
    retry_dead: bool,
    /// Topic defaults by Kafka's broker setting names, the same flags as the broker's.
    #[command(flatten)]
    topic_defaults: TopicDefaultFlags,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let object_url = match &args.object_store {
        Some(url) => url.clone(),
        None => {
            let dir = std::path::absolute(args.data_dir.join("objects"))?;
            format!("file://{}", dir.display())
        }
    };
    let objects = storage::objects::open(&object_url)?;
    let index_meta = open_meta_store(
        &args.metastore,
        &args.data_dir,
        MetaOptions {
            notifications: false,
            ..Default::default()
        },
    )
    .await?;
    anyhow::ensure!(
        args.session_timeout_ms >= 100,
        "--session-timeout-ms must be at least 100"
    );
    let coord_meta = open_meta_store(
        &args.metastore,
        &args.data_dir,
        MetaOptions {
            session_timeout: std::time::Duration::from_millis(args.session_timeout_ms),
            ..Default::default()
        },
    )
    .await?;
    let config = CompactorConfig {
        min_bytes: args.min_bytes,
        min_age_ms: args.min_age_ms,
        file_bytes_max: args.file_bytes_max,
        read_bytes_per_sec: args.read_bytes_per_sec,
        workers: args.workers,
        grace_period_ms: args.grace_period_ms,
        interval_ms: args.interval_ms,
        retention_check_interval_ms: args.log_retention_check_interval_ms,
        task_attempts_max: args.task_attempts_max,
        retry_backoff_ms: args.retry_backoff_ms,
        retry_backoff_max_ms: args.retry_backoff_max_ms,
        local_folder: storage::objects::local_folder(&object_url),
        topic_defaults: args.topic_defaults.defaults.clone(),
        ..Default::default()
    };
    if args.list_tasks || args.retry_dead {
        if args.retry_dead {
            let n = compactor::tasks::retry_dead(&coord_meta).await?;
            println!("{n} dead tasks queued again");
        }
        if args.list_tasks {
            for task in compactor::tasks::list_tasks(&coord_meta).await? {
                println!("{}", task.describe());
            }
        }
        coord_meta.close().await.ok();
        index_meta.close().await.ok();
        return Ok(());
    }
    let compactor = Compactor::new(objects, index_meta.clone(), coord_meta.clone(), config);
    if args.once {
        let report = compactor.run_once().await?;
        tracing::info!(?report, "compaction pass done");
        println!("{report:?}");
    } else {
        let shutdown = async {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(_) => return std::future::pending().await,
                };
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        compactor.run(shutdown).await;
    }
    coord_meta.close().await.ok();
    index_meta.close().await.ok();
    Ok(())
}
