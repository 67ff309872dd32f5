//! ListTransactions (v0-2): the transactional ids this broker coordinates (clients ask every
//! broker), filtered by state, producer id, running time (v1) and id pattern (v2); ids the
//! principal may not DESCRIBE are left out, as in Kafka. Unknown state names are returned in
//! `unknown_state_filters`; an invalid pattern is INVALID_REQUEST.

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use metastore::MetaStore;

use super::RequestContext;
use crate::context::Broker;
use crate::security::authorizer::operations;
use crate::transactions::records::{decode, Status, TxnState};
use crate::transactions::{coordinator, keys};

const STATES: [Status; 6] = [
    Status::Empty,
    Status::Ongoing,
    Status::PrepareCommit,
    Status::PrepareAbort,
    Status::CompleteCommit,
    Status::CompleteAbort,
];
/// Transactional ids one answer lists at most.
const LISTED_MAX: usize = 100_000;

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    request: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let response = ListTransactionsResponse::default();
    let (states, unknown): (Vec<_>, Vec<_>) = request
        .state_filters
        .iter()
        .partition(|name| STATES.iter().any(|s| s.kafka_name() == name.as_str()));
    let pattern = match request
        .transactional_id_pattern
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        None => None,
        Some(p) => match regex::Regex::new(&format!("^(?:{p})$")) {
            Ok(re) => Some(re),
            Err(_) => return response.with_error_code(ResponseError::InvalidRequest.code()),
        },
    };
    let now = i64::try_from(storage::clock::system_now_ms()).unwrap_or(i64::MAX);
    let selected = |id: &str, state: &TxnState| {
        let name = state.status.kafka_name();
        let started = i64::try_from(state.start_ms).unwrap_or(0);
        (states.is_empty() || states.iter().any(|s| s.as_str() == name))
            && (request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .iter()
                    .any(|p| p.0 == state.producer_id))
            && (request.duration_filter < 0
                || (state.status != Status::Empty && now - started > request.duration_filter))
            && pattern.as_ref().is_none_or(|re| re.is_match(id))
    };
    let listed = match all_states(broker.transactions.meta().as_ref()).await {
        Ok(listed) => listed,
        Err(error) => return response.with_error_code(error.code()),
    };
    let transactions = listed
        .into_iter()
        .filter(|(id, state)| coordinator::is_coordinator(broker, id) && selected(id, state))
        .filter(|(id, _)| {
            broker
                .authorizer
                .allows_quietly(context, &operations::LIST_TRANSACTIONS, id)
        })
        .map(|(id, state)| {
            TransactionState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(id)))
                .with_producer_id(ProducerId(state.producer_id))
                .with_transaction_state(StrBytes::from_static_str(state.status.kafka_name()))
        })
        .collect();
    response
        .with_unknown_state_filters(unknown.into_iter().cloned().collect())
        .with_transaction_states(transactions)
}

async fn all_states(meta: &dyn MetaStore) -> Result<Vec<(String, TxnState)>, ResponseError> {
    let (mut start, end) = keys::state_range();
    let mut out = Vec::new();
    loop {
        let page = meta
            .range_scan(&start, &end, None, 256)
            .await
            .map_err(|error| {
                tracing::warn!(%error, "transaction states not readable");
                ResponseError::CoordinatorNotAvailable
            })?;
        for record in &page {
            if let (Some(id), Ok(state)) = (
                keys::transactional_id_of(&record.key),
                decode::<TxnState>(&record.value),
            ) {
                out.push((id, state));
            }
        }
        match page.last() {
            Some(last) if page.len() == 256 && out.len() < LISTED_MAX => {
                start = format!("{}\u{1}", last.key)
            }
            _ => return Ok(out),
        }
    }
}
