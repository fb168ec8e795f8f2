//! The state read against a reference, by GUID (the two name nodes their own ways): LFT
//! blocks that differ, by switch and block; cables down or new; nodes gone or new. And the
//! two states a repair is planned between ([`repair_states`]).

use crate::smp::LFT_BLOCK;
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{
    FabricBuilder, FabricState, Guid, Lft, LinkState, StateErrors, ValidState, LFT_UNSET,
};

/// A GUID as JSON holds it: `0x` and 16 hex digits (a number that large is not exact in
/// every JSON reader).
fn hex<S: serde::Serializer>(g: &Guid, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{:#018x}", g.0))
}

/// GUIDs and names as JSON holds them.
fn hex_named<S: serde::Serializer>(v: &[(Guid, String)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq as _;
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for (g, n) in v {
        seq.serialize_element(&(format!("{:#018x}", g.0), n))?;
    }
    seq.end()
}

/// A cable end as JSON holds it.
fn end<S: serde::Serializer>(e: &(Guid, String, u8), s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&(format!("{:#018x}", e.0 .0), &e.1, e.2), s)
}

/// An LFT block that differs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Block {
    /// The switch's GUID.
    #[serde(serialize_with = "hex")]
    pub switch: Guid,
    /// Its name in the reference.
    pub name: String,
    /// The block (64 LIDs from `64 × block`).
    pub block: u16,
}

/// A cable, by its ends (node GUID and name in the state that has it, port).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Cable {
    /// One end.
    #[serde(serialize_with = "end")]
    pub a: (Guid, String, u8),
    /// The other.
    #[serde(serialize_with = "end")]
    pub b: (Guid, String, u8),
}

/// A state read against a reference.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Difference {
    /// LFT blocks of switches in both that differ (a switch with an empty LFT: every block
    /// the reference's holds).
    pub blocks: Vec<Block>,
    /// Cables up in the reference and not live.
    pub cables_down: Vec<Cable>,
    /// Cables live and not up in the reference.
    pub cables_new: Vec<Cable>,
    /// Nodes up in the reference, not live (GUID, name).
    #[serde(serialize_with = "hex_named")]
    pub nodes_gone: Vec<(Guid, String)>,
    /// Nodes live, not in the reference.
    #[serde(serialize_with = "hex_named")]
    pub nodes_new: Vec<(Guid, String)>,
}

impl Difference {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
            && self.cables_down.is_empty()
            && self.cables_new.is_empty()
            && self.nodes_gone.is_empty()
            && self.nodes_new.is_empty()
    }

    /// The blocks, by switch.
    pub fn blocks_by_switch(&self) -> Vec<(Guid, Vec<u16>)> {
        let mut by: BTreeMap<Guid, Vec<u16>> = BTreeMap::new();
        for b in &self.blocks {
            by.entry(b.switch).or_default().push(b.block);
        }
        by.into_iter().collect()
    }

    /// Switches with a block that differs.
    pub fn switches(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| b.switch)
            .collect::<BTreeSet<_>>()
            .len()
    }
}

/// The blocks in which two LFTs differ (an entry past the end of one: unset).
pub(crate) fn blocks_differing(a: &[u8], b: &[u8]) -> Vec<u16> {
    let len = a.len().max(b.len());
    let at = |t: &[u8], i: usize| t.get(i).copied().unwrap_or(LFT_UNSET);
    let mut out: Vec<u16> = Vec::new();
    for i in 0..len {
        let block = u16::try_from(i / LFT_BLOCK).unwrap_or(u16::MAX);
        if at(a, i) != at(b, i) && out.last() != Some(&block) {
            out.push(block);
        }
    }
    out
}

/// A cable by its ends' GUIDs and ports, lower end first.
type CableKey = ((Guid, u8), (Guid, u8));

/// Cables up in `s`, each by its ends' GUIDs and ports, lower end first, with their names.
fn cables(s: &FabricState) -> BTreeMap<CableKey, Cable> {
    let f = &s.fabric;
    let mut out = BTreeMap::new();
    for l in f.links().iter().filter(|l| l.state == LinkState::Up) {
        let (na, nb) = (f.node(l.a.node), f.node(l.b.node));
        if na.down || nb.down {
            continue;
        }
        let mut ends = [
            (na.guid(), na.name().to_owned(), l.a.port.0),
            (nb.guid(), nb.name().to_owned(), l.b.port.0),
        ];
        ends.sort();
        let [a, b] = ends;
        out.insert(((a.0, a.2), (b.0, b.2)), Cable { a, b });
    }
    out
}

/// Nodes up in `s`, by GUID, with their names.
fn nodes(s: &FabricState) -> BTreeMap<Guid, String> {
    s.fabric
        .nodes()
        .iter()
        .filter(|n| !n.down)
        .map(|n| (n.guid(), n.name().to_owned()))
        .collect()
}

/// Each switch's LFT in `s`, by GUID.
fn lfts(s: &FabricState) -> BTreeMap<Guid, &[u8]> {
    s.switches
        .iter()
        .map(|(id, t)| (s.fabric.node(*id).guid(), t.lft.ports.as_slice()))
        .collect()
}

/// What `live` holds against `reference`, by GUID.
pub fn difference(live: &FabricState, reference: &FabricState) -> Difference {
    let (ln, rn) = (nodes(live), nodes(reference));
    let (lc, rc) = (cables(live), cables(reference));
    let (ll, rl) = (lfts(live), lfts(reference));
    let mut blocks = Vec::new();
    for n in reference.fabric.nodes().iter().filter(|n| n.is_switch()) {
        let g = n.guid();
        if !ln.contains_key(&g) || !rn.contains_key(&g) {
            continue;
        }
        let want = rl.get(&g).copied().unwrap_or_default();
        let have = ll.get(&g).copied().unwrap_or_default();
        for block in blocks_differing(have, want) {
            blocks.push(Block {
                switch: g,
                name: n.name().to_owned(),
                block,
            });
        }
    }
    blocks.sort();
    Difference {
        blocks,
        cables_down: rc
            .iter()
            .filter(|(k, _)| !lc.contains_key(k))
            .map(|(_, c)| c.clone())
            .collect(),
        cables_new: lc
            .iter()
            .filter(|(k, _)| !rc.contains_key(k))
            .map(|(_, c)| c.clone())
            .collect(),
        nodes_gone: rn
            .iter()
            .filter(|(g, _)| !ln.contains_key(g))
            .map(|(g, n)| (*g, n.clone()))
            .collect(),
        nodes_new: ln
            .iter()
            .filter(|(g, _)| !rn.contains_key(g))
            .map(|(g, n)| (*g, n.clone()))
            .collect(),
    }
}

/// Why no repair can be planned.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// The fabric has nodes or cables the desired state does not.
    #[error("the fabric has {0} the desired state does not have; a repair keeps to the desired state's fabric")]
    Extra(String),
    /// A state made is not valid.
    #[error("the states to plan between are not valid: {0}")]
    State(#[from] StateErrors),
}

impl weft_fabric::code::Coded for RepairError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            RepairError::Extra(_) => "weft::deploy::watch_extra",
            RepairError::State(_) => "weft::deploy::watch_state",
        }
    }
}

/// The two states a repair is planned between: what the fabric runs (the live LFTs and
/// LIDs on the desired state's fabric, its other tables the desired state's), and the
/// desired state with every cable and node the fabric lost marked down. `weft_plan::plan`
/// then reroutes only what the loss breaks, or leads to the desired tables where the fabric
/// is whole.
pub fn repair_states(
    live: &FabricState,
    desired: &ValidState,
) -> Result<(ValidState, ValidState), RepairError> {
    let diff = difference(live, desired.state());
    if !diff.nodes_new.is_empty() || !diff.cables_new.is_empty() {
        return Err(RepairError::Extra(format!(
            "{} node(s) and {} cable(s)",
            diff.nodes_new.len(),
            diff.cables_new.len()
        )));
    }
    let f = &desired.fabric;
    let live_lfts: BTreeMap<Guid, Lft> = live
        .switches
        .iter()
        .map(|(id, t)| (live.fabric.node(*id).guid(), t.lft.clone()))
        .collect();
    let mut old = desired.state().clone();
    for (id, sw) in &mut old.switches {
        sw.lft = live_lfts
            .get(&f.node(*id).guid())
            .cloned()
            .unwrap_or_default();
    }
    // The live LIDs, by GUID (a plan refuses LIDs that moved: it does not write them).
    for (id, ports) in &live.lids.base {
        if let Some(to) = f.find_guid(live.fabric.node(*id).guid()) {
            old.lids.base.insert(to, ports.clone());
        }
    }
    let gone: BTreeSet<Guid> = diff.nodes_gone.iter().map(|(g, _)| *g).collect();
    let down: BTreeSet<CableKey> = diff
        .cables_down
        .iter()
        .map(|c| ((c.a.0, c.a.2), (c.b.0, c.b.2)))
        .collect();
    let mut b = FabricBuilder::from(f.clone());
    for (i, l) in f.links().iter().enumerate() {
        let mut ends = [
            (f.node(l.a.node).guid(), l.a.port.0),
            (f.node(l.b.node).guid(), l.b.port.0),
        ];
        ends.sort();
        let [x, y] = ends;
        if down.contains(&(x, y)) {
            if let Ok(i) = u32::try_from(i) {
                b.set_link_down(weft_fabric::LinkId(i));
            }
        }
    }
    for n in f.nodes() {
        if gone.contains(&n.guid()) {
            if let Some(id) = f.find_guid(n.guid()) {
                b.set_node_down(id);
            }
        }
    }
    let mut new = desired.state().clone();
    new.fabric = b.finish();
    // A switch down holds no tables.
    new.switches.retain(|id, _| !new.fabric.node(*id).down);
    Ok((ValidState::new(old)?, ValidState::new(new)?))
}
