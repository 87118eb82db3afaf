//! The TCK's notation for expected values: the cells of result tables and the values of
//! `parameters are:` tables.
//!
//! It is Cypher literal syntax plus notation for graph elements: nodes `(:A:B {k: 1})`,
//! relationships `[:T {k: 1}]` and paths `<(:A)-[:T]->(:B)<-[:U]-(:C)>`. Graph elements are
//! described by what a reader can see (labels, type, properties, direction), never by an
//! identity, so engine results are converted into the same shape before comparison.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A value written in TCK notation, or an engine value converted into that shape.
#[derive(Clone, Debug, PartialEq)]
pub enum TckValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Boolean(bool),
    /// A 64-bit integer.
    Integer(i64),
    /// A 64-bit float (NaN and infinities included).
    Float(f64),
    /// A string.
    String(String),
    /// A list; element order matters unless a comparison says otherwise.
    List(Vec<TckValue>),
    /// A map with string keys.
    Map(BTreeMap<String, TckValue>),
    /// A node: its labels (a set) and properties.
    Node(TckNode),
    /// A relationship: its type and properties.
    Relationship(TckRelationship),
    /// A path: a start node and the steps taken from it.
    Path(TckPath),
}

/// What the TCK shows of a node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TckNode {
    /// Labels; their order carries no meaning.
    pub labels: BTreeSet<String>,
    /// Properties.
    pub properties: BTreeMap<String, TckValue>,
}

/// What the TCK shows of a relationship.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TckRelationship {
    /// The relationship type.
    pub relationship_type: String,
    /// Properties.
    pub properties: BTreeMap<String, TckValue>,
}

/// Which way a path step traverses its relationship.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `-[..]->`: from the previous node to the next one.
    Forward,
    /// `<-[..]-`: from the next node to the previous one.
    Backward,
}

/// One relationship of a path and the node it leads to.
#[derive(Clone, Debug, PartialEq)]
pub struct PathStep {
    /// The relationship traversed.
    pub relationship: TckRelationship,
    /// Whether it points along the path or against it.
    pub direction: Direction,
    /// The node reached.
    pub node: TckNode,
}

/// A path: `<(start)-[..]->(node)...>`.
#[derive(Clone, Debug, PartialEq)]
pub struct TckPath {
    /// The first node.
    pub start: TckNode,
    /// The steps, in order.
    pub steps: Vec<PathStep>,
}

/// Reads one value in TCK notation; the whole text must be consumed.
pub fn parse_tck_value(text: &str) -> Result<TckValue, String> {
    let mut parser = ValueParser {
        characters: text.chars().collect(),
        position: 0,
    };
    let value = parser.value()?;
    parser.skip_whitespace();
    if parser.position < parser.characters.len() {
        return Err(parser.error("end of value"));
    }
    Ok(value)
}

/// A recursive-descent reader over the characters of one table cell.
struct ValueParser {
    characters: Vec<char>,
    position: usize,
}

impl ValueParser {
    /// The next character, if any.
    fn peek(&self) -> Option<char> {
        self.characters.get(self.position).copied()
    }

    /// The next character after skipping whitespace.
    fn peek_after_whitespace(&mut self) -> Option<char> {
        self.skip_whitespace();
        self.peek()
    }

    /// Moves past spaces between tokens.
    fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.position += 1;
        }
    }

    /// A message naming what was wanted, where, and the text left.
    fn error(&self, wanted: &str) -> String {
        let rest: String = self.characters[self.position..].iter().collect();
        format!(
            "expected {wanted} at character {} of `{}` (rest: `{rest}`)",
            self.position,
            self.characters.iter().collect::<String>()
        )
    }

    /// Consumes `expected` (after optional whitespace) or fails.
    fn expect(&mut self, expected: char) -> Result<(), String> {
        if self.peek_after_whitespace() == Some(expected) {
            self.position += 1;
            Ok(())
        } else {
            Err(self.error(&format!("`{expected}`")))
        }
    }

    /// Consumes `expected` when it comes next (after optional whitespace).
    fn accept(&mut self, expected: char) -> bool {
        if self.peek_after_whitespace() == Some(expected) {
            self.position += 1;
            true
        } else {
            false
        }
    }

    /// Consumes `word` when it comes next as a whole word (not a prefix of a longer name).
    fn accept_word(&mut self, word: &str) -> bool {
        let end = self.position + word.chars().count();
        if end > self.characters.len() {
            return false;
        }
        let candidate: String = self.characters[self.position..end].iter().collect();
        let boundary = self
            .characters
            .get(end)
            .is_none_or(|next| !is_identifier_character(*next));
        if candidate == word && boundary {
            self.position = end;
            true
        } else {
            false
        }
    }

    /// Any value; the first character decides which kind.
    fn value(&mut self) -> Result<TckValue, String> {
        match self.peek_after_whitespace() {
            Some('\'') | Some('"') => self.string().map(TckValue::String),
            Some('[') => self.list_or_relationship(),
            Some('{') => self.map().map(TckValue::Map),
            Some('(') => self.node().map(TckValue::Node),
            Some('<') => self.path().map(TckValue::Path),
            Some(_) => self.keyword_or_number(),
            None => Err(self.error("a value")),
        }
    }

    /// `null`, `true`, `false` or a number.
    fn keyword_or_number(&mut self) -> Result<TckValue, String> {
        if self.accept_word("null") {
            return Ok(TckValue::Null);
        }
        if self.accept_word("true") {
            return Ok(TckValue::Boolean(true));
        }
        if self.accept_word("false") {
            return Ok(TckValue::Boolean(false));
        }
        self.number()
    }

    /// Integers (decimal, `0x` hexadecimal, `0o` octal) and floats (`1.5`, `.5`, `1e10`,
    /// `NaN`, `Inf`, `Infinity`), each with an optional sign.
    fn number(&mut self) -> Result<TckValue, String> {
        let start = self.position;
        let negative = self.accept('-');
        if !negative {
            self.accept('+');
        }
        for word in ["NaN", "Infinity", "Inf"] {
            if self.accept_word(word) {
                let magnitude = if word == "NaN" {
                    f64::NAN
                } else {
                    f64::INFINITY
                };
                return Ok(TckValue::Float(if negative {
                    -magnitude
                } else {
                    magnitude
                }));
            }
        }
        let digits_start = self.position;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
            || (self.position > digits_start
                && matches!(self.peek(), Some('-') | Some('+'))
                && matches!(self.characters[self.position - 1], 'e' | 'E'))
        {
            self.position += 1;
        }
        let body: String = self.characters[digits_start..self.position]
            .iter()
            .collect();
        let sign = if negative { "-" } else { "" };
        number_from_text(sign, &body).ok_or_else(|| {
            self.position = start;
            self.error("a value")
        })
    }

    /// A quoted string with backslash escapes.
    fn string(&mut self) -> Result<String, String> {
        let quote = self.peek().ok_or_else(|| self.error("a quote"))?;
        self.position += 1;
        let mut text = String::new();
        loop {
            let character = self.peek().ok_or_else(|| self.error("a closing quote"))?;
            self.position += 1;
            if character == quote {
                return Ok(text);
            }
            if character != '\\' {
                text.push(character);
                continue;
            }
            let escaped = self.peek().ok_or_else(|| self.error("an escape"))?;
            self.position += 1;
            text.push(match escaped {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'u' => self.unicode_escape()?,
                other => other,
            });
        }
    }

    /// The four hexadecimal digits after `\u`.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let end = self.position + 4;
        let digits: String = self
            .characters
            .get(self.position..end)
            .ok_or_else(|| self.error("four hexadecimal digits"))?
            .iter()
            .collect();
        let code = u32::from_str_radix(&digits, 16).map_err(|_| self.error("hex digits"))?;
        self.position = end;
        char::from_u32(code).ok_or_else(|| self.error("a valid code point"))
    }

    /// `[` starts a list, or a relationship when a `:` follows (a list element never starts
    /// with one).
    fn list_or_relationship(&mut self) -> Result<TckValue, String> {
        let opening = self.position;
        self.expect('[')?;
        if self.peek_after_whitespace() == Some(':') {
            self.position = opening;
            return self.relationship().map(TckValue::Relationship);
        }
        let mut elements = Vec::new();
        if self.accept(']') {
            return Ok(TckValue::List(elements));
        }
        loop {
            elements.push(self.value()?);
            if self.accept(']') {
                return Ok(TckValue::List(elements));
            }
            self.expect(',')?;
        }
    }

    /// `{key: value, ...}`; a key given twice is an error.
    fn map(&mut self) -> Result<BTreeMap<String, TckValue>, String> {
        self.expect('{')?;
        let mut entries = BTreeMap::new();
        if self.accept('}') {
            return Ok(entries);
        }
        loop {
            let key = self.name()?;
            self.expect(':')?;
            let value = self.value()?;
            if entries.insert(key.clone(), value).is_some() {
                return Err(format!("key `{key}` appears twice in a map"));
            }
            if self.accept('}') {
                return Ok(entries);
            }
            self.expect(',')?;
        }
    }

    /// A key, label or type: an identifier or a back-quoted name.
    fn name(&mut self) -> Result<String, String> {
        if self.peek_after_whitespace() == Some('`') {
            self.position += 1;
            let start = self.position;
            while self.peek().is_some_and(|c| c != '`') {
                self.position += 1;
            }
            let name = self.characters[start..self.position].iter().collect();
            self.expect('`')?;
            return Ok(name);
        }
        let start = self.position;
        while self.peek().is_some_and(is_identifier_character) {
            self.position += 1;
        }
        if start == self.position {
            return Err(self.error("a name"));
        }
        Ok(self.characters[start..self.position].iter().collect())
    }

    /// The `{...}` property map of a node or relationship, empty when absent.
    fn optional_properties(&mut self) -> Result<BTreeMap<String, TckValue>, String> {
        if self.peek_after_whitespace() == Some('{') {
            self.map()
        } else {
            Ok(BTreeMap::new())
        }
    }

    /// `(:Label... {properties})`.
    fn node(&mut self) -> Result<TckNode, String> {
        self.expect('(')?;
        let mut labels = BTreeSet::new();
        while self.accept(':') {
            labels.insert(self.name()?);
        }
        let properties = self.optional_properties()?;
        self.expect(')')?;
        Ok(TckNode { labels, properties })
    }

    /// `[:TYPE {properties}]`.
    fn relationship(&mut self) -> Result<TckRelationship, String> {
        self.expect('[')?;
        self.expect(':')?;
        let relationship_type = self.name()?;
        let properties = self.optional_properties()?;
        self.expect(']')?;
        Ok(TckRelationship {
            relationship_type,
            properties,
        })
    }

    /// `<(node)` followed by steps and `>`.
    fn path(&mut self) -> Result<TckPath, String> {
        self.expect('<')?;
        let start = self.node()?;
        let mut steps = Vec::new();
        while !self.accept('>') {
            steps.push(self.path_step()?);
        }
        Ok(TckPath { start, steps })
    }

    /// `-[..]->(node)` or `<-[..]-(node)`.
    fn path_step(&mut self) -> Result<PathStep, String> {
        let backward = self.accept('<');
        self.expect('-')?;
        let relationship = self.relationship()?;
        self.expect('-')?;
        let direction = if backward {
            Direction::Backward
        } else {
            self.expect('>')?;
            Direction::Forward
        };
        let node = self.node()?;
        Ok(PathStep {
            relationship,
            direction,
            node,
        })
    }
}

/// Characters of an unquoted key, label or type name.
fn is_identifier_character(character: char) -> bool {
    character.is_alphanumeric() || character == '_'
}

/// An integer or float from its unsigned text and sign; `None` when it is neither.
fn number_from_text(sign: &str, body: &str) -> Option<TckValue> {
    let lowercase = body.to_ascii_lowercase();
    let radix_digits = [("0x", 16), ("0o", 8)]
        .into_iter()
        .find_map(|(prefix, radix)| lowercase.strip_prefix(prefix).map(|d| (d, radix)));
    if let Some((digits, radix)) = radix_digits {
        return i64::from_str_radix(&format!("{sign}{digits}"), radix)
            .ok()
            .map(TckValue::Integer);
    }
    let plain = body.replace('_', "");
    if !plain.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    if plain.chars().all(|c| c.is_ascii_digit()) {
        return format!("{sign}{plain}")
            .parse::<i64>()
            .ok()
            .map(TckValue::Integer);
    }
    format!("{sign}{plain}")
        .parse::<f64>()
        .ok()
        .map(TckValue::Float)
}

impl fmt::Display for TckValue {
    /// Writes the value back in TCK notation (used in failure messages).
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TckValue::Null => formatter.write_str("null"),
            TckValue::Boolean(value) => write!(formatter, "{value}"),
            TckValue::Integer(value) => write!(formatter, "{value}"),
            TckValue::Float(value) => write_float(formatter, *value),
            TckValue::String(text) => write_string(formatter, text),
            TckValue::List(elements) => {
                formatter.write_str("[")?;
                write_separated(formatter, elements.iter())?;
                formatter.write_str("]")
            }
            TckValue::Map(entries) => write_map(formatter, entries),
            TckValue::Node(node) => write!(formatter, "{node}"),
            TckValue::Relationship(relationship) => write!(formatter, "{relationship}"),
            TckValue::Path(path) => write!(formatter, "{path}"),
        }
    }
}

impl fmt::Display for TckNode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("(")?;
        for label in &self.labels {
            write!(formatter, ":{label}")?;
        }
        if !self.properties.is_empty() {
            if !self.labels.is_empty() {
                formatter.write_str(" ")?;
            }
            write_map(formatter, &self.properties)?;
        }
        formatter.write_str(")")
    }
}

impl fmt::Display for TckRelationship {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "[:{}", self.relationship_type)?;
        if !self.properties.is_empty() {
            formatter.write_str(" ")?;
            write_map(formatter, &self.properties)?;
        }
        formatter.write_str("]")
    }
}

impl fmt::Display for TckPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "<{}", self.start)?;
        for step in &self.steps {
            match step.direction {
                Direction::Forward => write!(formatter, "-{}->", step.relationship)?,
                Direction::Backward => write!(formatter, "<-{}-", step.relationship)?,
            }
            write!(formatter, "{}", step.node)?;
        }
        formatter.write_str(">")
    }
}

/// Floats always show a fraction or exponent so that `1.0` never reads as the integer `1`.
fn write_float(formatter: &mut fmt::Formatter<'_>, value: f64) -> fmt::Result {
    if value.is_nan() {
        formatter.write_str("NaN")
    } else if value.is_infinite() {
        formatter.write_str(if value > 0.0 { "Inf" } else { "-Inf" })
    } else {
        // `{:?}` prints the shortest text that reads back as the same float.
        write!(formatter, "{value:?}")
    }
}

/// A single-quoted string with quotes, backslashes and newlines escaped.
fn write_string(formatter: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    formatter.write_str("'")?;
    for character in text.chars() {
        match character {
            '\'' => formatter.write_str("\\'")?,
            '\\' => formatter.write_str("\\\\")?,
            '\n' => formatter.write_str("\\n")?,
            other => write!(formatter, "{other}")?,
        }
    }
    formatter.write_str("'")
}

/// `{key: value, ...}` in key order.
fn write_map(
    formatter: &mut fmt::Formatter<'_>,
    entries: &BTreeMap<String, TckValue>,
) -> fmt::Result {
    formatter.write_str("{")?;
    for (index, (key, value)) in entries.iter().enumerate() {
        if index > 0 {
            formatter.write_str(", ")?;
        }
        write!(formatter, "{key}: {value}")?;
    }
    formatter.write_str("}")
}

/// Values separated by `, `.
fn write_separated<'a>(
    formatter: &mut fmt::Formatter<'_>,
    values: impl Iterator<Item = &'a TckValue>,
) -> fmt::Result {
    for (index, value) in values.enumerate() {
        if index > 0 {
            formatter.write_str(", ")?;
        }
        write!(formatter, "{value}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> TckValue {
        parse_tck_value(text).unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    fn properties(entries: &[(&str, TckValue)]) -> BTreeMap<String, TckValue> {
        entries
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone()))
            .collect()
    }

    #[test]
    fn scalars_read_as_their_kinds() {
        assert_eq!(parsed("null"), TckValue::Null);
        assert_eq!(parsed(" true "), TckValue::Boolean(true));
        assert_eq!(parsed("false"), TckValue::Boolean(false));
        assert_eq!(parsed("-42"), TckValue::Integer(-42));
        assert_eq!(parsed("-9223372036854775808"), TckValue::Integer(i64::MIN));
        assert_eq!(parsed("0x1F"), TckValue::Integer(31));
        assert_eq!(parsed("-0o17"), TckValue::Integer(-15));
        assert_eq!(parsed("1.0"), TckValue::Float(1.0));
        assert_eq!(parsed(".5"), TckValue::Float(0.5));
        assert_eq!(parsed("-1.5e-3"), TckValue::Float(-0.0015));
        assert_eq!(
            parsed("1.2635418652381264e305"),
            TckValue::Float(1.2635418652381264e305)
        );
        assert_eq!(parsed("1e10"), TckValue::Float(1e10));
        assert_eq!(parsed("-Inf"), TckValue::Float(f64::NEG_INFINITY));
        assert_eq!(parsed("Infinity"), TckValue::Float(f64::INFINITY));
        assert!(matches!(parsed("NaN"), TckValue::Float(value) if value.is_nan()));
    }

    #[test]
    fn strings_unescape_quotes_backslashes_and_control_characters() {
        assert_eq!(parsed("'foo'"), TckValue::String("foo".into()));
        assert_eq!(parsed("''"), TckValue::String(String::new()));
        assert_eq!(parsed(r"'\''"), TckValue::String("'".into()));
        assert_eq!(
            parsed(r#"'a\\bcn5t\'"\\//\\"\''"#),
            TckValue::String(r#"a\bcn5t'"\//\"'"#.into())
        );
        assert_eq!(parsed(r"'\nFoo\n'"), TckValue::String("\nFoo\n".into()));
        assert_eq!(parsed(r"'\u00e9'"), TckValue::String("é".into()));
        assert_eq!(parsed("\"double\""), TckValue::String("double".into()));
    }

    #[test]
    fn lists_and_maps_nest() {
        assert_eq!(parsed("[]"), TckValue::List(vec![]));
        assert_eq!(parsed("{}"), TckValue::Map(BTreeMap::new()));
        assert_eq!(
            parsed("[1, [2, 'x'], {a: null, `b c`: [true]}]"),
            TckValue::List(vec![
                TckValue::Integer(1),
                TckValue::List(vec![TckValue::Integer(2), TckValue::String("x".into())]),
                TckValue::Map(properties(&[
                    ("a", TckValue::Null),
                    ("b c", TckValue::List(vec![TckValue::Boolean(true)])),
                ])),
            ])
        );
    }

    #[test]
    fn nodes_keep_labels_as_a_set() {
        assert_eq!(parsed("()"), TckValue::Node(TckNode::default()));
        let node = parsed("(:B:A {name: 'x', num: 1})");
        let TckValue::Node(node) = node else {
            panic!("not a node: {node:?}")
        };
        assert_eq!(node.labels.iter().collect::<Vec<_>>(), ["A", "B"]);
        assert_eq!(
            node.properties,
            properties(&[
                ("name", TckValue::String("x".into())),
                ("num", TckValue::Integer(1))
            ])
        );
        assert_eq!(parsed("(:B:A)"), parsed("(:A:B)"));
    }

    #[test]
    fn brackets_with_a_colon_are_relationships() {
        assert_eq!(
            parsed("[:KNOWS {since: 1999}]"),
            TckValue::Relationship(TckRelationship {
                relationship_type: "KNOWS".into(),
                properties: properties(&[("since", TckValue::Integer(1999))]),
            })
        );
        assert!(matches!(parsed("[[:T]]"), TckValue::List(list) if list.len() == 1));
    }

    #[test]
    fn paths_record_each_step_direction() {
        let TckValue::Path(path) = parsed("<(:A)-[:T]->(:B)<-[:U {k: 1}]-(:C)>") else {
            panic!("not a path")
        };
        assert_eq!(path.start.labels.iter().collect::<Vec<_>>(), ["A"]);
        let directions: Vec<Direction> = path.steps.iter().map(|step| step.direction).collect();
        assert_eq!(directions, [Direction::Forward, Direction::Backward]);
        assert_eq!(path.steps[1].relationship.relationship_type, "U");
        assert_eq!(
            parsed("<()>"),
            TckValue::Path(TckPath {
                start: TckNode::default(),
                steps: vec![],
            })
        );
    }

    #[test]
    fn malformed_values_are_rejected() {
        for text in [
            "",
            "[1, 2",
            "{a 1}",
            "'open",
            "(:A",
            "1 2",
            "nul",
            "<(:A)-[:T]-(:B)>",
        ] {
            assert!(parse_tck_value(text).is_err(), "`{text}` was accepted");
        }
        assert!(
            parse_tck_value("{a: 1, a: 2}")
                .unwrap_err()
                .contains("twice")
        );
    }

    #[test]
    fn display_writes_notation_that_reads_back() {
        for text in [
            "null",
            "[1, 2.5, 'it\\'s', {a: [true, false]}]",
            "(:A:B {name: 'x'})",
            "[:T {k: -1}]",
            "<(:A)-[:T]->(:B)<-[:U]-()>",
            "1.0",
            "1e300",
            "-Inf",
        ] {
            let value = parsed(text);
            assert_eq!(parsed(&value.to_string()), value, "{text} -> {value}");
        }
        assert_eq!(parsed("1.0").to_string(), "1.0");
        assert_eq!(parsed("NaN").to_string(), "NaN");
    }
}
