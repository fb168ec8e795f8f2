//! `weft dftree --target mad` on ibsim: a small tree with a dFtree class, built, loaded by
//! OpenSM (LIDs and LFTs); two sweeps read PortCounters (and PortCountersExtended, which
//! ibsim answers) off every live port, by LID. ibsim simulates no congestion (XmitWait stays
//! 0), so nothing moves and nothing is written. And what is refused before any MAD: a
//! fabric without dFtree lanes (exit 1), a bad `--interval`, the targets not built.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::{Path, PathBuf};
use std::time::Duration;
use weft_tests::ibsim::{self, Ibsim, Limits};

/// One spine, two leaves, four hosts; `qos` as given.
fn tiny(qos: &str) -> String {
    format!(
        "use std::hardware::{{sb7800, connectx5}}\n\
         fabric tiny {{\n\
             topology {{\n\
                 switch spine : sb7800 {{ level = 2 }}\n\
                 switch leaf[1..=2] : sb7800 {{ level = 1 }}\n\
                 hca host[1..=4] : connectx5 {{ name = \"h{{}}\" }}\n\
                 for l in 1..=2 {{ link leaf[l].p[36] <-> spine.p[l] }}\n\
                 for n in 1..=4 {{ link host[n].p[1] <-> leaf[(n - 1) / 2 + 1].p[(n - 1) % 2 + 1] }}\n\
             }}\n\
             vls {{ budget = 4 }}\n\
             routing {{ engine = fat_tree }}\n\
             {qos}\n\
         }}\n"
    )
}

fn dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("dftree-{name}"))
}

/// `weft build` of `src` into `d/build`: that directory and the state built.
fn build(d: &Path, src: &str) -> (PathBuf, weft_fabric::ValidState) {
    crate::support::build(d, "tiny.weft", src)
}

#[test]
fn dftree_reads_every_live_port_each_sweep() {
    let Some(tools) = ibsim::require("dftree_reads_every_live_port_each_sweep", &["opensm"]) else {
        return;
    };
    let d = dir("mad");
    let (b, state) = build(&d, &tiny("qos {\n class bulk { lanes = dftree }\n }"));
    let sim = Ibsim::start_built(&tools, &b, &state, false).unwrap_or_else(|e| panic!("{e}"));
    let out = d.join("out");
    let o = sim.run_any(
        crate::support::WEFT,
        &[
            "dftree",
            b.to_str().unwrap(),
            "--target",
            "mad",
            "--interval",
            "200ms",
            "--sweeps",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
        ],
        &[],
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "{}\n{}", o.stdout, o.stderr);
    let sweeps: Vec<serde_json::Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // 6 links (2 leaf uplinks, 4 hosts): 12 live ports, read at 7 LIDs (3 switches' port 0,
    // 4 hosts). The first sweep asks each LID's ClassPortInfo once; ibsim has extended
    // counters, so every port takes a PortCounters and a PortCountersExtended Get.
    let live = 2 * state.fabric.links().len();
    assert_eq!(live, 12);
    assert_eq!(sweeps.len(), 2, "{}", o.stdout);
    for (i, s) in sweeps.iter().enumerate() {
        assert_eq!(s["sweep"], i + 1);
        assert_eq!(s["ports_read"], live, "{s}");
        assert_eq!(s["extended_xmit_data"], live, "{s}");
        assert_eq!(s["pma_gets"], 2 * live + if i == 0 { 7 } else { 0 }, "{s}");
        assert_eq!(s["saturated"], serde_json::json!([]));
        // ibsim's PMA counts XmitWait (CapabilityMask 0x1300 has bit 12).
        assert_eq!(s["no_xmit_wait"], serde_json::json!([]));
        // ibsim simulates no congestion: nothing moves, nothing more is written.
        assert_eq!(s["to_slow"], serde_json::json!([]));
        assert_eq!(s["slow_flows"], 0);
        assert_eq!(s["wrote"], false);
    }
    // Written at the start, before the first sweep: the build's policy (OpenSM pointed at
    // it has it from the start) and a repath.txt that moves nothing; no move, no log.
    assert_eq!(
        std::fs::read_to_string(out.join("qos-policy.conf")).unwrap(),
        std::fs::read_to_string(b.join("qos-policy.conf")).unwrap()
    );
    let repath = std::fs::read_to_string(out.join("repath.txt")).unwrap();
    assert!(
        repath.starts_with("# weft dftree write 0, sweep 0: ") && repath.lines().count() == 1,
        "{repath}"
    );
    assert!(!out.join("repath.log").exists());

    // Without `--sweeps` it runs until SIGTERM, then stops after the sweep it is in (exit 0).
    let mut bg = sim
        .spawn_env(
            crate::support::WEFT,
            &[
                "dftree",
                b.to_str().unwrap(),
                "--target",
                "mad",
                "--interval",
                "100ms",
                "--out",
                out.to_str().unwrap(),
            ],
            &[],
        )
        .unwrap();
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&bg.out)
        .unwrap_or_default()
        .contains("12 live port(s)")
    {
        assert!(
            bg.running() && start.elapsed() < Duration::from_secs(60),
            "{}",
            std::fs::read_to_string(&bg.out).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(bg.running());
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &bg.pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = bg.wait(Duration::from_secs(60)).unwrap();
    assert!(o.status.success(), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("weft: interrupted: stopping after this sweep")
            && o.stdout.contains(
                "sweep(s) of 12 port(s); 0 flow(s) moved back to their fast lane at the stop"
            ),
        "{}",
        o.stdout
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn dftree_refuses_what_it_cannot_run() {
    let d = dir("refused");
    // No dFtree lanes (no QoS classes: every pair on one SL): refused with a finding, exit
    // 1, before any MAD.
    let (b, _) = build(&d, &tiny(""));
    let run = |args: &[&str]| {
        let mut all = vec!["dftree"];
        all.extend_from_slice(args);
        weft(&all)
    };
    let bs = b.to_str().unwrap();
    let o = run(&[bs, "--target", "mad", "--interval", "1s"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("weft::dftree_no_lanes") && err.contains("the state has no dFtree lanes"),
        "{err}"
    );
    // A bad interval: refused before the fabric is read.
    for bad in ["0s", "5", "1ms", "fast"] {
        let o = run(&[bs, "--target", "mad", "--interval", bad]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains(&format!(
                "--interval `{bad}`: give a number of milliseconds or seconds"
            )),
            "{err}"
        );
    }
    let o = run(&[bs, "--target", "mad", "--interval", "1s", "--sweeps", "0"]);
    assert_eq!(o.status.code(), Some(2));
    // `--out` the directory the build's policy is read from (however it is spelled): the
    // build's `qos-policy.conf` would be replaced. Refused before anything is read.
    std::fs::create_dir_all(d.join("lanes")).unwrap();
    let (lanes, _) = build(
        &d.join("lanes"),
        &tiny("qos {\n class bulk { lanes = dftree }\n }"),
    );
    let policy = std::fs::read_to_string(lanes.join("qos-policy.conf")).unwrap();
    let ls = lanes.to_str().unwrap();
    let state = lanes.join("state.json");
    let dotted = lanes.join("..").join("build");
    for (input, out) in [
        (ls, ls),
        (ls, dotted.to_str().unwrap()),
        (state.to_str().unwrap(), ls),
    ] {
        let o = run(&[input, "--target", "mad", "--interval", "1s", "--out", out]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{input} {out}: {err}");
        assert!(
            err.contains(&format!(
                "--out `{out}` is the directory the build's QoS policy is read from"
            )),
            "{err}"
        );
        // One sentence, without a run of the source's indentation inside it.
        assert!(
            err.contains("): dFtree's policy would replace the build's `qos-policy.conf`, which its moves are added to;"),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(lanes.join("qos-policy.conf")).unwrap(),
        policy
    );
    // The simulated loop is `weft simulate`'s.
    for target in ["sim", "opensm"] {
        let o = run(&[bs, "--target", target, "--interval", "1s"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("`weft dftree --target {target}` is not built yet"))
                && err.contains("`weft simulate`"),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A hot-spot on ibsim: after the first sweep, ibsim's console sets PortXmitWait on the
/// leaf port facing `h4` and on the ports of `h1` and `h2` (ibsim's `PerformanceSet`; it
/// simulates no congestion of its own). The second sweep marks `h4` a hot-spot and moves
/// `h1 → h4` and `h2 → h4` to the slow lane (SL 1): `qos-policy.conf` (the build's, with the
/// moved pairs on SL 1) and `repath.txt` are written, and the sweep's JSON says so. `h3`'s
/// cable is pulled meanwhile: its port is not read (named), the others are.
#[test]
fn dftree_moves_the_contributors_of_a_hot_spot() {
    let Some(tools) = ibsim::require("dftree_moves_the_contributors_of_a_hot_spot", &["opensm"])
    else {
        return;
    };
    let d = dir("hot");
    let (b, state) = build(&d, &tiny("qos {\n class bulk { lanes = dftree }\n }"));
    let f = &state.fabric;
    let guid = |name: &str| f.node(f.find(name).unwrap()).guid().0;
    let lid = |name: &str| {
        state
            .lids
            .get(f.find(name).unwrap(), weft_fabric::PortNum(1))
            .unwrap()
            .0
    };
    let sim = Ibsim::start_built(&tools, &b, &state, true).unwrap_or_else(|e| panic!("{e}"));
    let out = d.join("out");
    let bg = sim
        .spawn_env(
            crate::support::WEFT,
            &[
                "dftree",
                b.to_str().unwrap(),
                "--target",
                "mad",
                "--interval",
                "2s",
                "--sweeps",
                "3",
                "--out",
                out.to_str().unwrap(),
                "--format",
                "json",
            ],
            &[],
        )
        .unwrap();
    // The first sweep (which only records) is done.
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&bg.out)
        .unwrap_or_default()
        .contains("\"pma_gets\"")
    {
        assert!(start.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
    }
    make_hot_spot(&sim, &guid);
    // The second sweep is done: the files say what it moved (the third is 2 s away).
    while std::fs::read_to_string(&bg.out)
        .unwrap_or_default()
        .matches("\"pma_gets\"")
        .count()
        < 2
    {
        assert!(start.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
    }
    let repath = std::fs::read_to_string(out.join("repath.txt")).unwrap();
    let policy = std::fs::read_to_string(out.join("qos-policy.conf")).unwrap();
    let o = bg.wait(Duration::from_secs(60)).unwrap();
    assert!(o.status.success(), "{}", o.stdout);
    let (h1, h2) = (guid("h1"), guid("h2"));
    let l4 = lid("h4");
    let lines: Vec<serde_json::Value> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Three sweeps, then the stop.
    assert_eq!(lines.len(), 4, "{}", o.stdout);
    let sweeps = &lines[..3];
    assert_eq!(sweeps[0]["wrote"], false);
    assert_eq!(sweeps[0]["ports_read"], 12);
    check_second_sweep(&sweeps[1], &guid, &lid);
    assert!(
        repath.starts_with("# weft dftree write 1, sweep 2: "),
        "{repath}"
    );
    assert_eq!(
        repath
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>(),
        [
            format!("{h1:#018x} 1 {l4} 1"),
            format!("{h2:#018x} 1 {l4} 1")
        ]
    );
    let base = check_policy(&state, &b, &policy);
    // The third sweep: still a hot-spot (below the threshold once; two sweeps release it).
    assert_eq!(sweeps[2]["slow_flows"], 2, "{}", sweeps[2]);
    assert_eq!(sweeps[2]["wrote"], false);
    // `--sweeps` reached with two flows on the slow lane: they move back (the build's policy
    // again, a repath.txt moving them to SL 0), and the stop says so.
    let fast = |g: u64| serde_json::json!({"src_guid": format!("{g:#018x}"), "src_port": 1, "dst_lid": l4, "sl": 0});
    assert_eq!(
        lines[3],
        serde_json::json!({"stop": true, "sweep": 3, "to_fast": [fast(h1), fast(h2)], "slow_flows": 0, "wrote": true})
    );
    assert_eq!(
        std::fs::read_to_string(out.join("qos-policy.conf")).unwrap(),
        base
    );
    let back = std::fs::read_to_string(out.join("repath.txt")).unwrap();
    assert!(
        back.starts_with("# weft dftree write 2, sweep 3 (stop): "),
        "{back}"
    );
    assert_eq!(
        back.lines().skip(1).collect::<Vec<_>>(),
        [
            format!("{h1:#018x} 1 {l4} 0"),
            format!("{h2:#018x} 1 {l4} 0")
        ]
    );
    check_repath_log(&out, h1, h2, l4);
    let _ = std::fs::remove_dir_all(&d);
}

/// ibsim's console sets PortXmitWait on the leaf port facing `h4` and on the ports of `h1`
/// and `h2`, and pulls `h3`'s cable (`guid` names a node's GUID).
fn make_hot_spot(sim: &Ibsim, guid: &dyn Fn(&str) -> u64) {
    // h4 sits on leaf2's port 2; 10 M ticks over the 2 s interval is 5 M a second, above
    // the 100 000 threshold; ibsim's XmitData stays far below half the links' rate.
    for (node, port) in [
        (format!("S-{:016x}", guid("leaf2")), 2),
        (format!("H-{:016x}", guid("h1")), 1),
        (format!("H-{:016x}", guid("h2")), 1),
    ] {
        let said = sim
            .console(&format!(
                "PerformanceSet \"{node}\"[{port}] PortCounters.PortXmitWait=10000000"
            ))
            .unwrap();
        assert!(said.contains("has been set to 10000000"), "{said}");
    }
    // h3's cable pulled: its port no longer answers; the others are read on.
    let said = sim
        .console(&format!("Unlink \"H-{:016x}\"[1]", guid("h3")))
        .unwrap();
    assert!(!said.contains('#'), "{said}");
}

/// The second sweep `s`: `h3` unread (its PortCounters time out), `h4` marked a hot-spot,
/// `h1 → h4` and `h2 → h4` moved to SL 1 and written.
fn check_second_sweep(
    s: &serde_json::Value,
    guid: &dyn Fn(&str) -> u64,
    lid: &dyn Fn(&str) -> u16,
) {
    let (h1, h2, h4) = (guid("h1"), guid("h2"), guid("h4"));
    let l4 = lid("h4");
    assert_eq!(s["ports_read"], 11, "{s}");
    let unread = s["unread"].as_array().unwrap();
    assert_eq!(unread.len(), 1, "{s}");
    // Its node's ClassPortInfo was read at the first sweep: PortCounters is what times out.
    assert_eq!(
        unread[0],
        serde_json::json!({
            "code": "weft::deploy::pma_timeout",
            "message": format!(
                "node {:#018x} port 1 (LID {}): PortCounters Get got no response after 3 tries",
                guid("h3"),
                lid("h3")
            ),
        })
    );
    assert_eq!(
        s["hotspots_marked"],
        serde_json::json!([format!("{h4:#018x}:1")])
    );
    let slow = |g: u64| serde_json::json!({"src_guid": format!("{g:#018x}"), "src_port": 1, "dst_lid": l4, "sl": 1});
    assert_eq!(s["to_slow"], serde_json::json!([slow(h1), slow(h2)]), "{s}");
    assert_eq!(
        (&s["slow_flows"], &s["wrote"]),
        (&serde_json::json!(2), &serde_json::json!(true))
    );
}

/// The `policy` written is the build's (in `b`) with `h1 → h4` and `h2 → h4` on SL 1; the
/// build's policy is returned.
fn check_policy(state: &weft_fabric::ValidState, b: &Path, policy: &str) -> String {
    let f = &state.fabric;
    let l4 = state
        .lids
        .get(f.find("h4").unwrap(), weft_fabric::PortNum(1))
        .unwrap()
        .0;
    let port_guid = |name: &str| {
        f.node(f.find(name).unwrap())
            .port(weft_fabric::PortNum(1))
            .unwrap()
            .guid
            .0
    };
    let base = std::fs::read_to_string(b.join("qos-policy.conf")).unwrap();
    let moved = [
        weft_compiler::qos::SlowFlow {
            src_port_guid: port_guid("h1"),
            dst_lid: l4,
            fast_sl: 0,
            slow_sl: 1,
        },
        weft_compiler::qos::SlowFlow {
            src_port_guid: port_guid("h2"),
            dst_lid: l4,
            fast_sl: 0,
            slow_sl: 1,
        },
    ];
    assert_eq!(
        policy,
        weft_compiler::qos::with_slow_flows(&base, state.state(), &moved).unwrap()
    );
    assert!(policy.contains(&format!(
        "port-guid: {:#018x}, {:#018x}",
        port_guid("h1"),
        port_guid("h2")
    )));
    base
}

/// `repath.log` in `out` holds every move with its time and sweep, and nothing is left beside
/// the three files (the temporary files were renamed).
fn check_repath_log(out: &Path, h1: u64, h2: u64, l4: u16) {
    // repath.log: every move, with its time and sweep.
    let log = std::fs::read_to_string(out.join("repath.log")).unwrap();
    let rows: Vec<Vec<&str>> = log.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), 4, "{log}");
    for (row, (sweep, g, sl)) in rows
        .iter()
        .zip([(2, h1, 1), (2, h2, 1), (3, h1, 0), (3, h2, 0)])
    {
        assert!(row[0].ends_with('Z') && row[0].len() == 24, "{log}");
        assert_eq!(
            row[1..],
            [
                sweep.to_string(),
                format!("{g:#018x}"),
                "1".into(),
                l4.to_string(),
                sl.to_string()
            ],
            "{log}"
        );
    }
    // Nothing left beside the three files (the temporary files were renamed).
    let mut names: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["qos-policy.conf", "repath.log", "repath.txt"]);
}

/// The controller knows the fabric from the state: a live fabric that is not the state's is
/// refused before the first sweep, each difference named (exit 1), nothing written. Here
/// OpenSM gave `h1` and `h2` each other's LIDs; a `.weft` whose GUIDs are made up
/// (`guid_base`) is not ibsim's fabric at all; and a state gives `h1`'s port another port GUID.
#[test]
fn dftree_refuses_a_fabric_that_is_not_the_states() {
    let Some(tools) = ibsim::require(
        "dftree_refuses_a_fabric_that_is_not_the_states",
        &["opensm"],
    ) else {
        return;
    };
    let d = dir("wrong");
    let qos = "qos {\n class bulk { lanes = dftree }\n }";
    let (b, state) = build(&d, &tiny(qos));
    let f = &state.fabric;
    let (n1, n2) = (f.find("h1").unwrap(), f.find("h2").unwrap());
    let p1 = weft_fabric::PortNum(1);
    let (l1, l2) = (
        state.lids.get(n1, p1).unwrap(),
        state.lids.get(n2, p1).unwrap(),
    );
    let mut swapped = state.state().clone();
    swapped.lids.base.get_mut(&n1).unwrap().insert(p1, l2);
    swapped.lids.base.get_mut(&n2).unwrap().insert(p1, l1);
    let net = weft_formats::ibnetdiscover::write(f, Some(&state.lids)).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(f))).unwrap();
    sim.load_with_opensm(&b.join("lfts.dump"), &swapped)
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    let out = d.join("out");
    let run = |input: &Path| {
        sim.run_any(
            crate::support::WEFT,
            &[
                "dftree",
                input.to_str().unwrap(),
                "--target",
                "mad",
                "--interval",
                "200ms",
                "--sweeps",
                "1",
                "--out",
                out.to_str().unwrap(),
            ],
            &[],
            Duration::from_secs(120),
        )
    };
    let o = run(&b);
    let said = format!("{}{}", o.stdout, o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    let g = |n: weft_fabric::NodeId| f.node(n).guid();
    for (n, found, expected) in [(n1, l2, l1), (n2, l1, l2)] {
        assert!(
            said.contains(&format!(
                "the fabric is not the one `{}` is for (no sweep was taken, nothing written): {} port 1 has LID {}, not {}",
                b.display(),
                g(n),
                found.0,
                expected.0
            )),
            "{said}"
        );
    }
    assert!(said.contains("weft::deploy::wrong_fabric"), "{said}");
    assert_eq!(said.matches("has LID").count(), 2, "{said}");
    assert!(!out.join("qos-policy.conf").exists() && !out.join("repath.txt").exists());

    // A `.weft` with made-up GUIDs: every node of either side is named.
    let other = d.join("other.weft");
    std::fs::write(&other, tiny(&format!("guid_base = 0x7000000000\n{qos}"))).unwrap();
    let o = run(&other);
    let said = format!("{}{}", o.stdout, o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert_eq!(said.matches("is not on the fabric").count(), 7, "{said}");
    assert_eq!(
        said.matches("is on the fabric but not in the plan").count(),
        7,
        "{said}"
    );
    assert!(
        said.contains(&format!("node {:#018x} is on the fabric", g(n1).0)),
        "{said}"
    );
    assert!(!out.join("qos-policy.conf").exists());

    // A state whose h1 port has another port GUID than the fabric's (its node GUID and links
    // the fabric's): the state.json edited, its fingerprint removed to accept the edit.
    let pg = f.node(n1).port(p1).unwrap().guid.0;
    let other_pg = pg + 0x80;
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("state.json")).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("fingerprint");
    let h1 = json["fabric"]["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["name"] == "h1")
        .unwrap();
    h1["port_guids"] = serde_json::json!([format!("{other_pg:#018x}")]);
    let edited = d.join("edited");
    std::fs::create_dir_all(&edited).unwrap();
    std::fs::write(edited.join("state.json"), json.to_string()).unwrap();
    std::fs::copy(b.join("qos-policy.conf"), edited.join("qos-policy.conf")).unwrap();
    let o = run(&edited.join("state.json"));
    let said = format!("{}{}", o.stdout, o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "node {:#018x} port 1 has port GUID {pg:#018x}, not {other_pg:#018x}",
            g(n1).0
        )),
        "{said}"
    );
    // The port GUID and the two swapped LIDs (OpenSM's, still): nothing else.
    assert_eq!(said.matches("has LID").count(), 2, "{said}");
    assert_eq!(
        said.matches("[weft::deploy::wrong_fabric]").count(),
        3,
        "{said}"
    );
    assert!(!out.join("qos-policy.conf").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// Counters never reset saturate: `h1`'s and `h2`'s PortXmitWait set to `0xFFFFFFFF` after
/// the first sweep (and the leaf port facing `h4` congested) would make them contributors of
/// `h4`; a saturated port is not judged, so `h4` is marked and nothing moves. The JSON names
/// the saturated ports at every sweep; people are told once per port.
#[test]
fn dftree_does_not_judge_saturated_ports() {
    let Some(tools) = ibsim::require("dftree_does_not_judge_saturated_ports", &["opensm"]) else {
        return;
    };
    let d = dir("saturated");
    let (b, state) = build(&d, &tiny("qos {\n class bulk { lanes = dftree }\n }"));
    let f = &state.fabric;
    let guid = |name: &str| f.node(f.find(name).unwrap()).guid().0;
    let sim = Ibsim::start_built(&tools, &b, &state, true).unwrap_or_else(|e| panic!("{e}"));
    let out = d.join("out");
    let args = |interval: &'static str, sweeps: &'static str, format: &'static str| {
        vec![
            "dftree".to_owned(),
            b.to_str().unwrap().to_owned(),
            "--target".into(),
            "mad".into(),
            "--interval".into(),
            interval.into(),
            "--sweeps".into(),
            sweeps.into(),
            "--out".into(),
            out.to_str().unwrap().to_owned(),
            "--format".into(),
            format.into(),
        ]
    };
    let json = args("2s", "2", "json");
    let json: Vec<&str> = json.iter().map(String::as_str).collect();
    let bg = sim.spawn_env(crate::support::WEFT, &json, &[]).unwrap();
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&bg.out)
        .unwrap_or_default()
        .contains("\"pma_gets\"")
    {
        assert!(start.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
    }
    for (node, port, value) in [
        (format!("S-{:016x}", guid("leaf2")), 2, 10_000_000u64),
        (format!("H-{:016x}", guid("h1")), 1, u64::from(u32::MAX)),
        (format!("H-{:016x}", guid("h2")), 1, u64::from(u32::MAX)),
    ] {
        let said = sim
            .console(&format!(
                "PerformanceSet \"{node}\"[{port}] PortCounters.PortXmitWait={value}"
            ))
            .unwrap();
        assert!(said.contains(&format!("has been set to {value}")), "{said}");
    }
    let o = bg.wait(Duration::from_secs(60)).unwrap();
    assert!(o.status.success(), "{}", o.stdout);
    let sweeps: Vec<serde_json::Value> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sweeps.len(), 2, "{}", o.stdout);
    let s = &sweeps[1];
    assert_eq!(
        s["hotspots_marked"],
        serde_json::json!([format!("{:#018x}:1", guid("h4"))]),
        "{s}"
    );
    assert_eq!(s["to_slow"], serde_json::json!([]), "{s}");
    assert_eq!(
        s["saturated"],
        serde_json::json!([
            format!("{:#018x}:1", guid("h1")),
            format!("{:#018x}:1", guid("h2"))
        ]),
        "{s}"
    );
    assert_eq!(s["ports_read"], 12);

    // For people: each saturated port named once over three sweeps.
    let human = args("200ms", "3", "human");
    let human: Vec<&str> = human.iter().map(String::as_str).collect();
    let o = sim.run_any(crate::support::WEFT, &human, &[], Duration::from_secs(120));
    let said = format!("{}{}", o.stdout, o.stderr);
    assert!(o.status.success(), "{said}");
    for h in ["h1", "h2"] {
        assert_eq!(
            said.matches(&format!(
                "{:#018x} port 1 (LID {}): PortXmitWait is saturated at 0xFFFFFFFF",
                guid(h),
                state
                    .lids
                    .get(f.find(h).unwrap(), weft_fabric::PortNum(1))
                    .unwrap()
                    .0
            ))
            .count(),
            1,
            "{said}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}
