//! Reading unicast LFT dumps: OpenSM's `opensm-lfts.dump` (the `file` engine's input),
//! `dump_fts`/`ibroute` output, and `dump_lfts` output (the same, plus a deprecation warning),
//! the way OpenSM's `do_ucast_file_load()` reads them.
//!
//! * A switch header is a line starting `Unicast lids` that contains ` guid 0x<hex>`; the
//!   switch is found by node GUID. An unknown switch is a warning and its entries are skipped.
//! * An entry line is `0x<lid> <port>` (port in decimal), with anything after it ignored.
//! * Lines starting `#`, blank lines, `dump_fts` column headings, `N lids dumped` trailers and
//!   `dump_lfts`'s `*** WARNING ***` lines are skipped; a `Multicast mlids` section is skipped
//!   up to the next unicast header.
//! * A port above the switch's port count is an error (OpenSM refuses it too); a LID outside
//!   the unicast range is an error; a LID given twice is a warning (the last one wins).
//!
//! Large dumps (an 11 664-node fabric's is ~1 GB with comments) are cut at their switch
//! headers and the sections read in parallel; results and problems are merged in file order,
//! so they do not depend on the thread count.

use super::error::{Collector, DumpError, DumpErrors};
use rayon::prelude::*;
use std::collections::BTreeMap;
use weft_fabric::{Fabric, Lft, NodeId, MAX_UNICAST_LID};

/// Below this size a dump is read on one thread.
const PARALLEL_FROM: usize = 1 << 20;

/// One section of the file: from a header line (or the start) to the next.
struct Section<'a> {
    text: &'a str,
    /// 1-based line number of its first line.
    first_line: usize,
}

/// What one section gave.
struct Read {
    /// The switch it is for: `Some(Some(id))`, an unknown or refused one `Some(None)`, no
    /// header (text before the first one) `None`.
    switch: Option<Option<NodeId>>,
    lft: Lft,
    errors: Vec<DumpError>,
    warnings: Vec<DumpError>,
}

/// Cuts `text` before every line starting `Unicast lids` or `Multicast mlids` (headers start
/// their line, as OpenSM and `dump_fts` write them; an indented one is read inside the section
/// before it, where it is still recognised).
fn sections(text: &str) -> Vec<Section<'_>> {
    let mut starts: Vec<usize> = Vec::new();
    for pat in ["\nUnicast lids", "\nMulticast mlids"] {
        starts.extend(text.match_indices(pat).map(|(i, _)| i + 1));
    }
    starts.sort_unstable();
    starts.insert(0, 0);
    starts.push(text.len());
    let pieces: Vec<&str> = starts
        .windows(2)
        .filter_map(|w| match w {
            [a, b] => text.get(*a..*b),
            _ => None,
        })
        .collect();
    let counts: Vec<usize> = if text.len() >= PARALLEL_FROM {
        pieces.par_iter().map(|t| newlines(t)).collect()
    } else {
        pieces.iter().map(|t| newlines(t)).collect()
    };
    let mut line = 1usize;
    pieces
        .into_iter()
        .zip(counts)
        .map(|(t, n)| {
            let s = Section {
                text: t,
                first_line: line,
            };
            line += n;
            s
        })
        .collect()
}

fn newlines(t: &str) -> usize {
    t.bytes().filter(|&b| b == b'\n').count()
}

/// `0x…` hex or decimal, from bytes.
fn number(b: &[u8]) -> Option<u64> {
    let (digits, radix) = match b {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16),
        _ => (b, 10),
    };
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' if radix == 16 => c - b'a' + 10,
            b'A'..=b'F' if radix == 16 => c - b'A' + 10,
            _ => return None,
        };
        v = v.checked_mul(radix)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

fn read_section(s: &Section<'_>, fabric: &Fabric) -> Read {
    let mut c = Collector::new("lfts");
    let mut switch: Option<Option<NodeId>> = None;
    let mut lft = Lft::default();
    // Line of the first entry of each LID in this section (0: none yet).
    let mut seen: Vec<u32> = Vec::new();
    for (k, raw) in s.text.split('\n').enumerate() {
        let line_no = s.first_line + k;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("Unicast lids") {
            let guid = line
                .split_once(" guid ")
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|g| g.parse::<weft_fabric::Guid>().ok());
            switch = Some(match guid {
                None => {
                    c.error(line_no, "a switch header without ` guid 0x…`");
                    None
                }
                Some(g) => match fabric.find_guid(g) {
                    Some(id) if fabric.node(id).is_switch() => Some(id),
                    Some(id) => {
                        c.error(
                            line_no,
                            format!("`{}` (GUID {g}) is not a switch", fabric.node(id).name()),
                        );
                        None
                    }
                    None => {
                        c.warn(
                            line_no,
                            format!(
                                "no switch with GUID {g} in the topology; its entries are skipped"
                            ),
                        );
                        None
                    }
                },
            });
            continue;
        }
        if line.starts_with("Multicast mlids") {
            switch = Some(None);
            continue;
        }
        if !line.starts_with("0x") {
            // dump_fts headings ("Lid  Out   Destination", "Port     Info"), trailers and
            // dump_lfts's deprecation notice.
            let skippable = line.ends_with("lids dumped")
                || line.starts_with("Lid")
                || line.starts_with("Port")
                || line.starts_with("Switch")
                || line.starts_with("*** WARNING ***");
            if !skippable {
                c.error(line_no, format!("not an LFT line: `{line}`"));
            }
            continue;
        }
        let mut words = line.split_ascii_whitespace();
        let (Some(lid_s), Some(port_s)) = (words.next(), words.next()) else {
            c.error(
                line_no,
                format!("an entry needs a LID and a port: `{line}`"),
            );
            continue;
        };
        let Some(sw) = switch else {
            c.error(line_no, "an entry before any switch header");
            continue;
        };
        let Some(sw) = sw else { continue };
        let lid = match number(lid_s.as_bytes()) {
            Some(l) if (1..=u64::from(MAX_UNICAST_LID)).contains(&l) => l as u16,
            _ => {
                c.error(line_no, format!("`{lid_s}` is not a unicast LID"));
                continue;
            }
        };
        let port = match number(port_s.as_bytes()).filter(|_| !port_s.starts_with("0x")) {
            Some(p) if p <= 255 => p as u8,
            _ => {
                c.error(line_no, format!("`{port_s}` is not a port number"));
                continue;
            }
        };
        let node = fabric.node(sw);
        if port > node.spec.port_count {
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
        let i = usize::from(lid);
        if seen.len() <= i {
            seen.resize(i + 1, 0);
        }
        if let Some(prev) = seen.get_mut(i) {
            if *prev != 0 {
                c.warn(
                    line_no,
                    format!(
                        "LID {lid:#06x} of `{}` is given again (first on line {prev}); the last one wins",
                        node.name()
                    ),
                );
            } else {
                *prev = line_no as u32;
            }
        }
        lft.set(weft_fabric::Lid(lid), weft_fabric::PortNum(port));
    }
    Read {
        switch,
        lft,
        errors: c.errors,
        warnings: c.warnings,
    }
}

/// Reads an LFT dump against `fabric`: the LFT of every switch it lists, and warnings.
pub fn parse_lfts(
    text: &str,
    fabric: &Fabric,
) -> Result<(BTreeMap<NodeId, Lft>, Vec<DumpError>), DumpErrors> {
    let secs = sections(text);
    let reads: Vec<Read> = if text.len() >= PARALLEL_FROM {
        secs.par_iter().map(|s| read_section(s, fabric)).collect()
    } else {
        secs.iter().map(|s| read_section(s, fabric)).collect()
    };
    let mut c = Collector::new("lfts");
    let mut out: BTreeMap<NodeId, Lft> = BTreeMap::new();
    for (r, s) in reads.into_iter().zip(&secs) {
        c.errors.extend(r.errors);
        c.warnings.extend(r.warnings);
        let Some(Some(id)) = r.switch else { continue };
        match out.get_mut(&id) {
            None => {
                out.insert(id, r.lft);
            }
            Some(lft) => {
                // A switch listed twice: later entries win, entry by entry.
                c.warn(
                    s.first_line,
                    format!(
                        "`{}` is listed again; its entries here win over the earlier ones",
                        fabric.node(id).name()
                    ),
                );
                for (lid, &p) in r.lft.ports.iter().enumerate() {
                    if p != weft_fabric::LFT_UNSET {
                        lft.set(weft_fabric::Lid(lid as u16), weft_fabric::PortNum(p));
                    }
                }
            }
        }
    }
    c.finish(out)
}
