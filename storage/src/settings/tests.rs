//! The loader on a small schema: layer precedence, sources, aliases, file keys and errors.

use std::io::Write;

use clap::Command;

use super::*;

static SIZE_BYTES: Setting<u64> =
    Setting::new("size_bytes", 100, Unit::Bytes, "A size").at_least(1);
static LIMIT_BYTES: Setting<u64> = Setting::new("limit_bytes", 1000, Unit::Bytes, "A limit");
static NAME: Setting<Option<String>> = Setting::new("name", None, Unit::None, "A name");
static ENABLED: Setting<bool> = Setting::new("enabled", true, Unit::None, "A switch");

fn schema() -> Schema {
    static SETTINGS: &[&dyn AnySetting] = &[&SIZE_BYTES, &LIMIT_BYTES, &NAME, &ENABLED];
    Schema::new("test", "TEST_")
        .group("Things", SETTINGS.iter().copied())
        .alias("size_bytes", "size")
        .rule("size_bytes", |r| {
            let limit = r.get(&LIMIT_BYTES);
            if r.get(&SIZE_BYTES) <= limit {
                Ok(())
            } else {
                Err(format!("must be at most limit_bytes ({limit})"))
            }
        })
}

fn load(args: &[&str], env: &[(&str, &str)]) -> Result<Loaded, SettingsError> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let args = std::iter::once("test").chain(args.iter().copied());
    schema().load(Command::new("test"), args, &env)
}

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

#[test]
fn flag_beats_env_beats_file_beats_default() {
    let f = file("size_bytes = 2\nlimit_bytes = 20\nname = \"file\"\n");
    let path = f.path().to_str().unwrap();
    let loaded = load(
        &["--config", path, "--size-bytes", "4"],
        &[("TEST_SIZE_BYTES", "3"), ("TEST_LIMIT_BYTES", "30")],
    )
    .unwrap();
    let r = &loaded.resolved;
    assert_eq!(
        (r.get(&SIZE_BYTES), r.source("size_bytes")),
        (4, Some(Source::Flag))
    );
    assert_eq!(
        (r.get(&LIMIT_BYTES), r.source("limit_bytes")),
        (30, Some(Source::Env))
    );
    assert_eq!(r.get(&NAME).as_deref(), Some("file"));
    assert_eq!(r.source("name"), Some(Source::File));
    assert_eq!(
        (r.get(&ENABLED), r.source("enabled")),
        (true, Some(Source::Default))
    );
    assert_eq!(loaded.mode, Mode::Run);
}

#[test]
fn the_config_file_can_come_from_the_environment() {
    let f = file("enabled = false\n");
    let loaded = load(&[], &[("TEST_CONFIG", f.path().to_str().unwrap())]).unwrap();
    assert!(!loaded.resolved.get(&ENABLED));
    assert_eq!(loaded.resolved.source("enabled"), Some(Source::File));
}

#[test]
fn unknown_file_keys_are_refused_by_name_but_unknown_env_vars_are_not_settings() {
    let f = file("size_bytes = 2\nsize_byte = 3\n");
    let err = load(&["--config", f.path().to_str().unwrap()], &[])
        .err()
        .unwrap();
    assert!(
        matches!(&err, SettingsError::UnknownKey { key, .. } if key == "size_byte"),
        "{err}"
    );
    assert!(
        err.to_string().contains("unknown setting \"size_byte\""),
        "{err}"
    );
    // The e2e harness passes `BROKER_ARGS`; variables that name no setting are not ours.
    assert!(load(&[], &[("TEST_ARGS", "--x"), ("OTHER_SIZE_BYTES", "x")]).is_ok());
}

#[test]
fn tables_in_the_file_join_their_names_with_underscores() {
    let f = file("[size]\nbytes = 7\n[limit]\nbytes = 70\n");
    let loaded = load(&["--config", f.path().to_str().unwrap()], &[]).unwrap();
    assert_eq!(loaded.resolved.get(&SIZE_BYTES), 7);
    assert_eq!(loaded.resolved.get(&LIMIT_BYTES), 70);
}

#[test]
fn missing_or_malformed_files_are_errors() {
    let err = load(&["--config", "/no/such/file.toml"], &[])
        .err()
        .unwrap();
    assert!(matches!(err, SettingsError::File { .. }), "{err}");
    let f = file("size_bytes = [1, 2]\n");
    let err = load(&["--config", f.path().to_str().unwrap()], &[])
        .err()
        .unwrap();
    assert!(err.to_string().contains("expected a single value"), "{err}");
}

#[test]
fn invalid_values_name_the_setting_the_rule_and_where_they_were_set() {
    let err = load(&["--size-bytes", "0"], &[]).err().unwrap();
    assert_eq!(
        err.to_string(),
        "invalid setting size_bytes: must be at least 1 (got 0), on the command line"
    );
    let err = load(&[], &[("TEST_ENABLED", "yes")]).err().unwrap();
    assert_eq!(
        err.to_string(),
        "invalid setting enabled: expected true or false, got \"yes\", in the environment"
    );
    let err = load(&["--size-bytes", "2000"], &[]).err().unwrap();
    assert_eq!(
        err.to_string(),
        "invalid setting size_bytes: must be at most limit_bytes (1000)"
    );
    assert!(matches!(
        load(&["--size-bytes"], &[]),
        Err(SettingsError::Cli(_))
    ));
}

#[test]
fn old_names_still_work_everywhere_with_a_warning_and_lose_to_the_new_name() {
    let loaded = load(&["--size", "5"], &[]).unwrap();
    assert_eq!(loaded.resolved.get(&SIZE_BYTES), 5);
    assert_eq!(loaded.resolved.warnings.len(), 1);
    assert!(
        loaded.resolved.warnings[0].contains("--size-bytes"),
        "{:?}",
        loaded.resolved.warnings
    );
    let loaded = load(&[], &[("TEST_SIZE", "6"), ("TEST_SIZE_BYTES", "7")]).unwrap();
    assert_eq!(loaded.resolved.get(&SIZE_BYTES), 7);
    let f = file("size = 8\n");
    let loaded = load(&["--config", f.path().to_str().unwrap()], &[]).unwrap();
    assert_eq!(loaded.resolved.get(&SIZE_BYTES), 8);
    assert_eq!(loaded.resolved.source("size_bytes"), Some(Source::File));
}

#[test]
fn print_config_shows_every_value_and_source_and_reads_back_as_a_file() {
    let f = file("limit_bytes = 20\n");
    let loaded = load(
        &[
            "--print-config",
            "--config",
            f.path().to_str().unwrap(),
            "--size-bytes",
            "4",
        ],
        &[("TEST_ENABLED", "false")],
    )
    .unwrap();
    assert_eq!(loaded.mode, Mode::PrintConfig);
    let printed = loaded.resolved.print();
    let lines: Vec<&str> = printed.lines().collect();
    assert!(lines.contains(&"size_bytes  = 4  # flag"), "{printed}");
    assert!(lines.contains(&"limit_bytes = 20  # file"), "{printed}");
    assert!(lines.contains(&"enabled     = false  # env"), "{printed}");
    assert!(
        lines.contains(&"# name        unset  # default"),
        "{printed}"
    );
    let again = file(&printed);
    let reloaded = load(&["--config", again.path().to_str().unwrap()], &[]).unwrap();
    assert_eq!(reloaded.resolved.get(&SIZE_BYTES), 4);
    assert!(!reloaded.resolved.get(&ENABLED));
}

#[test]
fn check_config_is_a_mode() {
    assert_eq!(
        load(&["--check-config"], &[]).unwrap().mode,
        Mode::CheckConfig
    );
    assert!(load(&["--check-config", "--print-config"], &[]).is_err());
}

#[test]
fn help_shows_default_range_and_variable_but_not_old_names() {
    let help = schema()
        .command(Command::new("test"))
        .render_help()
        .to_string();
    assert!(help.contains("--size-bytes <BYTES>"), "{help}");
    assert!(
        help.contains("A size [default: 100] [range: >= 1] [env: TEST_SIZE_BYTES]"),
        "{help}"
    );
    assert!(!help.contains("--size "), "{help}");
}
