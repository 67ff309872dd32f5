//! The `broker` binary's library: configuration, network server, request handlers, topics.

pub mod app;
pub mod catalog;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod connection;
pub mod context;
pub mod fetch_session;
pub mod groups;
pub mod handlers;
pub mod health;
pub mod key_escape;
pub mod listener;
pub mod metrics;
pub mod produce_hint;
pub mod producers;
pub mod quotas;
pub mod security;
pub mod sequencer;
pub mod server;
pub mod slots;
pub mod stats;
pub mod storage_errors;
pub mod tls;
pub mod topic_names;
pub mod transactions;
