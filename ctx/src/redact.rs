//! Secret redaction for text that is about to be stored or returned (command output for
//! `ctx_tree_monitor`, above all). Each secret's value is replaced by
//! `[REDACTED:<rule-name>]`; the key name before it is kept, so the text still says what
//! was there (`DB_PASSWORD=[REDACTED:env-secret]`).
//!
//! The rules are listed by [`rules`]. Every rule has cheap keywords, and a rule runs only
//! when one of its keywords occurs in the text (one Aho-Corasick pass, ASCII case
//! ignored): ordinary build output contains few of them, so most rules never run on it.
//! All patterns use the `regex` crate, which runs in time linear in the text.
//!
//! Matches of all rules are collected first and overlapping ones are merged into one
//! marker, named after the earliest rule in the list that took part, so two rules
//! matching the same secret cannot garble the text or leave a piece of it behind. The
//! list puts specific token formats before generic `NAME=value` rules for that reason.
//! Text that already is a marker is never matched again, and [`redact`] repeats its pass
//! while a pass still changes something, which makes redaction idempotent.
//!
//! Rule names and descriptions are this module's own; the token formats are those the
//! issuers publish.

use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::{Captures, Regex};

/// The text every marker starts with; the rule's name and `]` follow.
pub const MARKER_PREFIX: &str = "[REDACTED:";

/// What [`redact`] made of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redaction {
    /// The text with every secret value replaced by `[REDACTED:<rule-name>]`.
    pub text: String,
    /// How many markers were inserted.
    pub count: usize,
    /// The rules named by the inserted markers, each once, in the order of [`rules`].
    pub rules: Vec<&'static str>,
}

/// One kind of secret that [`redact`] recognises.
#[derive(Debug)]
pub struct RedactionRule {
    /// The name written into markers, e.g. `github-token`.
    pub name: &'static str,
    /// What the rule recognises, in a sentence.
    pub description: &'static str,
    /// Lower-case strings of which at least one occurs (ASCII case ignored) in every
    /// text the pattern can match; the rule is skipped on texts without any.
    keywords: &'static [&'static str],
    /// The pattern. A group named `secret`, `secret_single` or `secret_bare` marks the
    /// value to replace; without one the whole match is replaced. In the rules built on
    /// a secret's name the three are the double-quoted, single-quoted and unquoted forms
    /// of the value, which are judged differently.
    pattern: Regex,
    /// Final say on a match, for what a regular expression cannot judge (entropy, names
    /// that merely contain a keyword, code that looks like an assignment).
    accepts: fn(&Captures<'_>) -> bool,
}

/// The rules, in the order that decides which name a merged marker gets.
pub fn rules() -> &'static [RedactionRule] {
    RULES.as_slice()
}

/// Replaces every secret in `text` by a marker naming the rule that found it.
///
/// Redacting the result again changes nothing: see [`MAX_PASSES`].
pub fn redact(text: &str) -> Redaction {
    let mut current = redact_one_pass(text);
    let mut count = current.count;
    let mut fired_rules = current.fired_rules;
    let mut passes = 1;
    while current.count > 0 && passes < MAX_PASSES {
        let next = redact_one_pass(&current.text);
        if next.count == 0 {
            break;
        }
        count += next.count;
        fired_rules |= next.fired_rules;
        current = next;
        passes += 1;
    }
    Redaction {
        text: current.text,
        count,
        rules: rule_names(fired_rules),
    }
}

/// Passes [`redact`] makes at most. A rule that judges a value (entropy, code shape) can
/// judge it differently once a neighbouring secret has become a marker, since the value
/// then ends elsewhere; a pass that changed something is therefore followed by another,
/// until one changes nothing. Markers are never matched again, so each pass only adds
/// markers; ordinary text takes one pass, text with secrets two, and no input found by
/// the property tests needed more than three.
pub const MAX_PASSES: usize = 4;

/// What one pass over the text found and made.
struct PassOutcome {
    text: String,
    count: usize,
    fired_rules: u64,
}

fn redact_one_pass(text: &str) -> PassOutcome {
    let active_rules = KEYWORD_INDEX.rules_triggered_by(text);
    if active_rules == 0 {
        return PassOutcome {
            text: text.to_owned(),
            count: 0,
            fired_rules: 0,
        };
    }
    let existing_markers = find_existing_markers(text);
    let mut findings = Vec::new();
    for (rule_index, rule) in RULES.iter().enumerate() {
        if active_rules & (1 << rule_index) != 0 {
            find_rule_matches(rule_index, rule, text, &existing_markers, &mut findings);
        }
    }
    let merged = merge_overlapping(findings);
    replace_findings(text, &merged)
}

/// The names of the rules in a set, in the order of [`rules`].
fn rule_names(rule_set: u64) -> Vec<&'static str> {
    RULES
        .iter()
        .enumerate()
        .filter(|(index, _)| rule_set & (1 << index) != 0)
        .map(|(_, rule)| rule.name)
        .collect()
}

/// Adds the spans that one rule finds in the text.
///
/// A match that the rule's check rejects (or whose value overlaps a marker of an earlier
/// redaction) is not skipped whole, as an iterator would: another match may start inside
/// it (a bare "Bearer" swallowing the `Authorization: Bearer ...` that follows it), and
/// it would surface only once the text before it had been redacted, so a second
/// redaction would change the text again. The search resumes at the rejected value
/// instead. Those rescans are limited to one extra pass over the text per rule, which
/// keeps the whole search linear.
fn find_rule_matches(
    rule_index: usize,
    rule: &RedactionRule,
    text: &str,
    existing_markers: &[Range<usize>],
    findings: &mut Vec<Finding>,
) {
    let mut rescan_budget = text.len();
    let mut position = 0;
    while position <= text.len() {
        let Some(captures) = rule.pattern.captures_at(text, position) else {
            break;
        };
        let Some(whole) = captures.get(0) else { break };
        let secret = secret_range(&captures).filter(|range| !range.is_empty());
        // A value that runs into a marker of an earlier redaction is treated as rejected
        // too, so that what follows the marker is searched as it will be next time.
        let accepted = secret
            .as_ref()
            .filter(|range| !overlaps_any(range, existing_markers) && (rule.accepts)(&captures));
        position = match accepted {
            Some(range) => {
                findings.push(Finding {
                    range: range.clone(),
                    rule_index,
                });
                range.end
            }
            None => {
                let resume_at = secret
                    .map_or(whole.start(), |range| range.start)
                    .max(next_character_boundary(text, whole.start()));
                let rescanned = whole.end().saturating_sub(resume_at);
                if rescanned <= rescan_budget {
                    rescan_budget -= rescanned;
                    resume_at
                } else {
                    whole
                        .end()
                        .max(next_character_boundary(text, whole.start()))
                }
            }
        };
    }
}

/// The byte offset of the character after the one at `offset` (or one past the end).
fn next_character_boundary(text: &str, offset: usize) -> usize {
    let width = text
        .get(offset..)
        .and_then(|rest| rest.chars().next())
        .map_or(1, char::len_utf8);
    offset + width
}

/// One span to replace and the rule that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Finding {
    range: Range<usize>,
    rule_index: usize,
}

/// Sorts the findings and merges those that overlap; a merged finding covers all of them
/// and keeps the earliest rule in the list.
fn merge_overlapping(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by_key(|finding| (finding.range.start, finding.range.end));
    let mut merged: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings {
        match merged.last_mut() {
            Some(previous) if finding.range.start < previous.range.end => {
                previous.range.end = previous.range.end.max(finding.range.end);
                previous.rule_index = previous.rule_index.min(finding.rule_index);
            }
            _ => merged.push(finding),
        }
    }
    merged
}

fn replace_findings(text: &str, findings: &[Finding]) -> PassOutcome {
    let mut output = String::with_capacity(text.len());
    let mut copied_up_to = 0;
    let mut fired_rules: u64 = 0;
    for finding in findings {
        output.push_str(&text[copied_up_to..finding.range.start]);
        output.push_str(MARKER_PREFIX);
        output.push_str(RULES[finding.rule_index].name);
        output.push(']');
        copied_up_to = finding.range.end;
        fired_rules |= 1 << finding.rule_index;
    }
    output.push_str(&text[copied_up_to..]);
    PassOutcome {
        text: output,
        count: findings.len(),
        fired_rules,
    }
}

/// The capture group that holds the secret, or the whole match.
fn secret_range(captures: &Captures<'_>) -> Option<Range<usize>> {
    secret_value(captures).map(|(value, _)| value.range())
}

/// How a value was written: quoted values are literal text, bare ones may be code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueForm {
    Quoted,
    Bare,
    WholeMatch,
}

fn secret_value<'text>(captures: &Captures<'text>) -> Option<(regex::Match<'text>, ValueForm)> {
    if let Some(value) = captures
        .name("secret")
        .or_else(|| captures.name("secret_single"))
    {
        return Some((value, ValueForm::Quoted));
    }
    if let Some(value) = captures.name("secret_bare") {
        return Some((value, ValueForm::Bare));
    }
    captures.get(0).map(|whole| (whole, ValueForm::WholeMatch))
}

/// Markers already in the text, from an earlier redaction, sorted by position.
fn find_existing_markers(text: &str) -> Vec<Range<usize>> {
    if !text.contains(MARKER_PREFIX) {
        return Vec::new();
    }
    EXISTING_MARKER
        .find_iter(text)
        .map(|found| found.range())
        .collect()
}

fn overlaps_any(range: &Range<usize>, sorted_ranges: &[Range<usize>]) -> bool {
    // The first range ending after `range` starts is the only one that can overlap it
    // without an earlier one doing so too.
    let first_candidate = sorted_ranges.partition_point(|other| other.end <= range.start);
    sorted_ranges
        .get(first_candidate)
        .is_some_and(|other| other.start < range.end)
}

static EXISTING_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[REDACTED:[a-z0-9-]+\]").expect("the marker pattern is a constant")
});

/// Which rules have a keyword in the text.
struct KeywordIndex {
    automaton: AhoCorasick,
    /// For each keyword (the automaton's pattern id), the rules it triggers, as bits.
    rules_by_keyword: Vec<u64>,
    all_rules: u64,
}

impl KeywordIndex {
    fn build(rules: &[RedactionRule]) -> Self {
        let mut keywords: Vec<&'static str> = Vec::new();
        let mut rules_by_keyword: Vec<u64> = Vec::new();
        for (rule_index, rule) in rules.iter().enumerate() {
            for keyword in rule.keywords {
                match keywords.iter().position(|known| known == keyword) {
                    Some(position) => rules_by_keyword[position] |= 1 << rule_index,
                    None => {
                        keywords.push(keyword);
                        rules_by_keyword.push(1 << rule_index);
                    }
                }
            }
        }
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&keywords)
            .expect("the keywords are constants");
        let all_rules = rules_by_keyword.iter().fold(0, |all, rules| all | rules);
        Self {
            automaton,
            rules_by_keyword,
            all_rules,
        }
    }

    fn rules_triggered_by(&self, text: &str) -> u64 {
        let mut triggered = 0;
        // Overlapping search, because one keyword may hide inside another (`sk-` in
        // `sk-ant-`) and a non-overlapping search would report only one of them.
        for found in self.automaton.find_overlapping_iter(text) {
            triggered |= self.rules_by_keyword[found.pattern().as_usize()];
            if triggered == self.all_rules {
                break;
            }
        }
        triggered
    }
}

static KEYWORD_INDEX: LazyLock<KeywordIndex> = LazyLock::new(|| KeywordIndex::build(&RULES));

/// A rule before its pattern is compiled.
struct RuleSpec {
    name: &'static str,
    description: &'static str,
    keywords: &'static [&'static str],
    pattern: &'static str,
    accepts: fn(&Captures<'_>) -> bool,
}

static RULES: LazyLock<Vec<RedactionRule>> = LazyLock::new(|| {
    RULE_SPECS
        .iter()
        .map(|spec| RedactionRule {
            name: spec.name,
            description: spec.description,
            keywords: spec.keywords,
            pattern: Regex::new(spec.pattern).unwrap_or_else(|error| {
                panic!("redaction rule {} has a bad pattern: {error}", spec.name)
            }),
            accepts: spec.accepts,
        })
        .collect()
});

/// A name (of a variable, key or flag) containing one of the words secrets are kept
/// under; [`name_looks_secret`] judges the whole name. Used inside larger patterns.
macro_rules! secret_name {
    () => {
        concat!(
            r"[A-Za-z0-9_.-]*",
            r"(?i:pass|pwd|secret|token|credential|api[_.-]?key|access[_.-]?key|",
            r"private[_.-]?key|auth[_.-]?key)",
            r"[A-Za-z0-9_.-]*",
        )
    };
}

/// A double-quoted value with backslash escapes, its closing quote optional so that a
/// value cut off at the end of a line is still caught.
macro_rules! double_quoted_value {
    () => {
        r#""(?P<secret>(?:[^"\\\r\n]|\\.)*)"?"#
    };
}

/// A single-quoted value, closing quote optional as above.
macro_rules! single_quoted_value {
    () => {
        r"'(?P<secret_single>(?:[^'\\\r\n]|\\.)*)'?"
    };
}

/// A PEM armour line `-----BEGIN|END ... PRIVATE KEY-----` (also PGP's `KEY BLOCK`).
macro_rules! pem_armour {
    ($edge:literal) => {
        concat!("-----", $edge, r"[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----")
    };
}

/// The rules, most specific first: see the module documentation for why the order
/// matters.
const RULE_SPECS: &[RuleSpec] = &[
    RuleSpec {
        name: "private-key",
        description: "A PEM or PGP private key block, from its BEGIN line through its END \
                      line; an unterminated block up to where the key text stops, and \
                      base64 lines just before an END line whose BEGIN was cut off.",
        keywords: &["private key"],
        pattern: concat!(
            pem_armour!("BEGIN"),
            // Key text: base64, blank lines, `Proc-Type:` style headers, and `\n`
            // escapes when the key sits inside a JSON string. A dash is allowed only
            // before a letter or digit, so the body stops at the `-----` of the END line.
            r"(?:[A-Za-z0-9+/=\\\s:,.]|-[A-Za-z0-9])*",
            "(?:",
            pem_armour!("END"),
            ")?",
            "|",
            r"(?m:^)(?:[A-Za-z0-9+/=]{16,}(?:\r?\n|\\n))+",
            pem_armour!("END"),
        ),
        accepts: accept_any,
    },
    RuleSpec {
        name: "aws-access-key-id",
        description: "An AWS access key id: AKIA, ASIA, ABIA, ACCA or A3T plus one \
                      character, then 16 characters of base32.",
        keywords: &["akia", "asia", "abia", "acca", "a3t"],
        pattern: r"(?-u:\b)(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?-u:\b)",
        accepts: accept_any,
    },
    RuleSpec {
        name: "aws-secret-access-key",
        description: "A 40-character AWS secret access key assigned to a name containing \
                      AWS and SECRET (environment, ini, JSON or YAML).",
        keywords: &["secret"],
        pattern: concat!(
            r"(?i:aws)[A-Za-z0-9_.-]{0,20}(?i:secret)[A-Za-z0-9_.-]{0,20}",
            r#"["']?[ \t]*(?:=>|[:=])[ \t]*["']?"#,
            // Exactly 40: the character after must not continue the value.
            r"(?P<secret>[A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|\z)",
        ),
        accepts: accept_any,
    },
    RuleSpec {
        name: "github-token",
        description: "A GitHub token: ghp_, gho_, ghu_, ghs_ or ghr_ and 36 or more \
                      letters and digits, or a fine-grained github_pat_ token.",
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        pattern: r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255}",
        accepts: accept_any,
    },
    RuleSpec {
        name: "gitlab-token",
        description: "A GitLab token: glpat-, gldt-, glrt- or glptt- and 20 or more \
                      characters.",
        keywords: &["glpat-", "gldt-", "glrt-", "glptt-"],
        pattern: r"gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*",
        accepts: accept_any,
    },
    RuleSpec {
        name: "slack-token",
        description: "A Slack token: xoxa-, xoxb-, xoxp-, xoxo-, xoxs- or xoxr- and at \
                      least 10 more characters.",
        keywords: &["xox"],
        pattern: r"xox[abposr]-[A-Za-z0-9-]{10,}",
        accepts: accept_any,
    },
    RuleSpec {
        name: "anthropic-key",
        description: "An Anthropic API key: sk-ant- and 20 or more characters.",
        keywords: &["sk-ant-"],
        pattern: r"sk-ant-[A-Za-z0-9_-]{20,}",
        accepts: accept_any,
    },
    RuleSpec {
        name: "openai-key",
        description: "An OpenAI API key: sk-, sk-proj-, sk-svcacct- or sk-admin- and 20 \
                      or more characters mixing upper case, lower case and digits.",
        keywords: &["sk-"],
        pattern: r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        accepts: accept_mixed_case_and_digits,
    },
    RuleSpec {
        name: "google-api-key",
        description: "A Google API key: AIza and 35 more characters.",
        keywords: &["aiza"],
        pattern: r"AIza[A-Za-z0-9_-]{35}",
        accepts: accept_any,
    },
    RuleSpec {
        name: "stripe-key",
        description: "A Stripe secret or restricted key: sk_ or rk_, then test_, live_ or \
                      prod_, then 10 or more letters and digits.",
        keywords: &["_test_", "_live_", "_prod_"],
        pattern: r"(?-u:\b)[sr]k_(?:test|live|prod)_[A-Za-z0-9]{10,}",
        accepts: accept_any,
    },
    RuleSpec {
        name: "npm-token",
        description: "An npm access token: npm_ and 36 letters and digits.",
        keywords: &["npm_"],
        pattern: r"npm_[A-Za-z0-9]{36}",
        accepts: accept_any,
    },
    RuleSpec {
        name: "bearer",
        description: "The credentials of an Authorization header using the Bearer or \
                      Token scheme, and long random-looking values after the word Bearer.",
        keywords: &["bearer", "authorization"],
        pattern: concat!(
            r#"(?i:(?P<header>authorization)["']?[ \t]*[:=][ \t]*["']?(?:bearer|token)"#,
            r"|(?-u:\b)bearer)",
            r"[ \t]+(?P<secret>[A-Za-z0-9._~+/-]+=*)",
        ),
        accepts: accept_bearer,
    },
    RuleSpec {
        name: "basic-auth",
        description: "The base64 user and password of an Authorization header using the \
                      Basic scheme.",
        keywords: &["basic"],
        pattern: concat!(
            r#"(?i:authorization["']?[ \t]*[:=][ \t]*["']?basic)"#,
            r"[ \t]+(?P<secret>[A-Za-z0-9+/]+=*)",
        ),
        accepts: accept_any,
    },
    RuleSpec {
        name: "jwt",
        description: "A JSON Web Token: three base64url segments separated by dots, the \
                      first two starting with eyJ (an encoded `{\"`).",
        keywords: &["eyj"],
        pattern: r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        accepts: accept_any,
    },
    RuleSpec {
        name: "url-password",
        description: "The password in a URL's user information (scheme://user:password@).",
        keywords: &["://"],
        pattern: concat!(
            r"(?i:[a-z][a-z0-9+.-]{0,30})://",
            // The password may hold an unescaped `@`; it runs to the authority's last one.
            r#"[^\s:/?#@'"<>\[\]]*:(?P<secret>[^\s/?#'"<>]+)@"#,
        ),
        accepts: accept_any,
    },
    RuleSpec {
        name: "json-secret",
        description: "The string value of a quoted key named like a secret (password, \
                      secret, token, API key, access key, private key, credential), as \
                      in JSON, Python or Ruby.",
        keywords: SECRET_NAME_KEYWORDS,
        pattern: concat!(
            r#"["'](?P<name>"#,
            secret_name!(),
            r#")["'][ \t]*(?:=>|:)[ \t]*(?:"#,
            double_quoted_value!(),
            "|",
            single_quoted_value!(),
            ")",
        ),
        accepts: accept_named_value,
    },
    RuleSpec {
        name: "env-secret",
        description: "The value assigned with = to a name like a secret's: environment \
                      variables (`export DB_PASSWORD=...`), ini and TOML keys, URL query \
                      parameters and `--flag=value` arguments.",
        keywords: SECRET_NAME_KEYWORDS,
        pattern: concat!(
            "(?P<name>",
            secret_name!(),
            r")[ \t]*=[ \t]*(?:",
            double_quoted_value!(),
            "|",
            single_quoted_value!(),
            r#"|(?P<secret_bare>[^\s"'`,;&]+))"#,
        ),
        accepts: accept_named_value,
    },
    RuleSpec {
        name: "yaml-secret",
        description: "The value after `name: ` for a name like a secret's: YAML keys and \
                      HTTP headers such as X-Api-Key. Type annotations in code \
                      (`token: &str`, `password: String,`) are left alone.",
        keywords: SECRET_NAME_KEYWORDS,
        pattern: concat!(
            "(?P<name>",
            secret_name!(),
            r")[ \t]*:[ \t]+(?:",
            double_quoted_value!(),
            "|",
            single_quoted_value!(),
            r#"|(?P<secret_bare>[^\s"'`,;()<>{}\[\]=]+)[ \t]*(?P<tail>[,;)>=(<{\[]?))"#,
        ),
        accepts: accept_yaml_value,
    },
    RuleSpec {
        name: "flag-secret",
        description: "The argument after a command-line flag named like a secret's, \
                      separated by white space (`--password hunter2`).",
        keywords: SECRET_NAME_KEYWORDS,
        pattern: concat!(
            r#"(?m:^|[\s"'])--(?P<name>"#,
            secret_name!(),
            r")[ \t]+(?:",
            double_quoted_value!(),
            "|",
            single_quoted_value!(),
            r#"|(?P<secret_bare>[^\s"'`;&|<>-][^\s"'`;&|<>]*))"#,
        ),
        accepts: accept_named_value,
    },
    RuleSpec {
        name: "high-entropy",
        description: "A random-looking string of 20 or more base64 or hex characters \
                      right after the word key, secret, token, password, credential or \
                      auth.",
        keywords: &[
            "key",
            "secret",
            "token",
            "passw",
            "pwd",
            "credential",
            "auth",
        ],
        pattern: concat!(
            r"(?i:(?-u:\b)(?:api[_-]?key|key|secret|token|password|passwd|pwd|",
            r"credentials?|auth)s?(?-u:\b))",
            r#"[ \t:=>"'(\[,]{1,6}(?P<secret>[A-Za-z0-9+/=_-]{20,})"#,
        ),
        accepts: accept_high_entropy,
    },
];

/// Keywords of the rules built on [`secret_name`]: one of them is in every such name.
const SECRET_NAME_KEYWORDS: &[&str] = &[
    "pass",
    "pwd",
    "secret",
    "token",
    "credential",
    "apikey",
    "api_key",
    "api-key",
    "api.key",
    "accesskey",
    "access_key",
    "access-key",
    "access.key",
    "privatekey",
    "private_key",
    "private-key",
    "private.key",
    "authkey",
    "auth_key",
    "auth-key",
    "auth.key",
];

fn accept_any(_captures: &Captures<'_>) -> bool {
    true
}

/// Keeps hyphenated names such as `sk-some-long-package-name` from passing for keys.
fn accept_mixed_case_and_digits(captures: &Captures<'_>) -> bool {
    captures.get(0).is_some_and(|whole| {
        let value = whole.as_str();
        value.bytes().any(|byte| byte.is_ascii_uppercase())
            && value.bytes().any(|byte| byte.is_ascii_lowercase())
            && value.bytes().any(|byte| byte.is_ascii_digit())
    })
}

/// After an Authorization header any credentials count; after a bare "Bearer" only a
/// long value with a digit does, so that prose ("the bearer of ...") is left alone.
fn accept_bearer(captures: &Captures<'_>) -> bool {
    let Some(value) = captures.name("secret").map(|found| found.as_str()) else {
        return false;
    };
    if captures.name("header").is_some() {
        return value.bytes().any(|byte| byte.is_ascii_alphanumeric());
    }
    value.len() >= 16 && value.bytes().any(|byte| byte.is_ascii_digit())
}

fn accept_named_value(captures: &Captures<'_>) -> bool {
    let Some(name) = captures.name("name") else {
        return false;
    };
    let Some((value, form)) = secret_value(captures) else {
        return false;
    };
    name_looks_secret(name.as_str()) && value_may_be_secret(value.as_str(), form)
}

/// `name: value` is also how code annotates types (`token: Token,`, `fn f(pass: &str)`,
/// `let key: Option<String> = ...`), so bare values followed by code punctuation or
/// naming a type are not taken for secrets.
fn accept_yaml_value(captures: &Captures<'_>) -> bool {
    if !accept_named_value(captures) {
        return false;
    }
    let Some(value) = captures.name("secret_bare").map(|found| found.as_str()) else {
        return true;
    };
    let tail = captures.name("tail").map_or("", |found| found.as_str());
    if is_type_name(value) {
        return false;
    }
    match tail {
        "" => true,
        "," => !value.starts_with(|first: char| first.is_ascii_uppercase()),
        _ => false,
    }
}

fn accept_high_entropy(captures: &Captures<'_>) -> bool {
    captures
        .name("secret")
        .is_some_and(|value| looks_random(value.as_str()))
}

/// Whether a value is random enough to be a key. Hex strings carry at most 4 bits per
/// character, so they are judged on their own (long, and not one repeated pattern);
/// others must come near the entropy that random characters of their length reach, and
/// contain a digit or both cases, which words and identifiers rarely combine.
fn looks_random(value: &str) -> bool {
    if value.len() < 20 {
        return false;
    }
    let entropy = shannon_entropy_bits_per_byte(value.as_bytes());
    if value.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return value.len() >= 32 && entropy >= 3.0;
    }
    let has_digit = value.bytes().any(|byte| byte.is_ascii_digit());
    let has_both_cases = value.bytes().any(|byte| byte.is_ascii_uppercase())
        && value.bytes().any(|byte| byte.is_ascii_lowercase());
    // A string of n characters cannot exceed log2(n) bits per character, so short random
    // strings fall below a flat 4.0; the bar is 85 % of that ceiling, and 4.0 at most.
    let threshold = (0.85 * (value.len() as f64).log2()).min(4.0);
    (has_digit || has_both_cases) && entropy >= threshold
}

fn shannon_entropy_bits_per_byte(bytes: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &byte in bytes {
        counts[usize::from(byte)] += 1;
    }
    let total = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&count| count > 0)
        .map(|&count| {
            let probability = f64::from(count) / total;
            -probability * probability.log2()
        })
        .sum()
}

/// Name parts that mark a secret wherever they appear in a name (after removing
/// separators and case), e.g. `DB_PASSWORD`, `clientSecret`, `x-api-key`.
const DISTINCTIVE_NAME_PARTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "authkey",
];

/// Last words of names that are about a secret rather than holding it: `TOKEN_COUNT`,
/// `PASSWORD_FILE`, `SECRET_NAME`, `--password-stdin`.
const NON_SECRET_LAST_WORDS: &[&str] = &[
    "count", "counts", "len", "length", "size", "type", "kind", "limit", "min", "max", "file",
    "path", "dir", "url", "uri", "endpoint", "name", "env", "var", "header", "field", "stdin",
    "id", "ids", "expiry", "expires", "ttl", "timeout", "enabled", "required", "prompt", "policy",
    "format", "mode", "location",
];

/// Whether a variable, key or flag name holds a secret. Short words (token, pass, pwd)
/// count only as the name's last word, so `token_count` and `bypass` do not, and the
/// shell's own `PWD` and `OLDPWD` do not either.
fn name_looks_secret(name: &str) -> bool {
    let words = split_name_into_words(name);
    let Some(last_word) = words.last() else {
        return false;
    };
    if NON_SECRET_LAST_WORDS.contains(&last_word.as_str()) {
        return false;
    }
    let joined = words.concat();
    if DISTINCTIVE_NAME_PARTS
        .iter()
        .any(|part| joined.contains(part))
    {
        return true;
    }
    last_word.ends_with("token") || last_word == "pass" || (words.len() > 1 && last_word == "pwd")
}

/// Lower-case words of a name split at `_`, `.`, `-` and camelCase humps.
fn split_name_into_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_was_lower_or_digit = false;
    for character in name.chars() {
        if matches!(character, '_' | '.' | '-') {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_was_lower_or_digit = false;
            continue;
        }
        if character.is_ascii_uppercase() && previous_was_lower_or_digit && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_was_lower_or_digit = character.is_ascii_lowercase() || character.is_ascii_digit();
        current.push(character.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Values that say a secret is absent rather than being one.
const PLACEHOLDER_VALUES: &[&str] = &["null", "none", "nil", "true", "false", "undefined"];

/// Whether an assigned value can be a secret: it has a letter or digit, is not a
/// placeholder, and, when unquoted, is not a reference (`$TOKEN`, `%TOKEN%`, `${...}`)
/// or code (`getpass()`, `&str`, `Config::token`).
fn value_may_be_secret(value: &str, form: ValueForm) -> bool {
    if !value.chars().any(char::is_alphanumeric) {
        return false;
    }
    if PLACEHOLDER_VALUES
        .iter()
        .any(|placeholder| value.eq_ignore_ascii_case(placeholder))
    {
        return false;
    }
    if form != ValueForm::Bare {
        return true;
    }
    let starts_like_code =
        value.starts_with(['$', '%', '&', '*', '<', '{', '[', '(', '|', '>', '!']);
    let contains_code = value.contains('(') || value.contains("::") || value.contains("->");
    !starts_like_code && !contains_code
}

/// Type names that follow `name:` in Rust, TypeScript, Python and Go signatures.
fn is_type_name(value: &str) -> bool {
    const TYPE_NAMES: &[&str] = &[
        "str", "string", "bool", "boolean", "int", "integer", "number", "float", "double", "usize",
        "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128", "f32",
        "f64", "char", "any", "object", "bytes", "self",
    ];
    TYPE_NAMES
        .iter()
        .any(|type_name| value.eq_ignore_ascii_case(type_name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Fake secrets are put together at run time so that this file holds no string a
    /// secret scanner would flag.
    fn fake(parts: &[&str]) -> String {
        parts.concat()
    }

    fn alphanumeric_run(length: usize) -> String {
        const ALPHABET: &[u8] = b"aB3dE5fG7hJ9kLmN2pQr4StU6vWx8yZ";
        (0..length)
            .map(|index| char::from(ALPHABET[(index * 7 + 3) % ALPHABET.len()]))
            .collect()
    }

    fn fake_github_token() -> String {
        fake(&["gh", "p_", &alphanumeric_run(36)])
    }

    fn fake_jwt() -> String {
        fake(&[
            "ey",
            "JhbGciOiJIUzI1NiJ9.",
            "ey",
            "JzdWIiOiIxMjM0NTY3ODkwIn0.",
            "dBjftJeZ4CVPmB92K27uhbUJU1p1r",
        ])
    }

    fn fake_private_key_block(kind: &str) -> String {
        let armour = |edge: &str| format!("-----{edge} {kind}PRIVATE {}-----", "KEY");
        format!(
            "{}\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq1w2e3r4t5y6u7i8o9p0==\n{}",
            armour("BEGIN"),
            armour("END")
        )
    }

    /// A text holding one secret, and what redaction must make of it.
    struct Sample {
        rule: &'static str,
        input: String,
        expected: String,
    }

    /// `before`, `secret` and `after` as input; the secret replaced by the rule's marker
    /// as the expected output.
    fn sample(rule: &'static str, before: &str, secret: &str, after: &str) -> Sample {
        Sample {
            rule,
            input: format!("{before}{secret}{after}"),
            expected: format!("{before}[REDACTED:{rule}]{after}"),
        }
    }

    /// One sample for each rule that recognises a token by its own format.
    fn token_format_samples() -> Vec<Sample> {
        let run = alphanumeric_run;
        vec![
            sample(
                "private-key",
                "key:\n",
                &fake_private_key_block("RSA "),
                "\ndone",
            ),
            sample(
                "aws-access-key-id",
                "id ",
                &fake(&["AK", "IA", "QWERTYUIOPASDFGH"]),
                " used",
            ),
            sample(
                "github-token",
                "push with ",
                &fake(&["github", "_pat_", &run(82)]),
                ".",
            ),
            sample(
                "gitlab-token",
                "token ",
                &fake(&["gl", "pat-", &run(20)]),
                "",
            ),
            sample(
                "slack-token",
                "slack=",
                &fake(&["xo", "xb-", "1234567890-", &run(24)]),
                "",
            ),
            sample(
                "anthropic-key",
                "key ",
                &fake(&["sk", "-ant-api03-", &run(40)]),
                "",
            ),
            sample(
                "openai-key",
                "using ",
                &fake(&["sk", "-proj-", &run(48)]),
                " now",
            ),
            sample(
                "google-api-key",
                "maps?k=",
                &fake(&["AI", "za", &run(35)]),
                "",
            ),
            sample(
                "stripe-key",
                "stripe ",
                &fake(&["sk", "_live_", &run(24)]),
                "",
            ),
            sample(
                "npm-token",
                "//registry/:_authToken ",
                &fake(&["np", "m_", &run(36)]),
                "",
            ),
            sample("jwt", "cookie ", &fake_jwt(), " end"),
        ]
    }

    /// One sample for each rule that recognises a secret by what stands before it.
    fn context_samples() -> Vec<Sample> {
        let aws_secret = fake(&["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzEXAMPLEKE"]);
        vec![
            sample(
                "aws-secret-access-key",
                "aws_secret_access_key = ",
                &aws_secret,
                "\n",
            ),
            sample(
                "bearer",
                "curl -H 'Authorization: Bearer ",
                "abc.DEF-123_xyz",
                "'",
            ),
            sample(
                "basic-auth",
                "Authorization: Basic ",
                "dXNlcjpodW50ZXIy",
                "\n",
            ),
            sample(
                "url-password",
                "cloning https://user:",
                "hunter2",
                "@example.com/r.git",
            ),
            sample(
                "json-secret",
                r#"{"user": "bob", "password": ""#,
                "hunter2",
                r#""}"#,
            ),
            sample("env-secret", "export DB_PASSWORD=\"", "hunter2", "\""),
            sample("yaml-secret", "db:\n  password: ", "hunter2", "\n"),
            sample(
                "flag-secret",
                "docker login --password ",
                "hunter2",
                " registry",
            ),
            sample(
                "high-entropy",
                "the api key ",
                "9fQ2xLm7Rt4WvB8nK3pZ6yHd",
                " was rotated",
            ),
        ]
    }

    fn samples() -> Vec<Sample> {
        let mut samples = token_format_samples();
        samples.extend(context_samples());
        samples
    }

    #[test]
    fn every_rule_has_a_sample_and_the_sample_is_redacted_by_that_rule() {
        let samples = samples();
        for rule in rules() {
            assert!(
                samples.iter().any(|sample| sample.rule == rule.name),
                "no sample for {}",
                rule.name
            );
        }
        for sample in samples {
            let redaction = redact(&sample.input);
            assert_eq!(redaction.text, sample.expected, "rule {}", sample.rule);
            assert_eq!(redaction.count, 1, "rule {}", sample.rule);
            assert_eq!(redaction.rules, vec![sample.rule]);
        }
    }

    #[test]
    fn rule_names_are_unique_and_documented() {
        let mut names: Vec<&str> = rules().iter().map(|rule| rule.name).collect();
        assert!(names.len() <= 64, "the rule sets are u64 bit masks");
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), rules().len());
        for rule in rules() {
            assert!(!rule.description.is_empty(), "{}", rule.name);
            assert!(
                rule.keywords
                    .iter()
                    .all(|keyword| *keyword == keyword.to_ascii_lowercase())
            );
        }
    }

    fn assert_redacts_to(input: &str, expected: &str) {
        assert_eq!(redact(input).text, expected, "input: {input}");
    }

    fn assert_unchanged(input: &str) {
        let redaction = redact(input);
        assert_eq!(redaction.text, input, "rules fired: {:?}", redaction.rules);
        assert_eq!(redaction.count, 0);
    }

    #[test]
    fn assignment_forms_keep_the_name() {
        assert_redacts_to("password=hunter2", "password=[REDACTED:env-secret]");
        assert_redacts_to(
            "AWS_SECRET_ACCESS_KEY=tooShortForTheAwsRule",
            "AWS_SECRET_ACCESS_KEY=[REDACTED:env-secret]",
        );
        assert_redacts_to(
            "export API_KEY='abc 123'",
            "export API_KEY='[REDACTED:env-secret]'",
        );
        assert_redacts_to(
            "GET /cb?code=1&access_token=abc123&x=1",
            "GET /cb?code=1&access_token=[REDACTED:env-secret]&x=1",
        );
        assert_redacts_to(
            "run --db-password=s3cr3t",
            "run --db-password=[REDACTED:env-secret]",
        );
        assert_redacts_to("X-Api-Key: abc123\n", "X-Api-Key: [REDACTED:yaml-secret]\n");
        assert_redacts_to(
            "clientSecret: 'abc'",
            "clientSecret: '[REDACTED:yaml-secret]'",
        );
        assert_redacts_to(
            "{'api_key' => 'abc'}",
            "{'api_key' => '[REDACTED:json-secret]'}",
        );
        assert_redacts_to(
            r#"{"token":"a\"b"}"#,
            r#"{"token":"[REDACTED:json-secret]"}"#,
        );
        assert_redacts_to("PASSWORD=\"cut off", "PASSWORD=\"[REDACTED:env-secret]");
        assert_redacts_to(
            "postgres://app:p@ss@db:5432/main",
            "postgres://app:[REDACTED:url-password]@db:5432/main",
        );
        assert_redacts_to(
            "Authorization: token abc123",
            "Authorization: token [REDACTED:bearer]",
        );
    }

    #[test]
    fn private_key_variants() {
        let block = fake_private_key_block("");
        let tail_only = block
            .split_once('\n')
            .map_or("", |(_, rest)| rest)
            .to_owned();
        assert_redacts_to(
            &format!("cut:\n{tail_only}\nok"),
            "cut:\n[REDACTED:private-key]\nok",
        );
        let unterminated = block
            .rsplit_once('\n')
            .map_or("", |(head, _)| head)
            .to_owned();
        assert_eq!(redact(&unterminated).text, "[REDACTED:private-key]");
        let escaped = block.replace('\n', "\\n");
        assert_redacts_to(
            &format!(r#"{{"private_key": "{escaped}\n", "x": 1}}"#),
            r#"{"private_key": "[REDACTED:private-key]", "x": 1}"#,
        );
        let openssh = fake_private_key_block("OPENSSH ");
        assert_redacts_to(&openssh, "[REDACTED:private-key]");
    }

    #[test]
    fn overlapping_rules_give_one_marker_named_by_the_most_specific_rule() {
        let token = fake_github_token();
        let redaction = redact(&format!("GITHUB_TOKEN={token}\n"));
        assert_eq!(redaction.text, "GITHUB_TOKEN=[REDACTED:github-token]\n");
        assert_eq!(redaction.count, 1);
        assert_eq!(redaction.rules, vec!["github-token"]);

        let jwt = fake_jwt();
        assert_redacts_to(
            &format!("Authorization: Bearer {jwt}"),
            "Authorization: Bearer [REDACTED:bearer]",
        );
        assert_redacts_to(&format!("token: {jwt}"), "token: [REDACTED:jwt]");

        let gitlab = fake(&["gl", "pat-", &alphanumeric_run(24)]);
        assert_redacts_to(
            &format!("https://oauth2:{gitlab}@gitlab.example.com/g/p.git"),
            "https://oauth2:[REDACTED:gitlab-token]@gitlab.example.com/g/p.git",
        );
        // A token glued to the end of another value: the union is replaced, nothing of
        // either is left.
        assert_redacts_to(
            &format!("password=abc{token}"),
            "password=[REDACTED:github-token]",
        );
    }

    #[test]
    fn several_secrets_are_counted_and_rules_listed_in_rule_order() {
        let input = format!(
            "password=hunter2\nuse {}\nurl https://u:p@h/",
            fake_github_token()
        );
        let redaction = redact(&input);
        assert_eq!(redaction.count, 3);
        assert_eq!(
            redaction.rules,
            vec!["github-token", "url-password", "env-secret"]
        );
    }

    #[test]
    fn ordinary_code_is_not_redacted() {
        for line in [
            "fn login(password: &str) -> Result<Token, Error> {",
            "    token: Token,",
            "    pub api_key: Option<String>,",
            "let token = lexer.next_token();",
            "if password_hash_function(input) == stored {",
            "let secret = env::var(\"SECRET\")?;",
            "def check(password: str) -> bool:",
            "let key: Vec<u8> = derive(&password);",
            "    password: String::new(),",
            "PASSWORD=$DB_PASSWORD ./run",
            "token=${GITHUB_TOKEN}",
            "if (token == null) return;",
            "headers = {'Authorization': f'Bearer {token}'}",
        ] {
            assert_unchanged(line);
        }
    }

    #[test]
    fn ordinary_output_is_not_redacted() {
        for line in [
            "commit 3f2a9c0d1e4b5a6978c0d1e2f3a4b5c6d7e8f901",
            "request 123e4567-e89b-12d3-a456-426614174000 done",
            "The lexer reads a token; each token has a kind and a secret is never logged.",
            "test result: ok. 42 passed; 0 failed; 0 ignored",
            "   Compiling tokenizers v0.15.0",
            "warning: unused variable: `token`",
            "error: expected token: `}`",
            "PWD=/home/user/project",
            "OLDPWD=/home/user",
            "max_tokens=4096 token_count=5",
            "PASSWORD_FILE=/run/secrets/db",
            "docker login --password-stdin registry.example.com",
            "https://github.com/org/repo and git@github.com:org/repo.git",
            "http://localhost:8080/a@b",
            "pip install sk-some-long-hyphenated-package-name",
            "the bearer of bad news",
            "sort by key, then by value",
            "key: this_is_just_a_config_name",
            "bypass=1 compass=north",
        ] {
            assert_unchanged(line);
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        // Inputs the property tests once found where a second redaction still changed the
        // text: a rejected match hiding an accepted one, a value running into an old
        // marker, and a value judged anew once its neighbour had become a marker.
        let found_by_property_tests = [
            "password=Bearer Authorization: Bearer a".to_owned(),
            format!(
                "-----BEGIN PRIVATE {}-----\npassword: \"[REDACTED:env-secret]passwordAuthorization: Bearer ",
                "KEY"
            ),
            format!(
                "key 0Df+A+c+b+aapi_key-------BEGIN PRIVATE {}-----\n",
                "KEY"
            ),
        ];
        let inputs = samples().into_iter().map(|sample| sample.input);
        for input in inputs.chain(found_by_property_tests) {
            let once = redact(&input);
            let twice = redact(&once.text);
            assert_eq!(twice.text, once.text);
            assert_eq!(twice.count, 0, "{}", once.text);
        }
    }

    #[test]
    fn entropy_of_uniform_and_constant_strings() {
        assert_eq!(shannon_entropy_bits_per_byte(b"aaaa"), 0.0);
        assert!((shannon_entropy_bits_per_byte(b"abcd") - 2.0).abs() < 1e-9);
        assert!(!looks_random("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
        assert!(looks_random("9fQ2xLm7Rt4WvB8nK3pZ6yHd"));
        assert!(looks_random("3f2a9c0d1e4b5a6978c0d1e2f3a4b5c6"));
    }

    #[test]
    fn name_words_split_at_separators_and_humps() {
        assert_eq!(split_name_into_words("dbPassword"), ["db", "password"]);
        assert_eq!(
            split_name_into_words("--x-api_key.v2"),
            ["x", "api", "key", "v2"]
        );
        assert_eq!(split_name_into_words("APIKey"), ["apikey"]);
        assert!(name_looks_secret("GITHUB_TOKEN"));
        assert!(name_looks_secret("authToken"));
        assert!(!name_looks_secret("token_count"));
        assert!(!name_looks_secret("PWD"));
        assert!(name_looks_secret("DB_PWD"));
    }

    /// Pieces that make rules fire, overlap and meet existing markers.
    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("password".to_owned()),
            Just("token".to_owned()),
            Just("secret".to_owned()),
            Just("api_key".to_owned()),
            Just("Authorization: Bearer ".to_owned()),
            Just("Bearer ".to_owned()),
            Just("https://".to_owned()),
            Just("--".to_owned()),
            Just("=".to_owned()),
            Just(": ".to_owned()),
            Just("\"".to_owned()),
            Just("'".to_owned()),
            Just("@".to_owned()),
            Just(" ".to_owned()),
            Just("\n".to_owned()),
            Just("[REDACTED:env-secret]".to_owned()),
            Just("[REDACTED:".to_owned()),
            Just(format!("-----BEGIN PRIVATE {}-----\n", "KEY")),
            Just(format!("-----END PRIVATE {}-----", "KEY")),
            Just("://u:p@".to_owned()),
            Just("{\"token\": \"".to_owned()),
            Just("X-Api-Key: ".to_owned()),
            Just("key ".to_owned()),
            Just("\\n".to_owned()),
            Just("9fQ2xLm7Rt4WvB8nK3pZ6yHd".to_owned()),
            Just(fake_github_token()),
            Just(fake_jwt()),
            "[A-Za-z0-9+/]{1,30}",
            "[a-z_]{1,8}",
        ]
    }

    fn fragments() -> impl Strategy<Value = String> {
        prop::collection::vec(fragment(), 0..24).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn never_panics_and_is_idempotent_on_any_text(text in any::<String>()) {
            let once = redact(&text);
            prop_assert_eq!(redact(&once.text).text, once.text);
        }

        #[test]
        fn is_idempotent_on_secret_like_fragments(text in fragments()) {
            let once = redact(&text);
            let twice = redact(&once.text);
            prop_assert_eq!(&twice.text, &once.text);
            prop_assert!(once.text.matches(MARKER_PREFIX).count() >= once.count);
        }

        #[test]
        fn planted_tokens_never_survive(
            prefix in "[a-z ,.\n]{0,40}",
            suffix in "[a-z ,.\n]{0,40}",
            body in "[A-Za-z0-9]{36}",
            choice in 0usize..4,
        ) {
            let token = match choice {
                0 => fake(&["gh", "p_", &body]),
                1 => fake(&["np", "m_", &body]),
                2 => fake(&["sk", "-ant-", &body]),
                _ => fake(&["gl", "pat-", &body]),
            };
            let text = format!("{prefix} {token} {suffix}");
            let redaction = redact(&text);
            prop_assert!(!redaction.text.contains(&token));
            prop_assert!(!redaction.text.contains(&body));
        }

        #[test]
        fn text_without_any_trigger_is_returned_unchanged(
            text in "[bcdfghjlmnqrstvwyzBCDFGHJLMNQRSTVWYZ0-9 \n.,;=()#+*{}]{0,300}",
        ) {
            let redaction = redact(&text);
            prop_assert_eq!(&redaction.text, &text);
            prop_assert_eq!(redaction.count, 0);
        }
    }
}
