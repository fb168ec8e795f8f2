//! The outline of a `.weft` file, for editors (`weft lsp`): its declarations (with their
//! signature and doc comment) and every name it uses, read by the compiler's own parser.
//!
//! The parser recovers, so a file with syntax errors still has an outline of what could be
//! read. Nothing here resolves a name: a [`Reference`] is a word and its span; the language
//! server matches words to [`Symbol`]s (node names, templates, models, `let`s) and to the
//! standard library ([`stdlib_source`]).

use crate::diagnostic::SourceId;
pub use crate::syntax::ast::Span;
use crate::syntax::ast::{
    Block, DeclName, Expr, ExprKind, FabricStmt, Item, NodeKindKw, Section, SectionItem, Stmt,
};

/// What a [`Symbol`] declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SymbolKind {
    /// A `use` item.
    Use,
    /// A `let` name.
    Let,
    /// A hardware `model`.
    Model,
    /// A `template`.
    Template,
    /// A template's parameter.
    Param,
    /// The `fabric`.
    Fabric,
    /// A section of the fabric (`routing`, `tenant a`, `topology`, `faults`, …).
    Section,
    /// A node declaration (`switch leaf[1..=4]`, `hca "cn01"`).
    Node,
}

/// One declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    /// What it is.
    pub kind: SymbolKind,
    /// Its name as written (`leaf` for `switch leaf[1..=4]`, the text of a computed name).
    pub name: String,
    /// Where the name is.
    pub name_span: Span,
    /// The whole declaration.
    pub span: Span,
    /// A one-line signature: `template pgft(m: list, w: list, …)`, `model sb7800 : switch`,
    /// `switch leaf[1..=4] : sb7800`.
    pub detail: String,
    /// The `//` comment lines right above it, without the slashes.
    pub doc: String,
    /// Declarations inside it (a template's parameters and nodes, a section's sections).
    pub children: Vec<Symbol>,
}

/// How a name is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefKind {
    /// A bare word in an expression (a node, a `let`, a model, a word such as `EDR`).
    Name,
    /// The function of a call (a template or a built-in).
    Call,
    /// A string literal (node names in `node("…")`, `sm on "…"`).
    Str,
    /// An attribute name (`speed = …`).
    Attr,
    /// A module of a `use` path (`std`, `hardware`).
    Module,
    /// An item a `use` imports.
    UseItem,
}

/// One use of a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The word (a string literal's contents).
    pub name: String,
    /// Where it is (a string literal's span includes its quotes).
    pub span: Span,
    /// How it is used.
    pub kind: RefKind,
    /// The section it is in, for attributes (`routing`), empty elsewhere; the module path of
    /// a `use` item (`std::hardware`).
    pub context: String,
}

/// A file's declarations and the names it uses, in source order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outline {
    /// Top-level declarations.
    pub symbols: Vec<Symbol>,
    /// Every name used.
    pub references: Vec<Reference>,
    /// Whether the parser found syntax errors (the outline is partial).
    pub partial: bool,
}

impl Outline {
    /// Every symbol, depth first in source order.
    pub fn all_symbols(&self) -> Vec<&Symbol> {
        let mut out = Vec::new();
        let mut stack: Vec<&Symbol> = self.symbols.iter().rev().collect();
        while let Some(s) = stack.pop() {
            out.push(s);
            stack.extend(s.children.iter().rev());
        }
        out
    }
}

/// The outline of `text`.
pub fn outline(text: &str) -> Outline {
    let (file, diags) = crate::syntax::parse(text, SourceId(0));
    let mut w = Walker {
        text,
        refs: Vec::new(),
    };
    let symbols = file.items.iter().map(|i| w.item(i)).collect();
    Outline {
        symbols,
        references: w.refs,
        partial: diags.iter().any(crate::diagnostic::Diagnostic::is_error),
    }
}

/// The standard library's module names (`std::hardware`, …).
pub fn stdlib_modules() -> &'static [&'static str] {
    crate::stdlib::MODULES
}

/// The source of `std::<module>`.
pub fn stdlib_source(module: &str) -> Option<&'static str> {
    crate::stdlib::module(module)
}

/// The language's reserved words, node kinds and contextual keywords.
pub fn keywords() -> Vec<&'static str> {
    let mut k: Vec<&str> = crate::words::RESERVED.to_vec();
    k.extend(crate::words::NODE_KINDS);
    k.extend(crate::words::CONTEXTUAL);
    k
}

struct Walker<'a> {
    text: &'a str,
    refs: Vec<Reference>,
}

impl Walker<'_> {
    fn slice(&self, s: Span) -> &str {
        self.text
            .get(s.start as usize..s.end as usize)
            .unwrap_or("")
    }

    /// The `//` lines right above the line `at` is on.
    fn doc(&self, at: Span) -> String {
        let before = self.text.get(..at.start as usize).unwrap_or("");
        let mut lines: Vec<&str> = before.lines().collect();
        if !before.ends_with('\n') {
            lines.pop();
        }
        let mut doc: Vec<&str> = lines
            .iter()
            .rev()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with("//"))
            .map(|l| l.trim_start_matches('/').trim())
            .collect();
        doc.reverse();
        doc.join("\n")
    }

    fn symbol(&self, kind: SymbolKind, name: String, name_span: Span, span: Span) -> Symbol {
        Symbol {
            kind,
            name,
            name_span,
            span,
            detail: self
                .slice(span)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_owned(),
            doc: self.doc(span),
            children: Vec::new(),
        }
    }

    fn reference(&mut self, name: &str, span: Span, kind: RefKind, context: &str) {
        self.refs.push(Reference {
            name: name.to_owned(),
            span,
            kind,
            context: context.to_owned(),
        });
    }

    fn item(&mut self, i: &Item) -> Symbol {
        match i {
            Item::Use(u) => {
                let module: Vec<&str> = u.path.iter().map(|p| p.name.as_str()).collect();
                let module = module.join("::");
                for p in &u.path {
                    self.reference(&p.name, p.span, RefKind::Module, "");
                }
                for n in &u.names {
                    self.reference(&n.name, n.span, RefKind::UseItem, &module);
                }
                let mut s = self.symbol(SymbolKind::Use, module, u.span, u.span);
                s.children = u
                    .names
                    .iter()
                    .map(|n| self.symbol(SymbolKind::Use, n.name.clone(), n.span, n.span))
                    .collect();
                s
            }
            Item::Let(l) => {
                self.expr(&l.value);
                self.symbol(SymbolKind::Let, l.name.name.clone(), l.name.span, l.span)
            }
            Item::Model(m) => {
                let mut s =
                    self.symbol(SymbolKind::Model, m.name.name.clone(), m.name.span, m.span);
                let kind = match m.kind.kind {
                    NodeKindKw::Switch => "switch",
                    NodeKindKw::Hca => "hca",
                    NodeKindKw::Router => "router",
                };
                let attrs: Vec<String> = m
                    .attrs
                    .iter()
                    .map(|a| format!("{} = {}", a.name.name, self.slice(a.value.span)))
                    .collect();
                s.detail = format!("model {} : {kind} {{ {} }}", m.name.name, attrs.join(", "));
                for a in &m.attrs {
                    self.reference(&a.name.name, a.name.span, RefKind::Attr, "model");
                    self.expr(&a.value);
                }
                s
            }
            Item::Template(t) => {
                let mut s = self.symbol(
                    SymbolKind::Template,
                    t.name.name.clone(),
                    t.name.span,
                    t.span,
                );
                let params: Vec<&str> = t.params.iter().map(|p| self.slice(p.span)).collect();
                s.detail = format!("template {}({})", t.name.name, params.join(", "));
                for p in &t.params {
                    if let Some(d) = &p.default {
                        self.expr(d);
                    }
                    let mut ps =
                        self.symbol(SymbolKind::Param, p.name.name.clone(), p.name.span, p.span);
                    ps.detail = self.slice(p.span).to_owned();
                    ps.doc = String::new();
                    s.children.push(ps);
                }
                self.block(&t.body, &mut s.children);
                s
            }
            Item::Fabric(f) => {
                let mut s =
                    self.symbol(SymbolKind::Fabric, f.name.name.clone(), f.name.span, f.span);
                for st in &f.stmts {
                    self.fabric_stmt(st, &mut s.children);
                }
                s
            }
        }
    }

    fn fabric_stmt(&mut self, st: &FabricStmt, out: &mut Vec<Symbol>) {
        match st {
            FabricStmt::TopologyExpr(e, span) => {
                self.expr(e);
                let name_span = Span::new(span.start as usize, span.start as usize + 8);
                out.push(self.symbol(SymbolKind::Section, "topology".into(), name_span, *span));
            }
            FabricStmt::TopologyBlock(b, span) | FabricStmt::Faults(b, span) => {
                let word = if matches!(st, FabricStmt::Faults(..)) {
                    "faults"
                } else {
                    "topology"
                };
                let name_span = Span::new(span.start as usize, span.start as usize + word.len());
                let mut s = self.symbol(SymbolKind::Section, word.into(), name_span, *span);
                self.block(b, &mut s.children);
                out.push(s);
            }
            FabricStmt::Let(l) => {
                self.expr(&l.value);
                out.push(self.symbol(SymbolKind::Let, l.name.name.clone(), l.name.span, l.span));
            }
            FabricStmt::Attr(a) => {
                self.reference(&a.name.name, a.name.span, RefKind::Attr, "fabric");
                self.expr(&a.value);
            }
            FabricStmt::Section(sec) => out.push(self.section(sec)),
        }
    }

    fn section(&mut self, sec: &Section) -> Symbol {
        let name = match &sec.name {
            Some(n) => format!("{} {}", sec.kind.name, n.name),
            None => sec.kind.name.clone(),
        };
        let name_span = sec.name.as_ref().map_or(sec.kind.span, |n| n.span);
        let mut s = self.symbol(SymbolKind::Section, name, name_span, sec.span);
        if let Some(on) = &sec.on {
            self.expr(on);
        }
        for item in sec.body.iter().flatten() {
            match item {
                SectionItem::Attr(a) => {
                    self.reference(&a.name.name, a.name.span, RefKind::Attr, &sec.kind.name);
                    self.expr(&a.value);
                }
                SectionItem::Section(inner) => s.children.push(self.section(inner)),
            }
        }
        s
    }

    fn block(&mut self, b: &Block, out: &mut Vec<Symbol>) {
        for st in &b.stmts {
            match st {
                Stmt::Let(l) => {
                    self.expr(&l.value);
                    out.push(self.symbol(
                        SymbolKind::Let,
                        l.name.name.clone(),
                        l.name.span,
                        l.span,
                    ));
                }
                Stmt::For(f) => {
                    for (_, e) in &f.bindings {
                        self.expr(e);
                    }
                    self.block(&f.body, out);
                }
                Stmt::If(i) => {
                    self.expr(&i.cond);
                    self.block(&i.then, out);
                    if let Some(o) = &i.otherwise {
                        self.block(o, out);
                    }
                }
                Stmt::Assert(a) => {
                    self.expr(&a.cond);
                    if let Some(m) = &a.message {
                        self.expr(m);
                    }
                }
                Stmt::Node(n) => {
                    let (name, name_span) = match &n.name {
                        DeclName::Single(i) | DeclName::Array(i, _) => (i.name.clone(), i.span),
                        DeclName::Computed(e) => (self.slice(e.span).to_owned(), e.span),
                    };
                    match &n.name {
                        DeclName::Array(_, e) | DeclName::Computed(e) => self.expr(e),
                        DeclName::Single(_) => {}
                    }
                    if let Some(m) = &n.model {
                        self.expr(m);
                    }
                    for a in &n.attrs {
                        self.reference(&a.name.name, a.name.span, RefKind::Attr, "node");
                        self.expr(&a.value);
                    }
                    let name = name.trim_matches('"').to_owned();
                    out.push(self.symbol(SymbolKind::Node, name, name_span, n.span));
                }
                Stmt::Link(l) => {
                    self.expr(&l.a);
                    self.expr(&l.b);
                    for a in &l.attrs {
                        self.reference(&a.name.name, a.name.span, RefKind::Attr, "link");
                        self.expr(&a.value);
                    }
                }
                Stmt::LinkDown(l) => {
                    self.expr(&l.a);
                    if let Some(b) = &l.b {
                        self.expr(b);
                    }
                }
                Stmt::NodeDown(n) => self.expr(&n.node),
                Stmt::Call(e) => self.expr(e),
            }
        }
    }

    /// Every name in `e` (an explicit stack: expressions nest as deep as the parser allows).
    fn expr(&mut self, e: &Expr) {
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            match &e.kind {
                ExprKind::Ident(n) => self.reference(n, e.span, RefKind::Name, ""),
                ExprKind::Str(s) => self.reference(s, e.span, RefKind::Str, ""),
                ExprKind::Call(f, args) => {
                    self.reference(&f.name, f.span, RefKind::Call, "");
                    for a in args.iter().rev() {
                        if let Some(n) = &a.name {
                            self.reference(&n.name, n.span, RefKind::Attr, &f.name);
                        }
                        stack.push(&a.value);
                    }
                }
                ExprKind::List(items) => stack.extend(items.iter().rev()),
                ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                ExprKind::Field(a, _) | ExprKind::Unary(_, a) => stack.push(a),
                ExprKind::If(a, b, c) => {
                    stack.push(c);
                    stack.push(b);
                    stack.push(a);
                }
                ExprKind::Int(_)
                | ExprKind::Width(_)
                | ExprKind::Bool(_)
                | ExprKind::HostList(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_and_references() {
        let text = "// Two leaves.\ntemplate t(n: int = 2) {\n    switch leaf[1..=n] : sw\n}\nfabric f {\n    topology = t(n: 3)\n    routing { engine = updn }\n}\n";
        let o = outline(text);
        let names: Vec<(SymbolKind, &str)> = o
            .all_symbols()
            .iter()
            .map(|s| (s.kind, s.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (SymbolKind::Template, "t"),
                (SymbolKind::Param, "n"),
                (SymbolKind::Node, "leaf"),
                (SymbolKind::Fabric, "f"),
                (SymbolKind::Section, "topology"),
                (SymbolKind::Section, "routing"),
            ]
        );
        assert_eq!(
            o.symbols.first().map(|s| s.doc.as_str()),
            Some("Two leaves.")
        );
        assert_eq!(
            o.symbols.first().map(|s| s.detail.as_str()),
            Some("template t(n: int = 2)")
        );
        let refs: Vec<(&str, RefKind)> = o
            .references
            .iter()
            .map(|r| (r.name.as_str(), r.kind))
            .collect();
        assert!(refs.contains(&("sw", RefKind::Name)), "{refs:?}");
        assert!(refs.contains(&("t", RefKind::Call)), "{refs:?}");
        assert!(refs.contains(&("engine", RefKind::Attr)), "{refs:?}");
        assert!(!o.partial);
    }
}
