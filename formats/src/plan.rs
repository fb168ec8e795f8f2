//! Plans: ordered steps of SMP writes that take a fabric from one state to another, as
//! `weft plan` writes them and `weft apply` reads them (`plan.json`, format `weft-plan`
//! version 2).
//!
//! ```text
//! {"format": "weft-plan", "version": 2, "fabric": "cluster5832",
//!  "from": {fingerprint of the fabric the plan applies to},
//!  "to": {fingerprint of the desired state},
//!  "steps": [
//!    {"writes": [
//!       {"kind": "lft", "switch": "0x…", "block": 3, "old": "ff01…", "new": "ff02…"},
//!       {"kind": "pkeys", "node": "0x…", "port": 1, "block": 0, "old": ["0x7fff", …], "new": […]},
//!       {"kind": "mft", "switch": "0x…", "block": 0, "position": 0, "old": "0000…", "new": "0006…"},
//!       {"kind": "vport", "node": "0x…", "port": 1, "vf": 2, "guid": "0x…", "old_lid": null, "new_lid": 705,
//!        "old_pkeys": [32767], "new_pkeys": [32767, 32770]},
//!       {"kind": "sl2vl", "node": "0x…", "in_port": 3, "out_port": 5, "old": "0000000000000000", "new": "01f…"},
//!       {"kind": "vlarb", "node": "0x…", "port": 5, "block": 1, "old": "", "new": "00040104…"},
//!       …]},
//!    …]}
//!  "digest": "sha256 of everything above"}
//! ```
//!
//! Within a step the writes may land in any order (they go out in parallel); a step starts
//! when the one before it has landed whole. An LFT write carries the whole 64-entry block as
//! it is before and after (two hex digits per entry, `ff` for none), so a writer keeps an
//! exact shadow and can undo it; a P_Key write carries one 32-entry block of the table; an MFT
//! write one MulticastForwardingTable block at one position (32 MLIDs from `0xC000 + 32 ×
//! block`, each a 16-bit mask of ports `16 × position ..= 16 × position + 15`, four hex
//! digits, big-endian, as the SMP carries it). An SL→VL write carries one SLtoVLMappingTable
//! (16 hex digits, the VL of SL 0 first); a VL arbitration write one VLArbitrationTable block
//! (blocks 1 and 2: the low-priority table's entries 0–31 and 32–63, blocks 3 and 4 the
//! high-priority table's), four hex digits an entry as the SMP carries it (the VL, then the
//! weight), the entries after the last given being (VL 0, weight 0).
//!
//! The version: a kind of write added to the format (MFT, SL→VL and VL arbitration writes
//! were) leaves every file without it reading as before, so it keeps the version; a weft that
//! does not know the kind refuses the file, naming it. The version changes when a file that
//! was valid would be read otherwise.
//!
//! The `partitions` are what the state the plan leads to declares, by port (a physical port
//! by its node GUID and number, a VM by the port GUID of the VF it runs on there): what
//! `weft apply` proves every mix of the plan's P_Key writes against. `proof` says what every
//! step was proven to keep when the plan was made. The `digest` (SHA-256 of the plan's
//! canonical text without it) tells an edited or damaged file: it is not a signature (whoever
//! can write the file can write a new digest), so `weft apply` proves a plan again on the
//! fabric whatever its digest says, and skips that only when asked and the digest matches.

use serde::{Deserialize, Serialize};
use weft_fabric::Fingerprint;
use weft_fabric::Guid;

/// The `format` of a plan file.
pub const PLAN_FORMAT: &str = "weft-plan";
/// The version this weft reads and writes.
pub const PLAN_VERSION: u32 = 2;

/// LIDs per LFT block (one LinearForwardingTable SMP).
pub const LFT_BLOCK: usize = 64;
/// Entries per P_Key table block (one P_KeyTable SMP).
pub const PKEY_BLOCK: usize = 32;

/// The 64 entries of an LFT block (`0xff`: none), as a plan writes them.
pub type LftBlock = [u8; LFT_BLOCK];

/// MLIDs per MFT block (one MulticastForwardingTable SMP at one position).
pub const MFT_BLOCK: usize = 32;

/// An MFT block at one position as the SMP carries it: 32 big-endian 16-bit port masks.
pub type MftBlock = [u8; 2 * MFT_BLOCK];

/// The highest MFT block (MLID 0xFFFE is in block 511).
pub const MFT_MAX_BLOCK: u16 = 511;
/// The highest MFT position (ports 240–255).
pub const MFT_MAX_POSITION: u8 = 15;

/// One SMP Set a plan makes (not `std::io::Write`: a write of a block to a device).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum SmpWrite {
    /// A LinearForwardingTable block of a switch.
    Lft {
        /// The switch's node GUID.
        #[serde(with = "weft_fabric::guid_hex")]
        switch: Guid,
        /// The block (LIDs `64 × block ..= 64 × block + 63`).
        block: u16,
        /// The 64 entries before (in the file: hex, `ff` for none).
        #[serde(with = "weft_fabric::hex::block")]
        old: LftBlock,
        /// The 64 entries written.
        #[serde(with = "weft_fabric::hex::block")]
        new: LftBlock,
    },
    /// A P_KeyTable block of a port.
    Pkeys {
        /// The node's GUID.
        #[serde(with = "weft_fabric::guid_hex")]
        node: Guid,
        /// The port (0 for a switch).
        port: u8,
        /// The block (entries `32 × block ..`).
        block: u16,
        /// The entries before (0 for an empty slot).
        old: Vec<u16>,
        /// The entries written.
        new: Vec<u16>,
    },
    /// A MulticastForwardingTable block of a switch at one position.
    Mft {
        /// The switch's node GUID.
        #[serde(with = "weft_fabric::guid_hex")]
        switch: Guid,
        /// The block (MLIDs `0xC000 + 32 × block ..= 0xC000 + 32 × block + 31`).
        block: u16,
        /// The position (ports `16 × position ..= 16 × position + 15`).
        position: u8,
        /// The 32 masks before (in the file: hex, four digits a mask).
        #[serde(with = "weft_fabric::hex::block")]
        old: MftBlock,
        /// The 32 masks written.
        #[serde(with = "weft_fabric::hex::block")]
        new: MftBlock,
    },
    /// A VF of a vSwitch hypervisor: its LID (PortInfo) and P_Key table, set through the
    /// hypervisor's port — two SMPs.
    Vport {
        /// The hypervisor's node GUID.
        #[serde(with = "weft_fabric::guid_hex")]
        node: Guid,
        /// Its port the VF sits behind.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID: where a fabric presents its vSwitches as Paper A describes (a
        /// switch with the PF and one channel adapter per VF behind it), the VF is the node
        /// holding this port GUID.
        #[serde(with = "weft_fabric::guid_hex")]
        guid: Guid,
        /// The VF's LID before (none: no LID).
        old_lid: Option<u16>,
        /// Its LID after.
        new_lid: Option<u16>,
        /// Its P_Key table before.
        old_pkeys: Vec<u16>,
        /// Its P_Key table after.
        new_pkeys: Vec<u16>,
    },
    /// An SLtoVLMappingTable. Of a switch: the table of one (input, output) port pair
    /// (SMP attribute modifier `in_port << 8 | out_port`). Of an end node (a channel adapter
    /// or router): the injection table of its port `out_port`, written with `in_port` 0 — the
    /// SMP goes by directed route to that port with attribute modifier 0, as OpenSM sends it
    /// (an end node's table is the table of the port the SMP enters).
    Sl2vl {
        /// The node's GUID.
        #[serde(with = "weft_fabric::guid_hex")]
        node: Guid,
        /// The input port (0 for an end node; a switch's port 0 is its own).
        in_port: u8,
        /// The output port (an end node: its port).
        out_port: u8,
        /// The VL of each SL before (in the file: 16 hex digits, SL 0 first).
        #[serde(with = "weft_fabric::hex::vls")]
        old: [u8; 16],
        /// The VL of each SL written.
        #[serde(with = "weft_fabric::hex::vls")]
        new: [u8; 16],
    },
    /// A VLArbitrationTable block of a port: a switch's port (attribute modifier `block << 16
    /// | port`), or an end node's port (by directed route to it, the modifier's port field 0,
    /// as OpenSM sends it).
    #[serde(rename = "vlarb")]
    VlArb {
        /// The node's GUID.
        #[serde(with = "weft_fabric::guid_hex")]
        node: Guid,
        /// The port.
        port: u8,
        /// The block: 1 and 2 the low-priority table's entries 0–31 and 32–63, 3 and 4 the
        /// high-priority table's.
        block: u8,
        /// The entries before, `(VL, weight)`; the block's entries after them are (0, 0) (in
        /// the file: hex, four digits an entry).
        #[serde(with = "weft_fabric::hex::arb")]
        old: Vec<(u8, u8)>,
        /// The entries written.
        #[serde(with = "weft_fabric::hex::arb")]
        new: Vec<(u8, u8)>,
    },
}

/// Entries in one VLArbitrationTable block.
pub const VLARB_BLOCK: usize = 32;

/// The blocks of a VLArbitrationTable: 1 and 2 the low-priority table, 3 and 4 the
/// high-priority one.
pub const VLARB_BLOCKS: std::ops::RangeInclusive<u8> = 1..=4;

/// `entries` as the 32 entries of a VLArbitrationTable block: the ones after them (0, 0),
/// any past 32 cut.
pub fn vlarb_block(entries: &[(u8, u8)]) -> [(u8, u8); VLARB_BLOCK] {
    let mut out = [(0, 0); VLARB_BLOCK];
    for (slot, e) in out.iter_mut().zip(entries) {
        *slot = *e;
    }
    out
}

/// One step: writes that go out together.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// Its writes, sorted.
    pub writes: Vec<SmpWrite>,
    /// Destination LIDs this step takes out of service (break-before-make): from this step
    /// on, routes toward them may fail, until the step that names them in `restores`. Sorted;
    /// empty for a step that keeps every route.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drops: Vec<u16>,
    /// Destination LIDs whose routes arrive again after this step (each dropped by an
    /// earlier step). Sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restores: Vec<u16>,
}

impl PlanStep {
    /// A step of `writes` that keeps every route.
    pub fn of(writes: Vec<SmpWrite>) -> PlanStep {
        PlanStep {
            writes,
            drops: Vec::new(),
            restores: Vec::new(),
        }
    }
}

/// A plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Always [`PLAN_FORMAT`].
    pub format: String,
    /// [`PLAN_VERSION`].
    pub version: u32,
    /// The fabric's name (the state's, as `weft plan` read it).
    #[serde(rename = "fabric")]
    pub fabric_name: String,
    /// The fabric the plan applies to (its live topology and LIDs): `weft apply` refuses
    /// another.
    pub from: Fingerprint,
    /// The state it leads to.
    pub to: Fingerprint,
    /// What the fabric it applies to looks like from the wire, so `weft apply` can name
    /// what differs (absent in plans that carry only fingerprints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<weft_fabric::WireView>,
    /// The partitions the state it leads to declares (none: it declares none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<PlanPartition>,
    /// The ports the subnet manager runs on, as the state it leads to says (full members of
    /// the default partition, which every end port must reach), written `0x<node guid>:<port>`
    /// (a switch's port 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sm: Vec<SmPort>,
    /// What every step was proven to keep when the plan was made.
    pub proof: Proof,
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
    /// The digest the file carries (see [`Plan::digest`]); `None` for a plan not read from a
    /// file. [`Plan::to_json`] writes the plan's own digest, whatever this holds.
    #[serde(default, rename = "digest", skip_serializing)]
    pub recorded_digest: Option<String>,
}

/// What the steps of a plan were proven to keep when it was made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    /// The pairs the proof covers: `all` (every switch and end port) or `hca-to-hca`.
    pub scope: String,
    /// What every step keeps in every mix of its writes, by name: `loop_free`,
    /// `deadlock_free`, `connected`, `isolated` (the last when the plan writes P_Keys).
    pub properties: Vec<String>,
    /// Whether the proof rests on path SLs and SL→VL tables (paths on other VLs than 0):
    /// `weft apply` reads no path SLs off a fabric, so it cannot prove such a plan again.
    pub path_sls: bool,
}

/// A port the subnet manager runs on, by its node's GUID and number (0 for a switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SmPort {
    /// The node's GUID.
    pub node: Guid,
    /// The port.
    pub port: u8,
}

impl From<SmPort> for String {
    fn from(p: SmPort) -> String {
        format!("{}:{}", p.node, p.port)
    }
}

impl TryFrom<String> for SmPort {
    type Error = String;

    fn try_from(s: String) -> Result<SmPort, String> {
        weft_fabric::wire::parse_end(&s)
            .map(|(node, port)| SmPort { node, port: port.0 })
            .ok_or_else(|| format!("`{s}` is not an SM port (`0x<node guid>:<port>`)"))
    }
}

/// A declared partition of the state a plan leads to, by port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanPartition {
    /// Its name.
    pub name: String,
    /// Its number (a P_Key's low 15 bits).
    pub pkey: u16,
    /// Its members.
    pub members: Vec<Member>,
}

/// A member of a declared partition, written `0x<node guid>:<port> full|limited` for a
/// physical port and `vf 0x<host guid>:<port>:<vf> 0x<port guid> full|limited` for the VF a
/// VM runs on (its hypervisor's port, its index there and its own port GUID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Member {
    /// A physical end port.
    Port {
        /// Its node's GUID.
        node: Guid,
        /// Its number.
        port: u8,
        /// Full or limited.
        membership: weft_fabric::Membership,
    },
    /// The VF a member VM runs on.
    Vf {
        /// Its hypervisor's node GUID.
        host: Guid,
        /// The hypervisor's port it sits behind.
        port: u8,
        /// Its index there.
        vf: u8,
        /// The VF's port GUID.
        guid: Guid,
        /// Full or limited.
        membership: weft_fabric::Membership,
    },
}

impl From<Member> for String {
    fn from(m: Member) -> String {
        match m {
            Member::Port {
                node,
                port,
                membership,
            } => format!("{node}:{port} {}", membership.as_str()),
            Member::Vf {
                host,
                port,
                vf,
                guid,
                membership,
            } => format!(
                "vf {:#018x}:{port}:{vf} {:#018x} {}",
                host.0,
                guid.0,
                membership.as_str()
            ),
        }
    }
}

impl TryFrom<String> for Member {
    type Error = String;

    fn try_from(s: String) -> Result<Member, String> {
        let bad = || {
            format!(
                "`{s}` is not a partition member (`0x<node guid>:<port> full|limited` or \
                 `vf 0x<host guid>:<port>:<vf> 0x<port guid> full|limited`)"
            )
        };
        let membership = |w: &str| match w {
            "full" => Some(weft_fabric::Membership::Full),
            "limited" => Some(weft_fabric::Membership::Limited),
            _ => None,
        };
        let words: Vec<&str> = s.split(' ').collect();
        match words.as_slice() {
            ["vf", at, g, m] => {
                let (end, vf) = at.rsplit_once(':').ok_or_else(bad)?;
                let (host, port) = weft_fabric::wire::parse_end(end).ok_or_else(bad)?;
                Ok(Member::Vf {
                    host,
                    port: port.0,
                    vf: vf.parse().map_err(|_| bad())?,
                    guid: g.parse().map_err(|_| bad())?,
                    membership: membership(m).ok_or_else(bad)?,
                })
            }
            [end, m] => {
                let (node, port) = weft_fabric::wire::parse_end(end).ok_or_else(bad)?;
                Ok(Member::Port {
                    node,
                    port: port.0,
                    membership: membership(m).ok_or_else(bad)?,
                })
            }
            _ => Err(bad()),
        }
    }
}

impl Plan {
    /// SMPs in all: one per LFT, MFT, P_Key, SL→VL or VL arbitration write, two per VF write
    /// (PortInfo and P_KeyTable).
    pub fn smps(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.writes)
            .map(|w| match w {
                SmpWrite::Vport { .. } => 2,
                _ => 1,
            })
            .sum()
    }

    /// LFT block writes in all (what Paper A's Table 2 counts for a migration).
    pub fn lft_smps(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.writes)
            .filter(|w| matches!(w, SmpWrite::Lft { .. }))
            .count()
    }

    /// SL→VL and VL arbitration writes in all.
    pub fn qos_smps(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.writes)
            .filter(|w| matches!(w, SmpWrite::Sl2vl { .. } | SmpWrite::VlArb { .. }))
            .count()
    }

    /// The plan file: the header fields, then one write per line, so two plans diff line by
    /// line; last its digest.
    pub fn to_json(&self) -> String {
        let mut t = self.canonical();
        t += &format!(",\n\"digest\": \"{}\"\n}}\n", digest_of(&t));
        t
    }

    /// The SHA-256 (hex) of the plan's canonical text: everything [`Plan::to_json`] writes
    /// but the digest itself. Two plans with the same content have the same digest however
    /// their files are laid out.
    pub fn digest(&self) -> String {
        digest_of(&self.canonical())
    }

    /// Whether the plan was read from a file whose digest is its own: `false` for a file
    /// edited (or damaged) after `weft plan` wrote it, and for a plan not read from a file.
    pub fn digest_matches(&self) -> bool {
        self.recorded_digest.as_deref() == Some(self.digest().as_str())
    }

    /// The text [`Plan::to_json`] writes, up to (not including) the digest and the closing
    /// brace.
    fn canonical(&self) -> String {
        let mut t = String::from("{\n");
        t += &format!("\"format\": {},\n", compact(&self.format));
        t += &format!("\"version\": {},\n", self.version);
        t += &format!("\"fabric\": {},\n", compact(&self.fabric_name));
        t += &format!("\"from\": {},\n", compact(&self.from));
        t += &format!("\"to\": {},\n", compact(&self.to));
        if let Some(w) = &self.wire {
            t += &wire_json(w);
        }
        if !self.partitions.is_empty() {
            t += "\"partitions\": [";
            for (i, p) in self.partitions.iter().enumerate() {
                t += if i == 0 { "\n  " } else { ",\n  " };
                t += &compact(p);
            }
            t += "\n],\n";
        }
        if !self.sm.is_empty() {
            t += &format!("\"sm\": {},\n", compact(&self.sm));
        }
        t += &format!("\"proof\": {},\n", compact(&self.proof));
        t += "\"steps\": [";
        for (i, s) in self.steps.iter().enumerate() {
            t += if i == 0 { "\n" } else { ",\n" };
            t += "  {\"writes\": [";
            for (j, w) in s.writes.iter().enumerate() {
                t += if j == 0 { "\n    " } else { ",\n    " };
                t += &compact(w);
            }
            t += "\n  ]";
            for (key, lids) in [("drops", &s.drops), ("restores", &s.restores)] {
                if !lids.is_empty() {
                    t += &format!(", \"{key}\": {}", compact(lids));
                }
            }
            t += "}";
        }
        t += "\n]";
        t
    }

    /// Reads a plan file: its format and version checked, every LFT block 64 entries of hex,
    /// every P_Key block at most 32 entries, every VF LID a unicast LID, every declared
    /// partition a partition number with each port once. The digest is kept as read (see
    /// [`Plan::digest_matches`]).
    pub fn from_json(text: &str) -> Result<Plan, PlanFileError> {
        // The format and version first: a plan of another version is named as such, not as
        // whatever field it lacks.
        #[derive(Deserialize)]
        struct Head {
            format: String,
            version: u32,
        }
        if let Ok(h) = serde_json::from_str::<Head>(text) {
            if h.format != PLAN_FORMAT || h.version != PLAN_VERSION {
                return Err(PlanFileError::Version {
                    format: h.format,
                    version: h.version,
                });
            }
        }
        let p: Plan =
            serde_json::from_str(text).map_err(|e| PlanFileError::Parse(e.to_string()))?;
        if p.format != PLAN_FORMAT || p.version != PLAN_VERSION {
            return Err(PlanFileError::Version {
                format: p.format,
                version: p.version,
            });
        }
        for (i, s) in p.steps.iter().enumerate() {
            for w in &s.writes {
                let text = || serde_json::to_string(w).unwrap_or_default();
                let bad = match w {
                    // Whole blocks of hex as the file was read.
                    SmpWrite::Lft { .. } => false,
                    SmpWrite::Mft {
                        block, position, ..
                    } => *block > MFT_MAX_BLOCK || *position > MFT_MAX_POSITION,
                    SmpWrite::Pkeys { old, new, .. } => {
                        old.len() > PKEY_BLOCK || new.len() > PKEY_BLOCK
                    }
                    // 16 VLs of hex and at most 32 entries as the file was read.
                    SmpWrite::Sl2vl { .. } => false,
                    SmpWrite::VlArb { block, .. } => !VLARB_BLOCKS.contains(block),
                    SmpWrite::Vport {
                        old_lid,
                        new_lid,
                        old_pkeys,
                        new_pkeys,
                        ..
                    } => {
                        if let Some(lid) = [old_lid, new_lid]
                            .into_iter()
                            .flatten()
                            .find(|&&l| l == 0 || l > weft_fabric::MAX_UNICAST_LID)
                        {
                            return Err(PlanFileError::VfLid {
                                step: i + 1,
                                lid: *lid,
                                write: text(),
                            });
                        }
                        old_pkeys.len() > PKEY_BLOCK || new_pkeys.len() > PKEY_BLOCK
                    }
                };
                if bad {
                    return Err(PlanFileError::Write {
                        step: i + 1,
                        write: text(),
                    });
                }
            }
        }
        // Every dropped LID a unicast LID, out of service at most once at a time, and
        // restored by a later step; nothing restored that is not out of service.
        let mut out: std::collections::BTreeSet<u16> = std::collections::BTreeSet::new();
        for (i, s) in p.steps.iter().enumerate() {
            let bad = |lid: u16, why: &'static str| PlanFileError::Outage {
                step: i + 1,
                lid,
                why,
            };
            for &lid in &s.restores {
                if !out.remove(&lid) {
                    return Err(bad(lid, "it restores a LID no earlier step dropped"));
                }
            }
            for &lid in &s.drops {
                if lid == 0 || lid > weft_fabric::MAX_UNICAST_LID {
                    return Err(bad(lid, "it drops a LID that is not a unicast LID"));
                }
                if s.restores.contains(&lid) || !out.insert(lid) {
                    return Err(bad(lid, "it drops a LID already out of service"));
                }
            }
        }
        if let Some(&lid) = out.first() {
            return Err(PlanFileError::Outage {
                step: p.steps.len(),
                lid,
                why: "no step restores it",
            });
        }
        let mut names = std::collections::BTreeSet::new();
        for part in &p.partitions {
            let bad = |why: String| PlanFileError::Partition {
                name: part.name.clone(),
                why,
            };
            if !(1..=0x7ffe).contains(&part.pkey) {
                return Err(bad(format!(
                    "{:#06x} is not a partition number (0x0001 to 0x7ffe)",
                    part.pkey
                )));
            }
            if !names.insert(part.name.as_str()) {
                return Err(bad("it is declared twice".to_owned()));
            }
            let mut seen = std::collections::BTreeSet::new();
            for m in &part.members {
                let at = match *m {
                    Member::Port { node, port, .. } => (node, port, None),
                    Member::Vf { host, port, vf, .. } => (host, port, Some(vf)),
                };
                if !seen.insert(at) {
                    return Err(bad(format!("{} is a member twice", String::from(*m))));
                }
            }
        }
        Ok(p)
    }
}

/// A write whose `old` block is not what the table holds when it lands.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("step {step}: switch {switch} LFT block {block} holds {found}, not the plan's old block")]
#[diagnostic(code(weft::plan_file::stale))]
pub struct StaleBlock {
    /// The step (from 1).
    pub step: usize,
    /// The switch.
    pub switch: Guid,
    /// The block.
    pub block: u16,
    /// What it holds (hex).
    pub found: String,
}

impl Plan {
    /// Applies the plan's LFT writes, step by step, to `tables` (an LFT per switch GUID; a
    /// switch missing starts empty), checking that every write's `old` block is what the table
    /// holds when it lands; trailing unset entries are dropped at the end.
    pub fn replay_lfts(
        &self,
        tables: &mut std::collections::BTreeMap<Guid, Vec<u8>>,
    ) -> Result<(), StaleBlock> {
        for (i, step) in self.steps.iter().enumerate() {
            for w in &step.writes {
                let SmpWrite::Lft {
                    switch,
                    block,
                    old,
                    new,
                } = w
                else {
                    continue;
                };
                let t = tables.entry(*switch).or_default();
                let first = usize::from(*block) * LFT_BLOCK;
                if t.len() < first + LFT_BLOCK {
                    t.resize(first + LFT_BLOCK, 0xff);
                }
                let Some(slot) = t.get_mut(first..first + LFT_BLOCK) else {
                    continue;
                };
                if slot != old {
                    return Err(StaleBlock {
                        step: i + 1,
                        switch: *switch,
                        block: *block,
                        found: weft_fabric::hex::encode(slot),
                    });
                }
                slot.copy_from_slice(new);
            }
        }
        for t in tables.values_mut() {
            while t.last() == Some(&0xff) {
                t.pop();
            }
        }
        Ok(())
    }
}

/// Why a plan file cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum PlanFileError {
    /// Not JSON of a plan.
    #[error("not a weft plan: {0}")]
    #[diagnostic(code(weft::plan_file::parse))]
    Parse(String),
    /// Another format or version.
    #[error(
        "this is `{format}` version {version}; this weft reads `weft-plan` version 2 (plan \
         again with this weft)"
    )]
    #[diagnostic(code(weft::plan_file::version))]
    Version {
        /// Its format.
        format: String,
        /// Its version.
        version: u32,
    },
    /// A write that cannot be.
    #[error(
        "step {step}: {write} is not a whole block (64 hex LFT entries, at most 32 P_Keys, MFT \
         block 0 to 511 at position 0 to 15, VL arbitration block 1 to 4)"
    )]
    #[diagnostic(code(weft::plan_file::write))]
    Write {
        /// The step (from 1).
        step: usize,
        /// The write.
        write: String,
    },
    /// A VF write with a LID that is not a unicast LID.
    #[error("step {step}: {write} gives a VF LID {lid:#06x}, which is not a unicast LID (0x0001 to 0xbfff)")]
    #[diagnostic(code(weft::plan_file::vf_lid))]
    VfLid {
        /// The step (from 1).
        step: usize,
        /// The LID.
        lid: u16,
        /// The write.
        write: String,
    },
    /// A step's drops or restores that cannot be.
    #[error("step {step}, destination LID {lid:#06x}: {why}")]
    #[diagnostic(code(weft::plan_file::outage))]
    Outage {
        /// The step (from 1).
        step: usize,
        /// The LID.
        lid: u16,
        /// What is wrong.
        why: &'static str,
    },
    /// A declared partition that cannot be.
    #[error("partition `{name}`: {why}")]
    #[diagnostic(code(weft::plan_file::partition))]
    Partition {
        /// Its name.
        name: String,
        /// What is wrong.
        why: String,
    },
}

/// The SHA-256 of `text`, as hex.
fn digest_of(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let sum = Sha256::digest(text.as_bytes());
    weft_fabric::hex::encode(&sum)
}

/// The wire view, one entry per line.
fn wire_json(w: &weft_fabric::WireView) -> String {
    let text = serde_json::to_value(w).unwrap_or_default();
    let mut t = format!("\"wire\": {{\"lmc\": {}", w.lmc);
    for part in ["nodes", "links", "lids", "vf_hosts"] {
        let items = text
            .get(part)
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default();
        // vSwitch hosts only where there are (plans without VFs stay as they were).
        if part == "vf_hosts" && items.is_empty() {
            continue;
        }
        t += &format!(",\n  \"{part}\": [");
        for (i, item) in items.iter().enumerate() {
            t += if i == 0 { "\n    " } else { ",\n    " };
            t += &compact(item);
        }
        t += "]";
    }
    t += "},\n";
    t
}

/// Compact JSON of a plan's part.
fn compact<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests;
