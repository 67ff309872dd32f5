//! One kind of group record in the MetaStore, `<prefix><encoded group id>` -> JSON, read and
//! written with versions so that two coordinators never overwrite each other. Classic and
//! consumer groups differ only in the prefix and the record type.

use std::sync::Arc;

use bytes::Bytes;
use metastore::{Comparison, Expect, MetaStore, PutOptions};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::keys::{decode_segment, encode_segment};
use super::store::StoreError;

const SCAN_PAGE: usize = 1000;

#[derive(Clone)]
pub struct GroupRecords {
    meta: Arc<dyn MetaStore>,
    /// Which kind of group ("classic", "consumer"), for logs.
    kind: &'static str,
    prefix: &'static str,
    /// Upper bound of the depth-1 keys below `prefix` (see `groups::keys`).
    end: &'static str,
}

impl GroupRecords {
    pub fn new(
        meta: Arc<dyn MetaStore>,
        kind: &'static str,
        prefix: &'static str,
        end: &'static str,
    ) -> GroupRecords {
        GroupRecords {
            meta,
            kind,
            prefix,
            end,
        }
    }

    pub fn kind(&self) -> &'static str {
        self.kind
    }

    pub fn key(&self, group_id: &str) -> String {
        format!("{}{}", self.prefix, encode_segment(group_id))
    }

    fn group_id_of(&self, key: &str) -> Result<String, StoreError> {
        key.strip_prefix(self.prefix)
            .and_then(decode_segment)
            .ok_or_else(|| StoreError::Corrupt {
                key: key.to_string(),
                reason: "not a group key".into(),
            })
    }

    /// Every stored group with the version its record was read at.
    pub async fn load_all<T: DeserializeOwned>(&self) -> Result<Vec<(String, T, i64)>, StoreError> {
        let mut groups = Vec::new();
        let mut start = self.prefix.to_string();
        loop {
            let page = self
                .meta
                .range_scan(&start, self.end, None, SCAN_PAGE)
                .await?;
            let full = page.len() == SCAN_PAGE;
            for record in &page {
                groups.push((
                    self.group_id_of(&record.key)?,
                    decode(&record.key, &record.value)?,
                    record.version.version_id,
                ));
            }
            match page.last() {
                // Encoded keys never contain U+0001, so this is the smallest key after `last`.
                Some(last) if full => start = format!("{}\u{1}", last.key),
                _ => break,
            }
        }
        Ok(groups)
    }

    pub async fn load<T: DeserializeOwned>(
        &self,
        group_id: &str,
    ) -> Result<Option<(T, i64)>, StoreError> {
        let key = self.key(group_id);
        match self.meta.get(&key, Comparison::Equal, None).await? {
            Some(record) => Ok(Some((
                decode(&key, &record.value)?,
                record.version.version_id,
            ))),
            None => Ok(None),
        }
    }

    /// Writes the record if the stored one is still at `expected_version` (absent when
    /// `None`). Returns the new version.
    pub async fn save<T: Serialize>(
        &self,
        group_id: &str,
        record: &T,
        expected_version: Option<i64>,
    ) -> Result<i64, StoreError> {
        let key = self.key(group_id);
        let value = serde_json::to_vec(record).map_err(|e| StoreError::Corrupt {
            key: key.clone(),
            reason: e.to_string(),
        })?;
        let options = PutOptions {
            expect: expected_version.map_or(Expect::NotExists, Expect::Version),
            ..Default::default()
        };
        let put = self.meta.put(&key, Bytes::from(value), options).await?;
        Ok(put.version.version_id)
    }

    /// Up to `limit` groups with their record versions, in key order, starting after the key
    /// `after` (from the start when `None`); unreadable records are skipped. The last key read
    /// comes back as the cursor of the next page, `None` when the range is exhausted.
    pub async fn scan_page<T: DeserializeOwned>(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<(String, T, i64)>, Option<String>), StoreError> {
        let start = match after {
            // Encoded keys never contain U+0001, so this is the smallest key after `after`.
            Some(after) => format!("{after}\u{1}"),
            None => self.prefix.to_string(),
        };
        let limit = limit.max(1);
        let page = self.meta.range_scan(&start, self.end, None, limit).await?;
        let mut groups = Vec::with_capacity(page.len());
        for record in &page {
            // One unreadable record must not stop the scan over all the others.
            let decoded = self
                .group_id_of(&record.key)
                .and_then(|id| Ok((id, decode(&record.key, &record.value)?)));
            match decoded {
                Ok((group_id, group)) => groups.push((group_id, group, record.version.version_id)),
                Err(error) => tracing::warn!(kind = self.kind, %error, "group record skipped"),
            }
        }
        let cursor = match page.last() {
            Some(last) if page.len() == limit => Some(last.key.clone()),
            _ => None,
        };
        Ok((groups, cursor))
    }
}

pub fn decode<T: DeserializeOwned>(key: &str, value: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(value).map_err(|e| StoreError::Corrupt {
        key: key.to_string(),
        reason: e.to_string(),
    })
}
