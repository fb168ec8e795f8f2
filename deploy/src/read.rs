//! Reading what a discovered fabric runs: each switch's LFT (up to its LinearFDBTop) and
//! P_Key tables, over any [`Transport`](crate::transport::Transport) — for `weft apply` of a whole state (what to change)
//! and `weft audit` (what to verify).

use crate::discover::{Discovery, VfAt, VfError, VfPorts};
use crate::smp::{
    decode_pkeys, decode_sl2vl, pkey_modifier, sl2vl_modifier, Attr, DrPath, NodeType, PortInfo,
    SwitchInfo, LFT_BLOCK, PKEY_BLOCK,
};
use crate::transport::{SmpError, Target, TransportExt};
use std::collections::BTreeMap;
use weft_fabric::{Guid, Sl2VlRow};

/// Entries a switch forwards by: `LFT[lid]` for `lid ≤ LinearFDBTop`, trailing unset entries
/// (0xff) dropped.
pub type Lfts = BTreeMap<Guid, Vec<u8>>;

/// Reads the LFT of every switch `d` found, block by block up to its LinearFDBTop: every
/// SwitchInfo as one batch, then every block as another (a transport may keep several SMPs in
/// flight). The number of SMPs it took is added to `smps`.
pub fn read_lfts(
    t: &mut impl TransportExt,
    d: &Discovery,
    smps: &mut usize,
) -> Result<Lfts, SmpError> {
    let switches: Vec<(Guid, &DrPath)> = d
        .nodes
        .iter()
        .filter(|(_, f)| f.info.node_type == NodeType::Switch)
        .map(|(g, f)| (*g, &f.path))
        .collect();
    let infos: Vec<Target> = switches
        .iter()
        .map(|(_, path)| Target {
            path: (*path).clone(),
            attr: Attr::SwitchInfo,
            modifier: 0,
        })
        .collect();
    *smps += infos.len();
    let mut tops = Vec::with_capacity(switches.len());
    for r in t.get_all(&infos) {
        tops.push(usize::from(SwitchInfo::decode(&r?).linear_fdb_top));
    }
    let blocks: Vec<Target> = switches
        .iter()
        .zip(&tops)
        .flat_map(|((_, path), top)| {
            (0..=(top / LFT_BLOCK)).map(|block| Target {
                path: (*path).clone(),
                attr: Attr::Lft,
                modifier: block as u32,
            })
        })
        .collect();
    *smps += blocks.len();
    let mut answers = t.get_all(&blocks).into_iter();
    let mut out = BTreeMap::new();
    for ((g, _), &top) in switches.iter().zip(&tops) {
        let mut lft = Vec::with_capacity(top + 1);
        for _ in 0..=(top / LFT_BLOCK) {
            let block = answers
                .next()
                .ok_or_else(|| SmpError::Transport("a batch came back short".to_owned()))??;
            lft.extend_from_slice(&block);
        }
        lft.truncate(top + 1);
        while lft.last() == Some(&0xff) {
            lft.pop();
        }
        out.insert(*g, lft);
    }
    Ok(out)
}

/// Reads `blocks` P_Key blocks of end port (`guid`, `port`) or of switch port `port`; empty
/// slots (0) dropped from the end.
pub fn read_pkeys(
    t: &mut impl TransportExt,
    d: &Discovery,
    guid: Guid,
    port: u8,
    blocks: u16,
    smps: &mut usize,
) -> Result<Option<Vec<u16>>, SmpError> {
    let Some(f) = d.nodes.get(&guid) else {
        return Ok(None);
    };
    let switch = f.info.node_type == NodeType::Switch;
    let Some(path) = d.path(guid, (!switch).then_some(port)) else {
        return Ok(None);
    };
    let mut keys = Vec::with_capacity(usize::from(blocks) * PKEY_BLOCK);
    for b in 0..blocks {
        keys.extend(t.pkey_block(path, switch.then_some(port), b)?);
        *smps += 1;
    }
    while keys.last() == Some(&0) {
        keys.pop();
    }
    Ok(Some(keys))
}

/// A VF as read: its LID (none when 0) and P_Key table.
pub type Vf = (Option<u16>, Vec<u16>);

/// A VF to read: its hypervisor port (`host`, `port`), then its index and port GUID.
pub type VfId = ((Guid, u8), (u8, Guid));

/// Reads each VF of `vfs`: its LID (none when 0) and P_Key block 0 (empty slots dropped from
/// the end), every addressable one's PortInfo and P_KeyTable as one batch (a transport may
/// keep several in flight). One result per VF, in order: `Err` inside when it cannot be
/// addressed (see [`Discovery::vf_at`]), `Err` outside when an SMP about it failed.
pub fn read_vfs(
    t: &mut impl TransportExt,
    d: &Discovery,
    ports: &VfPorts,
    vfs: &[VfId],
    through_host: bool,
    smps: &mut usize,
) -> Vec<Result<Result<Vf, VfError>, SmpError>> {
    let at: Vec<Result<VfAt, VfError>> = vfs
        .iter()
        .map(|&(host, (vf, guid))| d.vf_at(ports, host, vf, guid, through_host))
        .collect();
    let targets: Vec<Target> = at
        .iter()
        .flatten()
        .flat_map(|a| {
            [
                Target {
                    path: a.path.clone(),
                    attr: Attr::PortInfo,
                    modifier: a.info_modifier,
                },
                Target {
                    path: a.path.clone(),
                    attr: Attr::PKeyTable,
                    modifier: a.keys_modifier,
                },
            ]
        })
        .collect();
    *smps += targets.len();
    let mut answers = t.get_all(&targets).into_iter();
    let mut next = || {
        answers
            .next()
            .unwrap_or_else(|| Err(SmpError::Transport("a batch came back short".to_owned())))
    };
    at.into_iter()
        .map(|a| {
            if let Err(e) = a {
                return Ok(Err(e));
            }
            // Both answers taken before either is checked: the next VF's come after them.
            let (info, keys) = (next(), next());
            let lid = PortInfo::decode(&info?).lid;
            let mut keys = decode_pkeys(&keys?).to_vec();
            while keys.last() == Some(&0) {
                keys.pop();
            }
            Ok(Ok(((lid != 0).then_some(lid), keys)))
        })
        .collect()
}

/// A switch's SL→VL tables as read: rows per (input, output) port pair, or one map for every
/// pair, or neither (every SL on VL 0: a fabric without QoS).
pub type SwitchVls = (Vec<Sl2VlRow>, Option<[u8; 16]>);

/// Reads the SL→VL table of every pair of live ports (input and output, the same port
/// included: a route may turn back) of every switch `d` found, a switch's pairs as one
/// batch. A switch whose pairs all map every SL to VL 0 gets neither rows nor a map (the
/// state's form of "no QoS"); one whose pairs all agree, that map.
pub fn read_switch_sl2vl(
    t: &mut impl TransportExt,
    d: &Discovery,
    smps: &mut usize,
) -> Result<BTreeMap<Guid, SwitchVls>, SmpError> {
    let mut live: BTreeMap<Guid, Vec<u8>> = BTreeMap::new();
    for &((a, pa), (b, pb)) in &d.view.links {
        live.entry(a).or_default().push(pa);
        live.entry(b).or_default().push(pb);
    }
    let mut out = BTreeMap::new();
    // A switch at a time: its pairs are one batch (a fabric's every pair at once would hold
    // millions of SMPs in memory).
    for (g, f) in &d.nodes {
        if f.info.node_type != NodeType::Switch {
            continue;
        }
        let mut ports = live.get(g).cloned().unwrap_or_default();
        ports.sort_unstable();
        ports.dedup();
        let pairs: Vec<(u8, u8)> = ports
            .iter()
            .flat_map(|&i| ports.iter().map(move |&o| (i, o)))
            .collect();
        let targets: Vec<Target> = pairs
            .iter()
            .map(|&(i, o)| Target {
                path: f.path.clone(),
                attr: Attr::SlToVl,
                modifier: sl2vl_modifier(i, o),
            })
            .collect();
        *smps += targets.len();
        let mut rows = Vec::with_capacity(pairs.len());
        for ((i, o), r) in pairs.into_iter().zip(t.get_all(&targets)) {
            rows.push(Sl2VlRow {
                in_port: i,
                out_port: o,
                vl: decode_sl2vl(&r?),
            });
        }
        let first = rows.first().map(|r| r.vl);
        let tables = match first {
            Some(vl) if rows.iter().all(|r| r.vl == vl) => {
                if vl == [0; 16] {
                    (Vec::new(), None)
                } else {
                    (Vec::new(), Some(vl))
                }
            }
            _ => (rows, None),
        };
        out.insert(*g, tables);
    }
    Ok(out)
}

/// An end port's tables as read: the VL per SL, and the P_Key table.
pub type EndPort = ([u8; 16], Vec<u16>);

/// The end ports `d` found: (node GUID, port, the route entering it, its P_Key blocks — as
/// many 32-entry blocks as NodeInfo's PartitionCap holds, at most 64).
fn end_ports(d: &Discovery) -> Vec<(Guid, u8, &DrPath, u16)> {
    let mut ends = Vec::new();
    for (g, f) in &d.nodes {
        if f.info.node_type == NodeType::Switch {
            continue;
        }
        let blocks = f
            .info
            .partition_cap
            .div_ceil(PKEY_BLOCK as u16)
            .clamp(1, 64);
        for (p, path) in &f.ports {
            ends.push((*g, *p, path, blocks));
        }
    }
    ends
}

/// Reads the P_Key table of every end port `d` found (see [`read_end_ports`]), as one batch:
/// slot by slot, empty slots dropped from the end only.
pub fn read_end_pkeys(
    t: &mut impl TransportExt,
    d: &Discovery,
    smps: &mut usize,
) -> Result<BTreeMap<(Guid, u8), Vec<u16>>, SmpError> {
    pkeys_of(t, &end_ports(d), smps)
}

fn pkeys_of(
    t: &mut impl TransportExt,
    ends: &[(Guid, u8, &DrPath, u16)],
    smps: &mut usize,
) -> Result<BTreeMap<(Guid, u8), Vec<u16>>, SmpError> {
    let keys: Vec<Target> = ends
        .iter()
        .flat_map(|(_, _, path, blocks)| {
            (0..*blocks).map(|b| Target {
                path: (*path).clone(),
                attr: Attr::PKeyTable,
                modifier: pkey_modifier(b, None),
            })
        })
        .collect();
    *smps += keys.len();
    let mut keys = t.get_all(&keys).into_iter();
    let mut out = BTreeMap::new();
    for (g, p, _, blocks) in ends {
        let mut table = Vec::with_capacity(usize::from(*blocks) * PKEY_BLOCK);
        for _ in 0..*blocks {
            let b = keys
                .next()
                .ok_or_else(|| SmpError::Transport("a batch came back short".to_owned()))??;
            table.extend(decode_pkeys(&b));
        }
        while table.last() == Some(&0) {
            table.pop();
        }
        out.insert((*g, *p), table);
    }
    Ok(out)
}

/// Reads, for every end port `d` found, its SL→VL table (the VL each SL is sent on) and its
/// P_Key table (as many 32-entry blocks as NodeInfo's PartitionCap holds, at most 64), as one
/// batch each. Empty P_Key slots are dropped from the end.
pub fn read_end_ports(
    t: &mut impl TransportExt,
    d: &Discovery,
    smps: &mut usize,
) -> Result<BTreeMap<(Guid, u8), EndPort>, SmpError> {
    let ends = end_ports(d);
    let vls: Vec<Target> = ends
        .iter()
        .map(|(_, _, path, _)| Target {
            path: (*path).clone(),
            attr: Attr::SlToVl,
            modifier: 0,
        })
        .collect();
    *smps += vls.len();
    let vls = t.get_all(&vls);
    let mut keys = pkeys_of(t, &ends, smps)?;
    let mut out = BTreeMap::new();
    for ((g, p, _, _), vl) in ends.iter().zip(vls) {
        let vl = decode_sl2vl(&vl?);
        let table = keys.remove(&(*g, *p)).unwrap_or_default();
        out.insert((*g, *p), (vl, table));
    }
    Ok(out)
}
