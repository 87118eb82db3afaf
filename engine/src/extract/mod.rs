//! Extraction: one tree-sitter parse and one cursor walk per file, producing compact
//! [`FileFacts`] (entities, includes, references) that [`crate::resolve`] links into a graph.
//!
//! Facts hold no tree-sitter state and no references to the source text: every string
//! (names, qualifiers, signatures) lives once in the file's own string arena
//! ([`FileFacts::text`]) and is named by a [`Sym`], so a reference costs 24 bytes and no heap
//! allocation. Parse errors never abort extraction: the walk goes on through `ERROR`
//! nodes and attributes what it finds there to the enclosing entity.
//!
//! # Stable ids
//! An entity's id (built by the resolver) is `<repo-relative path>:<qualified name>`. When
//! several entities of one file share a qualified name (overloads, a prototype and its
//! definition, `struct stat` and `stat()`, `#ifdef` alternatives), they are ordered
//! definitions first, then by start byte; the first keeps the plain id and the n-th
//! (n ≥ 2) gets the suffix `#n`. The order depends only on the file's text, so ids are
//! stable across runs and independent of other files.

pub(crate) mod conditions;
mod doc_comment;
mod expansion;
mod guards;
mod kinds;
mod preprocess;
mod walk;

/// How deep the extractor walks a syntax tree: what lies deeper (thousands of nested
/// `#if` or parentheses) is not indexed, and its file is listed with the files that have
/// syntax errors.
pub const MAX_WALK_DEPTH: u32 = walk::MAX_DEPTH;

#[cfg(test)]
mod tests;

use batho_schema::{Language, NodeFlags, NodeKind};
use batho_storage::StoredHash;
use kinds::KindTable;

/// An index into a file's string arena; `Sym(0)` is the empty string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

impl Sym {
    /// The empty string.
    pub const EMPTY: Sym = Sym(0);
    /// Whether this is the empty string.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// "No entity": a reference made at file scope, or an entity without a parent.
pub const NO_ENTITY: u32 = u32::MAX;

/// Extra entity bits that are not node flags.
pub mod entity_bits {
    /// A function-like macro (`#define f(x) …`).
    pub const FUNCTION_LIKE: u8 = 1;
    /// A method defined outside its class (`int Foo::bar() {…}`).
    pub const OUT_OF_LINE: u8 = 2;
    /// Variadic parameter list (`...`).
    pub const VARIADIC: u8 = 4;
    /// Recovered from a misparse (export-macro class, `#ifdef`-split signature).
    pub const RECOVERED: u8 = 8;
    /// A pure virtual method (`= 0`).
    pub const PURE: u8 = 16;
    /// An object-like macro whose value starts with `static` (`#define MEM_STATIC static inline`).
    pub const STATIC_MACRO: u8 = 32;
    /// Defined inside an `#if`/`#ifdef` block (include guards aside): may be inactive.
    pub const CONDITIONAL: u8 = 64;
    /// Defined by a file-scope macro invocation, and located at it (see
    /// `expansion::definitions`).
    pub const GENERATED: u8 = 128;
}

/// One declared or defined entity of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Entity {
    /// Node kind (never `File` or `External`).
    pub kind: NodeKind,
    /// Linkage/declaration flags.
    pub flags: NodeFlags,
    /// [`entity_bits`].
    pub bits: u8,
    /// Number of declared parameters (functions, methods, function-like macros); 255 = many.
    pub params: u8,
    /// Simple name.
    pub name: Sym,
    /// Qualified name (`ns::Foo::bar`); equal to `name` in C.
    pub qual: Sym,
    /// Index of the lexically enclosing entity in [`FileFacts::entities`], or [`NO_ENTITY`].
    pub parent: u32,
    /// For fields, variables and typedefs: the base name of the declared type (receiver
    /// inference). For an object-like macro whose value is one identifier
    /// (`#define ZSTD_isError ERR_isError`): that identifier, the macro's alias target.
    pub type_name: Sym,
    /// Declaration text up to the body, whitespace collapsed.
    pub signature: Sym,
    /// The comment written directly above the entity, cleaned to its words and cut
    /// (`doc_comment`); empty when there is none or the kind takes none
    /// ([`takes_doc_comment`]). Only the text index reads it.
    pub doc: Sym,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    /// Start byte.
    pub start_byte: u32,
    /// End byte (exclusive).
    pub end_byte: u32,
    /// blake3 of the entity's source text (the part a graph keeps).
    pub hash: StoredHash,
}

/// A base class named in a class/struct head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Base {
    /// The deriving entity.
    pub entity: u32,
    /// The base's name as written (qualifiers included, template arguments dropped).
    pub name: Sym,
    /// Line of the base clause.
    pub line: u32,
}

/// One `#include`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Include {
    /// The path between the quotes or angle brackets.
    pub path: Sym,
    /// `<…>` rather than `"…"`.
    pub system: bool,
    /// 1-based line.
    pub line: u32,
}

/// An include-guard block (`#ifndef NAME` whose first definition, before any other
/// conditional, is `#define NAME`, inside no condition but other guards), wherever it sits
/// in the file: a header's own guard, or a copy of a header pasted into another file under
/// that header's guard (zstd's legacy decoders embed `mem.h` so). Found by a scan of the
/// directive lines (see `guards`), not in the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardBlock {
    /// The guard macro.
    pub name: Sym,
    /// 1-based line of the `#ifndef`.
    pub start_line: u32,
    /// 1-based line of the `#else`, `#elif` or `#endif` that ends the guarded part.
    pub end_line: u32,
}

impl GuardBlock {
    /// Whether an entity starting on `line` is in the guarded part.
    pub fn holds_line(&self, line: u32) -> bool {
        self.start_line < line && line < self.end_line
    }
}

/// What a reference does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum RefKind {
    /// A call (`f(x)`, `obj.m()`, `ns::f()`), possibly of a function-like macro.
    Call = 0,
    /// A use of a type name.
    Type = 1,
    /// An identifier read outside a call position (global, enumerator, macro, function value).
    Read = 2,
    /// An identifier assigned to or incremented.
    Write = 3,
    /// A macro named in a preprocessor condition (`#ifdef X`, `defined(X)`).
    Expand = 4,
}

/// Bits of [`Ref::flags`].
pub mod ref_bits {
    /// Called through a function pointer, a struct field or a local variable.
    pub const DYNAMIC: u8 = 1;
    /// Member access (`obj.m`, `p->m`): `Ref::recv` describes the object.
    pub const MEMBER: u8 = 2;
    /// The object is `this` (or the member is used unqualified inside a method).
    pub const THIS: u8 = 4;
    /// `Ref::recv` is the *name* of a non-local object (a field or global), not its type.
    pub const RECV_IS_NAME: u8 = 8;
    /// The callee name is a local variable or parameter.
    pub const LOCAL: u8 = 16;
    /// Found inside an `ERROR` node, outside any definition, declaration or directive
    /// that tree-sitter recognised within it (its calls get the Heuristic role).
    pub const IN_ERROR: u8 = 32;
    /// A call or read that exists only in a macro's expansion, its name substituted or
    /// pasted (see `expansion::calls`): its edge gets the Generated role, and a call makes
    /// no edge to a name the repository does not define.
    pub const GENERATED: u8 = 64;
    /// Written in a branch the build's configuration leaves out (see `conditions`): its
    /// edge gets the Inactive role.
    pub const INACTIVE: u8 = 128;
}

/// One use of a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ref {
    /// What the use does.
    pub kind: RefKind,
    /// [`ref_bits`].
    pub flags: u8,
    /// Number of call arguments (calls only; 255 = many).
    pub arity: u8,
    /// Index of the enclosing entity, or [`NO_ENTITY`] for file scope.
    pub enclosing: u32,
    /// The name as written (last component).
    pub name: Sym,
    /// The qualifier as written (`ns::Foo` of `ns::Foo::f`), or empty.
    pub qual: Sym,
    /// Receiver: the declared type of the object, or its name with [`ref_bits::RECV_IS_NAME`].
    /// For a call written inside the arguments of a call of a plain name (`argument` not
    /// 0): that name, the outermost such call's (`assert` of `assert(f(g(x)))`).
    pub recv: Sym,
    /// 0, or 1 + the index of the argument of the call named by `recv` this call is
    /// written in (255: that or later). Set only when the file is extracted under a
    /// configuration: the resolver then leaves the call out (the Inactive role) when the
    /// active definition of a macro of that name drops that argument. Not kept by the
    /// facts cache, which a configured build does not fill.
    pub argument: u8,
    /// 1-based line of the (first) use.
    pub line: u32,
}

/// A use of a name after the first with the same [`Ref`] key: the references are
/// deduplicated, and these keep the line of every other site (a caller calling one
/// function 25 times has one reference and 24 sites), so that an edge can list them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RefSite {
    /// Index of the reference in [`FileFacts::refs`].
    pub reference: u32,
    /// 1-based line of the use.
    pub line: u32,
}

/// A call shape (`name(`) written in the body of a macro defined at file scope: what an
/// invocation of the macro calls once expanded. Unlike references, these are kept in the
/// skeleton, because resolving an invocation in one file reads the bodies of macros
/// defined in others (a patch has those only as skeletons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacroCall {
    /// Index of the macro entity.
    pub macro_entity: u32,
    /// The called name.
    pub name: Sym,
    /// The call whose argument this call is written in (`RAWLOG(3, f(x))`), or empty.
    pub within: Sym,
    /// Which argument of `within` (0-based).
    pub argument: u8,
}

/// The parameters a function-like macro's body drops (`#define RAWLOG(l, ...) do {} while
/// (0)`): a call written in such an argument is not in the expansion. Only macros that
/// drop one are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacroArguments {
    /// Index of the macro entity.
    pub macro_entity: u32,
    /// Bit i: parameter i is unused (see [`MacroArguments::bit`]); bit 63: the variadic
    /// part (`...`) is unused.
    pub unused: u64,
}

impl MacroArguments {
    /// The bit of the variadic part.
    pub const VARIADIC_BIT: u32 = 63;

    /// The bit of parameter `index` (the variadic part's at or past `params`), or none for
    /// a parameter past the 63rd, which is never reported unused.
    pub fn bit(index: usize, params: usize) -> Option<u32> {
        if index >= params {
            Some(Self::VARIADIC_BIT)
        } else {
            u32::try_from(index)
                .ok()
                .filter(|&bit| bit < Self::VARIADIC_BIT)
        }
    }
}

/// Everything resolution needs to know about one file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileFacts {
    /// Repo-relative path, forward slashes.
    pub path: String,
    /// Source language.
    pub language: Language,
    /// The string arena: every [`Sym`] is a slice of it.
    pub text: String,
    /// `ends[i]` is the end of string `i` in `text` (string `i` starts at `ends[i-1]`).
    pub ends: Vec<u32>,
    /// Entities in source order of their start.
    pub entities: Vec<Entity>,
    /// Base classes.
    pub bases: Vec<Base>,
    /// Includes in source order.
    pub includes: Vec<Include>,
    /// Include-guard blocks, in source order of their `#ifndef`.
    pub guards: Vec<GuardBlock>,
    /// The calls written in macro bodies, by macro entity (ascending), each name once per
    /// macro.
    pub macro_calls: Vec<MacroCall>,
    /// The macros that drop parameters, by macro entity (ascending).
    pub macro_arguments: Vec<MacroArguments>,
    /// References, deduplicated per (kind, flags, enclosing, name, qualifier, receiver).
    pub refs: Vec<Ref>,
    /// The further use sites of the references, sorted (by reference, then line).
    pub sites: Vec<RefSite>,
    /// Number of `ERROR`/missing nodes in the parse tree.
    pub parse_errors: u32,
    /// Source size in bytes.
    pub bytes: u64,
    /// Number of lines.
    pub lines: u32,
    /// blake3 of the file's raw bytes (see [`crate::source::SourceText::hash`]); all zeros
    /// until the caller that read the file sets it. It becomes the File node's content hash.
    pub content_hash: [u8; 32],
}

impl FileFacts {
    /// Facts of a file known only by its path (no entities, includes or references): a
    /// patch stands one in for every file it does not re-extract, because include
    /// resolution looks at every path of the repository.
    pub fn path_only(path: &str, language: Language) -> FileFacts {
        FileFacts {
            path: path.to_owned(),
            language,
            text: String::new(),
            ends: vec![0],
            entities: Vec::new(),
            bases: Vec::new(),
            includes: Vec::new(),
            guards: Vec::new(),
            macro_calls: Vec::new(),
            macro_arguments: Vec::new(),
            refs: Vec::new(),
            sites: Vec::new(),
            parse_errors: 0,
            bytes: 0,
            lines: 0,
            content_hash: [0; 32],
        }
    }

    /// Appends `text` to the string arena (the empty string is [`Sym::EMPTY`]).
    pub(crate) fn push_str(&mut self, text: &str) -> Sym {
        if text.is_empty() {
            return Sym::EMPTY;
        }
        self.text.push_str(text);
        self.ends.push(self.text.len() as u32);
        Sym(self.ends.len() as u32 - 1)
    }

    /// The facts of `source` before the walk: its size, and nothing found yet.
    fn unwalked(path: &str, language: Language, source: &str) -> FileFacts {
        let lines =
            u32::try_from(source.bytes().filter(|&b| b == b'\n').count() + 1).unwrap_or(u32::MAX);
        FileFacts {
            bytes: source.len() as u64,
            lines,
            ..FileFacts::path_only(path, language)
        }
    }

    /// The calls written in the body of macro entity `entity` (none for other entities).
    pub fn macro_calls_of(&self, entity: u32) -> &[MacroCall] {
        let first = self
            .macro_calls
            .partition_point(|c| c.macro_entity < entity);
        let end = self
            .macro_calls
            .partition_point(|c| c.macro_entity <= entity);
        &self.macro_calls[first..end]
    }

    /// Whether macro entity `entity` drops the argument at `index` (see [`MacroArguments`]).
    pub fn drops_argument(&self, entity: u32, index: u8) -> bool {
        let params = self.entities.get(entity as usize).map_or(0, |e| e.params);
        let Some(bit) = MacroArguments::bit(usize::from(index), usize::from(params)) else {
            return false;
        };
        self.macro_arguments
            .binary_search_by_key(&entity, |a| a.macro_entity)
            .is_ok_and(|at| self.macro_arguments[at].unused & 1 << bit != 0)
    }

    /// Makes facts extracted from `source.text` describe the file as read: its size, its
    /// content hash, and entity byte offsets counted in the file's bytes rather than in a
    /// lossily decoded text (lines need nothing: a replaced sequence never holds a newline).
    pub fn adopt_file_bytes(&mut self, source: &crate::source::SourceText) {
        self.content_hash = source.hash;
        self.bytes = source.bytes;
        if source.lossy {
            for e in &mut self.entities {
                e.start_byte = source.offsets.original(e.start_byte);
                e.end_byte = source.offsets.original(e.end_byte);
            }
        }
    }

    /// The text of a symbol.
    pub fn str(&self, s: Sym) -> &str {
        let i = s.0 as usize;
        if i == 0 || i >= self.ends.len() {
            return "";
        }
        let a = self.ends[i - 1] as usize;
        let b = self.ends[i] as usize;
        self.text.get(a..b).unwrap_or("")
    }

    /// Empties every string of the arena whose [`Sym`] `keep` does not hold (it then reads
    /// as ""), keeping every `Sym` valid, and frees the text. Resolution uses it to drop
    /// the text it has already copied into the graph (signatures) before it needs memory
    /// for edges.
    pub fn retain_strings(&mut self, keep: &[bool]) {
        let kept: usize = (1..self.ends.len())
            .filter(|&i| keep.get(i) == Some(&true))
            .map(|i| self.ends[i].saturating_sub(self.ends[i - 1]) as usize)
            .sum();
        let mut text = String::with_capacity(kept);
        let mut ends = Vec::with_capacity(self.ends.len());
        ends.push(0);
        for i in 1..self.ends.len() {
            if keep.get(i) == Some(&true) {
                text.push_str(self.str(Sym(i as u32)));
            }
            ends.push(text.len() as u32);
        }
        self.ends = ends;
        self.text = text;
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.path.capacity()
            + self.text.capacity()
            + self.ends.capacity() * 4
            + self.entities.capacity() * std::mem::size_of::<Entity>()
            + self.bases.capacity() * std::mem::size_of::<Base>()
            + self.includes.capacity() * std::mem::size_of::<Include>()
            + self.guards.capacity() * std::mem::size_of::<GuardBlock>()
            + self.refs.capacity() * std::mem::size_of::<Ref>()
            + self.sites.capacity() * std::mem::size_of::<RefSite>()
            + self.macro_calls.capacity() * std::mem::size_of::<MacroCall>()
            + self.macro_arguments.capacity() * std::mem::size_of::<MacroArguments>()
    }
}

/// Why an [`Extractor`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// A grammar's ABI is not accepted by the linked tree-sitter runtime.
    #[error("cannot load the tree-sitter {language} grammar: {source}")]
    Grammar {
        /// Which grammar.
        language: &'static str,
        /// The runtime's complaint.
        source: tree_sitter::LanguageError,
    },
}

struct Lang {
    parser: tree_sitter::Parser,
    table: KindTable,
}

/// Holds one parser per language, reused across files (a parser is not `Sync`: use one
/// extractor per thread).
pub struct Extractor {
    c: Lang,
    cpp: Lang,
    /// Record which argument of which call each call is written in
    /// ([`Ref::argument`]): set under a configuration.
    arguments: bool,
}

impl Extractor {
    /// Loads both grammars.
    pub fn new() -> Result<Extractor, ExtractError> {
        crate::mem::install_allocators();
        let mk = |lang: tree_sitter::Language, name: &'static str| -> Result<Lang, ExtractError> {
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&lang)
                .map_err(|source| ExtractError::Grammar {
                    language: name,
                    source,
                })?;
            Ok(Lang {
                parser,
                table: KindTable::new(&lang),
            })
        };
        Ok(Extractor {
            c: mk(tree_sitter_c::LANGUAGE.into(), "c")?,
            cpp: mk(tree_sitter_cpp::LANGUAGE.into(), "cpp")?,
            arguments: false,
        })
    }

    /// Extracts the files from now on for a build under a configuration (`true`): calls
    /// written in another call's arguments record it ([`Ref::argument`]). What is
    /// inactive is marked afterwards, once every file's directives are known
    /// ([`mark_inactive`]).
    pub fn set_configured(&mut self, configured: bool) {
        self.arguments = configured;
    }

    /// Extracts the facts of one file. Never panics; a file tree-sitter cannot parse at
    /// all yields facts with no entities and `parse_errors = 1`.
    pub fn extract(&mut self, rel_path: &str, language: Language, source: &str) -> FileFacts {
        self.extract_inner(rel_path, language, source, true)
    }

    /// [`Self::extract`] through the parser even for a file of plain directives, which
    /// `extract` reads line by line: the reference its line reader is checked against.
    pub fn extract_parsed(
        &mut self,
        rel_path: &str,
        language: Language,
        source: &str,
    ) -> FileFacts {
        self.extract_inner(rel_path, language, source, false)
    }

    /// Whether [`Self::extract`] reads `source` (a C file) line by line, as a file of
    /// plain directives and comments, rather than parsing it.
    pub fn reads_as_directives(&self, source: &str) -> bool {
        walk::is_directive_only(&self.c.table, source)
    }

    fn extract_inner(
        &mut self,
        rel_path: &str,
        language: Language,
        source: &str,
        line_reader: bool,
    ) -> FileFacts {
        // Which argument of which call a call is written in matters only when macros'
        // definitions are chosen by a configuration.
        let arguments = self.arguments;
        let lang = match language {
            Language::Cpp => &mut self.cpp,
            _ => &mut self.c,
        };
        let mut facts = FileFacts::unwalked(rel_path, language, source);
        // Offsets are u32: a source over 4 GiB is not C anyone can compile; skip it whole.
        if source.len() >= u32::MAX as usize {
            facts.parse_errors = 1;
            return facts;
        }
        if line_reader
            && language == Language::C
            && walk::read_directives(&lang.table, source, &mut facts)
        {
            drop_keyword_names(&mut facts);
            record_guards(&mut facts, source);
            return facts;
        }
        let Some(tree) = lang.parser.parse(source, None) else {
            facts.parse_errors = 1;
            return facts;
        };
        walk::walk(&lang.table, language, source, &tree, &mut facts, arguments);
        expansion::add_expansions(lang, language, source, &tree, &mut facts, arguments);
        drop_keyword_names(&mut facts);
        record_guards(&mut facts, source);
        facts
    }
}

/// Evaluates the conditional directives of one file alone (its includes not followed)
/// under `config` and marks its inactive entities and uses, as a configured build does
/// for each file of a tree; the facts must come from an extractor set configured
/// ([`Extractor::set_configured`]). Returns the number of undecided conditions. For
/// fuzzing and tests: a build evaluates whole translation units.
pub fn mark_configured(
    facts: &mut FileFacts,
    source: &str,
    config: &crate::config::Configuration,
) -> u32 {
    let evaluation = conditions::evaluate(source, config);
    mark_inactive(facts, &evaluation);
    evaluation.undecided
}

/// Marks what `evaluation` found inactive: the entities that start in an inactive range
/// get [`NodeFlags::INACTIVE`], and the uses written there [`ref_bits::INACTIVE`]. A
/// reference used on both sides is split in two, the inactive one taking the inactive
/// sites, so that an edge is inactive only when every use it stands for is.
pub(crate) fn mark_inactive(f: &mut FileFacts, evaluation: &conditions::Evaluation) {
    if evaluation.assert_dropped {
        for i in 0..f.refs.len() {
            let r = f.refs[i];
            if r.kind == RefKind::Call && r.argument != 0 && f.str(r.recv) == "assert" {
                f.refs[i].flags |= ref_bits::INACTIVE;
            }
        }
    }
    if evaluation.inactive.is_empty() {
        return;
    }
    for e in &mut f.entities {
        if evaluation.is_inactive(e.start_line) {
            e.flags |= NodeFlags::INACTIVE;
        }
    }
    let mut sites = std::mem::take(&mut f.sites);
    let mut moved = Vec::new();
    let mut lines = Vec::new();
    let count = f.refs.len();
    let mut at = 0;
    for i in 0..count {
        let end = at + sites[at..].partition_point(|s| s.reference as usize == i);
        lines.clear();
        lines.push(f.refs[i].line);
        lines.extend(sites[at..end].iter().map(|s| s.line));
        let inactive = lines.iter().filter(|&&l| evaluation.is_inactive(l)).count();
        if inactive == lines.len() {
            f.refs[i].flags |= ref_bits::INACTIVE;
        } else if inactive > 0 {
            let new = f.refs.len() as u32;
            let mut active: Vec<u32> = lines
                .iter()
                .copied()
                .filter(|&l| !evaluation.is_inactive(l))
                .collect();
            let mut gone: Vec<u32> = lines
                .iter()
                .copied()
                .filter(|&l| evaluation.is_inactive(l))
                .collect();
            active.sort_unstable();
            gone.sort_unstable();
            let mut copy = f.refs[i];
            copy.flags |= ref_bits::INACTIVE;
            copy.line = gone[0];
            f.refs[i].line = active[0];
            f.refs.push(copy);
            for site in &mut sites[at..end] {
                site.line = u32::MAX;
            }
            moved.extend(active[1..].iter().map(|&line| RefSite {
                reference: i as u32,
                line,
            }));
            moved.extend(gone[1..].iter().map(|&line| RefSite {
                reference: new,
                line,
            }));
        }
        at = end;
    }
    sites.retain(|s| s.line != u32::MAX);
    sites.extend(moved);
    sites.sort_unstable();
    f.sites = sites;
}

/// Appends the include-guard blocks of `source` to `f`, their names to its arena.
fn record_guards(f: &mut FileFacts, source: &str) {
    for g in guards::scan(source) {
        let name = f.push_str(g.name);
        f.guards.push(GuardBlock {
            name,
            start_line: g.start_line,
            end_line: g.end_line,
        });
    }
}

/// Reserved words of C, which no declaration or use can name. Sorted by length, then text
/// (see [`is_keyword`]).
const C_KEYWORDS: &[&str] = &[
    "do",
    "if",
    "for",
    "int",
    "auto",
    "case",
    "char",
    "else",
    "enum",
    "goto",
    "long",
    "void",
    "_Bool",
    "break",
    "const",
    "float",
    "short",
    "union",
    "while",
    "double",
    "extern",
    "inline",
    "return",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "_Atomic",
    "default",
    "typedef",
    "_Alignas",
    "_Alignof",
    "_Complex",
    "_Generic",
    "continue",
    "register",
    "restrict",
    "unsigned",
    "volatile",
    "_Noreturn",
    "_Imaginary",
    "_Thread_local",
    "_Static_assert",
];

/// Reserved words C++ adds. (C code may use them as names: `int new;`, `bool` typedefs.)
/// Sorted by length, then text.
const CPP_KEYWORDS: &[&str] = &[
    "or",
    "and",
    "asm",
    "new",
    "not",
    "try",
    "xor",
    "bool",
    "this",
    "true",
    "bitor",
    "catch",
    "class",
    "compl",
    "false",
    "or_eq",
    "throw",
    "using",
    "and_eq",
    "bitand",
    "delete",
    "export",
    "friend",
    "not_eq",
    "public",
    "typeid",
    "xor_eq",
    "alignas",
    "alignof",
    "char8_t",
    "concept",
    "mutable",
    "nullptr",
    "private",
    "virtual",
    "wchar_t",
    "char16_t",
    "char32_t",
    "co_await",
    "co_yield",
    "decltype",
    "explicit",
    "noexcept",
    "operator",
    "requires",
    "template",
    "typename",
    "co_return",
    "consteval",
    "constexpr",
    "constinit",
    "namespace",
    "protected",
    "const_cast",
    "static_cast",
    "dynamic_cast",
    "thread_local",
    "static_assert",
    "reinterpret_cast",
];

/// Both keyword lists are sorted by length, then text (a test holds them to it), and
/// searched by bisection: most steps compare lengths only.
fn is_keyword(name: &str, language: Language) -> bool {
    let find = |list: &[&str]| {
        list.binary_search_by(|k| (k.len(), *k).cmp(&(name.len(), name)))
            .is_ok()
    };
    find(C_KEYWORDS) || (language == Language::Cpp && find(CPP_KEYWORDS))
}

/// Drops the entities (macros aside: `#define inline __inline__` is real) and references
/// that tree-sitter's error recovery named after a keyword. `static __always_inline struct
/// task_struct *get_current(void)` behind an unknown macro comes out as a variable named
/// `struct`; 513 such entities in Linux drew edges from 7,700 files, and a patch touching
/// any of them re-resolved all of those.
fn drop_keyword_names(f: &mut FileFacts) {
    let lang = f.language;
    // Each distinct string is checked once: a file has several references per name.
    let keyword: Vec<bool> = (0..f.ends.len() as u32)
        .map(|i| is_keyword(f.str(Sym(i)), lang))
        .collect();
    let is_kw = |s: Sym| keyword.get(s.0 as usize) == Some(&true);
    let bad: Vec<bool> = f
        .entities
        .iter()
        .map(|e| e.kind != NodeKind::Macro && is_kw(e.name))
        .collect();
    let refs_bad = f.refs.iter().any(|r| is_kw(r.name));
    if !bad.contains(&true) && !refs_bad {
        return;
    }
    // A dropped entity's children and references move to its parent.
    let mut map = vec![NO_ENTITY; f.entities.len()];
    let mut next = 0;
    for (i, &b) in bad.iter().enumerate() {
        if !b {
            map[i] = next;
            next += 1;
        }
    }
    let parents: Vec<u32> = f.entities.iter().map(|e| e.parent).collect();
    let lift = |mut i: u32| -> u32 {
        while i != NO_ENTITY && bad[i as usize] {
            i = parents[i as usize];
        }
        if i == NO_ENTITY {
            NO_ENTITY
        } else {
            map[i as usize]
        }
    };
    let mut kept = Vec::with_capacity(next as usize);
    for (i, e) in std::mem::take(&mut f.entities).into_iter().enumerate() {
        if !bad[i] {
            kept.push(Entity {
                parent: lift(e.parent),
                ..e
            });
        }
    }
    f.entities = kept;
    f.bases.retain(|b| !bad[b.entity as usize]);
    for b in &mut f.bases {
        b.entity = map[b.entity as usize];
    }
    let refs = std::mem::take(&mut f.refs);
    // The sites of a dropped reference go with it; the others follow their reference.
    let mut ref_map = vec![u32::MAX; refs.len()];
    f.refs = Vec::with_capacity(refs.len());
    for (i, r) in refs.into_iter().enumerate() {
        if !is_kw(r.name) {
            ref_map[i] = f.refs.len() as u32;
            f.refs.push(Ref {
                enclosing: lift(r.enclosing),
                ..r
            });
        }
    }
    f.sites.retain_mut(|site| {
        site.reference = ref_map[site.reference as usize];
        site.reference != u32::MAX
    });
    // Macros are never dropped: their calls only follow the new numbering.
    f.macro_calls.retain_mut(|call| {
        call.macro_entity = map[call.macro_entity as usize];
        if is_kw(call.within) {
            call.within = Sym::EMPTY;
        }
        call.macro_entity != NO_ENTITY && !is_kw(call.name)
    });
    for arguments in &mut f.macro_arguments {
        arguments.macro_entity = map[arguments.macro_entity as usize];
    }
}

pub(crate) use walk::{IdBuild, MAX_SIGNATURE};

/// The 64-bit string hash used by the per-file interner and the resolver's name tables.
pub(crate) fn fx_hash(b: &[u8]) -> u64 {
    walk::fx_bytes(0, b)
}

/// splitmix64's finaliser: spreads a hash's bits (name filters, patch edge keys).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// [`fx_hash`] of `b` chained after a previous hash `h` (keys made of two strings).
pub(crate) fn fx_hash_from(h: u64, b: &[u8]) -> u64 {
    walk::fx_bytes(h, b)
}
