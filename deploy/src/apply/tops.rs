//! Table tops: the LinearFDBTop and MulticastFDBTop raises (and stale-entry clears) a plan needs, as extra ops.

use super::{BTreeMap, Count, Op, Top};
use crate::smp::{SwitchInfo, LFT_BLOCK, PAYLOAD};
use crate::transport::TransportExt;
use crate::{smp, ApplyError, Attr, Discovery, DrPath, Payload, SmpError, Target, Transport};
use weft_fabric::Guid;

/// LinearFDBTop changes a plan needs, as extra ops: raising a switch's top right after the
/// first step that writes above it.
pub(super) struct Tops {
    /// Per switch: its top before.
    pub(super) before: BTreeMap<Guid, u16>,
    /// Per switch that supports MulticastFDBTop: the MFT entries it forwards by before
    /// (MLIDs from 0xC000 up to its top, as an MFT index: 0 for none).
    pub(super) mcast: BTreeMap<Guid, usize>,
}

impl Tops {
    /// Whether a block that differs from the plan's old differs only above the switch's top:
    /// LFT entries above LinearFDBTop, MFT masks above MulticastFDBTop (entries a switch does
    /// not forward by, which the plan counts as unset).
    pub(super) fn beyond(&self, o: &Op, got: &Payload, want: &Payload) -> bool {
        if o.target.attr == Attr::Mft {
            let Some(&forwarded) = self.mcast.get(&o.node) else {
                return false;
            };
            let first = (o.target.modifier & 0x1ff) as usize * smp::MFT_BLOCK;
            return got
                .chunks_exact(2)
                .zip(want.chunks_exact(2))
                .enumerate()
                .all(|(k, (g, w))| first + k >= forwarded || g == w);
        }
        if o.target.attr != Attr::Lft {
            return false;
        }
        let Some(&top) = self.before.get(&o.node) else {
            return false;
        };
        let first = o.target.modifier as usize * LFT_BLOCK;
        got.iter()
            .zip(want)
            .enumerate()
            .all(|(k, (g, w))| first + k > usize::from(top) || g == w)
    }
}

/// Works out the LinearFDBTop raises `ops` need (an op raising each switch's top to the
/// highest entry the plan sets, right after the first step that sets one above it), and
/// clears what a raise would otherwise show: in the blocks between the old and the new top
/// that no step up to the raise writes, entries above the old top that hold anything but what
/// the plan counts them as (unset, or its `old`) — written, in the raise's step, as the plan
/// counts them (they are above the top then: no switch forwards by them).
pub(super) fn fdb_tops(
    t: &mut impl Transport,
    d: &Discovery,
    ops: &mut Vec<Op>,
    count: &mut Count,
) -> Result<Tops, ApplyError> {
    let mut tops = Tops {
        before: BTreeMap::new(),
        mcast: BTreeMap::new(),
    };
    // Every switch's SwitchInfo as one batch.
    let switches = written_switches(d, ops, Attr::Lft);
    let infos: Vec<Target> = switches
        .iter()
        .map(|(_, path)| Target {
            path: (*path).clone(),
            attr: Attr::SwitchInfo,
            modifier: 0,
        })
        .collect();
    count.gets += infos.len();
    let got = t.get_all(&infos);
    if got.len() != infos.len() {
        return Err(ApplyError::Smp(SmpError::Transport(
            "a batch came back short".to_owned(),
        )));
    }
    for ((g, _), r) in switches.iter().zip(got) {
        let info = SwitchInfo::decode(&r.map_err(ApplyError::Smp)?);
        tops.before.insert(*g, info.linear_fdb_top);
    }
    // Per switch: the first step that sets an entry above its top, and the top it needs.
    let mut raise: BTreeMap<Guid, (usize, usize)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.target.attr == Attr::Lft) {
        count.visits += 1;
        let before = usize::from(tops.before.get(&o.node).copied().unwrap_or(0));
        let first = o.target.modifier as usize * LFT_BLOCK;
        if let Some(k) = o.after.iter().rposition(|&p| p != 0xff) {
            if first + k > before {
                let r = raise.entry(o.node).or_insert((o.step, 0));
                r.0 = r.0.min(o.step);
                r.1 = r.1.max(first + k);
            }
        }
    }
    // Plan step s becomes 2s; a raise after step s sits at 2s + 1; empty steps are squeezed
    // out.
    for o in ops.iter_mut() {
        o.step *= 2;
        // A block wholly above the top, written before the raise over it (or with no raise):
        // the switch forwards by none of it until then, so it is not read first.
        if o.target.attr == Attr::Lft {
            if let Some(&top) = tops.before.get(&o.node) {
                let first = o.target.modifier as usize * LFT_BLOCK;
                o.hidden = first > usize::from(top)
                    && raise
                        .get(&o.node)
                        .is_none_or(|&(step, _)| o.step <= 2 * step);
            }
        }
    }
    let first_writes = FirstWrites::of(ops, Attr::Lft, count);
    let mut extra = Vec::new();
    for (&g, &(step, top)) in &raise {
        let Some(path) = d.path(g, None) else {
            continue;
        };
        let old_top = usize::from(tops.before.get(&g).copied().unwrap_or(0));
        // The blocks the raise shows, and what the plan counts each entry of them as until
        // a step writes it: the plan's old where a later step writes the block, else unset.
        for block in (old_top + 1) / LFT_BLOCK..=top / LFT_BLOCK {
            let first_write = first_writes.get(g, block as u32, ops, count);
            if first_write.is_some_and(|o| o.step <= 2 * step) {
                continue;
            }
            let counted = first_write
                .and_then(|o| o.expect)
                .unwrap_or([0xff; PAYLOAD]);
            let target = Target {
                path: path.clone(),
                attr: Attr::Lft,
                modifier: block as u32,
            };
            let held = t.get(&target).map_err(ApplyError::Smp)?;
            count.gets += 1;
            // Every entry above the old top as the plan counts it (those above the new top
            // stay hidden, but a later write of the block starts from the plan's old).
            let mut want = held;
            for (k, (w, c)) in want.iter_mut().zip(counted).enumerate() {
                if block * LFT_BLOCK + k > old_top {
                    *w = c;
                }
            }
            let what = || {
                format!(
                    "switch {g} LFT block {block} (entries above LinearFDBTop cleared before it \
                     is raised)"
                )
            };
            extra.extend(clear_op(2 * step, g, target, (held, want), what));
        }
        let top = Top::Linear(u16::try_from(top).unwrap_or(u16::MAX));
        extra.push(raise_op(2 * step + 1, g, path, top));
    }
    squeeze(ops, extra);
    Ok(tops)
}

/// The first op (lowest step) writing each block of one attribute, by (switch, modifier):
/// built in one pass over the ops, so working out a raise looks each block up instead of
/// scanning every op for it (switches × blocks × ops at 11 664 nodes).
pub(super) struct FirstWrites(BTreeMap<(Guid, u32), usize>);

impl FirstWrites {
    /// The index of `ops`' `attr` blocks (each op visited once, counted in `count`).
    pub(super) fn of(ops: &[Op], attr: Attr, count: &mut Count) -> FirstWrites {
        let mut first: BTreeMap<(Guid, u32), usize> = BTreeMap::new();
        for (i, o) in ops.iter().enumerate() {
            count.visits += 1;
            if o.target.attr != attr {
                continue;
            }
            let at = first.entry((o.node, o.target.modifier)).or_insert(i);
            if ops.get(*at).is_some_and(|f| o.step < f.step) {
                *at = i;
            }
        }
        FirstWrites(first)
    }

    /// The first op of `ops` writing `modifier` on switch `g` (one lookup, counted).
    pub(super) fn get<'a>(
        &self,
        g: Guid,
        modifier: u32,
        ops: &'a [Op],
        count: &mut Count,
    ) -> Option<&'a Op> {
        count.visits += 1;
        self.0.get(&(g, modifier)).and_then(|&i| ops.get(i))
    }
}

/// The SwitchInfo op raising `top` on switch `g` (at `path`) in step `step`: its payload is
/// filled in from what the switch holds before the op.
pub(super) fn raise_op(step: usize, g: Guid, path: &DrPath, top: Top) -> Op {
    let field = match top {
        Top::Linear(_) => "LinearFDBTop",
        Top::Multicast(_) => "MulticastFDBTop",
    };
    Op {
        step,
        node: g,
        port: None,
        target: Target {
            path: path.clone(),
            attr: Attr::SwitchInfo,
            modifier: 0,
        },
        after: [0; PAYLOAD],
        expect: None,
        lid: None,
        top: Some(top),
        what: format!("switch {g} {field}"),
        hidden: false,
    }
}

/// The switches `ops` write `attr` blocks of, each once, with the route to it (a switch `d`
/// has no route to is left out: its writes fail when they are resolved).
pub(super) fn written_switches<'a>(
    d: &'a Discovery,
    ops: &[Op],
    attr: Attr,
) -> Vec<(Guid, &'a DrPath)> {
    let mut switches: Vec<Guid> = ops
        .iter()
        .filter(|o| o.target.attr == attr)
        .map(|o| o.node)
        .collect();
    switches.sort_unstable();
    switches.dedup();
    switches
        .into_iter()
        .filter_map(|g| Some((g, d.path(g, None)?)))
        .collect()
}

/// The op writing `want` over `held` (a switch's table block, where they differ above its
/// top) before the top is raised, in step `step`: no `old` to expect (the plan does not count
/// what a switch does not forward by). None when they are the same.
pub(super) fn clear_op(
    step: usize,
    g: Guid,
    target: Target,
    (held, want): (Payload, Payload),
    what: impl FnOnce() -> String,
) -> Option<Op> {
    (want != held).then(|| Op {
        step,
        node: g,
        port: None,
        target,
        after: want,
        expect: None,
        lid: None,
        top: None,
        what: what(),
        hidden: false,
    })
}

/// Adds `extra` to `ops` (whose steps were doubled to make room) and numbers the steps again
/// from 0 with none empty, in order.
pub(super) fn squeeze(ops: &mut Vec<Op>, extra: Vec<Op>) {
    ops.extend(extra);
    let mut used: Vec<usize> = ops.iter().map(|o| o.step).collect();
    used.sort_unstable();
    used.dedup();
    for o in ops.iter_mut() {
        o.step = used.binary_search(&o.step).unwrap_or(0);
    }
    ops.sort_by_key(|o| o.step);
}

/// Works out the MulticastFDBTop raises `ops` need, as [`fdb_tops`] does LinearFDBTop's:
/// on each switch that supports the field (its port 0's CapabilityMask has
/// IsMulticastFDBTopSupported; a switch that does not forwards by every block up to its cap,
/// ibsim's among them), an op raising the top to the highest MLID the plan sets a mask for,
/// right after the first step that sets one above it; and, in the blocks between the old and
/// the new top that no step up to the raise writes, masks above the old top that hold
/// anything but what the plan counts them as (empty, or its `old`) written, in the raise's
/// step, as the plan counts them (they are above the top then: no switch forwards by them).
pub(super) fn mft_tops(
    t: &mut impl Transport,
    d: &Discovery,
    ops: &mut Vec<Op>,
    count: &mut Count,
    tops: &mut Tops,
) -> Result<(), ApplyError> {
    for (g, path) in written_switches(d, ops, Attr::Mft) {
        let (port0, _) = t.port_info(path, 0).map_err(ApplyError::Smp)?;
        count.gets += 1;
        if port0.capability_mask & smp::CAP_MCAST_FDB_TOP == 0 {
            continue;
        }
        let (info, _) = t.switch_info(path).map_err(ApplyError::Smp)?;
        count.gets += 1;
        let forwarded = weft_fabric::Mlid::new(info.multicast_fdb_top).map_or(0, |m| m.index() + 1);
        tops.mcast.insert(g, forwarded);
    }
    // Per switch: the first step that sets a mask above its top, and the MFT index it needs.
    let mut raise: BTreeMap<Guid, (usize, usize)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.target.attr == Attr::Mft) {
        let Some(&forwarded) = tops.mcast.get(&o.node) else {
            continue;
        };
        let first = (o.target.modifier & 0x1ff) as usize * smp::MFT_BLOCK;
        let masks = smp::decode_mft(&o.after);
        if let Some(k) = masks.iter().rposition(|&m| m != 0) {
            if first + k >= forwarded {
                let r = raise.entry(o.node).or_insert((o.step, 0));
                r.0 = r.0.min(o.step);
                r.1 = r.1.max(first + k);
            }
        }
    }
    if raise.is_empty() {
        return Ok(());
    }
    for o in ops.iter_mut() {
        o.step *= 2;
    }
    let first_writes = FirstWrites::of(ops, Attr::Mft, count);
    let mut extra = Vec::new();
    for (&g, &(step, top)) in &raise {
        let (Some(path), Some(node)) = (d.path(g, None), d.nodes.get(&g)) else {
            continue;
        };
        let forwarded = tops.mcast.get(&g).copied().unwrap_or(0);
        for block in forwarded / smp::MFT_BLOCK..=top / smp::MFT_BLOCK {
            for position in 0..smp::mft_positions(node.info.num_ports) {
                let modifier = smp::mft_modifier(block as u16, position);
                let first_write = first_writes.get(g, modifier, ops, count);
                if first_write.is_some_and(|o| o.step <= 2 * step) {
                    continue;
                }
                let counted = first_write.and_then(|o| o.expect).unwrap_or([0; PAYLOAD]);
                let target = Target {
                    path: path.clone(),
                    attr: Attr::Mft,
                    modifier,
                };
                let held = t.get(&target).map_err(ApplyError::Smp)?;
                count.gets += 1;
                let mut want = held;
                for (k, (w, c)) in want
                    .chunks_exact_mut(2)
                    .zip(counted.chunks_exact(2))
                    .enumerate()
                {
                    if block * smp::MFT_BLOCK + k >= forwarded {
                        w.copy_from_slice(c);
                    }
                }
                let what = || {
                    format!(
                        "switch {g} MFT block {block} position {position} (masks above \
                         MulticastFDBTop cleared before it is raised)"
                    )
                };
                extra.extend(clear_op(2 * step, g, target, (held, want), what));
            }
        }
        let mlid = u16::try_from(usize::from(weft_fabric::Mlid::MIN.get()) + top)
            .unwrap_or(weft_fabric::Mlid::MAX.get());
        extra.push(raise_op(2 * step + 1, g, path, Top::Multicast(mlid)));
    }
    squeeze(ops, extra);
    Ok(())
}
