//! Credit-loop witnesses of the explicit engine: the channels of a strongly connected
//! component, one cycle through it, and a concrete route for each dependency of the cycle.

use super::dest::sls_of;
use crate::channels::Graph;
use crate::net::{Dest, Net, Source};
use crate::report::{Channel, CreditLoop, Dependency};
/// A credit loop for one strongly connected component: its channels, a cycle, and a route
/// per dependency of the cycle.
pub(super) fn credit_loop(
    net: &Net<'_>,
    graph: &Graph,
    scc: &[u32],
    sources: &[Source],
    dests: &[Dest],
    multicast: (&[crate::multicast::Flow], &[Option<&weft_fabric::Mft>]),
) -> CreditLoop {
    let channels: Vec<Channel> = scc.iter().filter_map(|&c| channel(net, c)).collect();
    let cyc = graph.cycle_in(scc);
    let mut cycle = Vec::new();
    for (j, &a) in cyc.iter().enumerate() {
        let b = cyc.get((j + 1) % cyc.len()).copied().unwrap_or(a);
        let (Some(from), Some(to)) = (channel(net, a), channel(net, b)) else {
            continue;
        };
        let Some(route) = witness_route(net, a, b, sources, dests)
            .or_else(|| multicast_route(net, a, b, multicast))
        else {
            continue;
        };
        cycle.push(Dependency { from, to, route });
    }
    CreditLoop { channels, cycle }
}

pub(crate) fn channel(net: &Net<'_>, c: u32) -> Option<Channel> {
    let (n, p, vl) = net.channel_parts(c)?;
    let Some(crate::net::PortLink::Up { node, port }) = net.port_link(n, p) else {
        return None;
    };
    Some(Channel {
        node: net.node_ref(n),
        port: p,
        to: net.node_ref(node),
        to_port: port,
        vl,
    })
}

/// One multicast copy's route that takes channel `a` then channel `b`.
fn multicast_route(
    net: &Net<'_>,
    a: u32,
    b: u32,
    (flows, mfts): (&[crate::multicast::Flow], &[Option<&weft_fabric::Mft>]),
) -> Option<crate::report::Route> {
    if flows.is_empty() {
        return None;
    }
    let (an, ap, vin) = net.channel_parts(a)?;
    let (x, o, vout) = net.channel_parts(b)?;
    let Some(crate::net::PortLink::Up { port: i, .. }) = net.port_link(an, ap) else {
        return None;
    };
    crate::multicast::witness_route(net, flows, mfts, (x, i, vin, o, vout))
}

/// One route that takes channel `a` then channel `b`.
fn witness_route(
    net: &Net<'_>,
    a: u32,
    b: u32,
    sources: &[Source],
    dests: &[Dest],
) -> Option<crate::report::Route> {
    let (_, _, vin) = net.channel_parts(a)?;
    let (x, o, vout) = net.channel_parts(b)?;
    let (an, ap, _) = net.channel_parts(a)?;
    let Some(crate::net::PortLink::Up { port: i, .. }) = net.port_link(an, ap) else {
        return None;
    };
    let lft = net.sw.get(x as usize).copied().flatten()?;
    for &d in dests {
        if lft.lft.get(d.lid).map(|p| p.0) != Some(o) {
            continue;
        }
        for &s in sources {
            if (s.node, s.port) == d.owner {
                continue;
            }
            for sl in sls_of(net, s, d).iter() {
                let mut hit = false;
                let w = net.walk(s, d, sl.0, |dx, di, dvin, dout, dvout| {
                    if (dx, di, dvin, dout, dvout) == (x, i, vin, o, vout) {
                        hit = true;
                    }
                });
                if hit {
                    return Some(net.route(s, d, sl.0, &w.hops));
                }
            }
        }
    }
    None
}
