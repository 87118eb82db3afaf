use super::*;
use std::fs;

fn lang(path: &str, text: &str) -> Option<Language> {
    detect_language(path, text)
}

#[test]
fn extensions() {
    assert_eq!(lang("a/b.c", "class X {};"), Some(Language::C));
    for p in [
        "x.cc", "x.cpp", "x.cxx", "x.c++", "x.hh", "x.hpp", "x.hxx", "x.h++", "x.inl", "x.ipp",
        "x.tcc", "x.C", "x.H", "x.CPP",
    ] {
        assert_eq!(lang(p, ""), Some(Language::Cpp), "{p}");
    }
    for p in ["x.rs", "Makefile", ".c", "dir.c/README", "x.s"] {
        assert_eq!(lang(p, ""), None, "{p}");
    }
    assert_eq!(lang("include/plain.h", "int f(void);"), Some(Language::C));
}

#[test]
fn cpp_headers_are_recognised() {
    let cpp = [
        "namespace rocksdb {\nclass DB;\n}",
        "namespace ROCKSDB_NAMESPACE {\n}",
        "namespace {\nint x;\n}",
        "using namespace std;",
        "template <typename T> T max(T a, T b);",
        "template<class T>\nstruct S;",
        "class Foo {\n int x;\n};",
        "class API Foo : public Bar {};",
        "class Fwd;",
        "struct S {\npublic:\n int x;\n};",
        "struct S { private: int x; };",
        "enum class Color { Red };",
        "#include <vector>\nint x;",
        "#  include <cstdint>",
        "void f() { std::vector<int> v; }",
        "Foo::~Foo();",
        "int x = ns::value;",
    ];
    for text in cpp {
        assert_eq!(lang("x.h", text), Some(Language::Cpp), "{text}");
    }
}

#[test]
fn c_headers_using_cpp_words_stay_c() {
    let c = [
        // Kernel idioms: C++ keywords as identifiers.
        "struct device { struct class *class; void *private; };",
        "int f(struct class *class, int new);",
        "static inline void g(struct x *template) { template->y = 1; }",
        "struct ns { struct namespace *namespace; };",
        "struct s { unsigned private : 1; int protected; };",
        "x = a ? b : c;",
        // Inline assembly with empty operand lists.
        "asm volatile(\"nop\" ::: \"memory\");",
        "asm volatile(\"\" : : : \"memory\");",
        // Markers inside comments, strings, char literals and directives do not count.
        "/* class Foo { public: }; std::vector */ int x;",
        "// namespace foo {\nint y;",
        "const char *s = \"std::string and class X {\";",
        "char c = ':'; char d = ':';",
        "#define CPP_ONLY(x) std::x\nint z;",
        "#include <linux/types.h>\n#include \"local\"",
        // C++-compatibility guards are common in C headers and are C.
        "#ifdef __cplusplus\nextern \"C\" {\n#endif\nint f(void);\n#ifdef __cplusplus\n}\n#endif",
        // C23 attributes.
        "[[gnu::always_inline]] static int h(void);",
        "",
        "/* unterminated comment",
        "\"unterminated string",
        "int x = 1'000;",
    ];
    for text in c {
        assert_eq!(lang("x.h", text), Some(Language::C), "{text:?}");
    }
}

#[test]
fn marker_after_long_c_prefix_is_found() {
    let mut text = "int filler(void);\n/* comment */\n".repeat(10_000);
    text.push_str("namespace late {}\n");
    assert!(looks_like_cpp(&text));
}

#[test]
fn read_source_utf8_lossy_binary_and_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("a.c");
    fs::write(&p, "int caf\u{e9};\n").expect("write");
    let t = read_source(&p, 1024).expect("utf8");
    assert_eq!(t.text, "int caf\u{e9};\n");
    assert!(!t.lossy);
    assert_eq!(t.bytes, 11);

    fs::write(&p, b"/* caf\xe9 */ int x;\n").expect("write");
    let t = read_source(&p, 1024).expect("latin1");
    assert!(t.lossy);
    assert_eq!(t.text, "/* caf\u{fffd} */ int x;\n");
    assert_eq!(t.bytes, 18);

    fs::write(&p, b"ab\0cd").expect("write");
    assert_eq!(read_source(&p, 1024), Err(SkipReason::Binary));

    // A NUL byte past the sniff window is text (with a NUL in it).
    let mut late = vec![b' '; BINARY_SNIFF_BYTES];
    late.push(0);
    fs::write(&p, &late).expect("write");
    assert!(read_source(&p, 1 << 20).is_ok());

    fs::write(&p, vec![b'x'; 100]).expect("write");
    assert_eq!(
        read_source(&p, 99),
        Err(SkipReason::TooLarge {
            size: 100,
            limit: 99
        })
    );
    assert!(read_source(&p, 100).is_ok());

    assert!(matches!(
        read_source(&dir.path().join("missing.c"), 100),
        Err(SkipReason::Unreadable(_))
    ));
}

/// Each invalid sequence becomes one 3-byte U+FFFD in the text; text offsets map back to
/// the file's bytes, as `from_utf8_lossy` would have decoded them.
#[test]
fn text_offsets_of_a_lossy_file_map_back_to_its_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("a.c");
    // \xe9 and \xff\xfe: invalid sequences of 1 and 2 (two of 1) bytes; \xe2\x82 is a
    // truncated 3-byte sequence (one of 2 bytes); é is valid UTF-8 and is not touched.
    let bytes: &[u8] = b"/* caf\xe9 \xff\xfe \xe2\x82 \xc3\xa9 */\nint f;\n";
    fs::write(&p, bytes).expect("write");
    let t = read_source(&p, 1024).expect("latin1");
    assert_eq!(t.text, String::from_utf8_lossy(bytes));
    assert_eq!(t.bytes, bytes.len() as u64);
    let text_of = |s: &str| t.text.find(s).expect("in text") as u32;
    let file_of = |s: &[u8]| {
        bytes
            .windows(s.len())
            .position(|w| w == s)
            .expect("in file") as u32
    };
    assert_eq!(t.offsets.original(0), 0);
    assert_eq!(t.offsets.original(text_of("caf")), file_of(b"caf"));
    assert_eq!(t.offsets.original(text_of("\u{fffd}")), file_of(b"\xe9"));
    assert_eq!(t.offsets.original(text_of("\u{e9}")), file_of(b"\xc3\xa9"));
    assert_eq!(t.offsets.original(text_of("int f")), file_of(b"int f"));
    assert_eq!(t.offsets.original(t.text.len() as u32), bytes.len() as u32);
    // Inside a replacement character: within the bytes it replaced, never past them.
    assert_eq!(
        t.offsets.original(text_of("\u{fffd}") + 2),
        file_of(b"\xe9") + 1
    );

    fs::write(&p, b"int x;\n").expect("write");
    let t = read_source(&p, 1024).expect("utf8");
    assert_eq!(t.offsets.original(5), 5);
}
