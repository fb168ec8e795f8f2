//! `weft watch --target mad` on ibsim (issue 47): a small fat tree built by weft and loaded by
//! OpenSM's file engine; a cable pulled at ibsim's console while the watch runs is noticed by
//! the next sweep, the live state refuted, a repair planned around the cable, applied through
//! `weft apply`'s transaction and read back proven (by the watch, and by `weft verify` on what
//! `ibnetdiscover` and `dump_fts` read); a real Prometheus scrapes `--metrics` meanwhile and
//! its HTTP API returns `weft_fabric_proven`. An LFT block another writer (OpenSM, loading a
//! changed `lfts.dump`) wrote is named by switch and block by `--once` (exit 1) and restored
//! by `--once --repair apply` (exit 0, `dump_fts` as built); SIGTERM stops the loop after its
//! sweep (exit 0), and a second watch of the SM port is refused meanwhile (exit 2). OpenSM's file engine re-sweeping
//! after a pulled cable writes tables the watch refutes. A rebooted switch (its LFT emptied,
//! LinearFDBTop 0) is named with its lost blocks and restored.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::weft;
use serde_json::Value;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use weft_fabric::ValidState;
use weft_tests::ibsim::{self, ClientOutput, Ibsim};

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree }\n}\n";

/// `weft build` of [`TREE`].
fn build(d: &Path) -> (PathBuf, ValidState) {
    crate::support::build(d, "small.weft", TREE)
}

/// The JSON lines of `text`.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What `weft watch --once` printed: its output and its JSON events.
struct Once {
    out: ClientOutput,
    events: Vec<Value>,
}

impl Once {
    /// Its sweep event.
    fn sweep(&self) -> &Value {
        self.events
            .iter()
            .find(|v| v["event"] == "sweep")
            .unwrap_or_else(|| panic!("no sweep event:\n{}\n{}", self.out.stdout, self.out.stderr))
    }

    /// Its exit status (and what it printed, when not `code`).
    fn exits(&self, code: i32) {
        assert_eq!(
            self.out.status.code(),
            Some(code),
            "{}\n{}",
            self.out.stdout,
            self.out.stderr
        );
    }
}

/// `weft watch --target mad --once --format json --lock-dir LOCKS MORE…` on `sim`.
fn watch_once(sim: &Ibsim, locks: &Path, more: &[&str]) -> Once {
    let mut a = vec![
        "watch",
        "--target",
        "mad",
        "--once",
        "--format",
        "json",
        "--lock-dir",
        locks.to_str().unwrap(),
    ];
    a.extend_from_slice(more);
    let out = sim.run_any(crate::support::WEFT, &a, &[], Duration::from_secs(120));
    let events = events(&out.stdout);
    Once { out, events }
}

/// `d/locks`, a lock directory only its owner may write (as `weft apply` asks).
fn lock_dir(d: &Path) -> PathBuf {
    let locks = d.join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::set_permissions(&locks, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    locks
}

/// [`watch_once`] against the build `b` with `--repair REPAIR`, its lock directory, plan and
/// journal in `d`.
fn repair_once(sim: &Ibsim, d: &Path, b: &Path, repair: &str) -> Once {
    let (plan, journal) = (d.join("p.plan"), d.join("j"));
    watch_once(
        sim,
        &d.join("locks"),
        &[
            "--state",
            b.to_str().unwrap(),
            "--repair",
            repair,
            "--plan-file",
            plan.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    )
}

/// Waits (up to 120 s) until `file` holds a JSON line `pick` accepts.
fn wait_for(file: &Path, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if let Some(v) = events(&text).into_iter().find(|v| pick(v)) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no {what}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A GET of `path` on `addr`: the body.
fn get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real Prometheus scraping `target` every second, with its own storage, on a free port;
/// killed (by its PID) when dropped.
struct Prometheus {
    child: std::process::Child,
    addr: String,
}

impl Prometheus {
    fn start(dir: &Path, target: &str) -> Prometheus {
        let conf = dir.join("prometheus.yml");
        std::fs::write(
            &conf,
            format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: weft\n    static_configs:\n      - targets: ['{target}']\n"),
        )
        .unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", conf.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Prometheus { child, addr }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first cable between two switches of `st`, as ibsim names its first end.
fn switch_cable(st: &ValidState) -> (String, u64, u8) {
    let f = &st.fabric;
    let l = f
        .links()
        .iter()
        .find(|l| f.node(l.a.node).is_switch() && f.node(l.b.node).is_switch())
        .unwrap();
    let g = f.node(l.a.node).guid().0;
    (
        format!("Unlink \"S-{g:016x}\"[{}]", l.a.port.0),
        g,
        l.a.port.0,
    )
}

#[test]
fn a_pulled_cable_is_noticed_repaired_and_scraped() {
    let Some(tools) = ibsim::require(
        "watch: a_pulled_cable_is_noticed_repaired_and_scraped",
        &["opensm", "dump_fts", "ibnetdiscover", "prometheus"],
    ) else {
        return;
    };
    let d = crate::support::scratch("watch-cable");
    let (b, st) = build(&d);
    let sim = Ibsim::start_built(&tools, &b, &st, true).unwrap_or_else(|e| panic!("{e}"));
    let (plan, journal, locks) = (
        d.join("repair.plan"),
        d.join("repair.journal"),
        d.join("locks"),
    );
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::set_permissions(&locks, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let bg = sim
        .spawn_env(
            crate::support::WEFT,
            &[
                "watch",
                "--target",
                "mad",
                "--state",
                b.to_str().unwrap(),
                "--interval",
                "1s",
                "--sweeps",
                "8",
                "--format",
                "json",
                "--repair",
                "apply",
                "--plan-file",
                plan.to_str().unwrap(),
                "--journal",
                journal.to_str().unwrap(),
                "--lock-dir",
                locks.to_str().unwrap(),
                "--metrics",
                "127.0.0.1:0",
            ],
            &[],
        )
        .unwrap();
    let m = wait_for(&bg.out, "metrics address", |v| v["event"] == "metrics");
    let target = m["address"].as_str().unwrap().to_owned();
    let first = wait_for(&bg.out, "first read", |v| {
        v["event"] == "sweep" && v["sweep"] == 0
    });
    assert_eq!(first["proven"], true, "{first}");
    assert_eq!(
        first["difference"]["blocks"],
        serde_json::json!([]),
        "{first}"
    );
    let prom = Prometheus::start(&d, &target);
    // Pulled between two sweeps.
    let light = wait_for(&bg.out, "a light sweep", |v| {
        v["event"] == "sweep" && v["sweep"] == 1
    });
    let n = light["sweep"].as_u64().unwrap();
    // Nothing changed: the verdict is the first read's, and says so.
    assert_eq!(light["heavy"], Value::Null, "{light}");
    assert_eq!(light["verdict_of"]["sweep"], 0, "{light}");
    assert_eq!(light["verdict_of"]["full"], true, "{light}");
    assert_eq!(light["last_full"]["sweep"], 0, "{light}");
    let served = get(&target, "/metrics");
    assert!(served.contains("weft_verdict_sweep 0\n"), "{served}");
    assert!(served.contains("weft_verdict_full 1\n"), "{served}");
    assert!(
        served.contains("weft_last_full_sweep_timestamp_seconds "),
        "{served}"
    );
    let (unlink, g, _) = switch_cable(&st);
    let said = sim.console(&unlink).unwrap();
    assert!(!said.contains('#'), "{said}");
    // Noticed by the sweep after the next one at the latest (the pull may land mid-sweep).
    let found = wait_for(&bg.out, "the change", |v| {
        v["event"] == "sweep" && v["changes"].as_array().is_some_and(|c| !c.is_empty())
    });
    assert!(found["sweep"].as_u64().unwrap() <= n + 2, "{found}");
    // A heavy read of what changed: the switches whose routes crossed the cable are reached
    // again around it, not the whole fabric read again.
    assert_eq!(found["heavy"], "partial", "{found}");
    assert!(found["rerouted"].as_u64().unwrap() > 0, "{found}");
    assert_eq!(found["unanswered"], 0, "{found}");
    assert_eq!(found["verdict_of"]["sweep"], found["sweep"], "{found}");
    assert_eq!(found["verdict"]["connected"], "refuted", "{found}");
    let down = &found["difference"]["cables_down"];
    assert_eq!(down.as_array().unwrap().len(), 1, "{found}");
    assert!(down.to_string().contains(&format!("{g:#018x}")), "{down}");
    assert_eq!(found["plan"]["applied"], true, "{found}");
    assert!(plan.exists());
    // The read after the repair: proven.
    let s = found["sweep"].as_u64().unwrap();
    let after = wait_for(&bg.out, "the read back", |v| {
        v["event"] == "sweep" && v["sweep"].as_u64().is_some_and(|k| k > s) && v["heavy"] == "full"
    });
    assert_eq!(after["proven"], true, "{after}");
    // Prometheus has the series.
    let start = Instant::now();
    let body = loop {
        let body = get(&prom.addr, "/api/v1/query?query=weft_fabric_proven");
        if body.contains("\"property\":\"connected\"") {
            break body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{body}\n{}",
            std::fs::read_to_string(d.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(body.contains("\"status\":\"success\""), "{body}");
    assert!(body.contains("\"property\":\"deadlock_free\""), "{body}");
    drop(prom);
    let o = bg.wait(Duration::from_secs(120)).unwrap();
    assert!(o.status.success(), "{}", o.stdout);
    // Read back with the real tools: the fabric as ibnetdiscover and dump_fts see it, proven.
    let disc = sim
        .run("ibnetdiscover", &[], Duration::from_secs(60))
        .unwrap();
    let fts = sim.run("dump_fts", &[], Duration::from_secs(60)).unwrap();
    std::fs::write(d.join("t.net"), &disc.stdout).unwrap();
    std::fs::write(d.join("fts.txt"), &fts.stdout).unwrap();
    let v = weft(&[
        "verify",
        "--topology",
        d.join("t.net").to_str().unwrap(),
        "--lfts",
        d.join("fts.txt").to_str().unwrap(),
    ]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
}

#[test]
fn a_block_another_writer_wrote_is_named_and_restored() {
    let Some(tools) = ibsim::require(
        "watch: a_block_another_writer_wrote_is_named_and_restored",
        &["opensm", "dump_fts"],
    ) else {
        return;
    };
    let d = crate::support::scratch("watch-writer");
    let (b, st) = build(&d);
    let f = &st.fabric;
    let sim = Ibsim::start_built(&tools, &b, &st, false).unwrap_or_else(|e| panic!("{e}"));
    let built = sim.lfts().unwrap();
    // Another writer: OpenSM's file engine loading a dump with one entry of one switch moved
    // (the first host LID of the first leaf, to another live port).
    let (sw, lid, port) = moved_entry(&st);
    let dump = std::fs::read_to_string(b.join("lfts.dump")).unwrap();
    let changed = rewrite_entry(&dump, sw, lid, port);
    assert_ne!(changed, dump);
    let other = d.join("other.dump");
    std::fs::write(&other, changed).unwrap();
    sim.load_with_opensm(&other, &st)
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    assert_ne!(sim.lfts().unwrap(), built, "the other writer wrote");
    let locks = lock_dir(&d);
    let once = |repair: &str| repair_once(&sim, &d, &b, repair);
    let o = once("plan");
    o.exits(1);
    let sweep = o.sweep();
    let name = f.node(f.find_guid(weft_fabric::Guid(sw)).unwrap()).name();
    assert_eq!(
        sweep["difference"]["blocks"],
        serde_json::json!([{"switch": format!("{sw:#018x}"), "name": name, "block": lid / 64}]),
        "{sweep}"
    );
    once("apply").exits(0);
    assert_eq!(
        sim.lfts().unwrap(),
        built,
        "restored: dump_fts reads what was built"
    );
    // Without `--sweeps` it runs until SIGTERM, then stops after its sweep (exit 0); a second
    // watch of the same SM port is refused (the lock) while it runs.
    let bg = sim
        .spawn_env(
            crate::support::WEFT,
            &[
                "watch",
                "--target",
                "mad",
                "--interval",
                "200ms",
                "--format",
                "json",
                "--lock-dir",
                locks.to_str().unwrap(),
            ],
            &[],
        )
        .unwrap();
    wait_for(&bg.out, "a second sweep", |v| {
        v["event"] == "sweep" && v["sweep"] == 2
    });
    let second = sim.run_any(
        crate::support::WEFT,
        &[
            "watch",
            "--target",
            "mad",
            "--once",
            "--lock-dir",
            locks.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(second.status.code(), Some(2), "{}", second.stderr);
    assert!(
        second.stderr.contains("weft::deploy::file_locked"),
        "{}",
        second.stderr
    );
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &bg.pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = bg.wait(Duration::from_secs(60)).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", o.stdout);
    let last = events(&o.stdout).pop().unwrap();
    assert_eq!(last["event"], "stop", "{}", o.stdout);
}

/// A switch rebooted (ibsim has no reboot command: `tests/fixtures/reboot/reboot.c` writes its
/// LFT blocks all 0xFF and its LinearFDBTop 0 by SubnSet SMPs, as the reboot leaves it) is
/// named with every block it lost by `--once` (exit 1, `connected` refuted), and `--once
/// --repair apply` restores it (exit 0, `dump_fts` as built, the next read proven).
#[test]
fn a_rebooted_switch_is_named_and_restored() {
    let Some(tools) = ibsim::require(
        "watch: a_rebooted_switch_is_named_and_restored",
        &["opensm", "dump_fts", "gcc"],
    ) else {
        return;
    };
    let d = crate::support::scratch("watch-reboot");
    let (b, st) = build(&d);
    let f = &st.fabric;
    let sim = Ibsim::start_built(&tools, &b, &st, false).unwrap_or_else(|e| panic!("{e}"));
    let built = sim.lfts().unwrap();
    // The last switch (not the one ibsim attaches clients at), and the blocks its table holds.
    let (&id, sw) = st.switches.iter().next_back().unwrap();
    let g = f.node(id).guid().0;
    let lost: Vec<u16> = sw
        .lft
        .ports
        .chunks(64)
        .enumerate()
        .filter(|(_, c)| c.iter().any(|&p| p != weft_fabric::LFT_UNSET))
        .map(|(k, _)| u16::try_from(k).unwrap())
        .collect();
    assert!(!lost.is_empty());
    let reboot = sim.dir().join("reboot");
    let cc = std::process::Command::new("gcc")
        .arg("-o")
        .arg(&reboot)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/reboot/reboot.c"))
        .args(["-libmad", "-libumad"])
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let said = sim
        .run(
            reboot.to_str().unwrap(),
            &[&ibsim::dr_path(f, id)],
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    assert!(said.stdout.contains(" top "), "{}", said.stdout);
    let now = sim.lfts().unwrap();
    assert!(
        !now.keys().any(|&(s, _)| s == g) && now.len() < built.len(),
        "the switch forwards nothing"
    );
    lock_dir(&d);
    let once = |repair: &str| repair_once(&sim, &d, &b, repair);
    let o = once("plan");
    o.exits(1);
    let sweep = o.sweep();
    let name = f.node(id).name();
    let named: Vec<Value> = lost
        .iter()
        .map(|&k| serde_json::json!({"switch": format!("{g:#018x}"), "name": name, "block": k}))
        .collect();
    assert_eq!(
        sweep["difference"]["blocks"],
        Value::Array(named),
        "{sweep}"
    );
    assert_eq!(
        sweep["difference"]["cables_down"],
        serde_json::json!([]),
        "{sweep}"
    );
    assert_eq!(sweep["proven"], false, "{sweep}");
    assert_eq!(sweep["verdict"]["connected"], "refuted", "{sweep}");
    assert_eq!(sim.lfts().unwrap(), now, "`--repair plan` writes nothing");
    let o = once("apply");
    o.exits(0);
    let sweep = o.sweep();
    assert_eq!(sweep["plan"]["applied"], true, "{sweep}");
    assert_eq!(
        sim.lfts().unwrap(),
        built,
        "restored: dump_fts reads what was built"
    );
    let o = once("plan");
    o.exits(0);
    let sweep = o.sweep();
    assert_eq!(sweep["proven"], true, "{sweep}");
    assert_eq!(
        sweep["difference"]["blocks"],
        serde_json::json!([]),
        "{sweep}"
    );
}

/// A switch, a LID it forwards to a host port, and another live port of it.
fn moved_entry(st: &ValidState) -> (u64, u16, u8) {
    let f = &st.fabric;
    for (id, sw) in &st.switches {
        let node = f.node(*id);
        for (lid, &port) in sw.lft.ports.iter().enumerate().skip(1) {
            if port == 0 || port == weft_fabric::LFT_UNSET {
                continue;
            }
            let other = (1..=node.spec.port_count)
                .find(|&p| p != port && f.peer(weft_fabric::PortRef::new(*id, p)).is_some());
            if let Some(p) = other {
                return (node.guid().0, lid as u16, p);
            }
        }
    }
    panic!("no entry to move");
}

/// `dump` (OpenSM's `lfts.dump`) with switch `sw`'s entry for `lid` sent out of `port`.
fn rewrite_entry(dump: &str, sw: u64, lid: u16, port: u8) -> String {
    let mut out = String::new();
    let mut here = false;
    for line in dump.lines() {
        if line.starts_with("Unicast lids") {
            here = line.contains(&format!("{sw:#018x}")) || line.contains(&format!("{sw:016x}"));
        }
        let prefix = format!("{lid:#06x} ");
        if here && line.starts_with(&prefix) {
            let rest = line.get(prefix.len()..).unwrap_or("");
            let tail = rest
                .split_once(' ')
                .map_or(String::new(), |(_, t)| format!(" {t}"));
            out += &format!("{prefix}{port:03}{tail}\n");
            continue;
        }
        out += line;
        out += "\n";
    }
    out
}

/// OpenSM running with its `file` engine (weft's `lfts.dump`), re-sweeping after a cable is
/// pulled: the file engine cannot route around the cable (it loads the file's entries as they
/// are), and what it wrote is refuted (`connected`; `deadlock_free` proven) by `weft watch
/// --once` as by `weft verify` on what `ibnetdiscover` and `dump_fts` read; a repair plan is
/// written; against the design (`--design`) the cable is missing.
#[test]
fn opensm_file_engine_after_a_pulled_cable_is_judged() {
    let Some(tools) = ibsim::require(
        "watch: opensm_file_engine_after_a_pulled_cable_is_judged",
        &["opensm", "dump_fts", "ibnetdiscover"],
    ) else {
        return;
    };
    let d = crate::support::scratch("watch-osm");
    let (b, st) = build(&d);
    let sim = Ibsim::start_built(&tools, &b, &st, true).unwrap_or_else(|e| panic!("{e}"));
    let cache = sim.dir().join("osm-cache");
    let log = d.join("osm-bg.log");
    let dump = b.join("lfts.dump");
    let conf = d.join("opensm.conf");
    std::fs::write(
        &conf,
        format!(
            "routing_engine file\nlfts_file {}\nsweep_interval 1\nforce_log_flush TRUE\n",
            dump.display()
        ),
    )
    .unwrap();
    let mut osm = sim
        .spawn_env(
            "opensm",
            &["-F", conf.to_str().unwrap(), "-f", log.to_str().unwrap()],
            &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        )
        .unwrap();
    let ups = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("SUBNET UP")
            .count()
    };
    let start = Instant::now();
    while ups() < 1 {
        assert!(
            osm.running() && start.elapsed() < Duration::from_secs(120),
            "OpenSM did not come up:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (unlink, _, _) = switch_cable(&st);
    let said = sim.console(&unlink).unwrap();
    assert!(!said.contains('#'), "{said}");
    // OpenSM's re-sweep after the trap: a heavy sweep of its own.
    let start = Instant::now();
    while ups() < 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let resweeps = ups();
    let locks = lock_dir(&d);
    let o = watch_once(
        &sim,
        &locks,
        &[
            "--state",
            b.to_str().unwrap(),
            "--plan-file",
            d.join("p.plan").to_str().unwrap(),
            "--design",
            b.join("state.json").to_str().unwrap(),
        ],
    );
    let sweep = o.sweep().clone();
    let disc = sim
        .run("ibnetdiscover", &[], Duration::from_secs(60))
        .unwrap();
    let fts = sim.run("dump_fts", &[], Duration::from_secs(60)).unwrap();
    drop(osm);
    std::fs::write(d.join("t.net"), &disc.stdout).unwrap();
    std::fs::write(d.join("fts.txt"), &fts.stdout).unwrap();
    let v = weft(&[
        "verify",
        "--topology",
        d.join("t.net").to_str().unwrap(),
        "--lfts",
        d.join("fts.txt").to_str().unwrap(),
    ]);
    assert!(resweeps >= 2, "OpenSM swept again after the pull");
    // What the file engine wrote (weft's tables, routes over the dead cable): refuted, by the
    // watch and by `weft verify` on what the real tools read alike; a repair plan written.
    o.exits(1);
    assert_eq!(sweep["verdict"]["connected"], "refuted", "{sweep}");
    assert_eq!(sweep["verdict"]["deadlock_free"], "proven", "{sweep}");
    assert_eq!(
        v.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    assert_eq!(
        sweep["difference"]["cables_down"].as_array().unwrap().len(),
        1
    );
    assert!(sweep["plan"]["steps"].as_u64().unwrap() > 0, "{sweep}");
    assert!(d.join("p.plan").exists());
    // `--design`: the pulled cable is missing, as `weft diff` says it.
    assert!(
        o.events
            .iter()
            .any(|v| v["event"] == "finding" && v["code"] == "weft::cable_missing"),
        "{}",
        o.out.stdout
    );
}
