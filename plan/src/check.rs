//! Checking steps someone else ordered (a plan file, on the tables `weft apply` reads), and the
//! words that say what a failed check found.

use crate::{mft, order, pkeys, qos, StepStats};
use weft_fabric::{FabricState, PortRef, ValidState, VirtualPort};
use weft_formats::plan::{PlanStep, SmpWrite, LFT_BLOCK};
use weft_verifier::partition_mix::{Declared, MixCheck, PkeyMix};
use weft_verifier::transition::{Change, StepCheck, Transition};
use weft_verifier::Scope;

/// Checks steps of writes someone ordered, from `start` (see [`start`](crate::start)), against the
/// partitions `declared` (see [`pkeys::declared`]; none: the tables the steps leave stand for
/// the declaration): the check of each step, up to the first that fails.
///
/// A `vport` write gives its VF (found in `start` by hypervisor port and port GUID, else
/// index) its new LID from its step on: the LID is then owned by the VF's hypervisor port, and
/// routes toward it may fail until later steps mend them (as a VM migration's do); after the
/// last step no more routes may fail than before the first (else the last step's check is
/// not proven, and [`why`] says so). A VF `start` does not have, a LID the checker does not
/// route, a LID a physical port holds or two VFs hold: the step's check is not proven
/// (`connected` unknown, naming it).
///
/// A step's `drops` take its destinations out of service before its writes are checked
/// (break-before-make, [`outage`](crate::outage)): `connected` asks nothing of routes toward them until a
/// step after which they fail no more than before the first step; a step that names one in
/// `restores` while its routes still fail is not proven (`connected` unknown, naming it), and
/// one still out of service after the last step leaves more routes failing than before the
/// first (not proven).
///
/// P_Key blocks and VF tables are checked for `isolated` in every mix
/// ([`weft_verifier::partition_mix`]): no mix lets two end ports talk that neither `start`'s
/// tables nor the declared partitions allow, and after the last step the tables are isolated
/// against the declared partitions. A P_Key write the checker cannot place (a node `start`
/// does not have, a switch port) leaves `isolated` unknown, naming it.
pub fn check_steps(
    start: &ValidState,
    steps: &[PlanStep],
    scope: Scope,
    declared: &Declared,
) -> Vec<StepCheck> {
    check_steps_read(start, steps, scope, declared, None)
}

/// [`check_steps`] with P_Key tables as read off a fabric, slot by slot (see
/// [`PkeyMix::new`]), where `read` has them.
pub fn check_steps_read(
    start: &ValidState,
    steps: &[PlanStep],
    scope: Scope,
    declared: &Declared,
    read: Option<&std::collections::BTreeMap<weft_verifier::isolation::End, Vec<u16>>>,
) -> Vec<StepCheck> {
    // With MFT writes: the tables as the steps leave them, each MFT step proven on them
    // (runs of one-block steps together, [`mft::run_checks`]); the LFT steps' mixes with the
    // trees in place when they land.
    let writes_mfts = steps
        .iter()
        .flat_map(|s| &s.writes)
        .any(|w| matches!(w, SmpWrite::Mft { .. }));
    let writes: Vec<Vec<SmpWrite>> = steps.iter().map(|s| s.writes.clone()).collect();
    let walked = writes_mfts.then(|| walk_mfts(start, &writes, scope));
    let (mft_checks, base, trees) = match walked {
        Some(w) => (w.checks, w.base, w.trees),
        None => (Vec::new(), None, Vec::new()),
    };
    let mut t = Transition::new(base.as_ref().unwrap_or(start), scope);
    let failing = t.failing();
    let mut vf_lids: Vec<Option<weft_fabric::Lid>> =
        start.lids.vports.iter().map(|v| v.lid).collect();
    let placed: Vec<Result<Vec<weft_verifier::partition_mix::PkeyWrite>, String>> = steps
        .iter()
        .map(|s| pkeys::pkey_writes(start, &s.writes))
        .collect();
    let known: Vec<Vec<weft_verifier::partition_mix::PkeyWrite>> = placed
        .iter()
        .map(|r| r.clone().unwrap_or_default())
        .collect();
    let mut mix = PkeyMix::new(start, declared.clone(), &known, read);
    // The tables after the plan are checked when the plan writes P_Keys: LFT writes change
    // no P_Key table, so they leave isolation as they found it.
    let writes_pkeys = known.iter().any(|w| !w.is_empty());
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let writes = &step.writes;
        let last = i + 1 == steps.len();
        let drops: Vec<weft_fabric::Lid> =
            step.drops.iter().map(|&l| weft_fabric::Lid(l)).collect();
        t.drop_destinations(&drops);
        if let Some(Some(st)) = trees.get(i) {
            t.add_multicast(st);
        }
        let mut check = match mft_checks.get(i).cloned().flatten() {
            Some(c) => c,
            None => {
                let moved = move_vf_lids(&mut t, start, &mut vf_lids, writes);
                let mut check = t.step_iter(lft_change_iter(start, writes));
                let still = step
                    .restores
                    .iter()
                    .find(|&&l| t.out_of_service(weft_fabric::Lid(l)));
                if let Err(why) = moved {
                    check.connected = weft_verifier::Outcome::Unknown(why);
                } else if let Some(l) = still.filter(|_| check.is_proven()) {
                    check.connected = weft_verifier::Outcome::Unknown(format!(
                        "routes toward LID {l}, which this step restores, still fail after it"
                    ));
                } else if last && t.failing() > failing {
                    check.connected = weft_verifier::Outcome::Violated;
                }
                check
            }
        };
        let iso = match placed.get(i) {
            Some(Ok(w)) => {
                let mut c = mix.step(w);
                if last && writes_pkeys && c.outcome == weft_verifier::Outcome::Proven {
                    let e = mix.end();
                    if e.outcome == weft_verifier::Outcome::Violated {
                        c = e;
                    }
                }
                c
            }
            Some(Err(why)) => MixCheck {
                outcome: weft_verifier::Outcome::Unknown(why.clone()),
                breach: None,
                after_plan: false,
            },
            None => MixCheck::proven(),
        };
        check.isolated = iso.outcome;
        check.breach = iso.breach;
        check.breach_after_plan = iso.after_plan;
        let ok = check.is_proven();
        out.push(check);
        if !ok {
            break;
        }
    }
    out
}

/// What walking a plan's steps over its MFT writes found (see [`walk_mfts`]).
pub(crate) struct MftWalk {
    /// Per step, the check of a step that writes an MFT block (`None`: no MFT write, or not
    /// reached: an MFT step before it failed).
    checks: Vec<Option<StepCheck>>,
    /// The state the first LFT step finds, when MFT steps before it changed the trees (the
    /// LFTs are still the start's): the transition checker starts from it.
    base: Option<ValidState>,
    /// Per step, for an LFT step after MFT steps that changed the trees since the last LFT
    /// step (or since `base`): the state it finds, whose trees' dependencies its mixes must
    /// have too.
    trees: Vec<Option<ValidState>>,
}

/// Walks `steps` from `start` over their table writes: checks every step that writes an MFT
/// block (runs of one-block steps together, [`mft::run_checks`]; a step that writes more
/// with it on its own, [`mft_step_check`]) and notes the trees each LFT step finds.
pub(crate) fn walk_mfts(start: &ValidState, steps: &[Vec<SmpWrite>], scope: Scope) -> MftWalk {
    let one_block =
        |w: &[SmpWrite]| w.len() == 1 && matches!(w.first(), Some(SmpWrite::Mft { .. }));
    let writes_lfts = |w: &[SmpWrite]| w.iter().any(|x| matches!(x, SmpWrite::Lft { .. }));
    let mut cur = start.state().clone();
    let mut walk = MftWalk {
        checks: vec![None; steps.len()],
        base: None,
        trees: vec![None; steps.len()],
    };
    let mut changed = false;
    let mut seen_lft = false;
    let mut i = 0;
    while let Some(writes) = steps.get(i) {
        if one_block(writes) {
            let j = (i..steps.len())
                .find(|&k| !steps.get(k).is_some_and(|w| one_block(w)))
                .unwrap_or(steps.len());
            let run: Vec<&SmpWrite> = steps
                .get(i..j)
                .unwrap_or_default()
                .iter()
                .filter_map(|w| w.first())
                .collect();
            let what: Vec<String> = run.iter().map(|w| describe(start, Some(w))).collect();
            let checks = mft::run_checks(&mut cur, &run, &what, scope);
            let all = checks.len() == run.len() && checks.iter().all(StepCheck::is_proven);
            for (k, c) in checks.into_iter().enumerate() {
                if let Some(slot) = walk.checks.get_mut(i + k) {
                    *slot = Some(c);
                }
            }
            if !all {
                break;
            }
            changed = true;
            i = j;
            continue;
        }
        if writes.iter().any(|w| matches!(w, SmpWrite::Mft { .. })) {
            if let Some(slot) = walk.checks.get_mut(i) {
                *slot = mft_step_check(&mut cur, start, scope, i, writes);
            }
            changed = true;
        } else {
            if changed && writes_lfts(writes) {
                let st = ValidState::new(cur.clone()).ok();
                if seen_lft {
                    if let Some(slot) = walk.trees.get_mut(i) {
                        *slot = st;
                    }
                } else {
                    walk.base = st;
                }
                changed = false;
            }
            seen_lft |= writes_lfts(writes);
            for w in writes {
                let _ = mft::apply(&mut cur, w);
            }
        }
        i += 1;
    }
    walk
}

/// Applies step `i`'s `writes` to `cur` (the tables as the steps leave them); when the step
/// writes an MFT block, its check ([`mft::check`] on the states before and after it; a step
/// that writes anything else with it is not proven, its writes landing in any order).
pub(crate) fn mft_step_check(
    cur: &mut FabricState,
    start: &ValidState,
    scope: Scope,
    i: usize,
    writes: &[SmpWrite],
) -> Option<StepCheck> {
    let mfts = writes
        .iter()
        .filter(|w| matches!(w, SmpWrite::Mft { .. }))
        .count();
    let before = (mfts > 0).then(|| mft::failing(cur.clone(), scope));
    let applied = writes.iter().try_for_each(|w| mft::apply(cur, w));
    let before = before?;
    let what = describe(start, writes.first());
    let after = match applied {
        Ok(()) => mft::failing(cur.clone(), scope),
        Err(e) => Err(e),
    };
    let mut c = mft::check(&before, &after, &what);
    if writes.len() > 1 {
        c.connected = weft_verifier::Outcome::Unknown(format!(
            "step {} writes an MFT block with {} other write(s): weft proves an MFT write as a \
             step of its own",
            i + 1,
            writes.len() - 1
        ));
    }
    Some(c)
}

/// The `vport` writes of one step, in the checker `t`: each VF's new LID moves to its
/// hypervisor's port (`lids`: every VF of `start` and its LID so far). Why not, when not.
pub(crate) fn move_vf_lids(
    t: &mut Transition<'_>,
    start: &ValidState,
    lids: &mut [Option<weft_fabric::Lid>],
    writes: &[SmpWrite],
) -> Result<(), String> {
    let f = &start.fabric;
    let mut moved = Vec::new();
    for w in writes {
        let SmpWrite::Vport {
            node,
            port,
            vf,
            guid,
            new_lid,
            ..
        } = w
        else {
            continue;
        };
        let Some(id) = f.find_guid(*node) else {
            return Err(format!(
                "VF {vf} (port GUID {guid}) of {node} port {port}: no such node on the fabric"
            ));
        };
        let what = format!(
            "VF {vf} (port GUID {guid}) of `{}` port {port}",
            f.node(id).name()
        );
        let at = PortRef::new(id, *port);
        let vs = &start.lids.vports;
        let k = vs
            .iter()
            .position(|v| v.host == at && v.guid == *guid)
            .or_else(|| vs.iter().position(|v| v.host == at && v.vf == *vf))
            .ok_or_else(|| {
                format!(
                    "{what} is not a VF of the fabric as read: the routes toward its LID cannot \
                     be proven"
                )
            })?;
        if let Some(slot) = lids.get_mut(k) {
            *slot = new_lid.map(weft_fabric::Lid);
        }
        if let Some(l) = new_lid {
            moved.push((weft_fabric::Lid(*l), at, what));
        }
    }
    if moved.is_empty() {
        return Ok(());
    }
    // Every LID a VF holds now: held once, and by no physical port.
    let physical: std::collections::BTreeSet<u16> = {
        let mut vfless = start.lids.clone();
        vfless.vports.clear();
        vfless
            .owners(f)
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_some())
            .map(|(l, _)| l as u16)
            .collect()
    };
    let mut held = std::collections::BTreeMap::new();
    // A VF is named by its hypervisor's port and index: its port GUID may be one the fabric
    // does not show (a VF addressed through its hypervisor's port).
    let name = |v: &VirtualPort| {
        format!(
            "VF {} of `{}` port {}",
            v.vf,
            f.node(v.host.node).name(),
            v.host.port.0
        )
    };
    for (v, l) in start.lids.vports.iter().zip(lids.iter()) {
        let Some(l) = l else { continue };
        if physical.contains(&l.0) {
            return Err(format!(
                "{} would hold LID {}, a physical port's",
                name(v),
                l.0
            ));
        }
        if let Some(other) = held.insert(l.0, v) {
            return Err(format!(
                "{} and {} would both hold LID {}",
                name(other),
                name(v),
                l.0
            ));
        }
    }
    for (lid, at, what) in moved {
        if !t.relocate(lid, at) {
            return Err(format!(
                "{what} would take LID {}, which the checker does not route",
                lid.0
            ));
        }
    }
    Ok(())
}

/// The LFT entries `writes` change, as they are read ([`Transition::step_iter`]).
pub(crate) fn lft_change_iter<'a>(
    st: &'a ValidState,
    writes: &'a [SmpWrite],
) -> impl Iterator<Item = Change> + Clone + 'a {
    writes
        .iter()
        .filter_map(order::lft_block)
        .filter_map(move |(switch, block, a, b)| {
            let id = st.fabric.find_guid(switch)?;
            Some((0..LFT_BLOCK).filter_map(move |i| {
                let (x, y) = (a.get(i)?, b.get(i)?);
                (x != y).then(|| Change {
                    switch: id,
                    lid: weft_fabric::Lid((usize::from(block) * LFT_BLOCK + i) as u16),
                    port: *y,
                })
            }))
        })
        .flatten()
}

/// The LFT entries `writes` change.
pub(crate) fn lft_changes(st: &ValidState, writes: &[SmpWrite]) -> Vec<Change> {
    lft_change_iter(st, writes).collect()
}

pub(crate) fn sorted(mut w: Vec<SmpWrite>) -> Vec<SmpWrite> {
    w.sort();
    w
}

/// One write, for people: "`leaf3` LFT block 2".
pub(crate) fn describe(st: &ValidState, w: Option<&SmpWrite>) -> String {
    let name = |g| {
        st.fabric
            .find_guid(g)
            .map_or_else(|| format!("{g}"), |id| st.fabric.node(id).name().to_owned())
    };
    match w {
        Some(SmpWrite::Lft { switch, block, .. }) => {
            format!("`{}` LFT block {block}", name(*switch))
        }
        Some(SmpWrite::Pkeys {
            node, port, block, ..
        }) => format!("`{}` port {port} P_Key block {block}", name(*node)),
        Some(SmpWrite::Mft {
            switch,
            block,
            position,
            ..
        }) => format!(
            "`{}` MFT block {block} (MLIDs {}) position {position}",
            name(*switch),
            mft::mlids(*block)
        ),
        Some(SmpWrite::Vport { node, port, vf, .. }) => {
            format!("`{}` port {port} VF {vf}", name(*node))
        }
        Some(w @ (SmpWrite::Sl2vl { node, .. } | SmpWrite::VlArb { node, .. })) => {
            format!("`{}` {}", name(*node), qos::what(w))
        }
        None => "(none)".to_owned(),
    }
}

/// What a failed check found, in a few words.
pub fn why(c: &StepCheck) -> String {
    if let Some(l) = &c.forwarding_loop {
        let hops: Vec<String> = l
            .hops
            .iter()
            .map(|h| format!("`{}` port {} ({:?})", h.node.name, h.out_port, h.entry))
            .collect();
        return format!(
            "a transient forwarding loop toward LID {} (`{}`): {} → back to the first",
            l.dlid.0,
            l.dst.node.name,
            hops.join(" → ")
        );
    }
    if !c.credit_loop.is_empty() {
        let chans: Vec<String> = c
            .credit_loop
            .iter()
            .map(|ch| format!("`{}` port {} VL {}", ch.node.name, ch.port, ch.vl))
            .collect();
        return format!(
            "a transient credit loop: {} → back to the first",
            chans.join(" → ")
        );
    }
    if let Some(b) = &c.broken {
        return format!(
            "the route from `{}` to LID {} breaks at `{}` ({})",
            b.from.name,
            b.dlid.0,
            b.at.name,
            b.reason.describe()
        );
    }
    if let weft_verifier::Outcome::Unknown(why) = &c.connected {
        return why.clone();
    }
    if c.connected == weft_verifier::Outcome::Violated {
        return format!(
            "{} route(s) fail after the plan's last step, more than before its first (a VF's \
             LID moved, and the routes toward it were not all written)",
            c.failing_after
        );
    }
    if let Some(b) = &c.breach {
        let when = if c.breach_after_plan {
            "after the last step"
        } else {
            "in a mix of its P_Key writes"
        };
        return format!("not isolated {when}: {}", b.describe());
    }
    if let weft_verifier::Outcome::Unknown(why) = &c.isolated {
        return format!("isolation not proven: {why}");
    }
    "nothing".to_owned()
}

pub(crate) fn step_stats(s: &PlanStep) -> StepStats {
    let mut switches: Vec<weft_fabric::Guid> = Vec::new();
    let mut st = StepStats::default();
    for w in &s.writes {
        match w {
            SmpWrite::Lft { switch, .. } => {
                st.lft_blocks += 1;
                switches.push(*switch);
            }
            SmpWrite::Pkeys { .. } => st.pkey_blocks += 1,
            SmpWrite::Mft { .. } => st.mft_blocks += 1,
            SmpWrite::Sl2vl { .. } => st.sl2vl_tables += 1,
            SmpWrite::VlArb { .. } => st.vlarb_blocks += 1,
            SmpWrite::Vport {
                old_lid, new_lid, ..
            } => {
                st.vports += 1;
                if old_lid != new_lid {
                    st.vf_lids += 1;
                }
            }
        }
    }
    switches.sort_unstable();
    switches.dedup();
    st.switches = switches.len();
    st.drops = s.drops.len();
    st.restores = s.restores.len();
    st
}
