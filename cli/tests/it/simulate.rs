//! `weft simulate` end to end: its inputs (a `.weft` file, a build directory, a
//! `state.json`), `--compare`, the JSON, and the errors of bad options.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::PathBuf;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const LAB: &str = "examples/lab-16.weft";

/// Runs `weft simulate` and expects it to refuse its input (exit 1, a finding under a
/// `weft::traffic::` code) with `needle` on stderr, and no panic.
fn refused(args: &[&str], needle: &str) {
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    let out = weft(&all);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    assert!(
        err.contains("weft::traffic::"),
        "{args:?}: no code in {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

/// Runs `weft simulate` and expects it not to run (exit 2: a file it cannot read, options that
/// do not go together, a value the option parser refuses) with `needle` on stderr.
fn cannot_run(args: &[&str], needle: &str) {
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    let out = weft(&all);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

#[test]
fn bad_options_are_clear_errors() {
    refused(&[LAB, "--traffic", "zipf"], "known patterns: uniform");
    refused(
        &[LAB, "--traffic", "hotspot:x"],
        "hot-spot count must be a whole number",
    );
    refused(
        &[LAB, "--traffic", "hotspot:17"],
        "17 hot-spots asked for, but the fabric has 16 hosts",
    );
    refused(
        &[LAB, "--traffic", "shift:16"],
        "sends every host to itself",
    );
    refused(
        &[LAB, "--traffic", "uniform", "--duration", "10 parsecs"],
        "duration `10 parsecs`",
    );
    refused(
        &[LAB, "--traffic", "uniform", "--duration", "5"],
        "duration `5`",
    );
    refused(
        &[LAB, "--traffic", "uniform", "--load", "2"],
        "offered load",
    );
    // A file that is not a pattern is a per-job traffic file, and must read as one.
    refused(
        &[LAB, "--traffic", "README.md"],
        "a line starts with `job NAME`, not",
    );
    cannot_run(
        &[LAB, "--traffic", "file:no/such/jobs.txt"],
        "cannot read `no/such/jobs.txt`",
    );
    // dFtree's switches on a state without dFtree lanes, or on a loop turned off.
    cannot_run(
        &[LAB, "--traffic", "uniform", "--no-dftree-loop"],
        "--no-dftree-loop: the state has no dFtree lanes",
    );
    cannot_run(
        &[
            LAB,
            "--traffic",
            "uniform",
            "--dftree-sweep",
            "5us",
            "--no-dftree-loop",
        ],
        "--dftree-sweep sets dFtree's run-time loop, which --no-dftree-loop turns off",
    );
    cannot_run(
        &[
            LAB,
            "--traffic",
            "uniform",
            "--dftree-oracle",
            "--no-dftree-loop",
        ],
        "cannot be used with",
    );
    refused(
        &[LAB, "--traffic", "hotspot:1@50us-10us"],
        "UNTIL in `@FROM-UNTIL` must be after FROM",
    );
    refused(
        &[LAB, "--traffic", "uniform", "--receive-rate", "1.5"],
        "receive rate must be above 0 and at most 1",
    );
    cannot_run(&["no/such.json", "--traffic", "uniform"], "cannot read");
    refused(
        &[LAB, "--traffic", "uniform", "--host-model", "lazy"],
        "host model `lazy`: give refuse, block, fifo or unbounded",
    );
    refused(
        &[LAB, "--traffic", "uniform", "--switch-buffers", "crossbar"],
        "switch buffers `crossbar`: give fifo or voq",
    );
    cannot_run(
        &[LAB, "--traffic", "uniform", "--parallel-sends", "0"],
        "--parallel-sends must be at least 1 packet",
    );
    refused(
        &[LAB, "--traffic", "uniform", "--preset", "thesis"],
        "preset `thesis`: give papers",
    );
    refused(
        &[
            LAB,
            "--traffic",
            "multicast:0xc000",
            "--switch-buffers",
            "voq",
        ],
        "not built yet",
    );
    cannot_run(
        &[LAB, "--traffic", "uniform", "--source-queue", "0"],
        "--source-queue must be at least 1 packet",
    );
    // A refused input is a finding in the output format asked for, under its registered code.
    let out = weft(&["simulate", LAB, "--traffic", "zipf", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["findings"][0]["code"], "weft::traffic::spec", "{v}");
}

#[test]
fn the_host_model_is_chosen_and_recorded() {
    // Hot-spot traffic on vFtree's 2 lanes: hosts that send in order (`fifo`) refuse nothing
    // and get less than hosts that refuse what their congested VL cannot take; the JSON says
    // which ran.
    let dir = crate::support::scratch("simulate-host");
    let file = dir.join("vftree.weft");
    std::fs::write(
        &file,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    vls { budget = 2 }\n    qos { class compute { lanes = vftree(maxvl: 2) } }\n    routing { engine = fat_tree }\n}\n",
    )
    .unwrap();
    let run = |model: &str| {
        let out = weft(&[
            "simulate",
            file.to_str().unwrap(),
            "--traffic",
            "hotspot:1:50",
            "--duration",
            "100us",
            "--host-model",
            model,
            "--source-queue",
            "2",
            "--format",
            "json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (refuse, fifo) = (run("refuse"), run("fifo"));
    assert_eq!(refuse["params"]["host"], "refuse");
    assert_eq!(fifo["params"]["host"], "fifo");
    assert_eq!(fifo["params"]["source_queue"], 2);
    assert_eq!(fifo["packets"]["refused_at_source"], 0);
    assert!(refuse["packets"]["refused_at_source"].as_u64().unwrap() > 0);
    let mean = |v: &serde_json::Value| v["throughput_per_node_gbps"]["mean"].as_f64().unwrap();
    assert!(
        mean(&refuse) > mean(&fifo),
        "{} {}",
        mean(&refuse),
        mean(&fifo)
    );
}

#[test]
fn json_from_a_weft_file_a_build_dir_and_a_state_agree() {
    let dir = crate::support::scratch("simulate");
    let built = weft(&["build", LAB, "-o", dir.to_str().unwrap()]);
    assert!(built.status.success(), "{}", text(&built.stderr));
    let run = |input: &str, seed: &str| {
        let out = weft(&[
            "simulate",
            input,
            "--traffic",
            "hotspot:2",
            "--duration",
            "20us",
            "--seed",
            seed,
            "--format",
            "json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let from_file = run(LAB, "3");
    let state = dir.join("state.json");
    assert_eq!(from_file, run(dir.to_str().unwrap(), "3"));
    assert_eq!(from_file, run(state.to_str().unwrap(), "3"));
    assert_ne!(from_file, run(LAB, "4"));
    let v: serde_json::Value = serde_json::from_str(&from_file).unwrap();
    assert_eq!(v["format"], "weft-simulate");
    assert_eq!(v["hosts"], 16);
    assert!(v["throughput_per_node_gbps"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(v["classes"]["hotspots"].as_array().unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_prints_the_gain() {
    let out = weft(&[
        "simulate",
        LAB,
        "--traffic",
        "uniform",
        "--duration",
        "20us",
        "--compare",
        LAB,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("gain      +0.0 % throughput per node"), "{t}");
    assert!(t.contains("packets simulated in"), "{t}");
    let out = weft(&[
        "simulate",
        LAB,
        "--traffic",
        "uniform",
        "--duration",
        "20us",
        "--compare",
        LAB,
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(v["gain_percent"], 0.0);
    assert_eq!(v["baseline"]["hosts"], 16);
}

/// A two-level tree of 6-port switches (18 hosts) on dFtree's fast and slow lane.
/// The scratch directory (kept for as long as the file is needed) and the fabric in it.
fn dftree_fabric() -> (crate::support::Scratch, PathBuf) {
    let dir = crate::support::scratch("simulate-dftree");
    let file = dir.join("dftree.weft");
    std::fs::write(
        &file,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\n\
         fabric small {\n    topology = fat_tree(levels: 2, radix: 6, switch: sb7800, hca: connectx5)\n\
         vls { budget = 2 }\n    qos { class bulk { lanes = dftree } }\n}\n",
    )
    .unwrap();
    (dir, file)
}

#[test]
fn dftree_loop_moves_the_hotspots_contributors_and_back() {
    let (_dir, file) = dftree_fabric();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            file.to_str().unwrap(),
            "--traffic",
            "hotspot:1:40%@10us-50us",
            "--duration",
            "200us",
            "--load",
            "0.4",
            "--receive-rate",
            "0.9",
            "--seed",
            "1",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let out = weft(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let json = run(&[]);
    assert_eq!(json, run(&[]), "same seed, same JSON");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let d = &v["dftree"];
    assert_eq!(d["mode"], "loop");
    assert_eq!(d["hotspots"][0]["port"], "cn001:1");
    insta::assert_snapshot!("dftree_loop_json", serde_json::to_string_pretty(d).unwrap());
    // The loop off: nothing moves.
    let v: serde_json::Value = serde_json::from_str(&run(&["--no-dftree-loop"])).unwrap();
    assert_eq!(v["dftree"]["mode"], "off");
    assert_eq!(v["dftree"]["moves"].as_array().unwrap().len(), 0);
    // The human output says what the loop did.
    let out = weft(&[
        "simulate",
        file.to_str().unwrap(),
        "--traffic",
        "hotspot:1:40%@10us-50us",
        "--duration",
        "200us",
        "--load",
        "0.4",
        "--receive-rate",
        "0.9",
        "--seed",
        "1",
    ]);
    let t = text(&out.stdout);
    assert!(
        t.contains("dftree      run-time loop, a sweep every 10000 ns"),
        "{t}"
    );
    assert!(t.contains("hot-spot  cn001:1 marked at"), "{t}");
    assert!(!t.contains("not built yet"), "{t}");
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn a_job_file_runs_its_jobs_and_reports_each_and_the_congestion_trees() {
    let dir = crate::support::scratch("simulate-jobs");
    let jobs = dir.join("jobs.txt");
    std::fs::write(
        &jobs,
        "# job a shares nothing with job b's hot-spot\n\
         job a  hosts lab[01-08]  pattern all-to-all  load 0.8\n\
         job b  hosts lab[09-16]  pattern hotspot:1:50%  from 5us until 30us\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            LAB,
            "--traffic",
            jobs.to_str().unwrap(),
            "--duration",
            "40us",
        ];
        args.extend_from_slice(extra);
        let out = weft(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let json = run(&["--format", "json"]);
    assert_eq!(json, run(&["--format", "json"]), "same seed, same JSON");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["jobs"][0]["name"], "a");
    assert_eq!(v["jobs"][0]["hosts"], 8);
    assert_eq!(v["jobs"][1]["pattern"], "hotspot:1:50%");
    assert!(
        v["jobs"][0]["throughput_per_node_gbps"]["min"]
            .as_f64()
            .unwrap()
            > 75.0
    );
    assert!(v["jobs"][1]["latency_ns"]["p99"].as_f64().unwrap() > 0.0);
    // Job b's hot-spot, lab09, roots the one tree; job a's links are in none.
    let trees = v["congestion_trees"].as_array().unwrap();
    assert_eq!(trees.len(), 1, "{trees:#?}");
    assert_eq!(trees[0]["end_node"], "lab09");
    let t = run(&[]);
    assert!(
        t.contains("  job a       8 hosts, all-to-all, load 0.8: "),
        "{t}"
    );
    assert!(
        t.contains("  job b       8 hosts, hotspot:1:50%, load 1, 5000-30000 ns: "),
        "{t}"
    );
    assert!(
        t.contains("  congestion trees  1 found\n    root leaf3:1 -> lab09:1 ("),
        "{t}"
    );
    // The same file as `file:PATH`.
    let out = weft(&[
        "simulate",
        LAB,
        "--traffic",
        &format!("file:{}", jobs.display()),
        "--duration",
        "40us",
        "--format",
        "json",
    ]);
    assert_eq!(text(&out.stdout), json);
    // Errors name the file, line and column, and the host a job names that is not there.
    std::fs::write(
        &jobs,
        "job a hosts lab[01-08] pattern uniform\njob b hosts lab08,lab09 pattern uniform\n",
    )
    .unwrap();
    let out = weft(&["simulate", LAB, "--traffic", jobs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out.stderr).replace(&dir.display().to_string(), "DIR");
    std::fs::write(&jobs, "job a hosts lab01,lab1 pattern uniform\n").unwrap();
    let out = weft(&["simulate", LAB, "--traffic", jobs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let shown = shown + &text(&out.stderr).replace(&dir.display().to_string(), "DIR");
    insta::assert_snapshot!("job_file_errors", shown);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn multicast_traffic_reports_each_receivers_delivery_and_a_missing_group_is_refused() {
    let dir = crate::support::scratch("simulate-mc");
    let file = dir.join("mc.weft");
    std::fs::write(
        &file,
        "use std::hardware::{sb7800, connectx5}\n\
         fabric mc {\n    topology {\n        switch s : sb7800\n        switch l[1..=2] : sb7800\n\
         hca cn[1..=4] : connectx5\n        for n in 1..=2 { link cn[n].p[1] <-> l[1].p[n] }\n\
         for n in 3..=4 { link cn[n].p[1] <-> l[2].p[n] }\n        link l[1].p[10] <-> s.p[1]\n\
         link l[2].p[10] <-> s.p[2]\n    }\n    multicast {\n\
         group g { mlid = 0xc001, members = [cn2, cn3, cn4], send_only = [cn1] }\n    }\n}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = weft(&[
        "simulate",
        f,
        "--traffic",
        "multicast:0xc001",
        "--duration",
        "20us",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["multicast"];
    assert_eq!(m["mlid"], "0xc001");
    assert_eq!(
        (m["senders"].as_u64(), m["receivers"].as_u64()),
        (Some(1), Some(3))
    );
    assert!(
        m["delivered_gbps_per_receiver"]["min"].as_f64().unwrap() > 90.0,
        "{m}"
    );
    assert_eq!(m["dropped_no_mft_entry"], 0);
    assert_eq!(v["traffic"], "multicast:0xc001:100%");
    let human = weft(&[
        "simulate",
        f,
        "--traffic",
        "multicast:0xc001",
        "--duration",
        "20us",
    ]);
    assert!(human.status.success());
    assert!(
        text(&human.stdout).contains("multicast   group 0xc001 (SL 0): 1 sender(s), 3 receiver(s)"),
        "{}",
        text(&human.stdout)
    );
    refused(
        &[f, "--traffic", "multicast:0xc002"],
        "traffic `multicast:0xc002:100%`: the state has no multicast group with MLID 0xc002",
    );
    refused(
        &[LAB, "--traffic", "multicast:0xc000"],
        "no multicast group with MLID 0xc000",
    );
    refused(
        &[LAB, "--traffic", "multicast:0x10"],
        "MLID must be a multicast LID from 0xc000 to 0xfffe",
    );
}

/// `weft simulate … --format json`, parsed.
fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = weft(&all);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn no_figure_above_what_a_link_carries_and_a_zero_warm_up() {
    // 16 hosts on 4x EDR (98.7 Gb/s of payload), a 1000 ns window: a packet straddling its
    // edges counts only its bytes inside (whole packets gave 100.352 Gb/s, max 114.688).
    let v = json(&[
        LAB,
        "--traffic",
        "shift:1",
        "--duration",
        "2077ns",
        "--warmup",
        "1077ns",
    ]);
    let max = v["throughput_per_node_gbps"]["max"].as_f64().unwrap();
    assert!(max <= 100.0 * 2048.0 / 2074.0, "{max}");
    assert_eq!(v["window_ns"], 1000);
    // Measured from the start.
    let v = json(&[
        LAB,
        "--traffic",
        "shift:1",
        "--duration",
        "20us",
        "--warmup",
        "0",
    ]);
    assert_eq!(v["window_ns"], 20_000);
    assert_eq!(v["params"]["warmup_ns"], 0);
    // Receivers that drain nothing deliver nothing.
    let v = json(&[LAB, "--traffic", "uniform", "--receive-rate", "1e-20"]);
    assert_eq!(v["packets"]["delivered"], 0);
}

#[test]
fn the_papers_preset_sets_its_parameters_and_options_beside_it_win() {
    let v = json(&[LAB, "--traffic", "hotspot:1", "--preset", "papers"]);
    let p = &v["params"];
    assert_eq!(p["duration_ns"], 90_000);
    assert_eq!(p["warmup_ns"], 0);
    assert_eq!(p["host"], "unbounded");
    assert_eq!(p["switch_buffers"], "fifo");
    assert!(p["parallel_sends"].is_null());
    assert_eq!(p["dftree_threshold_ticks_per_s"], 3_200_000.0);
    assert_eq!(v["packets"]["refused_at_source"], 0);
    let v = json(&[
        LAB,
        "--traffic",
        "hotspot:1",
        "--preset",
        "papers",
        "--duration",
        "20us",
        "--switch-buffers",
        "voq",
        "--parallel-sends",
        "1",
        "--buffer-bytes",
        "4224",
    ]);
    let p = &v["params"];
    assert_eq!(p["duration_ns"], 20_000);
    assert_eq!(p["warmup_ns"], 0, "the preset's warm-up stays");
    assert_eq!(p["switch_buffers"], "voq");
    assert_eq!(p["parallel_sends"], 1);
    assert_eq!(p["buffer_bytes"], 4224);
    assert_eq!(p["host"], "unbounded");
    // Without a preset, the defaults.
    let v = json(&[LAB, "--traffic", "uniform", "--duration", "20us"]);
    assert_eq!(v["params"]["host"], "refuse");
    assert_eq!(v["params"]["warmup_ns"], serde_json::Value::Null);
    assert_eq!(v["window_ns"], 16_000);
}
