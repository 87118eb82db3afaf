//! Which files a patch re-resolves (`affected`), and the name and include helpers it
//! shares with the context gathering (`context`).
//!
//! The rules work from the base artifact's graph (its name index, INCLUDES, CONTAINS, INHERITS
//! and every other edge) plus the changed files' new facts; no unchanged file is read to
//! decide (the facts cache answers for them: their name filters, and the includes of the
//! files an added or deleted file may re-target). Every rule errs on the side of
//! re-resolving more: a file re-resolved for nothing costs time, a file missed costs
//! parity with a full build. The rules for changed fields and for changed translation
//! units live in `members` and `units`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use batho_schema::{Language, NodeKind, RelType};
use batho_storage::input::NodeIdx;
use batho_storage::{Artifact, CONTENT_HASH_LEN, StoredHash};

use super::{FileChanges, members, units};
use crate::extract::{FileFacts, Include, entity_bits};
use crate::facts_cache::{self, FactsCache};
use crate::resolve;

/// The last `::` component of a written name (what the resolver's name tables key on).
pub(super) fn last_comp(s: &str) -> &str {
    // By hand: `rsplit("::")` sets up a substring searcher per call, and a patch asks
    // this of every name it meets.
    let b = s.as_bytes();
    let mut i = b.len();
    while i >= 2 {
        if b[i - 1] == b':' && b[i - 2] == b':' {
            return &s[i..];
        }
        i -= 1;
    }
    s
}

/// The non-empty `::` components of `s`, in order.
pub(super) fn comps(s: &str) -> impl Iterator<Item = &str> {
    // By hand, like `last_comp`: most names have no `::`, and `split("::")` would set up
    // a substring searcher for each.
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        loop {
            let r = rest?;
            let b = r.as_bytes();
            let mut i = 0;
            let (comp, next) = loop {
                if i + 1 >= b.len() {
                    break (r, None);
                }
                if b[i] == b':' && b[i + 1] == b':' {
                    break (&r[..i], Some(&r[i + 2..]));
                }
                i += 1;
            };
            rest = next;
            if !comp.is_empty() {
                return Some(comp);
            }
        }
    })
}

/// The simple names of every class a method belongs to, in the base or in the changed
/// files, and of all their base classes: the classes whose fields' types a lookup reads.
fn classes_with_methods(base: &Artifact, facts: &HashMap<String, FileFacts>) -> HashSet<String> {
    let mut out: HashSet<String> = HashSet::new();
    let mut queue: Vec<String> = Vec::new();
    let add = |name: &str, out: &mut HashSet<String>, queue: &mut Vec<String>| {
        if !name.is_empty() && out.insert(name.to_owned()) {
            queue.push(name.to_owned());
        }
    };
    for n in base.nodes_of_kind(NodeKind::Method).iter() {
        let q = base.node(NodeIdx(n)).qualified_name();
        add(last_comp(resolve::scope_of(&q)), &mut out, &mut queue);
    }
    // Bases named in the changed files, by the simple name of the class deriving.
    let mut bases_of: HashMap<&str, Vec<&str>> = HashMap::new();
    for f in facts.values() {
        for e in &f.entities {
            if e.kind == NodeKind::Method {
                add(
                    last_comp(resolve::scope_of(f.str(e.qual))),
                    &mut out,
                    &mut queue,
                );
            }
        }
        for b in &f.bases {
            let class = f.str(f.entities[b.entity as usize].name);
            bases_of
                .entry(class)
                .or_default()
                .push(last_comp(f.str(b.name)));
        }
    }
    while let Some(class) = queue.pop() {
        let mut found: Vec<String> = Vec::new();
        for n in base.lookup_name(&class) {
            if !matches!(
                base.node(n).kind(),
                NodeKind::Class | NodeKind::Struct | NodeKind::Union
            ) {
                continue;
            }
            for e in base.out_edges(n) {
                if e.rel() == RelType::Inherits {
                    found.push(last_comp(&base.node(e.dst()).name()).to_owned());
                }
            }
        }
        found.extend(
            bases_of
                .get(class.as_str())
                .into_iter()
                .flatten()
                .map(|b| (*b).to_owned()),
        );
        for b in found {
            add(&b, &mut out, &mut queue);
        }
    }
    out
}

/// A signature as the resolver can tell it apart: whitespace only where it separates two
/// identifier characters, as one space. A lookup reads a signature's arity and its first
/// identifier (a macro there can make the entity static), never its spacing, so
/// `void die(int) ;` and `void die(int);` are the same definition to other files.
pub(super) fn lookup_signature(sig: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(sig.len());
    let mut gap = false;
    for c in sig.chars() {
        if c.is_whitespace() {
            gap = true;
            continue;
        }
        // Leading whitespace stays visible: it would hide a first identifier.
        if gap && (out.is_empty() || (out.chars().next_back().is_some_and(word) && word(c))) {
            out.push(' ');
        }
        gap = false;
        out.push(c);
    }
    out
}

/// The first identifier of a signature: a macro there (`MEM_STATIC int f(void)`) can make
/// the entity static (`mark_macro_statics`).
pub(super) fn first_token(sig: &str) -> &str {
    sig.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("")
}

/// The targets of a file's INCLUDES edges in the base: resolved paths and `<path>` stub ids.
pub(super) fn base_include_targets(base: &Artifact, file_node: NodeIdx) -> BTreeSet<String> {
    base.out_edges(file_node)
        .filter(|e| e.rel() == RelType::Includes)
        .map(|e| base.node(e.dst()).id().into_owned())
        .collect()
}

/// Facts standing in for every present file, with `known` facts where given: what include
/// resolution needs to see (every path).
fn include_view(
    present: &BTreeMap<String, Language>,
    known: &HashMap<String, FileFacts>,
    want: &BTreeSet<String>,
) -> Vec<FileFacts> {
    present
        .iter()
        .map(|(p, lang)| match known.get(p) {
            Some(f) if want.contains(p) => includes_only(f),
            _ => FileFacts::path_only(p, *lang),
        })
        .collect()
}

/// `f` reduced to its path and includes: all include resolution reads. (Cloning the
/// thousands of emitted files' whole facts, and indexing their entities, cost a large
/// checkout 0.2 s twice.)
fn includes_only(f: &FileFacts) -> FileFacts {
    let mut out = FileFacts::path_only(&f.path, f.language);
    for inc in &f.includes {
        let path = out.push_str(f.str(inc.path));
        out.includes.push(Include { path, ..*inc });
    }
    out
}

/// The new include targets (same form as [`base_include_targets`]) of the files in `want`.
pub(super) fn new_include_targets(
    present: &BTreeMap<String, Language>,
    known: &HashMap<String, FileFacts>,
    want: &BTreeSet<String>,
    include_dirs: &[String],
) -> HashMap<String, BTreeSet<String>> {
    let view = include_view(present, known, want);
    let targets = resolve::include_targets(&view, include_dirs);
    let mut out = HashMap::new();
    for (fi, f) in view.iter().enumerate() {
        if !want.contains(&f.path) {
            continue;
        }
        let set = f
            .includes
            .iter()
            .zip(&targets[fi])
            .map(|(inc, t)| match t {
                Some(t) => view[*t as usize].path.clone(),
                None => format!("<{}>", f.str(inc.path)),
            })
            .collect();
        out.insert(f.path.clone(), set);
    }
    out
}

/// What the scope rules read: the base, the changed files (with their new facts), the
/// files present after the patch, and the facts cache.
#[derive(Clone, Copy)]
pub(super) struct Inputs<'a> {
    pub(super) base: &'a Artifact,
    pub(super) changes: &'a FileChanges,
    pub(super) facts: &'a HashMap<String, FileFacts>,
    pub(super) present: &'a BTreeMap<String, Language>,
    pub(super) include_dirs: &'a [String],
    pub(super) indexed: &'a super::Indexed,
    pub(super) cache: &'a FactsCache,
    /// Threads to read the base on.
    pub(super) threads: usize,
}

/// The files, besides the changed ones, whose nodes and edges a full build of the edited
/// tree may make differently; returned together with the present changed files (the
/// files the fragment re-emits). Deleted files are left to the caller.
pub(super) fn affected(inputs: Inputs<'_>) -> BTreeSet<String> {
    // Rule 3 — include graph: files whose translation unit changed in a way their
    // lookups can see, and files whose own includes resolve differently (`units`). It
    // needs nothing the other rules find (it only skipped files they had taken), so it
    // runs on a second thread.
    let (mut out, by_units) = std::thread::scope(|s| {
        let units = s.spawn(|| {
            let mut out = BTreeSet::new();
            units::affected(inputs, &mut out);
            out
        });
        let out = by_names(inputs);
        let by_units = units
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (out, by_units)
    });
    out.extend(by_units);

    let (base, changes, present) = (inputs.base, inputs.changes, inputs.present);
    out.retain(|p| !p.is_empty() && present.contains_key(p));
    for p in changes.added.iter().chain(&changes.modified) {
        if present.contains_key(p) {
            out.insert(p.clone());
        }
    }
    let changed: BTreeSet<&str> = changes.paths().map(String::as_str).collect();
    couple(base, &mut out, &changed, inputs.threads);
    out
}

/// Rules 0, 1, 2 and 4 and their field forms (1F, 4F): the files that may resolve
/// differently because a definition they can look up by name changed.
fn by_names(inputs: Inputs<'_>) -> BTreeSet<String> {
    let Inputs {
        base,
        changes,
        facts,
        present,
        indexed,
        cache,
        ..
    } = inputs;
    let changed: BTreeSet<&str> = changes.paths().map(String::as_str).collect();
    let mut out: BTreeSet<String> = BTreeSet::new();

    // Names whose definitions changed in a way another file's resolution can see. A
    // function or method is looked up by name, kind, linkage flags, scope and arity (all
    // in its signature), so one whose (file, name, kind, flags, qualified name, signature)
    // is unchanged — a body edit, lines moved — changes nothing for other files: their
    // edges name it by id, which survives. Other kinds may carry what lookups use outside
    // the signature (a macro's alias target, a typedef's or variable's type), all of it
    // inside their own text: their key adds the content hash, so only the ones
    // whose text changed count (counting every name of a changed file made one appended
    // function re-resolve 1,137 of rocksdb's 1,313 files through names like `s`).
    // The last part tells a field found only through its class (`members`) from the rest.
    type Key = (String, String, u8, u8, String, String, StoredHash, bool);
    let mut old_keys: HashMap<Key, i32> = HashMap::new();
    let mut names: HashSet<String> = HashSet::new();
    // Instance fields found only through their class, by class (see `members`).
    let mut fields: members::FieldChanges = members::FieldChanges::new();
    let changed_key =
        |key: Key, names: &mut HashSet<String>, fields: &mut members::FieldChanges| {
            if key.7 {
                let class = resolve::scope_of(&key.4).to_owned();
                fields.entry(class).or_default().insert(key.1);
            } else {
                names.insert(key.1);
            }
        };
    // Object-like macros of the changed files whose text changed (added, removed or
    // edited): any of them may be (or have been) a static macro; the base does not keep
    // a macro's value to tell. A macro with the same text has the same value.
    let mut macros_before: HashMap<(String, StoredHash), i32> = HashMap::new();
    let mut object_macros: HashSet<String> = HashSet::new();
    // Kinds whose key needs no content hash: all a lookup uses of them is in the key.
    // A namespace is never looked up by name, only named in qualifiers; a class, struct,
    // union or enum contributes its kind, flags, qualified name and bases, which its
    // signature (`class API Foo : public Bar`) holds unless it was cut at the length
    // limit; its members are entities with keys of their own. (Keying a class by its
    // text made any edit of an inline method re-resolve every user of the class, and
    // an edit inside `namespace rocksdb {…}` every file of rocksdb.)
    let keyed = |k: NodeKind, signature: &str| match k {
        NodeKind::Function | NodeKind::Method | NodeKind::Enumerator | NodeKind::Namespace => true,
        NodeKind::Class | NodeKind::Struct | NodeKind::Union | NodeKind::Enum => {
            signature.len() < crate::extract::MAX_SIGNATURE
        }
        _ => false,
    };
    // An instance field takes part in a lookup through its file, name, kind, flags and
    // class (its qualified name), all in the key. Its type is read in one place only: for
    // the receiver of a member reference inside a method of its class or of a class
    // deriving from it (`enclosing_class`). So the field of a class no method can be in
    // (every C struct, in practice) is keyed without its declaration text: a field whose
    // type changed changes nothing for other files, where keying it by text made every
    // file with an edge into any field of that name re-resolve. And when such a field is
    // added, removed or moved, only the files that can reach its class are re-resolved
    // (rules 1F and 4F, `members`), not every file using some field of that name.
    let method_classes = classes_with_methods(base, facts);
    let typeless_field = |k: NodeKind, flags: batho_schema::NodeFlags, qual: &str| {
        k == NodeKind::Field
            && !flags.contains(batho_schema::NodeFlags::STATIC)
            && !method_classes.contains(last_comp(resolve::scope_of(qual)))
    };
    // The signature and text parts of a definition's key.
    let sig_and_text =
        |k: NodeKind, flags: batho_schema::NodeFlags, qual: &str, sig: &str, hash: &[u8]| {
            // The artifact keeps a prefix of the content hash: a fresh hash (from the
            // changed files' facts) is cut to the same length to compare.
            let mut text = [0; CONTENT_HASH_LEN];
            if typeless_field(k, flags, qual) {
                return (String::new(), text, !resolve::scope_of(qual).is_empty());
            }
            if !keyed(k, sig) {
                text.copy_from_slice(&hash[..CONTENT_HASH_LEN]);
            }
            (lookup_signature(sig), text, false)
        };
    // A `static` definition or a macro of a source file that no file includes is visible
    // to its own file only (the resolver's `visible` drops such "internal" candidates
    // outside the translation unit), so it cannot change another file's resolution.
    let private = |p: &str| {
        !resolve::is_header(p)
            && super::Indexed::of_path(base, p)
                .is_none_or(|(n, _, _)| !base.in_edges(n).any(|e| e.rel() == RelType::Includes))
    };
    let internal = |k: NodeKind, flags: batho_schema::NodeFlags| {
        k == NodeKind::Macro
            || (matches!(k, NodeKind::Function | NodeKind::Variable)
                && flags.contains(batho_schema::NodeFlags::STATIC))
    };
    for p in changes.modified.iter().chain(&changes.deleted) {
        let private = private(p);
        if let Some(bm) = base.nodes_in_file(p) {
            for n in bm.iter() {
                let node = base.node(NodeIdx(n));
                if node.kind() == NodeKind::File {
                    continue;
                }
                if node.kind() == NodeKind::Macro && !node.signature().contains('(') {
                    *macros_before
                        .entry((node.name().into_owned(), node.content_hash()))
                        .or_default() += 1;
                }
                if private && internal(node.kind(), node.flags()) {
                    continue;
                }
                let (sig, text, member) = sig_and_text(
                    node.kind(),
                    node.flags(),
                    &node.qualified_name(),
                    &node.signature(),
                    &node.content_hash(),
                );
                let key = (
                    p.clone(),
                    node.name().into_owned(),
                    node.kind().code(),
                    node.flags().0,
                    node.qualified_name().into_owned(),
                    sig,
                    text,
                    member,
                );
                *old_keys.entry(key).or_default() += 1;
            }
        }
    }
    for f in facts.values() {
        let private = private(&f.path);
        for e in &f.entities {
            if e.kind == NodeKind::Macro && e.bits & entity_bits::FUNCTION_LIKE == 0 {
                match macros_before.get_mut(&(f.str(e.name).to_owned(), e.hash)) {
                    Some(c) if *c > 0 => *c -= 1,
                    _ => {
                        object_macros.insert(f.str(e.name).to_owned());
                    }
                }
            }
            if private && internal(e.kind, e.flags) {
                continue;
            }
            let (sig, text, member) =
                sig_and_text(e.kind, e.flags, f.str(e.qual), f.str(e.signature), &e.hash);
            let key = (
                f.path.clone(),
                f.str(e.name).to_owned(),
                e.kind.code(),
                e.flags.0,
                f.str(e.qual).to_owned(),
                sig,
                text,
                member,
            );
            match old_keys.get_mut(&key) {
                Some(c) if *c > 0 => *c -= 1,
                _ => changed_key(key, &mut names, &mut fields),
            }
        }
    }
    for (key, c) in old_keys {
        if c > 0 {
            changed_key(key, &mut names, &mut fields);
        }
    }
    for ((name, _), c) in macros_before {
        if c > 0 {
            object_macros.insert(name);
        }
    }

    // Rule 0 — a macro that makes definitions static (`#define MEM_STATIC static inline`)
    // may have changed: every definition whose signature starts with an object-like macro
    // of the changed files may change flags. One pass over the functions and variables.
    if !object_macros.is_empty() {
        for kind in [NodeKind::Function, NodeKind::Variable] {
            for n in base.nodes_of_kind(kind).iter() {
                let node = base.node(NodeIdx(n));
                if object_macros.contains(first_token(&node.signature())) {
                    // Its referrers see a different linkage too (rule 1).
                    names.insert(node.name().into_owned());
                    out.insert(node.file().into_owned());
                }
            }
        }
    }

    // Rule 1M — macro expansions: an invocation generates the calls its macro's body
    // makes, through the macros that body invokes (`resolve::expand`), so a macro whose
    // body calls or expands a changed name changes for its invokers too.
    macros_reaching(base, &mut names);

    // Rule 1 — referrers: a file with an edge into any node named like something defined,
    // added or removed here (its callee changed or vanished, a new candidate may win the
    // lookup, an `External` stub `<external>:name` may now resolve). Rule 2 — methods of
    // those names anywhere: OVERRIDES edges are made from the overriding method's file.
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort_unstable();
    let mut cursor = base.name_cursor();
    for name in sorted {
        for n in cursor.lookup(name) {
            let node = base.node(n);
            if node.kind() == NodeKind::File {
                continue;
            }
            if node.kind() == NodeKind::Method {
                out.insert(node.file().into_owned());
            }
            for e in base.in_edges(n) {
                let src = base.edge_src(e.idx());
                out.insert(base.node(src).file().into_owned());
            }
        }
    }

    // Rule 4 — mentions: a reference that found nothing (a type, a read, an `#ifdef`)
    // leaves no edge to follow back, so the files that mention a name defined, added or
    // removed here are taken from their name filters in the facts cache. A file the
    // cache cannot answer for is assumed to mention it.
    if !names.is_empty() {
        let hashes: Vec<u64> = names.iter().map(|n| facts_cache::name_hash(n)).collect();
        for (p, (_, _, hash)) in &indexed.files {
            if out.contains(p) || changed.contains(p.as_str()) || !present.contains_key(p) {
                continue;
            }
            if cache.may_mention(p, hash, &hashes) != Some(false) {
                out.insert(p.clone());
            }
        }
    }

    // Rules 1F and 4F — changed instance fields: their referrers and the files that may
    // look them up in their class.
    let skip = |p: &str| changed.contains(p) || !present.contains_key(p);
    members::affected(inputs, &fields, &method_classes, &skip, &mut out);
    out
}

/// Adds to `names` the names of the macros whose bodies reach one of them, directly or
/// through other macros: the base's CALLS and EXPANDS edges out of Macro nodes (an
/// unresolved body call leaves an edge to its `<external>` stub, so a name added now is
/// reached too).
fn macros_reaching(base: &Artifact, names: &mut HashSet<String>) {
    let mut queue: Vec<String> = names.iter().cloned().collect();
    queue.sort_unstable();
    let mut cursor = base.name_cursor();
    while let Some(name) = queue.pop() {
        for n in cursor.lookup(&name) {
            for e in base.in_edges(n) {
                if !matches!(e.rel(), RelType::Calls | RelType::Expands) {
                    continue;
                }
                let src = base.node(base.edge_src(e.idx()));
                if src.kind() == NodeKind::Macro && names.insert(src.name().into_owned()) {
                    queue.push(src.name().into_owned());
                }
            }
        }
    }
}

/// Rule 5 — edges made by one file but leaving a node of another (a class's CONTAINS edge
/// to a method defined out of line elsewhere): storage replaces a file's out-edges
/// wholesale, so both files are re-resolved together. Closes `emit` under that coupling.
fn couple(base: &Artifact, emit: &mut BTreeSet<String>, changed: &BTreeSet<&str>, threads: usize) {
    // Breadth first, each round's files read on every thread: the emitted files of a
    // large checkout have millions of edges (a widely used header's nodes tens of
    // thousands of in-edges each), hence small chunks taken in turn.
    let mut frontier: Vec<String> = emit.iter().cloned().collect();
    while !frontier.is_empty() {
        let found = crate::par::map_chunks(&frontier, threads, 8, |part| {
            part.iter().flat_map(|p| coupled_files(base, p)).collect()
        });
        frontier.clear();
        for f in found {
            // A deleted file has nothing to re-emit; its edges simply go.
            if !f.is_empty() && !changed.contains(f.as_str()) && emit.insert(f.clone()) {
                frontier.push(f);
            }
        }
    }
}

/// The files an edge of `path`'s nodes couples to it: the use-site file of an out-edge
/// made in another file, the source file of an in-edge made in this one.
fn coupled_files(base: &Artifact, path: &str) -> Vec<String> {
    let (Some(bm), Some(sid)) = (base.nodes_in_file(path), base.find_string(path)) else {
        return Vec::new();
    };
    // Only an edge whose use-site file is not its source's file can couple two files,
    // and the store marks exactly those (a sparse override): the rest cost one column
    // read each, however many edges the emitted files have. Files compare by string id
    // (every string has one id, delta layer or not).
    let mut found: Vec<String> = Vec::new();
    for n in bm.iter() {
        for e in base.out_edges(NodeIdx(n)) {
            if let Some(f) = e.file_sid_override()
                && f != sid
            {
                found.push(base.string(f).into_owned());
            }
        }
        for e in base.in_edges(NodeIdx(n)) {
            if e.file_sid_override() == Some(sid) {
                let src = base.node(base.edge_src(e.idx()));
                if src.file_sid() != sid {
                    found.push(src.file().into_owned());
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{comps, first_token, lookup_signature};
    use proptest::prelude::*;

    proptest! {
        /// `comps` is `split("::")` without the empty pieces (written by hand for speed).
        #[test]
        fn comps_split_like_std(s in "[a:b]{0,12}") {
            let want: Vec<&str> = s.split("::").filter(|c| !c.is_empty()).collect();
            prop_assert_eq!(comps(&s).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn includes_only_keeps_every_include_and_nothing_else() {
        let src = "#include \"a.h\"\n#include <sys/b.h>\nint f(void) { return g(); }\n#include \"c/d.h\"\n";
        let mut x = crate::extract::Extractor::new().expect("grammars");
        let f = x.extract("src/x.c", batho_schema::Language::C, src);
        let g = super::includes_only(&f);
        let incs = |f: &crate::extract::FileFacts| -> Vec<(String, bool, u32)> {
            f.includes
                .iter()
                .map(|i| (f.str(i.path).to_owned(), i.system, i.line))
                .collect()
        };
        assert_eq!(incs(&g).len(), 3);
        assert_eq!(incs(&g), incs(&f));
        assert_eq!((g.path.as_str(), g.language), ("src/x.c", f.language));
        assert!(g.entities.is_empty() && g.refs.is_empty());
    }

    #[test]
    fn lookup_signature_drops_only_spacing_a_lookup_cannot_see() {
        assert_eq!(
            lookup_signature("void die(const char *str, long err) ;"),
            lookup_signature("void die(const char *str,\n\tlong err);")
        );
        assert_eq!(lookup_signature("unsigned  long x"), "unsigned long x");
        // Identifiers never fuse, and the first one stays the first one.
        assert_ne!(
            lookup_signature("MEM_STATIC int f(void)"),
            lookup_signature("MEM_STATICint f(void)")
        );
        for sig in [
            "MEM_STATIC int f(void)",
            " static int f(void)",
            "int f(int a, int b)",
        ] {
            assert_eq!(
                first_token(&lookup_signature(sig)),
                first_token(sig),
                "{sig}"
            );
        }
    }
}
