//! Recovery from syntax errors: the nesting guard run before pest ([`too_deep`]), and for
//! each error pest reports, its message and the region to blank before parsing again
//! ([`syntax_error`], [`blank`]). Both read the text through [`scan::tokens`] (bracket
//! depth, what is code, an unterminated string).

use super::ast::Span;
use super::parser::{Rule, MAX_NESTING};
use super::scan::{self, Kind};
use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};

/// Replaces `buf[start..end]` with spaces (newlines kept); false if nothing changed.
pub(super) fn blank(buf: &mut String, start: usize, end: usize) -> bool {
    let end = end.min(buf.len());
    if start >= end || !buf.is_char_boundary(start) || !buf.is_char_boundary(end) {
        return false;
    }
    let region = &buf[start..end];
    if region.trim().is_empty() {
        return false;
    }
    let replacement: String = region
        .chars()
        .flat_map(|c| {
            let n = if c == '\n' { 0 } else { c.len_utf8() };
            std::iter::repeat_n(' ', n).chain((c == '\n').then_some('\n'))
        })
        .collect();
    buf.replace_range(start..end, &replacement);
    true
}

/// `v[i] = x` when `i` is in range.
fn set<T>(v: &mut [T], i: usize, x: T) {
    if let Some(slot) = v.get_mut(i) {
        *slot = x;
    }
}

/// The first place the text nests deeper than [`MAX_NESTING`]: brackets, plus the links of an
/// `else if` chain (each one a level of the recursive grammar). Returns the offset and the
/// token there.
pub(super) fn too_deep(text: &str) -> Option<(usize, &'static str)> {
    // Per bracket depth: links of the current `else if` chain, and whether the last code
    // token at that depth was the `}` closing a branch.
    let mut chain: Vec<usize> = Vec::new();
    let mut closed: Vec<bool> = Vec::new();
    let mut last_else = false;
    // Brackets open before the token.
    let mut depth = 0usize;
    for t in scan::tokens(text) {
        let word = match t.kind {
            Kind::Word => true,
            Kind::Punct => false,
            Kind::Str { .. } | Kind::LineComment | Kind::BlockComment => continue,
        };
        let c = text.as_bytes().get(t.start).copied().unwrap_or(0);
        // A closing bracket is at the depth it closes to.
        if matches!(c, b'}' | b')' | b']') {
            depth = depth.saturating_sub(1);
        }
        let d = depth;
        if chain.len() <= d + 1 {
            chain.resize(d + 2, 0);
            closed.resize(d + 2, false);
        }
        let bracket = match c {
            b'{' => Some("{"),
            b'(' => Some("("),
            b'[' => Some("["),
            _ => None,
        };
        if let Some(open) = bracket {
            if d >= MAX_NESTING {
                return Some((t.start, open));
            }
            depth += 1;
        }
        if word {
            match text.get(t.start..t.end).unwrap_or("") {
                "else" if closed.get(d) == Some(&true) => last_else = true,
                "if" if last_else => {
                    let links = chain.get_mut(d).map_or(0, |c| {
                        *c += 1;
                        *c
                    });
                    set(&mut closed, d, false);
                    last_else = false;
                    if d + links > MAX_NESTING {
                        return Some((t.start, "if"));
                    }
                }
                _ => {
                    if closed.get(d) == Some(&true) {
                        set(&mut chain, d, 0);
                    }
                    set(&mut closed, d, false);
                    last_else = false;
                }
            }
        } else if c == b'}' {
            // Closing to depth d: the next token at d decides whether the chain goes on.
            set(&mut closed, d, true);
            if let Some(inner) = chain.get_mut(d + 1) {
                *inner = 0;
            }
        } else {
            if closed.get(d) == Some(&true) && !last_else {
                set(&mut chain, d, 0);
            }
            set(&mut closed, d, false);
            last_else = false;
        }
    }
    None
}

/// Byte-level facts about the text outside strings and comments, for error regions.
struct Scan {
    /// Bracket depth (`{`, `(`, `[` combined) before each byte.
    depth: Vec<i32>,
    /// Whether each byte is code (not inside a string or comment).
    code: Vec<bool>,
    /// Offsets of `{` never closed, in order.
    unclosed: Vec<usize>,
    /// Start of a string never terminated on its line, if any.
    open_string: Option<usize>,
}

/// [`Scan`] of `text`, from its [`scan::tokens`]: whitespace between tokens is code.
fn scan(text: &str) -> Scan {
    let b = text.as_bytes();
    let mut depth = Vec::with_capacity(b.len() + 1);
    let mut code = Vec::with_capacity(b.len() + 1);
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut open_string = None;
    for t in scan::tokens(text) {
        let d = stack.len() as i32;
        depth.resize(t.start, d);
        code.resize(t.start, true);
        match t.kind {
            Kind::Str { .. } | Kind::LineComment | Kind::BlockComment => {
                if t.kind == (Kind::Str { closed: false }) && open_string.is_none() {
                    open_string = Some(t.start);
                }
                depth.resize(t.end, d);
                code.resize(t.end, false);
            }
            Kind::Word | Kind::Punct => {
                for i in t.start..t.end {
                    match b.get(i).copied().unwrap_or(0) {
                        c @ (b'{' | b'(' | b'[') => {
                            depth.push(stack.len() as i32);
                            stack.push((c, i));
                        }
                        b'}' | b')' | b']' => {
                            stack.pop();
                            depth.push(stack.len() as i32);
                        }
                        _ => depth.push(stack.len() as i32),
                    }
                    code.push(true);
                }
            }
        }
    }
    // Trailing whitespace, and one entry past the end.
    depth.resize(b.len() + 1, stack.len() as i32);
    code.resize(b.len() + 1, true);
    Scan {
        depth,
        code,
        unclosed: stack
            .into_iter()
            .filter(|&(c, _)| c == b'{')
            .map(|(_, i)| i)
            .collect(),
        open_string,
    }
}

fn line_start(text: &str, pos: usize) -> usize {
    text.get(..pos)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1)
}

fn line_end(text: &str, pos: usize) -> usize {
    text.get(pos..)
        .and_then(|t| t.find('\n'))
        .map_or(text.len(), |i| pos + i)
}

/// Whether a line's code ends in a way that continues on the next line.
fn continues(text: &str, s: &Scan, start: usize, end: usize) -> bool {
    let at = |i: usize| text.as_bytes().get(i).copied().unwrap_or(b' ');
    let last = (start..end)
        .rev()
        .find(|&i| s.code.get(i) == Some(&true) && !at(i).is_ascii_whitespace());
    match last {
        Some(i) => matches!(
            at(i),
            b'=' | b','
                | b'('
                | b'['
                | b'+'
                | b'-'
                | b'*'
                | b'/'
                | b'%'
                | b'<'
                | b'>'
                | b'&'
                | b'|'
                | b'.'
                | b':'
                | b'!'
        ),
        None => false,
    }
}

/// The region to blank around an error at `pos`: the statement's lines.
fn statement_region(text: &str, s: &Scan, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let mut start = line_start(text, pos);
    // Pull in earlier lines the statement continues from.
    while start > 0 {
        let prev_end = start - 1;
        let prev_start = line_start(text, prev_end);
        let prev = text.get(prev_start..prev_end).unwrap_or("");
        if prev.trim().is_empty() || !continues(text, s, prev_start, prev_end) {
            break;
        }
        start = prev_start;
    }
    // Don't swallow a `{` that opens the enclosing block on the same line.
    let base = s.depth.get(pos).copied().unwrap_or(0);
    if let Some(open) = (start..pos).rev().find(|&i| {
        text.as_bytes().get(i) == Some(&b'{')
            && s.code.get(i) == Some(&true)
            && s.depth.get(i).is_some_and(|&d| d < base)
    }) {
        start = open + 1;
    }
    let mut end = line_end(text, pos);
    // Extend while brackets opened in the region are still open.
    let floor = s.depth.get(start).copied().unwrap_or(0);
    while end < text.len() && s.depth.get(end).copied().unwrap_or(0) > floor {
        end = line_end(text, end + 1);
    }
    // Never swallow the `}` closing the enclosing block: stop before a line that closes it.
    (start, end)
}

fn rule_name(r: &Rule) -> Option<&'static str> {
    Some(match r {
        Rule::EOI => "end of file",
        Rule::ident | Rule::section_name => "a name",
        Rule::expr | Rule::postfix_expr => "an expression",
        Rule::use_item => "`use`",
        Rule::let_stmt => "`let`",
        Rule::model_item => "`model`",
        Rule::template_item => "`template`",
        Rule::fabric_item => "`fabric`",
        Rule::node_kind | Rule::kw_switch | Rule::kw_hca | Rule::kw_router => {
            "`switch`, `hca` or `router`"
        }
        Rule::attr => "an attribute `name = value`",
        Rule::attr_block | Rule::block | Rule::section_body => "`{`",
        Rule::param => "a parameter",
        Rule::arg => "an argument",
        Rule::string => "a string",
        Rule::int | Rule::hex => "a number",
        Rule::kw_down => "`down`",
        Rule::kw_link => "`link`",
        Rule::infix
        | Rule::range
        | Rule::range_incl
        | Rule::or
        | Rule::and
        | Rule::eq
        | Rule::ne
        | Rule::lt
        | Rule::le
        | Rule::gt
        | Rule::ge
        | Rule::add
        | Rule::sub
        | Rule::mul
        | Rule::div
        | Rule::rem => "an operator",
        Rule::index => "`[`",
        Rule::field => "`.`",
        Rule::use_path => "a module path",
        Rule::for_binding => "`name in range`",
        Rule::topology_assign | Rule::topology_block | Rule::kw_topology => "`topology`",
        Rule::faults_block => "`faults`",
        Rule::section => "a section",
        Rule::decl_name | Rule::decl_array | Rule::decl_single => "a node name",
        _ => return None,
    })
}

/// The token found at `pos`, for messages.
fn found_at(text: &str, pos: usize) -> String {
    let rest = &text[pos.min(text.len())..];
    let Some(c) = rest.chars().next() else {
        return "end of file".to_owned();
    };
    if c.is_alphanumeric() || c == '_' {
        let word: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .take(24)
            .collect();
        format!("`{word}`")
    } else if c == '\n' || c == '\r' {
        "end of line".to_owned()
    } else {
        let tok: String = rest
            .chars()
            .take_while(|c| !c.is_alphanumeric() && !c.is_whitespace())
            .take(3)
            .collect();
        format!("`{tok}`")
    }
}

pub(super) fn syntax_error(
    text: &str,
    e: &pest::error::Error<Rule>,
    source: SourceId,
) -> (Diagnostic, Option<(usize, usize)>) {
    let pos = match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((s, _)) => s,
    }
    .min(text.len());
    let s = scan(text);
    if let Some(start) = s.open_string.filter(|&o| o <= pos) {
        let end = line_end(text, start);
        let d = Diagnostic::error(Code::UnterminatedString, "unterminated string")
            .label(
                source,
                Span::new(start, end),
                "this string has no closing `\"`",
            )
            .help("strings end on the line they start on; add the closing `\"`");
        return (d, Some((line_start(text, start), end)));
    }
    let found = found_at(text, pos);
    if pos >= text.trim_end().len() {
        if let Some(&open) = s.unclosed.last() {
            let d = Diagnostic::error(Code::UnclosedBrace, "unclosed `{`")
                .label(
                    source,
                    Span::new(open, open + 1),
                    "this `{` is never closed",
                )
                .label(
                    source,
                    Span::new(text.len(), text.len()),
                    "the file ends here",
                )
                .help("add the matching `}`");
            return (d, None);
        }
    }
    let mut expected: Vec<&str> = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => {
            positives.iter().filter_map(rule_name).collect()
        }
        pest::error::ErrorVariant::CustomError { .. } => Vec::new(),
    };
    expected.sort_unstable();
    expected.dedup();
    let label = match expected.as_slice() {
        [] => "unexpected here".to_owned(),
        [one] => format!("expected {one}"),
        [init @ .., last] => format!("expected {} or {last}", init.join(", ")),
    };
    let rest = &text[pos..];
    let help = if rest.starts_with("->") || rest.starts_with("<-") && !rest.starts_with("<->") {
        "links are written `link a.p[1] <-> b.p[2]`"
    } else if rest.starts_with('=') && rest.starts_with("==") {
        "compare with `==` inside expressions; attributes are set with `name = value`"
    } else if rest.starts_with('}') {
        "this `}` closes nothing, or something before it is incomplete"
    } else {
        "statements are separated by newlines, `;` or `,`; see the language reference, docs/language.md"
    };
    let len = if found.starts_with('`') {
        found.chars().count().saturating_sub(2).max(1)
    } else {
        0
    };
    let len = rest.char_indices().nth(len).map_or(rest.len(), |(i, _)| i);
    let d = Diagnostic::error(Code::Syntax, format!("unexpected {found}"))
        .label(source, Span::new(pos, pos + len), label)
        .help(help);
    let region = if rest.starts_with('}') && s.depth.get(pos).copied().unwrap_or(0) <= 0 {
        (pos, pos + 1)
    } else {
        statement_region(text, &s, pos)
    };
    (d, Some(region))
}
