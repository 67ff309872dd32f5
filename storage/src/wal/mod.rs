//! The write-ahead log in object storage: the object format and the writer that packs appends
//! from many streams into objects.

pub(crate) mod budget;
pub mod format;
pub mod parts;
pub mod stages;
pub(crate) mod writer;
