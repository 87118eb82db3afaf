//! Fetching one URL over HTTP(S) with the SSRF guard on every hop.
//!
//! ureq is used with its own redirect following switched off (`max_redirects(0)`): each
//! `Location` is resolved and checked by `guard.rs` exactly like the first URL. For each
//! hop, the addresses the guard approved are pinned into a custom ureq `Resolver`, so ureq
//! connects to nothing else, whatever DNS would answer a second time. Proxies from the
//! environment are ignored, since a proxy would connect on our behalf to unchecked
//! addresses. One deadline covers resolution, all hops and the body.

use std::io::{self, Read};
use std::time::Duration;

use ureq::Agent;
use ureq::config::Config;
use ureq::http::{Response, Uri, header};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use url::Url;

use super::deadline::Deadline;
use super::decode::{self, TextKind};
use super::error::{BrowseError, quote_for_message};
use super::guard::{self, CheckedTarget};

/// Sent as `User-Agent`: names the tool so that site operators can tell what fetched them.
const USER_AGENT: &str = concat!("batho-ctx-browse/", env!("CARGO_PKG_VERSION"));

/// Sent as `Accept`: HTML first, then other text, anything as a last resort.
const ACCEPT: &str = "text/html,application/xhtml+xml,text/plain;q=0.9,text/*;q=0.8,*/*;q=0.5";

/// Body bytes read per `read` call.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// How a fetch is allowed to behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    /// Lift the SSRF guard's address refusals (loopback, private networks, link-local,
    /// metadata services, ...). Off by default; meant for local development servers.
    pub allow_private_addresses: bool,
    /// Body bytes kept at most; a longer body is cut there and marked truncated.
    pub max_body_bytes: u64,
    /// Time allowed for the whole fetch: resolution, every redirect hop and the body.
    pub timeout: Duration,
    /// Redirects followed at most before giving up with [`BrowseError::TooManyRedirects`].
    pub max_redirects: u32,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            allow_private_addresses: false,
            max_body_bytes: 5 * 1024 * 1024,
            timeout: Duration::from_secs(15),
            max_redirects: 5,
        }
    }
}

/// A fetched text response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPage {
    /// The URL that finally answered, after redirects, without its `#fragment` and without
    /// any user name or password it carried.
    pub final_url: String,
    /// The final HTTP status (always 2xx).
    pub status: u16,
    /// The media type without parameters, lowercase (`text/html`). When the server sent
    /// none or `application/octet-stream`, the type sniffed from the body: `text/html` or
    /// `text/plain`.
    pub content_type: String,
    /// The body decoded to UTF-8 (lossily), using the charset from the header, a
    /// byte-order mark or an HTML `<meta>` declaration, else UTF-8.
    pub text: String,
    /// True when the body was longer than `max_body_bytes` and was cut.
    pub body_truncated: bool,
}

/// Fetches `url` (http or https) under the SSRF guard and returns its text.
///
/// Redirects are followed up to `options.max_redirects`, each hop checked like the first;
/// non-2xx final statuses, non-text content types and every network failure are errors.
pub fn fetch(url: &str, options: &FetchOptions) -> Result<FetchedPage, BrowseError> {
    let deadline = Deadline::starting_now(options.timeout);
    let mut current_url = parse_request_url(url)?;
    let mut redirects_followed: u32 = 0;
    loop {
        let target = guard::check_hop(&current_url, options.allow_private_addresses, &deadline)?;
        let response = send_get(&current_url, target, &deadline)?;
        if let Some(next_url) = redirect_target(&current_url, &response)? {
            if redirects_followed >= options.max_redirects {
                return Err(BrowseError::TooManyRedirects {
                    limit: options.max_redirects,
                });
            }
            redirects_followed += 1;
            current_url = next_url;
            continue;
        }
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(BrowseError::Status {
                status,
                url: url_for_display(&current_url),
            });
        }
        return read_page(current_url, response, options, &deadline);
    }
}

/// Parses the caller's URL. The fragment is dropped: it is never sent to a server.
fn parse_request_url(text: &str) -> Result<Url, BrowseError> {
    let mut url = Url::parse(text.trim()).map_err(|parse_error| BrowseError::InvalidUrl {
        url: quote_for_message(text),
        reason: parse_error.to_string(),
    })?;
    guard::check_scheme(&url)?;
    url.set_fragment(None);
    Ok(url)
}

/// `url` without user name and password, shortened: what error messages and the stored
/// page may show (credentials in a URL must not end up in logs or in the context graph).
fn url_for_display(url: &Url) -> String {
    let mut shown = url.clone();
    // Both only fail for URLs that cannot carry credentials, which then have none to strip.
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    quote_for_message(shown.as_str())
}

/// The next URL when `response` is a redirect with a `Location`, resolved against the
/// current URL (relative locations are common). Other 3xx answers fall through to the
/// status check.
pub(super) fn redirect_target(
    current_url: &Url,
    response: &Response<ureq::Body>,
) -> Result<Option<Url>, BrowseError> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = response.headers().get(header::LOCATION) else {
        return Ok(None);
    };
    let invalid_location = |reason: String| BrowseError::InvalidUrl {
        url: quote_for_message(&String::from_utf8_lossy(location.as_bytes())),
        reason,
    };
    let location_text = location
        .to_str()
        .map_err(|_| invalid_location("the redirect Location is not ASCII".to_string()))?;
    let mut next_url = current_url
        .join(location_text.trim())
        .map_err(|join_error| invalid_location(format!("bad redirect Location: {join_error}")))?;
    next_url.set_fragment(None);
    Ok(Some(next_url))
}

/// Sends one GET to `url`, connecting only to the guard-checked addresses of `target`.
fn send_get(
    url: &Url,
    target: CheckedTarget,
    deadline: &Deadline,
) -> Result<Response<ureq::Body>, BrowseError> {
    let time_left = deadline.remaining()?;
    let config = Config::builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(time_left)
        .user_agent(USER_AGENT)
        .accept(ACCEPT)
        .build();
    let resolver = PinnedResolver {
        expected_host: url.host_str().unwrap_or_default().to_ascii_lowercase(),
        target,
    };
    let agent = Agent::with_parts(config, DefaultConnector::new(), resolver);
    agent
        .get(url.as_str())
        .call()
        .map_err(|transport_error| translate_ureq_error(transport_error, deadline))
}

/// A ureq resolver that answers only for the host that was checked, with the addresses
/// that were checked. Any other host (which would mean ureq asked about something we did
/// not vet) gets no address.
#[derive(Debug)]
struct PinnedResolver {
    /// The host exactly as the request URL spells it (IPv6 in brackets), lowercase.
    expected_host: String,
    target: CheckedTarget,
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let requested_host = uri.host().map(str::to_ascii_lowercase);
        let default_port = match uri.scheme_str() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        };
        let requested_port = uri.port_u16().or(default_port);
        if requested_host.as_deref() != Some(self.expected_host.as_str())
            || requested_port != Some(self.target.port)
        {
            return Err(ureq::Error::HostNotFound);
        }
        let mut addresses = self.empty();
        for address in &self.target.addresses {
            if addresses.try_push(*address).is_err() {
                break;
            }
        }
        Ok(addresses)
    }
}

/// Maps ureq's errors onto ours: every kind of timeout becomes [`BrowseError::Timeout`],
/// the rest a short transport message (ureq's messages do not include the body).
fn translate_ureq_error(transport_error: ureq::Error, deadline: &Deadline) -> BrowseError {
    match transport_error {
        ureq::Error::Timeout(_) => deadline.timeout_error(),
        ureq::Error::Io(io_error)
            if matches!(
                io_error.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) =>
        {
            deadline.timeout_error()
        }
        other => BrowseError::Transport {
            message: quote_for_message(&other.to_string()),
        },
    }
}

/// Checks the content type, reads the body up to the cap and decodes it.
fn read_page(
    final_url: Url,
    response: Response<ureq::Body>,
    options: &FetchOptions,
    deadline: &Deadline,
) -> Result<FetchedPage, BrowseError> {
    let status = response.status().as_u16();
    let content_type_header = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    let essence = decode::media_type_essence(&content_type_header);
    let declared_kind = decode::text_kind_of(&essence);
    if declared_kind.is_none() && !decode::is_undeclared_type(&essence) {
        return Err(BrowseError::NotText {
            content_type: quote_for_message(&essence),
        });
    }
    let max_body_bytes = usize::try_from(options.max_body_bytes).unwrap_or(usize::MAX);
    let mut reader = response.into_body().into_reader();
    let mut body = Vec::new();
    // For an undeclared type, look at the first bytes before downloading the rest.
    let sniff_limit = max_body_bytes.min(decode::SNIFF_BYTES);
    read_up_to(&mut reader, &mut body, sniff_limit, deadline)?;
    let (kind, content_type) = match declared_kind {
        Some(kind) => (kind, essence),
        None => sniffed_kind(&body, &essence)?,
    };
    read_up_to(&mut reader, &mut body, max_body_bytes, deadline)?;
    let body_truncated = body.len() >= max_body_bytes && has_more_bytes(&mut reader);
    let header_charset = decode::charset_parameter(&content_type_header);
    let text = decode::decode_body(&body, header_charset, kind, body_truncated);
    Ok(FetchedPage {
        final_url: url_for_display(&final_url),
        status,
        content_type,
        text,
        body_truncated,
    })
}

/// The kind and reported media type of a body whose server did not say what it is.
fn sniffed_kind(prefix: &[u8], essence: &str) -> Result<(TextKind, String), BrowseError> {
    match decode::sniff_text_kind(prefix) {
        Some(TextKind::Html) => Ok((TextKind::Html, "text/html".to_string())),
        Some(TextKind::Plain) => Ok((TextKind::Plain, "text/plain".to_string())),
        None => Err(BrowseError::NotText {
            content_type: if essence.is_empty() {
                "none declared, and the body looks binary".to_string()
            } else {
                format!("{essence}, and the body looks binary")
            },
        }),
    }
}

/// Reads from `reader` into `body` until `body` holds `limit` bytes or the body ends.
/// The buffer grows geometrically but never beyond `limit`, so a body over the cap never
/// costs more memory than the cap.
fn read_up_to(
    reader: &mut impl Read,
    body: &mut Vec<u8>,
    limit: usize,
    deadline: &Deadline,
) -> Result<(), BrowseError> {
    let mut chunk = [0u8; READ_CHUNK_BYTES];
    while body.len() < limit {
        let wanted = (limit - body.len()).min(READ_CHUNK_BYTES);
        let read_count = match reader.read(&mut chunk[..wanted]) {
            Ok(0) => return Ok(()),
            Ok(read_count) => read_count,
            Err(read_error) if read_error.kind() == io::ErrorKind::Interrupted => continue,
            Err(read_error) => {
                return Err(translate_ureq_error(
                    ureq::Error::from(read_error),
                    deadline,
                ));
            }
        };
        if body.capacity() - body.len() < read_count {
            let grown_capacity = (body.capacity() * 2)
                .max(body.len() + read_count)
                .min(limit);
            body.reserve_exact(grown_capacity.saturating_sub(body.len()));
        }
        body.extend_from_slice(&chunk[..read_count]);
    }
    Ok(())
}

/// Whether the body goes on past what was read. A failed read counts as "more": the end
/// of the body was not seen.
fn has_more_bytes(reader: &mut impl Read) -> bool {
    let mut probe = [0u8; 1];
    loop {
        match reader.read(&mut probe) {
            Ok(read_count) => return read_count > 0,
            Err(read_error) if read_error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    fn pinned_to_loopback(expected_host: &str, port: u16) -> PinnedResolver {
        PinnedResolver {
            expected_host: expected_host.to_string(),
            target: CheckedTarget {
                host: expected_host.trim_matches(['[', ']']).to_string(),
                port,
                addresses: vec![SocketAddr::from(([127, 0, 0, 1], port))],
            },
        }
    }

    fn resolve_with(resolver: &PinnedResolver, uri: &str) -> Option<Vec<SocketAddr>> {
        let uri: Uri = uri.parse().ok()?;
        let addresses = resolver
            .resolve(&uri, &Config::default(), NextTimeout::default())
            .ok()?;
        Some(addresses.iter().copied().collect())
    }

    #[test]
    fn pinned_resolver_answers_only_for_the_checked_host_and_port() {
        let resolver = pinned_to_loopback("example.com", 80);
        let expected = vec![SocketAddr::from(([127, 0, 0, 1], 80))];
        assert_eq!(
            resolve_with(&resolver, "http://example.com/x"),
            Some(expected.clone())
        );
        assert_eq!(
            resolve_with(&resolver, "http://EXAMPLE.com:80/"),
            Some(expected)
        );
        assert_eq!(resolve_with(&resolver, "http://other.example/"), None);
        assert_eq!(resolve_with(&resolver, "http://example.com:8080/"), None);
        assert_eq!(resolve_with(&resolver, "https://example.com/"), None);
    }

    #[test]
    fn pinned_resolver_matches_bracketed_ipv6_hosts() {
        let resolver = pinned_to_loopback("[::1]", 8080);
        assert!(resolve_with(&resolver, "http://[::1]:8080/").is_some());
    }

    #[test]
    fn credentials_are_not_displayed() {
        let url = Url::parse("https://user:secret@example.com/path?q=1").ok();
        let shown = url.as_ref().map(url_for_display);
        assert_eq!(shown.as_deref(), Some("https://example.com/path?q=1"));
    }
}
