//! `state.json`, schema v1 (v2 when the state has multicast, see [`VERSION_MULTICAST`]): the
//! whole [`FabricState`] as deterministic JSON, read back only through [`FabricBuilder`] and
//! [`ValidState::new`].
//!
//! ```text
//! {
//! "format": "weft-state",
//! "version": 1,
//! "fingerprint": {"topology": "…", "lids": "…", "nodes": 3, "links": 2, "lid_ports": 3},
//! "fabric": {"name": "lab", "lmc": 0, "nodes": [
//!   {"name": "sw1", "kind": "switch", "guid": "0x0002c90000000100", "ports": 36, …},
//!   {"name": "an1", "kind": "hca", …, "role": "aggregation"},   role only when not `host`
//!   …], "links": [
//!   {"a": ["0x0002c90000000100", 1], "b": ["0x0002c90000000200", 1]},
//!   {"a": …, "b": …, "state": "down"},
//!   …]},
//! "lids": [
//!   ["0x0002c90000000100", 0, 1],          node GUID, port (0: a switch), base LID
//!   …],
//! "switches": [
//!   {"guid": "0x…", "lft": "ff0102…", "sl2vl": [{"in_port": 1, "out_port": 2, "vl": […16]}],
//!    "sl2vl_all": […16]},                   VL per SL of every port pair without a row
//!   …],
//! "ports": [
//!   {"guid": "0x…", "port": 1, "sl2vl": […16], "vlarb": {"high_limit": 0, "high": […], "low": […]},
//!    "pkeys": ["0xffff"]},
//!   …],
//! "path_sl": {"default": [0],
//!   "by_dlid": [[1, 40, [0, 1]], …],                first LID, last LID, SLs
//!   "by_switch": [["0x…", 1, 40, [2]], …],        switch GUID, first LID, last LID, SLs
//!   "by_source": [["0x…", 1, 1, 40, [2]], …]},      node GUID, port, first LID, last LID, SLs
//! "partitions": [                                  declared partitions (only when there are; after max_vls)
//!   {"name": "alice", "pkey": "0x0001", "members": [["0x…", 1, "full"], …],
//!    "vms": [["db1", "full"], …],                 member VMs (only when there are)
//!    "class": {"name": "compute", "sls": [1], "vls": [1]}},    a tenant's class, when it has one
//!   …],
//! "max_vls": 4,                                   data VLs the SM operates (only when set)
//! "dftree_lanes": [[1, 2], …],                   dFtree's (fast, slow) SL pairs (only when there are)
//! "partitions": [ … ],
//! "vports": [                                      VFs of vSwitch hypervisors (only when there are)
//!   {"host": ["0x…", 1], "vf": 0, "guid": "0x…", "lid": 705, "vm": "db1", "pkeys": ["0x7fff", "0x8002"]},
//!   …],
//! "sm": [["0x…", 1], …],                         ports the SM runs on (only when declared)
//! "multicast": {"groups": [                        version 2 only, and only when there is
//!   {"mlid": "0xc000", "pkey": "0xffff", "sl": 0, "members": [["0x…", 1, "full"], …]},
//!   …], "mfts": [
//!   ["0x…", "0xc000", [0, 1, 5]],                  switch GUID, MLID, ports of its mask
//!   …]}
//! }
//! ```
//!
//! * GUIDs are hex strings (JSON numbers lose precision above 2^53, and real vendor GUIDs are
//!   above it); every reference to a node is by its node GUID, never by position.
//! * An LFT is one hex string, two digits per LID (`ff`: no entry).
//! * One item per line, sorted by GUID and port, so two states diff line by line.
//! * The `fingerprint` is written from the content and checked when read (a mismatch means
//!   the file was edited; remove the field to accept the edit).
//! * Unknown fields are refused (a typo never silently drops a table), except the top-level
//!   fields weft itself writes beside the state (`quality`, `routing`).

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use weft_fabric::Fingerprint;
use weft_fabric::{
    DlidSls, FabricState, JoinState, Lft, LidRange, McGroup, Membership, Mlid, PKey, Partition,
    PathSl, PortMask, PortState, Sl2VlRow, SlSet, SourceSls, SwitchSls, SwitchState, TrafficClass,
    ValidState, VlArb,
};
use weft_fabric::{
    Fabric, FabricBuilder, LinkState, Mtu, NodeKind, NodeSpec, PortCaps, PortRef, Role, Speed,
    Width,
};
use weft_fabric::{Guid, Lid, NodeId, PortNum, Sl};
use weft_fabric::{StateError, StateErrors};

mod reader;
pub use reader::read;

/// The `format` value of a state file.
pub const FORMAT: &str = "weft-state";
/// The schema version of a state without multicast (what every weft reads), and of a fabric
/// file ([`write_fabric`]).
pub const VERSION: u64 = 1;
/// The schema version of a state with multicast groups, MFTs or a switch's MulticastFDBCap:
/// version 1 plus the `multicast` field and the nodes' `multicast_fdb_cap`. This weft reads
/// both and writes version 1 whenever the state has no multicast, so those files are byte for
/// byte what earlier versions wrote; an older weft refuses a version-2 file by its version.
pub const VERSION_MULTICAST: u64 = 2;

/// The version [`write()`] gives `state`: [`VERSION_MULTICAST`] when it has multicast groups,
/// MFT entries or a switch with a known MulticastFDBCap, else [`VERSION`].
pub fn version_of(state: &FabricState) -> u64 {
    let caps = state
        .fabric
        .nodes()
        .iter()
        .any(|n| n.spec.multicast_fdb_cap.is_some());
    if caps || !state.multicast.is_empty() {
        VERSION_MULTICAST
    } else {
        VERSION
    }
}

/// A GUID written as a hex string (`"0x0002c90300a1b2c3"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GuidHex(pub Guid);

impl Serialize for GuidHex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        weft_fabric::guid_hex::serialize(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for GuidHex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<GuidHex, D::Error> {
        weft_fabric::guid_hex::deserialize(d).map(GuidHex)
    }
}

/// A 16-bit value written as a hex string (`"0xffff"`): P_Keys and MLIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hex16(u16);

impl Serialize for Hex16 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:#06x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Hex16 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Hex16, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Hex16;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a P_Key or MLID as a hex string such as \"0x8001\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Hex16, E> {
                v.strip_prefix("0x")
                    .filter(|h| !h.is_empty() && h.len() <= 4)
                    .and_then(|h| u16::from_str_radix(h, 16).ok())
                    .map(Hex16)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_str(V)
    }
}

/// A join state written as its names (`"full"`, `"full+send_only"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct JoinJson(JoinState);

impl Serialize for JoinJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for JoinJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JoinJson, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map(JoinJson).map_err(de::Error::custom)
    }
}

/// An SL set written as the list of its SLs (`[0, 2]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlList(SlSet);

impl Serialize for SlList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|sl| sl.0))
    }
}

impl<'de> Deserialize<'de> for SlList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SlList, D::Error> {
        let v: Vec<u8> = Vec::deserialize(d)?;
        let mut set = SlSet::default();
        for sl in v {
            if sl > 15 {
                return Err(de::Error::invalid_value(
                    de::Unexpected::Unsigned(u64::from(sl)),
                    &"an SL (0..=15)",
                ));
            }
            set.insert(Sl(sl));
        }
        Ok(SlList(set))
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeJson {
    name: String,
    kind: NodeKind,
    guid: GuidHex,
    ports: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system_guid: Option<GuidHex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    port_guids: Option<Vec<GuidHex>>,
    speed: Speed,
    width: Width,
    vl_cap: u8,
    mtu: Mtu,
    linear_fdb_cap: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    multicast_fdb_cap: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partition_cap: Option<u16>,
    vendor_id: u32,
    device_id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    level: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lid: Option<u16>,
    #[serde(default, skip_serializing_if = "Role::is_host")]
    role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rail: Option<u8>,
    #[serde(default, skip_serializing_if = "is_false")]
    down: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkJson {
    a: (GuidHex, u8),
    b: (GuidHex, u8),
    #[serde(default, skip_serializing_if = "is_up")]
    state: LinkState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    speed: Option<Speed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    width: Option<Width>,
}

fn is_up(s: &LinkState) -> bool {
    *s == LinkState::Up
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FabricJson {
    name: String,
    lmc: u8,
    nodes: Vec<NodeJson>,
    links: Vec<LinkJson>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchJson<L> {
    guid: GuidHex,
    lft: L,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sl2vl: Vec<Sl2VlRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sl2vl_all: Option<[u8; 16]>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PortJson {
    guid: GuidHex,
    port: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sl2vl: Option<[u8; 16]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vlarb: Option<VlArb>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pkeys: Option<Vec<Hex16>>,
}

/// One VF of a vSwitch hypervisor port.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct VportJson {
    host: (GuidHex, u8),
    vf: u8,
    guid: GuidHex,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lid: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pkeys: Option<Vec<Hex16>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathSlJson {
    default: SlList,
    #[serde(default)]
    by_dlid: Vec<(u16, u16, SlList)>,
    #[serde(default)]
    by_switch: Vec<(GuidHex, u16, u16, SlList)>,
    #[serde(default)]
    by_source: Vec<(GuidHex, u8, u16, u16, SlList)>,
}

/// A declared partition: name, partition number, members as (node GUID, port, membership).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionJson {
    name: String,
    pkey: Hex16,
    members: Vec<(GuidHex, u8, Membership)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    vms: Vec<(String, Membership)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    class: Option<ClassJson>,
}

/// A partition's traffic class: its name, SLs and VLs.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassJson {
    name: String,
    sls: SlList,
    vls: Vec<u8>,
}

/// Multicast groups and MFT entries (version 2).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MulticastJson {
    #[serde(default)]
    groups: Vec<GroupJson>,
    /// (switch GUID, MLID, ports) per non-empty entry.
    #[serde(default)]
    mfts: Vec<(GuidHex, Hex16, Vec<u8>)>,
}

/// A multicast group: MLID, P_Key, SL, members as (node GUID, port, join state).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupJson {
    mlid: Hex16,
    pkey: Hex16,
    sl: u8,
    members: Vec<(GuidHex, u8, JoinJson)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateJson {
    format: String,
    version: u64,
    #[serde(default)]
    fingerprint: Option<Fingerprint>,
    fabric: FabricJson,
    lids: Vec<(GuidHex, u8, u16)>,
    #[serde(default)]
    switches: Vec<SwitchJson<Lft>>,
    #[serde(default)]
    ports: Vec<PortJson>,
    path_sl: PathSlJson,
    #[serde(default)]
    partitions: Vec<PartitionJson>,
    #[serde(default)]
    vports: Vec<VportJson>,
    #[serde(default)]
    max_vls: Option<u8>,
    #[serde(default)]
    dftree_lanes: Vec<(u8, u8)>,
    #[serde(default)]
    sm: Vec<(GuidHex, u8)>,
    #[serde(default)]
    multicast: Option<MulticastJson>,
    /// Written by `weft build` beside the state; not part of it.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "the field is read only so that `deny_unknown_fields` accepts it; its value is ignored"
    )]
    quality: Option<de::IgnoredAny>,
    /// Written by `weft build` beside the state (the engine asked for and the one whose
    /// tables these are); not part of it.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "the field is read only so that `deny_unknown_fields` accepts it; its value is ignored"
    )]
    routing: Option<de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    version: Option<u64>,
}

fn node_json(n: &weft_fabric::Node) -> NodeJson {
    let s = &n.spec;
    NodeJson {
        name: s.name.clone(),
        kind: s.kind,
        guid: GuidHex(s.guid),
        ports: s.port_count,
        system_guid: s.system_guid.map(GuidHex),
        port_guids: s
            .port_guids
            .as_ref()
            .map(|v| v.iter().copied().map(GuidHex).collect()),
        speed: s.caps.speed,
        width: s.caps.width,
        vl_cap: s.caps.vl_cap,
        mtu: s.caps.mtu,
        linear_fdb_cap: s.linear_fdb_cap,
        multicast_fdb_cap: s.multicast_fdb_cap,
        partition_cap: s.partition_cap,
        vendor_id: s.vendor_id,
        device_id: s.device_id,
        level: s.level,
        model: s.model.clone(),
        lid: s.lid.map(|l| l.0),
        role: s.role,
        host: s.host.clone(),
        rail: s.rail,
        down: n.down,
    }
}

fn guid_of(f: &Fabric, n: NodeId) -> GuidHex {
    GuidHex(f.nodes().get(n.index()).map_or(Guid(0), |x| x.guid()))
}

/// Writes `items` as a JSON array, one compact item per line.
fn lines<W: Write, T: Serialize>(w: &mut W, items: impl IntoIterator<Item = T>) -> io::Result<()> {
    w.write_all(b"[")?;
    let mut first = true;
    for it in items {
        w.write_all(if first { b"\n  " } else { b",\n  " })?;
        first = false;
        serde_json::to_writer(&mut *w, &it)?;
    }
    w.write_all(if first { b"]" } else { b"\n]" })
}

fn fabric_body<W: Write>(f: &Fabric, w: &mut W) -> io::Result<()> {
    w.write_all(b"{\"name\": ")?;
    serde_json::to_writer(&mut *w, &f.name)?;
    write!(w, ", \"lmc\": {}, \"nodes\": ", f.lmc)?;
    lines(w, f.nodes().iter().map(node_json))?;
    w.write_all(b", \"links\": ")?;
    lines(
        w,
        f.links().iter().map(|l| LinkJson {
            a: (guid_of(f, l.a.node), l.a.port.0),
            b: (guid_of(f, l.b.node), l.b.port.0),
            state: l.state,
            speed: l.speed,
            width: l.width,
        }),
    )?;
    w.write_all(b"}")
}

/// The format of a fabric alone ([`write_fabric`]).
pub const FABRIC_FORMAT: &str = "weft-fabric";

/// Writes the fabric alone (what `weft export --format json` prints): a document of format
/// [`FABRIC_FORMAT`], version [`VERSION`], whose `fabric` is the `fabric` object of a state
/// file.
pub fn write_fabric<W: Write>(f: &Fabric, w: &mut W) -> io::Result<()> {
    write!(
        w,
        "{{\n\"format\": \"{FABRIC_FORMAT}\",\n\"version\": {VERSION},\n\"fabric\": "
    )?;
    fabric_body(f, w)?;
    w.write_all(b"\n}\n")
}

/// SHA-256 of `state` written as a state file (lowercase hex): two states with the same
/// digest have the same fabric, LIDs and tables, byte for byte.
pub fn digest(state: &FabricState) -> String {
    use sha2::{Digest, Sha256};
    struct Hashing(Sha256);
    impl Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut h = Hashing(Sha256::new());
    // Hashing cannot fail.
    let _ = write(state, &mut h, &[]);
    h.0.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `state` as schema v1, or v2 when it has multicast ([`version_of`]). `extra` are
/// further top-level fields, as (name, JSON text), written after the state (e.g. `weft
/// build`'s `quality`).
pub fn write<W: Write>(state: &FabricState, w: &mut W, extra: &[(&str, &str)]) -> io::Result<()> {
    let f = &state.fabric;
    write!(
        w,
        "{{\n\"format\": \"{FORMAT}\",\n\"version\": {},\n\"fingerprint\": ",
        version_of(state)
    )?;
    serde_json::to_writer(&mut *w, &Fingerprint::of(state))?;
    w.write_all(b",\n\"fabric\": ")?;
    fabric_body(f, w)?;
    write_tables(state, w)?;
    write_path_sl(state, w)?;
    write_optional(state, w)?;
    if !state.multicast.is_empty() {
        // Written only when there is (version 2), so states without multicast are v1 files
        // byte for byte as before.
        write_multicast(state, w)?;
    }
    for (name, json) in extra {
        w.write_all(b",\n")?;
        serde_json::to_writer(&mut *w, name)?;
        w.write_all(b": ")?;
        w.write_all(json.as_bytes())?;
    }
    w.write_all(b"\n}\n")
}

/// The `lids`, `switches` and `ports` fields, sorted by node GUID then port.
fn write_tables<W: Write>(state: &FabricState, w: &mut W) -> io::Result<()> {
    let f = &state.fabric;
    let mut lids: Vec<(GuidHex, u8, u16)> = state
        .lids
        .base
        .iter()
        .flat_map(|(&n, ports)| {
            let g = guid_of(f, n);
            ports.iter().map(move |(p, l)| (g, p.0, l.0))
        })
        .collect();
    lids.sort_unstable();
    w.write_all(b",\n\"lids\": ")?;
    lines(w, lids)?;
    let mut switches: Vec<(GuidHex, &SwitchState)> = state
        .switches
        .iter()
        .map(|(&n, s)| (guid_of(f, n), s))
        .collect();
    switches.sort_unstable_by_key(|(g, _)| *g);
    w.write_all(b",\n\"switches\": ")?;
    lines(
        w,
        switches.into_iter().map(|(guid, s)| SwitchJson {
            guid,
            lft: &s.lft,
            sl2vl: s.sl2vl.clone(),
            sl2vl_all: s.sl2vl_all,
        }),
    )?;
    let mut ports: Vec<(GuidHex, u8, &PortState)> = state
        .ports
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(r, p)| (guid_of(f, r.node), r.port.0, p))
        .collect();
    ports.sort_unstable_by_key(|(g, p, _)| (*g, *p));
    w.write_all(b",\n\"ports\": ")?;
    lines(
        w,
        ports.into_iter().map(|(guid, port, p)| PortJson {
            guid,
            port,
            sl2vl: p.sl2vl,
            vlarb: p.vlarb.clone(),
            pkeys: p
                .pkeys
                .as_ref()
                .map(|v| v.iter().map(|k| Hex16(k.0)).collect()),
        }),
    )?;
    Ok(())
}

/// The `path_sl` field: the default SLs, then by DLID, by switch (when used) and by source.
fn write_path_sl<W: Write>(state: &FabricState, w: &mut W) -> io::Result<()> {
    let f = &state.fabric;
    let p = &state.path_sl;
    w.write_all(b",\n\"path_sl\": {\"default\": ")?;
    serde_json::to_writer(&mut *w, &SlList(p.default))?;
    w.write_all(b", \"by_dlid\": ")?;
    lines(
        w,
        p.by_dlid
            .iter()
            .map(|e| (e.lids.lo.0, e.lids.hi.0, SlList(e.sls))),
    )?;
    if !p.by_switch.is_empty() {
        // Written only when used, so states without it read as before.
        w.write_all(b", \"by_switch\": ")?;
        let mut by_switch: Vec<(GuidHex, u16, u16, SlList)> = p
            .by_switch
            .iter()
            .map(|e| {
                (
                    guid_of(f, e.switch),
                    e.lids.lo.0,
                    e.lids.hi.0,
                    SlList(e.sls),
                )
            })
            .collect();
        by_switch.sort_unstable_by_key(|e| (e.0, e.1));
        lines(w, by_switch)?;
    }
    w.write_all(b", \"by_source\": ")?;
    let mut by_source: Vec<(GuidHex, u8, u16, u16, SlList)> = p
        .by_source
        .iter()
        .map(|e| {
            (
                guid_of(f, e.src.node),
                e.src.port.0,
                e.lids.lo.0,
                e.lids.hi.0,
                SlList(e.sls),
            )
        })
        .collect();
    by_source.sort_unstable_by_key(|e| (e.0, e.1, e.2));
    lines(w, by_source)?;
    w.write_all(b"}")
}

/// The fields written only when set (`max_vls`, `dftree_lanes`, `partitions`, `vports`, `sm`),
/// so states without them read and write as before.
fn write_optional<W: Write>(state: &FabricState, w: &mut W) -> io::Result<()> {
    let f = &state.fabric;
    if let Some(n) = state.max_vls {
        // Written only when set, so states without it read and write as before.
        write!(w, ",\n\"max_vls\": {n}")?;
    }
    if !state.dftree_lanes.is_empty() {
        // Written only when there are, so states without them read and write as before.
        w.write_all(b",\n\"dftree_lanes\": [")?;
        for (i, (fast, slow)) in state.dftree_lanes.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(w, "{sep}[{}, {}]", fast.0, slow.0)?;
        }
        w.write_all(b"]")?;
    }
    if !state.partitions.is_empty() {
        // Written only when declared, so states without them read as before.
        w.write_all(b",\n\"partitions\": ")?;
        lines(
            w,
            state.partitions.iter().map(|p| {
                let mut members: Vec<(GuidHex, u8, Membership)> = p
                    .members
                    .iter()
                    .map(|(r, &m)| (guid_of(f, r.node), r.port.0, m))
                    .collect();
                members.sort_unstable();
                PartitionJson {
                    name: p.name.clone(),
                    pkey: Hex16(p.pkey),
                    members,
                    vms: p.vms.iter().map(|(n, &m)| (n.clone(), m)).collect(),
                    class: p.class.as_ref().map(|c| ClassJson {
                        name: c.name.clone(),
                        sls: SlList(c.sls),
                        vls: (0..16u8).filter(|v| c.vls & (1 << v) != 0).collect(),
                    }),
                }
            }),
        )?;
    }
    if !state.lids.vports.is_empty() {
        // Written only when there are, so states without VMs read as before.
        w.write_all(b",\n\"vports\": ")?;
        let mut vports: Vec<VportJson> = state
            .lids
            .vports
            .iter()
            .map(|v| VportJson {
                host: (guid_of(f, v.host.node), v.host.port.0),
                vf: v.vf,
                guid: GuidHex(v.guid),
                lid: v.lid.map(|l| l.0),
                vm: v.vm.clone(),
                pkeys: v
                    .pkeys
                    .as_ref()
                    .map(|t| t.iter().map(|k| Hex16(k.0)).collect()),
            })
            .collect();
        vports.sort_by_key(|v| (v.host, v.vf));
        lines(w, vports)?;
    }
    if !state.sm.is_empty() {
        // Written only when declared, so states without it read and write as before.
        w.write_all(b",\n\"sm\": ")?;
        let mut sm: Vec<(GuidHex, u8)> = state
            .sm
            .iter()
            .map(|r| (guid_of(f, r.node), r.port.0))
            .collect();
        sm.sort_unstable();
        lines(w, sm)?;
    }
    Ok(())
}

/// The `multicast` field: groups by MLID with members by GUID and port, then one line per
/// non-empty MFT entry, by switch GUID and MLID.
fn write_multicast<W: Write>(state: &FabricState, w: &mut W) -> io::Result<()> {
    let f = &state.fabric;
    w.write_all(b",\n\"multicast\": {\"groups\": ")?;
    let mut groups: Vec<&McGroup> = state.multicast.groups.iter().collect();
    groups.sort_by_key(|g| g.mlid);
    lines(
        w,
        groups.into_iter().map(|g| {
            let mut members: Vec<(GuidHex, u8, JoinJson)> = g
                .members
                .iter()
                .map(|(r, &j)| (guid_of(f, r.node), r.port.0, JoinJson(j)))
                .collect();
            members.sort_unstable();
            GroupJson {
                mlid: Hex16(g.mlid.get()),
                pkey: Hex16(g.pkey),
                sl: g.sl.0,
                members,
            }
        }),
    )?;
    w.write_all(b", \"mfts\": ")?;
    let mut switches: Vec<(GuidHex, &weft_fabric::Mft)> = state
        .multicast
        .mfts
        .iter()
        .map(|(&n, t)| (guid_of(f, n), t))
        .collect();
    switches.sort_unstable_by_key(|(g, _)| *g);
    lines(
        w,
        switches.into_iter().flat_map(|(g, t)| {
            t.entries()
                .map(move |(m, mask)| (g, Hex16(m.get()), mask.iter().map(|p| p.0).collect()))
                .collect::<Vec<(GuidHex, Hex16, Vec<u8>)>>()
        }),
    )?;
    w.write_all(b"}")
}

/// What can be written as JSON in this module's formats: `state.json` for a state, the
/// `fabric` object alone for a fabric. Bring it into scope to call `.to_json()`.
pub trait ToJson {
    /// The JSON text.
    fn to_json(&self) -> String;
}

impl ToJson for Fabric {
    /// The fabric as a JSON document ([`write_fabric`]).
    fn to_json(&self) -> String {
        let mut v = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = write_fabric(self, &mut v);
        String::from_utf8(v).unwrap_or_default()
    }
}

impl ToJson for FabricState {
    /// The state as `state.json` (schema v1, v2 with multicast).
    fn to_json(&self) -> String {
        to_string(self)
    }
}

impl ToJson for ValidState {
    /// The validated state as `state.json`.
    fn to_json(&self) -> String {
        to_string(self.state())
    }
}

/// A state read from `state.json`. Bring it into scope to call `ValidState::from_json`.
pub trait FromJson: Sized {
    /// Reads `state.json` (schema v1, or v2 with multicast): parsed, built through the fabric
    /// builder, every GUID resolved, the fingerprint checked, validated. Every problem is
    /// reported.
    fn from_json(text: &str) -> Result<Self, StateErrors>;
}

impl FromJson for ValidState {
    fn from_json(text: &str) -> Result<ValidState, StateErrors> {
        read(text)
    }
}

/// [`write()`] into a string.
pub fn to_string(state: &FabricState) -> String {
    let mut v = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write(state, &mut v, &[]);
    String::from_utf8(v).unwrap_or_default()
}

#[cfg(test)]
mod tests;
