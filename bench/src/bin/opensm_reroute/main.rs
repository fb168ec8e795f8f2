//! OpenSM's way, measured: how many LFT blocks the real OpenSM writes for a link failure and
//! for a change of routing engine, and whether its unordered distribution of them can pass
//! through unsafe states — checked by weft's transition verifier — beside what `weft plan`
//! does for the same change.
//!
//! ```text
//! bench/opensm-reroute.sh [--link NODE.p[N]] [--root SWITCH] [--scopes hca-to-hca,all]
//!                         [--unsafe-states N] [--json FILE] [--keep DIR] [--timeout SECS]
//!                         [FILE.weft]            # default examples/cluster-648.weft
//! ```
//!
//! 1. `weft build FILE` (weft's LIDs, the ibsim net file, `guid2lid`), and the same program
//!    with `faults { link LINK down }` (default `leaf5.p[25]` on `cluster-648`, `leaf3.p[20]`
//!    on `cluster-11664`; `--link` otherwise) and with `routing { engine = updn, roots = [ROOT] }`
//!    (default `core1` where there is one, else `spine1`).
//! 2. ibsim (with its console) on the net file; OpenSM 3.3.23 as a daemon on it:
//!    `opensm -F CONF -R ftree -s 0` (no periodic sweep: only the fault's traps sweep; CONF:
//!    `log_flags 0x83`, and through `per_module_logging_file` DEBUG for `osm_ucast_mgr.c`
//!    alone, flushed per line — at 11 664 nodes its routing lines are gigabytes a sweep, read
//!    as they come and the log emptied after each sweep), its `guid2lid` cache weft's (the
//!    same LIDs). Once its log ends in `SUBNET UP` for 10 s (a second sweep waited for too),
//!    every switch's LFT is read back with `dump_fts` (SubnGet(LinearForwardingTable) over
//!    MADs).
//! 3. **The fault**: ibsim's console `Unlink "S-<guid>"[port]` (both ends go Down, each switch
//!    sends trap 128 to the SM); OpenSM sweeps on the trap (a SIGHUP, to its PID, only if its
//!    log shows no trap 128 within 60 s; the output says which), and once it settles the LFTs
//!    are read back. Then `ReLink` and OpenSM's sweep back (read back again: the start of the
//!    engine change).
//! 4. **The engine change**: OpenSM cannot change its engine while it runs (`routing_engine`
//!    is not re-read on SIGHUP in 3.3.23, `osm_subnet.c`), so the ftree daemon is stopped
//!    (SIGTERM to its PID) and `opensm -R updn -a ROOTFILE` (one GUID: ROOT) starts with the
//!    same cache, as an operator would; at its `SUBNET UP` the LFTs are read back.
//! 5. For each change:
//!    * **blocks written**: OpenSM's own count — one `Writing FT block B to switch 0xG` DEBUG
//!      line per SubnSet(LinearForwardingTable) it sends (`set_lft_block`, `osm_ucast_mgr.c`:
//!      a block is sent only when it differs from OpenSM's copy of what the switch holds —
//!      the blocks it set or read before — unless the switch or the subnet needs a full
//!      update, as every switch does for an SM that just started), in the order it sends
//!      them (`ucast_mgr_pipeline_fwd_tbl`: block 0 to every switch in the order of its switch
//!      table, keyed by the GUID in network byte order, then block 1, …; at most
//!      `max_wire_smps`, 4, in flight; not switch by switch); and the blocks whose content differs
//!      between the two read-backs (what any writer must send);
//!    * **every mix at once**: weft states of the fabric (the fault's fabric for the fault:
//!      the old tables on it are what the switches hold when the trap arrives) with the old
//!      and with the new tables, checked as one step by
//!      `weft_verifier::transition::check_step` — any subset of the writes may have landed,
//!      which is what SMPs in flight (and lost, retried after a timeout) give: loop-free,
//!      deadlock-free, connected, each with its witness;
//!    * **in OpenSM's order**: the same writes one SMP at a time in the order of its log, each
//!      landed before the next (the most orderly run OpenSM can have), each checked against
//!      the state the ones before it left (`Transition::step`): the first unsafe state, and
//!      with `--unsafe-states N` up to N of them (each one past the first is usually unsafe
//!      too and is checked exactly, over every destination: seconds each at 11 664 nodes).
//!    * each of these for the pairs of `hca-to-hca` and of `all` (`--scopes`).
//! 6. Beside it, `weft plan --from BUILD/state.json DESIRED --scope S --format json` for the
//!    same change, from weft's own tables and from OpenSM's (its ftree tables read back,
//!    written as a `state.json`): LFT SMPs, steps, the lower bound, or the refusal verbatim.
//!
//! Everything but the timings is deterministic (OpenSM's engines and its sending order are).

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark binary: it reports on the terminal and stops on a broken setup"
)]

mod osm;
mod render;

use osm::{signal, start_opensm, LogTail, Sweep};
use render::human;

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use weft_bench::{with_faults, with_updn};
use weft_fabric::{Fabric, FabricState, Lft, NodeId, SwitchState, ValidState};
use weft_formats::build_dir;
use weft_formats::state_json::{FromJson, ToJson};
use weft_tests::ibsim::{Background, Ibsim, Limits, Tools};
use weft_verifier::transition::{self, Change, StepCheck, Transition};
use weft_verifier::{Outcome, Scope};

struct Opts {
    file: PathBuf,
    link: Option<String>,
    root: Option<String>,
    scopes: Vec<Scope>,
    json: Option<PathBuf>,
    keep: Option<PathBuf>,
    timeout: Duration,
    unsafe_states: usize,
}

fn usage() -> ! {
    eprintln!(
        "usage: opensm_reroute [--link NODE.p[N]] [--root SWITCH] [--scopes hca-to-hca,all] \
         [--unsafe-states N] [--json FILE] [--keep DIR] [--timeout SECS] [FILE.weft]"
    );
    std::process::exit(2)
}

fn parse_args() -> Opts {
    let mut o = Opts {
        file: weft_bench::root().join("examples/cluster-648.weft"),
        link: None,
        root: None,
        scopes: vec![Scope::HcaToHca, Scope::All],
        json: None,
        keep: None,
        timeout: Duration::from_secs(1800),
        unsafe_states: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--link" => o.link = Some(value()),
            "--root" => o.root = Some(value()),
            "--scopes" => {
                o.scopes = value()
                    .split(',')
                    .map(|s| match s {
                        "all" => Scope::All,
                        "hca-to-hca" => Scope::HcaToHca,
                        _ => usage(),
                    })
                    .collect()
            }
            "--json" => o.json = Some(PathBuf::from(value())),
            "--keep" => o.keep = Some(PathBuf::from(value())),
            "--unsafe-states" => o.unsafe_states = value().parse().unwrap_or_else(|_| usage()),
            "--timeout" => {
                o.timeout = Duration::from_secs(value().parse().unwrap_or_else(|_| usage()))
            }
            "-h" | "--help" => usage(),
            f if !f.starts_with('-') => o.file = PathBuf::from(f),
            _ => usage(),
        }
    }
    o
}

/// The link of the issue's fault on the two trees it names.
fn default_link(file: &Path) -> Option<&'static str> {
    match file.file_stem()?.to_str()? {
        "cluster-648" => Some("leaf5.p[25]"),
        "cluster-11664" => Some("leaf3.p[20]"),
        _ => None,
    }
}

/// `weft ARGS`, its output; panics unless it succeeds.
fn weft_ok(weft: &Path, args: &[&str]) -> std::process::Output {
    let o = Command::new(weft).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "weft {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// `weft build SRC -o DIR` (the text written to `DIR.weft` first); the state it built.
fn build(weft: &Path, work: &Path, name: &str, src: &str) -> (PathBuf, ValidState) {
    let file = work.join(format!("{name}.weft"));
    std::fs::write(&file, src).unwrap();
    let dir = work.join(name);
    weft_ok(
        weft,
        &[
            "build",
            file.to_str().unwrap(),
            "-o",
            dir.to_str().unwrap(),
            "-q",
        ],
    );
    let st = ValidState::from_json(&std::fs::read_to_string(dir.join(build_dir::STATE)).unwrap())
        .unwrap_or_else(|e| panic!("{e}"));
    (file, st)
}

/// `fabric` with `lids`, the SM where `like` says, and the LFTs `dump_fts` read (no SL→VL
/// tables, path SLs or multicast: every SL on VL 0, and without QoS SL 0 is every path's;
/// what is proven covers unicast only).
fn osm_state(fabric: &Fabric, like: &FabricState, fts: &BTreeMap<(u64, u16), u8>) -> ValidState {
    let mut st = FabricState::new(fabric.clone());
    st.lids = like.lids.clone();
    st.sm = like.sm.clone();
    let mut by_guid: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for (&(guid, lid), &port) in fts {
        let t = by_guid.entry(guid).or_default();
        let i = usize::from(lid);
        if t.len() <= i {
            t.resize(i + 1, weft_fabric::LFT_UNSET);
        }
        t[i] = port;
    }
    for id in fabric.node_ids().filter(|&id| fabric.node(id).is_switch()) {
        let ports = by_guid
            .remove(&fabric.node(id).guid().0)
            .unwrap_or_default();
        st.switches.insert(
            id,
            SwitchState {
                lft: Lft { ports },
                sl2vl: Vec::new(),
                sl2vl_all: None,
            },
        );
    }
    assert!(
        by_guid.is_empty(),
        "dump_fts read switches the fabric does not have: {:x?}",
        by_guid.keys().collect::<Vec<_>>()
    );
    ValidState::new(st).unwrap_or_else(|e| panic!("{e}"))
}

/// A check's outcome as a word.
fn word(o: &Outcome) -> String {
    match o {
        Outcome::Proven => "proven".to_owned(),
        Outcome::Violated => "VIOLATED".to_owned(),
        Outcome::Unknown(why) => format!("unknown ({why})"),
    }
}

/// OpenSM's writes in its order, one SMP per step.
#[derive(Serialize)]
struct InOrder {
    /// SMPs checked (those that change no entry are states already checked: skipped).
    steps: usize,
    /// SMPs that change an entry, all told.
    of: usize,
    /// Whether the check stopped at `--unsafe-states` unsafe states.
    stopped: bool,
    /// Steps whose mix (the one SMP landing or not) is unsafe.
    unsafe_steps: usize,
    /// Of those, with a transient forwarding loop, a credit loop, a broken route.
    forwarding_loops: usize,
    credit_loops: usize,
    broken_routes: usize,
    /// The first unsafe step: its index in OpenSM's order (1-based), the switch and block.
    first_unsafe: Option<(usize, String, u16)>,
    first_check: Option<StepCheck>,
    /// Entries that differ but no logged write covers (0 when the log accounts for all).
    unlogged_entries: usize,
}

/// One change as OpenSM made it.
#[derive(Serialize)]
struct Measured {
    what: String,
    /// How OpenSM was made to recompute (trap, SIGHUP, restart).
    trigger: String,
    /// The engine that configured the tables, from OpenSM's log.
    engine: Option<String>,
    /// Seconds from the fault (or the start) to the first new `SUBNET UP`.
    seconds: f64,
    /// OpenSM's sweeps that ended in `SUBNET UP` (their writes all counted).
    sweeps: usize,
    blocks_written: usize,
    switches_written: usize,
    /// Logged writes of a block whose content does not change (all of a switch OpenSM
    /// updates in full, or a block written twice).
    blocks_written_unchanged: usize,
    blocks_changed: usize,
    switches_changed: usize,
    entries_changed: usize,
    /// OpenSM's `ERR` lines of the sweep (at most 5): why an engine fell back.
    opensm_errors: Vec<String>,
    /// Per scope of pairs checked.
    checks: Vec<Checked>,
}

/// The change checked for one scope of pairs.
#[derive(Serialize)]
struct Checked {
    scope: String,
    /// The whole change as one step: every mix of the writes.
    one_step: StepCheck,
    in_order: InOrder,
    /// The new tables, verified on their own (deadlock freedom, connectivity).
    after_verdict: String,
    weft_plan: Vec<WeftPlan>,
}

/// What `weft plan` does for the same change.
#[derive(Serialize)]
struct WeftPlan {
    from: String,
    command: String,
    ok: bool,
    lft_smps: Option<u64>,
    steps: Option<usize>,
    lower_bound: Option<u64>,
    how: Option<String>,
    /// Every step proven (from its JSON).
    all_proven: Option<bool>,
    /// The refusal, verbatim, when it refused.
    refusal: Option<String>,
    /// Its wall time.
    seconds: f64,
}

#[derive(Serialize)]
struct Out {
    fabric: String,
    switches: usize,
    nodes: usize,
    link: String,
    root: String,
    /// OpenSM's ftree tables at the start, verified, per scope.
    opensm_ftree_verdict: Vec<(String, String)>,
    changes: Vec<Measured>,
}

fn verdict(st: &ValidState, scope: Scope) -> String {
    let r = weft_verifier::verify(
        st,
        &weft_verifier::Options {
            scope,
            certificate: false,
            ..weft_verifier::Options::default()
        },
    );
    format!(
        "deadlock-free {}, connected {} ({} failed route(s))",
        word(&r.verdict.deadlock_free),
        word(&r.verdict.connected),
        r.failed_routes
    )
}

/// (switch, block) pairs whose 64 entries differ, and the entries.
fn differing_blocks(a: &ValidState, b: &ValidState) -> (BTreeSet<(NodeId, u16)>, usize) {
    let ch = transition::changes(a, b);
    let blocks = ch.iter().map(|c| (c.switch, c.lid.0 / 64)).collect();
    (blocks, ch.len())
}

/// OpenSM's logged writes applied one at a time from `before` toward `after`.
/// Stops after `max_unsafe` unsafe states: once a state has a credit loop the ones after it
/// usually keep it, and each such state is checked exactly (every destination, seconds at
/// 11 664 nodes).
fn in_order(
    before: &ValidState,
    after: &ValidState,
    log: &[(u64, u16)],
    scope: Scope,
    max_unsafe: usize,
) -> InOrder {
    let f = &before.fabric;
    let mut pending: BTreeMap<(NodeId, u16), Vec<Change>> = BTreeMap::new();
    for c in transition::changes(before, after) {
        pending.entry((c.switch, c.lid.0 / 64)).or_default().push(c);
    }
    let mut t = Transition::new(before, scope);
    let mut out = InOrder {
        steps: 0,
        unsafe_steps: 0,
        forwarding_loops: 0,
        credit_loops: 0,
        broken_routes: 0,
        first_unsafe: None,
        first_check: None,
        unlogged_entries: 0,
        of: 0,
        stopped: false,
    };
    out.of = pending.len();
    for (i, &(guid, block)) in log.iter().enumerate() {
        if out.unsafe_steps >= max_unsafe {
            out.stopped = true;
            break;
        }
        let Some(id) = f.find_guid(weft_fabric::Guid(guid)) else {
            continue;
        };
        let Some(changes) = pending.remove(&(id, block)) else {
            continue;
        };
        out.steps += 1;
        let c = t.step(&changes);
        if !c.is_proven() {
            out.unsafe_steps += 1;
            out.forwarding_loops += usize::from(c.forwarding_loop.is_some());
            out.credit_loops += usize::from(!c.credit_loop.is_empty());
            out.broken_routes += usize::from(c.broken.is_some());
            if out.first_unsafe.is_none() {
                out.first_unsafe = Some((i + 1, f.node(id).name().to_owned(), block));
                out.first_check = Some(c);
            }
        }
    }
    if !out.stopped {
        out.unlogged_entries = pending.values().map(Vec::len).sum();
    }
    out
}

/// `weft plan --from FROM DESIRED`.
fn weft_plan(
    weft: &Path,
    work: &Path,
    label: &str,
    from: &Path,
    desired: &Path,
    scope: Scope,
) -> WeftPlan {
    let args = [
        "plan",
        "--from",
        from.to_str().unwrap(),
        desired.to_str().unwrap(),
        "--scope",
        scope.as_str(),
        "--format",
        "json",
    ];
    let t = Instant::now();
    let o = Command::new(weft).args(args).output().unwrap();
    let seconds = t.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let json: Option<serde_json::Value> = serde_json::from_str(&stdout).ok();
    let ok = o.status.success() && json.as_ref().is_some_and(|j| j["ok"] == true);
    let get = |p: &str| json.as_ref().and_then(|j| j.pointer(p)).cloned();
    let steps = get("/steps").and_then(|s| s.as_array().map(Vec::len));
    let all_proven = get("/steps").and_then(|s| {
        s.as_array().map(|v| {
            v.iter().all(|s| {
                ["loop_free", "deadlock_free", "connected"]
                    .iter()
                    .all(|k| s["check"][k]["result"] == "proven")
            })
        })
    });
    WeftPlan {
        from: label.to_owned(),
        // Paths relative to the (temporary) work directory: the same run, the same text.
        command: format!("weft {}", args.join(" ")).replace(&format!("{}/", work.display()), ""),
        ok,
        lft_smps: get("/totals/lft_smps").and_then(|v| v.as_u64()),
        steps,
        lower_bound: get("/totals/lower_bound/smps").and_then(|v| v.as_u64()),
        how: get("/target/how")
            .or_else(|| get("/target/kind"))
            .and_then(|v| v.as_str().map(str::to_owned)),
        all_proven,
        // Its findings' codes and messages (the JSON a refusal prints), else its stderr.
        refusal: (!ok).then(|| {
            let findings: Vec<String> = get("/findings")
                .and_then(|f| f.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter(|f| f["level"] == "error")
                .map(|f| {
                    format!(
                        "{}: {}",
                        f["code"].as_str().unwrap_or(""),
                        f["message"].as_str().unwrap_or("")
                    )
                })
                .collect();
            if findings.is_empty() {
                String::from_utf8_lossy(&o.stderr).trim().to_owned()
            } else {
                findings.join("; ")
            }
        }),
        seconds,
    }
}

/// What OpenSM did for one change: its sweep's log and the tables before and after.
struct Observed<'a> {
    what: String,
    trigger: String,
    seconds: f64,
    sweep: Sweep,
    before: &'a ValidState,
    after: &'a ValidState,
}

fn measure(sw: Observed<'_>, scopes: &[Scope], max_unsafe: usize) -> Measured {
    let (before, after) = (sw.before, sw.after);
    let log = &sw.sweep.writes;
    let (blocks, entries) = differing_blocks(before, after);
    let checks = scopes
        .iter()
        .map(|&scope| {
            let t = Instant::now();
            let one_step =
                transition::check_step(before, after, scope).unwrap_or_else(|e| panic!("{e}"));
            let in_order = in_order(before, after, log, scope, max_unsafe);
            let after_verdict = verdict(after, scope);
            eprintln!(
                "  checked for {scope} in {:.1} s",
                t.elapsed().as_secs_f64()
            );
            Checked {
                scope: scope.as_str().to_owned(),
                one_step,
                in_order,
                after_verdict,
                weft_plan: Vec::new(),
            }
        })
        .collect();
    Measured {
        what: sw.what,
        trigger: sw.trigger,
        engine: sw.sweep.engine,
        seconds: sw.seconds,
        sweeps: sw.sweep.ups,
        blocks_written: log.len(),
        blocks_written_unchanged: {
            let f = &before.fabric;
            let mut left = blocks.clone();
            log.iter()
                .filter(|&&(g, b)| {
                    !f.find_guid(weft_fabric::Guid(g))
                        .is_some_and(|id| left.remove(&(id, b)))
                })
                .count()
        },
        switches_written: log.iter().map(|w| w.0).collect::<BTreeSet<_>>().len(),
        blocks_changed: blocks.len(),
        switches_changed: blocks.iter().map(|b| b.0).collect::<BTreeSet<_>>().len(),
        entries_changed: entries,
        opensm_errors: sw.sweep.errors,
        checks,
    }
}

/// weft's builds of the fabric as it is, with the fault, and with updn; and the names the
/// run needs.
struct Builds {
    old: ValidState,
    faulted: ValidState,
    /// The fault's and updn's build directories.
    fault_file: PathBuf,
    updn_file: PathBuf,
    /// The updn root's name.
    root: String,
    /// The faulted link's node GUID and port.
    node_guid: u64,
    port: u8,
    root_guid: u64,
}

impl Builds {
    /// Builds `src` three ways with `weft` in `work`, faulting `link`.
    fn make(o: &Opts, weft: &Path, work: &Path, src: &str, link: &str) -> Builds {
        let (_, old) = build(weft, work, "old", src);
        let f = &old.fabric;
        let root = o.root.clone().unwrap_or_else(|| {
            if f.find("core1").is_some() {
                "core1"
            } else {
                "spine1"
            }
            .to_owned()
        });
        let (fault_file, faulted) = build(
            weft,
            work,
            "fault",
            &with_faults(src, &format!("        link {link} down\n")),
        );
        assert_eq!(faulted.lids, old.lids, "a fault changes no LID");
        let (updn_file, _) = build(weft, work, "updn", &with_updn(src, &root));
        let (node, port) = link
            .split_once(".p[")
            .and_then(|(n, p)| Some((n, p.strip_suffix(']')?.parse::<u8>().ok()?)))
            .unwrap_or_else(|| panic!("--link {link}: NODE.p[N]"));
        let node_guid = f
            .node(f.find(node).unwrap_or_else(|| panic!("no node `{node}`")))
            .guid()
            .0;
        let root_guid = f
            .node(f.find(&root).unwrap_or_else(|| panic!("no node `{root}`")))
            .guid()
            .0;
        eprintln!(
            "{}: {} switches, {} nodes; fault: link {link} down; engine change: ftree → updn rooted at {root}",
            o.file.display(),
            f.switch_count(),
            f.nodes().len()
        );
        Builds {
            old,
            faulted,
            fault_file,
            updn_file,
            root,
            node_guid,
            port,
            root_guid,
        }
    }
}

/// Sends `command` to ibsim's console and waits for OpenSM's sweep: on the trap, or on a
/// SIGHUP when none comes. Returns what triggered it, its seconds and what it wrote.
fn sweep(
    sim: &Ibsim,
    tail: &mut LogTail,
    osm: &mut Background,
    command: &str,
    timeout: Duration,
) -> (String, f64, Sweep) {
    let said = sim.console(command).unwrap_or_else(|e| panic!("{e}"));
    assert!(!said.contains('#'), "ibsim: {said}");
    let t = Instant::now();
    let verb = command.split_whitespace().next().unwrap_or(command);
    let mut trigger = format!("trap 128 (ibsim's `{verb}`)");
    if !tail.wait_trap(Duration::from_secs(60)) {
        signal(osm.pid(), "HUP");
        trigger = "SIGHUP (no trap 128 in its log within 60 s)".to_owned();
    }
    assert!(tail.wait_up(osm, timeout), "OpenSM did not sweep");
    let seen = tail.take();
    let secs = seen.first_up.map_or(0.0, |u| (u - t).as_secs_f64());
    (trigger, secs, seen)
}

/// The engine change: OpenSM stopped, restarted with updn rooted at `root_guid`, its tables
/// read back; ibsim then stops. Returns its sweep, its seconds and the LFTs.
fn restart_updn(
    sim: Ibsim,
    osm: Background,
    log1: &Path,
    work: &Path,
    cache: &Path,
    root_guid: u64,
    timeout: Duration,
) -> (Sweep, f64, BTreeMap<(u64, u16), u8>) {
    signal(osm.pid(), "TERM");
    let _ = osm.wait(Duration::from_secs(30));
    let _ = std::fs::remove_file(log1);
    let roots = work.join("roots");
    std::fs::write(&roots, format!("0x{root_guid:016x}\n")).unwrap();
    let log2 = work.join("osm-updn.log");
    let mut tail = LogTail::new(&log2);
    let t = Instant::now();
    let mut osm = start_opensm(&sim, "updn", &["-a", roots.to_str().unwrap()], &log2, cache);
    assert!(
        tail.wait_up(&mut osm, timeout),
        "OpenSM (updn) did not reach SUBNET UP"
    );
    let seen = tail.take();
    let secs = seen.first_up.map_or(0.0, |u| (u - t).as_secs_f64());
    eprintln!(
        "engine change: SUBNET UP after {secs:.1} s ({} LFT blocks written); reading back, checking",
        seen.writes.len()
    );
    let updn = sim.lfts().unwrap_or_else(|e| panic!("{e}"));
    drop(osm);
    drop(sim);
    let _ = std::fs::remove_file(&log2);
    (seen, secs, updn)
}

/// weft's plans from each of `states` (whose, state file) to `desired`, for each of `c`'s
/// checks' scopes.
fn add_weft_plans(
    weft: &Path,
    work: &Path,
    states: &[(&str, &Path)],
    c: &mut Measured,
    desired: &Path,
) {
    for ch in &mut c.checks {
        let scope = if ch.scope == "all" {
            Scope::All
        } else {
            Scope::HcaToHca
        };
        ch.weft_plan = states
            .iter()
            .map(|&(whose, from)| weft_plan(weft, work, whose, from, desired, scope))
            .collect();
    }
}

/// ibsim on the healthy fabric, and OpenSM (ftree) up on it with its tables read back.
struct Ftree {
    sim: Ibsim,
    /// OpenSM's cache directory (its `guid2lid` the build's).
    cache: PathBuf,
    /// OpenSM's log.
    log1: PathBuf,
    tail: LogTail,
    osm: Background,
    /// The LFTs OpenSM wrote.
    ftree: BTreeMap<(u64, u16), u8>,
}

impl Ftree {
    /// Starts ibsim on `work`'s `old` build of `f` and OpenSM (ftree) on it.
    fn start(tools: &Tools, work: &Path, f: &Fabric, timeout: Duration) -> Ftree {
        let net = std::fs::read_to_string(work.join("old").join(build_dir::TOPOLOGY)).unwrap();
        let sim = Ibsim::start_with_console(tools, &net, Some(Limits::for_fabric(f)))
            .unwrap_or_else(|e| panic!("{e}"));
        let cache = work.join("osm-cache");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::copy(
            work.join("old").join(build_dir::GUID2LID),
            cache.join("guid2lid"),
        )
        .unwrap();
        let log1 = work.join("osm-ftree.log");
        let mut tail = LogTail::new(&log1);
        let t = Instant::now();
        let mut osm = start_opensm(&sim, "ftree", &[], &log1, &cache);
        assert!(
            tail.wait_up(&mut osm, timeout),
            "OpenSM (ftree) did not reach SUBNET UP"
        );
        let first = tail.take();
        eprintln!(
            "OpenSM {}: SUBNET UP after {:.1} s ({} LFT blocks written); reading the LFTs back",
            first.engine.as_deref().unwrap_or("?"),
            first.first_up.map_or(0.0, |u| (u - t).as_secs_f64()),
            first.writes.len()
        );
        let ftree = sim.lfts().unwrap_or_else(|e| panic!("{e}"));
        Ftree {
            sim,
            cache,
            log1,
            tail,
            osm,
            ftree,
        }
    }
}

fn main() {
    let o = parse_args();
    let tools = Tools::find(&["opensm", "dump_fts"])
        .unwrap_or_else(|missing| panic!("missing: {}", missing.join(", ")));
    let weft = weft_bench::weft_binary()
        .expect("the release weft binary beside this one (bench/opensm-reroute.sh builds it)");
    let work = std::env::temp_dir().join(format!("weft-opensm-reroute-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let src =
        std::fs::read_to_string(&o.file).unwrap_or_else(|e| panic!("{}: {e}", o.file.display()));
    let link = o
        .link
        .clone()
        .or_else(|| default_link(&o.file).map(str::to_owned))
        .unwrap_or_else(|| {
            eprintln!(
                "no default link for {}: give --link NODE.p[N]",
                o.file.display()
            );
            usage()
        });

    // weft's builds: the fabric as it is, with the fault, with updn.
    let Builds {
        old,
        faulted,
        fault_file,
        updn_file,
        root,
        node_guid,
        port,
        root_guid,
    } = Builds::make(&o, &weft, &work, &src, &link);
    let f = &old.fabric;

    // ibsim and OpenSM (ftree).
    let Ftree {
        sim,
        cache,
        log1,
        mut tail,
        mut osm,
        ftree,
    } = Ftree::start(&tools, &work, f, o.timeout);
    let lfts = |sim: &Ibsim| sim.lfts().unwrap_or_else(|e| panic!("{e}"));
    let a = osm_state(f, &old, &ftree);
    let ftree_verdict: Vec<(String, String)> = o
        .scopes
        .iter()
        .map(|&s| (s.as_str().to_owned(), verdict(&a, s)))
        .collect();
    let a_dir = work.join("osm-ftree");
    std::fs::create_dir_all(&a_dir).unwrap();
    std::fs::write(a_dir.join(build_dir::STATE), a.to_json()).unwrap();

    // The fault: OpenSM sweeps on the trap, or on a SIGHUP when it does not.
    let (trigger, secs, seen) = sweep(
        &sim,
        &mut tail,
        &mut osm,
        &format!("Unlink \"S-{node_guid:016x}\"[{port}]"),
        o.timeout,
    );
    eprintln!(
        "fault: SUBNET UP after {secs:.1} s ({} LFT blocks written); reading back, checking",
        seen.writes.len()
    );
    let ftree_fault = lfts(&sim);
    let (before, after) = (
        osm_state(&faulted.fabric, &old, &ftree),
        osm_state(&faulted.fabric, &old, &ftree_fault),
    );
    let mut fault = measure(
        Observed {
            what: format!("link {link} down"),
            trigger,
            seconds: secs,
            sweep: seen,
            before: &before,
            after: &after,
        },
        &o.scopes,
        o.unsafe_states,
    );

    // Back to the healthy fabric.
    let (_, _, seen) = sweep(
        &sim,
        &mut tail,
        &mut osm,
        &format!("ReLink \"S-{node_guid:016x}\"[{port}]"),
        o.timeout,
    );
    let healed = lfts(&sim);
    eprintln!(
        "link back up: {} LFT blocks written, OpenSM's tables {} the first ones",
        seen.writes.len(),
        if healed == ftree {
            "equal"
        } else {
            "differ from"
        }
    );

    // The engine change: OpenSM restarted with updn.
    let (seen, secs, updn) = restart_updn(sim, osm, &log1, &work, &cache, root_guid, o.timeout);
    let (before, after) = (osm_state(f, &old, &healed), osm_state(f, &old, &updn));
    let mut engine = measure(
        Observed {
            what: format!("ftree → updn (root {root})"),
            trigger: "OpenSM restarted with -R updn (the engine is not re-read on SIGHUP)"
                .to_owned(),
            seconds: secs,
            sweep: seen,
            before: &before,
            after: &after,
        },
        &o.scopes,
        o.unsafe_states,
    );
    if let Some(keep) = &o.keep {
        std::fs::create_dir_all(keep).unwrap();
        std::fs::copy(
            a_dir.join(build_dir::STATE),
            keep.join("opensm-ftree.state.json"),
        )
        .unwrap();
    }

    // weft for the same changes.
    let weft_dir = work.join("old").join(build_dir::STATE);
    let osm_dir = a_dir.join(build_dir::STATE);
    let states = [
        ("weft's", weft_dir.as_path()),
        ("OpenSM's", osm_dir.as_path()),
    ];
    add_weft_plans(&weft, &work, &states, &mut fault, &fault_file);
    add_weft_plans(&weft, &work, &states, &mut engine, &updn_file);

    let out = Out {
        fabric: o.file.display().to_string(),
        switches: f.switch_count(),
        nodes: f.nodes().len(),
        link,
        root,
        opensm_ftree_verdict: ftree_verdict,
        changes: vec![fault, engine],
    };
    print!("{}", human(&out));
    if let Some(p) = &o.json {
        std::fs::write(p, serde_json::to_string_pretty(&out).unwrap() + "\n").unwrap();
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[cfg(test)]
mod tests;
