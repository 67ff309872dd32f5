//! MetaStore keys of the group coordinator, and the ranges that select them.
//!
//! - `groups/<group>`: the group's metadata (one depth-2 key per group, so listing every group
//!   is one range scan that touches no offsets);
//! - `group-offsets/<group>/<topic>/<partition>`: one committed offset.
//!
//! Group ids may contain any character, '/' included, so ids (and, defensively, topic names)
//! are percent-encoded: '%', '/' and control characters become `%XX`. An encoded segment
//! therefore never contains '/' or a control character, which the range bounds below rely on.

pub const GROUPS_PREFIX: &str = "groups/";
/// Upper bound of the depth-1 `groups/<group>` keys in Oxia's order (`//` adds no level).
pub const GROUPS_END: &str = "groups//";
const OFFSETS_ROOT: &str = "group-offsets";

pub fn encode_segment(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c == '%' || c == '/' || c.is_control() {
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

/// Inverse of [`encode_segment`]; `None` for text that no encoding produces.
pub fn decode_segment(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = encoded.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

pub fn group_key(group_id: &str) -> String {
    format!("{GROUPS_PREFIX}{}", encode_segment(group_id))
}

/// The group id of a `groups/<group>` key.
pub fn group_id_of(key: &str) -> Option<String> {
    decode_segment(key.strip_prefix(GROUPS_PREFIX)?)
}

pub fn offset_key(group_id: &str, topic: &str, partition: i32) -> String {
    format!(
        "{OFFSETS_ROOT}/{}/{}/{partition}",
        encode_segment(group_id),
        encode_segment(topic)
    )
}

/// `(topic, partition)` of an offset key.
pub fn topic_partition_of(key: &str) -> Option<(String, i32)> {
    let mut parts = key.rsplitn(3, '/');
    let partition = parts.next()?.parse().ok()?;
    let topic = decode_segment(parts.next()?)?;
    Some((topic, partition))
}

/// Every offset key of a group: the depth-3 keys `group-offsets/<group>/<topic>/<partition>`.
pub fn group_offsets_range(group_id: &str) -> (String, String) {
    let prefix = format!("{OFFSETS_ROOT}/{}/", encode_segment(group_id));
    // Both bounds are depth 3, as the keys are (the server sorts by depth first). An encoded
    // topic never starts with a control character, and '/' sorts above every other byte.
    (format!("{prefix}\u{1}/"), format!("{prefix}/~"))
}

/// Every offset key of one topic in a group.
pub fn topic_offsets_range(group_id: &str, topic: &str) -> (String, String) {
    let prefix = format!(
        "{OFFSETS_ROOT}/{}/{}/",
        encode_segment(group_id),
        encode_segment(topic)
    );
    // Partitions are decimal numbers: every one sorts below '~'.
    (prefix.clone(), format!("{prefix}~"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use metastore::compare_keys;
    use std::cmp::Ordering;

    fn in_range(key: &str, (min, max): &(String, String)) -> bool {
        compare_keys(key, min) != Ordering::Less && compare_keys(key, max) == Ordering::Less
    }

    #[test]
    fn encoding_round_trips_and_hides_slashes() {
        for raw in [
            "plain",
            "a/b",
            "100%",
            "dots.dash-under_score",
            "tab\there",
            "ünï/cødé",
            "",
        ] {
            let encoded = encode_segment(raw);
            assert!(
                !encoded.contains('/') && !encoded.contains('\u{1}'),
                "{encoded}"
            );
            assert_eq!(decode_segment(&encoded).as_deref(), Some(raw));
        }
        assert_eq!(encode_segment("a/b%"), "a%2Fb%25");
        assert_eq!(decode_segment("%zz"), None);
    }

    #[test]
    fn group_offsets_range_holds_exactly_that_groups_offsets() {
        let groups = ["g", "g.1", "g-", "g/x", "g%", "gg", "f", "h", "g/"];
        let topics = ["t", "t.a", "t-b", "u", "a"];
        for group in groups {
            let range = group_offsets_range(group);
            for other in groups {
                for topic in topics {
                    for partition in [0, 7, 10, 123] {
                        let key = offset_key(other, topic, partition);
                        assert_eq!(in_range(&key, &range), other == group, "{key} in {range:?}");
                    }
                }
                assert!(!in_range(&group_key(other), &range));
            }
        }
    }

    #[test]
    fn topic_offsets_range_holds_exactly_that_topics_offsets() {
        let topics = ["t", "t.a", "t-b", "tt", "s", "u", "t_"];
        for topic in topics {
            let range = topic_offsets_range("grp", topic);
            for other in topics {
                for partition in [0, 5, 11] {
                    let key = offset_key("grp", other, partition);
                    assert_eq!(in_range(&key, &range), other == topic, "{key} in {range:?}");
                }
                assert!(!in_range(&offset_key("grp2", other, 0), &range));
            }
        }
    }

    #[test]
    fn group_keys_sort_inside_the_groups_range_and_offsets_outside() {
        let range = (GROUPS_PREFIX.to_string(), GROUPS_END.to_string());
        for group in ["a", "a/b", "z.z", "%"] {
            assert!(in_range(&group_key(group), &range));
            assert!(!in_range(&offset_key(group, "t", 0), &range));
            assert_eq!(group_id_of(&group_key(group)).as_deref(), Some(group));
        }
        assert_eq!(
            topic_partition_of(&offset_key("g/h", "t.x", 12)),
            Some(("t.x".to_string(), 12))
        );
    }
}
