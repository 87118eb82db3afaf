use super::pack::{FOOTER_LEN, HEADER_LEN, INDEX_ROW};
use super::*;
use crate::extract::Extractor;
use batho_schema::Language;
use proptest::prelude::*;

const C_SRC: &str = r#"
#include <stdio.h>
#include "local.h"
#ifndef LOCAL_COPY_H
#define LOCAL_COPY_H
static int local_copy(void) { return 0; }
#endif
#define MEM_STATIC static inline
#define ALIAS target_fn
struct point { int x; int y; };
typedef struct point point_t;
MEM_STATIC int add(int a, int b) { return a + b; }
static int twice(point_t *p) { return add(p->x, p->y) * 2; }
int main(void) { printf("%d\n", twice(0)); return ALIAS(1); }
"#;

const CPP_SRC: &str = r#"
namespace ns {
class Base { public: virtual int run(int) = 0; };
class Derived : public Base { public: int run(int v) override; };
int Derived::run(int v) { return v + 1; }
}
"#;

fn facts(path: &str, lang: Language, src: &str) -> FileFacts {
    let mut f = Extractor::new().unwrap().extract(path, lang, src);
    f.content_hash = *blake3::hash(src.as_bytes()).as_bytes();
    f
}

/// What a skeleton keeps of `f`: everything but references and entity hashes.
fn skeleton_of(f: &FileFacts) -> FileFacts {
    let mut s = f.clone();
    s.refs.clear();
    for e in &mut s.entities {
        e.hash = [0; 8];
    }
    s
}

fn assert_same(a: &FileFacts, b: &FileFacts) {
    assert_eq!(a.path, b.path);
    assert_eq!(a.language, b.language);
    assert_eq!(a.text, b.text);
    assert_eq!(a.ends, b.ends);
    assert_eq!(a.entities, b.entities);
    assert_eq!(a.bases, b.bases);
    assert_eq!(a.includes, b.includes);
    assert_eq!(a.guards, b.guards);
    assert_eq!(a.macro_calls, b.macro_calls);
    assert_eq!(a.macro_arguments, b.macro_arguments);
    assert_eq!(a.refs, b.refs);
    assert_eq!(
        (a.parse_errors, a.bytes, a.lines, a.content_hash),
        (b.parse_errors, b.bytes, b.lines, b.content_hash)
    );
}

#[test]
fn skeleton_round_trips_c_and_cpp() {
    for (path, lang, src) in [
        ("src/a.c", Language::C, C_SRC),
        ("src/b.cpp", Language::Cpp, CPP_SRC),
    ] {
        let f = facts(path, lang, src);
        assert!(!f.entities.is_empty() && !f.refs.is_empty());
        assert_eq!(f.guards.len(), usize::from(lang == Language::C));
        let mut buf = Vec::new();
        encode_skeleton(&f, &mut buf);
        let back = decode_skeleton(path, &buf).unwrap();
        assert_same(&back, &skeleton_of(&f));
    }
}

#[test]
fn every_truncation_is_refused() {
    let f = facts("a.c", Language::C, C_SRC);
    let mut buf = Vec::new();
    encode_skeleton(&f, &mut buf);
    for n in 0..buf.len() {
        assert!(
            decode_skeleton("a.c", &buf[..n]).is_err(),
            "prefix {n} accepted"
        );
    }
    buf.push(0);
    assert_eq!(
        decode_skeleton("a.c", &buf).unwrap_err(),
        DecodeError::Invalid("trailing bytes")
    );
}

#[test]
fn a_pack_serves_its_entries_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let a = facts("a.c", Language::C, C_SRC);
    let b = facts("b.cpp", Language::Cpp, CPP_SRC);
    let mut w = PackWriter::create(&cache_dir(dir.path())).unwrap();
    w.add(&a).unwrap();
    w.add(&b).unwrap();
    assert_eq!(w.len(), 4, "a skeleton and a references entry per file");
    w.finish().unwrap();
    let cache = FactsCache::open(dir.path());
    assert_eq!(cache.packs(), 1);
    assert_same(
        &cache
            .get("a.c", &a.content_hash[..CONTENT_HASH_LEN])
            .unwrap(),
        &skeleton_of(&a),
    );
    assert_same(
        &cache
            .get("b.cpp", &b.content_hash[..CONTENT_HASH_LEN])
            .unwrap(),
        &skeleton_of(&b),
    );
    // Other bytes at the same path, or the same bytes at another path: a miss.
    assert!(
        cache
            .get("a.c", &b.content_hash[..CONTENT_HASH_LEN])
            .is_none()
    );
    assert!(
        cache
            .get("c.c", &a.content_hash[..CONTENT_HASH_LEN])
            .is_none()
    );
    // No temporary file is left behind.
    let names: Vec<String> = fs::read_dir(cache_dir(dir.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.ends_with(".pack")), "{names:?}");
}

#[test]
fn a_damaged_entry_or_pack_is_a_miss_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = facts("a.c", Language::C, C_SRC);
    let mut w = PackWriter::create(&cache_dir(dir.path())).unwrap();
    w.add(&a).unwrap();
    let pack = w.finish().unwrap();
    let good = fs::read(&pack).unwrap();

    // A flipped byte inside the entry: the entry's check fails.
    let mut bad = good.clone();
    bad[HEADER_LEN as usize + 8] ^= 0x55;
    fs::write(&pack, &bad).unwrap();
    assert!(
        FactsCache::open(dir.path())
            .get("a.c", &a.content_hash[..CONTENT_HASH_LEN])
            .is_none()
    );

    // A flipped byte in the index, a truncated pack, another version, a flipped reserved
    // header byte (the fault campaign's last undetected flip): the pack is ignored.
    let index_at = good.len() - FOOTER_LEN as usize - INDEX_ROW;
    for damage in [
        |b: &mut Vec<u8>, at: usize| b[at] ^= 1,
        |b: &mut Vec<u8>, _| b.truncate(b.len() - 3),
        |b: &mut Vec<u8>, _| b[8] = b[8].wrapping_add(1),
        |b: &mut Vec<u8>, _| b[15] ^= 0x6b,
    ] {
        let mut bad = good.clone();
        damage(&mut bad, index_at);
        fs::write(&pack, &bad).unwrap();
        let cache = FactsCache::open(dir.path());
        assert_eq!(cache.packs(), 0);
        assert!(
            cache
                .get("a.c", &a.content_hash[..CONTENT_HASH_LEN])
                .is_none()
        );
    }
}

#[test]
fn an_interrupted_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = PackWriter::create(&cache_dir(dir.path())).unwrap();
    w.add(&facts("a.c", Language::C, C_SRC)).unwrap();
    drop(w);
    assert_eq!(fs::read_dir(cache_dir(dir.path())).unwrap().count(), 0);
}

#[test]
fn small_packs_are_folded_and_still_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    for i in 0..(MAX_PACKS + 3) {
        let src = format!("int f{i}(void) {{ return {i}; }}\n");
        let f = facts(&format!("f{i}.c"), Language::C, &src);
        let mut w = PackWriter::create(&cache_dir(dir.path())).unwrap();
        w.add(&f).unwrap();
        w.finish().unwrap();
        all.push(f);
    }
    let mut cache = FactsCache::open(dir.path());
    assert_eq!(cache.packs(), MAX_PACKS + 3);
    cache.fold_small_packs().unwrap();
    assert_eq!(cache.packs(), 2);
    for f in &all {
        assert_same(
            &cache
                .get(&f.path, &f.content_hash[..CONTENT_HASH_LEN])
                .unwrap(),
            &skeleton_of(f),
        );
    }
}

proptest! {
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_skeleton("x.c", &bytes);
        let _ = decode_refs(&bytes);
        let _ = decompress(&bytes);
    }

    #[test]
    fn a_mutated_references_entry_never_completes_into_dangling_symbols(
        at in 0usize..4096,
        bit in 0u8..8,
    ) {
        let f = facts("a.c", Language::C, C_SRC);
        let mut buf = Vec::new();
        encode_refs(&f, &mut buf);
        let at = at % buf.len();
        buf[at] ^= 1 << bit;
        let mut s = skeleton_of(&f);
        if let Ok(part) = decode_refs(&buf)
            && part.complete(&mut s).is_ok()
        {
            for r in &s.refs {
                let _ = (s.str(r.name), s.str(r.qual), s.str(r.recv));
                prop_assert!(
                    r.enclosing == crate::extract::NO_ENTITY
                        || (r.enclosing as usize) < s.entities.len()
                );
            }
        }
    }

    #[test]
    fn decoding_a_mutated_skeleton_never_panics(at in 0usize..4096, bit in 0u8..8) {
        let f = facts("a.c", Language::C, C_SRC);
        let mut buf = Vec::new();
        encode_skeleton(&f, &mut buf);
        let at = at % buf.len();
        buf[at] ^= 1 << bit;
        if let Ok(s) = decode_skeleton("a.c", &buf) {
            // Whatever decodes is internally consistent: every symbol resolves.
            for e in &s.entities {
                let _ = (s.str(e.name), s.str(e.qual), s.str(e.signature), s.str(e.type_name));
            }
        }
    }
}

#[test]
fn the_name_filter_holds_every_mentioned_name() {
    let f = facts("a.c", Language::C, C_SRC);
    let filter = name_filter(&f);
    for name in [
        "printf",
        "add",
        "point_t",
        "twice",
        "x",
        "y",
        "target_fn",
        "ALIAS",
    ] {
        assert!(filter_may_hold(&filter, name_hash(name)), "{name}");
    }
    let g = facts("b.cpp", Language::Cpp, CPP_SRC);
    let filter = name_filter(&g);
    // Base clauses and the scopes of qualified names count.
    for name in ["Base", "Derived", "ns", "run"] {
        assert!(filter_may_hold(&filter, name_hash(name)), "{name}");
    }
    // Names never mentioned: at 32 bits per name and 8 probes, one in about 170,000
    // passes; allow a few for the tiny filters of a small file.
    let misses = (0..100_000)
        .filter(|i| filter_may_hold(&filter, name_hash(&format!("absent_{i}"))))
        .count();
    assert!(misses < 10, "{misses} false positives in 100,000");
    assert!(!filter_may_hold(&[], name_hash("x")));
    // Sized for each distinct component of every name mentioned, counted once.
    let mut components = std::collections::HashSet::new();
    let names = g.refs.iter().flat_map(|r| [r.name, r.qual, r.recv]);
    let names = names
        .chain(g.bases.iter().map(|b| b.name))
        .chain(g.entities.iter().flat_map(|e| [e.qual, e.type_name]));
    for s in names {
        components.extend(g.str(s).split("::").filter(|c| !c.is_empty()));
    }
    assert_eq!(filter.len(), (components.len() * 32).div_ceil(64) * 8);
}

#[test]
fn the_cache_answers_which_files_may_mention_a_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = facts("a.c", Language::C, C_SRC);
    let mut w = PackWriter::create(&cache_dir(dir.path())).unwrap();
    w.add(&a).unwrap();
    let pack = w.finish().unwrap();
    let cache = FactsCache::open(dir.path());
    let h = &a.content_hash[..CONTENT_HASH_LEN];
    assert_eq!(
        cache.may_mention("a.c", h, &[name_hash("twice")]),
        Some(true)
    );
    assert_eq!(
        cache.may_mention("a.c", h, &[name_hash("never_named_here")]),
        Some(false)
    );
    assert_eq!(cache.may_mention("other.c", h, &[name_hash("twice")]), None);
    // A damaged filter section is no answer (the caller assumes the worst), not a "no".
    let mut bytes = fs::read(&pack).unwrap();
    let filters_at = u64::from_le_bytes(
        bytes[bytes.len() - 32..bytes.len() - 24]
            .try_into()
            .unwrap(),
    ) as usize;
    bytes[filters_at] ^= 0xff;
    fs::write(&pack, &bytes).unwrap();
    let cache = FactsCache::open(dir.path());
    assert_eq!(cache.may_mention("a.c", h, &[name_hash("twice")]), None);
    // The skeleton itself is still served.
    assert!(cache.get("a.c", h).is_some());
}

#[test]
fn scan_counts_intact_and_damaged_entries_and_seeds_the_fuzzer() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = PackWriter::create(&cache_dir(dir.path())).unwrap();
    w.add(&facts("a.c", Language::C, C_SRC)).unwrap();
    w.add(&facts("b.cpp", Language::Cpp, CPP_SRC)).unwrap();
    let pack = w.finish().unwrap();
    assert_eq!(FactsCache::open(dir.path()).scan(), (4, 0));
    // The fuzz target's seed: a real pack (regenerate with BATHO_WRITE_FUZZ_SEED=1).
    if std::env::var_os("BATHO_WRITE_FUZZ_SEED").is_some() {
        let seeds =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/facts_pack");
        fs::create_dir_all(&seeds).unwrap();
        fs::copy(&pack, seeds.join("two-files.pack")).unwrap();
    }
    let mut bytes = fs::read(&pack).unwrap();
    bytes[HEADER_LEN as usize + 2] ^= 0x40;
    fs::write(&pack, &bytes).unwrap();
    assert_eq!(FactsCache::open(dir.path()).scan(), (3, 1));
}

#[test]
fn whole_facts_come_back_from_the_skeleton_and_the_references_entry() {
    let dir = tempfile::tempdir().unwrap();
    let a = facts("a.c", Language::C, C_SRC);
    let b = facts("b.cpp", Language::Cpp, CPP_SRC);
    assert!(a.entities.iter().any(|e| e.hash != [0; 8]));
    let mut w = PackWriter::create(&cache_dir(dir.path())).unwrap();
    w.add(&a).unwrap();
    w.add(&b).unwrap();
    let pack = w.finish().unwrap();
    let cache = FactsCache::open(dir.path());
    for f in [&a, &b] {
        let h = &f.content_hash[..CONTENT_HASH_LEN];
        assert_same(&cache.get_full(&f.path, h).unwrap(), f);
        assert!(cache.holds(&f.path, h));
        assert!(!cache.holds(&f.path, &[7; CONTENT_HASH_LEN]));
    }
    assert!(
        cache
            .get_full("a.c", &b.content_hash[..CONTENT_HASH_LEN])
            .is_none()
    );

    // A damaged references entry: the skeleton is still served, the whole facts are not.
    let ha = &a.content_hash[..CONTENT_HASH_LEN];
    let mut bytes = fs::read(&pack).unwrap();
    let mut skeleton = Vec::new();
    encode_skeleton(&a, &mut skeleton);
    // a's entries come first: its compressed skeleton, then its references entry.
    let refs_at = HEADER_LEN as usize + compress(&skeleton).len();
    bytes[refs_at + 5] ^= 0x10;
    fs::write(&pack, &bytes).unwrap();
    let cache = FactsCache::open(dir.path());
    assert!(cache.get("a.c", ha).is_some());
    assert!(cache.get_full("a.c", ha).is_none());
}

#[test]
fn a_references_entry_is_refused_when_cut_or_for_another_skeleton() {
    let a = facts("a.c", Language::C, C_SRC);
    let b = facts("b.cpp", Language::Cpp, CPP_SRC);
    let mut buf = Vec::new();
    encode_refs(&a, &mut buf);
    for n in 0..buf.len() {
        assert!(decode_refs(&buf[..n]).is_err(), "prefix {n} accepted");
    }
    let mut long = buf.clone();
    long.push(0);
    assert_eq!(
        decode_refs(&long).unwrap_err(),
        DecodeError::Invalid("trailing bytes")
    );
    // Each kind of entry refuses the other's bytes.
    let mut sk = Vec::new();
    encode_skeleton(&a, &mut sk);
    assert!(decode_refs(&sk).is_err());
    assert!(decode_skeleton("a.c", &buf).is_err());
    // b's skeleton has another shape: a's references do not complete it.
    let mut sb = skeleton_of(&b);
    let before = sb.clone();
    assert!(decode_refs(&buf).unwrap().complete(&mut sb).is_err());
    assert_same(&sb, &before);
    let mut sa = skeleton_of(&a);
    decode_refs(&buf).unwrap().complete(&mut sa).unwrap();
    assert_same(&sa, &a);
}
