//! Certificates: what a proof leaves behind, and a linear-time checker that trusts nothing
//! but the state it is given.
//!
//! A certificate (format `weft-certificate`, version 2) records what it proves and for what:
//!
//! * the **fingerprint** of the state's fabric ([`Fingerprint`]: live topology and LIDs), the
//!   **scope** (which pairs) and the **properties** (`deadlock_free`, `connected`);
//! * `deadlock_free`: a **rank per channel** (node GUID, port, VL) that strictly increases along
//!   every dependency of the channel dependency graph (so the graph is acyclic);
//! * `connected`: per destination LID, a **distance label** per switch that strictly decreases
//!   along every LFT next hop, 0 only at the switch owning the destination (so every route
//!   arrives).
//!
//! [`check`] refuses a certificate made for another fabric, another scope or fewer properties
//! than asked, then recomputes, per destination, each switch's next hop from the tables,
//! checks the labels, and pushes every route state (switch, input port, VL, SL) through the
//! switches in decreasing label order — a topological order the labels themselves prove —
//! checking every hop's VL (the injection VL, every switch hop, the last hop into the
//! destination's port) and every dependency's ranks. Every step is constant work per route
//! state, so the check is linear in the size of the routing.
//!
//! In JSON the labels of one destination are one hex string, `label_digits` digits per switch
//! (all `f`: no label), so the certificate of an 11 664-node fabric stays small and fast.

mod check;

pub use check::{check, CheckSummary, Request};

use crate::net::Net;
use crate::{Property, Scope};
use serde::{Deserialize, Serialize};
use weft_fabric::{Fingerprint, Lid};

/// The format name in `certificate.json`.
pub const FORMAT: &str = "weft-certificate";
/// The version this weft writes and reads.
pub const VERSION: u32 = 2;

/// "No label": the switch does not reach the destination.
pub const NO_LABEL: u16 = u16::MAX;

/// A proof of deadlock freedom and connectivity of one state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Certificate {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The fabric's name (informational).
    pub fabric: String,
    /// What the state's fabric is: the certificate proves nothing about another one.
    pub fingerprint: Fingerprint,
    /// The pairs it covers.
    pub scope: Scope,
    /// The properties it proves.
    pub properties: Vec<Property>,
    /// The `deadlock_free` section: channel ranks.
    pub deadlock_free: Ranks,
    /// The `connected` section: distance labels.
    pub connected: Labelling,
    /// The multicast traffic it covers (absent: unicast only, and the state had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast: Option<McCoverage>,
}

/// The multicast groups a certificate's ranks and proof cover.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McCoverage {
    /// The MLIDs of every group whose copies' dependencies are ranked, sorted.
    pub groups: Vec<u16>,
    /// Of those, the MLIDs whose members were inferred from the MFTs (no group record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inferred: Vec<u16>,
    /// (Sender, receiver) pairs shown to get exactly one copy.
    pub pairs: u64,
}

impl McCoverage {
    pub(crate) fn of(flows: &[crate::multicast::Flow], report: &crate::McReport) -> McCoverage {
        McCoverage {
            groups: flows.iter().map(|f| f.mlid.get()).collect(),
            inferred: flows
                .iter()
                .filter(|f| f.inferred)
                .map(|f| f.mlid.get())
                .collect(),
            pairs: report.pairs,
        }
    }
}

/// Ranks of the channels of the dependency graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ranks {
    /// Every channel: `[node GUID, port, VL, rank]`, sorted.
    pub channels: Vec<(String, u8, u8, u32)>,
}

/// Distance labels toward every destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labelling {
    /// Switch node GUIDs, in the order of every label array.
    pub switches: Vec<String>,
    /// The labels per destination LID.
    pub destinations: Vec<Labels>,
}

/// The distance labels toward one destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    /// Destination LID.
    pub lid: u16,
    /// One label per switch of [`Labelling::switches`] ([`NO_LABEL`]: none).
    pub labels: Vec<u16>,
}

/// `Labelling` as written: labels as fixed-width hex strings.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabellingJson {
    switches: Vec<String>,
    label_digits: u8,
    destinations: Vec<(u16, String)>,
}

impl Serialize for Labelling {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let max = self
            .destinations
            .iter()
            .flat_map(|d| d.labels.iter().copied())
            .filter(|&l| l != NO_LABEL)
            .max()
            .unwrap_or(0);
        let digits: u8 = if max < 0xf {
            1
        } else if max < 0xff {
            2
        } else {
            4
        };
        LabellingJson {
            switches: self.switches.clone(),
            label_digits: digits,
            destinations: self
                .destinations
                .iter()
                .map(|d| (d.lid, encode_labels(&d.labels, digits)))
                .collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Labelling {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Labelling, D::Error> {
        use serde::de::Error;
        let raw = LabellingJson::deserialize(d)?;
        if !matches!(raw.label_digits, 1 | 2 | 4) {
            return Err(D::Error::custom("`label_digits` is 1, 2 or 4"));
        }
        let destinations = raw
            .destinations
            .into_iter()
            .map(|(lid, text)| {
                decode_labels(&text, raw.label_digits)
                    .map(|labels| Labels { lid, labels })
                    .ok_or_else(|| {
                        D::Error::custom(format!(
                            "the labels of LID {lid} are not hex digits in groups of {}",
                            raw.label_digits
                        ))
                    })
            })
            .collect::<Result<Vec<Labels>, D::Error>>()?;
        Ok(Labelling {
            switches: raw.switches,
            destinations,
        })
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn encode_labels(labels: &[u16], digits: u8) -> String {
    let mut s = String::with_capacity(labels.len() * usize::from(digits));
    for &l in labels {
        for k in (0..digits).rev() {
            let nibble = (l >> (4 * u16::from(k))) & 0xf;
            s.push(char::from(
                HEX.get(usize::from(nibble)).copied().unwrap_or(b'0'),
            ));
        }
    }
    s
}

fn decode_labels(text: &str, digits: u8) -> Option<Vec<u16>> {
    let d = usize::from(digits);
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(d) {
        return None;
    }
    let none = (1u32 << (4 * u32::from(digits))) - 1;
    bytes
        .chunks_exact(d)
        .map(|chunk| {
            let mut v = 0u32;
            for &c in chunk {
                let n = match c {
                    b'0'..=b'9' => c - b'0',
                    b'a'..=b'f' => c - b'a' + 10,
                    _ => return None,
                };
                v = v << 4 | u32::from(n);
            }
            Some(if v == none { NO_LABEL } else { v as u16 })
        })
        .collect()
}

/// Why a certificate is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[non_exhaustive]
pub enum CertificateError {
    /// Not a certificate.
    #[error("not a weft certificate: {0}")]
    #[diagnostic(code(weft::certificate::format))]
    Format(String),
    /// Another version.
    #[error("a version {0} certificate; this weft reads version 2")]
    #[diagnostic(
        code(weft::certificate::version),
        help("write it again with `weft verify --write-certificate` or `weft build`")
    )]
    Version(u32),
    /// Made for another fabric.
    #[error("the certificate is for another fabric: {0}")]
    #[diagnostic(code(weft::certificate::fingerprint))]
    Fingerprint(String),
    /// It covers fewer pairs than asked.
    #[error(
        "the certificate covers `{certificate}` pairs, but `{requested}` pairs were asked for"
    )]
    #[diagnostic(
        code(weft::certificate::scope),
        help("verify with the certificate's `--scope`, or write a certificate for the scope you need")
    )]
    Scope {
        /// The certificate's scope.
        certificate: Scope,
        /// The scope asked for.
        requested: Scope,
    },
    /// It does not prove a property asked for.
    #[error("the certificate does not prove `{0}`")]
    #[diagnostic(code(weft::certificate::property))]
    Property(Property),
    /// It claims `isolated`, which the state's P_Key tables do not satisfy.
    #[error("the certificate claims `isolated`, which the P_Key tables break: {0}")]
    #[diagnostic(code(weft::certificate::isolation))]
    Isolation(String),
    /// It claims `apm_disjoint`, which the state's routes do not satisfy.
    #[error("the certificate claims `apm_disjoint`, which the routes break: {0}")]
    #[diagnostic(code(weft::certificate::apm))]
    Apm(String),
    /// It does not cover the state's multicast, or the state's multicast trees break it.
    #[error("the certificate's multicast section does not hold: {0}")]
    #[diagnostic(code(weft::certificate::multicast))]
    Multicast(String),
    /// It names a node the state does not have, or not as what it claims.
    #[error("the certificate names {0}")]
    #[diagnostic(code(weft::certificate::node))]
    Node(String),
    /// It lists something twice.
    #[error("the certificate lists {0} twice")]
    #[diagnostic(code(weft::certificate::duplicate))]
    Duplicate(String),
    /// It covers other destinations than the state requires.
    #[error("the certificate covers {found} destinations, the state requires {required}{}", .example.as_deref().map(|e| format!(" ({e})")).unwrap_or_default())]
    #[diagnostic(code(weft::certificate::destinations))]
    Destinations {
        /// Destinations in the certificate.
        found: usize,
        /// Destinations the state requires.
        required: usize,
        /// One LID that is missing or extra.
        example: Option<String>,
    },
    /// A label or next hop does not lead to the destination.
    #[error("toward LID {lid}, `{node}` {problem}")]
    #[diagnostic(code(weft::certificate::label))]
    Label {
        /// Destination LID.
        lid: u16,
        /// The switch or source.
        node: String,
        /// What is wrong.
        problem: String,
    },
    /// A dependency whose ranks do not increase, or a channel without a rank.
    #[error("dependency `{from}` → `{to}` {problem}")]
    #[diagnostic(code(weft::certificate::rank))]
    Rank {
        /// Held channel.
        from: String,
        /// Wanted channel.
        to: String,
        /// What is wrong.
        problem: String,
    },
}

impl Certificate {
    /// Deterministic JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads what [`Certificate::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<Certificate, CertificateError> {
        #[derive(Deserialize)]
        struct Header {
            format: Option<String>,
            version: Option<u32>,
        }
        let header: Header =
            serde_json::from_str(text).map_err(|e| CertificateError::Format(e.to_string()))?;
        if header.format.as_deref() != Some(FORMAT) {
            return Err(CertificateError::Format(format!(
                "`format` is {}, not `{FORMAT}`",
                header
                    .format
                    .map_or_else(|| "missing".to_owned(), |f| format!("`{f}`"))
            )));
        }
        match header.version {
            Some(VERSION) => {}
            Some(v) => return Err(CertificateError::Version(v)),
            None => return Err(CertificateError::Format("no `version`".to_owned())),
        }
        serde_json::from_str(text).map_err(|e| CertificateError::Format(e.to_string()))
    }
}

/// Builds the certificate of a proven state from the explicit engine's results.
pub(crate) fn build(
    net: &Net<'_>,
    scope: Scope,
    edges: &[(u32, u32)],
    ranks: &[u32],
    labels: Vec<(Lid, Vec<u16>)>,
) -> Certificate {
    let mut used: Vec<u32> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
    used.sort_unstable();
    used.dedup();
    let nodes = net.st.fabric.nodes();
    let mut channels: Vec<(String, u8, u8, u32)> = used
        .iter()
        .filter_map(|&c| {
            let (n, p, vl) = net.channel_parts(c)?;
            let g = nodes.get(n as usize)?.guid();
            Some((g.to_string(), p, vl, ranks.get(c as usize).copied()?))
        })
        .collect();
    channels.sort();
    Certificate {
        format: FORMAT.to_owned(),
        version: VERSION,
        fabric: net.st.fabric.name.clone(),
        fingerprint: Fingerprint::of(net.st),
        scope,
        properties: vec![Property::DeadlockFree, Property::Connected],
        deadlock_free: Ranks { channels },
        connected: Labelling {
            switches: net
                .switches
                .iter()
                .filter_map(|&x| nodes.get(x as usize).map(|n| n.guid().to_string()))
                .collect(),
            destinations: labels
                .into_iter()
                .map(|(lid, labels)| Labels { lid: lid.0, labels })
                .collect(),
        },
        multicast: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_in_every_width() {
        for (labels, digits) in [
            (vec![0u16, 3, NO_LABEL, 14], 1u8),
            (vec![0, 200, NO_LABEL], 2),
            (vec![0, 4000, NO_LABEL, 65534], 4),
        ] {
            let text = encode_labels(&labels, digits);
            assert_eq!(text.len(), labels.len() * usize::from(digits));
            assert_eq!(decode_labels(&text, digits), Some(labels));
        }
        assert_eq!(decode_labels("0g", 1), None);
        assert_eq!(decode_labels("012", 2), None);
        assert_eq!(
            decode_labels("0A", 1),
            None,
            "uppercase is not what weft writes"
        );
    }
}
