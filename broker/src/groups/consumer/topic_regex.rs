//! Subscriptions by regular expression (KIP-848 `SubscribedTopicRegex`): a pattern matches a
//! topic when it matches the whole name, as RE2J's `matches()` does for Kafka. Compiled
//! patterns and what they matched are cached per pattern and reused until the set of topic
//! names changes (the catalog's names generation), so a heartbeat neither lists the topics nor
//! runs every regex over them.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use regex::{Regex, RegexBuilder};

/// Longest pattern accepted, in bytes (Kafka has no limit; a topic name is at most 249).
pub const PATTERN_BYTES_MAX: usize = 4096;
/// Compiled program and lazy DFA budget of one pattern.
const COMPILED_BYTES_MAX: usize = 1 << 20;
/// Distinct patterns cached by one [`RegexCache`].
pub const CACHED_PATTERNS_MAX: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum TopicRegexError {
    #[error("the regular expression is {length} bytes long, more than {max}")]
    TooLong { length: usize, max: usize },
    /// Bad syntax, or a pattern whose compiled form exceeds the size limit.
    #[error("{0}")]
    Invalid(#[from] regex::Error),
}

/// Compiles `pattern` to match whole topic names.
pub fn compile(pattern: &str) -> Result<Regex, TopicRegexError> {
    if pattern.len() > PATTERN_BYTES_MAX {
        return Err(TopicRegexError::TooLong {
            length: pattern.len(),
            max: PATTERN_BYTES_MAX,
        });
    }
    // The pattern alone first: wrapped, an unbalanced `a)|(b` would parse into something else.
    build(pattern)?;
    build(&format!("^(?:{pattern})$"))
}

fn build(pattern: &str) -> Result<Regex, TopicRegexError> {
    Ok(RegexBuilder::new(pattern)
        .size_limit(COMPILED_BYTES_MAX)
        .dfa_size_limit(COMPILED_BYTES_MAX)
        .build()?)
}

/// The topic names at one generation of the catalog.
#[derive(Debug, Clone)]
pub struct TopicNames {
    generation: u64,
    names: Vec<String>,
}

impl TopicNames {
    pub fn new(generation: u64, mut names: Vec<String>) -> TopicNames {
        names.sort_unstable();
        names.dedup();
        TopicNames { generation, names }
    }
}

struct Entry {
    regex: Regex,
    /// What the pattern matched, and the generation of the names it was matched against.
    matched: Option<(u64, Arc<BTreeSet<String>>)>,
    last_used: u64,
}

#[derive(Default)]
struct Entries {
    by_pattern: HashMap<String, Entry>,
    uses: u64,
}

/// Compiled patterns and their matches, at most `patterns_max`, least recently used evicted.
pub struct RegexCache {
    patterns_max: usize,
    entries: Mutex<Entries>,
}

impl Default for RegexCache {
    fn default() -> Self {
        RegexCache::new(CACHED_PATTERNS_MAX)
    }
}

impl RegexCache {
    pub fn new(patterns_max: usize) -> RegexCache {
        RegexCache {
            patterns_max: patterns_max.max(1),
            entries: Mutex::new(Entries::default()),
        }
    }

    /// The topic names that `pattern` matches, at names generation `generation`; `topics`
    /// lists them, and is called only when the names have changed since this pattern was last
    /// resolved.
    pub fn matching<'n>(
        &self,
        pattern: &str,
        generation: u64,
        topics: impl FnOnce() -> &'n TopicNames,
    ) -> Result<Arc<BTreeSet<String>>, TopicRegexError> {
        let cached = {
            let mut entries = self.lock();
            entries.uses += 1;
            let uses = entries.uses;
            entries.by_pattern.get_mut(pattern).map(|entry| {
                entry.last_used = uses;
                match &entry.matched {
                    Some((matched_at, matched)) if *matched_at == generation => Ok(matched.clone()),
                    _ => Err(entry.regex.clone()),
                }
            })
        };
        // Compiling and matching happen outside the lock: other groups' heartbeats go on.
        let regex = match cached {
            Some(Ok(matched)) => return Ok(matched),
            Some(Err(regex)) => regex,
            None => compile(pattern)?,
        };
        let topics = topics();
        let matched: Arc<BTreeSet<String>> = Arc::new(
            topics
                .names
                .iter()
                .filter(|name| regex.is_match(name))
                .cloned()
                .collect(),
        );
        let mut entries = self.lock();
        if !entries.by_pattern.contains_key(pattern)
            && entries.by_pattern.len() >= self.patterns_max
        {
            let oldest = entries
                .by_pattern
                .iter()
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(pattern, _)| pattern.clone());
            if let Some(oldest) = oldest {
                entries.by_pattern.remove(&oldest);
            }
        }
        let last_used = entries.uses;
        entries.by_pattern.insert(
            pattern.to_string(),
            Entry {
                regex,
                matched: Some((topics.generation, matched.clone())),
                last_used,
            },
        );
        Ok(matched)
    }

    /// Patterns cached now.
    pub fn len(&self) -> usize {
        self.lock().by_pattern.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    // A poisoned lock only means a panic while holding it; every update is a single insert or
    // remove, so the map is consistent.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(generation: u64, names: &[&str]) -> TopicNames {
        TopicNames::new(generation, names.iter().map(|n| n.to_string()).collect())
    }

    fn matched(cache: &RegexCache, pattern: &str, topics: &TopicNames) -> Vec<String> {
        cache
            .matching(pattern, topics.generation, || topics)
            .unwrap()
            .iter()
            .cloned()
            .collect()
    }

    #[test]
    fn a_pattern_must_match_the_whole_topic_name() {
        let regex = compile("orders-.*|ab").unwrap();
        assert!(regex.is_match("orders-eu"));
        assert!(regex.is_match("ab"));
        assert!(!regex.is_match("my-orders-eu"));
        assert!(!regex.is_match("abc"));
        assert!(!regex.is_match("xab"));
    }

    #[test]
    fn unbalanced_parentheses_are_refused_rather_than_reinterpreted() {
        assert!(matches!(compile("a)|(b"), Err(TopicRegexError::Invalid(_))));
        assert!(matches!(compile("(a"), Err(TopicRegexError::Invalid(_))));
        assert!(matches!(compile("*a"), Err(TopicRegexError::Invalid(_))));
    }

    #[test]
    fn java_style_quoting_is_refused_rather_than_misread() {
        // RE2J accepts \Q...\E; the regex crate does not, and must not match something else.
        assert!(matches!(
            compile(r"\Qa.b\E"),
            Err(TopicRegexError::Invalid(_))
        ));
        assert!(compile(r"a\.b").unwrap().is_match("a.b"));
    }

    #[test]
    fn overlong_and_oversized_patterns_are_refused() {
        let long = "a".repeat(PATTERN_BYTES_MAX + 1);
        assert!(matches!(
            compile(&long),
            Err(TopicRegexError::TooLong { .. })
        ));
        // Nested counted repetition blows up the compiled program past the size limit.
        assert!(matches!(
            compile("((a{100}){100}){100}"),
            Err(TopicRegexError::Invalid(_))
        ));
    }

    #[test]
    fn matches_are_reused_until_the_topic_names_change() {
        let cache = RegexCache::default();
        let before = names(1, &["r-1", "r-2", "other"]);
        let first = cache.matching("r-.*", 1, || &before).unwrap();
        let again = cache
            .matching("r-.*", 1, || panic!("names listed again without a change"))
            .unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "matched again without a change"
        );
        assert_eq!(
            *first,
            BTreeSet::from(["r-1".to_string(), "r-2".to_string()])
        );
        let created = names(2, &["r-1", "r-2", "r-3", "other"]);
        assert_eq!(matched(&cache, "r-.*", &created), ["r-1", "r-2", "r-3"]);
        let deleted = names(3, &["r-2", "r-3", "other"]);
        assert_eq!(matched(&cache, "r-.*", &deleted), ["r-2", "r-3"]);
    }

    #[test]
    fn the_cache_keeps_at_most_its_limit_of_patterns_dropping_the_least_recently_used() {
        let cache = RegexCache::new(2);
        let topics = names(1, &["a", "b", "c"]);
        for pattern in ["a", "b", "a", "c"] {
            cache.matching(pattern, 1, || &topics).unwrap();
        }
        assert_eq!(cache.len(), 2);
        let kept = cache
            .lock()
            .by_pattern
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>();
        assert_eq!(kept, BTreeSet::from(["a".to_string(), "c".to_string()]));
    }

    #[test]
    fn invalid_patterns_are_not_cached() {
        let cache = RegexCache::default();
        let topics = names(1, &["a"]);
        assert!(cache.matching("(", 1, || &topics).is_err());
        assert!(cache.is_empty());
    }
}
