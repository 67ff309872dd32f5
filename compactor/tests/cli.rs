//! The real `compactor` binary: help on every flag, the broker's names, the old names as
//! aliases, `--print-config` and `--check-config`.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Output};

fn compactor(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_compactor"));
    command.args(args).env_remove("COMPACTOR_CONFIG");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

/// `key = value  # source` of one printed setting, spaces collapsed.
fn printed(output: &Output, key: &str) -> String {
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))
        .unwrap_or_else(|| panic!("no {key} in {text}"));
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn help_documents_every_flag() {
    let output = compactor(&["--help"], &[]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    // Clap puts the help after the flag, or on the next line when the flag is long.
    let lines: Vec<&str> = help.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let flag = line.trim_start();
        if !flag.starts_with("--") || flag.split_whitespace().count() > 2 {
            continue;
        }
        let next = lines.get(i + 1).map_or("", |l| l.trim_start());
        assert!(
            !next.is_empty() && !next.starts_with('-'),
            "flag without help: {line}"
        );
    }
    for flag in [
        "--compaction-min-bytes",
        "--config",
        "--once",
        "COMPACTOR_DATA_DIR",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
    assert!(!help.contains("--min-bytes"), "old names are hidden");
}

#[test]
fn flag_beats_env_beats_file_and_old_names_still_work() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(
        file,
        "compaction_workers = 3\ncompaction_min_age_ms = 7\nworkers = 9"
    )
    .unwrap();
    let path = file.path().to_str().unwrap();
    let output = compactor(
        &["--print-config", "--config", path, "--min-bytes", "5"],
        &[
            ("COMPACTOR_COMPACTION_MIN_AGE_MS", "8"),
            ("RUST_LOG", "warn"),
        ],
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        printed(&output, "compaction_min_bytes"),
        "compaction_min_bytes = 5 # flag"
    );
    assert_eq!(
        printed(&output, "compaction_min_age_ms"),
        "compaction_min_age_ms = 8 # env"
    );
    assert_eq!(
        printed(&output, "compaction_workers"),
        "compaction_workers = 3 # file"
    );
    assert_eq!(
        printed(&output, "metastore"),
        "metastore = \"embedded\" # default"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("deprecated name of setting compaction_min_bytes"),
        "{stderr}"
    );
}

#[test]
fn logs_at_info_unless_rust_log_says_otherwise() {
    let output = compactor(&["--print-config", "--min-bytes", "5"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("WARN"),
        "the default filter hides warnings: {stderr}"
    );
    let output = compactor(
        &["--print-config", "--min-bytes", "5"],
        &[("RUST_LOG", "error")],
    );
    assert!(output.stderr.is_empty(), "RUST_LOG is ignored");
}

#[test]
fn check_config_names_the_setting_and_the_rule() {
    assert!(compactor(&["--check-config"], &[]).status.success());
    let output = compactor(
        &["--check-config"],
        &[("COMPACTOR_COMPACTION_WORKERS", "0")],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "invalid setting compaction_workers: must be at least 1 (got 0), in the environment"
        ),
        "{stderr}"
    );
}
