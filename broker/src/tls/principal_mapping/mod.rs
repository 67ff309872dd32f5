//! Kafka's `ssl.principal.mapping.rules`: how the subject of a client certificate becomes a
//! principal name. Rules are tried in order and the first that applies gives the name:
//!
//! - `DEFAULT`: the subject itself, in RFC 2253 form (`CN=alice,OU=eng,O=acme`);
//! - `RULE:pattern/replacement/[L|U]`: if `pattern` matches the whole subject, every match of
//!   it is replaced by `replacement` (`$1` names a group), then lower- or upper-cased.
//!
//! The list is split and each rule parsed with Kafka's own expressions (`SslPrincipalMapper`),
//! and replacements expand as Java's `Matcher.replaceAll` does, so a rule means here what it
//! means to Kafka. Patterns are compiled by the `regex` crate: look-around, backreferences and
//! possessive quantifiers are refused when the broker starts. A subject no rule applies to is
//! refused, as Kafka refuses it (the connection is closed).

use std::fmt;

use regex::{Captures, Regex};

/// Kafka's rule grammar, verbatim from `SslPrincipalMapper` (groups: 1 DEFAULT, 2 pattern,
/// 4 replacement, 6 case, 7 anything else).
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";

/// The rules of one `ssl_principal_mapping_rules` value.
#[derive(Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

#[derive(Clone)]
enum Rule {
    Default,
    Replace {
        /// Pattern and replacement as written, for messages.
        pattern_text: String,
        replacement_text: String,
        /// The pattern, anchored at both ends: does it match the whole subject?
        whole: Regex,
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

impl PrincipalMapper {
    /// Parses a rule list; the error names the rule and what is wrong with it.
    pub fn parse(text: &str) -> Result<PrincipalMapper, String> {
        let splitter = Regex::new(&format!(
            r"(?-u:\s)*({RULE_PATTERN})(?-u:\s)*(,(?-u:\s)*|$)"
        ))
        .map_err(|e| e.to_string())?;
        let parser = Regex::new(&format!("^(?:{RULE_PATTERN})")).map_err(|e| e.to_string())?;
        let mut rules = Vec::new();
        for found in splitter.captures_iter(text.trim()) {
            let rule = found.get(1).map_or("", |m| m.as_str());
            if let Some(rule) = parse_rule(&parser, rule)? {
                rules.push(rule);
            }
        }
        Ok(PrincipalMapper { rules })
    }

    /// The principal name of a client whose certificate subject is `subject` (RFC 2253);
    /// `None` when no rule applies.
    pub fn name(&self, subject: &str) -> Option<String> {
        self.rules.iter().find_map(|rule| rule.apply(subject))
    }
}

impl Default for PrincipalMapper {
    fn default() -> PrincipalMapper {
        PrincipalMapper {
            rules: vec![Rule::Default],
        }
    }
}

fn parse_rule(parser: &Regex, rule: &str) -> Result<Option<Rule>, String> {
    let parsed = parser
        .captures(rule)
        .ok_or_else(|| format!("invalid rule {rule:?}"))?;
    let end = parsed.get(0).map_or(0, |m| m.end());
    if end != rule.len() {
        return Err(format!(
            "invalid rule {rule:?}: unexpected {:?}",
            &rule[end..]
        ));
    }
    if parsed.get(1).is_some() {
        return Ok(Some(Rule::Default));
    }
    let (Some(pattern), Some(replacement)) = (parsed.get(2), parsed.get(4)) else {
        // Only an empty rule gets here (",," or a trailing comma): ignored, as by Kafka.
        return Ok(None);
    };
    let case = match parsed.get(6).map(|m| m.as_str()) {
        Some("L") => Case::Lower,
        Some("U") => Case::Upper,
        _ => Case::Keep,
    };
    let compile = |source: &str| {
        Regex::new(source).map_err(|e| format!("rule {rule:?}: pattern not supported: {e}"))
    };
    let compiled = compile(pattern.as_str())?;
    let whole = compile(&format!(r"^(?:{})\z", pattern.as_str()))?;
    let replacement = escape_missing_groups(replacement.as_str(), compiled.captures_len() - 1);
    check_replacement(&replacement, &compiled).map_err(|e| format!("rule {rule:?}: {e}"))?;
    Ok(Some(Rule::Replace {
        pattern_text: pattern.as_str().to_string(),
        replacement_text: parsed.get(4).map_or("", |m| m.as_str()).to_string(),
        whole,
        pattern: compiled,
        replacement,
        case,
    }))
}

impl Rule {
    fn apply(&self, subject: &str) -> Option<String> {
        let Rule::Replace {
            whole,
            pattern,
            replacement,
            case,
            ..
        } = self
        else {
            return Some(subject.to_string());
        };
        if !whole.is_match(subject) {
            return None;
        }
        let replaced = replace_all(pattern, subject, replacement);
        Some(match case {
            Case::Keep => replaced,
            Case::Lower => replaced.to_lowercase(),
            Case::Upper => replaced.to_uppercase(),
        })
    }
}

/// Java's `String.replaceAll`: an empty match right after a non-empty one is replaced too
/// (the `regex` crate's iterators skip it), and the search moves one character past an empty
/// match.
fn replace_all(pattern: &Regex, text: &str, replacement: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut from) = (0, 0);
    while from <= text.len() {
        let Some(found) = pattern.captures_at(text, from) else {
            break;
        };
        let Some(whole) = found.get(0) else { break };
        out.push_str(&text[copied..whole.start()]);
        expand(replacement, &found, &mut out);
        copied = whole.end();
        from = if whole.is_empty() {
            whole.end() + text[whole.end()..].chars().next().map_or(1, char::len_utf8)
        } else {
            whole.end()
        };
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

/// Appends `replacement` with Java's `Matcher.appendReplacement` syntax: `\x` is `x`, `$n`
/// takes as many digits as still name a group, `${name}` names a group. [`check_replacement`]
/// has refused anything else.
fn expand(replacement: &str, found: &Captures<'_>, out: &mut String) {
    let groups = found.len() - 1;
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '$' if chars.peek() == Some(&'{') => {
                chars.next();
                let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                out.push_str(found.name(&name).map_or("", |m| m.as_str()));
            }
            '$' => {
                let mut group = chars.next().and_then(|d| d.to_digit(10)).unwrap_or(0) as usize;
                while let Some(digit) = chars.peek().and_then(|d| d.to_digit(10)) {
                    let longer = group * 10 + digit as usize;
                    if longer > groups {
                        break;
                    }
                    group = longer;
                    chars.next();
                }
                out.push_str(found.get(group).map_or("", |m| m.as_str()));
            }
            c => out.push(c),
        }
    }
}

/// Kafka's `escapeLiteralBackReferences`: a `$n` naming a group the pattern does not have is
/// literal text (`$4` with three groups stays `$4`), after Java's rule that `$123` falls back
/// to `$12`, then `$1`, while the longer number names no group.
fn escape_missing_groups(replacement: &str, groups: usize) -> String {
    if groups == 0 {
        return replacement.to_string();
    }
    let mut out = String::with_capacity(replacement.len() + 4);
    let mut rest = replacement;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && !after.starts_with('0') {
            let mut group: usize = after[..digits].parse().unwrap_or(usize::MAX);
            while group > groups && group >= 10 {
                group /= 10;
            }
            if group > groups {
                out.push('\\');
            }
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Refuses, when the broker starts, a replacement that Java would fail on for every subject.
fn check_replacement(replacement: &str, pattern: &Regex) -> Result<(), String> {
    let groups = pattern.captures_len() - 1;
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // The escaped character is skipped with its backslash.
            '\\' => chars
                .next()
                .map(drop)
                .ok_or("replacement ends with an unescaped \\")?,
            '$' => match chars.next() {
                Some('{') => {
                    let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    if !pattern.capture_names().flatten().any(|n| n == name) {
                        return Err(format!("replacement names no group {name:?}"));
                    }
                }
                Some(d) if d.is_ascii_digit() => {
                    let group = d.to_digit(10).unwrap_or(0) as usize;
                    if group > groups {
                        return Err(format!(
                            "replacement names group {group}, the pattern has {groups}"
                        ));
                    }
                }
                _ => return Err("replacement has a $ without a group number".into()),
            },
            _ => {}
        }
    }
    Ok(())
}

impl fmt::Display for Rule {
    /// As Kafka's `Rule.toString`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Default => f.write_str("DEFAULT"),
            Rule::Replace {
                pattern_text,
                replacement_text,
                case,
                ..
            } => {
                write!(f, "RULE:{pattern_text}/{replacement_text}")?;
                match case {
                    Case::Keep => Ok(()),
                    Case::Lower => f.write_str("/L"),
                    Case::Upper => f.write_str("/U"),
                }
            }
        }
    }
}

impl fmt::Display for PrincipalMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rules: Vec<String> = self.rules.iter().map(Rule::to_string).collect();
        write!(f, "[{}]", rules.join(", "))
    }
}

impl fmt::Debug for PrincipalMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrincipalMapper({self})")
    }
}

#[cfg(test)]
mod tests;
