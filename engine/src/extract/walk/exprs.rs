//! Expressions and preprocessor lines: calls (with receivers and dynamic dispatch),
//! reads and writes, macro definitions and their bodies, includes, `#if` conditions.

use batho_schema::{NodeFlags, NodeKind};
use tree_sitter::{Node, TreeCursor};

use super::{MAX_MACRO_REFS, MacroShape, Mode, NoneFlags, Span, SyntaxKind, Walker, is_c_keyword};
use crate::extract::{
    Include, MacroArguments, MacroCall, NO_ENTITY, RefKind, Sym, entity_bits, ref_bits,
};

impl<'t> Walker<'_, 't> {
    /// Children of an `ERROR` node: walked as usual, plus `name (` token pairs (the shape
    /// a call takes when tree-sitter gave up on the statement) become calls.
    pub(super) fn error_children(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        if mode == Mode::Top {
            return self.top_error(c);
        }
        if !c.goto_first_child() {
            return;
        }
        let mut prev_ident: Option<Node<'t>> = None;
        loop {
            let n = c.node();
            let k = self.t.of(&n);
            if let Some(p) = prev_ident
                && matches!(mode, Mode::Body)
                && (n.kind() == "("
                    || n.kind() == "argument_list"
                    || n.kind() == "parenthesized_expression")
            {
                let s = self.intern_node(p);
                if self.local_type(s).is_none() {
                    self.push_ref(RefKind::Call, 0, 0, s, Sym::EMPTY, Sym::EMPTY, p);
                }
            }
            prev_ident = if k == SyntaxKind::Identifier {
                Some(n)
            } else {
                None
            };
            self.visit(c, mode);
            if !c.goto_next_sibling() {
                break;
            }
        }
        c.goto_parent();
    }

    pub(super) fn include(&mut self, n: Node<'t>) {
        let Some(p) = n.child_by_field_id(self.t.f_path) else {
            return;
        };
        let raw = self.text(p);
        let (path, system) = if p.kind() == "system_lib_string" {
            (raw.trim_start_matches('<').trim_end_matches('>'), true)
        } else if p.kind() == "string_literal" {
            (raw.trim_matches('"'), false)
        } else {
            return;
        };
        self.add_include(path, system, n.start_position().row as u32 + 1);
    }

    /// Records an include of `path` (as written between the delimiters).
    pub(super) fn add_include(&mut self, path: &str, system: bool, line: u32) {
        let path = path.trim();
        if path.is_empty() {
            return;
        }
        let sym = self.intern(path);
        self.f.includes.push(Include {
            path: sym,
            system,
            line,
        });
    }

    pub(super) fn macro_def(&mut self, n: Node<'t>, k: SyntaxKind) {
        let Some(name_node) = n.child_by_field_id(self.t.f_name) else {
            return;
        };
        let name = self.intern_node(name_node);
        let mut params: Vec<&'t str> = Vec::new();
        let mut variadic = false;
        let mut sig_end = name_node.end_byte();
        if k == SyntaxKind::PreprocFunctionDef
            && let Some(p) = n.child_by_field_id(self.t.f_parameters)
        {
            sig_end = p.end_byte();
            // The parameter list's text tells `(l, ...)` (`...` is not always a named
            // child) from GNU's named form `(fmt, args...)`, whose last parameter is an
            // ordinary one here: its uses are `args`, not `__VA_ARGS__`.
            let before_dots = self
                .text(p)
                .trim_end_matches(')')
                .trim_end()
                .strip_suffix("...");
            variadic = before_dots.is_some_and(|rest| {
                !rest.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            });
            for i in 0..p.named_child_count() {
                if let Some(ch) = p.named_child(i as u32) {
                    let t = self.text(ch);
                    let name = t.strip_suffix("...").unwrap_or(t).trim_end();
                    if !name.is_empty() {
                        params.push(name);
                    }
                }
            }
        }
        // An object-like macro's signature would only repeat its name.
        let sig = if k == SyntaxKind::PreprocFunctionDef {
            self.signature(n.start_byte(), sig_end)
        } else {
            Sym::EMPTY
        };
        let value = n
            .child_by_field_id(self.t.f_value)
            .map(|v| (self.text(v), v.start_position().row as u32 + 1));
        let span = Span::from(n);
        let shape = MacroShape {
            function_like: k == SyntaxKind::PreprocFunctionDef,
            params: &params,
            variadic,
            signature: sig,
        };
        self.define(name, shape, value, span);
    }

    /// Adds the macro entity of a definition and the calls of its body (`value`: the text
    /// after the name or parameters, and its line). Shared by the parse-tree walk and
    /// the line reader of directive-only files, so that both give the same facts.
    pub(super) fn define(
        &mut self,
        name: Sym,
        shape: MacroShape<'_, 't>,
        value: Option<(&'t str, u32)>,
        span: Span,
    ) {
        let mut bits = if shape.function_like {
            entity_bits::FUNCTION_LIKE
        } else {
            0
        } | if shape.variadic {
            entity_bits::VARIADIC
        } else {
            0
        };
        let value_text = value.map(|(v, _)| v.trim()).unwrap_or("");
        let mut alias = Sym::EMPTY;
        if self.cond_depth > 0 {
            bits |= entity_bits::CONDITIONAL;
        }
        if !shape.function_like {
            let word = value_text
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            if word == "static" {
                bits |= entity_bits::STATIC_MACRO;
            }
            if !word.is_empty()
                && word.len() == value_text.len()
                && !word.as_bytes()[0].is_ascii_digit()
                && !is_c_keyword(word)
            {
                alias = self.intern(word);
            }
        }
        let saved_parent = self.parent;
        self.parent = NO_ENTITY;
        let ent = self.add_entity(
            NodeKind::Macro,
            NodeFlags::NONE_FLAGS,
            bits,
            shape.params.len().min(255) as u8,
            name,
            name,
            alias,
            shape.signature,
            span,
        );
        self.parent = saved_parent;
        if let Some((text, line)) = value {
            let saved = self.encl;
            // A macro defined inside a function is used there: its calls are the
            // function's (this is how a compiler sees them too).
            let in_function = self
                .f
                .entities
                .get(self.encl as usize)
                .is_some_and(|e| matches!(e.kind, NodeKind::Function | NodeKind::Method));
            if !in_function {
                self.encl = ent;
            }
            self.scan_macro_body(text, line, shape.params, shape.variadic);
            self.encl = saved;
        }
    }

    /// Call shapes (`name(`) in a macro body, parameters and keywords aside, each with the
    /// call whose argument it is written in; then the parameters the body never uses
    /// as plain tokens (an argument given for them disappears from the expansion).
    pub(super) fn scan_macro_body(
        &mut self,
        text: &str,
        line: u32,
        params: &[&str],
        variadic: bool,
    ) {
        let b = text.as_bytes();
        let mut i = 0;
        let mut found = 0;
        // Open parentheses: the call each one opens (None for grouping) and the argument
        // reached in it.
        let mut open: Vec<(Option<Sym>, u8)> = Vec::new();
        let mut used: u64 = 0;
        // Whether the whole body was read: a scan cut short knows only some uses.
        let mut complete = true;
        while i < b.len() {
            if found == MAX_MACRO_REFS {
                complete = false;
                break;
            }
            let ch = b[i];
            if ch == b'"' || ch == b'\'' {
                i += 1;
                while i < b.len() && b[i] != ch {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                continue;
            }
            if ch == b'/' && b.get(i + 1) == Some(&b'*') {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
                continue;
            }
            if ch.is_ascii_digit() {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
                continue;
            }
            match ch {
                b'(' => open.push((None, 0)),
                b')' => {
                    open.pop();
                }
                b',' => {
                    if let Some(top) = open.last_mut() {
                        top.1 = top.1.saturating_add(1);
                    }
                }
                _ => {}
            }
            if ch.is_ascii_alphabetic() || ch == b'_' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &text[start..i];
                if matches!(
                    word,
                    "__attribute__" | "__declspec" | "_Pragma" | "__pragma"
                ) {
                    complete = false;
                    break;
                }
                let before = text[..start].trim_end_matches([' ', '\t']);
                let preceded_by_hash = before.ends_with('#');
                let followed_by_paste = text[i..].trim_start_matches([' ', '\t']).starts_with("##");
                let parameter = if word == "__VA_ARGS__" && variadic {
                    Some(params.len())
                } else {
                    params.iter().position(|p| *p == word)
                };
                if let Some(index) = parameter {
                    let bit = MacroArguments::bit(index, params.len());
                    if let Some(bit) = bit.filter(|_| !preceded_by_hash && !followed_by_paste) {
                        used |= 1 << bit;
                    }
                    continue;
                }
                if preceded_by_hash || is_c_keyword(word) {
                    continue;
                }
                let mut j = i;
                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                    j += 1;
                }
                // Only call shapes: every identifier of every macro body would double the
                // references of a kernel-size tree for little use.
                if b.get(j) == Some(&b'(') {
                    let s = self.intern(word);
                    self.push_ref_at(RefKind::Call, 0, 0, s, Sym::EMPTY, Sym::EMPTY, line);
                    let within = open
                        .iter()
                        .rev()
                        .find_map(|&(call, argument)| call.map(|call| (call, argument)));
                    self.note_macro_call(s, within);
                    found += 1;
                    open.push((Some(s), 0));
                    i = j + 1;
                }
                continue;
            }
            i += 1;
        }
        let declared = (0..params.len())
            .chain(variadic.then_some(params.len()))
            .filter_map(|index| MacroArguments::bit(index, params.len()))
            .fold(0u64, |all, bit| all | 1 << bit);
        let unused = declared & !used;
        if complete {
            self.note_unused_arguments(unused);
        }
    }

    /// Records `name` as called by the body of the macro being scanned (not for a macro
    /// defined inside a function, whose calls are the function's).
    fn note_macro_call(&mut self, name: Sym, within: Option<(Sym, u8)>) {
        let macro_entity = self.encl;
        let is_macro = self.scanning_macro();
        let known = self
            .f
            .macro_calls
            .iter()
            .rev()
            .take_while(|c| c.macro_entity == macro_entity)
            .any(|c| c.name == name);
        if is_macro && !known {
            let (within, argument) = within.unwrap_or((Sym::EMPTY, 0));
            self.f.macro_calls.push(MacroCall {
                macro_entity,
                name,
                within,
                argument,
            });
        }
    }

    /// Whether the body being scanned is a macro's own (not a function's local macro).
    fn scanning_macro(&self) -> bool {
        self.f
            .entities
            .get(self.encl as usize)
            .is_some_and(|e| e.kind == NodeKind::Macro)
    }

    /// Records the parameters (bit i; bit 63: the variadic part) that the body of the
    /// macro being scanned drops.
    fn note_unused_arguments(&mut self, unused: u64) {
        if unused != 0 && self.scanning_macro() {
            self.f.macro_arguments.push(MacroArguments {
                macro_entity: self.encl,
                unused,
            });
        }
    }

    pub(super) fn preproc_if(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        if !self.is_include_guard(c.node()) {
            self.cond_depth += 1;
            self.preproc_if_children(c, mode);
            self.cond_depth -= 1;
            return;
        }
        // The guard's own name is not worth an EXPANDS edge.
        if c.goto_first_child() {
            loop {
                if c.field_id().map(|x| x.get()) != Some(self.t.f_name) {
                    self.visit(c, mode);
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
    }

    /// `#ifndef X_H` whose first definition is `#define X_H`: an include guard.
    fn is_include_guard(&self, n: Node<'t>) -> bool {
        n.kind() == "preproc_ifdef"
            && n.child(0).is_some_and(|k| self.text(k) == "#ifndef")
            && n.child_by_field_id(self.t.f_name).is_some_and(|name| {
                (0..n.named_child_count().min(4))
                    .filter_map(|i| n.named_child(i as u32))
                    .find(|ch| self.t.of(ch) == SyntaxKind::PreprocDef)
                    .and_then(|d| d.child_by_field_id(self.t.f_name))
                    .is_some_and(|d| self.text(d) == self.text(name))
            })
    }

    /// The children of a conditional block: its condition (and an `#ifdef`'s name) as
    /// macro uses, the rest in `mode`.
    ///
    /// A conditional block or `#else` branch directly inside is entered in this loop, not
    /// by recursion, counting its conditional level as [`Self::preproc_if`] would: `#if`
    /// blocks nested any depth deep cost no stack, so what they hold is indexed (20,000
    /// levels used to stop at the walk's `MAX_DEPTH`, and the entity inside was lost).
    /// `MAX_DEPTH` still bounds every other kind of nesting.
    pub(super) fn preproc_if_children(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        if !c.goto_first_child() {
            return;
        }
        // Per block entered in place, whether it counted a conditional level.
        let mut entered: Vec<bool> = Vec::new();
        loop {
            let fid = c.field_id().map(|x| x.get());
            if fid == Some(self.t.f_name) || c.field_name() == Some("condition") {
                self.visit(c, Mode::Cond);
            } else if let Some(conditional) = self.enter_in_place(c) {
                self.cond_depth += u32::from(conditional);
                entered.push(conditional);
                continue;
            } else {
                self.visit(c, mode);
            }
            while !c.goto_next_sibling() {
                c.goto_parent();
                let Some(conditional) = entered.pop() else {
                    return;
                };
                self.cond_depth -= u32::from(conditional);
            }
        }
    }

    /// Moves the cursor onto the first child of the conditional block (not an include
    /// guard) or `#else` branch under it, and says whether that is a conditional level;
    /// `None`, the cursor unmoved, for anything else, and inside an error, where `visit`
    /// does more than walk the children.
    fn enter_in_place(&self, c: &mut TreeCursor<'t>) -> Option<bool> {
        if self.in_error > 0 {
            return None;
        }
        let n = c.node();
        let conditional = match self.t.of(&n) {
            SyntaxKind::PreprocIf if !self.is_include_guard(n) => true,
            SyntaxKind::PreprocElse => false,
            _ => return None,
        };
        c.goto_first_child().then_some(conditional)
    }

    pub(super) fn read(&mut self, n: Node<'t>) {
        let s = self.intern_node(n);
        if self.local_type(s).is_none() {
            self.push_ref(RefKind::Read, 0, 0, s, Sym::EMPTY, Sym::EMPTY, n);
        }
    }

    /// The receiver of `arg.field` / `arg->field`: (flags, recv).
    pub(super) fn receiver(&mut self, arg: Option<Node<'t>>) -> (u8, Sym) {
        let mut cur = match arg {
            Some(a) => a,
            None => return (0, Sym::EMPTY),
        };
        for _ in 0..4 {
            match self.t.of(&cur) {
                SyntaxKind::This => return (ref_bits::THIS, Sym::EMPTY),
                SyntaxKind::Identifier => {
                    let s = self.intern_node(cur);
                    return match self.local_type(s) {
                        Some(t) => (0, t),
                        None => (ref_bits::RECV_IS_NAME, s),
                    };
                }
                SyntaxKind::ParenthesizedExpression => match cur.named_child(0) {
                    Some(x) => cur = x,
                    None => break,
                },
                SyntaxKind::PointerExpression => match cur.child_by_field_id(self.t.f_argument) {
                    Some(x) => cur = x,
                    None => break,
                },
                _ => break,
            }
        }
        (0, Sym::EMPTY)
    }

    pub(super) fn call(&mut self, c: &mut TreeCursor<'t>, mode: Mode) {
        let n = c.node();
        let arity = n
            .child_by_field_id(self.t.f_arguments)
            .map(|a| a.named_child_count().min(255) as u8)
            .unwrap_or(0);
        let Some(func) = n.child_by_field_id(self.t.f_function) else {
            return self.children(c, Mode::Body);
        };
        let fk = self.t.of(&func);
        let c_dynamic = if self.cpp { 0 } else { ref_bits::DYNAMIC };
        // Whether the callee node's subtree still needs a walk for the names it reads.
        let mut walk_func = false;
        let mut walk_member_arg = false;
        // Set when this call is the outermost call of a plain name: cleared on the way out.
        let mut outer = None;
        match fk {
            SyntaxKind::Identifier if is_c_keyword(self.text(func)) => {}
            SyntaxKind::Identifier => {
                let s = self.intern_node(func);
                let flags = if self.local_type(s).is_some() {
                    ref_bits::LOCAL | ref_bits::DYNAMIC
                } else {
                    0
                };
                self.push_ref(RefKind::Call, flags, arity, s, Sym::EMPTY, Sym::EMPTY, func);
                if self.arguments && self.outer_call.is_none() {
                    outer = n
                        .child_by_field_id(self.t.f_arguments)
                        .map(|args| (s, args));
                    self.outer_call = outer;
                }
            }
            SyntaxKind::QualifiedIdentifier | SyntaxKind::TemplateFunction => {
                let mut q = String::new();
                let last = self.split_name(func, &mut q);
                if !is_c_keyword(last) {
                    let (name, qual) = (self.intern(last), self.intern(&q));
                    self.push_ref(RefKind::Call, 0, arity, name, qual, Sym::EMPTY, func);
                }
                walk_func = fk == SyntaxKind::TemplateFunction
                    || func
                        .child_by_field_id(self.t.f_name)
                        .is_some_and(|x| self.t.of(&x) == SyntaxKind::TemplateFunction);
            }
            SyntaxKind::FieldExpression => {
                let field = func.child_by_field_id(self.t.f_field);
                let arg = func.child_by_field_id(self.t.f_argument);
                let (rflags, recv) = self.receiver(arg);
                if let Some(fl) = field {
                    let mut q = String::new();
                    let last = self.split_name(fl, &mut q);
                    let name = self.intern(last);
                    let qual = self.intern(&q);
                    self.push_ref(
                        RefKind::Call,
                        rflags | ref_bits::MEMBER | c_dynamic,
                        arity,
                        name,
                        qual,
                        recv,
                        fl,
                    );
                }
                walk_member_arg = true;
            }
            _ => {
                // `(*fp)(x)`, `(p->cb)(x)`, `table[i](x)`: a call through a pointer.
                let mut cur = func;
                for _ in 0..4 {
                    match self.t.of(&cur) {
                        SyntaxKind::ParenthesizedExpression => match cur.named_child(0) {
                            Some(x) => cur = x,
                            None => break,
                        },
                        SyntaxKind::PointerExpression => {
                            match cur.child_by_field_id(self.t.f_argument) {
                                Some(x) => cur = x,
                                None => break,
                            }
                        }
                        _ => break,
                    }
                }
                match self.t.of(&cur) {
                    SyntaxKind::Identifier => {
                        let s = self.intern_node(cur);
                        let local = if self.local_type(s).is_some() {
                            ref_bits::LOCAL
                        } else {
                            0
                        };
                        self.push_ref(
                            RefKind::Call,
                            ref_bits::DYNAMIC | local,
                            arity,
                            s,
                            Sym::EMPTY,
                            Sym::EMPTY,
                            cur,
                        );
                    }
                    SyntaxKind::FieldExpression => {
                        let field = cur.child_by_field_id(self.t.f_field);
                        let (rflags, recv) =
                            self.receiver(cur.child_by_field_id(self.t.f_argument));
                        if let Some(fl) = field {
                            let name = self.intern_node(fl);
                            self.push_ref(
                                RefKind::Call,
                                rflags | ref_bits::MEMBER | ref_bits::DYNAMIC,
                                arity,
                                name,
                                Sym::EMPTY,
                                recv,
                                fl,
                            );
                        }
                    }
                    _ => {}
                }
                walk_func = true;
            }
        }
        let _ = mode;
        if c.goto_first_child() {
            loop {
                let fid = c.field_id().map(|x| x.get());
                if fid == Some(self.t.f_function) {
                    if walk_func {
                        self.children(c, Mode::Body);
                    } else if walk_member_arg && c.goto_first_child() {
                        loop {
                            if c.field_id().map(|x| x.get()) == Some(self.t.f_argument) {
                                self.visit(c, Mode::Body);
                            }
                            if !c.goto_next_sibling() {
                                break;
                            }
                        }
                        c.goto_parent();
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
        if outer.is_some() {
            self.outer_call = None;
        }
    }

    /// The target of a write: a global identifier, or a member with a known receiver.
    pub(super) fn write_target(&mut self, c: &mut TreeCursor<'t>) {
        let n = c.node();
        match self.t.of(&n) {
            SyntaxKind::Identifier => {
                let s = self.intern_node(n);
                if self.local_type(s).is_none() {
                    self.push_ref(RefKind::Write, 0, 0, s, Sym::EMPTY, Sym::EMPTY, n);
                }
            }
            SyntaxKind::FieldExpression => {
                let (rflags, recv) = self.receiver(n.child_by_field_id(self.t.f_argument));
                if let Some(fl) = n.child_by_field_id(self.t.f_field)
                    && (!recv.is_empty() || rflags & ref_bits::THIS != 0)
                {
                    let name = self.intern_node(fl);
                    self.push_ref(
                        RefKind::Write,
                        rflags | ref_bits::MEMBER,
                        0,
                        name,
                        Sym::EMPTY,
                        recv,
                        fl,
                    );
                }
                self.children(c, Mode::Body);
            }
            _ => self.visit(c, Mode::Body),
        }
    }

    pub(super) fn assignment(&mut self, c: &mut TreeCursor<'t>) {
        if c.goto_first_child() {
            loop {
                if c.field_id().map(|x| x.get()) == Some(self.t.f_left) {
                    self.write_target(c);
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

    pub(super) fn update(&mut self, c: &mut TreeCursor<'t>) {
        if c.goto_first_child() {
            loop {
                if c.field_id().map(|x| x.get()) == Some(self.t.f_argument) {
                    self.write_target(c);
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

    /// Walks a misparsed "definition" inside a body as plain code: its parts are
    /// expressions and statements, not declarations.
    pub(super) fn statement_soup(&mut self, c: &mut TreeCursor<'t>) {
        if c.goto_first_child() {
            loop {
                let n = c.node();
                match self.t.of(&n) {
                    SyntaxKind::FunctionDeclarator
                    | SyntaxKind::ParameterList
                    | SyntaxKind::ParameterDeclaration => self.statement_soup(c),
                    SyntaxKind::Identifier
                        if c.field_id().map(|x| x.get()) == Some(self.t.f_declarator) => {}
                    _ => self.visit(c, Mode::Body),
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
    }
}
