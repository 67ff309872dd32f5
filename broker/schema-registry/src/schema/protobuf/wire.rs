//! Payload validation: the message indexes a record starts with, then a bounded walker of the
//! wire format.

use prost_reflect::{Kind, MessageDescriptor};

use super::INDEXES_MAX;
use crate::schema::DEPTH_MAX;

const VARINT: u64 = 0;
const I64: u64 = 1;
const LEN: u64 = 2;
const START_GROUP: u64 = 3;
const END_GROUP: u64 = 4;
const I32: u64 = 5;

/// What the walker needs of a field or an extension.
struct Shape {
    kind: Kind,
    list: bool,
    group: bool,
}

fn field_shape(message: &MessageDescriptor, number: u32) -> Option<Shape> {
    if let Some(field) = message.get_field(number) {
        let (list, group) = (field.is_list(), field.is_group());
        return Some(Shape {
            kind: field.kind(),
            list,
            group,
        });
    }
    let extension = message.get_extension(number)?;
    let (list, group) = (extension.is_list(), extension.is_group());
    Some(Shape {
        kind: extension.kind(),
        list,
        group,
    })
}

fn wire_type_of(kind: &Kind) -> u64 {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => I64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => I32,
        Kind::String | Kind::Bytes | Kind::Message(_) => LEN,
        _ => VARINT,
    }
}

/// Reads the wire format as prost-reflect's `DynamicMessage::decode` does, refusing what it
/// refuses, without building the message (a record of small repeated values would take tens of
/// times its size in memory) and with nesting bounded by `DEPTH_MAX` rather than prost's 100.
pub(super) struct Walker<'a> {
    pub(super) input: &'a [u8],
}

impl<'a> Walker<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&byte, rest) = self.input.split_first()?;
        self.input = rest;
        Some(byte)
    }

    /// Confluent's message indexes: Kafka's 32-bit zigzag varints, a count of 0 meaning [0].
    pub(super) fn message_indexes(&mut self) -> Result<Vec<usize>, String> {
        let count = self.zigzag()?;
        if count == 0 {
            return Ok(vec![0]);
        }
        let count = usize::try_from(count)
            .ok()
            .filter(|&count| count <= INDEXES_MAX)
            .ok_or_else(|| format!("{count} message indexes, expected 1 to {INDEXES_MAX}"))?;
        (0..count)
            .map(|_| {
                let index = self.zigzag()?;
                usize::try_from(index).map_err(|_| format!("negative message index {index}"))
            })
            .collect()
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let mut value = 0u32;
        for shift in [0, 7, 14, 21, 28] {
            let byte = self.byte().ok_or("truncated message indexes")?;
            value |= u32::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(i64::from(value >> 1) ^ -i64::from(value & 1));
            }
        }
        Err("a message index longer than 5 bytes".to_owned())
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte().ok_or("truncated varint")?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return match shift {
                    63 if byte > 1 => Err("varint overflows 64 bits".to_owned()),
                    _ => Ok(value),
                };
            }
        }
        Err("varint longer than 10 bytes".to_owned())
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], String> {
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= self.input.len())
            .ok_or_else(|| format!("{len} bytes wanted, {} left", self.input.len()))?;
        let (taken, rest) = self.input.split_at(len);
        self.input = rest;
        Ok(taken)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], String> {
        let len = self.varint()?;
        self.take(len)
    }

    fn key(&mut self) -> Result<(u32, u64), String> {
        let key = self.varint()?;
        let number = u32::try_from(key)
            .map(|key| key >> 3)
            .map_err(|_| format!("invalid field key {key}"))?;
        let wire = key & 7;
        if wire > I32 {
            return Err(format!("invalid wire type {wire}"));
        }
        if number == 0 {
            return Err("field number 0".to_owned());
        }
        Ok((number, wire))
    }

    /// A message's fields up to the end of the input, or up to the end of group `group`.
    pub(super) fn message(
        &mut self,
        message: Option<&MessageDescriptor>,
        group: Option<u32>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > DEPTH_MAX {
            return Err(format!("messages nested more than {DEPTH_MAX} deep"));
        }
        loop {
            if self.input.is_empty() {
                return match group {
                    None => Ok(()),
                    Some(number) => Err(format!("group {number} not closed")),
                };
            }
            let (number, wire) = self.key()?;
            if wire == END_GROUP {
                return match group {
                    Some(open) if open == number => Ok(()),
                    _ => Err(format!("unexpected end of group {number}")),
                };
            }
            match message.and_then(|m| field_shape(m, number)) {
                Some(shape) => self.field(&shape, number, wire, depth)?,
                None if wire == START_GROUP => self.message(None, Some(number), depth + 1)?,
                None => self.scalar(wire)?,
            }
        }
    }

    fn field(&mut self, shape: &Shape, number: u32, wire: u64, depth: usize) -> Result<(), String> {
        let expected = if shape.group {
            START_GROUP
        } else {
            wire_type_of(&shape.kind)
        };
        if shape.list && wire == LEN && matches!(expected, VARINT | I32 | I64) {
            let mut packed = Walker {
                input: self.len_delimited()?,
            };
            while !packed.input.is_empty() {
                packed.scalar(expected)?;
            }
            return Ok(());
        }
        if wire != expected {
            return Err(format!(
                "field {number} has wire type {wire}, expected {expected}"
            ));
        }
        match &shape.kind {
            Kind::Message(m) if wire == START_GROUP => {
                self.message(Some(m), Some(number), depth + 1)
            }
            Kind::Message(m) => {
                let input = self.len_delimited()?;
                Walker { input }.message(Some(m), None, depth + 1)
            }
            Kind::String => match std::str::from_utf8(self.len_delimited()?) {
                Ok(_) => Ok(()),
                Err(_) => Err(format!("field {number} is not valid UTF-8")),
            },
            _ => self.scalar(wire),
        }
    }

    fn scalar(&mut self, wire: u64) -> Result<(), String> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.take(8).map(drop),
            I32 => self.take(4).map(drop),
            _ => self.len_delimited().map(drop),
        }
    }
}
