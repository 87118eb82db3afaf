//! Text to AST: [`parse`] runs a lexical pre-scan, the pest grammar of `batho-grammar`, and
//! a builder that turns pest pairs into the typed [`crate::ast`] while checking what the
//! grammar leaves loose (clause order, literal ranges, nesting depth).
//!
//! Invariant: no input makes [`parse`] panic or overflow the stack. Bracket nesting is
//! bounded by the pre-scan, operator chains by the builder's depth accounting, and the
//! input size by [`MAX_INPUT_BYTES`].

mod errors;
mod prescan;

use batho_grammar::{Pair, Rule};

use crate::ast::*;
use crate::diag::Diagnostic;

pub use errors::{KEYWORDS, STATEMENT_PREFIX_WORDS};

/// Largest accepted query text.
pub const MAX_INPUT_BYTES: usize = 1 << 20;
/// Deepest accepted bracket nesting.
pub const MAX_NESTING: usize = 256;
/// Deepest accepted expression tree (brackets, operator chains and prefixes together).
pub const MAX_EXPR_DEPTH: usize = 256;

/// What went wrong, for programs; the [`Diagnostic`] is for people.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The text does not follow the grammar.
    Syntax,
    /// A string literal or backticked name is not closed.
    UnclosedString,
    /// A `/*` comment is not closed.
    UnclosedComment,
    /// A bracket is not closed, or closed by the wrong kind.
    UnbalancedBracket,
    /// Nesting deeper than [`MAX_NESTING`] / [`MAX_EXPR_DEPTH`].
    TooDeep,
    /// Input longer than [`MAX_INPUT_BYTES`].
    TooLarge,
    /// A number out of range, a bad escape, an empty name.
    InvalidLiteral,
    /// Clauses in an order that makes no query (no RETURN, RETURN in the middle, ...).
    Structure,
}

/// A syntax error with its location, the offending line, a caret and maybe a suggestion.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{diagnostic}")]
pub struct ParseError {
    /// The category.
    pub kind: ParseErrorKind,
    /// Location, message and suggestion.
    pub diagnostic: Diagnostic,
}

/// Stack the parser wants available: pest and the builder recurse once per bracket level,
/// and debug builds use large frames. If less remains, the parse runs on a fresh segment.
const STACK_RED_ZONE: usize = 6 << 20;
const STACK_SEGMENT: usize = 16 << 20;

/// Parses a script of `;`-separated statements. Empty text (or only comments) yields none.
pub fn parse(text: &str) -> Result<Vec<Statement>, ParseError> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || parse_inner(text))
}

fn parse_inner(text: &str) -> Result<Vec<Statement>, ParseError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(ParseError {
            kind: ParseErrorKind::TooLarge,
            diagnostic: Diagnostic::new(
                text,
                Span::new(MAX_INPUT_BYTES, MAX_INPUT_BYTES + 1),
                format!(
                    "query text is {} bytes; the limit is {MAX_INPUT_BYTES}",
                    text.len()
                ),
                Some("pass large values as parameters instead of literals".into()),
            ),
        });
    }
    if let Err(e) = prescan::prescan(text) {
        return Err(ParseError {
            kind: e.kind,
            diagnostic: Diagnostic::new(text, e.span, e.message, e.suggestion),
        });
    }
    let pairs = batho_grammar::parse_rule(Rule::statements, text)
        .map_err(|e| errors::from_pest(text, &e))?;
    let b = Builder { text };
    let mut out = Vec::new();
    for p in pairs.flat_map(|p| p.into_inner()) {
        if p.as_rule() == Rule::statement {
            out.push(b.statement(p)?);
        }
    }
    Ok(out)
}

/// Parses text that must hold exactly one statement.
pub fn parse_statement(text: &str) -> Result<Statement, ParseError> {
    let mut v = parse(text)?;
    match v.len() {
        1 => Ok(v.remove(0)),
        n => Err(ParseError {
            kind: ParseErrorKind::Structure,
            diagnostic: Diagnostic::new(
                text,
                Span::new(0, text.len()),
                format!("expected exactly one statement, found {n}"),
                None,
            ),
        }),
    }
}

/// A pair's span without the whitespace pest may leave at its end.
fn span(p: &Pair<'_, Rule>) -> Span {
    let start = p.as_span().start();
    Span::new(start, start + p.as_str().trim_end().len())
}

type ParseResult<T> = Result<T, ParseError>;

/// An expression with the depth of its tree, so chains can be bounded as they are folded.
type Built = (Expr, usize);

struct Builder<'t> {
    text: &'t str,
}

impl<'t> Builder<'t> {
    fn error(
        &self,
        kind: ParseErrorKind,
        span: Span,
        msg: impl Into<String>,
        hint: Option<String>,
    ) -> ParseError {
        ParseError {
            kind,
            diagnostic: Diagnostic::new(self.text, span, msg, hint),
        }
    }

    fn statement(&self, p: Pair<'t, Rule>) -> ParseResult<Statement> {
        let sp = span(&p);
        let parameters = p
            .clone()
            .into_inner()
            .flatten()
            .filter(|q| q.as_rule() == Rule::parameter)
            .map(|q| self.parameter_name(q))
            .collect::<ParseResult<_>>()?;
        let mut mode = Mode::Run;
        let mut at = None;
        let mut clauses = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::EXPLAIN => mode = Mode::Explain,
                Rule::PROFILE => mode = Mode::Profile,
                Rule::at_clause => at = Some(self.at_clause(c)?),
                _ => clauses.push(self.clause(c)?),
            }
        }
        let st = Statement {
            mode,
            at,
            clauses,
            span: sp,
            parameters,
        };
        self.check_structure(&st)?;
        Ok(st)
    }

    /// `AT GENERATION n` / `AT RUN 'id'`.
    fn at_clause(&self, p: Pair<'t, Rule>) -> ParseResult<AtClause> {
        let sp = span(&p);
        let value = p
            .into_inner()
            .find(|c| matches!(c.as_rule(), Rule::integer_lit | Rule::string_lit))
            .ok_or_else(|| self.internal(sp))?;
        let target = match value.as_rule() {
            Rule::integer_lit => match self.integer(value.as_str(), sp)? {
                Literal::Int(g) if g > 0 => AtTarget::Generation(g as u64),
                _ => {
                    return Err(self.error(
                        ParseErrorKind::InvalidLiteral,
                        span(&value),
                        format!("generation {} does not exist: generations start at 1", value.as_str()),
                        Some("list the retained generations with `batho gc status` or `CALL db.runs()`".into()),
                    ));
                }
            },
            _ => {
                let inner = value.into_inner().next().ok_or_else(|| self.internal(sp))?;
                let isp = span(&inner);
                let id = self.unescape(inner.as_str(), isp.start)?;
                if id.trim().is_empty() {
                    return Err(self.error(
                        ParseErrorKind::InvalidLiteral,
                        isp,
                        "AT RUN needs a run id or a unique prefix of one",
                        Some("list runs with `CALL db.runs() YIELD id RETURN id`".into()),
                    ));
                }
                AtTarget::Run(id)
            }
        };
        Ok(AtClause { target, span: sp })
    }

    /// Clause-order rules the grammar leaves loose, so they get specific messages.
    fn check_structure(&self, st: &Statement) -> ParseResult<()> {
        let n = st.clauses.len();
        for (i, c) in st.clauses.iter().enumerate() {
            let last = i + 1 == n;
            match c {
                Clause::Return(r) if !last => {
                    return Err(self.error(
                        ParseErrorKind::Structure,
                        r.span,
                        "RETURN must be the last clause of a query",
                        Some("use WITH to pass rows on to further clauses, or `;` to start a new statement".into()),
                    ));
                }
                Clause::Call(call) if !last && call.yields.is_none() => {
                    return Err(self.error(
                        ParseErrorKind::Structure,
                        call.span,
                        "a CALL followed by other clauses must YIELD the columns it passes on",
                        Some(format!(
                            "add `YIELD *` or name the columns: `CALL {}() YIELD ...`",
                            call.procedure.name
                        )),
                    ));
                }
                Clause::Match(_) | Clause::With(_) | Clause::Unwind(_) if last => {
                    let what = match c {
                        Clause::Match(m) if m.optional => "OPTIONAL MATCH",
                        Clause::Match(_) => "MATCH",
                        Clause::With(_) => "WITH",
                        _ => "UNWIND",
                    };
                    let vars = bound_names(st);
                    let ret = if vars.is_empty() {
                        "RETURN *".to_string()
                    } else {
                        format!("RETURN {}", vars.join(", "))
                    };
                    let end = st.span.end;
                    return Err(self.error(
                        ParseErrorKind::Structure,
                        Span::new(end, end),
                        format!(
                            "query cannot end with {what}: it needs a RETURN (or an update) clause"
                        ),
                        Some(format!("add `{ret}`")),
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn clause(&self, p: Pair<'t, Rule>) -> ParseResult<Clause> {
        let sp = span(&p);
        let rule = p.as_rule();
        let mut inner = p.into_inner().peekable();
        Ok(match rule {
            Rule::match_clause => {
                let mut optional = false;
                let mut pattern = Vec::new();
                let mut where_ = None;
                for c in inner {
                    match c.as_rule() {
                        Rule::OPTIONAL => optional = true,
                        Rule::pattern => pattern = self.pattern(c)?,
                        Rule::where_clause => where_ = Some(self.where_clause(c)?),
                        _ => {}
                    }
                }
                Clause::Match(MatchClause {
                    optional,
                    pattern,
                    where_,
                    span: sp,
                })
            }
            Rule::unwind_clause => {
                let mut expr = None;
                let mut variable = None;
                for c in inner {
                    match c.as_rule() {
                        Rule::expr => expr = Some(self.expr(c)?),
                        Rule::variable => variable = Some(self.ident(c)?),
                        _ => {}
                    }
                }
                match (expr, variable) {
                    (Some(expr), Some(variable)) => Clause::Unwind(UnwindClause {
                        expr,
                        variable,
                        span: sp,
                    }),
                    _ => return Err(self.internal(sp)),
                }
            }
            Rule::with_clause | Rule::return_clause => {
                let mut proj = None;
                let mut where_ = None;
                for c in inner {
                    match c.as_rule() {
                        Rule::projection_body => proj = Some(self.projection(c, sp)?),
                        Rule::where_clause => where_ = Some(self.where_clause(c)?),
                        _ => {}
                    }
                }
                let mut proj = proj.ok_or_else(|| self.internal(sp))?;
                proj.where_ = where_;
                if rule == Rule::with_clause {
                    Clause::With(proj)
                } else {
                    Clause::Return(proj)
                }
            }
            Rule::call_clause => {
                let mut procedure = None;
                let mut args = None;
                let mut yields = None;
                let mut where_ = None;
                for c in inner {
                    match c.as_rule() {
                        Rule::procedure_name => procedure = Some(self.dotted_name(c)?),
                        Rule::call_args => {
                            args = Some(
                                c.into_inner()
                                    .map(|e| self.expr(e))
                                    .collect::<ParseResult<Vec<_>>>()?,
                            );
                        }
                        Rule::yield_clause => {
                            let mut items = Vec::new();
                            for y in c.into_inner() {
                                match y.as_rule() {
                                    Rule::yield_item => {
                                        let mut parts =
                                            y.into_inner().filter(|x| x.as_rule() != Rule::AS);
                                        let field = match parts.next() {
                                            Some(f) => self.ident(f)?,
                                            None => return Err(self.internal(sp)),
                                        };
                                        let alias =
                                            parts.next().map(|a| self.ident(a)).transpose()?;
                                        items.push(YieldItem { field, alias });
                                    }
                                    Rule::where_clause => where_ = Some(self.where_clause(y)?),
                                    _ => {}
                                }
                            }
                            yields = Some(items);
                        }
                        _ => {}
                    }
                }
                let procedure = procedure.ok_or_else(|| self.internal(sp))?;
                Clause::Call(CallClause {
                    procedure,
                    args,
                    yields,
                    where_,
                    span: sp,
                })
            }
            Rule::create_clause => {
                let pat = inner
                    .find(|c| c.as_rule() == Rule::pattern)
                    .ok_or_else(|| self.internal(sp))?;
                Clause::Create(CreateClause {
                    pattern: self.pattern(pat)?,
                    span: sp,
                })
            }
            Rule::merge_clause => {
                let mut part = None;
                let mut on_create = Vec::new();
                let mut on_match = Vec::new();
                for c in inner {
                    match c.as_rule() {
                        Rule::pattern_part => part = Some(self.pattern_part(c)?),
                        Rule::merge_action => {
                            let mut on_create_action = false;
                            let mut items = Vec::new();
                            for a in c.into_inner() {
                                match a.as_rule() {
                                    Rule::CREATE => on_create_action = true,
                                    Rule::set_item => items.push(self.set_item(a)?),
                                    _ => {}
                                }
                            }
                            if on_create_action {
                                on_create.extend(items)
                            } else {
                                on_match.extend(items)
                            }
                        }
                        _ => {}
                    }
                }
                let part = part.ok_or_else(|| self.internal(sp))?;
                Clause::Merge(MergeClause {
                    part,
                    on_create,
                    on_match,
                    span: sp,
                })
            }
            Rule::set_clause => {
                let items = inner
                    .filter(|c| c.as_rule() == Rule::set_item)
                    .map(|c| self.set_item(c))
                    .collect::<ParseResult<_>>()?;
                Clause::Set(SetClause { items, span: sp })
            }
            Rule::delete_clause => {
                let mut detach = false;
                let mut exprs = Vec::new();
                for c in inner {
                    match c.as_rule() {
                        Rule::DETACH => detach = true,
                        Rule::expr => exprs.push(self.expr(c)?),
                        _ => {}
                    }
                }
                Clause::Delete(DeleteClause {
                    detach,
                    exprs,
                    span: sp,
                })
            }
            Rule::remove_clause => {
                let mut items = Vec::new();
                for c in inner.filter(|c| c.as_rule() == Rule::remove_item) {
                    let Some(item) = c.into_inner().next() else {
                        return Err(self.internal(sp));
                    };
                    items.push(match item.as_rule() {
                        Rule::postfix_property => {
                            let (variable, key) = self.property_target(item)?;
                            RemoveItem::Property { variable, key }
                        }
                        _ => {
                            let (variable, labels) = self.set_labels(item)?;
                            RemoveItem::Labels { variable, labels }
                        }
                    });
                }
                Clause::Remove(RemoveClause { items, span: sp })
            }
            _ => return Err(self.internal(sp)),
        })
    }

    /// A grammar/builder mismatch: a bug, reported as an error rather than a panic.
    fn internal(&self, sp: Span) -> ParseError {
        self.error(
            ParseErrorKind::Syntax,
            sp,
            "internal parser error: unexpected syntax tree shape",
            None,
        )
    }

    fn where_clause(&self, p: Pair<'t, Rule>) -> ParseResult<Expr> {
        let sp = span(&p);
        let e = p
            .into_inner()
            .find(|c| c.as_rule() == Rule::expr)
            .ok_or_else(|| self.internal(sp))?;
        self.expr(e)
    }

    fn projection(&self, p: Pair<'t, Rule>, clause_span: Span) -> ParseResult<Projection> {
        let mut proj = Projection {
            distinct: false,
            star: false,
            items: Vec::new(),
            order_by: Vec::new(),
            skip: None,
            limit: None,
            where_: None,
            span: clause_span,
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::DISTINCT => proj.distinct = true,
                Rule::projection_items => {
                    for it in c.into_inner() {
                        match it.as_rule() {
                            Rule::star => proj.star = true,
                            Rule::projection_item => {
                                let isp = span(&it);
                                let mut parts = it.into_inner().filter(|x| x.as_rule() != Rule::AS);
                                let expr = match parts.next() {
                                    Some(e) => self.expr(e)?,
                                    None => return Err(self.internal(isp)),
                                };
                                let alias = parts.next().map(|a| self.ident(a)).transpose()?;
                                proj.items.push(ProjectionItem {
                                    expr,
                                    alias,
                                    span: isp,
                                });
                            }
                            _ => {}
                        }
                    }
                }
                Rule::order_by => {
                    for s in c.into_inner().filter(|x| x.as_rule() == Rule::sort_item) {
                        let ssp = span(&s);
                        let mut expr = None;
                        let mut descending = false;
                        for x in s.into_inner() {
                            match x.as_rule() {
                                Rule::expr => expr = Some(self.expr(x)?),
                                Rule::DESC => descending = true,
                                _ => {}
                            }
                        }
                        let expr = expr.ok_or_else(|| self.internal(ssp))?;
                        proj.order_by.push(SortItem {
                            expr,
                            descending,
                            span: ssp,
                        });
                    }
                }
                Rule::skip | Rule::limit => {
                    let csp = span(&c);
                    let is_skip = c.as_rule() == Rule::skip;
                    let e = c
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::expr)
                        .ok_or_else(|| self.internal(csp))?;
                    let e = self.expr(e)?;
                    if is_skip {
                        proj.skip = Some(e)
                    } else {
                        proj.limit = Some(e)
                    }
                }
                _ => {}
            }
        }
        Ok(proj)
    }

    fn set_item(&self, p: Pair<'t, Rule>) -> ParseResult<SetItem> {
        let sp = span(&p);
        let item = p.into_inner().next().ok_or_else(|| self.internal(sp))?;
        let rule = item.as_rule();
        if rule == Rule::set_labels {
            let (variable, labels) = self.set_labels(item)?;
            return Ok(SetItem::Labels { variable, labels });
        }
        let mut parts = item.into_inner();
        let (Some(target), Some(value)) = (parts.next(), parts.next()) else {
            return Err(self.internal(sp));
        };
        let value = self.expr(value)?;
        Ok(match rule {
            Rule::set_property => {
                let (variable, key) = self.property_target(target)?;
                SetItem::Property {
                    variable,
                    key,
                    value,
                }
            }
            Rule::set_merge => SetItem::Merge {
                variable: self.ident(target)?,
                value,
            },
            _ => SetItem::Replace {
                variable: self.ident(target)?,
                value,
            },
        })
    }

    fn property_target(&self, p: Pair<'t, Rule>) -> ParseResult<(Ident, Ident)> {
        let sp = span(&p);
        let mut parts = p.into_inner();
        let var = parts.next().ok_or_else(|| self.internal(sp))?;
        let keys: Vec<_> = parts.collect();
        if keys.len() != 1 {
            return Err(self.error(
                ParseErrorKind::Syntax,
                sp,
                "nested property keys cannot be assigned or removed",
                Some("graph properties are flat: write `n.key`".into()),
            ));
        }
        let key = keys.into_iter().next().ok_or_else(|| self.internal(sp))?;
        Ok((self.ident(var)?, self.ident(key)?))
    }

    fn set_labels(&self, p: Pair<'t, Rule>) -> ParseResult<(Ident, Vec<Ident>)> {
        let sp = span(&p);
        let mut parts = p.into_inner();
        let (Some(var), Some(labels)) = (parts.next(), parts.next()) else {
            return Err(self.internal(sp));
        };
        let (labels, mode) = self.labels(labels)?;
        if mode == LabelMode::Any && labels.len() > 1 {
            return Err(self.error(
                ParseErrorKind::Syntax,
                sp,
                "`|` cannot be used when setting or removing labels",
                Some("write `n:A:B`".into()),
            ));
        }
        Ok((self.ident(var)?, labels))
    }

    // ----- names ----------------------------------------------------------------------

    /// The name of a `$name` or `$1` parameter.
    fn parameter_name(&self, p: Pair<'t, Rule>) -> ParseResult<String> {
        let sp = span(&p);
        let name = p.into_inner().next().ok_or_else(|| self.internal(sp))?;
        Ok(match name.as_rule() {
            Rule::dec_int => name.as_str().to_string(),
            _ => self.ident(name)?.name,
        })
    }

    fn ident(&self, p: Pair<'t, Rule>) -> ParseResult<Ident> {
        let sp = span(&p);
        // `variable` and `schema_name` wrap a plain_name or backtick_name.
        let leaf = match p.as_rule() {
            Rule::plain_name | Rule::backtick_name => p,
            _ => p.into_inner().next().ok_or_else(|| self.internal(sp))?,
        };
        let raw = leaf.as_str();
        let name = if leaf.as_rule() == Rule::backtick_name {
            let inner = raw.get(1..raw.len().saturating_sub(1)).unwrap_or("");
            if inner.is_empty() {
                return Err(self.error(
                    ParseErrorKind::InvalidLiteral,
                    sp,
                    "empty backticked name",
                    None,
                ));
            }
            inner.replace("``", "`")
        } else {
            raw.to_string()
        };
        Ok(Ident { name, span: sp })
    }

    fn dotted_name(&self, p: Pair<'t, Rule>) -> ParseResult<Ident> {
        let sp = span(&p);
        let parts = p
            .into_inner()
            .map(|c| self.ident(c).map(|i| i.name))
            .collect::<ParseResult<Vec<_>>>()?;
        Ok(Ident {
            name: parts.join("."),
            span: sp,
        })
    }
}

/// Variables a statement binds, for the "add RETURN ..." suggestion.
fn bound_names(st: &Statement) -> Vec<String> {
    fn add(out: &mut Vec<String>, i: Option<&Ident>) {
        if let Some(i) = i
            && !out.contains(&i.name)
        {
            out.push(i.name.clone());
        }
    }
    let mut out: Vec<String> = Vec::new();
    for c in &st.clauses {
        match c {
            Clause::Match(m) => {
                for part in &m.pattern {
                    add(&mut out, part.variable.as_ref());
                    add(&mut out, part.element.start.variable.as_ref());
                    for (r, n) in &part.element.chain {
                        add(&mut out, r.variable.as_ref());
                        add(&mut out, n.variable.as_ref());
                    }
                }
            }
            Clause::Unwind(u) => add(&mut out, Some(&u.variable)),
            Clause::With(w) => {
                if !w.star {
                    out.clear();
                }
                for it in &w.items {
                    match (&it.alias, &it.expr.kind) {
                        (Some(a), _) => add(&mut out, Some(a)),
                        (None, ExprKind::Variable(v)) => {
                            add(
                                &mut out,
                                Some(&Ident {
                                    name: v.clone(),
                                    span: it.span,
                                }),
                            );
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

mod expr;
mod pattern;
