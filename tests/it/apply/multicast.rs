//! `weft apply` writing multicast forwarding tables: MFT blocks one per step, every fault at
//! every MFT write ending old or new, a block that moved on refused.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use super::*;

/// A two-level tree of 36-port switches (three MFT positions), two leaves of 18 hosts and two
/// spines,
/// with `groups` multicast groups `(MLID, root switch, members)` built by hand
/// ([`weft_tests::multicast_tree`]).
fn multicast(groups: &[(u16, &str, &[&str])]) -> ValidState {
    let base = compiled(&xgft_source(2, &[18, 2], &[1, 2], "", ""));
    let mut st = base.state().clone();
    for (mlid, root, members) in groups {
        let m = weft_tests::multicast_tree(&st, *mlid, root, members);
        st.multicast.groups.extend(m.groups);
        for (sw, t) in m.mfts {
            let mft = st.multicast.mfts.entry(sw).or_default();
            for (l, mask) in t.entries() {
                mft.set(l, mask);
            }
        }
    }
    st.multicast.normalize();
    ValidState::new(st).unwrap()
}

/// The groups the multicast tests use: the IPoIB broadcast group over hosts of both leaves
/// (ports 16 and above of a switch are in its MFT's second position), and a second group in
/// block 1.
const GROUPS: &[(u16, &str, &[&str])] = &[
    (
        0xc000,
        "spine1",
        &["cn001", "cn017", "cn018", "cn019", "cn036"],
    ),
    (0xc021, "spine2", &["cn002", "cn020"]),
];

/// Every MFT of `st` by switch GUID: how two fabrics whose node ids differ are compared.
fn mfts_by_guid(st: &FabricState) -> std::collections::BTreeMap<u64, weft_fabric::Mft> {
    st.multicast
        .mfts
        .iter()
        .map(|(id, t)| (st.fabric.node(*id).guid().0, t.clone()))
        .collect()
}

/// The simulated fabric holds a state's MFTs, and `weft audit` reads them back over SMPs
/// (MulticastFDBTop, then each block at each position): the same tables, and no group (no SMP
/// carries membership).
#[test]
fn the_sim_holds_mfts_and_the_audit_reads_them_back() {
    let st = multicast(GROUPS);
    assert!(st.fabric.nodes().iter().any(|n| n.spec.port_count > 16));
    let sm = sm_port(&st);
    let mut sim = SimFabric::new(&st, sm).unwrap();
    let want = mfts_by_guid(&st);
    assert_eq!(want.len(), 4, "both spines and both leaves forward");
    assert_eq!(sim.tables().mfts, want);
    let read = weft_deploy::audit::audit(&mut sim, "t").unwrap();
    assert_eq!(mfts_by_guid(&read.state), want);
    assert!(read.state.multicast.groups.is_empty());
    // The audited state validates (masks over each switch's own ports).
    ValidState::new(read.state).unwrap();
}

/// A plan to a state with multicast: each MFT write its own step (one block at one position),
/// after the LFT steps; on the sim every block lands, MulticastFDBTop is raised on each switch
/// (one SwitchInfo Set each), and the fabric then holds exactly the desired MFTs.
#[test]
fn a_plan_writes_mft_blocks_one_per_step_and_they_land() {
    let old = multicast(&[]);
    let new = multicast(GROUPS);
    let p = plan(&old, &new, &Options::default()).unwrap();
    let mfts: Vec<&weft_formats::plan::PlanStep> = p
        .plan
        .steps
        .iter()
        .filter(|s| {
            s.writes
                .iter()
                .any(|w| matches!(w, weft_formats::plan::SmpWrite::Mft { .. }))
        })
        .collect();
    // Both groups sit in blocks 0 and 1 (0xc021); leaves write two positions where a member
    // is above port 15.
    assert!(mfts.iter().all(|s| s.writes.len() == 1));
    assert_eq!(mfts.len(), p.plan.smps());
    assert_eq!(
        p.stats.iter().map(|s| s.mft_blocks).sum::<usize>(),
        mfts.len()
    );
    let sm = sm_port(old.state());
    let mut sim = SimFabric::new(old.state(), sm).unwrap();
    let dir = tmp("mft-clean");
    let r = apply(&mut sim, &p.plan, &options(&dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(
        &sim.tables(),
        &SimFabric::new(new.state(), sm).unwrap().tables(),
        "",
    );
    assert_eq!(sim.tables().mfts, mfts_by_guid(new.state()));
    // The plan's Sets and one MulticastFDBTop raise per switch with a tree.
    assert_eq!(sim.counts().sets, p.plan.smps() + 4);
}

/// A tree moved to another root: the ports the new tree does not use are taken away first
/// (before any LFT step), the new ones added last; every fault at every SMP ends in exactly
/// the old MFTs or the new ones, and a crash recovers back or forward exactly.
#[test]
fn every_fault_at_every_mft_write_ends_old_or_new() {
    let members: &[&str] = &["cn001", "cn019", "cn020"];
    let old = multicast(&[(0xc000, "spine1", members)]);
    let new = multicast(&[(0xc000, "spine2", members)]);
    let p = plan(&old, &new, &Options::default()).unwrap();
    let kinds: Vec<(u8, usize)> = p
        .plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .map(|w| match w {
            weft_formats::plan::SmpWrite::Mft { old, new, .. } => {
                let (o, n) = (
                    weft_plan::mft::block_masks(old),
                    weft_plan::mft::block_masks(new),
                );
                // 1: only takes ports away; 2: only adds.
                let removes = o.iter().zip(&n).all(|(a, b)| b & !a == 0);
                (if removes { 1 } else { 2 }, 1)
            }
            _ => (0, 1),
        })
        .collect();
    let phases: Vec<u8> = kinds.iter().map(|k| k.0).collect();
    let mut sorted = phases.clone();
    sorted.sort_unstable();
    assert_eq!(phases, sorted, "removals first, then additions: {phases:?}");
    assert!(phases.contains(&1) && phases.contains(&2), "{phases:?}");
    let (sets, seen) = fault_matrix("matrix-mft", old.state(), new.state(), &p.plan);
    assert_eq!(sets, p.plan.smps());
    assert_eq!(seen.values().sum::<usize>(), 7 * sets, "{seen:?}");
    assert_eq!(
        seen.get("Crash → crashed, recovered"),
        Some(&sets),
        "{seen:?}"
    );
    assert_eq!(
        seen.get("Reject { status: 28 } → Old"),
        Some(&sets),
        "{seen:?}"
    );
}

/// A block the plan writes that holds a mask the plan does not expect (another writer's) is
/// refused before anything is written.
#[test]
fn an_mft_block_that_moved_on_is_refused_before_any_write() {
    let old = multicast(&[]);
    let new = multicast(GROUPS);
    let p = plan(&old, &new, &Options::default()).unwrap();
    // The fabric runs a stray entry in block 0 of a switch the plan writes.
    let mut stray = old.state().clone();
    let leaf = stray.fabric.find("leaf1").unwrap();
    stray.multicast.mfts.entry(leaf).or_default().set(
        weft_fabric::Mlid::new(0xc001).unwrap(),
        weft_fabric::PortMask::of([weft_fabric::PortNum(3)]),
    );
    let sm = sm_port(&stray);
    let mut sim = SimFabric::new(&stray, sm).unwrap();
    let before = sim.tables();
    let dir = tmp("mft-moved");
    let e = apply(&mut sim, &p.plan, &options(&dir), &mut |_| {}).unwrap_err();
    assert_eq!(sim.counts().sets, 0, "{e}");
    same_at(&sim.tables(), &before, "");
}

/// A link failure that moves both the unicast routes and a multicast tree: the ports the old
/// tree loses go first, then the LFT steps, then the ports the new tree gains; every fault at
/// every SMP ends in exactly the old state or the new one.
#[test]
fn a_link_failure_moving_routes_and_a_tree_lands_old_or_new() {
    let members: &[&str] = &["cn001", "cn019", "cn020"];
    let src = |faults: &str| xgft_source(2, &[18, 2], &[1, 2], faults, "");
    let with_tree = |st: ValidState, root: &str| {
        let mut s = st.state().clone();
        s.multicast = weft_tests::multicast_tree(&s, 0xc000, root, members);
        ValidState::new(s).unwrap()
    };
    let old = with_tree(compiled(&src("")), "spine1");
    let down = compiled(&src("        link leaf1.p[19] down\n"));
    // The failed cable is leaf1's to spine1: the new tree hangs from spine2.
    let new = with_tree(down, "spine2");
    let p = plan(&old, &new, &Options::default()).unwrap();
    let kind = |s: &weft_formats::plan::PlanStep| match s.writes.first() {
        Some(weft_formats::plan::SmpWrite::Mft { old, new, .. }) => {
            let (o, n) = (
                weft_plan::mft::block_masks(old),
                weft_plan::mft::block_masks(new),
            );
            if o.iter().zip(&n).all(|(a, b)| b & !a == 0) {
                'r'
            } else {
                'a'
            }
        }
        _ => 'l',
    };
    let order: String = p.plan.steps.iter().map(kind).collect();
    let trimmed: String = {
        let mut o: Vec<char> = order.chars().collect();
        o.dedup();
        o.into_iter().collect()
    };
    assert_eq!(trimmed, "rla", "{order}");
    let start = weft_plan::start(&old, &new, Mode::Fault).unwrap();
    let (sets, seen) = fault_matrix("matrix-mft-lft", start.state(), p.end.state(), &p.plan);
    assert_eq!(seen.values().sum::<usize>(), 7 * sets, "{seen:?}");
    assert_eq!(p.end.multicast.mfts, new.multicast.mfts);
}
