//! The book's link check: every relative link leads to a file that exists, and every `#anchor`
//! to a heading of its page (mdBook's heading ids).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every broken link under the book's source directory `src`, as `file: link (why)`.
pub fn broken(src: &Path) -> Vec<String> {
    markdown_files(src).iter().flat_map(|file| broken_in(file, src)).collect()
}

/// Every broken link of one Markdown file, shown by its path from `base`.
pub fn broken_in(file: &Path, base: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(text) = std::fs::read_to_string(file) else { return vec![format!("{}: unreadable", file.display())] };
    let dir = file.parent().unwrap_or(base);
    let shown = file.strip_prefix(base).unwrap_or(file).display();
    for link in links(&text) {
        if link.contains("://") || link.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
        let target = if path.is_empty() { file.to_path_buf() } else { dir.join(path) };
        if !target.exists() {
            problems.push(format!("{shown}: {link} (no such file)"));
        } else if !anchor.is_empty() && target.extension().is_some_and(|e| e == "md") {
            let ids = std::fs::read_to_string(&target).map(|t| heading_ids(&t)).unwrap_or_default();
            if !ids.contains(anchor) {
                problems.push(format!("{shown}: {link} (no heading with that id)"));
            }
        }
    }
    problems
}

fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(markdown_files(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The lines outside fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The targets of inline links `[text](target)` outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        // Inline code spans hold no links.
        let line: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or_default();
            out.push(target.trim_matches(['<', '>']).to_string());
            rest = &rest[end..];
        }
    }
    out
}

/// The ids mdBook gives the headings of a page.
pub fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for line in prose(text) {
        let Some(title) = line.strip_prefix('#') else { continue };
        let title = title.trim_start_matches('#').trim();
        let base: String = title
            .chars()
            .filter_map(|c| match c {
                c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c.to_ascii_lowercase()),
                c if c.is_whitespace() => Some('-'),
                _ => None,
            })
            .collect();
        let mut id = base.clone();
        let mut n = 0;
        while !ids.insert(id.clone()) {
            n += 1;
            id = format!("{base}-{n}");
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    #[test]
    fn links_outside_code_and_mdbook_heading_ids() {
        let text = "# Fleets and `tenant` isolation\n[a](x.md#y) `[b](no.md)`\n```\n[c](no.md)\n```\n## Fleets and tenant isolation\n";
        assert_eq!(super::links(text), ["x.md#y"]);
        let ids: Vec<String> = super::heading_ids(text).into_iter().collect();
        assert_eq!(ids, ["fleets-and-tenant-isolation", "fleets-and-tenant-isolation-1"]);
    }
}
