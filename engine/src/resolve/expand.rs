//! Calls made through macros: a function that invokes `luaC_checkGC(L)` calls `luaC_step`,
//! because the macro's body calls `luaC_condGC`, a macro whose body calls `luaC_step`.
//! Each such call becomes a CALLS edge from the invoking function, with the role
//! `Generated` and the line of the function's first invocation of the macro, beside the
//! EXPANDS edge to the macro.
//!
//! What a macro's expansion calls is read from the call shapes written in its body
//! ([`crate::extract::MacroCall`]), each resolved as the body's own calls are (in the
//! macro's file and translation unit), followed through the macros they name, as the
//! preprocessor rescans an expansion:
//! - a name being expanded is not a macro again (the C hide set: `#define f(x) f(x, 0)`
//!   calls the function `f`), and the walk stops at [`MAX_EXPANSION_DEPTH`] macros deep;
//! - a macro with several definitions (`#ifdef` alternatives the resolver cannot choose
//!   between) generates only the calls that every definition makes: Lua's
//!   `condchangemem` calls `luaC_fullgc` only under `HARDMEMTESTS`;
//! - a call written in the argument of a macro that drops that argument (zstd's
//!   `RAWLOG(3, "…", ERR_getErrorName(e))` with `#define RAWLOG(l, ...) do { } while (0)`)
//!   is not made; when one definition of such a macro drops it, it is not made;
//! - only calls of repository entities count (a libc or unresolved name makes no edge);
//! - a call the function also writes itself keeps its direct edge only.
//!
//! Calls whose callee is a macro parameter or a pasted name (`f(x)` with `f` a parameter,
//! `prefix##name(`) need the invocation's arguments: extraction expands the invocations
//! of a file's own macros and writes such calls as references
//! (`extract::expansion::calls`); those through macros of other files are not seen.
//!
//! An expansion's calls depend only on the macro, so each resolver keeps them by macro;
//! an answer that a cycle or the depth bound cut short depends on where the walk began
//! and is not kept, so the graph does not depend on which thread met a macro first.

use std::collections::HashMap;
use std::sync::Arc;

use batho_schema::{NodeKind, RelType, Roles, Strategy};
use batho_storage::input::NodeIdx;

use super::Resolver;
use super::index::Ent;
use crate::extract::{NO_ENTITY, Ref, RefKind, Sym};

/// How many macros deep an expansion is followed.
const MAX_EXPANSION_DEPTH: u32 = 16;
/// The most calls one macro's expansion generates (the first by entity, the rest
/// dropped): a bound on the edges one invocation can add.
const MAX_GENERATED_CALLS: usize = 256;

/// A call that an expansion of a macro makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct GeneratedCall {
    target: Ent,
    roles: Roles,
    strategy: Strategy,
}

/// A resolution recorded instead of emitted while a macro body is resolved.
#[derive(Clone, Copy, Debug)]
pub(super) struct Captured {
    target: Ent,
    rel: RelType,
    roles: Roles,
    strategy: Strategy,
}

/// A macro invocation of the current file, expanded once its written calls are emitted.
pub(super) struct Invocation {
    src: NodeIdx,
    macros: Vec<Ent>,
    line: u32,
}

/// The expansion state of one resolver.
#[derive(Default)]
pub(super) struct Expansions {
    /// While a macro body is resolved: what its calls resolve to.
    capture: Option<Vec<Captured>>,
    /// Names of the macros being expanded, outermost first.
    hidden: Vec<String>,
    /// Set when a name was not expanded because an enclosing expansion hides it.
    met_outer_hidden: bool,
    /// Calls each macro's expansion makes, for the macros whose answer is context-free.
    memo: HashMap<Ent, Arc<[GeneratedCall]>>,
    /// The current file's invocations.
    pending: Vec<Invocation>,
}

impl Expansions {
    /// Whether `name` is hidden from macro look-up (it is being expanded); notes when the
    /// answer depends on an outer expansion.
    pub(super) fn hides(&mut self, name: &str) -> bool {
        let Some(position) = self.hidden.iter().rposition(|h| h == name) else {
            return false;
        };
        if position + 1 != self.hidden.len() {
            self.met_outer_hidden = true;
        }
        true
    }

    /// Whether resolutions are being recorded rather than emitted.
    pub(super) fn capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// Records a resolution to `target` while a macro body is resolved; false outside
    /// one (the caller emits the edge).
    pub(super) fn capture(
        &mut self,
        target: Ent,
        rel: RelType,
        roles: Roles,
        strategy: Strategy,
    ) -> bool {
        let Some(captured) = self.capture.as_mut() else {
            return false;
        };
        captured.push(Captured {
            target,
            rel,
            roles,
            strategy,
        });
        true
    }
}

impl<'f> Resolver<'_, 'f> {
    /// Queues the expansion of `macros` (the definitions a call of file `f` resolved to)
    /// when the call is made in a function or method.
    pub(super) fn note_invocation(&mut self, f: u32, r: &Ref, src: NodeIdx, macros: &[Ent]) {
        if self.expansions.capturing() || r.enclosing == NO_ENTITY {
            return;
        }
        if !matches!(
            self.kind((f, r.enclosing)),
            NodeKind::Function | NodeKind::Method
        ) {
            return;
        }
        self.expansions.pending.push(Invocation {
            src,
            macros: macros.to_vec(),
            line: r.line,
        });
    }

    /// Emits the calls of the current file's queued invocations (after its written calls,
    /// so that a call written directly keeps its own edge).
    pub(super) fn emit_invocations(&mut self, f: u32) {
        let mut pending = std::mem::take(&mut self.expansions.pending);
        for invocation in &pending {
            let (calls, _) = self.calls_of_alternatives(&invocation.macros, 0);
            for call in calls.iter() {
                let dst = self.node_of(call.target);
                let roles = call.roles | Roles::GENERATED;
                self.edge(
                    invocation.src,
                    dst,
                    RelType::Calls,
                    roles,
                    call.strategy,
                    f,
                    invocation.line,
                );
            }
        }
        // The emptied list keeps its capacity for the next file.
        pending.clear();
        self.expansions.pending = pending;
    }

    /// The calls an invocation of one of `macros` makes: those of the only definition, or
    /// those every definition makes. The flag: whether the answer depends on the
    /// expansions around it.
    fn calls_of_alternatives(
        &mut self,
        macros: &[Ent],
        depth: u32,
    ) -> (Arc<[GeneratedCall]>, bool) {
        let macros: Vec<Ent> = macros
            .iter()
            .copied()
            .filter(|&m| self.kind(m) == NodeKind::Macro)
            .collect();
        let mut macros = macros.into_iter();
        let Some(first) = macros.next() else {
            return (Arc::from([]), false);
        };
        let (mut calls, mut dependent) = self.calls_of_macro(first, depth);
        for other in macros {
            let (more, other_dependent) = self.calls_of_macro(other, depth);
            dependent |= other_dependent;
            let kept: Vec<GeneratedCall> = calls
                .iter()
                .filter(|call| more.iter().any(|m| m.target == call.target))
                .copied()
                .collect();
            calls = Arc::from(kept);
        }
        (calls, dependent)
    }

    /// The calls an expansion of macro `m` makes (see the module documentation).
    fn calls_of_macro(&mut self, m: Ent, depth: u32) -> (Arc<[GeneratedCall]>, bool) {
        if let Some(known) = self.expansions.memo.get(&m) {
            return (known.clone(), false);
        }
        if depth >= MAX_EXPANSION_DEPTH {
            return (Arc::from([]), true);
        }
        let facts = &self.files()[m.0 as usize];
        let name = facts.str(self.ix.entity(m).name);
        self.expansions.hidden.push(name.to_owned());
        let mut calls: Vec<GeneratedCall> = Vec::new();
        let mut dependent = false;
        for body_call in facts.macro_calls_of(m.1) {
            if !body_call.within.is_empty() {
                let (around, outer) = self.capture_call(m, body_call.within);
                dependent |= outer;
                let dropped = around.iter().any(|c| {
                    c.rel == RelType::Expands
                        && self.kind(c.target) == NodeKind::Macro
                        && self.files()[c.target.0 as usize]
                            .drops_argument(c.target.1, body_call.argument)
                });
                if dropped {
                    continue;
                }
            }
            let (captured, outer) = self.capture_call(m, body_call.name);
            dependent |= outer;
            let nested: Vec<Ent> = captured
                .iter()
                .filter(|c| c.rel == RelType::Expands)
                .map(|c| c.target)
                .collect();
            calls.extend(
                captured
                    .iter()
                    .filter(|c| c.rel == RelType::Calls)
                    .map(|c| GeneratedCall {
                        target: c.target,
                        roles: c.roles,
                        strategy: c.strategy,
                    }),
            );
            if !nested.is_empty() {
                let (more, more_dependent) = self.calls_of_alternatives(&nested, depth + 1);
                dependent |= more_dependent;
                calls.extend(more.iter().copied());
            }
        }
        self.expansions.hidden.pop();
        calls.sort_by_key(|call| call.target);
        calls.dedup_by_key(|call| call.target);
        calls.truncate(MAX_GENERATED_CALLS);
        let calls: Arc<[GeneratedCall]> = Arc::from(calls);
        if !dependent {
            self.expansions.memo.insert(m, calls.clone());
        }
        (calls, dependent)
    }

    /// Resolves `name`, called in the body of macro `m`, as the body's own calls are, and
    /// returns what it resolved to instead of emitting edges. The flag: whether a name
    /// hidden by an enclosing expansion was met.
    fn capture_call(&mut self, m: Ent, name: Sym) -> (Vec<Captured>, bool) {
        let facts = &self.files()[m.0 as usize];
        let entity = self.ix.entity(m);
        let call = Ref {
            kind: RefKind::Call,
            flags: 0,
            arity: 0,
            enclosing: m.1,
            name,
            qual: Sym::EMPTY,
            recv: Sym::EMPTY,
            argument: 0,
            line: entity.start_line,
        };
        let saved_stats = self.stats.clone();
        let saved_outer = std::mem::take(&mut self.expansions.met_outer_hidden);
        let saved_capture = self.expansions.capture.replace(Vec::new());
        let src = self.node_of(m);
        self.call_named(m.0, &call, src, facts.str(name), 0);
        let captured = std::mem::replace(&mut self.expansions.capture, saved_capture);
        let outer = std::mem::replace(&mut self.expansions.met_outer_hidden, saved_outer);
        self.stats = saved_stats;
        (captured.unwrap_or_default(), outer)
    }
}
