//! Reading multicast forwarding tables in the three forms tools print them, detected per
//! switch section (one file may mix them):
//!
//! * OpenSM's `opensm.mcfdbs` (`osm_dump.c`, written with OpenSM's routing log or
//!   `--dump_files_dir`): a `Switch 0x<guid>` line, a `LID    : Out Port(s)` heading, then per
//!   MLID with ports `0xC000 : 0x001  0x002 ` (MLID and ports in hex). A switch without an
//!   entry is not listed.
//! * `ibroute -M`, `dump_fts -M` and `dump_mfts` (infiniband-diags): a header
//!   `Multicast mlids [0xc000-0xc01f] of switch Lid 2 guid 0x<guid> (<name>):`, a ports
//!   ruler (`     Ports: 0 1 2 …`, a tens row above it when the switch has more than 9
//!   ports), ` MLid`, then per MLID `0xc000      x   x ` — an `x` in column `12 + 2·port` for
//!   each port in the mask — and a `N valid mlids dumped` trailer. With `-b` (brief) the
//!   heading is ` MLid       Port Mask` and each entry the masks of positions 0, 1, … as four
//!   hex digits each (`0xc000      0006`). With `-v`, `Switch multicast mlid capability is N
//!   top is 0x…` gives the switch's MulticastFDBCap.
//!
//! Switches are found by node GUID; an unknown GUID is a warning and its entries are skipped,
//! a node that is not a switch an error. An MLID outside 0xC000..=0xFFFE, a port the switch
//! does not have and a line of no known shape are errors with their line; an MLID given twice
//! for one switch is a warning (the last one wins). Unicast sections (`Unicast lids`, the
//! LFT reader's) and `dump_mfts`'s deprecation notice are skipped; captured `ibwarn:` lines of
//! standard error are skipped with a warning.

use super::error::{number, Collector, DumpError, DumpErrors};
use std::collections::BTreeMap;
use weft_fabric::{Fabric, Mft, Mlid, NodeId, PortMask, PortNum};

/// What an MFT dump gives: each listed switch's table, and the MulticastFDBCap of those whose
/// capability line (`ibroute -M -v`) was printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MftTables {
    /// Tables by switch (a listed switch without entries has an empty table).
    pub tables: BTreeMap<NodeId, Mft>,
    /// MulticastFDBCap by switch, where the dump says.
    pub fdb_caps: BTreeMap<NodeId, u16>,
}

/// How the entries of the current section are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `0xC000 : 0x001  0x002 ` (OpenSM).
    Opensm,
    /// `0xc000      x   x ` (ibroute).
    Marks,
    /// `0xc000      0006` (ibroute -b).
    Brief,
    /// A unicast section: skipped.
    Unicast,
}

/// The column of port 0's mark in an `ibroute -M` entry (`0x%04x` and six spaces).
const MARK_COLUMN: usize = 12;

struct Reader<'f> {
    fabric: &'f Fabric,
    c: Collector,
    out: MftTables,
    /// The switch of the current section: `None` before any header, `Some(None)` for one
    /// skipped (unknown or refused).
    switch: Option<Option<NodeId>>,
    shape: Shape,
    /// Line of each (switch, MLID) entry read, for "given again".
    seen: BTreeMap<(NodeId, Mlid), usize>,
    /// Line of each switch's header, for "listed again".
    headers: BTreeMap<NodeId, usize>,
}

impl Reader<'_> {
    fn header(&mut self, line_no: usize, guid: Option<&str>, shape: Shape) {
        self.shape = shape;
        let Some(g) = guid.and_then(|g| g.parse::<weft_fabric::Guid>().ok()) else {
            self.c.error(line_no, "a switch header without its GUID");
            self.switch = Some(None);
            return;
        };
        self.switch = Some(match self.fabric.find_guid(g) {
            Some(id) if self.fabric.node(id).is_switch() => {
                if let Some(first) = self.headers.insert(id, line_no) {
                    self.c.warn(
                        line_no,
                        format!(
                            "`{}` is listed again (first on line {first}); its entries here win",
                            self.fabric.node(id).name()
                        ),
                    );
                }
                self.out.tables.entry(id).or_default();
                Some(id)
            }
            Some(id) => {
                self.c.error(
                    line_no,
                    format!(
                        "`{}` (GUID {g}) is not a switch",
                        self.fabric.node(id).name()
                    ),
                );
                None
            }
            None => {
                self.c.warn(
                    line_no,
                    format!("no switch with GUID {g} in the topology; its entries are skipped"),
                );
                None
            }
        });
    }

    fn entry(&mut self, line_no: usize, raw: &str) {
        let line = raw.trim_end();
        let Some(sw) = self.switch else {
            self.c
                .error(line_no, "an MFT entry before any switch header");
            return;
        };
        let Some(sw) = sw else { return };
        let (mlid_s, rest) = line
            .trim_start()
            .split_once(|c: char| c.is_ascii_whitespace())
            .unwrap_or((line.trim_start(), ""));
        let Some(mlid) = number(mlid_s)
            .and_then(|m| u16::try_from(m).ok())
            .and_then(Mlid::new)
        else {
            self.c.error(
                line_no,
                format!("`{mlid_s}` is not a multicast LID (0xc000..=0xfffe)"),
            );
            return;
        };
        let mask = match self.shape {
            Shape::Opensm => self.opensm_ports(line_no, rest),
            Shape::Brief => self.brief_ports(line_no, rest),
            Shape::Marks => self.marked_ports(line_no, line),
            Shape::Unicast => return,
        };
        let Some(mask) = mask else { return };
        let node = self.fabric.node(sw);
        let beyond: Vec<String> = mask
            .iter()
            .filter(|p| p.0 > node.spec.port_count)
            .map(|p| p.0.to_string())
            .collect();
        if !beyond.is_empty() {
            self.c.error(
                line_no,
                format!(
                    "`{}` has no port {} (it has ports 0..={})",
                    node.name(),
                    beyond.join(", "),
                    node.spec.port_count
                ),
            );
            return;
        }
        if let Some(first) = self.seen.insert((sw, mlid), line_no) {
            self.c.warn(
                line_no,
                format!(
                    "MLID {mlid} of `{}` is given again (first on line {first}); the last one wins",
                    node.name()
                ),
            );
        }
        self.out.tables.entry(sw).or_default().set(mlid, mask);
    }

    /// `: 0x001  0x002 ` after the MLID.
    fn opensm_ports(&mut self, line_no: usize, rest: &str) -> Option<PortMask> {
        let Some(ports) = rest.trim_start().strip_prefix(':') else {
            self.c
                .error(line_no, "an entry without ` : ` after its MLID");
            return None;
        };
        let mut mask = PortMask::EMPTY;
        for w in ports.split_ascii_whitespace() {
            match number(w).filter(|p| *p <= 255 && w.starts_with("0x")) {
                Some(p) => mask.insert(PortNum(p as u8)),
                None => {
                    self.c.error(
                        line_no,
                        format!("`{w}` is not a port (`0x` and hex digits)"),
                    );
                    return None;
                }
            }
        }
        Some(mask)
    }

    /// Four hex digits per position after the MLID.
    fn brief_ports(&mut self, line_no: usize, rest: &str) -> Option<PortMask> {
        let digits = rest.trim();
        let ok = !digits.is_empty()
            && digits.len().is_multiple_of(4)
            && digits.len() <= 64
            && digits.bytes().all(|b| b.is_ascii_hexdigit());
        if !ok {
            self.c.error(
                line_no,
                format!("`{digits}` is not a port mask (four hex digits per 16 ports)"),
            );
            return None;
        }
        let mut mask = PortMask::EMPTY;
        for (pos, chunk) in digits.as_bytes().chunks(4).enumerate() {
            let bits = std::str::from_utf8(chunk)
                .ok()
                .and_then(|t| u16::from_str_radix(t, 16).ok())
                .unwrap_or(0);
            mask.set_position(pos as u8, bits);
        }
        Some(mask)
    }

    /// An `x` in column `12 + 2·port`, spaces elsewhere.
    fn marked_ports(&mut self, line_no: usize, line: &str) -> Option<PortMask> {
        let marks = line.get(MARK_COLUMN..).unwrap_or("");
        let gap_ok = line
            .get(6..MARK_COLUMN.min(line.len()))
            .is_some_and(|g| g.bytes().all(|b| b == b' '));
        let mut mask = PortMask::EMPTY;
        for (k, b) in marks.bytes().enumerate() {
            match (b, k % 2) {
                (b' ', _) => {}
                (b'x', 0) if k / 2 <= 255 => mask.insert(PortNum((k / 2) as u8)),
                _ => {
                    self.c.error(
                        line_no,
                        format!(
                            "`{}` at column {} is not a port mark (an `x` under a port of the `Ports:` ruler)",
                            char::from(b),
                            MARK_COLUMN + k + 1
                        ),
                    );
                    return None;
                }
            }
        }
        if !gap_ok {
            self.c.error(
                line_no,
                "the marks do not line up with the `Ports:` ruler (was the spacing changed?)",
            );
            return None;
        }
        Some(mask)
    }
}

/// Reads an MFT dump (`opensm.mcfdbs`, `ibroute -M`, `dump_fts -M`, `dump_mfts`) against
/// `fabric`: every listed switch's table, the MulticastFDBCaps printed, and warnings.
pub fn parse_mfts(text: &str, fabric: &Fabric) -> Result<(MftTables, Vec<DumpError>), DumpErrors> {
    let mut r = Reader {
        fabric,
        c: Collector::new("mfts"),
        out: MftTables::default(),
        switch: None,
        shape: Shape::Opensm,
        seen: BTreeMap::new(),
        headers: BTreeMap::new(),
    };
    for (k, raw) in text.split('\n').enumerate() {
        let line_no = k + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("ibwarn:") {
            r.c.warn(
                line_no,
                "a captured `ibwarn:` line of standard error, skipped",
            );
            continue;
        }
        if let Some(rest) = line.strip_prefix("Switch 0x") {
            if rest.bytes().all(|b| b.is_ascii_hexdigit()) {
                r.header(line_no, line.strip_prefix("Switch "), Shape::Opensm);
                continue;
            }
        }
        if line.starts_with("Multicast mlids") {
            let guid = line
                .split_once(" guid ")
                .and_then(|(_, rest)| rest.split_whitespace().next());
            r.header(line_no, guid, Shape::Marks);
            continue;
        }
        if line.starts_with("Unicast lids") {
            r.switch = Some(None);
            r.shape = Shape::Unicast;
            continue;
        }
        if r.shape == Shape::Unicast {
            continue;
        }
        if let Some(rest) = line.strip_prefix("Switch multicast mlid capability is ") {
            let cap = rest
                .split_whitespace()
                .next()
                .and_then(|c| c.parse::<u16>().ok());
            match (cap, r.switch) {
                (Some(cap), Some(Some(sw))) => {
                    r.out.fdb_caps.insert(sw, cap);
                }
                (Some(_), Some(None)) => {}
                _ => {
                    r.c.error(line_no, format!("not a capability line: `{line}`"))
                }
            }
            continue;
        }
        if line == "MLid       Port Mask" {
            r.shape = Shape::Brief;
            continue;
        }
        let heading = line.starts_with("LID") && line.contains("Out Port")
            || line.starts_with("Ports:")
            || line == "MLid"
            || line.ends_with("mlids dumped")
            || line.starts_with("*** WARNING ***")
            || line.bytes().all(|b| b.is_ascii_digit() || b == b' ');
        if heading {
            continue;
        }
        if line.starts_with("0x") || line.starts_with("0X") {
            r.entry(line_no, raw);
            continue;
        }
        r.c.error(line_no, format!("not an MFT line: `{line}`"));
    }
    r.c.finish(r.out)
}
