//! The single cursor walk that turns a parse tree into [`FileFacts`].
//!
//! The walk is recursive over one shared `TreeCursor` (no per-node allocation); small
//! look-ups inside declarators use `Node` field accessors, which do not allocate either.
//! The `Mode` says what a `declaration` or an identifier means where it is found.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use batho_schema::{Language, NodeFlags, NodeKind};
use batho_storage::content_hash;
use tree_sitter::{Node, Tree, TreeCursor};

use super::kinds::{KindTable, SyntaxKind};

mod decls;
mod directives;
mod exprs;
mod recover;
use super::{Entity, FileFacts, NO_ENTITY, Ref, RefKind, RefSite, Sym, doc_comment, ref_bits};

/// Deeper subtrees are skipped (and counted as parse errors) so that pathological nesting
/// cannot overflow the stack of a worker thread.
pub(crate) const MAX_DEPTH: u32 = 1500;
/// Signatures longer than this are cut (K&R definitions, macro soup).
pub(crate) const MAX_SIGNATURE: usize = 400;
/// References recorded per macro body at most.
const MAX_MACRO_REFS: usize = 32;

/// What the nodes under the cursor mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// File or namespace scope.
    Top,
    /// Members of a class/struct/union body.
    Class,
    /// Statements and expressions (function bodies, initializers).
    Body,
    /// Types and declarators: identifiers declare, type names reference.
    Decl,
    /// A preprocessor condition: identifiers are macro uses.
    Cond,
}

/// FxHash as a `Hasher`: cheap, and enough for keys that are hashes already or a few
/// integers (never the only check of equality: tables compare their keys).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = fx_bytes(self.0, bytes);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = fx_add(self.0, v);
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = fx_add(self.0, u64::from(v));
    }
}

pub(crate) type IdBuild = BuildHasherDefault<IdHasher>;

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

#[inline]
fn fx_add(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(SEED)
}

pub(crate) fn fx_bytes(mut h: u64, b: &[u8]) -> u64 {
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = fx_add(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = fx_add(h, u64::from_le_bytes(w));
    }
    fx_add(h, b.len() as u64)
}

struct Walker<'a, 't> {
    t: &'a KindTable,
    cpp: bool,
    src: &'t str,
    f: &'a mut FileFacts,
    interned: HashMap<u64, u32, IdBuild>,
    /// References already pushed (a reference repeated in one entity is kept once).
    /// Each reference key, with the reference's index in `f.refs`.
    seen: HashMap<(u64, u64, u32), u32, IdBuild>,
    /// Qualified prefix of the current namespace/class (`ns::Foo`).
    scope: String,
    /// Entity that owns references made here.
    encl: u32,
    /// Lexical parent for new entities.
    parent: u32,
    /// Inside an anonymous namespace (everything has internal linkage).
    anon_ns: u32,
    /// Locals and parameters in scope: (name, base type name).
    locals: Vec<(Sym, Sym)>,
    depth: u32,
    in_error: u32,
    /// Function prototypes whose `;` is missing, seen since the last top-level definition:
    /// candidates for an `#ifdef`-split signature followed by one shared body.
    split: Vec<u32>,
    /// Depth of `#if` blocks around the cursor, include guards not counted.
    cond_depth: u32,
    buf: String,
    /// Record, for calls written in the arguments of a call of a plain name, that name and
    /// the argument ([`crate::extract::Ref::argument`]).
    arguments: bool,
    /// The outermost call of a plain name whose arguments the cursor is in: its name and
    /// its argument list.
    outer_call: Option<(Sym, Node<'t>)>,
}

/// Emits the facts of a C file made only of simple directives and comments without
/// parsing it (see [`directives`]); returns `false`, emitting nothing, for any other file.
pub(super) fn read_directives(t: &KindTable, src: &str, f: &mut FileFacts) -> bool {
    Walker::new(t, Language::C, src, f).read_directives()
}

pub(super) use directives::is_directive_only;

pub(super) fn walk(
    t: &KindTable,
    language: Language,
    src: &str,
    tree: &Tree,
    f: &mut FileFacts,
    arguments: bool,
) {
    let mut w = Walker::new(t, language, src, f);
    w.arguments = arguments;
    let mut c = tree.walk();
    w.visit(&mut c, Mode::Top);
    w.finish();
}

fn is_type_spec(k: SyntaxKind) -> bool {
    matches!(
        k,
        SyntaxKind::StructSpecifier
            | SyntaxKind::ClassSpecifier
            | SyntaxKind::UnionSpecifier
            | SyntaxKind::EnumSpecifier
    )
}

/// Where an entity is in its file: bytes, and 1-based lines (inclusive).
#[derive(Clone, Copy)]
struct Span {
    start_byte: usize,
    end_byte: usize,
    start_line: u32,
    end_line: u32,
}

impl From<Node<'_>> for Span {
    fn from(n: Node<'_>) -> Span {
        Span {
            start_byte: n.start_byte(),
            end_byte: n.end_byte(),
            start_line: n.start_position().row as u32 + 1,
            end_line: n.end_position().row as u32 + 1,
        }
    }
}

/// What a macro definition looks like before its value.
#[derive(Clone, Copy)]
struct MacroShape<'p, 't> {
    function_like: bool,
    /// Parameter names (function-like macros).
    params: &'p [&'t str],
    variadic: bool,
    /// The `#define NAME(params)` text (function-like macros), else empty.
    signature: Sym,
}

/// What a declarator declares.
#[derive(Default)]
struct DeclInfo<'t> {
    name: Option<Node<'t>>,
    /// A function (not a pointer to one) is declared.
    function: bool,
    /// The parameter list of the declared function.
    params: Option<Node<'t>>,
}

impl<'a, 't> Walker<'a, 't> {
    fn new(t: &'a KindTable, language: Language, src: &'t str, f: &'a mut FileFacts) -> Self {
        Walker {
            t,
            cpp: language == Language::Cpp,
            src,
            f,
            // Sized for a typical file (about one distinct string and one reference per
            // 40 bytes of source) so that the tables rarely grow while the walk runs.
            interned: HashMap::with_capacity_and_hasher(src.len() / 40, IdBuild::default()),
            seen: HashMap::with_capacity_and_hasher(src.len() / 40, IdBuild::default()),
            scope: String::new(),
            encl: NO_ENTITY,
            parent: NO_ENTITY,
            anon_ns: 0,
            locals: Vec::new(),
            depth: 0,
            in_error: 0,
            split: Vec::new(),
            cond_depth: 0,
            buf: String::new(),
            arguments: false,
            outer_call: None,
        }
    }

    fn finish(self) {
        self.f.text.shrink_to_fit();
        self.f.ends.shrink_to_fit();
        self.f.entities.shrink_to_fit();
        self.f.refs.shrink_to_fit();
        self.f.macro_calls.shrink_to_fit();
        self.f.sites.sort_unstable();
        self.f.sites.shrink_to_fit();
    }

    // ----- strings -----------------------------------------------------------------------

    fn intern(&mut self, s: &str) -> Sym {
        if s.is_empty() {
            return Sym::EMPTY;
        }
        // Open addressing over the hash: two strings that collide (FxHash does on real
        // names) get neighbouring keys, so each is interned once.
        let mut h = fx_bytes(0, s.as_bytes());
        while let Some(&i) = self.interned.get(&h) {
            if self.f.str(Sym(i)) == s {
                return Sym(i);
            }
            h = h.wrapping_add(1);
        }
        self.f.text.push_str(s);
        let id = self.f.ends.len() as u32;
        self.f.ends.push(self.f.text.len() as u32);
        self.interned.insert(h, id);
        Sym(id)
    }

    fn text(&self, n: Node<'t>) -> &'t str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    fn intern_node(&mut self, n: Node<'t>) -> Sym {
        let s = self.text(n);
        self.intern(s)
    }

    // ----- references --------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn push_ref(
        &mut self,
        kind: RefKind,
        flags: u8,
        arity: u8,
        name: Sym,
        qual: Sym,
        recv: Sym,
        n: Node<'t>,
    ) {
        let line = n.start_position().row as u32 + 1;
        let (recv, argument) = match self.outer_call {
            Some((within, args))
                if kind == RefKind::Call && recv.is_empty() && flags & ref_bits::MEMBER == 0 =>
            {
                // The argument is the number of commas of the list before the use.
                let mut cursor = args.walk();
                let before = args
                    .children(&mut cursor)
                    .filter(|c| c.kind() == "," && c.end_byte() <= n.start_byte())
                    .count();
                (within, u8::try_from(before + 1).unwrap_or(255))
            }
            _ => (recv, 0),
        };
        self.push_ref_full(kind, flags, arity, name, qual, recv, line, argument);
    }

    /// [`Self::push_ref`] at a 1-based line.
    #[allow(clippy::too_many_arguments)]
    fn push_ref_at(
        &mut self,
        kind: RefKind,
        flags: u8,
        arity: u8,
        name: Sym,
        qual: Sym,
        recv: Sym,
        line: u32,
    ) {
        self.push_ref_full(kind, flags, arity, name, qual, recv, line, 0);
    }

    /// [`Self::push_ref_at`] with its [`crate::extract::Ref::argument`].
    #[allow(clippy::too_many_arguments)]
    fn push_ref_full(
        &mut self,
        kind: RefKind,
        mut flags: u8,
        arity: u8,
        name: Sym,
        qual: Sym,
        recv: Sym,
        line: u32,
        argument: u8,
    ) {
        if name.is_empty() {
            return;
        }
        if self.in_error > 0 {
            flags |= ref_bits::IN_ERROR;
        }
        // The whole reference as the key (a hash of it could collide and drop a reference).
        let key = (
            kind as u64 | (flags as u64) << 8 | (argument as u64) << 16 | (self.encl as u64) << 32,
            name.0 as u64 | (qual.0 as u64) << 32,
            recv.0,
        );
        let next = self.f.refs.len() as u32;
        let reference = *self.seen.entry(key).or_insert(next);
        if reference != next {
            self.f.sites.push(RefSite { reference, line });
            return;
        }
        self.f.refs.push(Ref {
            kind,
            flags,
            arity,
            enclosing: self.encl,
            name,
            qual,
            recv,
            argument,
            line,
        });
    }

    fn local_type(&self, name: Sym) -> Option<Sym> {
        self.locals
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }

    // ----- entities ----------------------------------------------------------------------

    fn qualify(&mut self, written_qual: &str, name: &str) -> Sym {
        self.buf.clear();
        self.buf.push_str(&self.scope);
        if !written_qual.is_empty() {
            if !self.buf.is_empty() {
                self.buf.push_str("::");
            }
            self.buf.push_str(written_qual);
        }
        if !self.buf.is_empty() {
            self.buf.push_str("::");
        }
        self.buf.push_str(name);
        let s = std::mem::take(&mut self.buf);
        let sym = self.intern(&s);
        self.buf = s;
        sym
    }

    /// Whitespace-collapsed text of `src[a..b]`.
    fn signature(&mut self, a: usize, b: usize) -> Sym {
        let Some(raw) = self.src.get(a..b.max(a)) else {
            return Sym::EMPTY;
        };
        let mut out = String::with_capacity(raw.len().min(MAX_SIGNATURE));
        let mut space = false;
        for ch in raw.chars() {
            if ch.is_whitespace() {
                space = !out.is_empty();
                continue;
            }
            if space {
                out.push(' ');
                space = false;
            }
            out.push(ch);
            if out.len() >= MAX_SIGNATURE {
                break;
            }
        }
        self.intern(&out)
    }

    /// Adds an entity over `span` (a node, or a [`Span`] the line reader found).
    #[allow(clippy::too_many_arguments)]
    fn add_entity(
        &mut self,
        kind: NodeKind,
        flags: NodeFlags,
        bits: u8,
        params: u8,
        name: Sym,
        qual: Sym,
        type_name: Sym,
        signature: Sym,
        span: impl Into<Span>,
    ) -> u32 {
        let span = span.into();
        let (a, b) = (span.start_byte, span.end_byte);
        let hash = content_hash(self.src.as_bytes().get(a..b).unwrap_or(&[]));
        let doc = if doc_comment::takes_doc_comment(kind) {
            let text = doc_comment::doc_comment_above(self.src, a);
            self.intern(&text)
        } else {
            Sym::EMPTY
        };
        let idx = self.f.entities.len() as u32;
        self.f.entities.push(Entity {
            kind,
            flags,
            bits,
            params,
            name,
            qual,
            parent: self.parent,
            type_name,
            signature,
            doc,
            start_line: span.start_line,
            end_line: span.end_line,
            start_byte: a as u32,
            end_byte: b as u32,
            hash,
        });
        idx
    }

    // ----- small syntax helpers ----------------------------------------------------------

    /// Peels pointer/array/init/parenthesized declarators down to the declared name.
    fn declarator_info(&self, d: Node<'t>) -> DeclInfo<'t> {
        let mut info = DeclInfo::default();
        let mut cur = d;
        let mut saw_func = false;
        let mut paren_after_func = false;
        for _ in 0..64 {
            match self.t.of(&cur) {
                SyntaxKind::InitDeclarator
                | SyntaxKind::PointerDeclarator
                | SyntaxKind::AttributedDeclarator
                | SyntaxKind::ArrayDeclarator => match cur.child_by_field_id(self.t.f_declarator) {
                    Some(n) => cur = n,
                    None => break,
                },
                SyntaxKind::ReferenceDeclarator | SyntaxKind::ParenthesizedDeclarator => {
                    if saw_func && self.t.of(&cur) == SyntaxKind::ParenthesizedDeclarator {
                        paren_after_func = true;
                    }
                    let count = cur.named_child_count();
                    match (0..count).rev().find_map(|i| cur.named_child(i as u32)) {
                        Some(n) => cur = n,
                        None => break,
                    }
                }
                SyntaxKind::FunctionDeclarator => {
                    saw_func = true;
                    paren_after_func = false;
                    info.params = cur.child_by_field_id(self.t.f_parameters);
                    // `LUA_API lua_CFunction lua_atpanic (…)`: the return type was taken for
                    // the name and the real name sits in an ERROR before the parameters.
                    if let Some(name) = self.error_name(cur) {
                        info.name = Some(name);
                        break;
                    }
                    match cur.child_by_field_id(self.t.f_declarator) {
                        Some(n) => cur = n,
                        None => break,
                    }
                }
                SyntaxKind::Identifier
                | SyntaxKind::FieldIdentifier
                | SyntaxKind::TypeIdentifier
                | SyntaxKind::QualifiedIdentifier
                | SyntaxKind::DestructorName
                | SyntaxKind::OperatorName
                | SyntaxKind::TemplateFunction => {
                    info.name = Some(cur);
                    break;
                }
                _ => break,
            }
        }
        info.function = saw_func && !paren_after_func;
        if !info.function {
            info.params = None;
        }
        info
    }

    /// The last identifier of an ERROR child of a function declarator, if any.
    fn error_name(&self, fd: Node<'t>) -> Option<Node<'t>> {
        let mut found = None;
        for i in 0..fd.child_count().min(8) {
            let ch = fd.child(i)?;
            if ch.is_error() {
                for j in 0..ch.child_count().min(8) {
                    if let Some(e) = ch.child(j)
                        && matches!(
                            self.t.of(&e),
                            SyntaxKind::Identifier | SyntaxKind::FieldIdentifier
                        )
                    {
                        found = Some(e);
                    }
                }
            }
        }
        found
    }

    /// Splits a possibly qualified name node into (qualifier text, last name text).
    fn split_name(&self, n: Node<'t>, qual: &mut String) -> &'t str {
        let mut cur = n;
        for _ in 0..32 {
            match self.t.of(&cur) {
                SyntaxKind::QualifiedIdentifier => {
                    if let Some(s) = cur.child_by_field_id(self.t.f_scope) {
                        let part = match self.t.of(&s) {
                            SyntaxKind::TemplateType => {
                                s.child_by_field_id(self.t.f_name).map(|x| self.text(x))
                            }
                            _ => Some(self.text(s)),
                        };
                        if let Some(p) = part {
                            if !qual.is_empty() {
                                qual.push_str("::");
                            }
                            qual.push_str(p);
                        }
                    }
                    match cur.child_by_field_id(self.t.f_name) {
                        Some(x) => cur = x,
                        None => return "",
                    }
                }
                SyntaxKind::TemplateFunction | SyntaxKind::TemplateType => {
                    match cur.child_by_field_id(self.t.f_name) {
                        Some(x) => cur = x,
                        None => return "",
                    }
                }
                _ => return self.text(cur),
            }
        }
        ""
    }

    fn count_params(&self, params: Option<Node<'t>>) -> (u8, bool) {
        let Some(p) = params else { return (0, false) };
        let mut count = 0usize;
        let mut variadic = false;
        for i in 0..p.named_child_count() {
            let Some(ch) = p.named_child(i as u32) else {
                continue;
            };
            match self.t.of(&ch) {
                SyntaxKind::ParameterDeclaration => {
                    let has_decl = ch.child_by_field_id(self.t.f_declarator).is_some();
                    let is_void = !has_decl
                        && ch
                            .child_by_field_id(self.t.f_type)
                            .is_some_and(|t| self.text(t) == "void");
                    if !is_void {
                        count += 1;
                    }
                }
                SyntaxKind::Skip => {}
                _ => {
                    if ch.kind() == "variadic_parameter" || self.text(ch) == "..." {
                        variadic = true;
                    } else {
                        count += 1;
                    }
                }
            }
        }
        (count.min(255) as u8, variadic)
    }

    /// Base name of a type node, for receiver inference (`Foo` of `const ns::Foo<T>*`).
    fn type_base(&mut self, ty: Option<Node<'t>>) -> Sym {
        let Some(ty) = ty else { return Sym::EMPTY };
        match self.t.of(&ty) {
            SyntaxKind::TypeIdentifier => self.intern_node(ty),
            SyntaxKind::StructSpecifier
            | SyntaxKind::ClassSpecifier
            | SyntaxKind::UnionSpecifier
            | SyntaxKind::EnumSpecifier => match ty.child_by_field_id(self.t.f_name) {
                Some(n) => self.type_base(Some(n)),
                None => Sym::EMPTY,
            },
            SyntaxKind::QualifiedIdentifier | SyntaxKind::TemplateType => {
                let mut q = String::new();
                let last = self.split_name(ty, &mut q);
                if matches!(last, "unique_ptr" | "shared_ptr" | "weak_ptr" | "optional")
                    && let Some(arg) = self.first_template_arg(ty)
                {
                    return self.type_base(Some(arg));
                }
                if q.is_empty() || q == "std" {
                    self.intern(last)
                } else {
                    q.push_str("::");
                    q.push_str(last);
                    self.intern(&q)
                }
            }
            _ => Sym::EMPTY,
        }
    }

    fn first_template_arg(&self, ty: Node<'t>) -> Option<Node<'t>> {
        let mut cur = ty;
        for _ in 0..8 {
            match self.t.of(&cur) {
                SyntaxKind::QualifiedIdentifier => cur = cur.child_by_field_id(self.t.f_name)?,
                SyntaxKind::TemplateType => {
                    let args = cur.child_by_field_id(self.t.f_arguments)?;
                    let td = args.named_child(0)?;
                    // type_descriptor → its `type` field.
                    return td.child_by_field_id(self.t.f_type).or(Some(td));
                }
                _ => return None,
            }
        }
        None
    }

    fn has_storage(&self, n: Node<'t>, word: &str) -> bool {
        (0..n.child_count().min(8))
            .filter_map(|i| n.child(i))
            .any(|ch| self.t.of(&ch) == SyntaxKind::StorageClassSpecifier && self.text(ch) == word)
    }

    fn has_virtual(&self, n: Node<'t>) -> bool {
        let count = n.child_count().min(8);
        (0..count)
            .filter_map(|i| n.child(i))
            .any(|ch| self.t.of(&ch) == SyntaxKind::Virtual)
    }

    // ----- the walk ----------------------------------------------------------------------

    fn children(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        if c.goto_first_child() {
            loop {
                self.visit(c, mode);
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
    }

    fn visit(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        if self.depth >= MAX_DEPTH {
            self.f.parse_errors += 1;
            return;
        }
        self.depth += 1;
        if self.in_error > 0 && mode == Mode::Top && self.is_construct(c.node()) {
            // Tree-sitter recognised this construct although it sits in an ERROR node
            // (often the whole file's, for one bad line far away): its uses are read off
            // the tree like any other, not inferred. An ERROR inside it flags its own.
            let saved = std::mem::replace(&mut self.in_error, 0);
            self.visit_inner(c, mode);
            self.in_error = saved;
        } else {
            self.visit_inner(c, mode);
        }
        self.depth -= 1;
    }

    /// Whether `n` is a top-level construct: a definition, declaration or directive.
    fn is_construct(&self, n: Node<'t>) -> bool {
        matches!(
            self.t.of(&n),
            SyntaxKind::FunctionDefinition
                | SyntaxKind::Declaration
                | SyntaxKind::TypeDefinition
                | SyntaxKind::AliasDeclaration
                | SyntaxKind::StructSpecifier
                | SyntaxKind::ClassSpecifier
                | SyntaxKind::UnionSpecifier
                | SyntaxKind::EnumSpecifier
                | SyntaxKind::NamespaceDefinition
                | SyntaxKind::LinkageSpecification
                | SyntaxKind::TemplateDeclaration
                | SyntaxKind::PreprocIf
                | SyntaxKind::PreprocDef
                | SyntaxKind::PreprocFunctionDef
                | SyntaxKind::PreprocInclude
        )
    }

    fn visit_inner(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        let n = c.node();
        let k = self.t.of(&n);
        if n.is_missing() {
            self.f.parse_errors += 1;
        }
        match k {
            SyntaxKind::Skip => {}
            SyntaxKind::Error => {
                self.f.parse_errors += 1;
                self.in_error += 1;
                self.error_children(c, mode);
                self.in_error -= 1;
            }
            SyntaxKind::PreprocInclude => self.include(n),
            SyntaxKind::PreprocDef | SyntaxKind::PreprocFunctionDef => self.macro_def(n, k),
            SyntaxKind::PreprocIf => self.preproc_if(c, mode),
            SyntaxKind::PreprocDefined => {
                if let Some(id) = n.named_child(0) {
                    let s = self.intern_node(id);
                    self.push_ref(RefKind::Expand, 0, 0, s, Sym::EMPTY, Sym::EMPTY, id);
                }
            }
            SyntaxKind::FunctionDefinition => self.function_def(c, mode),
            SyntaxKind::Declaration | SyntaxKind::FieldDeclaration => match mode {
                // Column 0 inside a body: a file-scope declaration swallowed by unbalanced
                // `#if` braces (see `function_def`).
                Mode::Body if n.start_position().column == 0 && !self.cpp => {
                    let saved = self.parent;
                    self.parent = NO_ENTITY;
                    self.global_decl(c);
                    self.parent = saved;
                }
                Mode::Body => self.local_decl(c),
                Mode::Class => self.member_decl(c),
                Mode::Top => self.global_decl(c),
                Mode::Decl | Mode::Cond => self.children(c, mode),
            },
            SyntaxKind::TypeDefinition => self.typedef(c, mode),
            SyntaxKind::AliasDeclaration => self.alias(c, mode),
            SyntaxKind::StructSpecifier
            | SyntaxKind::ClassSpecifier
            | SyntaxKind::UnionSpecifier
            | SyntaxKind::EnumSpecifier => self.type_spec(c, mode, None),
            SyntaxKind::NamespaceDefinition => self.namespace(c),
            SyntaxKind::CompoundStatement => match mode {
                Mode::Top => self.orphan_body(c),
                Mode::Body => {
                    let mark = self.locals.len();
                    self.children(c, Mode::Body);
                    self.locals.truncate(mark);
                }
                _ => self.children(c, Mode::Body),
            },
            SyntaxKind::ForStatement | SyntaxKind::ForRangeLoop | SyntaxKind::LambdaExpression => {
                let mark = self.locals.len();
                self.children(c, Mode::Body);
                self.locals.truncate(mark);
            }
            SyntaxKind::ParameterDeclaration if mode == Mode::Body || mode == Mode::Decl => {
                self.param(c)
            }
            // In a class body a "call" is a misparsed member declaration (`virtual ~Shape();`).
            SyntaxKind::CallExpression if mode == Mode::Class => self.children(c, Mode::Decl),
            SyntaxKind::CallExpression if mode != Mode::Cond => self.call(c, mode),
            SyntaxKind::FieldExpression if mode == Mode::Body => self.children(c, mode),
            SyntaxKind::AssignmentExpression if mode == Mode::Body => self.assignment(c),
            SyntaxKind::UpdateExpression if mode == Mode::Body => self.update(c),
            SyntaxKind::Identifier => match mode {
                Mode::Body => self.read(n),
                Mode::Cond => {
                    let s = self.intern_node(n);
                    self.push_ref(RefKind::Expand, 0, 0, s, Sym::EMPTY, Sym::EMPTY, n);
                }
                _ => {}
            },
            SyntaxKind::QualifiedIdentifier if mode == Mode::Body || mode == Mode::Decl => {
                let mut q = String::new();
                let last = self.split_name(n, &mut q);
                let is_type = n.child_by_field_id(self.t.f_name).is_some_and(|x| {
                    matches!(
                        self.t.of(&x),
                        SyntaxKind::TypeIdentifier | SyntaxKind::TemplateType
                    )
                });
                let (name, qual) = (self.intern(last), self.intern(&q));
                if is_type || mode == Mode::Decl {
                    self.push_ref(RefKind::Type, 0, 0, name, qual, Sym::EMPTY, n);
                } else if self.local_type(name).is_none() || !qual.is_empty() {
                    self.push_ref(RefKind::Read, 0, 0, name, qual, Sym::EMPTY, n);
                }
            }
            SyntaxKind::TypeIdentifier if mode != Mode::Cond => {
                let s = self.intern_node(n);
                self.push_ref(RefKind::Type, 0, 0, s, Sym::EMPTY, Sym::EMPTY, n);
            }
            SyntaxKind::FieldInitializerList => self.children(c, Mode::Body),
            SyntaxKind::InitDeclarator if mode == Mode::Decl => {
                if c.goto_first_child() {
                    loop {
                        let m = if c.field_id().map(|x| x.get()) == Some(self.t.f_value) {
                            Mode::Body
                        } else {
                            Mode::Decl
                        };
                        self.visit(c, m);
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                    c.goto_parent();
                }
            }
            SyntaxKind::FriendDeclaration => self.children(c, Mode::Decl),
            SyntaxKind::AccessSpecifier | SyntaxKind::PreprocArg | SyntaxKind::PreprocCall => {}
            _ => self.children(c, mode),
        }
    }

    // ----- expressions -------------------------------------------------------------------
}

fn is_c_keyword(w: &str) -> bool {
    matches!(
        w,
        "if" | "else"
            | "while"
            | "for"
            | "do"
            | "switch"
            | "case"
            | "default"
            | "return"
            | "break"
            | "continue"
            | "goto"
            | "sizeof"
            | "typeof"
            | "__typeof__"
            | "struct"
            | "union"
            | "enum"
            | "int"
            | "char"
            | "long"
            | "short"
            | "unsigned"
            | "signed"
            | "void"
            | "const"
            | "volatile"
            | "static"
            | "extern"
            | "inline"
            | "double"
            | "float"
            | "register"
            | "defined"
            | "_Bool"
            | "bool"
            | "true"
            | "false"
            | "NULL"
            | "auto"
            | "typedef"
            | "__VA_ARGS__"
            | "__attribute__"
            | "asm"
            | "__asm__"
            | "new"
            | "delete"
            | "this"
            | "static_cast"
            | "dynamic_cast"
            | "reinterpret_cast"
            | "const_cast"
            | "alignof"
            | "_Alignof"
            | "decltype"
            | "typeid"
            | "noexcept"
            | "static_assert"
            | "_Static_assert"
            | "__builtin_expect"
            | "__typeof"
            | "offsetof"
            | "__builtin_offsetof"
    )
}

trait NoneFlags {
    const NONE_FLAGS: NodeFlags;
}

impl NoneFlags for NodeFlags {
    const NONE_FLAGS: NodeFlags = NodeFlags(0);
}
