//! `weft apply --target mad` on ibsim with the 648-node tree: real SMPs through libibmad
//! (preloaded with libumad2sim). The initial deployment of a `weft build` directory onto
//! switches that forward nothing equals the compiled tables in `dump_fts`. With OpenSM having
//! loaded the old tables (file engine, weft's LIDs), a drain plan around a cable lands and
//! `dump_fts` shows the new tables entry for entry (nothing else changed); the same plan again
//! is refused (its blocks moved on) with nothing written; a plan whose cable was disabled in
//! ibsim after planning is refused naming the link, nothing written; an apply SIGKILLed
//! mid-plan, then `--recover`, leaves the old tables exactly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;
use weft_fabric::plan::Plan;
use weft_fabric::ValidState;
use weft_tests::ibsim::{self, Ibsim, Limits};
use weft_tests::{lft_entries, parse_fts};

/// The 648-node example without its closing brace (faults go after it).
fn tree() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = std::fs::read_to_string(root.join("examples/cluster-648.weft")).unwrap();
    let i = src.rfind('}').unwrap();
    src[..i].to_owned()
}

fn weft(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .output()
        .unwrap()
}

fn load(path: &Path) -> ValidState {
    ValidState::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Builds the 648-node tree and a drain plan taking `leaf5.p[25]` out of use; starts ibsim on it
/// and has OpenSM load the old tables. Returns the simulator, the work directory, and the old
/// and new states.
fn setup(tools: &ibsim::Tools) -> (Ibsim, std::path::PathBuf, ValidState, ValidState) {
    let d = std::env::temp_dir().join(format!(
        "weft-apply-mad-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("old.weft"), format!("{}}}\n", tree())).unwrap();
    std::fs::write(
        d.join("new.weft"),
        format!(
            "{}    faults {{\n        link leaf5.p[25] down\n    }}\n}}\n",
            tree()
        ),
    )
    .unwrap();
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let o = weft(&["build", &p("old.weft"), "-o", &p("old"), "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = weft(&[
        "plan",
        "--from",
        &p("old/state.json"),
        &p("new.weft"),
        "--drain",
        "-o",
        &p("plan.json"),
        "--write-state",
        &p("new.json"),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let old = load(&d.join("old/state.json"));
    let new = load(&d.join("new.json"));
    let net = weft_fabric::ibnetdiscover::write(&old.fabric, Some(&old.lids)).unwrap();
    let sim = Ibsim::start(tools, &net, Some(Limits::for_fabric(&old.fabric))).unwrap();
    let cache = sim.dir().join("osm-cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(
        cache.join("guid2lid"),
        weft_fabric::opensm::write_guid2lid(&old),
    )
    .unwrap();
    let log = sim.dir().join("osm.log");
    sim.run_env(
        "opensm",
        &[
            "-o",
            "-R",
            "file",
            "-U",
            &p("old/lfts.dump"),
            "-f",
            log.to_str().unwrap(),
        ],
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        Duration::from_secs(120),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", std::fs::read_to_string(&log).unwrap_or_default()));
    (sim, d, old, new)
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn fabric_lfts(sim: &Ibsim) -> std::collections::BTreeMap<(u64, u16), u8> {
    let out = sim
        .run_retrying(
            "dump_fts",
            &[],
            Duration::from_secs(60),
            Duration::from_secs(120),
        )
        .unwrap();
    parse_fts(&out.stdout)
}

fn apply(sim: &Ibsim, args: &[&str]) -> ibsim::ClientOutput {
    let weft = env!("CARGO_BIN_EXE_weft");
    let mut a = vec!["apply", "--target", "mad"];
    a.extend(args);
    match sim.run_env(weft, &a, &[], Duration::from_secs(120)) {
        Ok(o) => o,
        Err(ibsim::IbsimError::Failed { output, .. }) => output,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_drain_plan_lands_over_mads_and_reads_back_with_dump_fts() {
    let Some(tools) = ibsim::require("a_drain_plan_lands_over_mads", &["opensm", "dump_fts"])
    else {
        return;
    };
    let (sim, d, old, new) = setup(&tools);
    assert_eq!(
        fabric_lfts(&sim),
        lft_entries(&old),
        "OpenSM loaded weft's old tables"
    );
    let plan = d.join("plan.json");
    let lock = d.to_str().unwrap().to_owned();
    let o = apply(&sim, &[plan.to_str().unwrap(), "--lock-dir", &lock]);
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    let smps = Plan::from_json(&std::fs::read_to_string(&plan).unwrap())
        .unwrap()
        .smps();
    assert!(
        o.stdout.starts_with(&format!(
            "the fabric holds the new state: 2 steps landed, {smps} Set"
        )),
        "{}",
        o.stdout
    );
    assert_eq!(
        fabric_lfts(&sim),
        lft_entries(&new),
        "dump_fts shows the new tables"
    );
    // The same plan again: its blocks no longer hold its old content.
    let o = apply(
        &sim,
        &[
            plan.to_str().unwrap(),
            "--lock-dir",
            &lock,
            "--journal",
            d.join("again.journal").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("the fabric moved on since the plan was made; nothing was written"),
        "{}",
        o.stderr
    );
    assert_eq!(fabric_lfts(&sim), lft_entries(&new));
}

/// A plan for a fabric that changed after planning: a cable (leaf1 port 19, an uplink) is
/// disabled in ibsim (`ibportstate disable`); the apply is refused naming the link, and
/// nothing is written.
#[test]
fn a_stale_plan_is_refused_naming_the_link_and_nothing_is_written() {
    let Some(tools) = ibsim::require(
        "a_stale_plan_is_refused",
        &["opensm", "dump_fts", "ibportstate"],
    ) else {
        return;
    };
    let (sim, d, old, _) = setup(&tools);
    // ibsim attaches clients at the first node of its net file, leaf1: port 19 is one hop.
    sim.run(
        "ibportstate",
        &["-D", "0", "19", "disable"],
        Duration::from_secs(60),
    )
    .unwrap();
    let before = fabric_lfts(&sim);
    assert_eq!(before, lft_entries(&old));
    let plan = d.join("plan.json");
    let lock = d.to_str().unwrap().to_owned();
    let o = apply(&sim, &[plan.to_str().unwrap(), "--lock-dir", &lock]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", o.stdout, o.stderr);
    let leaf1 = old
        .fabric
        .nodes()
        .iter()
        .find(|n| n.name() == "leaf1")
        .unwrap()
        .guid();
    let named = format!("link {:#018x} port 19", leaf1.0);
    assert!(
        o.stderr
            .contains("the fabric differs from the one the plan was made for; nothing was written"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&named) && o.stderr.contains("is missing"),
        "{}",
        o.stderr
    );
    assert_eq!(fabric_lfts(&sim), before, "nothing was written");
    assert!(!d.join("plan.json.journal").exists());
}

#[test]
fn a_killed_apply_recovers_to_the_old_tables() {
    let Some(tools) = ibsim::require("a_killed_apply_recovers", &["opensm", "dump_fts"]) else {
        return;
    };
    let (sim, d, old, _) = setup(&tools);
    let plan = d.join("plan.json");
    let lock = d.to_str().unwrap().to_owned();
    let journal = d.join("plan.json.journal");
    let weft = env!("CARGO_BIN_EXE_weft");
    // Paced at 20 ms per Set, the plan takes seconds: kill it once the journal shows a step
    // began.
    let mut bg = sim
        .spawn_env(
            weft,
            &[
                "apply",
                "--target",
                "mad",
                plan.to_str().unwrap(),
                "--lock-dir",
                &lock,
                "--smp-gap-ms",
                "20",
            ],
            &[],
        )
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        if text.contains("\"event\":\"begin\"") {
            std::thread::sleep(Duration::from_millis(100));
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the apply never began"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(bg.running(), "the apply ended before it could be killed");
    drop(bg); // SIGKILL, reaped
    let torn = fabric_lfts(&sim);
    assert_ne!(
        torn,
        lft_entries(&old),
        "some writes landed before the kill"
    );
    let o = apply(
        &sim,
        &["--recover", journal.to_str().unwrap(), "--lock-dir", &lock],
    );
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.starts_with("the fabric holds the old state:"),
        "{}",
        o.stdout
    );
    assert_eq!(
        fabric_lfts(&sim),
        lft_entries(&old),
        "dump_fts shows the old tables again"
    );
}

/// The initial deployment: ibsim on the 648-node tree (weft's LIDs from its net file, empty
/// LFTs, no SM), `weft apply` of the build directory over MADs, and `dump_fts` shows every
/// entry weft compiled.
#[test]
fn an_initial_deployment_of_the_648_node_tree_equals_the_compiled_tables() {
    let Some(tools) = ibsim::require("an_initial_deployment_of_the_648_node_tree", &["dump_fts"])
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let d = std::env::temp_dir().join(format!("weft-apply-mad-648-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let out = d.join("b648");
    let o = weft(&[
        "build",
        root.join("examples/cluster-648.weft").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state = load(&out.join("state.json"));
    let net = std::fs::read_to_string(out.join("topology.net")).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&state.fabric))).unwrap();
    assert!(
        fabric_lfts(&sim).is_empty(),
        "a fresh ibsim forwards nothing"
    );
    let lock = d.to_str().unwrap().to_owned();
    let o = apply(&sim, &[out.to_str().unwrap(), "--lock-dir", &lock]);
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.starts_with("the fabric holds the new state:"),
        "{}",
        o.stdout
    );
    assert_eq!(
        fabric_lfts(&sim),
        lft_entries(&state),
        "dump_fts shows the compiled tables"
    );
    // Applying it again finds nothing to write.
    let o = apply(&sim, &[out.to_str().unwrap(), "--lock-dir", &lock]);
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    assert_eq!(
        o.stdout,
        "the fabric already runs this state: nothing to write\n"
    );
}
