//! Declared partitions: which end ports the fabric's owner says may talk to each other (a
//! `tenant` or `shared` section). The P_Key tables in [`PortState`](crate::PortState) are
//! what the ports enforce; the verifier's `isolated` property checks the two agree.

use crate::model::PortRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A port's membership in a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Membership {
    /// Talks to every member.
    Full,
    /// Talks to full members only.
    Limited,
}

impl Membership {
    /// The P_Key of partition `base` with this membership (bit 15 set for full).
    pub fn pkey(self, base: u16) -> crate::PKey {
        crate::PKey(base | if self == Membership::Full { 0x8000 } else { 0 })
    }

    /// `full` or `limited`.
    pub fn as_str(self) -> &'static str {
        match self {
            Membership::Full => "full",
            Membership::Limited => "limited",
        }
    }
}

/// A declared partition: its name, partition number and members.
///
/// Two end ports may talk when some declared partition holds both and at least one of them
/// is a full member; no other pair of end ports may (the default partition carries only
/// management traffic: end ports are limited members of it, switches full members).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Its name (the `tenant` or `shared` section's).
    pub name: String,
    /// The partition number: a P_Key's low 15 bits, `0x0001..=0x7ffe`.
    pub pkey: u16,
    /// Member end ports.
    pub members: BTreeMap<PortRef, Membership>,
    /// Member VMs, by name (each on the VF [`VirtualPort::vm`](crate::VirtualPort) names).
    pub vms: BTreeMap<String, Membership>,
    /// A tenant's QoS class: what its members' traffic to each other may use.
    pub class: Option<TrafficClass>,
}

/// The SLs a partition's traffic may use and the VLs those SLs may travel on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrafficClass {
    /// The class's name.
    pub name: String,
    /// SLs of every path between two members.
    pub sls: crate::SlSet,
    /// VLs (bit `v` for VL `v`) each of those SLs may be mapped to, at every hop.
    pub vls: u16,
}
