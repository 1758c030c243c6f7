//! `--report DIR`: each comparison's medians as JSON, and as a chart of ours over each other
//! controller (an SVG the user guide shows), both from the numbers the tables print.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use crate::table::Row;

/// The measures the chart shows, with a short label each.
const CHARTED: [(&str, &str); 8] = [
    ("start → the last route served", "start → served"),
    ("every HTTPRoute Accepted", "every status written"),
    ("start → every HTTPProxy status valid", "every status written"),
    ("one more app: create → 200 through Envoy, median", "a new app → 200"),
    ("an EndpointSlice change → traffic follows, median", "an endpoint change → traffic"),
    ("bytes to Envoy for a one-route change", "bytes per one-route change"),
    ("controller CPU over the new apps (with the second between each two)", "CPU over the changes"),
    ("peak RSS over the whole run", "peak memory"),
];

/// Writes `<name>.json` and, with another controller to compare with, `<name>.svg` into `dir`.
pub fn write(dir: &Path, name: &str, title: &str, labels: &[&str], rows: &[Row]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let measures: Vec<_> = rows
        .iter()
        .map(|r| json!({"measure": r.name, "unit": r.unit, "medians": labels.iter().zip(&r.medians).map(|(l, m)| json!({"controller": l, "median": m})).collect::<Vec<_>>()}))
        .collect();
    let text = serde_json::to_string_pretty(&json!({"title": title, "controllers": labels, "measures": measures}))?;
    std::fs::write(dir.join(format!("{name}.json")), text + "\n")?;
    if labels.len() > 1 {
        std::fs::write(dir.join(format!("{name}.svg")), chart(title, labels, rows))?;
    }
    Ok(())
}

/// Ratio axis: log scale from 1/100 to 10, 1× in the middle of the bars' room.
const LOW: f64 = 0.01;
const HIGH: f64 = 10.0;

/// Horizontal bars of ours / each other controller per charted measure, on a log scale around
/// 1×: left of the line ours is smaller or faster.
pub fn chart(title: &str, labels: &[&str], rows: &[Row]) -> String {
    let charted: Vec<(&str, &Row)> =
        CHARTED.iter().filter_map(|(long, short)| rows.iter().find(|r| r.name == *long).map(|r| (*short, r))).collect();
    let others = &labels[1..];
    let (left, width, bar, gap, top) = (190.0, 480.0, 14.0, 10.0, 56.0);
    let group = bar * others.len() as f64 + gap;
    let height = top + group * charted.len() as f64 + 40.0;
    let x = |r: f64| left + (r.clamp(LOW, HIGH).log10() - LOW.log10()) / (HIGH.log10() - LOW.log10()) * width;
    let colors = ["#3b6fb6", "#d08a2c", "#6a9a4a", "#9b59b6"];
    let mut svg = String::new();
    let total = left + width + 70.0;
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height}" viewBox="0 0 {total} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(svg, r##"<text x="10" y="18" font-size="13" font-weight="bold">{}</text>"##, escape(title));
    let _ = writeln!(
        svg,
        r##"<text x="10" y="34" fill="#555">contour-rs / the other controller, medians (log scale; left of 1× is better for contour-rs)</text>"##
    );
    for (tick, label) in [(0.01, "0.01×"), (0.1, "0.1×"), (0.5, "0.5×"), (1.0, "1×"), (2.0, "2×"), (10.0, "10×")]
    {
        let tx = x(tick);
        let stroke = if tick == 1.0 { "#333" } else { "#ddd" };
        let _ = writeln!(
            svg,
            r##"<line x1="{tx:.1}" y1="{}" x2="{tx:.1}" y2="{:.1}" stroke="{stroke}"/>"##,
            top - 6.0,
            height - 30.0
        );
        let _ = writeln!(
            svg,
            r##"<text x="{tx:.1}" y="{:.1}" text-anchor="middle" fill="#555">{label}</text>"##,
            height - 16.0
        );
    }
    for (i, (label, row)) in charted.iter().enumerate() {
        let y0 = top + group * i as f64;
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 8.0,
            y0 + group / 2.0,
            escape(label)
        );
        for (j, theirs) in row.medians.iter().skip(1).enumerate() {
            let y = y0 + bar * j as f64;
            let Some(ratio) = row.medians[0].zip(*theirs).filter(|(_, t)| *t > 0.0).map(|(o, t)| o / t) else {
                continue;
            };
            let (a, b) = (x(1.0).min(x(ratio)), x(1.0).max(x(ratio)));
            let color = colors[j % colors.len()];
            let _ = writeln!(
                svg,
                r##"<rect x="{a:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"##,
                (b - a).max(1.0),
                bar - 2.0
            );
            let (tx, anchor) = if ratio < 1.0 { (a - 4.0, "end") } else { (b + 4.0, "start") };
            let _ = writeln!(
                svg,
                r##"<text x="{tx:.1}" y="{:.1}" text-anchor="{anchor}" fill="#333">{ratio:.2}×</text>"##,
                y + bar - 4.0
            );
        }
    }
    for (j, other) in others.iter().enumerate() {
        let lx = left + 150.0 * j as f64;
        let _ =
            writeln!(svg, r##"<rect x="{lx:.1}" y="42" width="10" height="10" fill="{}"/>"##, colors[j % colors.len()]);
        let _ = writeln!(svg, r##"<text x="{:.1}" y="51">against {}</text>"##, lx + 14.0, escape(other));
    }
    svg.push_str("</svg>\n");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use crate::table::Row;

    #[test]
    fn bars_start_at_one_and_show_each_ratio() {
        let rows = [
            Row { name: "peak RSS over the whole run", unit: "MiB", medians: vec![Some(50.0), Some(200.0)] },
            Row { name: "start → the last route served", unit: "s", medians: vec![Some(2.0), None] },
        ];
        let svg = super::chart("N = 1000", &["contour-rs", "Envoy Gateway"], &rows);
        assert!(svg.contains(">0.25×</text>"), "{svg}");
        assert!(svg.contains(">peak memory</text>") && svg.contains(">start → served</text>"));
        assert!(!svg.contains("NaN") && svg.matches("<rect").count() == 3, "background, one bar, one legend: {svg}");
    }
}
