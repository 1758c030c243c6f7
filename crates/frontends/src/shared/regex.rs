//! Regular expressions users write (path, header and query matches, rewrites): checked for RE2
//! syntax and size before Envoy sees them.

/// The longest regular expression accepted, in bytes; longer ones are refused before Envoy sees them.
pub const MAX_REGEX_LEN: usize = 1024;

/// Checks that a regular expression is valid RE2 syntax and not too large.
pub fn check_regex(pattern: String) -> Result<String, String> {
    if pattern.is_empty() {
        return Err("a regular expression must not be empty".into());
    }
    if pattern.len() > MAX_REGEX_LEN {
        return Err(format!("regular expression longer than {MAX_REGEX_LEN} bytes"));
    }
    re2_only(&pattern).map_err(|e| format!("invalid regular expression {pattern:?}: {e}"))?;
    let hir = regex_syntax::ParserBuilder::new().nest_limit(64).build().parse(&pattern).map_err(|e| {
        format!("invalid regular expression {pattern:?}: {}", e.to_string().lines().last().unwrap_or_default())
    })?;
    // RE2 refuses a counted repetition over 1000, nested ones multiplied.
    if repetition(&hir) > MAX_REPEAT {
        return Err(format!("invalid regular expression {pattern:?}: repetition counts over {MAX_REPEAT}"));
    }
    Ok(pattern)
}

/// What is wrong with `substitution` as RE2 reads a rewrite of `pattern` (a valid regex): a
/// backslash must start `\\` or a group number the pattern has, and nothing may end the header
/// line. `None` when it is fine.
pub fn substitution_problem(pattern: &str, substitution: &str) -> Option<String> {
    if let Some(problem) = ir::header_value_problem(substitution) {
        return Some(format!("invalid substitution {substitution:?}: {problem}"));
    }
    let groups = regex_syntax::Parser::new().parse(pattern).ok()?.properties().explicit_captures_len();
    let mut chars = substitution.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            continue;
        }
        match chars.next() {
            Some('\\') => {}
            Some(d) if d.is_ascii_digit() => {
                let n = d.to_digit(10).unwrap_or(0) as usize;
                if n > groups {
                    return Some(format!("substitution {substitution:?} names group {n}, the pattern has {groups}"));
                }
            }
            _ => return Some(format!("invalid substitution {substitution:?}: a backslash starts \\N or \\\\")),
        }
    }
    None
}

/// The largest counted repetition RE2 takes (nested counts multiplied).
const MAX_REPEAT: u64 = 1000;

/// The largest product of nested repetition counts in `hir`.
fn repetition(hir: &regex_syntax::hir::Hir) -> u64 {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Repetition(r) => {
            let count = u64::from(r.max.unwrap_or(r.min).max(r.min)).max(1);
            count.saturating_mul(repetition(&r.sub).max(1))
        }
        HirKind::Capture(c) => repetition(&c.sub),
        HirKind::Concat(all) | HirKind::Alternation(all) => all.iter().map(repetition).max().unwrap_or(0),
        _ => 0,
    }
}

/// Refuses what the Rust parser accepts but RE2 (Envoy) does not: flags other than `imsU`, and
/// escapes RE2 lacks (`\u`, `\<`, `\Z`, ...). Envoy would refuse the whole configuration.
fn re2_only(pattern: &str) -> Result<(), String> {
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                let Some(&c) = bytes.get(i + 1) else { return Ok(()) };
                // (`\Q...\E` is RE2's but not the Rust parser's: refused there already.)
                let supported = !c.is_ascii_alphanumeric() && c != b'<' && c != b'>'
                    || b"aftnrvxAzbBdDsSwWpPC01234567".contains(&c);
                if !supported {
                    return Err(format!("escape \\{} is not supported", c as char));
                }
                i += 2;
            }
            b'(' if bytes.get(i + 1) == Some(&b'?') => {
                let rest = &bytes[i + 2..];
                let named = rest.starts_with(b"P<")
                    || (rest.starts_with(b"<") && !rest.starts_with(b"<=") && !rest.starts_with(b"<!"));
                if !named {
                    let flags = rest.iter().take_while(|b| **b != b')' && **b != b':');
                    if let Some(f) = flags.clone().find(|b| !b"imsU-".contains(b)) {
                        return Err(format!("flag {:?} is not supported", *f as char));
                    }
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_regex;

    #[test]
    fn substitutions_name_groups_the_pattern_has() {
        use super::substitution_problem as problem;
        assert_eq!(problem("^/u/([0-9]+)/p/([0-9]+)$", "/p/\\2/by/\\1"), None);
        assert_eq!(problem("^/a$", "/b\\\\c"), None, "an escaped backslash");
        assert!(problem("^/u/([0-9]+)$", "/\\2").is_some_and(|p| p.contains("names group 2, the pattern has 1")));
        assert!(problem("^/a$", "/\\x").is_some_and(|p| p.contains("a backslash starts")));
        assert!(problem("^/a$", "/b\\").is_some());
        assert!(problem("^/a$", "/b\r\nx: y").is_some());
    }

    #[test]
    fn repetitions_re2_refuses_are_refused() {
        for ok in ["a{1000}", "(a{10}){100}", "a{2,1000}b+", "[0-9]{3}-[0-9]{4}"] {
            assert!(check_regex(ok.into()).is_ok(), "{ok}");
        }
        for bad in ["a{1001}", "(a{100}){11}", "a{0,1001}", "((ab){10}c){101}"] {
            let error = check_regex(bad.into()).expect_err(bad);
            assert!(error.contains("repetition counts over 1000"), "{bad}: {error}");
        }
    }
}
