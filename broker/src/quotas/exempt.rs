//! The APIs a request quota neither counts nor throttles. Kafka exempts its inter-broker
//! (cluster-action) APIs, so brokers are never throttled by one another, and never sees the
//! requests its authenticator answers (ApiVersions before authentication, SaslHandshake,
//! SaslAuthenticate): a client must be able to connect and authenticate whatever its quota.
//! ApiVersions is exempt here at any point (Kafka counts one sent after authentication): it
//! is one cheap request per connection, and this broker serves it on the same path either way.

use kafka_protocol::messages::ApiKey;

/// Whether requests of `api_key` are exempt from request quotas.
pub fn exempt(api_key: ApiKey) -> bool {
    matches!(
        api_key,
        ApiKey::ApiVersions
            | ApiKey::SaslHandshake
            | ApiKey::SaslAuthenticate
            // Kafka's cluster-action APIs: none served here, listed so a handler added for one
            // inherits Kafka's exemption.
            | ApiKey::WriteTxnMarkers
            | ApiKey::Vote
            | ApiKey::BeginQuorumEpoch
            | ApiKey::EndQuorumEpoch
            | ApiKey::AlterPartition
            | ApiKey::Envelope
            | ApiKey::FetchSnapshot
            | ApiKey::BrokerRegistration
            | ApiKey::BrokerHeartbeat
            | ApiKey::AllocateProducerIds
            | ApiKey::ControllerRegistration
            | ApiKey::AssignReplicasToDirs
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connecting_authenticating_and_inter_broker_apis_are_exempt() {
        for api_key in [
            ApiKey::ApiVersions,
            ApiKey::SaslHandshake,
            ApiKey::SaslAuthenticate,
            ApiKey::WriteTxnMarkers,
            ApiKey::BrokerHeartbeat,
        ] {
            assert!(exempt(api_key), "{api_key:?}");
        }
    }

    #[test]
    fn client_apis_heartbeats_included_are_counted() {
        // KIP-124 throttles group heartbeats too: exempting them would leave a loophole.
        for api_key in [
            ApiKey::Produce,
            ApiKey::Fetch,
            ApiKey::Metadata,
            ApiKey::Heartbeat,
            ApiKey::JoinGroup,
            ApiKey::DescribeClientQuotas,
        ] {
            assert!(!exempt(api_key), "{api_key:?}");
        }
    }
}
