//! What a simulation measured, as a stable JSON schema (serde) and as text for people.
//!
//! Everything is measured over the window after the warm-up, `(warm-up, duration]`:
//! throughput from the payload end nodes drained in it (a packet draining across its edge
//! counts only the bytes drained inside, spread evenly over its drain time), utilisation
//! from the bytes on a link's wire in it (likewise), stalls from the time in it. So no
//! throughput per node is above its link's payload rate (times the receive rate), and no
//! utilisation above 1, whatever the window.

use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// One simulation's results.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// The fabric's name.
    pub fabric: String,
    /// The traffic's canonical spec.
    pub traffic: String,
    /// The seed.
    pub seed: u64,
    /// The parameters it ran with.
    pub params: crate::Params,
    /// The measured window, in nanoseconds (duration minus warm-up).
    pub window_ns: u64,
    /// Hosts (end nodes sending and receiving).
    pub hosts: usize,
    /// Data VLs the simulation carried (the highest VL in the state's tables, plus one).
    pub vls: u8,
    /// Packet payload in bytes (after the MTU cap).
    pub payload_bytes: u32,
    /// Unicast payload each end node drained in the window, in Gb/s: `mean` is the mean
    /// throughput per end node (the same whether counted where packets are drained or by
    /// their sources); `min` and `max` are per receiving node, each at most its link's
    /// payload rate times the receive rate.
    pub throughput_per_node_gbps: Throughput,
    /// Per flow class, with hot-spot traffic (`null` otherwise).
    pub classes: Option<Classes>,
    /// From generation to the tail's arrival at the destination, in nanoseconds, over the
    /// packets delivered in the window.
    pub latency_ns: Latency,
    /// Packet counts over the whole run.
    pub packets: Packets,
    /// The hottest directed links (by utilisation, then name), at most `params.top`.
    pub hottest_links: Vec<LinkLoad>,
    /// The output ports that stalled longest (by stall time, then name), at most
    /// `params.top`, none that never stalled.
    pub stalled_ports: Vec<LinkLoad>,
    /// Sum of every output port's stall time in the window, in nanoseconds.
    pub stall_total_ns: f64,
    /// The congestion trees found from the stall counters (most stall first, then by root).
    pub congestion_trees: Vec<crate::CongestionTree>,
    /// Per job, with a per-job traffic file (empty otherwise), in file order.
    pub jobs: Vec<JobReport>,
    /// What the run left out or assumed about what the state asks for (several path SLs).
    pub notes: Vec<String>,
    /// What dFtree did, on a state with dFtree lanes (`null` otherwise).
    pub dftree: Option<crate::DftreeReport>,
    /// The multicast group's delivery, with multicast traffic (left out otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multicast: Option<McReport>,
    /// Events processed (a measure of the work done).
    pub events: u64,
    /// Wall-clock time of the run (not in the JSON, which is byte-identical for a seed).
    #[serde(skip)]
    pub wall: Duration,
}

/// Mean, minimum and maximum of a per-node figure.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Throughput {
    /// Mean over the end nodes.
    pub mean: f64,
    /// The least.
    pub min: f64,
    /// The most.
    pub max: f64,
}

/// Hot-spot traffic's flow classes.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Classes {
    /// The hot-spots, `node:port`, in host order.
    pub hotspots: Vec<String>,
    /// The flows toward a hot-spot, per contributing node.
    pub contributors: ClassThroughput,
    /// Every other flow (the potential victims), per sending node.
    pub victims: ClassThroughput,
}

/// One flow class's throughput per node.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct ClassThroughput {
    /// Nodes with flows of the class.
    pub nodes: usize,
    /// Their throughput in the class, Gb/s: the class's payload drained in the window, by
    /// source node (a flow figure, not a port's: over a window shorter than a packet's trip,
    /// a source's packets may drain at several receivers at once).
    pub gbps: Throughput,
}

/// One job's results (per-job traffic files).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct JobReport {
    /// The job's name.
    pub name: String,
    /// Its pattern's canonical spec.
    pub pattern: String,
    /// Hosts in it.
    pub hosts: usize,
    /// Offered load per host.
    pub load: f64,
    /// When its hosts start generating, in nanoseconds.
    pub from_ns: u64,
    /// When they stop (`null`: the end).
    pub until_ns: Option<u64>,
    /// Payload its hosts drained in the window, per host, in Gb/s (a job's hosts receive
    /// only from its hosts).
    pub throughput_per_node_gbps: Throughput,
    /// Its packets' latency (delivered in the window).
    pub latency_ns: Latency,
}

/// Latency percentiles in nanoseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The largest.
    pub max: f64,
}

/// A multicast group's delivery (`multicast:MLID` traffic).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct McReport {
    /// The group's multicast LID (`0xc000`).
    pub mlid: String,
    /// Its SL.
    pub sl: u8,
    /// Member hosts that send (every host member, whatever its join state).
    pub senders: usize,
    /// Member hosts the tree delivers to (joined as full or non-member).
    pub receivers: usize,
    /// Copies of the group's packets delivered to a receiving member (whole run).
    pub delivered: u64,
    /// Group payload delivered per receiving member in the window, in Gb/s.
    pub delivered_gbps_per_receiver: Throughput,
    /// Group packets a switch dropped for want of an MFT entry for the MLID.
    pub dropped_no_mft_entry: u64,
    /// Group copies that reached an end port not receiving (not a member, a send-only
    /// member, or the sender itself): dropped.
    pub dropped_at_non_receiver: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Where every packet is: `generated + copies = delivered + dropped + in_flight +
/// queued_at_source` (`copies` only with multicast traffic).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Packets {
    /// Put in a host's source queue.
    pub generated: u64,
    /// Not generated: the source queue of its VL was full.
    pub refused_at_source: u64,
    /// Sent by a host onto its link.
    pub injected: u64,
    /// Drained by their destination end node (over the whole run; a packet still draining
    /// when the run stops is in flight).
    pub delivered: u64,
    /// Delivered, their drain ending in the measured window.
    pub delivered_in_window: u64,
    /// Dropped by a switch that could not forward them (no route, SL→VL 15).
    pub dropped: u64,
    /// On a link, in a switch buffer, or still draining into its end node at the end.
    pub in_flight: u64,
    /// Still in a source queue at the end.
    pub queued_at_source: u64,
    /// Multicast: the extra packets switches made by replication (a packet a switch sends
    /// out on `k` ports counts `k − 1`; left out of the JSON when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub copies: u64,
}

/// One directed link's load.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkLoad {
    /// `node:port`, the sending end.
    pub from: String,
    /// `node:port`, the receiving end.
    pub to: String,
    /// Rate in Gb/s.
    pub gbps: f64,
    /// Fraction of the window the link was sending.
    pub utilisation: f64,
    /// Time the sending port had a packet but sent nothing for lack of credits or
    /// arbitration, in nanoseconds (PortXmitWait-like).
    pub xmit_wait_ns: f64,
}

impl Report {
    /// The report as text for people.
    pub fn human(&self) -> String {
        let mut t = String::new();
        self.write_summary(&mut t);
        self.write_flows(&mut t);
        self.write_dftree(&mut t);
        self.write_links(&mut t);
        self.write_trees(&mut t);
        t
    }

    /// The run, the model, throughput, latency and packet counts.
    fn write_summary(&self, t: &mut String) {
        let p = &self.params;
        let _ = writeln!(
            t,
            "fabric `{}`: {} hosts, {} VL(s), traffic {}, seed {}",
            self.fabric, self.hosts, self.vls, self.traffic, self.seed
        );
        let _ = writeln!(
            t,
            "  simulated   {} ns ({} ns measured after warm-up), load {}, {} B payload, buffers {} B per VL",
            p.duration_ns, self.window_ns, p.load, self.payload_bytes, p.buffer_bytes
        );
        let _ = writeln!(
            t,
            "  model       hosts {}{}, switch buffers {}, parallel sends {}, receive rate {}",
            p.host.name(),
            if p.host == crate::HostModel::Unbounded {
                String::new()
            } else {
                format!(" (queues of {})", p.source_queue)
            },
            p.switch_buffers.name(),
            p.parallel_sends
                .map_or_else(|| "unlimited".to_owned(), |n| n.to_string()),
            p.receive_rate
        );
        let th = &self.throughput_per_node_gbps;
        let _ = writeln!(
            t,
            "  throughput  {:.3} Gb/s per node (min {:.3}, max {:.3})",
            th.mean, th.min, th.max
        );
        if let Some(c) = &self.classes {
            for (what, k) in [("contributors", &c.contributors), ("victims", &c.victims)] {
                let _ = writeln!(
                    t,
                    "    {what:<13}{:.3} Gb/s per node (min {:.3}) over {} nodes",
                    k.gbps.mean, k.gbps.min, k.nodes
                );
            }
        }
        let l = &self.latency_ns;
        let _ = writeln!(
            t,
            "  latency     p50 {:.0} ns, p99 {:.0} ns, max {:.0} ns",
            l.p50, l.p99, l.max
        );
        let k = &self.packets;
        let _ = writeln!(
            t,
            "  packets     {} generated, {} injected, {} delivered ({} in the window), {} dropped, {} in flight, {} queued at sources, {} refused at sources",
            k.generated, k.injected, k.delivered, k.delivered_in_window, k.dropped, k.in_flight, k.queued_at_source, k.refused_at_source
        );
    }

    /// Multicast copies and the group, each job, and the notes.
    fn write_flows(&self, t: &mut String) {
        let k = &self.packets;
        if k.copies > 0 {
            let _ = writeln!(t, "    {} copies made by multicast replication", k.copies);
        }
        if let Some(m) = &self.multicast {
            let _ = writeln!(
                t,
                "  multicast   group {} (SL {}): {} sender(s), {} receiver(s), {:.3} Gb/s delivered per receiver (min {:.3}), {} copies delivered, {} dropped for want of an MFT entry, {} at non-receivers",
                m.mlid,
                m.sl,
                m.senders,
                m.receivers,
                m.delivered_gbps_per_receiver.mean,
                m.delivered_gbps_per_receiver.min,
                m.delivered,
                m.dropped_no_mft_entry,
                m.dropped_at_non_receiver
            );
        }
        for j in &self.jobs {
            let span = match (j.from_ns, j.until_ns) {
                (0, None) => String::new(),
                (f, None) => format!(", from {f} ns"),
                (f, Some(u)) => format!(", {f}-{u} ns"),
            };
            let _ = writeln!(
                t,
                "  job {:<8}{} hosts, {}, load {}{span}: {:.3} Gb/s per node (min {:.3}), latency p99 {:.0} ns",
                j.name,
                j.hosts,
                j.pattern,
                j.load,
                j.throughput_per_node_gbps.mean,
                j.throughput_per_node_gbps.min,
                j.latency_ns.p99
            );
        }
        for n in &self.notes {
            let _ = writeln!(t, "  note        {n}");
        }
    }

    /// What the dftree loop (or its best case) did.
    fn write_dftree(&self, t: &mut String) {
        if let Some(d) = &self.dftree {
            let mode = match d.mode {
                crate::DftreeMode::Loop => format!(
                    "run-time loop, a sweep every {} ns ({} taken), moves applied {} ns after",
                    d.sweep_ns, d.sweeps, d.repath_ns
                ),
                crate::DftreeMode::Oracle => {
                    "best case: every packet toward a hot-spot on its slow lane from the start"
                        .to_owned()
                }
                crate::DftreeMode::Off => "off: every flow on its fast lane".to_owned(),
            };
            let _ = writeln!(t, "  dftree      {mode}");
            if d.mode == crate::DftreeMode::Loop {
                let slow = d.moves.iter().filter(|m| m.lane == "slow").count();
                let _ = writeln!(
                    t,
                    "    {} hot-spot(s) detected, {} flow(s) moved to the slow lane, {} back, {} on it at the end",
                    d.hotspots.len(),
                    slow,
                    d.moves.len() - slow,
                    d.slow_flows_at_end.len()
                );
                for h in &d.hotspots {
                    let until = h.cleared_ns.map_or_else(
                        || "still marked at the end".to_owned(),
                        |c| format!("cleared at {c} ns"),
                    );
                    let _ = writeln!(
                        t,
                        "    hot-spot  {} marked at {} ns, {until}",
                        h.port, h.marked_ns
                    );
                }
            }
        }
    }

    /// The hottest links and the most stalled ports.
    fn write_links(&self, t: &mut String) {
        let _ = writeln!(t, "  hottest links");
        for x in &self.hottest_links {
            let _ = writeln!(
                t,
                "    {:>5.1} %  {} -> {} ({:.0} Gb/s), stalled {:.0} ns",
                x.utilisation * 100.0,
                x.from,
                x.to,
                x.gbps,
                x.xmit_wait_ns
            );
        }
        let _ = writeln!(
            t,
            "  stalls      {:.0} ns in all, most stalled ports:",
            self.stall_total_ns
        );
        if self.stalled_ports.is_empty() {
            let _ = writeln!(t, "    none");
        }
        for x in &self.stalled_ports {
            let _ = writeln!(
                t,
                "    {:>9.0} ns  {} -> {} ({:.1} % busy)",
                x.xmit_wait_ns,
                x.from,
                x.to,
                x.utilisation * 100.0
            );
        }
    }

    /// The congestion trees, level by level.
    fn write_trees(&self, t: &mut String) {
        let _ = writeln!(
            t,
            "  congestion trees  {} found",
            self.congestion_trees.len()
        );
        for c in &self.congestion_trees {
            let feeds = c
                .end_node
                .as_ref()
                .map_or(String::new(), |e| format!(", feeds {e}"));
            let _ = writeln!(
                t,
                "    root {} -> {} ({:.1} % busy{feeds}): {} port(s), {:.0} ns stalled",
                c.root,
                c.to,
                c.utilisation * 100.0,
                c.ports,
                c.stall_ns
            );
            for (i, level) in c.levels.iter().enumerate() {
                let ports: Vec<String> = level
                    .iter()
                    .map(|p| format!("{} ({:.0} ns)", p.port, p.stall_ns))
                    .collect();
                let _ = writeln!(t, "      level {}  {}", i + 1, ports.join(", "));
            }
        }
    }
}
