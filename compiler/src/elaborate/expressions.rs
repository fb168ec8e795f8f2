//! Expressions: names, operators, node ranges, indexing and fields.

use super::*;
use crate::syntax::hostlist::HostList;

impl Elab<'_> {
    pub(super) fn lookup(&self, name: &str) -> Option<Value> {
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

    pub(super) fn unknown_name(&mut self, name: &str, span: Span) {
        // Once reported here, not again: the suggestion compares `name` with every name in
        // scope, which a loop would otherwise redo on every iteration.
        if self.poisoned.contains(name) || self.reported(span, Code::UnknownName) {
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
            Code::UnknownName,
            format!("cannot find `{name}`"),
            span,
            "not found in this scope",
            help,
        );
    }

    /// Evaluates an attribute value: an unbound name is a word (`EDR`, `fat_tree`).
    pub(super) fn eval_attr(&mut self, e: &Expr) -> R<Value> {
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

    pub(super) fn eval_bool(&mut self, e: &Expr) -> R<bool> {
        match self.eval(e)? {
            Value::Bool(b) => Ok(b),
            other => {
                self.type_err("a condition (bool)", &other, e.span);
                Err(())
            }
        }
    }

    pub(super) fn as_node(&mut self, v: Value, span: Span) -> R<NodeId> {
        match v {
            Value::Node(n) => Ok(n),
            Value::Str(s) => match self.builder.fabric().find(&s) {
                Some(n) => Ok(n),
                None => {
                    self.err(
                        Code::UnknownNode,
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
            ExprKind::HostList(h) => self.host_list(h, e.span),
        }
    }

    /// `cn[001-128,200]`: the nodes a Slurm host list names, in its order; every name must
    /// be a node.
    fn host_list(&mut self, h: &HostList, span: Span) -> R<Value> {
        let len = usize::try_from(h.len()).unwrap_or(usize::MAX);
        self.value_size(len, MAX_LIST_ITEMS, "list of", "names", span)?;
        let mut out = Vec::with_capacity(len);
        for name in h.names() {
            // A name built and looked up per item, as a node range pays.
            if out.len() % 4 == 3 {
                self.tick(span)?;
            }
            match self.builder.fabric().find(&name) {
                Some(n) => out.push(Value::Node(n)),
                None => {
                    let text = &h.text;
                    self.err_help(
                        Code::UnknownNode,
                        format!("the host list `{text}` names `{name}`, which does not exist"),
                        span,
                        "no such node",
                        "every name a host list expands to must be a node of the topology",
                    );
                    return Err(());
                }
            }
        }
        Ok(Value::List(Rc::new(out)))
    }

    pub(super) fn overflow(&mut self, span: Span) {
        self.err(
            Code::Overflow,
            "integer overflow",
            span,
            "result does not fit in 64 bits",
        );
    }

    /// Refuses a value over `max` and charges building it against the budget.
    pub(super) fn value_size(
        &mut self,
        len: usize,
        max: usize,
        what: &str,
        unit: &str,
        span: Span,
    ) -> R<()> {
        if len > max {
            self.err_help(
                Code::ValueTooLarge,
                format!("this would build a {what} {len} {unit}; values stop at {max}"),
                span,
                "too large",
                "a fabric description needs names and small lists, not bulk data",
            );
            return Err(());
        }
        self.charge(len as u64 / 4, span)
    }

    pub(super) fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, span: Span) -> R<Value> {
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
                    Code::DivisionByZero,
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
            (BinOp::Eq, _, _) => Some(Bool(self.equal(&l, &r, span)?)),
            (BinOp::Ne, _, _) => Some(Bool(!self.equal(&l, &r, span)?)),
            (BinOp::Lt, Int(x), Int(y)) => Some(Bool(x < y)),
            (BinOp::Le, Int(x), Int(y)) => Some(Bool(x <= y)),
            (BinOp::Gt, Int(x), Int(y)) => Some(Bool(x > y)),
            (BinOp::Ge, Int(x), Int(y)) => Some(Bool(x >= y)),
            _ => {
                self.err(
                    Code::TypeMismatch,
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
    pub(super) fn node_range(&mut self, a: NodeId, b: NodeId, incl: bool, span: Span) -> R<Value> {
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
                Code::BadNodeRange,
                format!("`{an}..{bn}` is not a node range"),
                span,
                "names without a number",
                "a node range joins names like `cn001..cn128`",
            );
            return Err(());
        };
        if pa != pb {
            self.err_help(
                Code::BadNodeRange,
                format!("`{an}` and `{bn}` do not share a prefix"),
                span,
                "different prefixes",
                "a node range joins names like `cn001..cn128`",
            );
            return Err(());
        }
        if !incl {
            self.emit(
                Diagnostic::warning(
                    Code::ExclusiveNodeRange,
                    format!("`{an}..{bn}` leaves out `{bn}`"),
                )
                .label(self.cur_source(), span, format!("`..` stops before `{bn}`"))
                .help(format!(
                    "`..` excludes its end, as in Rust: write `{an}..={bn}` (or `{pa}[{da}-{db}]`) to include `{bn}`"
                )),
            );
        }
        let end = if incl { y } else { y - 1 };
        let mut out = Vec::new();
        for i in x..=end {
            // A name built and looked up per item (at most one per node before a gap).
            if out.len() % 4 == 3 {
                self.tick(span)?;
            }
            let name = format!("{pa}{i:0w$}", w = da.len());
            match self.builder.fabric().find(&name) {
                Some(n) => out.push(Value::Node(n)),
                None => {
                    self.err(
                        Code::UnknownNode,
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

    pub(super) fn index(&mut self, base: &Expr, idx: &Expr, span: Span) -> R<Value> {
        let b = self.eval(base)?;
        let i = self.eval(idx)?;
        match (&b, &i) {
            (Value::List(l), Value::Int(k)) => {
                match usize::try_from(*k).ok().and_then(|k| l.get(k)) {
                    Some(v) => Ok(v.clone()),
                    None => {
                        self.err(
                            Code::IndexOutOfRange,
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
                        Code::IndexOutOfRange,
                        format!("slice {x}..{y} is out of range for a list of {}", l.len()),
                        idx.span,
                        "out of range",
                    );
                    return Err(());
                }
                self.charge_walk(y - x, span)?;
                Ok(Value::List(Rc::new(
                    l.get(x..y).map(<[Value]>::to_vec).unwrap_or_default(),
                )))
            }
            (Value::Array(arr), Value::Int(k)) => match arr.get(*k) {
                Some(n) => Ok(Value::Node(n)),
                None => {
                    self.err_help(
                        Code::IndexOutOfRange,
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
                    Code::TypeMismatch,
                    "a template cannot be indexed",
                    span,
                    "template",
                );
                Err(())
            }
            _ => {
                self.err(
                    Code::TypeMismatch,
                    format!("cannot index a {} with a {}", b.type_name(), i.type_name()),
                    span,
                    format!("{}[{}]", b.type_name(), i.type_name()),
                );
                Err(())
            }
        }
    }

    pub(super) fn field(&mut self, base: &Expr, f: &Ident) -> R<Value> {
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
            (Value::Model(m), "multicast_fdb_cap") => {
                Some(Value::Int(m.spec.multicast_fdb_cap.map_or(0, i64::from)))
            }
            (Value::Model(m), "partition_cap") => {
                Some(Value::Int(m.spec.partition_cap.map_or(0, i64::from)))
            }
            (Value::Array(a), "len") => Some(Value::Int(a.ids.len() as i64)),
            _ => None,
        };
        v.ok_or_else(|| {
            let help = match &b {
                Value::Node(_) => "nodes have `p` (ports), `name`, `ports`, `level` and `guid`",
                Value::Model(_) => "models have `name`, `ports`, `speed`, `width`, `vlcap`, `mtu`, `linear_fdb_cap`, `multicast_fdb_cap` and `partition_cap`",
                _ => "only nodes, models and node arrays have fields",
            };
            self.err_help(
                Code::UnknownField,
                format!("a {} has no field `{}`", b.type_name(), f.name),
                f.span,
                "unknown field",
                help,
            );
        })
    }
}

impl Elab<'_> {
    /// `a == b`, charged to the budget for every list item and string byte it compares: lists
    /// share their items, so building `repeat(repeat(0, 1000000), 1000000)` is cheap but
    /// comparing two of them walks 10^12 items. A comparison the rest of the budget cannot pay
    /// for stops evaluation here.
    pub(super) fn equal(&mut self, a: &Value, b: &Value, span: Span) -> R<bool> {
        let budget = self.walk_fuel();
        let mut fuel = budget;
        let eq = values_eq(a, b, &mut fuel);
        let used = budget.saturating_sub(fuel);
        match eq {
            Some(eq) => {
                self.charge_walk(usize::try_from(used).unwrap_or(usize::MAX), span)?;
                Ok(eq)
            }
            None => {
                self.charge(u64::MAX, span)?;
                Err(())
            }
        }
    }
}

/// Whether `a` and `b` are equal, spending a unit of `fuel` per list item and string byte
/// compared; `None` when the fuel runs out first.
pub(super) fn values_eq(a: &Value, b: &Value, fuel: &mut u64) -> Option<bool> {
    let mut spend = |n: usize| -> Option<()> {
        *fuel = fuel.checked_sub(n as u64)?;
        Some(())
    };
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Str(x) | Value::Symbol(x), Value::Str(y) | Value::Symbol(y)) => {
            // Strings of different lengths differ at once; equal lengths compare bytes.
            if x.len() == y.len() {
                spend(x.len())?;
            }
            x == y
        }
        (Value::Width(x), Value::Width(y)) => x == y,
        (Value::Node(x), Value::Node(y)) => x == y,
        (Value::Port(a, p), Value::Port(b, q)) => a == b && p == q,
        (Value::Range(a, b), Value::Range(c, d)) => a == c && b == d,
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (p, q) in x.iter().zip(y.iter()) {
                *fuel = fuel.checked_sub(1)?;
                if !values_eq(p, q, fuel)? {
                    return Some(false);
                }
            }
            true
        }
        (Value::Model(x), Value::Model(y)) => Rc::ptr_eq(x, y),
        _ => false,
    })
}
