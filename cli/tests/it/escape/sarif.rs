//! SARIF (`weft check --format sarif`): a hostile name on a node left without links comes back,
//! read by serde_json, in the finding's message and at its location — the region of the
//! source the finding points at is the name's string literal.

use super::{hostile, scratch, weft_str, HOSTILE};
use crate::support::weft;
use serde_json::Value;

/// The line of [`source`] that declares the hostile node (1-based).
const LINE: usize = 6;

/// A fabric with one cabled host and a host named `name` without links (a warning that
/// names it), declared on line [`LINE`].
fn source(name: &str) -> String {
    format!(
        "use std::hardware::{{sb7800, connectx5}}\nfabric f {{\n    topology {{\n        switch \"s\" : sb7800\n        hca \"h\" : connectx5\n        hca \"{}\" : connectx5\n        link \"h\".p[1] <-> \"s\".p[1]\n    }}\n}}\n",
        weft_str(name)
    )
}

/// What is wrong with the SARIF log `out` for the node named `name` declared in `src`, if
/// anything.
fn check_log(name: &str, src: &str, out: &[u8]) -> Result<(), String> {
    let log: Value = serde_json::from_slice(out)
        .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(out)))?;
    let results = log["runs"][0]["results"]
        .as_array()
        .ok_or("no results array")?;
    let line: Vec<char> = src
        .lines()
        .nth(LINE - 1)
        .ok_or("no line")?
        .chars()
        .collect();
    let literal = format!("\"{}\"", weft_str(name));
    let mut warned = false;
    for r in results {
        let region = &r["locations"][0]["physicalLocation"]["region"];
        if region["startLine"].as_u64() != Some(LINE as u64) {
            continue;
        }
        // The location: SARIF columns (1-based, the end one past the region; code points
        // here, where every character is in the BMP) around the name's literal.
        let col = |k: &str| region[k].as_u64().and_then(|c| usize::try_from(c).ok());
        let (Some(start), Some(end)) = (col("startColumn"), col("endColumn")) else {
            return Err(format!("no columns: {region}"));
        };
        let at: String = line
            .get(start.saturating_sub(1)..end.saturating_sub(1))
            .unwrap_or_default()
            .iter()
            .collect();
        if at != literal {
            return Err(format!("the region reads {at:?}, not {literal:?}"));
        }
        // The message: the name as written; a refusal may quote it with Rust's escapes.
        let text = r["message"]["text"].as_str().unwrap_or_default();
        let as_written = text.contains(&format!("`{name}`"));
        if r["ruleId"] == "weft::unconnected_node" {
            warned |= as_written;
        } else if !as_written && !text.contains(&format!("`{}`", name.escape_debug())) {
            return Err(format!("{} does not name it: {text:?}", r["ruleId"]));
        }
    }
    if warned {
        Ok(())
    } else {
        Err(format!(
            "no `weft::unconnected_node` naming it: {results:?}"
        ))
    }
}

/// Each hostile name reads back from the SARIF log: as written in the message of the warning
/// about its node (and, Rust-escaped, in a refusal of the name), and as its literal at the
/// location the findings give.
#[test]
fn hostile_names_read_back_from_the_sarif_message_and_location() {
    let d = scratch("sarif");
    let mut failures = Vec::new();
    for seed in 0..(HOSTILE.len() as u64 + 16) {
        let name = hostile(seed);
        let src = source(&name);
        let f = d.join("s.weft");
        std::fs::write(&f, &src).unwrap();
        let out = weft(&["check", f.to_str().unwrap(), "--format", "sarif"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A warning (exit 0) or a refused name (exit 1), never a crash.
        assert!(
            matches!(out.status.code(), Some(0 | 1)) && !stderr.contains("panicked"),
            "{name:?}: {stderr}"
        );
        if let Err(e) = check_log(&name, &src, &out.stdout) {
            failures.push(format!("sarif: {name:?}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
