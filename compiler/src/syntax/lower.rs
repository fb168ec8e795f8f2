//! Lowering: pest's pairs to the typed AST ([`Lower`]), with operator precedence (a Pratt
//! parser) and the expression depth bound ([`MAX_EXPR_DEPTH`]).

use super::ast::*;
use super::parser::{Rule, MAX_EXPR_DEPTH};
use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use std::sync::LazyLock;

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

/// Lowers pest pairs to the AST.
pub(super) struct Lower {
    source: SourceId,
    /// Errors found while lowering (depth bounds, malformed literals), taken by the parser.
    pub(super) diags: Vec<Diagnostic>,
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
    /// A lowering of `source`'s pairs, with no errors yet.
    pub(super) fn new(source: SourceId) -> Lower {
        Lower {
            source,
            diags: Vec::new(),
            nesting: 0,
        }
    }

    pub(super) fn file(&mut self, p: Pair<'_, Rule>) -> File {
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
                        self.error(
                            Code::Syntax,
                            "a link needs two ends",
                            sp,
                            "only one end",
                            "write `link a.p[1] <-> b.p[2]`, or `link a.p[1] down` in `faults`",
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
        self.error(
            Code::TooDeep,
            format!("expression nested deeper than {MAX_EXPR_DEPTH} levels"),
            sp,
            "this expression",
            "split it: bind parts with `let`, or sum a list in a loop",
        );
    }

    /// Records an error labelled at `sp` of this source.
    fn error(&mut self, code: Code, msg: impl Into<String>, sp: Span, label: &str, help: &str) {
        self.diags.push(
            Diagnostic::error(code, msg)
                .label(self.source, sp, label)
                .help(help),
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
            Rule::hostlist => match super::hostlist::parse(p.as_str()) {
                Ok(h) => ExprKind::HostList(h),
                Err(e) => {
                    self.error(
                        Code::BadHostList,
                        format!("host list `{}`: {e}", p.as_str()),
                        sp,
                        "cannot be expanded",
                        "a host list's ranges count up: `cn[001-128,200]`",
                    );
                    ExprKind::Ident(String::new())
                }
            },
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
                        self.error(
                            Code::NumberTooLarge,
                            format!("number `{}` is too large", p.as_str()),
                            sp,
                            "does not fit in 64 bits",
                            "integers are 64-bit; GUIDs may use all 64 bits in hex",
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
