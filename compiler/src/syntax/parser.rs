//! Text → [`File`]: the pest grammar, a lowering to the typed AST, and error recovery.
//!
//! Parsing never fails: [`parse`] returns the items it could read plus every syntax error.
//! pest stops at the first error, so recovery blanks out the statement around each error
//! (keeping byte offsets, so later spans stay right) and parses again, up to a bound.

use super::ast::*;
use super::scan::{self, Kind};
use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser as _;
use std::sync::LazyLock;

#[derive(pest_derive::Parser)]
#[grammar = "syntax/weft.pest"]
struct WeftParser;

/// Most syntax errors reported for one file before giving up.
const MAX_ERRORS: usize = 32;

static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::range, Assoc::Left) | Op::infix(Rule::range_incl, Assoc::Left))
        .op(Op::infix(Rule::or, Assoc::Left))
        .op(Op::infix(Rule::and, Assoc::Left))
        .op(Op::infix(Rule::eq, Assoc::Left)
            | Op::infix(Rule::ne, Assoc::Left)
            | Op::infix(Rule::lt, Assoc::Left)
            | Op::infix(Rule::le, Assoc::Left)
            | Op::infix(Rule::gt, Assoc::Left)
            | Op::infix(Rule::ge, Assoc::Left))
        .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
        .op(Op::infix(Rule::mul, Assoc::Left)
            | Op::infix(Rule::div, Assoc::Left)
            | Op::infix(Rule::rem, Assoc::Left))
        .op(Op::prefix(Rule::neg) | Op::prefix(Rule::not))
});

/// Deepest nesting of brackets and `else if` chains the parser accepts: the grammar is
/// recursive, and a few thousand levels would overflow the stack.
pub const MAX_NESTING: usize = 128;

/// Deepest expression tree (operands of one operator chain count as levels) lowering keeps;
/// evaluation and formatting recurse over it.
pub const MAX_EXPR_DEPTH: usize = 256;

/// Parses a whole file; returns what could be read and every syntax error.
pub fn parse(text: &str, source: SourceId) -> (File, Vec<Diagnostic>) {
    if let Some((at, what)) = too_deep(text) {
        let d = Diagnostic::error(
            Code::TooDeep,
            format!("nesting deeper than {MAX_NESTING} levels"),
        )
        .label(
            source,
            Span::new(at, at + what.len()),
            format!("this `{what}` is level {}", MAX_NESTING + 1),
        )
        .help("flatten the expression: bind parts with `let`, or use a loop");
        return (File::default(), vec![d]);
    }
    let mut diags = Vec::new();
    let mut buf = text.to_owned();
    let mut lower = Lower {
        source,
        diags: Vec::new(),
        nesting: 0,
    };
    loop {
        match WeftParser::parse(Rule::file, &buf) {
            Ok(mut pairs) => {
                let file = pairs.next().map(|p| lower.file(p)).unwrap_or_default();
                diags.append(&mut lower.diags);
                return (file, diags);
            }
            Err(e) => {
                let (diag, region) = syntax_error(&buf, &e, source);
                diags.push(diag);
                let blanked = region.and_then(|(s, t)| blank(&mut buf, s, t).then_some(()));
                if blanked.is_none() || diags.len() >= MAX_ERRORS {
                    return (File::default(), diags);
                }
            }
        }
    }
}

/// Replaces `buf[start..end]` with spaces (newlines kept); false if nothing changed.
fn blank(buf: &mut String, start: usize, end: usize) -> bool {
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
fn too_deep(text: &str) -> Option<(usize, &'static str)> {
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

fn syntax_error(
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
        "statements are separated by newlines, `;` or `,`; see the language reference in the README"
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

/// Lowers pest pairs to the AST.
struct Lower {
    source: SourceId,
    diags: Vec<Diagnostic>,
    /// How many [`Lower::expr`] calls are under way (the outermost checks the tree's depth).
    nesting: usize,
}

/// Keyword tokens carry no information once parsed.
fn not_kw(p: &Pair<'_, Rule>) -> bool {
    !matches!(
        p.as_rule(),
        Rule::kw_assert
            | Rule::kw_else
            | Rule::kw_fabric
            | Rule::kw_faults
            | Rule::kw_for
            | Rule::kw_if
            | Rule::kw_in
            | Rule::kw_let
            | Rule::kw_model
            | Rule::kw_on
            | Rule::kw_template
            | Rule::kw_use
            | Rule::kw_topology
            | Rule::kw_link
            | Rule::kw_down
    )
}

/// A pair's span without the whitespace and comments pest lets trail inside it.
fn span(p: &Pair<'_, Rule>) -> Span {
    let s = p.as_span();
    let mut text = p.as_str();
    loop {
        let t = text.trim_end();
        // A trailing line comment inside the pair (possible before an optional part).
        let t = match t.rfind("//") {
            Some(i) if !t[i..].contains('\n') && !t[..i].contains('"') => t[..i].trim_end(),
            _ => t,
        };
        if t.len() == text.len() {
            break;
        }
        text = t;
    }
    Span::new(s.start(), s.start() + text.len())
}

fn ident(p: Pair<'_, Rule>) -> Ident {
    Ident {
        name: p.as_str().to_owned(),
        span: span(&p),
    }
}

impl Lower {
    fn file(&mut self, p: Pair<'_, Rule>) -> File {
        let mut items = Vec::new();
        for it in p.into_inner().filter(not_kw) {
            match it.as_rule() {
                Rule::use_item => items.push(Item::Use(self.use_item(it))),
                Rule::let_stmt => items.push(Item::Let(self.let_stmt(it))),
                Rule::model_item => items.push(Item::Model(self.model(it))),
                Rule::template_item => items.push(Item::Template(self.template(it))),
                Rule::fabric_item => items.push(Item::Fabric(self.fabric(it))),
                _ => {}
            }
        }
        File { items }
    }

    fn use_item(&mut self, p: Pair<'_, Rule>) -> Use {
        let sp = span(&p);
        let mut path = Vec::new();
        let mut names = Vec::new();
        for q in p
            .into_inner()
            .filter(not_kw)
            .flat_map(|q| q.into_inner().filter(not_kw))
        {
            match q.as_rule() {
                Rule::ident => path.push(ident(q)),
                Rule::use_group => names.extend(q.into_inner().filter(not_kw).map(ident)),
                _ => {}
            }
        }
        if names.is_empty() && path.len() > 1 {
            if let Some(last) = path.pop() {
                names.push(last);
            }
        }
        Use {
            path,
            names,
            span: sp,
        }
    }

    fn let_stmt(&mut self, p: Pair<'_, Rule>) -> Let {
        let sp = span(&p);
        let mut it = p.into_inner().filter(not_kw);
        let name = it.next().map(ident).unwrap_or_else(|| missing(sp));
        let value = it.next().map(|e| self.expr(e)).unwrap_or_else(|| bad(sp));
        Let {
            name,
            value,
            span: sp,
        }
    }

    fn node_kind(&mut self, p: Pair<'_, Rule>) -> NodeKindSyntax {
        let sp = span(&p);
        let kind = match p.into_inner().next().map(|q| q.as_rule()) {
            Some(Rule::kw_hca) => NodeKindKw::Hca,
            Some(Rule::kw_router) => NodeKindKw::Router,
            _ => NodeKindKw::Switch,
        };
        NodeKindSyntax { kind, span: sp }
    }

    fn attr(&mut self, p: Pair<'_, Rule>) -> Attr {
        let sp = span(&p);
        let mut it = p.into_inner().filter(not_kw);
        let name = it.next().map(ident).unwrap_or_else(|| missing(sp));
        let value = it.next().map(|e| self.expr(e)).unwrap_or_else(|| bad(sp));
        Attr {
            name,
            value,
            span: sp,
        }
    }

    fn attrs(&mut self, p: Pair<'_, Rule>) -> Vec<Attr> {
        p.into_inner()
            .filter(not_kw)
            .map(|a| self.attr(a))
            .collect()
    }

    fn model(&mut self, p: Pair<'_, Rule>) -> Model {
        let sp = span(&p);
        let mut name = missing(sp);
        let mut kind = NodeKindSyntax {
            kind: NodeKindKw::Switch,
            span: sp,
        };
        let mut attrs = Vec::new();
        for q in p.into_inner().filter(not_kw) {
            match q.as_rule() {
                Rule::ident => name = ident(q),
                Rule::node_kind => kind = self.node_kind(q),
                Rule::attr_block => attrs = self.attrs(q),
                _ => {}
            }
        }
        Model {
            name,
            kind,
            attrs,
            span: sp,
        }
    }

    fn template(&mut self, p: Pair<'_, Rule>) -> Template {
        let sp = span(&p);
        let mut name = missing(sp);
        let mut params = Vec::new();
        let mut body = Block::default();
        for q in p.into_inner().filter(not_kw) {
            match q.as_rule() {
                Rule::ident => name = ident(q),
                Rule::param => {
                    let psp = span(&q);
                    let mut pname = missing(psp);
                    let mut ty = None;
                    let mut default = None;
                    for (i, r) in q.into_inner().filter(not_kw).enumerate() {
                        match r.as_rule() {
                            Rule::ident if i == 0 => pname = ident(r),
                            Rule::type_name => ty = Some(ident(r)),
                            Rule::expr => default = Some(self.expr(r)),
                            _ => {}
                        }
                    }
                    params.push(Param {
                        name: pname,
                        ty,
                        default,
                        span: psp,
                    });
                }
                Rule::block => body = self.block(q),
                _ => {}
            }
        }
        Template {
            name,
            params,
            body,
            span: sp,
        }
    }

    fn fabric(&mut self, p: Pair<'_, Rule>) -> FabricDef {
        let sp = span(&p);
        let mut it = p.into_inner().filter(not_kw);
        let name = it.next().map(ident).unwrap_or_else(|| missing(sp));
        let mut stmts = Vec::new();
        for q in it {
            let qsp = span(&q);
            match q.as_rule() {
                Rule::topology_assign => {
                    if let Some(e) = q
                        .into_inner()
                        .filter(not_kw)
                        .find(|r| r.as_rule() == Rule::expr)
                    {
                        stmts.push(FabricStmt::TopologyExpr(self.expr(e), qsp));
                    }
                }
                Rule::topology_block => {
                    if let Some(b) = q
                        .into_inner()
                        .filter(not_kw)
                        .find(|r| r.as_rule() == Rule::block)
                    {
                        stmts.push(FabricStmt::TopologyBlock(self.block(b), qsp));
                    }
                }
                Rule::faults_block => {
                    if let Some(b) = q.into_inner().find(not_kw) {
                        stmts.push(FabricStmt::Faults(self.block(b), qsp));
                    }
                }
                Rule::let_stmt => stmts.push(FabricStmt::Let(self.let_stmt(q))),
                Rule::attr => stmts.push(FabricStmt::Attr(self.attr(q))),
                Rule::section => stmts.push(FabricStmt::Section(self.section(q))),
                _ => {}
            }
        }
        FabricDef {
            name,
            stmts,
            span: sp,
        }
    }

    fn section(&mut self, p: Pair<'_, Rule>) -> Section {
        let sp = span(&p);
        let mut kind = missing(sp);
        let mut name = None;
        let mut on = None;
        let mut body = None;
        for q in p.into_inner().filter(not_kw) {
            match q.as_rule() {
                Rule::ident => kind = ident(q),
                Rule::section_name => name = Some(ident(q)),
                Rule::section_on => on = q.into_inner().find(not_kw).map(|e| self.expr(e)),
                Rule::section_body => {
                    let mut items = Vec::new();
                    for r in q.into_inner().filter(not_kw) {
                        match r.as_rule() {
                            Rule::attr => items.push(SectionItem::Attr(self.attr(r))),
                            Rule::section => items.push(SectionItem::Section(self.section(r))),
                            _ => {}
                        }
                    }
                    body = Some(items);
                }
                _ => {}
            }
        }
        Section {
            kind,
            name,
            on,
            body,
            span: sp,
        }
    }

    fn block(&mut self, p: Pair<'_, Rule>) -> Block {
        let sp = span(&p);
        let stmts = p
            .into_inner()
            .filter(not_kw)
            .filter_map(|q| self.stmt(q))
            .collect();
        Block { stmts, span: sp }
    }

    fn stmt(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        let sp = span(&p);
        Some(match p.as_rule() {
            Rule::let_stmt => Stmt::Let(self.let_stmt(p)),
            Rule::for_stmt => {
                let mut bindings = Vec::new();
                let mut body = Block::default();
                for q in p.into_inner().filter(not_kw) {
                    match q.as_rule() {
                        Rule::for_binding => {
                            let mut it = q.into_inner().filter(not_kw);
                            let v = it.next().map(ident).unwrap_or_else(|| missing(sp));
                            let e = it.next().map(|e| self.expr(e)).unwrap_or_else(|| bad(sp));
                            bindings.push((v, e));
                        }
                        Rule::block => body = self.block(q),
                        _ => {}
                    }
                }
                Stmt::For(For {
                    bindings,
                    body,
                    span: sp,
                })
            }
            Rule::if_stmt => Stmt::If(self.if_stmt(p)),
            Rule::assert_stmt => {
                let mut it = p.into_inner().filter(not_kw);
                let cond = it.next().map(|e| self.expr(e)).unwrap_or_else(|| bad(sp));
                let message = it.next().map(|e| self.expr(e));
                Stmt::Assert(Assert {
                    cond,
                    message,
                    span: sp,
                })
            }
            Rule::link_stmt => {
                let down = p.clone().into_inner().any(|q| q.as_rule() == Rule::kw_down);
                let mut ends = Vec::new();
                let mut attrs = Vec::new();
                for q in p.into_inner().filter(not_kw) {
                    match q.as_rule() {
                        Rule::expr => ends.push(self.expr(q)),
                        Rule::attr_block => attrs = self.attrs(q),
                        _ => {}
                    }
                }
                let mut it = ends.into_iter();
                let a = it.next().unwrap_or_else(|| bad(sp));
                let b = it.next();
                match (down, b) {
                    (true, b) => Stmt::LinkDown(LinkDown { a, b, span: sp }),
                    (false, Some(b)) => Stmt::Link(LinkStmt {
                        a,
                        b,
                        attrs,
                        span: sp,
                    }),
                    (false, None) => {
                        self.diags.push(
                            Diagnostic::error(Code::Syntax, "a link needs two ends")
                                .label(self.source, sp, "only one end")
                                .help("write `link a.p[1] <-> b.p[2]`, or `link a.p[1] down` in `faults`"),
                        );
                        return None;
                    }
                }
            }
            Rule::node_fault => {
                let mut kind = None;
                let mut node = None;
                for q in p.into_inner().filter(not_kw) {
                    match q.as_rule() {
                        Rule::node_kind => kind = Some(self.node_kind(q)),
                        Rule::expr => node = Some(self.expr(q)),
                        _ => {}
                    }
                }
                Stmt::NodeDown(NodeDown {
                    kind: kind.unwrap_or(NodeKindSyntax {
                        kind: NodeKindKw::Switch,
                        span: sp,
                    }),
                    node: node.unwrap_or_else(|| bad(sp)),
                    span: sp,
                })
            }
            Rule::node_decl => Stmt::Node(self.node_decl(p)),
            Rule::expr_stmt => {
                let call = p.into_inner().find(not_kw)?;
                Stmt::Call(self.call(call))
            }
            _ => return None,
        })
    }

    fn if_stmt(&mut self, p: Pair<'_, Rule>) -> If {
        let sp = span(&p);
        let mut cond = None;
        let mut then = Block::default();
        let mut otherwise = None;
        let mut blocks = 0;
        for q in p.into_inner().filter(not_kw) {
            match q.as_rule() {
                Rule::expr => cond = Some(self.expr(q)),
                Rule::block if blocks == 0 => {
                    then = self.block(q);
                    blocks += 1;
                }
                Rule::block => otherwise = Some(self.block(q)),
                Rule::if_stmt => {
                    let nested = self.if_stmt(q);
                    let nsp = nested.span;
                    otherwise = Some(Block {
                        stmts: vec![Stmt::If(nested)],
                        span: nsp,
                    });
                }
                _ => {}
            }
        }
        If {
            cond: cond.unwrap_or_else(|| bad(sp)),
            then,
            otherwise,
            span: sp,
        }
    }

    fn node_decl(&mut self, p: Pair<'_, Rule>) -> NodeDecl {
        let sp = span(&p);
        let mut kind = NodeKindSyntax {
            kind: NodeKindKw::Switch,
            span: sp,
        };
        let mut name = DeclName::Single(missing(sp));
        let mut model = None;
        let mut attrs = Vec::new();
        for q in p.into_inner().filter(not_kw) {
            match q.as_rule() {
                Rule::node_kind => kind = self.node_kind(q),
                Rule::decl_name => {
                    if let Some(d) = q.into_inner().find(not_kw) {
                        name = match d.as_rule() {
                            Rule::decl_array => {
                                let mut it = d.into_inner().filter(not_kw);
                                let id = it.next().map(ident).unwrap_or_else(|| missing(sp));
                                let r = it.next().map(|e| self.expr(e)).unwrap_or_else(|| bad(sp));
                                DeclName::Array(id, r)
                            }
                            Rule::decl_single => DeclName::Single(
                                d.into_inner().find(not_kw).map_or(missing(sp), ident),
                            ),
                            Rule::string => DeclName::Computed(self.string(d)),
                            _ => DeclName::Computed(self.primary(d)),
                        };
                    }
                }
                Rule::expr => model = Some(self.expr(q)),
                Rule::attr_block => attrs = self.attrs(q),
                _ => {}
            }
        }
        NodeDecl {
            kind,
            name,
            model,
            attrs,
            span: sp,
        }
    }

    fn expr(&mut self, p: Pair<'_, Rule>) -> Expr {
        let whole = span(&p);
        let pairs: Pairs<'_, Rule> = p.into_inner(); // no keywords inside

        // A run of prefix operators recurses in the Pratt parser itself.
        let mut run = 0usize;
        for q in pairs.clone() {
            run = if matches!(q.as_rule(), Rule::neg | Rule::not) {
                run + 1
            } else {
                0
            };
            if run > MAX_EXPR_DEPTH {
                self.too_deep(whole);
                return bad(whole);
            }
        }
        self.nesting += 1;
        let e = self.expr_tree(pairs);
        self.nesting -= 1;
        if self.nesting == 0 && depth(&e) > MAX_EXPR_DEPTH {
            self.too_deep(whole);
            dismantle(e);
            return bad(whole);
        }
        e
    }

    fn too_deep(&mut self, sp: Span) {
        self.diags.push(
            Diagnostic::error(
                Code::TooDeep,
                format!("expression nested deeper than {MAX_EXPR_DEPTH} levels"),
            )
            .label(self.source, sp, "this expression")
            .help("split it: bind parts with `let`, or sum a list in a loop"),
        );
    }

    fn expr_tree(&mut self, pairs: Pairs<'_, Rule>) -> Expr {
        PRATT
            .map_primary(|q| self.postfix_expr(q))
            .map_prefix(|op, rhs| {
                let sp = span(&op).to(rhs.span);
                let op = if op.as_rule() == Rule::neg {
                    UnOp::Neg
                } else {
                    UnOp::Not
                };
                Expr {
                    kind: ExprKind::Unary(op, Box::new(rhs)),
                    span: sp,
                }
            })
            .map_infix(|lhs, op, rhs| {
                let sp = lhs.span.to(rhs.span);
                let op = match op.as_rule() {
                    Rule::range => BinOp::Range,
                    Rule::range_incl => BinOp::RangeIncl,
                    Rule::or => BinOp::Or,
                    Rule::and => BinOp::And,
                    Rule::eq => BinOp::Eq,
                    Rule::ne => BinOp::Ne,
                    Rule::lt => BinOp::Lt,
                    Rule::le => BinOp::Le,
                    Rule::gt => BinOp::Gt,
                    Rule::ge => BinOp::Ge,
                    Rule::add => BinOp::Add,
                    Rule::sub => BinOp::Sub,
                    Rule::mul => BinOp::Mul,
                    Rule::div => BinOp::Div,
                    _ => BinOp::Rem,
                };
                Expr {
                    kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                    span: sp,
                }
            })
            .parse(pairs)
    }

    fn postfix_expr(&mut self, p: Pair<'_, Rule>) -> Expr {
        let mut it = p.into_inner().filter(not_kw);
        let Some(first) = it.next() else {
            return bad(Span::default());
        };
        let mut e = self.primary(first);
        for q in it {
            let sp = e.span.to(span(&q));
            let kind = match q.as_rule() {
                Rule::index => {
                    let i = q
                        .into_inner()
                        .find(not_kw)
                        .map(|x| self.expr(x))
                        .unwrap_or_else(|| bad(sp));
                    ExprKind::Index(Box::new(e), Box::new(i))
                }
                _ => {
                    let f = q.into_inner().find(not_kw).map_or(missing(sp), ident);
                    ExprKind::Field(Box::new(e), f)
                }
            };
            e = Expr { kind, span: sp };
        }
        e
    }

    fn string(&mut self, p: Pair<'_, Rule>) -> Expr {
        let sp = span(&p);
        let raw = p.as_str();
        let inner = raw.get(1..raw.len().saturating_sub(1)).unwrap_or("");
        let mut s = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some(other) => s.push(other),
                    None => {}
                }
            } else {
                s.push(c);
            }
        }
        Expr {
            kind: ExprKind::Str(s),
            span: sp,
        }
    }

    fn call(&mut self, p: Pair<'_, Rule>) -> Expr {
        let sp = span(&p);
        let mut it = p.into_inner().filter(not_kw);
        let name = it.next().map_or(missing(sp), ident);
        let args = it
            .map(|a| {
                let mut name = None;
                let mut value = None;
                for q in a.into_inner().filter(not_kw) {
                    match q.as_rule() {
                        Rule::ident => name = Some(ident(q)),
                        _ => value = Some(self.expr(q)),
                    }
                }
                Arg {
                    name,
                    value: value.unwrap_or_else(|| bad(sp)),
                }
            })
            .collect();
        Expr {
            kind: ExprKind::Call(name, args),
            span: sp,
        }
    }

    fn primary(&mut self, p: Pair<'_, Rule>) -> Expr {
        let sp = span(&p);
        let kind = match p.as_rule() {
            Rule::call => return self.call(p),
            Rule::paren => {
                return p
                    .into_inner()
                    .find(not_kw)
                    .map(|e| self.expr(e))
                    .unwrap_or_else(|| bad(sp))
            }
            Rule::list => ExprKind::List(
                p.into_inner()
                    .filter(not_kw)
                    .map(|e| self.expr(e))
                    .collect(),
            ),
            Rule::if_expr => {
                let mut parts = p.into_inner().filter(not_kw);
                let mut next = |l: &mut Lower| {
                    parts.next().map_or_else(
                        || bad(sp),
                        |q| {
                            if q.as_rule() == Rule::if_expr {
                                l.primary(q)
                            } else {
                                l.expr(q)
                            }
                        },
                    )
                };
                let c = next(self);
                let a = next(self);
                let b = next(self);
                ExprKind::If(Box::new(c), Box::new(a), Box::new(b))
            }
            Rule::string => return self.string(p),
            Rule::boolean => ExprKind::Bool(p.as_str() == "true"),
            Rule::ident => ExprKind::Ident(p.as_str().to_owned()),
            Rule::width => {
                ExprKind::Width(p.as_str().trim_end_matches('x').parse().unwrap_or(u32::MAX))
            }
            Rule::hex | Rule::int => {
                let text = p.as_str().replace('_', "");
                let parsed = match text.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16)
                        .ok()
                        .and_then(|v| i64::try_from(v).ok())
                        .or_else(|| u64::from_str_radix(h, 16).ok().map(|v| v as i64)),
                    None => text.parse::<i64>().ok(),
                };
                match parsed {
                    Some(v) => ExprKind::Int(v),
                    None => {
                        self.diags.push(
                            Diagnostic::error(
                                Code::NumberTooLarge,
                                format!("number `{}` is too large", p.as_str()),
                            )
                            .label(self.source, sp, "does not fit in 64 bits")
                            .help("integers are 64-bit; GUIDs may use all 64 bits in hex"),
                        );
                        ExprKind::Int(0)
                    }
                }
            }
            _ => ExprKind::Ident(String::new()),
        };
        Expr { kind, span: sp }
    }
}

fn missing(sp: Span) -> Ident {
    Ident {
        name: String::new(),
        span: sp,
    }
}

/// The children of an expression node.
fn children(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::List(items) => items.iter().collect(),
        ExprKind::Call(_, args) => args.iter().map(|a| &a.value).collect(),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => vec![a, b],
        ExprKind::Field(a, _) | ExprKind::Unary(_, a) => vec![a],
        ExprKind::If(c, a, b) => vec![c, a, b],
        _ => Vec::new(),
    }
}

/// Depth of an expression tree, without recursion.
fn depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((x, d)) = stack.pop() {
        deepest = deepest.max(d);
        stack.extend(children(x).into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

/// Drops an expression tree without recursion (a deep tree's own drop would overflow).
fn dismantle(e: Expr) {
    let mut stack = vec![e];
    while let Some(mut x) = stack.pop() {
        match std::mem::replace(&mut x.kind, ExprKind::Bool(false)) {
            ExprKind::List(items) => stack.extend(items),
            ExprKind::Call(_, args) => stack.extend(args.into_iter().map(|a| a.value)),
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => stack.extend([*a, *b]),
            ExprKind::Field(a, _) | ExprKind::Unary(_, a) => stack.push(*a),
            ExprKind::If(c, a, b) => stack.extend([*c, *a, *b]),
            _ => {}
        }
    }
}

fn bad(sp: Span) -> Expr {
    Expr {
        kind: ExprKind::Ident(String::new()),
        span: sp,
    }
}
