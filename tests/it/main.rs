//! weft-tests' one integration-test binary: a module per suite (one link step for all of them;
//! `cargo test -p weft-tests --test it NAME::` runs one suite).

/// `weft apply` on the in-process fabric: every fault at every SMP of a plan ends in exactly the
/// old or the new state; a crash recovered back and forward; a stale fabric refused.
mod apply;
/// A plan too large for one part, applied part by part on the sim: one Get per block however
/// long the plan takes to read, every fault and journal failure ending old or new, a second
/// writer caught at any SMP (issue 48).
mod apply_parts;
/// fat_tree's parallel cables on director-style trees with missing cables: every bundle dealt as
/// a per-port-counter reference deals it.
mod cable_balance;
/// fat_tree on degraded trees of 2–4 levels (faults at every level): proven or refused.
mod degraded_trees;
/// The first deployment at two sizes on the sim: SMPs and the apply's own work grow with the
/// LFT blocks written, counted (issue 48).
mod deploy_growth;
/// Fat-tree detection on fabrics without levels (ibnetdiscover dumps, `weft import`).
mod detection;
/// weft's own output: every compiled example proven with a checked certificate; every breaking
/// single LFT corruption of a compiled fabric caught with a replayed witness.
mod examples_verify;
/// The ports report (`ibnetdiscover -p`) and `iblinkinfo` of an ibsim fabric read as its
/// topology.
mod ibsim_reports;
/// ibsim interop: a fabric written by weft, loaded by ibsim, read back with ibnetdiscover.
mod ibsim_roundtrip;
/// `layered` on tori, rings, a degraded mesh, a broken fat-tree and random irregular fabrics.
mod layered;
/// The `mad` backend: real SMPs through libibmad on ibsim, read back with smpquery and ibroute.
mod mad;
/// VM migration plans (Paper A): Table 2's SMP counts, every step proven, a bad order caught.
mod migration;
/// Multicast trees on `layered` tori and random irregular fabrics: proven with the unicast
/// routes (a VL of their own where no layer's admits them) or refused naming why.
mod multicast_layered;
/// weft's outputs used by the real tools (ibnetdiscover, OpenSM's file engine, dump_fts, ibdmchk).
mod opensm_interop;
/// The verifier on OpenSM's own output: ftree, minhop and lash run by the real OpenSM on ibsim.
mod opensm_verify;
/// `weft plan`: a link failure planned into proven steps; a bad order caught.
mod plan;
/// QoS classes: vFtree's matrix, dFtree lane pairs, per-class VLs, a broken SL2VL refused.
mod qos;
/// Rail-optimised AI fabrics (superpod) and director chassis from the stdlib, routed and proven.
mod rails;
/// Service nodes and real trees: SHARP aggregation nodes on every switch, the 666-switch
/// SuperPOD-class tree, random trees with management islands (issue 27).
mod service_nodes;
/// OpenSM's `opensm-subnet.lst` of an ibsim fabric read as its topology, the same as
/// ibnetdiscover's dump.
mod subnet_lst;
/// Deployment you can trust: every write proven on the fabric, a second writer caught, journal
/// failures rolled back, recovery only from a fabric the journal explains, the fault matrix.
mod trust;
/// `weft watch`'s sweeps on the in-process fabric: one SMP per switch when nothing changed; a
/// pulled cable, a rebooted switch and another writer's block found; repairs proven (issue 47).
mod watch;
