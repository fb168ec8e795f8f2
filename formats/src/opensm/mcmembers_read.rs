//! Reading multicast groups from `saquery` output (infiniband-diags' `saquery.c`): records of
//! `key....value` lines, each opened by its title line. Three record kinds carry a part each;
//! one text may hold any mix of them (e.g. `saquery -g` and `saquery -m` output one after the
//! other):
//!
//! * `MCMember Record dump:` (`saquery MCMR`): everything — `mlid`, `pkey`, `SL`, `PortGid`,
//!   `JoinState`.
//! * `MCMemberRecord group dump:` (`saquery -g`): a group's `Mlid`, `pkey` and `SL`.
//! * `MCMemberRecord member dump:` (`saquery -m`): a member's `Mlid`, `PortGid` and
//!   `ScopeState` (scope in the high nibble, JoinState in the low one).
//!
//! A record with port GID `::` is a group's own (OpenSM's answer for a group without members,
//! and for every group to a query without its SM_Key) and adds no member; `assemble` refuses
//! a group left without members whose MLID the MFTs forward. A member is found by its port GID's interface ID, the port GUID (a switch's port GUID is
//! its node GUID; a switch member is its port 0). Every group must end with a P_Key and an SL
//! (records of the first or second kind); two records giving one MLID different ones are an
//! error naming both lines. A port GUID not in the topology, a record without an MLID and a
//! line of no known shape are errors with their line; `saquery -m MLID` output, whose lines
//! have no MLID, is refused as such. MTU, rate, Q_Key, MGID and the rest are read past.

use super::error::{number, Collector, DumpError, DumpErrors};
use std::collections::BTreeMap;
use weft_fabric::{Fabric, JoinState, McGroup, Mlid, PortRef, Sl};

/// One record as read: its first line and the fields weft uses.
#[derive(Default)]
struct Record {
    line: usize,
    mlid: Option<u64>,
    pkey: Option<u64>,
    sl: Option<u64>,
    port_gid: Option<(usize, String)>,
    join: Option<u64>,
}

/// A group being put together: its P_Key and SL with the line each came from.
#[derive(Default)]
struct Partial {
    first_line: usize,
    pkey: Option<(u16, usize)>,
    sl: Option<(u8, usize)>,
    members: BTreeMap<PortRef, JoinState>,
}

/// `key....value`: the key (letters, digits, `_`), then the value after the run of dots.
fn field(line: &str) -> Option<(&str, &str)> {
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let (key, rest) = line.split_at(end);
    let value = rest.strip_prefix("..")?.trim_start_matches('.');
    (!key.is_empty()).then_some((key, value.trim()))
}

/// The records of `saquery` multicast output, each from its title line, with the fields it
/// gives; lines that are not fields of a record are errors in `c`.
fn records(text: &str, c: &mut Collector) -> Vec<Record> {
    let mut records: Vec<Record> = Vec::new();
    for (k, raw) in text.split('\n').enumerate() {
        let line_no = k + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if matches!(
            line,
            "MCMember Record dump:" | "MCMemberRecord group dump:" | "MCMemberRecord member dump:"
        ) {
            records.push(Record {
                line: line_no,
                ..Record::default()
            });
            continue;
        }
        let Some((key, value)) = field(line) else {
            c.error(line_no, format!("not a multicast record line: `{line}`"));
            continue;
        };
        let Some(rec) = records.last_mut() else {
            let what = if key == "PortGid" {
                "a member line outside a record: `saquery -m MLID` prints no MLID; use `saquery -m` or `saquery MCMR`"
            } else {
                "a field before any record title (`MCMember Record dump:` …)"
            };
            c.error(line_no, what);
            continue;
        };
        let num = |c: &mut Collector| {
            let n = number(value);
            if n.is_none() {
                c.error(line_no, format!("{key} `{value}` is not a number"));
            }
            n
        };
        match key.to_ascii_lowercase().as_str() {
            "mlid" => rec.mlid = num(c),
            "pkey" => rec.pkey = num(c),
            "sl" => rec.sl = num(c),
            "joinstate" => rec.join = num(c),
            "scopestate" => rec.join = num(c).map(|s| s & 0xf),
            "portgid" => {
                // `saquery -m` appends the node's description in parentheses only with an
                // MLID argument; the GID is the first word.
                let gid = value.split_whitespace().next().unwrap_or("").to_owned();
                rec.port_gid = Some((line_no, gid));
            }
            _ => {}
        }
    }
    records
}

/// Reads `saquery` multicast output against `fabric`: the groups, sorted by MLID, and
/// warnings.
pub fn parse_mcmembers(
    text: &str,
    fabric: &Fabric,
) -> Result<(Vec<McGroup>, Vec<DumpError>), DumpErrors> {
    let mut c = Collector::new("mcmembers");
    let records = records(text, &mut c);
    let mut groups: BTreeMap<Mlid, Partial> = BTreeMap::new();
    for rec in records {
        let Some(mlid) = rec
            .mlid
            .and_then(|m| u16::try_from(m).ok())
            .and_then(Mlid::new)
        else {
            c.error(
                rec.line,
                match rec.mlid {
                    None => "a record without an MLID".to_owned(),
                    Some(m) => format!("MLID {m:#x} is not a multicast LID (0xc000..=0xfffe)"),
                },
            );
            continue;
        };
        let g = groups.entry(mlid).or_insert_with(|| Partial {
            first_line: rec.line,
            ..Partial::default()
        });
        if let Some(p) = rec.pkey {
            match u16::try_from(p) {
                Ok(p) => agree(&mut c, &mut g.pkey, p, rec.line, mlid, "P_Key"),
                Err(_) => c.error(rec.line, format!("P_Key {p:#x} is not 16 bits")),
            }
        }
        if let Some(s) = rec.sl {
            match u8::try_from(s).ok().filter(|s| *s <= 15) {
                Some(s) => agree(&mut c, &mut g.sl, s, rec.line, mlid, "SL"),
                None => c.error(rec.line, format!("SL {s} is out of range (0..=15)")),
            }
        }
        let Some((gid_line, gid)) = rec.port_gid else {
            continue;
        };
        let Ok(addr) = gid.parse::<std::net::Ipv6Addr>() else {
            c.error(gid_line, format!("`{gid}` is not a port GID"));
            continue;
        };
        if addr.is_unspecified() {
            // OpenSM answers for a group without members with one record of port GID `::`
            // and join state 0: the group, no member.
            continue;
        }
        let guid = weft_fabric::Guid((u128::from(addr) & u128::from(u64::MAX)) as u64);
        let port = match fabric.find_port_guid(guid) {
            Some((n, _)) if fabric.node(n).is_switch() => PortRef::new(n, 0),
            Some((n, p)) => PortRef::new(n, p.0),
            None => match fabric.find_guid(guid) {
                Some(n) if fabric.node(n).is_switch() => PortRef::new(n, 0),
                _ => {
                    c.error(
                        gid_line,
                        format!("no port with GUID {guid} in the topology (port GID `{gid}`)"),
                    );
                    continue;
                }
            },
        };
        let Some(join) = rec
            .join
            .and_then(|j| u8::try_from(j).ok())
            .and_then(JoinState::from_bits)
        else {
            c.error(
                rec.line,
                match rec.join {
                    None => {
                        "a member without a join state (`JoinState` or `ScopeState`)".to_owned()
                    }
                    Some(j) => format!("join state {j:#x} is not one (bits 0x1..=0xf)"),
                },
            );
            continue;
        };
        g.members
            .entry(port)
            .and_modify(|j| *j = j.union(join))
            .or_insert(join);
    }
    let mut out = Vec::new();
    for (mlid, g) in groups {
        match (g.pkey, g.sl) {
            (Some((pkey, _)), Some((sl, _))) => out.push(McGroup {
                mlid,
                pkey,
                sl: Sl(sl),
                members: g.members,
            }),
            _ => c.error(
                g.first_line,
                format!(
                    "group {mlid} has no {}: give `saquery -g` or `saquery MCMR` output too",
                    if g.pkey.is_none() && g.sl.is_none() {
                        "P_Key and SL"
                    } else if g.pkey.is_none() {
                        "P_Key"
                    } else {
                        "SL"
                    }
                ),
            ),
        }
    }
    // Records are checked after every line was read: report in line order.
    c.errors.sort_by_key(|e| e.line);
    c.finish(out)
}

/// Records `value` (from `line`) for a group's field, or an error when an earlier record gave
/// another value.
fn agree<T: PartialEq + Copy + std::fmt::LowerHex>(
    c: &mut Collector,
    slot: &mut Option<(T, usize)>,
    value: T,
    line: usize,
    mlid: Mlid,
    what: &str,
) {
    match *slot {
        None => *slot = Some((value, line)),
        Some((v, _)) if v == value => {}
        Some((v, first)) => c.error(
            line,
            format!("group {mlid} has {what} {value:#x} here but {v:#x} on line {first}"),
        ),
    }
}
