//! A broker's membership record: `cluster/brokers/<id>`, ephemeral, JSON.

use serde::{Deserialize, Serialize};

pub const BROKERS_PREFIX: &str = "cluster/brokers/";
/// Exclusive end of the prefix in Oxia's slash-aware key order.
pub const BROKERS_END: &str = "cluster/brokers//";

/// One live broker as clients should reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub broker_id: i32,
    pub host: String,
    pub port: i32,
    /// Rack or availability zone; clients announcing the same zone prefer this broker.
    pub rack: Option<String>,
}

pub fn member_key(broker_id: i32) -> String {
    format!("{BROKERS_PREFIX}{broker_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_record_round_trips_through_json() {
        let member = Member {
            broker_id: 3,
            host: "broker-3".into(),
            port: 9094,
            rack: Some("zone-a".into()),
        };
        let json = serde_json::to_vec(&member).unwrap();
        assert_eq!(serde_json::from_slice::<Member>(&json).unwrap(), member);
        assert_eq!(member_key(3), "cluster/brokers/3");
    }
}
