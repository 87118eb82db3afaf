//! Exact token counts in OpenAI's o200k_base encoding, the budget unit of the Astria and
//! ctx-tree tools (the Batho tools keep the spec's estimate, characters / 4:
//! [`crate::tools::tokens`]). `tiktoken-rs` bundles the vocabulary, so counting never
//! needs the network; its first use builds the encoder (~200 ms,
//! `../shared/design/deps-tools.md`).

use tiktoken_rs::CoreBPE;

fn encoder() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// The number of o200k_base tokens of `text`, special tokens read as plain text (as
/// they would be in a tool's answer).
pub fn count(text: &str) -> usize {
    encoder().encode_ordinary(text).len()
}

#[cfg(test)]
mod tests {
    use super::count;

    /// Counts equal those of OpenAI's Python `tiktoken` on 1,200 strings of code, prose,
    /// Unicode and random mixes (`tests/data/make_o200k_reference.py` wrote them).
    #[test]
    fn counts_equal_the_reference_tokenizer() {
        let reference = include_str!("../tests/data/o200k_reference.jsonl");
        let mut checked = 0;
        for line in reference.lines() {
            let case: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let text = case["text"].as_str().expect("text");
            let expected = case["tokens"].as_u64().expect("tokens") as usize;
            assert_eq!(count(text), expected, "{text:?}");
            checked += 1;
        }
        assert!(checked >= 1000, "only {checked} reference strings");
    }
}
