//! Never worse than OpenSM, checked by OpenSM (issue 42): every real dump in
//! `tests/fixtures/real/` is routed by weft's default engine and by OpenSM 3.3.23 on ibsim
//! (`ftree`, `updn`, `dfsssp`, `minhop`), through the `vs_opensm` binary (its `--json`), so
//! both sides are rated by the same metrics code on the same fabric, hosts and seed. Of
//! OpenSM's engines, those whose tables (read back from the simulated switches with
//! `dump_fts`) weft's verifier proves deadlock-free on one VL are the bar: weft's tables must
//! be proven deadlock-free too, with an eBB at least the best of theirs and shift and
//! all-to-all max loads at most the least of theirs. A dump on which no OpenSM engine is
//! deadlock-free, or whose tables cannot be read back onto the dump's fabric, has no bar, and
//! says so; a dump without switches has nothing to route. Dumps are read as `weft import
//! --partial` reads them. Beside the real dumps, the director-style tree of issue 42
//! (`bench/fabrics/director-8192.weft`: eight parallel cables per bundle) against OpenSM's
//! `ftree` and `updn`, the fabric on which unbalanced parallel cables lose to OpenSM.
//!
//! [`KNOWN_WORSE`] names the dumps on which weft is still worse, and why; each must still be
//! worse (so that the entry goes when it is fixed).
//!
//! Needs OpenSM, ibsim and infiniband-diags (a failure in CI, a loud skip elsewhere). Run in
//! release mode (`.ci/run`): `cargo test --release -p weft-bench --test never_worse_than_opensm
//! -- --nocapture` prints each dump's table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// OpenSM's engines compared on the real dumps.
const ENGINES: &str = "ftree,updn,dfsssp,minhop";

/// Dumps on which weft's default engine is worse than an OpenSM engine today, and why.
const KNOWN_WORSE: &[(&str, &str)] = &[(
    "loginoff-fdr-sx6036.ibnetdiscover",
    "not a fat-tree (the spine `ib7` has 3 hosts and is cabled to the leaves), so weft's \
     default is `updn`, ranked from one most central switch; OpenSM's updn does better",
)];

/// The real dumps: every file of `tests/fixtures/real/` but the provenance note.
fn dumps() -> Vec<PathBuf> {
    let dir = weft_bench::root().join("tests/fixtures/real");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "md"))
        .collect();
    files.sort();
    files
}

/// How many switches the dump holds, read as `vs_opensm` reads it.
fn switches(dump: &Path) -> usize {
    let text = std::fs::read_to_string(dump).unwrap();
    let (program, _) = weft_compiler::import_ibnetdiscover_with(
        &text,
        "dump",
        weft_compiler::diagnostic::SourceId(0),
        None,
        "dump",
        weft_compiler::ImportOptions {
            partial: true,
            strict: false,
        },
        &[],
    )
    .unwrap();
    let c = weft_compiler::check("dump.weft", &program, &weft_compiler::NoFiles);
    c.elaborated.map_or(0, |e| e.fabric.switch_count())
}

/// One fabric through `vs_opensm` against `engines`: its JSON record and its table.
fn compare(dump: &Path, engines: &str, out: &Path) -> (Value, String) {
    let run = Command::new(env!("CARGO_BIN_EXE_vs_opensm"))
        .args([
            "--runs",
            "1",
            "--osm-runs",
            "1",
            "--partial",
            "--engines",
            engines,
        ])
        .arg("--json")
        .arg(out)
        .arg(dump)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "vs_opensm on {}: {}\n{table}",
        dump.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    (json[0].clone(), table)
}

/// The metrics the bar is made of: eBB, shift max load, all-to-all max load.
fn metrics(q: &Value) -> (f64, u64, u64) {
    (
        q["bisections"]["ebb"].as_f64().unwrap(),
        q["shift"]["max_load"].as_u64().unwrap(),
        q["all_to_all"]["max_load"].as_u64().unwrap(),
    )
}

/// Whether weft's side of a run meets the bar OpenSM's deadlock-free engines set; the reasons
/// it does not, or what the bar was.
fn judge(run: &Value) -> Result<String, Vec<String>> {
    let weft = &run["weft"];
    let mine = metrics(&weft["quality"]);
    let bar: Vec<(String, (f64, u64, u64))> = run["opensm"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["deadlock_free"] == Value::Bool(true) && o["quality"].is_object())
        .map(|o| {
            let name = o["engine_used"].as_str().unwrap_or("?").to_owned();
            (name, metrics(&o["quality"]))
        })
        .collect();
    if bar.is_empty() {
        return Ok("no OpenSM engine produced deadlock-free tables: no bar".to_owned());
    }
    let mut why = Vec::new();
    if weft["deadlock_free"] != Value::Bool(true) {
        why.push(format!(
            "weft {} is not proven deadlock-free",
            weft["engine"]
        ));
    }
    for (name, (ebb, shift, all)) in &bar {
        if mine.0 < *ebb {
            why.push(format!("eBB {:.4} < OpenSM {name}'s {ebb:.4}", mine.0));
        }
        if mine.1 > *shift {
            why.push(format!(
                "shift max load {} > OpenSM {name}'s {shift}",
                mine.1
            ));
        }
        if mine.2 > *all {
            why.push(format!(
                "all-to-all max load {} > OpenSM {name}'s {all}",
                mine.2
            ));
        }
    }
    let names: Vec<&str> = bar.iter().map(|b| b.0.as_str()).collect();
    if why.is_empty() {
        Ok(format!(
            "weft {}: eBB {:.4}, shift max {}, all-to-all max {}; bar from {}",
            weft["engine"],
            mine.0,
            mine.1,
            mine.2,
            names.join(", ")
        ))
    } else {
        Err(why)
    }
}

#[test]
#[ignore = "not yet in CI time: OpenSM's dfsssp alone takes 13 min on Selene compute on 2 cores; run by hand (issue 42 item 2 is open)"]
fn weft_is_never_worse_than_opensm_on_the_real_dumps() {
    if weft_tests::ibsim::require(
        "never_worse_than_opensm",
        &["ibsim", "opensm", "dump_fts", "env"],
    )
    .is_none()
    {
        return;
    }
    let dir = std::env::temp_dir().join(format!("weft-never-worse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let mut fabrics: Vec<(PathBuf, &str)> = dumps().into_iter().map(|d| (d, ENGINES)).collect();
    fabrics.push((
        weft_bench::root().join("bench/fabrics/director-8192.weft"),
        "ftree,updn",
    ));
    for (dump, engines) in fabrics {
        let name = dump.file_name().unwrap().to_string_lossy().into_owned();
        if dump.extension().is_none_or(|x| x != "weft") && switches(&dump) == 0 {
            eprintln!("{name}: no switches, nothing to route");
            continue;
        }
        let (run, table) = compare(&dump, engines, &dir.join(format!("{name}.json")));
        eprintln!("{table}");
        let known = KNOWN_WORSE.iter().find(|k| k.0 == name);
        match (judge(&run), known) {
            (Ok(said), None) => eprintln!("{name}: {said}"),
            (Err(why), Some((_, reason))) => {
                eprintln!("{name}: worse, as known ({reason}): {}", why.join("; "));
            }
            (Ok(said), Some(_)) => failures.push(format!(
                "{name} is listed in KNOWN_WORSE but is no longer worse ({said}): take it out"
            )),
            (Err(why), None) => {
                eprintln!("{name}: WORSE: {}", why.join("; "));
                failures.push(format!("{name}: {}", why.join("; ")));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The judge itself: a run whose weft side is worse than one deadlock-free engine on any of
/// the three metrics fails, naming it; an engine not proven deadlock-free sets no bar.
#[test]
fn the_judge_names_what_is_worse() {
    let q = |ebb: f64, shift: u64, all: u64| {
        serde_json::json!({"bisections": {"ebb": ebb}, "shift": {"max_load": shift},
            "all_to_all": {"max_load": all}})
    };
    let run = |weft: Value, free: bool, osm: Value| {
        serde_json::json!({
            "weft": {"engine": "fat_tree", "deadlock_free": true, "quality": weft},
            "opensm": [
                {"engine_used": "ftree", "deadlock_free": free, "quality": osm},
                {"engine_used": "minhop", "deadlock_free": false, "quality": q(1.0, 1, 1)},
            ]
        })
    };
    assert!(judge(&run(q(0.5, 2, 10), true, q(0.5, 2, 10))).is_ok());
    let worse = judge(&run(q(0.49, 3, 11), true, q(0.5, 2, 10))).unwrap_err();
    assert_eq!(worse.len(), 3, "{worse:?}");
    assert!(
        worse[0].contains("eBB 0.4900 < OpenSM ftree's 0.5000"),
        "{worse:?}"
    );
    assert!(judge(&run(q(0.49, 3, 11), false, q(0.5, 2, 10)))
        .unwrap()
        .contains("no bar"));
}
