//! Every finding code weft reports, from each crate's registry, and their pages
//! (`docs/codes.md`, which `weft --explain CODE` prints from).

use weft_fabric::code::{CodeInfo, Status};

/// The registries, each with the part of weft that reports its codes.
pub const REGISTRIES: [(&str, &[CodeInfo]); 8] = [
    (
        "the state file reader (state.json)",
        weft_fabric::code::CODES,
    ),
    (
        "the readers of files (ibnetdiscover, plan, OpenSM dumps, cabling sheets)",
        weft_formats::CODES,
    ),
    ("the compiler", weft_compiler::code::CODES),
    ("the verifier", weft_verifier::CODES),
    ("the planner", weft_plan::CODES),
    ("the simulator", weft_traffic::CODES),
    (
        "the deploy backends (apply, audit, the OpenSM hand-off)",
        weft_deploy::CODES,
    ),
    ("the command line", CODES),
];

/// The codes the command line itself reports.
pub const CODES: &[CodeInfo] = &[
    CodeInfo::stable(
        "weft::input",
        "An input the command cannot use as given (an option naming no node, a file of the wrong kind).",
    ),
    CodeInfo::stable(
        "weft::dftree_no_lanes",
        "`weft dftree` on a fabric with no dFtree lanes: no pair of end ports has a slow lane to move a flow to (declare a class with `lanes = dftree`).",
    ),
    CodeInfo::stable(
        "weft::not_covered",
        "Ports `weft verify --topology` could not cover: the topology gives them no LID (not yet assigned by an SM), so no route to or from them was checked.",
    ),
    CodeInfo::stable(
        "weft::cable_miswired",
        "A cable of the design whose ends are not joined to each other, one or both joined to another port (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo::stable(
        "weft::cable_missing",
        "A cable of the design that is absent, both its ends free (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo::stable(
        "weft::cable_extra",
        "A cable between two ports the design leaves free (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo::stable(
        "weft::cable_speed",
        "A cable at another lane speed than the design's, where both record one (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo::stable(
        "weft::cable_width",
        "A cable at another width than the design's, where both record one (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo::stable(
        "weft::node_missing",
        "A node of the design that no node matches, by GUID, name or position as `--match` says (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo::stable(
        "weft::node_matched_by_position",
        "Note: a node of the design matched to a found node by its place in the graph, not by GUID or name (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo::stable(
        "weft::node_extra",
        "A node that matches no node of the design, by GUID, name or position as `--match` says (`weft diff`, `weft audit --expect`).",
    ),
    CodeInfo {
        code: "weft::engines_disagree",
        status: Status::Internal,
        summary: "The explicit and z3 engines reached different verdicts on one state (a bug in weft).",
    },
];

/// The page of every code, as `docs/codes.md` holds it.
pub const PAGE: &str = include_str!("../../docs/codes.md");

/// The registered code `code`, if any.
pub fn find(code: &str) -> Option<&'static CodeInfo> {
    REGISTRIES
        .iter()
        .flat_map(|(_, codes)| codes.iter())
        .find(|c| c.code == code)
}

/// What `code` means (a SARIF rule's description); a code no registry has is a bug the
/// registry test catches, and reads as such.
pub fn summary(code: &str) -> &'static str {
    find(code).map_or("An unregistered code (a bug in weft).", |c| c.summary)
}

/// The section of [`PAGE`] on `code` (its heading to the next code's anchor), if the code
/// is registered.
pub fn explain(code: &str) -> Option<String> {
    let info = find(code)?;
    let h = heading(info);
    let start = PAGE.find(&h)? + h.find("###").unwrap_or(0);
    let rest = &PAGE[start..];
    let end = rest[1..].find("\n<a id=").map_or(rest.len(), |e| e + 1);
    Some(rest[..end].trim_end().to_owned() + "\n")
}

/// A code's heading in [`PAGE`]: an anchor of its own (Markdown renderers drop `::`), then
/// the code.
fn heading(c: &CodeInfo) -> String {
    format!("<a id=\"{}\"></a>\n\n### `{}`\n", c.anchor(), c.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A code's section of [`PAGE`]: its heading, meaning and status.
    fn section(c: &CodeInfo, by: &str) -> String {
        format!(
            "{}\n{}\n\nStatus: {}. Reported by {by}.\n",
            heading(c),
            c.summary,
            c.status.as_str()
        )
    }

    /// `docs/codes.md` as the registries make it.
    fn page() -> String {
        let mut t = String::from(
            "# Finding codes\n\n\
             Every finding weft reports (a diagnostic, a violated property, a refused file) \
             carries one of these codes, in every output format: the human text, the `code` of \
             a JSON finding, the `ruleId` of a SARIF result. `weft --explain CODE` prints a \
             code's section.\n\n\
             A code's status says how far tools may rely on it: *stable* codes keep their \
             meaning; *not built* codes refuse input that the language accepts but weft does \
             not build yet; *internal* codes are bugs in weft, never expected.\n\n\
             This page is generated from the registries in the sources (the test \
             `codes::tests::the_page_lists_every_code` checks it; `WEFT_BLESS=1` rewrites it).\n",
        );
        for (by, codes) in REGISTRIES {
            t += &format!("\n## Reported by {by}\n");
            let mut codes = codes.to_vec();
            codes.sort();
            for c in &codes {
                t += "\n";
                t += &section(c, by);
            }
        }
        t
    }

    #[test]
    fn the_page_lists_every_code() {
        let want = page();
        if std::env::var_os("WEFT_BLESS").is_some() {
            std::fs::write(
                concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/codes.md"),
                &want,
            )
            .unwrap();
            return;
        }
        assert!(
            PAGE == want,
            "docs/codes.md is out of date: run `WEFT_BLESS=1 cargo test -p weft codes`"
        );
    }

    #[test]
    fn every_code_is_registered_once() {
        let mut all: Vec<&str> = REGISTRIES
            .iter()
            .flat_map(|(_, c)| c.iter().map(|c| c.code))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a code is registered twice");
        for c in &all {
            assert!(c.starts_with("weft::"), "{c}");
            assert!(
                c[6..].chars().all(|ch| ch.is_ascii_lowercase()
                    || ch.is_ascii_digit()
                    || ch == '_'
                    || ch == ':'),
                "{c}"
            );
        }
    }

    /// Every code written in the product's sources (a string literal `"weft::…"` or a
    /// `code(weft::…)` attribute), with the file it is in.
    fn written_codes() -> Vec<(String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut out = Vec::new();
        let mut dirs: Vec<std::path::PathBuf> = [
            "fabric", "formats", "compiler", "verifier", "plan", "deploy", "driver", "metrics",
            "cli",
        ]
        .iter()
        .map(|c| root.join(c).join("src"))
        .collect();
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                    continue;
                }
                if p.extension().is_none_or(|x| x != "rs") || p.ends_with("cli/src/codes.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap();
                for open in ["\"weft::", "code(weft::"] {
                    for (at, _) in text.match_indices(open) {
                        let code: String = text[at + open.len() - 6..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                            .collect();
                        let code = code.trim_end_matches(':');
                        // `"weft::"` and `"weft::ibnet"` are prefixes, not codes.
                        if code.matches("::").count() >= 2
                            || (code.contains("::") && code != "weft::ibnet")
                        {
                            out.push((code.to_owned(), p.display().to_string()));
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn every_code_written_is_registered() {
        let missing: Vec<String> = written_codes()
            .into_iter()
            .filter(|(c, _)| find(c).is_none())
            .map(|(c, f)| format!("{c} ({f})"))
            .collect();
        assert!(
            missing.is_empty(),
            "codes written but not registered: {missing:#?}"
        );
    }

    #[test]
    fn explain_prints_a_codes_section_and_only_it() {
        let e = explain("weft::credit_loop").unwrap();
        assert!(e.contains("### `weft::credit_loop`"), "{e}");
        assert!(
            e.contains("Status: stable. Reported by the verifier."),
            "{e}"
        );
        assert!(!e.contains("weft::partition_breach"), "{e}");
        assert!(explain("weft::no_such_code").is_none());
        let last = REGISTRIES[6].1.iter().max().unwrap();
        assert!(explain(last.code).unwrap().contains(last.summary));
    }
}
