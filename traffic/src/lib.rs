//! `weft-traffic`: what a fabric state's tables do to traffic, by simulation.
//!
//! [`simulate`] runs an event-driven, deterministic packet simulator over a
//! [`FabricState`] (any state weft compiled, read from `state.json`, or assembled from
//! OpenSM's dumps) under a [`Traffic`] pattern, and returns a [`Report`]: throughput per end
//! node, per flow class, latency percentiles, link utilisation and XmitWait-like stall
//! counters.
//!
//! **What is modelled** (InfiniBand as IBA describes it):
//!
//! * *Hosts* are the end-node ports of role `host` with a LID and a live cable to a switch,
//!   numbered in fabric order. Each generates packets at `load ×` its link rate (full load by
//!   default: a packet every serialisation time) into source queues of
//!   [`Params::source_queue`] packets, as [`Params::host`] says ([`HostModel`]): by default
//!   one queue per VL, a packet whose VL queue is full not generated (counted as
//!   `refused_at_source`: the application could not post it); or one queue per VL with a
//!   generator that waits until the packet fits; or one send queue in generation order whose
//!   head holds back the rest; or one unbounded queue per VL. The SL of a packet is the lowest of the state's path SLs for
//!   the (source, destination LID) pair, the VL it is injected on the source port's SL→VL
//!   table (none: VL 0).
//! * *Links* run at width × speed (the link's recorded rate, else the slower end's
//!   capabilities; the model's defaults are 4x EDR), one way each direction, with a fixed
//!   [`Params::link_latency_ns`].
//! * *Switches* forward by their LFTs (unicast, the destination's base LID), with virtual
//!   cut-through: a packet may leave [`Params::switch_latency_ns`] after its head arrived,
//!   before its tail has, and never finishes leaving before its tail arrived. Each (input
//!   port, VL) has a buffer of [`Params::buffer_bytes`]: a FIFO whose head alone competes
//!   for an output (head-of-line blocking, as in IB switches), or virtual output queues in
//!   its credits whose oldest packet per output competes ([`SwitchBuffers`]); an input port
//!   may be limited to [`Params::parallel_sends`] packets at once. The VL out of a switch is
//!   `SL2VL[in][out][SL]` (no table: VL 0).
//! * *Credit-based flow control*: a packet goes out on a VL only when the next hop's input
//!   buffer for that VL has room for all of it (credits in 64-byte blocks); the room comes
//!   back one link latency after the packet's tail has left that buffer (at an end node:
//!   drained).
//! * *End nodes* drain what arrives one packet after the other, at their link's rate times
//!   [`Params::receive_rate`]; a packet is delivered when drained.
//! * *Measurement* over the window `(warm-up, duration]`: a packet's payload counts spread
//!   evenly over its drain, so one draining across the window's edge counts only its bytes
//!   inside; no end node is credited more than its link's payload rate (times the receive
//!   rate) and no link is busy more than the whole window, whatever the window.
//! * *Output contention*: each output port sends one packet at a time; among the VLs with a
//!   packet that has credits it picks by the port's VL arbitration (high and low tables,
//!   weighted round robin, high first within the high limit; no table: VL 0 only), and among
//!   the input buffers waiting on that VL by round robin.
//! * *Stalls*: per output port, the time it had a packet waiting but could send nothing for
//!   lack of credits (or of arbitration), like PortXmitWait.
//! * *dFtree*: on a state whose pairs have a fast and a slow lane, the run-time loop
//!   ([`dftree::Controller`] fed with the simulator's own port counters every
//!   [`Params::dftree_sweep_ns`], its moves applied after [`Params::dftree_repath_ns`] to the
//!   sources' new packets), the papers' best case, or neither ([`DftreeMode`]).
//! * *Per-job traffic files* ([`Jobs`]): each job's pattern among its own hosts; *congestion
//!   trees* ([`CongestionTree`]) found from what each stalled port waited on.
//!
//! * *Multicast* (`multicast:MLID`): a switch copies a group packet to every port of its MFT
//!   entry for the MLID but the ingress port, each copy on its own output's VL with its own
//!   credits (virtual cut-through per copy); the input buffer's slot is freed when the last
//!   copy has left. [`Packets::copies`] counts the copies made.
//!
//! **Not modelled**: IB congestion control (FECN/BECN), adaptive routing,
//! link-level errors and retries, a crossbar's output buffers, buffer pools shared among VLs.
//! [`Params::papers`] is the setting under which the vFtree and dFtree papers' figures are
//! reproduced (docs/simulate.md). Packets a switch cannot forward (no LFT entry, a down link, SL→VL 15) are
//! dropped and counted.
//!
//! **Determinism**: one event queue ordered by (time in picoseconds, sequence number), one
//! seeded SplitMix64 generator per host ([`weft_fabric::rng`]), no hash-ordered iteration:
//! the same state, traffic, parameters and seed give the same [`Report`] and byte-identical
//! JSON. The wall-clock time of a run ([`Report::wall`]) is kept out of the JSON.
//!
//! **Parts**: from 8 192 hosts (one part per 4 096, at most 8) the fabric is simulated in
//! parts on rayon's threads, each with its own queue, agreeing on time in windows of one link
//! latency (only arrivals and credits cross between parts, and both come a link latency after
//! what caused them). The parts are fixed by the fabric, so the report does not depend on the
//! threads; it differs from one part's run only in the order of events of the same
//! picosecond in two parts and in the congestion trees' reading of another part's state (as
//! the last window left it). A state with dFtree lanes (whatever the loop's mode), multicast
//! and virtual output queues run whole.
//! [`simulate_in_parts`] cuts any fabric.
//!
//! **Why not an existing simulator.** caminos-lib (a maintained Rust interconnection-network
//! simulator; 0.6.3 looked at) models routers with virtual channels, credit flow control and
//! pluggable routing and traffic, but is cycle-driven (buffers in phits, delays in cycles)
//! over its own router and topology abstractions (tori, generic routings such as shortest
//! paths or DOR), configured through its own configuration language; it has no notion of IBA's per-hop SL→VL tables,
//! VL arbitration tables with a high limit, LFTs read from a state, or path SLs from the SA,
//! and feeding a weft state into it would mean translating every table into its routing
//! interfaces (and depending on its sizeable crate tree). The IB rules weft needs are few
//! and exact; a small event-driven engine over the state's own tables keeps them faithful,
//! deterministic and fast, and lets the reported counters be IB's.
//!
//! **Code map.** `sim/` (the engine: one event queue ordered by (picoseconds, sequence
//! number), `queue.rs` a calendar of 0.5 ns buckets, each sorted once, that pops in that order, flat
//! per-channel and per-buffer arrays; `parts.rs` the fabric in parts; `build.rs` the setup, `unicast.rs` generation,
//! routing, credits and arbitration, `multicast.rs` replication, `report.rs` the counts), `arb.rs`, `pattern.rs` (the traffic specs and the
//! papers' hot-spot groups), `jobs.rs` (per-job traffic files, host lists read by
//! [`weft_formats::hostlist::parse`]), `report.rs` (the serde schema and the text for people),
//! `trees.rs`, `dftree.rs` (dFtree's controller: pure, fed by the simulation or by a loop over
//! real counters), `sim_dftree.rs` (the loop inside a simulation). Every generated packet is
//! accounted for — delivered (drained), dropped (counted), in a buffer, on a wire, draining or
//! queued at its source — no input buffer ever holds more than its credits allow, and no end
//! node is credited more than its link's payload rate times the receive rate (throughput is
//! the bytes drained inside the window); the tests assert all three (`sim_bounds_tests.rs`),
//! and `tests/reference/` is a second simulator the engine is held to
//! (`tests/reference_agrees.rs`).
//!
//! Architecture invariant: depends on `weft-fabric` only (it runs any state, whoever routed
//! it); no I/O, no printing; typed errors ([`SimError`]).

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

pub mod arb;
pub mod dftree;
mod jobs;
mod pattern;
mod report;
mod sim;
mod sim_dftree;
mod trees;

pub use jobs::{Job, Jobs};
pub use pattern::{Traffic, Window};
pub use report::{
    ClassThroughput, Classes, JobReport, Latency, LinkLoad, McReport, Packets, Report, Throughput,
};
pub use sim::{simulate, simulate_in_parts};
pub use sim_dftree::{DftreeReport, Hotspot, Move, SlowFlow, TICK_BYTES};
pub use trees::{CongestionTree, TreePort, ROOT_UTILISATION, STALL_SHARE};

use weft_fabric::FabricState;

/// What a simulation can refuse.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    /// A traffic spec that does not parse or does not fit.
    #[error("traffic `{spec}`: {why}")]
    Traffic {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// More hot-spots than hosts.
    #[error("{count} hot-spots asked for, but the fabric has {hosts} hosts")]
    TooManyHotspots {
        /// Hot-spots asked for.
        count: usize,
        /// Hosts.
        hosts: usize,
    },
    /// Fewer than two hosts: nothing to send between.
    #[error("the fabric has {0} host(s) able to send; traffic needs at least two")]
    TooFewHosts(usize),
    /// A duration that does not parse.
    #[error("duration `{0}`: give a number and a unit, such as `1ms`, `200us`, `500ns`")]
    Duration(String),
    /// A parameter out of range.
    #[error("{0}")]
    Param(String),
    /// A per-job traffic file that does not parse or does not fit the fabric.
    #[error("{file}:{line}:{column}: {why}")]
    JobFile {
        /// The file, as given.
        file: String,
        /// Line, from 1.
        line: usize,
        /// Column (characters), from 1.
        column: usize,
        /// What is wrong.
        why: String,
    },
    /// Two states compared over different hosts.
    #[error("the states have different hosts ({0} and {1}): the same traffic cannot run on both")]
    DifferentHosts(usize, usize),
}

impl weft_fabric::code::Coded for SimError {
    /// Its code in [`CODES`].
    fn code(&self) -> &'static str {
        match self {
            SimError::Traffic { .. } => "weft::traffic::spec",
            SimError::TooManyHotspots { .. } => "weft::traffic::hotspots",
            SimError::TooFewHosts(_) => "weft::traffic::hosts",
            SimError::Duration(_) => "weft::traffic::duration",
            SimError::Param(_) => "weft::traffic::param",
            SimError::JobFile { .. } => "weft::traffic::job_file",
            SimError::DifferentHosts(..) => "weft::traffic::different_hosts",
        }
    }
}

/// The codes the simulator reports: each an input it cannot simulate (`weft simulate`,
/// `weft report --simulate`).
pub const CODES: &[weft_fabric::code::CodeInfo] = &{
    use weft_fabric::code::CodeInfo as C;
    [
        C::stable(
            "weft::traffic::spec",
            "A `--traffic` spec that does not parse or does not fit the fabric (an unknown pattern, a host the fabric does not have).",
        ),
        C::stable(
            "weft::traffic::hotspots",
            "More hot-spots asked for than the fabric has hosts.",
        ),
        C::stable(
            "weft::traffic::hosts",
            "Fewer than two hosts able to send: there is no traffic to simulate.",
        ),
        C::stable(
            "weft::traffic::duration",
            "A duration that is not a number and a unit (`1ms`, `200us`, `500ns`, `2s`).",
        ),
        C::stable(
            "weft::traffic::param",
            "A simulator parameter out of its range (a duration, a load, a preset name, a host model).",
        ),
        C::stable(
            "weft::traffic::job_file",
            "A per-job traffic file (`--traffic file:PATH`) with a line that does not parse or names what the fabric does not have; the finding gives its line and column.",
        ),
        C::stable(
            "weft::traffic::different_hosts",
            "Two states compared under the same traffic have different hosts.",
        ),
    ]
};

/// The simulator's parameters; [`Params::default`] gives the documented defaults.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Params {
    /// Simulated time, in nanoseconds (default 100 µs).
    pub duration_ns: u64,
    /// Time at the start not measured, in nanoseconds (default: a fifth of the duration).
    pub warmup_ns: Option<u64>,
    /// Payload per packet, in bytes (default 2048, the papers' 2 kB; capped at the smallest
    /// MTU of the hosts and switches).
    pub payload_bytes: u32,
    /// Header and CRC bytes per packet on the wire (default 26: LRH 8, BTH 12, ICRC 4,
    /// VCRC 2).
    pub header_bytes: u32,
    /// Input buffer per (port, VL), in bytes (default 8448: four 2 KiB packets with headers,
    /// in 64-byte credits).
    pub buffer_bytes: u32,
    /// Source queue per (host, VL), in packets (default 4); with [`HostModel::Fifo`], the
    /// length of the host's one send queue.
    pub source_queue: u32,
    /// What a host does with a packet its queue has no room for (default
    /// [`HostModel::Refuse`]).
    pub host: HostModel,
    /// How a switch keeps the packets in an input port's VL buffer (default
    /// [`SwitchBuffers::Fifo`]).
    pub switch_buffers: SwitchBuffers,
    /// Packets one switch input port may be sending at once, over all its VLs and outputs
    /// (`None`, the default: no limit, every (input port, VL) buffer may feed an output at
    /// the same time as the others).
    pub parallel_sends: Option<u32>,
    /// From a packet's head arriving at a switch to its earliest departure, in nanoseconds
    /// (default 100).
    pub switch_latency_ns: u64,
    /// Propagation delay of every link, in nanoseconds (default 5: about a metre of cable).
    pub link_latency_ns: u64,
    /// Offered load per host, a fraction of its link rate (default 1.0: full load, a packet
    /// ready every serialisation time).
    pub load: f64,
    /// Hottest links and most stalled ports listed (default 10).
    pub top: usize,
    /// After the duration, stop generating and run until every packet has arrived or can
    /// move no more (default false: the run stops at the duration).
    pub drain: bool,
    /// An end node's receive rate, a fraction of its link's (default 1: it sinks packets at
    /// line rate). Below 1 the end node drains its receive buffer that much slower than its
    /// link delivers, and returns credits as it drains: the switch port facing an end node
    /// asked for more than it sinks waits for credits, which is how dFtree's loop sees an
    /// end-node hot-spot.
    pub receive_rate: f64,
    /// What dFtree does on a state with dFtree lanes (default [`DftreeMode::Loop`]).
    pub dftree: DftreeMode,
    /// dFtree: time between performance sweeps, in nanoseconds (default 10 µs: the papers'
    /// seconds, scaled to microsecond-long runs; the first sweep, at 0, only records).
    pub dftree_sweep_ns: u64,
    /// dFtree: from a sweep to its moves reaching the sources, in nanoseconds (default 1 µs:
    /// the re-path trap's delivery and the QP change). Packets generated after it take the
    /// new SL; packets already in a source queue or in the fabric keep theirs.
    pub dftree_repath_ns: u64,
    /// dFtree: a port waiting more than this is congested, in XmitWait ticks per second (a
    /// simulated tick is [`TICK_BYTES`] bytes' time on the port: 5.12 ns on 4x EDR). Default
    /// 10 000 000 (a port waiting 5.12 % of the time on 4x EDR): the paper's 100 000 ticks/s
    /// was set for sweeps seconds apart, which average away the brief collisions of random
    /// traffic; 10 µs sweeps see them (a receiver of uniform traffic at 0.8 load with a 0.9
    /// receive rate waits up to about 2 % of the time, a hot-spot's switch port `1 −` the
    /// receive rate).
    pub dftree_threshold_ticks_per_s: f64,
    /// dFtree: sweeps a hot-spot's switch port must stay at or below the threshold before its
    /// contributors' flows move back to the fast lane (default 2).
    pub dftree_release_sweeps: u32,
}

impl Params {
    /// The presets [`Params::preset`] knows, by name.
    pub const PRESETS: [&'static str; 1] = ["papers"];

    /// The parameters a preset sets, over the defaults: `papers` (see [`Params::papers`]).
    pub fn preset(name: &str) -> Result<Params, SimError> {
        match name.trim() {
            "papers" => Ok(Params::papers()),
            other => Err(SimError::Param(format!(
                "preset `{other}`: give {}",
                Params::PRESETS.join(", ")
            ))),
        }
    }

    /// The `papers` preset: the vFtree and dFtree papers' 648-port simulations as this
    /// simulator reproduces them (docs/simulate.md lists every figure, on the papers' tree
    /// with 4x QDR links): 90 µs measured from the start (no warm-up), hosts with one
    /// unbounded queue per VL (the generator of the OMNeT++ model of the papers' time), FIFO
    /// switch buffers without a limit of parallel sends (the defaults), and dFtree's
    /// threshold at 3.2·10^6 XmitWait ticks per second (a port waiting 5.12 % of the time on
    /// 4x QDR, as the default is on 4x EDR). Every other parameter is the default.
    pub fn papers() -> Params {
        Params {
            duration_ns: 90_000,
            warmup_ns: Some(0),
            host: HostModel::Unbounded,
            dftree_threshold_ticks_per_s: 3_200_000.0,
            ..Params::default()
        }
    }
}

/// What the simulation does with a state's dFtree lanes (pairs with several path SLs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DftreeMode {
    /// The run-time loop: sweeps, hot-spots and contributors found from the port counters,
    /// contributors' hot-spot-bound flows moved to the slow lane and back.
    #[default]
    Loop,
    /// The papers' best case: every packet toward a hot-spot of the traffic pattern on the
    /// slow lane from the start (no detection, no delay).
    Oracle,
    /// Every flow on its fast lane (its dFtree lane pair's fast SL).
    Off,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            duration_ns: 100_000,
            warmup_ns: None,
            payload_bytes: 2048,
            header_bytes: 26,
            buffer_bytes: 8448,
            source_queue: 4,
            host: HostModel::Refuse,
            switch_buffers: SwitchBuffers::Fifo,
            parallel_sends: None,
            switch_latency_ns: 100,
            link_latency_ns: 5,
            load: 1.0,
            top: 10,
            drain: false,
            receive_rate: 1.0,
            dftree: DftreeMode::Loop,
            dftree_sweep_ns: 10_000,
            dftree_repath_ns: 1_000,
            dftree_threshold_ticks_per_s: 10_000_000.0,
            dftree_release_sweeps: 2,
        }
    }
}

/// How a host queues what it generates before its link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostModel {
    /// One source queue per VL of [`Params::source_queue`] packets; a packet whose VL queue is
    /// full is not generated (`refused_at_source`), and the host goes on generating: a host
    /// is never held back on one VL by another VL's congestion.
    #[default]
    Refuse,
    /// One source queue per VL of [`Params::source_queue`] packets; a packet whose VL queue is
    /// full is held and the host generates nothing more until it fits (a generator serving
    /// one message at a time, which waits when its VL queue is full: the Mellanox OMNeT++
    /// InfiniBand model's HCA generator).
    Block,
    /// One send queue of [`Params::source_queue`] packets in generation order (an HCA with
    /// one send queue): only its head may leave, on its own VL, and a host whose queue is
    /// full generates nothing more until there is room; a head without credits holds back
    /// every packet behind it, whatever their VLs.
    Fifo,
    /// One queue per VL without a bound ([`Params::source_queue`] is not used): every packet
    /// generated is queued and the host goes on generating, so a packet on one VL passes one
    /// blocked on another (the generator of the OMNeT++ InfiniBand model of the vFtree and
    /// dFtree papers' time). What cannot leave piles up: memory grows with it.
    Unbounded,
}

impl HostModel {
    /// The model's name, as `--host-model` takes it.
    pub fn name(self) -> &'static str {
        match self {
            HostModel::Refuse => "refuse",
            HostModel::Block => "block",
            HostModel::Fifo => "fifo",
            HostModel::Unbounded => "unbounded",
        }
    }

    /// The model a name gives: `refuse`, `block`, `fifo` or `unbounded`.
    pub fn parse(name: &str) -> Result<HostModel, SimError> {
        match name.trim() {
            "refuse" => Ok(HostModel::Refuse),
            "block" => Ok(HostModel::Block),
            "fifo" => Ok(HostModel::Fifo),
            "unbounded" => Ok(HostModel::Unbounded),
            other => Err(SimError::Param(format!(
                "host model `{other}`: give refuse, block, fifo or unbounded"
            ))),
        }
    }
}

/// How a switch keeps the packets of one input port's VL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchBuffers {
    /// One FIFO per (input port, VL): only its head packet is routed and competes for an
    /// output, so a head waiting for a congested output holds back every packet behind it
    /// (head-of-line blocking, as in IB switches).
    #[default]
    Fifo,
    /// Virtual output queues: one queue per (output port, VL) in each (input port, VL)
    /// buffer, all of them drawing on that VL's credits ([`Params::buffer_bytes`]); every
    /// packet is routed as it arrives and the oldest packet for each output competes for it,
    /// so a packet for a free output passes one waiting for a congested output (the switch
    /// input buffer of the OMNeT++ InfiniBand model the vFtree and dFtree papers used).
    Voq,
}

impl SwitchBuffers {
    /// The model's name, as `--switch-buffers` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SwitchBuffers::Fifo => "fifo",
            SwitchBuffers::Voq => "voq",
        }
    }

    /// The model a name gives: `fifo` or `voq`.
    pub fn parse(name: &str) -> Result<SwitchBuffers, SimError> {
        match name.trim() {
            "fifo" => Ok(SwitchBuffers::Fifo),
            "voq" => Ok(SwitchBuffers::Voq),
            other => Err(SimError::Param(format!(
                "switch buffers `{other}`: give fifo or voq"
            ))),
        }
    }
}

/// Parses a duration such as `1ms`, `200us` (or `200µs`), `500ns`, `0.5ms`, `1s` into
/// nanoseconds. A zero duration is refused.
pub fn parse_duration(text: &str) -> Result<u64, SimError> {
    let ns = weft_fabric::input::duration_ns(text)
        .ok_or_else(|| SimError::Duration(text.to_owned()))?
        .round();
    if !(1.0..1e15).contains(&ns) {
        return Err(SimError::Param(format!(
            "duration `{text}` is out of range: from 1 ns to below 10^15 ns (about 11 days of \
             simulated time)"
        )));
    }
    Ok(ns as u64)
}

/// Parses a time span that may be zero, such as a warm-up: `0` (with or without a unit,
/// `0ns`, `0us`) or any duration [`parse_duration`] takes.
pub fn parse_span(text: &str) -> Result<u64, SimError> {
    let t = text.trim();
    let num = t.trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
    let unit = t.get(num.len()..).unwrap_or("").trim();
    let zero = !num.is_empty()
        && num.chars().all(|c| c == '0' || c == '.')
        && num.chars().any(|c| c == '0')
        && ["", "ns", "us", "µs", "ms", "s"].contains(&unit);
    if zero {
        return Ok(0);
    }
    parse_duration(text)
}

/// Runs `a` and `b` on the same traffic, parameters and seed (on two threads) and returns
/// both reports.
pub fn simulate_pair(
    a: &FabricState,
    b: &FabricState,
    traffic: &Traffic,
    params: &Params,
    seed: u64,
) -> Result<(Report, Report), SimError> {
    let (ra, rb) = std::thread::scope(|s| {
        let hb = s.spawn(|| simulate(b, traffic, params, seed));
        let ra = simulate(a, traffic, params, seed);
        let rb = hb
            .join()
            .unwrap_or_else(|_| Err(SimError::Param("the second simulation stopped".into())));
        (ra, rb)
    });
    let (ra, rb) = (ra?, rb?);
    if ra.hosts != rb.hosts {
        return Err(SimError::DifferentHosts(ra.hosts, rb.hosts));
    }
    Ok((ra, rb))
}

/// The gain of `x` over `base` in per cent: `(x / base - 1) × 100` (0 when `base` is 0).
pub fn gain_percent(x: f64, base: f64) -> f64 {
    if base > 0.0 {
        (x / base - 1.0) * 100.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration("200us"), Ok(200_000));
        assert_eq!(parse_duration("200µs"), Ok(200_000));
        assert_eq!(parse_duration("0.5ms"), Ok(500_000));
        assert_eq!(parse_duration("750ns"), Ok(750));
        assert_eq!(parse_duration("2s"), Ok(2_000_000_000));
        assert_eq!(
            parse_duration("1000000000s").map_err(|e| e.to_string()),
            Err(
                "duration `1000000000s` is out of range: from 1 ns to below 10^15 ns (about 11 \
                 days of simulated time)"
                    .to_owned()
            )
        );
        for bad in ["", "1", "ms", "1 h", "0ms", "-1ms", "1.2.3ms", "abc"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        // A span (a warm-up) may be zero, with or without a unit; anything else parses as a
        // duration.
        for zero in ["0", "0ns", "0us", "0µs", "0.0ms", " 0 "] {
            assert_eq!(parse_span(zero), Ok(0), "{zero}");
        }
        assert_eq!(parse_span("200us"), Ok(200_000));
        for bad in ["", "0h", "0x", "1", "-0ms", ".ms", "abc"] {
            assert!(parse_span(bad).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod sim_bounds_tests;
#[cfg(test)]
mod sim_dftree_tests;
#[cfg(test)]
mod sim_parts_tests;
#[cfg(test)]
mod sim_tests;
