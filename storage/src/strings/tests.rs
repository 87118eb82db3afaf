//! Unit tests of the front-coded dictionary codec: round trips over block sizes and
//! boundaries, lookups by text, the borrowed fast path, and damaged blocks.

use std::borrow::Cow;

use proptest::prelude::*;

use super::*;
use crate::format::SEGMENT_HEADER_LEN;

/// Encodes `strings` (sorted and deduplicated here) and opens the result.
fn encoded(strings: &[&str], per_block: u32) -> (Vec<u8>, Vec<String>) {
    let mut sorted: Vec<&str> = strings.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let file = encode_segment_with(&sorted, per_block, SegmentKind::Strings, [0; 16]);
    (file, sorted.into_iter().map(str::to_owned).collect())
}

fn open(file: &[u8], first_empty: bool) -> Result<Dict> {
    let p = &file[SEGMENT_HEADER_LEN..];
    let t = ColumnTable::parse(p, "t")?;
    Dict::open(&t, p, "t", first_empty)
}

/// Every read path of `d` agrees with `want`.
fn check_all(file: &[u8], want: &[String]) {
    let p = &file[SEGMENT_HEADER_LEN..];
    let d = open(file, false).unwrap();
    assert_eq!(d.len() as usize, want.len());
    let mut problems = Vec::new();
    d.check(p, |x| problems.push(x));
    assert_eq!(problems, Vec::<String>::new());
    let mut buf = Vec::new();
    let mut seq = Vec::new();
    d.for_each(p, |k, s| seq.push((k, s.to_vec()))).unwrap();
    assert_eq!(seq.len(), want.len());
    for (k, w) in want.iter().enumerate() {
        let k32 = k as u32;
        assert_eq!(&*d.get(p, k32), w.as_bytes(), "get {k}");
        let (o, len, held) = d.cmp_prefix(p, k32, w.as_bytes(), &mut buf);
        assert_eq!((o, len), (Ordering::Equal, w.len()), "cmp_prefix {k}");
        assert!(!held || buf == w.as_bytes());
        let mut out = b"x".to_vec();
        d.append(p, k32, &mut out);
        assert_eq!(&out[1..], w.as_bytes(), "append {k}");
        assert_eq!(seq[k], (k32, w.as_bytes().to_vec()));
        assert_eq!(d.find(p, w.as_bytes()), Some(k32), "find {w:?}");
        // Strings just beside an existing one are absent.
        let mut after = w.as_bytes().to_vec();
        after.push(0);
        if want
            .binary_search(&String::from_utf8(after.clone()).unwrap())
            .is_err()
        {
            assert_eq!(d.find(p, &after), None);
        }
    }
    assert_eq!(&*d.get(p, want.len() as u32), b"", "out of range");
    // Comparing any string, cut to a target's length, with that target (the head
    // shortcut of binary searches): every string against every other and its prefixes.
    for (k, w) in want.iter().enumerate().take(60) {
        for t in want.iter().take(60) {
            for cut in [t.len(), t.len() / 2, 0] {
                let t = &t.as_bytes()[..cut];
                let n = w.len().min(t.len());
                let (o, len, _) = d.cmp_prefix(p, k as u32, t, &mut buf);
                assert_eq!(
                    (o, len),
                    (w.as_bytes()[..n].cmp(&t[..n]), w.len()),
                    "{w:?} {t:?}"
                );
            }
        }
    }
    let absent = "\u{10FFFF}\u{10FFFF}";
    assert_eq!(d.find(p, absent.as_bytes()), None);
    // Partition by every prefix of every string (and a few that match nothing).
    let mut prefixes: Vec<&[u8]> = vec![b"", b"\xff", b"\x00"];
    for w in want {
        for cut in 0..=w.len() {
            prefixes.push(&w.as_bytes()[..cut]);
        }
    }
    for pre in prefixes {
        let first = want.partition_point(|s| s.as_bytes() < pre) as u32;
        let end = want.partition_point(|s| s.as_bytes() < pre || s.as_bytes().starts_with(pre));
        assert_eq!(d.partition(p, |s| s < pre), first, "{pre:?}");
        assert_eq!(
            d.partition(p, |s| s < pre || s.starts_with(pre)),
            end as u32,
            "{pre:?}"
        );
    }
}

#[test]
fn varints_round_trip_and_reject_overflow() {
    for v in [0u32, 1, 127, 128, 300, 16_383, 16_384, 1 << 21, u32::MAX] {
        let mut b = Vec::new();
        put_varint(&mut b, v);
        let mut pos = 0;
        assert_eq!(get_varint(&b, &mut pos), Some(v));
        assert_eq!(pos, b.len());
        assert_eq!(get_varint(&b[..b.len() - 1], &mut 0), None, "truncated {v}");
    }
    // 2^32 and a sixth byte do not fit.
    assert_eq!(get_varint(&[0x80, 0x80, 0x80, 0x80, 0x10], &mut 0), None);
    assert_eq!(
        get_varint(&[0xff, 0xff, 0xff, 0xff, 0x8f, 0x01], &mut 0),
        None
    );
}

#[test]
fn block_boundaries_and_sizes_round_trip() {
    let many: Vec<String> = (0..140)
        .map(|i| format!("src/dir{}/file_{i:03}.c", i / 9))
        .collect();
    for n in [0usize, 1, 2, 15, 16, 17, 31, 32, 33, 64, 65, 140] {
        let mut v: Vec<&str> = vec![""];
        v.extend(many[..n].iter().map(String::as_str));
        for per_block in [1, 2, 8, 16, 31, 32] {
            let (file, want) = encoded(&v, per_block);
            check_all(&file, &want);
            open(&file, true).unwrap();
        }
    }
}

#[test]
fn awkward_strings_round_trip() {
    let long = "x".repeat(20_000);
    let longer = format!("{long}y");
    let v = [
        "",
        "a",
        "ab",
        "abc",
        "abd",
        // "é" and "ê" share their first UTF-8 byte: a shared prefix may split a character.
        "é",
        "ê",
        "êtes",
        "日本",
        "日本語",
        "\u{10FFFF}",
        "zzz\u{0}",
        long.as_str(),
        longer.as_str(),
        // Suffixes longer than 127 bytes need multi-byte lengths.
        "struct a::b::c::d::e::f::g::h::i::j::k::l::m::n::o::p::q::r::s::t::u::v::w::x::y::z::aa::bb::cc::dd::ee::ff::gg::hh::ii::jj::kk::ll",
    ];
    for per_block in [1, 3, 16, 32] {
        let (file, want) = encoded(&v, per_block);
        check_all(&file, &want);
    }
}

#[test]
fn heads_and_unshared_strings_are_borrowed() {
    let (file, want) = encoded(&["", "abc", "abd", "b", "bc"], 16);
    let p = &file[SEGMENT_HEADER_LEN..];
    let d = open(&file, true).unwrap();
    assert_eq!(want, ["", "abc", "abd", "b", "bc"]);
    let borrowed: Vec<bool> = (0..5)
        .map(|k| matches!(d.get(p, k), Cow::Borrowed(_)))
        .collect();
    // "" heads the block; "abc" and "b" share nothing with their predecessor.
    assert_eq!(borrowed, [true, true, false, true, false]);
}

#[test]
fn front_coding_shrinks_shared_prefixes() {
    let paths: Vec<String> = (0..1000)
        .map(|i| format!("drivers/net/ethernet/intel/e1000e/file_{i:04}.c"))
        .collect();
    let v: Vec<&str> = paths.iter().map(String::as_str).collect();
    let plain: usize = paths.iter().map(String::len).sum();
    let (file, want) = encoded(&v, BLOCK_STRINGS);
    assert!(
        file.len() < plain / 3,
        "{} bytes for {plain} bytes of text",
        file.len()
    );
    check_all(&file, &want);
}

/// A strings segment written column by column, for shapes the writer never produces.
fn raw_segment(count: u64, per_block: u64, offsets: &[u64], bytes: &[u8]) -> Vec<u8> {
    let mut w = SegmentWriter::default();
    let shape = [count, per_block];
    w.add_uint(strings_col::SHAPE, 2, |i| shape[i]);
    w.add_uint(strings_col::BLOCK_OFFSETS, offsets.len(), |i| offsets[i]);
    w.add_bytes(strings_col::BYTES, bytes);
    w.finish(1, [0; 16])
}

/// `""`, `"a"` | `"b"` in blocks of two.
const GOOD: &[u8] = &[0, 0, 1, b'a', 1, b'b'];

#[test]
fn open_rejects_inconsistent_shapes() {
    let ok = raw_segment(3, 2, &[0, 4, 6], GOOD);
    check_all(&ok, &["".into(), "a".into(), "b".into()]);
    assert!(open(&ok, true).is_ok());
    // A dictionary that lacks "" cannot be a base dictionary.
    assert!(open(&encoded(&["a"], 2).0, true).is_err());
    // The empty dictionary of a delta layer is fine, not for a base.
    let empty = encoded(&[], 16).0;
    assert!(open(&empty, false).is_ok());
    assert!(open(&empty, true).is_err());
    for (count, per_block, offsets) in [
        (3u64, 0u64, &[0u64, 4, 6][..]),
        (3, 33, &[0, 4, 6]),
        (3, 1, &[0, 4, 6]),
        (2, 2, &[0, 4, 6]),
        (1 << 40, 2, &[0, 4, 6]),
        (100, 2, &[0, 4, 6]),
        (3, 2, &[1, 4, 6]),
        (3, 2, &[0, 4, 5]),
    ] {
        let file = raw_segment(count, per_block, offsets, GOOD);
        assert!(
            open(&file, false).is_err(),
            "count {count}, per block {per_block}, offsets {offsets:?}"
        );
    }
}

#[test]
fn damaged_blocks_are_reported() {
    let cases: [(&str, &[u64], &[u8]); 6] = [
        ("truncated length", &[0, 4, 6], &[0, 0, 1, b'a', 0x81, b'b']),
        (
            "shared prefix too long",
            &[0, 4, 6],
            &[0, 1, 1, b'a', 1, b'b'],
        ),
        (
            "entry past the block",
            &[0, 4, 6],
            &[0, 0, 2, b'a', 1, b'b'],
        ),
        ("trailing bytes", &[0, 5, 7], &[0, 0, 1, b'a', 9, 1, b'b']),
        ("out of order", &[0, 4, 6], &[0, 0, 1, b'b', 1, b'a']),
        ("not UTF-8", &[0, 4, 6], &[0, 0, 1, 0xc3, 1, b'b']),
    ];
    for (what, offsets, bytes) in cases {
        let file = raw_segment(3, 2, offsets, bytes);
        let p = &file[SEGMENT_HEADER_LEN..];
        let d = open(&file, true).unwrap();
        let mut problems = Vec::new();
        d.check(p, |x| problems.push(x));
        assert!(!problems.is_empty(), "{what}");
        for k in 0..4 {
            let _ = d.find(p, &d.get(p, k));
        }
    }
    // A malformed entry reads as "" instead of garbage.
    let file = raw_segment(3, 2, &[0, 4, 6], &[0, 1, 1, b'a', 1, b'b']);
    let d = open(&file, true).unwrap();
    assert_eq!(&*d.get(&file[SEGMENT_HEADER_LEN..], 1), b"");
}

#[test]
fn flipped_bytes_never_panic_and_unreported_damage_stays_sorted() {
    let names: Vec<String> = (0..40).map(|i| format!("name_{i:02}_é")).collect();
    let mut v: Vec<&str> = vec![""];
    v.extend(names.iter().map(String::as_str));
    let (file, _) = encoded(&v, 16);
    for i in SEGMENT_HEADER_LEN..file.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut f = file.clone();
            f[i] ^= flip;
            let p = &f[SEGMENT_HEADER_LEN..];
            let Ok(t) = ColumnTable::parse(p, "t") else {
                continue;
            };
            let Ok(d) = Dict::open(&t, p, "t", false) else {
                continue;
            };
            let mut buf = Vec::new();
            for k in 0..=d.len() {
                let s = d.get(p, k);
                let _ = d.cmp_prefix(p, k, b"name_2", &mut buf);
                let _ = d.find(p, &s);
            }
            let _ = d.partition(p, |s| s < b"name_2".as_slice());
            let mut problems = Vec::new();
            d.check(p, |x| problems.push(x));
            // Damage that still decodes as sorted UTF-8 is left to the segment hash.
            if problems.is_empty() {
                let mut seq = Vec::new();
                d.for_each(p, |_, s| seq.push(s.to_vec())).unwrap();
                assert!(seq.windows(2).all(|w| w[0] < w[1]));
                assert!(seq.iter().all(|s| std::str::from_utf8(s).is_ok()));
                for (k, s) in seq.iter().enumerate() {
                    assert_eq!(d.find(p, s), Some(k as u32));
                }
            }
        }
    }
}

fn string_pool() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            Just(String::new()),
            "[a-c]{1,4}",
            "(src/|src/lib/|include/)[a-z_]{0,6}\\.[ch]",
            "(é|ê|a)(日|b){0,5}",
            "\\PC{0,8}",
            "[a-z]{120,140}",
        ],
        0..120,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_dictionaries_round_trip(pool in string_pool(), per_block in 1u32..=32) {
        let v: Vec<&str> = pool.iter().map(String::as_str).collect();
        let (file, want) = encoded(&v, per_block);
        check_all(&file, &want);
    }
}
