//! Definitions a file pastes from a header it also includes: the preprocessor skips the
//! copy (its include guard is already defined), so resolution does too.

use std::collections::HashSet;

use super::Resolver;
use super::index::Ent;

impl Resolver<'_, '_> {
    /// Drops from `cands` the definitions of `file` that are a pasted copy of a header the
    /// file also includes: a candidate of `file` inside an include guard `G` goes when
    /// another candidate lies inside a guard `G` of a file that `file` includes, directly
    /// or not, through an `#include` written above the copy's `#ifndef`: the preprocessor
    /// skips the copy once that header has defined `G`. (zstd's legacy decoders paste
    /// `mem.h` under `#ifndef MEM_H_MODULE` after including `error_private.h`, which
    /// includes the real one.)
    pub(super) fn drop_guarded_copies(&mut self, file: u32) {
        let files = self.files();
        // The innermost guard around `e`: its name and the line of its `#ifndef`.
        let guard_of = |e: Ent| -> Option<(&str, u32)> {
            let f = &files[e.0 as usize];
            let line = self.ix.entity(e).start_line;
            f.guards
                .iter()
                .rev()
                .find(|g| g.holds_line(line))
                .map(|g| (f.str(g.name), g.start_line))
        };
        // Most look-ups come from code outside any guard: nothing to allocate for them.
        if !self
            .cands
            .iter()
            .any(|&e| e.0 == file && guard_of(e).is_some())
        {
            return;
        }
        let guards: Vec<Option<(&str, u32)>> = self.cands.iter().map(|&e| guard_of(e)).collect();
        let mut copy = vec![false; self.cands.len()];
        for (i, &e) in self.cands.iter().enumerate() {
            let (true, Some((name, start))) = (e.0 == file, guards[i]) else {
                continue;
            };
            let mut others = self
                .cands
                .iter()
                .zip(&guards)
                .filter(|(o, g)| o.0 != file && g.is_some_and(|g| g.0 == name))
                .map(|(o, _)| o.0)
                .peekable();
            if others.peek().is_some() {
                let reached = self.included_before(file, start);
                copy[i] = others.any(|f| reached.contains(&f));
            }
        }
        let mut kept = copy.iter().map(|c| !c);
        self.cands.retain(|_| kept.next().unwrap_or(true));
    }

    /// The repository files `file` includes, directly or not, through its `#include`s
    /// written before `line`.
    fn included_before(&self, file: u32, line: u32) -> HashSet<u32> {
        let f = &self.files()[file as usize];
        let targets = &self.ix.include_targets[file as usize];
        let mut stack: Vec<u32> = f
            .includes
            .iter()
            .zip(targets)
            .filter(|(inc, _)| inc.line < line)
            .filter_map(|(_, &t)| t)
            .collect();
        let mut seen: HashSet<u32> = stack.iter().copied().collect();
        while let Some(t) = stack.pop() {
            for &u in &self.ix.includes[t as usize] {
                if seen.insert(u) {
                    stack.push(u);
                }
            }
        }
        seen
    }
}
