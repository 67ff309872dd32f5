//! The layers a value can come from, as `figment` providers: the TOML file, the environment and
//! the command line. `figment` merges them (later layers win) and remembers which provider gave
//! each value, which is what `--print-config` reports as the source.

use std::path::{Path, PathBuf};

use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};

use super::resolved::Source;
use super::schema::Schema;
use super::SettingsError;

/// The values one layer gives, by canonical key, as text: every layer's values are parsed by
/// the setting's own parser, so `--x 5`, `BROKER_X=5` and `x = 5` mean the same.
pub struct Layer {
    pub source: Source,
    pub path: Option<PathBuf>,
    pub values: Dict,
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        let metadata = Metadata::named(self.source.name());
        match &self.path {
            Some(path) => metadata.source(figment::Source::File(path.clone())),
            None => metadata,
        }
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.values.clone()))
    }
}

impl Layer {
    fn new(source: Source) -> Layer {
        Layer {
            source,
            path: None,
            values: Dict::new(),
        }
    }

    /// Where a value of this layer was written, for error messages.
    pub fn describe(source: Source, path: Option<&Path>) -> String {
        match (source, path) {
            (Source::File, Some(path)) => format!("in {}", path.display()),
            (Source::Env, _) => "in the environment".into(),
            (Source::Flag, _) => "on the command line".into(),
            _ => "as the default".into(),
        }
    }
}

/// Layers in precedence order, lowest first.
pub fn merge(layers: Vec<Layer>) -> Figment {
    layers.into_iter().fold(Figment::new(), Figment::merge)
}

/// Inserts a value under its canonical key; an alias never overrides the canonical name given
/// in the same layer.
fn insert(layer: &mut Layer, key: &str, text: String, alias: bool) {
    if alias && layer.values.contains_key(key) {
        return;
    }
    layer.values.insert(key.to_string(), Value::from(text));
}

/// The TOML file: flat `data_dir = "..."` keys, or tables whose names join with `_`
/// (`[compaction] workers = 4` is `compaction_workers`). Unknown keys are errors.
pub fn file_layer(
    schema: &Schema,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Layer, SettingsError> {
    let file_error = |reason: String| SettingsError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| file_error(e.to_string()))?;
    let mut flat = Vec::new();
    flatten("", table, &mut flat).map_err(file_error)?;
    let mut layer = Layer::new(Source::File);
    layer.path = Some(path.to_path_buf());
    // Aliases first, so that the canonical name wins when both are written.
    flat.sort_by_key(|(key, _)| schema.find(key).is_none_or(|(_, alias)| !alias));
    for (key, text) in flat {
        let Some((entry, alias)) = schema.find(&key) else {
            return Err(SettingsError::UnknownKey {
                path: path.to_path_buf(),
                key,
            });
        };
        if alias {
            warnings.push(deprecated(
                &key,
                entry.key(),
                &format!("key in {}", path.display()),
            ));
        }
        insert(&mut layer, entry.key(), text, alias);
    }
    Ok(layer)
}

fn flatten(
    prefix: &str,
    table: toml::Table,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    for (key, value) in table {
        let key = format!("{prefix}{key}");
        let text = match value {
            toml::Value::Table(inner) => {
                flatten(&format!("{key}_"), inner, out)?;
                continue;
            }
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => return Err(format!("key {key:?}: expected a single value, got {other}")),
        };
        out.push((key, text));
    }
    Ok(())
}

/// The environment: `<PREFIX><KEY>` for every setting and alias. Other variables with the
/// prefix are not settings (`BROKER_ARGS` of the test harness, say) and are ignored.
pub fn env_layer(schema: &Schema, env: &[(String, String)], warnings: &mut Vec<String>) -> Layer {
    let mut layer = Layer::new(Source::Env);
    for pass_aliases in [true, false] {
        for (name, text) in env {
            let Some(rest) = name.strip_prefix(schema.env_prefix) else {
                continue;
            };
            let key = rest.to_lowercase();
            let Some((entry, alias)) = schema.find(&key) else {
                continue;
            };
            if alias != pass_aliases {
                continue;
            }
            if alias {
                warnings.push(deprecated(&key, entry.key(), &format!("variable {name}")));
            }
            insert(&mut layer, entry.key(), text.clone(), alias);
        }
    }
    layer
}

/// The command line: the settings clap saw given, under their canonical ids.
pub fn flag_layer(
    schema: &Schema,
    matches: &clap::ArgMatches,
    args: &[String],
    warnings: &mut Vec<String>,
) -> Layer {
    let mut layer = Layer::new(Source::Flag);
    for entry in schema.entries() {
        let key = entry.key();
        if matches.value_source(key) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        if let Some(text) = matches.get_one::<String>(key) {
            insert(&mut layer, key, text.clone(), false);
        }
        for alias in &entry.aliases {
            let flag = super::schema::flag_of(alias);
            let used = args
                .iter()
                .any(|a| *a == flag || a.starts_with(&format!("{flag}=")));
            if used {
                warnings.push(deprecated(alias, key, &format!("flag {flag}")));
            }
        }
    }
    layer
}

fn deprecated(old: &str, key: &str, what: &str) -> String {
    format!(
        "{what}: `{old}` is a deprecated name of setting {key} (flag {}); the old name will be removed",
        super::schema::flag_of(key)
    )
}
