//! Who can see a changed instance field (rules 1F and 4F of `scope::affected`).
//!
//! An instance field is never looked up by its name alone: the resolver's name table
//! leaves instance fields out, and a field is found only as a member of a class that a
//! lookup already holds (`members_named` over the class chain). The class comes from the
//! receiver's declared type as the referring file writes it (a local or a parameter), from
//! a global variable the file names as the receiver, from the enclosing method's class, or
//! from one typedef in between. So a field added to, removed from or moved within class
//! `Q` can change only the files that already reach one of its fields of that name (their
//! edges), and the files that mention both the field's name and a name through which `Q`
//! can become a receiver's class: `Q`'s own simple name, the classes deriving from it,
//! the typedefs naming one of those, and the global variables and method-class fields
//! declared with one of those. Keying the field by name alone instead made a changed
//! `flags` field of one driver's struct re-resolve every file with an edge into any of
//! the kernel's fields called `flags` (5,220 files).
//!
//! Only fields whose type no lookup reads are routed here (`typeless_field` in
//! `scope::affected`); fields of classes with methods keep the name rules.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use batho_schema::{NodeKind, RelType};
use batho_storage::Artifact;
use batho_storage::input::NodeIdx;

use super::scope::{Inputs, last_comp};
use crate::extract::FileFacts;
use crate::facts_cache::{self, filter_may_hold};
use crate::resolve::scope_of;

/// Changed instance fields: class qualified name → the changed fields' simple names.
pub(super) type FieldChanges = BTreeMap<String, BTreeSet<String>>;

/// Adds to `out` every file whose resolution a change of the fields in `changes` can
/// alter (see the module docs). `method_classes` are the classes whose fields' types a
/// lookup reads (for receivers named inside their methods).
pub(super) fn affected(
    inputs: Inputs<'_>,
    changes: &FieldChanges,
    method_classes: &HashSet<String>,
    skip: &dyn Fn(&str) -> bool,
    out: &mut BTreeSet<String>,
) {
    let Inputs {
        base,
        facts,
        indexed,
        cache,
        ..
    } = inputs;
    if changes.is_empty() {
        return;
    }
    // Rule 1F: the files with an edge into a field of that class and name.
    for (class, names) in changes {
        for name in names {
            for n in base.lookup_name(name) {
                let node = base.node(n);
                if node.kind() != NodeKind::Field || scope_of(&node.qualified_name()) != class {
                    continue;
                }
                for e in base.in_edges(n) {
                    out.insert(base.node(base.edge_src(e.idx())).file().into_owned());
                }
            }
        }
    }

    // Rule 4F: the files mentioning a changed field's name and a way to its class.
    let classes: Vec<&str> = changes.keys().map(|c| last_comp(c)).collect();
    let ways = receiver_names(base, facts, method_classes, &classes);
    let probes: Vec<(Vec<u64>, Vec<u64>)> = changes
        .values()
        .zip(&ways)
        .map(|(names, ways)| {
            let hashes =
                |s: &BTreeSet<String>| s.iter().map(|n| facts_cache::name_hash(n)).collect();
            (hashes(names), hashes(ways))
        })
        .collect();
    for (p, (_, _, hash)) in &indexed.files {
        if out.contains(p) || skip(p) {
            continue;
        }
        let hit = match cache.filter(p, hash) {
            // A file the cache cannot answer for is assumed to mention everything.
            None => true,
            Some(filter) => probes.iter().any(|(fields, ways)| {
                fields.iter().any(|&h| filter_may_hold(filter, h))
                    && ways.iter().any(|&h| filter_may_hold(filter, h))
            }),
        };
        if hit {
            out.insert(p.clone());
        }
    }
}

/// The identifier words of a declaration's text.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// For each class of `classes` (simple names), the names through which it can be a
/// receiver's class: itself, the classes deriving from it, the typedefs whose text names
/// one of those (to a fixed point, more than the one typedef a lookup follows), and the
/// global variables and method-class fields whose declaration names any of them. The
/// changed files' own declarations count too: the base may not have their text yet.
fn receiver_names(
    base: &Artifact,
    facts: &HashMap<String, FileFacts>,
    method_classes: &HashSet<String>,
    classes: &[&str],
) -> Vec<BTreeSet<String>> {
    let changed = || {
        facts
            .values()
            .flat_map(|f| f.entities.iter().map(move |e| (f, e)))
    };
    // Word of a typedef's text → the typedefs so declared.
    let mut typedefs: HashMap<String, Vec<String>> = HashMap::new();
    let mut add_typedef = |text: &str, name: &str| {
        for w in words(text).filter(|w| *w != name) {
            typedefs
                .entry(w.to_owned())
                .or_default()
                .push(name.to_owned());
        }
    };
    for n in base.nodes_of_kind(NodeKind::Typedef).iter() {
        let node = base.node(NodeIdx(n));
        add_typedef(&node.signature(), &node.name());
    }
    for (f, e) in changed().filter(|(_, e)| e.kind == NodeKind::Typedef) {
        add_typedef(f.str(e.signature), f.str(e.name));
        add_typedef(f.str(e.type_name), f.str(e.name));
    }
    let types: Vec<BTreeSet<String>> = classes
        .iter()
        .map(|class| {
            let mut types: BTreeSet<String> = BTreeSet::new();
            let mut queue: Vec<String> = vec![(*class).to_owned()];
            while let Some(t) = queue.pop() {
                if types.contains(&t) {
                    continue;
                }
                queue.extend(derived(base, facts, &t));
                queue.extend(typedefs.get(&t).into_iter().flatten().cloned());
                types.insert(t);
            }
            types
        })
        .collect();

    // Type name → the variables and method-class fields declared with it.
    let all: HashSet<&str> = types.iter().flatten().map(String::as_str).collect();
    let mut holders: HashMap<&str, Vec<String>> = HashMap::new();
    let mut add_holder = |text: &str, name: &str| {
        for w in words(text) {
            if let Some(t) = all.get(w) {
                holders.entry(t).or_default().push(name.to_owned());
            }
        }
    };
    let is_method_field = |k: NodeKind, qual: &str| {
        k == NodeKind::Field && method_classes.contains(last_comp(scope_of(qual)))
    };
    let kinds: &[NodeKind] = if method_classes.is_empty() {
        &[NodeKind::Variable]
    } else {
        &[NodeKind::Variable, NodeKind::Field]
    };
    for &kind in kinds {
        for n in base.nodes_of_kind(kind).iter() {
            let node = base.node(NodeIdx(n));
            if kind == NodeKind::Variable || is_method_field(kind, &node.qualified_name()) {
                add_holder(&node.signature(), &node.name());
            }
        }
    }
    for (f, e) in changed() {
        if e.kind == NodeKind::Variable || is_method_field(e.kind, f.str(e.qual)) {
            add_holder(f.str(e.signature), f.str(e.name));
            add_holder(f.str(e.type_name), f.str(e.name));
        }
    }
    types
        .iter()
        .map(|types| {
            let mut out = types.clone();
            for t in types {
                out.extend(holders.get(t.as_str()).into_iter().flatten().cloned());
            }
            out
        })
        .collect()
}

/// Simple names of the classes deriving directly from a class named `class`, in the base
/// or in the changed files.
fn derived(base: &Artifact, facts: &HashMap<String, FileFacts>, class: &str) -> Vec<String> {
    let mut out = Vec::new();
    for n in base.lookup_name(class) {
        if !matches!(
            base.node(n).kind(),
            NodeKind::Class | NodeKind::Struct | NodeKind::Union
        ) {
            continue;
        }
        for e in base.in_edges(n) {
            if e.rel() == RelType::Inherits {
                out.push(base.node(base.edge_src(e.idx())).name().into_owned());
            }
        }
    }
    for f in facts.values() {
        for b in &f.bases {
            if last_comp(f.str(b.name)) == class {
                out.push(f.str(f.entities[b.entity as usize].name).to_owned());
            }
        }
    }
    out
}
