//! Completion, formatting (`weft fmt`'s formatter) and code actions (the fixes the
//! diagnostics already name).

mod fabric;

use crate::analysis as attrs;
use crate::analysis::Document;
use crate::stdlib::Stdlib;
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CompletionItem, CompletionItemKind,
    Diagnostic as LspDiagnostic, NumberOrString, Position, Range, TextEdit, WorkspaceEdit,
};
use std::collections::HashMap;
use weft_compiler::outline::SymbolKind;

/// Node names offered at most (a large fabric has tens of thousands).
const MAX_NODES: usize = 200;

pub(crate) fn item(label: &str, kind: CompletionItemKind, detail: &str) -> CompletionItem {
    CompletionItem {
        label: label.to_owned(),
        kind: Some(kind),
        detail: (!detail.is_empty()).then(|| detail.to_owned()),
        ..CompletionItem::default()
    }
}

/// The keyword of the innermost `{` open before `offset` (`routing`, `switch`, `fabric`, …).
fn enclosing(text: &str, offset: usize) -> Option<&str> {
    let before = text.get(..offset)?;
    let mut depth = 0i32;
    for (i, c) in before.char_indices().rev() {
        match c {
            '}' => depth += 1,
            '{' if depth == 0 => {
                let line_start = before.get(..i)?.rfind('\n').map_or(0, |n| n + 1);
                let head = before.get(line_start..i)?;
                return head.split_whitespace().next();
            }
            '{' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Completion items at `pos`.
pub(crate) fn complete(doc: &Document, pos: Position) -> Vec<CompletionItem> {
    let offset = doc.index.offset(&doc.text, pos);
    let line_start = doc
        .text
        .get(..offset)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |n| n + 1);
    let line = doc.text.get(line_start..offset).unwrap_or("");
    let typed: String = line
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let trimmed = line.trim_start();
    if let Some(rest) = trimmed.strip_prefix("use ") {
        return use_items(rest);
    }
    let before_word = line
        .get(..line.len() - typed.len())
        .unwrap_or("")
        .trim_end();
    if let Some(f) = doc.fabric() {
        if let Some(ports) = fabric::ports(f, before_word) {
            return ports;
        }
        let context = enclosing(&doc.text, offset).unwrap_or("");
        if fabric::takes_hosts(before_word, context) {
            let mut out = fabric::hosts(f);
            if context == "group" {
                out.push(item("all", CompletionItemKind::ENUM_MEMBER, "members"));
            }
            return out;
        }
    }
    if before_word.ends_with('=') {
        let attr = before_word
            .trim_end_matches('=')
            .trim_end()
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        if let Some(values) = values_of(attr) {
            return values;
        }
    }
    let context = enclosing(&doc.text, offset).unwrap_or("");
    let mut out = Vec::new();
    let section = match context {
        "switch" | "hca" | "router" => Some("node"),
        "model" | "link" | "fabric" | "vls" | "routing" | "class" | "match" | "tenant"
        | "shared" | "vms" | "multicast" | "group" => Some(context),
        _ => None,
    };
    if let Some(s) = section {
        for (name, meaning) in attrs::in_context(s) {
            out.push(item(name, CompletionItemKind::PROPERTY, meaning));
        }
    }
    if context == "fabric" {
        for s in attrs::SECTIONS {
            out.push(item(s, CompletionItemKind::KEYWORD, "section"));
        }
    }
    if section.is_none() || context == "fabric" {
        for k in weft_compiler::outline::keywords() {
            out.push(item(k, CompletionItemKind::KEYWORD, ""));
        }
        for b in weft_compiler::BUILTINS {
            out.push(item(b, CompletionItemKind::FUNCTION, "built-in"));
        }
        names(doc, &typed, &mut out);
    } else if section != Some("model") {
        names(doc, &typed, &mut out);
    }
    out
}

/// Templates, models, lets and imported items of the document, and node names starting with
/// `typed`.
fn names(doc: &Document, typed: &str, out: &mut Vec<CompletionItem>) {
    for s in doc.outline.all_symbols() {
        let kind = match s.kind {
            SymbolKind::Template => CompletionItemKind::FUNCTION,
            SymbolKind::Model => CompletionItemKind::STRUCT,
            SymbolKind::Let | SymbolKind::Param => CompletionItemKind::VARIABLE,
            _ => continue,
        };
        out.push(item(&s.name, kind, &s.detail));
    }
    for r in &doc.outline.references {
        if r.kind == weft_compiler::outline::RefKind::UseItem {
            let module = r.context.strip_prefix("std::").unwrap_or("");
            let detail = Stdlib::items(module)
                .into_iter()
                .find(|s| s.name == r.name)
                .map(|s| s.detail)
                .unwrap_or_default();
            out.push(item(&r.name, CompletionItemKind::FUNCTION, &detail));
        }
    }
    if let Some(f) = doc.fabric() {
        for n in f
            .nodes()
            .iter()
            .filter(|n| n.name().starts_with(typed))
            .take(MAX_NODES)
        {
            let kind = if n.is_switch() { "switch" } else { "end node" };
            out.push(item(n.name(), CompletionItemKind::VALUE, kind));
        }
    }
}

/// After `use std::` (modules) or `use std::MODULE::` (its items).
fn use_items(rest: &str) -> Vec<CompletionItem> {
    let path: Vec<&str> = rest.split("::").map(str::trim).collect();
    match path.as_slice() {
        [_] => vec![item(
            "std",
            CompletionItemKind::MODULE,
            "the standard library",
        )],
        [_, _] => weft_compiler::outline::stdlib_modules()
            .iter()
            .map(|m| item(m, CompletionItemKind::MODULE, ""))
            .collect(),
        [_, module, ..] => Stdlib::items(module)
            .into_iter()
            .map(|s| {
                let kind = if s.kind == SymbolKind::Model {
                    CompletionItemKind::STRUCT
                } else {
                    CompletionItemKind::FUNCTION
                };
                item(&s.name, kind, &s.detail)
            })
            .collect(),
        [] => Vec::new(),
    }
}

/// The words attribute `attr` takes, when it takes words.
fn values_of(attr: &str) -> Option<Vec<CompletionItem>> {
    let words: Vec<&str> = match attr {
        "engine" => weft_compiler::ENGINES.to_vec(),
        "speed" => weft_fabric::Speed::ALL.iter().map(|s| s.as_str()).collect(),
        "role" => vec!["host", "aggregation", "storage", "management"],
        "priority" => vec!["high", "low"],
        "lanes" => vec!["single", "dftree", "vftree"],
        "members" => vec!["limited", "full", "all"],
        "switch_to_switch" => vec!["sftree"],
        "lids" => vec!["dynamic", "prepopulated"],
        _ => return None,
    };
    Some(
        words
            .into_iter()
            .map(|w| item(w, CompletionItemKind::ENUM_MEMBER, attr))
            .collect(),
    )
}

/// The whole document, formatted; `None` when it has syntax errors (nothing to change).
pub(crate) fn format(doc: &Document) -> Option<Vec<TextEdit>> {
    let source = weft_compiler::diagnostic::SourceId(0);
    let formatted = weft_compiler::fmt::format(&doc.text, source).ok()?;
    if formatted == doc.text {
        return Some(Vec::new());
    }
    let end = doc.index.position(&doc.text, doc.text.len());
    Some(vec![TextEdit::new(
        Range::new(Position::new(0, 0), end),
        formatted,
    )])
}

fn action(
    doc: &Document,
    title: String,
    edits: Vec<TextEdit>,
    d: Option<&LspDiagnostic>,
) -> CodeActionOrCommand {
    let mut changes = HashMap::new();
    changes.insert(doc.uri.clone(), edits);
    CodeActionOrCommand::CodeAction(CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: d.map(|d| vec![d.clone()]),
        edit: Some(WorkspaceEdit::new(changes)),
        is_preferred: Some(true),
        ..CodeAction::default()
    })
}

/// The text between the first pair of backticks after `marker` in `s`.
fn quoted_after<'a>(s: &'a str, marker: &str) -> Option<&'a str> {
    let rest = s.get(s.find(marker)? + marker.len()..)?;
    let start = rest.find('`')? + 1;
    let len = rest.get(start..)?.find('`')?;
    rest.get(start..start + len)
}

/// Quick fixes for the diagnostics in `range`: `..` → `..=` for a node range that leaves
/// out its end, the suggested name for an unknown one, and `sm on …` for a fabric with
/// tenants that does not say where the subnet manager runs.
pub(crate) fn actions(doc: &Document, range: Range) -> Vec<CodeActionOrCommand> {
    let mut out = Vec::new();
    let overlaps = |r: Range| r.start.line <= range.end.line && range.start.line <= r.end.line;
    for d in doc.diagnostics().iter().filter(|d| overlaps(d.range)) {
        let code = match &d.code {
            Some(NumberOrString::String(c)) => c.as_str(),
            _ => continue,
        };
        let start = doc.index.offset(&doc.text, d.range.start);
        let end = doc.index.offset(&doc.text, d.range.end);
        let here = doc.text.get(start..end).unwrap_or("");
        if code == "weft::exclusive_node_range" {
            if let Some(i) = here.find("..") {
                let at = doc.index.position(&doc.text, start + i + 2);
                let edit = TextEdit::new(Range::new(at, at), "=".into());
                out.push(action(
                    doc,
                    "include the end: `..=`".into(),
                    vec![edit],
                    Some(d),
                ));
            }
        } else if let Some(name) = quoted_after(&d.message, "did you mean") {
            let name = name.strip_prefix("std::").unwrap_or(name);
            let word_len = here
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(here.len());
            let end = doc.index.position(&doc.text, start + word_len);
            let edit = TextEdit::new(Range::new(d.range.start, end), name.to_owned());
            out.push(action(
                doc,
                format!("replace with `{name}`"),
                vec![edit],
                Some(d),
            ));
        }
    }
    if let Some(a) = sm_on(doc) {
        out.push(a);
    }
    out
}

/// `sm on HOST` at the end of a fabric with tenants and no `sm`.
fn sm_on(doc: &Document) -> Option<CodeActionOrCommand> {
    let e = doc.compilation.as_ref()?.elaborated.as_ref()?;
    if e.config.tenants.is_empty() || !e.config.sm.is_empty() {
        return None;
    }
    let host = e.config.tenants.iter().flat_map(|t| t.members()).next()?;
    let name = e.fabric.node(host).name();
    let fabric = doc
        .outline
        .symbols
        .iter()
        .find(|s| s.kind == SymbolKind::Fabric)?;
    let close = (fabric.span.end as usize).checked_sub(1)?;
    if doc.text.get(close..=close) != Some("}") {
        return None;
    }
    let line_start = doc.text.get(..close)?.rfind('\n').map_or(0, |n| n + 1);
    let at = doc.index.position(&doc.text, line_start);
    let edit = TextEdit::new(Range::new(at, at), format!("    sm on {name}\n"));
    Some(action(
        doc,
        format!("say where the subnet manager runs: `sm on {name}`"),
        vec![edit],
        None,
    ))
}
