//! Statements: blocks, `let`, `for`, `if`, `assert`, template calls, and the budget every
//! loop iteration, value built and value walked (compared, formatted, summed, sliced) is
//! charged to.

use super::*;

impl Elab<'_> {
    pub(super) fn block(&mut self, b: &Block) {
        let mark = self.env.len();
        for s in &b.stmts {
            if self.steps > self.step_limit {
                break;
            }
            self.stmt(s);
        }
        self.env.truncate(mark);
    }

    pub(super) fn tick(&mut self, span: Span) -> R<()> {
        self.charge(1, span)
    }

    /// Charges walking `n` list items or string bytes (a quarter step each, as building a
    /// value is charged); nothing when there are fewer than four.
    pub(super) fn charge_walk(&mut self, n: usize, span: Span) -> R<()> {
        match n as u64 / 4 {
            0 => Ok(()),
            units => self.charge(units, span),
        }
    }

    /// What is left of the budget, in list items or string bytes (four per step), at least
    /// four: the most a walk at this point may visit.
    pub(super) fn walk_fuel(&self) -> u64 {
        self.step_limit
            .saturating_sub(self.steps)
            .saturating_add(1)
            .saturating_mul(4)
    }

    /// Charges `units` of work (a statement, an iteration, or building or walking a value: a
    /// quarter step per byte or list item) against the evaluation budget.
    pub(super) fn charge(&mut self, units: u64, span: Span) -> R<()> {
        let before = self.steps;
        self.steps = self.steps.saturating_add(units.max(1));
        if before <= self.step_limit && self.steps > self.step_limit {
            self.err_help(
                Code::EvaluationLimit,
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

    pub(super) fn stmt(&mut self, s: &Stmt) {
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
                Code::MisplacedStatement,
                "nodes and links are declared in `topology`, not in `faults`",
                span,
                "not a fault",
                "faults are `link a.p[1] down` or `switch name down`",
            ),
            Stmt::LinkDown(_) | Stmt::NodeDown(_) => self.err_help(
                Code::MisplacedStatement,
                "faults belong in a `faults { … }` block",
                span,
                "a fault outside `faults`",
                "move it into `faults { … }` inside the fabric",
            ),
        }
    }

    pub(super) fn let_stmt(&mut self, l: &Let) {
        match self.eval(&l.value) {
            Ok(v) => {
                self.env.push((Rc::from(l.name.name.as_str()), v));
            }
            Err(()) => {
                self.poisoned.insert(l.name.name.clone());
            }
        }
    }

    pub(super) fn for_stmt(&mut self, f: &For, depth: usize) {
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

    pub(super) fn assert_stmt(&mut self, a: &Assert) {
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
        self.err(Code::Assertion, msg, a.cond.span, "this is false");
    }

    pub(super) fn call_stmt(&mut self, e: &Expr) {
        let ExprKind::Call(name, args) = &e.kind else {
            return;
        };
        match self.lookup(&name.name) {
            Some(Value::Template(t)) => self.call_template(&t, args, name, e.span),
            Some(other) => self.err(
                Code::NotATemplate,
                format!("`{}` is {}, not a template", name.name, other.a_type_name()),
                name.span,
                "cannot be called",
            ),
            None if crate::BUILTINS.contains(&name.name.as_str()) => self.err_help(
                Code::UselessCall,
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

    pub(super) fn call_template(
        &mut self,
        t: &Rc<TemplateDef>,
        args: &[Arg],
        name: &Ident,
        span: Span,
    ) {
        if self.frames.len() >= MAX_TEMPLATE_DEPTH {
            self.err_help(
                Code::TooDeep,
                format!("templates nested deeper than {MAX_TEMPLATE_DEPTH} calls"),
                name.span,
                format!("call {} levels deep", self.frames.len() + 1),
                "a topology template may call others, but not in chains this long",
            );
            return;
        }
        if self.frames.iter().any(|f| f.template == t.ast.name.name) {
            self.err_help(
                Code::RecursiveTemplate,
                format!("template `{}` calls itself", t.ast.name.name),
                name.span,
                "recursive call",
                "templates cannot recurse; every weft program must terminate",
            );
            return;
        }
        let Some(bound) = self.bind_args(t, args, span) else {
            return;
        };
        // Run the body in the template's own scope.
        let params = &t.ast.params;
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

    /// The arguments of a call of `t`, evaluated in the caller's scope, one slot per parameter
    /// (`None`: not given; its default applies). `None` when an argument is unknown, extra,
    /// given twice, of the wrong type, or a parameter without a default is missing (said).
    fn bind_args(
        &mut self,
        t: &Rc<TemplateDef>,
        args: &[Arg],
        span: Span,
    ) -> Option<Vec<Option<(Value, Span)>>> {
        let params = &t.ast.params;
        let mut bound: Vec<Option<(Value, Span)>> = vec![None; params.len()];
        let mut ok = true;
        let mut positional = 0usize;
        for a in args {
            let Some(slot) = self.arg_slot(t, a, &mut positional) else {
                ok = false;
                continue;
            };
            let Some(param) = params.get(slot) else {
                continue;
            };
            let Ok(v) = self.eval_attr(&a.value) else {
                ok = false;
                continue;
            };
            if bound.get(slot).is_some_and(|b| b.is_some()) {
                self.err(
                    Code::DuplicateArgument,
                    format!("`{}` is given twice", param.name.name),
                    a.value.span,
                    "given again here",
                );
                ok = false;
            }
            if let Some(ty) = &param.ty {
                if !v.fits(&ty.name) {
                    self.err(
                        Code::TypeMismatch,
                        format!(
                            "`{}` expects {} for `{}`, found {}",
                            t.ast.name.name,
                            ty.name,
                            param.name.name,
                            v.type_name()
                        ),
                        a.value.span,
                        format!("this is {}", v.a_type_name()),
                    );
                    ok = false;
                }
            }
            if let Some(b) = bound.get_mut(slot) {
                *b = Some((v, a.value.span));
            }
        }
        let missing: Vec<&str> = params
            .iter()
            .zip(&bound)
            .filter(|(p, b)| b.is_none() && p.default.is_none())
            .map(|(p, _)| p.name.name.as_str())
            .collect();
        if let (Some(first), true) = (missing.first(), ok) {
            self.err_help(
                Code::MissingArgument,
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
                format!("pass them by name: `{}({}: …)`", t.ast.name.name, first),
            );
            ok = false;
        }
        ok.then_some(bound)
    }

    /// The parameter argument `a` of a call of `t` binds: by name, else the next position.
    /// `None` for an unknown name or an extra argument (said).
    fn arg_slot(&mut self, t: &Rc<TemplateDef>, a: &Arg, positional: &mut usize) -> Option<usize> {
        let params = &t.ast.params;
        match &a.name {
            Some(n) => {
                let found = params.iter().position(|p| p.name.name == n.name);
                if found.is_none() {
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
                        Code::UnknownArgument,
                        format!("`{}` has no parameter `{}`", t.ast.name.name, n.name),
                        n.span,
                        "unknown parameter",
                        help,
                    );
                }
                found
            }
            None => {
                let i = *positional;
                *positional += 1;
                if i >= params.len() {
                    self.err(
                        Code::TooManyArguments,
                        format!("`{}` takes {} arguments", t.ast.name.name, params.len()),
                        a.value.span,
                        "extra argument",
                    );
                    return None;
                }
                Some(i)
            }
        }
    }
}

pub(super) fn saved_frames_source(frames: &[Frame], main: SourceId) -> SourceId {
    frames.last().map_or(main, |f| f.source)
}

pub(super) fn stmt_span(s: &Stmt) -> Span {
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
