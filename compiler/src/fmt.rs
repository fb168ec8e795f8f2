//! `weft fmt`: the canonical layout of a `.weft` file.
//!
//! The formatter works on tokens, so comments survive and line structure is the author's:
//! it re-indents (four spaces per open brace or bracket), normalises spacing around
//! operators and punctuation, trims trailing space, keeps at most one blank line in a row and
//! ends the file with one newline. It refuses files with syntax errors. Formatting is
//! idempotent.

use crate::diagnostic::{Diagnostic, SourceId};
use crate::syntax::scan::{self, Kind};
use crate::words::is_keyword;

/// A token of [`scan::tokens`] with its text.
#[derive(Clone, Debug)]
struct Tok<'a> {
    kind: Kind,
    text: &'a str,
    /// Newlines between the previous token and this one.
    newlines: usize,
}

/// The tokens of `text` (the lexer the parser's recovery uses too).
fn lex(text: &str) -> Vec<Tok<'_>> {
    scan::tokens(text)
        .map(|t| Tok {
            kind: t.kind,
            text: text.get(t.start..t.end).unwrap_or(""),
            newlines: t.newlines,
        })
        .collect()
}

const BINARY: &[&str] = &[
    "=", "<->", "==", "!=", "<=", ">=", "<", ">", "+", "*", "/", "%", "&&", "||",
];

/// Formats `text`; errors are the file's syntax errors.
pub fn format(text: &str, source: SourceId) -> Result<String, Vec<Diagnostic>> {
    let (_, diags) = crate::syntax::parse(text, source);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    Ok(format_tokens(&lex(text)))
}

fn format_tokens(toks: &[Tok<'_>]) -> String {
    let mut out = String::new();
    // Stack of open brackets: `{`, `(`, `[`.
    let mut stack: Vec<&str> = Vec::new();
    let mut line_has_code = false;
    let mut prev: Option<&Tok<'_>> = None;
    let mut prev_unary = false;
    for (idx, t) in toks.iter().enumerate() {
        let unary =
            t.kind == Kind::Punct && matches!(t.text, "-" | "!") && !prev.is_some_and(is_value_end);
        let new_line = idx > 0 && t.newlines > 0;
        if new_line {
            while out.ends_with(' ') {
                out.pop();
            }
            out.push('\n');
            if t.newlines > 1 {
                out.push('\n');
            }
            line_has_code = false;
        }
        // Closing tokens at the start of a line dedent before indenting.
        let closes = matches!(t.text, "}" | ")" | "]") && t.kind == Kind::Punct;
        let popped = if closes { stack.pop() } else { None };
        if !line_has_code {
            if idx > 0 || new_line {
                // A line starting with `else` or a binary operator continues the statement
                // above it: one more level.
                let continues = (t.kind == Kind::Word && t.text == "else")
                    || (t.kind == Kind::Punct
                        && (BINARY.contains(&t.text) || t.text == "-")
                        && t.text != "=");
                out.push_str(&"    ".repeat(stack.len() + usize::from(continues)));
            }
        } else if let Some(p) = prev {
            let tight_group =
                popped == Some("{u") || (p.text == "{" && stack.last() == Some(&"{u"));
            if !tight_group && space_between(p, prev_unary, t, &stack) {
                out.push(' ');
            }
        }
        out.push_str(t.text.trim_end());
        line_has_code = true;
        if t.kind == Kind::Punct && matches!(t.text, "{" | "(" | "[") {
            // A `use a::{b, c}` group is written tight.
            let group = t.text == "{" && prev.is_some_and(|p| p.text == "::");
            stack.push(if group { "{u" } else { t.text });
        }
        prev = Some(t);
        prev_unary = unary;
    }
    while out.ends_with(' ') || out.ends_with('\n') {
        out.pop();
    }
    out.push('\n');
    out
}

fn is_value_end(t: &Tok<'_>) -> bool {
    match t.kind {
        Kind::Word => !is_keyword(t.text) || matches!(t.text, "down"),
        Kind::Str { .. } => true,
        Kind::Punct => matches!(t.text, ")" | "]" | "}"),
        _ => false,
    }
}

fn space_between(p: &Tok<'_>, p_unary: bool, t: &Tok<'_>, stack: &[&str]) -> bool {
    if matches!(p.kind, Kind::LineComment) {
        return false;
    }
    if matches!(t.kind, Kind::LineComment | Kind::BlockComment) {
        return true;
    }
    let (a, b) = (p.text, t.text);
    let in_parens = matches!(stack.last(), Some(&"(") | Some(&"["));
    if p.kind == Kind::Punct {
        match a {
            "." | "::" | ".." | "..=" | "!" => return false,
            "(" | "[" => return false,
            "{" => return b != "}",
            "," | ";" => return true,
            ":" => return true,
            "-" if p_unary => return false,
            _ => {}
        }
    }
    match b {
        "." | "::" | ".." | "..=" | "," | ";" | ")" | "]" => return false,
        "}" => return a != "{",
        ":" => return !in_parens,
        "(" => return p.kind != Kind::Word || is_keyword(a),
        "[" => return !is_value_end(p) || (p.kind == Kind::Word && is_keyword(a)),
        "-" | "!" if !is_value_end(p) => return true,
        _ => {}
    }
    if p.kind == Kind::Punct && BINARY.contains(&a) {
        return true;
    }
    if t.kind == Kind::Punct && (BINARY.contains(&b) || b == "-") {
        return true;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> String {
        format(s, SourceId(0)).unwrap_or_else(|d| format!("{d:?}"))
    }

    #[test]
    fn layout() {
        let src = "use std::hardware::{sb7800,connectx5}\nfabric x{\ntopology{\nswitch a[1..=2]:sb7800{level=1}\n\n\n\nlink a[1].p[1]<->a[2].p[1]\nfor i in 1..=2{let y=-i+2*(i-1)}\n}\n}\n";
        let out = f(src);
        assert_eq!(
            out,
            "use std::hardware::{sb7800, connectx5}\nfabric x {\n    topology {\n        switch a[1..=2] : sb7800 { level = 1 }\n\n        link a[1].p[1] <-> a[2].p[1]\n        for i in 1..=2 { let y = -i + 2 * (i - 1) }\n    }\n}\n"
        );
        assert_eq!(f(&out), out);
    }

    #[test]
    fn calls_and_comments() {
        let src = "fabric x { // the fabric\n  topology = fat_tree( levels : 2, switch: s,hca: h ) /* c */\n}";
        let out = f(src);
        assert_eq!(
            out,
            "fabric x { // the fabric\n    topology = fat_tree(levels: 2, switch: s, hca: h) /* c */\n}\n"
        );
        assert_eq!(f(&out), out);
    }

    /// A host list is one word: spacing its `-` and `,` like operators would change what it
    /// names (`cn[1 - 4]` is an index).
    #[test]
    fn host_lists_stay_whole() {
        let src = "fabric x {\ntenant a { pkey = 0x8001, hosts = [cn[001-128,200],rack[1-2]-cn[01-04]] }\nsm on x[1-2]\n}\n";
        assert_eq!(
            f(src),
            "fabric x {\n    tenant a { pkey = 0x8001, hosts = [cn[001-128,200], rack[1-2]-cn[01-04]] }\n    sm on x[1-2]\n}\n"
        );
    }
}
