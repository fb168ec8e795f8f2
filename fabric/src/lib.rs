//! The fabric model every weft crate shares.
//!
//! A [`Fabric`] is the elaborated topology: nodes (switches, HCAs, routers), their ports and
//! capabilities, and the links between ports, including the ones a `faults` block marked down
//! (they stay in the model so that LIDs and names are stable across faults). A [`FabricState`]
//! adds what switches run: LIDs, linear forwarding tables, SL→VL tables, VL arbitration and
//! P_Key tables, validated as a [`ValidState`] before anything trusts it. What a fabric is made of beyond its cables is here too: the
//! machines its end nodes form ([`machines`]), the service nodes recognised without help
//! ([`roles`]), the wire view a subnet manager sees ([`wire`]).
//!
//! The readers and writers of every format (`state.json`, ibnetdiscover, OpenSM's files, plan
//! files, cabling spreadsheets, Slurm host lists) are in `weft-formats`, which depends on this crate;
//! this crate depends on no weft crate. Deliberately absent: anything about the weft language.
//!
//! The few algorithms every crate needs on these values are here too, in one place each:
//! [`forward`] (one forwarding step: LFT entry → port → cable → the port at its far end),
//! [`graph`] (topological order, strongly connected components, cycles) and [`rng`] (the
//! seeded generator).
//!
//! Architecture invariant: this crate does no I/O besides what its callers hand it (text in,
//! text out) and never prints. It is deterministic: `Vec` in declaration order, `BTreeMap` for
//! every map that is serialised, so the same input gives byte-identical JSON.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

pub mod code;
mod fingerprint;
pub mod forward;
pub mod graph;
pub mod hex;
mod ids;
pub mod input;
pub mod machines;
mod model;
pub mod rng;
pub mod roles;
pub mod state;
mod suggest;
pub mod wire;

pub use fingerprint::{Fingerprint, FingerprintMismatch};
pub use ids::{guid_hex, Guid, GuidError, Lid, LinkId, NodeId, PortNum, Sl, Vl};
pub use model::{
    Fabric, FabricBuilder, Link, LinkError, LinkState, Mtu, Node, NodeKind, NodeSpec, Port,
    PortCaps, PortRef, Role, Speed, Width, MAX_UNICAST_LID,
};
pub use state::{
    DlidSls, FabricState, JoinState, Lft, LidAssignment, LidRange, McGroup, Membership, Mft, Mlid,
    Multicast, PKey, Partition, PathSl, PortMask, PortState, Sl2VlRow, SlSet, SourceSls,
    StateError, StateErrors, SwitchSls, SwitchState, TrafficClass, ValidState, VirtualPort, VlArb,
    VlWeight, LFT_UNSET,
};
pub use suggest::{closest, edit_distance};
pub use wire::{Folded, WireDiff, WireEnd, WireNode, WireView};
