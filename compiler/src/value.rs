//! Runtime values of the elaborator, and the `format` mini-language.

use crate::syntax::ast::{Span, Template};
use std::fmt::Write as _;
use std::rc::Rc;
use weft_fabric::{NodeId, NodeKind, NodeSpec};

/// A hardware model after its attributes were evaluated.
#[derive(Debug)]
pub(crate) struct ModelDef {
    /// Model name.
    pub name: String,
    /// Kind of node it describes.
    pub kind: NodeKind,
    /// Defaults for nodes declared with it (name and GUID unset).
    pub spec: NodeSpec,
}

/// A template and the module it was defined in.
#[derive(Debug)]
pub(crate) struct TemplateDef {
    /// The syntax.
    pub ast: Template,
    /// Index of its module.
    pub module: usize,
}

/// A node array declared as `leaf[1..=36]`.
#[derive(Debug)]
pub(crate) struct NodeArray {
    /// Array name.
    pub name: String,
    /// First index.
    pub lo: i64,
    /// Node per index, from `lo`.
    pub ids: Vec<NodeId>,
    /// Declaration span.
    pub span: Span,
    /// Declaration source.
    pub source: crate::diagnostic::SourceId,
}

impl NodeArray {
    pub(crate) fn get(&self, i: i64) -> Option<NodeId> {
        usize::try_from(i.checked_sub(self.lo)?)
            .ok()
            .and_then(|k| self.ids.get(k).copied())
    }

    pub(crate) fn hi(&self) -> i64 {
        self.lo + self.ids.len() as i64 - 1
    }
}

/// A value.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Int(i64),
    Bool(bool),
    Str(Rc<str>),
    Width(u32),
    /// An unbound name used as an enumeration word (`EDR`, `fat_tree`).
    Symbol(Rc<str>),
    List(Rc<Vec<Value>>),
    /// Half-open integer range.
    Range(i64, i64),
    Model(Rc<ModelDef>),
    Template(Rc<TemplateDef>),
    Node(NodeId),
    Array(Rc<NodeArray>),
    /// `node.p`: the ports of a node.
    Ports(NodeId),
    /// `node.p[i]`.
    Port(NodeId, i64),
}

impl Value {
    /// The type's name, as the language reference calls it.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Bool(_) => "bool",
            Value::Str(_) => "str",
            Value::Width(_) => "width",
            Value::Symbol(_) => "word",
            Value::List(_) => "list",
            Value::Range(..) => "range",
            Value::Model(_) => "model",
            Value::Template(_) => "template",
            Value::Node(_) => "node",
            Value::Array(_) => "node array",
            Value::Ports(_) => "port list",
            Value::Port(..) => "port",
        }
    }

    /// The type name with its article: "an int", "a node array".
    pub(crate) fn a_type_name(&self) -> String {
        let t = self.type_name();
        let article = if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {t}")
    }

    /// Whether the value fits a declared parameter type.
    pub(crate) fn fits(&self, ty: &str) -> bool {
        match ty {
            "int" => matches!(self, Value::Int(_)),
            "bool" => matches!(self, Value::Bool(_)),
            "str" => matches!(self, Value::Str(_)),
            "list" => matches!(self, Value::List(_)),
            "range" => matches!(self, Value::Range(..)),
            "model" => matches!(self, Value::Model(_)),
            "node" => matches!(self, Value::Node(_) | Value::Str(_)),
            "width" => matches!(self, Value::Width(_)),
            "word" => matches!(self, Value::Symbol(_)),
            _ => true,
        }
    }

    /// Known parameter type names.
    pub(crate) const TYPES: [&'static str; 9] = [
        "int", "bool", "str", "list", "range", "model", "node", "width", "word",
    ];
}

/// Formats `{}`, `{:03}`, `{:5}`, `{:x}`, `{:04x}` and `{{`/`}}` with `args`.
pub(crate) fn format(fmt: &str, args: &[String], ints: &[Option<i64>]) -> Result<String, String> {
    let mut out = String::with_capacity(fmt.len() + 8);
    let mut chars = fmt.chars().peekable();
    let mut next = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut spec = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => spec.push(ch),
                        None => return Err("a `{` in the format string is never closed".into()),
                    }
                }
                let Some(arg) = args.get(next) else {
                    return Err(format!(
                        "the format string has more `{{}}` than the {} argument(s) given",
                        args.len()
                    ));
                };
                let int = ints.get(next).copied().flatten();
                next += 1;
                let spec = match spec.strip_prefix(':') {
                    Some(rest) => rest,
                    None if spec.is_empty() => "",
                    None => {
                        return Err(format!(
                            "`{{{spec}}}` is not a format this language knows; use `{{}}`, `{{:03}}` or `{{:x}}`"
                        ))
                    }
                };
                let (body, hex) = match spec.strip_suffix('x') {
                    Some(b) => (b, true),
                    None => (spec, false),
                };
                let zero = body.starts_with('0') && body.len() > 1;
                let width: usize = if body.is_empty() {
                    0
                } else {
                    body.parse()
                        .map_err(|_| format!("`{{:{spec}}}` is not a format this language knows; use `{{}}`, `{{:03}}` or `{{:x}}`"))?
                };
                if width > MAX_FORMAT_WIDTH {
                    return Err(format!(
                        "`{{:{spec}}}` pads to {width} characters; widths stop at {MAX_FORMAT_WIDTH}"
                    ));
                }
                match (int, hex, zero) {
                    (Some(v), true, true) => write!(out, "{v:0width$x}"),
                    (Some(v), true, false) => write!(out, "{v:width$x}"),
                    (Some(v), false, true) => write!(out, "{v:0width$}"),
                    (None, true, _) => return Err("`{:x}` formats integers only".into()),
                    (_, false, _) => write!(out, "{arg:>width$}"),
                }
                .map_err(|e| e.to_string())?;
            }
            '}' => {
                return Err("a `}` in the format string has no `{`; write `}}` for a brace".into())
            }
            _ => out.push(c),
        }
    }
    if next < args.len() {
        return Err(format!(
            "{} argument(s) given but the format string uses {}",
            args.len(),
            next
        ));
    }
    Ok(out)
}

/// Widest padding `format` accepts (names are short; a huge width is a memory bomb).
pub(crate) const MAX_FORMAT_WIDTH: usize = 64;

/// `` `a`, `b`, `c` ``: names as a message lists them.
pub(crate) fn backticked<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|s| format!("`{}`", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "did you mean `x`?" when a candidate is close to `name`, else `otherwise()`.
pub(crate) fn suggest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    otherwise: impl FnOnce() -> String,
) -> String {
    match did_you_mean(name, candidates) {
        Some(s) => format!("did you mean `{s}`?"),
        None => otherwise(),
    }
}

/// The closest of `candidates` to `name`, if close enough to suggest
/// ([`weft_fabric::closest`]: the one rule for every "did you mean").
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    weft_fabric::closest(name, candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, v: i64) -> String {
        format(fmt, &[v.to_string()], &[Some(v)]).unwrap_or_else(|e| e)
    }

    #[test]
    fn formats() {
        assert_eq!(f("cn{:03}", 7), "cn007");
        assert_eq!(f("cn{:03}", 11664), "cn11664");
        assert_eq!(f("leaf{}", 12), "leaf12");
        assert_eq!(f("x{:04x}", 255), "x00ff");
        assert_eq!(f("{{}}{}", 1), "{}1");
        assert!(f("{:q}", 1).contains("not a format"));
        assert!(format("{} {}", &["a".into()], &[None]).is_err());
    }

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("sb7801", ["sb7800", "qm8700"]), Some("sb7800"));
        assert_eq!(did_you_mean("zzz", ["sb7800"]), None);
        assert_eq!(did_you_mean("levle", ["level", "lid"]), Some("level"));
    }
}
