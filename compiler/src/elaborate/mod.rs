//! Elaboration: a parsed program → a [`Fabric`] plus its configuration.
//!
//! A small, total interpreter: `let`, `for` over finite ranges and lists, `if`, templates
//! (no recursion), node and link declarations. Errors are collected, never thrown: a bad
//! statement is reported and skipped, and the same error at the same place is reported once
//! even when a loop hits it thousands of times. Errors raised inside a template from another
//! file (the stdlib) are reported at the user's call site. An evaluation budget is charged for
//! every statement, iteration and value built or walked (`==`, `format`, slices, …).
//!
//! One `Elab` state (here: its fields and the diagnostic helpers), its methods split by job:
//! `modules.rs` (items, `use`, models), `sections.rs` (the `fabric` item, its topology or
//! `import`, its sections), `statements.rs` (blocks, `let`, `for`, `if`, template calls, the
//! budget), `declarations.rs` (nodes, links, faults, ports, attributes), `expressions.rs`,
//! `builtins.rs`, `tenants.rs` (`tenant`, `shared`, `sm on`) and `multicast.rs` (the
//! `multicast { … }` section). Values are `crate::value`'s.

mod builtins;
mod declarations;
mod expressions;
mod modules;
mod multicast;
mod sections;
mod statements;
mod tenants;

use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId, SourceMap};
use crate::stdlib;
use crate::syntax::ast::*;
use crate::value::{
    backticked, did_you_mean, format, suggest, ModelDef, NodeArray, TemplateDef, Value,
};
use crate::{FabricConfig, Host};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use weft_fabric::{
    Fabric, FabricBuilder, Guid, Lid, LinkError, Mtu, NodeId, NodeKind, NodeSpec, PortRef, Role,
    Speed, Width,
};

/// Statements one program may execute by default: far above any real fabric (the 45 056-host
/// example takes about 1.2 million), low enough to stop a runaway loop within seconds.
pub(crate) const STEP_LIMIT: u64 = 50_000_000;

/// Deepest chain of template calls.
pub(crate) const MAX_TEMPLATE_DEPTH: usize = 64;

/// Longest string a program may build.
pub(crate) const MAX_STRING_BYTES: usize = 1 << 20;

/// Longest list a program may build.
pub(crate) const MAX_LIST_ITEMS: usize = 1 << 20;

/// Nodes one fabric may declare: more than the unicast LID space can address.
pub(crate) const NODE_LIMIT: usize = 1 << 17;

/// Default base of generated GUIDs (NVIDIA's OUI in the top bytes).
pub const DEFAULT_GUID_BASE: u64 = 0x0002_c900_0000_0000;

/// Spacing of generated GUIDs: room for the port GUIDs of an HCA (node GUID + port).
const GUID_STEP: u64 = 0x100;

/// Where something was declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// File.
    pub source: SourceId,
    /// Span in it.
    pub span: Span,
}

/// The elaborated program.
#[derive(Debug)]
pub struct Elaborated {
    /// The topology with faults applied.
    pub fabric: Fabric,
    /// Everything else the fabric block says.
    pub config: FabricConfig,
    /// Declaration of each node, by [`NodeId`].
    pub node_origins: Vec<Origin>,
    /// Where the `fabric` item is.
    pub fabric_origin: Origin,
    /// End nodes recognised as SHARP aggregation nodes (no role declared, and
    /// [`weft_fabric::roles::aggregation_nodes`] found one), with the evidence; their role in
    /// [`Elaborated::fabric`] is [`Role::Aggregation`].
    pub recognised: Vec<weft_fabric::roles::Recognised>,
}

impl Elaborated {
    /// Where node `id` was declared (the `fabric` item for nodes without a declaration of
    /// their own, such as imported ones).
    pub fn origin(&self, id: NodeId) -> Origin {
        self.node_origins
            .get(id.index())
            .copied()
            .unwrap_or(self.fabric_origin)
    }
}

enum Global {
    Model(Rc<ModelDef>),
    Template(Rc<TemplateDef>),
    Value(Value),
}

struct Module {
    source: SourceId,
    globals: BTreeMap<String, Global>,
}

struct Frame {
    module: usize,
    source: SourceId,
    template: String,
    call: Origin,
}

/// Elaborator state.
pub(crate) struct Elab<'a> {
    host: &'a dyn Host,
    pub sources: SourceMap,
    pub diags: Vec<Diagnostic>,
    seen: HashSet<(SourceId, Span, Code)>,
    main: SourceId,
    modules: Vec<Module>,
    std_modules: HashMap<String, usize>,
    builder: FabricBuilder,
    arrays: HashMap<String, Rc<NodeArray>>,
    node_origins: Vec<Origin>,
    link_origins: Vec<Origin>,
    env: Vec<(Rc<str>, Value)>,
    frames: Vec<Frame>,
    steps: u64,
    guid_next: u64,
    in_faults: bool,
    step_limit: u64,
    /// Names whose definition failed (already reported): uses of them stay quiet, so one
    /// root error gives one diagnostic.
    poisoned: HashSet<String>,
    /// Nodes whose declaration writes a `role` (even `host`): role recognition skips them.
    declared_roles: std::collections::BTreeSet<NodeId>,
    /// The end nodes grouped into hosts, once the topology is built (the sections name
    /// hosts by name).
    machines: weft_fabric::machines::Machines,
}

type R<T> = Result<T, ()>;

impl<'a> Elab<'a> {
    pub(crate) fn new(host: &'a dyn Host, sources: SourceMap, main: SourceId) -> Elab<'a> {
        Elab {
            host,
            sources,
            diags: Vec::new(),
            seen: HashSet::new(),
            main,
            modules: Vec::new(),
            std_modules: HashMap::new(),
            builder: FabricBuilder::new(""),
            arrays: HashMap::new(),
            node_origins: Vec::new(),
            link_origins: Vec::new(),
            env: Vec::new(),
            frames: Vec::new(),
            steps: 0,
            guid_next: DEFAULT_GUID_BASE,
            in_faults: false,
            step_limit: STEP_LIMIT,
            poisoned: HashSet::new(),
            declared_roles: std::collections::BTreeSet::new(),
            machines: weft_fabric::machines::Machines::default(),
        }
    }

    /// Lowers the statement budget (fuzzing, tests).
    pub(crate) fn set_step_limit(&mut self, steps: u64) {
        self.step_limit = steps;
    }

    // ---- diagnostics --------------------------------------------------------------------

    fn cur_source(&self) -> SourceId {
        self.frames.last().map_or(self.main, |f| f.source)
    }

    fn cur_module(&self) -> usize {
        self.frames.last().map_or(0, |f| f.module)
    }

    /// Records a diagnostic whose labels point into the current source.
    fn emit(&mut self, mut d: Diagnostic) {
        if d.source.is_none() && !d.labels.is_empty() {
            d.source = Some(self.cur_source());
        }
        if d.source != Some(self.main) {
            // Raised inside a template from another file: point at the user's call.
            if let Some(call) = self.frames.iter().find(|f| f.call.source == self.main) {
                let inner = d
                    .labels
                    .first()
                    .map(|l| l.text.clone())
                    .filter(|t| !t.is_empty());
                let place = d
                    .source
                    .and_then(|s| self.sources.get(s))
                    .zip(d.labels.first())
                    .map(|(f, l)| {
                        let (line, col) = f.line_col(l.span.start);
                        format!("{}:{line}:{col}", f.name)
                    });
                let mut help = match (inner, place) {
                    (Some(i), Some(p)) => format!("{i} (at {p})"),
                    (None, Some(p)) => format!("raised at {p}"),
                    (Some(i), None) => i,
                    (None, None) => String::new(),
                };
                if let Some(h) = d.help.take() {
                    help = if help.is_empty() {
                        h
                    } else {
                        format!("{help}; {h}")
                    };
                }
                d.labels = vec![crate::diagnostic::Label {
                    span: call.call.span,
                    text: format!("in this call of `{}`", call.template),
                }];
                d.source = Some(self.main);
                d.help = (!help.is_empty()).then_some(help);
            }
        }
        let key = (
            d.source.unwrap_or(self.main),
            d.labels.first().map(|l| l.span).unwrap_or_default(),
            d.code,
        );
        if self.seen.insert(key) {
            self.diags.push(d);
        }
    }

    /// Whether an error with `code` labelled at `span` of the current source was reported
    /// already (so [`Elab::emit`] would drop it): the key `emit` dedups by, where a template
    /// from another file reports at the user's call. Lets a loop that hits the same error
    /// on every iteration skip building it again.
    fn reported(&self, span: Span, code: Code) -> bool {
        let here = self.cur_source();
        let key = match self.frames.iter().find(|f| f.call.source == self.main) {
            Some(f) if here != self.main => (self.main, f.call.span, code),
            _ => (here, span, code),
        };
        self.seen.contains(&key)
    }

    /// Where a declaration at `span` of the current source shows to the user: itself in the
    /// main file, else the user's call of the template that made it.
    fn user_origin(&self, span: Span) -> Origin {
        let here = self.cur_source();
        if here == self.main {
            return Origin { source: here, span };
        }
        self.frames
            .iter()
            .find(|f| f.call.source == self.main)
            .map_or(Origin { source: here, span }, |f| f.call)
    }

    fn err(&mut self, code: Code, msg: impl Into<String>, span: Span, label: impl Into<String>) {
        let d = Diagnostic::error(code, msg).label(self.cur_source(), span, label);
        self.emit(d);
    }

    fn err_help(
        &mut self,
        code: Code,
        msg: impl Into<String>,
        span: Span,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        let d = Diagnostic::error(code, msg)
            .label(self.cur_source(), span, label)
            .help(help);
        self.emit(d);
    }

    /// Something the language accepts but this version does not build (`code`, one of the
    /// `weft::not_built::…` codes): an error at its span, never silently ignored.
    fn not_built(&mut self, code: Code, span: Span, msg: &str, help: &str) {
        self.err_help(code, msg, span, "not implemented in this version", help);
    }

    fn type_err(&mut self, what: &str, v: &Value, span: Span) {
        self.err(
            Code::TypeMismatch,
            format!("expected {what}, found {}", v.type_name()),
            span,
            format!("this is {}", v.a_type_name()),
        );
    }
}
