//! The `fabric` item: its attributes, its topology (or `import`), and its sections
//! (`vls`, `routing`, `qos`; `tenant` and `shared` in `tenants.rs`, `multicast` in
//! `multicast.rs`).

use super::*;

impl Elab<'_> {
    /// Elaborates the `fabric` item.
    pub(crate) fn fabric(&mut self, f: &FabricDef) -> Option<Elaborated> {
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
        // Service nodes the topology did not declare: before the sections, which name hosts.
        let recognised = self.recognise_roles();
        self.group_machines();
        let mut config = FabricConfig::default();
        // `vls`, `routing` and `qos` once each: a second would silently override the first.
        let mut seen: Vec<(&str, Span)> = Vec::new();
        for s in &f.stmts {
            if let FabricStmt::Section(sec) = s {
                let kind = sec.kind.name.as_str();
                if matches!(kind, "vls" | "routing" | "qos" | "sm" | "multicast") {
                    if let Some(&(_, first)) = seen.iter().find(|(k, _)| *k == kind) {
                        self.second(
                            &format!("a second `{kind}` section"),
                            sec.kind.span,
                            first,
                            &format!("put every setting in one `{kind} {{ … }}` section"),
                        );
                        continue;
                    }
                    seen.push((kind, sec.kind.span));
                }
                // `sm on NODES` names where it runs; the others take no `on`.
                if kind != "sm" && !self.takes_only(sec, matches!(kind, "tenant" | "shared")) {
                    continue;
                }
                self.section(sec, &mut config);
            }
        }
        self.unmatched_classes(&config);
        self.multicast_pkeys(&config);
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
            recognised,
        })
    }

    /// Groups the end nodes into machines ([`weft_fabric::machines`]) for the sections that
    /// name hosts; a grouping that does not hold is an error at the node's declaration.
    fn group_machines(&mut self) {
        match weft_fabric::machines::Machines::of(self.builder.fabric()) {
            Ok(m) => self.machines = m,
            Err(e) => {
                let at = self.node_origins.get(e.node().index()).copied();
                let mut d = Diagnostic::error(Code::HostRail, e.to_string()).help(match e {
                    weft_fabric::machines::MachineError::RailTaken { .. } => {
                        "each HCA of a host is on its own rail: give them different `rail`s (an \
                         HCA without one is on its position among the host's HCAs)"
                    }
                    _ => {
                        "a host is named after its machine; name a node and a host alike only \
                          when the node is the host's only HCA"
                    }
                });
                if let Some(o) = at {
                    d = d.label(o.source, o.span, "declared here");
                }
                self.emit(d);
            }
        }
    }

    /// Gives [`Role::Aggregation`] to every end node that looks like a SHARP aggregation node
    /// ([`weft_fabric::roles::aggregation_nodes`]) and whose declaration wrote no `role`.
    fn recognise_roles(&mut self) -> Vec<weft_fabric::roles::Recognised> {
        let declared = std::mem::take(&mut self.declared_roles);
        let found = weft_fabric::roles::aggregation_nodes(self.builder.fabric(), |id| {
            declared.contains(&id)
        });
        for r in &found {
            self.builder.set_role(r.node, Role::Aggregation);
        }
        found
    }

    /// One class takes the traffic no `match` selects (and classes tenants name take their
    /// P_Keys' traffic); another class without either would never carry any.
    fn unmatched_classes(&mut self, config: &FabricConfig) {
        let unmatched: Vec<(String, Span)> = config
            .qos
            .iter()
            .filter(|c| c.matches.is_empty())
            .filter(|c| {
                !config
                    .tenants
                    .iter()
                    .any(|t| t.class.as_ref().is_some_and(|(n, _)| *n == c.name))
            })
            .map(|c| (c.name.clone(), c.span))
            .collect();
        if let [first, second, ..] = unmatched.as_slice() {
            self.diags.push(
                crate::diagnostic::Diagnostic::error(
                    Code::BadArguments,
                    format!(
                        "class `{}` has no `match`, and `{}` already takes the traffic no class matches",
                        second.0, first.0
                    ),
                )
                .label(self.main, second.1, "would carry no traffic")
                .label(self.main, first.1, "takes the unmatched traffic")
                .help("say which traffic it is: `match { service_id = … }`, or name it in a tenant's `class`"),
            );
        }
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
                    why.to_string(),
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

    /// A duplicate: an error at `span`, the first one labelled at `first`.
    pub(super) fn second(&mut self, msg: &str, span: Span, first: Span, help: &str) {
        let d = crate::diagnostic::Diagnostic::error(Code::DuplicateItem, msg)
            .label(self.cur_source(), span, "second")
            .label(self.cur_source(), first, "first")
            .help(help);
        self.emit(d);
    }

    /// Whether `s` has nothing it would ignore: a name only where it takes one (`named`), and
    /// no `on` target (only VMs take one). Errors at what it would ignore.
    pub(super) fn takes_only(&mut self, s: &Section, named: bool) -> bool {
        let kind = &s.kind.name;
        let mut ok = true;
        if let (Some(n), false) = (&s.name, named) {
            self.err_help(
                Code::Syntax,
                format!("`{kind}` takes no name"),
                n.span,
                "a name here would be ignored",
                format!("write `{kind} {{ … }}`"),
            );
            ok = false;
        }
        if let Some(on) = &s.on {
            self.err_help(
                Code::Syntax,
                format!("`{kind}` takes no `on` target"),
                on.span,
                "would be ignored",
                "only `vms on …` and `vm NAME on …` name where they run",
            );
            ok = false;
        }
        ok
    }

    /// Reports every attribute of `s`'s body set a second time (the last would silently win).
    pub(super) fn attrs_once(&mut self, s: &Section) {
        let mut seen: Vec<&Ident> = Vec::new();
        for item in s.body.iter().flatten() {
            let SectionItem::Attr(a) = item else { continue };
            match seen.iter().find(|n| n.name == a.name.name) {
                Some(first) => {
                    let first = first.span;
                    self.second(
                        &format!("`{}` is set twice in `{}`", a.name.name, s.kind.name),
                        a.name.span,
                        first,
                        "keep one",
                    );
                }
                None => seen.push(&a.name),
            }
        }
    }

    pub(super) fn section(&mut self, s: &Section, config: &mut FabricConfig) {
        self.attrs_once(s);
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
                                    self.not_built(
                                        Code::NotBuiltSwitchToSwitchNone,
                                        a.value.span,
                                        "`switch_to_switch = none` is not implemented yet",
                                        "every engine routes switch-to-switch paths (fat_tree \
                                         through sFtree); remove the line",
                                    );
                                } else {
                                    config.routing.switch_to_switch =
                                        Some((crate::SwitchToSwitch::Sftree, a.value.span));
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
                                if self.charge_walk(items.len(), a.value.span).is_err() {
                                    continue;
                                }
                                for it in items {
                                    if let Ok(n) = self.as_node(it, a.value.span) {
                                        config.routing.roots.push(n);
                                    }
                                }
                                config.routing.roots_span = Some(a.value.span);
                            }
                        }
                        "seed" => self.not_built(
                            Code::NotBuiltSeed,
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
            "qos" => self.qos(s, config),
            "tenant" | "shared" => self.tenant(s, config),
            "sm" => self.sm(s, config),
            "multicast" => self.multicast(s, config),
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

    /// `qos { class name { … } … }`.
    fn qos(&mut self, s: &Section, config: &mut FabricConfig) {
        // Every class name seen, declared well or not, for duplicates.
        let mut seen: Vec<(String, Span)> = Vec::new();
        for item in s.body.iter().flatten() {
            let SectionItem::Section(c) = item else {
                self.unknown_in_section(item, "qos", &["class"]);
                continue;
            };
            if c.kind.name != "class" {
                self.unknown_in_section(item, "qos", &["class"]);
                continue;
            }
            if c.on.is_some() && !self.takes_only(c, true) {
                continue;
            }
            let Some(name) = &c.name else {
                self.err_help(
                    Code::BadArguments,
                    "a class needs a name",
                    c.kind.span,
                    "unnamed class",
                    "write `class compute { … }`",
                );
                continue;
            };
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name.name) {
                let first = *first;
                self.diags.push(
                    crate::diagnostic::Diagnostic::error(
                        Code::DuplicateItem,
                        format!("class `{}` is declared twice", name.name),
                    )
                    .label(self.main, name.span, "second declaration")
                    .label(self.main, first, "first declaration"),
                );
                continue;
            }
            seen.push((name.name.clone(), name.span));
            if let Some(class) = self.qos_class(c, name) {
                config.qos.push(class);
            }
        }
        let overlaps = crate::qos::overlapping_service_ids(&config.qos, self.main);
        self.diags.extend(overlaps);
        if s.body.as_ref().is_none_or(|b| b.is_empty()) {
            self.err_help(
                Code::BadArguments,
                "a `qos` section without classes",
                s.kind.span,
                "empty",
                "declare at least one `class name { … }`, or remove the section (one implicit \
                 class on SL 0)",
            );
        }
    }

    fn qos_class(&mut self, c: &Section, name: &Ident) -> Option<crate::QosClass> {
        self.attrs_once(c);
        let mut class = crate::QosClass {
            name: name.name.clone(),
            span: name.span,
            sl: None,
            vl: None,
            lanes: crate::LaneScheme::Single,
            lanes_span: None,
            weight: 1,
            high: false,
            matches: crate::ClassMatch::default(),
        };
        let mut ok = true;
        // The first VL `vftree(vls: [...])` names.
        let mut lanes_vl: Option<(u8, Span)> = None;
        for item in c.body.iter().flatten() {
            match item {
                SectionItem::Attr(a) => match a.name.name.as_str() {
                    "sl" => match self.int_in(&a.value, 0, 15, "an SL of 0 to 15") {
                        Some(n) => class.sl = Some((n as u8, a.value.span)),
                        None => ok = false,
                    },
                    "vl" => match self.int_in(&a.value, 0, 14, "a data VL of 0 to 14") {
                        Some(n) => class.vl = Some((n as u8, a.value.span)),
                        None => ok = false,
                    },
                    "weight" => match self.int_in(&a.value, 1, 255, "a weight of 1 to 255") {
                        Some(n) => class.weight = n as u8,
                        None => ok = false,
                    },
                    "priority" => match self.word_in(&a.value, &["high", "low"], "priority") {
                        Some(w) => class.high = w == "high",
                        None => ok = false,
                    },
                    "lanes" => match self.lanes(&a.value) {
                        Some((l, first_vl)) => {
                            class.lanes = l;
                            class.lanes_span = Some(a.value.span);
                            if let Some(v) = first_vl {
                                lanes_vl = Some((v, a.value.span));
                            }
                        }
                        None => ok = false,
                    },
                    _ => {
                        self.unknown_in_section(item, "class", CLASS_ATTRS);
                        ok = false;
                    }
                },
                SectionItem::Section(m) if m.kind.name == "match" && m.name.is_none() => {
                    ok &= self.class_match(m, &mut class.matches);
                }
                SectionItem::Section(_) => {
                    self.unknown_in_section(item, "class", CLASS_ATTRS);
                    ok = false;
                }
            }
        }
        match (class.vl, lanes_vl) {
            (Some((a, _)), Some((b, sp))) if a != b => {
                self.err_help(
                    Code::BadArguments,
                    format!(
                        "class `{}` starts at VL {a} but its lanes name VL {b} first",
                        class.name
                    ),
                    sp,
                    format!("first VL {b}"),
                    "give the VLs once: `vl = N` or `lanes = vftree(vls: [...])`",
                );
                ok = false;
            }
            (None, Some(v)) => class.vl = Some(v),
            _ => {}
        }
        ok.then_some(class)
    }

    /// `lanes = vftree(maxvl: N)`, `vftree(vls: [a, a+1, …])`, `dftree` or `single`; with
    /// the first VL when the lanes name their VLs.
    fn lanes(&mut self, e: &Expr) -> Option<(crate::LaneScheme, Option<u8>)> {
        const KNOWN: &[&str] = &["single", "vftree(maxvl: N)", "vftree(vls: [..])", "dftree"];
        match &e.kind {
            ExprKind::Ident(w) if w == "single" => Some((crate::LaneScheme::Single, None)),
            ExprKind::Ident(w) if w == "dftree" => Some((crate::LaneScheme::Dftree, None)),
            ExprKind::Call(f, args) if f.name == "vftree" => {
                let [Arg {
                    name: Some(n),
                    value,
                }] = args.as_slice()
                else {
                    self.err_help(
                        Code::BadArguments,
                        "`vftree` takes one named argument, `maxvl` or `vls`",
                        e.span,
                        "expected `vftree(maxvl: N)` or `vftree(vls: [...])`",
                        "`maxvl` is the number of lanes (VLs) the class spreads its leaf pairs \
                         over; `vls` lists them",
                    );
                    return None;
                };
                match n.name.as_str() {
                    "maxvl" => self
                        .int_in(value, 2, 15, "a `maxvl` of 2 to 15 lanes")
                        .map(|m| (crate::LaneScheme::Vftree { maxvl: m as u8 }, None)),
                    "vls" => {
                        let v = self.eval(value).ok()?;
                        let Value::List(items) = v else {
                            self.type_err("a list of VLs", &v, value.span);
                            return None;
                        };
                        self.charge_walk(items.len(), value.span).ok()?;
                        let vls: Vec<i64> = items
                            .iter()
                            .map(|i| match i {
                                Value::Int(n) => *n,
                                _ => -1,
                            })
                            .collect();
                        let consecutive =
                            vls.iter().zip(vls.iter().skip(1)).all(|(a, b)| *b == a + 1);
                        match (vls.first(), vls.last()) {
                            (Some(&a), Some(&b))
                                if consecutive && a >= 0 && b <= 14 && vls.len() >= 2 =>
                            {
                                Some((
                                    crate::LaneScheme::Vftree {
                                        maxvl: vls.len() as u8,
                                    },
                                    Some(a as u8),
                                ))
                            }
                            _ => {
                                self.err_help(
                                    Code::OutOfRange,
                                    "vFtree's VLs are two or more consecutive data VLs",
                                    value.span,
                                    "not consecutive VLs of 0..=14",
                                    "write e.g. `vftree(vls: [1, 2, 3])`, or `vftree(maxvl: 3)` \
                                     to let weft place them",
                                );
                                None
                            }
                        }
                    }
                    _ => {
                        self.err_help(
                            Code::UnknownArgument,
                            format!("`vftree` has no argument `{}`", n.name),
                            n.span,
                            "unknown",
                            "write `vftree(maxvl: N)` or `vftree(vls: [...])`",
                        );
                        None
                    }
                }
            }
            _ => {
                self.err_help(
                    Code::UnknownWord,
                    "unknown lane scheme",
                    e.span,
                    "not a lane scheme",
                    format!("known: {}", backticked(KNOWN)),
                );
                None
            }
        }
    }

    /// `match { service_id = … }` (a `pkey = …` is read and refused: not built); `false` on
    /// an error.
    fn class_match(&mut self, m: &Section, out: &mut crate::ClassMatch) -> bool {
        if !self.takes_only(m, false) {
            return false;
        }
        self.attrs_once(m);
        let mut ok = true;
        for item in m.body.iter().flatten() {
            let SectionItem::Attr(a) = item else {
                self.unknown_in_section(item, "match", &["pkey", "service_id"]);
                ok = false;
                continue;
            };
            let Ok(v) = self.eval(&a.value) else {
                ok = false;
                continue;
            };
            let items: Vec<Value> = match v {
                Value::List(l) => l.iter().cloned().collect(),
                other => vec![other],
            };
            if self.charge_walk(items.len(), a.value.span).is_err() {
                return false;
            }
            for it in items {
                match (a.name.name.as_str(), it) {
                    ("pkey", Value::Int(k)) if (1..=0xffff).contains(&k) && k & 0x7fff != 0 => {
                        // OpenSM refuses a QoS policy naming a partition it was not given.
                        self.not_built(
                            Code::NotBuiltPkeyMatch,
                            a.value.span,
                            "matching a class by P_Key is not implemented yet",
                            "to give a partition's traffic a class, give its tenant the class \
                             (`tenant t { pkey = …, class = … }`); match by `service_id` here",
                        );
                        ok = false;
                        break;
                    }
                    ("service_id", Value::Int(n)) if n >= 0 => {
                        out.service_ids.push(crate::ServiceIds {
                            first: n as u64,
                            last: n as u64,
                            span: a.value.span,
                        });
                    }
                    ("service_id", Value::Range(lo, hi)) if lo >= 0 && hi > lo => {
                        out.service_ids.push(crate::ServiceIds {
                            first: lo as u64,
                            last: hi as u64 - 1,
                            span: a.value.span,
                        });
                    }
                    ("pkey" | "service_id", other) => {
                        self.err(
                            Code::OutOfRange,
                            format!(
                                "`{}` is not a {}",
                                other.type_name(),
                                if a.name.name == "pkey" {
                                    "P_Key (1..=0xffff, partition bits not 0)"
                                } else {
                                    "service ID or a non-empty range of them"
                                }
                            ),
                            a.value.span,
                            "here",
                        );
                        ok = false;
                    }
                    _ => {
                        self.unknown_in_section(item, "match", &["pkey", "service_id"]);
                        ok = false;
                        break;
                    }
                }
            }
        }
        if ok && out.is_empty() {
            self.err_help(
                Code::BadArguments,
                "an empty `match`",
                m.kind.span,
                "matches nothing",
                "give `service_id = …`, or remove `match` (the class then takes the traffic no \
                 other class matches)",
            );
            ok = false;
        }
        ok
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

pub(super) const SECTIONS: &[&str] = &[
    "vls",
    "routing",
    "qos",
    "tenant",
    "shared",
    "sm",
    "multicast",
];

pub(super) const CLASS_ATTRS: &[&str] = &["sl", "vl", "lanes", "weight", "priority", "match"];

pub(super) const ROUTING_ATTRS: &[&str] = &["engine", "switch_to_switch", "lmc", "roots", "seed"];
