//! `broker`: a diskless Kafka broker. See `broker --help`.

use std::process::ExitCode;

use broker::config::{Config, ConfigError, Startup};
use storage::config::LogFormat;
use storage::settings::{process_env, Mode, DEFAULT_LOG_FILTER};

fn main() -> ExitCode {
    // Before any thread allocates.
    storage::allocator::tune();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "scram") {
        telemetry::logging::init(LogFormat::Text, DEFAULT_LOG_FILTER);
        return scram(args);
    }
    let startup = match Startup::load(args, &process_env()) {
        Ok(startup) => startup,
        Err(ConfigError::Cli(e)) => e.exit(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // Once the settings are known: they choose the format.
    storage::config::apply_metrics_enabled(&startup.resolved);
    let format = storage::config::log_format(&startup.resolved);
    telemetry::logging::init(format, DEFAULT_LOG_FILTER);
    for warning in &startup.resolved.warnings {
        tracing::warn!("{warning}");
    }
    match startup.mode {
        Mode::PrintConfig => {
            print!("{}", startup.resolved.print());
            return ExitCode::SUCCESS;
        }
        Mode::CheckConfig => {
            println!("broker settings are valid");
            return ExitCode::SUCCESS;
        }
        Mode::Run => {}
    }
    let config = startup.config;
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
    runtime.block_on(run(config))
}

/// `broker scram set|delete|list`: see `broker::cli::scram`.
fn scram(args: Vec<std::ffi::OsString>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(broker::cli::scram::run(args)) {
        Ok(output) => {
            if !output.is_empty() {
                println!("{output}");
            }
            ExitCode::SUCCESS
        }
        Err(broker::cli::scram::ScramCliError::Usage(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
        Err(broker::cli::scram::ScramCliError::Failed(message)) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: Config) -> ExitCode {
    let running = match broker::app::start(config).await {
        Ok(running) => running,
        Err(e) => {
            tracing::error!(error = %e, "broker failed to start");
            return ExitCode::FAILURE;
        }
    };
    wait_for_signal().await;
    tracing::info!("shutting down");
    running.shutdown().await;
    ExitCode::SUCCESS
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            tracing::warn!("cannot install signal handlers; stopping on ctrl-c only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
