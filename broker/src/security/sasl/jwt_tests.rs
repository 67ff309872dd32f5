//! Tokens signed with the test keys in `testdata/` (made for these tests only; the JWKS files
//! there hold their public halves).

use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::json;

use super::*;

const NOW_S: u64 = 1_800_000_000;
const RSA_PEM: &[u8] = include_bytes!("testdata/rsa.pem");
const EC_PEM: &[u8] = include_bytes!("testdata/ec.pem");
const OTHER_RSA_PEM: &[u8] = include_bytes!("testdata/other-rsa.pem");
const JWKS: &str = include_str!("testdata/jwks.json");

fn config() -> JwtConfig {
    JwtConfig {
        jwks_file: PathBuf::from("unused"),
        expected_issuer: None,
        expected_audience: Vec::new(),
        sub_claim_name: "sub".into(),
        clock_skew_s: 30,
    }
}

fn jwks() -> JwkSet {
    serde_json::from_str(JWKS).unwrap()
}

fn claims() -> Value {
    json!({"sub": "alice", "iat": NOW_S - 10, "exp": NOW_S + 3600, "iss": "https://idp", "aud": ["kafka", "other"]})
}

fn rs256(kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = kid.map(str::to_string);
    encode(
        &header,
        claims,
        &EncodingKey::from_rsa_pem(RSA_PEM).unwrap(),
    )
    .unwrap()
}

fn es256(kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = kid.map(str::to_string);
    encode(&header, claims, &EncodingKey::from_ec_pem(EC_PEM).unwrap()).unwrap()
}

fn check(config: &JwtConfig, token: &str) -> Result<ValidToken, JwtRefusal> {
    validate(config, &jwks(), token, NOW_S * 1000)
}

#[test]
fn rs256_and_es256_tokens_name_their_subject() {
    for token in [
        rs256(Some("rsa-1"), &claims()),
        es256(Some("ec-1"), &claims()),
    ] {
        assert_eq!(
            check(&config(), &token),
            Ok(ValidToken {
                principal_name: "alice".into(),
                expires_ms: (NOW_S + 3600) * 1000
            })
        );
    }
    // Without a kid, the one key that fits the algorithm.
    assert!(check(&config(), &es256(None, &claims())).is_ok());
}

#[test]
fn expired_and_premature_tokens_are_refused_beyond_the_skew() {
    let mut c = claims();
    c["exp"] = json!(NOW_S - 29);
    assert!(
        check(&config(), &rs256(Some("rsa-1"), &c)).is_ok(),
        "within the skew"
    );
    c["exp"] = json!(NOW_S - 31);
    assert!(check(&config(), &rs256(Some("rsa-1"), &c))
        .unwrap_err()
        .0
        .starts_with("expired"));
    let mut c = claims();
    c["nbf"] = json!(NOW_S + 60);
    assert!(check(&config(), &rs256(Some("rsa-1"), &c))
        .unwrap_err()
        .0
        .starts_with("not valid before"));
    let mut c = claims();
    c["iat"] = json!(NOW_S + 60);
    assert!(check(&config(), &rs256(Some("rsa-1"), &c)).is_err());
    for missing in ["exp", "iat", "sub"] {
        let mut c = claims();
        c.as_object_mut().unwrap().remove(missing);
        assert!(
            check(&config(), &rs256(Some("rsa-1"), &c)).is_err(),
            "{missing}"
        );
    }
}

#[test]
fn issuer_and_audience_are_checked_when_configured() {
    let token = rs256(Some("rsa-1"), &claims());
    let mut config = config();
    config.expected_issuer = Some("https://idp".into());
    config.expected_audience = vec!["kafka".into()];
    assert!(check(&config, &token).is_ok());
    config.expected_issuer = Some("https://other-idp".into());
    assert_eq!(
        check(&config, &token).unwrap_err().0,
        "issuer is not the expected one"
    );
    config.expected_issuer = None;
    config.expected_audience = vec!["billing".into()];
    assert_eq!(
        check(&config, &token).unwrap_err().0,
        "audience is not an expected one"
    );
    let mut c = claims();
    c["aud"] = json!("billing");
    assert!(check(&config, &rs256(Some("rsa-1"), &c)).is_ok());
}

#[test]
fn bad_signatures_unknown_kids_and_foreign_algorithms_are_refused() {
    let token = rs256(Some("rsa-1"), &claims());
    // Signed by another key under our key's kid.
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    let forged = encode(
        &header,
        &claims(),
        &EncodingKey::from_rsa_pem(OTHER_RSA_PEM).unwrap(),
    )
    .unwrap();
    assert!(check(&config(), &forged)
        .unwrap_err()
        .0
        .starts_with("signature not verified"));
    // The payload changed after signing.
    let parts: Vec<&str> = token.split('.').collect();
    let mut c = claims();
    c["sub"] = json!("admin");
    let payload = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        c.to_string(),
    );
    let tampered = format!("{}.{payload}.{}", parts[0], parts[2]);
    assert!(check(&config(), &tampered).is_err());
    assert_eq!(
        check(&config(), &rs256(Some("rsa-9"), &claims()))
            .unwrap_err()
            .0,
        "no key with kid \"rsa-9\""
    );
    // HS256 with the RSA key's public modulus as secret: algorithm confusion.
    let hs = encode(
        &Header::new(Algorithm::HS256),
        &claims(),
        &EncodingKey::from_secret(b"anything"),
    )
    .unwrap();
    assert!(check(&config(), &hs)
        .unwrap_err()
        .0
        .contains("not accepted"));
    // An RSA kid used for an EC signature.
    assert!(check(&config(), &es256(Some("rsa-1"), &claims())).is_err());
    for garbage in ["", "a.b", "a.b.c", "....", "eyJhbGciOiJub25lIn0.e30."] {
        assert!(check(&config(), garbage).is_err(), "{garbage}");
    }
}

#[test]
fn the_subject_claim_name_is_configurable() {
    let mut c = claims();
    c["preferred_username"] = json!("alice@example.com");
    let token = rs256(Some("rsa-1"), &c);
    let mut config = config();
    config.sub_claim_name = "preferred_username".into();
    assert_eq!(
        check(&config, &token).unwrap().principal_name,
        "alice@example.com"
    );
    config.sub_claim_name = "email".into();
    assert!(check(&config, &token).is_err());
}

#[tokio::test]
async fn the_jwks_file_is_reloaded_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, include_str!("testdata/other-jwks.json")).unwrap();
    let mut config = config();
    config.jwks_file = path.clone();
    let validator = JwtValidator {
        jwks: WatchedFile::open(&path, parse_jwks, false, std::time::Duration::ZERO)
            .await
            .unwrap(),
        config,
    };
    let token = rs256(Some("rsa-1"), &claims());
    assert!(validator.validate(&token, NOW_S * 1000).await.is_err());
    std::fs::write(&path, JWKS).unwrap();
    assert!(validator.validate(&token, NOW_S * 1000).await.is_ok());
}
