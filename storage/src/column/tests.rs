//! Unit tests of the column codec: integer round trips over every shape and bit width,
//! compactness of the width choice, and damaged column tables.

use super::*;

fn round_trip(values: &[u64]) -> (Vec<u64>, usize) {
    let mut w = SegmentWriter::default();
    // The integer column last: its final values then sit at the end of the payload.
    w.add_bytes(8, b"hello");
    w.add_uint(7, values.len(), |i| values[i]);
    let file = w.finish(1, [0; 16]);
    let payload = &file[SEGMENT_HEADER_LEN..];
    let t = ColumnTable::parse(payload, "t").unwrap();
    let c = t.uint(7, Some(values.len())).unwrap();
    assert!(c.check_exceptions(payload).is_none());
    assert_eq!(t.bytes(8).unwrap().bytes(payload), b"hello");
    (
        (0..values.len()).map(|i| c.get(payload, i)).collect(),
        file.len(),
    )
}

#[test]
fn integer_codec_round_trips_every_shape() {
    let cases: Vec<Vec<u64>> = vec![
        vec![],
        vec![0; 100],
        vec![5; 100],
        (0..1000).collect(),
        (0..1000)
            .map(|i| if i % 97 == 0 { 1 << 40 } else { i % 300 })
            .collect(),
        vec![u64::MAX, 0, 1, u64::MAX - 1],
        (0..3000).map(|i| i * 5000).collect(),
        (0..3000)
            .map(|i| if i % 500 == 0 { 1 << 30 } else { i * 5000 })
            .collect(),
        (0..500)
            .map(|i| if i == 250 { 70_000 } else { 0 })
            .collect(),
        (0..1000)
            .map(|i| if i % 3 == 0 { 1_000_000 + i } else { 0 })
            .collect(),
        (0..130)
            .map(|i| if i % 2 == 0 { u64::MAX - i } else { 0 })
            .collect(),
    ];
    for c in cases {
        assert_eq!(round_trip(&c).0, c);
    }
}

#[test]
fn values_held_narrow_then_wide_or_from_a_slice_encode_alike() {
    // `add_uint` holds values as u32 until one does not fit: the switch keeps them all.
    let late_wide: Vec<u64> = (0..2000)
        .map(|i| if i == 1500 { 1 << 40 } else { i * 3 })
        .collect();
    assert_eq!(round_trip(&late_wide).0, late_wide);
    // A column encoded from its slice is the same bytes as from a producer.
    let small: Vec<u32> = (0..5000).map(|i| i * 7 % 1234).collect();
    let mut from_slice = SegmentWriter::default();
    from_slice.add_values(3, &small);
    let mut from_fn = SegmentWriter::default();
    from_fn.add_uint(3, small.len(), |i| u64::from(small[i]));
    assert_eq!(from_slice.finish(1, [0; 16]), from_fn.finish(1, [0; 16]));
}

#[test]
fn sparse_and_small_columns_are_compact() {
    let sparse: Vec<u64> = (0..10_000).map(|i| u64::from(i % 1000 == 0)).collect();
    let (_, size) = round_trip(&sparse);
    assert!(size < 1000, "sparse column took {size} bytes");
    let lines: Vec<u64> = (0..10_000).map(|i| (i * 7) % 60_000).collect();
    let (_, size) = round_trip(&lines);
    assert!(size < 10_000 * 2 + 500, "u16 column took {size} bytes");
}

#[test]
fn mostly_zero_columns_use_the_sparse_encoding() {
    let v: Vec<u64> = (0..64_000)
        .map(|i| if i % 5 == 0 { 3_000_000 + i } else { 0 })
        .collect();
    let (back, size) = round_trip(&v);
    assert_eq!(back, v);
    // Dense u32 would take 256 000 bytes; sparse takes 12 800 × 4 + 1000 × 12.
    assert!(size < 70_000, "{size}");
}

#[test]
fn every_bit_width_round_trips() {
    // Spans of every bit length, with exceptions (values just above the span, and
    // the escape itself), for short and long columns: the last values sit at the
    // very end of the payload, where no 8-byte load fits.
    for bits in 1..=64u32 {
        let top = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        for n in [1usize, 7, 64, 1001] {
            let v: Vec<u64> = (0..n as u64)
                .map(|i| match i % 97 {
                    0 => top.saturating_add(7),
                    1 => (top - 1).saturating_add(7),
                    _ => 7 + (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & top) / 3,
                })
                .collect();
            assert_eq!(round_trip(&v).0, v, "{bits} bits, {n} values");
        }
    }
}

#[test]
fn widths_follow_the_bits_needed() {
    // 2^23 distinct node indexes cost 23 bits each, not 24.
    let v: Vec<u64> = (0..100_000).map(|i| (i * 83) % (1 << 23)).collect();
    let (back, size) = round_trip(&v);
    assert_eq!(back, v);
    assert!(size <= 100_000 * 23 / 8 + 300, "{size}");
    // A few large values become exceptions instead of widening the column.
    let v: Vec<u64> = (0..100_000)
        .map(|i| if i % 5000 == 0 { 1 << 40 } else { i % 1000 })
        .collect();
    let (back, size) = round_trip(&v);
    assert_eq!(back, v);
    assert!(size <= 100_000 * 10 / 8 + 20 * 12 + 300, "{size}");
}

#[test]
fn out_of_range_reads_are_zero() {
    let c = UIntCol::default();
    assert_eq!(c.get(&[], 5), 0);
}

#[test]
fn damaged_tables_are_rejected() {
    let mut w = SegmentWriter::default();
    w.add_uint(1, 10, |i| i as u64 * 1000);
    let file = w.finish(1, [0; 16]);
    let payload = &file[SEGMENT_HEADER_LEN..];
    for i in 0..TABLE_HEADER_LEN + ENTRY_LEN {
        let mut p = payload.to_vec();
        p[i] ^= 0xff;
        // Either rejected, or (for bytes that do not matter, e.g. base/id) still in bounds.
        if let Ok(t) = ColumnTable::parse(&p, "t")
            && let Ok(c) = t.uint(1, None)
        {
            for k in 0..c.len().min(100) {
                let _ = c.get(&p, k);
            }
        }
    }
    assert!(ColumnTable::parse(&payload[..20], "t").is_err());
}
