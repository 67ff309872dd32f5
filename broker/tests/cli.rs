//! The real `broker` binary: help, validation exit codes, setting precedence
//! (command line > environment > file > default) and clean shutdown on SIGTERM.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{s, Client};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;

fn broker_command(data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_broker"));
    command
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUST_LOG", "info")
        .env_remove("BROKER_DEFAULT_PARTITIONS")
        .env_remove("BROKER_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Starts the process and waits for its "broker listening" log line.
fn spawn(mut command: Command) -> (Child, SocketAddr) {
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("local_addr=").nth(1) {
                let addr = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("broker did not report its address");
    (child, addr.parse().unwrap())
}

fn terminate(mut child: Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "broker exited with {status}");
            return;
        }
        assert!(Instant::now() < deadline, "broker did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn num_partitions(addr: SocketAddr) -> String {
    let mut client = Client::connect(addr).await;
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s("1"))]);
    let response = expect_kind!(
        client.call(ApiKey::DescribeConfigs, 4, request).await,
        DescribeConfigs
    );
    let entry = response.results[0]
        .configs
        .iter()
        .find(|c| c.name.as_str() == "num.partitions")
        .unwrap();
    entry.value.as_ref().unwrap().to_string()
}

#[test]
fn help_documents_every_setting() {
    let output = Command::new(env!("CARGO_BIN_EXE_broker"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--listen",
        "--advertised-listener",
        "--data-dir",
        "--object-store",
        "--metastore",
        "--broker-id",
        "--rack",
        "--write-buffer-size",
        "--write-buffer-flush-size",
        "--write-buffer-puts-per-sec-max",
        "--write-buffer-max-streams",
        "--max-pending-bytes",
        "--read-cache-bytes",
        "--add-entry-timeout-ms",
        "--config",
        "BROKER_LISTEN",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn invalid_settings_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--default-partitions", "0"][..],
        &["--metastore", "zk://x"],
        &["--no-such-flag"],
    ] {
        let status = broker_command(dir.path())
            .args(args)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "{args:?} was accepted");
    }
    let status = broker_command(dir.path())
        .env("BROKER_DEFAULT_PARTITIONS", "-3")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_line_beats_environment_beats_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "default_partitions = 2\nobject_store = \"memory://\"").unwrap();
    let with_file = |command: &mut Command| {
        command.arg("--config").arg(file.path());
    };

    let mut command = broker_command(dir.path());
    with_file(&mut command);
    let (child, addr) = spawn(command);
    assert_eq!(num_partitions(addr).await, "2");
    terminate(child);

    let mut command = broker_command(dir.path());
    with_file(&mut command);
    command.env("BROKER_DEFAULT_PARTITIONS", "3");
    let (child, addr) = spawn(command);
    assert_eq!(num_partitions(addr).await, "3");
    terminate(child);

    let mut command = broker_command(dir.path());
    with_file(&mut command);
    command
        .env("BROKER_DEFAULT_PARTITIONS", "3")
        .args(["--default-partitions", "4"]);
    let (child, addr) = spawn(command);
    assert_eq!(num_partitions(addr).await, "4");
    terminate(child);
}

/// The real binary's `--print-config`, with a file, a variable and a flag.
fn print_config(file: &std::path::Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_broker"))
        .args(["--print-config", "--rack", "zone-a", "--config"])
        .arg(file)
        .env("BROKER_MAX_CONNECTIONS", "77")
        .env_remove("BROKER_DEFAULT_PARTITIONS")
        .env_remove("BROKER_CONFIG")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn print_config_names_every_setting_with_its_source() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "default_partitions = 5\n[compaction]\nworkers = 3").unwrap();
    let printed = print_config(file.path());
    let line = |key: &str| {
        printed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} in {printed}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line("rack"), "rack = \"zone-a\" # flag");
    assert_eq!(line("max_connections"), "max_connections = 77 # env");
    assert_eq!(line("default_partitions"), "default_partitions = 5 # file");
    assert_eq!(line("compaction_workers"), "compaction_workers = 3 # file");
    assert_eq!(line("listen"), "listen = \"127.0.0.1:9092\" # default");
    assert_eq!(
        line("log_retention_hours"),
        "log_retention_hours = 168 # default"
    );
    assert!(printed.contains("# advertised_listener"), "{printed}");
}

#[test]
fn check_config_exits_zero_when_valid_and_names_the_rule_when_not() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_broker"))
            .arg("--check-config")
            .args(args)
            .env_remove("BROKER_DEFAULT_PARTITIONS")
            .env_remove("BROKER_CONFIG")
            .output()
            .unwrap()
    };
    let ok = run(&[]);
    assert!(ok.status.success(), "{ok:?}");
    let bad = run(&["--queued-max-request-bytes", "1024"]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains(
            "invalid setting queued_max_request_bytes: must be at least max_frame_bytes (104857600)"
        ),
        "{stderr}"
    );
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "write_buffer_sise = 1").unwrap();
    let unknown = run(&["--config", file.path().to_str().unwrap()]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("unknown setting \"write_buffer_sise\"")
    );
}
