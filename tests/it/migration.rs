//! VM migration plans (Paper A) on real trees: a move inside one leaf is one LFT SMP; a move
//! across the tree writes at most two SMPs per switch, only on the skyline FTreeMinRC marks;
//! every step is proven, the writes replay onto the old tables to exactly the plan's end state,
//! which is proven on its own; the source side first (a bad order) is caught with the
//! transient loop. Prepopulated LIDs swap. The 11 664-node tree (Table 2's numbers) with
//! `WEFT_BIG_EXAMPLES=1` (release, in CI).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    clippy::print_stderr,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use weft_fabric::ValidState;
use weft_formats::plan::SmpWrite;
use weft_plan::migrate::{LidMove, Marking};
use weft_plan::{check_steps, plan, Options, Target};
use weft_tests::{compiled, example};
use weft_verifier::transition::Entry;
use weft_verifier::{Outcome, Property, Scope};

/// The example with a tenant whose VMs run on `pool` (`vms on POOL { … }`), placed as `vms`.
fn with_vms(src: &str, pool: &str, scheme: &str, vms: &[(&str, &str)]) -> String {
    let i = src.rfind('}').unwrap();
    // Where the SM runs (isolation is proven only where it is known), unless the example says.
    let sm = if src.contains("\n    sm on ") {
        ""
    } else {
        "    sm on leaf1\n"
    };
    let mut t = format!(
        "    tenant cloud {{\n        pkey = 0x8001\n        vms on {pool} {{ vfs_per_host = 4, lids = {scheme} }}\n"
    );
    for (vm, host) in vms {
        t += &format!("        vm {vm} on {host}\n");
    }
    format!("{}{sm}{t}    }}\n}}\n", &src[..i])
}

fn by_guid(st: &ValidState) -> std::collections::BTreeMap<weft_fabric::Guid, Vec<u8>> {
    st.switches
        .iter()
        .map(|(&id, t)| (st.fabric.node(id).guid(), t.lft.ports.clone()))
        .collect()
}

/// Plans `old` → `new` (VMs moved) and checks what the plan promises: every LFT step proven,
/// the VF step first, the writes replaying onto the old tables to the end state's, the end
/// state proven (routes and isolation) with the moved VMs' LIDs on their new hypervisors.
fn migrated(old: &ValidState, new: &ValidState) -> weft_plan::Planned {
    let p = plan(old, new, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let Target::Migration { moves, why } = &p.target else {
        panic!("not a migration: {:?}", p.target)
    };
    assert_eq!(why, &None, "the skyline's plan is proven");
    assert!(!moves.is_empty());
    assert!(matches!(p.plan.steps[0].writes[0], SmpWrite::Vport { .. }));
    assert_eq!(p.checks.len(), p.plan.steps.len() - 1);
    for c in &p.checks {
        assert!(c.is_proven(), "{c:?}");
    }
    assert_eq!(p.checks.last().unwrap().failing_after, 0);
    let mut tables = by_guid(old);
    p.plan.replay_lfts(&mut tables).unwrap();
    assert_eq!(tables, by_guid(&p.end));
    let report = weft_verifier::verify(
        &p.end,
        &weft_verifier::Options {
            properties: vec![
                Property::DeadlockFree,
                Property::Connected,
                Property::Isolated,
            ],
            ..Default::default()
        },
    );
    assert!(report.is_proven(), "{:?}", report.properties);
    for m in moves {
        let v = p
            .end
            .lids
            .vports
            .iter()
            .find(|v| v.vm.as_deref() == Some(m.vm.as_str()))
            .unwrap();
        assert_eq!(v.lid.map(|l| l.0), Some(m.lid), "{} keeps its LID", m.vm);
        assert_eq!(m.marking, Marking::Skyline);
    }
    p
}

/// The LFT steps in reverse (the source side first) from the state where the LIDs have moved:
/// a transient forwarding loop.
fn reverse_is_caught(old: &ValidState, p: &weft_plan::Planned) {
    let mut start = old.state().clone();
    start.lids.vports = p.end.lids.vports.clone();
    let start = ValidState::new(start).unwrap();
    let reversed: Vec<weft_formats::plan::PlanStep> = p.plan.steps[1..]
        .iter()
        .rev()
        .map(|s| weft_formats::plan::PlanStep::of(s.writes.clone()))
        .collect();
    let checks = check_steps(&start, &reversed, Scope::All, &Default::default());
    let bad = checks.last().unwrap();
    assert_eq!(bad.loop_free, Outcome::Violated, "{bad:?}");
    let l = bad.forwarding_loop.as_ref().unwrap();
    assert!(l.hops.iter().any(|h| h.entry == Entry::After), "{l:?}");
}

const VMS: &[(&str, &str)] = &[("web", "cn001"), ("db", "cn002"), ("cache", "cn019")];

/// The 648-node tree, dynamic LIDs: inside one leaf, 1 LFT SMP; across the tree, only the
/// skyline (both leaves, their spines), at most one SMP per switch; the source side first is
/// caught.
#[test]
fn dynamic_moves_on_648() {
    let src = example("cluster-648.weft");
    let pool = "cn001..=cn036";
    let old = compiled(&with_vms(&src, pool, "dynamic", VMS));
    // web: cn001 → cn005, the same leaf (18 hosts per leaf).
    let near = compiled(&with_vms(
        &src,
        pool,
        "dynamic",
        &[("web", "cn005"), VMS[1], VMS[2]],
    ));
    let p = migrated(&old, &near);
    assert_eq!(p.plan.lft_smps(), 1);
    assert_eq!(p.plan.smps(), 1 + 2 * 2, "one LFT block and two VFs");
    let Target::Migration { moves, .. } = &p.target else {
        unreachable!()
    };
    assert_eq!((moves[0].marked, moves[0].updated), (1, 1));
    assert!(matches!(moves[0].how, LidMove::Copy { .. }));
    // db: cn002 (leaf1) → cn030 (leaf2): both leaves and the 18 spines.
    let far = compiled(&with_vms(
        &src,
        pool,
        "dynamic",
        &[VMS[0], ("db", "cn030"), VMS[2]],
    ));
    let p = migrated(&old, &far);
    let Target::Migration { moves, .. } = &p.target else {
        unreachable!()
    };
    assert_eq!(moves[0].marked, 2 + 18);
    assert!(p.plan.lft_smps() <= moves[0].marked && p.plan.lft_smps() >= 2);
    // 702 physical LIDs and 3 VMs: LIDs up to 705, 12 blocks on each of 54 switches; one
    // P_Key block of each of the 648 hosts (the tenant gives every end port a table); the
    // LID and P_Key table of each of the 144 VFs.
    assert_eq!(p.end.lids.vports.len(), 144);
    assert_eq!(p.full_reconfiguration, 54 * 12 + 648 + 2 * 144);
    reverse_is_caught(&old, &p);
    // The checker rolled back after a plan plans the same again (and as a fresh one does).
    let moves = weft_plan::migrate::moves(&old, &far).unwrap().unwrap();
    let mut m = weft_plan::migrate::Migrator::new(&old, Scope::All);
    m.checkpoint();
    let first = m
        .migrate(&moves, &far.lids.vports, Marking::Skyline)
        .unwrap();
    m.rollback();
    let again = m
        .migrate(&moves, &far.lids.vports, Marking::Skyline)
        .unwrap();
    assert_eq!(first.steps, again.steps);
    assert_eq!(first.checks, again.checks);
    assert_eq!(first.steps, p.plan.steps);
    // Moving it back is a migration too: its LID takes cn002's own route (the copy), not
    // vSwitchFatTree's first choice, so only the entries that differ from cn002's are written.
    let back = migrated(&p.end, &old);
    assert!(back.plan.lft_smps() <= p.plan.lft_smps());
}

/// Prepopulated LIDs: the VM keeps its LID and swaps it with the destination VF's; inside one
/// leaf both LIDs share a block (one SMP); the VF left holds the other LID.
#[test]
fn prepopulated_swap_on_648() {
    let src = example("cluster-648.weft");
    let pool = "cn001..=cn036";
    let old = compiled(&with_vms(&src, pool, "prepopulated", VMS));
    let near = compiled(&with_vms(
        &src,
        pool,
        "prepopulated",
        &[("web", "cn003"), VMS[1], VMS[2]],
    ));
    let p = migrated(&old, &near);
    let Target::Migration { moves, .. } = &p.target else {
        unreachable!()
    };
    let LidMove::Swap { other } = moves[0].how else {
        panic!("{:?}", moves[0].how)
    };
    assert_eq!(other / 64, moves[0].lid / 64, "one block");
    assert_eq!(p.plan.lft_smps(), 1);
    let left = p
        .end
        .lids
        .vports
        .iter()
        .find(|v| p.end.fabric.node(v.host.node).name() == "cn001" && v.vf == 0)
        .unwrap();
    assert_eq!(
        (left.vm.as_deref(), left.lid.map(|l| l.0)),
        (None, Some(other))
    );
    let far = compiled(&with_vms(
        &src,
        pool,
        "prepopulated",
        &[VMS[0], ("db", "cn036"), VMS[2]],
    ));
    let p = migrated(&old, &far);
    assert!(p.plan.lft_smps() <= 2 * 54);
}

/// Paper A, Table 2 on the 11 664-node tree: inside one leaf 1 SMP; the worst case (between
/// the tree's edges) at most 2 × 1 620 switches and 3 240 SMPs; a full reconfiguration 336 960.
#[test]
fn table_2_on_11664() {
    if !weft_tests::big_examples() {
        return;
    }
    let src = example("cluster-11664.weft");
    let pool = "[cn00001, cn00002, cn11664]";
    let vms = [("web", "cn00001"), ("db", "cn00002")];
    let old = compiled(&with_vms(&src, pool, "dynamic", &vms));
    let near = compiled(&with_vms(
        &src,
        pool,
        "dynamic",
        &[("web", "cn00002"), vms[1]],
    ));
    let p = migrated(&old, &near);
    assert_eq!(p.plan.lft_smps(), 1);
    // Every LFT block, one P_Key block per host, two SMPs per VF.
    let full = 336_960 + 11_664 + 2 * p.end.lids.vports.len() as u64;
    assert_eq!(p.full_reconfiguration, full);
    let far = compiled(&with_vms(
        &src,
        pool,
        "dynamic",
        &[("web", "cn11664"), vms[1]],
    ));
    let p = migrated(&old, &far);
    let Target::Migration { moves, .. } = &p.target else {
        unreachable!()
    };
    // Both leaves, both pods' 18 spines, the 324 cores.
    assert_eq!(moves[0].marked, 2 + 36 + 324);
    assert!(p.plan.lft_smps() <= 3240 && p.plan.lft_smps() <= 2 * 1620);
    assert_eq!(p.full_reconfiguration, full);
    reverse_is_caught(&old, &p);
}

/// The VFs are end ports of their own for `isolated`: the compiled tables are proven isolated,
/// and a VM's VF given another tenant's key is a leak naming the VF and the host.
#[test]
fn vf_pkey_tables_are_checked() {
    let src = example("cluster-648.weft");
    let text = with_vms(&src, "cn001..=cn036", "dynamic", VMS);
    let j = text.rfind('}').unwrap();
    let text = format!(
        "{}    tenant alice {{ pkey = 0x8002, hosts = cn100..=cn110 }}\n}}\n",
        &text[..j]
    );
    let st = compiled(&text);
    let iso = weft_verifier::isolation::check(&st, 5);
    assert_eq!(iso.outcome, Outcome::Proven, "{iso:?}");
    // cn001's PF, its VF with `web`, and the free VFs are all compared.
    assert!(iso.ports > 11 + 36 + 3, "{}", iso.ports);
    let mut bad = st.state().clone();
    let v = bad
        .lids
        .vports
        .iter_mut()
        .find(|v| v.vm.as_deref() == Some("web"))
        .unwrap();
    v.pkeys.as_mut().unwrap().push(weft_fabric::PKey(0x8002));
    let bad = ValidState::new(bad).unwrap();
    let iso = weft_verifier::isolation::check(&bad, 5);
    assert_eq!(iso.outcome, Outcome::Violated);
    let b = &iso.breaches[0];
    let names = format!("{} {}", b.a.node.name, b.b.node.name);
    assert!(
        names.contains("VF 0 (web)") && names.contains("cn1"),
        "{}",
        b.describe()
    );
}

/// Random cases: XGFTs of two and three levels (and, for ItRC, irregular fabrics), random VMs
/// on a random pool, dynamic or prepopulated, one to three random moves. Every plan's LFT
/// steps are proven, replay onto the old tables to the end state's, and every state between
/// whole steps is proven deadlock-free by the verifier on its own; the end state is proven
/// (routes and isolation), each moved VM keeping its LID on its new hypervisor. On trees the
/// skyline's plan is proven; elsewhere, when it is not, every switch is considered, and said.
#[test]
fn random_moves_are_proven() {
    let cases: usize = std::env::var("WEFT_MIGRATION_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let shapes: &[(usize, &[u32], &[u32])] = &[
        (2, &[4, 4], &[1, 2]),
        (2, &[6, 3], &[1, 3]),
        (3, &[3, 2, 2], &[1, 2, 2]),
        (3, &[4, 2, 3], &[1, 2, 3]),
    ];
    let mut rng = weft_tests::Rng(0x5eed_0017);
    // (migrations planned, of them on every switch, swaps, refusals on irregular fabrics)
    let mut seen = (0, 0, 0, 0);
    for case in 0..cases {
        let irregular = case % 5 == 4;
        let base = if irregular {
            let switches = 4 + rng.below(4);
            weft_tests::irregular_source(&mut rng, switches, "t")
        } else {
            let (h, m, w) = shapes[rng.below(shapes.len())];
            weft_tests::xgft_source(h, m, w, "", "    routing { engine = fat_tree }\n")
        };
        let base_state = compiled(&base);
        let hosts: Vec<String> = base_state
            .fabric
            .nodes()
            .iter()
            .filter(|n| !n.is_switch())
            .map(|n| n.name().to_owned())
            .collect();
        // The SM on the first switch (so that `isolated` knows where it runs).
        let sm = base_state
            .fabric
            .nodes()
            .iter()
            .find(|n| n.is_switch())
            .map(|n| format!("    sm on {}\n", n.name()))
            .unwrap_or_default();
        let vfs = 1 + rng.below(3);
        let scheme = ["dynamic", "prepopulated"][rng.below(2)];
        // VMs on random hypervisors with a free VF.
        let mut load = vec![0usize; hosts.len()];
        let place = |load: &mut Vec<usize>, rng: &mut weft_tests::Rng| loop {
            let h = rng.below(hosts.len());
            if load[h] < vfs {
                load[h] += 1;
                return h;
            }
        };
        // At most all VFs but one, so a move always finds a free VF.
        let n = 1 + rng.below((hosts.len() * vfs - 1).clamp(1, 6));
        let mut vms: Vec<(String, usize)> = (0..n)
            .map(|i| (format!("vm{i}"), place(&mut load, &mut rng)))
            .collect();
        let program = |vms: &[(String, usize)]| {
            let mut t = format!(
                "    tenant cloud {{\n        pkey = 0x8001\n        vms on [{}] {{ vfs_per_host = {vfs}, lids = {scheme} }}\n",
                hosts.join(", ")
            );
            for (vm, h) in vms {
                t += &format!("        vm {vm} on {}\n", hosts[*h]);
            }
            let i = base.rfind('}').unwrap();
            format!("{}{t}    }}\n{sm}}}\n", &base[..i])
        };
        let old = compiled(&program(&vms));
        let moved = 1 + rng.below(3.min(n));
        for vm in vms.iter_mut().take(moved) {
            let to = place(&mut load, &mut rng);
            load[vm.1] -= 1;
            vm.1 = to;
        }
        let new = compiled(&program(&vms));
        let p = match plan(&old, &new, &Options::default()) {
            Ok(p) => p,
            // Layered routes on an irregular fabric: the moved LID's path SLs (its layer) may
            // differ from the routes it takes, which is refused as not built, or no order may
            // be safe; either way a refusal with its reason, never a plan.
            Err(
                e @ (weft_plan::PlanError::Unplanned(_) | weft_plan::PlanError::NoSafeOrder { .. }),
            ) if irregular => {
                assert!(!e.to_string().is_empty());
                seen.3 += 1;
                continue;
            }
            Err(e) => panic!("case {case} ({scheme}, irregular {irregular}): {e}"),
        };
        let Target::Migration { moves, why } = &p.target else {
            // Every move landed back on its own hypervisor.
            assert!(p.plan.steps.is_empty(), "case {case}: {:?}", p.target);
            continue;
        };
        if !irregular {
            assert_eq!(why, &None, "case {case}");
        }
        seen.0 += 1;
        seen.1 += usize::from(why.is_some());
        seen.2 += moves
            .iter()
            .filter(|m| matches!(m.how, LidMove::Swap { .. }))
            .count();
        for c in &p.checks {
            assert!(c.is_proven(), "case {case}: {c:?}");
        }
        let mut tables = by_guid(&old);
        p.plan.replay_lfts(&mut tables).unwrap();
        assert_eq!(tables, by_guid(&p.end), "case {case}");
        // Each state between whole steps, on its own.
        let mut st = old.state().clone();
        st.lids.vports = p.end.lids.vports.clone();
        let mut shadow = by_guid(&old);
        for step in &p.plan.steps[1..] {
            let one = weft_formats::plan::Plan {
                steps: vec![step.clone()],
                ..p.plan.clone()
            };
            one.replay_lfts(&mut shadow).unwrap();
            for (id, t) in &mut st.switches {
                t.lft.ports = shadow[&st.fabric.node(*id).guid()].clone();
            }
            let mid = ValidState::new(st.clone()).unwrap();
            let r = weft_verifier::verify(
                &mid,
                &weft_verifier::Options {
                    properties: vec![Property::DeadlockFree],
                    ..Default::default()
                },
            );
            assert!(r.is_proven(), "case {case}: a state between steps");
        }
        let r = weft_verifier::verify(
            &p.end,
            &weft_verifier::Options {
                properties: vec![
                    Property::DeadlockFree,
                    Property::Connected,
                    Property::Isolated,
                ],
                ..Default::default()
            },
        );
        assert!(r.is_proven(), "case {case}: the end state");
        for m in moves {
            let v = p
                .end
                .lids
                .vports
                .iter()
                .find(|v| v.vm.as_deref() == Some(m.vm.as_str()))
                .unwrap();
            assert_eq!(v.lid.map(|l| l.0), Some(m.lid), "case {case}");
            assert_eq!(
                v.host.node,
                new.fabric.find(m.to.split('`').nth(1).unwrap()).unwrap()
            );
        }
    }
    // The cases reach what they are for: migrations and swaps. (On the irregular fabrics the
    // two switches' copies route a moved VM through its old switch, proven so far: every switch
    // is considered only when that is not.)
    eprintln!("{cases} cases: {seen:?} (migrations, on every switch, swaps, refused)");
    assert!(seen.0 >= cases / 2 && seen.2 > 0, "{seen:?}");
}

/// What a migration plan refuses, as not built yet: VMs trading places with no spare VF, VM
/// moves with `--full`, VM moves together with a fault.
#[test]
fn migration_refusals() {
    let src = example("vswitch-fig2.weft")
        .replace("vfs_per_host = 4", "vfs_per_host = 1")
        .lines()
        .filter(|l| !l.contains("vm vm") || l.contains("vm1") || l.contains("vm8"))
        .collect::<Vec<_>>()
        .join("\n");
    let old = compiled(&src);
    let refused = |new: &ValidState, opts: &Options| match plan(&old, new, opts) {
        Err(weft_plan::PlanError::Unplanned(why)) => why,
        other => panic!("{:?}", other.map(|p| p.target)),
    };
    let swap = compiled(
        &src.replace("vm vm1 on vsw1", "vm vm1 on vsw4")
            .replace("vm vm8 on vsw4", "vm vm8 on vsw1"),
    );
    assert!(refused(&swap, &Options::default()).contains("trading places"));
    let moved_src = src.replace("vm vm1 on vsw1", "vm vm1 on vsw2");
    let moved = compiled(&moved_src);
    let full = Options {
        full: true,
        ..Options::default()
    };
    assert!(refused(&moved, &full).contains("--full"));
    let i = moved_src.rfind('}').unwrap();
    let faulty = compiled(&format!(
        "{}    faults {{ link leaf1.p[11] down }}\n}}\n",
        &moved_src[..i]
    ));
    assert!(refused(&faulty, &Options::default()).contains("plan them apart"));
    // The move alone is planned.
    assert!(matches!(
        plan(&old, &moved, &Options::default()).unwrap().target,
        Target::Migration { .. }
    ));
    // With a multicast tree to write besides: refused, not planned without it.
    let mut st = moved.state().clone();
    let (leaf, port) = (st.fabric.find("leaf1").unwrap(), weft_fabric::PortNum(0));
    st.multicast.mfts.entry(leaf).or_default().set(
        weft_fabric::Mlid::new(0xc000).unwrap(),
        weft_fabric::PortMask::of([port]),
    );
    let with_tree = ValidState::new(st).unwrap();
    match plan(&old, &with_tree, &Options::default()) {
        Err(weft_plan::PlanError::NotBuilt("MFTs")) => {}
        other => panic!("{:?}", other.map(|p| p.target)),
    }
}

/// A VF whose P_Key table differs from the desired state's (the VMs where they were) is
/// written whole with its LID unchanged, as a port's table is: what goes away in the P_Key
/// step that takes keys away (its full default membership made limited), the rest in the
/// next; nothing else.
#[test]
fn a_vf_p_key_table_that_differs_is_written() {
    let src = example("cluster-648.weft");
    let want = compiled(&with_vms(
        &src,
        "cn001..=cn036",
        "dynamic",
        &[("web", "cn003")],
    ));
    let mut st = want.state().clone();
    let v = st
        .lids
        .vports
        .iter_mut()
        .find(|v| v.vm.as_deref() == Some("web"))
        .unwrap();
    v.pkeys = Some(vec![weft_fabric::PKey(0xffff)]);
    let (guid, lid) = (v.guid, v.lid.map(|l| l.0));
    let cur = ValidState::new(st).unwrap();
    let p = plan(&cur, &want, &Options::default()).unwrap();
    assert_eq!(p.plan.steps.len(), 2, "{:?}", p.plan.steps);
    let mut tables = vec![vec![0xffff]];
    for s in &p.plan.steps {
        let [SmpWrite::Vport {
            guid: g,
            old_lid,
            new_lid,
            old_pkeys,
            new_pkeys,
            ..
        }] = s.writes.as_slice()
        else {
            panic!("{:?}", s.writes)
        };
        assert_eq!((*g, *old_lid, *new_lid), (guid, lid, lid));
        assert_eq!(Some(old_pkeys), tables.last());
        tables.push(new_pkeys.clone());
    }
    assert_eq!(tables[1], [0x7fff]);
    assert!(tables[2].contains(&0x8001), "{:x?}", tables[2]);
    assert_eq!(p.plan.smps(), 4);
}

/// Whether two P_Key tables let their ports talk: a key in both, one of them a full member.
fn talk(a: &[u16], b: &[u16]) -> bool {
    a.iter().any(|&x| {
        x & 0x7fff != 0
            && b.iter()
                .any(|&y| y & 0x7fff == x & 0x7fff && (x | y) & 0x8000 != 0)
    })
}

/// A VF's P_Key table that changes while a physical port's does (the VF leaves partition A
/// for B while the port, in C, joins A): in no mix of the landed writes of any step do the
/// VF and the port talk unless the old tables or the new ones let them — the VF loses A in
/// the step that takes keys away, before the port gains it.
#[test]
fn a_vf_p_key_change_keeps_isolation_in_every_mix() {
    let src = example("vswitch-fig2.weft");
    let base = compiled(&src);
    let st = base.state();
    let f = &st.fabric;
    let x = weft_fabric::PortRef::new(f.find("vsw4").unwrap(), 1);
    let xg = f.node(x.node).guid();
    // vm1's VF in partition `vf` (alone unless it is the tenant's), vsw4's port in `port`.
    let with = |vf: u16, port: u16| {
        let mut s = st.clone();
        let v = s
            .lids
            .vports
            .iter_mut()
            .find(|v| v.vm.as_deref() == Some("vm1"))
            .unwrap();
        v.pkeys = Some(vec![weft_fabric::PKey(0x7fff), weft_fabric::PKey(vf)]);
        s.ports.entry(x).or_default().pkeys =
            Some(vec![weft_fabric::PKey(0x7fff), weft_fabric::PKey(port)]);
        let full = weft_fabric::Membership::Full;
        let cloud = &mut s.partitions[0];
        cloud.vms.remove("vm1");
        let mut others = Vec::new();
        for (name, key) in [("vf", vf), ("port", port)] {
            if key & 0x7fff == cloud.pkey {
                if name == "vf" {
                    cloud.vms.insert("vm1".into(), full);
                } else {
                    cloud.members.insert(x, full);
                }
                continue;
            }
            let mut p = cloud.clone();
            p.name = name.into();
            p.pkey = key & 0x7fff;
            p.vms.clear();
            p.members.clear();
            if name == "vf" {
                p.vms.insert("vm1".into(), full);
            } else {
                p.members.insert(x, full);
            }
            others.push(p);
        }
        s.partitions.extend(others);
        ValidState::new(s).unwrap()
    };
    let (old, new) = (with(0x8001, 0x8003), with(0x8002, 0x8001));
    let vf_guid = old
        .state()
        .lids
        .vports
        .iter()
        .find(|v| v.vm.as_deref() == Some("vm1"))
        .unwrap()
        .guid;
    let p = plan(&old, &new, &Options::default()).unwrap();
    let (ok_old, ok_new) = (
        talk(&[0x7fff, 0x8001], &[0x7fff, 0x8003]),
        talk(&[0x7fff, 0x8002], &[0x7fff, 0x8001]),
    );
    assert!(!ok_old && !ok_new);
    // The two tables as the writes leave them: every subset of each step landed, on what
    // the steps before left.
    let (mut vf, mut port) = (vec![0x7fff, 0x8001u16], vec![0x7fff, 0x8003u16]);
    for (i, s) in p.plan.steps.iter().enumerate() {
        let n = s.writes.len();
        assert!(n < 16, "{n} writes");
        let (mut vf_end, mut port_end) = (vf.clone(), port.clone());
        for mask in 0u32..(1 << n) {
            let (mut a, mut b) = (vf.clone(), port.clone());
            for (k, w) in s.writes.iter().enumerate() {
                let landed = mask & (1 << k) != 0;
                match w {
                    SmpWrite::Vport {
                        guid, new_pkeys, ..
                    } if *guid == vf_guid && landed => a = new_pkeys.clone(),
                    SmpWrite::Pkeys {
                        node,
                        port: 1,
                        block: 0,
                        new,
                        ..
                    } if *node == xg && landed => b = new.clone(),
                    _ => {}
                }
            }
            assert!(
                !talk(&a, &b),
                "step {}: the VF ({a:x?}) and vsw4 ({b:x?}) talk in a mix of {:?}",
                i + 1,
                s.writes
            );
            if mask == (1 << n) - 1 {
                (vf_end, port_end) = (a, b);
            }
        }
        (vf, port) = (vf_end, port_end);
    }
    let trim = |mut t: Vec<u16>| {
        t.retain(|&k| k != 0);
        t
    };
    assert_eq!(
        (trim(vf), trim(port)),
        (vec![0x7fff, 0x8002], vec![0x7fff, 0x8001])
    );
}
