//! Percent-encoding of names inside MetaStore keys (ACL bindings, SCRAM users, quota
//! entities): each store names the characters its key layout reserves; control characters and
//! `%` are always encoded, so every key parses back to the names it was made from.

/// `text` with `%`, control characters and each of `reserved` written as `%XX` per UTF-8 byte.
pub fn escape(text: &str, reserved: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '%' || c.is_control() || reserved.contains(&c) {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The name [`escape`] encoded; `None` for a malformed escape or bytes that are not UTF-8.
pub fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(text.get(i + 1..i + 3)?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_names_parse_back_and_hold_no_reserved_character() {
        for name in ["alice", "a/b:c%d", "tab\there", "é,=<"] {
            let escaped = escape(name, &[':', '/', ',', '=', '<']);
            assert!(!escaped.contains([':', '/', ',', '=', '<']), "{escaped}");
            assert_eq!(unescape(&escaped).as_deref(), Some(name));
        }
        assert_eq!(unescape("%zz"), None);
        assert_eq!(unescape("%4"), None);
    }
}
