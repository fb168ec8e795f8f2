//! Hover, go to definition, references, rename and the document outline, on the compiler's
//! outline (`weft_compiler::outline`) and elaborated fabric.

use crate::analysis as attrs;
use crate::analysis::Document;
use crate::stdlib::Stdlib;
use lsp_types::{
    DocumentSymbol, Hover, HoverContents, Location, MarkupContent, MarkupKind, Position, Range,
    SymbolKind as LspKind, TextEdit, WorkspaceEdit,
};
use std::collections::HashMap;
use weft_compiler::outline::{RefKind, Reference, Symbol, SymbolKind};

/// What is under the cursor.
pub(crate) enum Target<'a> {
    /// A declaration's name.
    Decl(&'a Symbol),
    /// A use of a name.
    Use(&'a Reference),
}

impl Target<'_> {
    fn name(&self) -> &str {
        match self {
            Target::Decl(s) => &s.name,
            Target::Use(r) => &r.name,
        }
    }
}

/// The declaration or reference at `offset` (the innermost: a reference inside a node
/// declaration wins over the declaration).
pub(crate) fn target(doc: &Document, offset: usize) -> Option<Target<'_>> {
    let inside =
        |s: weft_compiler::outline::Span| (s.start as usize) <= offset && offset <= s.end as usize;
    if let Some(r) = doc.outline.references.iter().find(|r| inside(r.span)) {
        return Some(Target::Use(r));
    }
    doc.outline
        .all_symbols()
        .into_iter()
        .find(|s| inside(s.name_span))
        .map(Target::Decl)
}

/// The declarations in this document a name can mean (templates, models, lets, parameters,
/// nodes), most global first.
fn declarations<'a>(doc: &'a Document, name: &str) -> Vec<&'a Symbol> {
    doc.outline
        .all_symbols()
        .into_iter()
        .filter(|s| {
            s.name == name
                && !matches!(
                    s.kind,
                    SymbolKind::Section | SymbolKind::Fabric | SymbolKind::Use
                )
        })
        .collect()
}

/// The standard-library module a name is imported from by this document's `use` items.
fn imported_from<'a>(doc: &'a Document, name: &str) -> Option<&'a str> {
    doc.outline
        .references
        .iter()
        .find(|r| r.kind == RefKind::UseItem && r.name == name)
        .and_then(|r| r.context.strip_prefix("std::"))
}

/// Where `t` is declared: in this document, or in the standard library.
pub(crate) fn definition(doc: &Document, std: &Stdlib, t: &Target<'_>) -> Option<Location> {
    let name = t.name();
    if let Target::Use(r) = t {
        if r.kind == RefKind::Module {
            return std.module_location(name);
        }
        if r.kind == RefKind::Attr {
            return None;
        }
    }
    if let Some(s) = declarations(doc, name).first() {
        if !matches!(t, Target::Use(r) if r.kind == RefKind::UseItem) {
            let range = doc.range(s.name_span.start, s.name_span.end);
            return Some(Location::new(doc.uri.clone(), range));
        }
    }
    let module = imported_from(doc, name);
    std.item_location(module, name)
}

/// Every use of the name under the cursor and its declarations in this document.
pub(crate) fn references(doc: &Document, t: &Target<'_>, declaration: bool) -> Vec<Location> {
    let name = t.name();
    let mut spans: Vec<(u32, u32)> = doc
        .outline
        .references
        .iter()
        .filter(|r| r.name == name && r.kind != RefKind::Attr)
        .map(|r| (r.span.start, r.span.end))
        .collect();
    if declaration {
        spans.extend(
            declarations(doc, name)
                .iter()
                .map(|s| (s.name_span.start, s.name_span.end)),
        );
    }
    spans.sort_unstable();
    spans.dedup();
    spans
        .into_iter()
        .map(|(a, b)| Location::new(doc.uri.clone(), doc.range(a, b)))
        .collect()
}

/// Renames a node or a template (and every use) in this document; `None` for other names.
pub(crate) fn rename(doc: &Document, t: &Target<'_>, new_name: &str) -> Option<WorkspaceEdit> {
    let name = t.name();
    let decls = declarations(doc, name);
    if !decls
        .iter()
        .any(|s| matches!(s.kind, SymbolKind::Node | SymbolKind::Template))
        || !is_ident(new_name)
    {
        return None;
    }
    let mut edits = Vec::new();
    for loc in references(doc, t, true) {
        let start = doc.index.offset(&doc.text, loc.range.start);
        let end = doc.index.offset(&doc.text, loc.range.end);
        let old = doc.text.get(start..end).unwrap_or("");
        // A string literal keeps its quotes.
        let text = if old.starts_with('"') {
            format!("\"{new_name}\"")
        } else {
            new_name.to_owned()
        };
        edits.push(TextEdit::new(loc.range, text));
    }
    let mut changes = HashMap::new();
    changes.insert(doc.uri.clone(), edits);
    Some(WorkspaceEdit::new(changes))
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !weft_compiler::outline::keywords().contains(&s)
}

/// Hover text for `t`.
pub(crate) fn hover(doc: &Document, std: &Stdlib, t: &Target<'_>, offset: usize) -> Option<Hover> {
    let name = t.name();
    let text = match t {
        Target::Use(r) if r.kind == RefKind::Attr => {
            let context = section_kind(doc, offset).unwrap_or_else(|| r.context.clone());
            let m = attrs::meaning(&context, name)?;
            format!("`{name}` ({context}): {m}")
        }
        Target::Use(r) if r.kind == RefKind::Module => format!("module `std::{name}`"),
        _ => {
            if let Some(n) = node_hover(doc, t, name) {
                n
            } else if let Some(s) = declarations(doc, name).first() {
                signature(s)
            } else if let Some(s) = std.item(imported_from(doc, name), name) {
                signature(&s)
            } else if let Some(code) = code_hover(name) {
                code
            } else if weft_compiler::BUILTINS.contains(&name) {
                format!("`{name}`: a built-in function")
            } else {
                return None;
            }
        }
    };
    Some(markdown(text))
}

fn markdown(value: String) -> Hover {
    Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range: None,
    }
}

/// Hover where no name is: a code written out (`weft::credit_loop`, in a comment), else the
/// code of a diagnostic at `offset`.
pub(crate) fn hover_code(doc: &Document, offset: usize) -> Option<Hover> {
    if let Some((w, _, _)) = crate::text::word_at(&doc.text, offset) {
        if let Some(t) = code_hover(w) {
            return Some(markdown(t));
        }
    }
    let pos = doc.index.position(&doc.text, offset);
    let before = |a: Position, b: Position| (a.line, a.character) <= (b.line, b.character);
    doc.diagnostics()
        .iter()
        .filter(|d| before(d.range.start, pos) && before(pos, d.range.end))
        .find_map(|d| match &d.code {
            Some(lsp_types::NumberOrString::String(c)) => code_hover(c),
            _ => None,
        })
        .map(markdown)
}

fn signature(s: &Symbol) -> String {
    let mut t = format!("```weft\n{}\n```", wrapped(&s.detail));
    if !s.doc.is_empty() {
        t += &format!("\n\n{}", s.doc);
    }
    t
}

/// A one-line declaration longer than a hover is wide (`model sb7800 : switch { ports = 36,
/// … }`) with one attribute a line, as the file writes it; shorter ones as they are.
fn wrapped(detail: &str) -> String {
    const WIDTH: usize = 80;
    let (Some(open), Some(body)) = (
        detail.find(" { "),
        detail.strip_suffix(" }").filter(|_| detail.len() > WIDTH),
    ) else {
        return detail.to_owned();
    };
    let (Some(head), Some(inner)) = (detail.get(..open), body.get(open + 3..)) else {
        return detail.to_owned();
    };
    let mut parts = Vec::new();
    let (mut depth, mut start, mut quoted) = (0i32, 0usize, false);
    for (i, c) in inner.char_indices() {
        match c {
            '"' => quoted = !quoted,
            _ if quoted => {}
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(inner.get(start..i).unwrap_or("").trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(inner.get(start..).unwrap_or("").trim());
    let mut t = format!("{head} {{\n");
    for p in parts.into_iter().filter(|p| !p.is_empty()) {
        t += &format!("    {p}\n");
    }
    t + "}"
}

/// The explanation of a code (`weft::credit_loop`).
fn code_hover(word: &str) -> Option<String> {
    let summary = weft_compiler::code::CODES
        .iter()
        .find(|c| c.code == word)
        .map(|c| c.summary.to_owned())
        .or_else(|| {
            weft_verifier::Property::ALL
                .iter()
                .find(|p| p.code() == word)
                .map(|p| format!("a violation of {}.", p.noun()))
        })?;
    Some(format!(
        "`{word}`: {summary}\n\nMore: `weft --explain {word}`"
    ))
}

/// The section keyword around `offset` (`routing`, `class`, …), from the outline.
fn section_kind(doc: &Document, offset: usize) -> Option<String> {
    doc.outline
        .all_symbols()
        .into_iter()
        .filter(|s| {
            s.kind == SymbolKind::Section
                && (s.span.start as usize) <= offset
                && offset <= s.span.end as usize
        })
        .min_by_key(|s| s.span.len())
        .and_then(|s| s.name.split_whitespace().next().map(str::to_owned))
}

/// The node a name means: `leaf3`, `"cn001"`, or `leaf[3]` (an array and a literal index).
fn node_hover(doc: &Document, t: &Target<'_>, name: &str) -> Option<String> {
    let e = doc.compilation.as_ref()?.elaborated.as_ref()?;
    let f = &e.fabric;
    let mut candidates = vec![name.to_owned()];
    let end = match t {
        Target::Use(r) => r.span.end as usize,
        Target::Decl(s) => s.name_span.end as usize,
    };
    let rest = doc.text.get(end..).unwrap_or("");
    if let Some(idx) = rest
        .strip_prefix('[')
        .and_then(|r| r.split(']').next())
        .filter(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
    {
        candidates.insert(0, format!("{name}{idx}"));
    }
    let id = candidates.iter().find_map(|c| f.find(c))?;
    let n = f.node(id);
    let s = &n.spec;
    let mut t = format!("**{}** — {:?}", n.name(), n.kind()).to_lowercase();
    t = t.replacen(&n.name().to_lowercase(), n.name(), 1);
    if let Some(m) = &s.model {
        t += &format!(", model `{m}`");
    }
    t += &format!("\n\n- ports: {}", s.port_count);
    if let Some(l) = s.level {
        t += &format!("\n- level: {l}");
    }
    if !n.is_switch() {
        t += &format!("\n- role: {:?}", n.role()).to_lowercase();
    }
    if let Some(r) = s.rail {
        t += &format!("\n- rail: {r}");
    }
    if let Some(h) = &s.host {
        t += &format!("\n- machine: {h}");
    }
    let tenants: Vec<&str> = e
        .config
        .tenants
        .iter()
        .filter(|te| te.members().any(|m| m == id))
        .map(|te| te.name.as_str())
        .collect();
    if !tenants.is_empty() {
        t += &format!("\n- tenant: {}", tenants.join(", "));
    }
    if n.down {
        t += "\n- down (a fault)";
    }
    if let Some(b) = &doc.built {
        if let Some(lid) = b.lids.get(n.name()) {
            t += &format!("\n- LID: {lid}");
        }
        t += &format!("\n- engine: {}", b.engine);
    }
    Some(t)
}

/// The outline: the fabric with its sections and nodes, templates with their parameters.
pub(crate) fn symbols(doc: &Document) -> Vec<DocumentSymbol> {
    doc.outline.symbols.iter().map(|s| symbol(doc, s)).collect()
}

#[expect(
    deprecated,
    reason = "`DocumentSymbol::deprecated` must be written; it is `None`"
)]
fn symbol(doc: &Document, s: &Symbol) -> DocumentSymbol {
    let kind = match s.kind {
        SymbolKind::Use => LspKind::NAMESPACE,
        SymbolKind::Let => LspKind::VARIABLE,
        SymbolKind::Model => LspKind::STRUCT,
        SymbolKind::Template => LspKind::FUNCTION,
        SymbolKind::Param => LspKind::TYPE_PARAMETER,
        SymbolKind::Fabric => LspKind::MODULE,
        SymbolKind::Section => LspKind::OBJECT,
        _ => LspKind::CONSTANT,
    };
    let range = doc.range(s.span.start, s.span.end);
    let mut selection = doc.range(s.name_span.start, s.name_span.end);
    if !contains(range, selection) {
        selection = range;
    }
    DocumentSymbol {
        name: if s.name.is_empty() {
            "_".into()
        } else {
            s.name.clone()
        },
        detail: Some(s.detail.clone()),
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range: selection,
        children: Some(s.children.iter().map(|c| symbol(doc, c)).collect()),
    }
}

fn contains(outer: Range, inner: Range) -> bool {
    let le = |a: Position, b: Position| (a.line, a.character) <= (b.line, b.character);
    le(outer.start, inner.start) && le(inner.end, outer.end)
}
