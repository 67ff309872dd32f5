//! A broker's membership record: `cluster/brokers/<id>`, ephemeral, JSON.

use serde::{Deserialize, Serialize};

pub const BROKERS_PREFIX: &str = "cluster/brokers/";
/// Exclusive end of the prefix in Oxia's slash-aware key order.
pub const BROKERS_END: &str = "cluster/brokers//";

/// One live broker as clients should reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub broker_id: i32,
    /// The first listener's advertised address, which is all that brokers predating named
    /// listeners read.
    pub host: String,
    pub port: i32,
    /// Rack or availability zone; clients announcing the same zone prefer this broker.
    pub rack: Option<String>,
    /// Every listener's advertised address. Records written before listeners had names have
    /// none: their one address then serves the clients of every listener.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<AdvertisedListener>,
}

/// What the clients of one listener are told to connect to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvertisedListener {
    pub name: String,
    pub host: String,
    pub port: i32,
}

impl Member {
    /// The address of this broker for the clients of listener `name`; `None` when this broker
    /// has no such listener (Kafka then leaves it out of the answer).
    pub fn endpoint(&self, name: &str) -> Option<(&str, i32)> {
        if self.listeners.is_empty() {
            return Some((&self.host, self.port));
        }
        self.listeners
            .iter()
            .find(|l| l.name == name)
            .map(|l| (l.host.as_str(), l.port))
    }
}

pub fn member_key(broker_id: i32) -> String {
    format!("{BROKERS_PREFIX}{broker_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listener(name: &str, host: &str, port: i32) -> AdvertisedListener {
        AdvertisedListener {
            name: name.into(),
            host: host.into(),
            port,
        }
    }

    #[test]
    fn member_record_round_trips_through_json() {
        let member = Member {
            broker_id: 3,
            host: "broker-3".into(),
            port: 9094,
            rack: Some("zone-a".into()),
            listeners: vec![
                listener("PLAINTEXT", "broker-3", 9094),
                listener("SSL", "broker-3.example", 9095),
            ],
        };
        let json = serde_json::to_vec(&member).unwrap();
        assert_eq!(serde_json::from_slice::<Member>(&json).unwrap(), member);
        assert_eq!(member_key(3), "cluster/brokers/3");
        assert_eq!(member.endpoint("SSL"), Some(("broker-3.example", 9095)));
        assert_eq!(member.endpoint("EXTERNAL"), None);
    }

    #[test]
    fn a_record_without_listeners_serves_every_listener_with_its_address() {
        let old = r#"{"broker_id":1,"host":"b1","port":9092,"rack":null}"#;
        let member: Member = serde_json::from_str(old).unwrap();
        assert_eq!(member.endpoint("SSL"), Some(("b1", 9092)));
        assert_eq!(member.endpoint("PLAINTEXT"), Some(("b1", 9092)));
    }
}
