//! Fuzz-style tests of the SASL parsing paths on stable Rust: arbitrary bytes and structured
//! mutations of valid messages (SCRAM client-first and client-final, PLAIN, OAUTHBEARER)
//! through the parsers and through a whole `SaslServer`. Nothing may panic; every refusal is
//! an error or a `Step::Failed` with a message; a mutated SCRAM client-final is never accepted
//! unless it still says exactly what the valid one said.
//!
//! CI runs the default case count; `scripts/fuzz-sasl.sh` runs many more (`PROPTEST_CASES`).

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use broker::security::sasl::jwt::JwtConfig;
use broker::security::sasl::{Mechanism, SaslAuthenticator, SaslConfig, SaslServer, Step};
use broker::security::scram::messages::{parse_client_final, parse_client_first};
use broker::security::scram::{ScramCredential, ScramMechanism};
use proptest::prelude::*;

const PASSWORD: &[u8] = b"alice-secret";

/// One edit of a message.
#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bit: u8 },
    Insert { at: usize, byte: u8 },
    Delete { at: usize },
    Truncate { at: usize },
    Duplicate { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        any::<u8>(),
        Just(b','),
        Just(b'='),
        Just(0u8),
        Just(1u8),
        Just(b'.')
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), byte).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Delete { at }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), 1usize..16).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
    ]
}

fn mutate(message: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut out = message.to_vec();
    for m in mutations {
        let len = out.len();
        let pos = |at: usize| if len == 0 { 0 } else { at % len };
        match *m {
            Mutation::Flip { at, bit } if len > 0 => out[pos(at)] ^= 1 << bit,
            Mutation::Insert { at, byte } => {
                out.insert(if len == 0 { 0 } else { at % (len + 1) }, byte)
            }
            Mutation::Delete { at } if len > 0 => {
                out.remove(pos(at));
            }
            Mutation::Truncate { at } => out.truncate(if len == 0 { 0 } else { at % (len + 1) }),
            Mutation::Duplicate { at, len: n } if len > 0 => {
                let start = pos(at);
                let piece: Vec<u8> = out[start..(start + n).min(len)].to_vec();
                out.splice(start..start, piece);
            }
            _ => {}
        }
    }
    out
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn authenticator() -> Arc<SaslAuthenticator> {
    let credential =
        ScramCredential::from_password(ScramMechanism::Sha256, PASSWORD, 4096).unwrap();
    let scram: HashMap<(String, ScramMechanism), ScramCredential> =
        HashMap::from([(("alice".to_string(), ScramMechanism::Sha256), credential)]);
    let config = SaslConfig {
        enabled_mechanisms: Mechanism::ALL.to_vec(),
        plain_users_file: None,
        oauthbearer: Some(JwtConfig {
            jwks_file: concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/security/sasl/testdata/jwks.json"
            )
            .into(),
            expected_issuer: None,
            expected_audience: Vec::new(),
            sub_claim_name: "sub".into(),
            clock_skew_s: 30,
        }),
        connections_max_reauth_ms: 0,
        failed_authentication_delay_ms: 0,
    };
    SaslAuthenticator::open(config, Arc::new(scram), storage::clock::system())
        .await
        .unwrap()
}

fn server(shared: &Arc<SaslAuthenticator>, mechanism: &str) -> SaslServer {
    let mut server = shared.server("127.0.0.1:1".parse().unwrap());
    server.handshake(1, mechanism).unwrap();
    server
}

fn assert_refusal_has_a_message(step: &Step) {
    if let Step::Failed { message } = step {
        assert!(!message.is_empty());
    }
}

/// The valid client-final answering `server_first` for `n=alice,r=fuzznonce`.
fn client_final(server_first: &[u8]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let m = ScramMechanism::Sha256;
    let first = std::str::from_utf8(server_first).unwrap();
    let attr = |k: &str| first.split(',').find_map(|f| f.strip_prefix(k)).unwrap();
    let salt = b64.decode(attr("s=")).unwrap();
    let salted = m
        .salted_password(PASSWORD, &salt, attr("i=").parse().unwrap())
        .unwrap();
    let client_key = m.client_key(&salted).unwrap();
    let without_proof = format!("c=biws,r={}", attr("r="));
    let auth = format!("n=alice,r=fuzznonce,{first},{without_proof}");
    let signature = m.hmac(&m.stored_key(&client_key), auth.as_bytes()).unwrap();
    let proof: Vec<u8> = client_key
        .iter()
        .zip(signature)
        .map(|(k, s)| k ^ s)
        .collect();
    format!("{without_proof},p={}", b64.encode(proof)).into_bytes()
}

const SEEDS: [&[u8]; 6] = [
    b"n,,n=alice,r=fuzznonce",
    b"n,a=alice,n=al=2Cice,r=abc,tokenauth=true",
    b"c=biws,r=fuzznonceXYZ,p=dHpiK2VPbGE=",
    b"\0alice\0alice-secret",
    b"n,,\x01auth=Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln\x01\x01",
    b"n,a=bob,\x01host=x\x01auth=Bearer a.b.c\x01\x01",
];

proptest! {
    #[test]
    fn parsers_take_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_client_first(&bytes);
        let _ = parse_client_final(&bytes);
        let _ = broker::security::sasl::plain::PlainMessage::parse(&bytes);
        let _ = broker::security::sasl::oauthbearer::InitialResponse::parse(&bytes);
    }

    #[test]
    fn parsers_take_mutated_messages(
        seed in 0..SEEDS.len(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let bytes = mutate(SEEDS[seed], &mutations);
        let _ = parse_client_first(&bytes);
        let _ = parse_client_final(&bytes);
        let _ = broker::security::sasl::plain::PlainMessage::parse(&bytes);
        let _ = broker::security::sasl::oauthbearer::InitialResponse::parse(&bytes);
    }

    #[test]
    fn every_mechanism_answers_any_token_sequence(
        mechanism in prop_oneof![Just("PLAIN"), Just("SCRAM-SHA-256"), Just("SCRAM-SHA-512"), Just("OAUTHBEARER")],
        tokens in proptest::collection::vec(
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..256),
                (0..SEEDS.len(), proptest::collection::vec(mutation(), 0..4))
                    .prop_map(|(seed, m)| mutate(SEEDS[seed], &m)),
            ],
            1..4,
        ),
    ) {
        runtime().block_on(async {
            let shared = authenticator().await;
            let mut server = server(&shared, mechanism);
            for token in &tokens {
                let step = server.authenticate(token).await;
                assert_refusal_has_a_message(&step);
                if let Step::Done { principal, .. } = &step {
                    // Only a well-formed PLAIN message with alice's password gets in.
                    assert_eq!(mechanism, "PLAIN");
                    assert_eq!(principal.name, "alice");
                    assert!(token.ends_with(b"\0alice-secret"));
                }
                if !matches!(step, Step::Challenge(_)) {
                    break;
                }
            }
        });
    }

    #[test]
    fn a_mutated_scram_client_final_never_gets_in(mutations in proptest::collection::vec(mutation(), 1..6)) {
        runtime().block_on(async {
            let shared = authenticator().await;
            let mut server = server(&shared, "SCRAM-SHA-256");
            let Step::Challenge(first) = server.authenticate(b"n,,n=alice,r=fuzznonce").await else {
                panic!("no server-first");
            };
            let valid = client_final(&first);
            let mutated = mutate(&valid, &mutations);
            let step = server.authenticate(&mutated).await;
            assert_refusal_has_a_message(&step);
            if matches!(step, Step::Done { .. }) {
                let (a, b) = (parse_client_final(&valid).unwrap(), parse_client_final(&mutated).unwrap());
                assert_eq!((a.without_proof, a.proof), (b.without_proof, b.proof));
            }
        });
    }
}
