//! The SASL/PLAIN users file (`--sasl-plain-users-file`): one `name:password` per line, as
//! Kafka's JAAS `user_<name>="<password>"` entries list them. The name ends at the first `:`
//! (so names cannot hold one; passwords can), the password runs to the end of the line (a
//! trailing `\r` is dropped). Blank lines and lines starting with `#` are ignored; a name
//! twice is an error. The file must be readable by its owner only, like a private key.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::security::scram::constant_time_eq;

/// Users one file may list.
pub const USERS_MAX: usize = 100_000;

pub struct PlainUsers {
    /// SHA-256 of each password: compared in constant time without leaking its length.
    passwords: HashMap<String, [u8; 32]>,
}

impl PlainUsers {
    pub fn parse(bytes: &[u8]) -> Result<PlainUsers, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
        let mut passwords = HashMap::new();
        for (index, line) in text.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let number = index + 1;
            let (name, password) = line
                .split_once(':')
                .ok_or_else(|| format!("line {number}: expected name:password"))?;
            if name.is_empty() || password.is_empty() {
                return Err(format!("line {number}: empty name or password"));
            }
            if passwords
                .insert(name.to_string(), digest(password.as_bytes()))
                .is_some()
            {
                return Err(format!("line {number}: user {name:?} is listed twice"));
            }
            if passwords.len() > USERS_MAX {
                return Err(format!("more than {USERS_MAX} users"));
            }
        }
        Ok(PlainUsers { passwords })
    }

    /// `None` when the file does not list `user`.
    pub fn check(&self, user: &str, password: &[u8]) -> Option<bool> {
        let expected = self.passwords.get(user)?;
        Some(constant_time_eq(expected, &digest(password)))
    }

    pub fn len(&self) -> usize {
        self.passwords.len()
    }

    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }
}

fn digest(password: &[u8]) -> [u8; 32] {
    Sha256::digest(password).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_give_users_and_their_passwords() {
        let users = PlainUsers::parse(b"# admins\nalice:alice-secret\r\n\nbob:p:w d\n").unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users.check("alice", b"alice-secret"), Some(true));
        assert_eq!(users.check("alice", b"alice-secret\r"), Some(false));
        assert_eq!(users.check("bob", b"p:w d"), Some(true));
        assert_eq!(users.check("carol", b"x"), None);
    }

    #[test]
    fn malformed_files_name_the_line() {
        assert_eq!(
            PlainUsers::parse(b"alice:a\nalice:b\n").err().unwrap(),
            "line 2: user \"alice\" is listed twice"
        );
        assert!(PlainUsers::parse(b"alice\n")
            .err()
            .unwrap()
            .starts_with("line 1"));
        assert!(PlainUsers::parse(b":pw\n").is_err());
        assert!(PlainUsers::parse(b"alice:\n").is_err());
        assert!(PlainUsers::parse(b"\xff:x\n").is_err());
    }
}
