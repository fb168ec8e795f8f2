//! Built-in functions (`format`, `len`, `range`, …) and template calls in expressions.

use super::*;

impl Elab<'_> {
    pub(super) fn call_expr(&mut self, name: &Ident, args: &[Arg], span: Span) -> R<Value> {
        if let Some(v) = self.lookup(&name.name) {
            return match v {
                Value::Template(_) => {
                    self.err_help(
                        Code::TemplateAsValue,
                        format!("template `{}` declares nodes; it has no value", name.name),
                        span,
                        "used as a value",
                        "call it as a statement, or as `topology = …`",
                    );
                    Err(())
                }
                other => {
                    self.err(
                        Code::NotCallable,
                        format!("`{}` is {}, not a function", name.name, other.a_type_name()),
                        name.span,
                        "cannot be called",
                    );
                    Err(())
                }
            };
        }
        if let Some(a) = args.iter().find_map(|a| a.name.as_ref()) {
            self.err(
                Code::NamedArgument,
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
        let arity = |this: &mut Self, n: usize| this.arity(name, vals.len(), n, span);
        match name.name.as_str() {
            "format" => self.format_call(&vals, span),
            "node" => {
                arity(self, 1)?;
                let (v, sp) = vals.swap_remove(0);
                self.as_node(v, sp).map(Value::Node)
            }
            "len" => {
                arity(self, 1)?;
                let [(v, sp)] = vals.as_slice() else {
                    return Err(());
                };
                match v {
                    Value::List(l) => Ok(Value::Int(l.len() as i64)),
                    Value::Str(s) => {
                        self.charge_walk(s.len(), span)?;
                        Ok(Value::Int(s.chars().count() as i64))
                    }
                    Value::Range(a, b) => Ok(Value::Int((b - a).max(0))),
                    Value::Array(a) => Ok(Value::Int(a.ids.len() as i64)),
                    other => {
                        self.type_err("a list, string, range or node array", other, *sp);
                        Err(())
                    }
                }
            }
            "prod" | "sum" | "min" | "max" => self.fold_call(name, &vals, span),
            "pow" => {
                arity(self, 2)?;
                let [(Value::Int(b), _), (Value::Int(x), _)] = vals.as_slice() else {
                    self.err(
                        Code::TypeMismatch,
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
                let [(item, _), (count, nsp)] = vals.as_slice() else {
                    return Err(());
                };
                let Value::Int(n) = *count else {
                    self.type_err("a count (int)", count, *nsp);
                    return Err(());
                };
                let Ok(n) = usize::try_from(n) else {
                    self.err(
                        Code::OutOfRange,
                        format!("cannot repeat {n} times"),
                        *nsp,
                        "a count is 0 or more",
                    );
                    return Err(());
                };
                self.value_size(n, MAX_LIST_ITEMS, "list of", "items", span)?;
                Ok(Value::List(Rc::new(vec![item.clone(); n])))
            }
            "import" => {
                self.err_help(
                    Code::MisplacedImport,
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

    /// `format(f, args…)`: the format string with the arguments put in.
    fn format_call(&mut self, vals: &[(Value, Span)], span: Span) -> R<Value> {
        let Some((Value::Str(f), fsp)) = vals.first() else {
            self.err(
                Code::BadArguments,
                "`format` takes a format string first",
                span,
                "expected `format(\"…\", …)`",
            );
            return Err(());
        };
        let (f, fsp) = (Rc::clone(f), *fsp);
        let mut strs = Vec::with_capacity(vals.len());
        let mut ints = Vec::with_capacity(vals.len());
        for (v, _) in vals.iter().skip(1) {
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
        // Reading the format string and copying every argument into the result.
        let read = f.len() + strs.iter().map(String::len).sum::<usize>();
        self.charge_walk(read, span)?;
        match format(&f, &strs, &ints) {
            Ok(s) => {
                self.value_size(s.len(), MAX_STRING_BYTES, "string of", "bytes", span)?;
                Ok(Value::Str(Rc::from(s.as_str())))
            }
            Err(why) => {
                self.err(Code::BadFormat, why, fsp, "format string");
                Err(())
            }
        }
    }

    /// `prod(list)`, `sum(list)`, `min(a, …)`, `max(a, …)`: integers folded.
    fn fold_call(&mut self, name: &Ident, vals: &[(Value, Span)], span: Span) -> R<Value> {
        if matches!(name.name.as_str(), "prod" | "sum") {
            self.arity(name, vals.len(), 1, span)?;
            let [(v, sp)] = vals else {
                return Err(());
            };
            let Value::List(l) = v else {
                self.type_err("a list of integers", v, *sp);
                return Err(());
            };
            self.charge_walk(l.len(), span)?;
            let mut acc: i64 = if name.name == "prod" { 1 } else { 0 };
            for v in l.iter() {
                let Value::Int(x) = v else {
                    self.type_err("a list of integers", v, *sp);
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
        } else {
            if vals.is_empty() {
                self.err(
                    Code::BadArguments,
                    format!("`{}` needs at least one argument", name.name),
                    span,
                    "no arguments",
                );
                return Err(());
            }
            let mut best: Option<i64> = None;
            for (v, sp) in vals {
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
    }

    /// Refuses a call of `name` with `found` arguments where it takes `n`.
    fn arity(&mut self, name: &Ident, found: usize, n: usize, span: Span) -> R<()> {
        if found == n {
            Ok(())
        } else {
            self.err(
                Code::BadArguments,
                format!("`{}` takes {n} argument(s), found {found}", name.name),
                span,
                "wrong number of arguments",
            );
            Err(())
        }
    }
}
