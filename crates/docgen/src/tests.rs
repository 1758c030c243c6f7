//! The committed pages are current, and the book's links lead somewhere.

use std::path::PathBuf;

/// A workspace binary, found as the tests find them.
fn binary(name: &str) -> Option<PathBuf> {
    testkit::workspace_binary(name).ok()
}

#[test]
fn committed_reference_pages_are_current() {
    let pages = crate::pages(&binary).expect("the reference pages generate");
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut stale = Vec::new();
    for page in pages {
        let path = crate::book_src().join(page.path);
        if update {
            std::fs::write(&path, &page.text).expect("write a reference page");
        }
        if std::fs::read_to_string(&path).unwrap_or_default() != page.text {
            stale.push(page.path);
        }
    }
    assert!(stale.is_empty(), "stale in docs/src: {stale:?}; run `UPDATE_DOCS=1 cargo test -p docgen` and commit them");
}

#[test]
fn every_link_in_the_book_leads_somewhere() {
    let broken = crate::links::broken(&crate::book_src());
    assert!(broken.is_empty(), "broken links in docs/src:\n{}", broken.join("\n"));
}

#[test]
fn every_link_in_the_readme_and_changelog_leads_somewhere() {
    let root = crate::book_src().join("../..");
    let broken: Vec<String> =
        ["README.md", "CHANGELOG.md"].iter().flat_map(|f| crate::links::broken_in(&root.join(f), &root)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_chapter_in_the_summary_exists() {
    let src = crate::book_src();
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("docs/src/SUMMARY.md");
    let missing: Vec<&str> = summary
        .lines()
        .filter_map(|l| l.split_once("](").map(|(_, rest)| rest.trim_end_matches(')')))
        .filter(|path| !src.join(path).exists())
        .collect();
    assert!(missing.is_empty(), "chapters in SUMMARY.md without a file: {missing:?}");
}
