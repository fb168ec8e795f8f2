//! The ibnetdiscover topology format: what `ibnetdiscover` prints and `ibsim` loads.
//!
//! A file is a sequence of node records separated by blank lines. Each record is optional
//! `key=value` lines (`vendid=`, `devid=`, `sysimgguid=`, `switchguid=`/`caguid=`/`rtguid=`), a
//! header (`Switch 36 "S-7cfe900300bdd8f0" # "sw1" enhanced port 0 lid 1 lmc 0`, or `Ca`,
//! `Hca`, `Rt`) and one line per connected port
//! (`[1] "H-0002c90300a1b2c0"[1](2c90300a1b2c1) # "cn001 HCA-1" lid 5 4xEDR`). Every link
//! appears twice, once from each end.
//!
//! * [`parse`] reads real ibnetdiscover output and ibsim net files (including the minimal form
//!   without GUID lines, whose GUIDs it counts the way ibsim does) into a [`Fabric`], the LIDs
//!   seen and warnings; it reports every error at once, with spans, as [`ParseErrors`]. It
//!   also reads the two reports that describe a fabric port by port, `ibnetdiscover -p` and
//!   `iblinkinfo`, and ibdm's `subnet.lst` (OpenSM's `opensm-subnet.lst`) ([`InputFormat`],
//!   detected from the text); refuses, by name, known formats that are no topology (an LFT
//!   dump, a guid2lid, …); and skips the noise real dumps
//!   carry (terminal-log headers, shell prompts, messages captured from standard error,
//!   grouped-output headers) with a warning per line.
//! * [`parse_node_name_map`] reads an ibnetdiscover `--node-name-map` file.
//! * [`write()`] writes a [`Fabric`] so that ibsim loads it and [`parse`] reads it back to the
//!   same fabric; see the `writer` module for the ibsim quirks it works around.
//!
//! The reference for the format is `man ibnetdiscover(8)` and ibsim's `sim_net.c`.

mod error;
mod reader;
mod writer;

#[cfg(test)]
mod accept_tests;
#[cfg(test)]
mod real_tests;
#[cfg(test)]
mod roles_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tolerant_tests;

pub use error::{Code, IbnetDiagnostic, ParseErrors, WriteError};
pub use reader::{detect_format, parse, parse_node_name_map};
pub use writer::{name_problem, write};

use std::collections::BTreeMap;
use weft_fabric::{Fabric, Guid, LidAssignment, PortRef};

/// The text formats [`parse`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InputFormat {
    /// What `ibnetdiscover` prints by default (also grouped, `-g`) and ibsim loads: node
    /// records of a header and port lines.
    Topology,
    /// `ibnetdiscover -p` (the ports report): one line per port, `CA 134 1 0x… 4x EDR - SW
    /// 1719 10 0x… ( 'o0001 HCA-1' - 'ib-i1l1s01' )`. No port counts and no node GUIDs of
    /// end nodes.
    PortsReport,
    /// `iblinkinfo` (not `-l`): a `Switch: 0x… name:` or `CA: name:` line per node, then one
    /// line per port (`1 1[  ] ==( 4X 25.78125 Gbps Active/ LinkUp)==> 2 1[  ] "name" ( )`).
    /// No port counts and no node GUIDs of end nodes; peers are named by LID (or by name
    /// before an SM assigned LIDs).
    LinkInfo,
    /// ibdm's `subnet.lst`, which OpenSM writes as `opensm-subnet.lst` and `ibdmchk -s`
    /// reads: one line per cabled port and its peer, `{ SW Ports:08 SystemGUID:… NodeGUID:…
    /// PortGUID:… VenID:… DevID:… Rev:… {leaf1} LID:0001 PN:05 } { CA … } PHY=4x LOG=ACT
    /// SPD=2.5`. Everything the topology format says but the LMC.
    SubnetLst,
}

impl InputFormat {
    /// The format as users know it (`ibnetdiscover -p`).
    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Topology => "ibnetdiscover",
            InputFormat::PortsReport => "ibnetdiscover -p",
            InputFormat::LinkInfo => "iblinkinfo",
            InputFormat::SubnetLst => "subnet.lst",
        }
    }
}

/// How to read a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// Node names by node GUID (an ibnetdiscover node name map); they win over descriptions.
    pub name_map: BTreeMap<Guid, String>,
    /// The name of the resulting [`Fabric`].
    pub fabric_name: String,
    /// The name diagnostics show for the text (usually its path).
    pub source_name: String,
    /// The format; `None` detects it from the text ([`detect_format`]).
    pub format: Option<InputFormat>,
    /// Accept a dump whose discovery was cut short (`weft import --partial`): a port line
    /// naming a node no record describes is a warning instead of an error, its link is
    /// dropped and the node is left out (its ports unknown).
    pub partial: bool,
    /// Every warning is an error (`weft import --strict`, for CI).
    pub strict: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            name_map: BTreeMap::new(),
            fabric_name: "discovered".to_owned(),
            source_name: "ibnetdiscover".to_owned(),
            format: None,
            partial: false,
            strict: false,
        }
    }
}

/// What [`parse`] found.
#[derive(Clone, Debug)]
pub struct Discovered {
    /// The topology. Node ids follow the order of the headers in the file; links the order in
    /// which they are first listed.
    pub fabric: Fabric,
    /// LIDs the file gives (`lid N` annotations, `0` meaning none): a switch's on port 0, an
    /// end node's per port; empty when the file has none. Its LMC is also the fabric's.
    pub lids: LidAssignment,
    /// Warnings (the file is usable, but something is odd or ibsim would read it differently).
    pub warnings: Vec<IbnetDiagnostic>,
    /// Ports that need a LID (a switch's port 0, a cabled end-node port) and have none while
    /// the file gives LIDs to others: at `lid 0` or `lid 65535`, not yet assigned by an SM (a
    /// [`Code::UnassignedLid`] warning lists them). Empty when the file gives no LIDs at all.
    /// Sorted.
    pub unassigned: Vec<PortRef>,
    /// The format the text was read as.
    pub format: InputFormat,
}
