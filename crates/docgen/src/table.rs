//! Markdown tables.

/// One table cell: pipes escaped, angle brackets outside code spans too (they would open HTML
/// tags), line breaks joined, paragraphs kept apart with `<br>`.
pub(crate) fn cell(text: &str) -> String {
    let paragraphs: Vec<String> = text
        .split("\n\n")
        .map(|p| {
            let joined = p.split_whitespace().collect::<Vec<_>>().join(" ");
            let spans = joined.split('`').enumerate();
            let spans =
                spans.map(|(i, s)| if i % 2 == 0 { s.replace('<', "&lt;").replace('>', "&gt;") } else { s.into() });
            spans.collect::<Vec<_>>().join("`")
        })
        .filter(|p| !p.is_empty())
        .collect();
    paragraphs.join("<br>").replace('|', "\\|")
}

/// A table with `header` and `rows`.
pub(crate) fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn cells_keep_one_line_and_escape_pipes() {
        assert_eq!(super::cell("a\n  b | c\n\nd"), "a b \\| c<br>d");
        assert_eq!(super::cell("a <volume> `<x>`"), "a &lt;volume&gt; `<x>`");
    }
}
