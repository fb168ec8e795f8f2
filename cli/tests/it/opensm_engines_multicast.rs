//! OpenSM's own routing engines with multicast, on ibsim (issue 28's first acceptance item for
//! `ftree`, `updn` and `lash`): OpenSM runs as the SM with the engine, simulated hosts join the
//! IPoIB broadcast group and two or three more groups through the SA
//! (`tests/fixtures/mcjoin/mcjoin.c` under libumad2sim with `SIM_HOST`: a send-only member in
//! the broadcast group and in a group created on SL 1, hosts in two groups), OpenSM programs
//! the trees, and after a SIGHUP sweep (its dumps then hold the joins) every test checks:
//!
//! * OpenSM's dump `opensm.mcfdbs`, `ibroute -M` on every switch and `weft audit --target mad
//!   --write-state` hold the same MFTs, one entry per group;
//! * the SA's MCMemberRecords (`saquery --smkey 1 --gid PORT_GID MCMR`, port by port) read as
//!   exactly the joins, each with its join state;
//! * `weft verify --topology --lfts --mfts --mcmembers` names every group, its explicit and z3
//!   engines agree, and `weft audit` on the live fabric (no records: members inferred from the
//!   MFTs) reaches the same verdict;
//! * `ibdmchk -m` counts the switches and HCAs of each group as the MFTs give them and finds
//!   no broken tree where weft proves delivery; ibdmchk's credit-loop verdict without the MFTs
//!   (`-m` alone) is weft's on the unicast routes, and with them (`-M`) weft's on the union,
//!   its loop on one of weft's channels.
//!
//! Verdicts:
//!
//! * `ftree` and `updn` on a two-level fat tree: proven (each tree goes up from a leaf to one
//!   spine and down to the other leaf, which the up/down order of the unicast routes admits).
//! * `updn` on a ring of six, rooted at `sw1`: its unicast routes are proven, but the min-hop
//!   tree OpenSM gives a group on `sw3` and `sw5` turns down-then-up at `sw4`, the switch
//!   farthest from the root, and closes a credit loop with them in each direction (the
//!   witnesses name the MLID and replay). SA records asked without OpenSM's SM_Key name no
//!   member and are refused.
//! * `lash` on the same ring: refuted as every tool sees its tables (no path SLs: every route
//!   on SL 0, where its layers loop round the ring by themselves); with its path SLs (the SA's
//!   answers) and the VL arbitration OpenSM programmed, its unicast routes and the union with
//!   its trees (the SL 0 groups on layer 0's VL, the SL 1 group on layer 1's) are proven.
//!
//! `saquery` table answers come back from ibsim with their first MAD only (three
//! MCMemberRecords; one NodeRecord of forty), so the records are asked port by port, each
//! port being in at most three groups; asked without the SM_Key, OpenSM answers each group's
//! own record with port GID `::` and no member.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::weft;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use weft_fabric::{FabricState, Mft, NodeId, PortNum, ValidState};
use weft_formats::ibnetdiscover::{self, Discovered, ParseOptions};
use weft_formats::opensm::{self, Dumps};
use weft_formats::state_json::{FromJson, ToJson};
use weft_tests::ibsim::{self, Background, Ibsim, IbsimError, Limits, Tools};

/// What the tests run besides ibsim (`smpquery` for the VL arbitration lash's proof needs).
const TOOLS: [&str; 7] = [
    "opensm",
    "ibroute",
    "ibnetdiscover",
    "saquery",
    "smpquery",
    "ibdmchk",
    "gcc",
];

/// One join: the host, what `mcjoin` gets after the host (`ipoib` or the group's MGID low
/// digits, then its join state and SL), and the MLID the SA must answer.
type Join = (&'static str, &'static [&'static str], u16);

/// OpenSM with an engine on ibsim, its hosts joined, swept again: what every check reads.
struct Run {
    /// OpenSM (dropped, and so killed, before the simulator).
    osm: Background,
    sim: Ibsim,
    /// OpenSM's dump directory, its log and the files the tools wrote.
    dir: PathBuf,
    log: PathBuf,
    /// `ibnetdiscover`'s output (the LIDs OpenSM assigned) and what it reads as.
    topology: PathBuf,
    d: Discovered,
    /// The groups' MCMemberRecords (`saquery` output).
    mcmembers: PathBuf,
    /// Every switch's MFT as `ibroute -M` printed it, by GUID.
    ibroute: BTreeMap<u64, Mft>,
}

impl Run {
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", self.dir.join(name).display()))
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_owned()
    }

    /// OpenSM's log, its last lines.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

fn subnet_ups(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches("SUBNET UP")
        .count()
}

/// Waits until OpenSM has logged `SUBNET UP` more than `seen` times.
fn wait_subnet_up(osm: &mut Background, log: &Path, seen: usize) {
    let start = Instant::now();
    while subnet_ups(log) <= seen {
        assert!(
            osm.running() && start.elapsed() < Duration::from_secs(120),
            "OpenSM did not come up:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Builds `src` with weft (for its ibsim net file), runs OpenSM with `engine` (and `conf`
/// lines more) as the SM, joins `joins`, waits until `ibroute -M` shows every group, makes
/// OpenSM sweep again (SIGHUP) so that its dumps hold the joins, and reads the topology and
/// the group records.
fn run(tools: &Tools, engine: &str, src: &str, conf: &str, joins: &[Join]) -> Run {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let build = crate::support::scratch(&format!(
        "osm-engines-{}",
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(build.join("t.weft"), src).unwrap();
    let o = weft(&[
        "build",
        build.join("t.weft").to_str().unwrap(),
        "-o",
        build.join("out").to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = build.join("out");
    let built =
        ValidState::from_json(&std::fs::read_to_string(out.join("state.json")).unwrap()).unwrap();
    let net = std::fs::read_to_string(out.join("topology.net")).unwrap();
    let _ = std::fs::remove_dir_all(&build);
    let sim = Ibsim::start(tools, &net, Some(Limits::for_fabric(&built.fabric))).unwrap();
    let mcjoin = sim.build_mcjoin().unwrap();

    let dir = sim.dir().join("osm");
    std::fs::create_dir_all(&dir).unwrap();
    let (conf_file, parts, log) = (
        dir.join("opensm.conf"),
        dir.join("partitions.conf"),
        dir.join("osm.log"),
    );
    std::fs::write(&parts, "Default=0x7fff, ipoib : ALL=full ;\n").unwrap();
    std::fs::write(
        &conf_file,
        format!(
            "routing_engine {engine}\npartition_config_file {}\nforce_log_flush TRUE\nlog_flags 0x43\ndump_files_dir {}\n{conf}",
            parts.display(),
            dir.display(),
        ),
    )
    .unwrap();
    let mut osm = sim
        .spawn_env(
            "opensm",
            &[
                "-F",
                conf_file.to_str().unwrap(),
                "-f",
                log.to_str().unwrap(),
            ],
            &[("OSM_CACHE_DIR", dir.to_str().unwrap())],
        )
        .unwrap();
    wait_subnet_up(&mut osm, &log, 0);

    let f = &built.fabric;
    for &(who, args, mlid) in joins {
        let sim_host = format!("H-{:016x}", f.node(f.find(who).unwrap()).guid().0);
        let o = sim
            .run_env(
                mcjoin.to_str().unwrap(),
                args,
                &[("SIM_HOST", &sim_host)],
                Duration::from_secs(60),
            )
            .unwrap_or_else(|e| {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("{who} joining {args:?}: {e}\nOpenSM's log:\n{log}")
            });
        assert_eq!(
            o.stdout.trim(),
            format!("mlid {mlid:#06x}"),
            "{who}: {}",
            o.stderr
        );
    }

    // The LIDs OpenSM gave, as ibnetdiscover reads them.
    let topology = dir.join("topology.txt");
    let text = sim
        .run_retrying(
            "ibnetdiscover",
            &[],
            Duration::from_secs(60),
            Duration::from_secs(120),
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .stdout;
    std::fs::write(&topology, &text).unwrap();
    let d = ibnetdiscover::parse(&text, &ParseOptions::default()).unwrap();

    // OpenSM programs the trees as the joins come in.
    let want: BTreeSet<u16> = joins.iter().map(|j| j.2).collect();
    let start = Instant::now();
    loop {
        let got: BTreeSet<u16> = sim
            .mfts(&d.fabric, &d.lids)
            .unwrap()
            .values()
            .flat_map(|t| t.entries().map(|(m, _)| m.get()))
            .collect();
        if got == want {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "OpenSM programmed {got:x?}, not {want:x?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // A heavy sweep, so that every dump (the LFTs' too) is written after the joins.
    let seen = subnet_ups(&log);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(osm.pid() as i32).unwrap(),
        rustix::process::Signal::HUP,
    )
    .unwrap();
    wait_subnet_up(&mut osm, &log, seen);
    let ibroute = sim.mfts(&d.fabric, &d.lids).unwrap();

    // The groups' records. OpenSM answers an untrusted query with each group once and no
    // member (PortGID `::`), so the queries give OpenSM's SM_Key (its default, 1). ibsim
    // returns a table's first MAD only, three MCMemberRecords, so each port is asked alone.
    let mut records = String::new();
    for id in d.fabric.node_ids() {
        let node = d.fabric.node(id);
        if node.is_switch() {
            continue;
        }
        for p in node.ports.iter().filter(|p| p.link.is_some()) {
            let guid = p.guid.0;
            let gid = format!(
                "fe80::{:x}:{:x}:{:x}:{:x}",
                guid >> 48,
                (guid >> 32) & 0xffff,
                (guid >> 16) & 0xffff,
                guid & 0xffff
            );
            records += &sim
                .run_retrying(
                    "saquery",
                    &["--smkey", "1", "--gid", &gid, "MCMR"],
                    Duration::from_secs(30),
                    Duration::from_secs(60),
                )
                .unwrap_or_else(|e| panic!("{e}"))
                .stdout;
        }
    }
    let mcmembers = dir.join("mcmembers.txt");
    std::fs::write(&mcmembers, &records).unwrap();
    Run {
        osm,
        sim,
        dir,
        log,
        topology,
        d,
        mcmembers,
        ibroute,
    }
}

/// `weft verify` on the run's files (`--mfts` and `--mcmembers` when asked), HCA pairs, JSON.
fn verify(r: &Run, mfts: bool, mcmembers: bool, more: &[&str]) -> Value {
    let (topo, lfts, mc, members) = (
        r.topology.to_str().unwrap().to_owned(),
        r.path("opensm-lfts.dump"),
        r.path("opensm.mcfdbs"),
        r.mcmembers.to_str().unwrap().to_owned(),
    );
    let mut args = vec![
        "verify",
        "--topology",
        &topo,
        "--lfts",
        &lfts,
        "--scope",
        "hca-to-hca",
        "--format",
        "json",
        "--max-listed",
        "1000",
    ];
    if mfts {
        args.extend(["--mfts", &mc]);
    }
    if mcmembers {
        args.extend(["--mcmembers", &members]);
    }
    args.extend_from_slice(more);
    let o = weft(&args);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// `weft audit --target mad` on the live fabric (HCA pairs, JSON): its report and the state it
/// read.
fn audit(r: &Run) -> (Value, ValidState) {
    let state = r.dir.join("audited.json");
    let out = match r.sim.run_env(
        crate::support::WEFT,
        &[
            "audit",
            "--target",
            "mad",
            "--scope",
            "hca-to-hca",
            "--format",
            "json",
            "--max-listed",
            "1000",
            "--write-state",
            state.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(120),
    ) {
        Ok(o) => o,
        Err(IbsimError::Failed { output, .. }) if output.status.code() == Some(1) => output,
        Err(e) => panic!("{e}"),
    };
    let json: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", out.stdout, out.stderr));
    let st = ValidState::from_json(&std::fs::read_to_string(&state).unwrap())
        .unwrap_or_else(|e| panic!("{e}\n{}", out.stderr));
    (json, st)
}

/// A JSON verdict's outcome of `property`.
fn outcome<'a>(v: &'a Value, property: &str) -> &'a str {
    v["verdict"][property]["result"]
        .as_str()
        .unwrap_or_else(|| panic!("no {property} in {}", v["verdict"]))
}

/// The MFTs of a dump, non-empty ones, by switch GUID.
fn mfts_of(text: &str, r: &Run) -> BTreeMap<u64, Mft> {
    let (read, problems) = opensm::parse_mfts(text, &r.d.fabric).unwrap();
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    read.tables
        .into_iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(id, t)| (r.d.fabric.node(id).guid().0, t))
        .collect()
}

/// What `ibdmchk -s opensm-subnet.lst -f opensm.fdbs -m opensm.mcfdbs` (and `flags`) prints.
fn ibdmchk(r: &Run, flags: &[&str]) -> String {
    let mut args = vec![
        "-s",
        "opensm-subnet.lst",
        "-f",
        "opensm.fdbs",
        "-m",
        "opensm.mcfdbs",
    ];
    args.extend_from_slice(flags);
    let out = std::process::Command::new(Tools::find(&["ibdmchk"]).unwrap().programs[0].1.clone())
        .args(args)
        .current_dir(&r.dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether ibdmchk's output reports a credit loop.
fn ibdmchk_loops(text: &str) -> bool {
    let loops = text.contains("-E- credit loops in routing");
    assert!(
        loops || text.contains("no credit loops found"),
        "ibdmchk said neither:\n{text}"
    );
    loops
}

/// The channel `(switch GUID, port, VL)` ibdmchk names first in a credit loop
/// (`Found credit loop on: S0002c90000000100/U1/P3 VL: 0`).
fn ibdmchk_loop_channel(text: &str) -> Option<(u64, u64, u64)> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("Found credit loop on: S")?;
        let (guid, rest) = rest.split_once('/')?;
        let port = rest.split("/P").nth(1)?.split_whitespace().next()?;
        let vl = rest.split("VL:").nth(1)?.trim();
        Some((
            u64::from_str_radix(guid, 16).ok()?,
            port.parse().ok()?,
            vl.parse().ok()?,
        ))
    })
}

/// The credit loops a JSON report lists (each finding's `properties.loop`).
fn loops(v: &Value) -> Vec<&Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "weft::credit_loop")
        .map(|f| &f["properties"]["loop"])
        .collect()
}

/// ibdmchk's multicast check: per group, `(switches, HCAs)` as it counts them
/// (`-I- Multicast Group:0xC000 has:3 switches and:3 HCAs`), and its errors about groups
/// (a loop, a disconnected or extra switch).
fn ibdmchk_groups(text: &str) -> (BTreeMap<u16, (usize, usize)>, Vec<String>) {
    let mut groups = BTreeMap::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix("-I- Multicast Group:0x") else {
            continue;
        };
        let (mlid, rest) = rest.split_once(" has:").unwrap();
        let (sw, rest) = rest.split_once(" switches and:").unwrap();
        let hcas = rest.strip_suffix(" HCAs").unwrap();
        groups.insert(
            u16::from_str_radix(mlid, 16).unwrap(),
            (sw.parse().unwrap(), hcas.parse().unwrap()),
        );
    }
    let errors = text
        .lines()
        .filter(|l| {
            l.starts_with("-E- Found a loop on MLID")
                || l.starts_with("-E- Disconnected")
                || l.starts_with("-E- Extra switch")
                || l.contains("multicast group checks failed")
        })
        .map(str::to_owned)
        .collect();
    (groups, errors)
}

/// Per MLID, ibdmchk's count from the tables: the switches with an entry, and the ports of
/// those entries cabled to an HCA.
fn group_counts(r: &Run, tables: &BTreeMap<u64, Mft>) -> BTreeMap<u16, (usize, usize)> {
    let f = &r.d.fabric;
    let mut out: BTreeMap<u16, (usize, usize)> = BTreeMap::new();
    for (guid, t) in tables {
        let sw = f.find_guid(weft_fabric::Guid(*guid)).unwrap();
        for (mlid, mask) in t.entries() {
            let e = out.entry(mlid.get()).or_default();
            e.0 += 1;
            e.1 += mask
                .iter()
                .filter(|p| {
                    f.peer(weft_fabric::PortRef::new(sw, p.0))
                        .is_some_and(|(far, _)| !f.node(far.node).is_switch())
                })
                .count();
        }
    }
    out
}

/// Everything the engines' tests check the same way; the verdict of `weft verify` with the
/// group records, for the caller to assert.
fn check_common(r: &mut Run, joins: &[Join]) -> Value {
    // The tables: OpenSM's dump, `ibroute -M` and `weft audit` read the same ones.
    let dumped = mfts_of(&r.read("opensm.mcfdbs"), r);
    assert!(!dumped.is_empty());
    assert_eq!(dumped, r.ibroute, "opensm.mcfdbs and ibroute -M differ");
    let mlids: BTreeSet<u16> = dumped
        .values()
        .flat_map(|t| t.entries().map(|(m, _)| m.get()))
        .collect();
    assert_eq!(mlids, joins.iter().map(|j| j.2).collect::<BTreeSet<u16>>());
    let (audited, st) = audit(r);
    let audited_mfts: BTreeMap<u64, Mft> = st
        .multicast
        .mfts
        .iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(id, t)| (st.fabric.node(*id).guid().0, t.clone()))
        .collect();
    assert_eq!(audited_mfts, dumped, "weft audit read other MFTs");

    // The SA's records: every join, with its join state.
    let (groups, problems) =
        opensm::parse_mcmembers(&std::fs::read_to_string(&r.mcmembers).unwrap(), &r.d.fabric)
            .unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let members: BTreeSet<(u16, String, u8)> = groups
        .iter()
        .flat_map(|g| {
            g.members.iter().map(|(p, j)| {
                (
                    g.mlid.get(),
                    r.d.fabric.node(p.node).name().to_owned(),
                    j.bits(),
                )
            })
        })
        .collect();
    let joined: BTreeSet<(u16, String, u8)> = joins
        .iter()
        .map(|&(who, args, mlid)| {
            let join = args
                .get(1)
                .map_or(1, |j| u8::from_str_radix(j, 16).unwrap());
            (mlid, who.to_owned(), join)
        })
        .collect();
    assert_eq!(members, joined, "the SA's members are not the joins");

    // The proof with the group records names every group; audit (no records: members
    // from the MFTs) reaches the same verdict on the live fabric.
    let v = verify(r, true, true, &["--engine", "both"]);
    let n = mlids.len();
    assert_eq!(v["traffic"]["multicast_groups"], n, "{}", v["traffic"]);
    assert!(
        v["traffic"]["inferred_groups"].is_null(),
        "{}",
        v["traffic"]
    );
    assert_eq!(audited["traffic"]["multicast_groups"], n);
    assert_eq!(audited["traffic"]["inferred_groups"], n);
    for p in ["deadlock_free", "connected", "multicast_connected"] {
        assert_eq!(
            outcome(&audited, p),
            outcome(&v, p),
            "{p}: audit and verify disagree"
        );
    }

    // ibdmchk's multicast check counts what the tables say, and finds no broken tree where
    // weft proves delivery.
    let plain = ibdmchk(r, &[]);
    let (counts, errors) = ibdmchk_groups(&plain);
    assert_eq!(counts, group_counts(r, &dumped), "{plain}");
    if outcome(&v, "multicast_connected") == "proven" {
        assert!(errors.is_empty(), "{errors:?}");
    }
    // Credit loops: ibdmchk (every route on SL 0 and VL 0, CA pairs) without the MFTs in its
    // graph agrees with weft on the unicast routes; with them (`-M`), with the union.
    let unicast = verify(r, false, false, &[]);
    assert!(
        unicast["traffic"]["multicast_groups"] == 0,
        "{}",
        unicast["traffic"]
    );
    assert_eq!(
        ibdmchk_loops(&plain),
        outcome(&unicast, "deadlock_free") == "violated",
        "ibdmchk without -M:\n{plain}"
    );
    let with = ibdmchk(r, &["-M"]);
    assert!(with.contains("-I- MFT added"), "{with}");
    assert_eq!(
        ibdmchk_loops(&with),
        outcome(&v, "deadlock_free") == "violated",
        "ibdmchk -M:\n{with}"
    );
    // ibdmchk stops at its first loop, on a channel of one of ours.
    if let Some(at) = ibdmchk_loop_channel(&with) {
        let ours: BTreeSet<(u64, u64, u64)> = loops(&v)
            .iter()
            .flat_map(|l| l["channels"].as_array().unwrap())
            .map(|c| {
                (
                    c["node"]["guid"].as_u64().unwrap(),
                    c["port"].as_u64().unwrap(),
                    c["vl"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(
            ours.contains(&at),
            "ibdmchk's {at:x?} is in none of {ours:x?}"
        );
    }
    assert!(r.osm.running(), "OpenSM exited:\n{}", r.log_tail());
    v
}

/// Hosts on both leaves (cn001–cn018 on `leaf1`, cn019–cn036 on `leaf2`): the broadcast group
/// with a send-only member, a group of three, and a group on SL 1 (a non-IPoIB MGID) with a
/// send-only member; cn001, cn017 and cn036 are in two groups each.
const TREE_JOINS: [Join; 12] = [
    ("cn001", &["ipoib"], 0xc000),
    ("cn017", &["ipoib"], 0xc000),
    ("cn019", &["ipoib"], 0xc000),
    ("cn036", &["ipoib"], 0xc000),
    ("cn010", &["ipoib", "4"], 0xc000),
    ("cn002", &["1234"], 0xc001),
    ("cn020", &["1234"], 0xc001),
    ("cn001", &["1234"], 0xc001),
    ("cn003", &["5678", "1", "1"], 0xc002),
    ("cn021", &["5678", "1", "1"], 0xc002),
    ("cn036", &["5678", "1", "1"], 0xc002),
    ("cn017", &["5678", "4", "1"], 0xc002),
];

/// `ftree` or `updn` on the two-level fat tree: everything proven.
fn on_a_fat_tree(engine: &str) {
    let Some(tools) = ibsim::require(&format!("{engine}_multicast_on_a_fat_tree"), &TOOLS) else {
        return;
    };
    let src = weft_tests::xgft_source(2, &[18, 2], &[1, 2], "", "");
    let mut r = run(&tools, engine, &src, "qos FALSE\n", &TREE_JOINS);
    let v = check_common(&mut r, &TREE_JOINS);
    // Each tree goes up from a leaf to one spine and down to the other leaf: with the up/down
    // order of the unicast routes no channel waits on one it could be waited on by.
    assert_eq!(outcome(&v, "deadlock_free"), "proven", "{v:#}");
    assert_eq!(outcome(&v, "connected"), "proven", "{v:#}");
    assert_eq!(outcome(&v, "multicast_connected"), "proven", "{v:#}");
    // Every member sends, full members receive: 5 × 4 + 3 × 3 + 4 × 3 pairs less the
    // full members' own.
    assert_eq!(v["report"]["multicast"]["pairs"], 16 + 6 + 9, "{v:#}");
    drop(r);
}

#[test]
fn ftree_multicast_on_a_fat_tree_is_read_alike_and_proven() {
    on_a_fat_tree("ftree");
}

#[test]
fn updn_multicast_on_a_fat_tree_is_read_alike_and_proven() {
    on_a_fat_tree("updn");
}

/// Six switches in a ring (`sw1` … `sw6`, port 3 toward the next, port 4 toward the one
/// before), two hosts on each (weft routes it with `updn` only to write the net file; OpenSM
/// routes it with its own engine).
const RING: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::ring\nfabric ring6 {\n    topology = ring(n: 6, switch: sb7800, hca: connectx5, hosts_per_switch: 2)\n    routing {\n        engine = updn\n    }\n}\n";

/// Twelve hosts on a ring of six switches (`h1`, `h2` on `sw1`, … `h11`, `h12` on `sw6`): the
/// broadcast group with a send-only member, a group of three, and a group on SL 1 (lash's
/// second layer's SL) with the same send-only member; `h1` and `h12` are in two groups each.
const RING_JOINS: [Join; 11] = [
    ("h1", &["ipoib"], 0xc000),
    ("h4", &["ipoib"], 0xc000),
    ("h7", &["ipoib"], 0xc000),
    ("h10", &["ipoib"], 0xc000),
    ("h12", &["ipoib", "4"], 0xc000),
    ("h2", &["1234"], 0xc001),
    ("h8", &["1234"], 0xc001),
    ("h1", &["1234"], 0xc001),
    ("h3", &["5678", "1", "1"], 0xc002),
    ("h9", &["5678", "1", "1"], 0xc002),
    ("h12", &["5678", "4", "1"], 0xc002),
];

/// The SA's path SL of every HCA pair (`saquery -p --slid S --dlid D`), as an ibdiagnet `.psl`
/// file (OpenSM dumps none).
fn path_sls(r: &Run) -> String {
    let f = &r.d.fabric;
    let hcas: Vec<(NodeId, u16)> =
        r.d.lids
            .base
            .iter()
            .filter(|(n, _)| !f.node(**n).is_switch())
            .flat_map(|(n, ps)| ps.values().map(move |l| (*n, l.0)))
            .collect();
    let mut out = String::new();
    for &(src, slid) in &hcas {
        for &(_, dlid) in hcas.iter().filter(|(_, l)| *l != slid) {
            let q = r
                .sim
                .run_retrying(
                    "saquery",
                    &[
                        "-p",
                        "--slid",
                        &slid.to_string(),
                        "--dlid",
                        &dlid.to_string(),
                    ],
                    Duration::from_secs(30),
                    Duration::from_secs(60),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let sl = q
                .stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix("sl."))
                .and_then(|v| v.trim_start_matches('.').trim().strip_prefix("0x"))
                .and_then(|v| u8::from_str_radix(v, 16).ok())
                .unwrap_or_else(|| panic!("no SL in saquery output:\n{}", q.stdout));
            let _ = writeln!(out, "{:#018x} {dlid} {sl}", f.node(src).guid().0);
        }
    }
    out
}

/// The VL arbitration OpenSM programmed (`qos TRUE`: its defaults) on every cabled port, read
/// with `smpquery vlarb` (OpenSM dumps none; without it a state sends VL 0 only).
fn with_vlarb(r: &Run, st: ValidState) -> ValidState {
    let mut st: FabricState = st.into_inner();
    let f = r.d.fabric.clone();
    for id in f.node_ids() {
        let node = f.node(id);
        for p in node.ports.iter().filter(|p| p.link.is_some()) {
            let lid_port = if node.is_switch() { PortNum(0) } else { p.num };
            let lid = r.d.lids.get(id, lid_port).unwrap();
            let q = r
                .sim
                .run_retrying(
                    "smpquery",
                    &["vlarb", &lid.0.to_string(), &p.num.0.to_string()],
                    Duration::from_secs(30),
                    Duration::from_secs(60),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            st.ports
                .entry(weft_fabric::PortRef::new(id, p.num.0))
                .or_default()
                .vlarb = Some(weft_tests::vlarb_of(&q.stdout));
        }
    }
    ValidState::new(st).unwrap_or_else(|e| panic!("{e}"))
}

/// `lash` on a ring. As every tool sees the tables — weft without path SLs, `weft audit`
/// (the SA's path SLs are not on the fabric) and ibdmchk (one SL) — every route is on SL 0,
/// where lash's layers together loop round the ring: refuted, by the unicast routes alone,
/// and the trees change nothing (multicast delivery proven). With lash's path SLs and the VL
/// arbitration OpenSM programmed, its unicast routes are proven, and so is their union with
/// OpenSM's trees: the two SL 0 groups' trees share VL 0 with layer 0's routes, the SL 1
/// group's VL 1 with layer 1's, and neither closes a loop (`weft verify --state` on the
/// assembled state; its certificate re-checked).
#[test]
fn lash_multicast_on_a_ring_is_read_alike_and_refuted_without_its_sls() {
    let Some(tools) = ibsim::require("lash_multicast_on_a_ring", &TOOLS) else {
        return;
    };
    let mut r = run(&tools, "lash", RING, "qos TRUE\n", &RING_JOINS);
    assert!(
        r.read("osm.log").contains("Lanes needed"),
        "lash did not route:\n{}",
        r.log_tail()
    );
    let v = check_common(&mut r, &RING_JOINS);
    assert_eq!(outcome(&v, "deadlock_free"), "violated", "{v:#}");
    assert_eq!(outcome(&v, "connected"), "proven", "{v:#}");
    assert_eq!(outcome(&v, "multicast_connected"), "proven", "{v:#}");

    // lash's own view: its path SLs, its SL2VL and the VL arbitration OpenSM programmed.
    let psl = path_sls(&r);
    let lfts = r.read("opensm-lfts.dump");
    let sl2vl = r.read("opensm-sl2vl.dump");
    let mfts = r.read("opensm.mcfdbs");
    let members = std::fs::read_to_string(&r.mcmembers).unwrap();
    let state = |multicast: bool| {
        let (st, warnings) = opensm::assemble(
            r.d.fabric.clone(),
            r.d.lids.clone(),
            &Dumps {
                lfts: &lfts,
                sl2vl: Some(&sl2vl),
                path_sl: Some(&psl),
                guid2lid: None,
                mfts: multicast.then_some(mfts.as_str()),
                mcmembers: multicast.then_some(members.as_str()),
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(warnings.is_empty(), "{warnings:?}");
        st
    };
    let unicast = with_vlarb(&r, state(false));
    let sls: BTreeSet<u16> = unicast.path_sl.by_source.iter().map(|e| e.sls.0).collect();
    assert!(sls.len() > 1, "lash used one SL only:\n{psl}");
    // The real CLI on both states (`state.json`): the unicast routes alone, then with the
    // trees, whose certificate the checker accepts.
    let mut both: FabricState = unicast.clone().into_inner();
    both.multicast = state(true).into_inner().multicast;
    let state_file = |name: &str, st: &FabricState| {
        let p = r.dir.join(name);
        std::fs::write(&p, st.to_json()).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let (u, b) = (
        state_file("unicast.json", &unicast),
        state_file("both.json", &both),
    );
    let cert = r.path("both.cert.json");
    let cli = |args: &[&str]| {
        let o = weft(args);
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&o.stderr)));
        (o.status.code(), v)
    };
    let hca = ["--scope", "hca-to-hca", "--format", "json"];
    let (code, v) = cli(&[&["verify", "--state", &u][..], &hca].concat());
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["traffic"]["multicast_groups"], 0, "{v:#}");
    let (code, v) = cli(&[
        &["verify", "--state", &b, "--write-certificate", &cert][..],
        &hca,
    ]
    .concat());
    // lash's layer 0 (SL 0, VL 0) admits OpenSM's trees of the two SL 0 groups, and its layer
    // 1 (VL 1) the tree of the SL 1 group: proven.
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["traffic"]["multicast_groups"], 3, "{v:#}");
    assert_eq!(outcome(&v, "deadlock_free"), "proven", "{v:#}");
    assert_eq!(outcome(&v, "multicast_connected"), "proven", "{v:#}");
    // 5 senders × 4 receivers, 3 × 3, 3 × 2, less the full members' own.
    assert_eq!(v["report"]["multicast"]["pairs"], 16 + 6 + 4, "{v:#}");
    // The trees add dependencies to the graph the proof is about.
    let deps = |v: &Value| v["report"]["stats"]["dependencies"].as_u64().unwrap();
    let (_, uv) = cli(&[&["verify", "--state", &u][..], &hca].concat());
    assert!(deps(&v) > deps(&uv), "{} vs {}", deps(&v), deps(&uv));
    let (code, checked) =
        cli(&[&["verify", "--state", &b, "--certificate", &cert][..], &hca].concat());
    assert_eq!(code, Some(0), "{checked:#}");
    drop(r);
}

/// OpenSM's `updn` on the ring, rooted at `sw1` (OpenSM finds no root on a ring by itself):
/// its unicast routes are proven, and so are the trees of the groups above, but a group of
/// `h5` (on `sw3`) and `h9` (on `sw5`) gets the min-hop tree through `sw4`, the switch farthest
/// from the root: a copy comes down to `sw4` and goes up again, a turn up/down routing never
/// takes, and with the routes the long way round the ring it closes a credit loop (one in
/// each direction). weft names the group's MLID in the loop and replays it; ibdmchk finds the
/// loop with `-M` only, on one of weft's channels; `weft audit` refutes the live fabric alike.
#[test]
fn updn_multicast_on_a_ring_closes_a_credit_loop_through_the_farthest_switch() {
    let Some(tools) = ibsim::require("updn_multicast_on_a_ring", &TOOLS) else {
        return;
    };
    let joins: Vec<Join> = RING_JOINS
        .iter()
        .copied()
        .chain([("h5", &["abcd"][..], 0xc003), ("h9", &["abcd"][..], 0xc003)])
        .collect();
    // `sw1`'s GUID (weft's numbering: the switches first).
    let roots_dir = crate::support::scratch("osm-updn-roots");
    let roots = roots_dir.join("roots");
    std::fs::write(&roots, "0x0002c90000000100\n").unwrap();
    let mut r = run(
        &tools,
        "updn",
        RING,
        &format!("qos FALSE\nroot_guid_file {}\n", roots.display()),
        &joins,
    );
    let f = &r.d.fabric;
    assert_eq!(
        f.node(f.find_guid(weft_fabric::Guid(0x2c90000000100)).unwrap())
            .name(),
        "sw1"
    );
    let log = r.read("osm.log");
    assert!(
        log.contains("updn tables configured on all switches") && !log.contains("minhop"),
        "updn did not route:\n{}",
        r.log_tail()
    );
    let v = check_common(&mut r, &joins);
    let unicast = verify(&r, false, false, &[]);
    assert_eq!(outcome(&unicast, "deadlock_free"), "proven", "{unicast:#}");
    assert_eq!(outcome(&v, "deadlock_free"), "violated", "{v:#}");
    assert_eq!(outcome(&v, "connected"), "proven", "{v:#}");
    assert_eq!(outcome(&v, "multicast_connected"), "proven", "{v:#}");
    // Each loop goes round the ring through the new group's tree: one dependency of it is a
    // copy of the group (its MLID the route's LID) turning at `sw4`, and it replays on the
    // tables.
    let (st, _) = opensm::assemble(
        r.d.fabric.clone(),
        r.d.lids.clone(),
        &Dumps {
            lfts: &r.read("opensm-lfts.dump"),
            sl2vl: None,
            path_sl: None,
            guid2lid: None,
            mfts: Some(&r.read("opensm.mcfdbs")),
            mcmembers: Some(&std::fs::read_to_string(&r.mcmembers).unwrap()),
        },
    )
    .unwrap();
    let found = loops(&v);
    assert_eq!(found.len(), 2, "{v:#}");
    let sw4 =
        r.d.fabric
            .find_guid(weft_fabric::Guid(0x2c90000000400))
            .unwrap();
    for l in found {
        let l: weft_verifier::CreditLoop = serde_json::from_value(l.clone()).unwrap();
        assert_eq!(l.cycle.len(), 6, "{l:#?}");
        let turns: Vec<_> = l
            .cycle
            .iter()
            .filter(|dep| dep.route.dlid.0 >= 0xc000)
            .collect();
        assert_eq!(turns.len(), 1, "{l:#?}");
        assert_eq!(turns[0].route.dlid.0, 0xc003, "{l:#?}");
        assert_eq!(turns[0].to.node.id, sw4, "{l:#?}");
        weft_verifier::reference::replay_credit_loop(&st, &l).unwrap_or_else(|e| panic!("{e}"));
    }
    // Asked without OpenSM's SM_Key, the SA answers with the group's own record (port GID
    // `::`) and no member: taken as all its members, the group would send nothing and the
    // loop would be gone ("proven"). Refused instead, the group named.
    let untrusted = r
        .sim
        .run(
            "saquery",
            &["--mlid", "0xc003", "MCMR"],
            Duration::from_secs(30),
        )
        .unwrap()
        .stdout;
    assert!(
        untrusted.contains("PortGid.................::"),
        "{untrusted}"
    );
    let hidden = r.dir.join("untrusted.txt");
    std::fs::write(&hidden, &untrusted).unwrap();
    let o = weft(&[
        "verify",
        "--topology",
        r.topology.to_str().unwrap(),
        "--lfts",
        &r.path("opensm-lfts.dump"),
        "--mfts",
        &r.path("opensm.mcfdbs"),
        "--mcmembers",
        hidden.to_str().unwrap(),
        "--scope",
        "hca-to-hca",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "group 0xc003 has a tree in the multicast tables but its records name no member"
        ),
        "{err}"
    );
    drop(r);
    let _ = std::fs::remove_file(&roots);
}
