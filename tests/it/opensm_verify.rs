//! The verifier on OpenSM's own output. Each test builds a fabric, writes it as an ibsim net
//! file, runs the real OpenSM on ibsim, reads the topology back with `ibnetdiscover` (for the
//! LIDs OpenSM assigned) and OpenSM's dumps (`opensm-lfts.dump`, `opensm-sl2vl.dump`), and
//! verifies the result:
//!
//! * `ftree` on a two-level fat-tree: HCA traffic is deadlock-free and connected; with switch
//!   traffic included, exactly the spine↔spine pairs are unreachable (ftree routes no LID
//!   between roots);
//! * `minhop` on a 6-switch ring: a credit loop, its witness routes replayed on the tables;
//! * `lash` on the same ring, with its SL2VL dump and its path SLs: deadlock-free; the same
//!   tables with every SL forced to 0: a credit loop;
//! * `updn` (rooted at `R0`) on the same ring with a multicast tree along the ring, cut at each
//!   cable in turn, given as an `opensm.mcfdbs` dump: whether the union of the tree and the
//!   unicast routes has a credit loop, weft and `ibdmchk -M` (multicast in its credit-loop
//!   analysis) agree on every cut, some with a loop and some without; without `-M` ibdmchk
//!   finds none.
//!
//! The ftree and minhop runs are also checked against `ibdmchk` (ibutils) on OpenSM's
//! `opensm-subnet.lst`/`opensm.fdbs`: same credit-loop verdict, ibdmchk's loop channel is one
//! of ours, and its first dead end (ftree, `-a`) is one of our failed routes. (ibdmchk stops at
//! the first loop or dead end; it reports neither all loops nor all pairs.)
//!
//! VL arbitration: OpenSM dumps none, and a state without it sends VL 0 only; the lash and
//! dfsssp tests read the tables OpenSM programmed (`-Q`: its defaults) off the simulator with
//! `smpquery vlarb`, port by port, while OpenSM runs.
//!
//! Path SLs: OpenSM has no path-SL dump (anchors.md §2.5), so the lash test keeps OpenSM
//! running as the SM and asks its SA for every pair (`saquery -p --slid S --dlid D`), then
//! writes the answers as an ibdiagnet `.psl` file, which the verifier reads. (dfsssp would do
//! as well, but its SA answers a random SL within a balancing group on every query.)

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use weft_fabric::{Fabric, FabricState, Lid, PortNum, PortRef, ValidState, VlArb};
use weft_formats::ibnetdiscover::{self, ParseOptions};
use weft_formats::opensm::{self, Dumps};
use weft_tests::ibsim::{self, Ibsim, Limits, Tools};
use weft_verifier::reference::{replay_credit_loop, replay_pattern};
use weft_verifier::testkit;
use weft_verifier::{verify, Options, Outcome, Report, Scope};

/// OpenSM's outputs in one directory.
struct Run {
    dir: PathBuf,
}

impl Run {
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", self.dir.join(name).display()))
    }
}

fn opensm_args(engine: &str, dir: &Path, log: &Path) -> Vec<String> {
    [
        "-R",
        engine,
        "-Q",
        "-D",
        "0x43",
        "-f",
        log.to_str().unwrap(),
        "--dump_files_dir",
        dir.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Runs one OpenSM sweep (`-o`) with `engine`.
fn opensm_once(sim: &Ibsim, engine: &str) -> Run {
    opensm_once_with(sim, engine, &[])
}

/// [`opensm_once`] with more OpenSM arguments.
fn opensm_once_with(sim: &Ibsim, engine: &str, more: &[&str]) -> Run {
    let dir = sim.dir().join(format!("osm-{engine}"));
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let log = dir.join("osm.log");
    let mut args = vec!["-o".to_owned()];
    args.extend(opensm_args(engine, &dir, &log));
    args.extend(more.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = sim.run_env(
        "opensm",
        &args,
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        Duration::from_secs(180),
    );
    let osm_log = std::fs::read_to_string(&log).unwrap_or_default();
    r.unwrap_or_else(|e| panic!("{e}\nopensm log:\n{osm_log}"));
    Run { dir }
}

/// OpenSM running as the SM (for SA queries); killed when dropped.
struct Sm {
    child: Child,
    run: Run,
}

impl Drop for Sm {
    /// SIGTERM (so OpenSM flushes its log), then SIGKILL if it has not exited in 10 s.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn opensm_daemon(sim: &Ibsim, tools: &Tools, engine: &str) -> Sm {
    let dir = sim.dir().join(format!("osm-{engine}-sm"));
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let log = dir.join("osm.log");
    let opensm = Tools::find(&["opensm"]).unwrap().programs[0].1.clone();
    let child = Command::new(opensm)
        .args(opensm_args(engine, &dir, &log))
        .current_dir(&dir)
        .env("IBSIM_SOCKNAME", sim.socket_name())
        .env("LD_PRELOAD", &tools.umad2sim)
        .env("OSM_CACHE_DIR", &cache)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("osm.out")).unwrap())
        .stderr(std::fs::File::create(dir.join("osm.err")).unwrap())
        .spawn()
        .unwrap();
    let sm = Sm {
        child,
        run: Run { dir: dir.clone() },
    };
    // The first sweep is done once the dumps are written.
    let start = Instant::now();
    while !dir.join("opensm-subnet.lst").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "opensm wrote no dumps:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    sm
}

/// The topology as ibnetdiscover sees it (with the LIDs OpenSM assigned).
fn discover(sim: &Ibsim) -> ibnetdiscover::Discovered {
    let out = sim
        .run_retrying(
            "ibnetdiscover",
            &[],
            Duration::from_secs(60),
            Duration::from_secs(180),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    ibnetdiscover::parse(&out.stdout, &ParseOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn state(d: &ibnetdiscover::Discovered, run: &Run, sl2vl: bool, psl: Option<&str>) -> ValidState {
    let lfts = run.read("opensm-lfts.dump");
    let sl2vl_text = sl2vl.then(|| run.read("opensm-sl2vl.dump"));
    let (st, warnings) = opensm::assemble(
        d.fabric.clone(),
        d.lids.clone(),
        &Dumps {
            lfts: &lfts,
            sl2vl: sl2vl_text.as_deref(),
            path_sl: psl,
            guid2lid: None,
            mfts: None,
            mcmembers: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    st
}

/// What `ibdmchk` (ibutils) prints about OpenSM's dumps; `all` adds switch paths (`-a`).
fn ibdmchk_text(run: &Run, all: bool) -> String {
    ibdmchk_with(run, "opensm.mcfdbs", if all { &["-a"] } else { &[] })
}

/// `ibdmchk` on OpenSM's subnet and unicast dumps with the MFT dump `mcfdbs` (in the run's
/// directory) and more flags.
fn ibdmchk_with(run: &Run, mcfdbs: &str, flags: &[&str]) -> String {
    let mut args = vec!["-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", mcfdbs];
    args.extend_from_slice(flags);
    let out = Command::new(Tools::find(&["ibdmchk"]).unwrap().programs[0].1.clone())
        .args(args)
        .current_dir(&run.dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether ibdmchk found a credit loop, and the channel (switch GUID, port, VL) it names.
fn ibdmchk(run: &Run, all: bool) -> (bool, Option<(u64, u8, u8)>) {
    let text = ibdmchk_text(run, all);
    let loops = text.contains("-E- credit loops in routing");
    assert!(
        loops || text.contains("no credit loops found"),
        "ibdmchk said neither:\n{text}"
    );
    // `Found credit loop on: S0000000000200000/U1/P1 VL: 0`
    let at = text.lines().find_map(|l| {
        let rest = l.strip_prefix("Found credit loop on: S")?;
        let (guid, rest) = rest.split_once('/')?;
        let port = rest.split("/P").nth(1)?.split_whitespace().next()?;
        let vl = rest.split("VL:").nth(1)?.trim();
        Some((
            u64::from_str_radix(guid, 16).ok()?,
            port.parse().ok()?,
            vl.parse().ok()?,
        ))
    });
    (loops, at)
}

/// The VL arbitration OpenSM programmed (`-Q`: its default `qos_vlarb_high` and
/// `qos_vlarb_low`) on every cabled port of `st`, read back with `smpquery vlarb` by LID
/// while OpenSM runs (OpenSM dumps no VLArb tables; a state without them sends VL 0 only).
fn vlarbs(sim: &Ibsim, st: &FabricState) -> Vec<(PortRef, VlArb)> {
    let f = &st.fabric;
    let mut out = Vec::new();
    for id in f.node_ids() {
        let node = f.node(id);
        for p in node.ports.iter().filter(|p| p.link.is_some()) {
            let lid_port = if node.is_switch() { PortNum(0) } else { p.num };
            let Some(lid) = st.lids.get(id, lid_port) else {
                continue;
            };
            let q = sim
                .run_retrying(
                    "smpquery",
                    &["vlarb", &lid.0.to_string(), &p.num.0.to_string()],
                    Duration::from_secs(30),
                    Duration::from_secs(90),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            out.push((PortRef::new(id, p.num.0), weft_tests::vlarb_of(&q.stdout)));
        }
    }
    out
}

/// `st` with the VL arbitration `arb` read off the fabric.
fn with_vlarb(st: ValidState, arb: &[(PortRef, VlArb)]) -> ValidState {
    let mut st = st.into_inner();
    for (r, a) in arb {
        st.ports.entry(*r).or_default().vlarb = Some(a.clone());
    }
    ValidState::new(st).unwrap_or_else(|e| panic!("{e}"))
}

fn replay_all(st: &FabricState, r: &Report) {
    for l in &r.credit_loops {
        replay_credit_loop(st, l).unwrap_or_else(|e| panic!("{e}\n{l:#?}"));
    }
    for p in &r.failures {
        replay_pattern(st, p).unwrap_or_else(|e| panic!("{e}\n{p:#?}"));
    }
}

fn start(tools: &Tools, fabric: &Fabric) -> Ibsim {
    let net = ibnetdiscover::write(fabric, None).unwrap();
    Ibsim::start(tools, &net, Some(Limits::for_fabric(fabric))).unwrap_or_else(|e| panic!("{e}"))
}

fn all_opts(scope: Scope) -> Options {
    Options {
        scope,
        certificate: true,
        max_listed: 1_000_000,
        ..Options::default()
    }
}

#[test]
fn ftree_on_a_fat_tree_is_deadlock_free_and_misses_exactly_spine_to_spine() {
    let Some(tools) = ibsim::require(
        "ftree_on_a_fat_tree_is_deadlock_free_and_misses_exactly_spine_to_spine",
        &["opensm", "ibnetdiscover", "ibdmchk"],
    ) else {
        return;
    };
    let fabric = testkit::fat_tree2(3, 4, 2);
    let sim = start(&tools, &fabric);
    let run = opensm_once(&sim, "ftree");
    let d = discover(&sim);
    let st = state(&d, &run, true, None);
    // Differential: ibdmchk finds no credit loop on CA-to-CA paths either; with switch paths
    // (`-a`) it stops at an unset entry (`Unassigned LFT for lid:5 Dead end at:S…/U1`).
    let (ibdm_loops, _) = ibdmchk(&run, false);
    assert!(!ibdm_loops);
    let all = ibdmchk_text(&run, true);
    let dead_end = all.lines().find_map(|l| {
        let rest = l.strip_prefix("-E- Unassigned LFT for lid:")?;
        let (lid, rest) = rest.split_once(" Dead end at:S")?;
        let guid = rest.split('/').next()?;
        Some((
            lid.trim().parse::<u16>().ok()?,
            u64::from_str_radix(guid, 16).ok()?,
        ))
    });
    drop(sim);
    // HCA traffic: proven, with a certificate the checker accepts.
    let r = verify(&st, &all_opts(Scope::HcaToHca));
    assert!(r.is_proven(), "{:#?}", r.verdict);
    let hca = weft_verifier::Request {
        scope: Scope::HcaToHca,
        ..weft_verifier::Request::default()
    };
    weft_verifier::certificate::check(&st, r.certificate.as_ref().unwrap(), &hca).unwrap();
    // The same certificate does not prove every pair.
    let all = weft_verifier::Request::default();
    assert!(matches!(
        weft_verifier::certificate::check(&st, r.certificate.as_ref().unwrap(), &all),
        Err(weft_verifier::CertificateError::Scope { .. })
    ));
    // All traffic: still deadlock-free, and exactly the spine↔spine pairs fail.
    let r = verify(&st, &all_opts(Scope::All));
    assert_eq!(r.verdict.deadlock_free, Outcome::Proven);
    assert_eq!(r.verdict.connected, Outcome::Violated);
    replay_all(&st, &r);
    let got: BTreeSet<(String, String)> = r
        .unreachable_pairs()
        .into_iter()
        .map(|(src, lid)| {
            let owner = st.lids.owners(&st.fabric)[usize::from(lid.0)].unwrap().0;
            (src.node.name, st.fabric.node(owner).name().to_owned())
        })
        .collect();
    let spines = ["S1", "S2", "S3"];
    let want: BTreeSet<(String, String)> = spines
        .iter()
        .flat_map(|a| {
            spines
                .iter()
                .filter(move |b| a != *b)
                .map(move |b| (a.to_string(), b.to_string()))
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(r.failed_routes, 6);
    // ibdmchk's dead end is one of our failed routes' failure points.
    let (lid, guid) = dead_end.expect("ibdmchk -a reports the unset entry");
    assert!(
        r.listed_failures()
            .iter()
            .any(|f| f.dlid.0 == lid && f.at.guid.0 == guid),
        "ibdmchk: LID {lid} dead end at {guid:#x}; ours: {:?}",
        r.listed_failures()
            .iter()
            .map(|f| (f.dlid.0, f.at.guid.0))
            .collect::<Vec<_>>()
    );
}

#[test]
fn minhop_on_a_ring_has_a_credit_loop() {
    let Some(tools) = ibsim::require(
        "minhop_on_a_ring_has_a_credit_loop",
        &["opensm", "ibnetdiscover"],
    ) else {
        return;
    };
    let fabric = testkit::ring(6, 1);
    let sim = start(&tools, &fabric);
    let run = opensm_once(&sim, "minhop");
    let d = discover(&sim);
    let st = state(&d, &run, false, None);
    let (ibdm_loops, ibdm_at) = ibdmchk(&run, true);
    drop(sim);
    let r = verify(&st, &all_opts(Scope::All));
    assert_eq!(r.verdict.connected, Outcome::Proven);
    assert_eq!(r.verdict.deadlock_free, Outcome::Violated);
    assert!(!r.credit_loops.is_empty());
    for l in &r.credit_loops {
        assert!(l.cycle.len() >= 6, "a loop round the ring: {l:#?}");
        assert_eq!(l.cycle.len(), l.channels.len().min(l.cycle.len()));
    }
    replay_all(&st, &r);
    // Differential: ibdmchk finds a loop too, on a channel of one of ours.
    assert!(ibdm_loops);
    let (guid, port, vl) = ibdm_at.expect("ibdmchk names the channel");
    assert!(
        r.credit_loops.iter().any(|l| l
            .channels
            .iter()
            .any(|c| (c.node.guid.0, c.port, c.vl) == (guid, port, vl))),
        "ibdmchk's channel {guid:#x}/P{port} VL {vl} is in none of our loops"
    );
    // HCA traffic alone loops too (anchors.md §3.6).
    assert_eq!(
        verify(&st, &all_opts(Scope::HcaToHca))
            .verdict
            .deadlock_free,
        Outcome::Violated
    );
}

/// Asks the SA for the path SL of every (source port, destination LID) pair and writes them
/// as a `.psl` file.
fn path_sls(sim: &Ibsim, st: &FabricState) -> String {
    let mut ports: Vec<(weft_fabric::NodeId, PortNum, Lid)> = Vec::new();
    for (&n, ps) in &st.lids.base {
        for (&p, &l) in ps {
            ports.push((n, p, l));
        }
    }
    let mut out = String::new();
    for &(sn, _, slid) in &ports {
        for &(dn, dp, dlid) in &ports {
            if (sn, slid) == (dn, dlid) {
                continue;
            }
            let _ = dp;
            let q = sim
                .run_retrying(
                    "saquery",
                    &[
                        "-p",
                        "--slid",
                        &slid.0.to_string(),
                        "--dlid",
                        &dlid.0.to_string(),
                    ],
                    Duration::from_secs(30),
                    Duration::from_secs(90),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let sl = q
                .stdout
                .lines()
                .find_map(|l| {
                    l.trim()
                        .strip_prefix("sl.")
                        .map(|r| r.trim_start_matches('.'))
                })
                .and_then(|v| u8::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
                .unwrap_or_else(|| panic!("no SL in saquery output:\n{}", q.stdout));
            let _ = writeln!(out, "{:#018x} {} {sl}", st.fabric.node(sn).guid().0, dlid.0);
        }
    }
    out
}

#[test]
fn lash_on_a_ring_is_deadlock_free_with_its_sls_and_loops_without() {
    let Some(tools) = ibsim::require(
        "lash_on_a_ring_is_deadlock_free_with_its_sls_and_loops_without",
        &["opensm", "ibnetdiscover", "saquery"],
    ) else {
        return;
    };
    let fabric = testkit::ring(6, 1);
    let sim = start(&tools, &fabric);
    let sm = opensm_daemon(&sim, &tools, "lash");
    let d = discover(&sim);
    let lfts = sm.run.read("opensm-lfts.dump");
    let sl2vl = sm.run.read("opensm-sl2vl.dump");
    let base = state(&d, &sm.run, true, None);
    let psl = path_sls(&sim, &base);
    let arb = vlarbs(&sim, &base);
    let dir = sm.run.dir.clone();
    drop(sm);
    // OpenSM flushes its log when it stops.
    let log = Run { dir }.read("osm.log");
    drop(sim);
    assert!(log.contains("Lanes needed"), "lash did not route:\n{log}");
    let with = |psl: Option<&str>| {
        let st = opensm::assemble(
            d.fabric.clone(),
            d.lids.clone(),
            &Dumps {
                lfts: &lfts,
                sl2vl: Some(&sl2vl),
                path_sl: psl,
                guid2lid: None,
                mfts: None,
                mcmembers: None,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .0;
        with_vlarb(st, &arb)
    };
    // With lash's SLs (several layers in use): proven, certificate accepted.
    let st = with(Some(&psl));
    let sls: BTreeSet<u16> = st.path_sl.by_source.iter().map(|e| e.sls.0).collect();
    assert!(sls.len() > 1, "lash used one SL only: {psl}");
    let r = verify(&st, &all_opts(Scope::All));
    assert!(r.is_proven(), "{:#?}\n{:#?}", r.verdict, r.credit_loops);
    weft_verifier::certificate::check(
        &st,
        r.certificate.as_ref().unwrap(),
        &weft_verifier::Request::default(),
    )
    .unwrap();
    // The same tables with every SL forced to 0: a credit loop.
    let st0 = with(None);
    let r = verify(&st0, &all_opts(Scope::All));
    assert_eq!(r.verdict.deadlock_free, Outcome::Violated);
    assert_eq!(r.verdict.connected, Outcome::Proven);
    assert!(r
        .credit_loops
        .iter()
        .all(|l| l.channels.iter().all(|c| c.vl == 0)));
    replay_all(&st0, &r);
}

/// dfsssp on the ring: its SA hands out a random SL within a balancing group on every query
/// (`get_dfsssp_sl`), so the sampled path SLs differ from run to run. HCA-to-HCA traffic is
/// proven deadlock-free whatever the sample (every VL carries a subset of one acyclic layer).
/// Switch management traffic is not asserted: in our runs its SA-reported SLs put it on VLs
/// where it closes credit loops (see the report), which `Scope::All` shows with witnesses.
#[test]
fn dfsssp_on_a_ring_is_deadlock_free_for_hca_traffic() {
    let Some(tools) = ibsim::require(
        "dfsssp_on_a_ring_is_deadlock_free_for_hca_traffic",
        &["opensm", "ibnetdiscover", "saquery"],
    ) else {
        return;
    };
    let fabric = testkit::ring(6, 1);
    let sim = start(&tools, &fabric);
    let sm = opensm_daemon(&sim, &tools, "dfsssp");
    let d = discover(&sim);
    let lfts = sm.run.read("opensm-lfts.dump");
    let sl2vl = sm.run.read("opensm-sl2vl.dump");
    let base = state(&d, &sm.run, true, None);
    let psl = path_sls(&sim, &base);
    let arb = vlarbs(&sim, &base);
    drop(sm);
    drop(sim);
    let (st, _) = opensm::assemble(
        d.fabric.clone(),
        d.lids.clone(),
        &Dumps {
            lfts: &lfts,
            sl2vl: Some(&sl2vl),
            path_sl: Some(&psl),
            guid2lid: None,
            mfts: None,
            mcmembers: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Without the VL arbitration OpenSM programmed, the state says none: hops on VL 1 and
    // above are not scheduled.
    let r = verify(&st, &all_opts(Scope::HcaToHca));
    assert_eq!(r.verdict.connected, Outcome::Violated);
    assert!(r
        .failures
        .iter()
        .all(|p| p.reason == weft_verifier::FailureKind::VlNotScheduled));
    let st = with_vlarb(st, &arb);
    let r = verify(&st, &all_opts(Scope::HcaToHca));
    assert!(r.is_proven(), "{:#?}\n{:#?}", r.verdict, r.credit_loops);
    let all = verify(&st, &all_opts(Scope::All));
    assert_eq!(all.verdict.connected, Outcome::Proven);
    replay_all(&st, &all);
    // Without its SLs, the ring loops.
    let (st0, _) = opensm::assemble(
        d.fabric.clone(),
        d.lids.clone(),
        &Dumps {
            lfts: &lfts,
            sl2vl: Some(&sl2vl),
            path_sl: None,
            guid2lid: None,
            mfts: None,
            mcmembers: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let st0 = with_vlarb(st0, &arb);
    assert_eq!(
        verify(&st0, &all_opts(Scope::HcaToHca))
            .verdict
            .deadlock_free,
        Outcome::Violated
    );
}

/// OpenSM's MFT dump format (`opensm.mcfdbs`): per switch with entries, its GUID line, the
/// heading, and each MLID with its ports.
fn mcfdbs(st: &FabricState, mfts: &[(&str, Vec<u8>)], mlid: u16) -> String {
    let mut t = String::new();
    for (name, ports) in mfts {
        let id = st.fabric.find(name).unwrap();
        let _ = writeln!(
            t,
            "\nSwitch {:#018x}\nLID    : Out Port(s)",
            st.fabric.node(id).guid().0
        );
        let _ = write!(t, "{mlid:#06X} :");
        for p in ports {
            let _ = write!(t, " {p:#05x} ");
        }
        t.push('\n');
    }
    t.replace("0XC", "0xC")
}

/// OpenSM's `updn` on a ring, with a multicast tree along the ring cut at each cable in turn:
/// a tree whose turn goes down then up closes a credit loop with the unicast routes, which
/// are acyclic on their own. weft and `ibdmchk -M` (multicast in its credit-loop analysis)
/// agree on every cut; without the MFTs both find no loop.
#[test]
fn updn_on_a_ring_with_multicast_trees_agrees_with_ibdmchk() {
    let Some(tools) = ibsim::require(
        "updn_on_a_ring_with_multicast_trees_agrees_with_ibdmchk",
        &["opensm", "ibnetdiscover", "ibdmchk"],
    ) else {
        return;
    };
    let n = 6;
    let fabric = testkit::ring(n, 1);
    let sim = start(&tools, &fabric);
    // OpenSM's updn finds no root on a ring by itself (and falls back to minhop): `R0` is.
    let roots = sim.dir().join("roots");
    std::fs::write(&roots, "0x0000000000200000\n").unwrap();
    let run = opensm_once_with(&sim, "updn", &["-a", roots.to_str().unwrap()]);
    let d = discover(&sim);
    let unicast = state(&d, &run, false, None);
    let u = verify(&unicast, &all_opts(Scope::HcaToHca));
    assert!(
        u.is_proven(),
        "{:?}\n{}",
        u.verdict,
        run.read("osm.log")
            .lines()
            .filter(|l| l.contains("updn") || l.contains("UPDN") || l.contains("routing"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let ibdm = |mc: &str, multicast: bool| -> bool {
        std::fs::write(run.dir.join("weft.mcfdbs"), mc).unwrap();
        let text = ibdmchk_with(&run, "weft.mcfdbs", if multicast { &["-M"] } else { &[] });
        let loops = text.contains("-E- credit loops in routing");
        assert!(
            loops || text.contains("no credit loops found"),
            "ibdmchk said neither:\n{text}"
        );
        loops
    };
    let lfts = run.read("opensm-lfts.dump");
    let mut verdicts = Vec::new();
    for cut in 0..n {
        // Every switch: its host (port 3) and both ring cables, but the cut cable's ends.
        let mfts: Vec<(String, Vec<u8>)> = (0..n)
            .map(|i| {
                let mut ports = Vec::new();
                if i != (cut + 1) % n {
                    ports.push(2);
                }
                if i != cut {
                    ports.push(1);
                }
                ports.sort_unstable();
                ports.push(3);
                (format!("R{i}"), ports)
            })
            .collect();
        let named: Vec<(&str, Vec<u8>)> =
            mfts.iter().map(|(s, p)| (s.as_str(), p.clone())).collect();
        let text = mcfdbs(&unicast, &named, 0xc001);
        let (st, _) = opensm::assemble(
            d.fabric.clone(),
            d.lids.clone(),
            &Dumps {
                lfts: &lfts,
                sl2vl: None,
                path_sl: None,
                guid2lid: None,
                mfts: Some(&text),
                mcmembers: None,
            },
        )
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let r = verify(
            &st,
            &Options {
                properties: weft_verifier::Property::defaults(&st),
                ..all_opts(Scope::HcaToHca)
            },
        );
        assert_eq!(r.traffic.multicast_groups, 1);
        assert_eq!(
            r.verdict.multicast_connected,
            Some(Outcome::Proven),
            "cut {cut}"
        );
        let ours = r.verdict.deadlock_free == Outcome::Violated;
        if ours {
            replay_all(&st, &r);
            assert!(r
                .credit_loops
                .iter()
                .any(|l| l.cycle.iter().any(|dep| dep.route.dlid.0 == 0xc001)));
        }
        assert!(
            !ibdm(&text, false),
            "cut {cut}: ibdmchk without -M finds a loop"
        );
        assert_eq!(
            ibdm(&text, true),
            ours,
            "cut {cut}: ibdmchk -M and weft disagree\n{text}"
        );
        verdicts.push(ours);
    }
    assert!(
        verdicts.iter().any(|&v| v),
        "no cut closes a loop: {verdicts:?}"
    );
    assert!(
        verdicts.iter().any(|&v| !v),
        "every cut closes a loop: {verdicts:?}"
    );
    drop(sim);
}
