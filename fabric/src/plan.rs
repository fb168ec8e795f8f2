//! Plans: ordered steps of SMP writes that take a fabric from one state to another, as
//! `weft plan` writes them and `weft apply` reads them (`plan.json`, format `weft-plan`
//! version 1).
//!
//! ```text
//! {"format": "weft-plan", "version": 1, "fabric": "cluster5832",
//!  "from": {fingerprint of the fabric the plan applies to},
//!  "to": {fingerprint of the desired state},
//!  "steps": [
//!    {"writes": [
//!       {"kind": "lft", "switch": "0x…", "block": 3, "old": "ff01…", "new": "ff02…"},
//!       {"kind": "pkeys", "node": "0x…", "port": 1, "block": 0, "old": ["0x7fff", …], "new": […]},
//!       {"kind": "vport", "node": "0x…", "port": 1, "vf": 2, "guid": "0x…", "old_lid": null, "new_lid": 705,
//!        "old_pkeys": [32767], "new_pkeys": [32767, 32770]},
//!       …]},
//!    …]}
//! ```
//!
//! Within a step the writes may land in any order (they go out in parallel); a step starts
//! when the one before it has landed whole. An LFT write carries the whole 64-entry block as
//! it is before and after (two hex digits per entry, `ff` for none), so a writer keeps an
//! exact shadow and can undo it; a P_Key write carries one 32-entry block of the table.

use crate::fingerprint::Fingerprint;
use crate::ids::Guid;
use serde::{Deserialize, Serialize};

/// The `format` of a plan file.
pub const PLAN_FORMAT: &str = "weft-plan";
/// The version this weft reads and writes.
pub const PLAN_VERSION: u32 = 1;

/// LIDs per LFT block (one LinearForwardingTable SMP).
pub const LFT_BLOCK: usize = 64;
/// Entries per P_Key table block (one P_KeyTable SMP).
pub const PKEY_BLOCK: usize = 32;

/// One SMP Set.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum Write {
    /// A LinearForwardingTable block of a switch.
    Lft {
        /// The switch's node GUID.
        #[serde(with = "guid_hex")]
        switch: Guid,
        /// The block (LIDs `64 × block ..= 64 × block + 63`).
        block: u16,
        /// The 64 entries before, as hex (`ff`: none).
        old: String,
        /// The 64 entries written.
        new: String,
    },
    /// A P_KeyTable block of a port.
    Pkeys {
        /// The node's GUID.
        #[serde(with = "guid_hex")]
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
    /// A VF of a vSwitch hypervisor: its LID (PortInfo) and P_Key table, set through the
    /// hypervisor's port — two SMPs.
    Vport {
        /// The hypervisor's node GUID.
        #[serde(with = "guid_hex")]
        node: Guid,
        /// Its port the VF sits behind.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID: where a fabric presents its vSwitches as Paper A describes (a
        /// switch with the PF and one channel adapter per VF behind it), the VF is the node
        /// holding this port GUID.
        #[serde(with = "guid_hex")]
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
}

impl Write {
    /// The entries of an LFT block as hex.
    pub fn lft_hex(entries: &[u8]) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(entries.len() * 2);
        for &b in entries {
            for nibble in [b >> 4, b & 15] {
                s.push(char::from(
                    DIGITS.get(usize::from(nibble)).copied().unwrap_or(b'0'),
                ));
            }
        }
        s
    }

    /// The 64 entries of an LFT block written as hex ([`Write::lft_hex`]); an entry that is
    /// not two hex digits (a plan file read with [`Plan::from_json`] has none) reads 0xff.
    pub fn lft_entries(hex: &str) -> [u8; LFT_BLOCK] {
        std::array::from_fn(|k| {
            hex.get(2 * k..2 * k + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .unwrap_or(0xff)
        })
    }
}

/// One step: writes that go out together.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// Its writes, sorted.
    pub writes: Vec<Write>,
}

/// A plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Always [`PLAN_FORMAT`].
    pub format: String,
    /// [`PLAN_VERSION`].
    pub version: u32,
    /// The fabric's name.
    pub fabric: String,
    /// The fabric the plan applies to (its live topology and LIDs): `weft apply` refuses
    /// another.
    pub from: Fingerprint,
    /// The state it leads to.
    pub to: Fingerprint,
    /// What the fabric it applies to looks like from the wire, so `weft apply` can name
    /// what differs (absent in plans that carry only fingerprints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<crate::WireView>,
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// SMPs in all: one per LFT or P_Key block write, two per VF write (PortInfo and
    /// P_KeyTable).
    pub fn smps(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.writes)
            .map(|w| match w {
                Write::Vport { .. } => 2,
                _ => 1,
            })
            .sum()
    }

    /// LFT block writes in all (what Paper A's Table 2 counts for a migration).
    pub fn lft_smps(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.writes)
            .filter(|w| matches!(w, Write::Lft { .. }))
            .count()
    }

    /// The plan file: the header fields, then one write per line, so two plans diff line by
    /// line.
    pub fn to_json(&self) -> String {
        let mut t = String::from("{\n");
        t += &format!("\"format\": {},\n", compact(&self.format));
        t += &format!("\"version\": {},\n", self.version);
        t += &format!("\"fabric\": {},\n", compact(&self.fabric));
        t += &format!("\"from\": {},\n", compact(&self.from));
        t += &format!("\"to\": {},\n", compact(&self.to));
        if let Some(w) = &self.wire {
            t += &wire_json(w);
        }
        t += "\"steps\": [";
        for (i, s) in self.steps.iter().enumerate() {
            t += if i == 0 { "\n" } else { ",\n" };
            t += "  {\"writes\": [";
            for (j, w) in s.writes.iter().enumerate() {
                t += if j == 0 { "\n    " } else { ",\n    " };
                t += &compact(w);
            }
            t += "\n  ]}";
        }
        t += "\n]\n}\n";
        t
    }

    /// Reads a plan file: its format and version checked, every LFT block 64 entries of hex
    /// and every P_Key block at most 32 entries.
    pub fn from_json(text: &str) -> Result<Plan, PlanFileError> {
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
                let bad = match w {
                    Write::Lft { old, new, .. } => [old, new].iter().any(|h| {
                        h.len() != 2 * LFT_BLOCK || !h.bytes().all(|b| b.is_ascii_hexdigit())
                    }),
                    Write::Pkeys { old, new, .. } => {
                        old.len() > PKEY_BLOCK || new.len() > PKEY_BLOCK
                    }
                    Write::Vport {
                        old_lid,
                        new_lid,
                        old_pkeys,
                        new_pkeys,
                        ..
                    } => {
                        [old_lid, new_lid]
                            .iter()
                            .any(|l| l.is_some_and(|l| l == 0 || l > crate::MAX_UNICAST_LID))
                            || old_pkeys.len() > PKEY_BLOCK
                            || new_pkeys.len() > PKEY_BLOCK
                    }
                };
                if bad {
                    return Err(PlanFileError::Write {
                        step: i + 1,
                        write: serde_json::to_string(w).unwrap_or_default(),
                    });
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
                let Write::Lft {
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
                let found = Write::lft_hex(slot);
                if &found != old {
                    return Err(StaleBlock {
                        step: i + 1,
                        switch: *switch,
                        block: *block,
                        found,
                    });
                }
                slot.copy_from_slice(&Write::lft_entries(new));
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
    #[error("this is `{format}` version {version}; weft reads `weft-plan` version 1")]
    #[diagnostic(code(weft::plan_file::version))]
    Version {
        /// Its format.
        format: String,
        /// Its version.
        version: u32,
    },
    /// A write that cannot be.
    #[error("step {step}: {write} is not a whole block (64 hex LFT entries, at most 32 P_Keys)")]
    #[diagnostic(code(weft::plan_file::write))]
    Write {
        /// The step (from 1).
        step: usize,
        /// The write.
        write: String,
    },
}

/// The wire view, one entry per line.
fn wire_json(w: &crate::WireView) -> String {
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

/// GUIDs as `0x…` hex strings (JSON numbers lose precision above 2^53), for
/// `#[serde(with = "weft_fabric::plan::guid_hex")]`.
pub mod guid_hex {
    use crate::ids::Guid;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `0x` and 16 hex digits.
    pub fn serialize<S: Serializer>(g: &Guid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:#018x}", g.0))
    }

    /// Reads `0x` and 1–16 hex digits.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Guid, D::Error> {
        let text = String::deserialize(d)?;
        text.strip_prefix("0x")
            .filter(|h| !h.is_empty() && h.len() <= 16)
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .map(Guid)
            .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a hex GUID")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fp() -> Fingerprint {
        Fingerprint {
            topology: "ab".repeat(32),
            lids: "cd".repeat(32),
            nodes: 3,
            links: 2,
            lid_ports: 3,
        }
    }

    fn plan() -> Plan {
        Plan {
            format: PLAN_FORMAT.to_owned(),
            version: PLAN_VERSION,
            fabric: "f".to_owned(),
            from: fp(),
            to: fp(),
            wire: None,
            steps: vec![PlanStep {
                writes: vec![
                    Write::Lft {
                        switch: Guid(0xf452_1403_0000_0100),
                        block: 0,
                        old: "ff".repeat(64),
                        new: format!("ff01{}", "ff".repeat(62)),
                    },
                    Write::Pkeys {
                        node: Guid(0xf452_1403_0000_0300),
                        port: 1,
                        block: 0,
                        old: vec![0x7fff],
                        new: vec![0x7fff, 0x8001],
                    },
                ],
            }],
        }
    }

    #[test]
    fn a_plan_reads_back_equal_one_write_per_line() {
        let p = plan();
        let text = p.to_json();
        assert_eq!(Plan::from_json(&text).unwrap(), p);
        assert_eq!(p.smps(), 2);
        insta::assert_snapshot!(text);
    }

    /// A plan with a wire view and a VF write: the view's vSwitch hosts and the VF's GUID
    /// read back as written.
    #[test]
    fn a_plan_with_vfs_reads_back_equal() {
        let mut p = plan();
        let mut w = crate::WireView::default();
        w.nodes.insert(
            Guid(0x30),
            crate::WireNode {
                kind: crate::NodeKind::Hca,
                ports: 1,
            },
        );
        w.vf_hosts.insert((Guid(0x30), 1), 4);
        p.wire = Some(w);
        p.steps[0].writes.push(Write::Vport {
            node: Guid(0x30),
            port: 1,
            vf: 2,
            guid: Guid(0x0302_0000_0000_0030),
            old_lid: None,
            new_lid: Some(705),
            old_pkeys: vec![0x7fff],
            new_pkeys: vec![0x7fff, 0x8001],
        });
        let text = p.to_json();
        assert!(
            text.contains("\"vf_hosts\": [\n    \"0x0000000000000030:1 4\"]"),
            "{text}"
        );
        assert!(text.contains("\"guid\":\"0x0302000000000030\""), "{text}");
        assert_eq!(Plan::from_json(&text).unwrap(), p);
        assert_eq!(p.smps(), 4);
    }

    #[test]
    fn replay_checks_every_old_block() {
        let p = plan();
        let sw = Guid(0xf452_1403_0000_0100);
        // An empty table holds what the write expects (no entries): it lands.
        let mut t = std::collections::BTreeMap::new();
        p.replay_lfts(&mut t).unwrap();
        assert_eq!(t[&sw], vec![0xff, 0x01]);
        // A table that has moved on since the plan: refused, naming the block.
        let mut t = std::collections::BTreeMap::from([(sw, vec![0xff, 0x02])]);
        let e = p.replay_lfts(&mut t).unwrap_err();
        assert_eq!((e.step, e.switch, e.block), (1, sw, 0));
        assert!(e.found.starts_with("ff02"), "{e}");
    }

    #[test]
    fn a_broken_plan_is_refused() {
        let text = plan().to_json();
        let cases = [
            text.replace("\"version\": 1", "\"version\": 2"),
            text.replace("ff01", "ff0"),
            text.replace("ff01", "zz01"),
            text.replace("\"kind\":\"lft\"", "\"kind\":\"lft\",\"extra\":1"),
            text.replace("0xf452140300000100", "0x"),
            text.replace("[32767,32769]", &format!("{:?}", vec![1; 33])),
            "{".to_owned(),
        ];
        let errors: Vec<String> = cases
            .iter()
            .map(|t| Plan::from_json(t).unwrap_err().to_string())
            .collect();
        insta::assert_snapshot!(errors.join("\n"));
    }
}
