//! Arbitrary bytes as a facts-cache pack file: opening the cache, checking and decoding
//! every entry and filter, and decoding the bytes as one skeleton or references entry
//! must never panic or allocate without bound (a damaged pack is a cache miss, never an
//! error). The same bytes
//! as the file stamps (`.batho/stamps`, the other accelerator beside the artifact) must
//! load as no stamps or valid ones, never panic.
#![no_main]

use batho_engine::facts_cache::{FactsCache, cache_dir, decode_refs, decode_skeleton};
use batho_engine::stamps::Stamps;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode_skeleton("fuzz.c", data);
    let _ = decode_refs(data);
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let facts = cache_dir(dir.path());
    if std::fs::create_dir_all(&facts).is_err()
        || std::fs::write(facts.join("fuzz.pack"), data).is_err()
    {
        return;
    }
    if std::fs::write(dir.path().join("stamps"), data).is_ok() {
        let _ = Stamps::load(dir.path());
    }
    let cache = FactsCache::open(dir.path());
    let _ = cache.scan();
    let _ = cache.get("fuzz.c", &[0; 16]);
    let _ = cache.get_full("fuzz.c", &[0; 16]);
    let _ = cache.may_mention("fuzz.c", &[0; 16], &[1, 2, 3]);
});
