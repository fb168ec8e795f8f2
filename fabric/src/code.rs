//! The registry of stable finding codes: what a code is, its status and its meaning.
//!
//! Each crate that reports findings lists its own codes in a `CODES` table (this crate's
//! is [`CODES`]: the state file reader and the state's validation; `weft_formats::CODES` holds
//! the other readers' of files).
//! The CLI puts the tables together (`weft --explain CODE`, the SARIF rules), and a test
//! checks that every code written in the sources is in exactly one table and that
//! `docs/codes.md` has a section for each, at [`CodeInfo::anchor`].

/// How far tools may rely on a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The code and its meaning do not change: tools may match on it.
    Stable,
    /// Input weft accepts in its syntax but refuses because the feature is not built yet.
    NotBuilt,
    /// An inconsistency inside weft (a bug); never expected.
    Internal,
}

impl Status {
    /// The status as written in docs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Stable => "stable",
            Status::NotBuilt => "not built",
            Status::Internal => "internal",
        }
    }
}

/// One registered code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct CodeInfo {
    /// The code as shown, e.g. `weft::ibnet::port_wired_twice`.
    pub code: &'static str,
    /// How far tools may rely on it.
    pub status: Status,
    /// What it means, in one sentence (SARIF rule descriptions, `--explain`).
    pub summary: &'static str,
}

impl CodeInfo {
    /// A stable code.
    pub const fn stable(code: &'static str, summary: &'static str) -> CodeInfo {
        CodeInfo {
            code,
            status: Status::Stable,
            summary,
        }
    }

    /// The anchor of its section in `docs/codes.md`: the code with `::` and `_` as `-`
    /// (`weft::ibnet::bad_lid` → `weft-ibnet-bad-lid`), as Markdown renderers make heading ids.
    pub fn anchor(&self) -> String {
        self.code.replace("::", "-").replace('_', "-")
    }
}

/// An error or finding with a registered code: what turns it into a finding of its own (its
/// code and its text) wherever it is reported. Every code it returns is in a crate's `CODES`.
pub trait Coded: std::fmt::Display {
    /// Its code, such as `weft::apply::lock`.
    fn code(&self) -> &'static str;
}

/// The codes this crate reports.
pub const CODES: &[CodeInfo] = &[
    CodeInfo::stable("weft::state::dftree_lanes", "A dFtree lane pair that is not valid (one SL twice, an SL above 15, pairs out of order or repeated)."),
    CodeInfo::stable("weft::state::fabric", "A state whose fabric is not valid (a node, port or link the model refuses)."),
    CodeInfo::stable("weft::state::lft_size", "A switch's LFT longer than its LinearFDBCap."),
    CodeInfo::stable("weft::state::lid_alignment", "A base LID that is not a multiple of 2^LMC."),
    CodeInfo::stable("weft::state::lid_clash", "One LID owned by two ports."),
    CodeInfo::stable("weft::state::lid_missing", "A live port that needs a LID and has none."),
    CodeInfo::stable("weft::state::lid_port", "A LID on a port that cannot own one (a switch's external port)."),
    CodeInfo::stable("weft::state::lid_range", "A port's LIDs past the last unicast LID 0xbfff."),
    CodeInfo::stable("weft::state::lid_zero", "A port with LID 0, which is reserved."),
    CodeInfo::stable("weft::state::lmc", "An LMC outside 0..=7."),
    CodeInfo::stable("weft::state::lmc_mismatch", "LIDs assigned with another LMC than the fabric's."),
    CodeInfo::stable("weft::state::max_vls", "A `max_vls` outside 1..=15 data VLs."),
    CodeInfo::stable("weft::state::mcast_group", "A multicast group that is not valid (an MLID declared twice, a P_Key without a partition number, a member that is not an end port or a switch's port 0)."),
    CodeInfo::stable("weft::state::mft", "A multicast forwarding table that is not valid (on a node that is not a switch, a port the switch does not have, an MLID past its MulticastFDBCap)."),
    CodeInfo::stable("weft::state::not_a_switch", "Switch tables (LFT, SL→VL) on a node that is not a switch."),
    CodeInfo::stable("weft::state::partition", "A declared partition that is not valid (a bad key, an unknown member)."),
    CodeInfo::stable("weft::state::path_sl", "Path SLs that name unknown sources or LIDs, or SLs above 15."),
    CodeInfo::stable("weft::state::port_table", "A port's P_Key or VL arbitration table that is not valid."),
    CodeInfo::stable("weft::state::sl2vl", "A switch's SL→VL table that is not valid (a wrong size, a VL above 15)."),
    CodeInfo::stable("weft::state::sm", "An SM port that is not a live port of the fabric."),
    CodeInfo::stable("weft::state::unknown_guid", "A table naming a GUID no node has."),
    CodeInfo::stable("weft::state::unknown_node", "A table naming a node id the fabric does not have."),
    CodeInfo::stable("weft::state::fingerprint", "A state file whose recorded fingerprint does not match its content: it was changed after it was written."),
    CodeInfo::stable("weft::state::json", "A state file that is not valid JSON or not of the state's shape."),
    CodeInfo::stable("weft::state::version", "A state file of another format or version."),
];
