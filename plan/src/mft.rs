//! Multicast forwarding table (MFT) writes: which MulticastForwardingTable blocks differ
//! between two states, in two phases, and the check of a step that writes one.
//!
//! A block at one position (32 MLIDs × 16 ports) that changes is written in up to two steps:
//! first the ports only the old table has are taken away (the mask becomes `old ∧ new`), in the
//! removal phase before any LFT step; then the ports only the new table has are added, in the
//! addition phase after the last LFT step. Every intermediate table is then a subset of the
//! old one (removal phase, with the old LFTs) or of the new one (addition phase, with the new
//! LFTs): a tree only ever loses branches, or grows toward the proven one.
//!
//! Each MFT write is a step of its own, proven by [`weft_verifier::verify`] on the whole state
//! it leaves (one SMP lands or not: no mix of writes to cover). The verifier's proof of that
//! state covers multicast as far as the verifier does; a desired state that says nothing about
//! multicast ([`Multicast::is_empty`](weft_fabric::Multicast::is_empty)) leaves the fabric's
//! MFTs as they are (see [`keep_current`]).

use crate::{PlanError, StepCheck};
use weft_fabric::{FabricState, Lid, Mft, Mlid, PortNum, ValidState};
use weft_formats::plan::{MftBlock, SmpWrite, LFT_BLOCK, MFT_BLOCK};
use weft_verifier::{Outcome, Property, Scope};

/// The bytes of a block's 32 masks, big-endian, as the SMP carries them.
pub fn block_bytes(masks: &[u16; MFT_BLOCK]) -> MftBlock {
    let mut out = [0u8; 2 * MFT_BLOCK];
    for (d, m) in out.chunks_exact_mut(2).zip(masks) {
        d.copy_from_slice(&m.to_be_bytes());
    }
    out
}

/// The 32 masks of a block's bytes.
pub fn block_masks(bytes: &MftBlock) -> [u16; MFT_BLOCK] {
    let mut out = [0u16; MFT_BLOCK];
    for (m, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *m = u16::from_be_bytes([
            b.first().copied().unwrap_or(0),
            b.get(1).copied().unwrap_or(0),
        ]);
    }
    out
}

/// The MFT writes from `old`'s tables to `new`'s: `(removals, additions)`, each sorted, one
/// per (switch, block, position) that changes in that phase.
pub fn writes(old: &ValidState, new: &ValidState) -> (Vec<SmpWrite>, Vec<SmpWrite>) {
    let (mut remove, mut add) = (Vec::new(), Vec::new());
    let empty = Mft::default();
    let mut switches: Vec<_> = old
        .multicast
        .mfts
        .keys()
        .chain(new.multicast.mfts.keys())
        .copied()
        .collect();
    switches.sort_unstable();
    switches.dedup();
    for id in switches {
        let a = old.multicast.mfts.get(&id).unwrap_or(&empty);
        let b = new.multicast.mfts.get(&id).unwrap_or(&empty);
        if a == b {
            continue;
        }
        let node = new.fabric.node(id);
        let top = a.top().max(b.top()).map_or(0, |m| m.block() + 1);
        let positions = node.spec.port_count / 16 + 1;
        for block in 0..top {
            for position in 0..positions {
                let (x, y) = (a.block(block, position), b.block(block, position));
                if x == y {
                    continue;
                }
                let mut mid = x;
                for (m, n) in mid.iter_mut().zip(&y) {
                    *m &= n;
                }
                let w = |from: &[u16; MFT_BLOCK], to: &[u16; MFT_BLOCK]| SmpWrite::Mft {
                    switch: node.guid(),
                    block,
                    position,
                    old: block_bytes(from),
                    new: block_bytes(to),
                };
                if mid != x {
                    remove.push(w(&x, &mid));
                }
                if mid != y {
                    add.push(w(&mid, &y));
                }
            }
        }
    }
    remove.sort();
    add.sort();
    (remove, add)
}

/// When `new` says nothing about multicast and `current` has MFTs, `new` with `current`'s
/// MFTs (a desired state without multicast leaves the fabric's multicast as it is, and the
/// plan's end state is proven with it); else none: `new` as it is.
pub fn keep_current(
    current: &ValidState,
    new: &ValidState,
) -> Result<Option<ValidState>, PlanError> {
    if !new.multicast.is_empty() || current.multicast.is_empty() {
        return Ok(None);
    }
    let mut st = new.state().clone();
    st.multicast.mfts = current.multicast.mfts.clone();
    ValidState::new(st).map(Some).map_err(PlanError::State)
}

/// `st` with every MFT entry reduced to the ports `new` has too (`old ∧ new`): the state the
/// removal phase leaves.
pub fn meet(st: &ValidState, new: &ValidState) -> Result<ValidState, PlanError> {
    let mut out = st.state().clone();
    for (id, t) in out.multicast.mfts.iter_mut() {
        let other = new.multicast.mfts.get(id).cloned().unwrap_or_default();
        let entries: Vec<_> = t.entries().collect();
        for (m, mask) in entries {
            let keep = other.get(m);
            let kept = weft_fabric::PortMask::of(mask.iter().filter(|&p| keep.contains(p)));
            t.set(m, kept);
        }
    }
    out.multicast.normalize();
    ValidState::new(out).map_err(PlanError::State)
}

/// Applies `w` to `st`: an MFT write's block, an LFT write's entries (other writes change
/// neither table and are left).
pub fn apply(st: &mut FabricState, w: &SmpWrite) -> Result<(), String> {
    match w {
        SmpWrite::Mft {
            switch,
            block,
            position,
            new,
            ..
        } => {
            let id = st
                .fabric
                .find_guid(*switch)
                .ok_or_else(|| format!("an MFT write to {switch}, which is not on the fabric"))?;
            st.multicast.mfts.entry(id).or_default().set_block(
                *block,
                *position,
                &block_masks(new),
            );
            st.multicast.normalize();
        }
        SmpWrite::Lft {
            switch, block, new, ..
        } => {
            let id = st
                .fabric
                .find_guid(*switch)
                .ok_or_else(|| format!("an LFT write to {switch}, which is not on the fabric"))?;
            let lft = &mut st.switches.entry(id).or_default().lft;
            for (k, &p) in new.iter().enumerate() {
                lft.set(
                    Lid((usize::from(*block) * LFT_BLOCK + k) as u16),
                    PortNum(p),
                );
            }
            while lft.ports.last() == Some(&weft_fabric::LFT_UNSET) {
                lft.ports.pop();
            }
        }
        SmpWrite::Pkeys { .. }
        | SmpWrite::Vport { .. }
        | SmpWrite::Sl2vl { .. }
        | SmpWrite::VlArb { .. } => {}
    }
    Ok(())
}

/// The properties the verifier does not prove on `st` (every property it checks by default),
/// or why `st` is not a valid state. `multicast_connected` counts only when a copy loops or
/// is duplicated: while a tree is written block by block, members not yet (or no longer)
/// joined get no copy — a multicast outage of the step, not a hazard.
pub fn failing(st: FabricState, scope: Scope) -> Result<Vec<Property>, String> {
    let st = ValidState::new(st).map_err(|e| format!("an invalid state: {e}"))?;
    let verify = weft_verifier::Options {
        scope,
        properties: Property::defaults(&st),
        certificate: false,
        max_listed: 1,
        witnesses: 1,
    };
    let report = weft_verifier::verify(&st, &verify);
    let missing_copies_only = report
        .multicast
        .as_ref()
        .is_some_and(|m| m.looped_or_duplicated == 0);
    Ok(report
        .properties
        .iter()
        .copied()
        .filter(|&p| *report.outcome(p) != Outcome::Proven)
        .filter(|&p| !(p == Property::MulticastConnected && missing_copies_only))
        .collect())
}

/// The check of a step that writes one MFT block (`what`, for people), from what the verifier
/// finds on the state before it (`before`, [`failing`]) and after it (`after`): every part
/// proven when every property it checks holds after the step — except `connected` where it
/// already failed before (routes a fault broke; an MFT write changes no unicast route, so
/// every route that arrived before it still arrives, as a step's `connected` asks) — else
/// unknown, naming what the write leaves unproven.
pub fn check(
    before: &Result<Vec<Property>, String>,
    after: &Result<Vec<Property>, String>,
    what: &str,
) -> StepCheck {
    let why = match after {
        Err(e) => Some(format!("{what} leaves {e}")),
        Ok(failing) => {
            let broken_before = before
                .as_ref()
                .is_ok_and(|b| b.contains(&Property::Connected));
            let new: Vec<&str> = failing
                .iter()
                .filter(|&&p| !(p == Property::Connected && broken_before))
                .map(|p| p.name())
                .collect();
            (!new.is_empty())
                .then(|| format!("{what} leaves a state that is not {}", new.join(", not ")))
        }
    };
    let outcome = || why.clone().map_or(Outcome::Proven, Outcome::Unknown);
    StepCheck {
        loop_free: outcome(),
        deadlock_free: outcome(),
        connected: outcome(),
        isolated: Outcome::Proven,
        breach: None,
        breach_after_plan: false,
        forwarding_loop: None,
        credit_loop: Vec::new(),
        broken: None,
        changed_entries: 0,
        failing_before: 0,
        failing_after: 0,
        outage_routes: 0,
        out_of_service: 0,
    }
}

/// Which way a run of MFT writes moves the tables, when every write goes the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    /// Every write only clears ports: each state of the run is part of the one before it.
    Remove,
    /// Every write only sets ports: each state of the run is part of the one after it.
    Add,
}

/// The checks of a run of steps that each write one MFT block (`writes`, in order; `what`
/// names each for people), from `cur` (the state before the run; left as the run leaves
/// it). Each check is [`check`] of the states before and after its step.
///
/// A multicast tree's copies, and so its channel dependencies, loops and duplicates, can only
/// shrink when ports leave its masks. So when every write of the run only clears ports (or
/// only sets them), and each write's `old` block is what the tables hold when it lands, every
/// state of the run is part of the first state (or of the last) with the same unicast tables:
/// one verification of that state proves every step, when it holds. When the writes do not
/// go one way, or that state does not hold, every step is verified on its own (the exact
/// check, and the first failure named).
pub fn run_checks(
    cur: &mut FabricState,
    writes: &[&SmpWrite],
    what: &[String],
    scope: Scope,
) -> Vec<StepCheck> {
    let first = cur.clone();
    let direction = one_way(cur, writes);
    let reference = match direction {
        Some(Direction::Remove) => Some(first.clone()),
        Some(Direction::Add) => Some(cur.clone()),
        None => None,
    };
    if let Some(r) = reference {
        let found = failing(r, scope);
        // `connected` is the unicast routes' (no MFT write changes it): a step is held to it
        // only where it held before, so the reference stands for every step when nothing
        // else fails.
        if found
            .as_ref()
            .is_ok_and(|f| f.iter().all(|&p| p == Property::Connected))
        {
            return what.iter().map(|w| check(&found, &found, w)).collect();
        }
    }
    // Step by step, from the first state.
    *cur = first;
    let mut out = Vec::with_capacity(writes.len());
    let mut before = failing(cur.clone(), scope);
    for (w, name) in writes.iter().zip(what) {
        let after = match apply(cur, w) {
            Ok(()) => failing(cur.clone(), scope),
            Err(e) => Err(e),
        };
        let c = check(&before, &after, name);
        let ok = c.is_proven();
        out.push(c);
        if !ok {
            break;
        }
        before = after;
    }
    out
}

/// Applies `writes` to `cur` in order and says which way they all go, if one: each an MFT
/// write whose `old` block is what `cur` holds when it lands and whose `new` only clears (or
/// only sets) ports of it. `cur` is left as the writes leave it (as far as they apply).
fn one_way(cur: &mut FabricState, writes: &[&SmpWrite]) -> Option<Direction> {
    let mut way: Option<Direction> = None;
    let mut consistent = true;
    for w in writes {
        let SmpWrite::Mft {
            switch,
            block,
            position,
            old,
            new,
        } = w
        else {
            return None;
        };
        let held = cur
            .fabric
            .find_guid(*switch)
            .and_then(|id| cur.multicast.mfts.get(&id))
            .map_or([0u16; MFT_BLOCK], |t| t.block(*block, *position));
        let (o, n) = (block_masks(old), block_masks(new));
        consistent &= held == o;
        let clears = o.iter().zip(&n).all(|(a, b)| b & !a == 0);
        let sets = o.iter().zip(&n).all(|(a, b)| a & !b == 0);
        let this = match (clears, sets) {
            (true, true) => way,
            (true, false) => Some(Direction::Remove),
            (false, true) => Some(Direction::Add),
            (false, false) => {
                consistent = false;
                way
            }
        };
        if way.is_some() && this != way {
            consistent = false;
        }
        way = way.or(this);
        if apply(cur, w).is_err() {
            return None;
        }
    }
    consistent.then_some(way).flatten()
}

/// The MLIDs a write's block holds: `0xC000 + 32 × block ..`, for people.
pub fn mlids(block: u16) -> String {
    let first = u32::from(Mlid::MIN.get()) + u32::from(block) * MFT_BLOCK as u32;
    format!("{first:#06x}–{:#06x}", (first + 31).min(0xfffe))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn block_bytes_round_trip(masks in proptest::array::uniform32(any::<u16>())) {
            prop_assert_eq!(block_masks(&block_bytes(&masks)), masks);
        }
    }
}
