//! `broker scram set|delete|list`: SCRAM credentials written straight into the metadata store,
//! so that the first administrator exists before the first start (Kafka's
//! `kafka-storage format --add-scram`). The data location comes from the broker's own flags,
//! environment and `--config` file (`--data-dir`, `--metastore`), read by the same schema.
//!
//! With the embedded store, run it while no broker uses the data directory; with Oxia, any
//! time (running brokers see the change through notifications). The password is read from a
//! file (owner-only permissions, one trailing newline dropped) and never printed or logged.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgMatches, Command};
use metastore::{open_meta_store, MetaOptions, MetaStore};

use crate::config::settings::schema;
use crate::config::Config;
use crate::security::scram::{store, ScramCredential, ScramMechanism};

const DEFAULT_ITERATIONS: i32 = 4096;
const PASSWORD_BYTES_MAX: u64 = 1024;

#[derive(Debug, thiserror::Error)]
pub enum ScramCliError {
    /// Bad usage or settings: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The command ran and failed: exit 1.
    #[error("{0}")]
    Failed(String),
}

/// Runs `broker scram ...`; `args` is the whole command line (program name first).
pub async fn run(args: Vec<OsString>) -> Result<String, ScramCliError> {
    let action = args
        .get(2)
        .and_then(|a| a.to_str())
        .unwrap_or_default()
        .to_string();
    let base = match action.as_str() {
        "set" => set_command(),
        "delete" => user_command("delete", "Delete a user's SCRAM credential of one mechanism"),
        "list" => Command::new("list").about("List the users with SCRAM credentials, their mechanisms and iterations"),
        _ => {
            return Err(ScramCliError::Usage(
                "usage: broker scram set|delete|list [--user NAME] [--mechanism M] [--password-file F] [--iterations N] [broker settings: --data-dir, --metastore, --config]".into(),
            ))
        }
    };
    let base = base.name(format!("broker scram {action}"));
    // The program name, then the subcommand's own flags and the broker's settings.
    let rest = std::iter::once(OsString::from(format!("broker scram {action}")))
        .chain(args.into_iter().skip(3));
    let loaded = match schema().load(base, rest, &storage::settings::process_env()) {
        Ok(loaded) => loaded,
        Err(storage::settings::SettingsError::Cli(e)) => e.exit(),
        Err(e) => return Err(ScramCliError::Usage(e.to_string())),
    };
    let config =
        Config::from_resolved(&loaded.resolved).map_err(|e| ScramCliError::Usage(e.to_string()))?;
    let meta = open(&config).await?;
    let outcome = match action.as_str() {
        "set" => set(meta.as_ref(), &loaded.matches).await,
        "delete" => delete(meta.as_ref(), &loaded.matches).await,
        _ => list(meta.as_ref()).await,
    };
    if let Err(error) = meta.close().await {
        tracing::warn!(%error, "closing metadata store failed");
    }
    outcome
}

fn set_command() -> Command {
    user_command("set", "Store (or replace) a user's SCRAM credential, salted and hashed")
        .arg(
            Arg::new("password_file")
                .long("password-file")
                .value_name("FILE")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("File holding the password (readable by its owner only; one trailing newline is dropped)"),
        )
        .arg(
            Arg::new("iterations")
                .long("iterations")
                .value_name("N")
                .default_value("4096")
                .value_parser(clap::value_parser!(i32))
                .help("PBKDF2 iterations, 4096..=16384 as Kafka requires"),
        )
}

fn user_command(name: &'static str, about: &'static str) -> Command {
    Command::new(name)
        .about(about)
        .arg(
            Arg::new("user")
                .long("user")
                .value_name("NAME")
                .required(true)
                .help("The user name (principal User:NAME)"),
        )
        .arg(
            Arg::new("mechanism")
                .long("mechanism")
                .value_name("MECHANISM")
                .required(true)
                .value_parser(["SCRAM-SHA-256", "SCRAM-SHA-512"])
                .help("SCRAM-SHA-256 or SCRAM-SHA-512"),
        )
}

async fn open(config: &Config) -> Result<std::sync::Arc<dyn MetaStore>, ScramCliError> {
    let options = MetaOptions {
        notifications: false,
        ..MetaOptions::default()
    };
    open_meta_store(&config.metastore, &config.data_dir, options)
        .await
        .map_err(|e| {
            ScramCliError::Failed(format!(
                "cannot open metadata store {}: {e}",
                config.metastore
            ))
        })
}

fn user_and_mechanism(matches: &ArgMatches) -> Result<(String, ScramMechanism), ScramCliError> {
    let user = matches
        .get_one::<String>("user")
        .cloned()
        .unwrap_or_default();
    if user.is_empty() || user.len() > store::USER_NAME_BYTES_MAX {
        return Err(ScramCliError::Usage(format!(
            "--user must be 1 to {} bytes",
            store::USER_NAME_BYTES_MAX
        )));
    }
    let mechanism = matches
        .get_one::<String>("mechanism")
        .and_then(|m| ScramMechanism::from_name(m))
        .ok_or_else(|| {
            ScramCliError::Usage("--mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512".into())
        })?;
    Ok((user, mechanism))
}

async fn set(meta: &dyn MetaStore, matches: &ArgMatches) -> Result<String, ScramCliError> {
    let (user, mechanism) = user_and_mechanism(matches)?;
    let iterations = matches
        .get_one::<i32>("iterations")
        .copied()
        .unwrap_or(DEFAULT_ITERATIONS);
    let path = matches
        .get_one::<PathBuf>("password_file")
        .ok_or_else(|| ScramCliError::Usage("--password-file is required".into()))?;
    let password = read_password(path).await?;
    let credential = tokio::task::spawn_blocking(move || {
        ScramCredential::from_password(mechanism, &password, iterations)
    })
    .await
    .map_err(|e| ScramCliError::Failed(e.to_string()))?
    .map_err(|e| ScramCliError::Usage(e.to_string()))?;
    store::put(meta, &user, mechanism, &credential)
        .await
        .map_err(|e| ScramCliError::Failed(format!("cannot store the credential: {e}")))?;
    Ok(format!(
        "stored {mechanism} credential for user {user:?} ({iterations} iterations)"
    ))
}

async fn read_password(path: &std::path::Path) -> Result<Vec<u8>, ScramCliError> {
    use std::os::unix::fs::PermissionsExt;
    let failed =
        |e: std::io::Error| ScramCliError::Failed(format!("cannot read {}: {e}", path.display()));
    let meta = tokio::fs::metadata(path).await.map_err(failed)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ScramCliError::Usage(format!(
            "{} may be read by others (mode {mode:o}): make it readable by its owner only (chmod 600)",
            path.display()
        )));
    }
    if meta.len() > PASSWORD_BYTES_MAX {
        return Err(ScramCliError::Usage(format!(
            "{} is longer than {PASSWORD_BYTES_MAX} bytes",
            path.display()
        )));
    }
    let mut password = tokio::fs::read(path).await.map_err(failed)?;
    if password.ends_with(b"\n") {
        password.pop();
        if password.ends_with(b"\r") {
            password.pop();
        }
    }
    if password.is_empty() {
        return Err(ScramCliError::Usage(format!(
            "{} holds no password",
            path.display()
        )));
    }
    Ok(password)
}

async fn delete(meta: &dyn MetaStore, matches: &ArgMatches) -> Result<String, ScramCliError> {
    let (user, mechanism) = user_and_mechanism(matches)?;
    match store::delete(meta, &user, mechanism).await {
        Ok(true) => Ok(format!("deleted {mechanism} credential of user {user:?}")),
        Ok(false) => Err(ScramCliError::Failed(format!(
            "user {user:?} has no {mechanism} credential"
        ))),
        Err(e) => Err(ScramCliError::Failed(format!(
            "cannot delete the credential: {e}"
        ))),
    }
}

/// One `user mechanism iterations=N` line per credential (never salts or keys).
async fn list(meta: &dyn MetaStore) -> Result<String, ScramCliError> {
    let mut all = store::list(meta)
        .await
        .map_err(|e| ScramCliError::Failed(format!("cannot list credentials: {e}")))?;
    all.sort_by(|a, b| (&a.user, a.mechanism).cmp(&(&b.user, b.mechanism)));
    let lines: Vec<String> = all
        .iter()
        .map(|c| {
            format!(
                "{} {} iterations={}",
                c.user, c.mechanism, c.credential.iterations
            )
        })
        .collect();
    Ok(lines.join("\n"))
}
