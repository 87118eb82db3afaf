//! Resolution tests on small in-memory repositories.

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles};

use super::{ResolveOptions, Resolved, resolve};
use crate::extract::Extractor;

fn build(files: &[(&str, &str)]) -> Resolved {
    let mut ex = Extractor::new().expect("grammars");
    let facts = files
        .iter()
        .map(|(p, s)| {
            let lang = if p.ends_with(".cpp") || p.ends_with(".hpp") {
                Language::Cpp
            } else {
                Language::C
            };
            ex.extract(p, lang, s)
        })
        .collect();
    resolve(facts, &ResolveOptions::default())
}

/// `src -REL-> dst strategy [roles]` for every edge of type `rel`, sorted.
fn edges(r: &Resolved, rel: RelType) -> Vec<String> {
    let g = &r.graph;
    let mut v: Vec<String> = g
        .edges
        .iter()
        .filter(|e| e.rel == rel)
        .map(|e| {
            let roles: Vec<&str> = e.roles.names().collect();
            format!(
                "{} -{}-> {} {}{}",
                g.id_of(&g.nodes[e.src.0 as usize]),
                rel,
                g.id_of(&g.nodes[e.dst.0 as usize]),
                e.strategy,
                if roles.is_empty() {
                    String::new()
                } else {
                    format!(" {}", roles.join("|"))
                }
            )
        })
        .collect();
    v.sort();
    v
}

/// [`edges`] of type `rel` whose source id starts with `source`.
fn edges_from(r: &Resolved, rel: RelType, source: &str) -> Vec<String> {
    edges(r, rel)
        .into_iter()
        .filter(|e| e.starts_with(source))
        .collect()
}

fn node<'a>(r: &'a Resolved, id: &str) -> &'a batho_storage::input::NodeInput {
    let g = &r.graph;
    g.nodes
        .iter()
        .find(|n| g.id_of(n) == id)
        .unwrap_or_else(|| panic!("no node {id}"))
}

#[test]
fn same_name_statics_resolve_within_their_translation_unit() {
    let r = build(&[
        (
            "a.c",
            "static int helper(void) { return 1; }\nint fa(void) { return helper(); }\n",
        ),
        (
            "b.c",
            "static int helper(void) { return 2; }\nint fb(void) { return helper(); }\n",
        ),
    ]);
    assert_eq!(
        edges(&r, RelType::Calls),
        [
            "a.c:fa -CALLS-> a.c:helper exact_match",
            "b.c:fb -CALLS-> b.c:helper exact_match"
        ]
    );
}

#[test]
fn prototype_in_header_resolves_to_the_definition() {
    let r = build(&[
        (
            "inc/util.h",
            "int util(int x);\nstatic inline int twice(int x) { return 2 * x; }\n",
        ),
        (
            "src/util.c",
            "#include \"util.h\"\nint util(int x) { return x; }\n",
        ),
        (
            "src/main.c",
            "#include \"util.h\"\n#include <stdio.h>\nint main(void) { printf(\"%d\", util(twice(1))); return missing(); }\n",
        ),
    ]);
    assert_eq!(
        edges(&r, RelType::Calls),
        [
            "src/main.c:main -CALLS-> <external>:missing unresolved",
            "src/main.c:main -CALLS-> <std>:printf stdlib_method",
            "src/main.c:main -CALLS-> inc/util.h:twice import_map",
            "src/main.c:main -CALLS-> src/util.c:util exact_match",
        ]
    );
    assert_eq!(
        edges(&r, RelType::Includes),
        [
            "src/main.c -INCLUDES-> <stdio.h> stdlib_method Import",
            "src/main.c -INCLUDES-> inc/util.h direct Import",
            "src/util.c -INCLUDES-> inc/util.h direct Import",
        ]
    );
    let stdio = node(&r, "<stdio.h>");
    assert_eq!(stdio.kind, NodeKind::File);
    assert!(stdio.flags.contains(NodeFlags::SYSTEM));
    assert!(node(&r, "<std>:printf").flags.contains(NodeFlags::SYSTEM));
    assert_eq!(node(&r, "<external>:missing").kind, NodeKind::External);
    let calls = r
        .graph
        .edges
        .iter()
        .find(|e| e.rel == RelType::Calls && e.strategy == batho_schema::Strategy::ExactMatch);
    assert_eq!(calls.map(|e| (e.confidence, e.line)), Some((0.95, 3)));
}

#[test]
fn duplicate_qualified_names_get_numbered_ids_definition_first() {
    let r = build(&[(
        "a.c",
        "static int f(void);\nstatic int f(void) { return 0; }\nstruct stat { int x; };\nint stat(void) { return f(); }\n",
    )]);
    let g = &r.graph;
    let ids: Vec<String> = g.nodes.iter().map(|n| g.id_of(n).into_owned()).collect();
    assert_eq!(
        ids,
        [
            "a.c",
            "a.c:f#2",
            "a.c:f",
            "a.c:stat",
            "a.c:stat::x",
            "a.c:stat#2"
        ]
    );
    assert_eq!(
        edges(&r, RelType::Calls),
        ["a.c:stat#2 -CALLS-> a.c:f exact_match"]
    );
}

#[test]
fn macros_are_expanded_not_called() {
    let r = build(&[
        (
            "m.h",
            "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#define ZSTD_isError ERR_isError\nunsigned ERR_isError(int c);\n",
        ),
        (
            "e.c",
            "#include \"m.h\"\nunsigned ERR_isError(int c) { return c < 0; }\n",
        ),
        (
            "a.c",
            "#include \"m.h\"\nint f(int x) { if (ZSTD_isError(x)) return 0; return MAX(x, 1); }\n",
        ),
    ]);
    assert_eq!(
        edges(&r, RelType::Calls),
        ["a.c:f -CALLS-> e.c:ERR_isError exact_match"]
    );
    assert_eq!(
        edges(&r, RelType::Expands),
        [
            "a.c:f -EXPANDS-> m.h:MAX import_map",
            "a.c:f -EXPANDS-> m.h:ZSTD_isError import_map"
        ]
    );
}

#[test]
fn callbacks_globals_and_ambiguity() {
    let r = build(&[
        ("x/a.c", "int twin(void) { return 1; }\n"),
        ("y/b.c", "int twin(void) { return 2; }\n"),
        (
            "z/c.c",
            "struct ops { int (*run)(int); };\nint counter;\nint go(struct ops *o) { counter = o->run(counter); return twin(); }\n",
        ),
    ]);
    assert_eq!(
        edges(&r, RelType::Calls),
        [
            "z/c.c:go -CALLS-> x/a.c:twin ambiguous",
            "z/c.c:go -CALLS-> y/b.c:twin ambiguous",
            "z/c.c:go -CALLS-> z/c.c:ops::run receiver_type Dynamic",
        ]
    );
    assert_eq!(
        edges(&r, RelType::Writes),
        ["z/c.c:go -WRITES-> z/c.c:counter exact_match WriteAccess"]
    );
    assert_eq!(
        edges(&r, RelType::Reads),
        ["z/c.c:go -READS-> z/c.c:counter exact_match ReadAccess"]
    );
    assert_eq!(
        edges(&r, RelType::References),
        ["z/c.c:go -REFERENCES-> z/c.c:ops exact_match"]
    );
}

#[test]
fn cpp_scopes_receivers_and_virtual_dispatch() {
    let hdr = r#"
namespace app {
class API Shape {
 public:
  virtual double area() const;
  void describe();
};
class Circle : public Shape {
 public:
  double area() const override;
};
}
"#;
    let src = r#"
#include "shape.hpp"
namespace app {
double Shape::area() const { return 0; }
void Shape::describe() { area(); }
double Circle::area() const { return 3.14; }
}
void use(app::Circle c, app::Shape *s) { c.area(); s->describe(); }
"#;
    let r = build(&[("shape.hpp", hdr), ("shape.cpp", src)]);
    assert_eq!(
        edges(&r, RelType::Calls),
        [
            "shape.cpp:app::Shape::describe -CALLS-> shape.cpp:app::Circle::area receiver_type Dynamic",
            "shape.cpp:app::Shape::describe -CALLS-> shape.cpp:app::Shape::area scope_qualified",
            "shape.cpp:use -CALLS-> shape.cpp:app::Circle::area receiver_type",
            "shape.cpp:use -CALLS-> shape.cpp:app::Shape::describe receiver_type",
        ]
    );
    assert_eq!(
        edges(&r, RelType::Inherits),
        ["shape.hpp:app::Circle -INHERITS-> shape.hpp:app::Shape exact_match"]
    );
    let ov = edges(&r, RelType::Overrides);
    assert!(
        ov.contains(
            &"shape.cpp:app::Circle::area -OVERRIDES-> shape.hpp:app::Shape::area exact_match"
                .to_owned()
        ),
        "{ov:?}"
    );
    let contains = edges(&r, RelType::Contains);
    assert!(
        contains.contains(&"shape.hpp:app::Shape -CONTAINS-> shape.cpp:app::Shape::describe scope_qualified Definition".to_owned()),
        "{contains:?}"
    );
    assert!(contains.contains(
        &"shape.cpp:app -CONTAINS-> shape.cpp:app::Shape::describe direct Definition".to_owned()
    ));
    assert_eq!(
        node(&r, "shape.cpp:app::Shape::describe").kind,
        NodeKind::Method
    );
    assert!(
        node(&r, "shape.hpp:app::Shape::area")
            .flags
            .contains(NodeFlags::VIRTUAL)
    );
}

#[test]
fn output_is_deterministic_whatever_the_input_order() {
    let files = [
        (
            "b.c",
            "#include \"h.h\"\nint b(void) { return a() + helper(); }\n",
        ),
        (
            "a.c",
            "#include \"h.h\"\nint a(void) { return helper(); }\n",
        ),
        (
            "h.h",
            "static inline int helper(void) { return 1; }\nint a(void);\n",
        ),
    ];
    let one = build(&files);
    let mut rev = files;
    rev.reverse();
    let two = build(&rev);
    assert_eq!(one.graph.nodes, two.graph.nodes);
    assert_eq!(one.graph.edges, two.graph.edges);
    assert!(one.graph.strings().eq(two.graph.strings()));
    assert_eq!(one.stats, two.stats);
    assert!(one.graph.edges.iter().all(|e| e.roles != Roles(255)));
}

/// Enough files for several work chunks, with stubs first met in different files, shared
/// libc stubs, virtual dispatch across files, same-named statics and two macros that
/// expand each other (whose generated calls depend on where an expansion starts): the
/// graph must not depend on how many threads resolve it.
#[test]
fn the_graph_is_the_same_for_every_thread_count() {
    let mut srcs = vec![(
        "base.hpp".to_string(),
        "struct Base { virtual int run(int x) = 0; virtual ~Base(); int field; };\n\
         int shared(int);\nint pong_target(int v) { return v; }\n\
         #define PING(x) (PONG(x) + shared(x))\n#define PONG(x) (PING(x) + pong_target(x))\n"
            .to_string(),
    )];
    for i in 0..300 {
        srcs.push((
            format!("d{}/f{i}.cpp", i % 7),
            format!(
                "#include \"../base.hpp\"\n#include <vector>\n\
                 static int local(int a) {{ return a + {i}; }}\n\
                 struct D{i} : Base {{ int run(int x) override {{ return local(x) + shared(x); }} }};\n\
                 int call{i}(Base *b) {{ printf(\"%d\", b->run({i})); ext_{m}({i}); \
                 b->field = 1; return missing_{i}() + local(2); }}\n\
                 int use{i}(int v) {{ return {macro}(v); }}\n",
                m = i % 13,
                macro = if i % 2 == 0 { "PING" } else { "PONG" }
            ),
        ));
    }
    let files: Vec<(&str, &str)> = srcs.iter().map(|(p, s)| (p.as_str(), s.as_str())).collect();
    let mut ex = Extractor::new().expect("grammars");
    let facts: Vec<_> = files
        .iter()
        .map(|(p, s)| ex.extract(p, Language::Cpp, s))
        .collect();
    let run = |threads| {
        resolve(
            facts.clone(),
            &ResolveOptions {
                threads,
                ..ResolveOptions::default()
            },
        )
    };
    let one = run(1);
    assert!(
        one.stats.stubs > 20,
        "the fixture makes stubs: {:?}",
        one.stats
    );
    assert!(edges(&one, RelType::Calls).len() > 900);
    let generated = edges(&one, RelType::Calls)
        .into_iter()
        .filter(|e| e.contains("Generated"))
        .count();
    assert_eq!(
        generated, 600,
        "each use{{i}} reaches shared and pong_target"
    );
    for threads in [2, 3, 8] {
        let many = run(threads);
        assert_eq!(one.graph.nodes, many.graph.nodes, "{threads} threads");
        assert_eq!(one.graph.edges, many.graph.edges, "{threads} threads");
        assert!(
            one.graph.strings().eq(many.graph.strings()),
            "{threads} threads"
        );
        assert_eq!(one.stats, many.stats, "{threads} threads");
    }
}

#[test]
fn names_whose_hashes_collide_stay_apart() {
    // `sample_pop` and `sample_hbp` have the same 64-bit FxHash (found in Linux 6.1, where
    // a read of `sample_pop` became a READS edge into `sample_hbp`).
    assert_eq!(
        crate::extract::fx_hash(b"sample_pop"),
        crate::extract::fx_hash(b"sample_hbp")
    );
    let r = build(&[
        ("a.c", "int sample_hbp;\n"),
        ("b.c", "int use(void) { return sample_pop; }\n"),
    ]);
    assert_eq!(edges(&r, RelType::Reads), Vec::<String>::new());
    // Both defined: each read finds its own, whichever comes first in the table.
    let r = build(&[
        ("a.c", "int sample_hbp;\n"),
        ("b.c", "int use(void) { return sample_pop + sample_hbp; }\n"),
        ("c.c", "int sample_pop;\n"),
    ]);
    assert_eq!(
        edges(&r, RelType::Reads),
        [
            "b.c:use -READS-> a.c:sample_hbp exact_match ReadAccess",
            "b.c:use -READS-> c.c:sample_pop exact_match ReadAccess"
        ]
    );
    // Each name is interned once, so a repeated reference is kept once.
    let mut ex = Extractor::new().expect("grammars");
    let f = ex.extract(
        "c.c",
        Language::C,
        "int f(void) { return sample_pop + sample_hbp + sample_hbp; }\n",
    );
    let reads: Vec<&str> = f.refs.iter().map(|r| f.str(r.name)).collect();
    assert_eq!(reads, ["sample_pop", "sample_hbp"]);
}

#[test]
fn a_pasted_copy_of_an_included_header_is_skipped_like_the_preprocessor_does() {
    let mem = "#ifndef MEM_H\n#define MEM_H\nstatic int rd(void) { return 1; }\n#endif\n";
    let copy = "#ifndef MEM_H\n#define MEM_H\nstatic int rd(void) { return 2; }\n#endif\n\
                int use(void) { return rd(); }\n";
    // Included before the copy: the copy is compiled out, `rd` is the header's.
    let r = build(&[
        ("mem.h", mem),
        ("err.h", "#include \"mem.h\"\n"),
        ("legacy.c", &format!("#include \"err.h\"\n{copy}")),
    ]);
    assert_eq!(
        edges(&r, RelType::Calls),
        ["legacy.c:use -CALLS-> mem.h:rd import_map"]
    );
    // Included after the copy, or not at all: the copy is the one compiled.
    for source in [format!("{copy}#include \"err.h\"\n"), copy.to_string()] {
        let r = build(&[
            ("mem.h", mem),
            ("err.h", "#include \"mem.h\"\n"),
            ("legacy.c", &source),
        ]);
        assert_eq!(
            edges(&r, RelType::Calls),
            ["legacy.c:use -CALLS-> legacy.c:rd exact_match"],
            "{source}"
        );
    }
    // A header whose guard another header shares keeps its own definitions.
    let r = build(&[
        (
            "a.h",
            "#ifndef G\n#define G\nstatic int f(void) { return 1; }\nstatic int g(void) { return f(); }\n#endif\n",
        ),
        (
            "b.h",
            "#include \"a.h\"\n#ifndef G\n#define G\nstatic int f(void) { return 2; }\n#endif\n",
        ),
    ]);
    assert_eq!(
        edges(&r, RelType::Calls),
        ["a.h:g -CALLS-> a.h:f exact_match"]
    );
}

/// `src -REL-> dst: count [lines]` for every edge of type `rel` that has a line, sorted.
fn sites(r: &Resolved, rel: RelType) -> Vec<String> {
    let g = &r.graph;
    let mut v: Vec<String> = g
        .edges
        .iter()
        .filter(|e| e.rel == rel && e.line != 0)
        .map(|e| {
            let s = g.sites(e);
            assert_eq!(
                s.lines.first(),
                Some(&e.line),
                "the edge's line is its first site"
            );
            format!(
                "{} -> {}: {} {:?}",
                g.id_of(&g.nodes[e.src.0 as usize]),
                g.id_of(&g.nodes[e.dst.0 as usize]),
                s.count,
                s.lines
            )
        })
        .collect();
    v.sort();
    v
}

/// Lua's lstrlib.c calls `luaL_error` 25 times from a few functions: one CALLS edge per
/// caller and callee (so callers count as callers), holding every call site — the count
/// of calls and each distinct line, two calls on one line counting twice.
#[test]
fn one_edge_per_caller_and_callee_keeps_every_call_site() {
    let src = "int luaL_error(const char *m);\n\
               int str_format(int a) {\n\
               if (a) luaL_error(\"a\");\n\
               if (a > 1) luaL_error(\"b\"); if (a > 2) luaL_error(\"c\");\n\
               int x = a;\n\
               return x + luaL_error(\"d\");\n\
               }\n\
               int other(void) { return luaL_error(\"e\"); }\n";
    let r = build(&[("lstrlib.c", src)]);
    assert_eq!(
        sites(&r, RelType::Calls),
        [
            "lstrlib.c:other -> lstrlib.c:luaL_error: 1 [8]",
            "lstrlib.c:str_format -> lstrlib.c:luaL_error: 4 [3, 4, 6]",
        ]
    );
    // Reads, writes and expansions fold their sites the same way.
    let src = "#define LIMIT 4\nint g;\nint f(int a) {\n#ifdef LIMIT\ng = a;\n#endif\n\
               g = a + g;\n#if defined(LIMIT)\nreturn g + LIMIT;\n#endif\n}\n";
    let r = build(&[("rw.c", src)]);
    assert_eq!(sites(&r, RelType::Writes), ["rw.c:f -> rw.c:g: 2 [5, 7]"]);
    assert_eq!(sites(&r, RelType::Reads), ["rw.c:f -> rw.c:g: 2 [7, 9]"]);
}

/// Uses written differently (`f()` and `ns::f()` are two references) that reach one
/// target still make one edge, holding the sites of both.
#[test]
fn references_written_differently_share_the_edge_and_its_sites() {
    let src = "namespace ns {\nint f();\nint g() {\nf();\nns::f();\nf();\nreturn ns::f();\n}\n}\n";
    let r = build(&[("q.cpp", src)]);
    assert_eq!(
        sites(&r, RelType::Calls),
        ["q.cpp:ns::g -> q.cpp:ns::f: 4 [4, 5, 6, 7]"]
    );
}

/// A kernel-shaped tree: `tools/` keeps its own copies of kernel headers and functions.
fn kernel_with_tools_copies() -> Resolved {
    build(&[
        (
            "include/linux/types.h",
            "struct list_head { struct list_head *next; };\n",
        ),
        (
            "tools/include/linux/types.h",
            "struct list_head { struct list_head *next, *prev; };\n",
        ),
        ("tools/include/asm/barrier.h", "#include <linux/types.h>\n"),
        (
            "arch/x86/include/asm/barrier.h",
            "#define barrier() do { } while (0)\n",
        ),
        (
            "include/linux/list.h",
            "#include <linux/types.h>\n#include <asm/barrier.h>\n\
             static inline void INIT_LIST_HEAD(struct list_head *list) { list->next = list; }\n",
        ),
        ("arch/x86/kernel/smp.c", "#include <asm/barrier.h>\n"),
        ("include/linux/mutex.h", "void mutex_unlock(int *lock);\n"),
        (
            "kernel/locking/mutex.c",
            "#include <linux/mutex.h>\nvoid mutex_unlock(int *lock) { *lock = 0; }\n",
        ),
        ("tools/perf/util/mutex.h", "void mutex_unlock(int *lock);\n"),
        (
            "tools/perf/util/mutex.c",
            "#include \"mutex.h\"\nvoid mutex_unlock(int *lock) { *lock = 1; }\n",
        ),
        (
            "arch/alpha/include/asm/io.h",
            "unsigned readl(const void *addr);\n",
        ),
        (
            "arch/alpha/kernel/io.c",
            "#include <asm/io.h>\nunsigned readl(const void *addr) { return 0; }\n",
        ),
        (
            "arch/x86/include/asm/io.h",
            "static inline unsigned readl(const void *addr) { return 1; }\n",
        ),
        (
            "drivers/net/nic.c",
            "#include <linux/mutex.h>\n#include <asm/io.h>\n\
             void nic_stop(int *lock) { mutex_unlock(lock); }\n\
             unsigned nic_status(void) { return readl(0); }\n",
        ),
    ])
}

#[test]
fn a_nested_include_directory_serves_its_own_subtree_only() {
    let r = kernel_with_tools_copies();
    let includes = edges(&r, RelType::Includes);
    // `<asm/barrier.h>` from include/linux/ matches only nested include directories
    // (tools/, arch/x86/), none on its path: unresolved, not the shallowest one.
    assert!(
        includes.contains(
            &"include/linux/list.h -INCLUDES-> <asm/barrier.h> stdlib_method Import".to_string()
        ),
        "{includes:#?}"
    );
    assert!(
        includes.contains(
            &"arch/x86/kernel/smp.c -INCLUDES-> arch/x86/include/asm/barrier.h direct Import"
                .to_string()
        )
    );
    assert!(
        includes.contains(
            &"tools/include/asm/barrier.h -INCLUDES-> tools/include/linux/types.h direct Import"
                .to_string()
        )
    );
    // So the list type resolves to the kernel's definition alone.
    let references = edges(&r, RelType::References);
    let list_head: Vec<&String> = references
        .iter()
        .filter(|e| e.starts_with("include/linux/list.h:INIT_LIST_HEAD") && e.contains("list_head"))
        .collect();
    assert_eq!(
        list_head,
        [
            "include/linux/list.h:INIT_LIST_HEAD -REFERENCES-> include/linux/types.h:list_head import_map"
        ]
    );
}

#[test]
fn a_call_links_to_the_definition_that_shares_the_callers_prototype() {
    let r = kernel_with_tools_copies();
    let calls: Vec<String> = edges_from(&r, RelType::Calls, "drivers/net/nic.c:nic_stop");
    assert_eq!(
        calls,
        [
            "drivers/net/nic.c:nic_stop -CALLS-> kernel/locking/mutex.c:mutex_unlock import_map Heuristic"
        ]
    );
}

#[test]
fn behind_an_include_no_directory_decides_a_header_static_is_an_alternative() {
    let r = kernel_with_tools_copies();
    let calls: Vec<String> = edges_from(&r, RelType::Calls, "drivers/net/nic.c:nic_status");
    // `<asm/io.h>` could be any architecture's: alpha's out-of-line `readl` is one
    // candidate among the headers' static inline ones, not the answer.
    assert_eq!(
        calls,
        [
            "drivers/net/nic.c:nic_status -CALLS-> arch/alpha/kernel/io.c:readl ambiguous",
            "drivers/net/nic.c:nic_status -CALLS-> arch/x86/include/asm/io.h:readl ambiguous",
        ]
    );
}

#[test]
fn a_libc_name_the_caller_does_not_declare_is_the_system_one() {
    let r = build(&[
        (
            "tools/include/nolibc/stdio.h",
            "int printf(const char *format, ...);\n",
        ),
        (
            "tools/include/nolibc/stdio.c",
            "#include \"stdio.h\"\nint printf(const char *format, ...) { return 0; }\n",
        ),
        (
            "tools/testing/selftest.c",
            "#include <stdio.h>\nint main(void) { return printf(\"ok\\n\"); }\n",
        ),
        (
            "include/linux/sprintf.h",
            "int sprintf(char *buf, const char *fmt, ...);\n",
        ),
        (
            "lib/vsprintf.c",
            "#include <linux/sprintf.h>\nint sprintf(char *buf, const char *fmt, ...) { return 0; }\n",
        ),
        (
            "drivers/base/core.c",
            "#include <linux/sprintf.h>\nint show(char *buf) { return sprintf(buf, \"x\"); }\n",
        ),
        // Two definitions of `dup`, neither declared where it is called: still libc's.
        ("x/a.c", "int dup(int fd) { return fd; }\n"),
        ("y/b.c", "int dup(int fd) { return fd + 1; }\n"),
        (
            "z/c.c",
            "#include <unistd.h>\nint again(int fd) { return dup(fd); }\n",
        ),
    ]);
    let calls: Vec<String> = edges(&r, RelType::Calls)
        .into_iter()
        .filter(|e| !e.starts_with("tools/include/"))
        .collect();
    assert_eq!(
        calls,
        [
            "drivers/base/core.c:show -CALLS-> lib/vsprintf.c:sprintf exact_match",
            "tools/testing/selftest.c:main -CALLS-> <std>:printf stdlib_method",
            "z/c.c:again -CALLS-> <std>:dup stdlib_method",
        ]
    );
}

#[test]
fn calls_made_through_macros_are_generated_calls_of_the_invoking_function() {
    let r = build(&[
        (
            "api.h",
            "void settop(int i);\nvoid step(void);\nvoid fullgc(void);\n\
             #define pop(n) settop(-(n)-1)\n\
             #define checkgc() condgc(step())\n\
             #define condgc(x) { x; }\n\
             #ifndef HARD\n#define change() ((void)0)\n#else\n#define change() fullgc()\n#endif\n\
             #define twice(a) pop(a); pop(a)\n\
             #define settop(i) settop(i)\n",
        ),
        (
            "api.c",
            "#include \"api.h\"\nvoid (settop)(int i) { }\nvoid step(void) { }\nvoid fullgc(void) { }\n",
        ),
        (
            "user.c",
            "#include \"api.h\"\nvoid user(void) {\n  pop(1);\n  checkgc();\n  change();\n  twice(2);\n}\n\
             void direct(void) {\n  step();\n  checkgc();\n}\n",
        ),
    ]);
    let calls: Vec<String> = edges_from(&r, RelType::Calls, "user.c");
    assert_eq!(
        calls,
        [
            "user.c:direct -CALLS-> api.c:step exact_match",
            "user.c:user -CALLS-> api.c:settop exact_match Generated",
            "user.c:user -CALLS-> api.c:step exact_match Generated",
        ]
    );
}

#[test]
fn a_call_in_an_argument_the_macro_drops_is_not_made() {
    let r = build(&[
        (
            "debug.h",
            "#if (DEBUGLEVEL>=2)\n#  define RAWLOG(l, ...) \\\n    do { print(__VA_ARGS__); } while (0)\n\
             #else\n#  define RAWLOG(l, ...)   do { } while (0)    /* disabled */\n#endif\n\
             #define KEEP(x) (x)\n",
        ),
        (
            "err.h",
            "#include \"debug.h\"\nint is_error(int);\nconst char* error_name(int);\nint check(int);\n\
             #define FORWARD(err, ...) \\\n    do { int const code = (err); \\\n\
             if (is_error(code)) { \\\n    RAWLOG(3, \"%s:%d: %s\", __FILE__, __LINE__, error_name(code)); \\\n\
             return KEEP(check(code)); } } while (0)\n",
        ),
        (
            "err.c",
            "#include \"err.h\"\nint is_error(int c) { return c; }\nconst char* error_name(int c) { return 0; }\n\
             int check(int c) { return c; }\nvoid print(const char* f, ...) { }\n",
        ),
        (
            "user.c",
            "#include \"err.h\"\nint user(int x) {\n  FORWARD(x, \"bad\");\n  return 0;\n}\n",
        ),
    ]);
    let calls: Vec<String> = edges_from(&r, RelType::Calls, "user.c");
    assert_eq!(
        calls,
        [
            "user.c:user -CALLS-> err.c:check exact_match Generated",
            "user.c:user -CALLS-> err.c:is_error exact_match Generated",
        ]
    );
}
