//! OpenSM's partition configuration (`partitions.conf`, `opensm -P FILE`), written from the
//! P_Key tables of a state.
//!
//! Grammar (opensm(8), PARTITION CONFIGURATION; parser `osm_prtn_config.c`): a partition is
//! `Name=PKey : member, member, … ;`, a member `PortGUID[=full|limited|both]`, and a definition
//! may run over several lines up to its `;` (OpenSM reads lines of under 4 096 characters, so
//! members are written one per line). OpenSM keeps the low 15 bits of a P_Key and sets the
//! membership bit per member; each partition is written with its full key, membership bit
//! set (`alice=0x8001`), as users declare it.
//!
//! A partition's name is its tenant's (or shared section's), as declared, so OpenSM's logs
//! name what the user wrote. OpenSM's parser ends a name at `=`, `,` or `:`, a definition at
//! `;` and the line's code at `#`, trims spaces, tabs and newlines around it, and keeps 31
//! bytes of it (`osm_prtn_t::name` is 32 with its NUL); a name it cannot carry is mangled
//! (`conf_name`). OpenSM keys partitions by P_Key: names only label them.
//!
//! How OpenSM applies the members (`osm_prtn.c`, `osm_prtn_config.c`): before reading the file
//! it puts every port in the default partition as a limited member and its own port as a full
//! one; then each member line adds its port, and — with `allow_both_pkeys FALSE`, OpenSM's
//! default — removes it from the partition first, so the *last* line naming a port decides its
//! membership (`both` then means full only). `SELF` names the port OpenSM runs on.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use weft_fabric::{FabricState, Guid, NodeKind, PKey, PortNum, PortRef};

/// The default partition's number.
const DEFAULT: u16 = 0x7fff;

/// The longest partition name OpenSM keeps, in bytes.
const NAME_MAX: usize = 31;

/// Partition `base`'s name in `partitions.conf`: `name` (a tenant's, as declared) where
/// OpenSM's parser takes it whole — printable ASCII without `#`, `:`, `,`, `=` or `;`, at most
/// 31 bytes, not a name `taken` already (`Default`, an earlier partition's); otherwise each
/// byte it cannot take becomes `_`, the name is cut to 31 bytes, and a name left empty is
/// `weft_<key>`, one taken is suffixed `_<key>` (the low 15 bits in hex, unique per
/// partition).
fn conf_name(name: &str, base: u16, taken: &BTreeSet<String>) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && !matches!(c, '#' | ':' | ',' | '=' | ';') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Every character is ASCII now: any byte is a boundary.
    out.truncate(NAME_MAX);
    if out.is_empty() {
        return format!("weft_{base:04x}");
    }
    if taken.contains(&out) {
        out.truncate(NAME_MAX - 5);
        let _ = write!(out, "_{base:04x}");
    }
    out
}

/// How a port belongs to a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Membership {
    Full,
    Limited,
    Both,
}

impl Membership {
    fn word(self) -> &'static str {
        match self {
            Membership::Full => "full",
            Membership::Limited => "limited",
            Membership::Both => "both",
        }
    }

    fn with(self, full: bool) -> Membership {
        match (self, full) {
            (Membership::Full, true) | (Membership::Limited, false) => self,
            _ => Membership::Both,
        }
    }
}

/// `partitions.conf` for `state`'s P_Key tables, `None` when no port has one (OpenSM's own
/// default then applies: every port a full member of the default partition).
///
/// Members are the ports that get P_Keys from the SM: a switch's port 0 and the ports of end
/// nodes, live ones only. A port with a table belongs to each partition its entries name
/// (full, limited, or both when it holds both — which OpenSM gives only with
/// `allow_both_pkeys TRUE`, as a comment in the file says); a port without a table is a full
/// member of the default partition `0x7fff`, as the IBA default table (`0xffff`) makes it.
/// The default partition is always written, first, its members by port GUID and then
/// `SELF=full` *last*: whatever port OpenSM runs on ends up a full member of it (a later line
/// wins), so every end port, a limited member, still reaches the SA — the ports the state
/// says the SM runs on ([`FabricState::sm`]) hold `0xffff` and are listed full already. The
/// other partitions follow by P_Key, each named as declared ([`FabricState::partitions`],
/// through `conf_name`) with its full key (`alice=0x8001`), their members by port GUID. The
/// VFs of vSwitch hypervisors are members by their own GUIDs, as their P_Key tables say.
pub fn write_partitions(state: &FabricState) -> Option<String> {
    if state.ports.values().all(|p| p.pkeys.is_none()) {
        return None;
    }
    let f = &state.fabric;
    let mut parts: BTreeMap<u16, BTreeMap<Guid, Membership>> = BTreeMap::new();
    parts.entry(DEFAULT).or_default();
    for id in f.node_ids() {
        let node = f.node(id);
        if node.down {
            continue;
        }
        let ports: Vec<(PortNum, Guid)> = match node.kind() {
            NodeKind::Switch => vec![(PortNum(0), node.guid())],
            _ => node.ports.iter().map(|p| (p.num, p.guid)).collect(),
        };
        // The VFs behind this node's ports, by their own GUIDs.
        let vfs = state
            .lids
            .vports
            .iter()
            .filter(|v| v.host.node == id)
            .map(|v| (v.guid, v.pkeys.as_deref()));
        let physical = ports.into_iter().map(|(num, guid)| {
            let table = state
                .ports
                .get(&PortRef {
                    node: id,
                    port: num,
                })
                .and_then(|p| p.pkeys.as_deref());
            (guid, table)
        });
        for (guid, table) in physical.collect::<Vec<_>>().into_iter().chain(vfs) {
            let keys: &[PKey] = table.unwrap_or(&[PKey::DEFAULT]);
            for k in keys.iter().filter(|k| k.base() != 0) {
                let members = parts.entry(k.base()).or_default();
                let m = match members.get(&guid) {
                    Some(m) => m.with(k.is_full()),
                    None if k.is_full() => Membership::Full,
                    None => Membership::Limited,
                };
                members.insert(guid, m);
            }
        }
    }
    let mut out = String::from(
        "# OpenSM partitions (opensm -P) from weft's P_Key tables: one partition per P_Key,\n\
         # members by port GUID. The last line naming a port decides its membership, so the\n\
         # SM's own port (SELF) is listed last in the default partition, as a full member.\n",
    );
    if parts
        .values()
        .any(|m| m.values().any(|&m| m == Membership::Both))
    {
        out.push_str(
            "# Ports listed `=both` hold a partition's full and limited keys: OpenSM gives them\n\
             # both only with `allow_both_pkeys TRUE` in opensm.conf (else the full key only).\n",
        );
    }
    let default = parts.remove(&DEFAULT).unwrap_or_default();
    // The names the partitions were declared with; keys no declaration names (tables someone
    // else wrote) are `weft_<key>`.
    let declared: BTreeMap<u16, &str> = state
        .partitions
        .iter()
        .map(|p| (p.pkey & 0x7fff, p.name.as_str()))
        .collect();
    let mut taken = BTreeSet::from(["Default".to_owned()]);
    for (base, members) in std::iter::once((&DEFAULT, &default)).chain(parts.iter()) {
        if *base == DEFAULT {
            let _ = write!(out, "Default={DEFAULT:#06x} :");
        } else {
            let name = match declared.get(base) {
                Some(n) => conf_name(n, *base, &taken),
                None => conf_name("", *base, &taken),
            };
            let _ = write!(out, "{name}={:#06x} :", base | 0x8000);
            taken.insert(name);
        }
        let mut first = true;
        for (guid, m) in members {
            let sep = if first { "" } else { "," };
            first = false;
            let _ = write!(out, "{sep}\n    {guid}={}", m.word());
        }
        if *base == DEFAULT {
            let sep = if first { "" } else { "," };
            let _ = write!(out, "{sep}\n    SELF=full");
        }
        out.push_str(" ;\n");
    }
    Some(out)
}
