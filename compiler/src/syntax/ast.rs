//! The typed syntax tree. Every node carries the byte span it came from.
//!
//! The AST knows nothing of elaboration: names are unresolved strings.

use std::fmt;

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from byte offsets.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether the span is empty.
    pub fn is_empty(self) -> bool {
        self.end == self.start
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> Self {
        (s.start as usize, s.len()).into()
    }
}

/// An identifier with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ident {
    /// The text.
    pub name: String,
    /// Where it is.
    pub span: Span,
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A whole `.weft` file.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct File {
    /// Top-level items in source order.
    pub items: Vec<Item>,
}

/// A top-level item.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// `use std::hardware::{a, b}`.
    Use(Use),
    /// `let x = …` at top level.
    Let(Let),
    /// `model name : switch { … }`.
    Model(Model),
    /// `template name(params) { … }`.
    Template(Template),
    /// `fabric name { … }`.
    Fabric(FabricDef),
}

/// `use a::b::c` or `use a::b::{c, d}`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Use {
    /// The module path (`std`, `hardware`).
    pub path: Vec<Ident>,
    /// The names imported from it.
    pub names: Vec<Ident>,
    /// The whole item.
    pub span: Span,
}

/// `let name = value`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Let {
    /// Bound name.
    pub name: Ident,
    /// Value.
    pub value: Expr,
    /// The whole statement.
    pub span: Span,
}

/// A hardware model: `model sb7800 : switch { ports = 36, … }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Model {
    /// Model name.
    pub name: Ident,
    /// Switch, HCA or router.
    pub kind: NodeKindSyntax,
    /// Attributes.
    pub attrs: Vec<Attr>,
    /// The whole item.
    pub span: Span,
}

/// The node kind keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeKindKw {
    /// `switch`
    Switch,
    /// `hca`
    Hca,
    /// `router`
    Router,
}

/// A node kind keyword with its span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NodeKindSyntax {
    /// Which keyword.
    pub kind: NodeKindKw,
    /// Where.
    pub span: Span,
}

/// `name = value`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Attr {
    /// Attribute name.
    pub name: Ident,
    /// Value.
    pub value: Expr,
    /// The whole attribute.
    pub span: Span,
}

/// A topology template: `template fat_tree(levels: int, radix: int = 36) { … }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Template {
    /// Template name.
    pub name: Ident,
    /// Parameters.
    pub params: Vec<Param>,
    /// Body.
    pub body: Block,
    /// The whole item.
    pub span: Span,
}

/// A template parameter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Param {
    /// Name.
    pub name: Ident,
    /// Declared type (`int`, `str`, `bool`, `model`, `list`, `range`), if any.
    pub ty: Option<Ident>,
    /// Default value, if any.
    pub default: Option<Expr>,
    /// The whole parameter.
    pub span: Span,
}

/// `fabric name { … }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FabricDef {
    /// Fabric name.
    pub name: Ident,
    /// Statements.
    pub stmts: Vec<FabricStmt>,
    /// The whole item.
    pub span: Span,
}

/// A statement directly inside `fabric { … }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FabricStmt {
    /// `topology = expr` (a template call or `import("…")`).
    TopologyExpr(Expr, Span),
    /// `topology { … }`.
    TopologyBlock(Block, Span),
    /// `faults { … }`.
    Faults(Block, Span),
    /// `let x = …`.
    Let(Let),
    /// `name = value`.
    Attr(Attr),
    /// A configuration section (`vls`, `routing`, `qos`, `tenant`, …).
    Section(Section),
}

/// A configuration section such as `qos { class compute { sl = 1 } }` or a bare flag.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Section {
    /// The leading keyword (`vls`, `class`, `tenant`, `vms`, `vm`, `vswitch`, …).
    pub kind: Ident,
    /// Optional name (`compute`, `bob.db1`).
    pub name: Option<Ident>,
    /// Optional `on <expr>` target.
    pub on: Option<Expr>,
    /// Body, if the section has braces.
    pub body: Option<Vec<SectionItem>>,
    /// The whole section.
    pub span: Span,
}

/// An item of a section body.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SectionItem {
    /// `key = value`.
    Attr(Attr),
    /// A nested section.
    Section(Section),
}

/// `{ stmt* }`.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Block {
    /// Statements.
    pub stmts: Vec<Stmt>,
    /// Braces included.
    pub span: Span,
}

/// A statement inside a block (`topology`, `faults`, template bodies, loops).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stmt {
    /// `let`.
    Let(Let),
    /// `for a in r, b in s { … }`.
    For(For),
    /// `if c { … } else { … }`.
    If(If),
    /// `assert cond, "message"`.
    Assert(Assert),
    /// `switch leaf[1..=36] : sb7800 { level = 1 }`.
    Node(NodeDecl),
    /// `link a.p[1] <-> b.p[2]`.
    Link(LinkStmt),
    /// `link a.p[1] down` (faults).
    LinkDown(LinkDown),
    /// `switch spine[3] down` (faults).
    NodeDown(NodeDown),
    /// A template call used as a statement.
    Call(Expr),
}

/// `for` loop.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct For {
    /// `(variable, iterable)` pairs, outermost first.
    pub bindings: Vec<(Ident, Expr)>,
    /// Body.
    pub body: Block,
    /// The whole statement.
    pub span: Span,
}

/// `if`/`else`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct If {
    /// Condition.
    pub cond: Expr,
    /// Then-branch.
    pub then: Block,
    /// Else-branch (an `else if` is a block holding one `If`).
    pub otherwise: Option<Block>,
    /// The whole statement.
    pub span: Span,
}

/// `assert cond, message`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Assert {
    /// Condition.
    pub cond: Expr,
    /// Message (a string expression).
    pub message: Option<Expr>,
    /// The whole statement.
    pub span: Span,
}

/// How a node declaration names its node(s).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DeclName {
    /// `leaf` — one node.
    Single(Ident),
    /// `leaf[1..=36]` — an array over a range.
    Array(Ident, Expr),
    /// `"S-1"` or `(format(…))` — one node with a computed name.
    Computed(Expr),
}

/// A node declaration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NodeDecl {
    /// `switch`, `hca` or `router`.
    pub kind: NodeKindSyntax,
    /// Name(s).
    pub name: DeclName,
    /// Hardware model, if given.
    pub model: Option<Expr>,
    /// Attributes (`level`, `guid`, `ports`, `name`, …).
    pub attrs: Vec<Attr>,
    /// The whole declaration.
    pub span: Span,
}

/// A link declaration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LinkStmt {
    /// One end (a port expression).
    pub a: Expr,
    /// The other end.
    pub b: Expr,
    /// Attributes (`speed`, `width`).
    pub attrs: Vec<Attr>,
    /// The whole statement.
    pub span: Span,
}

/// `link a.p[1] down` or `link a.p[1] <-> b.p[2] down`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LinkDown {
    /// A port on the link.
    pub a: Expr,
    /// The other port, when written.
    pub b: Option<Expr>,
    /// The whole statement.
    pub span: Span,
}

/// `switch x down`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NodeDown {
    /// The kind keyword written.
    pub kind: NodeKindSyntax,
    /// The node.
    pub node: Expr,
    /// The whole statement.
    pub span: Span,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    /// `..`
    Range,
    /// `..=`
    RangeIncl,
    /// `||`
    Or,
    /// `&&`
    And,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

impl BinOp {
    /// The operator as written.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BinOp::Range => "..",
            BinOp::RangeIncl => "..=",
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    /// `-`
    Neg,
    /// `!`
    Not,
}

/// A call argument, positional or named.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Arg {
    /// `name:` when named.
    pub name: Option<Ident>,
    /// The value.
    pub value: Expr,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
}

/// Expression forms.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ExprKind {
    /// Integer literal.
    Int(i64),
    /// Width literal (`4x`): the lane count.
    Width(u32),
    /// String literal (escapes resolved).
    Str(String),
    /// `true`/`false`.
    Bool(bool),
    /// A name.
    Ident(String),
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `f(args)`.
    Call(Ident, Vec<Arg>),
    /// `a[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// `a.name`.
    Field(Box<Expr>, Ident),
    /// `-a`, `!a`.
    Unary(UnOp, Box<Expr>),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `if c { a } else { b }`.
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A Slurm host list, `cn[001-128,200]`: the nodes it names.
    HostList(super::hostlist::HostList),
}
