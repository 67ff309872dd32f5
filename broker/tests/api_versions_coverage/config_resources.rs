//! ListConfigResources (v0: ListClientMetricsResources): no client-metrics resources are
//! stored; v1 lists topics and brokers, by type or all of them, and refuses a type Kafka does
//! not list.

use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::ctx::Ctx;
use crate::expect_kind;

pub async fn list_config_resources(ctx: &mut Ctx, version: i16) {
    let topic = format!("configured-v{version}");
    ctx.create_topic(&topic, 1).await;
    let all = list(ctx, version, vec![]).await;
    assert_eq!(all.error_code, 0);
    let listed: Vec<(i8, String)> = all
        .config_resources
        .iter()
        .map(|r| (r.resource_type, r.resource_name.to_string()))
        .collect();
    if version == 0 {
        assert!(listed.is_empty(), "{listed:?}");
        return;
    }
    assert!(listed.contains(&(2, topic.clone())), "{listed:?}");
    assert!(listed.iter().any(|(t, _)| *t == 4), "{listed:?}");
    let brokers = list(ctx, version, vec![4]).await;
    assert!(brokers
        .config_resources
        .iter()
        .all(|r| r.resource_type == 4));
    assert!(!brokers.config_resources.is_empty());
    let groups = list(ctx, version, vec![32, 16]).await;
    assert_eq!((groups.error_code, groups.config_resources.len()), (0, 0));
    let unknown = list(ctx, version, vec![3]).await;
    assert_eq!(unknown.error_code, ResponseError::UnsupportedVersion.code());
}

async fn list(ctx: &mut Ctx, version: i16, types: Vec<i8>) -> ListConfigResourcesResponse {
    let request = ListConfigResourcesRequest::default().with_resource_types(types);
    expect_kind!(
        ctx.call(ApiKey::ListConfigResources, version, request)
            .await,
        ListConfigResources
    )
}
