//! Kafka's transaction coordinator settings, under their Kafka names.

use storage::settings::{AnySetting, Setting, Unit};

pub static TRANSACTIONS: &[&dyn AnySetting] = &[
    &TRANSACTION_MAX_TIMEOUT_MS,
    &TRANSACTIONAL_ID_EXPIRATION_MS,
    &TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS,
];

pub static TRANSACTION_MAX_TIMEOUT_MS: Setting<i32> = Setting::new(
    "transaction_max_timeout_ms",
    900_000,
    Unit::Ms,
    "Largest `transaction.timeout.ms` a producer may ask for (Kafka's `transaction.max.timeout.ms`); InitProducerId above it is refused INVALID_TRANSACTION_TIMEOUT",
)
.at_least(1);

pub static TRANSACTIONAL_ID_EXPIRATION_MS: Setting<u64> = Setting::new(
    "transactional_id_expiration_ms",
    604_800_000,
    Unit::Ms,
    "How long a transactional id with no transaction open is kept after its last use (Kafka's `transactional.id.expiration.ms`)",
)
.at_least(1);

pub static TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS: Setting<u64> = Setting::new(
    "transaction_abort_timed_out_transaction_cleanup_interval_ms",
    10_000,
    Unit::Ms,
    "How often the coordinator aborts transactions past their timeout and forgets expired transactional ids (Kafka's setting of that name)",
)
.at_least(10);
