//! Pages that are text but not HTML: the body is kept as it is, the title comes from the
//! URL, and Markdown pages also get their headings listed.

use url::Url;

use super::html::{collapse_whitespace, shorten};
use super::{FetchedPage, PageText};

/// Same caps as for HTML headings.
const MAX_HEADINGS: usize = 50;
const MAX_HEADING_CHARS: usize = 300;

/// The [`PageText`] of a non-HTML text page with media type `essence`.
pub(super) fn extract_plain(page: &FetchedPage, essence: &str) -> PageText {
    let headings = if is_markdown(essence, &page.final_url) {
        markdown_headings(&page.text)
    } else {
        Vec::new()
    };
    PageText {
        title: title_from_url(&page.final_url),
        description: String::new(),
        headings,
        body: page.text.clone(),
    }
}

/// The last non-empty path segment of `url`, else its host, else the URL itself.
pub(super) fn title_from_url(url: &str) -> String {
    let Ok(parsed) = Url::parse(url) else {
        return url.to_string();
    };
    let last_segment = parsed
        .path_segments()
        .and_then(|mut segments| segments.rfind(|segment| !segment.is_empty()))
        .map(str::to_string);
    last_segment
        .or_else(|| parsed.host_str().map(str::to_string))
        .unwrap_or_else(|| url.to_string())
}

/// Markdown is often served as `text/plain` (raw file hosts), so the file name counts too.
fn is_markdown(essence: &str, url: &str) -> bool {
    if matches!(essence, "text/markdown" | "text/x-markdown") {
        return true;
    }
    let path = Url::parse(url)
        .map(|parsed| parsed.path().to_ascii_lowercase())
        .unwrap_or_default();
    path.ends_with(".md") || path.ends_with(".markdown")
}

/// ATX headings of levels 1–3 (`#`, `##`, `###`), skipping fenced code blocks where `#`
/// starts shell comments.
fn markdown_headings(text: &str) -> Vec<String> {
    let mut headings = Vec::new();
    let mut open_fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence = ["```", "~~~"]
            .into_iter()
            .find(|fence| trimmed.starts_with(fence));
        if let Some(fence) = fence
            && indent <= 3
        {
            open_fence = match open_fence {
                Some(open) if open == fence => None,
                Some(open) => Some(open),
                None => Some(fence),
            };
            continue;
        }
        if open_fence.is_some() || indent > 3 {
            continue;
        }
        if let Some(heading) = atx_heading_text(trimmed) {
            headings.push(shorten(&collapse_whitespace(heading), MAX_HEADING_CHARS));
            if headings.len() == MAX_HEADINGS {
                break;
            }
        }
    }
    headings
}

/// The text of a level 1–3 ATX heading line, without its closing `#`s.
fn atx_heading_text(line: &str) -> Option<&str> {
    let level = line.bytes().take_while(|&byte| byte == b'#').count();
    if !(1..=3).contains(&level) {
        return None;
    }
    let after_marks = line.get(level..)?;
    if !(after_marks.is_empty() || after_marks.starts_with([' ', '\t'])) {
        return None;
    }
    let text = after_marks.trim().trim_end_matches('#').trim_end();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, content_type: &str, text: &str) -> FetchedPage {
        FetchedPage {
            final_url: url.to_string(),
            status: 200,
            content_type: content_type.to_string(),
            text: text.to_string(),
            body_truncated: false,
        }
    }

    #[test]
    fn title_is_the_last_path_segment_or_the_host() {
        assert_eq!(
            title_from_url("https://example.com/docs/guide.txt"),
            "guide.txt"
        );
        assert_eq!(title_from_url("https://example.com/docs/"), "docs");
        assert_eq!(title_from_url("https://example.com/"), "example.com");
        assert_eq!(title_from_url("not a url"), "not a url");
    }

    #[test]
    fn markdown_headings_skip_fenced_code() {
        let markdown = "# Title\n\nText\n\n```sh\n# not a heading\n```\n## Section ##\n#### Too deep\n#NoSpace\n   ### Indented\n";
        let extracted = extract_plain(
            &page("https://x.org/README.md", "text/plain", markdown),
            "text/plain",
        );
        assert_eq!(extracted.headings, ["Title", "Section", "Indented"]);
        assert_eq!(extracted.title, "README.md");
        assert_eq!(extracted.body, markdown);
    }

    #[test]
    fn plain_text_and_json_keep_their_body_without_headings() {
        let extracted = extract_plain(
            &page(
                "https://x.org/api/data.json",
                "application/json",
                "{\"# a\": 1}",
            ),
            "application/json",
        );
        assert!(extracted.headings.is_empty());
        assert_eq!(extracted.title, "data.json");
        assert_eq!(extracted.body, "{\"# a\": 1}");
    }
}
