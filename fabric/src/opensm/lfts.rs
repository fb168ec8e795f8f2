//! Writing the unicast LFT dump.
//!
//! ```text
//! Unicast lids [0-8] of switch Lid 4 guid 0x0000000000200002 ('S1'):
//! 0x0001 001
//! 0x0002 001
//! 8 lids dumped
//! ```
//!
//! One block per switch (in fabric order); one line per LID whose entry is a port of the
//! switch (unset entries are omitted, as OpenSM does); the trailer repeats the top LID, as
//! OpenSM prints it (not the number of lines). OpenSM's file engine (`-R file -U`) takes the
//! switch by its GUID and each line's LID and port. OpenSM's own dumps end each line with a
//! `# <type> portguid <guid>: '<name>'` comment; weft leaves it out: on the 11 664-node tree
//! it was 80 % of a 1.44 GB file, and the LIDs it would let OpenSM follow are pinned by the
//! `guid2lid` file written beside it.

use crate::{FabricState, Lid, PortNum};
use std::io::{self, Write};

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
            writeln!(out, "0x{lid:04x} {:03}", port.0)?;
        }
        writeln!(out, "{max_lid} lids dumped")?;
    }
    out.flush()
}
