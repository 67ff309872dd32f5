//! The quota window (Kafka's `quota.window.num` and `quota.window.size.seconds`): rates are
//! measured over this many samples of this length.

use storage::settings::{AnySetting, Setting, Unit};

pub static QUOTAS: &[&dyn AnySetting] = &[&QUOTA_WINDOW_NUM, &QUOTA_WINDOW_SIZE_SECONDS];

pub static QUOTA_WINDOW_NUM: Setting<usize> = Setting::new(
    "quota_window_num",
    11,
    Unit::Count,
    "Samples a client's byte rate and request time are measured over (Kafka's `quota.window.num`); a fresh client may send about this many windows' worth before it is throttled",
)
.at_least(1)
.at_most(1000);

pub static QUOTA_WINDOW_SIZE_SECONDS: Setting<u64> = Setting::new(
    "quota_window_size_seconds",
    1,
    Unit::Seconds,
    "Length of one quota sample, and the longest throttle one response gives (Kafka's `quota.window.size.seconds`)",
)
.at_least(1)
.at_most(3600);
