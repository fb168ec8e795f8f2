//! OpenSM's (and ibdiagnet's) file formats, read and written:
//!
//! * the unicast LFT dump ([`write_lfts`], [`parse_lfts`]): `opensm-lfts.dump`, the input of
//!   OpenSM's `file` routing engine (`opensm -R file -U FILE`), also what `dump_fts` prints;
//! * multicast forwarding tables ([`parse_mfts`]): OpenSM's `opensm.mcfdbs`, and `ibroute -M`,
//!   `dump_fts -M` and `dump_mfts` output; multicast groups from `saquery` output
//!   ([`parse_mcmembers`]);
//! * the SL→VL dump `opensm-sl2vl.dump` ([`write_sl2vl`], [`parse_sl2vl`]);
//! * path SLs in ibdiagnet's `.psl` form ([`write_path_sl`], [`parse_path_sl`]);
//! * the `guid2lid` cache ([`write_guid2lid`], [`parse_guid2lid`]);
//! * `partitions.conf` from P_Key tables ([`write_partitions`]);
//! * `opensm.conf`: its QoS lines ([`QosConf`], from a state or the compiler's lane map;
//!   [`write_qos_conf`], [`parse_qos_conf`]), and the reader and merger of a site's
//!   configuration ([`conf_values`], [`merge_conf`]);
//! * [`assemble`]: a [`FabricState`] from a discovered topology and these files, so weft can
//!   audit a fabric OpenSM configured.
//!
//! Formats were checked against OpenSM 3.3.23 (`osm_dump.c` writes the dumps, `osm_ucast_file.c` reads the LFT dump,
//! `osm_db_pack.c` the guid2lid records), ibutils' `Fabric.cpp` (`.psl`) and infiniband-diags
//! (`ibroute.c`, `dump_fts.c` and `saquery.c` print the MFT and multicast-group forms). Readers take text
//! and return the model plus every problem found; they never touch files.

mod conf;
mod error;
mod guid2lid;
mod guid2lid_read;
mod lfts;
mod lfts_read;
mod mcmembers_read;
mod mfts_read;
mod partitions;
mod path_sl;
mod sl2vl;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use conf::{
    conf_values, merge_conf, parse_qos_conf, write_qos_conf, ConfClass, ConfError, ConfParseError,
    QosConf,
};
pub use error::{AssembleErrors, DumpError, DumpErrors};
pub use guid2lid::write_guid2lid;
pub use guid2lid_read::parse_guid2lid;
pub use lfts::{write_lfts, write_lfts_to};
pub use lfts_read::parse_lfts;
pub use mcmembers_read::parse_mcmembers;
pub use mfts_read::{parse_mfts, MftTables};
pub use partitions::write_partitions;
pub use path_sl::{parse_path_sl, write_path_sl, PslSls};
pub use sl2vl::{parse_sl2vl, write_sl2vl, Sl2VlTables};

use weft_fabric::{FabricState, LidAssignment, ValidState};

/// The OpenSM files describing a fabric's state, as text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dumps<'a> {
    /// `opensm-lfts.dump` or `dump_fts` output.
    pub lfts: &'a str,
    /// `opensm-sl2vl.dump` (absent: every SL on VL 0).
    pub sl2vl: Option<&'a str>,
    /// A `.psl` path-SL file (absent: SL 0 for every pair).
    pub path_sl: Option<&'a str>,
    /// A `guid2lid` cache (absent: the LIDs in `lids`).
    pub guid2lid: Option<&'a str>,
    /// Multicast forwarding tables: `opensm.mcfdbs`, `ibroute -M`, `dump_fts -M` or
    /// `dump_mfts` output (absent: no multicast tables, and the state says nothing about
    /// multicast).
    pub mfts: Option<&'a str>,
    /// Multicast groups: `saquery` MCMemberRecord output (absent: no group records; what
    /// the MFTs program is then all that is known).
    pub mcmembers: Option<&'a str>,
}

/// A group whose records name no member while a switch's MFT forwards its MLID: the records
/// cannot be all of its members (OpenSM programs a tree only for a group with members), so
/// taking them as "no member" would leave the tree's traffic out of the proof. It happens when
/// the records come from `saquery -g` alone, or from an untrusted query: OpenSM answers a
/// MCMemberRecord query without an SM_Key with each group's own record, port GID `::`.
fn hidden_members(
    groups: &[weft_fabric::McGroup],
    mfts: &BTreeMap<weft_fabric::NodeId, weft_fabric::Mft>,
) -> Vec<DumpError> {
    groups
        .iter()
        .filter(|g| g.members.is_empty() && mfts.values().any(|t| !t.get(g.mlid).is_empty()))
        .map(|g| DumpError {
            file: "mcmembers",
            line: 0,
            message: format!(
                "group {} has a tree in the multicast tables but its records name no member: \
                 `saquery -g` lists no members, and OpenSM hides them from a query without its \
                 SM_Key (give `saquery --smkey KEY -m` or `saquery --smkey KEY MCMR` output, or \
                 leave the records out to infer the members from the tables)",
                g.mlid
            ),
        })
        .collect()
}

/// Builds the state of `fabric` from OpenSM's files; `lids` are the LIDs the topology file
/// gave (ibnetdiscover's `lid` annotations), used unless a guid2lid file is given. The result
/// is validated ([`ValidState::new`]): two ports with one LID, a live port without a LID, LID 0
/// and every other broken invariant are errors, never a port silently left out. Warnings of
/// every file are returned; errors of every file are returned together.
pub fn assemble(
    fabric: weft_fabric::Fabric,
    lids: LidAssignment,
    dumps: &Dumps<'_>,
) -> Result<(ValidState, Vec<DumpError>), AssembleErrors> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut keep = |r: Result<(Vec<DumpError>, ()), DumpErrors>| match r {
        Ok((w, ())) => warnings.extend(w),
        Err(e) => errors.extend(e.0),
    };
    // Multicast tables first: a dump's MulticastFDBCap lines belong to the fabric's nodes.
    let mut fabric = fabric;
    let mut mfts = BTreeMap::new();
    if let Some(t) = dumps.mfts {
        match parse_mfts(t, &fabric) {
            Ok((tables, w)) => {
                if !tables.fdb_caps.is_empty() {
                    let mut b = weft_fabric::FabricBuilder::from(fabric);
                    for (&id, &cap) in &tables.fdb_caps {
                        b.set_multicast_fdb_cap(id, Some(cap));
                    }
                    fabric = b.finish();
                }
                mfts = tables.tables;
                keep(Ok((w, ())));
            }
            Err(e) => keep(Err(e)),
        }
    }
    let mut state = FabricState::new(fabric);
    state.lids = lids;
    state.multicast.mfts = mfts;
    if let Some(t) = dumps.mcmembers {
        match parse_mcmembers(t, &state.fabric) {
            Ok((groups, w)) => {
                keep(Ok((w, ())));
                keep(Err(DumpErrors(hidden_members(
                    &groups,
                    &state.multicast.mfts,
                ))));
                state.multicast.groups = groups;
            }
            Err(e) => keep(Err(e)),
        }
    }
    if let Some(t) = dumps.guid2lid {
        match parse_guid2lid(t, &state.fabric) {
            Ok((l, w)) => {
                if let Some(e) = foreign_guid2lid(&state.fabric, &l, t, w.len()) {
                    // One finding, not one per port left without a LID.
                    return Err(AssembleErrors {
                        dumps: vec![e],
                        state: Vec::new(),
                    });
                }
                // OpenSM's cache says which LMC the fabric runs.
                state.fabric.lmc = l.lmc;
                state.lids = l;
                keep(Ok((w, ())));
            }
            Err(e) => keep(Err(e)),
        }
    }
    match parse_lfts(dumps.lfts, &state.fabric) {
        Ok((lfts, w)) => {
            for (id, lft) in lfts {
                state.switches.entry(id).or_default().lft = lft;
            }
            keep(Ok((w, ())));
        }
        Err(e) => keep(Err(e)),
    }
    for id in state.fabric.node_ids() {
        if state.fabric.node(id).is_switch() {
            state.switches.entry(id).or_default();
        }
    }
    if let Some(t) = dumps.sl2vl {
        match parse_sl2vl(t, &state.fabric) {
            Ok((tables, w)) => {
                for (id, rows) in tables.switches {
                    let s = state.switches.entry(id).or_default();
                    s.sl2vl = rows;
                    s.sort_sl2vl();
                }
                for (port, vl) in tables.end_ports {
                    state.ports.entry(port).or_default().sl2vl = Some(vl);
                }
                keep(Ok((w, ())));
            }
            Err(e) => keep(Err(e)),
        }
    }
    if let Some(t) = dumps.path_sl {
        match parse_path_sl(t, &state.fabric) {
            Ok((p, w)) => {
                state.path_sl = p;
                keep(Ok((w, ())));
            }
            Err(e) => keep(Err(e)),
        }
    }
    if !errors.is_empty() {
        return Err(AssembleErrors {
            dumps: errors,
            state: Vec::new(),
        });
    }
    match ValidState::new(state) {
        Ok(v) => Ok((v, warnings)),
        Err(e) => Err(AssembleErrors {
            dumps: Vec::new(),
            state: e.0,
        }),
    }
}

/// The one error for a guid2lid that gives LIDs to fewer than half of the ports of `fabric`
/// that need one (a live switch's port 0, a cabled live end-node port): it is another
/// fabric's, or the fabric's port GUIDs were renumbered (ibsim numbers CA port GUIDs anew),
/// and a "live but has no LID" error per port would bury that. `unmatched` records of the
/// file name no port of the fabric.
fn foreign_guid2lid(
    fabric: &weft_fabric::Fabric,
    lids: &LidAssignment,
    text: &str,
    unmatched: usize,
) -> Option<DumpError> {
    let mut need = 0usize;
    let mut given = 0usize;
    for id in fabric.node_ids() {
        let n = fabric.node(id);
        if n.down {
            continue;
        }
        let ports: Vec<weft_fabric::PortNum> = if n.is_switch() {
            vec![weft_fabric::PortNum(0)]
        } else {
            n.ports
                .iter()
                .filter(|p| {
                    fabric
                        .live_peer(weft_fabric::PortRef::new(id, p.num.0))
                        .is_some()
                })
                .map(|p| p.num)
                .collect()
        };
        for p in ports {
            need += 1;
            given += usize::from(lids.get(id, p).is_some());
        }
    }
    if need == 0 || given * 2 >= need {
        return None;
    }
    let records = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    Some(DumpError {
        file: "guid2lid",
        line: 0,
        message: format!(
            "the guid2lid gives LIDs to {given} of the topology's {need} ports that need one, \
             and {unmatched} of its {records} records name no port of the topology: it is \
             another fabric's, or the topology's port GUIDs differ from the ones OpenSM saw \
             (ibsim numbers CA port GUIDs anew when it loads a fabric)"
        ),
    })
}
