//! The ctx-tree vocabulary (`../shared/seeds/ctx-tree-mcp-tools.txt`): node kinds, edge
//! kinds and node statuses, each spelled once. Nodes are stored with the label
//! [`NODE_LABEL`] and these names in their `kind` and `status` properties; edges use the
//! edge kind names as relationship types.

/// The label every session graph node carries.
pub const NODE_LABEL: &str = "Ctx";
/// The second label of session roots: walks pass around them (every top-level node hangs
/// from its root, so two hops through one reach the whole session).
pub const SESSION_LABEL: &str = "CtxSession";
/// The label of the code entities (functions, types, macros… of the project's Batho code
/// graph, by their code-graph id) that chunks define: `references` edges run from a chunk
/// to the entities it defines and between entities that call or reference each other.
/// They carry no `kind`, so listings leave them out; walks pass through them.
pub const ENTITY_LABEL: &str = "CtxEntity";

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident { $($(#[$variant_doc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$variant_doc])* $variant,)*
        }

        impl $name {
            /// Every value, in the seed's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The seed's spelling.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// The value spelled `name` (exactly as the seed spells it).
            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|value| value.name() == name)
            }

            /// Every spelling, comma-separated, for error messages.
            pub fn spellings() -> String {
                $name::ALL.iter().map(|value| value.name()).collect::<Vec<_>>().join(", ")
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(self.name())
            }
        }
    };
}

vocabulary!(
    /// What a node holds.
    NodeKind {
        /// The root of one server session.
        Session = "session",
        /// A file read (the parent, without text) or one chunk of it.
        FileChunk = "file_chunk",
        /// A command's output or a search hit.
        ToolOutput = "tool_output",
        /// A summary of other nodes.
        Summary = "summary",
        /// A note the agent stored.
        Note = "note",
        /// An observation.
        Observation = "observation",
        /// A fetched web page.
        WebChunk = "web_chunk",
        /// A prompt.
        Prompt = "prompt",
        /// Reasoning.
        Thinking = "thinking",
        /// A response.
        Response = "response",
    }
);

vocabulary!(
    /// How two nodes relate.
    EdgeKind {
        /// Child to parent: a chunk to its file read, a top-level node to its session.
        DerivedFrom = "derived_from",
        /// A node to what it mentions.
        References = "references",
        /// A summary to what it summarises.
        Summarizes = "summarizes",
        /// A newer read of a file to the read it replaces.
        Supersedes = "supersedes",
        /// A session's nodes in the order they were made (the root to the first).
        Follows = "follows",
    }
);

vocabulary!(
    /// Where a node is in its life.
    NodeStatus {
        /// Being made.
        Pending = "pending",
        /// Current.
        Live = "live",
        /// The file it was read from changed on disk since.
        Stale = "stale",
        /// A newer read replaced it.
        Superseded = "superseded",
        /// Pruned: kept as a record, left out of answers unless asked for.
        Pruned = "pruned",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_the_seed() {
        for kind in NodeKind::ALL {
            assert_eq!(NodeKind::from_name(kind.name()), Some(*kind));
        }
        assert_eq!(
            NodeKind::spellings(),
            "session, file_chunk, tool_output, summary, note, observation, web_chunk, prompt, thinking, response"
        );
        assert_eq!(
            EdgeKind::spellings(),
            "derived_from, references, summarizes, supersedes, follows"
        );
        assert_eq!(
            NodeStatus::spellings(),
            "pending, live, stale, superseded, pruned"
        );
        assert_eq!(NodeStatus::from_name("Live"), None);
    }
}
