//! Reading what a discovered fabric runs: each switch's LFT (up to its LinearFDBTop) and
//! P_Key tables, over any [`Transport`] — for `weft apply` of a whole state (what to change)
//! and `weft audit` (what to verify).

use crate::discover::{Discovery, VfError, VfPorts};
use crate::smp::{
    decode_pkeys, Attr, DrPath, NodeType, PortInfo, SwitchInfo, LFT_BLOCK, PKEY_BLOCK,
};
use crate::transport::{SmpError, Target, TransportExt};
use std::collections::BTreeMap;
use weft_fabric::Guid;

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

/// Reads VF `vf` (port GUID `guid`) of hypervisor port (`host`, `port`): its LID (none when
/// 0) and P_Key block 0 (empty slots dropped from the end); `Err` inside when it cannot be
/// addressed (see [`Discovery::vf_at`]).
pub fn read_vf(
    t: &mut impl TransportExt,
    d: &Discovery,
    ports: &VfPorts,
    (host, port): (Guid, u8),
    (vf, guid): (u8, Guid),
    through_host: bool,
    smps: &mut usize,
) -> Result<Result<Vf, VfError>, SmpError> {
    let at = match d.vf_at(ports, (host, port), vf, guid, through_host) {
        Ok(at) => at,
        Err(e) => return Ok(Err(e)),
    };
    let info = t.get(&Target {
        path: at.path.clone(),
        attr: Attr::PortInfo,
        modifier: at.info_modifier,
    })?;
    let keys = t.get(&Target {
        path: at.path,
        attr: Attr::PKeyTable,
        modifier: at.keys_modifier,
    })?;
    *smps += 2;
    let lid = PortInfo::decode(&info).lid;
    let mut keys = decode_pkeys(&keys).to_vec();
    while keys.last() == Some(&0) {
        keys.pop();
    }
    Ok(Ok(((lid != 0).then_some(lid), keys)))
}
