//! The SQL catalog mirror against a real SQLite file, read back with plain SQL the way
//! pyiceberg's `SqlCatalog` and Iceberg's JDBC catalog read it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use rusqlite::{params, Connection};
use tables::sql::SqlCatalog;

const CATALOG: &str = "broker";
const NAMESPACE: &str = "kafka";

/// One row of `iceberg_tables`: name, metadata location, previous metadata location, type.
type TableRow = (String, Option<String>, Option<String>, Option<String>);

fn location(topic: &str, version: u32) -> String {
    format!("file:///data/objects/iceberg/{topic}/metadata/{version:05}-x.metadata.json")
}

fn tables(entries: &[(&str, u32)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|&(topic, version)| (topic.to_string(), location(topic, version)))
        .collect()
}

fn rows(path: &Path, catalog: &str, namespace: &str) -> Vec<TableRow> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT table_name, metadata_location, previous_metadata_location, iceberg_type \
             FROM iceberg_tables WHERE catalog_name = ?1 AND table_namespace = ?2 \
             ORDER BY table_name",
        )
        .unwrap();
    stmt.query_map(params![catalog, namespace], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

fn namespace_properties(path: &Path, catalog: &str) -> Vec<(String, String, String)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT namespace, property_key, property_value FROM iceberg_namespace_properties \
             WHERE catalog_name = ?1 ORDER BY namespace, property_key",
        )
        .unwrap();
    stmt.query_map(params![catalog], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

fn table(topic: &str, version: u32, previous: Option<u32>) -> TableRow {
    (
        topic.to_string(),
        Some(location(topic, version)),
        previous.map(|v| location(topic, v)),
        Some("TABLE".to_string()),
    )
}

#[test]
fn opening_creates_the_file_with_an_existing_empty_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");

    let catalog = SqlCatalog::open(&path, CATALOG, NAMESPACE).unwrap();

    assert_eq!(catalog.path(), path);
    assert!(rows(&path, CATALOG, NAMESPACE).is_empty());
    assert_eq!(
        namespace_properties(&path, CATALOG),
        vec![(
            NAMESPACE.to_string(),
            "exists".to_string(),
            "true".to_string()
        )]
    );
    let conn = Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_second_mirror_moves_changed_tables_keeps_unchanged_ones_and_removes_dropped_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    let catalog = SqlCatalog::open(&path, CATALOG, NAMESPACE).unwrap();

    catalog
        .mirror(&tables(&[("orders", 1), ("payments", 1), ("users", 1)]))
        .unwrap();
    assert_eq!(
        rows(&path, CATALOG, NAMESPACE),
        vec![
            table("orders", 1, None),
            table("payments", 1, None),
            table("users", 1, None)
        ]
    );

    catalog
        .mirror(&tables(&[("orders", 2), ("users", 1), ("clicks", 1)]))
        .unwrap();
    assert_eq!(
        rows(&path, CATALOG, NAMESPACE),
        vec![
            table("clicks", 1, None),
            table("orders", 2, Some(1)),
            table("users", 1, None)
        ]
    );

    // A third commit moves the previous location on again; an unchanged mirror changes nothing.
    catalog
        .mirror(&tables(&[("orders", 3), ("users", 1), ("clicks", 1)]))
        .unwrap();
    catalog
        .mirror(&tables(&[("orders", 3), ("users", 1), ("clicks", 1)]))
        .unwrap();
    assert_eq!(
        rows(&path, CATALOG, NAMESPACE),
        vec![
            table("clicks", 1, None),
            table("orders", 3, Some(2)),
            table("users", 1, None)
        ]
    );
}

#[test]
fn mirroring_no_tables_empties_the_namespace_but_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    let catalog = SqlCatalog::open(&path, CATALOG, NAMESPACE).unwrap();
    catalog.mirror(&tables(&[("orders", 1)])).unwrap();

    catalog.mirror(&[]).unwrap();

    assert!(rows(&path, CATALOG, NAMESPACE).is_empty());
    assert_eq!(namespace_properties(&path, CATALOG).len(), 1);
}

#[test]
fn rows_of_another_catalog_or_namespace_are_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    let catalog = SqlCatalog::open(&path, CATALOG, NAMESPACE).unwrap();
    {
        let conn = Connection::open(&path).unwrap();
        for (catalog_name, namespace) in [("other", NAMESPACE), (CATALOG, "analytics")] {
            conn.execute(
                "INSERT INTO iceberg_tables VALUES (?1, ?2, 'orders', 'file:///elsewhere', NULL, 'TABLE')",
                params![catalog_name, namespace],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO iceberg_namespace_properties VALUES ('other', ?1, 'exists', 'true')",
            params![NAMESPACE],
        )
        .unwrap();
    }

    catalog.mirror(&tables(&[("orders", 1)])).unwrap();
    catalog.mirror(&tables(&[("users", 1)])).unwrap();

    assert_eq!(
        rows(&path, CATALOG, NAMESPACE),
        vec![table("users", 1, None)]
    );
    let untouched = (
        "orders".to_string(),
        Some("file:///elsewhere".to_string()),
        None,
        Some("TABLE".to_string()),
    );
    assert_eq!(rows(&path, "other", NAMESPACE), vec![untouched.clone()]);
    assert_eq!(rows(&path, CATALOG, "analytics"), vec![untouched]);
    assert_eq!(namespace_properties(&path, "other").len(), 1);
}

#[test]
fn reopening_an_existing_catalog_keeps_its_rows_and_properties() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    SqlCatalog::open(&path, CATALOG, NAMESPACE)
        .unwrap()
        .mirror(&tables(&[("orders", 1)]))
        .unwrap();
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE iceberg_namespace_properties SET property_value = 'yes' \
             WHERE catalog_name = ?1 AND namespace = ?2",
            params![CATALOG, NAMESPACE],
        )
        .unwrap();

    let catalog = SqlCatalog::open(&path, CATALOG, NAMESPACE).unwrap();
    catalog.mirror(&tables(&[("orders", 2)])).unwrap();

    assert_eq!(
        rows(&path, CATALOG, NAMESPACE),
        vec![table("orders", 2, Some(1))]
    );
    assert_eq!(
        namespace_properties(&path, CATALOG),
        vec![(
            NAMESPACE.to_string(),
            "exists".to_string(),
            "yes".to_string()
        )]
    );
}

#[test]
fn a_catalog_file_in_the_v0_layout_is_mirrored_without_an_iceberg_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE iceberg_tables (
                catalog_name VARCHAR(255) NOT NULL,
                table_namespace VARCHAR(255) NOT NULL,
                table_name VARCHAR(255) NOT NULL,
                metadata_location VARCHAR(1000),
                previous_metadata_location VARCHAR(1000),
                PRIMARY KEY (catalog_name, table_namespace, table_name)
            );",
        )
        .unwrap();

    let catalog = SqlCatalog::open(&path, CATALOG, NAMESPACE).unwrap();
    catalog.mirror(&tables(&[("orders", 1)])).unwrap();
    catalog.mirror(&tables(&[("orders", 2)])).unwrap();

    let conn = Connection::open(&path).unwrap();
    let got: (String, String, String) = conn
        .query_row(
            "SELECT table_name, metadata_location, previous_metadata_location FROM iceberg_tables",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        got,
        (
            "orders".to_string(),
            location("orders", 2),
            location("orders", 1)
        )
    );
}

#[test]
fn a_view_under_a_topics_name_becomes_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    let catalog = SqlCatalog::open(&path, CATALOG, NAMESPACE).unwrap();
    Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO iceberg_tables VALUES (?1, ?2, 'orders', 'file:///view.json', NULL, 'VIEW')",
            params![CATALOG, NAMESPACE],
        )
        .unwrap();

    catalog.mirror(&tables(&[("orders", 1)])).unwrap();

    assert_eq!(
        rows(&path, CATALOG, NAMESPACE),
        vec![(
            "orders".to_string(),
            Some(location("orders", 1)),
            Some("file:///view.json".to_string()),
            Some("TABLE".to_string())
        )]
    );
}
