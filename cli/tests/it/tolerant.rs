//! Tolerant reading end to end: `weft import` of a dump with a noise line of each class exits 0
//! with the warning shown on its line (a snapshot per class) and 1 with `--strict`; dumps cut
//! short need `--partial`; a dump that describes no node (a discovery that failed) is refused
//! in every mode and through `import(…)`; ports without a LID are imported unpinned, and `weft verify
//! --topology` names them as not covered instead of claiming them; the two reports import.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::{root, weft};
use std::path::Path;
use std::process::Output;
use weft_fabric::{FabricState, PortNum};
use weft_verifier::testkit;

/// A real dump: ibsim's leaf–spine fabric as `ibnetdiscover` printed it after OpenSM's sweep.
const DUMP: &str = "formats/tests/data/ibsim-leaf-spine.ibnetdiscover";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("tolerant-{name}"))
}

fn dump() -> String {
    std::fs::read_to_string(root().join(DUMP)).unwrap()
}

/// `weft import FILE -o OUT` with `extra` flags: the output, and the program when written.
fn import(file: &Path, extra: &[&str]) -> (Output, Option<String>) {
    let out_file = file.with_extension("weft");
    let _ = std::fs::remove_file(&out_file);
    let mut args = vec![
        "import",
        file.to_str().unwrap(),
        "-o",
        out_file.to_str().unwrap(),
        "--name",
        "f",
    ];
    args.extend_from_slice(extra);
    let out = weft(&args);
    (out, std::fs::read_to_string(&out_file).ok())
}

/// `line` put into the dump twice (at the top and inside the first switch's record): `weft
/// import` exits 0, shows one `code` warning on each (its stderr is the snapshot), and writes
/// the program of the clean dump; `--strict` exits 1 and writes nothing.
fn noise_class(code: &str, line: &str) {
    let dir = temp_dir(code);
    let clean = dir.join("clean.ibnetdiscover");
    std::fs::write(&clean, dump()).unwrap();
    let (out, want) = import(&clean, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let noisy = dump().replacen("\n[1]\t", &format!("\n{line}\n[1]\t"), 1);
    let noisy = format!("{line}\n{noisy}");
    let file = dir.join("noisy.ibnetdiscover");
    std::fs::write(&file, &noisy).unwrap();
    let (out, program) = import(&file, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches(&format!("weft::ibnet::{code}")).count(),
        2,
        "{stderr}"
    );
    let strip_header = |p: &str| p.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(
        strip_header(&program.unwrap()),
        strip_header(&want.unwrap()),
        "the noise changes nothing"
    );
    let stderr = stderr.replace(&dir.display().to_string(), "[DIR]");
    insta::assert_snapshot!(format!("import_noise_{code}"), stderr);
    let (out, program) = import(&file, &["--strict"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(program.is_none());
    assert!(
        text(&out.stderr).contains("× skipped"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_terminal_log_header_is_skipped() {
    noise_class(
        "terminal_log",
        "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2024.01.02 10:11:12 =~=~=~=~=~=~=~=~=~=~=~=",
    );
}

#[test]
fn a_shell_prompt_is_skipped() {
    noise_class("shell_prompt", "[root@mgmt01 ~]# ibnetdiscover");
}

#[test]
fn captured_standard_error_is_skipped() {
    noise_class(
        "tool_stderr",
        "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status \
         110; Connection timed out",
    );
}

#[test]
fn a_grouped_output_header_is_skipped() {
    noise_class("grouped_header", "Chassis 2 (guid 0x2c9020040b4db)");
}

/// What a discovery that could not open the HCA port leaves when its standard error is
/// captured with its output.
const FAILED_DISCOVERY: &str = "\
ibwarn: [12345] mad_rpc_open_port: can't open UMAD port (NULL:0)
src/ibnetdisc.c:811; ibnd_discover_fabric: Failed to open MAD port
[root@mgmt01 ~]# ibnetdiscover
";

/// A dump that describes no node — a failed discovery's messages, an empty file, blank lines,
/// a lone prompt — is refused (exit 1, nothing written) with `--partial`, `--strict` or
/// neither, saying what the file holds; through `topology = import(…)` in a `.weft` too.
#[test]
fn a_dump_without_nodes_is_refused() {
    let dir = temp_dir("no-nodes");
    let cases = [
        ("failed", FAILED_DISCOVERY, "its 3 lines are noise: 2 messages captured from standard error (`ibwarn: [12345] mad_rpc_open_port: can't open UMAD port (NULL:0)`, `src/ibnetdisc.c:811; ibnd_discover_fabric: Failed to open MAD port`) and a shell prompt (`[root@mgmt01 ~]# ibnetdiscover`)"),
        ("empty", "", "the dump is empty: it describes no node"),
        ("blank", "\n  \n", "its 2 lines are blank"),
        ("prompt", "[root@mgmt01 ~]# ibnetdiscover > fabric.txt\n", "its only line is noise: a shell prompt"),
    ];
    for (name, content, says) in cases {
        let file = dir.join(format!("{name}.ibnetdiscover"));
        std::fs::write(&file, content).unwrap();
        for extra in [
            &[][..],
            &["--partial"],
            &["--strict"],
            &["--partial", "--strict"],
        ] {
            let (out, program) = import(&file, extra);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{name} {extra:?}: {stderr}");
            assert!(program.is_none(), "{name} {extra:?}");
            // The message as one line: miette wraps it behind `│`.
            let flat = stderr
                .split_whitespace()
                .filter(|w| *w != "│")
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                flat.contains("weft::ibnet::no_nodes") && flat.contains(says),
                "{name} {extra:?}: {stderr}"
            );
            assert!(flat.contains("discovery probably failed"), "{stderr}");
        }
        if name == "failed" {
            let (out, _) = import(&file, &[]);
            let stderr = text(&out.stderr).replace(&dir.display().to_string(), "[DIR]");
            insta::assert_snapshot!("import_no_nodes", stderr);
        }
        // The same through the language: `weft check` of a program importing it.
        let program = dir.join(format!("{name}.weft"));
        std::fs::write(
            &program,
            format!("fabric f {{\n    topology = import(\"{name}.ibnetdiscover\")\n}}\n"),
        )
        .unwrap();
        let out = weft(&["check", program.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let findings = v["findings"].as_array().unwrap();
        assert!(
            findings.iter().any(|f| f["code"] == "weft::ibnet::no_nodes"
                && f["level"] == "error"
                && f["message"].as_str().unwrap().contains(says)),
            "{name}: {v}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dump_cut_short_needs_partial() {
    let dir = temp_dir("partial");
    // cn004's record is missing: spine1 names it, nothing describes it.
    let cut = dump();
    let start = cut
        .find("vendid=0x0\ndevid=0x0\nsysimgguid=0x100007")
        .unwrap();
    let end = cut[start..].find("\n\n").unwrap() + start + 2;
    let file = dir.join("cut.ibnetdiscover");
    std::fs::write(&file, format!("{}{}", &cut[..start], &cut[end..])).unwrap();
    let (out, program) = import(&file, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(program.is_none());
    assert!(
        text(&out.stderr).contains("`--partial`"),
        "{}",
        text(&out.stderr)
    );
    let (out, program) = import(&file, &["--partial"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is dropped"),
        "{}",
        text(&out.stderr)
    );
    let program = program.unwrap();
    assert!(!program.contains("cn004"), "{program}");
    assert!(program.contains("cn003"), "{program}");
    let (out, _) = import(&file, &["--partial", "--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ports_without_a_lid_are_imported_unpinned() {
    let dir = temp_dir("unassigned");
    // cn002 at `lid 65535` (its own line) and `lid 0` (the switch's line): not assigned yet.
    let d = dump()
        .replace("\"cn002 HCA-1\" lid 4 4xSDR", "\"cn002 HCA-1\" lid 0 4xSDR")
        .replace("# lid 4 lmc 0", "# lid 65535 lmc 0");
    let file = dir.join("unassigned.ibnetdiscover");
    std::fs::write(&file, d).unwrap();
    let (out, program) = import(&file, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("weft::ibnet::unassigned_lid"), "{stderr}");
    assert!(stderr.contains("`cn002 HCA-1` port 1"), "{stderr}");
    let program = program.unwrap();
    let node_line = |name: &str| {
        program
            .lines()
            .find(|l| l.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("no `{name}` in\n{program}"))
            .to_owned()
    };
    assert!(!node_line("cn002 HCA-1").contains("lid ="), "{program}");
    assert!(node_line("cn001 HCA-1").contains("lid = 2"), "{program}");
    // It compiles: weft assigns cn002 a LID.
    let out = weft(&["check", file.with_extension("weft").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (out, _) = import(&file, &["--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_reports_import() {
    for (file, format) in [
        (
            "formats/tests/data/ibsim-leaf-spine.ports",
            "ibnetdiscover -p",
        ),
        (
            "formats/tests/data/ibsim-leaf-spine.iblinkinfo",
            "iblinkinfo",
        ),
    ] {
        let out = weft(&["import", file]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let program = text(&out.stdout);
        assert!(
            program
                .lines()
                .next()
                .unwrap()
                .contains(&format!("(`{format}` output)")),
            "{program}"
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("weft::ibnet::port_count_guessed"),
            "{stderr}"
        );
        assert!(
            stderr.contains("weft::ibnet::node_guid_guessed"),
            "{stderr}"
        );
        assert_eq!(weft(&["import", "--strict", file]).status.code(), Some(1));
    }
}

/// A ring of six switches with one HCA each, routed Up*/Down* and proven.
fn ring() -> FabricState {
    let f = testkit::ring(6, 1);
    testkit::route_updown(&f, testkit::sequential_lids(&f))
}

/// `weft verify --topology` of `st` written with the LIDs of `st` minus those `drop` takes
/// out, and `st`'s LFTs.
fn verify_without(st: &FabricState, drop: &[(&str, u8)], format: &str) -> Output {
    let dir = temp_dir(&format!("verify-{}-{format}", drop.len()));
    let mut lids = st.lids.clone();
    for (name, port) in drop {
        let id = st.fabric.find(name).unwrap();
        lids.base.get_mut(&id).unwrap().remove(&PortNum(*port));
    }
    let topo = dir.join("fabric.ibnetdiscover");
    std::fs::write(
        &topo,
        weft_formats::ibnetdiscover::write(&st.fabric, Some(&lids)).unwrap(),
    )
    .unwrap();
    let lfts = dir.join("opensm-lfts.dump");
    std::fs::write(&lfts, weft_formats::opensm::write_lfts(st)).unwrap();
    let out = weft(&[
        "verify",
        "--topology",
        topo.to_str().unwrap(),
        "--lfts",
        lfts.to_str().unwrap(),
        "--format",
        format,
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn verify_names_the_ports_it_could_not_cover() {
    let st = ring();
    // Every port has its LID: nothing is left out.
    let out = verify_without(&st, &[], "json");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["report"]["stats"]["destinations"], 12, "{v}");
    // H2_0 at `lid 0`: proven for the other eleven LIDs, and H2_0 named as not covered.
    let out = verify_without(&st, &[("H2_0", 1)], "human");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    assert!(human.contains("all 11 LIDs (5 HCA, 6 switch)"), "{human}");
    assert!(
        human.contains(
            "⚠ 1 port not covered: the topology gives it no LID (`lid 0` or `lid 65535`, or \
             none), so no route to or from it was checked: `H2_0` port 1"
        ),
        "{human}"
    );
    let out = verify_without(&st, &[("H2_0", 1)], "json");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["report"]["stats"]["destinations"], 11, "{v}");
    assert_eq!(v["findings"][0]["code"], "weft::not_covered", "{v}");
    assert_eq!(v["findings"][0]["level"], "warning", "{v}");
    let out = verify_without(&st, &[("H2_0", 1)], "sarif");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["runs"][0]["results"][0]["ruleId"], "weft::not_covered",
        "{v}"
    );
    // A switch at `lid 0`: it and the HCA behind it are not covered, and the routes through
    // it fail instead of counting as proven.
    let out = verify_without(&st, &[("R1", 0)], "json");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["code"], "weft::not_covered", "{v}");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.starts_with("2 ports not covered") && msg.ends_with("switch `R1`, `H1_0` port 1"),
        "{msg}"
    );
    assert_eq!(v["verdict"]["connected"]["result"], "violated", "{v}");
}

/// The warning (or error) codes `weft import` showed and how many of each, counting the ones a
/// "… and N more like this (code)" line sums up.
fn code_counts(stderr: &str) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for line in stderr.lines() {
        if line.starts_with("weft::") && !line.contains(' ') {
            *counts.entry(line.to_owned()).or_insert(0) += 1;
        }
        if let Some(rest) = line.split_once("… and ").map(|(_, r)| r) {
            let (n, code) = rest.split_once(" more like this (").unwrap();
            let code = code.trim_end_matches(')');
            // The summing-up line is itself shown under its code: it stands for `n` more.
            *counts.get_mut(code).unwrap() += n.parse::<usize>().unwrap() - 1;
        }
    }
    counts
}

/// Every dump of a real fabric in `tests/fixtures/real/` imports (with `--partial` for the
/// `-f` excerpt, whose aggregation node has no record): exit status, the summary line of the
/// written program (switches, HCAs, links) and the codes of the warnings with their counts,
/// in one snapshot, so that a change in how real data reads shows.
#[test]
fn every_real_dump_imports() {
    let dir = temp_dir("real");
    let real = root().join("tests/fixtures/real");
    let mut names: Vec<String> = std::fs::read_dir(&real)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ibnetdiscover") || n.ends_with(".txt"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 11, "{names:?}");
    let mut report = String::new();
    for name in &names {
        let partial = name.starts_with("superbench-");
        let out_file = dir.join(format!("{name}.weft"));
        let file = real.join(name);
        let mut args = vec![
            "import",
            file.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ];
        if partial {
            args.push("--partial");
        }
        let out = weft(&args);
        let stderr = text(&out.stderr);
        let code = out.status.code();
        // treydock-ports-test2.txt wires one aggregation-node port to two switches (an
        // edited excerpt): it is refused, and the snapshot says with what.
        let expected = if name == "treydock-ports-test2.txt" {
            1
        } else {
            0
        };
        assert_eq!(code, Some(expected), "{name}:\n{stderr}");
        let summary = std::fs::read_to_string(&out_file)
            .ok()
            .and_then(|p| {
                // The header line (after the line that counts recognised aggregation nodes,
                // when there are some).
                let header = p.lines().find(|l| l.contains("`weft import`: "))?;
                Some(header.split_once("`weft import`: ")?.1.to_owned())
            })
            .unwrap_or_else(|| "no program written".to_owned());
        report.push_str(&format!(
            "{name}{}: exit {}, {summary}\n",
            if partial { " (--partial)" } else { "" },
            code.unwrap()
        ));
        for (c, n) in code_counts(&stderr) {
            report.push_str(&format!("    {c} × {n}\n"));
        }
    }
    insta::assert_snapshot!("real_dumps", report);
    let _ = std::fs::remove_dir_all(&dir);
}
