//! Path-SL files in ibdiagnet's `.psl` form (what `ibdmchk -c` reads): one line per route,
//! `src_node_guid dlid sl`, the DLID in decimal, e.g. `0x0002c90000000099 154 0`. Several
//! lines for one (source, DLID) pair make an SL *set* (every member is a possible SL).
//!
//! Upstream OpenSM has no path-SL dump: the SLs of dfsssp, lash, nue and torus-2QoS are only
//! visible through SA PathRecords (`saquery -p --slid X --dlid Y`); tests collect them that way
//! and write this format.

use super::error::{number, Collector, DumpError, DumpErrors};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_fabric::{Fabric, FabricState, Guid, Lid, PathSl, PortNum, PortRef, Sl, SlSet};

/// Reads a `.psl` file against `fabric`; pairs it does not list use SL 0. A line names a
/// source *node*: its SLs apply to every port of that node (port 0 of a switch, every
/// physical port of an end node) — give [`PathSl::set_by_source`] per-port sets where the
/// ports of one node differ.
pub fn parse_path_sl(text: &str, fabric: &Fabric) -> Result<(PathSl, Vec<DumpError>), DumpErrors> {
    let mut c = Collector::new("path-sl");
    let mut sets: BTreeMap<(weft_fabric::NodeId, Lid), SlSet> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        let [g, d, s] = w.as_slice() else {
            c.error(
                line_no,
                format!("a line is `src_node_guid dlid sl`: `{line}`"),
            );
            continue;
        };
        let Some(src) = number(g).and_then(|g| fabric.find_guid(Guid(g))) else {
            c.error(line_no, format!("no node with GUID `{g}`"));
            continue;
        };
        let Some(dlid) = d
            .parse::<u16>()
            .ok()
            .filter(|&l| (1..=weft_fabric::MAX_UNICAST_LID).contains(&l))
        else {
            c.error(line_no, format!("`{d}` is not a unicast LID (decimal)"));
            continue;
        };
        let Some(sl) = s.parse::<u8>().ok().filter(|&s| s <= 15) else {
            c.error(line_no, format!("`{s}` is not an SL (0..=15)"));
            continue;
        };
        sets.entry((src, Lid(dlid))).or_default().insert(Sl(sl));
    }
    let mut p = PathSl::default();
    p.set_by_source(sets.into_iter().flat_map(|((src, dlid), sls)| {
        let node = fabric.node(src);
        let ports: Vec<PortNum> = if node.is_switch() {
            vec![PortNum(0)]
        } else {
            node.ports.iter().map(|p| p.num).collect()
        };
        ports
            .into_iter()
            .map(move |port| (PortRef { node: src, port }, dlid, sls))
    }));
    c.finish(p)
}

/// Which SLs of a pair's set a `.psl` file lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PslSls {
    /// Every SL of the set, one line each: [`parse_path_sl`] reads the set back.
    All,
    /// The lowest SL of the set, one line per pair, as ibdmchk's `-c` file has it: a dFtree
    /// pair's fast lane, or the first QoS class's SL.
    Lowest,
}

/// Writes the path SLs of every (source node with a LID, destination LID) pair of `state`
/// (`which` of each set), sorted by source GUID then DLID. The format has one line per source
/// node: the SLs of the node's first port with a LID are written. Nodes that are down are left
/// out as sources and destinations (the live fabric the tools see has no such node).
pub fn write_path_sl(state: &FabricState, which: PslSls) -> String {
    let f = &state.fabric;
    let owners = state.lids.owners(f);
    let mut srcs: Vec<(Guid, weft_fabric::NodeId)> = state
        .lids
        .base
        .keys()
        .filter(|&&id| !f.node(id).down)
        .map(|&id| (f.node(id).guid(), id))
        .collect();
    srcs.sort();
    srcs.dedup();
    let mut out = String::new();
    for (g, id) in srcs {
        for (lid, o) in owners.iter().enumerate() {
            let Some((n, _)) = o else { continue };
            if *n == id || lid == 0 || f.node(*n).down {
                continue;
            }
            let port = state
                .lids
                .base
                .get(&id)
                .and_then(|ports| ports.keys().next().copied())
                .unwrap_or(PortNum(0));
            let sls = state.path_sls(PortRef { node: id, port }, Lid(lid as u16));
            let take = match which {
                PslSls::All => 16,
                PslSls::Lowest => 1,
            };
            for sl in sls.iter().take(take) {
                let _ = writeln!(out, "{g} {lid} {}", sl.0);
            }
        }
    }
    out
}
