//! Completion from the elaborated fabric: a node's ports after `leaf1.` and inside
//! `leaf1.p[`, and host lists (`cn[001-036]`, as `weft export` writes them) where the
//! language takes hosts.

use super::item;
use lsp_types::{CompletionItem, CompletionItemKind};
use std::collections::BTreeMap;
use weft_fabric::{Fabric, Node};

/// Port runs and host groups offered at most.
const MAX_FORMS: usize = 200;

/// The node the expression at the end of `text` names: `leaf1`, `leaf[1]` (the node
/// `leaf1`), or `leaf[l]` (the first node of the array `leaf`, a model for all of them;
/// `exact` is then false).
fn node_at_end<'f>(f: &'f Fabric, text: &str) -> Option<(&'f Node, bool)> {
    let start = text
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_ascii_alphanumeric() || matches!(c, '_' | '[' | ']'))
        .last()
        .map(|(i, _)| i)?;
    let expr = text.get(start..)?;
    if let Some(id) = f.find(expr) {
        return Some((f.node(id), true));
    }
    let (name, rest) = expr.split_once('[')?;
    let idx = rest.strip_suffix(']')?;
    if !idx.is_empty() && idx.bytes().all(|b| b.is_ascii_digit()) {
        return f.find(&format!("{name}{idx}")).map(|id| (f.node(id), true));
    }
    f.nodes()
        .iter()
        .find(|n| {
            n.name()
                .strip_prefix(name)
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|n| (n, false))
}

/// `a..=b` (or `a`).
fn run(lo: u8, hi: u8) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}..={hi}")
    }
}

/// The runs of ports with no cable.
fn free_runs(n: &Node) -> Vec<(u8, u8)> {
    let mut runs: Vec<(u8, u8)> = Vec::new();
    for p in n.ports.iter().filter(|p| p.link.is_none()) {
        let k = p.num.0;
        match runs.last_mut() {
            Some((_, hi)) if hi.checked_add(1) == Some(k) => *hi = k,
            _ => runs.push((k, k)),
        }
    }
    runs
}

/// Port forms after `NODE.` (`p[1..=36]`, and the free runs of that node) or the port
/// ranges inside `NODE.p[`; `None` when `before` (the line up to the word being typed) ends
/// in neither after a node of `f`.
pub(crate) fn ports(f: &Fabric, before: &str) -> Option<Vec<CompletionItem>> {
    let (head, inside) = match before.strip_suffix(".p[") {
        Some(h) => (h, true),
        None => (before.strip_suffix('.')?, false),
    };
    let (n, exact) = node_at_end(f, head)?;
    let count = n.spec.port_count;
    if count == 0 {
        return None;
    }
    let whose = if exact {
        format!("`{}`", n.name())
    } else {
        format!("each node like `{}`", n.name())
    };
    let model = n
        .spec
        .model
        .as_ref()
        .map_or(String::new(), |m| format!(", model `{m}`"));
    let form = |r: String| if inside { r } else { format!("p[{r}]") };
    let mut out = vec![item(
        &form(run(1, count)),
        CompletionItemKind::FIELD,
        &format!("{count} ports: {whose}{model}"),
    )];
    if exact {
        let runs = free_runs(n);
        let free: usize = runs.iter().map(|&(a, b)| usize::from(b - a) + 1).sum();
        if free < usize::from(count) {
            for &(a, b) in runs.iter().take(MAX_FORMS) {
                out.push(item(
                    &form(run(a, b)),
                    CompletionItemKind::FIELD,
                    &format!("free: {free} of {count} ports uncabled"),
                ));
            }
        }
    }
    Some(out)
}

/// Whether the word being typed after `before` (the line up to it) is in a host list:
/// `hosts = `, `send_only = `, a group's `members = ` (also inside `[…, `), `vms on `,
/// `vm NAME on `. `context` is the keyword of the enclosing section.
pub(crate) fn takes_hosts(before: &str, context: &str) -> bool {
    let listed = |rest: &str| {
        rest.chars()
            .all(|c| c.is_ascii_alphanumeric() || c.is_whitespace() || "_-[],".contains(c))
    };
    if let Some(eq) = before.rfind('=') {
        let lhs = before.get(..eq).unwrap_or("");
        let rest = before.get(eq + 1..).unwrap_or("");
        if lhs.ends_with(['=', '<', '>', '!', '.']) || !listed(rest) {
            return false;
        }
        let attr = lhs
            .trim_end()
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        return matches!(attr, "hosts" | "send_only") || (attr == "members" && context == "group");
    }
    let first = before.split_whitespace().next().unwrap_or("");
    if !matches!(first, "vms" | "vm") {
        return false;
    }
    let padded = format!("{before} ");
    padded
        .rfind(" on ")
        .and_then(|i| padded.get(i + 4..))
        .is_some_and(listed)
}

/// A name the language reads as one word (so as a host list's part).
fn plain(name: &str) -> bool {
    let mut c = name.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A host list that is one expression: `[a, b]` when the written list has parts at its top
/// level.
fn one_expr(list: String) -> String {
    let mut depth = 0i32;
    let mut out = String::with_capacity(list.len() + 2);
    let mut top_comma = false;
    for c in list.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                top_comma = true;
                out.push_str(", ");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    if top_comma {
        format!("[{out}]")
    } else {
        out
    }
}

/// The hosts of `f` as host lists, one per name prefix (`cn[001-036]`), then all of them
/// when there are several, then each name: hosts named by their machine (`host = …`), other
/// end nodes by their own name.
pub(crate) fn hosts(f: &Fabric) -> Vec<CompletionItem> {
    let mut names: Vec<&str> = Vec::new();
    for n in f.nodes().iter().filter(|n| !n.is_switch()) {
        let name = n.spec.host.as_deref().unwrap_or(n.name());
        if plain(name) {
            names.push(name);
        }
    }
    names.sort_by(|a, b| weft_formats::hostlist::natural_cmp(a, b));
    names.dedup();
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for &n in &names {
        let prefix = n.trim_end_matches(|c: char| c.is_ascii_digit());
        groups.entry(prefix).or_default().push(n);
    }
    let mut out = Vec::new();
    for g in groups.values().take(MAX_FORMS) {
        let hl = one_expr(weft_formats::hostlist::compress(g));
        out.push(item(
            &hl,
            CompletionItemKind::VALUE,
            &format!("host list: {} hosts", g.len()),
        ));
    }
    if groups.len() > 1 && groups.len() <= MAX_FORMS {
        let all = one_expr(weft_formats::hostlist::compress(&names));
        out.push(item(
            &all,
            CompletionItemKind::VALUE,
            &format!("host list: all {} hosts", names.len()),
        ));
    }
    for n in names.iter().take(MAX_FORMS) {
        out.push(item(n, CompletionItemKind::VALUE, "host"));
    }
    out
}
