//! Declarations: nodes (and node arrays), links, faults (`link … down`, `node … down`), ports,
//! and the attributes of models and nodes.

use super::*;

impl Elab<'_> {
    pub(super) fn node_decl(&mut self, d: &NodeDecl) {
        let kind = kind_of(d.kind.kind);
        let Some(mut spec) = self.node_model(d, kind) else {
            return;
        };
        let Some(attrs) = self.node_attrs(d, kind, &mut spec) else {
            return;
        };
        let Some((names, array)) = self.node_names(d, kind, attrs.name_fmt.as_ref()) else {
            return;
        };
        if attrs.guid.is_some() && names.len() > 1 {
            if let Some((_, sp)) = attrs.guid {
                self.err(
                    Code::GuidOnArray,
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
                    Code::DuplicateName,
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
        let Some(ids) = self.add_nodes(d, kind, &spec, &attrs, names, array) else {
            return;
        };
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

    /// The spec a node declaration starts from: its model's (of the declared kind), else an
    /// empty one. `None` when the model is wrong (said).
    fn node_model(&mut self, d: &NodeDecl, kind: NodeKind) -> Option<NodeSpec> {
        let Some(m) = &d.model else {
            return Some(NodeSpec::new(String::new(), kind, Guid(0), 0));
        };
        match self.eval(m) {
            Ok(Value::Model(model)) => {
                if model.kind != kind {
                    self.err_help(
                        Code::ModelKindMismatch,
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
                    return None;
                }
                Some(model.spec.clone())
            }
            Ok(other) => {
                self.type_err("a hardware model", &other, m.span);
                None
            }
            Err(()) => None,
        }
    }

    /// Applies a node declaration's attributes to `spec`; what it says beside the spec (name
    /// format, GUID, a role of its own). `None` when an attribute does not evaluate or the node
    /// has neither a model nor a port count (said).
    fn node_attrs(
        &mut self,
        d: &NodeDecl,
        kind: NodeKind,
        spec: &mut NodeSpec,
    ) -> Option<NodeAttrs> {
        let mut has_ports = d.model.is_some();
        let mut out = NodeAttrs::default();
        for a in &d.attrs {
            let Ok(v) = self.eval_attr(&a.value) else {
                return None;
            };
            match a.name.name.as_str() {
                "name" => match v {
                    Value::Str(s) => out.name_fmt = Some((s, a.value.span)),
                    other => self.type_err("a name format (str)", &other, a.value.span),
                },
                "guid" => match v {
                    Value::Int(g) => out.guid = Some((Guid(g as u64), a.value.span)),
                    other => self.type_err("a GUID (integer)", &other, a.value.span),
                },
                "ports" => {
                    has_ports = true;
                    self.apply_attr(spec, a, v, AttrContext::Node);
                }
                "role" => {
                    out.role = true;
                    self.apply_attr(spec, a, v, AttrContext::Node);
                }
                _ => self.apply_attr(spec, a, v, AttrContext::Node),
            }
        }
        if !has_ports {
            self.err_help(
                Code::NodeWithoutModel,
                "this node has no hardware model and no port count",
                d.span,
                "no model",
                format!(
                    "give a model (`{} name : model`) or set `{{ ports = N }}`",
                    kind
                ),
            );
            return None;
        }
        Some(out)
    }

    /// The names a declaration gives (with each array index; 0 for a single node), and the
    /// array's name when it declares one. `name` formats an array's names; a single node is
    /// named by its declaration. `None` when the names are wrong (said).
    fn node_names<'d>(
        &mut self,
        d: &'d NodeDecl,
        kind: NodeKind,
        name_fmt: Option<&(Rc<str>, Span)>,
    ) -> Option<(Names, Option<&'d Ident>)> {
        if let (DeclName::Single(_) | DeclName::Computed(_), Some((_, sp))) = (&d.name, name_fmt) {
            self.err_help(
                Code::NameOnSingleNode,
                "`name` names the nodes of an array; this node is named by its declaration",
                *sp,
                "not used on a single node",
                format!("name the node in its declaration: `{kind} \"core-a\" : model`, or `{kind} core_a : model`"),
            );
            return None;
        }
        match &d.name {
            DeclName::Single(id) => Some((vec![(id.name.clone(), 0)], None)),
            DeclName::Computed(e) => match self.eval(e) {
                Ok(Value::Str(s)) => Some((vec![(s.to_string(), 0)], None)),
                Ok(other) => {
                    self.type_err("a node name (str)", &other, e.span);
                    None
                }
                Err(()) => None,
            },
            DeclName::Array(id, r) => {
                let names = self.array_names(id, r, name_fmt)?;
                Some((names, Some(id)))
            }
        }
    }

    /// The names of array `id` over range `r`, formatted by `name_fmt` (else the array's name
    /// and the index). `None` when the range is empty, too large or not a range, or a name
    /// does not format (said).
    fn array_names(
        &mut self,
        id: &Ident,
        r: &Expr,
        name_fmt: Option<&(Rc<str>, Span)>,
    ) -> Option<Names> {
        let v = self.eval(r).ok()?;
        let Value::Range(a, b) = v else {
            self.type_err("an index range such as `1..=36`", &v, r.span);
            return None;
        };
        if b.saturating_sub(a) > NODE_LIMIT as i64 {
            self.err_help(
                Code::TooManyNodes,
                format!("`{}` would declare {} nodes", id.name, b.saturating_sub(a)),
                r.span,
                "too many nodes",
                format!(
                    "a fabric holds at most {NODE_LIMIT} nodes (the unicast LID space is 49 151)"
                ),
            );
            return None;
        }
        if b <= a {
            self.err(
                Code::EmptyRange,
                format!("`{}` would have no nodes", id.name),
                r.span,
                "empty range",
            );
            return None;
        }
        let mut names = Vec::with_capacity((b - a) as usize);
        for i in a..b {
            let n = match name_fmt {
                Some((f, sp)) => match format(f, &[i.to_string()], &[Some(i)]) {
                    Ok(n) => n,
                    Err(why) => {
                        self.err(Code::BadFormat, why, *sp, "bad name format");
                        return None;
                    }
                },
                None => format!("{}{}", id.name, i),
            };
            names.push((n, i));
        }
        Some(names)
    }

    /// Adds the declared nodes to the fabric (each a copy of `spec` with its name and GUID);
    /// their ids. An array stops at its first node the builder refuses (its name poisoned, so
    /// later references are not reported again); `None` at the node or step limit.
    fn add_nodes(
        &mut self,
        d: &NodeDecl,
        kind: NodeKind,
        spec: &NodeSpec,
        attrs: &NodeAttrs,
        names: Names,
        array: Option<&Ident>,
    ) -> Option<Vec<NodeId>> {
        let decl_span = match &d.name {
            DeclName::Single(id) | DeclName::Array(id, _) => id.span,
            DeclName::Computed(e) => e.span,
        };
        let mut ids = Vec::with_capacity(names.len());
        for (n, _) in names {
            if self.builder.fabric().nodes().len() >= NODE_LIMIT {
                self.err_help(
                    Code::TooManyNodes,
                    format!("the fabric has more than {NODE_LIMIT} nodes"),
                    decl_span,
                    "too many nodes",
                    "the unicast LID space (49 151) cannot address this many nodes",
                );
                // Stop everything now: the loops declaring these nodes may run for millions
                // more iterations.
                self.steps = self.steps.max(self.step_limit.saturating_add(1));
                return None;
            }
            if self.tick(decl_span).is_err() {
                return None;
            }
            let mut s = spec.clone();
            s.name = n;
            s.kind = kind;
            s.guid = match attrs.guid {
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
                    if attrs.role {
                        self.declared_roles.insert(id);
                    }
                    let origin = self.user_origin(decl_span);
                    self.node_origins.push(origin);
                }
                Err(e) => {
                    self.node_error(e, decl_span, attrs.guid.map(|g| g.1));
                    self.poisoned
                        .insert(array.map_or(s_name, |id| id.name.clone()));
                    if array.is_some() {
                        break;
                    }
                }
            }
        }
        Some(ids)
    }

    pub(super) fn next_guid(&mut self) -> Guid {
        loop {
            self.guid_next = self.guid_next.wrapping_add(GUID_STEP);
            let g = Guid(self.guid_next);
            // Free as a node GUID, and so are the port GUIDs its ports would carry (the node
            // GUID for a switch, node GUID + port for an HCA: all below the next step).
            let last = Guid(g.0.saturating_add(GUID_STEP - 1));
            let f = self.builder.fabric();
            if f.find_guid(g).is_none() && !f.port_guid_in(g, last) {
                return g;
            }
        }
    }

    pub(super) fn node_error(&mut self, e: LinkError, span: Span, guid_span: Option<Span>) {
        match e {
            LinkError::DuplicateName { name, existing } => {
                let mut d = Diagnostic::error(
                    Code::DuplicateName,
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
                Code::DuplicateGuid,
                format!("GUID {guid} is already the GUID of `{existing_name}`"),
                guid_span.unwrap_or(span),
                "duplicate GUID",
                "every node needs its own GUID; omit `guid` to have one generated",
            ),
            LinkError::DuplicatePortGuid { ref existing, .. } => {
                let mut d = Diagnostic::error(Code::DuplicateGuid, e.to_string()).label(
                    self.cur_source(),
                    span,
                    "declared here",
                );
                if let Some(o) = self.node_origins.get(existing.index()).copied() {
                    if o.source == self.cur_source() && o.span != span {
                        d = d.label(o.source, o.span, "carries it first");
                    }
                }
                self.emit(d.help(
                    "a port GUID names one port (a switch's ports carry its node GUID, an \
                     HCA's its node GUID + the port number unless `port_guids` says); it may \
                     equal another node's node GUID, not another port's",
                ));
            }
            other => self.err(Code::BadNode, other.to_string(), span, "here"),
        }
    }

    pub(super) fn link_stmt(&mut self, l: &LinkStmt) {
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
                        Code::BadWidth,
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
                        Code::UnknownAttribute,
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
                if a.node == b.node {
                    let name = self.builder.fabric().node(a.node).name().to_owned();
                    self.emit(
                        Diagnostic::warning(
                            Code::Loopback,
                            format!(
                                "loopback cable: port {} of `{name}` is cabled to its own port {}",
                                a.port.0, b.port.0
                            ),
                        )
                        .label(
                            self.cur_source(),
                            l.span,
                            "a cable between two ports of one node",
                        )
                        .help(
                            "a loopback carries no traffic between nodes (a test plug or a \
                             cabling mistake); remove the link unless the cable is there",
                        ),
                    );
                }
                let origin = self.user_origin(l.span);
                self.link_origins.push(origin);
            }
            Err(e) => self.link_error(e, l, a),
        }
    }

    pub(super) fn link_error(&mut self, e: LinkError, l: &LinkStmt, a: PortRef) {
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
                    Code::PortOutOfRange,
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
                    Code::PortWiredTwice,
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
                Code::SelfLink,
                format!("a link cannot connect port {port} of `{name}` to itself"),
                l.span,
                "both ends are the same port",
            ),
            other => self.err(Code::BadLink, other.to_string(), l.span, "here"),
        }
    }

    pub(super) fn bad_speed(&mut self, s: &str, span: Span) {
        let names: Vec<&str> = Speed::ALL.iter().map(|s| s.as_str()).collect();
        let help = match did_you_mean(&s.to_ascii_uppercase(), names.iter().copied()) {
            Some(x) => format!("did you mean `{x}`?"),
            None => format!("speeds are {}", names.join(", ")),
        };
        self.err_help(
            Code::BadSpeed,
            format!("`{s}` is not an InfiniBand speed"),
            span,
            "unknown speed",
            help,
        );
    }

    pub(super) fn link_down(&mut self, l: &LinkDown) {
        let Ok(a) = self.port(&l.a) else { return };
        let fab = self.builder.fabric();
        let Some((peer, link)) = fab.peer(a) else {
            let name = fab.node(a.node).name().to_owned();
            self.err_help(
                Code::FaultOnUnwiredPort,
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
                    Code::FaultWrongLink,
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

    pub(super) fn node_down(&mut self, n: &NodeDown) {
        let Ok(v) = self.eval(&n.node) else { return };
        let Ok(id) = self.as_node(v, n.node.span) else {
            return;
        };
        let node = self.builder.fabric().node(id);
        let kind = kind_of(n.kind.kind);
        if node.kind() != kind {
            let (name, actual) = (node.name().to_owned(), node.kind());
            self.err_help(
                Code::FaultKindMismatch,
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

    pub(super) fn port(&mut self, e: &Expr) -> R<PortRef> {
        let v = self.eval(e)?;
        match v {
            Value::Port(n, p) => match u8::try_from(p) {
                Ok(p) if p >= 1 => Ok(PortRef::new(n, p)),
                _ => {
                    let name = self.builder.fabric().node(n).name().to_owned();
                    let ports = self.builder.fabric().node(n).spec.port_count;
                    self.err_help(
                        Code::PortOutOfRange,
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
                    Code::ExpectedPort,
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

    pub(super) fn apply_attr(&mut self, spec: &mut NodeSpec, a: &Attr, v: Value, ctx: AttrContext) {
        match (a.name.name.as_str(), ctx) {
            ("speed" | "width" | "vlcap" | "mtu", _) => self.link_attr(spec, a, &v),
            ("role", _) => self.role_attr(spec, a, &v),
            ("host" | "rail" | "system_guid" | "port_guids", AttrContext::Node) => {
                self.machine_attr(spec, a, v);
            }
            (
                "ports" | "linear_fdb_cap" | "multicast_fdb_cap" | "partition_cap" | "vendor"
                | "device",
                _,
            )
            | ("level" | "lid", AttrContext::Node) => self.number_attr(spec, a, &v),
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
                    Code::UnknownAttribute,
                    format!("unknown attribute `{other}`"),
                    a.name.span,
                    "unknown",
                    help,
                );
            }
        }
    }

    /// Attribute `a`'s value as an integer in `lo..=hi` (`what` it is, for the error); `None`
    /// when it is not one (said).
    fn attr_int(&mut self, a: &Attr, v: &Value, lo: i64, hi: i64, what: &str) -> Option<i64> {
        let span = a.value.span;
        match v {
            Value::Int(n) if (lo..=hi).contains(n) => Some(*n),
            Value::Int(n) => {
                self.err(
                    Code::OutOfRange,
                    format!("`{n}` is out of range for `{}`", a.name.name),
                    span,
                    format!("{what}: {lo}..={hi}"),
                );
                None
            }
            other => {
                self.type_err(what, other, span);
                None
            }
        }
    }

    /// The attributes that are a number in a range: port count, table capacities, ids, level,
    /// LID.
    fn number_attr(&mut self, spec: &mut NodeSpec, a: &Attr, v: &Value) {
        let int = |this: &mut Self, lo: i64, hi: i64, what: &str| this.attr_int(a, v, lo, hi, what);
        match a.name.name.as_str() {
            "ports" => {
                if let Some(n) = int(self, 1, 254, "a port count") {
                    spec.port_count = n as u8;
                }
            }
            "linear_fdb_cap" => {
                if let Some(n) = int(self, 0, 0xC000, "an LFT capacity") {
                    spec.linear_fdb_cap = n as u32;
                }
            }
            "multicast_fdb_cap" => {
                let what = "an MFT capacity (MulticastFDBCap, MLIDs from 0xc000)";
                if let Some(n) = int(self, 1, 0x3FFF, what) {
                    spec.multicast_fdb_cap = Some(n as u16);
                }
            }
            "partition_cap" => {
                if let Some(n) = int(self, 1, 0xFFFF, "a P_Key table size (PartitionCap)") {
                    spec.partition_cap = Some(n as u16);
                }
            }
            "vendor" => {
                if let Some(n) = int(self, 0, 0xFF_FFFF, "a vendor id (24-bit OUI)") {
                    spec.vendor_id = n as u32;
                }
            }
            "device" => {
                if let Some(n) = int(self, 0, 0xFFFF_FFFF, "a device id") {
                    spec.device_id = n as u32;
                }
            }
            "level" => {
                if let Some(n) = int(self, 0, 15, "a tree level") {
                    spec.level = Some(n as u8);
                }
            }
            "lid" => {
                let max = i64::from(weft_fabric::MAX_UNICAST_LID);
                if let Some(n) = int(self, 1, max, "a unicast LID") {
                    spec.lid = Some(Lid(n as u16));
                }
            }
            _ => {}
        }
    }

    /// The link attributes: speed, width, VLCap, MTU.
    fn link_attr(&mut self, spec: &mut NodeSpec, a: &Attr, v: &Value) {
        let span = a.value.span;
        match a.name.name.as_str() {
            "speed" => match v {
                Value::Symbol(s) | Value::Str(s) => match Speed::parse(s) {
                    Some(sp) => spec.caps.speed = sp,
                    None => self.bad_speed(s, span),
                },
                other => self.type_err("a speed such as `EDR`", other, span),
            },
            "width" => match v {
                Value::Width(w) => match Width::from_lanes(u64::from(*w)) {
                    Some(wd) => spec.caps.width = wd,
                    None => self.err(
                        Code::BadWidth,
                        format!("`{w}x` is not a link width"),
                        span,
                        "expected 1x, 2x, 4x, 8x or 12x",
                    ),
                },
                other => self.type_err("a width such as `4x`", other, span),
            },
            "vlcap" => {
                if let Some(n) = self.attr_int(a, v, 1, 15, "a VL count") {
                    if [1, 2, 4, 8, 15].contains(&n) {
                        spec.caps.vl_cap = n as u8;
                    } else {
                        self.err_help(
                            Code::BadVlcap,
                            format!("`{n}` is not a VLCap"),
                            span,
                            "not 1, 2, 4, 8 or 15",
                            "VLCap is 1, 2, 4, 8 or 15 data VLs",
                        );
                    }
                }
            }
            "mtu" => {
                if let Some(n) = self.attr_int(a, v, 0, i64::MAX, "an MTU in bytes") {
                    match Mtu::from_bytes(n as u64) {
                        Some(m) => spec.caps.mtu = m,
                        None => self.err_help(
                            Code::BadMtu,
                            format!("`{n}` is not an InfiniBand MTU"),
                            span,
                            "not an MTU",
                            "MTUs are 256, 512, 1024, 2048 or 4096 bytes",
                        ),
                    }
                }
            }
            _ => {}
        }
    }

    /// `role`: what an end node is for (a switch has none but `host`).
    fn role_attr(&mut self, spec: &mut NodeSpec, a: &Attr, v: &Value) {
        let span = a.value.span;
        // `role = host` reads the word even where `host` names something else (an
        // array of hosts).
        let word = match (&a.value.kind, v) {
            (ExprKind::Ident(w), _) if Role::from_keyword(w).is_some() => Some(w.clone()),
            (_, Value::Symbol(w) | Value::Str(w)) => Some(w.to_string()),
            _ => None,
        };
        match word.as_deref().map(|w| (w, Role::from_keyword(w))) {
            Some((_, Some(role))) if spec.kind == NodeKind::Switch && !role.is_host() => {
                self.err_help(
                    Code::UnknownAttribute,
                    format!("a switch has no `role` (`{role}` is for end nodes)"),
                    a.name.span,
                    "on a switch",
                    "roles say what an end node is for; SHARP's aggregation node inside \
                     a switch is an hca of its own, cabled to the switch's extra port",
                );
            }
            Some((_, Some(role))) => spec.role = role,
            Some((w, None)) => {
                let help = suggest(w, Role::ALL.iter().map(|r| r.keyword()), || {
                    "a role is `host`, `aggregation`, `storage` or `management`".to_owned()
                });
                self.err_help(
                    Code::UnknownWord,
                    format!("`{w}` is not a role"),
                    span,
                    "unknown role",
                    help,
                );
            }
            None => self.type_err(
                "a role (`host`, `aggregation`, `storage` or `management`)",
                v,
                span,
            ),
        }
    }

    /// The machine attributes of an end node: `host`, `rail`, `system_guid`, `port_guids`.
    fn machine_attr(&mut self, spec: &mut NodeSpec, a: &Attr, v: Value) {
        let span = a.value.span;
        let name = a.name.name.as_str();
        if matches!(name, "host" | "rail") && spec.kind == NodeKind::Switch {
            self.err_help(
                Code::UnknownAttribute,
                format!("a switch has no `{name}`"),
                a.name.span,
                "on a switch",
                "`host` and `rail` say which machine an end node is in and which of its HCAs it \
                 is; a switch is in neither",
            );
            return;
        }
        match name {
            "host" => match &v {
                Value::Str(h) | Value::Symbol(h) if !h.is_empty() => {
                    spec.host = Some(h.to_string());
                }
                Value::Str(_) => self.err(
                    Code::OutOfRange,
                    "a host name cannot be empty",
                    span,
                    "empty",
                ),
                other => self.type_err("a host name (`\"dgx001\"`)", other, span),
            },
            "rail" => {
                if let Some(n) = self.attr_int(a, &v, 0, 255, "a rail number") {
                    spec.rail = Some(n as u8);
                }
            }
            "system_guid" => match v {
                Value::Int(g) => spec.system_guid = Some(Guid(g as u64)),
                other => self.type_err("a GUID (integer)", &other, span),
            },
            "port_guids" => match v {
                Value::List(items) => {
                    if self.charge_walk(items.len(), span).is_err() {
                        return;
                    }
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
            _ => {}
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum AttrContext {
    Model,
    Node,
}

/// "a switch", "an hca", "a router".
pub(super) fn article(k: NodeKind) -> String {
    match k {
        NodeKind::Hca => "an hca".to_owned(),
        other => format!("a {other}"),
    }
}

pub(super) fn kind_of(k: NodeKindKw) -> NodeKind {
    match k {
        NodeKindKw::Switch => NodeKind::Switch,
        NodeKindKw::Hca => NodeKind::Hca,
        NodeKindKw::Router => NodeKind::Router,
    }
}

pub(super) const MODEL_ATTRS: &[&str] = &[
    "ports",
    "role",
    "speed",
    "width",
    "vlcap",
    "mtu",
    "linear_fdb_cap",
    "multicast_fdb_cap",
    "partition_cap",
    "vendor",
    "device",
];

/// Attributes a node may set besides its model's.
pub(super) const NODE_ONLY_ATTRS: &[&str] = &[
    "level",
    "lid",
    "guid",
    "system_guid",
    "port_guids",
    "name",
    "host",
    "rail",
];

/// What a node declaration's attributes say beside its spec.
#[derive(Default)]
struct NodeAttrs {
    /// `name`: the format of an array's names, and where it is written.
    name_fmt: Option<(Rc<str>, Span)>,
    /// `guid`, and where it is written.
    guid: Option<(Guid, Span)>,
    /// Whether the node sets `role` itself (even `role = host`): recognition leaves it be.
    role: bool,
}

/// The names a node declaration gives, each with its array index (0 for a single node).
type Names = Vec<(String, i64)>;
