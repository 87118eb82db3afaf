//! Extraction tests on small inline C/C++ snippets.

use batho_schema::{Language, NodeFlags, NodeKind};

use super::{Extractor, FileFacts, RefKind, entity_bits, ref_bits};

fn facts(path: &str, lang: Language, src: &str) -> FileFacts {
    Extractor::new()
        .expect("grammars load")
        .extract(path, lang, src)
}

/// `kind qual [flags]` per entity, in source order.
fn entities(f: &FileFacts) -> Vec<String> {
    f.entities
        .iter()
        .map(|e| {
            let mut s = format!("{} {}", e.kind, f.str(e.qual));
            if e.flags.contains(NodeFlags::STATIC) {
                s.push_str(" static");
            }
            if e.flags.contains(NodeFlags::DECLARATION_ONLY) {
                s.push_str(" decl");
            }
            if e.flags.contains(NodeFlags::VIRTUAL) {
                s.push_str(" virtual");
            }
            s
        })
        .collect()
}

/// `enclosing -> name` for the calls of a file.
fn calls(f: &FileFacts) -> Vec<String> {
    f.refs
        .iter()
        .filter(|r| r.kind == RefKind::Call)
        .map(|r| {
            let from = f
                .entities
                .get(r.enclosing as usize)
                .map_or("<file>", |e| f.str(e.qual));
            let mut s = format!("{from} -> {}", f.str(r.name));
            if !r.qual.is_empty() {
                s = format!("{from} -> {}::{}", f.str(r.qual), f.str(r.name));
            }
            if r.flags & ref_bits::DYNAMIC != 0 {
                s.push_str(" dynamic");
            }
            if !r.recv.is_empty() {
                s.push_str(&format!(" recv={}", f.str(r.recv)));
            }
            if r.flags & ref_bits::THIS != 0 {
                s.push_str(" this");
            }
            s
        })
        .collect()
}

#[test]
fn both_grammars_load() {
    // The ABI check: tree-sitter-c is ABI 15, tree-sitter-cpp ABI 14; both must load.
    let mut ex = Extractor::new().expect("both grammars load");
    let c = ex.extract("a.c", Language::C, "int f(void) { return 0; }");
    let cpp = ex.extract(
        "a.cpp",
        Language::Cpp,
        "namespace n { int f() { return 0; } }",
    );
    assert_eq!(entities(&c), ["Function f"]);
    assert_eq!(entities(&cpp), ["Namespace n", "Function n::f"]);
}

#[test]
fn c_entities_and_flags() {
    let src = r#"
#include "lua.h"
#include <stdio.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ONE 1
struct S { int (*cb)(int); int x; };
typedef struct { int a; } T;
enum color { RED, GREEN };
static int counter;
extern int shared;
int add(int a, int b);
static int helper(void) { return ONE; }
int add(int a, int b) { return helper() + MAX(a, b); }
"#;
    let f = facts("a.c", Language::C, src);
    assert_eq!(
        entities(&f),
        [
            "Macro MAX",
            "Macro ONE",
            "Struct S",
            "Field S::cb",
            "Field S::x",
            "Typedef T",
            "Struct T",
            "Field T::a",
            "Enum color",
            "Enumerator RED",
            "Enumerator GREEN",
            "Variable counter static",
            "Variable shared decl",
            "Function add decl",
            "Function helper static",
            "Function add",
        ]
    );
    let inc: Vec<(String, bool)> = f
        .includes
        .iter()
        .map(|i| (f.str(i.path).to_owned(), i.system))
        .collect();
    assert_eq!(
        inc,
        [("lua.h".to_owned(), false), ("stdio.h".to_owned(), true)]
    );
    assert_eq!(calls(&f), ["add -> helper", "add -> MAX"]);
    let mac = &f.entities[0];
    assert!(mac.bits & entity_bits::FUNCTION_LIKE != 0);
    assert_eq!(mac.params, 2);
    let add = f.entities.last().expect("add");
    assert_eq!(f.str(add.signature), "int add(int a, int b)");
    assert_eq!((add.start_line, add.end_line), (13, 13));
    assert_eq!(add.params, 2);
    assert_eq!(
        add.hash,
        batho_storage::content_hash(
            &src.as_bytes()[add.start_byte as usize..add.end_byte as usize]
        )
    );
}

#[test]
fn function_pointer_and_field_callbacks_are_dynamic() {
    let src = r#"
struct ops { int (*run)(int); };
static int (*gp)(int);
int go(struct ops *o, int (*cb)(int)) {
    o->run(1);
    cb(2);
    (*gp)(3);
    return 0;
}
"#;
    let f = facts("a.c", Language::C, src);
    assert_eq!(
        calls(&f),
        [
            "go -> run dynamic recv=ops",
            "go -> cb dynamic",
            "go -> gp dynamic"
        ]
    );
}

#[test]
fn export_macro_classes_are_recovered() {
    let src = r#"
class API Foo : public Base {
 public:
  virtual int run(int x) override;
  int y;
};
struct LUA_API lua_State { int a; };
"#;
    let f = facts("a.h", Language::Cpp, src);
    let e = entities(&f);
    assert!(e.contains(&"Class Foo".to_owned()), "{e:?}");
    assert!(
        e.contains(&"Method Foo::run decl virtual".to_owned()),
        "{e:?}"
    );
    assert!(e.contains(&"Struct lua_State".to_owned()), "{e:?}");
    let bases: Vec<&str> = f.bases.iter().map(|b| f.str(b.name)).collect();
    assert_eq!(bases, ["Base"]);
}

#[test]
fn ifdef_split_signature_keeps_one_definition() {
    let src = r#"
#ifdef WIDE
int split(long a)
#else
int split(int a)
#endif
{
  return g(a);
}
"#;
    let f = facts("a.c", Language::C, src);
    let defs: Vec<_> = f
        .entities
        .iter()
        .filter(|e| e.kind == NodeKind::Function && !e.flags.contains(NodeFlags::DECLARATION_ONLY))
        .collect();
    assert_eq!(defs.len(), 1, "{:?}", entities(&f));
    assert_eq!(f.str(defs[0].name), "split");
    assert_eq!(defs[0].end_line, 9);
    assert_eq!(calls(&f), ["split -> g"]);
}

#[test]
fn out_of_line_methods_and_namespaces_own_their_calls() {
    let src = r#"
namespace ns {
int Foo::bar() { return helper(1); }
}
int ns::Foo::baz() const { this->run(2); Widget w; w.draw(); return 0; }
"#;
    let f = facts("a.cpp", Language::Cpp, src);
    assert_eq!(
        entities(&f),
        ["Namespace ns", "Method ns::Foo::bar", "Method ns::Foo::baz"]
    );
    assert_eq!(
        calls(&f),
        [
            "ns::Foo::bar -> helper",
            "ns::Foo::baz -> run this",
            "ns::Foo::baz -> draw recv=Widget"
        ]
    );
}

#[test]
fn calls_inside_error_nodes_stay_in_their_function() {
    // A macro-heavy body in the style of Lua's luaV_execute.
    let src = r#"
void execute(lua_State *L) {
  vmdispatch (GET_OPCODE(i)) {
    vmcase(OP_MOVE) {
      setobjs2s(L, ra, RB(i));
      luaD_call(L, ra, 1);
      vmbreak;
    }
  }
}
"#;
    let f = facts("lvm.c", Language::C, src);
    assert_eq!(entities(&f), ["Function execute"]);
    let c = calls(&f);
    assert!(c.contains(&"execute -> luaD_call".to_owned()), "{c:?}");
    assert!(c.contains(&"execute -> setobjs2s".to_owned()), "{c:?}");
}

#[test]
fn return_type_macro_does_not_steal_the_name() {
    let f = facts(
        "lapi.c",
        Language::C,
        "LUA_API lua_CFunction lua_atpanic (lua_State *L, lua_CFunction p) { return p; }",
    );
    assert_eq!(entities(&f), ["Function lua_atpanic"]);
}

#[test]
fn alias_and_static_macros_are_marked() {
    let src = "#define ZSTD_isError ERR_isError\n#define MEM_STATIC static inline\n#ifdef X\n#define Y 1\n#endif\n";
    let f = facts("a.h", Language::C, src);
    assert_eq!(f.str(f.entities[0].type_name), "ERR_isError");
    assert!(f.entities[1].bits & entity_bits::STATIC_MACRO != 0);
    assert!(f.entities[2].bits & entity_bits::CONDITIONAL != 0);
    assert!(f.entities[0].bits & entity_bits::CONDITIONAL == 0);
}

#[test]
fn garbage_and_deep_nesting_do_not_panic() {
    let mut ex = Extractor::new().expect("grammars");
    let inputs: Vec<String> = vec![
        String::new(),
        "\0\0\u{1}}}}{{{(((".to_owned(),
        "#!/bin/sh\necho hello | grep -v x; fn main() { let x = 5; }".to_owned(),
        "class { virtual ~ :: <<>> operator() ;".to_owned(),
        "(".repeat(20_000),
        "{".repeat(20_000),
        format!(
            "int f() {{ return {}1{}; }}",
            "(".repeat(5000),
            ")".repeat(5000)
        ),
        "#define A(".to_owned(),
        "struct S { int a : ; } x = { .a = };".to_owned(),
        "ÿþ\u{feff}int f(){}".to_owned(),
    ];
    for (i, s) in inputs.iter().enumerate() {
        for lang in [Language::C, Language::Cpp] {
            let f = ex.extract(&format!("g{i}.c"), lang, s);
            assert_eq!(f.bytes, s.len() as u64);
        }
    }
}

#[test]
fn references_are_deduplicated_per_enclosing_entity() {
    let src = "int g;\nvoid f(void) { g = 1; g = 2; h(); h(); int x = g; }\n";
    let f = facts("a.c", Language::C, src);
    let kinds: Vec<(RefKind, &str)> = f.refs.iter().map(|r| (r.kind, f.str(r.name))).collect();
    assert_eq!(
        kinds,
        [
            (RefKind::Write, "g"),
            (RefKind::Call, "h"),
            (RefKind::Read, "g")
        ]
    );
}

#[test]
fn keywords_never_name_an_entity_or_a_reference() {
    // Behind an unknown macro, tree-sitter's recovery reads `struct` as a declared name.
    let src = "static __always_inline struct task_struct *get_current(void)\n{\n\treturn cur(0);\n}\nint new;\n#define inline __inline__\n";
    let f = facts("a.c", Language::C, src);
    let names: Vec<&str> = f.entities.iter().map(|e| f.str(e.name)).collect();
    assert!(!names.contains(&"struct"), "{names:?}");
    assert!(f.refs.iter().all(|r| f.str(r.name) != "struct"));
    // C++ words are names in C; a macro may be named like a keyword.
    assert!(
        names.contains(&"new") && names.contains(&"inline"),
        "{names:?}"
    );
    for e in &f.entities {
        assert!(e.parent == super::NO_ENTITY || (e.parent as usize) < f.entities.len());
    }
    for r in &f.refs {
        assert!(r.enclosing == super::NO_ENTITY || (r.enclosing as usize) < f.entities.len());
    }
    let g = facts(
        "a.cpp",
        Language::Cpp,
        "int new_count;\nclass A { int this_x; };\n",
    );
    assert!(
        g.entities
            .iter()
            .all(|e| !matches!(g.str(e.name), "new" | "this"))
    );
}

#[test]
fn retain_strings_empties_only_the_strings_not_kept() {
    let mut f = facts(
        "a.c",
        Language::C,
        "int add(int a, int b) { return a + b; }\n",
    );
    let e = f.entities[0].clone();
    assert_eq!(f.str(e.signature), "int add(int a, int b)");
    let before = f.text.len();
    let mut keep = vec![true; f.ends.len()];
    keep[e.signature.0 as usize] = false;
    let texts: Vec<String> = (0..f.ends.len() as u32)
        .map(|i| f.str(super::Sym(i)).to_owned())
        .collect();
    f.retain_strings(&keep);
    assert_eq!(f.text.len(), before - "int add(int a, int b)".len());
    for (i, t) in texts.iter().enumerate() {
        let want = if keep[i] { t.as_str() } else { "" };
        assert_eq!(f.str(super::Sym(i as u32)), want, "sym {i}");
    }
    assert_eq!(f.str(e.name), "add");
}

/// `is_keyword` bisects the keyword lists: they must stay sorted, and every word in them
/// must be found.
#[test]
fn keyword_lists_are_sorted_and_found() {
    for list in [super::C_KEYWORDS, super::CPP_KEYWORDS] {
        assert!(
            list.windows(2)
                .all(|w| (w[0].len(), w[0]) < (w[1].len(), w[1])),
            "{list:?}"
        );
    }
    for w in super::C_KEYWORDS {
        assert!(super::is_keyword(w, Language::C), "{w}");
    }
    for w in super::CPP_KEYWORDS {
        assert!(super::is_keyword(w, Language::Cpp), "{w}");
        assert_eq!(
            super::is_keyword(w, Language::C),
            super::C_KEYWORDS.contains(w)
        );
    }
    assert!(!super::is_keyword("structure", Language::Cpp));
}

/// A file whose whole tree is one ERROR node (two functions left open below): the uses
/// in the functions tree-sitter recognised are read off the tree, not flagged as found in
/// an error; those in the broken code are.
#[test]
fn uses_in_functions_under_a_root_error_are_not_in_error() {
    let src = "int clean(int a)\n{\n\treturn helper(a);\n}\n\n\
               int partly(int a)\n{\n\tint x = other(a);\n\tx = ) inner(x) (;\n\treturn x;\n}\n\n\
               int first(int n)\n{\n\
               int second(int n)\n{\n\tfor (; n != 0; n--) {\n#else\n\tswitch (n) {\n\
               \tcase 1: n |= lookup(n); fallthrough;\n";
    // Trees are allocated with the build's allocator (see `crate::mem`).
    crate::mem::install_allocators();
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_c::LANGUAGE.into())
        .expect("C grammar");
    let tree = parser.parse(src, None).expect("parses");
    assert!(
        tree.root_node().is_error(),
        "{}",
        tree.root_node().to_sexp()
    );
    let f = facts("a.c", Language::C, src);
    let flags_of = |name: &str| {
        f.refs
            .iter()
            .filter(|r| r.kind == RefKind::Call && f.str(r.name) == name)
            .map(|r| r.flags & ref_bits::IN_ERROR)
            .collect::<Vec<_>>()
    };
    assert_eq!(flags_of("helper"), [0]);
    // `partly` holds ERROR leaves (the stray parentheses), but both its calls parsed.
    assert_eq!(flags_of("other"), [0]);
    assert_eq!(flags_of("inner"), [0]);
    assert_eq!(flags_of("lookup"), [ref_bits::IN_ERROR]);
}

#[test]
fn entities_nested_in_conditional_blocks_of_any_depth_are_indexed() {
    let depth = 20_000;
    let mut src = String::new();
    for level in 0..depth {
        // Alternate `#if` blocks and `#else` branches holding the next block.
        if level % 2 == 0 {
            src.push_str(&format!("#if L{level}\n"));
        } else {
            src.push_str(&format!("#ifdef L{level}\nint skipped{level};\n#else\n"));
        }
    }
    src.push_str("int deep(void) { return helper(); }\n");
    src.push_str(&"#endif\n".repeat(depth));
    for lang in [Language::C, Language::Cpp] {
        let f = facts("deep.c", lang, &src);
        assert_eq!(f.parse_errors, 0, "{lang:?}");
        assert!(
            entities(&f).iter().any(|e| e == "Function deep"),
            "{lang:?}: {:?}",
            entities(&f).len()
        );
        assert_eq!(calls(&f), ["deep -> helper"], "{lang:?}");
    }
}

/// `macro: name [in within#argument]` for each call of a macro body, then `macro drops
/// mask` for each macro that drops arguments.
fn macro_bodies(f: &FileFacts) -> Vec<String> {
    let macro_name = |entity: u32| f.str(f.entities[entity as usize].name).to_owned();
    let calls = f.macro_calls.iter().map(|call| {
        let within = if call.within.is_empty() {
            String::new()
        } else {
            format!(" in {}#{}", f.str(call.within), call.argument)
        };
        format!(
            "{}: {}{within}",
            macro_name(call.macro_entity),
            f.str(call.name)
        )
    });
    let drops = f.macro_arguments.iter().map(|arguments| {
        format!(
            "{} drops {:#x}",
            macro_name(arguments.macro_entity),
            arguments.unused
        )
    });
    calls.chain(drops).collect()
}

#[test]
fn macro_bodies_record_their_calls_and_the_arguments_they_drop() {
    let f = facts(
        "m.h",
        Language::C,
        "#define LOG(l, ...) do { } while (0)\n\
         #define SHOW(l, ...) print(l, __VA_ARGS__)\n\
         #define FWD(err, ...) do { if (is(err)) { LOG(3, \"%s, %d\", #err, name(err)); } } while (0)\n\
         #define NAMED(fmt, args...) printk(fmt, args)\n\
         #define PASTE(a, b) a ## b\n\
         #define QUOTE(x) #x\n\
         #define GROUPED(x) outer((inner(x)), 1, last(x))\n\
         void f(void) {\n#define LOCAL(x) local_call(x)\n}\n",
    );
    assert_eq!(
        macro_bodies(&f),
        [
            "SHOW: print",
            "FWD: is",
            "FWD: LOG",
            "FWD: name in LOG#3",
            "NAMED: printk",
            "GROUPED: outer",
            "GROUPED: inner in outer#0",
            "GROUPED: last in outer#2",
            "LOG drops 0x8000000000000001",
            "FWD drops 0x8000000000000000",
            "PASTE drops 0x3",
            "QUOTE drops 0x1",
        ]
    );
    let log = f
        .entities
        .iter()
        .position(|e| f.str(e.name) == "LOG")
        .unwrap() as u32;
    assert!(f.drops_argument(log, 0) && f.drops_argument(log, 3));
    let show = f
        .entities
        .iter()
        .position(|e| f.str(e.name) == "SHOW")
        .unwrap() as u32;
    assert!(!f.drops_argument(show, 0) && !f.drops_argument(show, 5));
}

/// Extraction under a configuration: entities of inactive branches are flagged, a
/// reference used on both sides is split, and calls in another call's arguments record it.
#[test]
fn configured_extraction_marks_inactive_code() {
    let src = "\
int helper(int);
#ifdef FAST
int fast(void) { return helper(1); }
#endif
int run(void) {
  helper(2);
#ifndef FAST
  helper(3);
#endif
#ifdef FAST
  helper(4);
#endif
  check(helper(5), 6);
  return 0;
}
";
    let mut x = Extractor::new().expect("grammars load");
    x.set_configured(true);
    let mut f = x.extract("f.c", Language::C, src);
    let config = crate::config::Configuration {
        defines: vec!["OTHER".into()],
        ..Default::default()
    };
    assert_eq!(
        super::mark_configured(&mut f, src, &config),
        0,
        "every condition decided"
    );
    let inactive: Vec<&str> = f
        .entities
        .iter()
        .filter(|e| e.flags.contains(NodeFlags::INACTIVE))
        .map(|e| f.str(e.name))
        .collect();
    assert_eq!(inactive, ["fast"]);
    // run's calls of helper: lines 6 and 8 active, 11 inactive (split off), 13 in
    // argument 1 of `check`.
    let run = f
        .entities
        .iter()
        .position(|e| f.str(e.name) == "run")
        .unwrap() as u32;
    let mut calls: Vec<(u32, bool, String, u8)> = f
        .refs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == RefKind::Call && r.enclosing == run && f.str(r.name) == "helper")
        .flat_map(|(i, r)| {
            let lines = std::iter::once(r.line).chain(
                f.sites
                    .iter()
                    .filter(move |s| s.reference as usize == i)
                    .map(|s| s.line),
            );
            let inactive = r.flags & ref_bits::INACTIVE != 0;
            let within = f.str(r.recv).to_owned();
            lines
                .map(move |l| (l, inactive, within.clone(), r.argument))
                .collect::<Vec<_>>()
        })
        .collect();
    calls.sort();
    assert_eq!(
        calls,
        [
            (6, false, String::new(), 0),
            (8, false, String::new(), 0),
            (11, true, String::new(), 0),
            (13, false, "check".to_owned(), 1),
        ]
    );
    // Without a configuration the facts are as before: no argument recorded.
    let plain = facts("f.c", Language::C, src);
    assert!(plain.refs.iter().all(|r| r.argument == 0));
}
