//! Authorization through the broker's request dispatch, API by API: each request is refused
//! with Kafka's error code without the ACL it needs and served with it.
//!
//! Requests go to `broker::handlers::handle` with a session whose principal the test chooses,
//! as the TLS and SASL listeners will set it (today every connection is `User:ANONYMOUS`);
//! the broker is otherwise whole (stores, catalog, groups, authorizer). `User:admin` is a super
//! user and creates the ACLs; `User:alice` is the client under test; no ACL means deny.
//! `acls.rs` covers the ACL APIs over the network and two brokers sharing one store.

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod acls;
mod admin;
mod config_resources;
mod data;
mod groups;
mod harness;
mod topic_partitions;
