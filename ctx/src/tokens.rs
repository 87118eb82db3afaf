//! Exact token counts in OpenAI's o200k_base encoding, the budget unit of the Astria and
//! ctx-tree tools (the Batho tools keep the spec's estimate, characters / 4:
//! `batho_mcp::tools::tokens`). `bpe-openai` bundles the vocabulary, serialized at its
//! build, so counting never needs the network and the first use loads the encoder in
//! about 55 ms; `tiktoken-rs`, used before, parsed its vocabulary on every process start
//! (about 200 ms), which kept `batho ask` on the kernel at 210 ms (now 93 ms).

/// The number of o200k_base tokens of `text`, special tokens read as plain text (as
/// they would be in a tool's answer).
pub fn count(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
}

/// The most pieces [`PieceCounter`]'s shared cache keeps, so that its memory stays
/// bounded however many files a server reads (each entry is a short string and a count).
/// A full cache is emptied and fills again.
const MAX_SHARED_PIECES: usize = 200_000;

/// Piece counts kept between files: the files of one project share most of their pieces
/// (keywords, common identifiers, indentation, punctuation), and encoding a piece is
/// about half of what counting a file costs.
static SHARED_PIECES: std::sync::LazyLock<std::sync::Mutex<foldhash::HashMap<Box<str>, usize>>> =
    std::sync::LazyLock::new(Default::default);

/// Counts many texts that share pieces, such as the lines of one file, each distinct
/// pre-token (word, identifier, run of spaces) encoded once per process: the same totals
/// as [`count`], in about half the time on C source, where most pieces repeat. It holds
/// the process's piece cache while it lives; a second counter made meanwhile (another
/// thread's) counts with a cache of its own rather than waiting.
pub struct PieceCounter<'text> {
    shared: Option<std::sync::MutexGuard<'static, foldhash::HashMap<Box<str>, usize>>>,
    own: foldhash::HashMap<&'text str, usize>,
}

impl Default for PieceCounter<'_> {
    fn default() -> Self {
        PieceCounter {
            shared: SHARED_PIECES.try_lock().ok(),
            own: foldhash::HashMap::default(),
        }
    }
}

impl<'text> PieceCounter<'text> {
    /// The o200k_base tokens of `text`, as [`count`] gives them.
    pub fn count(&mut self, text: &'text str) -> usize {
        // o200k_base does not normalise (no NFC), so its pieces are slices of `text`.
        let tokenizer = bpe_openai::o200k_base();
        tokenizer
            .split(text)
            .map(|piece| self.piece_count(piece))
            .sum()
    }

    fn piece_count(&mut self, piece: &'text str) -> usize {
        let encode = |piece: &str| bpe_openai::o200k_base().bpe.count(piece.as_bytes());
        let Some(shared) = self.shared.as_mut() else {
            return *self.own.entry(piece).or_insert_with(|| encode(piece));
        };
        if let Some(&count) = shared.get(piece) {
            return count;
        }
        let count = encode(piece);
        if shared.len() >= MAX_SHARED_PIECES {
            shared.clear();
        }
        shared.insert(piece.into(), count);
        count
    }
}

/// The length of the longest prefix of `text` (ending at a character boundary) for which
/// `fits` holds, by binary search: `fits` must hold for every shorter prefix once it holds
/// for a longer one (a token count under a budget does).
pub fn longest_fitting_prefix(text: &str, fits: impl Fn(&str) -> bool) -> usize {
    let (mut low, mut high) = (0usize, text.len());
    while low < high {
        let mut middle = (low + high).div_ceil(2);
        while !text.is_char_boundary(middle) {
            middle -= 1;
        }
        if middle <= low {
            break;
        }
        if fits(&text[..middle]) {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    low
}

#[cfg(test)]
mod tests {
    use super::{PieceCounter, count, longest_fitting_prefix};

    #[test]
    fn counting_by_pieces_gives_the_same_totals() {
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!(
                "static int add_{i}(int a, int b) {{\n    return a + b * {i}; /* naïve — ünïcode */\n}}\n\n"
            ));
        }
        text.push_str("   trailing spaces   \r\n\t\tand tabs\n\u{1F600} emoji 12345678 9");
        let mut counter = PieceCounter::default();
        for line in text.split_inclusive('\n') {
            assert_eq!(counter.count(line), count(line), "{line:?}");
        }
        assert_eq!(counter.count(&text), count(&text));
        // A counter made while the first holds the process's cache keeps its own.
        let mut second = PieceCounter::default();
        if counter.shared.is_some() {
            assert!(second.shared.is_none());
        }
        assert_eq!(second.count(&text), count(&text));
    }

    #[test]
    fn the_longest_fitting_prefix_fits_and_one_more_character_does_not() {
        let text = "héllo wörld, a longer sentence of words";
        for budget in 0..12 {
            let cut = longest_fitting_prefix(text, |prefix| count(prefix) <= budget);
            assert!(count(&text[..cut]) <= budget);
            if let Some(next) = text[cut..].chars().next() {
                assert!(count(&text[..cut + next.len_utf8()]) > budget, "{budget}");
            }
        }
    }

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
