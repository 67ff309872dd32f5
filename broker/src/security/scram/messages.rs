//! SCRAM messages (RFC 5802 section 7) as a server reads and writes them. Parsing is strict and
//! total: any input gives a message or a [`MessageError`], never a panic; the reason is for the
//! broker's log only (the client is told no more than "invalid credentials", as Kafka does).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

/// Longest SCRAM message accepted (a client-first message is under 100 bytes in practice).
pub const MESSAGE_BYTES_MAX: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SCRAM message: {0}")]
pub struct MessageError(pub &'static str);

/// `gs2-header client-first-message-bare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// `n,,` or `n,a=alice,`: repeated (base64) in the client-final `c=` attribute.
    pub gs2_header: String,
    /// The authorization id the client asked for (`a=`), empty when none.
    pub authzid: String,
    /// The user name, unescaped (`=2C` -> `,`, `=3D` -> `=`).
    pub username: String,
    pub nonce: String,
    /// Extensions after the nonce (Kafka's `tokenauth=true`), as `key=value` pairs.
    pub extensions: Vec<(String, String)>,
    /// The message without its GS2 header: the first part of the AuthMessage.
    pub bare: String,
}

/// `c=... ,r=... [,extensions] ,p=...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinal {
    /// The decoded `c=` attribute: must be the client-first GS2 header.
    pub channel_binding: Vec<u8>,
    pub nonce: String,
    pub proof: Vec<u8>,
    /// The message without `,p=...`: the last part of the AuthMessage.
    pub without_proof: String,
}

pub fn parse_client_first(bytes: &[u8]) -> Result<ClientFirst, MessageError> {
    let text = message_text(bytes)?;
    let (cbind, rest) = text.split_once(',').ok_or(MessageError("no GS2 header"))?;
    // No channel binding is offered (no -PLUS mechanism): "n", or "y" (the client could bind
    // but believes the server cannot, RFC 5802 section 6).
    if cbind != "n" && cbind != "y" {
        return Err(MessageError("channel binding is not supported"));
    }
    let (authz, bare) = rest.split_once(',').ok_or(MessageError("no GS2 header"))?;
    let authzid = match authz {
        "" => String::new(),
        a => unescape_saslname(a.strip_prefix("a=").ok_or(MessageError("bad authzid"))?)?,
    };
    let gs2_header = format!("{cbind},{authz},");
    let mut fields = bare.split(',');
    let first = fields.next().unwrap_or_default();
    if first.starts_with("m=") {
        // RFC 5802: a mandatory extension this server does not know fails authentication.
        return Err(MessageError("mandatory extension"));
    }
    let username = unescape_saslname(
        first
            .strip_prefix("n=")
            .ok_or(MessageError("no user name"))?,
    )?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .ok_or(MessageError("no nonce"))?;
    check_nonce(nonce)?;
    let extensions = fields.map(parse_extension).collect::<Result<_, _>>()?;
    Ok(ClientFirst {
        gs2_header,
        authzid,
        username,
        nonce: nonce.to_string(),
        extensions,
        bare: bare.to_string(),
    })
}

pub fn parse_client_final(bytes: &[u8]) -> Result<ClientFinal, MessageError> {
    let text = message_text(bytes)?;
    let (without_proof, proof) = text.rsplit_once(",p=").ok_or(MessageError("no proof"))?;
    let proof = BASE64
        .decode(proof)
        .map_err(|_| MessageError("proof is not base64"))?;
    let mut fields = without_proof.split(',');
    let channel_binding = fields
        .next()
        .and_then(|f| f.strip_prefix("c="))
        .ok_or(MessageError("no channel binding"))?;
    let channel_binding = BASE64
        .decode(channel_binding)
        .map_err(|_| MessageError("channel binding is not base64"))?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .ok_or(MessageError("no nonce"))?;
    check_nonce(nonce)?;
    for field in fields {
        parse_extension(field)?;
    }
    Ok(ClientFinal {
        channel_binding,
        nonce: nonce.to_string(),
        proof,
        without_proof: without_proof.to_string(),
    })
}

/// `r=<client nonce><server nonce>,s=<salt>,i=<iterations>`.
pub fn server_first(nonce: &str, salt: &[u8], iterations: i32) -> String {
    format!("r={nonce},s={},i={iterations}", BASE64.encode(salt))
}

/// `v=<server signature>`.
pub fn server_final(signature: &[u8]) -> String {
    format!("v={}", BASE64.encode(signature))
}

/// A user name as a `saslname` (`,` -> `=2C`, `=` -> `=3D`), as clients write it.
pub fn escape_saslname(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// Inverse of [`escape_saslname`]; any other use of `=` is an error (RFC 5802 section 5.1).
pub fn unescape_saslname(escaped: &str) -> Result<String, MessageError> {
    if escaped.is_empty() {
        return Err(MessageError("empty name"));
    }
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3);
        match code {
            Some("2C") => out.push(','),
            Some("3D") => out.push('='),
            _ => return Err(MessageError("bad escape in name")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    if out.contains('\0') {
        return Err(MessageError("NUL in name"));
    }
    Ok(out)
}

fn message_text(bytes: &[u8]) -> Result<&str, MessageError> {
    if bytes.len() > MESSAGE_BYTES_MAX {
        return Err(MessageError("message too long"));
    }
    std::str::from_utf8(bytes).map_err(|_| MessageError("not UTF-8"))
}

/// `printable = %x21-2B / %x2D-7E`: visible ASCII but `,`.
fn check_nonce(nonce: &str) -> Result<(), MessageError> {
    let printable = |b: &u8| (0x21..=0x7e).contains(b) && *b != b',';
    if !nonce.is_empty() && nonce.as_bytes().iter().all(printable) {
        Ok(())
    } else {
        Err(MessageError("bad nonce"))
    }
}

/// `attr-val = ALPHA "=" value`; Kafka's extension names are words (`tokenauth`).
fn parse_extension(field: &str) -> Result<(String, String), MessageError> {
    let (key, value) = field.split_once('=').ok_or(MessageError("bad extension"))?;
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) || value.is_empty() {
        return Err(MessageError("bad extension"));
    }
    Ok((key.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_first_of_rfc_7677_parses() {
        let first = parse_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        assert_eq!(first.gs2_header, "n,,");
        assert_eq!(first.username, "user");
        assert_eq!(first.nonce, "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(first.bare, "n=user,r=rOprNGfwEbeRWgbNEkqO");
        assert!(first.extensions.is_empty() && first.authzid.is_empty());
    }

    #[test]
    fn user_names_unescape_and_stray_equals_fail() {
        let first = parse_client_first(b"n,a=a=2Cb,n=a=2Cb=3Dc,r=x,tokenauth=true").unwrap();
        assert_eq!(first.username, "a,b=c");
        assert_eq!(first.authzid, "a,b");
        assert_eq!(first.extensions, vec![("tokenauth".into(), "true".into())]);
        assert_eq!(escape_saslname("a,b=c"), "a=2Cb=3Dc");
        for bad in ["a=b", "a=2", "a=", "=2c", ""] {
            assert!(unescape_saslname(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_client_first_messages_are_errors() {
        for bad in [
            &b""[..],
            b"n,,",
            b"p=tls-unique,,n=u,r=x",
            b"n,,m=ext,n=u,r=x",
            b"n,,n=u",
            b"n,,n=u,r=",
            b"n,,n=u,r=a\x01b",
            b"n,,r=x,n=u",
            b"n,x,n=u,r=x",
            b"n,,n=u,r=x,=v",
            b"n,,n=\xff,r=x",
        ] {
            assert!(
                parse_client_first(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn client_final_splits_off_the_proof() {
        let message = b"c=biws,r=abc,p=dHpiK2VPbGE=";
        let last = parse_client_final(message).unwrap();
        assert_eq!(last.channel_binding, b"n,,");
        assert_eq!(last.nonce, "abc");
        assert_eq!(last.without_proof, "c=biws,r=abc");
        assert_eq!(last.proof, b"tzb+eOla");
        for bad in [
            &b"c=biws,r=abc"[..],
            b"c=biws,p=AAAA",
            b"c=!!,r=a,p=AAAA",
            b"c=biws,r=a,p=!",
        ] {
            assert!(parse_client_final(bad).is_err());
        }
    }
}
