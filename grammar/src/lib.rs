//! Grammars Batho reads with: the pest grammar of BQL (`src/bql.pest`).
//!
//! This crate only recognises text; it builds no AST and knows nothing of the schema. The
//! typed AST, diagnostics with suggestions, semantic checks and plans live in `batho-lang`,
//! which walks the pest pairs produced by [`BqlParser`].

#![warn(missing_docs)]

use pest::Parser as _;
pub use pest::iterators::{Pair, Pairs};

mod generated {
    // pest_derive generates the `Rule` enum (one variant per grammar rule) without docs.
    #![allow(missing_docs)]

    /// The derived pest parser for BQL. Start at [`Rule::statements`] for a whole script.
    #[derive(pest_derive::Parser)]
    #[grammar = "bql.pest"]
    pub struct BqlParser;
}

pub use generated::{BqlParser, Rule};

/// A pest syntax error, boxed because `pest::error::Error` is large.
pub type GrammarError = Box<pest::error::Error<Rule>>;

/// Parses `text` from `rule`, boxing the (large) pest error.
pub fn parse_rule(rule: Rule, text: &str) -> Result<Pairs<'_, Rule>, GrammarError> {
    BqlParser::parse(rule, text).map_err(Box::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) {
        if let Err(e) = parse_rule(Rule::statements, text) {
            panic!("{text}\n{e}");
        }
    }

    fn bad(text: &str) {
        assert!(
            parse_rule(Rule::statements, text).is_err(),
            "accepted: {text}"
        );
    }

    #[test]
    fn accepts_the_brief_examples() {
        ok("MATCH (c)-[r:CALLS]->(f:Function {name: 'validate_token'})
            WHERE r.confidence >= 0.85 AND has_role(r, 'ReadAccess') = false
            RETURN c.id, c.file, r.line ORDER BY c.file LIMIT 50");
        ok("MATCH p = shortestPath((a {id: $src})-[:CALLS|INCLUDES*..5]->(b {id: $dst})) RETURN p");
        ok("MATCH (n)-[r]->(m) WHERE n.file = $file AND m.file <> $file
            RETURN m.file, type(r), count(*) AS n, max(r.confidence) ORDER BY n DESC");
        ok(
            "CALL algo.pagerank() YIELD node, score RETURN node.file, sum(score) AS rank ORDER BY rank DESC",
        );
        ok("EXPLAIN MATCH (f:Function)<-[:CALLS*1..3]-(g) RETURN DISTINCT g.id");
    }

    #[test]
    fn lexical_details() {
        ok("match (n) /* block */ return n // trailing");
        ok("MATCH (`weird name`:`CALLS`) RETURN `weird name`");
        ok("RETURN 'it\\'s', \"dq \\\"x\\\"\", 1.5e3, .5, 0x1F, -3, true, null");
        ok("RETURN 1; RETURN 2;;");
        ok("MATCH (a)-[*]->(b), (a)-[*2]-(c), (a)<-[*..3]-(d), (a)-[*1..]->(e) RETURN a");
        ok("RETURN [1, 2][0..1], [1,2][..1], [1,2][1..]");
        bad("MATCH (n RETURN n");
        bad("RETURN 'unclosed");
        ok("RETURN [x IN [1] WHERE x > 0 | x], any(y IN [1] WHERE y = 1)");
        ok("RETURN CASE WHEN true THEN 1 ELSE 2 END, CASE 1 WHEN 1 THEN 'a' END");
        bad("RETURN [x IN | x]");
        bad("RETURN CASE ELSE 1 END");
        ok("RETURN 1 < 2 <= 3, 0o17");
        bad("RETURN 1 < < 3");
        bad("RETURN 0o8");
        bad("MATCH (match) RETURN match");
    }

    #[test]
    fn time_travel_prefix() {
        ok("AT GENERATION 3 MATCH (n) RETURN n");
        ok("at run '6c1e' MATCH (n) RETURN n");
        ok("EXPLAIN AT GENERATION 3 MATCH (n) RETURN n");
        ok("PROFILE AT RUN \"6c1e\" CALL db.labels()");
        // Not reserved: usable as names.
        ok("MATCH (at)-[run]->(generation) RETURN at, run, generation");
        bad("AT GENERATION MATCH (n) RETURN n");
        bad("AT RUN 3 MATCH (n) RETURN n");
        bad("AT GENERATION 3 EXPLAIN MATCH (n) RETURN n");
        bad("MATCH (n) AT GENERATION 3 RETURN n");
        bad("AT GENERATION 3");
    }
}
