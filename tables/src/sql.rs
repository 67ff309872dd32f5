//! The tables as an embedded SQL catalog: a SQLite file in the exact layout of Iceberg's JDBC
//! catalog and pyiceberg's `SqlCatalog`, so an engine that reads a SQL catalog
//! (`SqlCatalog("x", uri="sqlite:////…/catalog.db")`) lists and loads the topics' tables with no
//! server running. The MetaStore record of each table stays the source of truth; this file is
//! only a mirror of it, rewritten after commits, and anything written to it otherwise is
//! overwritten by the next [`SqlCatalog::mirror`].
//!
//! The file is in WAL mode and every connection waits on a busy timeout, so a reader holding
//! the file open and this writer coexist.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::TableError;

/// How long a statement waits for a lock another process (a reading engine) holds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The `iceberg_type` of a table row in the v1 layout (views are `VIEW`).
const TABLE_TYPE: &str = "TABLE";

/// The v1 layout, as pyiceberg 0.12 and Iceberg's JDBC catalog create it.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS iceberg_tables (
    catalog_name VARCHAR(255) NOT NULL,
    table_namespace VARCHAR(255) NOT NULL,
    table_name VARCHAR(255) NOT NULL,
    metadata_location VARCHAR(1000),
    previous_metadata_location VARCHAR(1000),
    iceberg_type VARCHAR(5),
    PRIMARY KEY (catalog_name, table_namespace, table_name)
);
CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
    catalog_name VARCHAR(255) NOT NULL,
    namespace VARCHAR(255) NOT NULL,
    property_key VARCHAR(255) NOT NULL,
    property_value VARCHAR(1000) NOT NULL,
    PRIMARY KEY (catalog_name, namespace, property_key)
);
";

/// One namespace of one catalog in a SQL catalog file.
#[derive(Clone, Debug)]
pub struct SqlCatalog {
    path: PathBuf,
    catalog_name: String,
    namespace: String,
}

/// A row of `iceberg_tables` as the mirror compares it.
struct Row {
    metadata_location: Option<String>,
    iceberg_type: Option<String>,
}

impl SqlCatalog {
    /// Opens (creating the file and tables if absent) the catalog at `path`; `catalog_name` is
    /// pyiceberg's catalog name column value, `namespace` the one namespace (e.g. "kafka"). The
    /// namespace exists from here on, even while it holds no table.
    pub fn open(
        path: &Path,
        catalog_name: &str,
        namespace: &str,
    ) -> Result<SqlCatalog, TableError> {
        let catalog = SqlCatalog {
            path: path.to_path_buf(),
            catalog_name: catalog_name.to_string(),
            namespace: namespace.to_string(),
        };
        let mut conn = catalog.connect()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        catalog.prepare(&tx)?;
        tx.commit()?;
        Ok(catalog)
    }

    /// The catalog file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the catalog hold exactly `tables` (topic name -> absolute metadata location):
    /// upserts each row (setting `previous_metadata_location` to the row's old
    /// `metadata_location` when it changes) and deletes rows of this catalog and namespace not in
    /// `tables`. One transaction. A topic listed twice takes its last location.
    pub fn mirror(&self, tables: &[(String, String)]) -> Result<(), TableError> {
        let wanted: BTreeMap<&str, &str> = tables
            .iter()
            .map(|(topic, location)| (topic.as_str(), location.as_str()))
            .collect();

        let mut conn = self.connect()?;
        // Immediate: take the write lock before reading, so the read-then-write cannot fail
        // half way on a lock upgrade.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let typed = self.prepare(&tx)?;

        let mut existing: HashMap<String, Row> = HashMap::new();
        {
            let select = if typed {
                "SELECT table_name, metadata_location, iceberg_type FROM iceberg_tables \
                 WHERE catalog_name = ?1 AND table_namespace = ?2"
            } else {
                "SELECT table_name, metadata_location, NULL FROM iceberg_tables \
                 WHERE catalog_name = ?1 AND table_namespace = ?2"
            };
            let mut stmt = tx.prepare(select)?;
            let rows = stmt.query_map(params![self.catalog_name, self.namespace], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    Row {
                        metadata_location: row.get(1)?,
                        iceberg_type: row.get(2)?,
                    },
                ))
            })?;
            for row in rows {
                let (name, row) = row?;
                existing.insert(name, row);
            }
        }

        let (mut inserted, mut updated, mut deleted) = (0usize, 0usize, 0usize);
        for (&topic, &location) in &wanted {
            match existing.get(topic) {
                None => {
                    if typed {
                        tx.execute(
                            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, \
                             metadata_location, previous_metadata_location, iceberg_type) \
                             VALUES (?1, ?2, ?3, ?4, NULL, ?5)",
                            params![self.catalog_name, self.namespace, topic, location, TABLE_TYPE],
                        )?;
                    } else {
                        tx.execute(
                            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, \
                             metadata_location, previous_metadata_location) \
                             VALUES (?1, ?2, ?3, ?4, NULL)",
                            params![self.catalog_name, self.namespace, topic, location],
                        )?;
                    }
                    inserted += 1;
                }
                Some(row) => {
                    let same_location = row.metadata_location.as_deref() == Some(location);
                    // Untyped rows are tables to every reader of the layout.
                    let is_table = row
                        .iceberg_type
                        .as_deref()
                        .is_none_or(|kind| kind == TABLE_TYPE);
                    if same_location && is_table {
                        continue;
                    }
                    if same_location {
                        // A row of another type (a view) under a topic's name: it becomes the
                        // table, its history unchanged.
                        tx.execute(
                            "UPDATE iceberg_tables SET iceberg_type = ?4 \
                             WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3",
                            params![self.catalog_name, self.namespace, topic, TABLE_TYPE],
                        )?;
                    } else if typed {
                        tx.execute(
                            "UPDATE iceberg_tables SET metadata_location = ?4, \
                             previous_metadata_location = ?5, iceberg_type = ?6 \
                             WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3",
                            params![
                                self.catalog_name,
                                self.namespace,
                                topic,
                                location,
                                row.metadata_location,
                                TABLE_TYPE
                            ],
                        )?;
                    } else {
                        tx.execute(
                            "UPDATE iceberg_tables SET metadata_location = ?4, \
                             previous_metadata_location = ?5 \
                             WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3",
                            params![
                                self.catalog_name,
                                self.namespace,
                                topic,
                                location,
                                row.metadata_location
                            ],
                        )?;
                    }
                    updated += 1;
                }
            }
        }
        for name in existing.keys() {
            if !wanted.contains_key(name.as_str()) {
                tx.execute(
                    "DELETE FROM iceberg_tables \
                     WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3",
                    params![self.catalog_name, self.namespace, name],
                )?;
                deleted += 1;
            }
        }
        tx.commit()?;

        if inserted + updated + deleted > 0 {
            tracing::debug!(
                path = %self.path.display(),
                catalog = self.catalog_name,
                namespace = self.namespace,
                inserted,
                updated,
                deleted,
                "sql catalog mirrored"
            );
        }
        Ok(())
    }

    /// A connection with the pragmas a writer sharing the file with readers needs.
    fn connect(&self) -> Result<Connection, TableError> {
        let conn = Connection::open(&self.path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(
                path = %self.path.display(),
                mode,
                "sql catalog journal mode is not wal, readers may block the mirror"
            );
        }
        // A mirror rebuilt from the MetaStore after a crash: durability of the last commit to
        // this file does not matter, only its consistency.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(conn)
    }

    /// Creates the tables if absent and the namespace's `exists` property (pyiceberg's own
    /// marker of a namespace with no table) if absent. Returns whether `iceberg_tables` has the
    /// v1 `iceberg_type` column: a file a v0 catalog created keeps its layout, as pyiceberg
    /// leaves it unless told to migrate.
    fn prepare(&self, conn: &Connection) -> Result<bool, TableError> {
        conn.execute_batch(SCHEMA)?;
        conn.execute(
            "INSERT OR IGNORE INTO iceberg_namespace_properties \
             (catalog_name, namespace, property_key, property_value) VALUES (?1, ?2, 'exists', 'true')",
            params![self.catalog_name, self.namespace],
        )?;
        let typed = conn
            .query_row(
                "SELECT 1 FROM pragma_table_info('iceberg_tables') WHERE name = 'iceberg_type'",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        Ok(typed)
    }
}
