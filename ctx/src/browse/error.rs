//! The one error type of the browse module. Every message is short, names what was refused
//! or failed, and never quotes the response body: a fetched page is untrusted text, and
//! errors travel to logs and to the agent verbatim.

use std::net::IpAddr;
use std::time::Duration;

/// Longest URL quoted in an error message; longer ones are cut so that a hostile
/// redirect target cannot flood logs.
const MAX_QUOTED_URL_CHARS: usize = 200;

/// Why a URL could not be fetched or read.
#[derive(Debug, thiserror::Error)]
pub enum BrowseError {
    /// The URL (given or from a redirect's `Location`) could not be parsed.
    #[error("invalid URL {url}: {reason}")]
    InvalidUrl {
        /// The URL as given, shortened for the message.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The URL's scheme is neither `http` nor `https`.
    #[error("unsupported URL scheme {scheme:?}: only http and https URLs can be fetched")]
    UnsupportedScheme {
        /// The scheme that was refused.
        scheme: String,
    },

    /// The host resolved to an address that the SSRF guard blocks.
    #[error(
        "refused {address} ({reason}) for host {host}: private addresses are blocked; \
         start the server with --allow-private-urls to allow them"
    )]
    Refused {
        /// The host name or IP literal from the URL.
        host: String,
        /// The blocked address it resolved to.
        address: IpAddr,
        /// The address range it falls in, e.g. `loopback` or `cloud metadata service`.
        reason: &'static str,
    },

    /// The host name could not be resolved to any address.
    #[error("could not resolve host {host}: {message}")]
    Resolve {
        /// The host name from the URL.
        host: String,
        /// The resolver's explanation.
        message: String,
    },

    /// The whole request, redirects and body included, took longer than allowed.
    #[error("request timed out after {} ms", limit.as_millis())]
    Timeout {
        /// The configured time limit for the whole request.
        limit: Duration,
    },

    /// The server redirected more often than allowed.
    #[error("too many redirects (the limit is {limit})")]
    TooManyRedirects {
        /// The configured maximum number of redirects.
        limit: u32,
    },

    /// The final response had a status outside 200–299.
    #[error("HTTP status {status} from {url}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The URL that answered it (after redirects), shortened for the message.
        url: String,
    },

    /// The response is not text (an image, an archive, a PDF, ...).
    #[error("not a text page: content type {content_type:?}")]
    NotText {
        /// The content type the server declared, or a note that the body looked binary.
        content_type: String,
    },

    /// Connecting, TLS, or the HTTP exchange failed.
    #[error("could not fetch the page: {message}")]
    Transport {
        /// What went wrong, from the HTTP client.
        message: String,
    },
}

/// Shortens a URL (or any untrusted string) for quoting in an error message, cutting on
/// a character boundary and replacing control characters so a message stays one line.
pub(super) fn quote_for_message(untrusted: &str) -> String {
    let mut quoted: String = untrusted
        .chars()
        .take(MAX_QUOTED_URL_CHARS)
        .map(|character| {
            if character.is_control() {
                '?'
            } else {
                character
            }
        })
        .collect();
    if untrusted.chars().nth(MAX_QUOTED_URL_CHARS).is_some() {
        quoted.push('…');
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_urls_are_cut_and_control_characters_replaced() {
        let long_url = format!("http://example.com/{}", "a".repeat(500));
        let quoted = quote_for_message(&long_url);
        assert_eq!(quoted.chars().count(), MAX_QUOTED_URL_CHARS + 1);
        assert!(quoted.ends_with('…'));
        assert_eq!(
            quote_for_message("http://x/\r\nSet-Cookie"),
            "http://x/??Set-Cookie"
        );
    }

    #[test]
    fn refused_message_names_address_reason_and_host() {
        let error = BrowseError::Refused {
            host: "localhost".to_string(),
            address: IpAddr::from([127, 0, 0, 1]),
            reason: "loopback",
        };
        assert_eq!(
            error.to_string(),
            "refused 127.0.0.1 (loopback) for host localhost: private addresses are blocked; \
             start the server with --allow-private-urls to allow them"
        );
    }
}
