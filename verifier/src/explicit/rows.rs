//! The row pass: when every live switch is a source and every hop is on VL 0, every LFT entry
//! toward a destination is a hop some route takes, so the channel dependencies are read off the
//! tables switch by switch, one entry at a time, in the order the tables are stored, with no
//! per-destination in-tree.
//!
//! What it proves, and why it is enough:
//!
//! * each live switch's entry for each destination is checked as the per-destination pass
//!   checks it (set, on a port that is cabled and up, to a live switch or to the destination's
//!   own port, a port that sends VL 0);
//! * the dependency of every entry is recorded: at the switch an entry leads to, from the
//!   port it arrives on to that switch's own entry's port, and at a switch with end nodes, from
//!   each end node's port to every port the switch sends some destination out of;
//! * a route that loops would have left a cycle of those dependencies on VL 0. So when the
//!   dependency graph has no cycle (the caller's check), no route loops: every route ends, and
//!   since every entry on it is valid it ends at its destination.
//!
//! The dependencies are exactly the ones the per-destination pass records (each of its routes
//! starts at a switch whose traffic takes every entry), so verdicts and counts are the same; the
//! tests compare the two. A destination some entry fails for is left, with its dependencies,
//! to the walk per destination, which finds the routes that fail; when the state is not of
//! this kind, the pass answers `None` and records nothing. It gives no distance labels, so it
//! does not run when a certificate is asked for.

use crate::channels::DepSet;
use crate::net::{Attach, Dest, Net, PortLink};
use rayon::prelude::*;
use weft_fabric::LFT_UNSET;

/// Every destination's dependencies but those of the destinations it answers `true` for
/// (added to `deps`), or `None` (nothing added) when the row pass does not apply. A
/// destination is answered `true` (dirty: left to the walk per destination) when some live
/// switch's entry for it fails, or its SLs are not all on VL 0 and valid at every end node.
/// The others are clean: when the caller finds no cycle among the dependencies, every route
/// toward them arrives.
pub(crate) fn row_pass(
    net: &Net<'_>,
    dests: &[Dest],
    attach: &Attach,
    deps: &DepSet,
) -> Option<Vec<bool>> {
    if !attach.one_vl || !attach.uniform {
        return None;
    }
    // Every live switch a source (its own traffic takes every one of its entries).
    let live: Vec<usize> = (0..net.switches.len())
        .filter(|&k| net.switches.get(k).is_some_and(|&x| net.alive(x)))
        .collect();
    if live.iter().any(|&k| {
        !attach
            .by_switch
            .get(k)
            .is_some_and(|l| l.iter().any(|&(i, _)| i == 0))
    }) {
        return None;
    }
    let valid_all = attach.valid_and.iter().fold(u16::MAX, |a, &v| a & v);
    let lft = |n: u32| -> &[u8] {
        net.sw
            .get(n as usize)
            .copied()
            .flatten()
            .map_or(&[], |t| t.lft.ports.as_slice())
    };
    let tables: Vec<(usize, u32, &[u8], Vec<Port<'_>>)> = live
        .iter()
        .filter_map(|&k| {
            let x = *net.switches.get(k)?;
            Some((k, x, lft(x), ports_of(net, x, &lft)))
        })
        .collect();
    // Per destination: it, its SLs, and whether it is dirty (SLs off VL 0 or not valid at
    // some end node: the walk per destination says which routes fail).
    let mut work: Vec<(&Dest, u16, bool)> = dests
        .iter()
        .map(|d| {
            let s = net.st.path_sl.for_destination(d.lid).0;
            (d, s, s & !attach.vl0_sls != 0 || s & !valid_all != 0)
        })
        .collect();
    // LIDs in blocks, every switch's entries for a block read before the next block: the
    // next switch's entries for the same LIDs are then in cache (a whole table is not, on
    // the largest fabrics).
    let used = work
        .par_chunks_mut(ROW_BLOCK)
        .map(|block| {
            for (_, x, ports, to) in &tables {
                validate((*x, ports, to), block);
            }
            let mut used = vec![[0u64; 4]; tables.len()];
            let mut beyond = Vec::new();
            for ((_, _, ports, to), u) in tables.iter().zip(used.iter_mut()) {
                segment((ports, to), block, (u, &mut beyond));
                for (port, seen) in to.iter().zip(&beyond) {
                    if let Port::Switch { k: m, port: i, .. } = *port {
                        for o in set_bits(seen) {
                            deps.insert(m, i, 0, o, 0);
                        }
                    }
                }
            }
            used
        })
        .reduce(
            || vec![[0u64; 4]; tables.len()],
            |mut a, b| {
                for (wa, wb) in a.iter_mut().zip(&b) {
                    for (x, y) in wa.iter_mut().zip(wb) {
                        *x |= y;
                    }
                }
                a
            },
        );
    // Each end node's dependencies: from its port to every port its switch sends some clean
    // destination out of.
    for ((k, _, _, _), u) in tables.iter().zip(&used) {
        let list = attach.by_switch.get(*k).map_or(&[][..], Vec::as_slice);
        for &(i, _) in list.iter().filter(|&&(i, _)| i != 0) {
            for o in set_bits(u).filter(|&o| o != i) {
                deps.insert(*k as u32, i, 0, o, 0);
            }
        }
    }
    Some(work.into_iter().map(|(_, _, dirty)| dirty).collect())
}

/// Where a port of the switch being read leads.
#[derive(Clone, Copy)]
enum Port<'t> {
    /// Not a hop any entry may take (missing, unwired, down, not sending VL 0, back into the
    /// same switch, to a dead switch).
    Bad,
    /// To the live switch of index `k`, into its port `port`; `lft` is its table.
    Switch { k: u32, port: u8, lft: &'t [u8] },
    /// To an end node's port (a last hop, for that port's LIDs only).
    End(u32, u8),
}

/// LIDs per block of the row pass (a few in the unit tests, so that their small fabrics
/// have several blocks).
const ROW_BLOCK: usize = if cfg!(test) { 5 } else { 1024 };

/// Where each port of switch `x` leads (index: port number).
fn ports_of<'t>(net: &Net<'t>, x: u32, lft: &impl Fn(u32) -> &'t [u8]) -> Vec<Port<'t>> {
    let count = net.port_count.get(x as usize).copied().unwrap_or(0);
    let mut to: Vec<Port<'t>> = vec![Port::Bad; usize::from(count) + 1];
    for (o, slot) in to.iter_mut().enumerate().skip(1) {
        let o = o as u8;
        *slot = match net.port_link(x, o) {
            _ if !net.sends(x, o, 0) => Port::Bad,
            Some(PortLink::Up { node, port }) if net.is_switch(node) => {
                if node != x && net.alive(node) {
                    Port::Switch {
                        k: net.switch_of(node),
                        port,
                        lft: lft(node),
                    }
                } else {
                    Port::Bad
                }
            }
            Some(PortLink::Up { node, port }) => Port::End(node, port),
            _ => Port::Bad,
        };
    }
    to
}

/// Marks dirty each destination of the block switch `x`'s entry for fails (see [`segment`]
/// for what a valid entry is).
fn validate((x, ports, to): (u32, &[u8], &[Port<'_>]), block: &mut [(&Dest, u16, bool)]) {
    for (d, s, dirty) in block.iter_mut() {
        if *s == 0 || *dirty {
            continue;
        }
        let e = ports
            .get(usize::from(d.lid.0))
            .copied()
            .unwrap_or(LFT_UNSET);
        *dirty = match e {
            LFT_UNSET => true,
            0 => d.owner != (x, 0),
            _ => match to.get(usize::from(e)) {
                Some(Port::Switch { .. }) => false,
                Some(&Port::End(n, p)) => d.owner != (n, p),
                _ => true,
            },
        };
    }
}

/// A switch's entries for the clean destinations of one block (every entry valid: set; 0 at
/// the destination's own switch; else a port that sends VL 0 and leads to another live
/// switch, or to the destination's own port). Adds the ports it sends out of to `used`;
/// `beyond` becomes, per port, the next switch's entries seen beyond it (a bit per port
/// number there).
fn segment(
    (ports, to): (&[u8], &[Port<'_>]),
    block: &[(&Dest, u16, bool)],
    (used, beyond): (&mut [u64; 4], &mut Vec<[u64; 4]>),
) {
    beyond.clear();
    beyond.resize(to.len(), [0; 4]);
    for &(d, s, dirty) in block {
        if s == 0 || dirty {
            continue;
        }
        let lid = usize::from(d.lid.0);
        let e = ports.get(lid).copied().unwrap_or(LFT_UNSET);
        if e == 0 || e == LFT_UNSET {
            continue;
        }
        if let Some(&Port::Switch { lft, .. }) = to.get(usize::from(e)) {
            // The next switch's own entry (valid: the destination is clean); a 0 is its
            // arrival.
            let next = lft.get(lid).copied().unwrap_or(LFT_UNSET);
            if next != 0 && next != LFT_UNSET {
                if let Some(w) = beyond
                    .get_mut(usize::from(e))
                    .and_then(|b| b.get_mut(usize::from(next / 64)))
                {
                    *w |= 1 << (next % 64);
                }
            }
        }
        if let Some(w) = used.get_mut(usize::from(e / 64)) {
            *w |= 1 << (e % 64);
        }
    }
}

/// The port numbers of a 256-bit set, lowest first.
fn set_bits(words: &[u64; 4]) -> impl Iterator<Item = u8> + '_ {
    words.iter().enumerate().flat_map(|(w, &word)| {
        let mut m = word;
        std::iter::from_fn(move || {
            if m == 0 {
                return None;
            }
            let b = m.trailing_zeros();
            m &= m - 1;
            Some((w as u32 * 64 + b) as u8)
        })
    })
}
