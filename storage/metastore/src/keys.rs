//! Oxia's key order, reproduced byte for byte so the embedded store sorts like the server.
//!
//! The Oxia server (v0.15, default "hierarchical" key sorting, `common/compare/encode.go`)
//! stores each key as a 16-bit big-endian count of its `/` separators followed by the key's
//! bytes with every `/` replaced by 0xff. Keys therefore sort by depth first, then by bytes with
//! `/` above every other byte. A trailing `//` does not add a level. Ranges must be built with
//! bounds of the same depth as the keys they select (e.g. `[p/, p//)` for the children of `p`).
//!
//! (The client library's merge comparator, `CompareWithSlash`, orders some keys differently;
//! only the server's order matters for a single shard, which is what every range here reads.)

use std::cmp::Ordering;

const SEPARATOR_ENCODED: u8 = 0xff;
const INTERNAL_KEY_PREFIX: &str = "__oxia/";
const INTERNAL_KEYS_BIT: u16 = 1 << 15;

/// The byte string whose plain order is the server's key order. Keys must not contain NUL.
pub fn sort_key(key: &str) -> Vec<u8> {
    debug_assert!(!key.contains('\0'), "keys must not contain NUL");
    let bytes = key.as_bytes();
    let mut separators = bytes.iter().filter(|&&b| b == b'/').count();
    if separators != 0 && bytes.ends_with(b"//") {
        separators -= 1;
    }
    // The server stores the count in 16 bits; internal keys sort after all others.
    // Truncating on purpose: v0.15 writes `uint16(sepCount)`, which wraps the same way.
    #[allow(clippy::cast_possible_truncation)]
    let mut depth = separators as u16;
    if separators != 0 && key.starts_with(INTERNAL_KEY_PREFIX) {
        depth |= INTERNAL_KEYS_BIT;
    }
    let mut out = Vec::with_capacity(bytes.len() + 2);
    out.extend_from_slice(&depth.to_be_bytes());
    out.extend(
        bytes
            .iter()
            .map(|&b| if b == b'/' { SEPARATOR_ENCODED } else { b }),
    );
    out
}

/// Compares keys in the Oxia server's order.
pub fn compare_keys(a: &str, b: &str) -> Ordering {
    sort_key(a).cmp(&sort_key(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_depth_first() {
        assert_eq!(compare_keys("zzz", "a/b"), Ordering::Less);
        assert_eq!(compare_keys("b/z", "a/c/d"), Ordering::Less);
        assert_eq!(compare_keys("a/b/c", "a/b"), Ordering::Greater);
    }

    #[test]
    fn separators_sort_above_every_other_byte_at_one_depth() {
        assert_eq!(compare_keys("a.b/c", "a/bc"), Ordering::Less);
        assert_eq!(compare_keys("a/z", "a//"), Ordering::Less);
        assert_eq!(compare_keys("a/b-1", "a/b."), Ordering::Less);
    }

    #[test]
    fn children_of_a_prefix_lie_between_p_slash_and_p_slash_slash() {
        let (lo, hi) = ("topics/", "topics//");
        for inside in ["topics/a", "topics/zz.z", "topics/~"] {
            assert_eq!(compare_keys(lo, inside), Ordering::Less, "{inside}");
            assert_eq!(compare_keys(inside, hi), Ordering::Less, "{inside}");
        }
        for outside in ["topics", "topics/a/b", "topicsx/a", "groups/x"] {
            let within = compare_keys(lo, outside) == Ordering::Less
                && compare_keys(outside, hi) == Ordering::Less;
            assert!(!within, "{outside}");
        }
    }

    #[test]
    fn encoding_matches_the_server_byte_for_byte() {
        assert_eq!(sort_key("a/b"), vec![0, 1, b'a', 0xff, b'b']);
        assert_eq!(sort_key("ab"), vec![0, 0, b'a', b'b']);
        assert_eq!(sort_key("a//"), vec![0, 1, b'a', 0xff, 0xff]);
        assert_eq!(
            sort_key("__oxia/x"),
            vec![0x80, 1, b'_', b'_', b'o', b'x', b'i', b'a', 0xff, b'x']
        );
    }
}
