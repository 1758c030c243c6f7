//! The page lists every reason, and the registry is complete: a literal where the code emits a
//! reason must be one of `ir::reason::ALL` (the code uses the constants; a new reason written as a
//! literal fails here, naming the file and the literal).

use std::path::{Path, PathBuf};

/// The crates whose non-test code writes reasons.
const SCANNED: &[&str] = &["frontends", "dag", "status", "admission", "provisioner", "controller", "election"];

/// Calls whose CamelCase literal arguments are reasons or condition types: the diagnostic
/// helpers (`error`, `t.error`, `t.warning`, `fail`, `stop`, `problem`, `issue`), the condition
/// builders (`cond`, `both`) and the listener status's `reason_of`.
const CALLS: &[&str] = &["error", "warning", "fail", "stop", "problem", "issue", "cond", "both", "reason_of"];

/// Condition types and HTTPProxy sub-condition types: those calls take them beside reasons.
const CONDITION_TYPES: &[&str] = &[
    "Accepted",
    "AddressesAssigned",
    "AuthError",
    "CORSError",
    "Conflicted",
    "EnvoyError",
    "IPFilterError",
    "IncludeError",
    "InsecureFrontendValidationMode",
    "JWTVerificationError",
    "OIDCError",
    "Orphaned",
    "PartiallyInvalid",
    "PathRewriteError",
    "PrefixReplaceError",
    "Programmed",
    "ResolvedRefs",
    "RootNamespaceError",
    "RouteError",
    "ServiceError",
    "SpecError",
    "SupportedVersion",
    "TCPProxyError",
    "TCPProxyIncludeError",
    "TLSError",
    "VirtualHostError",
];

/// A literal found where a reason goes: its line, its text, and whether it is an argument of one
/// of [`CALLS`] (which may be a condition type) rather than a value given to a `reason`.
#[derive(Debug, PartialEq, Eq)]
struct Literal {
    line: usize,
    text: String,
    in_call: bool,
}

#[test]
fn the_page_lists_every_reason() {
    let page = super::page();
    for r in ir::reason::ALL {
        assert!(page.contains(&format!("| `{}` |", r.name)), "{} missing from the page", r.name);
    }
}

#[test]
fn every_reason_literal_is_registered() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for name in SCANNED {
        rust_files(&root.join("crates").join(name).join("src"), &mut files);
    }
    assert!(files.len() > 50, "found only {} files to scan under {}", files.len(), root.display());
    let mut unregistered = Vec::new();
    let mut condition_types = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        for l in literals(&text) {
            condition_types += usize::from(CONDITION_TYPES.contains(&l.text.as_str()));
            if !registered(&l) {
                let shown = file.strip_prefix(&root).unwrap_or(file).display();
                unregistered.push(format!("{shown}:{}: {:?}", l.line, l.text));
            }
        }
    }
    // The calls are found in the real tree (their condition types are literals).
    assert!(condition_types > 50, "the scan found only {condition_types} condition types");
    assert!(
        unregistered.is_empty(),
        "reasons written as literals and missing from ir::reason (add them there and use the constant):\n{}",
        unregistered.join("\n")
    );
}

#[test]
fn the_scan_finds_literals_where_reasons_go() {
    let source = r##"
fn f(t: &mut T) {
    let d = Diagnostic { reason: "Made Up", field };
    t.error(origin, "RouteError", &format!("{field}.x"), "MadeUp", message("Inner"));
    conditions.push(cond("Accepted", false, "AlsoMadeUp", m, g));
    let reason = "Third";
    if matches!(d.reason, "Fourth" | "Fifth") {}
    let review = json!({"code": 422, "reason": "Sixth", "message": "m"});
    conditions.push(cond("Programmed", false, reason, "Listener is not served", generation));
    let other = ("NotAReason", kind("Gateway"), ir::reason::VALID, r#"reason: "Raw""#);
    // t.error(origin, "RouteError", field, "Commented", message);
}

#[cfg(test)]
mod tests {
    fn g() { error(o, f, "InTest", m); }
}
"##;
    let found = literals(source);
    let shown: Vec<(usize, &str, bool)> = found.iter().map(|l| (l.line, l.text.as_str(), l.in_call)).collect();
    assert_eq!(
        shown,
        [
            (3, "Made Up", false),
            (4, "RouteError", true),
            (4, "MadeUp", true),
            (5, "Accepted", true),
            (5, "AlsoMadeUp", true),
            (6, "Third", false),
            (7, "Fourth", false),
            (7, "Fifth", false),
            (8, "Sixth", false),
            (9, "Programmed", true),
        ]
    );
    let unregistered: Vec<&str> = found.iter().filter(|l| !registered(l)).map(|l| l.text.as_str()).collect();
    assert_eq!(unregistered, ["Made Up", "MadeUp", "AlsoMadeUp", "Third", "Fourth", "Fifth", "Sixth"]);
}

/// Whether a literal is a registered reason (or, as a call's argument, a condition type).
fn registered(l: &Literal) -> bool {
    ir::reason::ALL.iter().any(|r| r.name == l.text) || (l.in_call && CONDITION_TYPES.contains(&l.text.as_str()))
}

/// The `.rs` files under `dir` that are not tests (`tests.rs`, or under a `tests` directory).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() && name != "tests" {
            rust_files(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The literals of one file's code where reasons go: the value given to `reason` (`reason:`,
/// `reason =`, `reason ==`, `"reason":`, the patterns of `matches!(…reason, …)`, through a
/// `Some(`), and the CamelCase arguments of [`CALLS`]. Code from the first inline test module on
/// is left out, and so are comment lines.
fn literals(source: &str) -> Vec<Literal> {
    let code = without_tests_and_comments(source);
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if let Some((content, end)) = literal_at(bytes, i) {
            // `"reason": "…"`, in `json!`.
            if &code[content.clone()] == "reason" {
                for (at, text) in given_to_reason(&code, end, false) {
                    out.push(Literal { line: line_of(at), text, in_call: false });
                }
            }
            i = end;
            continue;
        }
        if !is_word_start(bytes, i) {
            i += 1;
            continue;
        }
        let word_end = (i..bytes.len()).find(|&j| !is_ident(bytes[j])).unwrap_or(bytes.len());
        let word = &code[i..word_end];
        if word == "reason" {
            let field = i > 0 && bytes[i - 1] == b'.';
            for (at, text) in given_to_reason(&code, word_end, field) {
                out.push(Literal { line: line_of(at), text, in_call: false });
            }
        } else if CALLS.contains(&word) && bytes.get(word_end) == Some(&b'(') {
            for (at, text) in call_arguments(&code, word_end + 1) {
                if is_camel_case(&text) {
                    out.push(Literal { line: line_of(at), text, in_call: true });
                }
            }
        }
        i = word_end;
    }
    out
}

/// The literals given to a `reason` whose name ends at `at`: after `:`, `=` or `==` (not `::`,
/// `=>`), optionally inside `Some(`; for a field (`d.reason`) also the CamelCase patterns after a
/// `,` (`matches!(d.reason, "A" | "B")`).
fn given_to_reason(code: &str, at: usize, field: bool) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let skip_space = |from: usize| from + code[from..].len() - code[from..].trim_start().len();
    let mut start = skip_space(at);
    let rest = &code[start..];
    let separator = ["==", ":", "=", ","].into_iter().find(|s| rest.starts_with(s));
    let Some(separator) =
        separator.filter(|s| !rest.starts_with("::") && !rest.starts_with("=>") && (*s != "," || field))
    else {
        return Vec::new();
    };
    start += separator.len();
    let mut out = Vec::new();
    loop {
        start = skip_space(start);
        if code[start..].starts_with("Some(") {
            start = skip_space(start + "Some(".len());
        }
        let Some((content, end)) = literal_at(bytes, start) else { return out };
        let text = code[content].to_string();
        if separator == "," && !is_camel_case(&text) {
            return out;
        }
        out.push((start, text));
        start = skip_space(end);
        match bytes.get(start) {
            Some(b'|') if separator == "," => start += 1,
            _ => return out,
        }
    }
}

/// The string literals among the direct arguments of a call whose arguments start at `at` (only
/// parentheses nest: the literals of a `&[…]` argument count).
fn call_arguments(code: &str, at: usize) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut depth) = (at, 1);
    while i < bytes.len() && depth > 0 {
        if let Some((content, end)) = literal_at(bytes, i) {
            if depth == 1 {
                out.push((i, code[content].to_string()));
            }
            i = end;
            continue;
        }
        match bytes[i] {
            // A character literal such as `'('`.
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    out
}

/// The string literal starting at `at` (`"…"`, or a raw `r"…"`, `r#"…"#`): its content's range
/// and the index just past it.
fn literal_at(bytes: &[u8], at: usize) -> Option<(std::ops::Range<usize>, usize)> {
    if bytes.get(at) == Some(&b'"') {
        let mut i = at + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => return Some((at + 1..i, i + 1)),
                _ => i += 1,
            }
        }
        return Some((at + 1..bytes.len(), bytes.len()));
    }
    if bytes.get(at) != Some(&b'r') || (at > 0 && is_ident(bytes[at - 1])) {
        return None;
    }
    let hashes = bytes[at + 1..].iter().take_while(|&&b| b == b'#').count();
    let open = at + 1 + hashes;
    if bytes.get(open) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
    let content_end = (open + 1..bytes.len()).find(|&i| bytes[i..].starts_with(&close)).unwrap_or(bytes.len());
    Some((open + 1..content_end, (content_end + close.len()).min(bytes.len())))
}

/// `source` up to its first inline test module, with comment lines blanked (lines are kept).
fn without_tests_and_comments(source: &str) -> String {
    let mut end = source.len();
    for (at, _) in source.match_indices("#[cfg(test)]") {
        let rest = source[at + "#[cfg(test)]".len()..].trim_start();
        let Some(module) = rest.strip_prefix("mod ") else { continue };
        let name_end = module.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(module.len());
        if module[name_end..].trim_start().starts_with('{') {
            end = at;
            break;
        }
    }
    let lines = source[..end].lines().map(|l| if l.trim_start().starts_with("//") { "" } else { l });
    lines.collect::<Vec<_>>().join("\n")
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_word_start(bytes: &[u8], i: usize) -> bool {
    is_ident(bytes[i]) && (i == 0 || !is_ident(bytes[i - 1]))
}

/// A CamelCase identifier, as reasons and condition types are.
fn is_camel_case(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_uppercase()) && text.chars().all(|c| c.is_ascii_alphanumeric())
}
