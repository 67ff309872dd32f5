//! The Iceberg REST catalog's listener (`docs/iceberg.md`); the namespace is a compaction
//! setting (`iceberg_namespace`), since the compactor's SQL catalog names it too.

use storage::settings::{AnySetting, Setting, Unit};

pub static ICEBERG: &[&dyn AnySetting] = &[&ICEBERG_CATALOG_LISTEN, &ICEBERG_CATALOG_BASIC_AUTH];

pub static ICEBERG_CATALOG_LISTEN: Setting<String> = Setting::new(
    "iceberg_catalog_listen",
    "127.0.0.1:8181",
    Unit::None,
    "`ip:port` of the Iceberg REST catalog serving the tables of topics with `iceberg.enable` (read-only; tables live in the MetaStore, so every broker of a cluster serves the same ones), or `none`; at its default a taken port is logged and skipped, an address given explicitly must bind",
)
.checked(storage::config::settings::check_listen);

pub static ICEBERG_CATALOG_BASIC_AUTH: Setting<bool> = Setting::new(
    "iceberg_catalog_basic_auth",
    false,
    Unit::None,
    "The Iceberg REST catalog asks for HTTP Basic authentication as a broker user; with an authorizer, a table is listed to users who may DESCRIBE its topic and loaded by those who may READ it",
);
