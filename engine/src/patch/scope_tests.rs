//! Patch tests of the scope rules that keep a patch narrow: who can see a changed field
//! (`members`) and whose translation unit really changed (`units`). Each checks parity
//! with a full build and which files were re-resolved.

use super::tests::{parity, small_tree};

fn affected(report: &super::PatchReport) -> Vec<&str> {
    report.affected.iter().map(String::as_str).collect()
}

#[test]
fn a_new_field_re_resolves_only_the_files_that_can_reach_its_class() {
    // `pkt` gains `flags`. Its users through the struct, through a typedef declared in
    // the header, and through a global declared in the header can now resolve
    // `->flags`/`.flags`; `other.c` writes another struct's `flags` and must not be
    // re-resolved (keyed by name alone, it was).
    let t = small_tree(&[
        (
            "inc/pkt.h",
            "struct pkt { int len; };\ntypedef struct pkt pkt_t;\nextern struct pkt g_pkt;\n",
        ),
        (
            "src/reader.c",
            "#include \"../inc/pkt.h\"\nvoid set(struct pkt *p) { p->flags = 1; }\n",
        ),
        (
            "src/typed.c",
            "#include \"../inc/pkt.h\"\nvoid tset(pkt_t *p) { p->flags = 3; }\n",
        ),
        (
            "src/global.c",
            "#include \"../inc/pkt.h\"\nvoid gset(void) { g_pkt.flags = 4; }\n",
        ),
        (
            "src/other.c",
            "struct buf { int flags; };\nvoid bset(struct buf *q) { q->flags = 2; }\n",
        ),
    ]);
    let report = parity(
        t.path(),
        &[],
        &[(
            "inc/pkt.h",
            Some(
                "struct pkt { int len; int flags; };\ntypedef struct pkt pkt_t;\nextern struct pkt g_pkt;\n",
            ),
        )],
    );
    assert_eq!(
        affected(&report),
        ["src/global.c", "src/reader.c", "src/typed.c"]
    );
}

#[test]
fn a_removed_field_re_resolves_its_referrers_only() {
    let t = small_tree(&[
        ("inc/pkt.h", "struct pkt { int len; int flags; };\n"),
        (
            "src/reader.c",
            "#include \"../inc/pkt.h\"\nvoid set(struct pkt *p) { p->flags = 1; }\n",
        ),
        (
            "src/len.c",
            "#include \"../inc/pkt.h\"\nvoid grow(struct pkt *p) { p->len = 2; }\n",
        ),
        (
            "src/other.c",
            "struct buf { int flags; };\nvoid bset(struct buf *q) { q->flags = 2; }\n",
        ),
    ]);
    let report = parity(
        t.path(),
        &[],
        &[("inc/pkt.h", Some("struct pkt { int len; };\n"))],
    );
    assert_eq!(affected(&report), ["src/reader.c"]);
}

#[test]
fn an_include_change_re_resolves_only_units_that_gain_a_name_they_use() {
    // `c.h` now also includes `a.h`. `x.c` reached `a.h` already: its unit is unchanged.
    // `y.c` and `z.c` gain `a.h`; only `y.c` uses a name defined there.
    let t = small_tree(&[
        ("inc/a.h", "#include \"b.h\"\nint fa(void);\n"),
        ("inc/b.h", "int fb(void);\n"),
        ("inc/c.h", "#include \"b.h\"\nint fc(void);\n"),
        ("src/fa.c", "int fa(void) { return 1; }\n"),
        ("lib/fa.c", "int fa(void) { return 2; }\n"),
        (
            "src/x.c",
            "#include \"../inc/a.h\"\n#include \"../inc/c.h\"\nint x(void) { return fa() + fb() + fc(); }\n",
        ),
        (
            "src/y.c",
            "#include \"../inc/c.h\"\nint y(void) { return fa() + fc(); }\n",
        ),
        (
            "src/z.c",
            "#include \"../inc/c.h\"\nint z(void) { return fb() + fc(); }\n",
        ),
    ]);
    let report = parity(
        t.path(),
        &[],
        &[(
            "inc/c.h",
            Some("#include \"a.h\"\n#include \"b.h\"\nint fc(void);\n"),
        )],
    );
    assert_eq!(affected(&report), ["src/y.c"]);
}

#[test]
fn an_added_header_re_targets_the_includes_naming_it() {
    // `util.h` appears beside `main.c`, which included `"util.h"` and found only the one
    // in `inc/` (through its base name). `other.c` includes `inc/util.h` by its path
    // and keeps it (and uses nothing of it).
    let t = small_tree(&[
        ("inc/util.h", "int util(void);\n"),
        (
            "src/main.c",
            "#include \"util.h\"\nint main(void) { return util(); }\n",
        ),
        (
            "src/other.c",
            "#include \"../inc/util.h\"\nint other(void) { return 0; }\n",
        ),
    ]);
    let report = parity(
        t.path(),
        &[],
        &[(
            "src/util.h",
            Some("static inline int util(void) { return 0; }\n"),
        )],
    );
    assert!(
        affected(&report).contains(&"src/main.c"),
        "{:?}",
        report.affected
    );
    assert!(
        !affected(&report).contains(&"src/other.c"),
        "{:?}",
        report.affected
    );
}

#[test]
fn last_comp_is_what_follows_the_last_double_colon() {
    use super::scope::last_comp;
    for (name, want) in [
        ("f", "f"),
        ("", ""),
        ("ns::f", "f"),
        ("a::b::C", "C"),
        ("ns::", ""),
        ("::f", "f"),
        ("a:::b", "b"),
        ("a:b", "a:b"),
        ("ä::ö", "ö"),
    ] {
        assert_eq!(last_comp(name), want, "{name}");
        assert_eq!(last_comp(name), name.rsplit("::").next().unwrap_or(name));
    }
}

#[test]
fn a_virtual_call_edited_still_reaches_overrides_in_files_it_does_not_include() {
    // `use.cpp` calls `area` through a `Shape *`; the override lives in `square.cpp`,
    // which nothing includes. The patch's context must lend `Square` with its base clause
    // and its method, or the call loses its dispatch edge to `Square::area`.
    let t = small_tree(&[
        (
            "src/shape.hpp",
            "class Shape { public: virtual int area() const = 0; };\n",
        ),
        (
            "src/square.cpp",
            "#include \"shape.hpp\"\nclass Square : public Shape { public: int area() const override { return 4; } };\n",
        ),
        (
            "src/use.cpp",
            "#include \"shape.hpp\"\nint total(const Shape *s) { return s->area(); }\n",
        ),
    ]);
    parity(
        t.path(),
        &[],
        &[(
            "src/use.cpp",
            Some("#include \"shape.hpp\"\nint total(const Shape *s) { return s->area() + 1; }\n"),
        )],
    );
}
