//! Building a [`Net`] from a state: dense switch indices, ports, channels, SL→VL rows, VL
//! arbitration masks, node classes and source ranges.

use super::Arb;
use super::Net;
use super::PortLink;
use super::NO_INDEX;
use super::NO_ROW;
use crate::report::NodeClass;
use weft_fabric::{forward, FabricState};

impl<'a> Net<'a> {
    /// The indexed view of `st`'s fabric and tables.
    pub(crate) fn new(st: &'a FabricState) -> Net<'a> {
        let f = &st.fabric;
        let nodes = f.nodes();
        let alive: Vec<bool> = nodes.iter().map(|n| !n.down).collect();
        let is_switch: Vec<bool> = nodes.iter().map(|n| n.is_switch()).collect();
        let port_count: Vec<u8> = nodes.iter().map(|n| n.spec.port_count).collect();
        let mut port_base = Vec::with_capacity(nodes.len());
        let mut ports = 0u32;
        for n in nodes {
            port_base.push(ports);
            ports += u32::from(n.spec.port_count);
        }
        let link = port_links(st, &port_base, ports);
        let owners = st.lids.owners(f);
        let mut sw = vec![None; nodes.len()];
        for (id, s) in &st.switches {
            if let Some(slot) = sw.get_mut(id.index()) {
                if is_switch.get(id.index()).copied().unwrap_or(false) {
                    *slot = Some(s);
                }
            }
        }
        let mut switches = Vec::new();
        let mut switch_index = vec![NO_INDEX; nodes.len()];
        for (n, &s) in is_switch.iter().enumerate() {
            if s {
                if let Some(slot) = switch_index.get_mut(n) {
                    *slot = switches.len() as u32;
                }
                switches.push(n as u32);
            }
        }
        let top = top_vl(st);
        let cap = link_caps(st, &link, &port_base);
        let arb = arbitration(st, &port_base, &port_count, ports);
        let max_vls = st.max_vls.map_or(16, |m| m.min(16));
        let sends = send_masks(&link, &cap, &arb, max_vls);
        let plain = (0..nodes.len())
            .map(|n| sw.get(n).copied().flatten().is_none_or(|s| !s.has_sl2vl()))
            .collect();
        let class = node_classes(st, &link, &port_base, &is_switch, &alive);
        let (sl_base, sl_ranges) = source_index(st, &port_count);
        let (sl2vl_base, sl2vl_slots, sl2vl_maps) = sl2vl_grids(st, &port_count, &is_switch);
        let switch_sl_ranges = ranges_by_key(
            switches.len(),
            st.path_sl
                .by_switch
                .iter()
                .map(|e| switch_index.get(e.switch.index()).map(|&k| k as usize)),
        );
        let (inj_slot, inj_maps) = injection_maps(st, &port_base, ports);
        Net {
            st,
            inj_slot,
            inj_maps,
            class,
            sl_base,
            sl_ranges,
            switch_sl_ranges,
            sl2vl_base,
            sl2vl_slots,
            sl2vl_maps,
            cap,
            arb,
            sends,
            max_vls,
            plain,
            alive,
            is_switch,
            port_count,
            port_base,
            ports,
            link,
            owners,
            sw,
            switches,
            switch_index,
            vls: top + 1,
        }
    }
}

/// Where each port leads, flat by port slot: the model's rule ([`forward::leave`]).
fn port_links(st: &FabricState, port_base: &[u32], ports: u32) -> Vec<PortLink> {
    let f = &st.fabric;
    let mut link = vec![PortLink::Unwired; ports as usize];
    for (id, node) in f.node_ids().zip(f.nodes()) {
        for port in &node.ports {
            let me = weft_fabric::PortRef {
                node: id,
                port: port.num,
            };
            let value = match forward::leave(f, me) {
                Ok(h) => PortLink::Up {
                    node: h.to.node.0,
                    port: h.to.port.0,
                },
                Err(forward::Stop::Down(_)) => PortLink::Down,
                Err(_) => continue,
            };
            let i = port_base.get(id.index()).copied().unwrap_or(0) as usize
                + usize::from(port.num.0)
                - 1;
            if let Some(slot) = link.get_mut(i) {
                *slot = value;
            }
        }
    }
    link
}

/// The highest VL a valid hop can use in any SL→VL table: below every VLCap and never 15.
fn top_vl(st: &FabricState) -> u8 {
    let max_cap = st
        .fabric
        .nodes()
        .iter()
        .map(|n| n.spec.caps.vl_cap.min(15))
        .max()
        .unwrap_or(1);
    let mut top = 0u8;
    for s in st.switches.values() {
        for t in s.sl2vl.iter().map(|r| &r.vl).chain(&s.sl2vl_all) {
            for &v in t {
                if v < max_cap && v < 15 {
                    top = top.max(v);
                }
            }
        }
    }
    for t in st.ports.values().filter_map(|p| p.sl2vl.as_ref()) {
        for &v in t {
            if v < max_cap && v < 15 {
                top = top.max(v);
            }
        }
    }
    top
}

/// Per port slot: the VLCap of a live link (the lower of its two ends'), 0 elsewhere.
fn link_caps(st: &FabricState, link: &[PortLink], port_base: &[u32]) -> Vec<u8> {
    let nodes = st.fabric.nodes();
    link.iter()
        .enumerate()
        .map(|(i, l)| match l {
            PortLink::Up { node, .. } => {
                let near = port_base
                    .partition_point(|&b| b as usize <= i)
                    .saturating_sub(1);
                let c = |n: usize| nodes.get(n).map_or(0, |x| x.spec.caps.vl_cap.min(15));
                c(near).min(c(*node as usize))
            }
            _ => 0,
        })
        .collect()
}

/// Per port slot: the VL arbitration masks its table gives.
fn arbitration(st: &FabricState, port_base: &[u32], port_count: &[u8], ports: u32) -> Vec<Arb> {
    let mut arb = vec![Arb::NONE; ports as usize];
    for (r, p) in &st.ports {
        let Some(&b) = port_base.get(r.node.index()) else {
            continue;
        };
        let count = port_count.get(r.node.index()).copied().unwrap_or(0);
        if r.port.0 == 0 || r.port.0 > count {
            continue;
        }
        if let Some(slot) = arb.get_mut(b as usize + usize::from(r.port.0) - 1) {
            *slot = Arb::of(p.vlarb.as_ref());
        }
    }
    arb
}

/// SL→VL rows: one (in port × out port) grid per switch with rows, maps shared. Returns each
/// node's grid base (`u32::MAX` without one), the grids' map ids, and the maps.
fn sl2vl_grids(
    st: &FabricState,
    port_count: &[u8],
    is_switch: &[bool],
) -> (Vec<u32>, Vec<u16>, Vec<[u8; 16]>) {
    let mut sl2vl_base = vec![u32::MAX; port_count.len()];
    let mut sl2vl_slots: Vec<u16> = Vec::new();
    let mut sl2vl_maps: Vec<[u8; 16]> = Vec::new();
    let mut map_ids: std::collections::HashMap<[u8; 16], u16> = Default::default();
    for (id, s) in &st.switches {
        let Some(&p) = port_count.get(id.index()) else {
            continue;
        };
        if !s.has_sl2vl() || !is_switch.get(id.index()).copied().unwrap_or(false) {
            continue;
        }
        // Distinct maps are few (one per QoS layout); ids fit in u16 below NO_ROW.
        let mut id_of = |t: &[u8; 16]| {
            let next = sl2vl_maps.len() as u16;
            let m = *map_ids.entry(*t).or_insert(next);
            if m == next {
                sl2vl_maps.push(*t);
            }
            m
        };
        let w = usize::from(p) + 1;
        let base = sl2vl_slots.len();
        let all = s.sl2vl_all.as_ref().map_or(NO_ROW, &mut id_of);
        sl2vl_slots.resize(base + w * w, all);
        if let Some(b) = sl2vl_base.get_mut(id.index()) {
            *b = base as u32;
        }
        for r in &s.sl2vl {
            if usize::from(r.in_port) >= w || usize::from(r.out_port) >= w {
                continue;
            }
            let m = id_of(&r.vl);
            if let Some(slot) =
                sl2vl_slots.get_mut(base + usize::from(r.in_port) * w + usize::from(r.out_port))
            {
                *slot = m;
            }
        }
    }
    (sl2vl_base, sl2vl_slots, sl2vl_maps)
}

/// Injection maps per port slot, so a lookup costs no search (per-source path SLs look one
/// up per source and destination). Returns each slot's map index (`NO_ROW`: none) and the
/// maps.
fn injection_maps(st: &FabricState, port_base: &[u32], ports: u32) -> (Vec<u16>, Vec<[u8; 16]>) {
    let nodes = st.fabric.nodes();
    let mut inj_slot = vec![NO_ROW; ports as usize];
    let mut inj_maps: Vec<[u8; 16]> = Vec::new();
    for (r, ps) in &st.ports {
        let Some(map) = ps.sl2vl else { continue };
        let Some(n) = nodes.get(r.node.index()) else {
            continue;
        };
        if r.port.0 == 0 || r.port.0 > n.spec.port_count {
            continue;
        }
        let slot = port_base.get(r.node.index()).copied().unwrap_or(0) + u32::from(r.port.0) - 1;
        let k = match inj_maps.iter().position(|m| *m == map) {
            Some(k) => k,
            None => {
                inj_maps.push(map);
                inj_maps.len() - 1
            }
        };
        if let Some(s) = inj_slot.get_mut(slot as usize) {
            *s = k as u16;
        }
    }
    (inj_slot, inj_maps)
}

/// The class of every node: switches get the level the model gives them, else their
/// distance (over live links) to the nearest switch with a live end node, plus one; end nodes
/// get none.
fn node_classes(
    st: &FabricState,
    link: &[PortLink],
    port_base: &[u32],
    is_switch: &[bool],
    alive: &[bool],
) -> Vec<NodeClass> {
    let nodes = st.fabric.nodes();
    let n = nodes.len();
    let peers = |x: usize| -> Vec<u32> {
        let base = port_base.get(x).copied().unwrap_or(0) as usize;
        let count = nodes.get(x).map_or(0, |nd| usize::from(nd.spec.port_count));
        link.get(base..base + count)
            .unwrap_or(&[])
            .iter()
            .filter_map(|l| match l {
                PortLink::Up { node, .. } => Some(*node),
                _ => None,
            })
            .collect()
    };
    let mut level: Vec<Option<u8>> = vec![None; n];
    let mut queue = std::collections::VecDeque::new();
    for x in 0..n {
        let sw = is_switch.get(x).copied().unwrap_or(false);
        if sw
            && alive.get(x).copied().unwrap_or(false)
            && peers(x)
                .iter()
                .any(|&p| !is_switch.get(p as usize).copied().unwrap_or(true))
        {
            if let Some(l) = level.get_mut(x) {
                *l = Some(1);
            }
            queue.push_back(x);
        }
    }
    while let Some(x) = queue.pop_front() {
        let next = level
            .get(x)
            .copied()
            .flatten()
            .unwrap_or(1)
            .saturating_add(1);
        for p in peers(x) {
            let p = p as usize;
            if is_switch.get(p).copied().unwrap_or(false) {
                if let Some(slot @ None) = level.get_mut(p) {
                    *slot = Some(next);
                    queue.push_back(p);
                }
            }
        }
    }
    nodes
        .iter()
        .zip(level)
        .map(|(nd, computed)| NodeClass {
            kind: nd.kind(),
            level: if nd.is_switch() {
                nd.spec.level.or(computed)
            } else {
                None
            },
        })
        .collect()
}

/// Per node, the first slot of its ports (0 to its port count) and, per slot, the range of the
/// state's per-source path SLs belonging to that source port (empty when it has none).
fn source_index(st: &FabricState, port_count: &[u8]) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut base = Vec::with_capacity(port_count.len());
    let mut n = 0u32;
    for &c in port_count {
        base.push(n);
        n += u32::from(c) + 1;
    }
    let ranges = ranges_by_key(
        n as usize,
        st.path_sl.by_source.iter().map(|e| {
            let b = base.get(e.src.node.index())?;
            (e.src.port.0 <= port_count.get(e.src.node.index()).copied().unwrap_or(0))
                .then(|| *b as usize + usize::from(e.src.port.0))
        }),
    );
    (base, ranges)
}

/// Per key `0..n`, the range of positions in a list sorted by key that hold it (`(0, 0)` when
/// none), from each item's key (`None`: no key).
fn ranges_by_key(n: usize, keys: impl Iterator<Item = Option<usize>>) -> Vec<(u32, u32)> {
    let mut ranges = vec![(0u32, 0u32); n];
    for (i, k) in keys.enumerate() {
        if let Some(r) = k.and_then(|k| ranges.get_mut(k)) {
            if r.1 != i as u32 {
                r.0 = i as u32;
            }
            r.1 = i as u32 + 1;
        }
    }
    ranges
}

/// Per port: the VLs [`Net::vl_ok`] accepts there (bit `v` for VL `v`), worked out once so
/// that the fast paths test a bit per hop.
fn send_masks(link: &[PortLink], cap: &[u8], arb: &[Arb], max_vls: u8) -> Vec<u16> {
    link.iter()
        .enumerate()
        .map(|(i, l)| {
            if !matches!(l, PortLink::Up { .. }) {
                return 0;
            }
            let cap = cap.get(i).copied().unwrap_or(0);
            let sends = arb.get(i).copied().unwrap_or(Arb::NONE).sends;
            let below = cap.min(15).min(max_vls);
            // VLs below the cap, 15 and `max_vls`, that the arbitration sends.
            sends & ((1u32 << below) - 1) as u16
        })
        .collect()
}
