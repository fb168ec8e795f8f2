//! Reading unicast LFT dumps: OpenSM's `opensm-lfts.dump` (the `file` engine's input) and
//! `dump_fts`/`ibroute` output, the way OpenSM's `do_ucast_file_load()` reads them.
//!
//! * A switch header is a line starting `Unicast lids` that contains ` guid 0x<hex>`; the
//!   switch is found by node GUID. An unknown switch is a warning and its entries are skipped.
//! * An entry line is `0x<lid> <port>` (port in decimal), with anything after it ignored.
//! * Lines starting `#`, blank lines, `dump_fts` column headings and `N lids dumped` trailers
//!   are skipped; a `Multicast mlids` section is skipped up to the next unicast header.
//! * A port above the switch's port count is an error (OpenSM refuses it too); a LID outside
//!   the unicast range is an error; a LID given twice is a warning (the last one wins).

use super::error::{number, Collector, DumpError, DumpErrors};
use crate::{Fabric, Lft, Lid, NodeId, PortNum, MAX_UNICAST_LID};
use std::collections::BTreeMap;

/// Reads an LFT dump against `fabric`: the LFT of every switch it lists, and warnings.
pub fn parse_lfts(
    text: &str,
    fabric: &Fabric,
) -> Result<(BTreeMap<NodeId, Lft>, Vec<DumpError>), DumpErrors> {
    let mut c = Collector::new("lfts");
    let mut out: BTreeMap<NodeId, Lft> = BTreeMap::new();
    // The switch being read: Some(Some(id)), an unknown one: Some(None), none yet: None.
    let mut current: Option<Option<NodeId>> = None;
    let mut seen: BTreeMap<(NodeId, u16), usize> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("Unicast lids") {
            let guid = line
                .split_once(" guid ")
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|g| g.strip_prefix("0x"))
                .and_then(|g| u64::from_str_radix(g, 16).ok());
            match guid {
                None => {
                    c.error(line_no, "a switch header without ` guid 0x…`");
                    current = Some(None);
                }
                Some(g) => match fabric.find_guid(crate::Guid(g)) {
                    Some(id) if fabric.node(id).is_switch() => {
                        out.entry(id).or_default();
                        current = Some(Some(id));
                    }
                    Some(id) => {
                        c.error(
                            line_no,
                            format!(
                                "`{}` (GUID {g:#018x}) is not a switch",
                                fabric.node(id).name()
                            ),
                        );
                        current = Some(None);
                    }
                    None => {
                        c.warn(line_no, format!("no switch with GUID {g:#018x} in the topology; its entries are skipped"));
                        current = Some(None);
                    }
                },
            }
            continue;
        }
        if line.starts_with("Multicast mlids") {
            current = Some(None);
            continue;
        }
        if !line.starts_with("0x") {
            // dump_fts headings ("Lid  Out   Destination", "Port     Info") and trailers.
            let skippable = line.ends_with("lids dumped")
                || line.starts_with("Lid")
                || line.starts_with("Port")
                || line.starts_with("Switch");
            if !skippable {
                c.error(line_no, format!("not an LFT line: `{line}`"));
            }
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(lid_s), Some(port_s)) = (words.next(), words.next()) else {
            c.error(
                line_no,
                format!("an entry needs a LID and a port: `{line}`"),
            );
            continue;
        };
        let Some(sw) = current else {
            c.error(line_no, "an entry before any switch header");
            continue;
        };
        let Some(sw) = sw else { continue };
        let lid = match number(lid_s) {
            Some(l) if (1..=u64::from(MAX_UNICAST_LID)).contains(&l) => l as u16,
            _ => {
                c.error(line_no, format!("`{lid_s}` is not a unicast LID"));
                continue;
            }
        };
        let port = match port_s.parse::<u16>() {
            Ok(p) => p,
            Err(_) => {
                c.error(line_no, format!("`{port_s}` is not a port number"));
                continue;
            }
        };
        let node = fabric.node(sw);
        if port > u16::from(node.spec.port_count) {
            if port != 255 {
                c.error(
                    line_no,
                    format!(
                        "`{}` has no port {port} (it has {})",
                        node.name(),
                        node.spec.port_count
                    ),
                );
            }
            continue;
        }
        if let Some(prev) = seen.insert((sw, lid), line_no) {
            c.warn(line_no, format!("LID {lid:#06x} of `{}` is given again (first on line {prev}); the last one wins", node.name()));
        }
        if let Some(lft) = out.get_mut(&sw) {
            lft.set(Lid(lid), PortNum(port as u8));
        }
    }
    c.finish(out)
}
