//! Recovery of definitions tree-sitter misparsed: export-macro classes parsed as
//! functions, `#ifdef`-split signatures followed by one orphan body, and functions
//! swallowed by file-scope ERROR nodes.

use batho_schema::{NodeFlags, NodeKind};
use batho_storage::content_hash;
use tree_sitter::{Node, TreeCursor};

use super::{Mode, SyntaxKind, Walker};
use crate::extract::{Base, Sym, entity_bits};

impl<'t> Walker<'_, 't> {
    /// `class API Foo : public Base { … };` parses as a function definition whose type is
    /// `class API`, whose (ERROR-wrapped) name is `Foo`, whose declarator is `Base` and
    /// whose body is the class body; `struct LUA_API lua_State { … }` likewise without the
    /// base. Rebuild the class.
    pub(super) fn misparsed_class(
        &mut self,
        c: &mut TreeCursor<'t>,
        n: Node<'t>,
        ty: Node<'t>,
        decl: Option<Node<'t>>,
    ) {
        let kind = match self.t.of(&ty) {
            SyntaxKind::ClassSpecifier => NodeKind::Class,
            SyntaxKind::UnionSpecifier => NodeKind::Union,
            SyntaxKind::EnumSpecifier => NodeKind::Enum,
            _ => NodeKind::Struct,
        };
        let mut err_name: Option<Node<'t>> = None;
        let mut has_colon = false;
        for i in 0..n.child_count().min(16) {
            let Some(ch) = n.child(i) else {
                continue;
            };
            if ch.is_error() {
                for j in 0..ch.child_count().min(16) {
                    let Some(e) = ch.child(j) else {
                        continue;
                    };
                    if err_name.is_none()
                        && matches!(
                            self.t.of(&e),
                            SyntaxKind::Identifier | SyntaxKind::TypeIdentifier
                        )
                    {
                        err_name = Some(e);
                    }
                    if e.kind() == ":" {
                        has_colon = true;
                    }
                }
            }
        }
        let (name_node, base) = match (err_name, decl) {
            (Some(e), d) => (Some(e), if has_colon { d } else { None }),
            (None, Some(d)) => (Some(d), None),
            (None, None) => (ty.child_by_field_id(self.t.f_name), None),
        };
        let Some(name_node) = name_node else {
            return self.children(c, Mode::Body);
        };
        self.split.clear();
        let last = self.text(name_node);
        let name = self.intern(last);
        let qual = self.qualify("", last);
        let body = n.child_by_field_id(self.t.f_body);
        let sig = self.signature(
            n.start_byte(),
            body.map_or(n.end_byte(), |b| b.start_byte()),
        );
        let ent = self.add_entity(
            kind,
            NodeFlags::EXPORTED,
            entity_bits::RECOVERED,
            0,
            name,
            qual,
            Sym::EMPTY,
            sig,
            n,
        );
        if let Some(b) = base {
            let s = self.intern_node(b);
            self.f.bases.push(Base {
                entity: ent,
                name: s,
                line: b.start_position().row as u32 + 1,
            });
        }
        self.class_body(c, ent, last, |w, c| {
            if c.goto_first_child() {
                loop {
                    if c.field_id().map(|x| x.get()) == Some(w.t.f_body) {
                        w.children(c, Mode::Class);
                    }
                    if !c.goto_next_sibling() {
                        break;
                    }
                }
                c.goto_parent();
            }
        });
    }

    /// A `{…}` at file scope: the shared body of an `#ifdef`-split signature when
    /// prototypes without `;` precede it, otherwise stray code (attributed to the file).
    pub(super) fn orphan_body(&mut self, c: &mut TreeCursor<'t>) {
        let n = c.node();
        let Some(&first) = self.split.first() else {
            return self.children(c, Mode::Body);
        };
        self.split.clear();
        let src = self.src.as_bytes();
        let Some(e) = self.f.entities.get_mut(first as usize) else {
            return;
        };
        e.flags = NodeFlags(e.flags.0 & !NodeFlags::DECLARATION_ONLY.0);
        e.bits |= entity_bits::RECOVERED;
        e.end_byte = n.end_byte() as u32;
        e.end_line = n.end_position().row as u32 + 1;
        e.hash = content_hash(
            src.get(e.start_byte as usize..e.end_byte as usize)
                .unwrap_or(&[]),
        );
        let saved = self.encl;
        self.encl = first;
        let mark = self.locals.len();
        self.children(c, Mode::Body);
        self.locals.truncate(mark);
        self.encl = saved;
    }

    /// A file-scope ERROR often swallows whole functions: `type`, `function_declarator`,
    /// `{`, then the body's statements as flat children. Each declarator followed by `{`
    /// starts a recovered function that owns what follows, up to the next one.
    pub(super) fn top_error(&mut self, c: &mut TreeCursor<'t>) {
        let err = c.node();
        if !c.goto_first_child() {
            return;
        }
        let (saved_encl, saved_parent, mark) = (self.encl, self.parent, self.locals.len());
        let mut current: Option<u32> = None;
        let mut decl_start: Option<usize> = None;
        let mut is_static = false;
        loop {
            let n = c.node();
            let k = self.t.of(&n);
            let opens_body = k == SyntaxKind::FunctionDeclarator
                && n.next_sibling().is_some_and(|x| x.kind() == "{");
            if opens_body
                && let info = self.declarator_info(n)
                && let Some(name_node) = info.name
                && info.function
            {
                if let Some(prev) = current.take() {
                    self.close_recovered(prev, decl_start.unwrap_or(n.start_byte()), None);
                }
                let start = decl_start.unwrap_or(n.start_byte());
                let mut q = String::new();
                let last = self.split_name(name_node, &mut q);
                let name = self.intern(last);
                let qual = self.qualify(&q, last);
                let kind = if self.cpp && !q.is_empty() {
                    NodeKind::Method
                } else {
                    NodeKind::Function
                };
                let flags = if is_static {
                    NodeFlags::STATIC
                } else {
                    NodeFlags::EXPORTED
                };
                let (params, variadic) = self.count_params(info.params);
                let sig = self.signature(start, n.end_byte());
                let bits =
                    entity_bits::RECOVERED | if variadic { entity_bits::VARIADIC } else { 0 };
                self.parent = saved_parent;
                let e =
                    self.add_entity(kind, flags, bits, params, name, qual, Sym::EMPTY, sig, err);
                if let Some(en) = self.f.entities.get_mut(e as usize) {
                    en.start_byte = start as u32;
                    en.start_line = self.src.as_bytes()[..start]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count() as u32
                        + 1;
                }
                self.locals.truncate(mark);
                self.encl = e;
                self.parent = e;
                current = Some(e);
                decl_start = None;
                is_static = false;
                self.visit(c, Mode::Decl);
            } else if let Some(cur) = current
                && k != SyntaxKind::FunctionDefinition
            {
                let _ = cur;
                self.visit(c, Mode::Body);
            } else {
                if let Some(prev) = current.take() {
                    self.close_recovered(prev, n.start_byte(), None);
                    self.encl = saved_encl;
                    self.parent = saved_parent;
                    self.locals.truncate(mark);
                }
                match k {
                    SyntaxKind::StorageClassSpecifier => {
                        decl_start.get_or_insert(n.start_byte());
                        is_static |= self.text(n) == "static";
                    }
                    SyntaxKind::PrimitiveType
                    | SyntaxKind::TypeIdentifier
                    | SyntaxKind::StructSpecifier
                    | SyntaxKind::UnionSpecifier => {
                        decl_start.get_or_insert(n.start_byte());
                    }
                    _ if n.kind() == ";" || n.kind() == "}" => {
                        decl_start = None;
                        is_static = false;
                    }
                    _ => {}
                }
                self.visit(c, Mode::Top);
            }
            if !c.goto_next_sibling() {
                break;
            }
        }
        c.goto_parent();
        if let Some(prev) = current {
            self.close_recovered(prev, 0, Some(err.end_byte()));
        }
        self.encl = saved_encl;
        self.parent = saved_parent;
        self.locals.truncate(mark);
    }

    /// Sets the end of a function recovered from an ERROR node and hashes its text.
    pub(super) fn close_recovered(&mut self, e: u32, next_start: usize, end: Option<usize>) {
        let end = end.unwrap_or(next_start);
        let src = self.src.as_bytes();
        let Some(en) = self.f.entities.get_mut(e as usize) else {
            return;
        };
        let end = end.max(en.start_byte as usize).min(src.len());
        en.end_byte = end as u32;
        en.end_line = en.start_line
            + src[en.start_byte as usize..end]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u32;
        en.hash = content_hash(&src[en.start_byte as usize..end]);
    }
}
