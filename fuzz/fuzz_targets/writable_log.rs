//! Arbitrary bytes as a writable graph's write-ahead log, change batch and checkpoint:
//! decoding must fail cleanly, never panic or allocate without bound, and whatever decodes
//! must roll back to an empty graph and survive a checkpoint round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = batho_storage::fuzzing::exercise_writable_graph_bytes(data);
});
