//! Resolution of one file's references: calls (scopes, receivers, virtual dispatch,
//! macros and alias macros, libc), type uses, reads and writes.

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};

use batho_storage::input::NodeIdx;

use super::index::Ent;
use super::{Resolver, scope_of, stdlib};
use crate::extract::{NO_ENTITY, Ref, RefKind, RefSite, entity_bits, ref_bits};

/// The sites of reference `i` among `sites`, which hold no later reference's: a site of
/// an earlier reference would mean the list was not sorted, and is skipped.
fn strip_earlier(sites: &[RefSite], i: usize) -> &[RefSite] {
    let first = sites.partition_point(|s| (s.reference as usize) < i);
    &sites[first..]
}

impl<'f> Resolver<'_, 'f> {
    /// Resolves `refs`, the references of file `f`.
    pub(super) fn refs_of(&mut self, f: u32, refs: &[Ref]) {
        let facts = &self.files()[f as usize];
        // `clear` keeps (and memsets) the capacity one huge file grew: start small again.
        if self.seen.capacity() > 1 << 12 {
            self.seen = Default::default();
        } else {
            self.seen.clear();
        }
        let mut sites: &'f [RefSite] = &facts.sites;
        for (i, r) in refs.iter().enumerate() {
            self.stats.refs += 1;
            // Sites are sorted by reference: this reference's lead the rest.
            let own = sites.partition_point(|s| s.reference as usize <= i);
            (self.reference_sites, sites) = sites.split_at(own);
            self.reference_sites = strip_earlier(self.reference_sites, i);
            self.reference = i as u32;
            self.inactive = r.flags & ref_bits::INACTIVE != 0;
            let src = if r.enclosing == NO_ENTITY {
                NodeIdx(self.file_node[f as usize])
            } else {
                self.node_of((f, r.enclosing))
            };
            match r.kind {
                RefKind::Call => self.call(f, r, src),
                RefKind::Type => self.type_ref(f, r, src),
                RefKind::Read => self.read(f, r, src),
                RefKind::Write => self.write(f, r, src),
                RefKind::Expand => {
                    let name = facts.str(r.name);
                    self.collect(name, "", |s, e| s.kind(e) == NodeKind::Macro);
                    if let Some(st) = self.visible(f, None) {
                        self.emit_cands(src, RelType::Expands, Roles::NONE, st, f, r.line);
                    }
                }
            }
        }
        self.reference = super::NO_REFERENCE;
        self.reference_sites = &[];
        self.inactive = false;
        self.emit_invocations(f);
    }

    /// The class whose member `r`'s enclosing entity is (for `this` and bare members).
    pub(super) fn enclosing_class(&mut self, f: u32, r: &Ref) -> Option<&'f str> {
        if r.enclosing == NO_ENTITY {
            return None;
        }
        let e = (f, r.enclosing);
        if self.kind(e) != NodeKind::Method {
            return None;
        }
        let scope = scope_of(self.ix.qual(e));
        self.find_classes(scope).first().copied()
    }

    /// The declared type of the receiver of a member reference.
    pub(super) fn receiver_type(&mut self, f: u32, r: &Ref) -> Option<&'f str> {
        let facts = &self.files()[f as usize];
        if r.flags & ref_bits::THIS != 0 {
            return self.enclosing_class(f, r);
        }
        let recv = facts.str(r.recv);
        if recv.is_empty() {
            return None;
        }
        if r.flags & ref_bits::RECV_IS_NAME == 0 {
            return Some(recv);
        }
        // A member of the enclosing class, else a global variable.
        if let Some(class) = self.enclosing_class(f, r) {
            for c in self.class_chain(class) {
                if let Some(fe) = self
                    .ix
                    .members_named(c, recv)
                    .find(|&e| self.kind(e) == NodeKind::Field)
                {
                    let t = self.ix.sym(fe.0, self.ix.entity(fe).type_name);
                    return if t.is_empty() { None } else { Some(t) };
                }
            }
        }
        self.collect(recv, "", |s, e| s.kind(e) == NodeKind::Variable);
        self.visible(f, None)?;
        let e = *self.cands.first()?;
        let t = self.ix.sym(e.0, self.ix.entity(e).type_name);
        if t.is_empty() { None } else { Some(t) }
    }

    /// Members named `name` of `class` or its bases (nearest class that has one).
    pub(super) fn members_named(
        &mut self,
        class: &'f str,
        name: &str,
        kinds: &[NodeKind],
    ) -> Option<bool> {
        let chain = self.class_chain(class);
        for (i, c) in chain.iter().enumerate() {
            let mut v: Vec<Ent> = self
                .ix
                .members_named(c, name)
                .filter(|&e| kinds.contains(&self.kind(e)))
                .collect();
            if !v.is_empty() {
                if v.iter().any(|&e| self.ix.is_def(e)) {
                    v.retain(|&e| self.ix.is_def(e));
                }
                self.cands = v;
                return Some(i > 0);
            }
        }
        None
    }

    pub(super) fn unresolved(&mut self, src: NodeIdx, name: &str, roles: Roles, f: u32, line: u32) {
        if self.expansions.capturing() || roles.contains(Roles::GENERATED) {
            // An expansion generates calls of repository entities only.
            return;
        }
        let unqualified = name.strip_prefix("std::").unwrap_or(name);
        let (id, flags, strategy) = if stdlib::is_libc(unqualified) || name.starts_with("std::") {
            (
                format!("<std>:{name}"),
                NodeFlags::SYSTEM,
                Strategy::StdlibMethod,
            )
        } else {
            (
                format!("<external>:{name}"),
                NodeFlags(0),
                Strategy::Unresolved,
            )
        };
        let s = self.stub(&id, name, NodeKind::External, flags);
        self.stats.calls_by_strategy[strategy.code() as usize] += 1;
        self.edge(src, s, RelType::Calls, roles, strategy, f, line);
    }

    pub(super) fn call(&mut self, f: u32, r: &Ref, src: NodeIdx) {
        self.stats.calls += 1;
        let name = self.files()[f as usize].str(r.name);
        self.call_named(f, r, src, name, 0);
    }

    /// Resolves call `r` as a call of `name` (which differs from `r.name` behind an alias macro).
    pub(super) fn call_named(&mut self, f: u32, r: &Ref, src: NodeIdx, name: &'f str, depth: u32) {
        let facts = &self.files()[f as usize];
        let cpp = facts.language == Language::Cpp;
        let qual = facts.str(r.qual);
        let mut roles = if r.flags & ref_bits::IN_ERROR != 0 {
            Roles::HEURISTIC
        } else {
            Roles::NONE
        };
        if r.flags & ref_bits::DYNAMIC != 0 {
            roles |= Roles::DYNAMIC;
        }
        roles |= generated(r);
        if r.argument != 0 && depth == 0 && self.argument_dropped(f, r) {
            roles |= Roles::INACTIVE;
        }
        let line = r.line;
        let done = |s: &mut Self, st: (Strategy, bool), rel: RelType, roles: Roles| {
            s.stats.calls_by_strategy[st.0.code() as usize] += 1;
            s.emit_cands(src, rel, roles, st, f, line);
        };
        if r.flags & ref_bits::MEMBER != 0 {
            let ty = self.receiver_type(f, r);
            let kinds: &[NodeKind] = if cpp {
                &[NodeKind::Method, NodeKind::Field]
            } else {
                &[NodeKind::Field]
            };
            if let Some(ty) = ty {
                for class in self.find_classes(ty) {
                    if let Some(inherited) = self.members_named(class, name, kinds) {
                        let target = self.cands.clone();
                        let mut rl = roles;
                        if target.iter().any(|&e| self.kind(e) == NodeKind::Field) {
                            rl |= Roles::DYNAMIC;
                        }
                        let st = if inherited {
                            Strategy::ParentChain
                        } else {
                            Strategy::ReceiverType
                        };
                        done(self, (st, false), RelType::Calls, rl);
                        self.virtual_targets(class, name, &target, src, f, line);
                        return;
                    }
                }
            }
            if cpp {
                self.collect(name, qual, |s, e| s.kind(e) == NodeKind::Method);
                if self.cands.iter().any(|&e| self.ix.is_def(e)) {
                    self.cands.retain(|&e| self.ix.is_def(e));
                }
                match self.cands.len() {
                    0 => {}
                    1 => return done(self, (Strategy::ReceiverType, true), RelType::Calls, roles),
                    n if n <= self.opts.max_ambiguous => {
                        return done(self, (Strategy::Ambiguous, false), RelType::Calls, roles);
                    }
                    _ => {}
                }
            }
            return self.unresolved(src, name, roles | Roles::DYNAMIC, f, line);
        }
        if r.flags & ref_bits::LOCAL != 0 {
            return self.unresolved(src, name, roles | Roles::DYNAMIC, f, line);
        }
        let arity = Some(r.arity);
        // C++: the caller's class (and bases), then its enclosing namespaces.
        if cpp && r.enclosing != NO_ENTITY && qual.is_empty() {
            if let Some(class) = self.enclosing_class(f, r)
                && let Some(inherited) = self.members_named(class, name, &[NodeKind::Method])
            {
                let st = if inherited {
                    Strategy::ParentChain
                } else {
                    Strategy::ScopeQualified
                };
                let target = self.cands.clone();
                done(self, (st, false), RelType::Calls, roles);
                return self.virtual_targets(class, name, &target, src, f, line);
            }
            let mut scope = scope_of(self.ix.qual((f, r.enclosing)));
            while !scope.is_empty() {
                let sc = scope;
                self.collect(name, "", |s, e| {
                    matches!(s.kind(e), NodeKind::Function | NodeKind::Method)
                        && scope_of(s.ix.qual(e)) == sc
                });
                if self.cands.iter().any(|&e| self.ix.is_def(e)) {
                    self.cands.retain(|&e| self.ix.is_def(e));
                }
                if !self.cands.is_empty()
                    && let Some(st) = self.visible(f, arity)
                {
                    let st = if st.0 == Strategy::Ambiguous {
                        st
                    } else {
                        (Strategy::ScopeQualified, st.1)
                    };
                    return done(self, st, RelType::Calls, roles);
                }
                scope = scope_of(scope);
            }
        }
        // Definitions in the translation unit, then macros there (a macro shadows any
        // function defined elsewhere: `#define ZSTD_isError ERR_isError`), then the
        // rest of the repository, function-pointer globals, other macros, prototypes.
        // A macro #defined earlier in the caller's own file shadows even a function of
        // that file (`unsigned ZSTDv07_isError(…) {…}` … `#define ZSTDv07_isError ERR_isError`).
        for tier in 0..2 {
            if tier == 1 {
                self.collect(name, qual, |s, e| {
                    matches!(s.kind(e), NodeKind::Function | NodeKind::Method) && s.ix.is_def(e)
                });
                if let Some(st) = self.visible_in(f, arity, true) {
                    return done(self, st, RelType::Calls, roles);
                }
            }
            if !qual.is_empty() || self.expansions.hides(name) {
                continue;
            }
            let line = r.line;
            self.collect(name, "", |s, e| {
                let en = s.ix.entity(e);
                en.kind == NodeKind::Macro
                    && if tier == 0 {
                        e.0 == f && en.start_line <= line && en.bits & entity_bits::CONDITIONAL == 0
                    } else {
                        e.0 != f || en.start_line <= line
                    }
            });
            if let Some(st) = self.visible_in(f, None, true) {
                let macros = self.cands.clone();
                done(self, st, RelType::Expands, roles);
                self.note_invocation(f, r, src, &macros);
                // An alias macro stands for the function it names.
                let alias = macros.iter().find_map(|&m| {
                    let t = self.ix.entity(m).type_name;
                    (!t.is_empty()).then(|| self.ix.sym(m.0, t))
                });
                if let Some(target) = alias
                    && target != name
                    && depth < 4
                {
                    self.call_named(f, r, src, target, depth + 1);
                }
                return;
            }
        }
        // A C library name defined in the repository (`tools/include/nolibc/`'s `printf`)
        // is that definition only where the caller's translation unit declares it, as the
        // kernel's headers declare its own `sprintf`; elsewhere the program links the
        // system's, and the call goes to the `<std>` stub below.
        let system_libc =
            qual.is_empty() && stdlib::is_libc(name) && !self.declared_in_unit(f, name);
        if !system_libc {
            self.collect(name, qual, |s, e| {
                matches!(s.kind(e), NodeKind::Function | NodeKind::Method) && s.ix.is_def(e)
            });
            if let Some(st) = self.visible(f, arity) {
                return done(self, st, RelType::Calls, roles);
            }
        }
        self.collect(name, qual, |s, e| {
            matches!(s.kind(e), NodeKind::Variable | NodeKind::Field) && s.ix.is_def(e)
        });
        if let Some(st) = self.visible(f, None) {
            return done(self, st, RelType::Calls, roles | Roles::DYNAMIC);
        }
        if !self.expansions.hides(name) {
            self.collect(name, "", |s, e| s.kind(e) == NodeKind::Macro);
            if let Some(st) = self.visible(f, None) {
                done(self, st, RelType::Expands, roles);
                let macros = std::mem::take(&mut self.cands);
                self.note_invocation(f, r, src, &macros);
                self.cands = macros;
                return;
            }
        }
        if !stdlib::is_libc(name) {
            self.collect(name, qual, |s, e| {
                matches!(s.kind(e), NodeKind::Function | NodeKind::Method)
            });
            if let Some(st) = self.visible(f, arity) {
                return done(self, st, RelType::Calls, roles);
            }
        }
        let full = if qual.is_empty() {
            name.to_owned()
        } else {
            format!("{qual}::{name}")
        };
        self.unresolved(src, &full, roles, f, line)
    }

    /// Whether a function named `name` is declared or defined in file `f`'s translation
    /// unit (the file and the repository headers it includes).
    fn declared_in_unit(&mut self, f: u32, name: &str) -> bool {
        self.closure.set(self.ix, f);
        self.ix.named(name).any(|e| {
            matches!(self.kind(e), NodeKind::Function | NodeKind::Method)
                && self.closure.contains(e.0)
        })
    }

    /// For a call of a virtual method through a base: edges to every override (Dynamic).
    pub(super) fn virtual_targets(
        &mut self,
        class: &'f str,
        name: &str,
        target: &[Ent],
        src: NodeIdx,
        f: u32,
        line: u32,
    ) {
        let is_virtual = self
            .ix
            .members_named(class, name)
            .any(|e| self.ix.entity(e).flags.contains(NodeFlags::VIRTUAL));
        if !is_virtual
            && !target
                .iter()
                .any(|&e| self.ix.entity(e).flags.contains(NodeFlags::VIRTUAL))
        {
            return;
        }
        for d in self.derived_chain(class).into_iter().skip(1) {
            let mut v: Vec<Ent> = self
                .ix
                .members_named(d, name)
                .filter(|&e| self.kind(e) == NodeKind::Method)
                .collect();
            if v.iter().any(|&e| self.ix.is_def(e)) {
                v.retain(|&e| self.ix.is_def(e));
            }
            for e in v {
                let dst = self.node_of(e);
                self.edge(
                    src,
                    dst,
                    RelType::Calls,
                    Roles::DYNAMIC,
                    Strategy::ReceiverType,
                    f,
                    line,
                );
            }
        }
    }

    pub(super) fn type_ref(&mut self, f: u32, r: &Ref, src: NodeIdx) {
        let facts = &self.files()[f as usize];
        let (name, qual) = (facts.str(r.name), facts.str(r.qual));
        self.collect(name, qual, |s, e| {
            matches!(
                s.kind(e),
                NodeKind::Class
                    | NodeKind::Struct
                    | NodeKind::Union
                    | NodeKind::Enum
                    | NodeKind::Typedef
            )
        });
        if let Some(st) = self.visible(f, None) {
            self.emit_cands(src, RelType::References, Roles::NONE, st, f, r.line);
        }
    }

    pub(super) fn read(&mut self, f: u32, r: &Ref, src: NodeIdx) {
        let read_access = Roles::READ_ACCESS | generated(r);
        let facts = &self.files()[f as usize];
        let (name, qual) = (facts.str(r.name), facts.str(r.qual));
        let cpp = facts.language == Language::Cpp;
        if cpp
            && qual.is_empty()
            && let Some(class) = self.enclosing_class(f, r)
            && self
                .members_named(class, name, &[NodeKind::Field])
                .is_some()
        {
            let st = (Strategy::ScopeQualified, false);
            return self.emit_cands(src, RelType::Reads, read_access, st, f, r.line);
        }
        self.collect(name, qual, |s, e| {
            matches!(
                s.kind(e),
                NodeKind::Variable
                    | NodeKind::Enumerator
                    | NodeKind::Function
                    | NodeKind::Method
                    | NodeKind::Field
            ) && s.ix.is_def(e)
                && (s.kind(e) != NodeKind::Field || s.ix.is_static(e))
        });
        if let Some(st) = self.visible(f, None) {
            return self.emit_value_refs(src, st, f, r.line, read_access);
        }
        self.collect(name, "", |s, e| s.kind(e) == NodeKind::Macro);
        if let Some(st) = self.visible(f, None) {
            return self.emit_cands(src, RelType::Expands, Roles::NONE, st, f, r.line);
        }
        self.collect(name, qual, |s, e| {
            matches!(s.kind(e), NodeKind::Variable | NodeKind::Function)
        });
        if let Some(st) = self.visible(f, None) {
            self.emit_value_refs(src, st, f, r.line, read_access);
        }
    }

    /// READS for variables, REFERENCES for functions (used as values) and enumerators.
    pub(super) fn emit_value_refs(
        &mut self,
        src: NodeIdx,
        st: (Strategy, bool),
        f: u32,
        line: u32,
        access: Roles,
    ) {
        let cands = std::mem::take(&mut self.cands);
        for &e in &cands {
            let rel = match self.kind(e) {
                NodeKind::Variable | NodeKind::Field => {
                    if access == Roles::WRITE_ACCESS {
                        RelType::Writes
                    } else {
                        RelType::Reads
                    }
                }
                _ => RelType::References,
            };
            let mut roles = access;
            if !self.ix.is_def(e) {
                roles |= Roles::DECLARATION;
            }
            if st.1 {
                roles |= Roles::HEURISTIC;
            }
            let dst = self.node_of(e);
            self.edge(src, dst, rel, roles, st.0, f, line);
        }
        self.cands = cands;
    }

    pub(super) fn write(&mut self, f: u32, r: &Ref, src: NodeIdx) {
        let facts = &self.files()[f as usize];
        let name = facts.str(r.name);
        if r.flags & ref_bits::MEMBER != 0 {
            if let Some(ty) = self.receiver_type(f, r) {
                for class in self.find_classes(ty) {
                    if let Some(inherited) = self.members_named(class, name, &[NodeKind::Field]) {
                        let st = if inherited {
                            Strategy::ParentChain
                        } else {
                            Strategy::ReceiverType
                        };
                        return self.emit_cands(
                            src,
                            RelType::Writes,
                            Roles::WRITE_ACCESS,
                            (st, false),
                            f,
                            r.line,
                        );
                    }
                }
            }
            return;
        }
        if facts.language == Language::Cpp
            && let Some(class) = self.enclosing_class(f, r)
            && self
                .members_named(class, name, &[NodeKind::Field])
                .is_some()
        {
            return self.emit_cands(
                src,
                RelType::Writes,
                Roles::WRITE_ACCESS,
                (Strategy::ScopeQualified, false),
                f,
                r.line,
            );
        }
        self.collect(name, "", |s, e| s.kind(e) == NodeKind::Variable);
        if let Some(st) = self.visible(f, None) {
            self.emit_value_refs(src, st, f, r.line, Roles::WRITE_ACCESS);
        }
    }
}

impl Resolver<'_, '_> {
    /// Whether call `r`, written in an argument of a call of the name `r.recv`
    /// ([`Ref::argument`]), is left out by the preprocessor: that name is a macro whose
    /// active definitions visible from file `f` all drop that argument (zstd's
    /// `assert(condition)` defined as `((void)0)` when `DEBUGLEVEL` is 0).
    fn argument_dropped(&mut self, f: u32, r: &Ref) -> bool {
        let within = self.files()[f as usize].str(r.recv);
        self.collect(within, "", |s, e| {
            s.kind(e) == NodeKind::Macro && !s.ix.entity(e).flags.contains(NodeFlags::INACTIVE)
        });
        if self.visible(f, None).is_none() {
            self.cands.clear();
            return false;
        }
        let index = r.argument - 1;
        let dropped = !self.cands.is_empty()
            && self
                .cands
                .iter()
                .all(|&(mf, me)| self.files()[mf as usize].drops_argument(me, index));
        self.cands.clear();
        dropped
    }
}

/// The `Generated` role of a reference that exists only in a macro's expansion
/// ([`ref_bits::GENERATED`]), else none.
fn generated(r: &Ref) -> Roles {
    if r.flags & ref_bits::GENERATED != 0 {
        Roles::GENERATED
    } else {
        Roles::NONE
    }
}
