//! Fetching a web page and extracting its readable text, for the `ctx_tree_browse` tool.
//!
//! [`fetch`] downloads one http(s) URL under an SSRF guard: the host is resolved here and
//! every address it resolves to must be public (unless
//! [`FetchOptions::allow_private_addresses`]); the connection goes only to those checked
//! addresses; redirects are followed by hand and every hop is checked again; one timeout
//! covers the whole request; the body is read up to a byte cap; only text is accepted.
//! [`extract`] then turns the page into a [`PageText`]: title, description, headings and
//! body text, through [`extract_html`] for HTML.
//!
//! Module map: `guard` (scheme and address checks, resolution), `fetch` (ureq with a
//! pinned resolver, redirects, body cap), `decode` (content types and charsets), `html`
//! (tree scan and content choice), `readable` (text layout), `flat` (linear fallback for
//! over-deep markup), `plain` (non-HTML pages), `deadline`, `error`.

mod deadline;
mod decode;
mod error;
mod fetch;
mod flat;
mod guard;
mod html;
mod plain;
mod readable;

#[cfg(test)]
mod fetch_tests;
#[cfg(test)]
mod html_tests;
#[cfg(test)]
mod test_server;

pub use error::BrowseError;
pub use fetch::{FetchOptions, FetchedPage, fetch};
pub use guard::blocked_address_reason;
pub use html::extract_html;

/// The readable content of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageText {
    /// The page title: `<title>`, else `og:title`, else the first `<h1>`; for non-HTML
    /// pages (and HTML without any of those) the last segment of the URL.
    pub title: String,
    /// The meta description (`name="description"`, else `og:description`, else
    /// `twitter:description`); empty when there is none.
    pub description: String,
    /// The h1–h3 headings in document order (Markdown `#`–`###` for Markdown pages),
    /// whitespace collapsed, at most 50, navigation and footer headings left out.
    pub headings: Vec<String>,
    /// The readable text: for HTML the content of `<main>` (else the articles, else the
    /// body) without scripts, navigation, headers, footers and asides, one block per line,
    /// blank lines folded; for other text types the text itself.
    pub body: String,
}

/// Extracts the readable content of a fetched page: HTML goes through [`extract_html`];
/// any other text type (plain, Markdown, JSON, XML, ...) is kept as the body, titled by
/// the last segment of its URL.
pub fn extract(page: &FetchedPage) -> PageText {
    let essence = decode::media_type_essence(&page.content_type);
    if decode::text_kind_of(&essence) == Some(decode::TextKind::Html) {
        let mut page_text = extract_html(&page.text);
        if page_text.title.is_empty() {
            page_text.title = plain::title_from_url(&page.final_url);
        }
        return page_text;
    }
    plain::extract_plain(page, &essence)
}
