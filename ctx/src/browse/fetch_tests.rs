//! End-to-end tests of `fetch` and `extract` against the loopback test server.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use url::Url;

use super::deadline::Deadline;
use super::test_server::{CannedReply, TestServer};
use super::{BrowseError, FetchOptions, extract, fetch, guard};

const ARTICLE_PAGE: &str = r#"<!doctype html>
<html><head>
<title>  Test   Article </title>
<meta name="description" content="A page used by the fetch tests.">
<script>var leaked = "SCRIPT TEXT";</script>
</head><body>
<nav><a href="/">Home</a></nav>
<main>
<h1>Main heading</h1>
<p>First paragraph.</p>
<h2>Details</h2>
<p>Second paragraph with <b>bold</b> text.</p>
<script>document.write("SCRIPT TEXT")</script>
</main>
<footer>Footer text</footer>
</body></html>"#;

/// Options for the loopback server: private addresses allowed, short timeout.
fn loopback_options() -> FetchOptions {
    FetchOptions {
        allow_private_addresses: true,
        timeout: Duration::from_secs(5),
        ..FetchOptions::default()
    }
}

fn start_site() -> TestServer {
    TestServer::start(|path, own_address| match path {
        "/article" => CannedReply::ok("text/html; charset=utf-8", ARTICLE_PAGE),
        "/hop1" => CannedReply::redirect(302, "/hop2"),
        "/hop2" => CannedReply::redirect(301, &format!("http://{own_address}/dir/hop3")),
        "/dir/hop3" => CannedReply::redirect(307, "../article#section"),
        "/loop" => CannedReply::redirect(302, "/loop"),
        "/missing" => CannedReply::status_only(404),
        "/big" => CannedReply::ok("text/plain", vec![b'a'; 100_000]),
        "/exact" => CannedReply::ok("text/plain", vec![b'b'; 1_000]),
        "/image" => CannedReply::ok("image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
        "/latin1" => CannedReply::ok("text/plain; charset=ISO-8859-1", b"caf\xe9".to_vec()),
        "/readme.md" => CannedReply::ok("text/plain", "# Read me\n\nSome text.\n## Usage\n"),
        "/undeclared-html" => CannedReply {
            status: 200,
            body: b"<!DOCTYPE html><title>Sniffed</title><p>Hi</p>".to_vec(),
            ..CannedReply::default()
        },
        "/undeclared-binary" => CannedReply {
            status: 200,
            headers: vec![(
                "Content-Type".to_string(),
                "application/octet-stream".to_string(),
            )],
            body: b"PK\x03\x04\0\0binary".to_vec(),
            ..CannedReply::default()
        },
        "/slow-head" => CannedReply {
            delay_before_head: Duration::from_secs(3),
            ..CannedReply::ok("text/plain", "late")
        },
        "/slow-body" => CannedReply {
            delay_per_body_byte: Duration::from_millis(100),
            ..CannedReply::ok("text/plain", "trickle trickle trickle")
        },
        _ => CannedReply::status_only(500),
    })
}

#[test]
fn loopback_ip_is_refused_by_default() {
    let site = start_site();
    let refused = fetch(&site.url("/article"), &FetchOptions::default());
    match refused {
        Err(BrowseError::Refused {
            host,
            address,
            reason,
        }) => {
            assert_eq!(host, "127.0.0.1");
            assert_eq!(address, IpAddr::from([127, 0, 0, 1]));
            assert_eq!(reason, "loopback");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn localhost_name_is_refused_by_default() {
    let site = start_site();
    let url = format!("http://localhost:{}/article", site.port());
    let refused = fetch(&url, &FetchOptions::default());
    assert!(
        matches!(refused, Err(BrowseError::Refused { ref host, reason: "loopback", .. }) if host == "localhost"),
        "{refused:?}"
    );
    let message = refused
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(message.contains("for host localhost"), "{message}");
    assert!(message.contains("--allow-private-urls"), "{message}");
}

#[test]
fn html_page_is_fetched_and_extracted() {
    let site = start_site();
    let page = fetch(&site.url("/article"), &loopback_options()).expect("article fetched");
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type, "text/html");
    assert!(!page.body_truncated);
    let text = extract(&page);
    assert_eq!(text.title, "Test Article");
    assert_eq!(text.description, "A page used by the fetch tests.");
    assert_eq!(text.headings, ["Main heading", "Details"]);
    assert_eq!(
        text.body,
        "Main heading\n\nFirst paragraph.\n\nDetails\n\nSecond paragraph with bold text."
    );
    assert!(!text.body.contains("SCRIPT TEXT"));
    assert!(!text.body.contains("Footer text"));
}

#[test]
fn ipv6_loopback_literal_is_refused_then_fetched_when_allowed() {
    let Some(site) =
        TestServer::start_on_ipv6_loopback(|_, _| CannedReply::ok("text/plain", "six"))
    else {
        eprintln!("no IPv6 loopback on this machine; skipping");
        return;
    };
    let url = site.url("/v6");
    assert!(url.starts_with("http://[::1]:"), "{url}");
    assert!(matches!(
        fetch(&url, &FetchOptions::default()),
        Err(BrowseError::Refused {
            reason: "loopback",
            ..
        })
    ));
    let page = fetch(&url, &loopback_options()).expect("IPv6 page fetched");
    assert_eq!(page.text, "six");
}

#[test]
fn credentials_in_the_url_are_not_kept() {
    let site = start_site();
    let url = site
        .url("/article")
        .replace("http://", "http://user:secret@");
    let page = fetch(&url, &loopback_options()).expect("article fetched");
    assert_eq!(page.final_url, site.url("/article"));
}

#[test]
fn redirect_chain_is_followed_with_relative_and_absolute_locations() {
    let site = start_site();
    let page = fetch(&site.url("/hop1"), &loopback_options()).expect("redirects followed");
    assert_eq!(page.final_url, site.url("/article"));
    assert_eq!(extract(&page).title, "Test Article");
}

#[test]
fn redirect_limit_counts_hops() {
    let site = start_site();
    let three_allowed = FetchOptions {
        max_redirects: 3,
        ..loopback_options()
    };
    assert!(fetch(&site.url("/hop1"), &three_allowed).is_ok());
    let two_allowed = FetchOptions {
        max_redirects: 2,
        ..loopback_options()
    };
    assert!(matches!(
        fetch(&site.url("/hop1"), &two_allowed),
        Err(BrowseError::TooManyRedirects { limit: 2 })
    ));
}

#[test]
fn redirect_loop_ends_in_too_many_redirects() {
    let site = start_site();
    let looped = fetch(&site.url("/loop"), &loopback_options());
    assert!(
        matches!(looped, Err(BrowseError::TooManyRedirects { limit: 5 })),
        "{looped:?}"
    );
}

#[test]
fn not_found_is_a_status_error() {
    let site = start_site();
    let missing = fetch(&site.url("/missing"), &loopback_options());
    assert!(
        matches!(missing, Err(BrowseError::Status { status: 404, .. })),
        "{missing:?}"
    );
}

#[test]
fn body_over_the_cap_is_truncated() {
    let site = start_site();
    let capped = FetchOptions {
        max_body_bytes: 10_000,
        ..loopback_options()
    };
    let page = fetch(&site.url("/big"), &capped).expect("big body fetched");
    assert!(page.body_truncated);
    assert_eq!(page.text.len(), 10_000);
    let exact = FetchOptions {
        max_body_bytes: 1_000,
        ..loopback_options()
    };
    let page = fetch(&site.url("/exact"), &exact).expect("exact body fetched");
    assert!(
        !page.body_truncated,
        "a body exactly at the cap is complete"
    );
    assert_eq!(page.text.len(), 1_000);
}

#[test]
fn slow_server_times_out() {
    let site = start_site();
    let impatient = FetchOptions {
        timeout: Duration::from_millis(300),
        ..loopback_options()
    };
    for path in ["/slow-head", "/slow-body"] {
        let started = Instant::now();
        let outcome = fetch(&site.url(path), &impatient);
        assert!(
            matches!(outcome, Err(BrowseError::Timeout { .. })),
            "{path}: {outcome:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{path} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn binary_content_is_refused_as_not_text() {
    let site = start_site();
    let image = fetch(&site.url("/image"), &loopback_options());
    assert!(
        matches!(image, Err(BrowseError::NotText { ref content_type }) if content_type == "image/png"),
        "{image:?}"
    );
    let undeclared = fetch(&site.url("/undeclared-binary"), &loopback_options());
    assert!(
        matches!(undeclared, Err(BrowseError::NotText { .. })),
        "{undeclared:?}"
    );
}

#[test]
fn undeclared_html_is_sniffed() {
    let site = start_site();
    let page = fetch(&site.url("/undeclared-html"), &loopback_options()).expect("sniffed page");
    assert_eq!(page.content_type, "text/html");
    assert_eq!(extract(&page).title, "Sniffed");
}

#[test]
fn header_charset_is_used_for_decoding() {
    let site = start_site();
    let page = fetch(&site.url("/latin1"), &loopback_options()).expect("latin-1 page");
    assert_eq!(page.text, "café");
}

#[test]
fn markdown_served_as_plain_text_keeps_body_and_headings() {
    let site = start_site();
    let page = fetch(&site.url("/readme.md"), &loopback_options()).expect("markdown page");
    let text = extract(&page);
    assert_eq!(text.title, "readme.md");
    assert_eq!(text.headings, ["Read me", "Usage"]);
    assert_eq!(text.body, page.text);
}

#[test]
fn bad_urls_and_schemes_are_refused_before_any_connection() {
    assert!(matches!(
        fetch("not a url", &loopback_options()),
        Err(BrowseError::InvalidUrl { .. })
    ));
    assert!(matches!(
        fetch("file:///etc/passwd", &loopback_options()),
        Err(BrowseError::UnsupportedScheme { ref scheme }) if scheme == "file"
    ));
}

#[test]
fn metadata_address_is_refused_with_its_own_reason() {
    let refused = fetch(
        "http://169.254.169.254/latest/meta-data/",
        &FetchOptions::default(),
    );
    assert!(
        matches!(
            refused,
            Err(BrowseError::Refused {
                reason: "cloud metadata service",
                ..
            })
        ),
        "{refused:?}"
    );
}

/// A redirect from an allowed host to a private address: the hop check that `fetch` runs
/// on every `Location` refuses it (an end-to-end test would need a public server).
#[test]
fn redirect_to_a_private_address_is_refused_at_the_hop_check() {
    let response = ureq::http::Response::builder()
        .status(302)
        .header("Location", "http://127.0.0.1:8080/admin")
        .body(ureq::Body::builder().data(Vec::new()))
        .expect("build a canned redirect");
    let public_page = Url::parse("https://public.example/page").expect("test URL");
    let next_url = super::fetch::redirect_target(&public_page, &response)
        .expect("valid Location")
        .expect("a redirect");
    let deadline = Deadline::starting_now(Duration::from_secs(5));
    let hop = guard::check_hop(&next_url, false, &deadline);
    assert!(
        matches!(
            hop,
            Err(BrowseError::Refused {
                reason: "loopback",
                ..
            })
        ),
        "{hop:?}"
    );
    let metadata = Url::parse("http://[::ffff:169.254.169.254]/").expect("test URL");
    assert!(matches!(
        guard::check_hop(&metadata, false, &deadline),
        Err(BrowseError::Refused {
            reason: "cloud metadata service",
            ..
        })
    ));
}
