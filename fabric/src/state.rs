//! What switches run: LIDs and per-switch tables, next to the [`Fabric`] they belong to.
//!
//! Serialised as deterministic JSON (ordered maps, no hash order), the input of `weft plan`.

use crate::ids::{Lid, NodeId, PortNum};
use crate::model::Fabric;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The LFT value meaning "no route" (and the port value OpenSM omits from dumps).
pub const LFT_UNSET: u8 = 255;

/// Base LIDs of every port that has one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LidAssignment {
    /// LID mask control: each end-node port owns `base..base + 2^lmc`.
    pub lmc: u8,
    /// Base LID per (node, port); a switch has one entry for port 0.
    pub base: BTreeMap<NodeId, BTreeMap<PortNum, Lid>>,
}

/// A linear forwarding table: `ports[lid]` is the output port for destination `lid`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lft {
    /// Output port per LID, [`LFT_UNSET`] where there is no route.
    pub ports: Vec<u8>,
}

impl Lft {
    /// The output port for `lid`, or `None` when unset.
    pub fn get(&self, lid: Lid) -> Option<PortNum> {
        match self.ports.get(usize::from(lid.0)) {
            Some(&p) if p != LFT_UNSET => Some(PortNum(p)),
            _ => None,
        }
    }

    /// Sets the output port for `lid`, growing the table as needed.
    pub fn set(&mut self, lid: Lid, port: PortNum) {
        let i = usize::from(lid.0);
        if self.ports.len() <= i {
            self.ports.resize(i + 1, LFT_UNSET);
        }
        self.ports[i] = port.0;
    }

    /// LinearFDBTop: the highest LID with an entry slot.
    pub fn top(&self) -> Lid {
        Lid(self.ports.len().saturating_sub(1) as u16)
    }
}

/// One SL→VL row of a switch: the VL each SL takes from `in_port` to `out_port`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sl2VlRow {
    /// Input port.
    pub in_port: u8,
    /// Output port.
    pub out_port: u8,
    /// VL per SL.
    pub vl: [u8; 16],
}

/// Per-switch tables.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchState {
    /// Linear forwarding table.
    pub lft: Lft,
    /// SL→VL rows, sorted by (input port, output port).
    pub sl2vl: Vec<Sl2VlRow>,
}

/// A fabric and the state compiled for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricState {
    /// The topology.
    pub fabric: Fabric,
    /// LIDs.
    pub lids: LidAssignment,
    /// Tables per switch.
    pub switches: BTreeMap<NodeId, SwitchState>,
}

impl FabricState {
    /// A state with no LIDs and empty tables.
    pub fn new(fabric: Fabric) -> FabricState {
        FabricState {
            lids: LidAssignment {
                lmc: fabric.lmc,
                base: BTreeMap::new(),
            },
            fabric,
            switches: BTreeMap::new(),
        }
    }

    /// Deterministic, pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads what [`FabricState::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<FabricState, serde_json::Error> {
        let mut state: FabricState = serde_json::from_str(text)?;
        state.fabric.reindex();
        Ok(state)
    }
}
