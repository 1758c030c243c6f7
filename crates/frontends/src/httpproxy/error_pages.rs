//! Custom error pages (`errorPages` of a virtual host or a route, a contour-rs extension): each
//! entry's status codes and ranges, and its body, inline or from a labelled ConfigMap of the
//! object's namespace.

use api::httpproxy::ErrorPage;
use ir::{Origin, reason};

use super::Translator;

use objects::ERROR_PAGES_LABEL as CONFIG_MAP_LABEL;

/// The largest page, inline or from a ConfigMap.
const MAX_BODY: usize = 64 * 1024;

/// The content type of a page that names none.
const DEFAULT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// The pages at `field` (`spec.virtualhost.errorPages`, `spec.routes[i].errorPages`); `Err`
/// after recording why one cannot be served (`ErrorPageInvalid` under `condition`).
pub(super) fn pages(
    t: &mut Translator<'_>,
    origin: &Origin,
    condition: &'static str,
    field: &str,
    pages: Option<&[ErrorPage]>,
) -> Result<Vec<ir::ErrorPage>, ()> {
    let mut out = Vec::new();
    for (i, page) in pages.unwrap_or_default().iter().enumerate() {
        let at = format!("{field}[{i}]");
        match one(t, origin, page) {
            Ok(p) => out.push(p),
            Err(e) => {
                t.error(origin, condition, &at, reason::ERROR_PAGE_INVALID, format!("{at}: {e}"));
                return Err(());
            }
        }
    }
    Ok(out)
}

fn one(t: &mut Translator<'_>, origin: &Origin, page: &ErrorPage) -> Result<ir::ErrorPage, String> {
    let status = |code: u16| (100..=599).contains(&code);
    let mut ranges = Vec::new();
    for &code in &page.status_codes {
        if !status(code) {
            return Err(format!("status code {code} is not within 100-599"));
        }
        ranges.push((code, code));
    }
    for r in &page.status_code_ranges {
        if !status(r.start) || !status(r.end) || r.start > r.end {
            return Err(format!("status code range {}-{} is not an ascending range within 100-599", r.start, r.end));
        }
        ranges.push((r.start, r.end));
    }
    if ranges.is_empty() {
        return Err("names no status code (statusCodes or statusCodeRanges)".into());
    }
    let body = match (&page.body.inline, &page.body.config_map) {
        (Some(inline), None) => inline.clone(),
        (None, Some(r)) => {
            let name = format!("{}/{}", origin.namespace, r.name);
            let map = t.config_map(&origin.namespace, &r.name).ok_or_else(|| format!("ConfigMap {name} not found"))?;
            let labelled = map.metadata.labels.as_ref().and_then(|l| l.get(CONFIG_MAP_LABEL));
            if labelled.map(String::as_str) != Some("true") {
                return Err(format!("ConfigMap {name} does not carry the label {CONFIG_MAP_LABEL}: \"true\""));
            }
            let value = map.data.as_ref().and_then(|d| d.get(&r.key));
            value.cloned().ok_or_else(|| format!("ConfigMap {name} has no key {:?}", r.key))?
        }
        _ => return Err("body must set exactly one of inline and configMap".into()),
    };
    if body.len() > MAX_BODY {
        return Err(format!("the page is {} bytes, more than {MAX_BODY}", body.len()));
    }
    let content_type = page.content_type.clone().unwrap_or_else(|| DEFAULT_CONTENT_TYPE.into());
    if content_type.is_empty() {
        return Err("contentType is empty".into());
    }
    if let Some(problem) = ir::header_value_problem(&content_type) {
        return Err(format!("contentType {content_type:?}: {problem}"));
    }
    Ok(ir::ErrorPage { ranges, body, content_type, from_backend: page.from_backend == Some(true) })
}
