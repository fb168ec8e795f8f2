//! Tests on dumps of real fabrics (`tests/fixtures/real/`, see its `PROVENANCE.md`): a PuTTY
//! capture whose tabs the terminal dropped reads as its re-spaced copy, with one warning; the
//! `ibnetdiscover -p` excerpts read, nodes seen only as peers made up from their peers' lines
//! (rendered warnings as snapshots); and the `-f` excerpt reads with `partial`, its
//! `s= w= v= e=` fields ignored.

use super::tests::{render, warning_codes};
use super::*;
use weft_fabric::{NodeKind, Speed, Width};

fn real(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/real")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(name: &str, text: &str, partial: bool) -> Result<Discovered, ParseErrors> {
    let opts = ParseOptions {
        source_name: name.to_owned(),
        partial,
        ..ParseOptions::default()
    };
    parse(text, &opts)
}

fn read_ok(name: &str, text: &str, partial: bool) -> Discovered {
    match read(name, text, partial) {
        Ok(d) => d,
        Err(e) => panic!("{name}: {}", render(&e)),
    }
}

/// (switches, end nodes, links) of a fabric.
fn counts(d: &Discovered) -> (usize, usize, usize) {
    let f = &d.fabric;
    let switches = f
        .nodes()
        .iter()
        .filter(|n| n.spec.kind == NodeKind::Switch)
        .count();
    (switches, f.nodes().len() - switches, f.links().len())
}

/// A line of the PuTTY capture with the tabs `ibnetdiscover` prints put back where the
/// terminal dropped them, and no carriage returns.
fn respace(line: &str) -> String {
    let mut l = line.replace('\r', "");
    for keyword in ["Switch", "Ca", "Hca", "Rt"] {
        let glued = l
            .strip_prefix(keyword)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        if glued {
            l.insert(keyword.len(), '\t');
        }
    }
    if l.starts_with('[') {
        if let Some(close) = l.find("]\"") {
            l.insert(close + 1, '\t');
        }
    }
    l.replace("\"#", "\"\t#").replace("]#", "]\t#")
}

#[test]
fn a_capture_without_its_tabs_reads_as_its_respaced_copy() {
    let name = "ufm-ndt-director-putty.ibnetdiscover";
    let text = real(name);
    let respaced: String = text.split('\n').map(|l| respace(l) + "\n").collect();
    assert!(respaced.contains("\nSwitch\t41 \"S-0c42a10300a9b026\"\t# \"MF0;"));
    assert!(respaced.contains("\n[1]\t\"H-1c34da03005503dc\"[1](1c34da03005503dc) # "));
    let d = read_ok(name, &text, false);
    let r = read_ok(name, &respaced, false);
    assert_eq!(d.fabric, r.fabric);
    assert_eq!(d.lids, r.lids);
    assert_eq!(d.unassigned, r.unassigned);
    assert_eq!(counts(&d), (400, 2328, 8723));
    let codes = warning_codes(&d);
    assert_eq!(
        codes
            .iter()
            .filter(|c| **c == Code::MissingWhitespace)
            .count(),
        1,
        "one warning per file"
    );
    let without: Vec<Code> = codes
        .into_iter()
        .filter(|c| *c != Code::MissingWhitespace)
        .collect();
    assert_eq!(without, warning_codes(&r));
    let w = d
        .warnings
        .iter()
        .find(|w| w.code() == Code::MissingWhitespace)
        .unwrap();
    insta::assert_snapshot!("real_missing_whitespace", render(w));
    // The switch CLI prompt at the end (no newline, after a bare carriage return) is noise.
    let last = d
        .warnings
        .iter()
        .find(|w| w.code() == Code::ShellPrompt)
        .unwrap();
    assert!(text
        .get(last.span().offset()..)
        .unwrap()
        .starts_with("sat11-0101-0902-02ufm ["));
}

#[test]
fn whitespace_missing_elsewhere_is_still_refused() {
    for bad in [
        "Switch\"S1\" # \"sw1\"\n",
        "Switch 8 \"S1\"x # \"sw1\"\n",
        "Switch 8 \"S1\" # \"sw1\"\n[1]\"H1\"[1]x\n",
    ] {
        assert!(read("bad", bad, false).is_err(), "{bad}");
    }
}

#[test]
fn ports_report_excerpts_read_with_peers_made_up() {
    let mut shown = Vec::new();
    for (name, expect) in [
        ("treydock-ports-test.txt", (4, 3, 4)),
        ("treydock-ports-test3.txt", (1, 0, 0)),
    ] {
        let d = read_ok(name, &real(name), false);
        assert_eq!(counts(&d), expect, "{name}");
        shown.extend(d.warnings.iter().map(|w| render(w)));
    }
    insta::assert_snapshot!("real_ports_report_excerpts", shown.join("\n"));
}

#[test]
fn a_ports_report_excerpt_that_wires_one_port_twice_is_refused() {
    // test2.out lists the aggregation node's port GUID 0x946dae0300630bfe port 1 twice: at
    // LID 78 wired to the leaf's port 81 and at LID 60 to a spine's port 81. One port has one
    // cable, so this is an edited excerpt and it stays an error (partial or not).
    let name = "treydock-ports-test2.txt";
    let text = real(name);
    for partial in [false, true] {
        let e = read(name, &text, partial).unwrap_err();
        let codes: Vec<Code> = e.diagnostics().iter().map(|d| d.code()).collect();
        assert_eq!(codes, vec![Code::LinkEndsDisagree]);
    }
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("SW     9 81"))
        .map(|l| format!("{l}\n"))
        .collect();
    let d = read_ok(name, &without, false);
    assert_eq!(counts(&d), (4, 2, 2));
    let an = d
        .fabric
        .find("Mellanox Technologies Aggregation Node")
        .unwrap();
    assert_eq!(d.fabric.node(an).spec.kind, NodeKind::Hca);
}

#[test]
fn a_full_output_excerpt_reads_with_partial_and_its_extra_fields_ignored() {
    let name = "superbench-director-full-faked.ibnetdiscover";
    let text = real(name);
    let e = read(name, &text, false).unwrap_err();
    let codes: Vec<Code> = e.diagnostics().iter().map(|d| d.code()).collect();
    assert_eq!(codes, vec![Code::UnknownNode]);
    let d = read_ok(name, &text, true);
    assert_eq!(warning_codes(&d), vec![Code::UnknownNode]);
    assert_eq!(counts(&d), (8, 10, 17));
    for l in d.fabric.links() {
        assert_eq!((l.width, l.speed), (Some(Width::X4), Some(Speed::HDR)));
    }
    // `s=4 w=2 v=4 e=4` (`-f`, rdma-core's `out_switch_port`: the active speed and width
    // codes, the VL capability (4: VL0-7, weft's default) and the extended speed) say nothing
    // the rate does not: the dump without them reads the same.
    let plain: String = text
        .lines()
        .map(|l| match l.find(" s=") {
            Some(at) => format!("{}\n", l.get(..at).unwrap()),
            None => format!("{l}\n"),
        })
        .collect();
    assert!(text.contains(" s=4 w=2 v=4 e=4") && !plain.contains(" s="));
    let p = read_ok(name, &plain, true);
    assert_eq!(p.fabric, d.fabric);
    assert_eq!(p.lids, d.lids);
}
