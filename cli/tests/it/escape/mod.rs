//! Hostile names (markup, quotes, `&`, control characters, YAML 1.1 scalars, Slurm host-list
//! syntax, a leading `-`, spaces, non-ASCII) through every format weft writes them in: each
//! is read back by a real parser as the same string, or refused with a finding, or — where
//! the format cannot carry it — sanitized, never written raw. Here: json (serde_json),
//! graphml (Python's XML parser), dot (Graphviz's `dot`), topology.yaml (PyYAML),
//! topology.conf (Slurm's host-list rules), ibnetdiscover (weft's own reader) and the report
//! page (Python's HTML parser); [`sarif`]: SARIF (serde_json); [`opensm`]: `partitions.conf`
//! and `qos-policy.conf` (OpenSM's grammars). Needs `python3` with `yaml` and `dot`.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

mod opensm;
mod sarif;

use crate::support::weft;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// A fresh directory for one test.
fn scratch(test: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("escape-{test}"))
}

/// Hostile names: markup, quotes, `&`, control characters, YAML 1.1 scalars, Slurm host-list
/// syntax, a leading `-`, spaces, non-ASCII. Written in a `.weft` string (its escapes: `\"`,
/// `\\`, `\n`, `\t`), so none holds `{`, `}` (a name format's) or NUL.
const HOSTILE: &[&str] = &[
    "<script>alert(1)</script>",
    "a\"b'c",
    "a&b&amp;",
    "line\nbreak",
    "tab\there",
    "cr\rret",
    "yes",
    "no",
    "on",
    "off",
    "1e3",
    "~",
    "null",
    "0x10",
    "2001-12-14",
    "1:20",
    "a[1-3],b",
    "-lead",
    "sp ace",
    "#hash",
    "a: b",
    "ünï-名前",
    "back\\slash",
    "--comment",
];

/// A hostile name of `seed`: one of [`HOSTILE`], or two joined (SplitMix64, so the same
/// names every run).
fn hostile(seed: u64) -> String {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = z;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    };
    let n = HOSTILE.len() as u64;
    if seed < n {
        return HOSTILE[seed as usize].to_owned();
    }
    let a = HOSTILE[(next() % n) as usize];
    let b = HOSTILE[(next() % n) as usize];
    format!("{a}{b}")
}

/// `s` as a `.weft` string literal's body.
fn weft_str(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

/// Runs a Python program on `input` and returns its stdout, which must succeed.
fn python(script: &str, input: &str, dir: &Path) -> Result<String, String> {
    let f = dir.join("py.in");
    std::fs::write(&f, input).unwrap();
    let out = Command::new("python3")
        .args(["-c", script, f.to_str().unwrap()])
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A Slurm host list as Slurm expands it; a list it cannot expand reads as no host.
fn hosts(list: &str) -> Vec<String> {
    let l = list.to_owned();
    std::panic::catch_unwind(move || crate::support::expand(&l)).unwrap_or_default()
}

/// Every string value under a `"name"` or `"host"` key in `v`.
fn json_names(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                if let (true, serde_json::Value::String(s)) = (k == "name" || k == "host", v) {
                    out.insert(s.clone());
                }
                json_names(v, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| json_names(v, out)),
        _ => {}
    }
}

/// What one format made of a hostile name: read back (the names found) or refused at export.
fn read_back(format: &str, file: &Path, dir: &Path) -> Result<BTreeSet<String>, String> {
    let out = if format == "html" {
        weft(&["report", file.to_str().unwrap(), "--format", "html"])
    } else {
        weft(&["export", file.to_str().unwrap(), "--format", format])
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // The page draws whatever it is given: it refuses no name.
    assert!(
        format != "html" || out.status.success(),
        "report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        // Refused: with a clear error, not a crash.
        assert!(
            out.status.code() == Some(1) && !stderr.contains("panicked"),
            "{format}: {stderr}"
        );
        return Err(stderr);
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let lines = |s: String| -> BTreeSet<String> {
        s.split('\0')
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let parsed = match format {
        "json" => {
            let mut names = BTreeSet::new();
            json_names(&serde_json::from_str(&text).unwrap(), &mut names);
            return Ok(names);
        }
        "graphml" => python(
            "import sys, xml.etree.ElementTree as E\nfor d in E.parse(sys.argv[1]).iter('{http://graphml.graphdrawing.org/xmlns}data'):\n    if d.get('key') in ('name', 'host'):\n        sys.stdout.write((d.text or '') + '\\0')\n",
            &text,
            dir,
        ),
        // Every text run and attribute value, by Python's HTML parser; a `<script>` element
        // the page did not write is a failure.
        "html" => python(
            "import sys, html.parser\nclass P(html.parser.HTMLParser):\n    def handle_starttag(self, tag, attrs):\n        self.tag = tag\n        for _, v in attrs:\n            sys.stdout.write((v or '') + '\\0')\n    def handle_data(self, d):\n        if getattr(self, 'tag', '') == 'script' and 'alert(1)' in d:\n            raise SystemExit('a script ran: ' + d)\n        sys.stdout.write(d + '\\0')\nP().feed(open(sys.argv[1], encoding='utf-8').read())\n",
            &text,
            dir,
        ),
        "slurm-yaml" => python(
            "import sys, yaml\nfor s in yaml.safe_load(open(sys.argv[1]))[0]['tree']['switches']:\n    sys.stdout.write('S' + str(s['switch']) + '\\0N' + str(s.get('nodes')) + '\\0')\n",
            &text,
            dir,
        ),
        "slurm-tree" => Ok(text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .flat_map(|l| l.split(' '))
            .filter_map(|w| w.split_once('='))
            .flat_map(|(k, v)| {
                if k == "SwitchName" {
                    vec![v.to_owned()]
                } else {
                    hosts(v)
                }
            })
            .map(|v| format!("{v}\0"))
            .collect()),
        "dot" => {
            let input = dir.join("in.dot");
            std::fs::write(&input, &text).unwrap();
            let out = Command::new("dot")
                .args(["-Tjson", input.to_str().unwrap()])
                .output()
                .unwrap();
            if out.status.success() {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let mut names = BTreeSet::new();
                json_names(&v, &mut names);
                return Ok(names);
            }
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
        "ibnetdiscover" => {
            std::fs::write(dir.join("back.ibnetdiscover"), &text).unwrap();
            let f = dir.join("back.weft");
            std::fs::write(
                &f,
                "fabric back {\n    topology = import(\"back.ibnetdiscover\")\n}\n",
            )
            .unwrap();
            let out = weft(&["export", f.to_str().unwrap(), "--format", "json"]);
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into_owned());
            }
            let mut names = BTreeSet::new();
            json_names(&serde_json::from_slice(&out.stdout).unwrap(), &mut names);
            return Ok(names);
        }
        other => panic!("{other}"),
    };
    let mut names = lines(parsed.unwrap_or_else(|e| {
        panic!("{format} written for a hostile name does not parse: {e}\n{text}")
    }));
    if format == "slurm-yaml" {
        // `nodes` is a host list: what Slurm reads is its expansion.
        names = names
            .iter()
            .flat_map(|n| match n.split_at(1) {
                ("N", list) => hosts(list),
                (_, switch) => vec![switch.to_owned()],
            })
            .collect();
    }
    Ok(names)
}

/// Hostile node and host names through every format `weft export` writes: each reads back,
/// with a real parser, as the same string — or the export refuses it.
#[test]
fn hostile_names_read_back_as_written_in_every_export_format() {
    let d = scratch("hostile");
    let mut failures = Vec::new();
    let mut compiled = 0;
    for seed in 0..(HOSTILE.len() as u64 + 16) {
        let name = hostile(seed);
        // The name on the switch, then on the host (an HCA named alike: its host).
        for (sw, hca) in [(name.as_str(), "hca1"), ("sw1", name.as_str())] {
            let f = d.join("h.weft");
            std::fs::write(
            &f,
            format!(
                "use std::hardware::{{sb7800, connectx5}}\nfabric f {{\n    topology {{\n        switch \"{s}\" : sb7800\n        hca \"{h}\" : connectx5\n        link \"{h}\".p[1] <-> \"{s}\".p[1]\n    }}\n}}\n",
                s = weft_str(sw),
                h = weft_str(hca)
            ),
        )
        .unwrap();
            let check = weft(&["check", f.to_str().unwrap()]);
            if !check.status.success() {
                // Refused by the compiler: with a finding, not a crash.
                let err = String::from_utf8_lossy(&check.stderr);
                assert!(
                    check.status.code() == Some(1) && !err.contains("panicked"),
                    "{name:?}: {err}"
                );
                continue;
            }
            compiled += 1;
            for format in [
                "html",
                "json",
                "graphml",
                "dot",
                "slurm-yaml",
                "slurm-tree",
                "ibnetdiscover",
            ] {
                if format == "html" && sw != name {
                    continue;
                }
                match read_back(format, &f, &d) {
                    Ok(names) if names.contains(&name) => {}
                    // The scheduler tree names switches for Slurm by design (`sched_tree`:
                    // each character Slurm cannot read becomes `_`); hosts keep their names.
                    Ok(names)
                        if format.starts_with("slurm")
                            && sw == name
                            && names.contains(&name.replace(
                                |c: char| c.is_whitespace() || "[],".contains(c),
                                "_",
                            )) => {}
                    Ok(names) if format == "html" && names.iter().any(|t| t.contains(&name)) => {}
                    Ok(names) => {
                        failures.push(format!("{format}: {name:?} read back as {names:?}"))
                    }
                    Err(_) => {}
                }
            }
        }
    }
    // Most names compile: the formats saw them.
    assert!(compiled >= 40, "only {compiled} fabrics compiled");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(d);
}
