//! Time for group timers: the engine's one clock trait, so tests move it by hand.

pub use storage::clock::{Clock, ManualClock, SystemClock};
