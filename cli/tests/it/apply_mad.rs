//! `weft apply --target mad` on ibsim with the 648-node tree: real SMPs through libibmad
//! (preloaded with libumad2sim). The initial deployment of a `weft build` directory onto
//! switches that forward nothing equals the compiled tables in `dump_fts`. With OpenSM having
//! loaded the old tables (file engine, weft's LIDs), a drain plan around a cable lands and
//! `dump_fts` shows the new tables entry for entry (nothing else changed); the same plan again
//! is refused (its blocks moved on) with nothing written; a plan whose cable was disabled in
//! ibsim after planning is refused naming the link, nothing written; an apply SIGKILLed
//! mid-plan, then `--recover`, leaves the old tables exactly.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::weft;
use std::path::Path;
use std::time::Duration;
use weft_fabric::ValidState;
use weft_formats::plan::Plan;
use weft_formats::state_json::FromJson;
use weft_tests::ibsim::{self, Ibsim, Limits};
use weft_tests::lft_entries;

/// The 648-node example without its closing brace (faults go after it).
fn tree() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = std::fs::read_to_string(root.join("examples/cluster-648.weft")).unwrap();
    let i = src.rfind('}').unwrap();
    src[..i].to_owned()
}

fn load(path: &Path) -> ValidState {
    ValidState::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Builds the 648-node tree and a drain plan taking `leaf5.p[25]` out of use; starts ibsim on it
/// and has OpenSM load the old tables. Returns the simulator, the work directory, and the old
/// and new states.
fn setup(tools: &ibsim::Tools) -> (Ibsim, crate::support::Scratch, ValidState, ValidState) {
    setup_with(tools, &format!("{}}}\n", tree()))
}

/// [`setup`] with `old_src` (the 648-node tree and what follows it, closing brace included)
/// as the old fabric, the drain the new one.
fn setup_with(
    tools: &ibsim::Tools,
    old_src: &str,
) -> (Ibsim, crate::support::Scratch, ValidState, ValidState) {
    let i = old_src.rfind('}').unwrap();
    let (d, old, new) = build_and_plan(
        "drain",
        old_src,
        &format!(
            "{}    faults {{\n        link leaf5.p[25] down\n    }}\n}}\n",
            &old_src[..i]
        ),
        &["--drain"],
    );
    let sim = started_on(tools, &d, &old);
    (sim, d, old, new)
}

/// In a fresh work directory: `old.weft` built into `old/`, and `weft plan` (with `args`) from
/// its state to `new.weft` into `plan.json`, the end state into `new.json`. The directory and
/// the two states.
fn build_and_plan(
    name: &str,
    old_src: &str,
    new_src: &str,
    args: &[&str],
) -> (crate::support::Scratch, ValidState, ValidState) {
    let d = crate::support::scratch(&format!("apply-mad-{name}-{}", rand_suffix()));
    weft_tests::build_and_plan(Path::new(crate::support::WEFT), &d, old_src, new_src, args);
    let (old, new) = (load(&d.join("old/state.json")), load(&d.join("new.json")));
    (d, old, new)
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn fabric_lfts(sim: &Ibsim) -> std::collections::BTreeMap<(u64, u16), u8> {
    sim.lfts().unwrap()
}

fn apply(sim: &Ibsim, args: &[&str]) -> ibsim::ClientOutput {
    let weft = crate::support::WEFT;
    let mut a = vec!["apply", "--target", "mad"];
    a.extend(args);
    sim.run_any(weft, &a, &[], Duration::from_secs(120))
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

/// Changing the routing engine of a live fabric: from `layered` to `fat_tree` on the 648-node
/// tree. No order of block writes keeps every switch-to-switch route, so the plan takes the
/// destinations on the transient credit loops out of service and restores them last
/// (break-before-make). Over MADs on ibsim it is proven again with its drops, lands, reports
/// each drop's measured outage, and `dump_fts` shows the new tables.
#[test]
fn an_engine_change_lands_over_mads_through_break_before_make() {
    let Some(tools) = ibsim::require("an_engine_change_lands_over_mads", &["opensm", "dump_fts"])
    else {
        return;
    };
    let old_src = tree()
        .replace("engine = fat_tree", "engine = layered")
        .replace("        switch_to_switch = sftree\n", "")
        + "}\n";
    assert!(old_src.contains("engine = layered"));
    let (d, old, new) = build_and_plan("engine", &old_src, &format!("{}}}\n", tree()), &[]);
    let sim = started_on(&tools, &d, &old);
    assert_eq!(fabric_lfts(&sim), lft_entries(&old));
    engine_change_lands(&sim, &d, Duration::from_secs(120));
    assert_eq!(
        fabric_lfts(&sim),
        lft_entries(&new),
        "dump_fts shows the new tables"
    );
}

/// ibsim on `old`'s fabric, its tables (`dir/old/lfts.dump`) loaded by OpenSM.
fn started_on(tools: &ibsim::Tools, dir: &Path, old: &ValidState) -> Ibsim {
    let net = weft_formats::ibnetdiscover::write(&old.fabric, Some(&old.lids)).unwrap();
    let sim = Ibsim::start(tools, &net, Some(Limits::for_fabric(&old.fabric))).unwrap();
    sim.load_with_opensm(&dir.join("old/lfts.dump"), old)
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    sim
}

/// Applies `dir/plan.json` (break-before-make) over MADs on `sim` within `limit`: every step
/// lands with its SMPs, and each step that drops destinations has its measured outage
/// reported.
fn engine_change_lands(sim: &Ibsim, dir: &Path, limit: Duration) {
    let plan = dir.join("plan.json");
    let p = Plan::from_json(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let drops = p.steps.iter().filter(|s| !s.drops.is_empty()).count();
    assert!(drops > 0, "a break-before-make plan");
    let lock = dir.to_str().unwrap().to_owned();
    let o = sim.run_any(
        crate::support::WEFT,
        &[
            "apply",
            "--target",
            "mad",
            plan.to_str().unwrap(),
            "--lock-dir",
            &lock,
        ],
        &[],
        limit,
    );
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.starts_with(&format!(
            "the fabric holds the new state: {} steps landed, {} Set",
            p.steps.len(),
            p.smps()
        )),
        "{}",
        o.stdout
    );
    assert_eq!(
        o.stdout
            .lines()
            .filter(|l| l.starts_with("outage: "))
            .count(),
        drops,
        "{}",
        o.stdout
    );
}

/// The 11 664-node tree's engine change, `fat_tree` → `updn` from `core1`, planned for every
/// pair of ports (the switch LIDs and then the hosts go through break-before-make) and applied
/// over MADs on ibsim (1 620 switches): every step lands, each drop's outage is measured, and
/// `weft audit` reads back exactly the new tables. Big examples only:
/// `WEFT_BIG_EXAMPLES=1 cargo test --release -p weft --test it apply_mad::an_engine_change_of_the_11664`
/// took 262 s (4 min 22 s wall, the builds, the plan, ibsim's start and OpenSM's load
/// included; load average 6 to 8 on 2 cores).
#[test]
fn an_engine_change_of_the_11664_node_tree_lands_over_mads() {
    if !crate::support::big_examples() {
        return;
    }
    let Some(tools) = ibsim::require("an_engine_change_of_the_11664_node_tree", &["opensm"]) else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let old_src = std::fs::read_to_string(root.join("examples/cluster-11664.weft")).unwrap();
    let new_src = old_src
        .replace(
            "engine = fat_tree",
            "engine = updn\n        roots = [core1]",
        )
        .replace("        switch_to_switch = sftree\n", "");
    assert!(new_src.contains("roots = [core1]") && !new_src.contains("sftree"));
    let (d, old, new) = build_and_plan("engine-11664", &old_src, &new_src, &[]);
    let sim = started_on(&tools, &d, &old);
    engine_change_lands(&sim, &d, Duration::from_secs(3600));
    let weft = crate::support::WEFT;
    let (st, _) = sim.audit_state(weft, &d.join("audited.json"), Duration::from_secs(1800));
    assert!(
        lft_entries(&st) == lft_entries(&new),
        "weft audit reads back the new tables"
    );
    let _ = std::fs::remove_dir_all(&d);
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
    let weft = crate::support::WEFT;
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
    let d = crate::support::scratch("apply-mad-648");
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
    // Applying it again finds nothing to write (one SMP at a time this time).
    let o = apply(
        &sim,
        &[out.to_str().unwrap(), "--lock-dir", &lock, "--window", "1"],
    );
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    assert_eq!(
        o.stdout,
        "the fabric already runs this state: nothing to write\n"
    );
}

/// Asserts two sets of LFT entries are equal, naming the first differences (not printing
/// them whole).
fn same_lfts(
    found: &std::collections::BTreeMap<(u64, u16), u8>,
    want: &std::collections::BTreeMap<(u64, u16), u8>,
    at: &str,
) {
    let keys: std::collections::BTreeSet<_> = found.keys().chain(want.keys()).collect();
    let odd: Vec<String> = keys
        .into_iter()
        .filter(|k| found.get(k) != want.get(k))
        .map(|k| {
            format!(
                "{:#x} LID {}: {:?} not {:?}",
                k.0,
                k.1,
                found.get(k),
                want.get(k)
            )
        })
        .collect();
    assert!(
        odd.is_empty(),
        "{at}: {} entries differ: {:?}",
        odd.len(),
        &odd[..odd.len().min(8)]
    );
}

/// The 648-node tree with tenant VMs on cn101..=cn136 (four VFs each, dynamic LIDs), `web`
/// on `web_host`. Three VMs, so the highest LID (705) is not a multiple of 64: `ibroute` (and
/// `dump_fts`) read the blocks below `ALIGN(LinearFDBTop, 64) / 64` and so never show the top
/// LID when it is one.
fn with_vms(web_host: &str) -> String {
    format!(
        "{}    tenant cloud {{\n        pkey = 0x8001\n        vms on cn101..=cn136 {{ vfs_per_host = 4, lids = dynamic }}\n        vm web on {web_host}\n        vm db on cn102\n        vm cache on cn103\n    }}\n}}\n",
        tree()
    )
}

/// A VF's LID and P_Keys as `smpquery` reads them by directed route (keys 0 dropped).
fn vf_on_wire(sim: &Ibsim, path: &str) -> (u16, Vec<u16>) {
    let run = |what: &str| {
        sim.run_retrying(
            "smpquery",
            &["-D", what, path],
            Duration::from_secs(30),
            Duration::from_secs(60),
        )
        .unwrap()
        .stdout
    };
    let info = run("portinfo");
    let lid = info
        .lines()
        .find_map(|l| l.strip_prefix("Lid:"))
        .map(|v| v.trim_start_matches('.').trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no Lid in {info}"));
    let keys = run("pkeys");
    let keys = keys
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|h| u16::from_str_radix(h, 16).ok())
        .filter(|k| *k != 0)
        .collect();
    (lid, keys)
}

/// A VM migration over MADs: ibsim models each hypervisor's vSwitch as Paper A says the SM
/// sees it (a switch with the PF and one adapter per VF behind it). The initial deployment
/// of the build writes the LFTs and the VFs' P_Keys; then `web` moves cn101 → cn120 (across
/// leaves) and the plan's SMPs — LFT blocks and each VF's LID and P_Keys — are exactly the
/// Sets sent: `dump_fts` shows the planned tables, `smpquery` the VFs as planned, and no
/// other LFT entry changed.
#[test]
fn a_vm_migration_sends_exactly_the_planned_smps_over_mads() {
    let Some(tools) = ibsim::require("a_vm_migration_over_mads", &["dump_fts", "smpquery"]) else {
        return;
    };
    let (d, old, new) = build_and_plan("vm", &with_vms("cn101"), &with_vms("cn120"), &[]);
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let (net, modelled) = ibsim::vswitched_net(old.state());
    std::fs::write(d.join("vswitched.net"), &net).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&modelled.fabric))).unwrap();
    let lock = d.to_str().unwrap().to_owned();
    // The initial deployment: LFTs, P_Keys and VFs as the build says.
    let o = apply(&sim, &[&p("old"), "--lock-dir", &lock]);
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    same_lfts(
        &fabric_lfts(&sim),
        &lft_entries(&old),
        "after the initial deployment",
    );
    let vf_path = |host: &str, vf: u8| {
        ibsim::dr_path(
            &modelled.fabric,
            modelled.fabric.find(&format!("{host}-vf{vf}")).unwrap(),
        )
    };
    let vf_of = |st: &ValidState, vm: &str| {
        let v = st
            .lids
            .vports
            .iter()
            .find(|v| v.vm.as_deref() == Some(vm))
            .unwrap();
        (
            st.fabric.node(v.host.node).name().to_owned(),
            v.vf,
            v.lid.unwrap().0,
        )
    };
    let (from_host, from_vf, lid) = vf_of(&old, "web");
    let (to_host, to_vf, to_lid) = vf_of(&new, "web");
    assert_eq!((from_host.as_str(), to_host.as_str()), ("cn101", "cn120"));
    assert_eq!(lid, to_lid, "dynamic LIDs move with the VM");
    let (l, keys) = vf_on_wire(&sim, &vf_path(&from_host, from_vf));
    assert_eq!(l, lid);
    assert!(keys.contains(&0x8001), "{keys:x?}");
    assert_eq!(vf_on_wire(&sim, &vf_path(&to_host, to_vf)).0, 0);

    let plan = Plan::from_json(&std::fs::read_to_string(d.join("plan.json")).unwrap()).unwrap();
    let o = apply(&sim, &[&p("plan.json"), "--lock-dir", &lock]);
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.starts_with(&format!(
            "the fabric holds the new state: {} steps landed, {} Set",
            plan.steps.len(),
            plan.smps()
        )),
        "{}",
        o.stdout
    );
    assert!(
        plan.lft_smps() >= 1 && plan.smps() == plan.lft_smps() + 4,
        "{}",
        plan.smps()
    );
    same_lfts(
        &fabric_lfts(&sim),
        &lft_entries(&new),
        "dump_fts after the migration",
    );
    assert_eq!(
        vf_on_wire(&sim, &vf_path(&from_host, from_vf)).0,
        0,
        "web left cn101"
    );
    let (l, keys) = vf_on_wire(&sim, &vf_path(&to_host, to_vf));
    assert_eq!(l, lid, "web runs on cn120 with its LID");
    assert!(keys.contains(&0x8001), "{keys:x?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The re-proof over MADs of a migration on ibsim's vSwitches shown as switches covers the
/// VM's LID: the plan with its LFT steps in reverse (the source side first, a transient loop
/// toward the VM's LID) is refused naming the loop, and no table changed.
#[test]
fn a_reversed_migration_is_refused_by_its_proof_over_mads() {
    let Some(tools) = ibsim::require("a_reversed_migration_over_mads", &["dump_fts"]) else {
        return;
    };
    let (d, old, _) = build_and_plan("vm-rev", &with_vms("cn101"), &with_vms("cn120"), &[]);
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let (net, modelled) = ibsim::vswitched_net(old.state());
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&modelled.fabric))).unwrap();
    let lock = d.to_str().unwrap().to_owned();
    let o = apply(&sim, &[&p("old"), "--lock-dir", &lock]);
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    let mut plan = Plan::from_json(&std::fs::read_to_string(d.join("plan.json")).unwrap()).unwrap();
    assert!(plan.steps.len() > 2, "{}", plan.steps.len());
    plan.steps[1..].reverse();
    std::fs::write(d.join("reversed.json"), plan.to_json()).unwrap();
    let o = apply(&sim, &[&p("reversed.json"), "--lock-dir", &lock]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("not safe on the fabric as it runs")
            && o.stderr.contains("transient forwarding loop"),
        "{}",
        o.stderr
    );
    same_lfts(&fabric_lfts(&sim), &lft_entries(&old), "after the refusal");
    let _ = std::fs::remove_dir_all(&d);
}

/// A drain on a fabric with VMs whose vSwitches the fabric does not show (ibsim's plain net
/// file: the hypervisors cabled to their leaves, no VF on the wire): the plan lands, and the
/// apply says that the routes toward the VFs' LIDs were not proven again on the fabric.
#[test]
fn a_drain_on_a_fabric_that_shows_no_vfs_says_their_routes_were_not_proven_again() {
    let Some(tools) = ibsim::require("a_drain_with_hidden_vfs", &["opensm", "dump_fts"]) else {
        return;
    };
    let (sim, d, _, new) = setup_with(&tools, &with_vms("cn101"));
    let plan = d.join("plan.json");
    let lock = d.to_str().unwrap().to_owned();
    let o = apply(&sim, &[plan.to_str().unwrap(), "--lock-dir", &lock]);
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains(
            "note: 144 of the 144 VFs of the plan's vSwitch hypervisors are not on the \
             fabric as read; routes toward their LIDs were proven when the plan was made, not \
             again on the fabric"
        ),
        "{}",
        o.stdout
    );
    // OpenSM's file engine loads no entry for a LID it did not assign (the VFs'): compare the
    // rest.
    let mut want = lft_entries(&new);
    let vf_lids: std::collections::BTreeSet<u16> = new
        .lids
        .vports
        .iter()
        .filter_map(|v| v.lid.map(|l| l.0))
        .collect();
    want.retain(|(_, lid), _| !vf_lids.contains(lid));
    let mut got = fabric_lfts(&sim);
    got.retain(|(_, lid), _| !vf_lids.contains(lid));
    same_lfts(&got, &want, "after the drain");
}
