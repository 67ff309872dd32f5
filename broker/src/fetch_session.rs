//! Incremental fetch sessions (KIP-227). A consumer names its partitions once; later requests
//! carry only what changed, and responses only partitions with news (records, an error, or a
//! moved high watermark or log start offset).
//!
//! Epochs: `session_id = 0, epoch = -1` is a sessionless full fetch; `epoch = 0` opens a new
//! session (closing `session_id` if given); `epoch > 0` continues session `session_id`, and must
//! equal the epoch the broker expects; `epoch = -1` with a session id closes it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use kafka_protocol::ResponseError;

use crate::security::Principal;

pub const INITIAL_EPOCH: i32 = 0;
pub const FINAL_EPOCH: i32 = -1;

/// One partition a fetch asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchTarget {
    pub topic: String,
    pub partition: i32,
    pub fetch_offset: i64,
    pub max_bytes: i32,
}

/// What a partition's last response in the session told the client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

/// Who may use a session: the principal and listener of the request that opened it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub principal: Principal,
    pub listener: String,
}

struct Session {
    owner: Owner,
    next_epoch: i32,
    /// Partitions in the order the client first named them.
    targets: Vec<FetchTarget>,
    reported: HashMap<(String, i32), Reported>,
    last_used: Instant,
}

/// What a request resolves to.
pub struct Plan {
    /// Session id for the response (0 when sessionless).
    pub session_id: i32,
    /// Whether only changed partitions go in the response.
    pub incremental: bool,
    pub targets: Vec<FetchTarget>,
}

/// Bounded cache of sessions; the least recently used is evicted when full.
pub struct FetchSessions {
    sessions_max: usize,
    inner: Mutex<Inner>,
}

struct Inner {
    sessions: HashMap<i32, Session>,
}

impl Inner {
    /// `owner`'s session `session_id`; another owner's is as unknown as a missing one.
    fn owned(&mut self, session_id: i32, owner: &Owner) -> Option<&mut Session> {
        self.sessions
            .get_mut(&session_id)
            .filter(|session| session.owner == *owner)
    }
}

impl FetchSessions {
    pub fn new(sessions_max: usize) -> Self {
        FetchSessions {
            sessions_max,
            inner: Mutex::new(Inner {
                sessions: HashMap::new(),
            }),
        }
    }

    /// Resolves a request of `owner` into the partitions to read, creating, updating or
    /// closing sessions.
    pub fn resolve(
        &self,
        owner: &Owner,
        session_id: i32,
        epoch: i32,
        requested: Vec<FetchTarget>,
        forgotten: &[(String, i32)],
    ) -> Result<Plan, ResponseError> {
        let mut inner = self.lock();
        if epoch == FINAL_EPOCH || epoch == INITIAL_EPOCH {
            if session_id != 0 && inner.owned(session_id, owner).is_some() {
                inner.sessions.remove(&session_id);
            }
            if epoch == FINAL_EPOCH {
                return Ok(Plan {
                    session_id: 0,
                    incremental: false,
                    targets: requested,
                });
            }
            let id = self.create(&mut inner, owner.clone(), requested.clone());
            return Ok(Plan {
                session_id: id,
                incremental: false,
                targets: requested,
            });
        }
        if epoch < 0 {
            return Err(ResponseError::InvalidFetchSessionEpoch);
        }
        let session = inner
            .owned(session_id, owner)
            .ok_or(ResponseError::FetchSessionIdNotFound)?;
        if session.next_epoch != epoch {
            return Err(ResponseError::InvalidFetchSessionEpoch);
        }
        session.next_epoch = next_epoch(epoch);
        session.last_used = Instant::now();
        for (topic, partition) in forgotten {
            session
                .targets
                .retain(|t| !(t.topic == *topic && t.partition == *partition));
            session.reported.remove(&(topic.clone(), *partition));
        }
        for target in requested {
            match session
                .targets
                .iter_mut()
                .find(|t| t.topic == target.topic && t.partition == target.partition)
            {
                Some(existing) => *existing = target,
                None => session.targets.push(target),
            }
        }
        Ok(Plan {
            session_id,
            incremental: true,
            targets: session.targets.clone(),
        })
    }

    /// Closes `session_id` (0: none), for a response that does not hand it to the client.
    pub fn forget(&self, session_id: i32) {
        if session_id != 0 {
            self.lock().sessions.remove(&session_id);
        }
    }

    /// Records what a response reported and says whether an incremental response must include
    /// the partition: it has records or an error, or its offsets moved since last reported.
    pub fn should_report(
        &self,
        session_id: i32,
        topic: &str,
        partition: i32,
        now: Reported,
        has_news: bool,
    ) -> bool {
        let mut inner = self.lock();
        let Some(session) = inner.sessions.get_mut(&session_id) else {
            return true;
        };
        let key = (topic.to_string(), partition);
        let changed = session.reported.get(&key) != Some(&now);
        session.reported.insert(key, now);
        has_news || changed
    }

    fn create(&self, inner: &mut Inner, owner: Owner, targets: Vec<FetchTarget>) -> i32 {
        if inner.sessions.len() >= self.sessions_max {
            let oldest = inner
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| *id);
            if let Some(oldest) = oldest {
                inner.sessions.remove(&oldest);
            }
        }
        let id = new_session_id(|id| inner.sessions.contains_key(&id));
        debug_assert!(id > 0 && !inner.sessions.contains_key(&id));
        inner.sessions.insert(
            id,
            Session {
                owner,
                next_epoch: 1,
                targets,
                reported: HashMap::new(),
                last_used: Instant::now(),
            },
        );
        id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A random positive id not `taken`, so that no client can guess another's session. The cache
/// holds at most `sessions_max` of 2^31 - 1 ids, so a free one is found in a few draws; the
/// counter behind the random start only matters if the system's randomness fails.
fn new_session_id(taken: impl Fn(i32) -> bool) -> i32 {
    let mut id = random_positive_id();
    while taken(id) {
        id = if id == i32::MAX { 1 } else { id + 1 };
    }
    id
}

fn random_positive_id() -> i32 {
    let mut bytes = [0u8; 4];
    if let Err(error) = getrandom::fill(&mut bytes) {
        tracing::error!(%error, "no randomness for a fetch session id");
    }
    let id = i32::from_be_bytes(bytes) & i32::MAX;
    id.max(1)
}

fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admin() -> Owner {
        owner("admin", "PLAINTEXT")
    }

    fn owner(user: &str, listener: &str) -> Owner {
        Owner {
            principal: Principal::user(user),
            listener: listener.into(),
        }
    }

    fn target(topic: &str, partition: i32, offset: i64) -> FetchTarget {
        FetchTarget {
            topic: topic.into(),
            partition,
            fetch_offset: offset,
            max_bytes: 100,
        }
    }

    #[test]
    fn a_session_remembers_partitions_and_applies_changes() {
        let sessions = FetchSessions::new(10);
        let plan = sessions
            .resolve(
                &admin(),
                0,
                INITIAL_EPOCH,
                vec![target("a", 0, 0), target("a", 1, 0)],
                &[],
            )
            .unwrap();
        assert!(!plan.incremental && plan.session_id > 0);
        let id = plan.session_id;
        let plan = sessions
            .resolve(&admin(), id, 1, vec![target("a", 1, 5)], &[])
            .unwrap();
        assert!(plan.incremental);
        assert_eq!(plan.targets, vec![target("a", 0, 0), target("a", 1, 5)]);
        let plan = sessions
            .resolve(&admin(), id, 2, vec![], &[("a".into(), 0)])
            .unwrap();
        assert_eq!(plan.targets, vec![target("a", 1, 5)]);
    }

    #[test]
    fn wrong_epochs_and_unknown_sessions_are_refused() {
        let sessions = FetchSessions::new(10);
        let id = sessions
            .resolve(&admin(), 0, INITIAL_EPOCH, vec![target("a", 0, 0)], &[])
            .unwrap()
            .session_id;
        assert_eq!(
            sessions.resolve(&admin(), id, 3, vec![], &[]).err(),
            Some(ResponseError::InvalidFetchSessionEpoch)
        );
        assert_eq!(
            sessions.resolve(&admin(), id ^ 1, 1, vec![], &[]).err(),
            Some(ResponseError::FetchSessionIdNotFound)
        );
        // Closing the session makes it unknown.
        assert_eq!(
            sessions
                .resolve(&admin(), id, FINAL_EPOCH, vec![], &[])
                .unwrap()
                .session_id,
            0
        );
        assert_eq!(
            sessions.resolve(&admin(), id, 1, vec![], &[]).err(),
            Some(ResponseError::FetchSessionIdNotFound)
        );
    }

    #[test]
    fn the_cache_is_bounded_and_evicts_the_least_recently_used() {
        let sessions = FetchSessions::new(2);
        let a = sessions
            .resolve(&admin(), 0, INITIAL_EPOCH, vec![], &[])
            .unwrap()
            .session_id;
        let b = sessions
            .resolve(&admin(), 0, INITIAL_EPOCH, vec![], &[])
            .unwrap()
            .session_id;
        sessions.resolve(&admin(), a, 1, vec![], &[]).unwrap();
        let _c = sessions
            .resolve(&admin(), 0, INITIAL_EPOCH, vec![], &[])
            .unwrap()
            .session_id;
        assert!(sessions.resolve(&admin(), a, 2, vec![], &[]).is_ok());
        assert_eq!(
            sessions.resolve(&admin(), b, 1, vec![], &[]).err(),
            Some(ResponseError::FetchSessionIdNotFound)
        );
    }

    #[test]
    fn only_partitions_with_news_are_reported_incrementally() {
        let sessions = FetchSessions::new(2);
        let id = sessions
            .resolve(&admin(), 0, INITIAL_EPOCH, vec![target("a", 0, 0)], &[])
            .unwrap()
            .session_id;
        let now = Reported {
            high_watermark: 5,
            log_start_offset: 0,
        };
        assert!(sessions.should_report(id, "a", 0, now.clone(), false));
        assert!(!sessions.should_report(id, "a", 0, now.clone(), false));
        assert!(sessions.should_report(id, "a", 0, now, true));
        assert!(sessions.should_report(
            id,
            "a",
            0,
            Reported {
                high_watermark: 6,
                log_start_offset: 0
            },
            false
        ));
    }

    #[test]
    fn another_principal_or_listener_cannot_use_advance_or_close_a_session() {
        let sessions = FetchSessions::new(10);
        let id = sessions
            .resolve(&admin(), 0, INITIAL_EPOCH, vec![target("a", 0, 0)], &[])
            .unwrap()
            .session_id;
        for intruder in [owner("alice", "PLAINTEXT"), owner("admin", "EXTERNAL")] {
            assert_eq!(
                sessions.resolve(&intruder, id, 1, vec![], &[]).err(),
                Some(ResponseError::FetchSessionIdNotFound)
            );
            // Closing or reopening someone else's id leaves it alone.
            sessions
                .resolve(&intruder, id, FINAL_EPOCH, vec![], &[])
                .unwrap();
            sessions
                .resolve(&intruder, id, INITIAL_EPOCH, vec![], &[])
                .unwrap();
        }
        let plan = sessions.resolve(&admin(), id, 1, vec![], &[]).unwrap();
        assert_eq!(plan.targets, vec![target("a", 0, 0)]);
    }

    #[test]
    fn session_ids_are_not_sequential() {
        let sessions = FetchSessions::new(100);
        let ids: Vec<i32> = (0..20)
            .map(|_| {
                sessions
                    .resolve(&admin(), 0, INITIAL_EPOCH, vec![], &[])
                    .unwrap()
                    .session_id
            })
            .collect();
        assert!(ids.iter().all(|id| *id > 0));
        let consecutive = ids.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(consecutive < 3, "ids look sequential: {ids:?}");
    }
}
