//! The subject of a client certificate as Kafka names it: the RFC 2253 string of Java's
//! `X500Principal.getName()` (`CN=alice,OU=eng,O=acme`), which is what principal mapping
//! rules match. Java's rules, followed here: the last RDN of the certificate comes first;
//! CN, C, L, ST, O, OU, STREET, DC and UID by keyword, any other attribute as its dotted OID
//! with `#` and the hex of its DER value; `,=+<>#;"\` escaped with `\`, as are leading and
//! trailing spaces; a multi-valued RDN joined with `+`.
//!
//! Only the few DER structures on the way to the subject are read (certificate, TBS
//! certificate, name); the certificate itself was already verified by rustls, or the
//! handshake would not have finished.

use std::fmt::Write;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed certificate: {0}")]
pub struct MalformedCertificate(&'static str);

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const VERSION: u8 = 0xa0;

/// The subject DN of a DER certificate, in Java's RFC 2253 form.
pub fn subject_rfc2253(certificate: &[u8]) -> Result<String, MalformedCertificate> {
    let mut certificate = Der(certificate);
    let mut tbs = Der(certificate.expect(SEQUENCE, "certificate")?);
    let mut tbs = Der(tbs.expect(SEQUENCE, "tbs certificate")?);
    if tbs.peek_tag() == Some(VERSION) {
        tbs.any()?;
    }
    for _ in ["serial number", "signature algorithm", "issuer", "validity"] {
        tbs.any()?;
    }
    let name = tbs.expect(SEQUENCE, "subject")?;
    name_rfc2253(name)
}

/// An X.501 `Name` (the content of its SEQUENCE) in RFC 2253 form.
fn name_rfc2253(name: &[u8]) -> Result<String, MalformedCertificate> {
    let mut rdns = Vec::new();
    let mut name = Der(name);
    while !name.is_empty() {
        let mut set = Der(name.expect(SET, "relative distinguished name")?);
        let mut values = Vec::new();
        while !set.is_empty() {
            let mut pair = Der(set.expect(SEQUENCE, "attribute")?);
            let oid = oid_text(pair.expect(OID, "attribute type")?)?;
            let (tag, value, encoded) = pair.any()?;
            values.push(attribute(&oid, tag, value, encoded));
        }
        rdns.push(values.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

fn attribute(oid: &str, tag: u8, value: &[u8], encoded: &[u8]) -> String {
    match (keyword(oid), decode_string(tag, value)) {
        (Some(keyword), Some(text)) => format!("{keyword}={}", escape(&text)),
        // Java prints unknown attributes, and known ones of non-string types, by their DER.
        (keyword, _) => {
            let mut out = format!("{}=#", keyword.unwrap_or(oid));
            for byte in encoded {
                let _ = write!(out, "{byte:02x}");
            }
            out
        }
    }
}

/// The keywords of Java's RFC 2253 output.
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// The text of a string-typed value (Java's `isDerString`), `None` for any other type.
fn decode_string(tag: u8, value: &[u8]) -> Option<String> {
    match tag {
        // UTF8String
        0x0c => Some(String::from_utf8_lossy(value).into_owned()),
        // PrintableString, T61String, IA5String, GeneralString: one byte per character.
        0x13 | 0x14 | 0x16 | 0x1b => Some(value.iter().map(|&b| char::from(b)).collect()),
        // BMPString: UTF-16BE.
        0x1e => {
            let units: Vec<u16> = value
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        // UniversalString: UTF-32BE.
        0x1c => Some(
            value
                .chunks_exact(4)
                .map(|quad| {
                    char::from_u32(u32::from_be_bytes([quad[0], quad[1], quad[2], quad[3]]))
                        .unwrap_or(char::REPLACEMENT_CHARACTER)
                })
                .collect(),
        ),
        _ => None,
    }
}

/// Java's `AVA.toRFC2253String` escaping.
fn escape(text: &str) -> String {
    const ESCAPED: &str = ",=+<>#;\"\\";
    let mut escaped = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if ESCAPED.contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.push_str("\\00");
        } else {
            escaped.push(c);
        }
    }
    let blank = |c: char| c == ' ' || c == '\r';
    let chars: Vec<char> = escaped.chars().collect();
    let lead = chars.iter().take_while(|&&c| blank(c)).count();
    let trail = chars.iter().rev().take_while(|&&c| blank(c)).count();
    let mut out = String::with_capacity(escaped.len() + lead + trail);
    for (i, &c) in chars.iter().enumerate() {
        if i < lead || i >= chars.len() - trail {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Dotted text of an OBJECT IDENTIFIER's content.
fn oid_text(content: &[u8]) -> Result<String, MalformedCertificate> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut arc: u64 = 0;
    for (i, &byte) in content.iter().enumerate() {
        if arc > (u64::MAX >> 7) {
            return Err(MalformedCertificate("object identifier arc too large"));
        }
        arc = (arc << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            if arcs.is_empty() {
                // The first arc packs two: 40 * first + second.
                let first = (arc / 40).min(2);
                arcs.push(first);
                arcs.push(arc - first * 40);
            } else {
                arcs.push(arc);
            }
            arc = 0;
        } else if i + 1 == content.len() {
            return Err(MalformedCertificate("truncated object identifier"));
        }
    }
    if arcs.is_empty() {
        return Err(MalformedCertificate("empty object identifier"));
    }
    let text: Vec<String> = arcs.iter().map(u64::to_string).collect();
    Ok(text.join("."))
}

/// A cursor over DER elements (single-byte tags, definite lengths, as DER has them).
struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn peek_tag(&self) -> Option<u8> {
        self.0.first().copied()
    }

    /// The next element's content, which must have `tag`.
    fn expect(&mut self, tag: u8, what: &'static str) -> Result<&'a [u8], MalformedCertificate> {
        let (found, content, _) = self.any()?;
        if found != tag {
            return Err(MalformedCertificate(what));
        }
        Ok(content)
    }

    /// The next element: tag, content, and the whole encoding.
    fn any(&mut self) -> Result<(u8, &'a [u8], &'a [u8]), MalformedCertificate> {
        let truncated = MalformedCertificate("truncated element");
        let (&tag, rest) = self.0.split_first().ok_or(truncated.clone())?;
        if tag & 0x1f == 0x1f {
            return Err(MalformedCertificate("multi-byte tag"));
        }
        let (&first, rest) = rest.split_first().ok_or(truncated.clone())?;
        let (length, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return Err(MalformedCertificate("bad length"));
            }
            let length = rest[..count]
                .iter()
                .fold(0usize, |n, &b| (n << 8) | usize::from(b));
            (length, &rest[count..])
        };
        if rest.len() < length {
            return Err(truncated);
        }
        let header = self.0.len() - rest.len();
        let encoded = &self.0[..header + length];
        let content = &rest[..length];
        self.0 = &rest[length..];
        Ok((tag, content, encoded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate with the given subject, made by rcgen.
    fn certificate(subject: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_subject_reads_most_specific_first_as_java_prints_it() {
        use rcgen::DnType::*;
        let der = certificate(&[
            (CountryName, "US"),
            (OrganizationName, "acme"),
            (OrganizationalUnitName, "eng"),
            (CommonName, "alice"),
        ]);
        assert_eq!(
            subject_rfc2253(&der).unwrap(),
            "CN=alice,OU=eng,O=acme,C=US"
        );
    }

    #[test]
    fn special_characters_are_escaped_as_java_escapes_them() {
        use rcgen::DnType::*;
        let der = certificate(&[
            (OrganizationName, " Acme, Inc. "),
            (CommonName, "a+b=c#<d>;\"e\\f_g@h"),
        ]);
        // Checked against Java 17's X500Principal.getName() for the same certificate.
        assert_eq!(
            subject_rfc2253(&der).unwrap(),
            r#"CN=a\+b\=c\#\<d\>\;\"e\\f_g@h,O=\ Acme\, Inc.\ "#
        );
    }

    #[test]
    fn other_attributes_print_as_oid_and_der_hex() {
        let der = certificate(&[
            (
                rcgen::DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
                "a@b.c",
            ),
            (rcgen::DnType::CommonName, "alice"),
        ]);
        // rcgen writes the custom attribute as a UTF8String: 0c 05 "a@b.c".
        assert_eq!(
            subject_rfc2253(&der).unwrap(),
            "CN=alice,1.2.840.113549.1.9.1=#0c056140622e63"
        );
    }

    #[test]
    fn an_empty_subject_is_an_empty_name() {
        assert_eq!(subject_rfc2253(&certificate(&[])).unwrap(), "");
    }

    #[test]
    fn truncated_certificates_are_refused() {
        let der = certificate(&[(rcgen::DnType::CommonName, "alice")]);
        assert!(subject_rfc2253(&der[..40]).is_err());
        assert!(subject_rfc2253(&[]).is_err());
        assert_eq!(oid_text(&[0x55, 0x04, 0x03]).unwrap(), "2.5.4.3");
        assert!(oid_text(&[0x55, 0x84]).is_err());
    }
}
