//! `compactor`: WAL -> Parquet, index swap, reclamation. `--once` runs one pass and exits.
//! Settings and their sources: `compactor --help`, `compactor --print-config`.

use std::process::ExitCode;
use std::time::Duration;

use compactor::cli::Cli;
use compactor::Compactor;
use metastore::{open_meta_store, MetaOptions};
use storage::settings::{Mode, SettingsError, DEFAULT_LOG_FILTER};

fn main() -> ExitCode {
    // Before any thread allocates.
    storage::allocator::tune();
    let cli = match Cli::parse(std::env::args_os(), &storage::settings::process_env()) {
        Ok(cli) => cli,
        Err(SettingsError::Cli(e)) => e.exit(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    storage::config::apply_metrics_enabled(&cli.resolved);
    telemetry::logging::init(
        storage::config::log_format(&cli.resolved),
        DEFAULT_LOG_FILTER,
    );
    for warning in &cli.resolved.warnings {
        tracing::warn!("{warning}");
    }
    match cli.mode {
        Mode::PrintConfig => {
            print!("{}", cli.resolved.print());
            return ExitCode::SUCCESS;
        }
        Mode::CheckConfig => {
            println!("compactor settings are valid");
            return ExitCode::SUCCESS;
        }
        Mode::Run => {}
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "compactor failed");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let location = &cli.location;
    storage::objects::register_metrics();
    metastore::register_metrics();
    compactor::metrics::register();
    let objects = storage::objects::open(&location.object_store_url)?;
    let objects = storage::objects::with_latency(objects, location.latency_profile);
    let objects: std::sync::Arc<dyn object_store::ObjectStore> = std::sync::Arc::new(
        storage::objects::Intercepted::wrap(objects, storage::objects::Meter),
    );
    let index_meta = open_meta_store(
        &location.metastore,
        &location.data_dir,
        MetaOptions {
            notifications: false,
            ..Default::default()
        },
    )
    .await?;
    let coord_meta = open_meta_store(
        &location.metastore,
        &location.data_dir,
        MetaOptions {
            session_timeout: Duration::from_millis(cli.session_timeout_ms),
            ..Default::default()
        },
    )
    .await?;
    if cli.list_tasks || cli.retry_dead {
        if cli.retry_dead {
            let n = compactor::tasks::retry_dead(&coord_meta).await?;
            println!("{n} dead tasks queued again");
        }
        if cli.list_tasks {
            for task in compactor::tasks::list_tasks(&coord_meta).await? {
                println!("{}", task.describe());
            }
        }
    } else {
        let readiness = storage::health::readiness(coord_meta.clone(), objects.clone());
        let compactor = Compactor::new(objects, index_meta.clone(), coord_meta.clone(), cli.config);
        if cli.once {
            let report = compactor.run_once().await?;
            tracing::info!(?report, "compaction pass done");
            println!("{report:?}");
        } else {
            let (stop_http, stopped) = tokio::sync::watch::channel(false);
            let http =
                telemetry::http::start(cli.http_listen, readiness, Default::default(), stopped)
                    .await?;
            let sampler = compactor::metrics::spawn_task_sampler(coord_meta.clone());
            compactor.run(shutdown_signal()).await;
            sampler.abort();
            let _ = stop_http.send(true);
            if let Some((_, task)) = http {
                let _ = task.await;
            }
        }
    }
    coord_meta.close().await.ok();
    index_meta.close().await.ok();
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        tracing::warn!("cannot install the SIGTERM handler; stopping on ctrl-c only");
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
