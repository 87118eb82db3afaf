//! The examples of C11 6.10.3.5 with their documented results, and the bounds.

use super::*;

/// Defines each `#define`/`#undef` line of `directives` in order, expands `source`, and
/// compares token by token with `expected` (spacing aside, as the standard says).
fn check(directives: &str, source: &str, expected: &str) {
    let mut table = MacroTable::default();
    for line in directives
        .split_terminator('\n')
        .filter(|l| !l.trim().is_empty())
    {
        if let Some(name) = line.trim().strip_prefix("#undef ") {
            table.undefine(name.trim());
            continue;
        }
        let (name, definition) = MacroDefinition::parse(line).expect(line);
        table.define(&name, definition);
    }
    let expanded = expand(&table, lex(source, 0)).expect("expands");
    let spelled: Vec<&str> = expanded.iter().map(|t| t.text.as_str()).collect();
    let wanted: Vec<String> = lex(expected, 0).into_iter().map(|t| t.text).collect();
    assert_eq!(
        spelled,
        wanted,
        "\n got: {}\nwant: {expected}",
        render(&expanded)
    );
}

const EXAMPLE_3: &str = "#define x 3
#define f(a) f(x * (a))
#undef x
#define x 2
#define g f
#define z z[0]
#define h g(~
#define m(a) a(w)
#define w 0,1
#define t(a) a
#define p() int
#define q(x) x
#define r(x,y) x ## y
#define str(x) # x
";

#[test]
fn example_3_rescanning_and_hide_sets() {
    check(
        EXAMPLE_3,
        "f(y+1) + f(f(z)) % t(t(g)(0) + t)(1);",
        "f(2 * (y+1)) + f(2 * (f(2 * (z[0])))) % f(2 * (0)) + t(1);",
    );
    check(
        EXAMPLE_3,
        "g(x+(3,4)-w) | h 5) & m\n(f)^m(m);",
        "f(2 * (2+(3,4)-0,1)) | f(2 * (~ 5)) & f(2 * (0,1))^m(0,1);",
    );
}

#[test]
fn example_3_empty_arguments_and_stringizing() {
    check(
        EXAMPLE_3,
        "p() i[q()] = { q(1), r(2,3), r(4,), r(,5), r(,) };\nchar c[2][6] = { str(hello), str() };",
        "int i[] = { 1, 23, 4, 5, };\nchar c[2][6] = { \"hello\", \"\" };",
    );
}

const EXAMPLE_4: &str = r#"#define str(s) # s
#define xstr(s) str(s)
#define debug(s, t) printf("x" # s "= %d, x" # t "= %s", x ## s, x ## t)
#define INCFILE(n) vers ## n
#define glue(a, b) a ## b
#define xglue(a, b) glue(a, b)
#define HIGHLOW "hello"
#define LOW LOW ", world"
"#;

#[test]
fn example_4_stringizing_and_pasting() {
    check(
        EXAMPLE_4,
        "debug(1, 2);",
        r#"printf("x" "1" "= %d, x" "2" "= %s", x1, x2);"#,
    );
    check(
        EXAMPLE_4,
        "fputs(str(strncmp(\"abc\\0d\", \"abc\", '\\4') // this goes away\n == 0) str(: @\\n), s);",
        r#"fputs("strncmp(\"abc\\0d\", \"abc\", '\\4') == 0" ": @\n", s);"#,
    );
    check(EXAMPLE_4, "xstr(INCFILE(2).h)", r#""vers2.h""#);
    check(EXAMPLE_4, "glue(HIGH, LOW);", r#""hello";"#);
    check(EXAMPLE_4, "xglue(HIGH, LOW)", r#""hello" ", world""#);
}

#[test]
fn example_5_placemarkers() {
    check(
        "#define t(x,y,z) x ## y ## z\n",
        "int j[] = { t(1,2,3), t(,4,5), t(6,,7), t(8,9,),\n t(10,,), t(,11,), t(,,12), t(,,) };",
        "int j[] = { 123, 45, 67, 89,\n 10, 11, 12, };",
    );
}

#[test]
fn example_7_variable_arguments() {
    let directives = r#"#define debug(...) fprintf(stderr, __VA_ARGS__)
#define showlist(...) puts(#__VA_ARGS__)
#define report(test, ...) ((test)?puts(#test): printf(__VA_ARGS__))
"#;
    check(
        directives,
        r#"debug("Flag");"#,
        r#"fprintf(stderr, "Flag");"#,
    );
    check(
        directives,
        r#"debug("X = %d\n", x);"#,
        r#"fprintf(stderr, "X = %d\n", x);"#,
    );
    check(
        directives,
        "showlist(The first, second, and third items.);",
        r#"puts("The first, second, and third items.");"#,
    );
    check(
        directives,
        r#"report(x>y, "x is %d but y is %d", x, y);"#,
        r#"((x>y)?puts("x>y"): printf("x is %d but y is %d", x, y));"#,
    );
}

#[test]
fn gnu_named_variadic_parameter_and_comma_elision() {
    let directives = "#define log(fmt, args...) printk(fmt, ## args)\n";
    check(directives, "log(\"a\")", "printk(\"a\")");
    check(directives, "log(\"a\", 1, 2)", "printk(\"a\", 1, 2)");
}

#[test]
fn a_macro_passed_as_an_argument_is_invoked_by_the_body() {
    // zstd's generator shape: `ZSTD_FOR_EACH_MLS(GEN, noDict)` calls `GEN(noDict, 4)`.
    let directives = "#define NAME(mode, n) find_##mode##_##n
#define GEN(mode, n) static int NAME(mode, n)(void) { return run_##mode(n); }
#define FOR_EACH(X, mode) X(mode, 4) X(mode, 5)
";
    check(
        directives,
        "FOR_EACH(GEN, noDict)",
        "static int find_noDict_4(void) { return run_noDict(4); } \
         static int find_noDict_5(void) { return run_noDict(5); }",
    );
}

#[test]
fn wrong_argument_counts_and_unterminated_invocations_stay_as_written() {
    let directives = "#define two(a, b) a + b\n";
    check(directives, "two(1)", "two(1)");
    check(directives, "two(1, 2, 3)", "two(1, 2, 3)");
    check(directives, "two(1, (2", "two(1, (2");
    check(directives, "two", "two");
}

#[test]
fn an_exponential_expansion_is_given_up() {
    let mut directives = String::from("#define a0(x) x x\n");
    for level in 1..40 {
        directives.push_str(&format!(
            "#define a{level}(x) a{}(x) a{}(x)\n",
            level - 1,
            level - 1
        ));
    }
    let mut table = MacroTable::default();
    for line in directives.lines() {
        let (name, definition) = MacroDefinition::parse(line).expect(line);
        table.define(&name, definition);
    }
    assert_eq!(
        expand(&table, lex("a39(y)", 0)),
        Err(ExpansionError::TooLarge)
    );
}

#[test]
fn directives_that_are_not_definitions_are_refused() {
    assert!(MacroDefinition::parse("#include <a.h>").is_none());
    assert!(MacroDefinition::parse("#define").is_none());
    assert!(MacroDefinition::parse("#define f(a, 1) a").is_none());
    let (name, definition) = MacroDefinition::parse("#define f (a) a").expect("object-like");
    assert_eq!((name.as_str(), definition.function_like), ("f", false));
    let (_, spliced) = MacroDefinition::parse("#define g(a) \\\n  a + 1 /* c */").expect("g");
    assert_eq!(render(&spliced.body), "a + 1");
}

#[test]
fn a_parameter_copied_many_times_is_bounded_too() {
    let mut table = MacroTable::default();
    let (name, definition) = MacroDefinition::parse("#define T(x) x x x x x x x x x x").expect("T");
    table.define(&name, definition);
    // 10^6 copies of `y`, made by argument pre-expansion inside one substitution.
    assert_eq!(
        expand(&table, lex("T(T(T(T(T(T(y))))))", 0)),
        Err(ExpansionError::TooLarge)
    );
    assert_eq!(expand(&table, lex("T(T(y))", 0)).map(|t| t.len()), Ok(100));
}
