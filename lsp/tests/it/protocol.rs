//! Every request of the protocol on one sample, answers snapshotted: initialize,
//! didOpen/didChange diagnostics (with UTF-16 columns), the proof on save with its progress,
//! hover, definition (into the standard library), references, rename, completion,
//! formatting, the outline and quick fixes.

use crate::{shown, Client};
use serde_json::{json, Value};

const URI: &str = "file:///work/sample.weft";

/// The sample: a template, items of the standard library, a tenant whose host range leaves
/// out its end, and no `sm on`.
pub(crate) const SAMPLE: &str = include_str!("../../../tests/fixtures/lsp/sample.weft");

/// The position of the `nth` (0-based) occurrence of `needle` in `text`, plus `plus` columns
/// (ASCII lines only).
fn at(text: &str, needle: &str, nth: usize, plus: u32) -> Value {
    let offset = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("`{needle}` #{nth} in the sample"))
        .0;
    let line = text[..offset].matches('\n').count();
    let col = offset - text[..offset].rfind('\n').map_or(0, |n| n + 1);
    json!({ "line": line, "character": col as u32 + plus })
}

fn pos(text: &str, needle: &str, nth: usize) -> Value {
    json!({ "textDocument": { "uri": URI }, "position": at(text, needle, nth, 1) })
}

#[test]
fn initialize_advertises_what_is_served() {
    let (c, init) = Client::start();
    insta::assert_snapshot!(shown(&init));
    c.stop();
}

#[test]
fn diagnostics_on_open_and_change_at_utf16_columns() {
    let (mut c, _) = Client::start();
    let d = c.open(URI, SAMPLE);
    insta::assert_snapshot!("open", shown(&d));
    // A typo in a model's name, and a wrong value after characters of 4 and 2 bytes (2 and
    // 1 UTF-16 units) on the same line.
    let changed = SAMPLE.replace("spine : sb7800", "spine : sb780").replace(
        "    switch spine",
        "    hca \"𝄞é\" : connectx5 { rail = nope }\n    switch spine",
    );
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 },
                "contentChanges": [{ "text": changed }] }),
    );
    let d = c.wait_for("textDocument/publishDiagnostics", |p| p["version"] == 2);
    insta::assert_snapshot!("change", shown(&d));
    let nope = d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("rail number"))
        .expect("`nope` is no rail");
    // `    hca "` is 9 units, `𝄞` 2, `é` 1, `" : connectx5 { rail = ` 23: `nope` starts at 35
    // (38 in bytes).
    assert_eq!(nope["range"]["start"]["character"], 35, "{nope}");
    assert_eq!(nope["range"]["end"]["character"], 39, "{nope}");
    c.stop();
}

#[test]
fn proof_on_save_reports_progress_and_places_findings() {
    let (mut c, _) = Client::start();
    c.open(URI, SAMPLE);
    c.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": URI } }),
    );
    let d = c.wait_for("textDocument/publishDiagnostics", |p| {
        p["diagnostics"]
            .as_array()
            .is_some_and(|a| a.iter().any(|d| d["code"] == "weft::partition_breach"))
    });
    insta::assert_snapshot!("proof", shown(&d));
    let begin = c.wait_for("$/progress", |p| p["value"]["kind"] == "begin");
    let end = c.wait_for("$/progress", |p| p["value"]["kind"] == "end");
    assert_eq!(begin["token"], end["token"]);
    assert_eq!(end["value"]["message"], "done");
    // Once built, a node's hover has its LID and the engine.
    let h = c.request("textDocument/hover", pos(SAMPLE, "spine.p", 0));
    let text = h["contents"]["value"].as_str().unwrap();
    assert!(text.contains("- LID: "), "{text}");
    assert!(text.contains("- engine: updn"), "{text}");
    c.stop();
}

#[test]
fn hover_definition_references_rename() {
    let (mut c, _) = Client::start();
    c.open(URI, SAMPLE);
    let mut out = Vec::new();
    for (what, needle, nth) in [
        ("a node", "spine.p", 0),
        ("a template", "pair(hosts: 2", 0),
        ("a model of the standard library", "sb7800 {", 0),
        ("an attribute", "engine", 0),
        ("a tenant's host", "cn11", 0),
    ] {
        let h = c.request("textDocument/hover", pos(SAMPLE, needle, nth));
        out.push(format!(
            "hover on {what} (`{needle}`):\n{}",
            h["contents"]["value"].as_str().unwrap_or("null")
        ));
    }
    for (what, needle) in [
        ("a template", "pair(hosts: 2"),
        ("a model, into the standard library", "sb7800 {"),
        ("a module", "hardware"),
    ] {
        let d = c.request("textDocument/definition", pos(SAMPLE, needle, 0));
        out.push(format!("definition of {what} (`{needle}`):\n{}", shown(&d)));
    }
    let r = c.request(
        "textDocument/references",
        json!({ "textDocument": { "uri": URI }, "position": at(SAMPLE, "spine :", 0, 1),
                "context": { "includeDeclaration": true } }),
    );
    out.push(format!("references of `spine`:\n{}", shown(&r)));
    let e = c.request(
        "textDocument/rename",
        json!({ "textDocument": { "uri": URI }, "position": at(SAMPLE, "pair(", 0, 1), "newName": "two" }),
    );
    out.push(format!("rename `pair` to `two`:\n{}", shown(&e)));
    let refused = c.request(
        "textDocument/rename",
        json!({ "textDocument": { "uri": URI }, "position": at(SAMPLE, "hosts =", 0, 1), "newName": "x" }),
    );
    out.push(format!("rename an attribute:\n{}", shown(&refused)));
    insta::assert_snapshot!(out.join("\n\n"));
    c.stop();
}

fn labels(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|i| i["label"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn completion_in_context() {
    let (mut c, _) = Client::start();
    let text = SAMPLE.replace("engine = updn", "engine = ").replace(
        "use std::hardware::{sb7800, connectx5}\n",
        "use std::hardware::{sb7800, connectx5}\nuse std::\nuse std::topology::\n",
    );
    c.open(URI, &text);
    let req = |line_of: &str, plus: u32| json!({ "textDocument": { "uri": URI }, "position": at(&text, line_of, 0, plus) });
    let mut out = Vec::new();
    for (what, needle, plus) in [
        ("an engine", "engine = ", 9),
        ("a module", "use std::\n", 9),
        ("an item of std::topology", "use std::topology::", 19),
        ("in a routing section", "routing { ", 10),
        ("a node name", "hosts = cn11", 10),
    ] {
        let v = c.request("textDocument/completion", req(needle, plus));
        let mut l = labels(&v);
        l.truncate(40);
        out.push(format!("{what}: {}", l.join(" ")));
    }
    insta::assert_snapshot!(out.join("\n"));
    c.stop();
}

#[test]
fn formatting_symbols_and_quick_fixes() {
    let (mut c, _) = Client::start();
    let messy = SAMPLE.replace("    routing { engine = updn }", "routing {engine=updn}");
    c.open(URI, &messy);
    let f = c.request(
        "textDocument/formatting",
        json!({ "textDocument": { "uri": URI }, "options": { "tabSize": 4, "insertSpaces": true } }),
    );
    assert_eq!(
        f[0]["newText"].as_str(),
        Some(SAMPLE),
        "formatted as `weft fmt` does"
    );
    let s = c.request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": URI } }),
    );
    let line = at(&messy, "cn11..cn12", 0, 0)["line"].clone();
    let a = c.request(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": URI },
                "range": { "start": { "line": line, "character": 0 }, "end": { "line": line, "character": 0 } },
                "context": { "diagnostics": [] } }),
    );
    // The typo's fix: the nearest name.
    let typo = SAMPLE.replace("spine : sb7800", "spine : sb780");
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [{ "text": typo }] }),
    );
    c.wait_for("textDocument/publishDiagnostics", |p| p["version"] == 2);
    let tline = at(&typo, "sb780 ", 0, 0)["line"].clone();
    let t = c.request(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": URI },
                "range": { "start": { "line": tline, "character": 0 }, "end": { "line": tline, "character": 0 } },
                "context": { "diagnostics": [] } }),
    );
    insta::assert_snapshot!(format!(
        "symbols:\n{}\n\nactions on the tenant's line:\n{}\n\nactions on the typo's line:\n{}",
        shown(&s),
        shown(&a),
        shown(&t)
    ));
    c.stop();
}

#[test]
fn unknown_requests_and_closed_documents_are_errors_not_failures() {
    let (mut c, _) = Client::start();
    let e = c.request("weft/nothing", json!({}));
    assert_eq!(e["error"]["code"], -32601, "{e}");
    let e = c.request("textDocument/hover", pos(SAMPLE, "spine", 0));
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let e = c.request("textDocument/hover", json!({ "bad": true }));
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let s = c.request(
        "weft/stdlib",
        json!({ "uri": format!("file://{}/stdlib/hardware.weft", crate::root().display()) }),
    );
    assert!(s["text"].as_str().unwrap().contains("model sb7800"), "{s}");
    c.stop();
}

/// Completion from the fabric: a node's ports after `NODE.` (with the count, and the free
/// runs of that node), the valid range inside `NODE.p[`, and host lists where hosts are
/// named. The text being typed does not build; the last fabric that did answers.
#[test]
fn completion_of_ports_and_host_lists() {
    let (mut c, _) = Client::start();
    c.open(URI, SAMPLE);
    let text = SAMPLE
        .replace(
            "    switch leaf[1..=2] : sb7800 { level = 1 }\n",
            "    switch leaf[1..=2] : sb7800 { level = 1 }\n    link spine.\n",
        )
        .replace(
            "hosts = cn11..cn12 }",
            "hosts =  }\n    multicast {\n        group g { mlid = 0xc001, members = [cn11,  }\n    }",
        );
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [{ "text": text }] }),
    );
    c.wait_for("textDocument/publishDiagnostics", |p| p["version"] == 2);
    let mut out = Vec::new();
    for (what, needle, plus) in [
        ("after a switch and a dot", "link spine.", 11),
        ("inside `p[` of a node array", "leaf[l].p[", 10),
        ("a tenant's hosts", "hosts =  }", 8),
        ("a multicast group's members", "members = [cn11, ", 17),
    ] {
        let v = c.request(
            "textDocument/completion",
            json!({ "textDocument": { "uri": URI }, "position": at(&text, needle, 0, plus) }),
        );
        let items: Vec<String> = v
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|i| {
                        format!(
                            "  {} ({})",
                            i["label"].as_str().unwrap_or(""),
                            i["detail"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(format!("{what}:\n{}", items.join("\n")));
    }
    insta::assert_snapshot!(out.join("\n"));
    c.stop();
}
