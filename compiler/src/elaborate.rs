//! Elaboration: a parsed program → a [`Fabric`] plus its configuration.
//!
//! A small, total interpreter: `let`, `for` over finite ranges and lists, `if`, templates
//! (no recursion), node and link declarations. Errors are collected, never thrown: a bad
//! statement is reported and skipped, and the same error at the same place is reported once
//! even when a loop hits it thousands of times. Errors raised inside a template from another
//! file (the stdlib) are reported at the user's call site.

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
    Fabric, FabricBuilder, Guid, Lid, LinkError, Mtu, NodeId, NodeKind, NodeSpec, PortRef, Speed,
    Width,
};

/// Statements one program may execute by default: far above any real fabric (the 45 056-host
/// example takes about 1.2 million), low enough to stop a runaway loop within seconds.
pub const STEP_LIMIT: u64 = 50_000_000;

/// Deepest chain of template calls.
pub const MAX_TEMPLATE_DEPTH: usize = 64;

/// Longest string a program may build.
pub const MAX_STRING_BYTES: usize = 1 << 20;

/// Longest list a program may build.
pub const MAX_LIST_ITEMS: usize = 1 << 20;

/// Nodes one fabric may declare: more than the unicast LID space can address.
pub const NODE_LIMIT: usize = 1 << 17;

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
    seen: HashSet<(SourceId, Span, &'static str)>,
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
}

type R<T> = Result<T, ()>;

impl<'a> Elab<'a> {
    pub fn new(host: &'a dyn Host, sources: SourceMap, main: SourceId) -> Elab<'a> {
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
        }
    }

    /// Lowers the statement budget (fuzzing, tests).
    pub fn set_step_limit(&mut self, steps: u64) {
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

    fn err(
        &mut self,
        code: &'static str,
        msg: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) {
        let d = Diagnostic::error(code, msg).label(self.cur_source(), span, label);
        self.emit(d);
    }

    fn err_help(
        &mut self,
        code: &'static str,
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

    /// Something the language accepts but this version does not build: an error at its
    /// span, never silently ignored.
    fn unsupported(&mut self, span: Span, msg: &str, help: &str) {
        self.err_help(
            "weft::unsupported",
            msg,
            span,
            "not implemented in this version",
            help,
        );
    }

    fn type_err(&mut self, what: &str, v: &Value, span: Span) {
        self.err(
            "weft::type_mismatch",
            format!("expected {what}, found {}", v.type_name()),
            span,
            format!("this is a {}", v.type_name()),
        );
    }

    // ---- modules ------------------------------------------------------------------------

    /// Registers the items of a parsed file as a module and returns its index.
    pub fn add_module(&mut self, file: &File, source: SourceId) -> usize {
        let index = self.modules.len();
        self.modules.push(Module {
            source,
            globals: BTreeMap::new(),
        });
        let saved = std::mem::take(&mut self.frames);
        if index != 0 {
            self.frames.push(Frame {
                module: index,
                source,
                template: String::new(),
                call: Origin {
                    source,
                    span: Span::default(),
                },
            });
        }
        for item in &file.items {
            match item {
                Item::Use(u) => self.use_item(u, index),
                Item::Model(m) => {
                    if let Some(def) = self.model_item(m) {
                        self.define(index, &m.name, Global::Model(Rc::new(def)));
                    }
                }
                Item::Template(t) => {
                    for p in &t.params {
                        if let Some(ty) =
                            p.ty.as_ref()
                                .filter(|ty| !Value::TYPES.contains(&ty.name.as_str()))
                        {
                            let help = suggest(&ty.name, Value::TYPES.iter().copied(), || {
                                format!("types are {}", Value::TYPES.join(", "))
                            });
                            self.err_help(
                                "weft::unknown_type",
                                format!("unknown type `{}`", ty.name),
                                ty.span,
                                "not a type",
                                help,
                            );
                        }
                    }
                    let def = TemplateDef {
                        ast: t.clone(),
                        module: index,
                    };
                    self.define(index, &t.name, Global::Template(Rc::new(def)));
                }
                Item::Let(l) => match self.eval(&l.value) {
                    Ok(v) => self.define(index, &l.name, Global::Value(v)),
                    Err(()) => {
                        self.poisoned.insert(l.name.name.clone());
                    }
                },
                Item::Fabric(_) => {}
            }
        }
        self.frames = saved;
        index
    }

    fn define(&mut self, module: usize, name: &Ident, g: Global) {
        let Some(m) = self.modules.get_mut(module) else {
            return;
        };
        if m.globals.contains_key(&name.name) {
            self.err_help(
                "weft::duplicate_item",
                format!("`{}` is defined twice", name.name),
                name.span,
                "second definition",
                "models, templates and top-level `let`s share one namespace; rename one",
            );
            return;
        }
        m.globals.insert(name.name.clone(), g);
    }

    fn std_module(&mut self, name: &str) -> Option<usize> {
        if let Some(&m) = self.std_modules.get(name) {
            return Some(m);
        }
        let text = stdlib::module(name)?;
        let source = self.sources.add(format!("std/{name}.weft"), text);
        let (file, diags) = crate::syntax::parse(text, source);
        self.diags.extend(diags);
        let m = self.add_module(&file, source);
        self.std_modules.insert(name.to_owned(), m);
        Some(m)
    }

    fn use_item(&mut self, u: &Use, into: usize) {
        let path: Vec<&str> = u.path.iter().map(|i| i.name.as_str()).collect();
        let path_span = match (u.path.first(), u.path.last()) {
            (Some(a), Some(b)) => a.span.to(b.span),
            _ => u.span,
        };
        let module = match path.as_slice() {
            ["std", m] => {
                let m = (*m).to_owned();
                match self.std_module(&m) {
                    Some(idx) => idx,
                    None => {
                        let help = match did_you_mean(&m, stdlib::MODULES.iter().copied()) {
                            Some(s) => format!("did you mean `std::{s}`?"),
                            None => format!(
                                "the standard library has {}",
                                stdlib::MODULES
                                    .iter()
                                    .map(|s| format!("`std::{s}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        };
                        self.err_help(
                            "weft::unknown_module",
                            format!("there is no module `std::{m}`"),
                            path_span,
                            "unknown module",
                            help,
                        );
                        return;
                    }
                }
            }
            _ => {
                self.err_help(
                    "weft::unknown_module",
                    format!("there is no module `{}`", path.join("::")),
                    path_span,
                    "unknown module",
                    format!(
                        "modules are {}",
                        stdlib::MODULES
                            .iter()
                            .map(|s| format!("`std::{s}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                return;
            }
        };
        for name in &u.names {
            let found = self.modules.get(module).and_then(|m| {
                m.globals.get(&name.name).map(|g| match g {
                    Global::Model(x) => Global::Model(Rc::clone(x)),
                    Global::Template(x) => Global::Template(Rc::clone(x)),
                    Global::Value(v) => Global::Value(v.clone()),
                })
            });
            match found {
                Some(g) => self.define(into, name, g),
                None => {
                    let names: Vec<String> = self
                        .modules
                        .get(module)
                        .map(|m| m.globals.keys().cloned().collect())
                        .unwrap_or_default();
                    let help = suggest(&name.name, names.iter().map(String::as_str), || {
                        format!("`{}` has {}", path.join("::"), names.join(", "))
                    });
                    self.err_help(
                        "weft::unknown_name",
                        format!("`{}` is not in `{}`", name.name, path.join("::")),
                        name.span,
                        "not found",
                        help,
                    );
                }
            }
        }
    }

    fn model_item(&mut self, m: &Model) -> Option<ModelDef> {
        let kind = kind_of(m.kind.kind);
        let mut spec = NodeSpec::new(m.name.name.clone(), kind, Guid(0), 0);
        spec.model = Some(m.name.name.clone());
        let mut has_ports = false;
        for a in &m.attrs {
            if a.name.name == "ports" {
                has_ports = true;
            }
            let Ok(v) = self.eval_attr(&a.value) else {
                continue;
            };
            self.apply_attr(&mut spec, a, v, AttrContext::Model);
        }
        if !has_ports {
            self.err_help(
                "weft::model_without_ports",
                format!("model `{}` does not say how many ports it has", m.name.name),
                m.name.span,
                "no `ports`",
                "add `ports = N`",
            );
            return None;
        }
        Some(ModelDef {
            name: m.name.name.clone(),
            kind,
            spec,
        })
    }

    // ---- fabric -------------------------------------------------------------------------

    /// Elaborates the `fabric` item.
    pub fn fabric(&mut self, f: &FabricDef) -> Option<Elaborated> {
        let mut builder = FabricBuilder::new(f.name.name.clone());
        std::mem::swap(&mut builder, &mut self.builder);
        let mark = self.env.len();
        // Fabric-wide attributes first: they shape what the topology generates.
        for s in &f.stmts {
            if let FabricStmt::Attr(a) = s {
                self.fabric_attr(a);
            }
        }
        let topologies: Vec<&FabricStmt> = f
            .stmts
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    FabricStmt::TopologyExpr(..) | FabricStmt::TopologyBlock(..)
                )
            })
            .collect();
        match topologies.as_slice() {
            [] => {
                self.err_help(
                    "weft::no_topology",
                    format!("fabric `{}` has no topology", f.name.name),
                    f.name.span,
                    "this fabric",
                    "add `topology = fat_tree(…)`, `topology = import(\"file\")` or `topology { … }`",
                );
            }
            [_, second, ..] => {
                let span = match second {
                    FabricStmt::TopologyExpr(_, s) | FabricStmt::TopologyBlock(_, s) => *s,
                    _ => f.span,
                };
                self.err_help(
                    "weft::duplicate_topology",
                    "the topology is given twice",
                    span,
                    "second topology",
                    "a fabric has one topology; put every declaration in one `topology { … }` block",
                );
            }
            [_] => {}
        }
        for s in &f.stmts {
            match s {
                FabricStmt::Let(l) => self.let_stmt(l),
                FabricStmt::TopologyExpr(e, _) => self.topology_expr(e),
                FabricStmt::TopologyBlock(b, _) => self.block(b),
                _ => {}
            }
            if topologies.len() > 1
                && matches!(
                    s,
                    FabricStmt::TopologyExpr(..) | FabricStmt::TopologyBlock(..)
                )
            {
                break;
            }
        }
        self.in_faults = true;
        for s in &f.stmts {
            if let FabricStmt::Faults(b, _) = s {
                self.block(b);
            }
        }
        self.in_faults = false;
        let mut config = FabricConfig::default();
        for s in &f.stmts {
            if let FabricStmt::Section(sec) = s {
                self.section(sec, &mut config);
            }
        }
        self.env.truncate(mark);
        self.builder.set_lmc(config.routing.lmc);
        std::mem::swap(&mut builder, &mut self.builder);
        Some(Elaborated {
            fabric: builder.finish(),
            config,
            node_origins: std::mem::take(&mut self.node_origins),
            fabric_origin: Origin {
                source: self.main,
                span: f.name.span,
            },
        })
    }

    fn fabric_attr(&mut self, a: &Attr) {
        match a.name.name.as_str() {
            "guid_base" => {
                if let Ok(v) = self.eval(&a.value) {
                    match v {
                        Value::Int(g) => self.guid_next = g as u64,
                        other => self.type_err("a GUID (integer)", &other, a.value.span),
                    }
                }
            }
            other => {
                let help = suggest(other, FABRIC_ATTRS.iter().copied(), || {
                    "fabric attributes are `guid_base`; configuration goes in sections such as `routing { … }`".into()
                });
                self.err_help(
                    "weft::unknown_attribute",
                    format!("unknown fabric attribute `{other}`"),
                    a.name.span,
                    "unknown",
                    help,
                );
            }
        }
    }

    fn topology_expr(&mut self, e: &Expr) {
        if let ExprKind::Call(name, args) = &e.kind {
            if name.name == "import" && self.lookup(&name.name).is_none() {
                self.import(args, e.span);
                return;
            }
            self.call_stmt(e);
            return;
        }
        self.err_help(
            "weft::bad_topology",
            "a topology is a template call or `import(\"file\")`",
            e.span,
            "not a template call",
            "write `topology = fat_tree(…)`, `topology = import(\"fabric.ibnetdiscover\")` or `topology { … }`",
        );
    }

    fn import(&mut self, args: &[Arg], span: Span) {
        let [arg] = args else {
            self.err(
                "weft::bad_arguments",
                "`import` takes one file name",
                span,
                "expected `import(\"file\")`",
            );
            return;
        };
        let Ok(v) = self.eval(&arg.value) else {
            return;
        };
        let Value::Str(path) = v else {
            self.type_err("a file name (str)", &v, arg.value.span);
            return;
        };
        let text = match self.host.read(&path) {
            Ok(t) => t,
            Err(why) => {
                self.err_help(
                    "weft::import_unreadable",
                    format!("cannot read `{path}`"),
                    arg.value.span,
                    why,
                    "paths are relative to the file that imports them",
                );
                return;
            }
        };
        if !self.builder.fabric().nodes().is_empty() {
            self.err(
                "weft::import_not_first",
                "an imported topology must be the whole topology",
                span,
                "nodes were declared before this import",
            );
            return;
        }
        let source = self.sources.add(path.to_string(), text.as_str());
        match crate::import::ibnetdiscover(&text, &path, &self.builder.fabric().name, source) {
            Ok((mut fabric, warnings)) => {
                self.diags.extend(warnings);
                fabric.name = self.builder.fabric().name.clone();
                let origin = Origin {
                    source: self.main,
                    span,
                };
                self.node_origins = vec![origin; fabric.nodes().len()];
                self.link_origins = vec![origin; fabric.links().len()];
                self.builder = FabricBuilder::from(fabric);
            }
            Err(errors) => {
                self.diags.extend(errors);
                self.err(
                    "weft::import_failed",
                    format!("`{path}` is not a valid ibnetdiscover topology"),
                    arg.value.span,
                    "imported here",
                );
            }
        }
    }

    fn section(&mut self, s: &Section, config: &mut FabricConfig) {
        match s.kind.name.as_str() {
            "vls" => {
                for a in s.body.iter().flatten() {
                    match a {
                        SectionItem::Attr(a) if a.name.name == "budget" => {
                            if let Some(n) =
                                self.int_in(&a.value, 1, 15, "a VL budget of 1 to 15 data VLs")
                            {
                                config.vls_budget = Some((n as u8, a.value.span));
                            }
                        }
                        other => self.unknown_in_section(other, "vls", &["budget"]),
                    }
                }
            }
            "routing" => {
                for a in s.body.iter().flatten() {
                    let SectionItem::Attr(a) = a else {
                        self.unknown_in_section(a, "routing", ROUTING_ATTRS);
                        continue;
                    };
                    match a.name.name.as_str() {
                        "engine" => {
                            match self.word_in(&a.value, crate::ENGINES, "routing engine") {
                                Some(w) if w == "layered" => self.unsupported(
                                    a.value.span,
                                    "the `layered` routing engine is not implemented yet",
                                    "use `engine = updn` (deadlock-free on any topology) or \
                                     `engine = fat_tree` on trees",
                                ),
                                Some(w) => {
                                    config.routing.engine = Some(w);
                                    config.routing.engine_span = Some(a.value.span);
                                }
                                None => {}
                            }
                        }
                        "switch_to_switch" => {
                            if let Some(w) = self.word_in(
                                &a.value,
                                &["sftree", "none"],
                                "switch-to-switch scheme",
                            ) {
                                if w == "none" {
                                    self.unsupported(
                                        a.value.span,
                                        "`switch_to_switch = none` is not implemented yet",
                                        "every engine routes switch-to-switch paths (fat_tree \
                                         through sFtree); remove the line",
                                    );
                                } else {
                                    config.routing.switch_to_switch = Some(w);
                                }
                            }
                        }
                        "lmc" => {
                            if let Some(n) = self.int_in(&a.value, 0, 7, "an LMC of 0 to 7") {
                                config.routing.lmc = n as u8;
                                config.routing.lmc_span = Some(a.value.span);
                            }
                        }
                        "roots" => {
                            if let Ok(v) = self.eval(&a.value) {
                                let items = match v {
                                    Value::List(l) => l.iter().cloned().collect(),
                                    Value::Array(arr) => {
                                        arr.ids.iter().map(|&i| Value::Node(i)).collect()
                                    }
                                    other => vec![other],
                                };
                                for it in items {
                                    if let Ok(n) = self.as_node(it, a.value.span) {
                                        config.routing.roots.push(n);
                                    }
                                }
                                config.routing.roots_span = Some(a.value.span);
                            }
                        }
                        "seed" => self.unsupported(
                            a.value.span,
                            "`seed` is not implemented yet",
                            "no routing engine in this version makes a random choice; remove \
                             the line",
                        ),
                        _ => self.unknown_in_section(
                            &SectionItem::Attr(a.clone()),
                            "routing",
                            ROUTING_ATTRS,
                        ),
                    }
                }
            }
            "qos" => {
                self.unsupported(
                    s.kind.span,
                    "`qos` sections are not implemented yet",
                    "QoS classes (SLs, VLs, arbitration) come in a later version; remove the \
                     section — weft never accepts what it would ignore",
                );
                return;
            }
            "tenant" => {
                self.unsupported(
                    s.kind.span,
                    "`tenant` sections (partitions, VMs, vSwitches) are not implemented yet",
                    "tenants and VM placement come in a later version; remove the section — \
                     weft never accepts what it would ignore",
                );
                return;
            }
            other => {
                let help = suggest(other, SECTIONS.iter().copied(), || {
                    format!(
                        "a fabric may contain `topology`, `faults`, {}",
                        backticked(SECTIONS)
                    )
                });
                self.err_help(
                    "weft::unknown_section",
                    format!("unknown section `{other}`"),
                    s.kind.span,
                    "not a section weft knows",
                    help,
                );
                return;
            }
        }
        config.sections.push(s.clone());
    }

    fn unknown_in_section(&mut self, item: &SectionItem, section: &str, known: &[&str]) {
        let (name, span) = match item {
            SectionItem::Attr(a) => (&a.name.name, a.name.span),
            SectionItem::Section(s) => (&s.kind.name, s.kind.span),
        };
        let help = suggest(name, known.iter().copied(), || {
            format!("`{section}` takes {}", backticked(known))
        });
        self.err_help(
            "weft::unknown_attribute",
            format!("`{section}` has no setting `{name}`"),
            span,
            "unknown setting",
            help,
        );
    }

    fn int_in(&mut self, e: &Expr, lo: i64, hi: i64, what: &str) -> Option<i64> {
        let v = self.eval(e).ok()?;
        match v {
            Value::Int(n) if (lo..=hi).contains(&n) => Some(n),
            Value::Int(n) => {
                self.err(
                    "weft::out_of_range",
                    format!("`{n}` is out of range: expected {what}"),
                    e.span,
                    format!("must be {lo}..={hi}"),
                );
                None
            }
            other => {
                self.type_err(what, &other, e.span);
                None
            }
        }
    }

    fn word_in(&mut self, e: &Expr, known: &[&str], what: &str) -> Option<String> {
        // A bare word names an option even when something else has that name
        // (`engine = fat_tree` next to the `fat_tree` template).
        let v = match &e.kind {
            ExprKind::Ident(n) => Value::Symbol(Rc::from(n.as_str())),
            _ => self.eval_attr(e).ok()?,
        };
        let word = match &v {
            Value::Symbol(s) | Value::Str(s) => s.to_string(),
            other => {
                self.type_err(what, other, e.span);
                return None;
            }
        };
        if known.contains(&word.as_str()) {
            return Some(word);
        }
        let help = suggest(&word, known.iter().copied(), || {
            format!("known: {}", backticked(known))
        });
        self.err_help(
            "weft::unknown_word",
            format!("unknown {what} `{word}`"),
            e.span,
            format!("not a {what}"),
            help,
        );
        None
    }

    // ---- statements ---------------------------------------------------------------------

    fn block(&mut self, b: &Block) {
        let mark = self.env.len();
        for s in &b.stmts {
            if self.steps > self.step_limit {
                break;
            }
            self.stmt(s);
        }
        self.env.truncate(mark);
    }

    fn tick(&mut self, span: Span) -> R<()> {
        self.charge(1, span)
    }

    /// Charges `units` of work (a statement, an iteration, or building a value: a quarter
    /// step per byte or list item) against the evaluation budget.
    fn charge(&mut self, units: u64, span: Span) -> R<()> {
        let before = self.steps;
        self.steps = self.steps.saturating_add(units.max(1));
        if before <= self.step_limit && self.steps > self.step_limit {
            self.err_help(
                "weft::evaluation_limit",
                format!("evaluation stopped after {} steps", self.step_limit),
                span,
                "still running here",
                "a fabric description should not need this much work; check loop bounds and the size of the values built",
            );
        }
        if self.steps > self.step_limit {
            return Err(());
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) {
        let span = stmt_span(s);
        if self.tick(span).is_err() {
            return;
        }
        let in_faults = self.in_faults;
        match s {
            Stmt::Let(l) => self.let_stmt(l),
            Stmt::For(f) => self.for_stmt(f, 0),
            Stmt::If(i) => {
                if let Ok(c) = self.eval_bool(&i.cond) {
                    if c {
                        self.block(&i.then);
                    } else if let Some(o) = &i.otherwise {
                        self.block(o);
                    }
                }
            }
            Stmt::Assert(a) => self.assert_stmt(a),
            Stmt::Node(d) if !in_faults => self.node_decl(d),
            Stmt::Link(l) if !in_faults => self.link_stmt(l),
            Stmt::Call(e) if !in_faults => self.call_stmt(e),
            Stmt::LinkDown(l) if in_faults => self.link_down(l),
            Stmt::NodeDown(n) if in_faults => self.node_down(n),
            Stmt::Node(_) | Stmt::Link(_) | Stmt::Call(_) => self.err_help(
                "weft::misplaced_statement",
                "nodes and links are declared in `topology`, not in `faults`",
                span,
                "not a fault",
                "faults are `link a.p[1] down` or `switch name down`",
            ),
            Stmt::LinkDown(_) | Stmt::NodeDown(_) => self.err_help(
                "weft::misplaced_statement",
                "faults belong in a `faults { … }` block",
                span,
                "a fault outside `faults`",
                "move it into `faults { … }` inside the fabric",
            ),
        }
    }

    fn let_stmt(&mut self, l: &Let) {
        match self.eval(&l.value) {
            Ok(v) => {
                self.env.push((Rc::from(l.name.name.as_str()), v));
            }
            Err(()) => {
                self.poisoned.insert(l.name.name.clone());
            }
        }
    }

    fn for_stmt(&mut self, f: &For, depth: usize) {
        let Some((var, iter)) = f.bindings.get(depth) else {
            self.block(&f.body);
            return;
        };
        let Ok(v) = self.eval(iter) else {
            return;
        };
        let name: Rc<str> = Rc::from(var.name.as_str());
        // Every iteration is charged, empty bodies too: `for i in 0..1e12 {}` must stop.
        let run = |this: &mut Self, item: Value| -> bool {
            if this.tick(iter.span).is_err() {
                return false;
            }
            this.env.push((Rc::clone(&name), item));
            this.for_stmt(f, depth + 1);
            this.env.pop();
            this.steps <= this.step_limit
        };
        match v {
            Value::Range(a, b) => {
                for i in a..b {
                    if !run(self, Value::Int(i)) {
                        break;
                    }
                }
            }
            Value::List(items) => {
                for it in items.iter() {
                    if !run(self, it.clone()) {
                        break;
                    }
                }
            }
            Value::Array(arr) => {
                for &id in &arr.ids {
                    if !run(self, Value::Node(id)) {
                        break;
                    }
                }
            }
            other => self.type_err(
                "a range, list or node array to loop over",
                &other,
                iter.span,
            ),
        }
    }

    fn assert_stmt(&mut self, a: &Assert) {
        let Ok(ok) = self.eval_bool(&a.cond) else {
            return;
        };
        if ok {
            return;
        }
        let msg = match &a.message {
            Some(m) => match self.eval(m) {
                Ok(Value::Str(s)) => s.to_string(),
                Ok(other) => {
                    self.type_err("a message (str)", &other, m.span);
                    return;
                }
                Err(()) => return,
            },
            None => "assertion failed".to_owned(),
        };
        self.err("weft::assertion", msg, a.cond.span, "this is false");
    }

    fn call_stmt(&mut self, e: &Expr) {
        let ExprKind::Call(name, args) = &e.kind else {
            return;
        };
        match self.lookup(&name.name) {
            Some(Value::Template(t)) => self.call_template(&t, args, name, e.span),
            Some(other) => self.err(
                "weft::not_a_template",
                format!("`{}` is a {}, not a template", name.name, other.type_name()),
                name.span,
                "cannot be called",
            ),
            None if crate::BUILTINS.contains(&name.name.as_str()) => self.err_help(
                "weft::useless_call",
                format!(
                    "`{}(…)` computes a value; as a statement it does nothing",
                    name.name
                ),
                e.span,
                "value unused",
                "bind it with `let` or use it in a declaration",
            ),
            None => {
                self.unknown_name(&name.name, name.span);
            }
        }
    }

    fn call_template(&mut self, t: &Rc<TemplateDef>, args: &[Arg], name: &Ident, span: Span) {
        if self.frames.len() >= MAX_TEMPLATE_DEPTH {
            self.err_help(
                "weft::too_deep",
                format!("templates nested deeper than {MAX_TEMPLATE_DEPTH} calls"),
                name.span,
                format!("call {} levels deep", self.frames.len() + 1),
                "a topology template may call others, but not in chains this long",
            );
            return;
        }
        if self.frames.iter().any(|f| f.template == t.ast.name.name) {
            self.err_help(
                "weft::recursive_template",
                format!("template `{}` calls itself", t.ast.name.name),
                name.span,
                "recursive call",
                "templates cannot recurse; every weft program must terminate",
            );
            return;
        }
        // Bind arguments in the caller's scope.
        let params = &t.ast.params;
        let mut bound: Vec<Option<(Value, Span)>> = vec![None; params.len()];
        let mut ok = true;
        let mut positional = 0usize;
        for a in args {
            let slot = match &a.name {
                Some(n) => match params.iter().position(|p| p.name.name == n.name) {
                    Some(i) => i,
                    None => {
                        let help =
                            suggest(&n.name, params.iter().map(|p| p.name.name.as_str()), || {
                                format!(
                                    "`{}` takes {}",
                                    t.ast.name.name,
                                    params
                                        .iter()
                                        .map(|p| format!("`{}`", p.name.name))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )
                            });
                        self.err_help(
                            "weft::unknown_argument",
                            format!("`{}` has no parameter `{}`", t.ast.name.name, n.name),
                            n.span,
                            "unknown parameter",
                            help,
                        );
                        ok = false;
                        continue;
                    }
                },
                None => {
                    let i = positional;
                    positional += 1;
                    if i >= params.len() {
                        self.err(
                            "weft::too_many_arguments",
                            format!("`{}` takes {} arguments", t.ast.name.name, params.len()),
                            a.value.span,
                            "extra argument",
                        );
                        ok = false;
                        continue;
                    }
                    i
                }
            };
            match self.eval_attr(&a.value) {
                Ok(v) => {
                    if bound.get(slot).is_some_and(|b| b.is_some()) {
                        self.err(
                            "weft::duplicate_argument",
                            format!("`{}` is given twice", params[slot].name.name),
                            a.value.span,
                            "given again here",
                        );
                        ok = false;
                    }
                    if let Some(ty) = &params[slot].ty {
                        if !v.fits(&ty.name) {
                            self.err(
                                "weft::type_mismatch",
                                format!(
                                    "`{}` expects {} for `{}`, found {}",
                                    t.ast.name.name,
                                    ty.name,
                                    params[slot].name.name,
                                    v.type_name()
                                ),
                                a.value.span,
                                format!("this is a {}", v.type_name()),
                            );
                            ok = false;
                        }
                    }
                    bound[slot] = Some((v, a.value.span));
                }
                Err(()) => ok = false,
            }
        }
        let missing: Vec<&str> = params
            .iter()
            .zip(&bound)
            .filter(|(p, b)| b.is_none() && p.default.is_none())
            .map(|(p, _)| p.name.name.as_str())
            .collect();
        if !missing.is_empty() && ok {
            self.err_help(
                "weft::missing_argument",
                format!(
                    "`{}` needs {}",
                    t.ast.name.name,
                    missing
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                span,
                "missing arguments",
                format!(
                    "pass them by name: `{}({}: …)`",
                    t.ast.name.name, missing[0]
                ),
            );
            ok = false;
        }
        if !ok {
            return;
        }
        // Run the body in the template's own scope.
        let saved_env = std::mem::take(&mut self.env);
        let source = self.modules.get(t.module).map_or(self.main, |m| m.source);
        self.frames.push(Frame {
            module: t.module,
            source,
            template: t.ast.name.name.clone(),
            call: Origin {
                source: saved_frames_source(&self.frames, self.main),
                span,
            },
        });
        let mut good = true;
        for (p, b) in params.iter().zip(bound) {
            let v = match b {
                Some((v, _)) => v,
                None => match p.default.as_ref().map(|d| self.eval(d)) {
                    Some(Ok(v)) => v,
                    _ => {
                        good = false;
                        break;
                    }
                },
            };
            self.env.push((Rc::from(p.name.name.as_str()), v));
        }
        if good {
            self.block(&t.ast.body);
        }
        self.frames.pop();
        self.env = saved_env;
    }

    fn node_decl(&mut self, d: &NodeDecl) {
        let kind = kind_of(d.kind.kind);
        let mut spec = match &d.model {
            Some(m) => match self.eval(m) {
                Ok(Value::Model(model)) => {
                    if model.kind != kind {
                        self.err_help(
                            "weft::model_kind_mismatch",
                            format!(
                                "`{}` is {} model, not {} model",
                                model.name,
                                article(model.kind),
                                article(kind)
                            ),
                            m.span,
                            format!("{} model", article(model.kind)),
                            format!(
                                "declare the node as `{} …`, or pick {} model",
                                model.kind,
                                article(kind)
                            ),
                        );
                        return;
                    }
                    model.spec.clone()
                }
                Ok(other) => {
                    self.type_err("a hardware model", &other, m.span);
                    return;
                }
                Err(()) => return,
            },
            None => NodeSpec::new(String::new(), kind, Guid(0), 0),
        };
        let mut has_ports = d.model.is_some();
        let mut name_fmt: Option<(Rc<str>, Span)> = None;
        let mut explicit_guid = None;
        for a in &d.attrs {
            let Ok(v) = self.eval_attr(&a.value) else {
                return;
            };
            match a.name.name.as_str() {
                "name" => match v {
                    Value::Str(s) => name_fmt = Some((s, a.value.span)),
                    other => self.type_err("a name format (str)", &other, a.value.span),
                },
                "guid" => match v {
                    Value::Int(g) => explicit_guid = Some((Guid(g as u64), a.value.span)),
                    other => self.type_err("a GUID (integer)", &other, a.value.span),
                },
                "ports" => {
                    has_ports = true;
                    self.apply_attr(&mut spec, a, v, AttrContext::Node);
                }
                _ => self.apply_attr(&mut spec, a, v, AttrContext::Node),
            }
        }
        if !has_ports {
            self.err_help(
                "weft::node_without_model",
                "this node has no hardware model and no port count",
                d.span,
                "no model",
                format!(
                    "give a model (`{} name : model`) or set `{{ ports = N }}`",
                    kind
                ),
            );
            return;
        }
        // Names.
        let (names, array): (Vec<(String, i64)>, Option<&Ident>) = match &d.name {
            DeclName::Single(id) => (vec![(id.name.clone(), 0)], None),
            DeclName::Computed(e) => match self.eval(e) {
                Ok(Value::Str(s)) => (vec![(s.to_string(), 0)], None),
                Ok(other) => {
                    self.type_err("a node name (str)", &other, e.span);
                    return;
                }
                Err(()) => return,
            },
            DeclName::Array(id, r) => {
                let Ok(v) = self.eval(r) else { return };
                let Value::Range(a, b) = v else {
                    self.type_err("an index range such as `1..=36`", &v, r.span);
                    return;
                };
                if b.saturating_sub(a) > NODE_LIMIT as i64 {
                    self.err_help(
                        "weft::too_many_nodes",
                        format!("`{}` would declare {} nodes", id.name, b.saturating_sub(a)),
                        r.span,
                        "too many nodes",
                        format!("a fabric holds at most {NODE_LIMIT} nodes (the unicast LID space is 49 151)"),
                    );
                    return;
                }
                if b <= a {
                    self.err(
                        "weft::empty_range",
                        format!("`{}` would have no nodes", id.name),
                        r.span,
                        "empty range",
                    );
                    return;
                }
                let mut names = Vec::with_capacity((b - a) as usize);
                for i in a..b {
                    let n = match &name_fmt {
                        Some((f, sp)) => match format(f, &[i.to_string()], &[Some(i)]) {
                            Ok(n) => n,
                            Err(why) => {
                                self.err("weft::bad_format", why, *sp, "bad name format");
                                return;
                            }
                        },
                        None => format!("{}{}", id.name, i),
                    };
                    names.push((n, i));
                }
                (names, Some(id))
            }
        };
        if explicit_guid.is_some() && names.len() > 1 {
            if let Some((_, sp)) = explicit_guid {
                self.err(
                    "weft::guid_on_array",
                    "one `guid` cannot name every node of an array",
                    sp,
                    "for a single node only",
                );
            }
            return;
        }
        if let Some(id) = array {
            if let Some(prev) = self.arrays.get(&id.name) {
                let (ps, psrc) = (prev.span, prev.source);
                let mut diag = Diagnostic::error(
                    "weft::duplicate_name",
                    format!("node array `{}` is declared twice", id.name),
                )
                .label(self.cur_source(), id.span, "declared again here");
                if psrc == self.cur_source() {
                    diag = diag.label(psrc, ps, "first declared here");
                }
                self.emit(diag.help("give each array its own name"));
                return;
            }
        }
        let decl_span = match &d.name {
            DeclName::Single(id) | DeclName::Array(id, _) => id.span,
            DeclName::Computed(e) => e.span,
        };
        let mut ids = Vec::with_capacity(names.len());
        for (n, _) in names {
            if self.builder.fabric().nodes().len() >= NODE_LIMIT {
                self.err_help(
                    "weft::too_many_nodes",
                    format!("the fabric has more than {NODE_LIMIT} nodes"),
                    decl_span,
                    "too many nodes",
                    "the unicast LID space (49 151) cannot address this many nodes",
                );
                // Stop everything now: the loops declaring these nodes may run for millions
                // more iterations.
                self.steps = self.steps.max(self.step_limit.saturating_add(1));
                return;
            }
            if self.tick(decl_span).is_err() {
                return;
            }
            let mut s = spec.clone();
            s.name = n;
            s.kind = kind;
            s.guid = match explicit_guid {
                Some((g, _)) => g,
                None => self.next_guid(),
            };
            let s_name = if array.is_none() {
                s.name.clone()
            } else {
                String::new()
            };
            match self.builder.add_node(s) {
                Ok(id) => {
                    ids.push(id);
                    let origin = self.user_origin(decl_span);
                    self.node_origins.push(origin);
                }
                Err(e) => {
                    self.node_error(e, decl_span, explicit_guid.map(|g| g.1));
                    self.poisoned
                        .insert(array.map_or(s_name, |id| id.name.clone()));
                    if array.is_some() {
                        break;
                    }
                }
            }
        }
        if let (Some(id), Some(DeclName::Array(_, r))) = (array, Some(&d.name)) {
            let lo = match self.eval(r) {
                Ok(Value::Range(a, _)) => a,
                _ => 0,
            };
            self.arrays.insert(
                id.name.clone(),
                Rc::new(NodeArray {
                    name: id.name.clone(),
                    lo,
                    ids,
                    span: id.span,
                    source: self.cur_source(),
                }),
            );
        }
    }

    fn next_guid(&mut self) -> Guid {
        loop {
            self.guid_next = self.guid_next.wrapping_add(GUID_STEP);
            let g = Guid(self.guid_next);
            if self.builder.fabric().find_guid(g).is_none() {
                return g;
            }
        }
    }

    fn node_error(&mut self, e: LinkError, span: Span, guid_span: Option<Span>) {
        match e {
            LinkError::DuplicateName { name, existing } => {
                let mut d = Diagnostic::error(
                    "weft::duplicate_name",
                    format!("a node named `{name}` already exists"),
                )
                .label(self.cur_source(), span, "declared again here");
                if let Some(o) = self.node_origins.get(existing.index()).copied() {
                    if o.source == self.cur_source() && o.span != span {
                        d = d.label(o.source, o.span, "first declared here");
                    }
                }
                self.emit(d.help("node names must be unique in a fabric"));
            }
            LinkError::DuplicateGuid {
                guid,
                existing_name,
                ..
            } => self.err_help(
                "weft::duplicate_guid",
                format!("GUID {guid} is already the GUID of `{existing_name}`"),
                guid_span.unwrap_or(span),
                "duplicate GUID",
                "every node needs its own GUID; omit `guid` to have one generated",
            ),
            other => self.err("weft::bad_node", other.to_string(), span, "here"),
        }
    }

    fn link_stmt(&mut self, l: &LinkStmt) {
        let (Ok(a), Ok(b)) = (self.port(&l.a), self.port(&l.b)) else {
            return;
        };
        let mut speed = None;
        let mut width = None;
        for at in &l.attrs {
            let Ok(v) = self.eval_attr(&at.value) else {
                continue;
            };
            match (at.name.name.as_str(), v) {
                ("speed", Value::Symbol(s)) | ("speed", Value::Str(s)) => match Speed::parse(&s) {
                    Some(sp) => speed = Some(sp),
                    None => self.bad_speed(&s, at.value.span),
                },
                ("width", Value::Width(w)) => match Width::from_lanes(u64::from(w)) {
                    Some(wd) => width = Some(wd),
                    None => self.err(
                        "weft::bad_width",
                        format!("`{w}x` is not a link width"),
                        at.value.span,
                        "expected 1x, 2x, 4x, 8x or 12x",
                    ),
                },
                (n @ ("speed" | "width"), other) => self.type_err(
                    if n == "speed" {
                        "a speed such as `EDR`"
                    } else {
                        "a width such as `4x`"
                    },
                    &other,
                    at.value.span,
                ),
                (other, _) => {
                    let help = suggest(other, ["speed", "width"], || {
                        "links take `speed` and `width`".into()
                    });
                    self.err_help(
                        "weft::unknown_attribute",
                        format!("links have no attribute `{other}`"),
                        at.name.span,
                        "unknown",
                        help,
                    );
                }
            }
        }
        match self.builder.add_link(a, b) {
            Ok(id) => {
                if speed.is_some() || width.is_some() {
                    self.builder.set_link_rate(id, speed, width);
                }
                let origin = self.user_origin(l.span);
                self.link_origins.push(origin);
            }
            Err(e) => self.link_error(e, l, a),
        }
    }

    fn link_error(&mut self, e: LinkError, l: &LinkStmt, a: PortRef) {
        let end_span = |name: &str, port: u8, this: &Self| {
            let ea = this
                .builder
                .fabric()
                .find(name)
                .is_some_and(|n| n == a.node)
                && a.port.0 == port;
            if ea {
                l.a.span
            } else {
                l.b.span
            }
        };
        match e {
            LinkError::PortOutOfRange { name, port, ports } => {
                let sp = end_span(&name, port, self);
                self.err_help(
                    "weft::port_out_of_range",
                    format!("`{name}` has no port {port}"),
                    sp,
                    format!("ports of `{name}` are 1..={ports}"),
                    "port numbers start at 1 and end at the model's port count",
                );
            }
            LinkError::PortAlreadyWired {
                name,
                port,
                existing,
                other_name,
                other_port,
            } => {
                let sp = end_span(&name, port, self);
                let mut d = Diagnostic::error(
                    "weft::port_wired_twice",
                    format!("port {port} of `{name}` is wired twice"),
                )
                .label(
                    self.cur_source(),
                    sp,
                    format!("already wired to `{other_name}` port {other_port}"),
                );
                if let Some(o) = self.link_origins.get(existing.index()).copied() {
                    if o.source == self.cur_source() && o.span != l.span {
                        d = d.label(o.source, o.span, "first wired here");
                    }
                }
                self.emit(d.help("each port takes one cable"));
            }
            LinkError::SelfLoop { name, port } => self.err(
                "weft::self_link",
                format!("a link cannot connect port {port} of `{name}` to itself"),
                l.span,
                "both ends are the same port",
            ),
            other => self.err("weft::bad_link", other.to_string(), l.span, "here"),
        }
    }

    fn bad_speed(&mut self, s: &str, span: Span) {
        let names: Vec<&str> = Speed::ALL.iter().map(|s| s.as_str()).collect();
        let help = match did_you_mean(&s.to_ascii_uppercase(), names.iter().copied()) {
            Some(x) => format!("did you mean `{x}`?"),
            None => format!("speeds are {}", names.join(", ")),
        };
        self.err_help(
            "weft::bad_speed",
            format!("`{s}` is not an InfiniBand speed"),
            span,
            "unknown speed",
            help,
        );
    }

    fn link_down(&mut self, l: &LinkDown) {
        let Ok(a) = self.port(&l.a) else { return };
        let fab = self.builder.fabric();
        let Some((peer, link)) = fab.peer(a) else {
            let name = fab.node(a.node).name().to_owned();
            self.err_help(
                "weft::fault_on_unwired_port",
                format!("port {} of `{name}` has no link to take down", a.port),
                l.a.span,
                "not wired",
                "a link fault names a port that a `link` declaration wired",
            );
            return;
        };
        if let Some(b) = &l.b {
            let Ok(bp) = self.port(b) else { return };
            if bp != peer {
                let fab = self.builder.fabric();
                let (pn, bn) = (
                    fab.node(peer.node).name().to_owned(),
                    fab.node(bp.node).name().to_owned(),
                );
                self.err(
                    "weft::fault_wrong_link",
                    format!(
                        "this link goes to `{pn}` port {}, not `{bn}` port {}",
                        peer.port, bp.port
                    ),
                    b.span,
                    "not the other end",
                );
                return;
            }
        }
        self.builder.set_link_down(link);
    }

    fn node_down(&mut self, n: &NodeDown) {
        let Ok(v) = self.eval(&n.node) else { return };
        let Ok(id) = self.as_node(v, n.node.span) else {
            return;
        };
        let node = self.builder.fabric().node(id);
        let kind = kind_of(n.kind.kind);
        if node.kind() != kind {
            let (name, actual) = (node.name().to_owned(), node.kind());
            self.err_help(
                "weft::fault_kind_mismatch",
                format!("`{name}` is {}, not {}", article(actual), article(kind)),
                n.node.span,
                article(actual),
                format!(
                    "write `{actual} {} down`",
                    crate::emit::name_in_source(&name)
                ),
            );
            return;
        }
        self.builder.set_node_down(id);
    }

    fn port(&mut self, e: &Expr) -> R<PortRef> {
        let v = self.eval(e)?;
        match v {
            Value::Port(n, p) => match u8::try_from(p) {
                Ok(p) if p >= 1 => Ok(PortRef::new(n, p)),
                _ => {
                    let name = self.builder.fabric().node(n).name().to_owned();
                    let ports = self.builder.fabric().node(n).spec.port_count;
                    self.err_help(
                        "weft::port_out_of_range",
                        format!("`{name}` has no port {p}"),
                        e.span,
                        format!("ports of `{name}` are 1..={ports}"),
                        "port numbers start at 1 and end at the model's port count",
                    );
                    Err(())
                }
            },
            Value::Node(n) => {
                let name = self.builder.fabric().node(n).name().to_owned();
                self.err_help(
                    "weft::expected_port",
                    format!("a link joins ports, and `{name}` is a node"),
                    e.span,
                    "a node, not a port",
                    format!("name a port: `{name}.p[1]`"),
                );
                Err(())
            }
            other => {
                self.type_err("a port such as `leaf[1].p[3]`", &other, e.span);
                Err(())
            }
        }
    }

    // ---- attributes ---------------------------------------------------------------------

    fn apply_attr(&mut self, spec: &mut NodeSpec, a: &Attr, v: Value, ctx: AttrContext) {
        let span = a.value.span;
        let name = a.name.name.as_str();
        let int = |this: &mut Self, v: &Value, lo: i64, hi: i64, what: &str| -> Option<i64> {
            match v {
                Value::Int(n) if (lo..=hi).contains(n) => Some(*n),
                Value::Int(n) => {
                    this.err(
                        "weft::out_of_range",
                        format!("`{n}` is out of range for `{name}`"),
                        span,
                        format!("{what}: {lo}..={hi}"),
                    );
                    None
                }
                other => {
                    this.type_err(what, other, span);
                    None
                }
            }
        };
        match (name, ctx) {
            ("ports", _) => {
                if let Some(n) = int(self, &v, 1, 254, "a port count") {
                    spec.port_count = n as u8;
                }
            }
            ("speed", _) => match &v {
                Value::Symbol(s) | Value::Str(s) => match Speed::parse(s) {
                    Some(sp) => spec.caps.speed = sp,
                    None => self.bad_speed(s, span),
                },
                other => self.type_err("a speed such as `EDR`", other, span),
            },
            ("width", _) => match &v {
                Value::Width(w) => match Width::from_lanes(u64::from(*w)) {
                    Some(wd) => spec.caps.width = wd,
                    None => self.err(
                        "weft::bad_width",
                        format!("`{w}x` is not a link width"),
                        span,
                        "expected 1x, 2x, 4x, 8x or 12x",
                    ),
                },
                other => self.type_err("a width such as `4x`", other, span),
            },
            ("vlcap", _) => {
                if let Some(n) = int(self, &v, 1, 15, "a VL count") {
                    if [1, 2, 4, 8, 15].contains(&n) {
                        spec.caps.vl_cap = n as u8;
                    } else {
                        self.err_help(
                            "weft::bad_vlcap",
                            format!("`{n}` is not a VLCap"),
                            span,
                            "not 1, 2, 4, 8 or 15",
                            "VLCap is 1, 2, 4, 8 or 15 data VLs",
                        );
                    }
                }
            }
            ("mtu", _) => {
                if let Some(n) = int(self, &v, 0, i64::MAX, "an MTU in bytes") {
                    match Mtu::from_bytes(n as u64) {
                        Some(m) => spec.caps.mtu = m,
                        None => self.err_help(
                            "weft::bad_mtu",
                            format!("`{n}` is not an InfiniBand MTU"),
                            span,
                            "not an MTU",
                            "MTUs are 256, 512, 1024, 2048 or 4096 bytes",
                        ),
                    }
                }
            }
            ("linear_fdb_cap", _) => {
                if let Some(n) = int(self, &v, 0, 0xC000, "an LFT capacity") {
                    spec.linear_fdb_cap = n as u32;
                }
            }
            ("vendor", _) => {
                if let Some(n) = int(self, &v, 0, 0xFF_FFFF, "a vendor id (24-bit OUI)") {
                    spec.vendor_id = n as u32;
                }
            }
            ("device", _) => {
                if let Some(n) = int(self, &v, 0, 0xFFFF_FFFF, "a device id") {
                    spec.device_id = n as u32;
                }
            }
            ("level", AttrContext::Node) => {
                if let Some(n) = int(self, &v, 0, 15, "a tree level") {
                    spec.level = Some(n as u8);
                }
            }
            ("lid", AttrContext::Node) => {
                if let Some(n) = int(
                    self,
                    &v,
                    1,
                    i64::from(weft_fabric::MAX_UNICAST_LID),
                    "a unicast LID",
                ) {
                    spec.lid = Some(Lid(n as u16));
                }
            }
            ("system_guid", AttrContext::Node) => match v {
                Value::Int(g) => spec.system_guid = Some(Guid(g as u64)),
                other => self.type_err("a GUID (integer)", &other, span),
            },
            ("port_guids", AttrContext::Node) => match v {
                Value::List(items) => {
                    let mut guids = Vec::new();
                    for it in items.iter() {
                        match it {
                            Value::Int(g) => guids.push(Guid(*g as u64)),
                            other => {
                                self.type_err("a list of GUIDs", other, span);
                                return;
                            }
                        }
                    }
                    spec.port_guids = Some(guids);
                }
                other => self.type_err("a list of GUIDs", &other, span),
            },
            (other, ctx) => {
                let extra: &[&str] = match ctx {
                    AttrContext::Model => &[],
                    AttrContext::Node => NODE_ONLY_ATTRS,
                };
                let known: Vec<&str> = MODEL_ATTRS.iter().chain(extra).copied().collect();
                let help = suggest(other, known.iter().copied(), || {
                    format!("known attributes: {}", known.join(", "))
                });
                self.err_help(
                    "weft::unknown_attribute",
                    format!("unknown attribute `{other}`"),
                    a.name.span,
                    "unknown",
                    help,
                );
            }
        }
    }

    // ---- expressions --------------------------------------------------------------------

    fn lookup(&self, name: &str) -> Option<Value> {
        if let Some((_, v)) = self.env.iter().rev().find(|(n, _)| &**n == name) {
            return Some(v.clone());
        }
        if let Some(g) = self
            .modules
            .get(self.cur_module())
            .and_then(|m| m.globals.get(name))
        {
            return Some(match g {
                Global::Model(m) => Value::Model(Rc::clone(m)),
                Global::Template(t) => Value::Template(Rc::clone(t)),
                Global::Value(v) => v.clone(),
            });
        }
        if let Some(a) = self.arrays.get(name) {
            return Some(Value::Array(Rc::clone(a)));
        }
        self.builder.fabric().find(name).map(Value::Node)
    }

    fn unknown_name(&mut self, name: &str, span: Span) {
        if self.poisoned.contains(name) {
            return;
        }
        let mut candidates: Vec<String> = self.env.iter().map(|(n, _)| n.to_string()).collect();
        if let Some(m) = self.modules.get(self.cur_module()) {
            candidates.extend(m.globals.keys().cloned());
        }
        candidates.extend(self.arrays.keys().cloned());
        candidates.extend(crate::BUILTINS.iter().map(|s| s.to_string()));
        let in_std = stdlib::find_item(name);
        let help = if let Some(module) = in_std {
            format!("`{name}` is in the standard library: add `use std::{module}::{name}`")
        } else if let Some(s) = did_you_mean(name, candidates.iter().map(String::as_str)) {
            format!("did you mean `{s}`?")
        } else {
            "names are `let` bindings, loop variables, template parameters, models, templates, nodes and node arrays".into()
        };
        self.err_help(
            "weft::unknown_name",
            format!("cannot find `{name}`"),
            span,
            "not found in this scope",
            help,
        );
    }

    /// Evaluates an attribute value: an unbound name is a word (`EDR`, `fat_tree`).
    fn eval_attr(&mut self, e: &Expr) -> R<Value> {
        if let ExprKind::Ident(n) = &e.kind {
            if let Some(v) = self.lookup(n) {
                return Ok(v);
            }
            if !n.is_empty() {
                return Ok(Value::Symbol(Rc::from(n.as_str())));
            }
        }
        self.eval(e)
    }

    fn eval_bool(&mut self, e: &Expr) -> R<bool> {
        match self.eval(e)? {
            Value::Bool(b) => Ok(b),
            other => {
                self.type_err("a condition (bool)", &other, e.span);
                Err(())
            }
        }
    }

    fn as_node(&mut self, v: Value, span: Span) -> R<NodeId> {
        match v {
            Value::Node(n) => Ok(n),
            Value::Str(s) => match self.builder.fabric().find(&s) {
                Some(n) => Ok(n),
                None => {
                    self.err(
                        "weft::unknown_node",
                        format!("there is no node named `{s}`"),
                        span,
                        "unknown node",
                    );
                    Err(())
                }
            },
            other => {
                self.type_err("a node", &other, span);
                Err(())
            }
        }
    }

    pub(crate) fn eval(&mut self, e: &Expr) -> R<Value> {
        match &e.kind {
            ExprKind::Int(i) => Ok(Value::Int(*i)),
            ExprKind::Width(w) => Ok(Value::Width(*w)),
            ExprKind::Str(s) => Ok(Value::Str(Rc::from(s.as_str()))),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Ident(n) => match self.lookup(n) {
                Some(v) => Ok(v),
                None => {
                    if !n.is_empty() {
                        self.unknown_name(n, e.span);
                    }
                    Err(())
                }
            },
            ExprKind::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.eval_attr(it)?);
                }
                Ok(Value::List(Rc::new(out)))
            }
            ExprKind::If(c, a, b) => {
                if self.eval_bool(c)? {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            ExprKind::Unary(op, x) => {
                let v = self.eval(x)?;
                match (op, v) {
                    (UnOp::Neg, Value::Int(i)) => i
                        .checked_neg()
                        .map(Value::Int)
                        .ok_or_else(|| self.overflow(e.span)),
                    (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
                    (UnOp::Neg, other) => {
                        self.type_err("an integer", &other, x.span);
                        Err(())
                    }
                    (UnOp::Not, other) => {
                        self.type_err("a bool", &other, x.span);
                        Err(())
                    }
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, e.span),
            ExprKind::Index(base, idx) => self.index(base, idx, e.span),
            ExprKind::Field(base, f) => self.field(base, f),
            ExprKind::Call(name, args) => self.call_expr(name, args, e.span),
        }
    }

    fn overflow(&mut self, span: Span) {
        self.err(
            "weft::overflow",
            "integer overflow",
            span,
            "result does not fit in 64 bits",
        );
    }

    /// Refuses a value over `max` and charges building it against the budget.
    fn value_size(&mut self, len: usize, max: usize, what: &str, unit: &str, span: Span) -> R<()> {
        if len > max {
            self.err_help(
                "weft::value_too_large",
                format!("this would build a {what} {len} {unit}; values stop at {max}"),
                span,
                "too large",
                "a fabric description needs names and small lists, not bulk data",
            );
            return Err(());
        }
        self.charge(len as u64 / 4, span)
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, span: Span) -> R<Value> {
        if op == BinOp::And || op == BinOp::Or {
            let l = self.eval_bool(a)?;
            if (op == BinOp::And && !l) || (op == BinOp::Or && l) {
                return Ok(Value::Bool(l));
            }
            return self.eval_bool(b).map(Value::Bool);
        }
        let l = self.eval(a)?;
        let r = self.eval(b)?;
        use Value::*;
        let res = match (op, &l, &r) {
            (BinOp::Add, Int(x), Int(y)) => x.checked_add(*y).map(Int),
            (BinOp::Sub, Int(x), Int(y)) => x.checked_sub(*y).map(Int),
            (BinOp::Mul, Int(x), Int(y)) => x.checked_mul(*y).map(Int),
            (BinOp::Div | BinOp::Rem, Int(_), Int(0)) => {
                self.err(
                    "weft::division_by_zero",
                    "division by zero",
                    b.span,
                    "this is zero",
                );
                return Err(());
            }
            (BinOp::Div, Int(x), Int(y)) => x.checked_div(*y).map(Int),
            (BinOp::Rem, Int(x), Int(y)) => x.checked_rem(*y).map(Int),
            (BinOp::Add, Str(x), Str(y)) => {
                let len = x.len() + y.len();
                self.value_size(len, MAX_STRING_BYTES, "string of", "bytes", span)?;
                Some(Str(Rc::from(format!("{x}{y}").as_str())))
            }
            (BinOp::Add, List(x), List(y)) => {
                let len = x.len() + y.len();
                self.value_size(len, MAX_LIST_ITEMS, "list of", "items", span)?;
                Some(List(Rc::new(x.iter().chain(y.iter()).cloned().collect())))
            }
            (BinOp::Range, Int(x), Int(y)) => Some(Range(*x, *y)),
            (BinOp::RangeIncl, Int(x), Int(y)) => y.checked_add(1).map(|y1| Range(*x, y1)),
            (BinOp::Range | BinOp::RangeIncl, Node(x), Node(y)) => {
                return self.node_range(*x, *y, op == BinOp::RangeIncl, span);
            }
            (BinOp::Eq, _, _) => Some(Bool(values_eq(&l, &r))),
            (BinOp::Ne, _, _) => Some(Bool(!values_eq(&l, &r))),
            (BinOp::Lt, Int(x), Int(y)) => Some(Bool(x < y)),
            (BinOp::Le, Int(x), Int(y)) => Some(Bool(x <= y)),
            (BinOp::Gt, Int(x), Int(y)) => Some(Bool(x > y)),
            (BinOp::Ge, Int(x), Int(y)) => Some(Bool(x >= y)),
            _ => {
                self.err(
                    "weft::type_mismatch",
                    format!(
                        "`{}` does not apply to {} and {}",
                        op.as_str(),
                        l.type_name(),
                        r.type_name()
                    ),
                    span,
                    format!("{} {} {}", l.type_name(), op.as_str(), r.type_name()),
                );
                return Err(());
            }
        };
        res.ok_or_else(|| self.overflow(span))
    }

    /// `cn001..cn128`: nodes whose names share a prefix and count up a numeric suffix.
    fn node_range(&mut self, a: NodeId, b: NodeId, incl: bool, span: Span) -> R<Value> {
        let fab = self.builder.fabric();
        let (an, bn) = (fab.node(a).name().to_owned(), fab.node(b).name().to_owned());
        let split = |s: &str| {
            let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let (p, d) = s.split_at(s.len() - digits);
            (p.to_owned(), d.to_owned())
        };
        let ((pa, da), (pb, db)) = (split(&an), split(&bn));
        let (Ok(x), Ok(y)) = (da.parse::<i64>(), db.parse::<i64>()) else {
            self.err_help(
                "weft::bad_node_range",
                format!("`{an}..{bn}` is not a node range"),
                span,
                "names without a number",
                "a node range joins names like `cn001..cn128`",
            );
            return Err(());
        };
        if pa != pb {
            self.err_help(
                "weft::bad_node_range",
                format!("`{an}` and `{bn}` do not share a prefix"),
                span,
                "different prefixes",
                "a node range joins names like `cn001..cn128`",
            );
            return Err(());
        }
        let end = if incl { y } else { y - 1 };
        let mut out = Vec::new();
        for i in x..=end {
            let name = format!("{pa}{i:0w$}", w = da.len());
            match self.builder.fabric().find(&name) {
                Some(n) => out.push(Value::Node(n)),
                None => {
                    self.err(
                        "weft::unknown_node",
                        format!("the range `{an}..{bn}` includes `{name}`, which does not exist"),
                        span,
                        "gap in the range",
                    );
                    return Err(());
                }
            }
        }
        Ok(Value::List(Rc::new(out)))
    }

    fn index(&mut self, base: &Expr, idx: &Expr, span: Span) -> R<Value> {
        let b = self.eval(base)?;
        let i = self.eval(idx)?;
        match (&b, &i) {
            (Value::List(l), Value::Int(k)) => {
                match usize::try_from(*k).ok().and_then(|k| l.get(k)) {
                    Some(v) => Ok(v.clone()),
                    None => {
                        self.err(
                            "weft::index_out_of_range",
                            format!("index {k} is out of range for a list of {}", l.len()),
                            idx.span,
                            format!("valid indices are 0..{}", l.len()),
                        );
                        Err(())
                    }
                }
            }
            (Value::List(l), Value::Range(x, y)) => {
                let (x, y) = ((*x).max(0) as usize, (*y).max(0) as usize);
                if x > y || y > l.len() {
                    self.err(
                        "weft::index_out_of_range",
                        format!("slice {x}..{y} is out of range for a list of {}", l.len()),
                        idx.span,
                        "out of range",
                    );
                    return Err(());
                }
                Ok(Value::List(Rc::new(
                    l.get(x..y).map(<[Value]>::to_vec).unwrap_or_default(),
                )))
            }
            (Value::Array(arr), Value::Int(k)) => match arr.get(*k) {
                Some(n) => Ok(Value::Node(n)),
                None => {
                    self.err_help(
                        "weft::index_out_of_range",
                        format!("`{}` has no element {k}", arr.name),
                        idx.span,
                        format!("`{}` is indexed {}..={}", arr.name, arr.lo, arr.hi()),
                        "node arrays keep the indices they were declared with",
                    );
                    Err(())
                }
            },
            (Value::Ports(n), Value::Int(k)) => Ok(Value::Port(*n, *k)),
            (Value::Template(_), _) => {
                self.err(
                    "weft::type_mismatch",
                    "a template cannot be indexed",
                    span,
                    "template",
                );
                Err(())
            }
            _ => {
                self.err(
                    "weft::type_mismatch",
                    format!("cannot index a {} with a {}", b.type_name(), i.type_name()),
                    span,
                    format!("{}[{}]", b.type_name(), i.type_name()),
                );
                Err(())
            }
        }
    }

    fn field(&mut self, base: &Expr, f: &Ident) -> R<Value> {
        let b = match self.eval(base)? {
            // `"MF0;sw1".p[3]`: a quoted node name.
            s @ Value::Str(_) => Value::Node(self.as_node(s, base.span)?),
            other => other,
        };
        let v = match (&b, f.name.as_str()) {
            (Value::Node(n), "p") => Some(Value::Ports(*n)),
            (Value::Node(n), "name") => {
                Some(Value::Str(Rc::from(self.builder.fabric().node(*n).name())))
            }
            (Value::Node(n), "ports") => Some(Value::Int(i64::from(
                self.builder.fabric().node(*n).spec.port_count,
            ))),
            (Value::Node(n), "level") => Some(Value::Int(
                self.builder
                    .fabric()
                    .node(*n)
                    .spec
                    .level
                    .map_or(0, i64::from),
            )),
            (Value::Node(n), "guid") => {
                Some(Value::Int(self.builder.fabric().node(*n).guid().0 as i64))
            }
            (Value::Model(m), "name") => Some(Value::Str(Rc::from(m.name.as_str()))),
            (Value::Model(m), "ports") => Some(Value::Int(i64::from(m.spec.port_count))),
            (Value::Model(m), "vlcap") => Some(Value::Int(i64::from(m.spec.caps.vl_cap))),
            (Value::Model(m), "mtu") => Some(Value::Int(i64::from(m.spec.caps.mtu.bytes()))),
            (Value::Model(m), "speed") => Some(Value::Symbol(Rc::from(m.spec.caps.speed.as_str()))),
            (Value::Model(m), "width") => Some(Value::Width(m.spec.caps.width.lanes())),
            (Value::Model(m), "linear_fdb_cap") => {
                Some(Value::Int(i64::from(m.spec.linear_fdb_cap)))
            }
            (Value::Array(a), "len") => Some(Value::Int(a.ids.len() as i64)),
            _ => None,
        };
        v.ok_or_else(|| {
            let help = match &b {
                Value::Node(_) => "nodes have `p` (ports), `name`, `ports`, `level` and `guid`",
                Value::Model(_) => "models have `name`, `ports`, `speed`, `width`, `vlcap`, `mtu` and `linear_fdb_cap`",
                _ => "only nodes, models and node arrays have fields",
            };
            self.err_help(
                "weft::unknown_field",
                format!("a {} has no field `{}`", b.type_name(), f.name),
                f.span,
                "unknown field",
                help,
            );
        })
    }

    fn call_expr(&mut self, name: &Ident, args: &[Arg], span: Span) -> R<Value> {
        if let Some(v) = self.lookup(&name.name) {
            return match v {
                Value::Template(_) => {
                    self.err_help(
                        "weft::template_as_value",
                        format!("template `{}` declares nodes; it has no value", name.name),
                        span,
                        "used as a value",
                        "call it as a statement, or as `topology = …`",
                    );
                    Err(())
                }
                other => {
                    self.err(
                        "weft::not_callable",
                        format!("`{}` is a {}, not a function", name.name, other.type_name()),
                        name.span,
                        "cannot be called",
                    );
                    Err(())
                }
            };
        }
        if let Some(a) = args.iter().find_map(|a| a.name.as_ref()) {
            self.err(
                "weft::named_argument",
                format!("`{}` takes positional arguments", name.name),
                a.span,
                "named argument",
            );
            return Err(());
        }
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push((self.eval_attr(&a.value)?, a.value.span));
        }
        let arity = |this: &mut Self, n: usize| -> R<()> {
            if vals.len() == n {
                Ok(())
            } else {
                this.err(
                    "weft::bad_arguments",
                    format!(
                        "`{}` takes {n} argument(s), found {}",
                        name.name,
                        vals.len()
                    ),
                    span,
                    "wrong number of arguments",
                );
                Err(())
            }
        };
        match name.name.as_str() {
            "format" => {
                let Some((Value::Str(f), _)) = vals.first() else {
                    self.err(
                        "weft::bad_arguments",
                        "`format` takes a format string first",
                        span,
                        "expected `format(\"…\", …)`",
                    );
                    return Err(());
                };
                let f = Rc::clone(f);
                let mut strs = Vec::with_capacity(vals.len());
                let mut ints = Vec::with_capacity(vals.len());
                for (v, _) in &vals[1..] {
                    let (s, i) = match v {
                        Value::Int(i) => (i.to_string(), Some(*i)),
                        Value::Str(s) | Value::Symbol(s) => (s.to_string(), None),
                        Value::Bool(b) => (b.to_string(), None),
                        Value::Node(n) => (self.builder.fabric().node(*n).name().to_owned(), None),
                        Value::Model(m) => (m.name.clone(), None),
                        Value::Width(w) => (format!("{w}x"), None),
                        other => {
                            self.type_err("a value to format", other, span);
                            return Err(());
                        }
                    };
                    strs.push(s);
                    ints.push(i);
                }
                match format(&f, &strs, &ints) {
                    Ok(s) => Ok(Value::Str(Rc::from(s.as_str()))),
                    Err(why) => {
                        self.err("weft::bad_format", why, vals[0].1, "format string");
                        Err(())
                    }
                }
            }
            "node" => {
                arity(self, 1)?;
                let (v, sp) = vals.swap_remove(0);
                self.as_node(v, sp).map(Value::Node)
            }
            "len" => {
                arity(self, 1)?;
                match &vals[0].0 {
                    Value::List(l) => Ok(Value::Int(l.len() as i64)),
                    Value::Str(s) => Ok(Value::Int(s.chars().count() as i64)),
                    Value::Range(a, b) => Ok(Value::Int((b - a).max(0))),
                    Value::Array(a) => Ok(Value::Int(a.ids.len() as i64)),
                    other => {
                        self.type_err("a list, string, range or node array", other, vals[0].1);
                        Err(())
                    }
                }
            }
            "prod" | "sum" => {
                arity(self, 1)?;
                let Value::List(l) = &vals[0].0 else {
                    self.type_err("a list of integers", &vals[0].0, vals[0].1);
                    return Err(());
                };
                let mut acc: i64 = if name.name == "prod" { 1 } else { 0 };
                for v in l.iter() {
                    let Value::Int(x) = v else {
                        self.type_err("a list of integers", v, vals[0].1);
                        return Err(());
                    };
                    acc = if name.name == "prod" {
                        acc.checked_mul(*x)
                    } else {
                        acc.checked_add(*x)
                    }
                    .ok_or_else(|| self.overflow(span))?;
                }
                Ok(Value::Int(acc))
            }
            "min" | "max" => {
                if vals.is_empty() {
                    self.err(
                        "weft::bad_arguments",
                        format!("`{}` needs at least one argument", name.name),
                        span,
                        "no arguments",
                    );
                    return Err(());
                }
                let mut best: Option<i64> = None;
                for (v, sp) in &vals {
                    let Value::Int(x) = v else {
                        self.type_err("an integer", v, *sp);
                        return Err(());
                    };
                    best = Some(match best {
                        None => *x,
                        Some(b) if name.name == "min" => b.min(*x),
                        Some(b) => b.max(*x),
                    });
                }
                Ok(Value::Int(best.unwrap_or(0)))
            }
            "pow" => {
                arity(self, 2)?;
                let (Value::Int(b), Value::Int(x)) = (&vals[0].0, &vals[1].0) else {
                    self.err(
                        "weft::type_mismatch",
                        "`pow` takes two integers",
                        span,
                        "expected integers",
                    );
                    return Err(());
                };
                u32::try_from(*x)
                    .ok()
                    .and_then(|x| b.checked_pow(x))
                    .map(Value::Int)
                    .ok_or_else(|| self.overflow(span))
            }
            "repeat" => {
                arity(self, 2)?;
                let Value::Int(n) = vals[1].0 else {
                    self.type_err("a count (int)", &vals[1].0, vals[1].1);
                    return Err(());
                };
                let Ok(n) = usize::try_from(n) else {
                    self.err(
                        "weft::out_of_range",
                        format!("cannot repeat {n} times"),
                        vals[1].1,
                        "a count is 0 or more",
                    );
                    return Err(());
                };
                self.value_size(n, MAX_LIST_ITEMS, "list of", "items", span)?;
                Ok(Value::List(Rc::new(vec![vals[0].0.clone(); n])))
            }
            "import" => {
                self.err_help(
                    "weft::misplaced_import",
                    "`import` is only allowed as `topology = import(\"file\")`",
                    span,
                    "not here",
                    "write `topology = import(\"fabric.ibnetdiscover\")` in the fabric block",
                );
                Err(())
            }
            other => {
                self.unknown_name(other, name.span);
                Err(())
            }
        }
    }
}

fn values_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Str(x) | Value::Symbol(x), Value::Str(y) | Value::Symbol(y)) => x == y,
        (Value::Width(x), Value::Width(y)) => x == y,
        (Value::Node(x), Value::Node(y)) => x == y,
        (Value::Port(a, p), Value::Port(b, q)) => a == b && p == q,
        (Value::Range(a, b), Value::Range(c, d)) => a == c && b == d,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| values_eq(p, q))
        }
        (Value::Model(x), Value::Model(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

fn saved_frames_source(frames: &[Frame], main: SourceId) -> SourceId {
    frames.last().map_or(main, |f| f.source)
}

#[derive(Clone, Copy)]
enum AttrContext {
    Model,
    Node,
}

/// "a switch", "an hca", "a router".
fn article(k: NodeKind) -> String {
    match k {
        NodeKind::Hca => "an hca".to_owned(),
        other => format!("a {other}"),
    }
}

fn kind_of(k: NodeKindKw) -> NodeKind {
    match k {
        NodeKindKw::Switch => NodeKind::Switch,
        NodeKindKw::Hca => NodeKind::Hca,
        NodeKindKw::Router => NodeKind::Router,
    }
}

fn stmt_span(s: &Stmt) -> Span {
    match s {
        Stmt::Let(l) => l.span,
        Stmt::For(f) => f.span,
        Stmt::If(i) => i.span,
        Stmt::Assert(a) => a.span,
        Stmt::Node(n) => n.span,
        Stmt::Link(l) => l.span,
        Stmt::LinkDown(l) => l.span,
        Stmt::NodeDown(n) => n.span,
        Stmt::Call(e) => e.span,
    }
}

const FABRIC_ATTRS: &[&str] = &["guid_base"];
const SECTIONS: &[&str] = &["vls", "routing", "qos", "tenant"];
const ROUTING_ATTRS: &[&str] = &["engine", "switch_to_switch", "lmc", "roots", "seed"];
const MODEL_ATTRS: &[&str] = &[
    "ports",
    "speed",
    "width",
    "vlcap",
    "mtu",
    "linear_fdb_cap",
    "vendor",
    "device",
];
/// Attributes a node may set besides its model's.
const NODE_ONLY_ATTRS: &[&str] = &["level", "lid", "guid", "system_guid", "port_guids", "name"];
