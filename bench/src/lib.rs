//! Inputs for the benchmarks, built deterministically from the repository's examples.
//!
//! Speed is measured here, never in tests. Criterion benchmarks on the target fabric sizes:
//! `benches/frontend.rs` (parse + elaborate, explicit programs, ibnetdiscover read/write,
//! `weft import` + `weft check` of the 666-switch SuperPOD-class dump the `superpod` binary
//! writes, compile, `layered` on a random irregular fabric of 1 000 switches, [`irregular`],
//! which the `irregular` binary writes as a `.weft` file for OpenSM), `benches/verify.rs`,
//! `benches/plan.rs` (a link failure planned and its steps proven), `benches/migrate.rs` (VM
//! migration plans). Comparison binaries (`src/bin/`, each run by a script in `bench/`):
//! `vs_opensm` (the same fabric routed by weft and by OpenSM on ibsim: ftree, updn, minhop,
//! dfsssp, lash, nue; times, layers, quality), `vs_ibdmchk` (`weft verify` against `ibdmchk
//! -a` on the same dumps), `broken_state` (`weft verify` on a state with every LFT entry at
//! port 1), `deploy_vs_opensm` (initial deployment over MADs on ibsim: `weft apply --target
//! mad` against OpenSM's file engine), `opensm_reroute` (OpenSM re-routing a link failure and
//! changing engine, every mix of its LFT writes checked with the transition verifier, beside
//! `weft plan`), `simulate`, `dftree`, `speed` (issue 45's figures: routing beside OpenSM, check,
//! build and plans, medians of runs; with `--count`, CI's instruction-count regression gate
//! against `bench/baseline/small.json`).
#![expect(
    clippy::panic,
    reason = "benchmark fixtures stop on a broken example; they are not product code"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The text of `examples/NAME`.
pub fn example(name: &str) -> String {
    let p = root().join("examples").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// QoS layouts added to an example for the benchmarks: one vFtree class over 4 lanes (the
/// issue's "vFtree" case), and three classes (a high-priority VL, vFtree over 4 lanes, a
/// dFtree pair).
pub const QOS_VFTREE: &str = "    vls { budget = 4 }\n    qos {\n        class compute { lanes = vftree(maxvl: 4) }\n    }\n";
/// See [`QOS_VFTREE`].
pub const QOS_THREE_CLASSES: &str = "    vls { budget = 8 }\n    qos {\n        class management { vl = 0, weight = 16, priority = high, match { service_id = 0x1000..0x1100 } }\n        class compute { lanes = vftree(maxvl: 4), weight = 192 }\n        class storage { lanes = dftree, weight = 48, match { service_id = 0x2000..0x3000 } }\n    }\n";

/// The text of `examples/NAME` with `sections` added at the end of its fabric.
pub fn example_with(name: &str, sections: &str) -> String {
    let text = example(name);
    let end = text
        .rfind('}')
        .unwrap_or_else(|| panic!("{name} has no fabric"));
    format!("{}{sections}}}\n", &text[..end])
}

/// `src` with `faults { … }` (the lines `faults`) added at the end of its fabric.
pub fn with_faults(src: &str, faults: &str) -> String {
    let i = src.rfind('}').unwrap_or_else(|| panic!("no fabric block"));
    format!("{}    faults {{\n{faults}    }}\n}}\n", &src[..i])
}

/// `src` with its `routing { … }` section replaced by `updn` rooted at `root`.
pub fn with_updn(src: &str, root: &str) -> String {
    let new = format!("routing {{\n        engine = updn\n        roots = [{root}]\n    }}");
    match src.find("routing {") {
        Some(i) => {
            let close = src[i..]
                .find('}')
                .unwrap_or_else(|| panic!("an unclosed routing section"));
            format!("{}{new}{}", &src[..i], &src[i + close + 1..])
        }
        None => {
            let i = src.rfind('}').unwrap_or_else(|| panic!("no fabric block"));
            format!("{}    {new}\n}}\n", &src[..i])
        }
    }
}

/// The state weft compiles for a program, through the driver as every command compiles.
pub fn compiled(text: &str) -> weft_fabric::ValidState {
    compiled_as("t.weft", text)
}

/// [`compiled`], naming the program `name` in what it says.
pub fn compiled_as(name: &str, text: &str) -> weft_fabric::ValidState {
    let c = weft_driver::compile_text(name, text, &weft_compiler::NoFiles, &weft_driver::quietly);
    assert!(!c.has_errors(), "{name} has errors");
    match c.built {
        Some(Ok(b)) => b.state,
        _ => panic!("{name} does not route"),
    }
}

/// The fabric an example elaborates to.
pub fn fabric(name: &str) -> weft_fabric::Fabric {
    let c = weft_compiler::elaborate(name, &example(name), &weft_compiler::NoFiles);
    assert!(!c.has_errors(), "{name} has errors");
    c.elaborated
        .map(|e| e.fabric)
        .unwrap_or_else(|| panic!("{name} elaborates to nothing"))
}

/// An explicit program (one line per node and link, as `weft import` writes) for an example.
pub fn explicit_program(name: &str) -> String {
    weft_compiler::emit::fabric_to_weft(&fabric(name), None, name)
}

/// Wall seconds, peak RSS in MiB, exit code and stdout of one child run.
pub struct Timed {
    pub secs: f64,
    pub rss_mib: f64,
    pub code: Option<i32>,
    pub stdout: String,
}

/// Runs `program args` in `dir` under GNU `time` (`/usr/bin/time`, Debian package `time`):
/// wall time and peak RSS come from the child's rusage.
pub fn timed(program: &Path, args: &[&str], dir: &Path) -> Timed {
    let stats = dir.join(".time");
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%e %M")
        .arg("-o")
        .arg(&stats)
        .arg(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} under /usr/bin/time: {e}", program.display()));
    let s = std::fs::read_to_string(&stats).unwrap_or_default();
    let last = s.lines().last().unwrap_or("");
    let mut w = last.split_whitespace();
    let secs = w.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
    let kb: f64 = w.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
    Timed {
        secs,
        rss_mib: kb / 1024.0,
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// The median (upper median for an even count; NaN for none).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The release `weft` binary beside the running bench binary.
pub fn weft_binary() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("weft")))
        .filter(|p| p.exists())
}

/// A random irregular fabric for the `layered` benchmarks: `switches` SB7800 switches in a
/// row, each cabled to a random one of the 50 before it (a spanning tree), plus `2 × switches`
/// random extra cables between switches at most `reach` apart in the row (one is dropped when
/// either end has no port left); four ConnectX-5 hosts per switch; `layered` routing within
/// 8 VLs. `reach` stands for cable length: racks in rows cable to their neighbourhood
/// (`reach` = 40); `reach` ≥ `switches` cables any pair (a random expander, the hardest case
/// for layers). The same arguments give the same text.
pub fn irregular(switches: usize, reach: usize, seed: u64) -> String {
    let mut rng = weft_tests::Rng(seed | 1);
    let reach = reach.max(1);
    let mut cables: Vec<(usize, usize)> = (1..switches)
        .map(|s| (s - 1 - rng.below(s.min(50)), s))
        .collect();
    for _ in 0..switches * 2 {
        let a = rng.below(switches);
        let low = a.saturating_sub(reach);
        let b = low + rng.below((a + reach + 1).min(switches) - low);
        if a != b {
            cables.push((a, b));
        }
    }
    let mut body = String::new();
    let mut next_port = vec![1u8; switches];
    for (s, port) in next_port.iter_mut().enumerate() {
        body += &format!("        switch s{s} : sb7800\n");
        for h in 0..4 {
            body += &format!("        hca h{s}_{h} : connectx5\n");
            body += &format!("        link s{s}.p[{port}] <-> h{s}_{h}.p[1]\n");
            *port += 1;
        }
    }
    for (a, b) in cables {
        if next_port[a] > 36 || next_port[b] > 36 {
            continue;
        }
        body += &format!(
            "        link s{a}.p[{}] <-> s{b}.p[{}]\n",
            next_port[a], next_port[b]
        );
        next_port[a] += 1;
        next_port[b] += 1;
    }
    format!(
        "use std::hardware::{{sb7800, connectx5}}\nfabric irregular{switches} {{\n    topology {{\n{body}    }}\n    vls {{ budget = 8 }}\n    routing {{ engine = layered }}\n}}\n"
    )
}

/// Seconds since midnight of an OpenSM log line (`Nov 22 15:10:36 988925 [...] ...`).
pub fn log_time(line: &str) -> Option<f64> {
    let mut w = line.split_whitespace();
    let (_mon, _day, hms, us) = (w.next()?, w.next()?, w.next()?, w.next()?);
    let mut p = hms.split(':').map(|x| x.parse::<u32>().ok());
    let (h, m, s) = (p.next()??, p.next()??, p.next()??);
    let us: u32 = us.parse().ok()?;
    Some(f64::from(h * 3600 + m * 60 + s) + f64::from(us) * 1e-6)
}

/// Milliseconds from `start` to `end`, both seconds since midnight as [`log_time`] reads them
/// (an end before the start is past midnight).
pub fn log_span_ms(start: f64, end: f64) -> f64 {
    let mut d = end - start;
    if d < 0.0 {
        d += 86_400.0;
    }
    d * 1e3
}

/// `st` (a fat-tree) with multicast: the IPoIB broadcast group 0xC000 of every end port, and
/// `more` groups 0xC001… each of every `more`-th end port (by node order, offset by the
/// group), every member full, SL 0. Each group's tree is the way down from one top-level
/// switch (the groups spread over them by MLID) to its members' leaves: a switch's level is
/// its distance in switches from the nearest end node, and a tree cable always joins a switch
/// to one a level below, so no copy turns from down to up. Switches off the way to a member
/// are left out.
pub fn with_multicast(st: &weft_fabric::ValidState, more: usize) -> weft_fabric::ValidState {
    use std::collections::{BTreeMap, VecDeque};
    use weft_fabric::{JoinState, McGroup, Mlid, NodeId, PortMask, PortRef, Sl};
    let mut st = st.clone().into_inner();
    let f = &st.fabric;
    let n = f.nodes().len();
    // Levels: 0 for a switch with an end node, then breadth first.
    let mut level = vec![u32::MAX; n];
    let mut queue = VecDeque::new();
    for id in f.node_ids().filter(|&id| f.node(id).is_switch()) {
        let leaf = f.node(id).ports.iter().any(|p| {
            f.live_peer(PortRef::new(id, p.num.0))
                .is_some_and(|q| !f.node(q.node).is_switch())
        });
        if leaf {
            level[id.index()] = 0;
            queue.push_back(id);
        }
    }
    while let Some(x) = queue.pop_front() {
        for p in &f.node(x).ports {
            if let Some(q) = f.live_peer(PortRef::new(x, p.num.0)) {
                if f.node(q.node).is_switch() && level[q.node.index()] == u32::MAX {
                    level[q.node.index()] = level[x.index()] + 1;
                    queue.push_back(q.node);
                }
            }
        }
    }
    let top = level
        .iter()
        .filter(|&&l| l != u32::MAX)
        .max()
        .copied()
        .unwrap_or(0);
    let roots: Vec<NodeId> = f
        .node_ids()
        .filter(|&id| f.node(id).is_switch() && level[id.index()] == top)
        .collect();
    let ends: Vec<PortRef> = f
        .node_ids()
        .filter(|&id| !f.node(id).is_switch())
        .map(|id| PortRef::new(id, 1))
        .filter(|&p| f.live_peer(p).is_some())
        .collect();
    let mut groups = Vec::new();
    let mut mfts: BTreeMap<NodeId, weft_fabric::Mft> = BTreeMap::new();
    for g in 0..=more {
        let Some(mlid) = Mlid::new(0xc000 + g as u16) else {
            panic!("group {g} is past the last MLID")
        };
        let members: Vec<PortRef> = if g == 0 {
            ends.clone()
        } else {
            ends.iter().copied().skip(g - 1).step_by(more).collect()
        };
        let root = roots[g % roots.len()];
        // The way down from the root: each switch's parent, a level above.
        let mut parent: BTreeMap<NodeId, (NodeId, u8, u8)> = BTreeMap::new();
        let mut queue = VecDeque::from([root]);
        while let Some(x) = queue.pop_front() {
            for p in &f.node(x).ports {
                if let Some(q) = f.live_peer(PortRef::new(x, p.num.0)) {
                    let y = q.node;
                    if f.node(y).is_switch()
                        && level[y.index()] + 1 == level[x.index()]
                        && !parent.contains_key(&y)
                    {
                        parent.insert(y, (x, p.num.0, q.port.0));
                        queue.push_back(y);
                    }
                }
            }
        }
        let mut masks: BTreeMap<NodeId, PortMask> = BTreeMap::new();
        for &m in &members {
            let Some(leaf) = f.live_peer(m) else { continue };
            masks.entry(leaf.node).or_default().insert(leaf.port);
            let mut y = leaf.node;
            while let Some(&(x, down, up)) = parent.get(&y) {
                let fresh = !masks
                    .get(&y)
                    .is_some_and(|m| m.contains(weft_fabric::PortNum(up)));
                masks.entry(y).or_default().insert(weft_fabric::PortNum(up));
                masks
                    .entry(x)
                    .or_default()
                    .insert(weft_fabric::PortNum(down));
                if !fresh {
                    break;
                }
                y = x;
            }
        }
        for (x, mask) in masks {
            mfts.entry(x).or_default().set(mlid, mask);
        }
        groups.push(McGroup {
            mlid,
            pkey: 0xffff,
            sl: Sl(0),
            members: members.iter().map(|&m| (m, JoinState::FULL)).collect(),
        });
    }
    st.multicast.groups = groups;
    st.multicast.mfts = mfts;
    match weft_fabric::ValidState::new(st) {
        Ok(v) => v,
        Err(e) => panic!("the multicast state is not valid: {e}"),
    }
}

/// OpenSM's `guid2lid` of a run on ibsim, with its end-port GUIDs put back to the ones the
/// topology gives. ibsim numbers a CA's port GUIDs anew when it loads a fabric (they differ
/// from the dump's), so OpenSM's cache names ports the topology does not know; the
/// `opensm-subnet.lst` OpenSM wrote in the same run names each port by node GUID and port
/// number beside the port GUID it saw, which is what joins the two (by the list, not by the
/// GUID: ibsim's new GUID of one port may be the dump's GUID of another). A record the list
/// does not explain is kept as it is (and the reader of the result says so). Returns the
/// text and how many records name another port GUID than OpenSM's.
pub fn guid2lid_onto(
    guid2lid: &str,
    subnet_lst: &str,
    fabric: &weft_fabric::Fabric,
) -> (String, usize) {
    use std::collections::BTreeMap;
    use weft_fabric::{Guid, PortNum};
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let field = |end: &str, key: &str| -> Option<u64> {
        let at = end.find(key)? + key.len();
        let rest = &end[at..];
        hex(rest.split(|c: char| !c.is_ascii_hexdigit()).next()?)
    };
    // The port GUID OpenSM saw -> the node GUID and port number it belongs to.
    let mut seen: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for line in subnet_lst.lines() {
        for end in line.split('{').filter(|e| e.contains("NodeGUID:")) {
            // A description in braces splits an end in two: the fields before it and
            // `LID:… PN:…` after it.
            if let (Some(node), Some(port)) = (field(end, "NodeGUID:"), field(end, "PortGUID:")) {
                let pn = line[line.find(end).map_or(0, |i| i + end.len())..]
                    .split('}')
                    .nth(1)
                    .and_then(|tail| field(tail, "PN:"));
                if let Some(pn) = pn {
                    seen.insert(port, (node, pn));
                }
            }
        }
    }
    let mut out = String::with_capacity(guid2lid.len());
    let mut renamed = 0;
    for line in guid2lid.lines() {
        let mut words = line.split_whitespace();
        let first = words.next();
        let own = first.and_then(hex).and_then(|g| {
            let &(node, pn) = seen.get(&g)?;
            let id = fabric.find_guid(Guid(node))?;
            let n = fabric.node(id);
            if n.is_switch() {
                return Some(n.guid());
            }
            Some(n.port(PortNum(u8::try_from(pn).ok()?))?.guid)
        });
        match own.filter(|g| first.and_then(hex) != Some(g.0)) {
            Some(g) => {
                renamed += 1;
                let rest: Vec<&str> = words.collect();
                let _ = writeln!(out, "{:#018x} {}", g.0, rest.join(" "));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    (out, renamed)
}
