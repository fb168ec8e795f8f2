//! Writing the unicast LFT dump.
//!
//! ```text
//! Unicast lids [0-8] of switch Lid 4 guid 0x0000000000200002 ('S1'):
//! 0x0001 001 # Switch portguid 0x0000000000200000: 'L1'
//! 0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'H1'
//! 8 lids dumped
//! ```
//!
//! One block per switch (in fabric order); one line per LID whose entry is a port of the
//! switch (unset entries are omitted, as OpenSM does); the trailer repeats the top LID, as
//! OpenSM prints it (not the number of lines). OpenSM's reader takes the switch by its GUID and
//! each line's LID and port; the `portguid` comment lets it follow a LID that moved.

use crate::{FabricState, Lid, NodeKind, PortNum};
use std::io::{self, Write};

fn type_str(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Switch => "Switch",
        NodeKind::Hca => "Channel Adapter",
        NodeKind::Router => "Router",
    }
}

/// The LFTs of every switch of `state` in OpenSM's dump format.
pub fn write_lfts(state: &FabricState) -> String {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write_lfts_to(state, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`write_lfts`], streamed: the dump of a large fabric runs to gigabytes (a line per switch
/// per LID), so it is written, never held.
pub fn write_lfts_to(state: &FabricState, out: &mut dyn Write) -> io::Result<()> {
    let f = &state.fabric;
    let owners = state.lids.owners(f);
    // The comment of each LID is the same on every switch: format it once.
    let comments: Vec<Option<String>> = owners
        .iter()
        .map(|o| {
            o.map(|(n, p)| {
                let dst = f.node(n);
                let guid = if dst.is_switch() {
                    dst.guid()
                } else {
                    dst.port(p).map_or(dst.guid(), |x| x.guid)
                };
                format!(
                    "{} portguid {:#018x}: '{}'",
                    type_str(dst.kind()),
                    guid.0,
                    dst.name()
                )
            })
        })
        .collect();
    let mut out = io::BufWriter::with_capacity(1 << 20, out);
    for (&id, sw) in &state.switches {
        let node = f.node(id);
        let max_lid = sw.lft.top().0;
        let own = state.lids.get(id, PortNum(0)).map_or(0, |l| l.0);
        writeln!(
            out,
            "Unicast lids [0-{max_lid}] of switch Lid {own} guid {:#018x} ('{}'):",
            node.guid().0,
            node.name()
        )?;
        for lid in 0..=max_lid {
            let Some(port) = sw.lft.get(Lid(lid)) else {
                continue;
            };
            if port.0 > node.spec.port_count {
                continue;
            }
            match comments.get(usize::from(lid)).and_then(Option::as_deref) {
                Some(c) => writeln!(out, "0x{lid:04x} {:03} # {c}", port.0)?,
                None => writeln!(out, "0x{lid:04x} {:03} # unknown node and type", port.0)?,
            }
        }
        writeln!(out, "{max_lid} lids dumped")?;
    }
    out.flush()
}
