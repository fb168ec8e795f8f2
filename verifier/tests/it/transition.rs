//! `transition` against brute force: random small fabrics, a step of a few LFT entries (taken
//! from a second routing of the same fabric), and every one of the 2^m mixes of those entries
//! built as a state and walked route by route with the reference walk. The step is loop-free
//! exactly when no mix has a forwarding loop, connected exactly when every route that arrives
//! before arrives in every mix, and deadlock-free exactly when the dependencies of all mixes
//! together have no cycle. Steps are also checked one after another with [`Transition`]
//! (incremental, kept dependencies and ranks), which must agree with checking each step on its
//! own whenever it proves one.
//!
//! `WEFT_TRANSITION_CASES=N` runs more cases than the default.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{FabricState, Lid, NodeId, ValidState};
use weft_verifier::reference;
use weft_verifier::testkit::{self, Rng};
use weft_verifier::transition::{self, Change, Transition};
use weft_verifier::{FailureReason, Outcome, Scope};

type Chan = (NodeId, u8, u8);

/// `st` with `changes` written.
fn applied(st: &FabricState, changes: &[Change]) -> FabricState {
    let mut out = st.clone();
    for c in changes {
        out.switches
            .get_mut(&c.switch)
            .unwrap()
            .lft
            .set(c.lid, weft_fabric::PortNum(c.port));
    }
    out
}

/// Sources (end ports and switches' port 0) and owned destination LIDs.
fn endpoints(st: &FabricState) -> (Vec<(NodeId, u8)>, Vec<Lid>) {
    let mut src = Vec::new();
    for (&n, ports) in &st.lids.base {
        for &p in ports.keys() {
            src.push((n, p.0));
        }
    }
    let dst = st
        .lids
        .owners(&st.fabric)
        .iter()
        .enumerate()
        .filter(|(l, o)| *l > 0 && o.is_some())
        .map(|(l, _)| Lid(l as u16))
        .collect();
    (src, dst)
}

/// Every one of the 2^m mixes of `changes` landed on `before`.
fn mixes<'a>(
    before: &'a FabricState,
    changes: &'a [Change],
) -> impl Iterator<Item = FabricState> + 'a {
    (0u32..(1 << changes.len())).map(move |mask| {
        let landed: Vec<Change> = changes
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, c)| *c)
            .collect();
        applied(before, &landed)
    })
}

/// What the mixes of `changes` on `before` do: (some loop, some route that arrives before
/// fails, the dependencies of every mix).
fn brute_force(before: &FabricState, changes: &[Change]) -> (bool, bool, BTreeSet<(Chan, Chan)>) {
    let (srcs, dsts) = endpoints(before);
    let mut arrives = BTreeSet::new();
    for &(s, p) in &srcs {
        for &d in &dsts {
            if reference::walk(before, s, p, d, 0).failure.is_none() {
                arrives.insert((s, p, d));
            }
        }
    }
    let (mut looped, mut broken) = (false, false);
    let mut deps = BTreeSet::new();
    for st in mixes(before, changes) {
        for &(s, p) in &srcs {
            for &d in &dsts {
                let w = reference::walk(&st, s, p, d, 0);
                for pair in w.hops.windows(2) {
                    let (a, b) = (&pair[0], &pair[1]);
                    deps.insert(((a.node, a.out, a.vl), (b.node, b.out, b.vl)));
                }
                match w.failure {
                    Some((_, FailureReason::Loop)) => looped = true,
                    Some(_) if arrives.contains(&(s, p, d)) => broken = true,
                    _ => {}
                }
            }
        }
    }
    (looped, broken, deps)
}

fn cyclic(deps: &BTreeSet<(Chan, Chan)>) -> bool {
    let mut succ: BTreeMap<Chan, Vec<Chan>> = BTreeMap::new();
    for &(a, b) in deps {
        succ.entry(a).or_default().push(b);
    }
    // Kahn: a cycle leaves nodes with indegree.
    let mut indeg: BTreeMap<Chan, usize> = BTreeMap::new();
    for &(a, b) in deps {
        indeg.entry(a).or_default();
        *indeg.entry(b).or_default() += 1;
    }
    let mut ready: Vec<Chan> = indeg
        .iter()
        .filter(|(_, &d)| d == 0)
        .map(|(&c, _)| c)
        .collect();
    let mut done = 0;
    while let Some(c) = ready.pop() {
        done += 1;
        for &b in succ.get(&c).map_or(&[][..], |v| v.as_slice()) {
            let d = indeg.get_mut(&b).unwrap();
            *d -= 1;
            if *d == 0 {
                ready.push(b);
            }
        }
    }
    done < indeg.len()
}

/// `n` random entries of `st`'s switches set to a random port (or none), each (switch, LID)
/// once.
fn random_changes(st: &ValidState, rng: &mut Rng, n: usize) -> Vec<Change> {
    let switches: Vec<NodeId> = st.switches.keys().copied().collect();
    let (_, dsts) = endpoints(st);
    let mut out: Vec<Change> = Vec::new();
    for _ in 0..n {
        let x = switches[rng.below(switches.len() as u64) as usize];
        let lid = dsts[rng.below(dsts.len() as u64) as usize];
        let ports = u64::from(st.fabric.node(x).spec.port_count);
        let port = rng.below(ports) as u8 + 1;
        if !out.iter().any(|c| (c.switch, c.lid) == (x, lid)) {
            out.push(Change {
                switch: x,
                lid,
                port,
            });
        }
    }
    out
}

/// A fabric and two routings of it (same LIDs): up/down (deadlock-free) and min-hop.
fn case(rng: &mut Rng) -> (FabricState, FabricState) {
    let f = match rng.below(3) {
        0 => testkit::ring(3 + rng.below(3) as usize, 1),
        1 => testkit::fat_tree2(1 + rng.below(2) as usize, 2 + rng.below(2) as usize, 1),
        _ => {
            let (n, extra) = (3 + rng.below(3) as usize, rng.below(3) as usize);
            testkit::random_fabric(rng, n, extra, 4, 6)
        }
    };
    let lids = testkit::sequential_lids(&f);
    let a = testkit::route_updown(&f, lids.clone());
    let b = testkit::route_minhop(&f, lids);
    (a, b)
}

#[test]
fn a_step_is_safe_exactly_when_every_mix_is() {
    let cases: u64 = std::env::var("WEFT_TRANSITION_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let mut rng = Rng(0x7a5);
    let mut seen = [0u32; 4];
    for k in 0..cases {
        let (a, b) = match case(&mut rng) {
            (a, b) if rng.below(2) == 0 => (a, b),
            (a, b) => (b, a),
        };
        let (va, vb) = (testkit::valid(a.clone()), testkit::valid(b.clone()));
        let mut all = transition::changes(&va, &vb);
        if all.is_empty() {
            all = random_changes(&va, &mut rng, 6);
        }
        // A step of up to 6 random entries: from the other routing, half of them then sent
        // to a random port or none (loops and dead ends).
        let m = 1 + rng.below(6.min(all.len() as u64)) as usize;
        let mut step: Vec<Change> = Vec::new();
        for _ in 0..m {
            let mut c = all.swap_remove(rng.below(all.len() as u64) as usize);
            if step.iter().any(|x| (x.switch, x.lid) == (c.switch, c.lid)) {
                continue;
            }
            if rng.below(2) == 0 {
                let ports = u64::from(va.fabric.node(c.switch).spec.port_count);
                c.port = match rng.below(ports + 1) {
                    0 => 255,
                    p => p as u8,
                };
            }
            step.push(c);
        }
        let after = testkit::valid(applied(&a, &step));
        let check = transition::check_step(&va, &after, Scope::All).unwrap();
        let (looped, broken, deps) = brute_force(&a, &step);
        assert_eq!(
            check.loop_free == Outcome::Violated,
            looped,
            "case {k}: {check:?}"
        );
        if looped {
            seen[0] += 1;
            continue;
        }
        assert_eq!(
            check.connected == Outcome::Violated,
            broken,
            "case {k}: {check:?}"
        );
        if broken {
            seen[1] += 1;
            continue;
        }
        let cyc = cyclic(&deps);
        assert_eq!(
            check.deadlock_free == Outcome::Violated,
            cyc,
            "case {k}: {check:?}"
        );
        if cyc {
            assert!(!check.credit_loop.is_empty(), "case {k}: a witness");
            seen[2] += 1;
        } else {
            seen[3] += 1;
        }
    }
    assert!(seen.iter().all(|&n| n > 0), "every outcome met: {seen:?}");
}

/// Steps one after another: what [`Transition`] proves, checking each step on its own proves
/// too, and its end state's failing routes are the state's own.
#[test]
fn incremental_steps_agree_with_single_checks() {
    let mut rng = Rng(0x51e9);
    let (mut proven_steps, mut refused) = (0, 0);
    for k in 0..80 {
        // Two-level trees: min-hop routes are up/down there too, so many steps are safe.
        let f = testkit::fat_tree2(
            2 + rng.below(2) as usize,
            2 + rng.below(3) as usize,
            1 + rng.below(3) as usize,
        );
        let lids = testkit::sequential_lids(&f);
        let (a, b) = (
            testkit::route_updown(&f, lids.clone()),
            testkit::route_minhop(&f, lids),
        );
        let (va, _) = (testkit::valid(a.clone()), b);
        let mut all = random_changes(&va, &mut rng, 12);
        let mut t = Transition::new(&va, Scope::All);
        let mut cur = a.clone();
        while !all.is_empty() {
            let m = 1 + rng.below(3.min(all.len() as u64)) as usize;
            let step: Vec<Change> = (0..m)
                .map(|_| all.swap_remove(rng.below(all.len() as u64) as usize))
                .collect();
            let next = applied(&cur, &step);
            let vcur = testkit::valid(cur.clone());
            let vnext = testkit::valid(next.clone());
            let single = transition::check_step(&vcur, &vnext, Scope::All).unwrap();
            let inc = t.step(&step);
            if inc.is_proven() {
                assert!(
                    single.is_proven(),
                    "case {k}: incremental proved what one check refuses: {single:?}"
                );
                proven_steps += 1;
                cur = next;
            } else {
                // Refused: the incremental state stays where it was.
                assert_eq!(inc.loop_free, single.loop_free, "case {k}");
                refused += 1;
            }
        }
        let vcur: ValidState = testkit::valid(cur);
        let (srcs, dsts) = endpoints(&vcur);
        let failing = srcs
            .iter()
            .flat_map(|&(s, p)| dsts.iter().map(move |&d| (s, p, d)))
            .filter(|&(s, p, d)| reference::walk(&vcur, s, p, d, 0).failure.is_some())
            .filter(|&(s, _, d)| reference::owner(&vcur, d).map(|o| o.0) != Some(s))
            .count() as u64;
        assert_eq!(t.failing(), failing, "case {k}");
    }
    assert!(
        proven_steps > 50 && refused > 0,
        "{proven_steps} proven, {refused} refused"
    );
}

/// A transition restored to a snapshot of its start checks every step exactly as a new one
/// does, whatever landed, was refused or was dropped in between.
#[test]
fn a_restored_transition_checks_like_a_new_one() {
    let mut rng = Rng(0x5a9);
    for k in 0..60 {
        let f = testkit::fat_tree2(
            2 + rng.below(2) as usize,
            2 + rng.below(3) as usize,
            1 + rng.below(3) as usize,
        );
        let lids = testkit::sequential_lids(&f);
        let va = testkit::valid(testkit::route_updown(&f, lids));
        let mut t = Transition::new(&va, Scope::All);
        let snap = t.snapshot();
        let mut all = random_changes(&va, &mut rng, 12);
        let probe: Vec<Change> = all.iter().take(3).copied().collect();
        if k % 2 == 0 {
            if let Some(c) = all.first() {
                t.drop_destinations(&[c.lid]);
            }
        }
        while !all.is_empty() {
            let m = 1 + rng.below(3.min(all.len() as u64)) as usize;
            let step: Vec<Change> = (0..m)
                .map(|_| all.swap_remove(rng.below(all.len() as u64) as usize))
                .collect();
            t.step(&step);
        }
        t.restore(&snap);
        let mut fresh = Transition::new(&va, Scope::All);
        assert_eq!(t.failing(), fresh.failing(), "case {k}");
        assert_eq!(t.outage_count(), 0, "case {k}");
        let (a, b) = (t.step(&probe), fresh.step(&probe));
        assert_eq!(a, b, "case {k}");
        assert_eq!(t.failing(), fresh.failing(), "case {k}");
    }
}

/// Per destination, the dependencies every mix of `changes` on `before` creates toward it
/// (the reference walk from every source).
fn deps_by_destination(
    before: &FabricState,
    changes: &[Change],
) -> BTreeMap<Lid, BTreeSet<(Chan, Chan)>> {
    let (srcs, dsts) = endpoints(before);
    let mut out: BTreeMap<Lid, BTreeSet<(Chan, Chan)>> = BTreeMap::new();
    for st in mixes(before, changes) {
        for &(s, p) in &srcs {
            for &d in &dsts {
                let w = reference::walk(&st, s, p, d, 0);
                for pair in w.hops.windows(2) {
                    let (a, b) = (&pair[0], &pair[1]);
                    out.entry(d)
                        .or_default()
                        .insert(((a.node, a.out, a.vl), (b.node, b.out, b.vl)));
                }
            }
        }
    }
    out
}

/// The break-before-make helpers against brute force. Where a step closes transient credit
/// loops, [`Transition::creators`] names, for every dependency of every loop
/// ([`Transition::last_cycles`]), exactly the destinations some mix's routes toward which
/// create it. And a step that sets every entry of one destination to "no entry" is refused
/// (a broken route) unless the destination is out of service, is then proven, and counts as
/// its outage exactly the routes toward it that fail after it.
#[test]
fn creators_and_outages_agree_with_brute_force() {
    let mut rng = Rng(0xbb3);
    let (mut loops, mut drops) = (0, 0);
    for k in 0..300 {
        let (a, b) = case(&mut rng);
        let (va, vb) = (testkit::valid(a.clone()), testkit::valid(b.clone()));
        if !weft_verifier::verify(
            &va,
            &weft_verifier::Options {
                properties: vec![weft_verifier::Property::DeadlockFree],
                certificate: false,
                ..Default::default()
            },
        )
        .is_proven()
        {
            continue;
        }
        // Creators: a step of up to 5 entries of the other routing.
        let mut all = transition::changes(&va, &vb);
        let mut step: Vec<Change> = Vec::new();
        while !all.is_empty() && step.len() < 5 {
            step.push(all.swap_remove(rng.below(all.len() as u64) as usize));
        }
        let mut t = Transition::new(&va, Scope::All);
        let check = t.step(&step);
        if check.deadlock_free == Outcome::Violated && check.loop_free == Outcome::Proven {
            let cycles = t.last_cycles().to_vec();
            assert!(!cycles.is_empty(), "case {k}");
            let by_dest = deps_by_destination(&a, &step);
            // The dependencies inside cyclic components: those whose head reaches their tail
            // in the graph of every mix's dependencies.
            let every: BTreeSet<(Chan, Chan)> = by_dest.values().flatten().copied().collect();
            let reaches = |from: Chan, to: Chan| {
                let mut seen = BTreeSet::from([from]);
                let mut todo = vec![from];
                while let Some(c) = todo.pop() {
                    if c == to {
                        return true;
                    }
                    for &(x, y) in &every {
                        if x == c && seen.insert(y) {
                            todo.push(y);
                        }
                    }
                }
                false
            };
            let cyclic = every.iter().filter(|&&(x, y)| reaches(y, x)).count();
            assert_eq!(t.last_cyclic_dependencies(), cyclic, "case {k}");
            let found = t.creators(step.iter().copied(), &cycles);
            for (cycle, per_dep) in cycles.iter().zip(&found) {
                let n = cycle.len();
                for (j, creators) in per_dep.iter().enumerate() {
                    let (x, y) = (&cycle[j], &cycle[(j + 1) % n]);
                    let dep = ((x.node.id, x.port, x.vl), (y.node.id, y.port, y.vl));
                    let want: Vec<Lid> = by_dest
                        .iter()
                        .filter(|(_, d)| d.contains(&dep))
                        .map(|(&l, _)| l)
                        .collect();
                    assert!(
                        !want.is_empty(),
                        "case {k}: a loop dependency nobody creates"
                    );
                    assert_eq!(creators, &want, "case {k}: {dep:?}");
                }
            }
            loops += 1;
        }
        // Drops: every entry of one destination to none, on the start.
        let (_, dsts) = endpoints(&a);
        let d = dsts[rng.below(dsts.len() as u64) as usize];
        let dropping: Vec<Change> = va
            .switches
            .keys()
            .map(|&x| Change {
                switch: x,
                lid: d,
                port: 255,
            })
            .collect();
        let (srcs, _) = endpoints(&a);
        let after = applied(&a, &dropping);
        let failing = |st: &FabricState| {
            srcs.iter()
                .filter(|&&(s, p)| reference::walk(st, s, p, d, 0).failure.is_some())
                .count() as u64
        };
        let lost = failing(&after) - failing(&a);
        let mut t = Transition::new(&va, Scope::All);
        t.checkpoint();
        let check = t.step(&dropping);
        assert_eq!(check.connected == Outcome::Violated, lost > 0, "case {k}");
        t.rollback();
        t.drop_destinations(&[d]);
        let check = t.step(&dropping);
        assert!(check.is_proven(), "case {k}: {check:?}");
        assert_eq!(check.outage_routes, lost, "case {k}");
        assert_eq!(t.out_of_service(d), lost > 0, "case {k}");
        if lost > 0 {
            drops += 1;
        }
    }
    assert!(loops > 5 && drops > 20, "{loops} loops, {drops} drops");
}
