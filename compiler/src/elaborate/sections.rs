//! The `fabric` item: its attributes, its topology (or `import`), and its sections
//! (`vls`, `routing`; `qos` and `tenant` are not built yet).

use super::*;

impl Elab<'_> {
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
                    Code::NoTopology,
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
                    Code::DuplicateTopology,
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

    pub(super) fn fabric_attr(&mut self, a: &Attr) {
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
                    Code::UnknownAttribute,
                    format!("unknown fabric attribute `{other}`"),
                    a.name.span,
                    "unknown",
                    help,
                );
            }
        }
    }

    pub(super) fn topology_expr(&mut self, e: &Expr) {
        if let ExprKind::Call(name, args) = &e.kind {
            if name.name == "import" && self.lookup(&name.name).is_none() {
                self.import(args, e.span);
                return;
            }
            self.call_stmt(e);
            return;
        }
        self.err_help(
            Code::BadTopology,
            "a topology is a template call or `import(\"file\")`",
            e.span,
            "not a template call",
            "write `topology = fat_tree(…)`, `topology = import(\"fabric.ibnetdiscover\")` or `topology { … }`",
        );
    }

    pub(super) fn import(&mut self, args: &[Arg], span: Span) {
        let [arg] = args else {
            self.err(
                Code::BadArguments,
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
                    Code::ImportUnreadable,
                    format!("cannot read `{path}`"),
                    arg.value.span,
                    why,
                    "paths are relative to the file that imports them",
                );
                return;
            }
        };
        // `topology =` is given once and nothing declares nodes before it.
        if !self.builder.fabric().nodes().is_empty() {
            self.err(
                Code::Internal,
                "nodes were declared before the imported topology (a bug in weft)",
                span,
                "here",
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
                    Code::ImportFailed,
                    format!("`{path}` is not a valid ibnetdiscover topology"),
                    arg.value.span,
                    "imported here",
                );
            }
        }
    }

    pub(super) fn section(&mut self, s: &Section, config: &mut FabricConfig) {
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
                            if let Some(w) =
                                self.word_in(&a.value, crate::ENGINES, "routing engine")
                            {
                                match crate::routing::Engine::from_name(&w) {
                                    Some(engine) => {
                                        config.routing.engine = Some(engine);
                                        config.routing.engine_span = Some(a.value.span);
                                    }
                                    None => self.err(
                                        Code::Internal,
                                        format!("no `{w}` routing engine (a bug in weft)"),
                                        a.value.span,
                                        "here",
                                    ),
                                }
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
                                    config.routing.switch_to_switch =
                                        Some(crate::SwitchToSwitch::Sftree);
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
            }
            "tenant" => {
                self.unsupported(
                    s.kind.span,
                    "`tenant` sections (partitions, VMs, vSwitches) are not implemented yet",
                    "tenants and VM placement come in a later version; remove the section — \
                     weft never accepts what it would ignore",
                );
            }
            other => {
                let help = suggest(other, SECTIONS.iter().copied(), || {
                    format!(
                        "a fabric may contain `topology`, `faults`, {}",
                        backticked(SECTIONS)
                    )
                });
                self.err_help(
                    Code::UnknownSection,
                    format!("unknown section `{other}`"),
                    s.kind.span,
                    "not a section weft knows",
                    help,
                );
            }
        }
    }

    pub(super) fn unknown_in_section(&mut self, item: &SectionItem, section: &str, known: &[&str]) {
        let (name, span) = match item {
            SectionItem::Attr(a) => (&a.name.name, a.name.span),
            SectionItem::Section(s) => (&s.kind.name, s.kind.span),
        };
        let help = suggest(name, known.iter().copied(), || {
            format!("`{section}` takes {}", backticked(known))
        });
        self.err_help(
            Code::UnknownAttribute,
            format!("`{section}` has no setting `{name}`"),
            span,
            "unknown setting",
            help,
        );
    }

    pub(super) fn int_in(&mut self, e: &Expr, lo: i64, hi: i64, what: &str) -> Option<i64> {
        let v = self.eval(e).ok()?;
        match v {
            Value::Int(n) if (lo..=hi).contains(&n) => Some(n),
            Value::Int(n) => {
                self.err(
                    Code::OutOfRange,
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

    pub(super) fn word_in(&mut self, e: &Expr, known: &[&str], what: &str) -> Option<String> {
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
            Code::UnknownWord,
            format!("unknown {what} `{word}`"),
            e.span,
            format!("not a {what}"),
            help,
        );
        None
    }
}

pub(super) const FABRIC_ATTRS: &[&str] = &["guid_base"];

pub(super) const SECTIONS: &[&str] = &["vls", "routing", "qos", "tenant"];

pub(super) const ROUTING_ATTRS: &[&str] = &["engine", "switch_to_switch", "lmc", "roots", "seed"];
