//! The figures of issue 45 in one command, and the regression gate CI runs on the small sizes.
//!
//! ```text
//! cargo build --release -p weft -p weft-bench --bin weft --bin vs_opensm --bin speed
//! target/release/speed [--sizes full|small] [--runs N] [--slow-runs N] [--no-opensm] [--json FILE]
//! target/release/speed --sizes small --count --baseline bench/baseline/small.json [--write]
//! ```
//!
//! **Timing** (the default): every row runs the release `weft` beside this binary as a child
//! under GNU `time` (`/usr/bin/time`): the median wall time of `--runs` runs (default 3; rows
//! that take tens of seconds run `--slow-runs` times, default 1) and the highest peak RSS.
//! The rows, on `--sizes full` (the issue's table) or `--sizes small` (the same work on the
//! 648-node tree, with the 5 832-node tree as the large check):
//!
//! * **LIDs + routing** against OpenSM's `ftree`: the sibling `vs_opensm` binary (its method:
//!   `bench/src/bin/vs_opensm.rs`; in-process `build::build` medians of `--runs` runs, OpenSM
//!   on ibsim in the same run, skipped with `--no-opensm` or when ibsim/OpenSM are missing);
//! * `weft check` of the tree and of the large fabric (45 056 nodes on `full`);
//! * `weft build TREE -o DIR` (every file, the proof);
//! * `weft plan --from OLD/state.json FAULT.weft`: one failed cable (`leaf3.p[20]` on the
//!   11 664-node tree, `leaf5.p[25]` on the 648-node one), `OLD` built beforehand;
//! * `weft plan` of the engine change `fat_tree` → `updn` rooted at `spine1`, and rooted at
//!   `core1` from the tree built without `switch_to_switch` (on the 648-node tree, which has no
//!   `core1`: `spine2`).
//!
//! **Counting** (`--count`, what CI runs): instructions of the same `weft` commands (not the
//! routing row, which `weft check` covers) under valgrind's cachegrind
//! (`--cache-sim=no`; `perf stat -e instructions:u` is not available on machines without a
//! PMU), on one rayon thread (`RAYON_NUM_THREADS=1`) so that the count does not depend on
//! work stealing. With `--baseline FILE` the counts are compared with that file's and the run
//! fails (exit 1) when one exceeds its baseline by more than 20 % (`--tolerance PCT`). To
//! refresh the baseline after a change that is meant to cost more (or that made things
//! faster, to keep the gate tight): `target/release/speed --sizes small --count --baseline
//! bench/baseline/small.json --write`, and commit the file with the reason.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use weft_bench::{median, timed, with_faults, with_updn};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sizes {
    Full,
    Small,
}

#[derive(Debug)]
struct Opts {
    sizes: Sizes,
    runs: usize,
    slow_runs: usize,
    opensm: bool,
    count: bool,
    baseline: Option<PathBuf>,
    write: bool,
    tolerance: f64,
    json: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: speed [--sizes full|small] [--runs N] [--slow-runs N] [--no-opensm] [--json FILE]\n       \
         speed --count [--sizes small] [--baseline FILE [--write] [--tolerance PCT]]"
    );
    std::process::exit(2)
}

fn parse_args() -> Opts {
    let mut o = Opts {
        sizes: Sizes::Full,
        runs: 3,
        slow_runs: 1,
        opensm: true,
        count: false,
        baseline: None,
        write: false,
        tolerance: 20.0,
        json: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        let number = |v: String| v.parse::<usize>().unwrap_or_else(|_| usage()).max(1);
        match a.as_str() {
            "--sizes" => {
                o.sizes = match value().as_str() {
                    "full" => Sizes::Full,
                    "small" => Sizes::Small,
                    _ => usage(),
                }
            }
            "--runs" => o.runs = number(value()),
            "--slow-runs" => o.slow_runs = number(value()),
            "--no-opensm" => o.opensm = false,
            "--count" => o.count = true,
            "--baseline" => o.baseline = Some(PathBuf::from(value())),
            "--write" => o.write = true,
            "--tolerance" => o.tolerance = value().parse().unwrap_or_else(|_| usage()),
            "--json" => o.json = Some(PathBuf::from(value())),
            _ => usage(),
        }
    }
    o
}

/// The fabrics and names of one size.
struct Size {
    tree: &'static str,
    large: &'static str,
    link: &'static str,
    second_root: &'static str,
}

impl Size {
    fn of(s: Sizes) -> Size {
        match s {
            Sizes::Full => Size {
                tree: "cluster-11664",
                large: "cluster-45056",
                link: "leaf3.p[20]",
                second_root: "core1",
            },
            Sizes::Small => Size {
                tree: "cluster-648",
                large: "cluster-5832",
                link: "leaf5.p[25]",
                second_root: "spine2",
            },
        }
    }
}

/// One measured `weft` command.
struct Case {
    /// Stable key (the baseline's).
    key: String,
    /// The table's row.
    work: String,
    args: Vec<String>,
    /// Runs at `--slow-runs` rather than `--runs`.
    slow: bool,
    /// The issue's goal, on the full sizes.
    goal: &'static str,
}

/// Writes the inputs into `work` (building the plans' starting states) and returns the cases.
fn prepare(weft: &Path, work: &Path, size: &Size, full: bool) -> Result<Vec<Case>, String> {
    let root = weft_bench::root();
    let root = root.canonicalize().unwrap_or(root);
    let ex = |n: &str| root.join("examples").join(format!("{n}.weft"));
    let src = weft_bench::example(&format!("{}.weft", size.tree));
    let write = |name: &str, text: &str| -> Result<String, String> {
        let p = work.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p.display().to_string())
    };
    let s = |p: &Path| p.display().to_string();
    let old = write("old.weft", &src)?;
    let fault = write(
        "fault.weft",
        &with_faults(&src, &format!("        link {} down\n", size.link)),
    )?;
    let updn1 = write("updn-spine1.weft", &with_updn(&src, "spine1"))?;
    let no_s2s = src.replace("        switch_to_switch = sftree\n", "");
    let old2 = write("old-no-s2s.weft", &no_s2s)?;
    let updn2 = write("updn-root2.weft", &with_updn(&no_s2s, size.second_root))?;
    for (file, dir) in [(&old, "old"), (&old2, "old-no-s2s")] {
        let out = work.join(dir);
        let o = Command::new(weft)
            .args(["--quiet", "build", file, "-o"])
            .arg(&out)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("weft build: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "weft build {file}: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    let state = |d: &str| s(&work.join(d).join("state.json"));
    let case = |key: &str, work: String, args: Vec<String>, slow: bool, goal| Case {
        key: key.to_owned(),
        work,
        args,
        slow,
        goal: if full { goal } else { "" },
    };
    let (t, l) = (size.tree, size.large);
    Ok(vec![
        case(
            "check",
            format!("`weft check` {t}"),
            vec!["check".into(), s(&ex(t))],
            false,
            "< 0.3 s",
        ),
        case(
            "check_large",
            format!("`weft check` {l}"),
            vec!["check".into(), s(&ex(l))],
            false,
            "< 2 s, < 500 MB",
        ),
        case(
            "build",
            format!("`weft build` {t}"),
            vec![
                "build".into(),
                s(&ex(t)),
                "-o".into(),
                s(&work.join("built")),
            ],
            false,
            "< 1 s",
        ),
        case(
            "plan_cable",
            format!("`weft plan` one failed cable ({}), {t}", size.link),
            vec!["plan".into(), "--from".into(), state("old"), fault],
            false,
            "< 1 s",
        ),
        case(
            "plan_updn_spine1",
            format!("`weft plan` fat_tree → updn (roots = [spine1]), {t}"),
            vec!["plan".into(), "--from".into(), state("old"), updn1],
            full,
            "< 10 s, < 1 GB",
        ),
        case(
            "plan_updn_root2",
            format!(
                "`weft plan` fat_tree → updn (roots = [{}]), no switch_to_switch, {t}",
                size.second_root
            ),
            vec!["plan".into(), "--from".into(), state("old-no-s2s"), updn2],
            full,
            "< 10 s",
        ),
    ])
}

/// A measured row.
#[derive(serde::Serialize)]
struct Row {
    key: String,
    work: String,
    command: String,
    median_s: Option<f64>,
    min_s: Option<f64>,
    max_s: Option<f64>,
    rss_mib: Option<f64>,
    instructions: Option<u64>,
    exit: Option<i32>,
    goal: String,
    note: String,
}

fn command_text(args: &[String], work: &Path) -> String {
    let root = weft_bench::root();
    let root = root.canonicalize().unwrap_or(root);
    format!("weft {}", args.join(" "))
        .replace(&format!("{}/", work.display()), "")
        .replace(&format!("{}/", root.display()), "")
}

/// Median wall time and peak RSS of `runs` runs.
fn time_case(weft: &Path, work: &Path, c: &Case, runs: usize) -> Row {
    let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
    let mut secs = Vec::new();
    let mut rss: f64 = 0.0;
    let mut exit = Some(0);
    for _ in 0..runs {
        let t = timed(weft, &args, work);
        secs.push(t.secs);
        rss = rss.max(t.rss_mib);
        if t.code != Some(0) {
            exit = t.code;
        }
    }
    let min = secs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = secs.iter().copied().fold(0.0, f64::max);
    Row {
        key: c.key.clone(),
        work: c.work.clone(),
        command: command_text(&c.args, work),
        median_s: Some(median(secs)),
        min_s: Some(min),
        max_s: Some(max),
        rss_mib: Some(rss),
        instructions: None,
        exit,
        goal: c.goal.to_owned(),
        note: format!("{runs} run(s)"),
    }
}

/// Instructions of one run under cachegrind, on one rayon thread.
fn count_case(weft: &Path, work: &Path, c: &Case) -> Result<Row, String> {
    let o = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
        ])
        .arg(weft)
        .args(&c.args)
        .env("RAYON_NUM_THREADS", "1")
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run valgrind (install it): {e}"))?;
    let err = String::from_utf8_lossy(&o.stderr);
    let refs = instructions(&err).ok_or_else(|| {
        format!(
            "{}: no instruction count in valgrind's output:\n{err}",
            c.key
        )
    })?;
    Ok(Row {
        key: c.key.clone(),
        work: c.work.clone(),
        command: command_text(&c.args, work),
        median_s: None,
        min_s: None,
        max_s: None,
        rss_mib: None,
        instructions: Some(refs),
        exit: o.status.code(),
        goal: String::new(),
        note: "cachegrind, 1 thread".to_owned(),
    })
}

/// The `I refs` figure of cachegrind's summary (`==PID== I   refs:      1,234,567`).
fn instructions(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let rest = l.split_once("I")?.1.trim_start().strip_prefix("refs:")?;
        rest.trim().replace(',', "").parse().ok()
    })
}

/// The routing row: `vs_opensm --engines ftree` on the tree, read back from its JSON.
fn routing_row(o: &Opts, work: &Path, size: &Size) -> Result<Row, String> {
    let vs = weft_bench::weft_binary()
        .and_then(|w| w.parent().map(|d| d.join("vs_opensm")))
        .filter(|p| p.exists())
        .ok_or(
            "no vs_opensm beside this binary: cargo build --release -p weft-bench --bin vs_opensm",
        )?;
    let json = work.join("vs.json");
    let root = weft_bench::root();
    let file = root
        .canonicalize()
        .unwrap_or(root)
        .join("examples")
        .join(format!("{}.weft", size.tree));
    let mut cmd = Command::new(&vs);
    cmd.args([
        "--engines",
        "ftree",
        "--runs",
        &o.runs.to_string(),
        "--json",
    ])
    .arg(&json)
    .arg(&file)
    .stdout(Stdio::null());
    if !o.opensm {
        cmd.arg("--weft-only");
    }
    let st = cmd.status().map_err(|e| format!("vs_opensm: {e}"))?;
    if !st.success() {
        return Err("vs_opensm failed".to_owned());
    }
    let text = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let get = |p: &str| v.pointer(p).and_then(serde_json::Value::as_f64);
    let weft = get("/0/weft/build/median_ms");
    let one = get("/0/weft/build_one_thread/median_ms");
    let osm = get("/0/opensm/0/routing/median_ms");
    let mut note = format!(
        "{} runs; 1 thread {}",
        o.runs,
        one.map_or("-".to_owned(), |x| format!("{x:.1} ms"))
    );
    match (osm, weft) {
        (Some(osm), Some(w)) => {
            let _ = write!(
                note,
                "; OpenSM ftree {osm:.1} ms (same run): {:.0}× (1 thread {:.0}×)",
                osm / w,
                one.map_or(f64::NAN, |x| osm / x)
            );
        }
        _ => note.push_str("; OpenSM not measured"),
    }
    Ok(Row {
        key: "routing".to_owned(),
        work: format!("LIDs + routing, {} (in process)", size.tree),
        command: format!(
            "vs_opensm --engines ftree --runs {} {}.weft",
            o.runs, size.tree
        ),
        median_s: weft.map(|x| x / 1e3),
        min_s: get("/0/weft/build/min_ms").map(|x| x / 1e3),
        max_s: get("/0/weft/build/max_ms").map(|x| x / 1e3),
        rss_mib: None,
        instructions: None,
        exit: Some(0),
        goal: if o.sizes == Sizes::Full {
            "≥ 100× OpenSM".to_owned()
        } else {
            String::new()
        },
        note,
    })
}

fn table(rows: &[Row], count: bool) -> String {
    let mut t = String::new();
    if count {
        t.push_str("| work | instructions | command |\n|---|---:|---|\n");
    } else {
        t.push_str(
            "| work | median | min–max | peak RSS | goal | notes |\n|---|---:|---|---:|---|---|\n",
        );
    }
    for r in rows {
        let exit = match r.exit {
            Some(0) => String::new(),
            c => format!(" (exit {c:?})"),
        };
        if count {
            let n = r.instructions.map_or("-".to_owned(), |n| format!("{n}"));
            let _ = writeln!(t, "| {} | {n}{exit} | `{}` |", r.work, r.command);
            continue;
        }
        let secs = |x: Option<f64>| match x {
            Some(s) if s < 1.0 => format!("{:.1} ms", s * 1e3),
            Some(s) => format!("{s:.2} s"),
            None => "-".to_owned(),
        };
        let _ = writeln!(
            t,
            "| {} | {}{exit} | {}–{} | {} | {} | {}; `{}` |",
            r.work,
            secs(r.median_s),
            secs(r.min_s),
            secs(r.max_s),
            r.rss_mib.map_or("-".to_owned(), |m| format!("{m:.0} MiB")),
            r.goal,
            r.note,
            r.command
        );
    }
    t
}

/// Compares the counts with the baseline (or writes it); the regressions found.
fn gate(o: &Opts, rows: &[Row]) -> Result<Vec<String>, String> {
    let Some(path) = &o.baseline else {
        return Ok(Vec::new());
    };
    let counts: BTreeMap<String, u64> = rows
        .iter()
        .filter_map(|r| Some((r.key.clone(), r.instructions?)))
        .collect();
    if o.write {
        let v = serde_json::json!({
            "what": "instructions of each `weft` command of `speed --sizes small --count` (cachegrind, one rayon thread); refresh: target/release/speed --sizes small --count --baseline bench/baseline/small.json --write",
            "instructions": counts,
        });
        let text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())? + "\n";
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut bad = Vec::new();
    for (key, &n) in &counts {
        let Some(base) = v
            .pointer(&format!("/instructions/{key}"))
            .and_then(|x| x.as_u64())
        else {
            bad.push(format!(
                "{key}: not in the baseline (refresh it with --write)"
            ));
            continue;
        };
        let change = (n as f64 / base as f64 - 1.0) * 100.0;
        let line = format!("{key}: {n} instructions, baseline {base} ({change:+.1} %)");
        if change > o.tolerance {
            bad.push(line);
        } else {
            eprintln!("   {line}");
        }
    }
    Ok(bad)
}

fn run(o: &Opts) -> Result<Vec<Row>, String> {
    let weft = weft_bench::weft_binary()
        .ok_or("no weft beside this binary: cargo build --release -p weft")?;
    let work = std::env::temp_dir().join(format!("weft-speed-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let size = Size::of(o.sizes);
    let cases = prepare(&weft, &work, &size, o.sizes == Sizes::Full)?;
    let mut rows = Vec::new();
    if !o.count {
        rows.push(routing_row(o, &work, &size)?);
    }
    for c in &cases {
        eprintln!("== {}", c.work);
        let r = if o.count {
            count_case(&weft, &work, c)?
        } else {
            time_case(&weft, &work, c, if c.slow { o.slow_runs } else { o.runs })
        };
        rows.push(r);
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(rows)
}

fn main() {
    let o = parse_args();
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let rows = match run(&o) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("speed: {e}");
            std::process::exit(2)
        }
    };
    print!("{}", table(&rows, o.count));
    println!("load average before the run: {}", loadavg.trim());
    if let Some(p) = &o.json {
        let text = serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n";
        if let Err(e) = std::fs::write(p, text) {
            eprintln!("cannot write {}: {e}", p.display());
            std::process::exit(2);
        }
    }
    match gate(&o, &rows) {
        Ok(bad) if bad.is_empty() => {}
        Ok(bad) => {
            eprintln!(
                "speed: {} figure(s) over the baseline by more than {} %:",
                bad.len(),
                o.tolerance
            );
            for b in bad {
                eprintln!("   {b}");
            }
            std::process::exit(1)
        }
        Err(e) => {
            eprintln!("speed: {e}");
            std::process::exit(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cachegrinds_instruction_count() {
        let err = "==12== Cachegrind, a cache and branch-prediction profiler\n==12== \n==12== I   refs:      1,234,567\n";
        assert_eq!(instructions(err), Some(1_234_567));
        assert_eq!(instructions("==12== I1  misses: 5\n"), None);
    }
}
