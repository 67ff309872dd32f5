use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::*;

const CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
const DECOY_KEY: &[u8] = b"decoy key of this test";

type Credentials = HashMap<(String, ScramMechanism), ScramCredential>;

fn credentials(user: &str, mechanism: ScramMechanism, password: &[u8]) -> Credentials {
    let salt = BASE64.decode(SALT).unwrap();
    let salted = mechanism.salted_password(password, &salt, 4096).unwrap();
    let credential =
        ScramCredential::from_salted_password(mechanism, &salt, &salted, 4096).unwrap();
    HashMap::from([((user.to_string(), mechanism), credential)])
}

fn server(mechanism: ScramMechanism) -> ScramServer {
    ScramServer::new(mechanism, SERVER_NONCE.to_string())
}

fn challenge(step: ScramStep) -> String {
    match step {
        ScramStep::Challenge(bytes) => String::from_utf8(bytes).unwrap(),
        other => panic!("expected a challenge, got {other:?}"),
    }
}

/// RFC 7677 section 3, byte for byte.
#[test]
fn rfc_7677_exchange_succeeds_with_its_server_signature() {
    let creds = credentials("user", ScramMechanism::Sha256, b"pencil");
    let mut server = server(ScramMechanism::Sha256);
    let first = server
        .evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", &creds, DECOY_KEY)
        .unwrap();
    assert_eq!(
        challenge(first),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let last = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        &creds,
        DECOY_KEY,
    );
    assert_eq!(
        last,
        Ok(ScramStep::Done {
            username: "user".into(),
            response: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec(),
        })
    );
}

/// The same exchange on SHA-512, values computed independently (Python's hashlib and hmac).
#[test]
fn sha_512_exchange_matches_an_independent_computation() {
    let creds = credentials("user", ScramMechanism::Sha512, b"pencil");
    let mut server = server(ScramMechanism::Sha512);
    server
        .evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", &creds, DECOY_KEY)
        .unwrap();
    let last = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==",
        &creds,
        DECOY_KEY,
    );
    assert_eq!(
        last,
        Ok(ScramStep::Done {
            username: "user".into(),
            response: b"v=ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw==".to_vec(),
        })
    );
}

/// A client written from RFC 5802's formulas, independent of the server code path.
struct Client {
    mechanism: ScramMechanism,
    user: String,
    password: Vec<u8>,
    bare: String,
}

impl Client {
    fn new(mechanism: ScramMechanism, user: &str, password: &[u8]) -> Client {
        Client {
            mechanism,
            user: user.to_string(),
            password: password.to_vec(),
            bare: String::new(),
        }
    }

    fn first(&mut self) -> Vec<u8> {
        self.bare = format!(
            "n={},r={CLIENT_NONCE}",
            messages::escape_saslname(&self.user)
        );
        format!("n,,{}", self.bare).into_bytes()
    }

    /// The client-final for `server_first`, its proof passed through `tamper`.
    fn last(&self, server_first: &str, tamper: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let m = self.mechanism;
        let attr = |key: &str| {
            server_first
                .split(',')
                .find_map(|f| f.strip_prefix(key))
                .unwrap()
                .to_string()
        };
        let (nonce, salt, iterations) = (attr("r="), attr("s="), attr("i="));
        let salt = BASE64.decode(salt).unwrap();
        let salted = m
            .salted_password(&self.password, &salt, iterations.parse().unwrap())
            .unwrap();
        let client_key = m.client_key(&salted).unwrap();
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{},{server_first},{without_proof}", self.bare);
        let signature = m.hmac(&m.stored_key(&client_key), auth.as_bytes()).unwrap();
        let mut proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        tamper(&mut proof);
        format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes()
    }
}

fn run(
    creds: &Credentials,
    client: &mut Client,
    tamper: impl Fn(&mut Vec<u8>),
) -> Result<ScramStep, ScramFailure> {
    let mut server = server(client.mechanism);
    let server_first = challenge(server.evaluate(&client.first(), creds, DECOY_KEY)?);
    server.evaluate(&client.last(&server_first, tamper), creds, DECOY_KEY)
}

#[test]
fn the_right_password_authenticates_on_both_mechanisms() {
    for m in ScramMechanism::ALL {
        let creds = credentials("alice", m, b"alice-secret");
        let mut client = Client::new(m, "alice", b"alice-secret");
        assert!(matches!(
            run(&creds, &mut client, |_| {}),
            Ok(ScramStep::Done { username, .. }) if username == "alice"
        ));
    }
}

#[test]
fn a_tampered_proof_is_refused() {
    let creds = credentials("alice", ScramMechanism::Sha256, b"alice-secret");
    let mut client = Client::new(ScramMechanism::Sha256, "alice", b"alice-secret");
    for tamper in [
        (|p: &mut Vec<u8>| p[0] ^= 1) as fn(&mut Vec<u8>),
        |p| *p.last_mut().unwrap() ^= 0x80,
        |p| p.truncate(31),
        |p| p.push(0),
        |p| p.clear(),
        |p| p.iter_mut().for_each(|b| *b = 0),
    ] {
        assert_eq!(
            run(&creds, &mut client, tamper),
            Err(ScramFailure::Invalid("wrong proof or unknown user"))
        );
    }
}

#[test]
fn a_wrong_password_and_an_unknown_user_fail_alike() {
    let creds = credentials("alice", ScramMechanism::Sha512, b"alice-secret");
    let mut wrong = Client::new(ScramMechanism::Sha512, "alice", b"guess");
    let mut unknown = Client::new(ScramMechanism::Sha512, "mallory", b"guess");
    let wrong_result = run(&creds, &mut wrong, |_| {});
    assert_eq!(wrong_result, run(&creds, &mut unknown, |_| {}));
    assert!(wrong_result.is_err());
    // The unknown user's server-first looks like a real one, and stays the same.
    let first = |user: &str| {
        let mut client = Client::new(ScramMechanism::Sha512, user, b"x");
        challenge(
            server(ScramMechanism::Sha512)
                .evaluate(&client.first(), &creds, DECOY_KEY)
                .unwrap(),
        )
    };
    let decoy = first("mallory");
    assert!(decoy.ends_with(",i=4096"), "{decoy}");
    assert_eq!(decoy, first("mallory"));
    assert_ne!(decoy, first("trudy"));
}

#[test]
fn a_credential_of_the_other_mechanism_does_not_count() {
    let creds = credentials("alice", ScramMechanism::Sha256, b"alice-secret");
    let mut client = Client::new(ScramMechanism::Sha512, "alice", b"alice-secret");
    assert!(run(&creds, &mut client, |_| {}).is_err());
}

#[test]
fn escaped_user_names_find_their_credential() {
    let creds = credentials("a,b=c", ScramMechanism::Sha256, b"pw");
    let mut client = Client::new(ScramMechanism::Sha256, "a,b=c", b"pw");
    assert!(matches!(
        run(&creds, &mut client, |_| {}),
        Ok(ScramStep::Done { username, .. }) if username == "a,b=c"
    ));
}

#[test]
fn nonce_and_channel_binding_must_match() {
    let creds = credentials("user", ScramMechanism::Sha256, b"pencil");
    let cases: [(&[u8], &str); 3] = [
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "nonce mismatch"),
        (b"c=biws,r=XrOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "nonce mismatch"),
        (b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "channel binding mismatch"),
    ];
    for (message, reason) in cases {
        let mut server = server(ScramMechanism::Sha256);
        server
            .evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", &creds, DECOY_KEY)
            .unwrap();
        assert_eq!(
            server.evaluate(message, &creds, DECOY_KEY),
            Err(ScramFailure::Invalid(reason))
        );
    }
}

#[test]
fn token_auth_and_a_foreign_authzid_are_refused() {
    let creds = credentials("user", ScramMechanism::Sha256, b"pencil");
    let refused =
        |message: &[u8]| server(ScramMechanism::Sha256).evaluate(message, &creds, DECOY_KEY);
    assert_eq!(
        refused(b"n,,n=user,r=abc,tokenauth=true"),
        Err(ScramFailure::Invalid("delegation tokens are not supported"))
    );
    assert_eq!(
        refused(b"n,a=admin,n=user,r=abc"),
        Err(ScramFailure::AuthorizationId)
    );
    assert!(refused(b"n,a=user,n=user,r=abc").is_ok());
}

#[test]
fn nothing_is_accepted_after_the_exchange() {
    let creds = credentials("alice", ScramMechanism::Sha256, b"pw");
    let mut client = Client::new(ScramMechanism::Sha256, "alice", b"pw");
    let mut server = server(ScramMechanism::Sha256);
    let first = challenge(server.evaluate(&client.first(), &creds, DECOY_KEY).unwrap());
    let last = client.last(&first, |_| {});
    assert!(server.evaluate(&last, &creds, DECOY_KEY).is_ok());
    assert!(server.evaluate(&last, &creds, DECOY_KEY).is_err());
}

#[test]
fn new_nonces_are_printable_and_differ() {
    let (a, b) = (new_nonce().unwrap(), new_nonce().unwrap());
    assert_ne!(a, b);
    assert_eq!(a.len(), 24);
    assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c) && c != b','));
}
