//! Multicast forwarding tables written with `weft apply --target mad` on ibsim and read back
//! with the real tools: OpenSM (file engine) loads weft's unicast tables, a plan to the same
//! state with a hand-made multicast tree (two groups, masks in every MFT position a 36-port
//! switch has) is applied over real SMPs, and `ibroute -M` (infiniband-diags) and `weft audit
//! --target mad` both read back exactly the desired MFTs.
//!
//! ibsim's switches do not support MulticastFDBTop (their SwitchInfo holds 0 there and ignores
//! a Set of it; `ibroute -M -v` prints "top is 0x0"): `weft apply` raises no top on them and
//! `weft audit` reads every block up to their MulticastFDBCap (1024 MLIDs, 32 blocks).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::weft;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use weft_fabric::{FabricState, Mft, ValidState};
use weft_formats::state_json::{FromJson, ToJson};
use weft_tests::ibsim::{self, Ibsim, Limits};

/// A two-level tree of 36-port switches: two leaves of 18 hosts (on ports 1–18; the uplinks
/// above port 15, in the MFT's second position), two spines.
fn tree() -> String {
    weft_tests::xgft_source(2, &[18, 2], &[1, 2], "", "")
}

/// Every non-empty MFT of `st`, by switch GUID.
fn by_guid(st: &FabricState, mfts: &BTreeMap<weft_fabric::NodeId, Mft>) -> BTreeMap<u64, Mft> {
    mfts.iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(id, t)| (st.fabric.node(*id).guid().0, t.clone()))
        .collect()
}

/// `old` with two groups: the IPoIB broadcast group 0xC000 from the last switch (a spine) over
/// the first, 17th and last hosts, and 0xC041 (block 2) from the first switch (a leaf) over
/// the second and last.
fn with_groups(old: &ValidState) -> ValidState {
    let f = &old.fabric;
    let hosts: Vec<&str> = f
        .nodes()
        .iter()
        .filter(|n| !n.is_switch())
        .map(|n| n.name())
        .collect();
    let switches: Vec<&str> = f
        .nodes()
        .iter()
        .filter(|n| n.is_switch())
        .map(|n| n.name())
        .collect();
    let (first, second, last) = (hosts[0], hosts[1], hosts[hosts.len() - 1]);
    let mut st = old.state().clone();
    for (mlid, root, members) in [
        (
            0xc000,
            switches[switches.len() - 1],
            vec![first, hosts[16], last],
        ),
        (0xc041, switches[0], vec![second, last]),
    ] {
        let m = weft_tests::multicast_tree(&st, mlid, root, &members);
        st.multicast.groups.extend(m.groups);
        for (sw, t) in m.mfts {
            for (l, mask) in t.entries() {
                st.multicast.mfts.entry(sw).or_default().set(l, mask);
            }
        }
    }
    st.multicast.normalize();
    ValidState::new(st).unwrap()
}

#[test]
fn mfts_written_over_mads_read_back_with_ibroute_and_weft_audit() {
    let Some(tools) = ibsim::require("mfts_written_over_mads", &["opensm", "ibroute"]) else {
        return;
    };
    let d = crate::support::scratch("mft-mad");
    let p = |f: &str| d.join(f).to_string_lossy().into_owned();
    std::fs::write(d.join("t.weft"), tree()).unwrap();
    let o = weft(&["build", &p("t.weft"), "-o", &p("old"), "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let old =
        ValidState::from_json(&std::fs::read_to_string(d.join("old/state.json")).unwrap()).unwrap();
    let new = with_groups(&old);
    let want = by_guid(new.state(), &new.multicast.mfts);
    // Masks in two positions (ports 0–15 and 16–31) of the 36-port switches.
    let positions: std::collections::BTreeSet<u8> = want
        .values()
        .flat_map(|t| t.entries())
        .flat_map(|(_, m)| m.iter().map(|p| p.0 / 16))
        .collect();
    assert!(positions.len() >= 2, "{positions:?}");
    std::fs::write(d.join("new.json"), new.state().to_json()).unwrap();
    let o = weft(&[
        "plan",
        "--from",
        &p("old/state.json"),
        &p("new.json"),
        "--full",
        "-o",
        &p("plan.json"),
    ]);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains(
            "  step 1: 1 MFT block(s); multicast only, no unicast route changes: the state it \
             leaves proven (one SMP: no mix)\n"
        ),
        "{shown}"
    );
    let plan =
        weft_formats::plan::Plan::from_json(&std::fs::read_to_string(d.join("plan.json")).unwrap())
            .unwrap();
    assert!(plan
        .steps
        .iter()
        .all(|s| s.writes.len() == 1
            && matches!(s.writes[0], weft_formats::plan::SmpWrite::Mft { .. })));

    let net = weft_formats::ibnetdiscover::write(&old.fabric, Some(&old.lids)).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&old.fabric))).unwrap();
    sim.load_with_opensm(&d.join("old/lfts.dump"), &old)
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    let weft_bin = crate::support::WEFT;
    let o = sim
        .run_env(
            weft_bin,
            &[
                "apply",
                "--target",
                "mad",
                &p("plan.json"),
                "--lock-dir",
                &p(""),
            ],
            &[],
            Duration::from_secs(120),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        o.stdout.starts_with("the fabric holds the new state"),
        "{}\n{}",
        o.stdout,
        o.stderr
    );

    // `ibroute -M` of every switch, by its LID.
    let mut text = String::new();
    for (id, ports) in &old.lids.base {
        if !old.fabric.node(*id).is_switch() {
            continue;
        }
        let lid = ports.values().next().unwrap().0.to_string();
        let out = sim
            .run_retrying(
                "ibroute",
                &["-M", &lid],
                Duration::from_secs(60),
                Duration::from_secs(120),
            )
            .unwrap();
        text += &out.stdout;
    }
    let (read, problems) = weft_formats::opensm::parse_mfts(&text, &old.fabric).unwrap();
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    assert_eq!(by_guid(old.state(), &read.tables), want, "{text}");

    // `weft audit` reads the same tables (and no group: no SMP carries membership).
    let (st, o) = sim.audit_state(weft_bin, &d.join("audited.json"), Duration::from_secs(120));
    assert_eq!(by_guid(st.state(), &st.multicast.mfts), want);
    assert!(st.multicast.groups.is_empty());
    assert!(
        o.stdout.contains(&format!(
            "{} switch(es) forward multicast by their MFTs; group membership is the SA's, not \
             on the fabric: no groups",
            want.len()
        )),
        "{}",
        o.stdout
    );
}

/// `ibroute -M` on every switch of `st` (by directed route: a fresh ibsim has no LIDs, and a
/// build directory's deployment sets none), parsed: every non-empty MFT by switch GUID.
fn ibroute_all(sim: &Ibsim, st: &ValidState) -> BTreeMap<u64, Mft> {
    let mut text = String::new();
    for id in st.fabric.node_ids() {
        if !st.fabric.node(id).is_switch() {
            continue;
        }
        let path = ibsim::dr_path(&st.fabric, id);
        text += &sim
            .run_retrying(
                "ibroute",
                &["-M", "-D", &path],
                Duration::from_secs(60),
                Duration::from_secs(300),
            )
            .unwrap()
            .stdout;
    }
    let (read, problems) = weft_formats::opensm::parse_mfts(&text, &st.fabric).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    by_guid(st.state(), &read.tables)
}

/// Builds `example` with the IPoIB broadcast group and two declared groups (one of every
/// host, at an MLID in block 15; one of three hosts), has OpenSM load its LIDs and LFTs on
/// ibsim, deploys the build directory over real SMPs (`weft apply out/ --target mad`: the
/// MFTs, in proven steps), and reads
/// the MFTs back with `ibroute -M` on every switch and with `weft audit --target mad`: both
/// equal the compiled tables, and the audit proves the union of unicast and multicast.
/// Returns what `weft audit` printed and whether it exited 0 (`None`: the tools are missing).
fn compiled_mfts_land_over_mads(
    example: &str,
    edit: impl Fn(String) -> String,
    hosts: [&str; 3],
) -> Option<(String, bool)> {
    let tools = ibsim::require(
        &format!("compiled_mfts_land_over_mads({example})"),
        &["opensm", "ibroute"],
    )?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let d = crate::support::scratch(&format!(
        "mft-compiled-{}",
        example.trim_end_matches(".weft")
    ));
    let src = edit(std::fs::read_to_string(root.join("examples").join(example)).unwrap());
    let i = src.rfind('}').unwrap();
    let [a, b, c] = hosts;
    let src = format!(
        "{}    multicast {{\n        ipoib = true\n        group jobs {{ mlid = 0xc041, members = [{a}, {b}, {c}] }}\n        group all_hosts {{ mlid = 0xc1ff, members = all }}\n    }}\n}}\n",
        &src[..i]
    );
    std::fs::write(d.join("t.weft"), src).unwrap();
    let out = d.join("out");
    let o = weft(&[
        "build",
        d.join("t.weft").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state =
        ValidState::from_json(&std::fs::read_to_string(out.join("state.json")).unwrap()).unwrap();
    assert_eq!(
        state
            .multicast
            .groups
            .iter()
            .map(|g| g.mlid.get())
            .collect::<Vec<_>>(),
        [0xc000, 0xc041, 0xc1ff]
    );
    let want = by_guid(state.state(), &state.multicast.mfts);
    // Every switch with a host is in a tree (`all_hosts` has every host).
    let f = &state.fabric;
    for id in f.node_ids().filter(|&n| f.node(n).is_switch()) {
        let has_host = f.node(id).ports.iter().any(|p| {
            f.peer(weft_fabric::PortRef::new(id, p.num.0))
                .is_some_and(|(far, _)| !f.node(far.node).is_switch())
        });
        if has_host {
            assert!(
                want.contains_key(&f.node(id).guid().0),
                "{}",
                f.node(id).name()
            );
        }
    }
    let net = std::fs::read_to_string(out.join("topology.net")).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&state.fabric))).unwrap();
    // OpenSM (file engine, once, with the build's QoS settings) sets the build's LIDs, loads
    // its LFTs and its SL→VL tables; weft then writes the MFTs (the rest already holds what
    // the build wants).
    let conf = out.join("opensm.conf");
    sim.load_with_opensm_qos(
        &out.join("lfts.dump"),
        &state,
        conf.exists().then_some(conf.as_path()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    let weft_bin = crate::support::WEFT;
    // A build directory is planned from what the fabric runs, which `weft apply` refuses
    // when the build sets SL→VL tables (writing them over SMPs is not built): then the way
    // is a plan file from the build's state without MFTs, whose SL→VL OpenSM loaded.
    let what = if conf.exists() {
        let mut from = state.state().clone();
        from.multicast.mfts.clear();
        std::fs::write(d.join("from.json"), from.to_json()).unwrap();
        let o = weft(&[
            "plan",
            "--from",
            d.join("from.json").to_str().unwrap(),
            out.join("state.json").to_str().unwrap(),
            "-o",
            d.join("plan.json").to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        d.join("plan.json")
    } else {
        out.clone()
    };
    let lock = d.to_str().unwrap().to_owned();
    let mut args = vec![
        "apply",
        what.to_str().unwrap(),
        "--target",
        "mad",
        "--lock-dir",
        &lock,
    ];
    if conf.exists() {
        // Re-proven on what a fabric shows (every path and copy on SL 0: SLs are the SA's),
        // the trees the build put on a lane of their own close a credit loop: refused,
        // nothing written. `--no-reprove` writes the plan on the proof it carries.
        let o = match sim.run_env(weft_bin, &args, &[], Duration::from_secs(600)) {
            Err(ibsim::IbsimError::Failed { output, .. }) => output,
            r => panic!("the re-proof let it through: {r:?}"),
        };
        assert!(
            o.stderr.contains("not deadlock_free; nothing was written")
                && o.stderr.contains("[weft::deploy::unsafe_step]"),
            "{}",
            o.stderr
        );
        assert!(ibroute_all(&sim, &state).is_empty(), "nothing was written");
        args.push("--no-reprove");
    }
    let o = sim
        .run_env(weft_bin, &args, &[], Duration::from_secs(1800))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        o.stdout.contains("the fabric holds the new state"),
        "{}\n{}",
        o.stdout,
        o.stderr
    );
    assert_eq!(ibroute_all(&sim, &state), want, "ibroute -M");
    let (st, o) = sim.audit_state(weft_bin, &d.join("audited.json"), Duration::from_secs(1800));
    assert_eq!(by_guid(st.state(), &st.multicast.mfts), want, "weft audit");
    // No group travels in an SMP: the audit infers the three MLIDs' members from the masks,
    // on SL 0.
    assert!(
        o.stdout.contains(
            "traffic: unicast and multicast (3 groups; members of 3 inferred from the MFTs, SL 0)"
        ),
        "{}",
        o.stdout
    );
    let _ = std::fs::remove_dir_all(&d);
    Some((o.stdout, o.status.success()))
}

/// The 648-node example's compiled trees, written and read back (see
/// [`compiled_mfts_land_over_mads`]); the audit proves the union of unicast and multicast.
#[test]
fn compiled_mfts_of_the_648_node_tree_land_over_mads() {
    if let Some((out, ok)) =
        compiled_mfts_land_over_mads("cluster-648.weft", |s| s, ["cn001", "cn300", "cn648"])
    {
        assert!(ok, "{out}");
    }
}

/// The 4×4 torus routed `layered`, its compiled trees written and read back. The build puts
/// the IPoIB and all-hosts trees on SL 1, a VL no unicast route takes (no layer's VL admits
/// them). A fabric does not show a group's SL (the SA's): counted on SL 0, those trees close
/// a credit loop with the unicast routes, so `weft apply`'s re-proof refuses the plan
/// (nothing written) until `--no-reprove`, and the audit refutes deadlock freedom — the
/// compiler's own reason for the lane.
#[test]
fn compiled_mfts_of_a_layered_torus_land_over_mads() {
    let Some((out, ok)) = compiled_mfts_land_over_mads(
        "torus-4x4.weft",
        |s| s.replace("engine = updn", "engine = layered"),
        ["h1", "h9", "h32"],
    ) else {
        return;
    };
    assert!(!ok, "{out}");
    assert!(out.contains("credit loop"), "{out}");
}

/// The same for the 11 664-node example (release mode, `WEFT_BIG_EXAMPLES=1`: 1 620 switches
/// in ibsim).
#[test]
fn compiled_mfts_of_the_11664_node_tree_land_over_mads() {
    if !crate::support::big_examples() {
        return;
    }
    if let Some((out, ok)) = compiled_mfts_land_over_mads(
        "cluster-11664.weft",
        |s| s,
        ["cn00001", "cn05000", "cn11664"],
    ) {
        assert!(ok, "{out}");
    }
}
