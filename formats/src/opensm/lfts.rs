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

use std::io::{self, Write};
use weft_fabric::{FabricState, Lid, PortNum};

/// The LFTs of every switch of `state` in OpenSM's dump format.
pub fn write_lfts(state: &FabricState) -> String {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write_lfts_to(state, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Switches formatted at once (in parallel) before their blocks are written in order: a few
/// megabytes in memory, whatever the fabric size.
const SWITCHES_PER_BATCH: usize = 64;

/// [`write_lfts`], streamed: the dump of a large fabric runs to hundreds of megabytes (a line
/// per switch per LID), so it is written in batches of switches, never held whole. Each
/// switch's block is formatted by hand, in parallel, then written in fabric order.
pub fn write_lfts_to(state: &FabricState, out: &mut dyn Write) -> io::Result<()> {
    use rayon::prelude::*;
    let switches: Vec<_> = state.switches.iter().collect();
    for batch in switches.chunks(SWITCHES_PER_BATCH) {
        let blocks: Vec<Vec<u8>> = batch
            .par_iter()
            .map(|&(&id, sw)| switch_block(state, id, sw))
            .collect();
        for b in &blocks {
            out.write_all(b)?;
        }
    }
    out.flush()
}

/// One switch's block of the dump.
fn switch_block(
    state: &FabricState,
    id: weft_fabric::NodeId,
    sw: &weft_fabric::SwitchState,
) -> Vec<u8> {
    let node = state.fabric.node(id);
    let max_lid = sw.lft.top().0;
    let own = state.lids.get(id, PortNum(0)).map_or(0, |l| l.0);
    let mut b = Vec::with_capacity(usize::from(max_lid) * LINE + 160);
    let _ = writeln!(
        b,
        "Unicast lids [0-{max_lid}] of switch Lid {own} guid {:#018x} ('{}'):",
        node.guid().0,
        node.name()
    );
    for lid in 0..=max_lid {
        let Some(port) = sw.lft.get(Lid(lid)) else {
            continue;
        };
        if port.0 > node.spec.port_count {
            continue;
        }
        b.extend_from_slice(&line(lid, port.0));
    }
    let _ = writeln!(b, "{max_lid} lids dumped");
    b
}

/// Bytes of one entry line.
const LINE: usize = 11;

/// `0x{lid:04x} {port:03}\n`, without the formatting machinery (21 million of these on the
/// 11 664-node tree).
fn line(lid: u16, port: u8) -> [u8; LINE] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let nib = |shift: u16| {
        HEX.get(usize::from((lid >> shift) & 0xf))
            .copied()
            .unwrap_or(b'0')
    };
    [
        b'0',
        b'x',
        nib(12),
        nib(8),
        nib(4),
        nib(0),
        b' ',
        b'0' + port / 100,
        b'0' + port / 10 % 10,
        b'0' + port % 10,
        b'\n',
    ]
}
