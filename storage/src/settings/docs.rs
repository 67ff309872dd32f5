//! The settings table of the docs, rendered from a schema so that it cannot drift from the
//! declarations (tests compare the README and `docs/configuration.md` with it).

use super::schema::Schema;

/// One row per setting, under a bold row per group.
pub fn markdown_table(schema: &Schema) -> String {
    let mut out = String::from(
        "| setting | flag, environment | default | valid | meaning |\n|---|---|---|---|---|\n",
    );
    let mut group = "";
    for entry in schema.entries() {
        if entry.group != group {
            group = entry.group;
            out.push_str(&format!("| **{group}** | | | | |\n"));
        }
        let setting = entry.setting;
        let mut names = format!("`{}`, `{}`", entry.flag(), schema.env_var(entry.key()));
        for alias in &entry.aliases {
            names.push_str(&format!(" (old: `{}`)", super::schema::flag_of(alias)));
        }
        out.push_str(&format!(
            "| `{}` | {names} | {} | {} | {} |\n",
            entry.key(),
            cell(&setting.default_text()),
            cell(&setting.range_text().unwrap_or_default()),
            cell(setting.help()),
        ));
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
