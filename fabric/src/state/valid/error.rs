//! What a state check reports: one [`StateError`] per violated invariant, each with a stable
//! code, gathered in [`StateErrors`]; ports named for messages as a [`PortName`].

use std::collections::BTreeMap;
use std::fmt;

/// A port named for messages: `` `leaf1` (0x0002c90000000001) port 3 ``.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortName {
    /// Node name.
    pub node: String,
    /// Node GUID, hex.
    pub guid: String,
    /// Port number.
    pub port: u8,
}

impl fmt::Display for PortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` ({}) port {}", self.node, self.guid, self.port)
    }
}

/// One violated invariant of a state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[non_exhaustive]
pub enum StateError {
    /// The JSON could not be read.
    #[error("line {line}, column {column}: {message}")]
    #[diagnostic(code(weft::state::json))]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Another format or version.
    #[error("{}", version_message(.format.as_deref(), *.version))]
    #[diagnostic(
        code(weft::state::version),
        help("write it again with this version of weft (`weft build`)")
    )]
    Version {
        /// The format found.
        format: Option<String>,
        /// The version found.
        version: Option<u64>,
    },
    /// The recorded fingerprint does not match the content.
    #[error("the recorded fingerprint does not match the content ({reason}): the file was changed after it was written")]
    #[diagnostic(
        code(weft::state::fingerprint),
        help(
            "remove the `fingerprint` field to accept the edited content, or write the state again"
        )
    )]
    Fingerprint {
        /// What differs.
        reason: String,
    },
    /// A node or link cannot be built (duplicate name or GUID, bad port, …).
    #[error("{at}: {message}")]
    #[diagnostic(code(weft::state::fabric))]
    Fabric {
        /// Where in the file (`fabric.nodes[3]`, `fabric.links[7]`).
        at: String,
        /// What is wrong.
        message: String,
    },
    /// A GUID that names no node.
    #[error("{at}: no node has GUID {guid}")]
    #[diagnostic(code(weft::state::unknown_guid))]
    UnknownGuid {
        /// Where in the file.
        at: String,
        /// The GUID.
        guid: String,
    },
    /// A node id that names no node (a state built in memory).
    #[error("{at}: no node has id {id}")]
    #[diagnostic(code(weft::state::unknown_node))]
    UnknownNode {
        /// Which table.
        at: &'static str,
        /// The id.
        id: u32,
    },
    /// The LMC is out of range.
    #[error("LMC {lmc} is out of range (0..=7)")]
    #[diagnostic(code(weft::state::lmc))]
    Lmc {
        /// The LMC.
        lmc: u8,
    },
    /// The LIDs' LMC differs from the fabric's.
    #[error("the LIDs use LMC {lids} but the fabric says LMC {fabric}")]
    #[diagnostic(code(weft::state::lmc_mismatch))]
    LmcMismatch {
        /// The fabric's.
        fabric: u8,
        /// The LIDs'.
        lids: u8,
    },
    /// A LID on a port that cannot own one.
    #[error("{port} cannot own a LID ({why})")]
    #[diagnostic(code(weft::state::lid_port))]
    LidPort {
        /// The port.
        port: PortName,
        /// Why not.
        why: &'static str,
    },
    /// LID 0.
    #[error("{port} has LID 0, which is reserved")]
    #[diagnostic(code(weft::state::lid_zero))]
    LidZero {
        /// The port.
        port: PortName,
    },
    /// A LID range reaching past the unicast range.
    #[error("{port} has LIDs {lo:#06x}..={hi:#06x}, past the last unicast LID 0xbfff")]
    #[diagnostic(code(weft::state::lid_range))]
    LidRange {
        /// The port.
        port: PortName,
        /// First LID.
        lo: u32,
        /// Last LID.
        hi: u32,
    },
    /// An end-node base LID not aligned to 2^LMC.
    #[error("{port} has base LID {lid:#06x}, not a multiple of {span} (LMC {lmc})")]
    #[diagnostic(code(weft::state::lid_alignment))]
    LidUnaligned {
        /// The port.
        port: PortName,
        /// The base LID.
        lid: u16,
        /// 2^LMC.
        span: u16,
        /// The LMC.
        lmc: u8,
    },
    /// Two ports share a LID.
    #[error("LID {lid:#06x} belongs to both {first} and {second}")]
    #[diagnostic(code(weft::state::lid_clash))]
    LidClash {
        /// The LID.
        lid: u16,
        /// One owner.
        first: PortName,
        /// The other.
        second: PortName,
    },
    /// A live port or switch without a LID.
    #[error("{port} is live but has no LID")]
    #[diagnostic(
        code(weft::state::lid_missing),
        help("every live switch and every live end-node port needs a LID, or it silently drops out of what is verified")
    )]
    LidMissing {
        /// The port.
        port: PortName,
    },
    /// Switch tables on an end node.
    #[error("`{node}` ({guid}) is not a switch but has switch tables")]
    #[diagnostic(code(weft::state::not_a_switch))]
    NotASwitch {
        /// Node name.
        node: String,
        /// Node GUID.
        guid: String,
    },
    /// An LFT longer than the switch can hold.
    #[error("`{node}` ({guid}) has an LFT of {len} entries but holds {cap} (LinearFDBCap)")]
    #[diagnostic(code(weft::state::lft_size))]
    LftTooLong {
        /// Node name.
        node: String,
        /// Node GUID.
        guid: String,
        /// Entries in the table.
        len: usize,
        /// What the switch holds (also capped at the unicast range).
        cap: u32,
    },
    /// An SL→VL row or entry that cannot be.
    #[error("`{node}` ({guid}) SL→VL {what}")]
    #[diagnostic(code(weft::state::sl2vl))]
    Sl2Vl {
        /// Node name.
        node: String,
        /// Node GUID.
        guid: String,
        /// What is wrong.
        what: String,
    },
    /// A port table on a port that does not exist or cannot have it.
    #[error("{port}: {what}")]
    #[diagnostic(code(weft::state::port_table))]
    PortTable {
        /// The port.
        port: PortName,
        /// What is wrong.
        what: String,
    },
    /// A declared partition that cannot be.
    #[error("partition `{name}`: {what}")]
    #[diagnostic(code(weft::state::partition))]
    Partition {
        /// Its name.
        name: String,
        /// What is wrong.
        what: String,
    },
    /// A VL budget out of range.
    #[error("max_vls {max_vls} is out of range (1..=15 data VLs)")]
    #[diagnostic(code(weft::state::max_vls))]
    MaxVls {
        /// The value.
        max_vls: u8,
    },
    /// A dFtree lane pair that cannot be one.
    #[error("dFtree lane pair ({fast}, {slow}) {what}")]
    #[diagnostic(code(weft::state::dftree_lanes))]
    DftreeLanes {
        /// The fast lane's SL.
        fast: u8,
        /// The slow lane's SL.
        slow: u8,
        /// What is wrong.
        what: &'static str,
    },
    /// An SM port that cannot be one.
    #[error("SM port {port} {what}")]
    #[diagnostic(code(weft::state::sm))]
    SmPort {
        /// The port.
        port: PortName,
        /// What is wrong.
        what: &'static str,
    },
    /// A multicast forwarding table that cannot be.
    #[error("`{node}` ({guid}) MFT{}: {what}", .mlid.map(|m| format!(" MLID {m:#06x}")).unwrap_or_default())]
    #[diagnostic(code(weft::state::mft))]
    Mft {
        /// Node name.
        node: String,
        /// Node GUID.
        guid: String,
        /// The MLID whose entry is wrong, when one is.
        mlid: Option<u16>,
        /// What is wrong.
        what: String,
    },
    /// A multicast group that cannot be.
    #[error("multicast group {mlid:#06x}: {what}")]
    #[diagnostic(code(weft::state::mcast_group))]
    McGroup {
        /// Its MLID.
        mlid: u16,
        /// What is wrong.
        what: String,
    },
    /// A path-SL entry that cannot be.
    #[error("path SLs: {what}")]
    #[diagnostic(code(weft::state::path_sl))]
    PathSl {
        /// What is wrong.
        what: String,
    },
}

fn version_message(format: Option<&str>, version: Option<u64>) -> String {
    match (format, version) {
        (Some(f), Some(v)) => {
            format!("this is `{f}` version {v}{}; weft reads `weft-state` version 1, and version 2 with multicast", if f == "weft-state" && v == 1 { " with multicast" } else { "" })
        }
        (Some(f), None) => format!("this is `{f}` without a version; weft reads `weft-state` version 1, and version 2 with multicast"),
        (None, _) => "this file has no `format` and `version`: it is not a weft state, or one written by an older weft; weft reads `weft-state` version 1, and version 2 with multicast".to_owned(),
    }
}

impl StateError {
    /// The stable code.
    pub fn code(&self) -> String {
        miette::Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }
}

/// Every problem found in a state. Displayed capped: at most [`StateErrors::SHOWN`] of each
/// kind, then how many more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateErrors(pub Vec<StateError>);

impl StateErrors {
    /// Problems of one kind shown before "… and N more like this".
    pub const SHOWN: usize = 10;
}

impl fmt::Display for StateErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut per_code: BTreeMap<String, usize> = BTreeMap::new();
        let mut first = true;
        for e in &self.0 {
            let n = per_code.entry(e.code()).or_insert(0);
            *n += 1;
            if *n <= Self::SHOWN {
                if !first {
                    writeln!(f)?;
                }
                first = false;
                write!(f, "{e}")?;
            }
        }
        for (code, n) in per_code {
            if n > Self::SHOWN {
                write!(f, "\n… and {} more like this ({code})", n - Self::SHOWN)?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for StateErrors {}
