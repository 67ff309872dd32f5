//! Several stateless brokers over one MetaStore and one object store.
//!
//! - [`member`]: what a broker registers about itself, and where;
//! - [`membership`]: registration (ephemeral record) and the live-broker view;
//! - [`placement`]: partition leaders and group coordinators by rendezvous hashing, with zone
//!   preference;
//! - [`coordinator_guard`]: group requests for a group this broker does not coordinate are
//!   refused with `NOT_COORDINATOR`;
//! - [`produce_guard`]: Produce to a partition this broker does not lead is refused with
//!   `NOT_LEADER_OR_FOLLOWER`, so each partition has one writer at a time.

pub mod coordinator_guard;
pub mod member;
pub mod membership;
pub mod placement;
pub mod produce_guard;

pub use member::{AdvertisedListener, Member};
pub use membership::Membership;
pub use placement::{client_zone, Placement};
