//! Broker-side schema validation, as Confluent Server's `confluent.{key,value}.schema.validation`
//! defines it: every key (or value) of a produced batch carries the Confluent wire format
//! (magic byte 0, a 4-byte schema id, for Protobuf the message indexes), the id is a live
//! version of the subject the topic's strategy names, and the payload decodes against that
//! schema. Null keys and values (tombstones) are not checked. Decoding runs on a blocking
//! thread, bounded by each format's depth and size limits.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::schema::Parsed;
use crate::{Registry, RegistryError};

/// How the subject of a schema is named (Confluent's `*NameStrategy` classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    TopicName,
    RecordName,
    TopicRecordName,
}

/// Which sides of a record are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    pub key: Option<Strategy>,
    pub value: Option<Strategy>,
}

/// A record's key and value, by its index in its batch.
#[derive(Debug, Clone)]
pub struct Payloads {
    pub index: i32,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

/// Why a record was refused, by its index in its batch.
pub type RecordError = (i32, String);

const MAGIC: u8 = 0;
const HEADER_BYTES: usize = 5;

/// The schema id of a payload in the wire format, and the bytes after it.
pub fn wire_format(payload: &[u8]) -> Option<(i32, &[u8])> {
    let [magic, a, b, c, d] = *payload.get(..HEADER_BYTES)? else {
        return None;
    };
    (magic == MAGIC).then(|| (i32::from_be_bytes([a, b, c, d]), &payload[HEADER_BYTES..]))
}

/// One side of one record to decode once its schema is known.
struct Pending {
    index: i32,
    side: &'static str,
    id: i32,
    payload: Bytes,
}

/// The records of `topic` that `rules` refuse, with Confluent-like reasons; empty when all
/// pass. `Err` when the registry could not be read (the produce should be retried).
pub async fn refused_records(
    registry: &Registry,
    topic: &str,
    rules: Rules,
    records: Vec<Payloads>,
) -> Result<Vec<RecordError>, RegistryError> {
    let mut errors = Vec::new();
    let mut pending = Vec::new();
    for record in records {
        let sides = [
            ("key", rules.key, record.key),
            ("value", rules.value, record.value),
        ];
        for (side, strategy, payload) in sides {
            let (Some(_), Some(payload)) = (strategy, payload) else {
                continue;
            };
            match wire_format(&payload) {
                Some((id, _)) => pending.push(Pending {
                    index: record.index,
                    side,
                    id,
                    payload,
                }),
                None => errors.push((
                    record.index,
                    format!("the record {side} is not in the Confluent wire format (magic byte 0 and a schema id)"),
                )),
            }
        }
    }
    let schemas = checked_schemas(registry, topic, rules, &pending, &mut errors).await?;
    let decoded = tokio::task::spawn_blocking(move || decode(&pending, &schemas))
        .await
        .map_err(|e| RegistryError::Store(format!("schema validation failed to run: {e}")))?;
    errors.extend(decoded);
    errors.sort_by_key(|(index, _)| *index);
    Ok(errors)
}

/// The parsed schema of every id in `pending` that is registered under its subject; the
/// others are refused into `errors`.
async fn checked_schemas(
    registry: &Registry,
    topic: &str,
    rules: Rules,
    pending: &[Pending],
    errors: &mut Vec<RecordError>,
) -> Result<HashMap<(i32, &'static str), Arc<Parsed>>, RegistryError> {
    let mut verdicts: HashMap<(i32, &'static str), Result<Arc<Parsed>, String>> = HashMap::new();
    for item in pending {
        let key = (item.id, item.side);
        let known = match verdicts.entry(key) {
            std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
            std::collections::hash_map::Entry::Vacant(vacant) => {
                let strategy = if item.side == "key" {
                    rules.key
                } else {
                    rules.value
                };
                let strategy = strategy.unwrap_or(Strategy::TopicName);
                vacant.insert(verdict(registry, topic, item.side, strategy, item.id).await?)
            }
        };
        if let Err(reason) = known {
            errors.push((item.index, reason.clone()));
        }
    }
    Ok(verdicts
        .into_iter()
        .filter_map(|(key, verdict)| Some((key, verdict.ok()?)))
        .collect())
}

async fn verdict(
    registry: &Registry,
    topic: &str,
    side: &str,
    strategy: Strategy,
    id: i32,
) -> Result<Result<Arc<Parsed>, String>, RegistryError> {
    let parsed = match registry.parsed(id).await {
        Ok(parsed) => parsed,
        Err(RegistryError::SchemaNotFound(_)) => {
            return Ok(Err(format!(
                "the record {side} has schema id {id}, which is not registered"
            )))
        }
        Err(RegistryError::InvalidSchema(reason)) => {
            return Ok(Err(format!("schema id {id} does not parse: {reason}")))
        }
        Err(error) => return Err(error),
    };
    let subject = match strategy {
        Strategy::TopicName => format!("{topic}-{side}"),
        Strategy::RecordName => parsed.record_name().unwrap_or_default(),
        Strategy::TopicRecordName => {
            format!("{topic}-{}", parsed.record_name().unwrap_or_default())
        }
    };
    if registry.subject_has_id(&subject, id).await? {
        Ok(Ok(parsed))
    } else {
        Ok(Err(format!(
            "the record {side} has schema id {id}, which is not a version of subject {subject}"
        )))
    }
}

fn decode(
    pending: &[Pending],
    schemas: &HashMap<(i32, &'static str), Arc<Parsed>>,
) -> Vec<RecordError> {
    pending
        .iter()
        .filter_map(|item| {
            let parsed = schemas.get(&(item.id, item.side))?;
            let body = item.payload.get(HEADER_BYTES..).unwrap_or_default();
            let error = parsed.validate(body).err()?;
            Some((
                item.index,
                format!(
                    "the record {} does not decode with schema id {}: {error}",
                    item.side, item.id
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_format_is_a_zero_byte_then_a_big_endian_id() {
        assert_eq!(
            wire_format(b"\0\0\0\x01\x07rest"),
            Some((263, &b"rest"[..]))
        );
        assert_eq!(wire_format(b"\0\0\0\x01"), None);
        assert_eq!(wire_format(b"\x01\0\0\0\x01"), None);
        assert_eq!(wire_format(b""), None);
    }
}
