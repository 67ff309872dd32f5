//! Oxia's slash-aware key order, and a byte encoding that sorts the same way.

use std::cmp::Ordering;

/// Compares keys the way the Oxia server does (`CompareWithSlash`): segment by segment on `/`,
/// where at any level a key with no further `/` sorts before one with a deeper segment.
pub fn compare_keys(mut a: &str, mut b: &str) -> Ordering {
    while !a.is_empty() && !b.is_empty() {
        match (a.find('/'), b.find('/')) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(ia), Some(ib)) => match a[..ia].cmp(&b[..ib]) {
                Ordering::Equal => {
                    a = &a[ia + 1..];
                    b = &b[ib + 1..];
                }
                other => return other,
            },
        }
    }
    a.len().cmp(&b.len())
}

/// Encodes a key so that plain byte order of encodings equals [`compare_keys`] order. Lets a
/// byte-ordered engine (SQLite, a B-tree) serve Oxia-ordered ranges. Keys must not contain NUL.
///
/// Each segment followed by `/` becomes `0x01 segment 0x00`; the last segment becomes
/// `0x00 segment`. A final segment therefore sorts before any deeper one at the same level.
pub fn sort_key(key: &str) -> Vec<u8> {
    debug_assert!(!key.contains('\0'), "keys must not contain NUL");
    let mut out = Vec::with_capacity(key.len() + 8);
    let mut rest = key;
    while let Some(i) = rest.find('/') {
        out.push(0x01);
        out.extend_from_slice(&rest.as_bytes()[..i]);
        out.push(0x00);
        rest = &rest[i + 1..];
    }
    out.push(0x00);
    out.extend_from_slice(rest.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn final_segment_sorts_before_deeper_one() {
        assert_eq!(compare_keys("a/z", "a/b/c"), Ordering::Less);
        assert_eq!(compare_keys("a//", "a/b"), Ordering::Greater);
        assert_eq!(compare_keys("a/b", "a/b/"), Ordering::Less);
        assert_eq!(compare_keys("", "a/b"), Ordering::Less);
    }

    proptest! {
        #[test]
        fn sort_key_order_matches_oxia_order(a in "[ab/-]{0,8}", b in "[ab/-]{0,8}") {
            prop_assert_eq!(sort_key(&a).cmp(&sort_key(&b)), compare_keys(&a, &b));
        }
    }
}
