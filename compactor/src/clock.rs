//! The compactor reads time through the engine's one clock trait (tests drive backoff, grace
//! periods and append times by hand).

pub use storage::clock::{Clock, ManualClock, SystemClock};
