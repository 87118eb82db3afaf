//! Declarations: functions, classes, variables, typedefs, namespaces, and the recovery of
//! definitions tree-sitter misparsed (export-macro classes, `#ifdef`-split signatures,
//! functions swallowed by file-scope ERROR nodes).

use batho_schema::{NodeFlags, NodeKind};
use tree_sitter::{Node, TreeCursor};

use super::{MAX_SIGNATURE, Mode, NoneFlags, SyntaxKind, Walker, is_c_keyword, is_type_spec};
use crate::extract::{Base, NO_ENTITY, RefKind, Sym, entity_bits};

impl<'t> Walker<'_, 't> {
    pub(super) fn function_def(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        let n = c.node();
        let ty = n.child_by_field_id(self.t.f_type);
        let decl = n.child_by_field_id(self.t.f_declarator);
        if let Some(t) = ty
            && is_type_spec(self.t.of(&t))
            && t.child_by_field_id(self.t.f_body).is_none()
            && decl.is_none_or(|d| self.t.of(&d) == SyntaxKind::Identifier)
            && mode != Mode::Body
        {
            return self.misparsed_class(c, n, t, decl);
        }
        let info = decl.map(|d| self.declarator_info(d)).unwrap_or_default();
        let Some(name_node) = info.name.or(decl) else {
            return self.children(c, Mode::Body);
        };
        // C has no nested functions: inside a body this is macro soup such as
        // `vmcase(OP_ADD) { … }` or `vmdispatch (GET_OPCODE(i)) { … }` — a macro call
        // followed by a block. Keyword "names" are statements tree-sitter lost track of.
        // Exception: a definition at column 0 with a real function declarator is a
        // top-level function that unbalanced `#if` braces pushed into the previous body.
        let nested_top =
            mode == Mode::Body && n.start_position().column == 0 && info.function && ty.is_some();
        if (mode == Mode::Body && !nested_top) || is_c_keyword(self.text(name_node)) {
            if self.t.of(&name_node) == SyntaxKind::Identifier
                && !is_c_keyword(self.text(name_node))
            {
                let s = self.intern_node(name_node);
                self.push_ref(RefKind::Call, 0, 0, s, Sym::EMPTY, Sym::EMPTY, name_node);
            }
            return self.statement_soup(c);
        }
        self.split.clear();
        let mut q = String::new();
        let last = self.split_name(name_node, &mut q);
        let name = self.intern(last);
        let in_class = mode == Mode::Class;
        let mode = if nested_top { Mode::Top } else { mode };
        let (saved_encl0, saved_parent0) = (self.encl, self.parent);
        if nested_top {
            self.parent = NO_ENTITY;
        }
        let kind = if in_class || (self.cpp && !q.is_empty()) {
            NodeKind::Method
        } else {
            NodeKind::Function
        };
        let qual = if in_class || mode == Mode::Top {
            self.qualify(&q, last)
        } else {
            name
        };
        let mut flags = NodeFlags::NONE_FLAGS;
        let mut bits = 0;
        if self.has_storage(n, "static") {
            flags |= NodeFlags::STATIC;
        }
        if self.anon_ns == 0 && !flags.contains(NodeFlags::STATIC) {
            flags |= NodeFlags::EXPORTED;
        }
        if self.has_virtual(n) {
            flags |= NodeFlags::VIRTUAL;
        }
        if !q.is_empty() && !in_class {
            bits |= entity_bits::OUT_OF_LINE;
        }
        let (params, variadic) = self.count_params(info.params);
        if variadic {
            bits |= entity_bits::VARIADIC;
        }
        let body = n.child_by_field_id(self.t.f_body);
        let sig_end = body.map_or(n.end_byte(), |b| b.start_byte());
        let sig = self.signature(n.start_byte(), sig_end);
        let ent = self.add_entity(kind, flags, bits, params, name, qual, Sym::EMPTY, sig, n);
        let (saved_encl, saved_parent) = (self.encl, self.parent);
        self.encl = ent;
        self.parent = ent;
        let mark = self.locals.len();
        if c.goto_first_child() {
            loop {
                let fid = c.field_id().map(|x| x.get());
                if fid == Some(self.t.f_body) {
                    self.visit(c, Mode::Body);
                } else if fid == Some(self.t.f_type) || fid == Some(self.t.f_declarator) {
                    self.visit(c, Mode::Decl);
                } else {
                    let k = self.t.of(&c.node());
                    if matches!(
                        k,
                        SyntaxKind::FieldInitializerList
                            | SyntaxKind::Error
                            | SyntaxKind::CompoundStatement
                    ) {
                        self.visit(c, Mode::Body);
                    }
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
        self.locals.truncate(mark);
        self.encl = saved_encl;
        self.parent = saved_parent;
        if nested_top {
            self.encl = saved_encl0;
            self.parent = saved_parent0;
        }
    }

    /// Runs `f` with `ent` as the parent/enclosing entity and `name` appended to the scope.
    pub(super) fn class_body(
        &mut self,
        c: &mut TreeCursor<'t>,
        ent: u32,
        name: &str,
        f: impl FnOnce(&mut Self, &mut TreeCursor<'t>),
    ) {
        let (saved_encl, saved_parent, saved_len) = (self.encl, self.parent, self.scope.len());
        if !self.scope.is_empty() {
            self.scope.push_str("::");
        }
        self.scope.push_str(name);
        self.encl = ent;
        self.parent = ent;
        f(self, c);
        self.scope.truncate(saved_len);
        self.encl = saved_encl;
        self.parent = saved_parent;
    }

    pub(super) fn global_decl(&mut self, c: &mut TreeCursor<'t>) {
        let n = c.node();
        let is_static = self.has_storage(n, "static");
        let is_extern = self.has_storage(n, "extern");
        let missing_semi = n
            .child(n.child_count().saturating_sub(1))
            .is_some_and(|x| x.is_missing());
        if !missing_semi {
            self.split.clear();
        }
        let ty = n.child_by_field_id(self.t.f_type);
        let type_name = self.type_base(ty);
        let saved_encl = self.encl;
        if c.goto_first_child() {
            loop {
                let node = c.node();
                let fid = c.field_id().map(|x| x.get());
                if fid == Some(self.t.f_declarator) {
                    let info = self.declarator_info(node);
                    if let Some(name_node) = info.name {
                        let mut q = String::new();
                        let last = self.split_name(name_node, &mut q);
                        let name = self.intern(last);
                        let qual = self.qualify(&q, last);
                        let mut flags = NodeFlags::NONE_FLAGS;
                        if is_static || self.anon_ns > 0 {
                            flags |= NodeFlags::STATIC;
                        } else {
                            flags |= NodeFlags::EXPORTED;
                        }
                        let has_init = self.t.of(&node) == SyntaxKind::InitDeclarator;
                        let ent = if info.function {
                            flags |= NodeFlags::DECLARATION_ONLY;
                            let kind = if self.cpp && !q.is_empty() {
                                NodeKind::Method
                            } else {
                                NodeKind::Function
                            };
                            let (params, variadic) = self.count_params(info.params);
                            let sig = self.signature(n.start_byte(), n.end_byte());
                            let bits = if variadic { entity_bits::VARIADIC } else { 0 };
                            let e = self.add_entity(
                                kind,
                                flags,
                                bits,
                                params,
                                name,
                                qual,
                                Sym::EMPTY,
                                sig,
                                n,
                            );
                            if missing_semi {
                                self.split.push(e);
                            }
                            e
                        } else {
                            if is_extern && !has_init {
                                flags |= NodeFlags::DECLARATION_ONLY;
                            }
                            let sig = self.signature(
                                n.start_byte(),
                                node.start_byte().max(name_node.end_byte()),
                            );
                            self.add_entity(
                                NodeKind::Variable,
                                flags,
                                0,
                                0,
                                name,
                                qual,
                                type_name,
                                sig,
                                n,
                            )
                        };
                        self.encl = ent;
                    }
                    self.visit(c, Mode::Decl);
                } else if fid == Some(self.t.f_type) {
                    self.visit(c, Mode::Top);
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
        self.encl = saved_encl;
    }

    pub(super) fn member_decl(&mut self, c: &mut TreeCursor<'t>) {
        let n = c.node();
        let is_static = self.has_storage(n, "static");
        let is_virtual = self.has_virtual(n);
        let ty = n.child_by_field_id(self.t.f_type);
        let type_name = self.type_base(ty);
        let saved_encl = self.encl;
        if c.goto_first_child() {
            loop {
                let node = c.node();
                let fid = c.field_id().map(|x| x.get());
                if fid == Some(self.t.f_declarator) {
                    let info = self.declarator_info(node);
                    if let Some(name_node) = info.name {
                        let mut q = String::new();
                        let last = self.split_name(name_node, &mut q);
                        let name = self.intern(last);
                        let qual = self.qualify("", last);
                        let mut flags = NodeFlags::EXPORTED;
                        if is_static {
                            flags |= NodeFlags::STATIC;
                        }
                        let ent = if info.function {
                            flags |= NodeFlags::DECLARATION_ONLY;
                            let mut bits = 0;
                            if is_virtual || self.text(n).contains("override") {
                                flags |= NodeFlags::VIRTUAL;
                            }
                            let t = self.text(n).trim_end_matches(';').trim_end();
                            if t.ends_with("= 0") || t.ends_with("=0") {
                                bits |= entity_bits::PURE;
                                flags |= NodeFlags::VIRTUAL;
                            }
                            let (params, variadic) = self.count_params(info.params);
                            if variadic {
                                bits |= entity_bits::VARIADIC;
                            }
                            let sig = self.signature(n.start_byte(), n.end_byte());
                            self.add_entity(
                                NodeKind::Method,
                                flags,
                                bits,
                                params,
                                name,
                                qual,
                                Sym::EMPTY,
                                sig,
                                n,
                            )
                        } else {
                            let sig = self.signature(n.start_byte(), node.end_byte());
                            self.add_entity(
                                NodeKind::Field,
                                flags,
                                0,
                                0,
                                name,
                                qual,
                                type_name,
                                sig,
                                n,
                            )
                        };
                        self.encl = ent;
                    }
                    self.visit(c, Mode::Decl);
                    self.encl = saved_encl;
                } else if fid == Some(self.t.f_type) {
                    self.visit(c, Mode::Class);
                } else if c.field_name() == Some("default_value") {
                    self.visit(c, Mode::Body);
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
        self.encl = saved_encl;
    }

    pub(super) fn local_decl(&mut self, c: &mut TreeCursor<'t>) {
        let n = c.node();
        let ty = n.child_by_field_id(self.t.f_type);
        let type_name = self.type_base(ty);
        if c.goto_first_child() {
            loop {
                let node = c.node();
                let fid = c.field_id().map(|x| x.get());
                if fid == Some(self.t.f_declarator) {
                    let info = self.declarator_info(node);
                    // The initializer may use names declared before this one only.
                    self.visit(c, Mode::Decl);
                    if let Some(name_node) = info.name
                        && !info.function
                    {
                        let s = self.intern_node(name_node);
                        self.locals.push((s, type_name));
                    }
                } else {
                    self.visit(c, Mode::Body);
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
    }

    pub(super) fn param(&mut self, c: &mut TreeCursor<'t>) {
        let n = c.node();
        let ty = n.child_by_field_id(self.t.f_type);
        let type_name = self.type_base(ty);
        if let Some(d) = n.child_by_field_id(self.t.f_declarator)
            && let Some(name_node) = self.declarator_info(d).name
        {
            let s = self.intern_node(name_node);
            self.locals.push((s, type_name));
        }
        self.children(c, Mode::Decl);
    }

    pub(super) fn typedef(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        let n = c.node();
        let ty = n.child_by_field_id(self.t.f_type);
        let mut first_name: Option<&'t str> = None;
        let mut names: Vec<(Node<'t>, Node<'t>)> = Vec::new();
        for i in 0..n.child_count().min(64) {
            if n.field_name_for_child(i) != Some("declarator") {
                continue;
            }
            let Some(d) = n.child(i) else { continue };
            if let Some(nm) = self.declarator_info(d).name {
                first_name.get_or_insert(self.text(nm));
                names.push((d, nm));
            }
        }
        let type_name = self.type_base(ty);
        let saved_encl = self.encl;
        for (_, nm) in &names {
            let last = self.text(*nm);
            let name = self.intern(last);
            let qual = self.qualify("", last);
            let sig = self.signature(
                n.start_byte(),
                n.end_byte().min(n.start_byte() + MAX_SIGNATURE),
            );
            let ent = self.add_entity(
                NodeKind::Typedef,
                NodeFlags::NONE_FLAGS,
                0,
                0,
                name,
                qual,
                type_name,
                sig,
                n,
            );
            self.encl = ent;
        }
        if c.goto_first_child() {
            loop {
                let fid = c.field_id().map(|x| x.get());
                if fid == Some(self.t.f_type) {
                    let tn = c.node();
                    if is_type_spec(self.t.of(&tn)) {
                        self.type_spec(
                            c,
                            if mode == Mode::Body {
                                Mode::Body
                            } else {
                                Mode::Top
                            },
                            first_name,
                        );
                    } else {
                        self.visit(c, Mode::Decl);
                    }
                } else if fid == Some(self.t.f_declarator) {
                    self.visit(c, Mode::Decl);
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
        self.encl = saved_encl;
    }

    pub(super) fn alias(&mut self, c: &mut TreeCursor<'t>, _mode: Mode) {
        let n = c.node();
        if let Some(nm) = n.child_by_field_id(self.t.f_name) {
            let last = self.text(nm);
            let name = self.intern(last);
            let qual = self.qualify("", last);
            let ty = n.child_by_field_id(self.t.f_type);
            let type_name =
                self.type_base(ty.and_then(|t| t.child_by_field_id(self.t.f_type)).or(None));
            let sig = self.signature(n.start_byte(), n.end_byte());
            let saved = self.encl;
            self.encl = self.add_entity(
                NodeKind::Typedef,
                NodeFlags::NONE_FLAGS,
                0,
                0,
                name,
                qual,
                type_name,
                sig,
                n,
            );
            self.children(c, Mode::Decl);
            self.encl = saved;
        }
    }

    pub(super) fn type_spec(
        &mut self,
        c: &mut TreeCursor<'t>,
        mode: Mode,
        typedef_name: Option<&'t str>,
    ) {
        let n = c.node();
        let k = self.t.of(&n);
        let name_node = n.child_by_field_id(self.t.f_name);
        let Some(body) = n.child_by_field_id(self.t.f_body) else {
            // A use (`struct S *p`) rather than a definition.
            if mode != Mode::Cond
                && let Some(nm) = name_node
            {
                let mut q = String::new();
                let last = self.split_name(nm, &mut q);
                let (name, qual) = (self.intern(last), self.intern(&q));
                self.push_ref(RefKind::Type, 0, 0, name, qual, Sym::EMPTY, nm);
            }
            return;
        };
        let kind = match k {
            SyntaxKind::ClassSpecifier => NodeKind::Class,
            SyntaxKind::UnionSpecifier => NodeKind::Union,
            SyntaxKind::EnumSpecifier => NodeKind::Enum,
            _ => NodeKind::Struct,
        };
        let last: Option<&'t str> = match name_node {
            Some(nm) => {
                let mut q = String::new();
                Some(self.split_name(nm, &mut q))
            }
            None => typedef_name,
        };
        let Some(last) = last else {
            // Anonymous aggregate: its members belong to the enclosing scope.
            return self.children(
                c,
                if kind == NodeKind::Enum {
                    Mode::Top
                } else {
                    Mode::Class
                },
            );
        };
        let name = self.intern(last);
        let qual = self.qualify("", last);
        let sig = self.signature(n.start_byte(), body.start_byte());
        let ent = self.add_entity(
            kind,
            NodeFlags::EXPORTED,
            0,
            0,
            name,
            qual,
            Sym::EMPTY,
            sig,
            n,
        );
        self.class_body(c, ent, last, |w, c| {
            if c.goto_first_child() {
                loop {
                    let node = c.node();
                    let ck = w.t.of(&node);
                    if ck == SyntaxKind::BaseClassClause {
                        w.bases(node, ent);
                        w.children(c, Mode::Decl);
                    } else if ck == SyntaxKind::EnumeratorList {
                        w.enumerators(
                            c,
                            ent,
                            k == SyntaxKind::EnumSpecifier && w.text(n).starts_with("enum class"),
                        );
                    } else if ck == SyntaxKind::FieldDeclarationList {
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

    pub(super) fn bases(&mut self, clause: Node<'t>, ent: u32) {
        for i in 0..clause.named_child_count().min(64) {
            let Some(b) = clause.named_child(i as u32) else {
                continue;
            };
            if matches!(
                self.t.of(&b),
                SyntaxKind::TypeIdentifier
                    | SyntaxKind::QualifiedIdentifier
                    | SyntaxKind::TemplateType
            ) {
                let mut q = String::new();
                let last = self.split_name(b, &mut q);
                if !q.is_empty() {
                    q.push_str("::");
                }
                q.push_str(last);
                let s = self.intern(&q);
                self.f.bases.push(Base {
                    entity: ent,
                    name: s,
                    line: b.start_position().row as u32 + 1,
                });
            }
        }
    }

    pub(super) fn enumerators(&mut self, c: &mut TreeCursor<'t>, enum_ent: u32, scoped: bool) {
        // Unscoped enumerators live in the enclosing scope.
        let saved_scope = self.scope.len();
        if !scoped {
            let cut = self.scope.rfind("::").unwrap_or(0);
            self.scope.truncate(cut);
        }
        if c.goto_first_child() {
            loop {
                let node = c.node();
                if self.t.of(&node) == SyntaxKind::Enumerator
                    && let Some(nm) = node.child_by_field_id(self.t.f_name)
                {
                    let last = self.text(nm);
                    let name = self.intern(last);
                    let qual = self.qualify("", last);
                    let sig = self.signature(node.start_byte(), node.end_byte());
                    let e = self.add_entity(
                        NodeKind::Enumerator,
                        NodeFlags::NONE_FLAGS,
                        0,
                        0,
                        name,
                        qual,
                        Sym::EMPTY,
                        sig,
                        node,
                    );
                    self.f.entities[e as usize].parent = enum_ent;
                    let saved = self.encl;
                    self.encl = e;
                    if c.goto_first_child() {
                        loop {
                            if c.field_id().map(|x| x.get()) == Some(self.t.f_value) {
                                self.visit(c, Mode::Body);
                            }
                            if !c.goto_next_sibling() {
                                break;
                            }
                        }
                        c.goto_parent();
                    }
                    self.encl = saved;
                } else {
                    self.visit(c, Mode::Top);
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
        let _ = saved_scope;
    }

    pub(super) fn namespace(&mut self, c: &mut TreeCursor<'t>) {
        let n = c.node();
        let name_node = n.child_by_field_id(self.t.f_name);
        self.split.clear();
        match name_node {
            None => {
                self.anon_ns += 1;
                self.children(c, Mode::Top);
                self.anon_ns -= 1;
            }
            Some(nm) => {
                let last = self.text(nm);
                let name = self.intern(last.rsplit("::").next().unwrap_or(last));
                let qual = self.qualify("", last);
                let sig = self.signature(n.start_byte(), nm.end_byte());
                let ent = self.add_entity(
                    NodeKind::Namespace,
                    NodeFlags::EXPORTED,
                    0,
                    0,
                    name,
                    qual,
                    Sym::EMPTY,
                    sig,
                    n,
                );
                self.class_body(c, ent, last, |w, c| w.children(c, Mode::Top));
            }
        }
    }
}
