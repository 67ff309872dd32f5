//! Loading a schema's settings: the clap command made from the declarations, the layers merged
//! (command line > environment > file > default), every value parsed and checked where it is
//! declared, then the schema's cross-setting rules.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};

use super::layers::{env_layer, file_layer, flag_layer, merge, Layer};
use super::resolved::{Resolved, Source, Value};
use super::schema::{Entry, Schema};
use super::SettingsError;

/// What the process was asked to do with its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Run,
    /// `--print-config`: print every effective setting with its source, exit 0.
    PrintConfig,
    /// `--check-config`: validate, exit 0 when fine.
    CheckConfig,
}

/// Settings loaded for one process.
pub struct Loaded {
    pub resolved: Resolved,
    /// The whole command line, for the binary's own flags (`--once`, ...).
    pub matches: ArgMatches,
    pub mode: Mode,
}

/// The process environment, as the loader reads it.
pub fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

impl Schema {
    /// `base` (name, about and the binary's own flags) with `--config`, `--print-config`,
    /// `--check-config` and one flag per setting.
    pub fn command(&self, base: Command) -> Command {
        let config_env = self.env_var("config");
        let base = base
            .arg(
                Arg::new("config")
                    .long("config")
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format!(
                        "TOML file of settings: keys are the setting names (`data_dir = \"/data\"`), or tables whose names join with `_` [env: {config_env}]"
                    )),
            )
            .arg(
                Arg::new("print_config")
                    .long("print-config")
                    .action(ArgAction::SetTrue)
                    .help("Print every effective setting with its value and source (default, file, env, flag), then exit"),
            )
            .arg(
                Arg::new("check_config")
                    .long("check-config")
                    .action(ArgAction::SetTrue)
                    .conflicts_with("print_config")
                    .help("Validate the settings and exit: 0 when valid, else a message naming the setting and the rule"),
            );
        self.entries()
            .iter()
            .fold(base, |command, entry| command.arg(self.arg(entry)))
    }

    fn arg(&self, entry: &Entry) -> Arg {
        let setting = entry.setting;
        let mut help = format!("{} [default: {}]", setting.help(), setting.default_text());
        if let Some(range) = setting.range_text() {
            help.push_str(&format!(" [range: {range}]"));
        }
        help.push_str(&format!(" [env: {}]", self.env_var(entry.key())));
        entry.aliases.iter().fold(
            Arg::new(entry.key())
                .long(entry.key().replace('_', "-"))
                .value_name(setting.placeholder().to_string())
                .allow_negative_numbers(true)
                .help_heading(entry.group)
                .help(help),
            |arg, alias| arg.alias(alias.replace('_', "-")),
        )
    }

    /// Parses `args` (the program name first) against this schema and `base`, reading `env`
    /// for `<PREFIX>*` variables and the `--config` file.
    pub fn load<I, T>(
        &self,
        base: Command,
        args: I,
        env: &[(String, String)],
    ) -> Result<Loaded, SettingsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let matches = self.command(base).try_get_matches_from(&args)?;
        let text_args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let mut warnings = Vec::new();
        let config_env = self.env_var("config");
        let path = matches.get_one::<PathBuf>("config").cloned().or_else(|| {
            env.iter()
                .find(|(k, _)| *k == config_env)
                .map(|(_, v)| PathBuf::from(v))
        });
        let mut layers: Vec<Layer> = Vec::new();
        if let Some(path) = &path {
            layers.push(file_layer(self, path, &mut warnings)?);
        }
        layers.push(env_layer(self, env, &mut warnings));
        layers.push(flag_layer(self, &matches, &text_args, &mut warnings));
        let resolved = self.resolve(merge(layers), path, warnings)?;
        let mode = if matches.get_flag("print_config") {
            Mode::PrintConfig
        } else if matches.get_flag("check_config") {
            Mode::CheckConfig
        } else {
            Mode::Run
        };
        Ok(Loaded {
            resolved,
            matches,
            mode,
        })
    }

    /// Every setting's effective value: the merged layers' value parsed by its setting, or the
    /// declared default; then the cross-setting rules.
    fn resolve(
        &self,
        figment: figment::Figment,
        path: Option<PathBuf>,
        warnings: Vec<String>,
    ) -> Result<Resolved, SettingsError> {
        let mut values = Vec::with_capacity(self.entries().len());
        for entry in self.entries() {
            let key = entry.key();
            let setting = entry.setting;
            let given = figment.find_value(key).ok();
            let text = given.as_ref().and_then(|v| v.as_str());
            let source = figment
                .find_metadata(key)
                .and_then(|m| Source::from_name(&m.name))
                .unwrap_or(Source::Default);
            let parsed = match text {
                Some(text) => setting.parse(text).map_err(|rule| SettingsError::Invalid {
                    key: key.to_string(),
                    reason: format!("{rule}, {}", Layer::describe(source, path.as_deref())),
                })?,
                None => setting.default_parsed(),
            };
            values.push(Value {
                key,
                note: parsed.toml.is_none().then(|| setting.default_text()),
                parsed,
                source: if text.is_some() {
                    source
                } else {
                    Source::Default
                },
            });
        }
        let resolved = Resolved {
            program: self.program,
            values,
            warnings,
        };
        for rule in self.rules() {
            (rule.check)(&resolved).map_err(|reason| SettingsError::Invalid {
                key: rule.key.to_string(),
                reason,
            })?;
        }
        Ok(resolved)
    }
}
