//! The typed abstract syntax tree of BQL.
//!
//! Every node carries a [`Span`] (byte offsets into the source text) so that semantic
//! checks and runtime errors can point at the text they are about. The tree is plain data:
//! [`crate::print`] turns it back into canonical BQL text and [`crate::check()`] validates it.

use std::fmt;

/// A half-open byte range `start..end` of the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A name written in the query: variable, alias, label, type, property or map key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    /// The name, with backticks removed and ``` `` ``` unescaped.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// How a statement is to be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Run and return rows.
    Run,
    /// `EXPLAIN`: show the plan, run nothing.
    Explain,
    /// `PROFILE`: run and report per-operator row counts and times.
    Profile,
}

/// Which retained generation of the artifact a statement reads (`AT ...`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AtTarget {
    /// `AT GENERATION 3`: a generation number.
    Generation(u64),
    /// `AT RUN 'uuid-or-prefix'`: the generation a run committed.
    Run(String),
}

/// The time-travel prefix of a statement: `AT GENERATION n` or `AT RUN 'id'`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AtClause {
    /// The generation or run named.
    pub target: AtTarget,
    /// Where it was written.
    pub span: Span,
}

/// One `;`-separated statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// `EXPLAIN`, `PROFILE` or plain.
    pub mode: Mode,
    /// `AT GENERATION n` / `AT RUN 'id'`: read that generation instead of the current one.
    pub at: Option<AtClause>,
    /// The clauses, in order.
    pub clauses: Vec<Clause>,
    /// The whole statement, prefix included.
    pub span: Span,
    /// The name of each parameter use, in text order (a name used twice is here twice),
    /// so that a caller can tell a parameter nothing else reads.
    pub parameters: Vec<String>,
}

/// A clause of a query.
#[derive(Clone, Debug, PartialEq)]
pub enum Clause {
    /// `[OPTIONAL] MATCH pattern [WHERE expr]`.
    Match(MatchClause),
    /// `UNWIND expr AS var`.
    Unwind(UnwindClause),
    /// `WITH projection [WHERE expr]`.
    With(Projection),
    /// `RETURN projection`.
    Return(Projection),
    /// `CALL proc(args) [YIELD ...]`.
    Call(CallClause),
    /// `CREATE pattern`.
    Create(CreateClause),
    /// `MERGE pattern_part [ON CREATE SET ..] [ON MATCH SET ..]`.
    Merge(MergeClause),
    /// `SET item, ...`.
    Set(SetClause),
    /// `[DETACH] DELETE expr, ...`.
    Delete(DeleteClause),
    /// `REMOVE item, ...`.
    Remove(RemoveClause),
}

impl Clause {
    /// The clause's span.
    pub fn span(&self) -> Span {
        match self {
            Clause::Match(c) => c.span,
            Clause::Unwind(c) => c.span,
            Clause::With(c) | Clause::Return(c) => c.span,
            Clause::Call(c) => c.span,
            Clause::Create(c) => c.span,
            Clause::Merge(c) => c.span,
            Clause::Set(c) => c.span,
            Clause::Delete(c) => c.span,
            Clause::Remove(c) => c.span,
        }
    }

    /// Whether the clause modifies the graph.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Clause::Create(_)
                | Clause::Merge(_)
                | Clause::Set(_)
                | Clause::Delete(_)
                | Clause::Remove(_)
        )
    }
}

/// `[OPTIONAL] MATCH`.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchClause {
    /// `OPTIONAL MATCH`.
    pub optional: bool,
    /// Comma-separated pattern parts.
    pub pattern: Vec<PatternPart>,
    /// The `WHERE` predicate.
    pub where_: Option<Expr>,
    /// Whole clause.
    pub span: Span,
}

/// `UNWIND expr AS variable`.
#[derive(Clone, Debug, PartialEq)]
pub struct UnwindClause {
    /// The list to unwind.
    pub expr: Expr,
    /// The variable bound to each element.
    pub variable: Ident,
    /// Whole clause.
    pub span: Span,
}

/// The body shared by `WITH` and `RETURN`.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection {
    /// `DISTINCT`.
    pub distinct: bool,
    /// `*`: keep every variable in scope (before the listed items).
    pub star: bool,
    /// The listed items.
    pub items: Vec<ProjectionItem>,
    /// `ORDER BY`.
    pub order_by: Vec<SortItem>,
    /// `SKIP`.
    pub skip: Option<Expr>,
    /// `LIMIT`.
    pub limit: Option<Expr>,
    /// `WHERE` (only on `WITH`).
    pub where_: Option<Expr>,
    /// Whole clause.
    pub span: Span,
}

/// `expr [AS alias]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectionItem {
    /// The projected expression.
    pub expr: Expr,
    /// The alias, if written.
    pub alias: Option<Ident>,
    /// Whole item.
    pub span: Span,
}

impl ProjectionItem {
    /// The output column name: the alias, or the expression's source text.
    pub fn column_name(&self, source: &str) -> String {
        match &self.alias {
            Some(a) => a.name.clone(),
            None => match &self.expr.kind {
                ExprKind::Variable(v) => v.clone(),
                _ => source
                    .get(self.expr.span.start..self.expr.span.end)
                    .map_or_else(
                        || crate::print::expr_to_string(&self.expr),
                        |s| s.trim().to_string(),
                    ),
            },
        }
    }
}

/// `expr [ASC|DESC]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SortItem {
    /// The sort key.
    pub expr: Expr,
    /// `DESC`.
    pub descending: bool,
    /// Whole item.
    pub span: Span,
}

/// `CALL name(args) YIELD ...`.
#[derive(Clone, Debug, PartialEq)]
pub struct CallClause {
    /// Dotted procedure name (`db.schema`).
    pub procedure: Ident,
    /// Arguments; `None` when the parentheses were omitted.
    pub args: Option<Vec<Expr>>,
    /// `YIELD` items; `None` without `YIELD` (every output column), `Some(vec![])` for `YIELD *`.
    pub yields: Option<Vec<YieldItem>>,
    /// `YIELD ... WHERE`.
    pub where_: Option<Expr>,
    /// Whole clause.
    pub span: Span,
}

/// `field [AS alias]` after `YIELD`.
#[derive(Clone, Debug, PartialEq)]
pub struct YieldItem {
    /// The procedure's output field.
    pub field: Ident,
    /// The variable it is bound to, if renamed.
    pub alias: Option<Ident>,
}

impl YieldItem {
    /// The bound variable.
    pub fn variable(&self) -> &Ident {
        self.alias.as_ref().unwrap_or(&self.field)
    }
}

/// `CREATE pattern`.
#[derive(Clone, Debug, PartialEq)]
pub struct CreateClause {
    /// Parts to create.
    pub pattern: Vec<PatternPart>,
    /// Whole clause.
    pub span: Span,
}

/// `MERGE part [ON CREATE SET ...] [ON MATCH SET ...]`.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeClause {
    /// The pattern to find or create.
    pub part: PatternPart,
    /// Applied when the pattern was created.
    pub on_create: Vec<SetItem>,
    /// Applied when the pattern was found.
    pub on_match: Vec<SetItem>,
    /// Whole clause.
    pub span: Span,
}

/// `SET items`.
#[derive(Clone, Debug, PartialEq)]
pub struct SetClause {
    /// The assignments.
    pub items: Vec<SetItem>,
    /// Whole clause.
    pub span: Span,
}

/// One assignment of `SET`.
#[derive(Clone, Debug, PartialEq)]
pub enum SetItem {
    /// `var.key = expr`.
    Property {
        /// The entity.
        variable: Ident,
        /// Property key (nested keys are not supported on graph entities).
        key: Ident,
        /// New value (`null` removes the property).
        value: Expr,
    },
    /// `var += map`.
    Merge {
        /// The entity.
        variable: Ident,
        /// Map of properties to add or overwrite.
        value: Expr,
    },
    /// `var = map`.
    Replace {
        /// The entity.
        variable: Ident,
        /// Map replacing every property.
        value: Expr,
    },
    /// `var:Label:Other`.
    Labels {
        /// The node.
        variable: Ident,
        /// Labels to add.
        labels: Vec<Ident>,
    },
}

/// `[DETACH] DELETE exprs`.
#[derive(Clone, Debug, PartialEq)]
pub struct DeleteClause {
    /// `DETACH`: delete attached relationships too.
    pub detach: bool,
    /// The nodes, relationships or paths to delete.
    pub exprs: Vec<Expr>,
    /// Whole clause.
    pub span: Span,
}

/// `REMOVE items`.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoveClause {
    /// The removals.
    pub items: Vec<RemoveItem>,
    /// Whole clause.
    pub span: Span,
}

/// One removal of `REMOVE`.
#[derive(Clone, Debug, PartialEq)]
pub enum RemoveItem {
    /// `var.key`.
    Property {
        /// The entity.
        variable: Ident,
        /// Property key.
        key: Ident,
    },
    /// `var:Label`.
    Labels {
        /// The node.
        variable: Ident,
        /// Labels to remove.
        labels: Vec<Ident>,
    },
}

/// Whether a pattern part is plain or a shortest-path search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathSearch {
    /// Every match.
    All,
    /// `shortestPath(...)`: one shortest path per pair of endpoints.
    Shortest,
    /// `allShortestPaths(...)`: every path of the minimal length.
    AllShortest,
}

/// `[p =] element` or `[p =] shortestPath(element)`.
#[derive(Clone, Debug, PartialEq)]
pub struct PatternPart {
    /// The named-path variable.
    pub variable: Option<Ident>,
    /// Plain or shortest path.
    pub search: PathSearch,
    /// The chain of nodes and relationships.
    pub element: PatternElement,
    /// Whole part.
    pub span: Span,
}

/// `(a)-[r]->(b)<-[s]-(c)...`.
#[derive(Clone, Debug, PartialEq)]
pub struct PatternElement {
    /// The first node.
    pub start: NodePattern,
    /// Each relationship with the node it leads to.
    pub chain: Vec<(RelPattern, NodePattern)>,
    /// Whole element.
    pub span: Span,
}

impl PatternElement {
    /// Every node pattern, in order.
    pub fn nodes(&self) -> impl Iterator<Item = &NodePattern> {
        std::iter::once(&self.start).chain(self.chain.iter().map(|(_, n)| n))
    }
}

/// How several labels of a node pattern combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelMode {
    /// `:A:B` — the node has every label.
    All,
    /// `:A|B` — the node has at least one.
    Any,
}

/// `(var:Label {props})`.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePattern {
    /// Variable.
    pub variable: Option<Ident>,
    /// Labels (node kinds on code graphs).
    pub labels: Vec<Ident>,
    /// How `labels` combine (meaningless with fewer than two).
    pub label_mode: LabelMode,
    /// Property map or parameter.
    pub properties: Option<Expr>,
    /// Whole node pattern.
    pub span: Span,
}

/// Direction of a relationship pattern, read left to right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `-[]->`
    Outgoing,
    /// `<-[]-`
    Incoming,
    /// `-[]-` (or `<-[]->`): either direction.
    Both,
}

impl Direction {
    /// The direction seen from the other end.
    pub fn reversed(self) -> Direction {
        match self {
            Direction::Outgoing => Direction::Incoming,
            Direction::Incoming => Direction::Outgoing,
            Direction::Both => Direction::Both,
        }
    }
}

/// The bounds of a variable-length relationship, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VarLength {
    /// Lower bound; `None` means 1.
    pub min: Option<u32>,
    /// Upper bound; `None` means [`DEFAULT_MAX_HOPS`].
    pub max: Option<u32>,
}

/// The upper bound of `*` and `*n..` when none is written. Unbounded traversals of a
/// Linux-size call graph would not terminate in useful time, so BQL caps them.
pub const DEFAULT_MAX_HOPS: u32 = 10;

/// The largest upper bound accepted for a variable-length relationship.
pub const MAX_HOPS_LIMIT: u32 = 1000;

impl VarLength {
    /// The effective `(min, max)` with defaults applied.
    pub fn bounds(self) -> (u32, u32) {
        let min = self.min.unwrap_or(1);
        let max = self.max.unwrap_or(DEFAULT_MAX_HOPS.max(min));
        (min, max)
    }
}

/// `-[var:TYPE|OTHER*1..3 {props}]->`.
#[derive(Clone, Debug, PartialEq)]
pub struct RelPattern {
    /// Variable (a list of relationships when variable-length).
    pub variable: Option<Ident>,
    /// Alternatives; empty means any type.
    pub types: Vec<Ident>,
    /// Direction.
    pub direction: Direction,
    /// `Some` for variable length.
    pub length: Option<VarLength>,
    /// Property map or parameter.
    pub properties: Option<Expr>,
    /// Whole relationship pattern, arrows included.
    pub span: Span,
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string, escapes resolved.
    String(String),
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `NOT`.
    Not,
    /// `-`.
    Neg,
    /// `+`.
    Plus,
}

/// Binary operators, in no particular order (precedence is the parser's business).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `OR`
    Or,
    /// `XOR`
    Xor,
    /// `AND`
    And,
    /// `=`
    Eq,
    /// `<>` or `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `=~` (whole-string regular expression match)
    Regex,
    /// `STARTS WITH`
    StartsWith,
    /// `ENDS WITH`
    EndsWith,
    /// `CONTAINS`
    Contains,
    /// `IN`
    In,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `^`
    Pow,
}

impl BinaryOp {
    /// The operator as written in canonical BQL.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "OR",
            BinaryOp::Xor => "XOR",
            BinaryOp::And => "AND",
            BinaryOp::Eq => "=",
            BinaryOp::Ne => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Regex => "=~",
            BinaryOp::StartsWith => "STARTS WITH",
            BinaryOp::EndsWith => "ENDS WITH",
            BinaryOp::Contains => "CONTAINS",
            BinaryOp::In => "IN",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Pow => "^",
        }
    }
}

/// Where a bound variable's value is: see [`ExprKind::Slot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRef {
    /// The place.
    pub slot: Slot,
    /// The variable's name, for messages and printing.
    pub name: String,
}

/// A place a bound variable reads its value from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The row's column at this index.
    Column(usize),
    /// The iteration variable of the comprehension or quantifier this many levels out
    /// from the outermost one (0 is the outermost enclosing the use).
    Local(usize),
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal.
    Literal(Literal),
    /// `$name`.
    Parameter(String),
    /// A variable reference.
    Variable(String),
    /// A variable resolved to its place in the row, made by [`crate::bind`] when a plan
    /// becomes operators (never by the parser, so checks and plans never see one).
    Slot(SlotRef),
    /// `expr.key`.
    Property(Box<Expr>, Ident),
    /// `expr[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `expr[from..to]`.
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// `expr:Label` (or `:A|B`) — a label test.
    HasLabels(Box<Expr>, Vec<Ident>, LabelMode),
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `{k: v}`.
    Map(Vec<(Ident, Expr)>),
    /// A unary operation.
    Unary(UnaryOp, Box<Expr>),
    /// A binary operation.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `expr IS NULL` (`negated`: `IS NOT NULL`).
    IsNull {
        /// The tested expression.
        expr: Box<Expr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `name([DISTINCT] args)`.
    Call {
        /// The function name as written (possibly dotted).
        name: Ident,
        /// `DISTINCT` (aggregates only).
        distinct: bool,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `count(*)`.
    CountStar,
    /// `[variable IN list WHERE predicate | projection]`; `variable` is local to the
    /// predicate and the projection.
    ListComprehension {
        /// The iteration variable.
        variable: Ident,
        /// The list iterated over (outside the variable's scope).
        list: Box<Expr>,
        /// Keeps only the elements for which it is true.
        predicate: Option<Box<Expr>>,
        /// What each kept element becomes; the element itself when absent.
        projection: Option<Box<Expr>>,
    },
    /// `all(variable IN list WHERE predicate)` and its siblings.
    Quantifier {
        /// Which quantifier.
        quantifier: Quantifier,
        /// The iteration variable, local to the predicate.
        variable: Ident,
        /// The list iterated over (outside the variable's scope).
        list: Box<Expr>,
        /// The condition tested on each element.
        predicate: Box<Expr>,
    },
    /// `CASE [operand] WHEN a THEN b ... [ELSE c] END`.
    Case {
        /// The simple form's tested value; `None` in the generic form, where each `WHEN`
        /// is a predicate.
        operand: Option<Box<Expr>>,
        /// `(when, then)` pairs, tried in order.
        branches: Vec<(Expr, Expr)>,
        /// The `ELSE` value; null when absent.
        otherwise: Option<Box<Expr>>,
    },
}

/// The list quantifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Quantifier {
    /// `all`: the predicate holds for every element.
    All,
    /// `any`: for at least one element.
    Any,
    /// `none`: for no element.
    None,
    /// `single`: for exactly one element.
    Single,
}

impl Quantifier {
    /// The quantifier's name as written in canonical BQL.
    pub fn name(self) -> &'static str {
        match self {
            Quantifier::All => "all",
            Quantifier::Any => "any",
            Quantifier::None => "none",
            Quantifier::Single => "single",
        }
    }
}

/// The direct sub-expressions of an [`ExprKind`], shared or mutable (the accessors named
/// by the caller): one list of the children for [`Expr::children`] and
/// [`Expr::children_mut`].
macro_rules! direct_children {
    ($kind:expr, $as_ref:ident, $iter:ident, $as_deref:ident) => {
        match $kind {
            ExprKind::Literal(_)
            | ExprKind::Parameter(_)
            | ExprKind::Variable(_)
            | ExprKind::Slot(_)
            | ExprKind::CountStar => vec![],
            ExprKind::Property(e, _) | ExprKind::HasLabels(e, _, _) | ExprKind::Unary(_, e) => {
                vec![e.$as_ref()]
            }
            ExprKind::IsNull { expr, .. } => vec![expr.$as_ref()],
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => vec![a.$as_ref(), b.$as_ref()],
            ExprKind::Slice(a, b, c) => {
                let mut v = vec![a.$as_ref()];
                v.extend(b.$as_deref());
                v.extend(c.$as_deref());
                v
            }
            ExprKind::List(items) => items.$iter().collect(),
            ExprKind::Map(entries) => entries.$iter().map(|(_, e)| e).collect(),
            ExprKind::Call { args, .. } => args.$iter().collect(),
            // The list comes first: `iteration_variable` relies on it.
            ExprKind::ListComprehension {
                list,
                predicate,
                projection,
                ..
            } => {
                let mut v = vec![list.$as_ref()];
                v.extend(predicate.$as_deref());
                v.extend(projection.$as_deref());
                v
            }
            ExprKind::Quantifier {
                list, predicate, ..
            } => vec![list.$as_ref(), predicate.$as_ref()],
            ExprKind::Case {
                operand,
                branches,
                otherwise,
            } => {
                let mut v: Vec<_> = operand.$as_deref().into_iter().collect();
                for (when, then) in branches {
                    v.push(when);
                    v.push(then);
                }
                v.extend(otherwise.$as_deref());
                v
            }
        }
    };
}

impl Expr {
    /// A new expression.
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Expr { kind, span }
    }

    /// The direct sub-expressions, left to right.
    pub fn children(&self) -> Vec<&Expr> {
        direct_children!(&self.kind, as_ref, iter, as_deref)
    }

    /// The direct sub-expressions, mutable, in the order of [`Expr::children`].
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        direct_children!(&mut self.kind, as_mut, iter_mut, as_deref_mut)
    }

    /// The variable a comprehension or quantifier binds. It is in scope in every child
    /// except the first (the list).
    pub fn iteration_variable(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::ListComprehension { variable, .. }
            | ExprKind::Quantifier { variable, .. } => Some(&variable.name),
            _ => None,
        }
    }

    /// Every free variable of the expression (those the row must bind), in first-use
    /// order, deduplicated. Iteration variables of comprehensions and quantifiers are
    /// local, so their uses inside are not reported.
    pub fn variables(&self) -> Vec<String> {
        let mut out = Vec::new();
        // Each entry carries the iteration variables in scope at that sub-expression.
        let mut stack: Vec<(&Expr, Vec<&str>)> = vec![(self, Vec::new())];
        while let Some((e, locals)) = stack.pop() {
            if let ExprKind::Variable(v) = &e.kind
                && !locals.contains(&v.as_str())
                && !out.contains(v)
            {
                out.push(v.clone());
            }
            let iteration = e.iteration_variable();
            let children = e.children();
            for (position, child) in children.into_iter().enumerate().rev() {
                let mut child_locals = locals.clone();
                if let Some(name) = iteration
                    && position > 0
                {
                    child_locals.push(name);
                }
                stack.push((child, child_locals));
            }
        }
        out
    }
}
