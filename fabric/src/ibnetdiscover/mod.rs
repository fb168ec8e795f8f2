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
//!   seen and warnings; it reports every error at once, with spans, as [`ParseErrors`].
//! * [`parse_node_name_map`] reads an ibnetdiscover `--node-name-map` file.
//! * [`write()`] writes a [`Fabric`] so that ibsim loads it and [`parse`] reads it back to the
//!   same fabric; see the `writer` module for the ibsim quirks it works around.
//!
//! The reference for the format is `man ibnetdiscover(8)` and ibsim's `sim_net.c`.

mod error;
mod reader;
mod writer;

#[cfg(test)]
mod tests;

pub use error::{Code, IbnetDiagnostic, ParseErrors, WriteError};
pub use reader::{parse, parse_node_name_map};
pub use writer::{name_problem, write};

use crate::{Fabric, Guid, LidAssignment};
use std::collections::BTreeMap;

/// How to read a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// Node names by node GUID (an ibnetdiscover node name map); they win over descriptions.
    pub name_map: BTreeMap<Guid, String>,
    /// The name of the resulting [`Fabric`].
    pub fabric_name: String,
    /// The name diagnostics show for the text (usually its path).
    pub source_name: String,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            name_map: BTreeMap::new(),
            fabric_name: "discovered".to_owned(),
            source_name: "ibnetdiscover".to_owned(),
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
}
