//! `ctx_tree_browse`: a web page fetched under the SSRF guard ([`crate::browse`]), its
//! readable text stored as a `web_chunk` node (cached by URL: a later browse of the same
//! URL returns the stored node unless `force`), and an excerpt cut to the token budget.

use batho_engine::query::Value;
use serde::Serialize;

use crate::browse::{FetchOptions, PageText, extract, fetch};
use crate::graph::{ContextGraph, CtxError, Properties, parameters, text_of};
use crate::kinds::{EdgeKind, NodeKind, NodeStatus};
use crate::tokens;

/// The default excerpt budget, in o200k tokens.
pub const DEFAULT_BUDGET_TOKENS: usize = 2000;

/// What `ctx_tree_browse` asks.
#[derive(Clone, Debug, Default)]
pub struct BrowseRequest {
    /// The http(s) URL.
    pub url: String,
    /// The excerpt's budget.
    pub budget_tokens: Option<usize>,
    /// Fetch again even when the URL is stored.
    pub force: bool,
    /// Loopback and private addresses allowed (`--allow-private-urls`).
    pub allow_private_addresses: bool,
}

/// What `ctx_tree_browse` answers (the seed's keys).
#[derive(Clone, Debug, Serialize)]
pub struct BrowseOutcome {
    /// The stored page.
    #[serde(rename = "nodeId")]
    pub node_id: String,
    /// The URL asked for.
    pub url: String,
    /// The page title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Its headings.
    pub headings: Vec<String>,
    /// Whether the stored node was returned without fetching.
    pub cached: bool,
    /// Whether `content` is shorter than the stored text (or the body was cut at the
    /// size limit).
    pub truncated: bool,
    /// The text, within the budget.
    pub content: String,
}

/// Fetches (or finds) the page and stores it. See the module documentation.
pub fn browse(
    graph: &mut ContextGraph,
    request: &BrowseRequest,
) -> Result<BrowseOutcome, CtxError> {
    let budget = request.budget_tokens.unwrap_or(DEFAULT_BUDGET_TOKENS);
    let earlier = stored_pages(graph, &request.url)?;
    if !request.force
        && let Some(stored) = earlier.first()
    {
        return Ok(outcome(
            stored.id.clone(),
            &request.url,
            &stored.page,
            true,
            false,
            budget,
        ));
    }
    let options = FetchOptions {
        allow_private_addresses: request.allow_private_addresses,
        ..FetchOptions::default()
    };
    let fetched =
        fetch(&request.url, &options).map_err(|error| CtxError::Invalid(error.to_string()))?;
    let page = extract(&fetched);
    let mut properties = Properties::new();
    properties.insert("url".into(), Value::from(request.url.as_str()));
    properties.insert("final_url".into(), Value::from(fetched.final_url.as_str()));
    properties.insert("title".into(), Value::from(page.title.as_str()));
    properties.insert("description".into(), Value::from(page.description.as_str()));
    properties.insert(
        "headings".into(),
        Value::List(
            page.headings
                .iter()
                .map(|h| Value::from(h.as_str()))
                .collect(),
        ),
    );
    properties.insert("body_truncated".into(), Value::Bool(fetched.body_truncated));
    properties.insert("text".into(), Value::from(page.body.as_str()));
    let previous = graph.previous();
    graph.begin()?;
    let stored = (|| {
        let id = graph.add_node(NodeKind::WebChunk, properties)?;
        for older in &earlier {
            graph.set_status(&older.id, NodeStatus::Superseded)?;
            graph.link(&id, EdgeKind::Supersedes, &older.id)?;
        }
        Ok::<_, CtxError>(id)
    })();
    let id = match stored {
        Ok(id) => {
            graph.commit()?;
            id
        }
        Err(error) => {
            graph.rollback(previous)?;
            return Err(error);
        }
    };
    Ok(outcome(
        id,
        &request.url,
        &page,
        false,
        fetched.body_truncated,
        budget,
    ))
}

struct StoredPage {
    id: String,
    page: PageText,
}

/// The live stored pages of `url`, newest first.
fn stored_pages(graph: &mut ContextGraph, url: &str) -> Result<Vec<StoredPage>, CtxError> {
    let result = graph.query(
        "MATCH (page:Ctx {url: $url}) WHERE page.kind = 'web_chunk' AND page.status = 'live' \
         RETURN page.id, page.title, page.description, page.headings, page.text \
         ORDER BY id(page) DESC",
        parameters([("url", Value::from(url))]),
    )?;
    Ok(result
        .rows
        .iter()
        .map(|row| StoredPage {
            id: text_of(&row[0]),
            page: PageText {
                title: text_of(&row[1]),
                description: text_of(&row[2]),
                headings: match &row[3] {
                    Value::List(items) => items.iter().map(text_of).collect(),
                    _ => Vec::new(),
                },
                body: text_of(&row[4]),
            },
        })
        .collect())
}

fn outcome(
    node_id: String,
    url: &str,
    page: &PageText,
    cached: bool,
    body_truncated: bool,
    budget: usize,
) -> BrowseOutcome {
    let content = cut_to_tokens(&page.body, budget);
    BrowseOutcome {
        node_id,
        url: url.to_string(),
        title: page.title.clone(),
        description: page.description.clone(),
        headings: page.headings.clone(),
        cached,
        truncated: body_truncated || content.len() < page.body.len(),
        content,
    }
}

/// The longest prefix of `text` (at a character boundary) of at most `budget` tokens.
pub fn cut_to_tokens(text: &str, budget: usize) -> String {
    if tokens::count(text) <= budget {
        return text.to_string();
    }
    let cut = tokens::longest_fitting_prefix(text, |prefix| tokens::count(prefix) <= budget);
    text[..cut].to_string()
}
