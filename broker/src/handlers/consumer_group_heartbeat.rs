//! ConsumerGroupHeartbeat (KIP-848): joins, keeps alive, reconciles and leaves a member of a
//! consumer-protocol group. The assignment is computed here, on the coordinator. As in Kafka
//! 4.1: READ on the group comes first (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every
//! subscribed topic name (one refused: TOPIC_AUTHORIZATION_FAILED), and a regex subscription
//! matches only the topics the heartbeat's principal may describe.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, RequestContext};
use crate::catalog::Catalog;
use crate::context::Broker;
use crate::groups::consumer::assignor::Assignor;
use crate::groups::consumer::group::{Heartbeat, Refusal, JOIN_EPOCH};
use crate::groups::consumer::topic_regex::{RegexCache, TopicNames};
use crate::groups::consumer::{self, TopicMeta, TopicRegexError, TopicSource};
use crate::security::authorizer::{operations, Authorizer};

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let group_id = request.group_id.0.to_string();
    if let Err((error, message)) = authorize(broker, context, &request) {
        return ConsumerGroupHeartbeatResponse::default()
            .with_error_code(error.code())
            .with_error_message(message.map(str_bytes));
    }
    let placement = broker.membership.placement();
    if placement.group_coordinator(&group_id).broker_id != broker.node.broker_id {
        return refused(
            ResponseError::NotCoordinator,
            "not the coordinator of this group",
        );
    }
    let heartbeat = match decode(broker, request) {
        Ok(heartbeat) => heartbeat,
        Err(refusal) => return refused(refusal.error, &refusal.message),
    };
    if heartbeat.member_epoch == JOIN_EPOCH {
        match broker.groups.classic_group_in_use(&group_id).await {
            Ok(false) => {}
            Ok(true) => {
                return refused(
                    ResponseError::GroupIdNotFound,
                    &format!(
                        "group {group_id} is a classic group with members, not a consumer group"
                    ),
                )
            }
            Err(error) => return refused(error, "group unavailable"),
        }
    }
    let heartbeat = Heartbeat {
        client_id: context.client_id.clone(),
        ..heartbeat
    };
    let coordinator = broker.groups.consumer();
    let topics = CatalogTopics {
        catalog: &broker.catalog,
        regexes: coordinator.regexes(),
        names: OnceLock::new(),
        authorizer: &broker.authorizer,
        context,
    };
    let interval_ms = coordinator.config().heartbeat_interval_ms;
    match coordinator.heartbeat(&group_id, heartbeat, &topics).await {
        Ok(answer) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(str_bytes(&answer.member_id)))
            .with_member_epoch(answer.member_epoch)
            .with_heartbeat_interval_ms(interval_ms)
            .with_assignment(answer.assignment.map(|a| {
                Assignment::default().with_topic_partitions(
                    a.into_iter()
                        .map(|(topic_id, partitions)| {
                            TopicPartitions::default()
                                .with_topic_id(topic_id)
                                .with_partitions(partitions.into_iter().collect())
                        })
                        .collect(),
                )
            })),
        Err(refusal) => refused(refusal.error, &refusal.message),
    }
}

/// READ on the group, DESCRIBE on each subscribed name; `Err(code, Kafka's message if any)`.
fn authorize(
    broker: &Broker,
    context: &RequestContext,
    request: &ConsumerGroupHeartbeatRequest,
) -> Result<(), (ResponseError, Option<&'static str>)> {
    let authorizer = &broker.authorizer;
    if !authorizer.allows(
        context,
        &operations::CONSUMER_GROUP_HEARTBEAT,
        &request.group_id.0,
    ) {
        return Err((
            ResponseError::GroupAuthorizationFailed,
            Some("Group authorization failed."),
        ));
    }
    let names = request
        .subscribed_topic_names
        .as_deref()
        .unwrap_or_default();
    let mut distinct: Vec<&str> = names.iter().map(|n| n.0.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let all_allowed = distinct
        .into_iter()
        .all(|name| authorizer.allows(context, &operations::CONSUMER_GROUP_HEARTBEAT_TOPICS, name));
    if !all_allowed {
        return Err((ResponseError::TopicAuthorizationFailed, None));
    }
    Ok(())
}

/// The catalog as one heartbeat sees it. Topic names are listed only if a member of the group
/// subscribes by regex, and then once; a regex runs over them only when the names changed.
/// What a regex matches is then narrowed to the topics this heartbeat's principal may
/// describe (Kafka resolves a group's regexes with the rights of the member whose heartbeat
/// asked, too).
struct CatalogTopics<'a> {
    catalog: &'a Catalog,
    regexes: &'a RegexCache,
    names: OnceLock<TopicNames>,
    authorizer: &'a Authorizer,
    context: &'a RequestContext,
}

impl TopicSource for CatalogTopics<'_> {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.catalog.get(name).map(|t| TopicMeta {
            id: t.record.id,
            name: t.name.clone(),
            partitions: t.record.partitions,
        })
    }

    fn matching(&self, pattern: &str) -> Result<Arc<BTreeSet<String>>, TopicRegexError> {
        let matched = self
            .regexes
            .matching(pattern, self.catalog.names_generation(), || {
                self.names.get_or_init(|| {
                    let (generation, names) = self.catalog.names();
                    TopicNames::new(generation, names)
                })
            })?;
        if !self.authorizer.enabled() {
            return Ok(matched);
        }
        let rule = &operations::CONSUMER_GROUP_HEARTBEAT_TOPICS;
        Ok(Arc::new(
            matched
                .iter()
                .filter(|topic| self.authorizer.allows_quietly(self.context, rule, topic))
                .cloned()
                .collect(),
        ))
    }
}

/// Checks the request's shape and turns it into the state machine's input.
fn decode(broker: &Broker, request: ConsumerGroupHeartbeatRequest) -> Result<Heartbeat, Refusal> {
    let invalid = |message: &str| Refusal {
        error: ResponseError::InvalidRequest,
        message: message.to_string(),
    };
    if request.group_id.0.is_empty() {
        return Err(Refusal {
            error: ResponseError::InvalidGroupId,
            message: "group id is empty".into(),
        });
    }
    if let Some(name) = &request.server_assignor {
        if Assignor::parse(name).is_none() {
            return Err(Refusal {
                error: ResponseError::UnsupportedAssignor,
                message: format!("assignor {name} is not supported; use uniform or range"),
            });
        }
    }
    let config = broker.groups.consumer().config();
    if let Some(names) = &request.subscribed_topic_names {
        if names.len() > config.subscribed_topics_max {
            return Err(invalid("too many subscribed topics"));
        }
    }
    let mut member_id = request.member_id.to_string();
    if request.member_epoch == JOIN_EPOCH {
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return Err(invalid(
                "a joining member must send its subscribed topic names or regex",
            ));
        }
        if member_id.is_empty() {
            // v0 clients leave the id to the coordinator; v1 clients bring their own.
            member_id = uuid::Uuid::new_v4().to_string();
        }
    } else if member_id.is_empty() {
        return Err(Refusal {
            error: ResponseError::UnknownMemberId,
            message: "member id is empty".into(),
        });
    }
    let owned = request.topic_partitions.map(|topics| {
        let mut owned = consumer::Assignment::new();
        for topic in topics {
            for partition in topic.partitions {
                consumer::insert(&mut owned, topic.topic_id, partition);
            }
        }
        owned
    });
    Ok(Heartbeat {
        member_id,
        member_epoch: request.member_epoch,
        instance_id: request.instance_id.map(|s| s.to_string()),
        rack_id: request.rack_id.map(|s| s.to_string()),
        client_id: String::new(),
        client_host: String::new(),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed_topic_names: request
            .subscribed_topic_names
            .map(|names| names.into_iter().map(|n| n.0.to_string()).collect()),
        subscribed_topic_regex: request.subscribed_topic_regex.map(|r| r.to_string()),
        server_assignor: request.server_assignor.map(|s| s.to_string()),
        owned,
    })
}

fn refused(error: ResponseError, message: &str) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default()
        .with_error_code(error.code())
        .with_error_message(Some(str_bytes(message)))
}
