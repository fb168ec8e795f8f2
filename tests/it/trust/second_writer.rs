//! A second writer on the same fabric: caught at any point before and after each step and never
//! rolled over, a block changed after the last step found and named, and a rollback that leaves
//! the other writer's block as it is.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use super::*;

/// A transport that lets another writer act on the same fabric right before the `at`-th SMP
/// (Get or Set, from 0) this one sends.
struct Meddled<'a, F: FnMut(&mut SimFabric)> {
    sim: &'a mut SimFabric,
    at: usize,
    sent: usize,
    /// Count Sets only (else every SMP).
    sets_only: bool,
    other: Option<F>,
}

impl<F: FnMut(&mut SimFabric)> Meddled<'_, F> {
    fn tick(&mut self, set: bool) {
        if set || !self.sets_only {
            if self.sent == self.at {
                if let Some(mut f) = self.other.take() {
                    f(self.sim);
                }
            }
            self.sent += 1;
        }
    }
}

impl<F: FnMut(&mut SimFabric)> Transport for Meddled<'_, F> {
    fn get(&mut self, target: &Target) -> Result<Payload, weft_deploy::SmpError> {
        self.tick(false);
        self.sim.get(target)
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, weft_deploy::SmpError> {
        self.tick(true);
        self.sim.set(target, data)
    }
}

/// What the fabric holds of `plan`'s blocks: per block (switch GUID, LFT block, or node,
/// port and P_Key block), whether it holds the plan's first `old` or its last `new`.
#[derive(Debug, PartialEq, Eq)]
enum Held {
    Old,
    New,
    Other,
}

fn held(plan: &Plan, t: &Tables) -> BTreeMap<(u64, u8, u16, bool), Held> {
    type Block = (u64, u8, u16, bool);
    let mut ends: BTreeMap<Block, (Vec<u16>, Vec<u16>)> = BTreeMap::new();
    for w in plan.steps.iter().flat_map(|s| &s.writes) {
        let (key, old, new) = match w {
            SmpWrite::Lft {
                switch,
                block,
                old,
                new,
            } => (
                (switch.0, 0, *block, true),
                old.iter().map(|&x| u16::from(x)).collect(),
                new.iter().map(|&x| u16::from(x)).collect(),
            ),
            SmpWrite::Pkeys {
                node,
                port,
                block,
                old,
                new,
            } => ((node.0, *port, *block, false), old.clone(), new.clone()),
            SmpWrite::Vport { .. }
            | SmpWrite::Mft { .. }
            | SmpWrite::Sl2vl { .. }
            | SmpWrite::VlArb { .. } => continue,
        };
        ends.entry(key)
            .and_modify(|e| e.1.clone_from(&new))
            .or_insert((old, new));
    }
    ends.into_iter()
        .map(|((g, port, block, lft), (old, new))| {
            let now: Vec<u16> = if lft {
                let lft = t.lfts.get(&g).cloned().unwrap_or_default();
                (0..64)
                    .map(|k| {
                        u16::from(
                            lft.get(usize::from(block) * 64 + k)
                                .copied()
                                .unwrap_or(0xff),
                        )
                    })
                    .collect()
            } else {
                let keys = t
                    .pkeys
                    .get(&g)
                    .and_then(|p| p.get(usize::from(port)))
                    .cloned()
                    .unwrap_or_default();
                (0..32)
                    .map(|k| keys.get(usize::from(block) * 32 + k).copied().unwrap_or(0))
                    .collect()
            };
            let pad = |v: &[u16], n: usize, fill: u16| {
                let mut v = v.to_vec();
                v.resize(n, fill);
                v
            };
            let (n, fill) = if lft { (64, 0xff) } else { (32, 0) };
            let h = if now == pad(&new, n, fill) {
                Held::New
            } else if now == pad(&old, n, fill) {
                Held::Old
            } else {
                Held::Other
            };
            ((g, port, block, lft), h)
        })
        .collect()
}

/// What `r` says of `plan`'s blocks holds on the fabric `t`: the new state every block new,
/// the old state every block old, neither some block neither.
fn report_holds(r: &Report, plan: &Plan, t: &Tables, at: &str) {
    let h = held(plan, t);
    match &r.state {
        Final::New => assert!(h.values().all(|x| *x == Held::New), "{at}: {r:?} {h:?}"),
        Final::Old => assert!(h.values().all(|x| *x == Held::Old), "{at}: {r:?} {h:?}"),
        Final::Mixed(_) => assert!(
            !h.values().all(|x| *x == Held::New) && !h.values().all(|x| *x == Held::Old),
            "{at}: {r:?} {h:?}"
        ),
        Final::Nothing => panic!("{at}: {r:?}"),
    }
}

/// Two writers on one fabric, the second's whole apply run between two SMPs of the first, at
/// every SMP the first sends: two drains around different cables (their LFT blocks overlap),
/// a drain and a tenant change (no block in common), and one plan twice. Whatever the
/// interleaving, each report says what its own blocks hold when it ends; the first writer,
/// which ends last, never says "the new state" unless every block of its plan holds its new
/// value, nor "the old state" unless every one holds its old value; and a second writer's
/// block is never rolled over.
#[test]
fn a_second_writer_at_any_point_is_caught_and_never_rolled_over() {
    let st = old();
    let pairs = [
        ("drains", drain("leaf3.p[6]"), drain("leaf2.p[5]")),
        ("drain-and-tenants", drain("leaf3.p[6]"), tenant_change()),
        ("same-plan", drain("leaf3.p[6]"), drain("leaf3.p[6]")),
    ];
    for (name, (pa, _), (pb, _)) in pairs {
        // The SMPs the first writer sends alone.
        let mut alone = sim(st.state());
        let dir = scratch(&format!("trust-writers-{name}"));
        apply(&mut alone, &pa, &options(&dir, "alone"), &mut |_| {}).unwrap();
        let n = alone.counts().gets + alone.counts().sets;
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        // Every SMP from the snapshot on (the writes, their checks, the final reading), and
        // every tenth of discovery and the proof before them.
        let writing = n.saturating_sub(24 * (pa.smps() + 4));
        for at in (0..writing).step_by(10).chain(writing..n) {
            let mut fabric = sim(st.state());
            let bdir = scratch(&format!("trust-writers-{name}-b-{at}"));
            let mut b_report = None;
            let ra = {
                let mut t = Meddled {
                    sim: &mut fabric,
                    at,
                    sent: 0,
                    sets_only: false,
                    other: Some(|s: &mut SimFabric| {
                        let r = apply(s, &pb, &options(&bdir, "b"), &mut |_| {});
                        if let Ok(r) = &r {
                            report_holds(r, &pb, &s.tables(), &format!("{name} at {at}: b"));
                        }
                        b_report = Some(r.map(|r| r.state).map_err(|e| e.to_string()));
                    }),
                };
                let adir = scratch(&format!("trust-writers-{name}-a-{at}"));
                let r = apply(&mut t, &pa, &options(&adir, "a"), &mut |_| {});
                let _ = std::fs::remove_dir_all(&adir);
                r
            };
            let _ = std::fs::remove_dir_all(&bdir);
            let key = match &ra {
                Ok(r) => {
                    report_holds(r, &pa, &fabric.tables(), &format!("{name} at {at}: a"));
                    let a = match &r.state {
                        Final::New => "a new",
                        Final::Old => "a old",
                        Final::Mixed(_) => "a neither",
                        Final::Nothing => "a nothing",
                    };
                    if r.state != Final::New {
                        assert!(r.failure.is_some(), "{name} at {at}: {r:?}");
                    }
                    a.to_owned()
                }
                Err(e) => {
                    // Refused before writing: nothing of the first plan was written (the second
                    // writer's blocks are its own).
                    assert_eq!(
                        held(&pa, &fabric.tables()),
                        held(&pa, &{
                            let mut only_b = sim(st.state());
                            if let Some(Ok(_)) = &b_report {
                                apply(
                                    &mut only_b,
                                    &pb,
                                    &options(&scratch("trust-only-b"), "b"),
                                    &mut |_| {},
                                )
                                .unwrap();
                            }
                            only_b.tables()
                        }),
                        "{name} at {at}: refused but something of its plan was written: {e}"
                    );
                    "a refused".to_owned()
                }
            };
            let b = match &b_report {
                Some(Ok(Final::New)) => "b new",
                Some(Ok(Final::Old)) => "b old",
                Some(Ok(_)) => "b neither",
                Some(Err(_)) => "b refused",
                None => "b never ran",
            };
            *seen.entry(format!("{key}, {b}")).or_insert(0) += 1;
        }
        // Each pair meets every kind of interleaving its plans allow.
        match name {
            "same-plan" => {
                assert!(seen.contains_key("a new, b new"), "{name}: {seen:?}");
                assert!(seen.contains_key("a new, b refused"), "{name}: {seen:?}");
            }
            "drain-and-tenants" => {
                assert!(seen.contains_key("a new, b new"), "{name}: {seen:?}");
            }
            _ => {
                assert!(
                    seen.keys().any(|k| k.starts_with("a refused")),
                    "{name}: {seen:?}"
                );
                assert!(
                    seen.keys()
                        .any(|k| k.starts_with("a neither") || k.starts_with("a old")),
                    "{name}: {seen:?}"
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Another writer changes a block of the first writer's plan after the first wrote it (here,
/// puts its old value back right after the last step's read-back): the first writer's final
/// reading finds it, the apply is not "the new state", its other blocks go back, and the
/// report names the block.
#[test]
fn a_block_changed_after_the_last_step_is_found_and_named() {
    let st = old();
    let (p, _) = drain("leaf3.p[6]");
    let mut alone = sim(st.state());
    let dir = scratch("trust-after");
    let r = apply(&mut alone, &p, &options(&dir, "alone"), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New);
    // The SMPs up to the final reading: everything but that reading itself.
    let blocks = held(&p, &alone.tables()).len();
    let before_final = alone.counts().gets + alone.counts().sets - blocks;
    let SmpWrite::Lft {
        switch, block, old, ..
    } = &p.steps[0].writes[0]
    else {
        panic!()
    };
    let (switch, block, old) = (*switch, *block, *old);
    let mut fabric = sim(st.state());
    let r = {
        let mut t = Meddled {
            sim: &mut fabric,
            at: before_final,
            sent: 0,
            sets_only: false,
            other: Some(|s: &mut SimFabric| {
                // The other writer: the block back as it was (found by discovery).
                let d = weft_deploy::discover(s).unwrap();
                let path = d.path(switch, None).unwrap().clone();
                s.set(
                    &Target {
                        path,
                        attr: weft_deploy::Attr::Lft,
                        modifier: u32::from(block),
                    },
                    &old,
                )
                .unwrap();
            }),
        };
        apply(&mut t, &p, &options(&dir, "a"), &mut |_| {}).unwrap()
    };
    assert_ne!(r.state, Final::New, "{r:?}");
    let failure = r.failure.clone().unwrap();
    assert!(
        failure.contains("another writer changed the fabric after this apply wrote it")
            && failure.contains(&format!("{:#018x} LFT block {block}", switch.0)),
        "{failure}"
    );
    report_holds(&r, &p, &fabric.tables(), "after the last step");
    // Everything but that block (whose old value the other writer wrote) is old again.
    assert!(
        held(&p, &fabric.tables()).values().all(|h| *h == Held::Old),
        "{r:?}"
    );
}

/// A rollback puts back only what still holds this apply's writes: a block of step 1 another
/// writer changed before step 2 failed stays as that writer left it, and is named.
#[test]
fn a_rollback_leaves_another_writers_block_as_it_is() {
    let st = old();
    let (p, _) = drain("leaf3.p[6]");
    assert!(p.steps.len() >= 2);
    let step1 = p.steps[0].writes.len();
    let SmpWrite::Lft { switch, block, .. } = &p.steps[0].writes[0] else {
        panic!()
    };
    let (switch, block) = (*switch, *block);
    let mut fabric = sim(st.state());
    // Right before the first Set of step 2 the other writer writes its own value into a block
    // of step 1 (that write is the fabric's Set number `step1`); then the first writer's
    // first Set of step 2 is rejected, and the rollback starts.
    fabric.inject(Fault {
        at_set: step1 + 1,
        kind: FaultKind::Reject {
            status: STATUS_INVALID,
        },
    });
    let dir = scratch("trust-rollover");
    let r = {
        let mut t = Meddled {
            sim: &mut fabric,
            at: step1,
            sent: 0,
            sets_only: true,
            other: Some(move |s: &mut SimFabric| {
                let d = weft_deploy::discover(s).unwrap();
                let path = d.path(switch, None).unwrap().clone();
                s.set(
                    &Target {
                        path,
                        attr: weft_deploy::Attr::Lft,
                        modifier: u32::from(block),
                    },
                    &[7u8; 64],
                )
                .unwrap();
            }),
        };
        apply(&mut t, &p, &options(&dir, "a"), &mut |_| {}).unwrap()
    };
    let Final::Mixed(odd) = &r.state else {
        panic!("{r:?}")
    };
    let name = format!("{:#018x} LFT block {block}", switch.0);
    assert!(
        odd.iter()
            .any(|o| o.contains(&name) && o.contains("another writer")),
        "{odd:?}"
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains(&name) && n.contains("left as it is")),
        "{r:?}"
    );
    // The other writer's block is as it left it; every other block of the plan is old.
    let t = fabric.tables();
    let lft = t.lfts.get(&switch.0).unwrap();
    let first = usize::from(block) * 64;
    assert!(lft[first..first + 7].iter().all(|&e| e == 7), "{lft:?}");
    let h = held(&p, &t);
    assert_eq!(
        h.values().filter(|x| **x == Held::Other).count(),
        1,
        "{h:?}"
    );
    assert!(h.values().all(|x| *x != Held::New), "{h:?}");
}
