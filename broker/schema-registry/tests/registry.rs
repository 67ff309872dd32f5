//! The registry's conformance suite: storage, ids, versions, deletes, modes and compatibility
//! levels, run against every MetaStore backend (in memory and embedded on disk).

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use metastore::{MetaOptions, MetaStore};
use schema_registry::compatibility::Level;
use schema_registry::mode::Mode;
use schema_registry::schema::{Reference, SchemaType};
use schema_registry::{Registry, RegistryError, SchemaRequest, VersionSpec};

fn avro(text: &str) -> SchemaRequest {
    SchemaRequest {
        schema: text.to_string(),
        ..SchemaRequest::default()
    }
}

fn record(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"User","namespace":"com.example","fields":[{fields}]}}"#)
}

const NAME: &str = r#"{"name":"name","type":"string"}"#;
const AGE_DEFAULT: &str = r#"{"name":"age","type":"int","default":0}"#;
const AGE: &str = r#"{"name":"age","type":"int"}"#;

macro_rules! registry_conformance {
    ($($test:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test]
            async fn $test() {
                let store: std::sync::Arc<dyn metastore::MetaStore> = std::sync::Arc::new(
                    metastore::MemoryMetaStore::open(metastore::MetaOptions::default()),
                );
                super::$test(store).await;
            })*
        }
        mod embedded {
            $(#[tokio::test]
            async fn $test() {
                let dir = tempfile::tempdir().unwrap();
                let store: std::sync::Arc<dyn metastore::MetaStore> = std::sync::Arc::new(
                    metastore::EmbeddedMetaStore::open_in_dir(dir.path(), metastore::MetaOptions::default())
                        .await
                        .unwrap(),
                );
                super::$test(store).await;
            })*
        }
    };
}

registry_conformance!(
    the_same_schema_gets_the_same_id_in_every_subject_and_whitespace_does_not_matter,
    versions_count_up_and_latest_is_the_newest_live_one,
    soft_then_permanent_delete_answer_confluents_errors_in_between,
    backward_refuses_a_new_field_without_default_and_none_accepts_it,
    transitive_levels_judge_every_live_version_and_plain_ones_the_latest,
    forward_and_full_judge_the_other_direction,
    references_resolve_across_subjects_and_block_deleting_what_they_reference,
    import_mode_keeps_given_ids_and_readonly_refuses_writes,
    configs_and_modes_fall_back_to_the_global_ones,
    validation_knows_which_ids_a_subject_holds,
    the_registry_survives_a_restart_of_its_store_handle,
);

async fn the_same_schema_gets_the_same_id_in_every_subject_and_whitespace_does_not_matter(
    store: Arc<dyn MetaStore>,
) {
    let registry = Registry::new(store);
    let text = record(NAME);
    let id = registry.register("a-value", &avro(&text)).await.unwrap();
    assert_eq!(id, 1);
    assert_eq!(registry.register("a-value", &avro(&text)).await.unwrap(), 1);
    let spaced = text.replace(',', " ,\n ").replace(':', " : ");
    assert_eq!(
        registry.register("a-value", &avro(&spaced)).await.unwrap(),
        1
    );
    assert_eq!(registry.versions("a-value", false).await.unwrap(), vec![1]);
    assert_eq!(registry.register("b-value", &avro(&text)).await.unwrap(), 1);
    let other = registry
        .register("b-value", &avro(&record(&format!("{NAME},{AGE_DEFAULT}"))))
        .await
        .unwrap();
    assert_eq!(other, 2);
    let found = registry
        .lookup("b-value", &avro(&spaced), false)
        .await
        .unwrap();
    assert_eq!((found.id, found.version), (1, 1));
    let mut usages = registry.usages(1, false).await.unwrap();
    usages.sort();
    assert_eq!(usages, vec![("a-value".into(), 1), ("b-value".into(), 1)]);
}

async fn versions_count_up_and_latest_is_the_newest_live_one(store: Arc<dyn MetaStore>) {
    let registry = Registry::new(store);
    registry.register("s", &avro(&record(NAME))).await.unwrap();
    let second = record(&format!("{NAME},{AGE_DEFAULT}"));
    registry.register("s", &avro(&second)).await.unwrap();
    let latest = registry
        .version("s", VersionSpec::Latest, false)
        .await
        .unwrap();
    assert_eq!((latest.version, latest.id), (2, 2));
    assert_eq!(latest.schema.schema_type, SchemaType::Avro);
    registry
        .delete_version("s", VersionSpec::Number(2), false)
        .await
        .unwrap();
    let latest = registry
        .version("s", VersionSpec::Latest, false)
        .await
        .unwrap();
    assert_eq!(latest.version, 1);
    // A new version after a soft-deleted one does not reuse its number.
    let third = record(&format!(
        r#"{NAME},{{"name":"x","type":"long","default":1}}"#
    ));
    registry.register("s", &avro(&third)).await.unwrap();
    assert_eq!(registry.versions("s", false).await.unwrap(), vec![1, 3]);
    assert_eq!(registry.versions("s", true).await.unwrap(), vec![1, 2, 3]);
    assert!(matches!(
        registry.version("s", VersionSpec::Number(9), false).await,
        Err(RegistryError::VersionNotFound(_))
    ));
    assert!(matches!(
        registry.versions("nothing", false).await,
        Err(RegistryError::SubjectNotFound(_))
    ));
}

async fn soft_then_permanent_delete_answer_confluents_errors_in_between(store: Arc<dyn MetaStore>) {
    let registry = Registry::new(store);
    registry.register("s", &avro(&record(NAME))).await.unwrap();
    assert!(matches!(
        registry.delete_subject("s", true).await,
        Err(RegistryError::SubjectNotSoftDeleted(_))
    ));
    assert_eq!(registry.delete_subject("s", false).await.unwrap(), vec![1]);
    assert!(matches!(
        registry.delete_subject("s", false).await,
        Err(RegistryError::SubjectSoftDeleted(_))
    ));
    assert!(registry.subjects(false).await.unwrap().is_empty());
    assert_eq!(
        registry.subjects(true).await.unwrap(),
        vec!["s".to_string()]
    );
    assert_eq!(registry.delete_subject("s", true).await.unwrap(), vec![1]);
    assert!(registry.subjects(true).await.unwrap().is_empty());
    // The id stays readable: records written with it still exist in topics.
    assert!(registry.schema_by_id(1).await.is_ok());
    // And is never given to another schema.
    let next = registry
        .register("s", &avro(&record(AGE_DEFAULT)))
        .await
        .unwrap();
    assert_eq!(next, 2);
    assert!(matches!(
        registry
            .delete_version("s", VersionSpec::Number(1), true)
            .await,
        Err(RegistryError::VersionNotSoftDeleted(_, 1))
    ));
}

async fn backward_refuses_a_new_field_without_default_and_none_accepts_it(
    store: Arc<dyn MetaStore>,
) {
    let registry = Registry::new(store);
    registry.register("s", &avro(&record(NAME))).await.unwrap();
    let refused = registry
        .register("s", &avro(&record(&format!("{NAME},{AGE}"))))
        .await;
    let Err(RegistryError::Incompatible { details, .. }) = refused else {
        panic!("{refused:?}");
    };
    assert!(details.iter().any(|d| d.contains("age")), "{details:?}");
    let messages = registry
        .check_compatibility(
            "s",
            Some(VersionSpec::Latest),
            &avro(&record(&format!("{NAME},{AGE}"))),
        )
        .await
        .unwrap();
    assert!(!messages.is_empty());
    registry
        .register("s", &avro(&record(&format!("{NAME},{AGE_DEFAULT}"))))
        .await
        .unwrap();
    registry.set_level(Some("s"), Level::None).await.unwrap();
    registry
        .register("s", &avro(r#"{"type":"string"}"#))
        .await
        .unwrap();
    assert_eq!(registry.versions("s", false).await.unwrap(), vec![1, 2, 3]);
}

async fn transitive_levels_judge_every_live_version_and_plain_ones_the_latest(
    store: Arc<dyn MetaStore>,
) {
    let registry = Registry::new(store);
    registry.set_level(Some("s"), Level::None).await.unwrap();
    // v1 has `age` as an int, v2 drops it, v3 brings it back as a string with a default:
    // v3 reads v2's data (the default fills `age`), not v1's (int is not string).
    registry
        .register("s", &avro(&record(&format!("{NAME},{AGE}"))))
        .await
        .unwrap();
    registry.register("s", &avro(&record(NAME))).await.unwrap();
    let v3 = avro(&record(&format!(
        r#"{NAME},{{"name":"age","type":"string","default":""}}"#
    )));
    registry
        .set_level(Some("s"), Level::Backward)
        .await
        .unwrap();
    assert!(registry
        .check_compatibility("s", None, &v3)
        .await
        .unwrap()
        .is_empty());
    registry
        .set_level(Some("s"), Level::BackwardTransitive)
        .await
        .unwrap();
    let messages = registry.check_compatibility("s", None, &v3).await.unwrap();
    assert!(
        messages.iter().any(|m| m.contains("version 1")),
        "{messages:?}"
    );
}

async fn forward_and_full_judge_the_other_direction(store: Arc<dyn MetaStore>) {
    let registry = Registry::new(store);
    registry
        .register("s", &avro(&record(&format!("{NAME},{AGE}"))))
        .await
        .unwrap();
    // Removing a field without default: the new schema reads old data (backward), but the
    // old schema cannot read new data (forward).
    let removed = avro(&record(NAME));
    registry.set_level(Some("s"), Level::Forward).await.unwrap();
    assert!(!registry
        .check_compatibility("s", None, &removed)
        .await
        .unwrap()
        .is_empty());
    registry.set_level(Some("s"), Level::Full).await.unwrap();
    assert!(!registry
        .check_compatibility("s", None, &removed)
        .await
        .unwrap()
        .is_empty());
    registry
        .set_level(Some("s"), Level::Backward)
        .await
        .unwrap();
    assert!(registry
        .check_compatibility("s", None, &removed)
        .await
        .unwrap()
        .is_empty());
    // Adding a field with a default is fully compatible.
    registry.set_level(Some("s"), Level::Full).await.unwrap();
    let added = avro(&record(&format!(
        r#"{NAME},{AGE},{{"name":"x","type":"long","default":1}}"#
    )));
    assert!(registry
        .check_compatibility("s", None, &added)
        .await
        .unwrap()
        .is_empty());
}

async fn references_resolve_across_subjects_and_block_deleting_what_they_reference(
    store: Arc<dyn MetaStore>,
) {
    let registry = Registry::new(store);
    let address = r#"{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}"#;
    registry.register("address", &avro(address)).await.unwrap();
    let user = SchemaRequest {
        schema: record(r#"{"name":"home","type":"com.example.Address"}"#),
        references: vec![Reference {
            name: "com.example.Address".into(),
            subject: "address".into(),
            version: 1,
        }],
        ..SchemaRequest::default()
    };
    let id = registry.register("user-value", &user).await.unwrap();
    assert_eq!(id, 2);
    let parsed = registry.parsed(id).await.unwrap();
    // city = "Oslo": a string of length 4 (zigzag 8).
    assert!(parsed.validate(b"\x08Oslo").is_ok());
    assert!(parsed.validate(b"\x08Osl").is_err());
    assert_eq!(
        registry
            .referenced_by("address", VersionSpec::Number(1))
            .await
            .unwrap(),
        vec![2]
    );
    assert!(matches!(
        registry.delete_subject("address", false).await,
        Err(RegistryError::ReferenceExists(..))
    ));
    let unresolved = SchemaRequest {
        references: vec![Reference {
            name: "x".into(),
            subject: "missing".into(),
            version: 1,
        }],
        ..user
    };
    assert!(matches!(
        registry.register("other", &unresolved).await,
        Err(RegistryError::InvalidSchema(_))
    ));
}

async fn import_mode_keeps_given_ids_and_readonly_refuses_writes(store: Arc<dyn MetaStore>) {
    let registry = Registry::new(store);
    registry.set_mode(None, Mode::Import, false).await.unwrap();
    let imported = SchemaRequest {
        id: Some(42),
        version: Some(7),
        ..avro(&record(NAME))
    };
    assert_eq!(registry.register("s", &imported).await.unwrap(), 42);
    let view = registry
        .version("s", VersionSpec::Latest, false)
        .await
        .unwrap();
    assert_eq!((view.id, view.version), (42, 7));
    let clash = SchemaRequest {
        id: Some(42),
        version: Some(8),
        ..avro(&record(AGE_DEFAULT))
    };
    assert!(matches!(
        registry.register("s", &clash).await,
        Err(RegistryError::IdInUse(42))
    ));
    assert!(matches!(
        registry.register("t", &avro(&record(AGE))).await,
        Err(RegistryError::OperationNotPermitted(_))
    ));
    registry
        .set_mode(None, Mode::ReadWrite, false)
        .await
        .unwrap();
    // New ids continue above the imported ones.
    assert_eq!(
        registry.register("t", &avro(&record(AGE))).await.unwrap(),
        43
    );
    assert!(matches!(
        registry.set_mode(None, Mode::Import, false).await,
        Err(RegistryError::OperationNotPermitted(_))
    ));
    registry
        .set_mode(Some("t"), Mode::ReadOnly, false)
        .await
        .unwrap();
    assert!(matches!(
        registry.register("t", &avro(&record(NAME))).await,
        Err(RegistryError::OperationNotPermitted(_))
    ));
    assert!(matches!(
        registry.delete_subject("t", false).await,
        Err(RegistryError::OperationNotPermitted(_))
    ));
}

async fn configs_and_modes_fall_back_to_the_global_ones(store: Arc<dyn MetaStore>) {
    let registry = Registry::new(store);
    assert_eq!(registry.level(None).await.unwrap(), Level::Backward);
    assert_eq!(registry.level(Some("s")).await.unwrap(), Level::Backward);
    registry.set_level(None, Level::Full).await.unwrap();
    assert_eq!(registry.level(Some("s")).await.unwrap(), Level::Full);
    assert_eq!(registry.own_level(Some("s")).await.unwrap(), None);
    registry.set_level(Some("s"), Level::None).await.unwrap();
    assert_eq!(registry.level(Some("s")).await.unwrap(), Level::None);
    assert_eq!(registry.delete_level(Some("s")).await.unwrap(), Level::None);
    assert_eq!(registry.level(Some("s")).await.unwrap(), Level::Full);
    assert_eq!(registry.mode(Some("s")).await.unwrap(), Mode::ReadWrite);
    registry
        .set_mode(None, Mode::ReadOnly, false)
        .await
        .unwrap();
    assert_eq!(registry.mode(Some("s")).await.unwrap(), Mode::ReadOnly);
}

async fn validation_knows_which_ids_a_subject_holds(store: Arc<dyn MetaStore>) {
    let registry = Registry::new(store);
    let id = registry
        .register("t-value", &avro(&record(NAME)))
        .await
        .unwrap();
    assert!(registry.subject_has_id("t-value", id).await.unwrap());
    assert!(!registry.subject_has_id("t-value", id + 1).await.unwrap());
    assert!(!registry.subject_has_id("t-key", id).await.unwrap());
    let other = registry
        .register("t-value", &avro(&record(&format!("{NAME},{AGE_DEFAULT}"))))
        .await
        .unwrap();
    // Registered after the subject's ids were cached: found by the refresh on a miss.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert!(registry.subject_has_id("t-value", other).await.unwrap());
    registry.delete_subject("t-value", false).await.unwrap();
    assert!(!registry.subject_has_id("t-value", id).await.unwrap());
}

async fn the_registry_survives_a_restart_of_its_store_handle(store: Arc<dyn MetaStore>) {
    let first = Registry::new(store.clone());
    first.register("s", &avro(&record(NAME))).await.unwrap();
    drop(first);
    let second = Registry::new(store);
    assert_eq!(
        second.register("s", &avro(&record(NAME))).await.unwrap(),
        1,
        "the same schema keeps its id"
    );
    assert_eq!(
        second
            .register("s", &avro(&record(&format!("{NAME},{AGE_DEFAULT}"))))
            .await
            .unwrap(),
        2
    );
}

#[tokio::test]
async fn two_brokers_registering_at_once_get_dense_unique_ids() {
    let shared = metastore::MemoryStore::new();
    let a = Arc::new(Registry::new(Arc::new(
        shared.handle(MetaOptions::default()),
    )));
    let b = Arc::new(Registry::new(Arc::new(
        shared.handle(MetaOptions::default()),
    )));
    a.set_level(None, Level::None).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let registry = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            // Each schema twice, from both brokers: same id both times.
            let text = format!(
                r#"{{"type":"fixed","name":"F{}","size":{}}}"#,
                i / 2,
                i / 2 + 1
            );
            registry
                .register(&format!("subject-{}", i % 5), &avro(&text))
                .await
                .unwrap()
        }));
    }
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap());
    }
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    // 20 distinct schemas; when two brokers race on one new schema the loser's id is a
    // valid unused id of the same schema, so ids stay dense (no hole) and never repeat.
    let highest = *distinct.last().unwrap();
    for id in 1..=highest {
        assert!(a.schema_by_id(id).await.is_ok(), "hole at id {id}");
    }
    for pair in ids.chunks(2) {
        assert_eq!(pair[0], pair[1], "one schema, one answered id: {ids:?}");
    }
}
