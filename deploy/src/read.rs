//! Reading what a discovered fabric runs over any [`Transport`](crate::transport::Transport):
//! each switch's LFT (up to its LinearFDBTop), MFT (up to its MulticastFDBTop, or its
//! MulticastFDBCap where it does not support the top) and SL→VL tables, the VL arbitration of
//! every live port, P_Key tables of end ports and VFs, VF LIDs — for `weft apply` (what to plan from and prove on) and `weft audit` (what to
//! verify). Each read returns the [`observe`] model; the SMPs it takes are
//! counted by whoever wraps the transport in [`Counted`](crate::transport::Counted).

use crate::discover::{Discovery, VfAt, VfError, VfPorts};
use crate::observe::{self, EndPortRead, PkeyTable, VfId, VfRead};
use crate::smp::{
    decode_mft, decode_pkeys, decode_sl2vl, decode_vlarb, mft_modifier, mft_positions,
    pkey_modifier, sl2vl_modifier, vlarb_modifier, Attr, DrPath, NodeType, PortInfo, SwitchInfo,
    CAP_MCAST_FDB_TOP, LFT_BLOCK, MFT_BLOCK, PKEY_BLOCK, VLARB_BLOCK,
};
use crate::transport::{SmpError, Target, TransportExt};
use std::collections::BTreeMap;
use weft_fabric::{Guid, Lft, Lid, Mft, Mlid, PortNum, Sl2VlRow, WireEnd};

/// A batch answered with fewer results than it asked.
fn short() -> SmpError {
    SmpError::Transport("a batch came back short".to_owned())
}

/// Reads the LFT of every switch `d` found, block by block up to its LinearFDBTop
/// ([`observe::lft`]): every SwitchInfo as one batch, then every block as another (a
/// transport may keep several SMPs in flight).
pub fn read_lfts(
    t: &mut impl TransportExt,
    d: &Discovery,
) -> Result<BTreeMap<Guid, Lft>, SmpError> {
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
    let mut tops = Vec::with_capacity(switches.len());
    for r in t.get_all(&infos) {
        tops.push(SwitchInfo::decode(&r?).linear_fdb_top);
    }
    let blocks: Vec<Target> = switches
        .iter()
        .zip(&tops)
        .flat_map(|((_, path), &top)| {
            (0..=(usize::from(top) / LFT_BLOCK)).map(|block| Target {
                path: (*path).clone(),
                attr: Attr::Lft,
                modifier: block as u32,
            })
        })
        .collect();
    let mut answers = t.get_all(&blocks).into_iter();
    let mut out = BTreeMap::new();
    for ((g, _), &top) in switches.iter().zip(&tops) {
        let mut entries = Vec::with_capacity(usize::from(top) + 1);
        for _ in 0..=(usize::from(top) / LFT_BLOCK) {
            entries.extend_from_slice(&answers.next().ok_or_else(short)??);
        }
        out.insert(*g, observe::lft(entries, top));
    }
    Ok(out)
}

/// A switch's MFT as read, and how far it reaches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MftRead {
    /// The entries the switch forwards by ([`observe::mft_up_to`]).
    pub mft: Mft,
    /// MulticastFDBTop where the switch supports it (its port 0's CapabilityMask has
    /// IsMulticastFDBTopSupported); `None`: it forwards by every block up to its cap, and
    /// every one was read.
    pub top: Option<u16>,
    /// MulticastFDBCap: MLIDs its MFT holds from 0xC000.
    pub cap: u16,
}

/// Reads the MFT of every switch `d` found: SwitchInfo (MulticastFDBCap, MulticastFDBTop)
/// and port 0's PortInfo (whether the top is supported) of every switch as one batch, then
/// every block in use, each position of it, as another — up to MulticastFDBTop where the
/// switch supports it, else up to MulticastFDBCap (ibsim's switches do not: its SwitchInfo
/// holds 0 there and ignores a Set of it).
pub fn read_mfts(
    t: &mut impl TransportExt,
    d: &Discovery,
) -> Result<BTreeMap<Guid, MftRead>, SmpError> {
    let switches: Vec<(Guid, &DrPath, u8)> = d
        .nodes
        .iter()
        .filter(|(_, f)| f.info.node_type == NodeType::Switch)
        .map(|(g, f)| (*g, &f.path, f.info.num_ports))
        .collect();
    let infos: Vec<Target> = switches
        .iter()
        .flat_map(|(_, path, _)| {
            [(Attr::SwitchInfo, 0), (Attr::PortInfo, 0)].map(|(attr, modifier)| Target {
                path: (*path).clone(),
                attr,
                modifier,
            })
        })
        .collect();
    let mut answers = t.get_all(&infos).into_iter();
    // Per switch: the top if supported, the cap, and the blocks to read.
    let mut reach = Vec::with_capacity(switches.len());
    for _ in &switches {
        let si = SwitchInfo::decode(&answers.next().ok_or_else(short)??);
        let pi = PortInfo::decode(&answers.next().ok_or_else(short)??);
        let top = (pi.capability_mask & CAP_MCAST_FDB_TOP != 0).then_some(si.multicast_fdb_top);
        let blocks = match top {
            Some(top) => Mlid::new(top).map_or(0, |m| usize::from(m.block()) + 1),
            None => usize::from(si.multicast_fdb_cap).div_ceil(MFT_BLOCK),
        }
        .min(usize::from(Mlid::MAX.block()) + 1);
        reach.push((top, si.multicast_fdb_cap, blocks));
    }
    let blocks: Vec<Target> = switches
        .iter()
        .zip(&reach)
        .flat_map(|((_, path, ports), &(_, _, blocks))| {
            (0..blocks).flat_map(move |b| {
                (0..mft_positions(*ports)).map(move |pos| Target {
                    path: (*path).clone(),
                    attr: Attr::Mft,
                    modifier: mft_modifier(b as u16, pos),
                })
            })
        })
        .collect();
    let mut answers = t.get_all(&blocks).into_iter();
    let mut out = BTreeMap::new();
    for ((g, _, ports), &(top, cap, blocks)) in switches.iter().zip(&reach) {
        let mut mft = Mft::default();
        for b in 0..blocks {
            for pos in 0..mft_positions(*ports) {
                let p = answers.next().ok_or_else(short)??;
                mft.set_block(b as u16, pos, &decode_mft(&p));
            }
        }
        let forwarded = match top {
            Some(top) => observe::mft_up_to(&mft, Mlid::new(top)),
            None => mft,
        };
        out.insert(
            *g,
            MftRead {
                mft: forwarded,
                top,
                cap,
            },
        );
    }
    Ok(out)
}

/// Reads `blocks` P_Key blocks of end port `port` (its node GUID and number) or of a
/// switch's port; `None` when `d` did not find it.
pub fn read_pkeys(
    t: &mut impl TransportExt,
    d: &Discovery,
    (guid, port): WireEnd,
    blocks: u16,
) -> Result<Option<PkeyTable>, SmpError> {
    let Some(f) = d.nodes.get(&guid) else {
        return Ok(None);
    };
    let switch = f.info.node_type == NodeType::Switch;
    let Some(path) = d.path(guid, (!switch).then_some(port.0)) else {
        return Ok(None);
    };
    let mut keys = Vec::with_capacity(usize::from(blocks) * PKEY_BLOCK);
    for b in 0..blocks {
        keys.extend(t.pkey_block(path, switch.then_some(port.0), b)?);
    }
    Ok(Some(PkeyTable::from_slots(keys)))
}

/// Reads each VF of `vfs`: its LID and P_Key block 0, every addressable one's PortInfo and
/// P_KeyTable as one batch (a transport may keep several in flight). One result per VF, in
/// order: `Err` inside when it cannot be addressed (see [`Discovery::vf_at`]), `Err` outside
/// when an SMP about it failed.
pub fn read_vfs(
    t: &mut impl TransportExt,
    d: &Discovery,
    ports: &VfPorts,
    vfs: &[VfId],
    through_host: bool,
) -> Vec<Result<Result<VfRead, VfError>, SmpError>> {
    let at: Vec<Result<VfAt, VfError>> = vfs
        .iter()
        .map(|v| d.vf_at(ports, v, through_host))
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
    let mut answers = t.get_all(&targets).into_iter();
    let mut next = || answers.next().unwrap_or_else(|| Err(short()));
    at.into_iter()
        .map(|a| {
            if let Err(e) = a {
                return Ok(Err(e));
            }
            // Both answers taken before either is checked: the next VF's come after them.
            let (info, keys) = (next(), next());
            let lid = PortInfo::decode(&info?).lid;
            Ok(Ok(VfRead {
                lid: (lid != 0).then_some(Lid(lid)),
                pkeys: PkeyTable::from_slots(decode_pkeys(&keys?)),
            }))
        })
        .collect()
}

/// Reads the SL→VL table of every pair of live ports (input and output, the same port
/// included: a route may turn back) of every switch `d` found, a switch's pairs as one
/// batch; [`observe::SwitchVls::of`] makes them a state's.
pub fn read_switch_sl2vl(
    t: &mut impl TransportExt,
    d: &Discovery,
) -> Result<BTreeMap<Guid, Vec<Sl2VlRow>>, SmpError> {
    let mut live: BTreeMap<Guid, Vec<PortNum>> = BTreeMap::new();
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
            .flat_map(|&i| ports.iter().map(move |&o| (i.0, o.0)))
            .collect();
        let targets: Vec<Target> = pairs
            .iter()
            .map(|&(i, o)| Target {
                path: f.path.clone(),
                attr: Attr::SlToVl,
                modifier: sl2vl_modifier(i, o),
            })
            .collect();
        let mut rows = Vec::with_capacity(pairs.len());
        for ((i, o), r) in pairs.into_iter().zip(t.get_all(&targets)) {
            rows.push(Sl2VlRow {
                in_port: i,
                out_port: o,
                vl: decode_sl2vl(&r?),
            });
        }
        out.insert(*g, rows);
    }
    Ok(out)
}

/// An end port `d` found: where it is, the route entering it and its P_Key blocks (as many
/// 32-entry blocks as NodeInfo's PartitionCap holds, at most 64).
struct EndAt<'a> {
    port: WireEnd,
    path: &'a DrPath,
    blocks: u16,
}

/// The end ports `d` found.
fn end_ports(d: &Discovery) -> Vec<EndAt<'_>> {
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
            ends.push(EndAt {
                port: (*g, PortNum(*p)),
                path,
                blocks,
            });
        }
    }
    ends
}

/// Reads the P_Key table of every end port `d` found (see [`read_end_ports`]), as one batch.
pub fn read_end_pkeys(
    t: &mut impl TransportExt,
    d: &Discovery,
) -> Result<BTreeMap<WireEnd, PkeyTable>, SmpError> {
    pkeys_of(t, &end_ports(d))
}

fn pkeys_of(
    t: &mut impl TransportExt,
    ends: &[EndAt<'_>],
) -> Result<BTreeMap<WireEnd, PkeyTable>, SmpError> {
    let keys: Vec<Target> = ends
        .iter()
        .flat_map(|e| {
            (0..e.blocks).map(|b| Target {
                path: e.path.clone(),
                attr: Attr::PKeyTable,
                modifier: pkey_modifier(b, None),
            })
        })
        .collect();
    let mut keys = t.get_all(&keys).into_iter();
    let mut out = BTreeMap::new();
    for e in ends {
        let mut table = Vec::with_capacity(usize::from(e.blocks) * PKEY_BLOCK);
        for _ in 0..e.blocks {
            table.extend(decode_pkeys(&keys.next().ok_or_else(short)??));
        }
        out.insert(e.port, PkeyTable::from_slots(table));
    }
    Ok(out)
}

/// Reads, for every end port `d` found, its SL→VL table (the VL each SL is sent on) and its
/// P_Key table (as many 32-entry blocks as NodeInfo's PartitionCap holds, at most 64), as one
/// batch each.
pub fn read_end_ports(
    t: &mut impl TransportExt,
    d: &Discovery,
) -> Result<BTreeMap<WireEnd, EndPortRead>, SmpError> {
    let ends = end_ports(d);
    let vls: Vec<Target> = ends
        .iter()
        .map(|e| Target {
            path: e.path.clone(),
            attr: Attr::SlToVl,
            modifier: 0,
        })
        .collect();
    let vls = t.get_all(&vls);
    let mut keys = pkeys_of(t, &ends)?;
    let mut out = BTreeMap::new();
    for (e, vl) in ends.iter().zip(vls) {
        out.insert(
            e.port,
            EndPortRead {
                sl2vl: decode_sl2vl(&vl?),
                pkeys: keys.remove(&e.port).unwrap_or_default(),
            },
        );
    }
    Ok(out)
}

/// Reads the VL arbitration of every port with a live link `d` found (a switch's by its
/// modifier, an end node's by directed route to the port): PortInfo's VLHighLimit and
/// arbitration caps, then the blocks the caps hold (1 and 2 the low-priority table, 3 and 4
/// the high-priority one; a block only where its cap reaches it), each port's as one batch
/// per switch or end node. Each table is the entries its cap holds, trailing (VL 0, weight 0)
/// dropped; a port whose caps are both 0 has no arbitration tables, and one whose tables hold
/// only (VL 0, weight 0) with a high limit of 0 was configured by nobody: both are left out
/// (a state holds them as no arbitration: VL 0 only).
pub fn read_vlarbs(
    t: &mut impl TransportExt,
    d: &Discovery,
) -> Result<BTreeMap<WireEnd, weft_fabric::VlArb>, SmpError> {
    let mut live: BTreeMap<Guid, Vec<u8>> = BTreeMap::new();
    for &((a, pa), (b, pb)) in &d.view.links {
        live.entry(a).or_default().push(pa.0);
        live.entry(b).or_default().push(pb.0);
    }
    let mut out = BTreeMap::new();
    for (g, f) in &d.nodes {
        let switch = f.info.node_type == NodeType::Switch;
        let mut ports = live.get(g).cloned().unwrap_or_default();
        ports.sort_unstable();
        ports.dedup();
        // Where each port's SMPs go: (path, the modifier's port field).
        let at: Vec<(u8, &DrPath, u8)> = ports
            .iter()
            .filter_map(|&p| {
                let path = d.path(*g, (!switch).then_some(p))?;
                Some((p, path, if switch { p } else { 0 }))
            })
            .collect();
        let infos: Vec<Target> = at
            .iter()
            .map(|(_, path, m)| Target {
                path: (*path).clone(),
                attr: Attr::PortInfo,
                modifier: u32::from(*m),
            })
            .collect();
        let mut caps = Vec::with_capacity(at.len());
        for r in t.get_all(&infos) {
            caps.push(PortInfo::decode(&r?));
        }
        let blocks_of = |i: &PortInfo| -> Vec<u8> {
            let (low, high) = (usize::from(i.vlarb_low_cap), usize::from(i.vlarb_high_cap));
            [
                (1u8, low > 0),
                (2, low > VLARB_BLOCK),
                (3, high > 0),
                (4, high > VLARB_BLOCK),
            ]
            .into_iter()
            .filter_map(|(b, has)| has.then_some(b))
            .collect()
        };
        let blocks: Vec<Target> = at
            .iter()
            .zip(&caps)
            .flat_map(|((_, path, m), i)| {
                blocks_of(i).into_iter().map(move |b| Target {
                    path: (*path).clone(),
                    attr: Attr::VlArb,
                    modifier: vlarb_modifier(b, *m),
                })
            })
            .collect();
        let mut answers = t.get_all(&blocks).into_iter();
        for ((p, _, _), i) in at.iter().zip(&caps) {
            let (mut low, mut high) = (Vec::new(), Vec::new());
            for b in blocks_of(i) {
                let entries = decode_vlarb(&answers.next().ok_or_else(short)??);
                let (table, cap) = if b <= 2 {
                    (&mut low, usize::from(i.vlarb_low_cap))
                } else {
                    (&mut high, usize::from(i.vlarb_high_cap))
                };
                let first = if b % 2 == 1 { 0 } else { VLARB_BLOCK };
                table.extend(
                    entries
                        .iter()
                        .take(cap.saturating_sub(first).min(VLARB_BLOCK))
                        .map(|&(vl, weight)| weft_fabric::VlWeight { vl, weight }),
                );
            }
            if blocks_of(i).is_empty() {
                continue;
            }
            for table in [&mut low, &mut high] {
                while table.last() == Some(&weft_fabric::VlWeight { vl: 0, weight: 0 }) {
                    table.pop();
                }
            }
            // Tables of nothing but (VL 0, weight 0) and no high limit: a port nobody
            // configured, which a state holds as no arbitration (VL 0 only).
            if low.is_empty() && high.is_empty() && i.vl_high_limit == 0 {
                continue;
            }
            out.insert(
                (*g, PortNum(*p)),
                weft_fabric::VlArb {
                    high_limit: i.vl_high_limit,
                    high,
                    low,
                },
            );
        }
    }
    Ok(out)
}
