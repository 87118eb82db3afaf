//! Pattern building: node and relationship patterns, labels, variable-length ranges.

use batho_grammar::{Pair, Rule};

use super::{Builder, ParseErrorKind, ParseResult, span};
use crate::ast::*;

impl<'t> Builder<'t> {
    pub(super) fn pattern(&self, p: Pair<'t, Rule>) -> ParseResult<Vec<PatternPart>> {
        p.into_inner().map(|c| self.pattern_part(c)).collect()
    }

    pub(super) fn pattern_part(&self, p: Pair<'t, Rule>) -> ParseResult<PatternPart> {
        let sp = span(&p);
        let mut variable = None;
        let mut search = PathSearch::All;
        let mut element = None;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::variable => variable = Some(self.ident(c)?),
                Rule::pattern_element => element = Some(self.pattern_element(c)?),
                Rule::shortest_path => {
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::ALL_SHORTEST_PATHS => search = PathSearch::AllShortest,
                            Rule::SHORTEST_PATH => search = PathSearch::Shortest,
                            Rule::pattern_element => element = Some(self.pattern_element(x)?),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        let element = element.ok_or_else(|| self.internal(sp))?;
        if search != PathSearch::All && element.chain.len() != 1 {
            return Err(self.error(
                ParseErrorKind::Syntax,
                element.span,
                "shortestPath needs exactly one relationship pattern between two nodes",
                Some("write `shortestPath((a)-[:TYPE*..5]->(b))`".into()),
            ));
        }
        Ok(PatternPart {
            variable,
            search,
            element,
            span: sp,
        })
    }

    pub(super) fn pattern_element(&self, p: Pair<'t, Rule>) -> ParseResult<PatternElement> {
        let sp = span(&p);
        let mut inner = p.into_inner().peekable();
        // A parenthesised element: `((a)-->(b))`. Nesting is bounded by the pre-scan.
        if inner
            .peek()
            .is_some_and(|c| c.as_rule() == Rule::pattern_element)
        {
            let nested = inner.next().ok_or_else(|| self.internal(sp))?;
            return self.pattern_element(nested);
        }
        let start = match inner.next() {
            Some(n) => self.node_pattern(n)?,
            None => return Err(self.internal(sp)),
        };
        let mut chain = Vec::new();
        while let (Some(r), Some(n)) = (inner.next(), inner.next()) {
            chain.push((self.rel_pattern(r)?, self.node_pattern(n)?));
        }
        Ok(PatternElement {
            start,
            chain,
            span: sp,
        })
    }

    pub(super) fn node_pattern(&self, p: Pair<'t, Rule>) -> ParseResult<NodePattern> {
        let mut node = NodePattern {
            variable: None,
            labels: Vec::new(),
            label_mode: LabelMode::All,
            properties: None,
            span: span(&p),
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::variable => node.variable = Some(self.ident(c)?),
                Rule::node_labels => (node.labels, node.label_mode) = self.labels(c)?,
                Rule::properties => node.properties = Some(self.properties(c)?),
                _ => {}
            }
        }
        Ok(node)
    }

    pub(super) fn labels(&self, p: Pair<'t, Rule>) -> ParseResult<(Vec<Ident>, LabelMode)> {
        let sp = span(&p);
        let which = p.into_inner().next().ok_or_else(|| self.internal(sp))?;
        let mode = if which.as_rule() == Rule::label_any {
            LabelMode::Any
        } else {
            LabelMode::All
        };
        let labels = which
            .into_inner()
            .map(|n| self.ident(n))
            .collect::<ParseResult<Vec<_>>>()?;
        Ok((labels, mode))
    }

    pub(super) fn properties(&self, p: Pair<'t, Rule>) -> ParseResult<Expr> {
        let sp = span(&p);
        let inner = p.into_inner().next().ok_or_else(|| self.internal(sp))?;
        Ok(self.expr_at(inner, 0)?.0)
    }

    pub(super) fn rel_pattern(&self, p: Pair<'t, Rule>) -> ParseResult<RelPattern> {
        let sp = span(&p);
        let mut left = false;
        let mut right = false;
        let mut rel = RelPattern {
            variable: None,
            types: Vec::new(),
            direction: Direction::Both,
            length: None,
            properties: None,
            span: sp,
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::left_arrow => left = true,
                Rule::right_arrow => right = true,
                Rule::rel_detail => {
                    for d in c.into_inner() {
                        match d.as_rule() {
                            Rule::variable => rel.variable = Some(self.ident(d)?),
                            Rule::rel_types => {
                                rel.types = d
                                    .into_inner()
                                    .map(|n| self.ident(n))
                                    .collect::<ParseResult<_>>()?;
                            }
                            Rule::range => rel.length = Some(self.range(d)?),
                            Rule::properties => rel.properties = Some(self.properties(d)?),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        rel.direction = match (left, right) {
            (false, true) => Direction::Outgoing,
            (true, false) => Direction::Incoming,
            _ => Direction::Both,
        };
        Ok(rel)
    }

    pub(super) fn range(&self, p: Pair<'t, Rule>) -> ParseResult<VarLength> {
        let sp = span(&p);
        let mut len = VarLength {
            min: None,
            max: None,
        };
        for c in p.into_inner() {
            let n = || self.hop_count(&c);
            match c.as_rule() {
                Rule::range_min => len.min = Some(n()?),
                Rule::range_max => len.max = Some(n()?),
                Rule::range_exact => {
                    let v = n()?;
                    len = VarLength {
                        min: Some(v),
                        max: Some(v),
                    };
                }
                _ => {}
            }
        }
        if let (Some(a), Some(b)) = (len.min, len.max)
            && a > b
        {
            return Err(self.error(
                ParseErrorKind::InvalidLiteral,
                sp,
                format!("empty length range: minimum {a} is greater than maximum {b}"),
                Some(format!("write `*{b}..{a}`")),
            ));
        }
        if len.max.is_none() && len.min.is_some_and(|m| m > DEFAULT_MAX_HOPS) {
            return Err(self.error(
                ParseErrorKind::InvalidLiteral,
                sp,
                format!("a length range without a maximum is capped at {DEFAULT_MAX_HOPS} hops"),
                Some("give an explicit maximum, e.g. `*20..30`".into()),
            ));
        }
        Ok(len)
    }

    pub(super) fn hop_count(&self, p: &Pair<'t, Rule>) -> ParseResult<u32> {
        let sp = span(p);
        match p.as_str().parse::<u32>() {
            Ok(v) if v <= MAX_HOPS_LIMIT => Ok(v),
            _ => Err(self.error(
                ParseErrorKind::InvalidLiteral,
                sp,
                format!(
                    "path length {} is larger than the limit of {MAX_HOPS_LIMIT}",
                    p.as_str()
                ),
                None,
            )),
        }
    }
}
