//! The lane map written into a state: SL→VL tables, VL arbitration, the operational VLs
//! and the path SLs ([`apply`]); the same tables as OpenSM's `opensm.conf` QoS lines
//! ([`qos_conf`], [`opensm_conf`]).

use super::lanes::Pairs;
use super::LaneMap;
use crate::routing::Layers;
use crate::LaneScheme;
use weft_fabric::{
    FabricState, Lid, LidRange, NodeId, PortRef, Sl, SlSet, SwitchSls, VlArb, VlWeight,
};
use weft_formats::opensm::{write_qos_conf, QosConf};

/// The high-priority limit written when some class has `priority = high`: 4 × 4 KB of
/// high-priority data before a low-priority packet gets its turn (OpenSM's documented example
/// value; 0 would allow a single packet, 255 no limit).
pub const HIGH_LIMIT: u8 = 4;

/// Writes the lane map into `state`: SL→VL tables, VL arbitration and path SLs (`layers`:
/// the routing's layer per source switch and LID, when it has layers).
pub fn apply(state: &mut FabricState, map: &LaneMap, layers: Option<&Layers>) {
    if map.trivial() {
        return;
    }
    tables(state, map);
    path_sls(state, map, layers);
    state.dftree_lanes = dftree_lanes(map);
}

/// dFtree's (fast, slow) SL pairs: one per dFtree class and routing layer, sorted.
pub fn dftree_lanes(map: &LaneMap) -> Vec<(Sl, Sl)> {
    let layers = map.layers;
    let mut lanes: Vec<(Sl, Sl)> = map
        .classes
        .iter()
        .filter(|c| c.scheme == LaneScheme::Dftree)
        .flat_map(|c| {
            (0..layers.max(1)).map(move |l| (c.sl_of(0, l, layers), c.sl_of(1, l, layers)))
        })
        .collect();
    lanes.sort_unstable();
    lanes.dedup();
    lanes
}

/// The SL→VL tables, VL arbitration and operational VLs of [`apply`], without the path SLs:
/// what the multicast pass writes again when it gives its groups a VL of their own
/// ([`LaneMap::give_multicast`]), which no path takes.
pub fn tables(state: &mut FabricState, map: &LaneMap) {
    // One map for every (input, output) port pair of every switch, and every end port's
    // injection.
    let table = map.sl2vl_table();
    for sw in state.switches.values_mut() {
        sw.sl2vl.clear();
        sw.sl2vl_all = Some(table);
    }
    let ends: Vec<NodeId> = state
        .fabric
        .node_ids()
        .filter(|&id| !state.fabric.node(id).is_switch())
        .collect();
    for id in ends {
        state.set_node_injection(id, table);
    }
    state.max_vls = Some(max_vls(map));
    // Every VL a route may take is scheduled on every port that sends it: the classes' VLs,
    // or without classes the implicit one's (one per routing layer).
    let arb = vlarb(map);
    let cabled: Vec<PortRef> = state
        .fabric
        .node_ids()
        .flat_map(|id| {
            state
                .fabric
                .node(id)
                .ports
                .iter()
                .filter(|p| p.link.is_some())
                .map(move |p| PortRef::new(id, p.num.0))
        })
        .collect();
    for p in cabled {
        state.ports.entry(p).or_default().vlarb = Some(arb.clone());
    }
}

/// The tables [`apply`] gives every port, as `opensm.conf` states them (the same as
/// [`QosConf::of_state`] of the state [`apply`] wrote; a test holds them equal).
pub fn qos_conf(map: &LaneMap) -> QosConf {
    QosConf {
        sl2vl: map.sl2vl_table(),
        vlarb: vlarb(map),
        max_vls: max_vls(map),
    }
}

/// OpenSM's QoS configuration for the lane map (`opensm -Q -F opensm.conf`), written by
/// [`write_qos_conf`] with a comment per class.
pub fn opensm_conf(map: &LaneMap, fabric: &str) -> String {
    write_qos_conf(fabric, &qos_conf(map), &map.conf_classes())
}

/// The data VLs the SM is to operate on every port: the smallest PortInfo setting (1, 2, 4, 8
/// or 15 VLs) holding every VL used.
pub fn max_vls(map: &LaneMap) -> u8 {
    [1u8, 2, 4, 8, 15]
        .into_iter()
        .find(|&n| n >= map.vls())
        .unwrap_or(15)
}

/// The VL arbitration table every port gets: each class's VLs in its priority's table, its
/// weight split over them (rounded up).
fn vlarb(map: &LaneMap) -> VlArb {
    let mut arb = VlArb {
        high_limit: 0,
        high: Vec::new(),
        low: Vec::new(),
    };
    for c in &map.classes {
        let weight = c.weight_per_vl(map.layers);
        let table = if c.high { &mut arb.high } else { &mut arb.low };
        for k in 0..c.width(map.layers) {
            table.push(VlWeight {
                vl: c.vl.0 + k,
                weight,
            });
        }
    }
    // The multicast groups' VL of their own, at low priority.
    if let Some((_, vl)) = map.multicast {
        arb.low.push(VlWeight {
            vl: vl.0,
            weight: map.multicast_weight(),
        });
    }
    if !arb.high.is_empty() {
        arb.high_limit = HIGH_LIMIT;
    }
    arb
}

/// The path SLs: per (source switch, destination LID), the SLs of every class — its lane
/// for the pair (vFtree: from the leaves' matrix; dFtree: both) on the routes' layer. Ranges
/// equal to the default (what a source at no leaf sends on layer 0) are left to it.
fn path_sls(state: &mut FabricState, map: &LaneMap, layers: Option<&Layers>) {
    let pairs = Pairs::new(state, map, layers);
    let default = pairs.set(None, 0);
    state.path_sl.default = SlSet(default);
    if !pairs.per_pair() {
        return;
    }
    let mut rows: Vec<SwitchSls> = Vec::new();
    for &x in state.switches.keys() {
        if !pairs.varies_from(x) {
            continue;
        }
        // Without layers a pair's set depends on the two leaves only: one per destination
        // leaf (the last entry for destinations at no leaf), worked out once per source.
        let by_leaf: Option<Vec<u16>> = pairs.layers.is_none().then(|| {
            let n = pairs.n_leaves;
            let mut lid_of_leaf = vec![None; n + 1];
            for (lid, leaf) in pairs.dst_leaf.iter().enumerate() {
                let k = leaf.map_or(n, |l| l as usize);
                if let Some(slot) = lid_of_leaf.get_mut(k).filter(|s| s.is_none()) {
                    *slot = Some(lid);
                }
            }
            lid_of_leaf
                .iter()
                .map(|l| l.map_or(default, |lid| pairs.set(Some(x), lid)))
                .collect()
        });
        let leaves_n = by_leaf.as_ref().map_or(0, |b| b.len().saturating_sub(1));
        let mut open: Option<SwitchSls> = None;
        for (lid, o) in pairs.owners.iter().enumerate() {
            if o.is_none() || lid == 0 {
                continue;
            }
            let s = match &by_leaf {
                Some(b) => {
                    let k = pairs
                        .dst_leaf
                        .get(lid)
                        .copied()
                        .flatten()
                        .map_or(leaves_n, |l| l as usize);
                    b.get(k).copied().unwrap_or(default)
                }
                None => pairs.set(Some(x), lid),
            };
            let lid = Lid(lid as u16);
            match &mut open {
                Some(r) if r.sls.0 == s && u32::from(r.lids.hi.0) + 1 == u32::from(lid.0) => {
                    r.lids.hi = lid;
                }
                _ => {
                    if let Some(r) = open.take().filter(|r| r.sls.0 != default) {
                        rows.push(r);
                    }
                    open = Some(SwitchSls {
                        switch: x,
                        lids: LidRange::one(lid),
                        sls: SlSet(s),
                    });
                }
            }
        }
        if let Some(r) = open.take().filter(|r| r.sls.0 != default) {
            rows.push(r);
        }
    }
    state.path_sl.by_switch = rows;
}
