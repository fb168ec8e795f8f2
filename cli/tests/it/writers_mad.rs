//! `weft apply --target mad` on ibsim where deployments meet the real world: two applies
//! through two SM ports at once (two hosts, two admins), and a journal that stops growing
//! under a running apply. OpenSM (file engine, weft's LIDs) loads the old tables before each
//! run, and `dump_fts` is the referee.
//!
//! The fabric: a two-level fat-tree of radix-8 switches. Two drain plans from the same old
//! tables: around `leaf3.p[6]`, and around `leaf2.p[5]` (their LFT blocks overlap).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::weft;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use weft_fabric::ValidState;
use weft_formats::plan::{Plan, SmpWrite};
use weft_formats::state_json::FromJson;
use weft_tests::ibsim::{self, Ibsim, Limits};

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n";

/// The work directory: `old/` built, and drain plans `a.json` (around `leaf3.p[6]`) and
/// `b.json` (around `leaf2.p[5]`).
fn plans(name: &str) -> (crate::support::Scratch, ValidState) {
    let d = crate::support::scratch(&format!("writers-{name}"));
    weft_tests::build_and_plan(
        Path::new(crate::support::WEFT),
        &d,
        &format!("{TREE}}}\n"),
        &format!("{TREE}    faults {{\n        link leaf3.p[6] down\n    }}\n}}\n"),
        &["--drain"],
    );
    std::fs::rename(d.join("plan.json"), d.join("a.json")).unwrap();
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    std::fs::write(
        d.join("b.weft"),
        format!("{TREE}    faults {{\n        link leaf2.p[5] down\n    }}\n}}\n"),
    )
    .unwrap();
    let o = weft(&[
        "plan",
        "--from",
        &p("old/state.json"),
        &p("b.weft"),
        "--drain",
        "-o",
        &p("b.json"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let old =
        ValidState::from_json(&std::fs::read_to_string(d.join("old/state.json")).unwrap()).unwrap();
    (d, old)
}

/// ibsim on the old fabric.
fn start(tools: &ibsim::Tools, old: &ValidState) -> Ibsim {
    let net = weft_formats::ibnetdiscover::write(&old.fabric, Some(&old.lids)).unwrap();
    Ibsim::start(tools, &net, Some(Limits::for_fabric(&old.fabric))).unwrap()
}

/// OpenSM, once, loads the old tables (its file engine, weft's LIDs): every LFT as `old/`
/// has it.
fn load_old(sim: &Ibsim, d: &Path, old: &ValidState) {
    sim.load_with_opensm(&d.join("old/lfts.dump"), old)
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
}

fn fabric_lfts(sim: &Ibsim) -> BTreeMap<(u64, u16), u8> {
    sim.lfts().unwrap()
}

/// What the fabric (`dump_fts`'s entries) holds of each LFT block `plan` writes: its first
/// `old`, its last `new`, or something else.
fn held(plan: &Plan, lfts: &BTreeMap<(u64, u16), u8>) -> BTreeMap<(u64, u16), &'static str> {
    let mut ends: BTreeMap<(u64, u16), ([u8; 64], [u8; 64])> = BTreeMap::new();
    for w in plan.steps.iter().flat_map(|s| &s.writes) {
        if let SmpWrite::Lft {
            switch,
            block,
            old,
            new,
        } = w
        {
            let (o, n) = (*old, *new);
            ends.entry((switch.0, *block))
                .and_modify(|e| e.1 = n)
                .or_insert((o, n));
        }
    }
    ends.into_iter()
        .map(|((g, b), (o, n))| {
            // LID 0 is no LID: dump_fts never shows it.
            let now: Vec<u8> = (0..64u16)
                .map(|k| {
                    let lid = b * 64 + k;
                    if lid == 0 {
                        0xff
                    } else {
                        lfts.get(&(g, lid)).copied().unwrap_or(0xff)
                    }
                })
                .collect();
            let strip = |mut v: [u8; 64]| {
                if b == 0 {
                    v[0] = 0xff;
                }
                v.to_vec()
            };
            let h = if now == strip(n) {
                "new"
            } else if now == strip(o) {
                "old"
            } else {
                "other"
            };
            ((g, b), h)
        })
        .collect()
}

/// What a run of `weft apply` said the fabric holds: `new`, `old`, `neither`, or `refused`
/// (nothing written).
fn said(out: &ibsim::ClientOutput) -> &'static str {
    let o = &out.stdout;
    match out.status.code() {
        Some(0) if o.contains("the fabric holds the new state") => "new",
        Some(1) if o.contains("the fabric holds the old state (rolled back)") => "old",
        Some(1) if o.contains("nothing was written") => "refused",
        Some(2) if o.contains("the fabric holds neither state") => "neither",
        _ => panic!("an apply ended in a way its report does not say:\n{o}"),
    }
}

/// Whether `held` is what `said` says.
fn agrees(said: &str, held: &BTreeMap<(u64, u16), &'static str>) -> bool {
    match said {
        "new" => held.values().all(|h| *h == "new"),
        "old" => held.values().all(|h| *h == "old"),
        "neither" => !held.values().all(|h| *h == "new") && !held.values().all(|h| *h == "old"),
        _ => true,
    }
}

/// Two `weft apply` runs at once through two SM ports (two hosts' HCAs: libumad2sim attached
/// to cn001 and to cn002, each with its own lock directory and journal, as two admins on two
/// machines would be), the second starting after a random offset; 20 runs of one drain plan
/// applied twice, 10 of the two different drains (blocks in common). Whatever the
/// interleaving: never an exit 0 whose tables are not on the fabric afterwards; one plan
/// twice, both reports match `dump_fts`; two plans, the report of the run that ended last
/// matches it (the one that ended first said what held when it ended: the other may have
/// written since, through its own checks).
#[test]
fn two_applies_through_two_sm_ports_never_claim_what_is_not_there() {
    let Some(tools) = ibsim::require("two_applies_at_once", &["opensm", "dump_fts"]) else {
        return;
    };
    let (d, old) = plans("two");
    let sim = start(&tools, &old);
    let plan = |f: &str| Plan::from_json(&std::fs::read_to_string(d.join(f)).unwrap()).unwrap();
    let (pa, pb) = (plan("a.json"), plan("b.json"));
    let host = |name: &str| {
        let f = &old.fabric;
        format!("H-{:016x}", f.node(f.find(name).unwrap()).guid().0)
    };
    let (ha, hb) = (host("cn001"), host("cn002"));
    let weft_bin = crate::support::WEFT;
    let mut rng = weft_tests::Rng(0x5eed_0025);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for run in 0..30 {
        let (second, pair) = if run < 20 {
            ("a.json", "same")
        } else {
            ("b.json", "two")
        };
        load_old(&sim, &d, &old);
        let dir = |w: &str| {
            let p = d.join(format!("run{run}-{w}"));
            std::fs::create_dir_all(&p).unwrap();
            p
        };
        let (da, db) = (dir("a"), dir("b"));
        let args = |plan: &str, w: &Path| -> Vec<String> {
            vec![
                "apply".into(),
                d.join(plan).to_str().unwrap().into(),
                "--target".into(),
                "mad".into(),
                "--lock-dir".into(),
                w.to_str().unwrap().into(),
                "--journal".into(),
                w.join("plan.journal").to_str().unwrap().into(),
                // A Set every 20 ms: the two writers' steps interleave.
                "--smp-gap-ms".into(),
                "20".into(),
            ]
        };
        let aa = args("a.json", &da);
        let ab = args(second, &db);
        let spawn = |args: &[String], host: &str| {
            sim.spawn_env(
                weft_bin,
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
                &[("SIM_HOST", host)],
            )
            .unwrap()
        };
        // Either may start first, up to 0.4 s before the other.
        let offset = Duration::from_millis(rng.below(400) as u64);
        let (a, b) = if rng.below(2) == 0 {
            let a = spawn(&aa, &ha);
            std::thread::sleep(offset);
            (a, spawn(&ab, &hb))
        } else {
            let b = spawn(&ab, &hb);
            std::thread::sleep(offset);
            (spawn(&aa, &ha), b)
        };
        // Which ends last.
        let (mut a, mut b) = (a, b);
        let mut ended: Vec<char> = Vec::new();
        let t0 = Instant::now();
        while ended.len() < 2 {
            if !ended.contains(&'a') && !a.running() {
                ended.push('a');
            }
            if !ended.contains(&'b') && !b.running() {
                ended.push('b');
            }
            assert!(t0.elapsed() < Duration::from_secs(300), "run {run}: hung");
            std::thread::sleep(Duration::from_millis(5));
        }
        let oa = a.wait(Duration::from_secs(1)).unwrap();
        let ob = b.wait(Duration::from_secs(1)).unwrap();
        let lfts = fabric_lfts(&sim);
        let pb_ = if pair == "same" { &pa } else { &pb };
        let (sa, sb) = (said(&oa), said(&ob));
        let (ha_, hb_) = (held(&pa, &lfts), held(pb_, &lfts));
        let show = || {
            format!("run {run} ({pair}): a said {sa}:\n{}\nb said {sb}:\n{}\nheld a {ha_:?}\nheld b {hb_:?}", oa.stdout, ob.stdout)
        };
        // Never an exit 0 whose tables are not on the fabric.
        if sa == "new" {
            assert!(ha_.values().all(|h| *h == "new"), "{}", show());
        }
        if sb == "new" {
            assert!(hb_.values().all(|h| *h == "new"), "{}", show());
        }
        if pair == "same" {
            assert!(agrees(sa, &ha_) && agrees(sb, &hb_), "{}", show());
        } else {
            let last = if ended.last() == Some(&'a') {
                (sa, &ha_)
            } else {
                (sb, &hb_)
            };
            assert!(agrees(last.0, last.1), "{}", show());
        }
        *seen.entry(format!("{pair}: {sa}/{sb}")).or_insert(0) += 1;
    }
    // Every run ended with two reports the checks above accepted.
    assert_eq!(seen.values().sum::<usize>(), 30, "{seen:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A journal that stops growing under a running apply over MADs (the file size limit lowered
/// to the journal's size once the first step began: its end cannot be recorded, EFBIG): the
/// step lands on the switches, the apply rolls it back without the journal and exits 1, and
/// `dump_fts` shows the old tables; recovery then closes the journal, writing nothing.
#[test]
fn a_journal_that_stops_growing_rolls_back_over_mads() {
    let Some(tools) = ibsim::require("journal_efbig_mad", &["opensm", "dump_fts"]) else {
        return;
    };
    let (d, old) = plans("efbig");
    let sim = start(&tools, &old);
    load_old(&sim, &d, &old);
    let before = fabric_lfts(&sim);
    let journal = d.join("a.journal");
    let lock = d.to_str().unwrap().to_owned();
    let a = d.join("a.json");
    let args = [
        "-c",
        "trap '' XFSZ; exec \"$0\" \"$@\"",
        crate::support::WEFT,
        "apply",
        a.to_str().unwrap(),
        "--target",
        "mad",
        "--lock-dir",
        &lock,
        "--journal",
        journal.to_str().unwrap(),
        "--smp-gap-ms",
        "300",
    ];
    let child = sim.spawn_env("sh", &args, &[]).unwrap();
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        if text.contains("{\"event\":\"begin\",\"step\":0}") {
            let pid = rustix::process::Pid::from_raw(child.pid() as i32).unwrap();
            let size = text.len() as u64;
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
            t0.elapsed() < Duration::from_secs(120),
            "the first step never began"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait(Duration::from_secs(300)).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stdout.contains("the journal could not be written")
            && out
                .stdout
                .contains("the fabric holds the old state (rolled back)"),
        "{}",
        out.stdout
    );
    assert_eq!(fabric_lfts(&sim), before, "dump_fts shows the old tables");
    let o = sim
        .run_env(
            crate::support::WEFT,
            &[
                "apply",
                "--target",
                "mad",
                "--recover",
                journal.to_str().unwrap(),
                "--lock-dir",
                &lock,
            ],
            &[],
            Duration::from_secs(120),
        )
        .unwrap();
    assert!(
        o.stdout
            .contains("the fabric holds the old state: 0 steps landed, 0 Set"),
        "{}",
        o.stdout
    );
    let _ = std::fs::remove_dir_all(&d);
}
