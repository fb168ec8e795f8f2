//! SL→VL and VL arbitration tables in plans: the SMPs that turn one state's QoS tables into
//! another's ([`writes`]), what a write names ([`what`]), and a write landed on a state
//! ([`apply`]).
//!
//! Which tables, and how a state's form becomes tables on the fabric:
//!
//! * **A switch's SL→VL tables**: one SLtoVLMappingTable per (input, output) pair, for every
//!   output port with a live link and every input port with a live link or port 0 (the switch's
//!   own traffic enters there), the same port included (a route may turn back) — the pairs
//!   `weft audit` reads, and port 0's. A state's `sl2vl_all` stands for every pair without a
//!   row of its own; a switch with neither rows nor `sl2vl_all` maps every SL to VL 0. A pair
//!   a state leaves unassigned (rows, but none for the pair, and no `sl2vl_all`): in the
//!   desired state it is not written; in the current state it counts as every SL on VL 0
//!   (what a switch nobody configured holds — a fabric holding anything else refuses the plan
//!   as moved on).
//! * **An end node's SL→VL table**: of each port with a live link, as
//!   [`SmpWrite::Sl2vl`] with `in_port` 0 and `out_port` the port; none is every SL on VL 0.
//! * **VL arbitration**: of every port either state records arbitration for (a switch's port
//!   0 included; an end node's ports with a live link), four blocks: the low-priority table's
//!   entries 0–31 and 32–63 (blocks 1 and 2), the high-priority table's (3 and 4). A port
//!   without arbitration holds (VL 0, weight 0) in every entry. Only blocks that differ are
//!   written, each with its entries up to the last that is not (0, 0).
//!
//! The high-priority limit (PortInfo's VLHighLimit) is not written: a PortInfo Set carries
//! every settable field of the port, so changing one field is a read-modify-write that would
//! put back whatever another writer changed in between, and the read-back could not tell.
//! [`high_limit_changes`] lists the ports whose limit two states set differently, for a
//! planner to refuse.

use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{FabricState, NodeId, PortNum, PortRef, Sl, SwitchState, VlArb};
use weft_formats::plan::{vlarb_block, SmpWrite, VLARB_BLOCK};

/// A port whose VL high limit two states set differently (a state without arbitration on the
/// port counts as 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HighLimitChange {
    /// The port.
    pub port: PortRef,
    /// Its limit before.
    pub old: u8,
    /// Its limit after.
    pub new: u8,
}

/// The ports of `st`'s node `id` with a live link, in order.
fn live_ports(st: &FabricState, id: NodeId) -> Vec<u8> {
    let n = st.fabric.node(id);
    (1..=n.spec.port_count)
        .filter(|&p| st.fabric.live_peer(PortRef::new(id, p)).is_some())
        .collect()
}

/// The VLs of every SL a switch's state maps (`in_port`, `out_port`) to; `None` where the
/// state leaves the pair unassigned.
fn switch_vls(sw: Option<&SwitchState>, in_port: u8, out_port: u8) -> Option<[u8; 16]> {
    let Some(sw) = sw else {
        return Some([0; 16]);
    };
    let mut out = [0u8; 16];
    for (sl, v) in out.iter_mut().enumerate() {
        *v = sw.vl(PortNum(in_port), PortNum(out_port), Sl(sl as u8))?.0;
    }
    Some(out)
}

/// The entries of block `block` (1–4) of `arb` (none: every entry (0, 0)), up to the last
/// that is not (0, 0).
fn block_entries(arb: Option<&VlArb>, block: u8) -> Vec<(u8, u8)> {
    let Some(arb) = arb else {
        return Vec::new();
    };
    let table = if block <= 2 { &arb.low } else { &arb.high };
    let first = if block % 2 == 1 { 0 } else { VLARB_BLOCK };
    let mut e: Vec<(u8, u8)> = table
        .iter()
        .skip(first)
        .take(VLARB_BLOCK)
        .map(|w| (w.vl, w.weight))
        .collect();
    while e.last() == Some(&(0, 0)) {
        e.pop();
    }
    e
}

/// The SL→VL and VL arbitration writes that turn `old`'s tables into `new`'s (two states of
/// one fabric, a [`weft_fabric::ValidState`] each or as read; the live links are `new`'s), in a deterministic order: by node GUID, the SL→VL
/// tables by (input, output) port, then the arbitration blocks by port and block — sorted as
/// a plan step's writes are. Each write carries what `old` says the table holds. Nothing is
/// listed for a table that does not change; the VL high limit is never written (see
/// [`high_limit_changes`]).
pub fn writes(old: &FabricState, new: &FabricState) -> Vec<SmpWrite> {
    let f = &new.fabric;
    let mut out = Vec::new();
    for id in f.node_ids() {
        let node = f.node(id);
        let guid = node.guid();
        let live = live_ports(new, id);
        if node.is_switch() {
            let (o, n) = (old.switches.get(&id), new.switches.get(&id));
            let inputs: Vec<u8> = std::iter::once(0).chain(live.iter().copied()).collect();
            for &i in &inputs {
                for &p in &live {
                    let Some(to) = switch_vls(n, i, p) else {
                        continue;
                    };
                    let from = switch_vls(o, i, p).unwrap_or([0; 16]);
                    if from != to {
                        out.push(SmpWrite::Sl2vl {
                            node: guid,
                            in_port: i,
                            out_port: p,
                            old: from,
                            new: to,
                        });
                    }
                }
            }
        } else {
            for &p in &live {
                let at = PortRef::new(id, p);
                let vls =
                    |st: &FabricState| st.ports.get(&at).and_then(|s| s.sl2vl).unwrap_or([0; 16]);
                let (from, to) = (vls(old), vls(new));
                if from != to {
                    out.push(SmpWrite::Sl2vl {
                        node: guid,
                        in_port: 0,
                        out_port: p,
                        old: from,
                        new: to,
                    });
                }
            }
        }
        let ports: BTreeSet<u8> = old
            .ports
            .iter()
            .chain(&new.ports)
            .filter(|(r, s)| r.node == id && s.vlarb.is_some())
            .map(|(r, _)| r.port.0)
            .filter(|p| node.is_switch() || live.contains(p))
            .collect();
        for p in ports {
            let at = PortRef::new(id, p);
            let (was, will) = (
                old.ports.get(&at).and_then(|s| s.vlarb.as_ref()),
                new.ports.get(&at).and_then(|s| s.vlarb.as_ref()),
            );
            for block in weft_formats::plan::VLARB_BLOCKS {
                let (from, to) = (block_entries(was, block), block_entries(will, block));
                if from != to {
                    out.push(SmpWrite::VlArb {
                        node: guid,
                        port: p,
                        block,
                        old: from,
                        new: to,
                    });
                }
            }
        }
    }
    out.sort();
    out
}

/// The ports whose VL high limit `old` and `new` set differently (a port without arbitration
/// counts as 0), in port order: what [`writes`] cannot write.
pub fn high_limit_changes(old: &FabricState, new: &FabricState) -> Vec<HighLimitChange> {
    let limit = |st: &FabricState, r: &PortRef| {
        st.ports
            .get(r)
            .and_then(|s| s.vlarb.as_ref())
            .map_or(0, |a| a.high_limit)
    };
    let ports: BTreeSet<PortRef> = old.ports.keys().chain(new.ports.keys()).copied().collect();
    ports
        .into_iter()
        .filter_map(|r| {
            let (o, n) = (limit(old, &r), limit(new, &r));
            (o != n).then_some(HighLimitChange {
                port: r,
                old: o,
                new: n,
            })
        })
        .collect()
}

/// What a QoS write names, without its node: "SL→VL input 3 output 5" (an end node's port 1:
/// "SL→VL input 0 output 1"), "port 5 VL arbitration block 3 (high 0–31)"; empty for another
/// kind of write.
pub fn what(w: &SmpWrite) -> String {
    match w {
        SmpWrite::Sl2vl {
            in_port, out_port, ..
        } => format!("SL→VL input {in_port} output {out_port}"),
        SmpWrite::VlArb { port, block, .. } => {
            format!(
                "port {port} VL arbitration block {block} ({})",
                block_range(*block)
            )
        }
        _ => String::new(),
    }
}

/// Which entries a VL arbitration block holds: "low 0–31", "low 32–63", "high 0–31", "high
/// 32–63".
pub fn block_range(block: u8) -> &'static str {
    match block {
        1 => "low 0–31",
        2 => "low 32–63",
        3 => "high 0–31",
        4 => "high 32–63",
        _ => "no such block",
    }
}

/// `w` landed on `st`, when it is a QoS write: its table holds the write's `new` (a switch's
/// pair gets a row of its own; an end node's port its injection table; a port's arbitration
/// table the block's entries, up to its last entry that is not (0, 0)). The write's `old` must
/// be what `st` holds ([`writes`]' counting: an unassigned pair as every SL on VL 0). Another
/// kind of write is left alone.
pub fn apply(st: &mut FabricState, w: &SmpWrite) -> Result<(), String> {
    match w {
        SmpWrite::Sl2vl {
            node,
            in_port,
            out_port,
            old,
            new,
        } => {
            let id = st
                .fabric
                .find_guid(*node)
                .ok_or_else(|| format!("an SL→VL write to {node}, which is not on the fabric"))?;
            if st.fabric.node(id).is_switch() {
                let sw = st.switches.entry(id).or_default();
                let held = switch_vls(Some(sw), *in_port, *out_port).unwrap_or([0; 16]);
                if held != *old {
                    return Err(format!(
                        "{node} SL→VL input {in_port} output {out_port} holds {held:?}, not the \
                         write's old"
                    ));
                }
                // Rows for every pair the switch maps, so that this one's stands apart.
                if sw.sl2vl.is_empty() && sw.sl2vl_all.is_none() {
                    sw.sl2vl_all = Some([0; 16]);
                }
                match sw
                    .sl2vl
                    .binary_search_by(|r| (r.in_port, r.out_port).cmp(&(*in_port, *out_port)))
                {
                    Ok(k) => {
                        if let Some(r) = sw.sl2vl.get_mut(k) {
                            r.vl = *new;
                        }
                    }
                    Err(k) => sw.sl2vl.insert(
                        k,
                        weft_fabric::Sl2VlRow {
                            in_port: *in_port,
                            out_port: *out_port,
                            vl: *new,
                        },
                    ),
                }
            } else {
                let at = PortRef::new(id, *out_port);
                let port = st.ports.entry(at).or_default();
                let held = port.sl2vl.unwrap_or([0; 16]);
                if held != *old {
                    return Err(format!(
                        "{node} port {out_port} SL→VL holds {held:?}, not the write's old"
                    ));
                }
                port.sl2vl = (*new != [0; 16]).then_some(*new);
            }
            Ok(())
        }
        SmpWrite::VlArb {
            node,
            port,
            block,
            old,
            new,
        } => {
            let id = st.fabric.find_guid(*node).ok_or_else(|| {
                format!("a VL arbitration write to {node}, which is not on the fabric")
            })?;
            let at = PortRef::new(id, *port);
            let state = st.ports.entry(at).or_default();
            let held = block_entries(state.vlarb.as_ref(), *block);
            if vlarb_block(&held) != vlarb_block(old) {
                return Err(format!(
                    "{node} port {port} VL arbitration block {block} holds {held:?}, not the \
                     write's old"
                ));
            }
            let arb = state.vlarb.get_or_insert_with(VlArb::default);
            let table = if *block <= 2 {
                &mut arb.low
            } else {
                &mut arb.high
            };
            let first = if block % 2 == 1 { 0 } else { VLARB_BLOCK };
            if table.len() < first + VLARB_BLOCK {
                table.resize(
                    first + VLARB_BLOCK,
                    weft_fabric::VlWeight { vl: 0, weight: 0 },
                );
            }
            for (k, (vl, weight)) in vlarb_block(new).into_iter().enumerate() {
                if let Some(e) = table.get_mut(first + k) {
                    *e = weft_fabric::VlWeight { vl, weight };
                }
            }
            while table.last() == Some(&weft_fabric::VlWeight { vl: 0, weight: 0 }) {
                table.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The QoS tables of `st` as they sit on the fabric, for comparing two states: per switch,
/// every pair [`writes`] covers (input port 0 or live, output live) with its VLs (`None`:
/// unassigned); per live end port, its injection table; per port with arbitration, its four
/// blocks (entries up to the last that is not (0, 0); blocks of none left out).
pub fn tables(st: &FabricState) -> QosTables {
    let f = &st.fabric;
    let mut t = QosTables::default();
    for id in f.node_ids() {
        let guid = f.node(id).guid();
        let live = live_ports(st, id);
        if f.node(id).is_switch() {
            for i in std::iter::once(0).chain(live.iter().copied()) {
                for &o in &live {
                    t.sl2vl
                        .insert((guid, i, o), switch_vls(st.switches.get(&id), i, o));
                }
            }
        } else {
            for &p in &live {
                let vls = st
                    .ports
                    .get(&PortRef::new(id, p))
                    .and_then(|s| s.sl2vl)
                    .unwrap_or([0; 16]);
                t.sl2vl.insert((guid, 0, p), Some(vls));
            }
        }
    }
    for (r, s) in &st.ports {
        if let Some(arb) = &s.vlarb {
            let guid = f.node(r.node).guid();
            for block in weft_formats::plan::VLARB_BLOCKS {
                let e = block_entries(Some(arb), block);
                if !e.is_empty() {
                    t.vlarb.insert((guid, r.port.0, block), e);
                }
            }
        }
    }
    t
}

/// A state's QoS tables as [`tables`] lays them out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QosTables {
    /// (node GUID, input port, output port) → the VL of each SL (`None`: unassigned).
    pub sl2vl: BTreeMap<(weft_fabric::Guid, u8, u8), Option<[u8; 16]>>,
    /// (node GUID, port, block) → the block's entries (blocks of all (0, 0) left out).
    pub vlarb: BTreeMap<(weft_fabric::Guid, u8, u8), Vec<(u8, u8)>>,
}

/// Why a plan's SL→VL and VL arbitration writes are not proven safe while they land.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct QosHazard {
    /// The step (from 1).
    pub step: usize,
    /// What some mix of its writes does, naming the node, the port or port pair and the SL or
    /// VL.
    pub why: String,
}

/// Checks that no mix of a plan's SL→VL and VL arbitration writes stops a packet that may be in
/// use, from what the writes themselves say (their `old` is what `weft apply` finds before it
/// writes; SLs in use are not known, so every SL a table sends to a data VL counts as in use):
///
/// * an SL→VL table keeps every SL its `old` sends to a data VL on a data VL (VL 15 drops);
/// * a VL an SL→VL write moves an SL to is scheduled on that output port by the `new` of an
///   arbitration block an earlier step wrote, and no write since took it out of that block;
/// * a VL the `old` of a step's arbitration blocks of a port schedules is scheduled in every
///   mix of them: some block the step writes has it, with a weight, both before and after, or a
///   block it leaves alone has it since an earlier step wrote it.
///
/// Conservative: a plan that moves lanes in one step, or ends a VL's arbitration, is refused
/// although the fabric may carry no packet on it (`weft apply --no-reprove` writes it on the
/// proof the plan carries). [`check_with`] knows more of the blocks.
pub fn check(steps: &[weft_formats::plan::PlanStep]) -> Result<(), QosHazard> {
    check_with(&BTreeMap::new(), steps)
}

/// VL arbitration blocks: (node GUID, port, block) → the block's entries.
pub type Blocks = BTreeMap<(weft_fabric::Guid, u8, u8), Vec<(u8, u8)>>;

/// The arbitration blocks of ports' tables, as [`check_with`] takes what the fabric holds
/// before a plan (blocks of all (0, 0) left out).
pub fn known_blocks<'a>(ports: impl Iterator<Item = (weft_fabric::Guid, u8, &'a VlArb)>) -> Blocks {
    let mut out = BTreeMap::new();
    for (g, port, arb) in ports {
        for b in 1..=4u8 {
            let e = block_entries(Some(arb), b);
            if !e.is_empty() {
                out.insert((g, port, b), e);
            }
        }
    }
    out
}

/// [`check`], knowing what the blocks in `known` hold before the plan (a block the plan writes
/// is what its writes say; one it leaves alone and `known` does not hold counts as scheduling
/// nothing).
pub fn check_with(known: &Blocks, steps: &[weft_formats::plan::PlanStep]) -> Result<(), QosHazard> {
    // Per (node, port, block): the entries the last step to write it left, or what is known.
    let mut written = known.clone();
    let has = |entries: &[(u8, u8)], vl: u8| entries.iter().any(|&(v, w)| v == vl && w > 0);
    for (i, s) in steps.iter().enumerate() {
        let step = i + 1;
        let hazard = |why: String| QosHazard { step, why };
        // Arbitration first: what this step's blocks of each port keep in every mix.
        type Blocks<'a> = Vec<(u8, &'a Vec<(u8, u8)>, &'a Vec<(u8, u8)>)>;
        let mut arb: BTreeMap<(weft_fabric::Guid, u8), Blocks<'_>> = BTreeMap::new();
        for w in &s.writes {
            if let SmpWrite::VlArb {
                node,
                port,
                block,
                old,
                new,
            } = w
            {
                arb.entry((*node, *port))
                    .or_default()
                    .push((*block, old, new));
            }
        }
        for ((node, port), blocks) in &arb {
            // Blocks the step leaves alone whose entries an earlier step wrote.
            let others: Vec<&Vec<(u8, u8)>> = (1..=4u8)
                .filter(|b| blocks.iter().all(|(x, _, _)| x != b))
                .filter_map(|b| written.get(&(*node, *port, b)))
                .collect();
            for vl in 0..15u8 {
                let before = blocks.iter().any(|(_, o, _)| has(o, vl));
                let kept = blocks.iter().any(|(_, o, n)| has(o, vl) && has(n, vl))
                    || others.iter().any(|e| has(e, vl));
                if before && !kept {
                    return Err(hazard(format!(
                        "{node} port {port}: VL {vl} is scheduled before the step and not in \
                         some mix of its VL arbitration writes (a packet on it would stall)"
                    )));
                }
            }
        }
        for w in &s.writes {
            let SmpWrite::Sl2vl {
                node,
                in_port,
                out_port,
                old,
                new,
            } = w
            else {
                continue;
            };
            for (sl, (&o, &n)) in old.iter().zip(new).enumerate() {
                if o >= 15 || o == n {
                    continue;
                }
                let table = format!("{node} SL→VL input {in_port} output {out_port}");
                if n >= 15 {
                    return Err(hazard(format!(
                        "{table}: SL {sl} goes from VL {o} to VL {n}, which drops it (every SL \
                         a table sends to a data VL may be in use)"
                    )));
                }
                let scheduled = (1..=4u8).any(|b| {
                    written
                        .get(&(*node, *out_port, b))
                        .is_some_and(|e| has(e, n))
                });
                if !scheduled {
                    return Err(hazard(format!(
                        "{table}: SL {sl} moves to VL {n}, which no earlier step's VL \
                         arbitration write schedules on port {out_port}"
                    )));
                }
            }
        }
        for w in &s.writes {
            if let SmpWrite::VlArb {
                node,
                port,
                block,
                new,
                ..
            } = w
            {
                written.insert((*node, *port, *block), new.clone());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_verifier::testkit;

    /// Two spines, two leaves of two hosts, routed up/down: no QoS tables.
    fn base() -> FabricState {
        let f = testkit::fat_tree2(2, 2, 2);
        let lids = testkit::sequential_lids(&f);
        testkit::route_updown(&f, lids)
    }

    fn switch(st: &FabricState, k: usize) -> NodeId {
        st.fabric
            .node_ids()
            .filter(|&n| st.fabric.node(n).is_switch())
            .nth(k)
            .unwrap()
    }

    #[test]
    fn the_same_tables_need_no_write() {
        let st = base();
        assert!(writes(&st, &st).is_empty());
        assert!(high_limit_changes(&st, &st).is_empty());
    }

    /// A map for every pair is written to every pair of live ports and from port 0, each write
    /// with the old table (every SL on VL 0), in GUID and port order; landing them gives the
    /// new tables, from which nothing is left to write.
    #[test]
    fn a_map_for_every_pair_expands_over_the_live_pairs_and_port_0() {
        let old = base();
        let mut new = old.clone();
        let sw = switch(&old, 0);
        let map: [u8; 16] = std::array::from_fn(|s| (s % 2) as u8);
        new.switches.entry(sw).or_default().sl2vl_all = Some(map);
        let w = writes(&old, &new);
        let live = live_ports(&old, sw);
        assert_eq!(w.len(), (live.len() + 1) * live.len());
        let mut pairs = Vec::new();
        for x in &w {
            let SmpWrite::Sl2vl {
                node,
                in_port,
                out_port,
                old: o,
                new: n,
            } = x
            else {
                panic!("{x:?}")
            };
            assert_eq!(*node, old.fabric.node(sw).guid());
            assert_eq!((*o, *n), ([0; 16], map));
            pairs.push((*in_port, *out_port));
        }
        let mut sorted = pairs.clone();
        sorted.sort_unstable();
        assert_eq!(pairs, sorted);
        assert_eq!(pairs.first().map(|p| p.0), Some(0));
        let mut landed = old.clone();
        for x in &w {
            apply(&mut landed, x).unwrap();
        }
        assert!(writes(&landed, &new).is_empty());
        assert_eq!(tables(&landed), tables(&new));
        // Back again: the same pairs, old and new swapped.
        assert_eq!(writes(&new, &old).len(), w.len());
    }

    /// A pair the new state leaves unassigned is not written; one the old state leaves
    /// unassigned counts as every SL on VL 0.
    #[test]
    fn unassigned_pairs_are_left_alone_or_counted_as_vl_0() {
        let old = base();
        let sw = switch(&old, 1);
        let live = live_ports(&old, sw);
        let (a, b) = (live[0], live[1]);
        let mut new = old.clone();
        new.switches.entry(sw).or_default().sl2vl = vec![weft_fabric::Sl2VlRow {
            in_port: a,
            out_port: b,
            vl: [3; 16],
        }];
        let w = writes(&old, &new);
        assert_eq!(
            w,
            vec![SmpWrite::Sl2vl {
                node: old.fabric.node(sw).guid(),
                in_port: a,
                out_port: b,
                old: [0; 16],
                new: [3; 16],
            }]
        );
        // Back: the pairs `new` leaves unassigned count as VL 0, which `old` holds anyway.
        assert_eq!(
            writes(&new, &old),
            vec![SmpWrite::Sl2vl {
                node: old.fabric.node(sw).guid(),
                in_port: a,
                out_port: b,
                old: [3; 16],
                new: [0; 16],
            }]
        );
    }

    /// An end port's injection table and arbitration: the table as `in_port` 0, `out_port`
    /// the port; arbitration blocks only where they differ, each up to its last entry that is
    /// not (0, 0); a high limit set differently is listed, never written.
    #[test]
    fn end_ports_and_arbitration_blocks() {
        let old = base();
        let f = &old.fabric;
        let host = f.node_ids().find(|&n| !f.node(n).is_switch()).unwrap();
        let at = PortRef::new(host, 1);
        let mut new = old.clone();
        let w = |vl, weight| weft_fabric::VlWeight { vl, weight };
        let p = new.ports.entry(at).or_default();
        p.sl2vl = Some([1; 16]);
        p.vlarb = Some(VlArb {
            high_limit: 4,
            high: vec![w(0, 1)],
            low: (0..33)
                .map(|k| w(k % 15, if k == 32 { 7 } else { 0 }))
                .collect(),
        });
        let g = f.node(host).guid();
        let got = writes(&old, &new);
        let second: Vec<(u8, u8)> = vec![(32 % 15, 7)];
        assert_eq!(
            got,
            vec![
                SmpWrite::Sl2vl {
                    node: g,
                    in_port: 0,
                    out_port: 1,
                    old: [0; 16],
                    new: [1; 16],
                },
                SmpWrite::VlArb {
                    node: g,
                    port: 1,
                    block: 1,
                    old: Vec::new(),
                    new: (0..32u8).map(|k| (k % 15, 0)).collect(),
                },
                SmpWrite::VlArb {
                    node: g,
                    port: 1,
                    block: 2,
                    old: Vec::new(),
                    new: second,
                },
                SmpWrite::VlArb {
                    node: g,
                    port: 1,
                    block: 3,
                    old: Vec::new(),
                    new: vec![(0, 1)],
                },
            ]
        );
        assert_eq!(
            high_limit_changes(&old, &new),
            vec![HighLimitChange {
                port: at,
                old: 0,
                new: 4
            }]
        );
        assert_eq!(what(&got[3]), "port 1 VL arbitration block 3 (high 0–31)");
        assert_eq!(what(&got[0]), "SL→VL input 0 output 1");
        let mut landed = old.clone();
        for x in &got {
            apply(&mut landed, x).unwrap();
        }
        assert_eq!(tables(&landed), tables(&new));
        // A write whose old is not what the state holds is refused, naming the table.
        let e = apply(&mut landed, &got[0]).unwrap_err();
        assert!(e.contains("port 1 SL→VL"), "{e}");
    }
}

#[cfg(test)]
mod check_tests {
    use super::*;
    use weft_fabric::Guid;
    use weft_formats::plan::PlanStep;

    const SW: Guid = Guid(0x0002_c900_0000_0100);

    fn sl2vl(old: [u8; 16], new: [u8; 16]) -> SmpWrite {
        SmpWrite::Sl2vl {
            node: SW,
            in_port: 1,
            out_port: 2,
            old,
            new,
        }
    }

    fn arb(block: u8, old: &[(u8, u8)], new: &[(u8, u8)]) -> SmpWrite {
        SmpWrite::VlArb {
            node: SW,
            port: 2,
            block,
            old: old.to_vec(),
            new: new.to_vec(),
        }
    }

    fn steps(s: Vec<Vec<SmpWrite>>) -> Vec<PlanStep> {
        s.into_iter().map(PlanStep::of).collect()
    }

    /// Every SL on VL 0, but SL `sl` on `vl`.
    fn one(sl: usize, vl: u8) -> [u8; 16] {
        let mut t = [0; 16];
        t[sl] = vl;
        t
    }

    #[test]
    fn a_table_that_drops_an_sl_in_use_is_refused() {
        let e = check(&steps(vec![vec![sl2vl([0; 16], one(3, 15))]])).unwrap_err();
        assert_eq!(e.step, 1);
        assert_eq!(
            e.why,
            "0x0002c90000000100 SL→VL input 1 output 2: SL 3 goes from VL 0 to VL 15, which \
             drops it (every SL a table sends to a data VL may be in use)"
        );
        // An SL already dropped may stay dropped or come back to VL 0 (scheduled as before).
        assert!(check(&steps(vec![vec![sl2vl(one(3, 15), one(3, 15))]])).is_ok());
    }

    #[test]
    fn an_sl_moves_only_to_a_vl_an_earlier_step_scheduled() {
        let moved = sl2vl([0; 16], one(1, 1));
        let e = check(&steps(vec![vec![moved.clone()]])).unwrap_err();
        assert!(e.why.contains("SL 1 moves to VL 1, which no earlier step's VL arbitration write schedules on port 2"), "{e}");
        // In the same step as the arbitration that schedules it: some mix has the move first.
        let add = arb(1, &[(0, 4)], &[(0, 4), (1, 4)]);
        let e = check(&steps(vec![vec![add.clone(), moved.clone()]])).unwrap_err();
        assert_eq!(e.step, 1);
        assert!(check(&steps(vec![vec![add], vec![moved]])).is_ok());
        // A weight of 0 schedules nothing.
        let zero = arb(1, &[(0, 4)], &[(0, 4), (1, 0)]);
        assert!(check(&steps(vec![vec![zero], vec![sl2vl([0; 16], one(1, 1))]])).is_err());
    }

    #[test]
    fn a_vl_stays_scheduled_in_every_mix_of_a_step() {
        // VL 0 moves from the high table to the low one: in one step, some mix has neither.
        let from_high = arb(3, &[(0, 4)], &[]);
        let to_low = arb(1, &[(1, 4)], &[(0, 1), (1, 1)]);
        let e = check(&steps(vec![vec![from_high.clone(), to_low.clone()]])).unwrap_err();
        assert_eq!(
            e.why,
            "0x0002c90000000100 port 2: VL 0 is scheduled before the step and not in some mix \
             of its VL arbitration writes (a packet on it would stall)"
        );
        // The low table takes it on first, then the high table lets it go.
        let to_low_first = arb(1, &[(1, 4)], &[(0, 1), (1, 1)]);
        assert!(check(&steps(vec![vec![to_low_first], vec![from_high]])).is_ok());
        // Writes of other kinds are left alone.
        assert!(check(&steps(vec![Vec::new()])).is_ok());
    }
}
