//! The registry's records in the MetaStore, all under one partition key so that every range
//! read and conditional write of the registry goes to one shard:
//!
//! ```text
//! schema-registry/schemas/{id:010}                      StoredSchema (immutable once written)
//! schema-registry/fingerprints/{sha256}                 the id of a canonical schema
//! schema-registry/versions/{subject}/{version:010}      SubjectVersion
//! schema-registry/refs/{subject}/{version:010}/{id:010} (empty) schema `id` references it
//! schema-registry/config, .../config/{subject}          Config
//! schema-registry/mode, .../mode/{subject}              ModeRecord
//! ```
//!
//! Subjects are percent-encoded in keys (everything but ASCII letters, digits, `.`, `_`, `-`),
//! so a key's depth never depends on a subject and `!`/`~` bound every encoded subject.

use std::sync::Arc;

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};

use crate::error::{RegistryError, RegistryResult};
use crate::schema::{Reference, SchemaType};

pub const PARTITION_KEY: &str = "schema-registry";
const ROOT: &str = "schema-registry";
/// Below every percent-encoded subject, and above every one.
const SUBJECT_MIN: &str = "!";
const SUBJECT_MAX: &str = "~";
/// Records read per range scan, and the most any listing reads in all.
const PAGE: usize = 1000;
pub const LISTED_MAX: usize = 1_000_000;

const KEY_SET: &AsciiSet = &NON_ALPHANUMERIC.remove(b'.').remove(b'_').remove(b'-');

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSchema {
    pub schema_type: SchemaType,
    /// The canonical text.
    pub schema: String,
    #[serde(default)]
    pub references: Vec<Reference>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectVersion {
    pub id: i32,
    #[serde(default)]
    pub deleted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub compatibility: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeRecord {
    pub mode: String,
}

/// A version of a subject as stored, with the store's version of the record for conditional
/// updates.
#[derive(Debug, Clone)]
pub struct VersionEntry {
    pub subject: String,
    pub version: i32,
    pub record: SubjectVersion,
    pub version_id: i64,
}

pub fn escape(subject: &str) -> String {
    utf8_percent_encode(subject, KEY_SET).to_string()
}

fn unescape(text: &str) -> Option<String> {
    percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

fn schema_key(id: i32) -> String {
    format!("{ROOT}/schemas/{id:010}")
}

fn version_key(subject: &str, version: i32) -> String {
    format!("{ROOT}/versions/{}/{version:010}", escape(subject))
}

fn refs_prefix(subject: &str, version: i32) -> String {
    format!("{ROOT}/refs/{}/{version:010}", escape(subject))
}

fn scoped(kind: &str, subject: Option<&str>) -> String {
    match subject {
        Some(subject) => format!("{ROOT}/{kind}/{}", escape(subject)),
        None => format!("{ROOT}/{kind}"),
    }
}

/// The registry's view of the MetaStore.
#[derive(Clone)]
pub struct Store {
    meta: Arc<dyn MetaStore>,
}

fn put_options(expect: Expect) -> PutOptions {
    PutOptions {
        expect,
        ..PutOptions::partition(PARTITION_KEY)
    }
}

impl Store {
    pub fn new(meta: Arc<dyn MetaStore>) -> Store {
        Store { meta }
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> RegistryResult<Option<(T, i64)>> {
        let record = self
            .meta
            .get(key, Comparison::Equal, Some(PARTITION_KEY))
            .await?;
        match record {
            Some(r) => Ok(Some((
                serde_json::from_slice(&r.value)?,
                r.version.version_id,
            ))),
            None => Ok(None),
        }
    }

    /// Writes `value` at `key` if the key is as `expect` says; `Ok(false)` when it is not.
    async fn put_json<T: Serialize>(
        &self,
        key: &str,
        value: &T,
        expect: Expect,
    ) -> RegistryResult<bool> {
        let bytes = Bytes::from(serde_json::to_vec(value)?);
        match self.meta.put(key, bytes, put_options(expect)).await {
            Ok(_) => Ok(true),
            Err(MetaError::UnexpectedVersion) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Every record in `[min, max)`, page by page, at most [`LISTED_MAX`].
    async fn scan(&self, min: &str, max: &str) -> RegistryResult<Vec<metastore::Record>> {
        let mut out: Vec<metastore::Record> = Vec::new();
        let mut from = min.to_string();
        loop {
            let page = self
                .meta
                .range_scan(&from, max, Some(PARTITION_KEY), PAGE)
                .await?;
            let full = page.len() == PAGE;
            if let Some(last) = page.last() {
                // The next page starts just above the last key read.
                from = format!("{}\u{1}", last.key);
            }
            out.extend(page);
            if !full {
                return Ok(out);
            }
            if out.len() >= LISTED_MAX {
                return Err(RegistryError::Store(format!(
                    "more than {LISTED_MAX} registry records to list"
                )));
            }
        }
    }

    pub async fn schema(&self, id: i32) -> RegistryResult<Option<StoredSchema>> {
        Ok(self.get_json(&schema_key(id)).await?.map(|(s, _)| s))
    }

    /// The highest id ever given (ids are never deleted), 0 when none.
    pub async fn highest_id(&self) -> RegistryResult<i32> {
        let ceiling = format!("{ROOT}/schemas/9999999999");
        let record = self
            .meta
            .get(&ceiling, Comparison::Floor, Some(PARTITION_KEY))
            .await?;
        let prefix = format!("{ROOT}/schemas/");
        Ok(record
            .and_then(|r| r.key.strip_prefix(&prefix)?.parse::<i32>().ok())
            .unwrap_or(0))
    }

    /// Writes schema `id` unless it exists; `Ok(false)` when it does.
    pub async fn create_schema(&self, id: i32, schema: &StoredSchema) -> RegistryResult<bool> {
        self.put_json(&schema_key(id), schema, Expect::NotExists)
            .await
    }

    pub async fn fingerprint(&self, fingerprint: &str) -> RegistryResult<Option<i32>> {
        let key = format!("{ROOT}/fingerprints/{fingerprint}");
        Ok(self.get_json(&key).await?.map(|(id, _)| id))
    }

    /// Records `id` as the id of `fingerprint` unless one is; `Ok(false)` when one is.
    pub async fn create_fingerprint(&self, fingerprint: &str, id: i32) -> RegistryResult<bool> {
        let key = format!("{ROOT}/fingerprints/{fingerprint}");
        self.put_json(&key, &id, Expect::NotExists).await
    }

    /// The versions of `subject`, lowest first, soft-deleted ones included.
    pub async fn versions(&self, subject: &str) -> RegistryResult<Vec<VersionEntry>> {
        let prefix = format!("{ROOT}/versions/{}/", escape(subject));
        let records = self.scan(&prefix, &format!("{prefix}/")).await?;
        Ok(records
            .into_iter()
            .filter_map(|r| version_entry(&r))
            .collect())
    }

    /// Every version of every subject, by subject then version.
    pub async fn all_versions(&self) -> RegistryResult<Vec<VersionEntry>> {
        let min = format!("{ROOT}/versions/{SUBJECT_MIN}/");
        let max = format!("{ROOT}/versions/{SUBJECT_MAX}/");
        let records = self.scan(&min, &max).await?;
        Ok(records
            .into_iter()
            .filter_map(|r| version_entry(&r))
            .collect())
    }

    /// Writes a new version; `Ok(false)` when the version exists.
    pub async fn create_version(
        &self,
        subject: &str,
        version: i32,
        record: &SubjectVersion,
    ) -> RegistryResult<bool> {
        self.put_json(&version_key(subject, version), record, Expect::NotExists)
            .await
    }

    /// Rewrites a version read as `entry`; `Ok(false)` when it changed since.
    pub async fn update_version(
        &self,
        entry: &VersionEntry,
        record: &SubjectVersion,
    ) -> RegistryResult<bool> {
        let key = version_key(&entry.subject, entry.version);
        self.put_json(&key, record, Expect::Version(entry.version_id))
            .await
    }

    pub async fn delete_version(&self, subject: &str, version: i32) -> RegistryResult<()> {
        let key = version_key(subject, version);
        match self
            .meta
            .delete(&key, Expect::Any, Some(PARTITION_KEY))
            .await
        {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Notes that schema `id` references `subject` version `version`.
    pub async fn add_reference(&self, subject: &str, version: i32, id: i32) -> RegistryResult<()> {
        let key = format!("{}/{id:010}", refs_prefix(subject, version));
        self.meta
            .put(&key, Bytes::new(), put_options(Expect::Any))
            .await?;
        Ok(())
    }

    /// The ids of schemas that reference `subject` version `version`.
    pub async fn referenced_by(&self, subject: &str, version: i32) -> RegistryResult<Vec<i32>> {
        let prefix = format!("{}/", refs_prefix(subject, version));
        let keys = self
            .meta
            .list(&prefix, &format!("{prefix}/"), Some(PARTITION_KEY))
            .await?;
        Ok(keys
            .iter()
            .filter_map(|k| k.strip_prefix(&prefix)?.parse().ok())
            .collect())
    }

    pub async fn config(&self, subject: Option<&str>) -> RegistryResult<Option<Config>> {
        Ok(self
            .get_json(&scoped("config", subject))
            .await?
            .map(|(c, _)| c))
    }

    pub async fn set_config(&self, subject: Option<&str>, config: &Config) -> RegistryResult<()> {
        self.put_json(&scoped("config", subject), config, Expect::Any)
            .await
            .map(drop)
    }

    pub async fn mode(&self, subject: Option<&str>) -> RegistryResult<Option<ModeRecord>> {
        Ok(self
            .get_json(&scoped("mode", subject))
            .await?
            .map(|(m, _)| m))
    }

    pub async fn set_mode(&self, subject: Option<&str>, mode: &ModeRecord) -> RegistryResult<()> {
        self.put_json(&scoped("mode", subject), mode, Expect::Any)
            .await
            .map(drop)
    }

    /// Deletes the subject's (or the global) config or mode record (`kind` "config"/"mode").
    pub async fn delete_scoped(&self, kind: &str, subject: Option<&str>) -> RegistryResult<()> {
        let key = scoped(kind, subject);
        match self
            .meta
            .delete(&key, Expect::Any, Some(PARTITION_KEY))
            .await
        {
            Ok(()) | Err(MetaError::KeyNotFound) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }
}

fn version_entry(record: &metastore::Record) -> Option<VersionEntry> {
    let rest = record.key.strip_prefix(&format!("{ROOT}/versions/"))?;
    let (subject, version) = rest.split_once('/')?;
    Some(VersionEntry {
        subject: unescape(subject)?,
        version: version.parse().ok()?,
        record: serde_json::from_slice(&record.value).ok()?,
        version_id: record.version.version_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_subjects_hold_no_separator_and_sort_between_the_bounds() {
        for subject in ["orders-value", "a/b", "é %x", "!", "~", ":.-_"] {
            let escaped = escape(subject);
            assert!(!escaped.contains('/'), "{escaped}");
            assert!(escaped.as_str() > SUBJECT_MIN && escaped.as_str() < SUBJECT_MAX);
            assert_eq!(unescape(&escaped).as_deref(), Some(subject));
        }
    }
}
