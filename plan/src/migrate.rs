//! VM migration on vSwitch SR-IOV fabrics (Paper A): the VM keeps its LID, and only the
//! switches that must forward it elsewhere are written.
//!
//! A migration is found by comparing the two states' VMs: same VFs (hypervisors, indices,
//! GUIDs), same everything else, some VMs on other VFs. Each moved VM's LID follows it:
//!
//! * **dynamic LIDs — LID copy** (ItRC): each written switch takes the destination
//!   hypervisor's own (PF) entry for the VM's LID; one SMP per switch, the LID's block only;
//! * **prepopulated LIDs — LID swap**: the VM keeps its LID, the destination VF's LID goes
//!   to the VF it left, and each written switch swaps the two entries: one SMP per switch when
//!   both LIDs share a 64-LID block, else two.
//!
//! **Which switches** (FTreeMinRC): on a fat-tree, the skyline of the sub-trees the move
//! spans — the source and destination leaves, then level by level all their ancestors, up to
//! the common ones. Outside it every route already climbs into that skyline (destination-based
//! routing sends a destination through the same switches from everywhere above), so the
//! switches marked are the only ones whose entries can need changing; of those, only entries
//! that actually differ are written. A fabric without tree levels (no leaf with end nodes),
//! or a marking whose end state is not proven, falls back to every switch (ItRC), which the
//! result says.
//!
//! **Order and proof**: the VFs' LIDs and P_Key tables are written first (the VM is stopped
//! there: its LID now belongs to the destination port, and routes toward it fail until their
//! entries are written); then the LFT entries in stages, each after its new next hop's (the
//! destination side bottom-up, the common ancestors, the source side top-down), each stage a
//! step proven by the verifier's `transition` property, split when it is not. The end state
//! is proven by the last step: every step's union dependency graph acyclic, and no route
//! failing after it.
//!
//! [`Migrator`] keeps the transition checker of a state, so a service planning one migration
//! after another pays for the whole-fabric pass once.

use crate::{order, PlanError};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{
    FabricState, Lid, LinkState, NodeId, PKey, PortNum, PortRef, ValidState, VirtualPort, LFT_UNSET,
};
use weft_formats::plan::{PlanStep, SmpWrite};
use weft_verifier::transition::{StepCheck, Transition};
use weft_verifier::Scope;

/// How a VM's LID follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LidMove {
    /// Dynamic LIDs: switches copy the destination hypervisor's entry (its PF LID).
    Copy {
        /// The destination hypervisor port's LID.
        pf: u16,
    },
    /// Prepopulated LIDs: switches swap the VM's entry with the destination VF's LID's.
    Swap {
        /// The destination VF's LID, which goes to the VF the VM left.
        other: u16,
    },
}

/// How the switches to write were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Marking {
    /// FTreeMinRC: the skyline of the sub-trees the move spans.
    Skyline,
    /// ItRC: every switch.
    Every,
}

/// A VM that moves, as found by comparing two states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The VM.
    pub vm: String,
    /// Its LID (kept).
    pub lid: Lid,
    /// The VF it leaves.
    pub from: (PortRef, u8),
    /// The VF it moves to.
    pub to: (PortRef, u8),
    /// How its LID follows it.
    pub how: LidMove,
}

/// What a planned move does, for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MoveReport {
    /// The VM.
    pub vm: String,
    /// Its LID.
    pub lid: u16,
    /// The hypervisor and VF it leaves (`cn140` port 1 VF 0).
    pub from: String,
    /// The hypervisor and VF it moves to.
    pub to: String,
    /// How its LID follows it.
    pub how: LidMove,
    /// How the switches were chosen.
    pub marking: Marking,
    /// Switches marked.
    pub marked: usize,
    /// Switches with an entry that changes (Paper A's n′).
    pub updated: usize,
    /// LFT block writes for this move.
    pub lft_smps: usize,
}

/// A hypervisor port's VMs as (VM, LID) and its free VFs' LIDs, sorted.
pub type VfView = (Vec<(String, Option<u16>)>, Vec<u16>);

/// The VMs per hypervisor port as (VM, LID), and the LIDs of its free VFs, sorted: what two
/// states must agree on for their VFs to be the same (which VF index a VM runs on is the
/// hypervisor's business).
pub fn vf_view(v: &[VirtualPort]) -> BTreeMap<PortRef, VfView> {
    let mut out: BTreeMap<PortRef, VfView> = BTreeMap::new();
    for x in v {
        let e = out.entry(x.host).or_default();
        match (&x.vm, x.lid) {
            (Some(vm), lid) => e.0.push((vm.clone(), lid.map(|l| l.0))),
            (None, Some(l)) => e.1.push(l.0),
            (None, None) => {}
        }
    }
    for e in out.values_mut() {
        e.0.sort();
        e.1.sort_unstable();
    }
    out
}

/// The moves from `old` to `new` when VMs run on other hypervisors (`None` when none does):
/// a moved VM takes the lowest free VF of its new hypervisor. Anything else that differs
/// along with it is refused: plan the moves and the rest apart.
pub fn moves(old: &ValidState, new: &ValidState) -> Result<Option<Vec<Move>>, PlanError> {
    let (a, b) = (&old.lids.vports, &new.lids.vports);
    let hosts = |v: &[VirtualPort]| -> BTreeMap<String, PortRef> {
        v.iter()
            .filter_map(|x| Some((x.vm.clone()?, x.host)))
            .collect()
    };
    let (ha, hb) = (hosts(a), hosts(b));
    if ha == hb {
        return Ok(None);
    }
    let inventory = |v: &[VirtualPort]| -> Vec<(PortRef, u8, u64)> {
        v.iter().map(|x| (x.host, x.vf, x.guid.0)).collect()
    };
    if inventory(a) != inventory(b) {
        return Err(PlanError::Unplanned(
            "VFs (hypervisors, VF counts or GUIDs) changed along with VM placements",
        ));
    }
    if ha.keys().ne(hb.keys()) {
        return Err(PlanError::Unplanned(
            "VMs started or stopped (only moves are planned)",
        ));
    }
    let same = old.fabric == new.fabric
        && old.lids.base == new.lids.base
        && old.lids.lmc == new.lids.lmc
        && old.path_sl == new.path_sl
        && old.ports == new.ports
        && old.partitions == new.partitions
        && old.same_sl2vl(new);
    if !same {
        return Err(PlanError::Unplanned(
            "VM moves together with changes of the fabric, LIDs, port tables, partitions or SL→VL tables; plan them apart",
        ));
    }
    // The VFs as the moves land one after another: a move waits until its new hypervisor
    // has a free VF (another VM may leave it first); moves that never get one (VMs trading
    // places with no spare VF) are refused.
    let mut cur: Vec<VirtualPort> = a.clone();
    let mut waiting: Vec<(&String, PortRef)> = hb
        .iter()
        .filter(|(vm, &to)| ha.get(*vm).is_some_and(|&from| from != to))
        .map(|(vm, &to)| (vm, to))
        .collect();
    let mut out = Vec::new();
    while !waiting.is_empty() {
        let before = waiting.len();
        let mut still = Vec::new();
        for (vm, to_host) in waiting {
            let src = cur.iter().position(|x| x.vm.as_ref() == Some(vm));
            let dst = cur.iter().position(|x| x.host == to_host && x.vm.is_none());
            let (Some(si), Some(di)) = (src, dst) else {
                still.push((vm, to_host));
                continue;
            };
            let (Some(sv), Some(dv)) = (cur.get(si).cloned(), cur.get(di).cloned()) else {
                continue;
            };
            let Some(lid) = sv.lid else {
                return Err(PlanError::Unplanned("a VM without a LID"));
            };
            let how = match dv.lid {
                Some(other) => LidMove::Swap { other: other.0 },
                None => match old.lids.get(to_host.node, to_host.port) {
                    Some(pf) => LidMove::Copy { pf: pf.0 },
                    None => return Err(PlanError::Unplanned("a hypervisor port without a LID")),
                },
            };
            let route_like = match how {
                LidMove::Copy { pf } => Lid(pf),
                LidMove::Swap { other } => Lid(other),
            };
            if !same_sls(old, lid, route_like) {
                return Err(PlanError::Unplanned(
                    "a VM move whose LID has other path SLs (layer or class) than the routes it takes: moving path SLs",
                ));
            }
            if let Some(x) = cur.get_mut(si) {
                x.vm = None;
                x.lid = dv.lid;
            }
            if let Some(x) = cur.get_mut(di) {
                x.vm = Some(vm.clone());
                x.lid = Some(lid);
            }
            out.push(Move {
                vm: vm.clone(),
                lid,
                from: (sv.host, sv.vf),
                to: (dv.host, dv.vf),
                how,
            });
        }
        if still.len() == before {
            return Err(PlanError::Unplanned(
                "VMs trading places with no free VF to move through",
            ));
        }
        waiting = still;
    }
    Ok(Some(out))
}

/// A planned migration.
#[derive(Clone, Debug)]
pub struct Migrated {
    /// The steps: the VF writes, then the LFT stages.
    pub steps: Vec<PlanStep>,
    /// The check of each LFT step (the VF step has none: it changes no table entry).
    pub checks: Vec<StepCheck>,
    /// Steps added by splitting.
    pub splits: usize,
    /// Per move, what it does.
    pub moves: Vec<MoveReport>,
    /// Every changed LFT entry: (switch, LID, new port).
    pub entries: Vec<(NodeId, u16, u8)>,
    /// The VFs after the moves.
    pub vports: Vec<VirtualPort>,
    /// Sources whose route to a moved VM changes.
    pub rerouted: crate::Rerouted,
}

/// Plans migrations from one state (see the module docs).
pub struct Migrator<'a> {
    start: &'a ValidState,
    t: Transition<'a>,
    /// Per node index: the switches one level up on live links.
    parents: Vec<Vec<NodeId>>,
}

impl<'a> Migrator<'a> {
    /// Prepares for `start`: its transition checker (one pass over every route) and tree
    /// levels.
    pub fn new(start: &'a ValidState, scope: Scope) -> Migrator<'a> {
        Migrator {
            t: Transition::new(start, scope),
            start,
            parents: parents(start),
        }
    }

    /// Plans `moves` (the VFs' P_Key tables to become `desired`'s, the same VFs), choosing
    /// switches by `marking`. The checker moves on with every step proven: plan the next
    /// migration from the state this one leaves, or [`Migrator::checkpoint`] before and
    /// [`Migrator::rollback`] after to plan another from the same state (after an error too:
    /// the steps before it have landed in the checker).
    pub fn migrate(
        &mut self,
        moves: &[Move],
        desired: &[VirtualPort],
        marking: Marking,
    ) -> Result<Migrated, PlanError> {
        let st = self.start;
        let mut vports = st.lids.vports.clone();
        // Entries changed so far, over the start's tables.
        let mut now: BTreeMap<(NodeId, u16), u8> = BTreeMap::new();
        let entry = |now: &BTreeMap<(NodeId, u16), u8>, x: NodeId, lid: u16| -> u8 {
            now.get(&(x, lid)).copied().unwrap_or_else(|| {
                st.switches
                    .get(&x)
                    .and_then(|t| t.lft.ports.get(usize::from(lid)))
                    .copied()
                    .unwrap_or(LFT_UNSET)
            })
        };
        let mut vf_writes = Vec::new();
        let mut reports = Vec::new();
        for m in moves {
            let (Some(s), Some(d)) = (self.leaf(m.from.0), self.leaf(m.to.0)) else {
                return Err(PlanError::Unplanned(
                    "a VM move between hypervisors not cabled to a live switch",
                ));
            };
            let marked: Vec<NodeId> = match marking {
                Marking::Skyline => self.skyline(s, d),
                Marking::Every => st.switches.keys().copied().collect(),
            };
            let mut updated = BTreeSet::new();
            let mut blocks = BTreeSet::new();
            let mut mine = Vec::new();
            for &x in &marked {
                let (vm_to, other_to) = match m.how {
                    LidMove::Copy { pf } => (entry(&now, x, pf), None),
                    LidMove::Swap { other } => (
                        entry(&now, x, other),
                        Some((other, entry(&now, x, m.lid.0))),
                    ),
                };
                for (lid, port) in std::iter::once((m.lid.0, vm_to)).chain(other_to) {
                    if entry(&now, x, lid) != port {
                        mine.push((x, lid, port));
                        updated.insert(x);
                        blocks.insert((x, lid / weft_formats::plan::LFT_BLOCK as u16));
                    }
                }
            }
            for &(x, lid, port) in &mine {
                now.insert((x, lid), port);
            }
            // The VFs: the destination takes the VM, its LID and the desired P_Key table; the
            // source is left with the other LID (swap) or none (copy).
            let freed = match m.how {
                LidMove::Copy { .. } => None,
                LidMove::Swap { other } => Some(Lid(other)),
            };
            for (at, lid, vm) in [
                (m.from, freed, None),
                (m.to, Some(m.lid), Some(m.vm.clone())),
            ] {
                if let Some(v) = vports.iter_mut().find(|v| (v.host, v.vf) == at) {
                    v.lid = lid;
                    v.vm = vm;
                }
            }
            reports.push(MoveReport {
                vm: m.vm.clone(),
                lid: m.lid.0,
                from: vf_name(st, m.from),
                to: vf_name(st, m.to),
                how: m.how,
                marking,
                marked: marked.len(),
                updated: updated.len(),
                lft_smps: blocks.len(),
            });
        }
        // The VFs' P_Key tables as the desired state has them: a VM's follows the VM, a free
        // VF's is a free VF's there.
        let free = desired
            .iter()
            .find(|d| d.vm.is_none())
            .map(|d| d.pkeys.clone());
        let by_vm: BTreeMap<&str, &Option<Vec<PKey>>> = desired
            .iter()
            .filter_map(|d| Some((d.vm.as_deref()?, &d.pkeys)))
            .collect();
        for v in &mut vports {
            let want = match &v.vm {
                Some(vm) => by_vm.get(vm.as_str()).map(|&k| k.clone()),
                None => free.clone(),
            };
            if let Some(k) = want {
                v.pkeys = k;
            }
        }
        for (v, old) in vports.iter().zip(&st.lids.vports) {
            if v.lid != old.lid || v.vm != old.vm || v.pkeys != old.pkeys {
                vf_writes.push(vf_write(st, old, v));
            }
        }
        // The LIDs move with the VMs (the routes toward them fail until mended).
        for m in moves {
            let mut relocated = self.t.relocate(m.lid, m.to.0);
            if let LidMove::Swap { other } = m.how {
                relocated &= self.t.relocate(Lid(other), m.from.0);
            }
            if !relocated {
                return Err(PlanError::Unplanned("a VM LID the checker does not route"));
            }
        }
        // Entries that end up differing (a later move may put one back).
        let base = BTreeMap::new();
        let changes: Vec<(NodeId, u16, u8)> = now
            .iter()
            .filter(|&(&(x, lid), &port)| entry(&base, x, lid) != port)
            .map(|(&(x, lid), &port)| (x, lid, port))
            .collect();
        let changed: Vec<(NodeId, u16)> = changes.iter().map(|&(x, l, _)| (x, l)).collect();
        let target = |x: NodeId, lid: u16| entry(&now, x, lid);
        let stages = order::staged(st, &changed, &target, &mut order::Shadow::new());
        let rerouted = order::rerouted(st, &changed);
        let (lft_steps, checks, splits) = crate::prove_stages(&mut self.t, st, stages)?;
        if self.t.failing() > 0 {
            return Err(PlanError::Unproven(format!(
                "{} route(s) do not arrive after the migration's last step",
                self.t.failing()
            )));
        }
        let mut steps = Vec::new();
        if !vf_writes.is_empty() {
            vf_writes.sort();
            steps.push(PlanStep::of(vf_writes));
        }
        steps.extend(lft_steps);
        Ok(Migrated {
            steps,
            checks,
            splits,
            moves: reports,
            entries: changes,
            vports,
            rerouted,
        })
    }

    /// Starts recording, so that [`Migrator::rollback`] returns here: plan a migration, and
    /// roll back when it is not applied (the checker then plans the next from this state).
    pub fn checkpoint(&mut self) {
        self.t.checkpoint();
    }

    /// Returns the checker to the last checkpoint.
    pub fn rollback(&mut self) {
        self.t.rollback();
    }

    /// The switch a hypervisor port is cabled to, when the cable and switch are live.
    fn leaf(&self, port: PortRef) -> Option<NodeId> {
        let f = &self.start.fabric;
        let (peer, link) = f.peer(port)?;
        let n = f.node(peer.node);
        (n.is_switch() && !n.down && f.link(link).state == LinkState::Up).then_some(peer.node)
    }

    /// FTreeMinRC's marking: `s` alone when `s == d`; else both leaves and, level by level,
    /// every ancestor of each, up to the level where the two sets meet (or the top).
    fn skyline(&self, s: NodeId, d: NodeId) -> Vec<NodeId> {
        let mut marked: BTreeSet<NodeId> = [s, d].into_iter().collect();
        let (mut fs, mut fd): (BTreeSet<NodeId>, BTreeSet<NodeId>) =
            ([s].into_iter().collect(), [d].into_iter().collect());
        while fs != fd {
            let up = |set: &BTreeSet<NodeId>| -> BTreeSet<NodeId> {
                set.iter()
                    .flat_map(|x| self.parents.get(x.index()).into_iter().flatten())
                    .copied()
                    .collect()
            };
            let (ns, nd) = (up(&fs), up(&fd));
            if ns.is_empty() && nd.is_empty() {
                break;
            }
            marked.extend(ns.iter().chain(&nd).copied());
            (fs, fd) = (ns, nd);
        }
        marked.into_iter().collect()
    }
}

/// Each switch's parents (per node index): its neighbours one tree level up, levels counted
/// from the leaves (switches with a live end node, level 1) upward over live switch links,
/// breadth first.
fn parents(st: &ValidState) -> Vec<Vec<NodeId>> {
    let f = &st.fabric;
    let n = f.nodes().len();
    let mut level = vec![0u32; n];
    let live_peer = |x: NodeId, p: PortNum| -> Option<NodeId> {
        let (peer, link) = f.peer(PortRef { node: x, port: p })?;
        (f.link(link).state == LinkState::Up && !f.node(peer.node).down).then_some(peer.node)
    };
    let neighbours = |x: NodeId| -> Vec<NodeId> {
        f.node(x)
            .ports
            .iter()
            .filter_map(|p| live_peer(x, p.num))
            .collect()
    };
    let mut queue = std::collections::VecDeque::new();
    let lvl = |level: &[u32], x: NodeId| level.get(x.index()).copied().unwrap_or(0);
    let set = |level: &mut Vec<u32>, x: NodeId, l: u32| {
        if let Some(slot) = level.get_mut(x.index()) {
            *slot = l;
        }
    };
    for x in f.node_ids() {
        let node = f.node(x);
        if node.is_switch() && !node.down && neighbours(x).iter().any(|&y| !f.node(y).is_switch()) {
            set(&mut level, x, 1);
            queue.push_back(x);
        }
    }
    while let Some(x) = queue.pop_front() {
        let l = lvl(&level, x);
        for y in neighbours(x) {
            if f.node(y).is_switch() && lvl(&level, y) == 0 {
                set(&mut level, y, l + 1);
                queue.push_back(y);
            }
        }
    }
    f.node_ids()
        .map(|x| {
            let l = lvl(&level, x);
            if l == 0 {
                return Vec::new();
            }
            let mut up: Vec<NodeId> = neighbours(x)
                .into_iter()
                .filter(|&y| lvl(&level, y) == l + 1)
                .collect();
            up.sort_unstable();
            up.dedup();
            up
        })
        .collect()
}

/// Whether every source sends to `a` and `b` on the same SLs (a LID taking another's routes
/// must take its SLs too, or the routes may change layer).
fn same_sls(st: &ValidState, a: Lid, b: Lid) -> bool {
    let p = &st.path_sl;
    if p.by_dlid.is_empty() && p.by_switch.is_empty() && p.by_source.is_empty() {
        return true;
    }
    st.lids.base.iter().all(|(&n, ports)| {
        ports.keys().all(|&port| {
            let src = PortRef { node: n, port };
            st.path_sls(src, a) == st.path_sls(src, b)
        })
    })
}

/// `cn140` port 1 VF 0.
fn vf_name(st: &ValidState, (port, vf): (PortRef, u8)) -> String {
    format!(
        "`{}` port {} VF {vf}",
        st.fabric.node(port.node).name(),
        port.port.0
    )
}

/// A VF's P_Key table as written (none: the IBA default).
pub(crate) fn vf_pkeys(v: &VirtualPort) -> Vec<u16> {
    v.pkeys.as_ref().map_or_else(
        || vec![PKey::DEFAULT.0],
        |t| t.iter().map(|k| k.0).collect(),
    )
}

/// The write that takes VF `old` to `new`.
pub(crate) fn vf_write(st: &ValidState, old: &VirtualPort, new: &VirtualPort) -> SmpWrite {
    let keys = vf_pkeys;
    SmpWrite::Vport {
        node: st.fabric.node(old.host.node).guid(),
        port: old.host.port.0,
        vf: old.vf,
        guid: old.guid,
        old_lid: old.lid.map(|l| l.0),
        new_lid: new.lid.map(|l| l.0),
        old_pkeys: keys(old),
        new_pkeys: keys(new),
    }
}

/// The state after `m`: `start` with its changed entries and VFs.
pub fn end_state(start: &ValidState, m: &Migrated) -> Result<ValidState, PlanError> {
    let mut st: FabricState = start.state().clone();
    for &(x, lid, port) in &m.entries {
        if let Some(t) = st.switches.get_mut(&x) {
            t.lft.set(Lid(lid), PortNum(port));
        }
    }
    st.lids.vports = m.vports.clone();
    ValidState::new(st).map_err(PlanError::State)
}
