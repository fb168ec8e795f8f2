//! Building the reference simulator's fabric: wires, slots, sources, groups and arbiters.

use super::{
    data_vls, serialise, Arbiter, Draw, End, Ev, Group, Outcome, Reference, Source, Wire,
    CREDIT_BYTES, PS_PER_NS, VLS,
};
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use weft_fabric::rng::SplitMix64;
use weft_fabric::{FabricState, JoinState, Mlid, NodeKind, PortRef};
use weft_traffic::{Params, Traffic};

impl<'a> Reference<'a> {
    pub(super) fn new(
        st: &'a FabricState,
        traffic: &Traffic,
        p: &Params,
        seed: u64,
    ) -> Result<Reference<'a>, String> {
        if p.drain || !st.dftree_lanes.is_empty() {
            return Err("drain mode and dFtree lanes are not modelled".into());
        }
        let f = &st.fabric;
        let mtu = f
            .nodes()
            .iter()
            .map(|n| n.spec.caps.mtu.bytes())
            .min()
            .unwrap_or(4096);
        let payload = p.payload_bytes.min(mtu);
        let bytes = payload + p.header_bytes;
        let blocks = bytes.div_ceil(CREDIT_BYTES);
        let capacity = p.buffer_bytes / CREDIT_BYTES;
        if !(p.load > 0.0 && p.load <= 1.0) {
            return Err("a load outside (0, 1]".into());
        }
        let warm_ns = p.warmup_ns.unwrap_or(p.duration_ns / 5);
        if capacity < blocks || warm_ns >= p.duration_ns {
            return Err("a buffer below one packet, or a warm-up not below the duration".into());
        }

        let (mut wires, out_wire) = wires(st, capacity)?;

        let (mut sources, names) = sources(st, p, seed, bytes, &mut wires, &out_wire)?;
        let n = sources.len();
        if n < 2 {
            return Err("fewer than two hosts".into());
        }

        let (draw, group) = draw(st, traffic, &mut sources)?;

        let inputs = inputs(st, &wires);
        let buffers = wires
            .iter()
            .map(|_| (0..VLS).map(|_| VecDeque::new()).collect())
            .collect();
        let window_ns = p.duration_ns - warm_ns;
        let mut r = Reference {
            st,
            host_model: p.host,
            source_queue: p.source_queue as usize,
            receive_rate: p.receive_rate,
            payload,
            bytes,
            blocks,
            capacity,
            switch_ps: p.switch_latency_ns * PS_PER_NS,
            link_ps: p.link_latency_ns * PS_PER_NS,
            warm: warm_ns * PS_PER_NS,
            end: p.duration_ns * PS_PER_NS,
            fill: vec![[0; VLS]; wires.len()],
            data_vls: data_vls(st),
            sent_bytes: vec![0.0; n],
            received_bytes: vec![0.0; n],
            wires,
            out_wire,
            inputs,
            buffers,
            draw,
            group,
            events: BinaryHeap::new(),
            next_seq: 0,
            dirty: BTreeSet::new(),
            out: Outcome {
                hosts: names,
                window_ns,
                ..Outcome::default()
            },
            hot_bytes: vec![0.0; n],
            group_bytes: vec![0.0; n],
            host_at: sources
                .iter()
                .enumerate()
                .map(|(h, s)| (s.port, h))
                .collect(),
            copies: 0,
            sources,
        };
        for h in 0..n {
            if r.sources[h].sends {
                let s = &mut r.sources[h];
                let first = s.rng.below(s.every);
                r.at(first, Ev::Generate(h));
            }
        }
        Ok(r)
    }
}

/// Wires: both directions of every live link, each with `capacity` credits per VL; and each
/// node's port's wire out.
#[expect(
    clippy::type_complexity,
    reason = "a tuple returned to one caller, which takes it apart at once"
)]
fn wires(st: &FabricState, capacity: u32) -> Result<(Vec<Wire>, Vec<Vec<Option<usize>>>), String> {
    let f = &st.fabric;
    let mut wires = Vec::new();
    let mut out_wire: Vec<Vec<Option<usize>>> = f
        .nodes()
        .iter()
        .map(|n| vec![None; usize::from(n.spec.port_count) + 1])
        .collect();
    for link in f.links() {
        for (from, to) in [(link.a, link.b), (link.b, link.a)] {
            if f.live_peer(from) != Some(to) {
                continue;
            }
            let mbps = f.link_mbps(link).ok_or("a link without a rate")?;
            let into = if f.nodes()[to.node.index()].spec.kind == NodeKind::Switch {
                End::Switch(to.node.index())
            } else {
                End::Other
            };
            out_wire[from.node.index()][usize::from(from.port.0)] = Some(wires.len());
            wires.push(Wire {
                from,
                to,
                mbps,
                into,
                busy_until: 0,
                credits: [capacity; VLS],
                arb: Arbiter::new(st.ports.get(&from).and_then(|s| s.vlarb.as_ref())),
                last_served: [None; VLS],
                bytes_in_window: 0.0,
            });
        }
    }

    Ok((wires, out_wire))
}

/// Hosts, each with its own generator drawn from the master's stream; marks the wires into
/// them. Returns them and their names.
fn sources(
    st: &FabricState,
    p: &Params,
    seed: u64,
    bytes: u32,
    wires: &mut [Wire],
    out_wire: &[Vec<Option<usize>>],
) -> Result<(Vec<Source>, Vec<String>), String> {
    let f = &st.fabric;
    let mut master = SplitMix64(seed);
    let mut sources = Vec::new();
    let mut names = Vec::new();
    for (i, node) in f.nodes().iter().enumerate() {
        if node.is_switch() || node.down || !node.is_host() {
            continue;
        }
        for port in &node.ports {
            let pr = PortRef::new(weft_fabric::NodeId(i as u32), port.num.0);
            let Some(lid) = st.lids.get(pr.node, pr.port) else {
                continue;
            };
            let Some(w) = out_wire[i][usize::from(port.num.0)] else {
                continue;
            };
            if !matches!(wires[w].into, End::Switch(_)) {
                continue;
            }
            let h = sources.len();
            let back = out_wire[wires[w].to.node.index()][usize::from(wires[w].to.port.0)]
                .ok_or("a live link with one direction")?;
            wires[back].into = End::Host(h);
            let every = (serialise(bytes, wires[w].mbps) as f64 / p.load)
                .round()
                .max(1.0) as u64;
            sources.push(Source {
                port: pr,
                lid: lid.0,
                wire: w,
                rng: SplitMix64(master.next_u64()),
                every,
                sends: true,
                queues: vec![VecDeque::new(); VLS],
                held: None,
                drained_until: 0,
            });
            names.push(format!("{}:{}", node.name(), port.num.0));
        }
    }
    Ok((sources, names))
}

/// How each host picks its destinations under `traffic` (and a multicast group's senders and
/// receivers).
fn draw(
    st: &FabricState,
    traffic: &Traffic,
    sources: &mut [Source],
) -> Result<(Draw, Option<Group>), String> {
    let n = sources.len();
    let mut group = None;
    let draw = match traffic {
        Traffic::Uniform => Draw::Uniform,
        Traffic::Hotspot {
            count,
            share_ppm,
            window: None,
        } => {
            let c = *count;
            if c == 0 || c > n {
                return Err("hot-spots: none, or more than hosts".into());
            }
            // Host i is in group ⌊i·c/n⌋, whose first host is ⌈g·n/c⌉.
            let hot = (0..n).map(|i| (i * c / n * n).div_ceil(c)).collect();
            Draw::Hotspot(hot, u64::from(*share_ppm))
        }
        Traffic::Shift(k) => {
            if k % n == 0 {
                return Err("a shift onto itself".into());
            }
            Draw::Fixed((0..n).map(|i| (i + k) % n).collect())
        }
        Traffic::AllToAll => Draw::AllToAll(vec![1; n]),
        Traffic::Multicast { mlid, share_ppm } => {
            let mlid = Mlid::new(*mlid).ok_or("not a multicast LID")?;
            let g = st.multicast.group(mlid).ok_or("no such group")?;
            let join = |s: &Source| g.members.get(&s.port).copied();
            // Send-only members make the group a feed: only they send.
            let feed = g.members.values().any(|j| !j.receives());
            let sends = |j: JoinState| !feed || !j.receives();
            for s in sources.iter_mut() {
                s.sends = join(s).is_some_and(sends);
            }
            group = Some(Group {
                mlid,
                sl: g.sl,
                receiver: sources
                    .iter()
                    .map(|s| join(s).is_some_and(JoinState::receives))
                    .collect(),
            });
            Draw::Group(u64::from(*share_ppm))
        }
        other => return Err(format!("`{}` is not modelled here", other.spec())),
    };
    Ok((draw, group))
}

/// Each switch's input wires, by the port they enter.
fn inputs(st: &FabricState, wires: &[Wire]) -> Vec<Vec<usize>> {
    let f = &st.fabric;
    let mut inputs = vec![Vec::new(); f.nodes().len()];
    let mut by_port: Vec<(PortRef, usize)> = wires
        .iter()
        .enumerate()
        .filter(|(_, w)| matches!(w.into, End::Switch(_)))
        .map(|(i, w)| (w.to, i))
        .collect();
    by_port.sort();
    for (to, w) in by_port {
        inputs[to.node.index()].push(w);
    }
    inputs
}
