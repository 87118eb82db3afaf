//! Extracting a page's title, description, headings and readable text from HTML.
//!
//! Parsing uses html5ever through `scraper`, which builds the same tree a browser would
//! from any input, however malformed. Every walk over that tree here is iterative
//! (`ego_tree`'s `traverse`), so deep nesting cannot overflow the stack.
//!
//! html5ever itself spends time proportional to the nesting depth on many start tags (the
//! "has a `p` element in button scope" check walks the whole stack of open elements), so
//! 100,000 nested `<div>`s take tens of seconds. The input is therefore fed in chunks, and
//! once the tree is deeper than [`MAX_PARSE_DEPTH`] (browsers also stop nesting elements
//! at a few hundred levels) parsing stops; the rest of the input is reduced to flat text by
//! `flat.rs`, which is linear.

use ego_tree::iter::Edge;
use ego_tree::{NodeId, NodeRef};
use html5ever::driver;
use html5ever::tendril::{StrTendril, TendrilSink};
use scraper::node::Element;
use scraper::{Html, HtmlTreeSink, Node};

use super::PageText;
use super::flat::flat_text_of_markup;
use super::readable::ReadableText;

/// Nesting depth after which parsing stops (see the module documentation). Real pages
/// stay far below it; at this depth 5 MiB of hostile markup still parses in about a second.
const MAX_PARSE_DEPTH: usize = 256;

/// Bytes handed to the parser between two depth checks. Small enough that one chunk
/// cannot nest much deeper than the limit, large enough that checks cost nothing.
const PARSE_CHUNK_BYTES: usize = 4096;

/// At most this many headings are kept.
const MAX_HEADINGS: usize = 50;

/// Longest title, heading and description kept, in characters; longer ones end in `…`.
const MAX_TITLE_CHARS: usize = 300;
const MAX_HEADING_CHARS: usize = 300;
const MAX_DESCRIPTION_CHARS: usize = 1_000;

/// Raw text gathered for one title or heading before whitespace is collapsed; bounds the
/// copy made of a hostile multi-megabyte heading.
const MAX_COLLECTED_BYTES: usize = 16 * 1024;

const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";

/// Elements that never show text to a reader, skipped everywhere.
const NEVER_RENDERED: &[&str] = &[
    "script", "style", "noscript", "template", "iframe", "object", "embed", "canvas", "video",
    "audio", "map",
];

/// Site chrome around the content, left out of the body text and the headings.
const CHROME_ELEMENTS: &[&str] = &["nav", "aside", "footer"];
const CHROME_ROLES: &[&str] = &["navigation", "complementary", "contentinfo"];

/// Not text of the page itself: document metadata and form controls.
const NOT_BODY_TEXT: &[&str] = &["head", "title", "button", "select", "textarea", "input"];

/// Extracts title, description, headings (h1–h3) and readable body text from an HTML
/// document. Never panics, whatever the input; see the module documentation for how
/// pathological nesting is handled.
pub fn extract_html(html: &str) -> PageText {
    let parsed = parse_with_depth_limit(html);
    let scan = scan_document(&parsed.document);
    let mut body = render_content(&parsed.document, &scan);
    if let Some(unparsed_tail) = parsed.unparsed_tail {
        let tail_text = flat_text_of_markup(unparsed_tail);
        if !tail_text.is_empty() {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str(&tail_text);
        }
    }
    let title = [scan.title, scan.open_graph_title, scan.first_h1]
        .into_iter()
        .flatten()
        .find(|candidate| !candidate.is_empty())
        .unwrap_or_default();
    let description = [
        scan.description,
        scan.open_graph_description,
        scan.twitter_description,
    ]
    .into_iter()
    .flatten()
    .map(|text| shorten(&collapse_whitespace(&text), MAX_DESCRIPTION_CHARS))
    .find(|candidate| !candidate.is_empty())
    .unwrap_or_default();
    PageText {
        title,
        description,
        headings: scan.headings,
        body,
    }
}

/// A parsed document and the part of the input left unparsed because it nested too deep.
struct ParsedHtml<'input> {
    document: Html,
    unparsed_tail: Option<&'input str>,
}

fn parse_with_depth_limit(html: &str) -> ParsedHtml<'_> {
    let mut parser =
        driver::parse_document(HtmlTreeSink::new(Html::new_document()), Default::default());
    let mut parsed_up_to = 0;
    while parsed_up_to < html.len() {
        let chunk_end = chunk_end_before_tag(html, parsed_up_to);
        let Some(chunk) = html.get(parsed_up_to..chunk_end) else {
            break;
        };
        parser.process(StrTendril::from_slice(chunk));
        parsed_up_to = chunk_end;
        if depth_of_newest_node(&parser) > MAX_PARSE_DEPTH {
            break;
        }
    }
    ParsedHtml {
        document: parser.finish(),
        unparsed_tail: html.get(parsed_up_to..).filter(|tail| !tail.is_empty()),
    }
}

/// How deep the most recently created node sits. The parser inserts new nodes at its
/// current node, the top of its stack of open elements, so this tracks that stack's depth.
fn depth_of_newest_node(parser: &driver::Parser<HtmlTreeSink>) -> usize {
    let Ok(document) = parser.tokenizer.sink.sink.0.try_borrow() else {
        return 0;
    };
    document
        .tree
        .nodes()
        .next_back()
        .map_or(0, |newest| newest.ancestors().count())
}

/// Where the chunk starting at `chunk_start` ends: just before the last `<` within
/// [`PARSE_CHUNK_BYTES`], so that the parser is not left inside a half-read tag when
/// parsing stops there (it would turn the `<` into text), else on a character boundary.
fn chunk_end_before_tag(html: &str, chunk_start: usize) -> usize {
    let mut window_end = (chunk_start + PARSE_CHUNK_BYTES).min(html.len());
    while !html.is_char_boundary(window_end) {
        window_end += 1;
    }
    if window_end == html.len() {
        return window_end;
    }
    let last_tag_start = html
        .get(chunk_start..window_end)
        .and_then(|window| window.rfind('<'))
        .filter(|&offset| offset > 0);
    last_tag_start.map_or(window_end, |offset| chunk_start + offset)
}

/// What one pass over the whole document found.
#[derive(Debug, Default)]
struct DocumentScan {
    title: Option<String>,
    open_graph_title: Option<String>,
    first_h1: Option<String>,
    description: Option<String>,
    open_graph_description: Option<String>,
    twitter_description: Option<String>,
    headings: Vec<String>,
    /// The first `<main>` (or `role="main"`) outside site chrome.
    main_element: Option<NodeId>,
    /// `<article>`s outside chrome and not inside another article, in document order.
    top_level_articles: Vec<NodeId>,
    body_element: Option<NodeId>,
}

/// What the scanner is gathering the text of.
#[derive(Debug)]
enum CollectionTarget {
    Title,
    Heading { is_h1: bool },
}

#[derive(Debug)]
struct Collection {
    element: NodeId,
    target: CollectionTarget,
    raw_text: String,
}

/// State of the single scanning pass (see [`scan_document`]).
#[derive(Debug, Default)]
struct Scanner {
    scan: DocumentScan,
    /// The element whose subtree is being skipped, if any.
    skipped_subtree: Option<NodeId>,
    collection: Option<Collection>,
    /// How many chrome elements (nav, aside, footer) enclose the current node.
    chrome_depth: usize,
    /// How many articles enclose the current node.
    article_depth: usize,
}

fn scan_document(document: &Html) -> DocumentScan {
    let mut scanner = Scanner::default();
    for edge in document.tree.root().traverse() {
        match edge {
            Edge::Open(node) => scanner.open(node),
            Edge::Close(node) => scanner.close(node),
        }
    }
    scanner.scan
}

impl Scanner {
    fn open(&mut self, node: NodeRef<'_, Node>) {
        if self.skipped_subtree.is_some() {
            return;
        }
        match node.value() {
            Node::Text(text) => {
                if let Some(collection) = &mut self.collection {
                    push_bounded(&mut collection.raw_text, text, MAX_COLLECTED_BYTES);
                }
            }
            Node::Element(element) => self.open_element(node.id(), element),
            _ => {}
        }
    }

    fn open_element(&mut self, id: NodeId, element: &Element) {
        if !is_html_element(element) || is_never_rendered(element) {
            self.skipped_subtree = Some(id);
            return;
        }
        let name = element.name();
        if is_chrome(element) {
            self.chrome_depth += 1;
        }
        match name {
            "title" if self.scan.title.is_none() && self.collection.is_none() => {
                self.start_collecting(id, CollectionTarget::Title);
            }
            "h1" | "h2" | "h3" if self.collection.is_none() => {
                let is_h1 = name == "h1";
                self.start_collecting(id, CollectionTarget::Heading { is_h1 });
            }
            "meta" => self.read_meta(element),
            "body" => self.scan.body_element = Some(id),
            "article" => {
                if self.article_depth == 0 && self.chrome_depth == 0 {
                    self.scan.top_level_articles.push(id);
                }
                self.article_depth += 1;
            }
            _ => {}
        }
        let is_main = name == "main" || element.attr("role") == Some("main");
        if is_main && self.chrome_depth == 0 && self.scan.main_element.is_none() {
            self.scan.main_element = Some(id);
        }
        if let Some(collection) = &mut self.collection {
            // `<br>` and block children separate words inside a heading.
            if name == "br" || name == "p" || name == "div" {
                collection.raw_text.push(' ');
            }
        }
    }

    fn close(&mut self, node: NodeRef<'_, Node>) {
        if self.skipped_subtree == Some(node.id()) {
            self.skipped_subtree = None;
            return;
        }
        if self.skipped_subtree.is_some() {
            return;
        }
        let Node::Element(element) = node.value() else {
            return;
        };
        if is_chrome(element) {
            self.chrome_depth = self.chrome_depth.saturating_sub(1);
        }
        if element.name() == "article" {
            self.article_depth = self.article_depth.saturating_sub(1);
        }
        if self
            .collection
            .as_ref()
            .is_some_and(|collection| collection.element == node.id())
        {
            self.finish_collecting();
        }
    }

    fn start_collecting(&mut self, element: NodeId, target: CollectionTarget) {
        self.collection = Some(Collection {
            element,
            target,
            raw_text: String::new(),
        });
    }

    fn finish_collecting(&mut self) {
        let Some(collection) = self.collection.take() else {
            return;
        };
        let text = collapse_whitespace(&collection.raw_text);
        match collection.target {
            CollectionTarget::Title => self.scan.title = Some(shorten(&text, MAX_TITLE_CHARS)),
            CollectionTarget::Heading { is_h1 } => {
                if text.is_empty() {
                    return;
                }
                if is_h1 && self.scan.first_h1.is_none() {
                    self.scan.first_h1 = Some(shorten(&text, MAX_TITLE_CHARS));
                }
                if self.chrome_depth == 0 && self.scan.headings.len() < MAX_HEADINGS {
                    self.scan.headings.push(shorten(&text, MAX_HEADING_CHARS));
                }
            }
        }
    }

    /// Keeps the first description and Open Graph / Twitter title and description. Pages
    /// spell the key in `name` or in `property`, in any case.
    fn read_meta(&mut self, element: &Element) {
        let Some(content) = element.attr("content") else {
            return;
        };
        for key in [element.attr("name"), element.attr("property")]
            .into_iter()
            .flatten()
        {
            let slot = match key.trim().to_ascii_lowercase().as_str() {
                "description" => &mut self.scan.description,
                "og:description" => &mut self.scan.open_graph_description,
                "twitter:description" => &mut self.scan.twitter_description,
                "og:title" => &mut self.scan.open_graph_title,
                _ => continue,
            };
            if slot.is_none() {
                let text = collapse_whitespace(content);
                *slot = Some(shorten(&text, MAX_DESCRIPTION_CHARS));
            }
        }
    }
}

/// Renders the readable text of the best content root: `<main>`, else the top-level
/// `<article>`s, else `<body>`, else the whole document; a root that renders to nothing
/// (an empty `<main>` shell filled by scripts) falls through to the next.
fn render_content(document: &Html, scan: &DocumentScan) -> String {
    let body_or_document = scan
        .body_element
        .unwrap_or_else(|| document.tree.root().id());
    let candidates: [(Vec<NodeId>, bool); 3] = [
        (scan.main_element.into_iter().collect(), false),
        (scan.top_level_articles.clone(), false),
        // Outside `<main>`/`<article>` a `<header>` is the site banner, not the content's.
        (vec![body_or_document], true),
    ];
    for (roots, drop_headers) in candidates {
        let mut writer = ReadableText::default();
        for root in roots.iter().filter_map(|&id| document.tree.get(id)) {
            render_subtree(root, drop_headers, &mut writer);
            writer.separate_sections();
        }
        let text = writer.finish();
        if !text.is_empty() {
            return text;
        }
    }
    String::new()
}

fn render_subtree(root: NodeRef<'_, Node>, drop_headers: bool, writer: &mut ReadableText) {
    let mut skipped_subtree: Option<NodeId> = None;
    for edge in root.traverse() {
        match edge {
            Edge::Open(node) if skipped_subtree.is_none() => match node.value() {
                Node::Text(text) => writer.push_text(text),
                Node::Element(element) => {
                    if is_left_out_of_body(element, drop_headers) {
                        skipped_subtree = Some(node.id());
                    } else {
                        writer.open_element(element.name());
                    }
                }
                _ => {}
            },
            Edge::Close(node) if skipped_subtree == Some(node.id()) => skipped_subtree = None,
            Edge::Close(node) if skipped_subtree.is_none() => {
                if let Node::Element(element) = node.value() {
                    writer.close_element(element.name());
                }
            }
            Edge::Open(_) | Edge::Close(_) => {}
        }
    }
}

fn is_html_element(element: &Element) -> bool {
    &*element.name.ns == HTML_NAMESPACE
}

/// Scripts, styles, embedded objects and anything the page marks as hidden.
fn is_never_rendered(element: &Element) -> bool {
    if NEVER_RENDERED.contains(&element.name()) || element.attr("hidden").is_some() {
        return true;
    }
    if element
        .attr("aria-hidden")
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
    {
        return true;
    }
    element.attr("style").is_some_and(|style| {
        let compact: String = style
            .chars()
            .filter(|character| !character.is_whitespace())
            .collect();
        compact.to_ascii_lowercase().contains("display:none")
    })
}

fn is_chrome(element: &Element) -> bool {
    CHROME_ELEMENTS.contains(&element.name())
        || element
            .attr("role")
            .is_some_and(|role| CHROME_ROLES.contains(&role.trim()))
}

fn is_left_out_of_body(element: &Element, drop_headers: bool) -> bool {
    !is_html_element(element)
        || is_never_rendered(element)
        || is_chrome(element)
        || NOT_BODY_TEXT.contains(&element.name())
        || (drop_headers && (element.name() == "header" || element.attr("role") == Some("banner")))
}

/// Appends as much of `text` as fits in `limit_bytes`, cutting on a character boundary.
fn push_bounded(buffer: &mut String, text: &str, limit_bytes: usize) {
    let room = limit_bytes.saturating_sub(buffer.len());
    if room == 0 {
        return;
    }
    let mut cut = room.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    buffer.push_str(text.get(..cut).unwrap_or_default());
}

/// Joins the words of `text` with single spaces.
pub(super) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts `text` to `max_chars` characters, marking a cut with `…`.
pub(super) fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default().trim_end()),
        None => text.to_string(),
    }
}
