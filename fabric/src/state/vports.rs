//! Virtual ports: the VFs of vSwitch SR-IOV hypervisors.
//!
//! In the vSwitch model a hypervisor's HCA presents a small switch (the vSwitch) with the
//! physical function (PF, the hypervisor's own port) and `N` virtual functions (VFs) behind
//! it. Each VF is a complete virtual HCA: its own port GUID, its own LID and its own P_Key
//! table; a VM runs on one VF. All VFs share the PF's cable, so the physical switches route a
//! VF's LID exactly as they route any LID owned by the hypervisor's port: to that port. The
//! vSwitch itself forwards nothing the subnet manager programs (it has no LFT here).
//!
//! A VF's LID is in [`LidAssignment::owners`](crate::LidAssignment::owners) as owned by its
//! hypervisor's port, so every check of routes treats it as a destination of that port.

use crate::ids::{Guid, Lid};
use crate::model::PortRef;
use crate::PKey;

/// One VF of a hypervisor port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualPort {
    /// The hypervisor's physical port the VF sits behind.
    pub host: PortRef,
    /// The VF's index on that port (0-based).
    pub vf: u8,
    /// The VF's port GUID.
    pub guid: Guid,
    /// Its LID: always with prepopulated LIDs, only while a VM runs on it with dynamic ones.
    pub lid: Option<Lid>,
    /// The VM running on it.
    pub vm: Option<String>,
    /// Its P_Key table (none: the IBA default, full member of the default partition).
    pub pkeys: Option<Vec<PKey>>,
}

impl VirtualPort {
    /// The sort key of a state's virtual ports: host port, then VF index.
    pub fn key(&self) -> (PortRef, u8) {
        (self.host, self.vf)
    }
}
