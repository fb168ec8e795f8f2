//! Modules: a file's items, `use` of the standard library and other files, `model`s.

use super::declarations::{kind_of, AttrContext};
use super::*;

impl Elab<'_> {
    /// Registers the items of a parsed file as a module and returns its index.
    pub(crate) fn add_module(&mut self, file: &File, source: SourceId) -> usize {
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
                                Code::UnknownType,
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

    pub(super) fn define(&mut self, module: usize, name: &Ident, g: Global) {
        let Some(m) = self.modules.get_mut(module) else {
            return;
        };
        if m.globals.contains_key(&name.name) {
            self.err_help(
                Code::DuplicateItem,
                format!("`{}` is defined twice", name.name),
                name.span,
                "second definition",
                "models, templates and top-level `let`s share one namespace; rename one",
            );
            return;
        }
        m.globals.insert(name.name.clone(), g);
    }

    pub(super) fn std_module(&mut self, name: &str) -> Option<usize> {
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

    pub(super) fn use_item(&mut self, u: &Use, into: usize) {
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
                            Code::UnknownModule,
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
                    Code::UnknownModule,
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
                        Code::UnknownName,
                        format!("`{}` is not in `{}`", name.name, path.join("::")),
                        name.span,
                        "not found",
                        help,
                    );
                }
            }
        }
    }

    pub(super) fn model_item(&mut self, m: &Model) -> Option<ModelDef> {
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
                Code::ModelWithoutPorts,
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
}
