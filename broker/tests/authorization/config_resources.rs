//! ListConfigResources: DESCRIBE_CONFIGS on the cluster, as Kafka asks it.

use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::expect_kind;
use crate::harness::*;

#[tokio::test]
async fn list_config_resources_needs_describe_configs_on_the_cluster() {
    let a = Authorized::start().await;
    a.topic("listed", 1).await;
    let request = ListConfigResourcesRequest::default().with_resource_types(vec![2]);
    let refused = expect_kind!(
        a.call(ALICE, ApiKey::ListConfigResources, 1, request.clone())
            .await,
        ListConfigResources
    );
    assert_eq!(
        refused.error_code,
        code(ResponseError::ClusterAuthorizationFailed)
    );
    assert!(refused.config_resources.is_empty());
    a.allow(
        ALICE,
        CLUSTER,
        "kafka-cluster",
        LITERAL,
        op::DESCRIBE_CONFIGS,
    )
    .await;
    let listed = expect_kind!(
        a.call(ALICE, ApiKey::ListConfigResources, 1, request).await,
        ListConfigResources
    );
    let names: Vec<String> = listed
        .config_resources
        .iter()
        .map(|r| r.resource_name.to_string())
        .collect();
    assert_eq!((listed.error_code, names), (0, vec!["listed".to_string()]));
}
