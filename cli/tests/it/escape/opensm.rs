//! OpenSM's files: `partitions.conf` and `qos-policy.conf`, each read back by OpenSM's own
//! grammar (the facts of `osm_prtn_config.c` and of `osm_qos_parser_l.l` in
//! `linux-rdma/opensm`, written here afresh). A name either file cannot carry must be
//! sanitized — never written raw, never a line, a comment, a member or a rule of its own.
//!
//! Switch names reach `qos-policy.conf` through `weft build`. Tenant and class names are
//! `.weft` section names (`[A-Za-z_][A-Za-z0-9_.-]*`), so the hostile ones are put on a
//! compiled state in process and the writers run on it, as `weft build` runs them.

use super::{hostile, scratch, weft_str, HOSTILE};
use crate::support::weft;
use weft_fabric::FabricState;

/// A switch named `switch` with three hosts; tenants `alice` (class `compute`) and `bob`; QoS
/// classes `mgmt` (matched by service ID) and `compute`.
fn source(switch: &str) -> String {
    format!(
        "use std::hardware::{{sb7800, connectx5}}\nfabric f {{\n    topology {{\n        switch \"{s}\" : sb7800\n        hca \"h1\" : connectx5\n        hca \"h2\" : connectx5\n        hca \"h3\" : connectx5\n        link \"h1\".p[1] <-> \"{s}\".p[1]\n        link \"h2\".p[1] <-> \"{s}\".p[2]\n        link \"h3\".p[1] <-> \"{s}\".p[3]\n    }}\n    vls {{ budget = 4 }}\n    sm on \"h1\"\n    qos {{\n        class mgmt {{ vl = 0, weight = 16, priority = high, match {{ service_id = 0x1000..0x1100 }} }}\n        class compute {{ vl = 1, weight = 192 }}\n    }}\n    tenant alice {{ pkey = 0x8001, hosts = [\"h1\", \"h2\"], class = compute }}\n    tenant bob {{ pkey = 0x8002, hosts = [\"h3\"] }}\n}}\n",
        s = weft_str(switch)
    )
}

/// [`source`] with switch `s`, built in process.
fn built() -> weft_compiler::build::Built {
    let c = weft_compiler::check("t.weft", &source("s"), &weft_compiler::NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    weft_compiler::build::build(&c.elaborated.unwrap()).unwrap_or_else(|d| panic!("{d:?}"))
}

/// The names to try: every hostile one, and names only a partition meets (OpenSM's own
/// `Default`, one past 31 bytes, empty, padded, a header's syntax, a member's keywords).
fn names() -> Vec<String> {
    let extra = [
        "Default",
        "a-name-of-forty-bytes-for-opensm-to-cut",
        "",
        "  padded\t",
        "x=0x8003",
        "a;b",
        "a,ipoib",
        "ALL",
        "mgid",
        "9lives",
        "alice",
    ];
    (0..HOSTILE.len() as u64 + 16)
        .map(hostile)
        .chain(extra.iter().map(|s| (*s).to_owned()))
        .collect()
}

/// Spaces, tabs and newlines: what OpenSM's partition parser trims around a token.
const BLANKS: &[char] = &[' ', '\t', '\n'];

/// One partition as OpenSM reads it: its name, its key's low 15 bits, its members.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Part {
    name: String,
    key: u16,
    members: Vec<String>,
}

/// C's `strtoul(s, &end, 0)` that must take all of `s`: `0x` hex, a leading `0` octal, else
/// decimal.
fn strtoul(s: &str) -> Option<u64> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None if s.len() > 1 && s.starts_with('0') => (&s[1..], 8),
        None => (s, 10),
    };
    u64::from_str_radix(digits, radix).ok()
}

/// `partitions.conf` as OpenSM reads it. A line's code ends at `#`; a definition ends at `;`
/// and may run over lines; its header runs to the first `:` and its flags from the header's
/// first `,`; the name is the header's text before `=`, the key after it (all of it a
/// number); a name led by a digit with no `=` is the key; spaces, tabs and newlines around
/// each token are trimmed; a name keeps 31 bytes; members are the `,`-separated tokens after
/// the `:`, empty ones skipped.
fn read_partitions(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut open: Option<Part> = None;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let code = line.split('#').next().unwrap_or_default();
        let mut segments = code.split(';').peekable();
        while let Some(segment) = segments.next() {
            let ends = segments.peek().is_some();
            let mut body = segment;
            if open.is_none() {
                if segment.trim_matches(BLANKS).is_empty() && !ends {
                    continue;
                }
                let (head, rest) = segment
                    .split_once(':')
                    .ok_or(format!("line {}: no partition definition", n + 1))?;
                let head = head.split(',').next().unwrap_or_default();
                let (name, id) = match head.split_once('=') {
                    Some((name, id)) => (name.trim_matches(BLANKS), Some(id.trim_matches(BLANKS))),
                    None => (head.trim_matches(BLANKS), None),
                };
                let (name, id) = match id {
                    None if name.starts_with(|c: char| c.is_ascii_digit()) => ("", Some(name)),
                    _ => (name, id),
                };
                let key = match id {
                    Some(id) => strtoul(id).ok_or(format!("line {}: bad key {id:?}", n + 1))?,
                    None => 0,
                };
                let cut = &name.as_bytes()[..name.len().min(31)];
                open = Some(Part {
                    name: String::from_utf8_lossy(cut).into_owned(),
                    key: (key & 0x7fff) as u16,
                    members: Vec::new(),
                });
                body = rest;
            }
            let part = open.as_mut().ok_or("no open definition")?;
            part.members.extend(
                body.split(',')
                    .map(|m| m.trim_matches(BLANKS))
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned),
            );
            if ends {
                parts.extend(open.take());
            }
        }
    }
    match open {
        Some(p) => Err(format!("partition {:?} has no `;`", p.name)),
        None => Ok(parts),
    }
}

/// Whether `name` is one a `.weft` file can give a tenant and OpenSM keeps whole:
/// `[A-Za-z_][A-Za-z0-9_.-]*` in 31 bytes, not OpenSM's `Default`.
fn declarable(name: &str) -> bool {
    name.len() <= 31
        && name != "Default"
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// What is wrong with the `partitions.conf` written with both tenants named `name`, against
/// the one written with their own names (`plain`), if anything.
fn check_partitions(name: &str, text: &str, plain: &[Part]) -> Result<(), String> {
    let parts = read_partitions(text)?;
    // The same partitions, keys and members: the name added none and moved none.
    let shape = |p: &[Part]| -> Vec<(u16, Vec<String>)> {
        p.iter().map(|p| (p.key, p.members.clone())).collect()
    };
    if shape(&parts) != shape(plain) {
        return Err(format!("read as {parts:?}"));
    }
    for (i, p) in parts.iter().enumerate() {
        // Read whole: the header names it as OpenSM reads it (not trimmed, not cut).
        let header = |key: u16| format!("\n{}={key:#06x} :\n", p.name);
        if !text.contains(&header(p.key)) && !text.contains(&header(p.key | 0x8000)) {
            return Err(format!("{:?} is not the name written", p.name));
        }
        if parts[..i].iter().any(|q| q.name == p.name) {
            return Err(format!("two partitions named {:?}", p.name));
        }
    }
    if declarable(name) && parts.get(1).map(|p| p.name.as_str()) != Some(name) {
        return Err(format!("a declarable name not kept: {parts:?}"));
    }
    Ok(())
}

/// Hostile tenant names through `partitions.conf`: OpenSM's grammar reads the same partitions
/// (keys, members) as for ordinary names, each name whole and distinct from the others; a
/// name a `.weft` file can declare is kept as declared, any other is sanitized.
#[test]
fn hostile_partition_names_read_back_by_opensm_rules_or_sanitized() {
    let state = built().state.into_inner();
    let plain = read_partitions(&weft_formats::opensm::write_partitions(&state).unwrap()).unwrap();
    let declared: Vec<&str> = plain.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(declared, ["Default", "alice", "bob"], "{plain:?}");
    let mut failures = Vec::new();
    for name in names() {
        let mut s = state.clone();
        // Both tenants the same name: they must still be told apart.
        for p in &mut s.partitions {
            p.name.clone_from(&name);
        }
        let text = weft_formats::opensm::write_partitions(&s).unwrap();
        if let Err(e) = check_partitions(&name, &text, &plain) {
            failures.push(format!("partitions.conf: {name:?}: {e}\n{text}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A `qos-policy.conf` as OpenSM's lexer reads it: each `use:` line's text (the line after
/// `use`, blanks and `:`, up to a `#` — a comment to the end of the line — with trailing
/// blanks dropped), and the file with every such text replaced by `…` and comments dropped
/// (its skeleton). A `"` outside a comment opens quoted text that runs to the next one,
/// across lines: weft writes none.
fn read_policy(text: &str) -> Result<(Vec<String>, String), String> {
    let mut uses = Vec::new();
    let mut skeleton = String::new();
    for line in text.split('\n') {
        let code = line.split('#').next().unwrap_or_default();
        if code.contains('"') {
            return Err(format!("a quote: {line:?}"));
        }
        let body = code.trim_start_matches([' ', '\t']);
        let value = body
            .strip_prefix("use")
            .map(|r| r.trim_start_matches([' ', '\t']))
            .and_then(|r| r.strip_prefix(':'));
        match value {
            Some(v) => {
                uses.push(v.trim_matches([' ', '\t']).to_owned());
                skeleton.push_str(&code[..code.len() - body.len()]);
                skeleton.push_str("use: …\n");
            }
            None => {
                skeleton.push_str(code);
                skeleton.push('\n');
            }
        }
    }
    Ok((uses, skeleton))
}

/// Whether `read` is `written` sanitized: as many characters, each the same or `_`, and `_`
/// wherever `written` has one OpenSM's lexer reads as more than text (a line break, `#`,
/// `"`) or any other control character.
fn sanitized_from(read: &str, written: &str) -> bool {
    read.chars().count() == written.chars().count()
        && read.chars().zip(written.chars()).all(|(r, w)| {
            if w.is_control() || w == '#' || w == '"' {
                r == '_'
            } else {
                r == w || r == '_'
            }
        })
}

/// What is wrong with `text`, a policy whose `use:` texts were `written`, if anything: the
/// skeleton of the policy written with ordinary names, and each `use:` text as written,
/// sanitized.
fn check_policy(text: &str, skeleton: &str, written: &[String]) -> Result<(), String> {
    let (uses, read) = read_policy(text)?;
    if read != skeleton {
        return Err(format!("rules changed:\n{read}"));
    }
    for (u, w) in uses.iter().zip(written) {
        // Spaces the text ends with are the line's trailing blanks, which OpenSM drops.
        if !sanitized_from(u, w) && !sanitized_from(u, w.trim_end_matches(' ')) {
            return Err(format!("`use: {u}` for `use: {w}`"));
        }
    }
    Ok(())
}

/// Hostile tenant, class and fabric names through `qos-policy.conf`: OpenSM's lexer reads the
/// same rules as for ordinary names (no line, comment or rule of the name's own) and each
/// `use:` text as the name sanitized.
#[test]
fn hostile_tenant_and_class_names_in_the_qos_policy_are_sanitized() {
    let b = built();
    let state = b.state.state();
    let policy = |s: &FabricState, lanes: &weft_compiler::qos::LaneMap| {
        weft_compiler::qos::qos_policy(s, lanes, b.layers.as_ref()).unwrap()
    };
    let plain = read_policy(&policy(state, &b.lanes)).unwrap();
    assert_eq!(
        plain.0,
        ["s", "tenant alice (class compute)", "class mgmt"],
        "{}",
        plain.1
    );
    let mut failures = Vec::new();
    for name in names() {
        let mut s = state.clone();
        s.fabric.name.clone_from(&name);
        for p in &mut s.partitions {
            p.name.clone_from(&name);
            if let Some(c) = &mut p.class {
                c.name.clone_from(&name);
            }
        }
        let mut lanes = b.lanes.clone();
        for c in &mut lanes.classes {
            c.name.clone_from(&name);
        }
        let text = policy(&s, &lanes);
        let written = [
            "s".to_owned(),
            format!("tenant {name} (class {name})"),
            format!("class {name}"),
        ];
        if let Err(e) = check_policy(&text, &plain.1, &written) {
            failures.push(format!("qos-policy.conf: {name:?}: {e}\n{text}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Hostile switch names through `weft build`'s `qos-policy.conf` (its port group's `use:`):
/// the same rules as for an ordinary name, the text the name sanitized — or the name refused
/// by the compiler, with a finding.
#[test]
fn hostile_switch_names_in_the_built_qos_policy_are_sanitized() {
    let d = scratch("qos");
    let build = |switch: &str| -> Result<String, String> {
        let f = d.join("q.weft");
        std::fs::write(&f, source(switch)).unwrap();
        let out_dir = d.join("out");
        let _ = std::fs::remove_dir_all(&out_dir);
        let out = weft(&[
            "build",
            f.to_str().unwrap(),
            "-o",
            out_dir.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            assert!(
                out.status.code() == Some(1) && !stderr.contains("panicked"),
                "{switch:?}: {stderr}"
            );
            return Err(stderr);
        }
        Ok(std::fs::read_to_string(out_dir.join("qos-policy.conf")).unwrap())
    };
    let plain = read_policy(&build("s").unwrap()).unwrap();
    assert_eq!(
        plain.0.first().map(String::as_str),
        Some("s"),
        "{}",
        plain.1
    );
    let mut failures = Vec::new();
    let mut built = 0;
    for seed in 0..(HOSTILE.len() as u64 + 16) {
        let name = hostile(seed);
        let Ok(text) = build(&name) else { continue };
        built += 1;
        // Only the port group's `use:` names the switch.
        let mut written = plain.0.clone();
        written[0].clone_from(&name);
        let check = check_policy(&text, &plain.1, &written);
        if let Err(e) = check {
            failures.push(format!("qos-policy.conf: switch {name:?}: {e}\n{text}"));
        }
    }
    // Most names compile: the policy saw them.
    assert!(built >= 20, "only {built} fabrics built");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
