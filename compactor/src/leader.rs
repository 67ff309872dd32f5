//! Leadership: one compactor at a time holds an ephemeral MetaStore key bound to its session.

use std::sync::Arc;

use metastore::{Comparison, Expect, MetaError, MetaStore, PutOptions};

const LEADER_KEY: &str = "compactor/leader";

/// Tries to become leader; `Ok(false)` when another live session holds the key.
pub async fn acquire(meta: &Arc<dyn MetaStore>, owner: &str) -> Result<bool, MetaError> {
    let options = PutOptions {
        expect: Expect::NotExists,
        ephemeral: true,
        ..Default::default()
    };
    match meta
        .put(LEADER_KEY, owner.to_string().into(), options)
        .await
    {
        Ok(_) => Ok(true),
        Err(MetaError::UnexpectedVersion) => {
            // Ours from an earlier pass of this same handle counts as held.
            let current = meta.get(LEADER_KEY, Comparison::Equal, None).await?;
            Ok(current.is_some_and(|r| r.value.as_ref() == owner.as_bytes()))
        }
        Err(e) => Err(e),
    }
}

/// Gives leadership up (the session ending would too).
pub async fn release(meta: &Arc<dyn MetaStore>, owner: &str) -> Result<(), MetaError> {
    if let Some(r) = meta.get(LEADER_KEY, Comparison::Equal, None).await? {
        if r.value.as_ref() == owner.as_bytes() {
            match meta
                .delete(LEADER_KEY, Expect::Version(r.version.version_id), None)
                .await
            {
                Ok(()) | Err(MetaError::UnexpectedVersion) | Err(MetaError::KeyNotFound) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
