//! `weft apply` end to end on the `sim` target: a drain plan for a link failure on a small
//! two-level tree applied (exit 0, the new state), a crash injected mid-plan (exit 2, the
//! journal left) and recovered back and forward, a bad read-back rolled back (exit 1), a dry
//! run listing exactly the plan's SMPs, a stale fabric refused with the link named, a
//! second apply refused while the journal of an unfinished one is there, and each refusal or
//! failure shown as a finding under its deploy code.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::Path;
use std::process::{Command, Output};
use weft_formats::plan::Plan;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n";

/// A directory with `old/state.json`, and `plan.json`: a drain plan taking `leaf3.p[6]` down.
fn setup(name: &str) -> crate::support::Scratch {
    let d = crate::support::scratch(&format!("apply-cli-{name}"));
    weft_tests::build_and_plan(
        Path::new(crate::support::WEFT),
        &d,
        &format!("{TREE}}}\n"),
        &format!("{TREE}    faults {{\n        link leaf3.p[6] down\n    }}\n}}\n"),
        &["--drain"],
    );
    d
}

fn apply(d: &Path, extra: &[&str]) -> Output {
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let mut args = vec![
        "apply".to_owned(),
        p("plan.json"),
        "--fabric".into(),
        p("old/state.json"),
        "--lock-dir".into(),
        p(""),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    weft(&a)
}

fn plan_smps(d: &Path) -> usize {
    Plan::from_json(&std::fs::read_to_string(d.join("plan.json")).unwrap())
        .unwrap()
        .smps()
}

#[test]
fn a_plan_lands_and_a_dry_run_lists_its_smps() {
    let d = setup("lands");
    let n = plan_smps(&d);
    let o = apply(&d, &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("step")).count(),
        n,
        "{out}"
    );
    assert!(out.ends_with("nothing was written (dry run)\n"), "{out}");
    let o = apply(&d, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.starts_with(&format!(
            "the fabric holds the new state: 2 steps landed, {n} Set"
        )),
        "{out}"
    );
}

#[test]
fn a_crash_leaves_a_journal_that_recovers_back_or_forward() {
    let d = setup("crash");
    let o = apply(&d, &["--inject", "crash@1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("the writer crashed (injected after 1 writes); the journal is left for `weft apply --recover"), "{err}");
    let journal = d.join("plan.json.journal");
    assert!(journal.exists());
    // An apply while the journal records an unfinished one is refused.
    let o = apply(&d, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("records an apply that did not end"),
        "{}",
        text(&o.stderr)
    );
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    for (flag, want) in [
        (None, "the fabric holds the old state:"),
        (Some("--forward"), "the fabric holds the new state:"),
    ] {
        let copy = d.join("copy.journal");
        std::fs::copy(&journal, &copy).unwrap();
        let mut args = vec!["apply", "--recover", copy.to_str().unwrap()];
        let fabric = p("old/state.json");
        let lock = p("");
        args.extend(["--fabric", &fabric, "--lock-dir", &lock]);
        args.extend(flag);
        let o = weft(&args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(text(&o.stdout).starts_with(want), "{}", text(&o.stdout));
    }
}

/// An apply that refuses (a journal of an unfinished apply in the way: exit 1) or cannot run
/// (a crash: exit 2; a fault or SM port that does not parse) is a finding under the deploy
/// error's code, shown as every command's findings are, the crash with the journal to recover
/// as its help.
#[test]
fn refusals_and_failures_are_findings_with_their_codes() {
    let d = setup("codes");
    let journal = d.join("plan.json.journal");
    let o = apply(&d, &["--inject", "crash@1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        format!(
            "× the writer crashed (injected after 1 writes); the journal is left for `weft apply \
             --recover` [weft::deploy::crashed]\n  help: the journal is left for `weft apply \
             --recover {}`\n1 error(s), 0 warning(s)\n",
            journal.display()
        )
    );
    let o = apply(&d, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        format!(
            "× journal {0} records an apply that did not end: recover it first (`weft apply \
             --recover {0}`); nothing was written [weft::deploy::journal_unfinished]\n1 error(s), 0 warning(s)\n",
            journal.display()
        )
    );
    for (extra, code) in [
        (["--inject", "melt@1"], "weft::deploy::fault_syntax"),
        (["--sm", "nosuch/1"], "weft::deploy::sm_port_unknown_node"),
        (["--sm", "nosuch"], "weft::deploy::sm_port_syntax"),
    ] {
        let o = apply(&d, &extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.starts_with(&format!("× {} `{}`: ", extra[0], extra[1])),
            "{err}"
        );
        assert!(
            err.ends_with(&format!(" [{code}]\n1 error(s), 0 warning(s)\n")),
            "{err}"
        );
    }
}

#[test]
fn a_bad_read_back_rolls_back_and_a_stale_fabric_is_refused() {
    let d = setup("rollback");
    let o = apply(&d, &["--inject", "corrupt@0"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("reads back other data than was written"),
        "{out}"
    );
    assert!(
        out.contains("the fabric holds the old state (rolled back): 0 steps landed"),
        "{out}"
    );
    // The plan applied to the desired fabric (the link already down, the plan expects it up).
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let o = weft(&["build", &p("new.weft"), "-o", &p("new"), "-q"]);
    assert!(o.status.success());
    let o = weft(&[
        "apply",
        &p("plan.json"),
        "--fabric",
        &p("new/state.json"),
        "--lock-dir",
        &p(""),
    ]);
    assert_eq!(o.status.code(), Some(1));
    insta::assert_snapshot!(text(&o.stderr));
}

/// Builds the tree routed by `layered` into `d/layered`.
fn build_layered(d: &std::path::Path) {
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    std::fs::write(
        d.join("layered.weft"),
        TREE.replace(
            "engine = fat_tree, switch_to_switch = sftree",
            "engine = layered",
        ) + "}\n",
    )
    .unwrap();
    let o = weft(&["build", &p("layered.weft"), "-o", &p("layered"), "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// A `weft build` directory: the fabric's tables are read and the way to its state planned
/// and proven, then applied; a fabric already running it gets nothing.
#[test]
fn a_build_directory_is_planned_against_the_live_tables() {
    let d = setup("builddir");
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    build_layered(&d);
    let lock = p("");
    let o = weft(&[
        "apply",
        &p("layered"),
        "--fabric",
        &p("old/state.json"),
        "--lock-dir",
        &lock,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("every step proven"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).starts_with("the fabric holds the new state:"),
        "{}",
        text(&o.stdout)
    );
    let o = weft(&[
        "apply",
        &p("old"),
        "--fabric",
        &p("old/state.json"),
        "--lock-dir",
        &lock,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "the fabric already runs this state: nothing to write\n"
    );
}

/// A build directory whose tables no order reaches from the live ones without outage (from
/// `layered` to `fat_tree`): `--zero-outage` refuses before writing, naming the transient
/// credit loop; without it the plan takes switch LIDs out of service, lands, and reports each
/// drop's measured outage. `--zero-outage` with a plan file is refused: its outage was decided
/// by `weft plan`.
#[test]
fn a_build_directory_needing_break_before_make_obeys_zero_outage() {
    let d = setup("bbm-builddir");
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    build_layered(&d);
    let lock = p("");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "apply".to_owned(),
            p("old"),
            "--fabric".into(),
            p("layered/state.json"),
            "--lock-dir".into(),
            lock.clone(),
        ];
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };
    let run = |a: Vec<String>| weft(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(args(&["--zero-outage"]));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("transient credit loop"),
        "{}",
        text(&o.stderr)
    );
    let o = run(args(&[]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.starts_with("the fabric holds the new state:"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("outage: ") && l.ends_with("which restored them)")),
        "{out}"
    );
    let o = apply(&d, &["--zero-outage"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        text(&o.stderr).contains("a plan file's outage"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn what_is_not_built_says_so() {
    let d = setup("unbuilt");
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let o = weft(&["apply", &p("plan.json"), "--target", "opensm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--target opensm takes a `weft build` directory"),
        "{}",
        text(&o.stderr)
    );
    // An option with no effect on the target is refused, not ignored (and a bad one named).
    for (args, said) in [
        (
            &["--ca", "mlx5_0", "--timeout-ms", "5"][..],
            "--ca, --timeout-ms: only for --target mad",
        ),
        (&["--window", "4"], "--window: only for --target mad"),
        (
            &["--opensm-pid", "1"],
            "--opensm-pid: only for --target opensm",
        ),
        (&["--inject", "melt@3"], "--inject `melt@3`"),
    ] {
        let o = apply(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o.stderr).contains(said), "{}", text(&o.stderr));
    }
}

/// A plan file is proven again on the fabric as it runs before anything is written: the
/// drain plan with its steps swapped by hand (the source side first) is refused naming the
/// step and the transient loop; `--no-reprove` refuses it too (its digest is the plan's as
/// made, not this content's), and writes only the plan as `weft plan` wrote it.
#[test]
fn a_tampered_plan_is_refused_by_its_proof_on_the_live_fabric() {
    let d = setup("tampered");
    let made = std::fs::read_to_string(d.join("plan.json")).unwrap();
    let mut plan = Plan::from_json(&made).unwrap();
    assert_eq!(plan.steps.len(), 2);
    plan.steps.reverse();
    // The blocks' `old` contents must chain again, so the swap is a consistent (but unsafe)
    // plan; the digest line left as the file had it, as a hand edit leaves it.
    let digest = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("\"digest\""))
            .unwrap()
            .to_owned()
    };
    let swapped = plan
        .to_json()
        .replace(&digest(&plan.to_json()), &digest(&made));
    std::fs::write(d.join("swapped.json"), &swapped).unwrap();
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let lock = p("");
    let o = weft(&[
        "apply",
        &p("swapped.json"),
        "--fabric",
        &p("old/state.json"),
        "--lock-dir",
        &lock,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("step 1 of the plan is not safe on the fabric as it runs"),
        "{err}"
    );
    assert!(err.contains("nothing was written"), "{err}");
    assert!(!d.join("swapped.json.journal").exists());
    let no_reprove = |plan: &str| {
        weft(&[
            "apply",
            &p(plan),
            "--fabric",
            &p("old/state.json"),
            "--lock-dir",
            &lock,
            "--no-reprove",
        ])
    };
    let o = no_reprove("swapped.json");
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    assert!(
        text(&o.stderr).contains("the plan's digest does not match its content")
            && text(&o.stderr).contains("nothing was written"),
        "{}",
        text_of(&o)
    );
    assert!(!d.join("swapped.json.journal").exists());
    let o = no_reprove("plan.json");
    assert_eq!(o.status.code(), Some(0), "{}", text_of(&o));
    assert!(
        text(&o.stdout).contains("note: not proven again on the fabric (`--no-reprove`)"),
        "{}",
        text_of(&o)
    );
}

/// A journal that cannot grow once the first step has begun (a real write error: the file
/// size limit lowered to the journal's size while the step's Sets go out — the next write
/// fails with EFBIG, as a full disk fails it with ENOSPC): the step lands, the journal cannot
/// record it, and the apply rolls back without it, says so and exits 1 with the old state;
/// the next apply is refused until `--recover` finds the old state and closes the journal.
#[test]
fn a_journal_that_cannot_grow_rolls_back() {
    let d = setup("efbig");
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let journal = d.join("plan.json.journal");
    // SIGXFSZ ignored (as `exec` keeps it), so the write fails instead of killing weft.
    let child = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; exec \"$0\" \"$@\"")
        .arg(crate::support::WEFT)
        .args([
            "apply",
            &p("plan.json"),
            "--fabric",
            &p("old/state.json"),
            "--lock-dir",
            &p(""),
            "--smp-gap-ms",
            "300",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        if text.contains("{\"event\":\"begin\",\"step\":0}") {
            let size = text.len() as u64;
            let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
            rustix::process::prlimit(
                Some(pid),
                rustix::process::Resource::Fsize,
                rustix::process::Rlimit {
                    current: Some(size),
                    maximum: Some(size),
                },
            )
            .unwrap();
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the first step never began"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    let out = text(&o.stdout);
    assert!(
        out.contains("the journal could not be written")
            && out.contains("the fabric holds the old state (rolled back)"),
        "{}",
        text_of(&o)
    );
    assert!(out.contains("weft apply --recover"), "{out}");
    // The next apply is refused until the journal is recovered; recovery closes it.
    let o = apply(&d, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    assert!(text(&o.stderr).contains("did not end"), "{}", text_of(&o));
    let o = weft(&[
        "apply",
        "--recover",
        &p("plan.json.journal"),
        "--fabric",
        &p("old/state.json"),
        "--lock-dir",
        &p(""),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text_of(&o));
    assert!(
        text(&o.stdout).contains("the fabric holds the old state"),
        "{}",
        text_of(&o)
    );
}

/// Recovering a journal that records no writes (a header alone) says there was nothing to
/// recover, exit 0, and does not claim the new state.
#[test]
fn recovering_a_journal_without_blocks_says_nothing_was_written() {
    let d = setup("headeronly");
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let o = apply(&d, &["--journal", &p("full.journal")]);
    assert_eq!(o.status.code(), Some(0), "{}", text_of(&o));
    let full = std::fs::read_to_string(d.join("full.journal")).unwrap();
    std::fs::write(
        d.join("header.journal"),
        format!("{}\n", full.lines().next().unwrap()),
    )
    .unwrap();
    let o = weft(&[
        "apply",
        "--recover",
        &p("header.journal"),
        "--fabric",
        &p("old/state.json"),
        "--lock-dir",
        &p(""),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text_of(&o));
    let out = text(&o.stdout);
    assert!(
        out.contains("nothing to recover") && !out.contains("new state"),
        "{out}"
    );
}

fn text_of(o: &Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}

/// A VM migration on the `sim` target (VFs addressed through their hypervisor's port): the
/// re-proof reads the VFs too, so the plan as made lands, and the same plan with its LFT
/// steps in reverse (the source side first: a transient loop toward the VM's LID) is refused
/// naming the loop, nothing written.
#[test]
fn a_migration_is_proven_again_with_its_vfs_on_the_sim() {
    let d = crate::support::scratch("apply-cli-vfs");
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/vswitch-fig2.weft"),
    )
    .unwrap();
    weft_tests::build_and_plan(
        Path::new(crate::support::WEFT),
        &d,
        &src,
        &src.replace("vm vm1 on vsw1", "vm vm1 on vsw3"),
        &[],
    );
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let mut plan = Plan::from_json(&std::fs::read_to_string(d.join("plan.json")).unwrap()).unwrap();
    assert!(plan.steps.len() > 2, "{}", plan.steps.len());
    plan.steps[1..].reverse();
    std::fs::write(d.join("reversed.json"), plan.to_json()).unwrap();
    let lock = p("");
    let run = |file: &str| {
        weft(&[
            "apply",
            &p(file),
            "--fabric",
            &p("old/state.json"),
            "--lock-dir",
            &lock,
        ])
    };
    let o = run("reversed.json");
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    let err = text(&o.stderr);
    assert!(err.contains("not safe on the fabric as it runs"), "{err}");
    assert!(err.contains("transient forwarding loop"), "{err}");
    assert!(!d.join("reversed.json.journal").exists());
    let o = run("plan.json");
    assert_eq!(o.status.code(), Some(0), "{}", text_of(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// Exit codes agree with what the report says in every path a journal failure can take: the
/// drain plan applied with the journal failing at each of its writes (once, or from there on,
/// as a full disk does), alone and with a rejected SMP in the second step. Exit 0 says the new
/// state, 1 the old one (rolled back) or a refusal with nothing written, 2 neither state or an
/// apply that could not run with nothing written; the journal left open is named with the
/// command that closes it.
#[test]
fn exit_codes_agree_with_the_report_whatever_the_journal_does() {
    let d = setup("exit-codes");
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let plan = Plan::from_json(&std::fs::read_to_string(d.join("plan.json")).unwrap()).unwrap();
    let first_step = plan.steps[0].writes.len();
    let writes = 1 + 2 * plan.steps.len() + 2;
    let mut seen = std::collections::BTreeMap::new();
    for at in 0..=writes {
        for kind in ["journal", "journal-full"] {
            for smp in [None, Some(format!("reject@{first_step}"))] {
                let journal = p(&format!("{kind}-{at}-{}.journal", smp.is_some()));
                let mut args = vec![
                    "--journal".to_owned(),
                    journal.clone(),
                    "--inject".to_owned(),
                    format!("{kind}@{at}"),
                ];
                if let Some(s) = &smp {
                    args.extend(["--inject".to_owned(), s.clone()]);
                }
                let a: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = apply(&d, &a);
                let (out, err) = (text(&o.stdout), text(&o.stderr));
                let said = match o.status.code() {
                    Some(0) => {
                        assert!(out.contains("the fabric holds the new state"), "{out}{err}");
                        "new"
                    }
                    Some(1) if out.contains("the fabric holds the old state (rolled back)") => {
                        "old"
                    }
                    Some(1) | Some(2) if err.contains("nothing was written") => "refused",
                    Some(2) => {
                        assert!(out.contains("the fabric holds neither state"), "{out}{err}");
                        "neither"
                    }
                    c => panic!("{kind}@{at} {smp:?}: exit {c:?}\n{out}{err}"),
                };
                // A journal that could not be closed is said, with the command that closes it.
                let open = std::path::Path::new(&journal).exists()
                    && weft_deploy::journal::read(std::path::Path::new(&journal))
                        .is_ok_and(|j| j.ended().is_none());
                if open && said != "refused" {
                    assert!(
                        out.contains(&format!("weft apply --recover {journal}")),
                        "{kind}@{at} {smp:?}: {out}"
                    );
                }
                *seen
                    .entry(format!("{said}{}", if open { ", open" } else { "" }))
                    .or_insert(0) += 1;
            }
        }
    }
    // Every way an apply can end under journal failures was met.
    for want in ["new", "old", "old, open", "refused"] {
        assert!(seen.contains_key(want), "{want}: {seen:?}");
    }
    assert!(
        !seen.contains_key("neither") && !seen.contains_key("neither, open"),
        "one writer, no lasting SMP fault: never neither: {seen:?}"
    );
}
