//! ApiVersions: the table from `protocol::versions` and, from v3, the feature flags of
//! `protocol::features` in the tagged fields Kafka 4.1 sends. `zk_migration_ready` stays at its
//! default so the encoder omits it, as Kafka does: librdkafka 2.0.2 mis-parses tagged fields
//! written at their defaults.

use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::ResponseError;

/// `sasl_listener`: the request came through a SASL listener, which also lists the SASL APIs.
pub fn handle(
    version: i16,
    request: &ApiVersionsRequest,
    sasl_listener: bool,
) -> ApiVersionsResponse {
    let response = ApiVersionsResponse::default()
        .with_api_keys(protocol::versions::api_versions_table_on(sasl_listener))
        .with_supported_features(protocol::features::supported_features(version))
        .with_finalized_features_epoch(protocol::features::FINALIZED_FEATURES_EPOCH)
        .with_finalized_features(protocol::features::finalized_features());
    if version >= 3
        && !(valid_software_field(&request.client_software_name)
            && valid_software_field(&request.client_software_version))
    {
        return response.with_error_code(ResponseError::InvalidRequest.code());
    }
    response
}

/// Kafka's rule for client software name/version: `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn valid_software_field(value: &str) -> bool {
    let bytes = value.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_fields_follow_kafka_rules() {
        assert!(valid_software_field("librdkafka"));
        assert!(valid_software_field("2.0.2"));
        assert!(valid_software_field("apache-kafka-java"));
        assert!(!valid_software_field(""));
        assert!(!valid_software_field("-x"));
        assert!(!valid_software_field("a b"));
    }
}
