//! Tests of `extract_html`: what is kept, what is dropped, and that no input can make it
//! panic or recurse.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::extract_html;

#[test]
fn title_falls_back_to_open_graph_then_first_h1() {
    let with_title = "<title>Real</title><meta property='og:title' content='OG'><h1>H</h1>";
    assert_eq!(extract_html(with_title).title, "Real");
    let open_graph_only = "<meta property='og:title' content='  OG  title '><h1>H</h1>";
    assert_eq!(extract_html(open_graph_only).title, "OG title");
    assert_eq!(
        extract_html("<title> </title><h1>First <i>one</i></h1><h1>Second</h1>").title,
        "First one"
    );
    assert_eq!(extract_html("<p>no title at all</p>").title, "");
}

#[test]
fn description_falls_back_to_open_graph() {
    let both =
        "<meta name='Description' content='Plain'><meta property='og:description' content='OG'>";
    assert_eq!(extract_html(both).description, "Plain");
    let open_graph_only = "<meta property='og:description' content='OG\n  text'>";
    assert_eq!(extract_html(open_graph_only).description, "OG text");
    assert_eq!(extract_html("<p>x</p>").description, "");
}

#[test]
fn headings_h1_to_h3_in_order_without_chrome() {
    let html = "<nav><h2>Menu</h2></nav><h1>One</h1><h4>Four</h4><section><h2>Two\n  words</h2></section>\
                <h3><span>Three</span><br>lines</h3><h2>  </h2><footer><h3>Footer</h3></footer>";
    assert_eq!(
        extract_html(html).headings,
        ["One", "Two words", "Three lines"]
    );
}

#[test]
fn headings_are_capped_at_fifty() {
    let html: String = (0..80)
        .map(|index| format!("<h2>Heading {index}</h2>"))
        .collect();
    let headings = extract_html(&html).headings;
    assert_eq!(headings.len(), 50);
    assert_eq!(headings.last().map(String::as_str), Some("Heading 49"));
}

#[test]
fn main_is_preferred_and_chrome_is_dropped() {
    let html = "<body><header>Site banner</header><nav>Links</nav><aside>Ads</aside>\
                <main><header><h1>Post</h1></header><p>Body text.</p><nav>Crumbs</nav></main>\
                <footer>Copyright</footer></body>";
    assert_eq!(extract_html(html).body, "Post\n\nBody text.");
}

#[test]
fn articles_are_used_when_there_is_no_main() {
    let html = "<body><div>Sidebar junk</div><article><p>First</p><article><p>Nested</p></article></article>\
                <article><p>Second</p></article></body>";
    assert_eq!(extract_html(html).body, "First\n\nNested\n\nSecond");
}

#[test]
fn empty_main_falls_back_to_body_without_site_header() {
    let html =
        "<body><header>Banner</header><main>  </main><div>Rendered <em>content</em></div></body>";
    assert_eq!(extract_html(html).body, "Rendered content");
}

#[test]
fn scripts_styles_hidden_and_svg_are_dropped() {
    let html = "<body><style>p{color:red}</style><p>Visible</p><script>alert('x')</script>\
                <noscript>Enable JS</noscript><template><p>Template</p></template>\
                <div hidden>Hidden</div><div aria-hidden='true'>Aria</div><div style='display: none'>None</div>\
                <svg><title>Icon</title><text>Svg text</text></svg><button>Click</button><p>End</p></body>";
    assert_eq!(extract_html(html).body, "Visible\n\nEnd");
}

#[test]
fn svg_title_does_not_become_the_page_title() {
    assert_eq!(
        extract_html("<body><svg><title>Icon</title></svg><h1>Page</h1></body>").title,
        "Page"
    );
}

#[test]
fn block_layout_lists_tables_and_pre() {
    let html = "<body><p>Intro</p><ul><li>one</li><li>two</li></ul><table><tr><th>k</th><th>v</th></tr>\
                <tr><td>a</td><td>1</td></tr></table><pre>let x = 1;\n    y()</pre><p>Outro</p></body>";
    assert_eq!(
        extract_html(html).body,
        "Intro\n\n- one\n- two\n\nk | v\na | 1\n\nlet x = 1;\n    y()\n\nOutro"
    );
}

#[test]
fn entities_and_whitespace_are_normalised() {
    let html = "<p>Fish&nbsp;&amp;&#32;chips\n\n\n   &lt;3</p>";
    assert_eq!(extract_html(html).body, "Fish & chips <3");
}

#[test]
fn empty_and_garbage_inputs_give_empty_text() {
    assert_eq!(extract_html(""), super::PageText::default());
    assert_eq!(extract_html("<<<>>>").body, "<<<>>>");
    assert_eq!(extract_html("\0\u{FFFD}").body, "\u{FFFD}");
}

#[test]
fn deep_nesting_neither_overflows_nor_crawls() {
    for tag in ["div", "span", "b", "li", "table", "blockquote"] {
        let depth = 100_000;
        let html = format!(
            "<title>Deep</title>{}core{}",
            format!("<{tag}>").repeat(depth),
            format!("</{tag}>").repeat(depth)
        );
        let started = Instant::now();
        let extracted = extract_html(&html);
        assert_eq!(extracted.title, "Deep", "{tag}");
        assert!(
            extracted.body.contains("core"),
            "{tag}: text after the depth limit is kept"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{tag} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn deep_unclosed_nesting_keeps_later_text() {
    let html = format!(
        "<p>before</p>{}<p>after &amp; more</p><script>hidden()</script>",
        "<div>".repeat(5_000)
    );
    let body = extract_html(&html).body;
    assert!(body.starts_with("before"), "{body}");
    assert!(body.ends_with("after & more"), "{body}");
}

#[test]
fn random_bytes_never_panic() {
    // A fixed xorshift sequence keeps the test reproducible without a dependency.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for length in (0..2_000).step_by(7) {
        let bytes: Vec<u8> = (0..length)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Bias toward markup characters so the tree builder gets exercised.
                const MARKUP: &[u8] = b"<>/=\"' !-abdhilmnoprstv&#;\n";
                let byte = state.to_le_bytes()[0];
                if byte.is_multiple_of(2) {
                    MARKUP[usize::from(byte) % MARKUP.len()]
                } else {
                    byte
                }
            })
            .collect();
        let _ = extract_html(&String::from_utf8_lossy(&bytes));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_strings_never_panic(input in any::<String>()) {
        let _ = extract_html(&input);
    }

    #[test]
    fn tag_soup_never_panics(pieces in proptest::collection::vec(
        prop_oneof![
            Just("<div>"), Just("</div>"), Just("<p>"), Just("<table>"), Just("<td>"), Just("<li>"),
            Just("<main>"), Just("</main>"), Just("<article>"), Just("<h1>"), Just("</h2>"), Just("<pre>"),
            Just("<script>"), Just("</script>"), Just("<svg>"), Just("<title>"), Just("<meta name=description content=x>"),
            Just("<!--"), Just("-->"), Just("&amp;"), Just("&#x0;"), Just("text"), Just(" "), Just("\n"), Just("<br/>"),
        ],
        0..200,
    )) {
        let _ = extract_html(&pieces.concat());
    }
}
