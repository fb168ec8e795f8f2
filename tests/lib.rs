//! Shared helpers of the end-to-end tests.
//!
//! The suites (one file each beside this one) cover the examples' proofs, degraded trees,
//! layered routing, QoS, fat-tree detection, plans, VM migration, `apply` on the sim and over
//! MADs, OpenSM interop, the ibsim round trip and service nodes on real trees (the real dumps
//! of `fixtures/real/`, with their provenance). Tests that need ibsim, OpenSM or
//! infiniband-diags fail when `CI` is set and the tool is missing, and skip loudly otherwise;
//! `WEFT_BIG_EXAMPLES` and `WEFT_TREE_CASES` gate the large runs. The OpenSM interop of
//! aggregation-node fat-trees needs the `weft` binary, so it is `cli/tests/it/opensm_aggregation.rs`.
//!
//! * [`ibsim`]: run ibsim and InfiniBand tools against it.
//! * [`assert_isomorphic`] / [`isomorphism_differences`]: compare two fabrics by node GUID, the
//!   way a discovery sees them.
//! * [`fat_tree_648`]: the 648-host two-level fat-tree (18 spines, 36 leaves), built directly.
//! * [`Rng`], [`xgft_source`]: seeded random cases of XGFT trees.
//! * [`example`], [`compiled`]: an example's text, and the proven state weft compiles.
//! * [`parse_sl2vl`], [`parse_vlarb`], [`vlarb_of`]: `smpquery sl2vl` and `vlarb` output.
//! * [`dump`]: `ibnetdiscover` dumps as NVIDIA-era fabrics print them (SHARP aggregation
//!   nodes, a SuperPOD-class rail-optimised tree), generated.
//! * [`multicast_tree`]: a hand-made multicast group and its MFTs (a shortest-path tree from
//!   one switch), for the deploy and audit tests.
//! * [`scratch`]: a fresh temporary directory, removed when the test ends (passed or not).
//! * [`big_examples`]: the one reading of `WEFT_BIG_EXAMPLES`.

pub mod dump;
pub mod ibsim;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use weft_fabric::{Fabric, FabricBuilder, Guid, LinkError, LinkState, NodeKind, NodeSpec, PortRef};

/// How many differences [`assert_isomorphic`] lists before it stops.
const SHOWN: usize = 20;

/// One end of a link, as discovery identifies it: node GUID and port number.
type End = (Guid, u8);

fn up_links(f: &Fabric) -> BTreeSet<(End, End)> {
    f.links()
        .iter()
        .filter(|l| l.state == LinkState::Up)
        .map(|l| {
            let a = (f.node(l.a.node).guid(), l.a.port.0);
            let b = (f.node(l.b.node).guid(), l.b.port.0);
            (a.min(b), a.max(b))
        })
        .collect()
}

fn describe_end(f: &Fabric, end: End) -> String {
    match f.find_guid(end.0) {
        Some(id) => format!("`{}` ({}) port {}", f.node(id).name(), end.0, end.1),
        None => format!("{} port {}", end.0, end.1),
    }
}

/// Every way in which `a` and `b` differ as a discovery sees them, in a stable order: nodes
/// matched by GUID must have the same kind, name and port count, and the up links, as unordered
/// pairs of (node GUID, port), must be the same. Node order, link order, link direction, port
/// GUIDs, rates and down links are not compared.
pub fn isomorphism_differences(a: &Fabric, b: &Fabric) -> Vec<String> {
    let mut out = Vec::new();
    let nodes = |f: &Fabric| -> BTreeMap<Guid, (NodeKind, String, u8)> {
        f.nodes()
            .iter()
            .map(|n| (n.guid(), (n.kind(), n.name().to_owned(), n.spec.port_count)))
            .collect()
    };
    let (na, nb) = (nodes(a), nodes(b));
    for (guid, (kind, name, ports)) in &na {
        match nb.get(guid) {
            None => out.push(format!(
                "node {guid} (`{name}`, {kind}) only in `{}`",
                a.name
            )),
            Some((kb, nameb, pb)) => {
                if kind != kb {
                    out.push(format!(
                        "node {guid}: {kind} in `{}`, {kb} in `{}`",
                        a.name, b.name
                    ));
                }
                if name != nameb {
                    out.push(format!(
                        "node {guid}: named `{name}` in `{}`, `{nameb}` in `{}`",
                        a.name, b.name
                    ));
                }
                if ports != pb {
                    out.push(format!(
                        "node {guid} (`{name}`): {ports} ports in `{}`, {pb} in `{}`",
                        a.name, b.name
                    ));
                }
            }
        }
    }
    for (guid, (kind, name, _)) in &nb {
        if !na.contains_key(guid) {
            out.push(format!(
                "node {guid} (`{name}`, {kind}) only in `{}`",
                b.name
            ));
        }
    }
    let (la, lb) = (up_links(a), up_links(b));
    for (x, y) in la.difference(&lb) {
        out.push(format!(
            "link {} <-> {} only in `{}`",
            describe_end(a, *x),
            describe_end(a, *y),
            a.name
        ));
    }
    for (x, y) in lb.difference(&la) {
        out.push(format!(
            "link {} <-> {} only in `{}`",
            describe_end(b, *x),
            describe_end(b, *y),
            b.name
        ));
    }
    out
}

/// Fails, listing the first differences, unless `a` and `b` are the same fabric as a discovery
/// sees them (see [`isomorphism_differences`]).
#[track_caller]
pub fn assert_isomorphic(a: &Fabric, b: &Fabric) {
    let diffs = isomorphism_differences(a, b);
    if diffs.is_empty() {
        return;
    }
    let mut msg = format!(
        "fabrics `{}` ({} nodes, {} links) and `{}` ({} nodes, {} links) differ in {} ways",
        a.name,
        a.nodes().len(),
        a.links().len(),
        b.name,
        b.nodes().len(),
        b.links().len(),
        diffs.len()
    );
    if diffs.len() > SHOWN {
        let _ = write!(msg, " (first {SHOWN} shown)");
    }
    msg.push(':');
    for d in diffs.iter().take(SHOWN) {
        let _ = write!(msg, "\n  {d}");
    }
    assert!(diffs.is_empty(), "{msg}");
}

/// The 648-host two-level fat-tree: 18 spines and 36 leaves of 36 ports, 648 one-port
/// HCAs; leaf `l` port `18 + s` to spine `s` port `l`, host `n` to leaf `(n - 1) / 18 + 1` port
/// `(n - 1) % 18 + 1`. Names `spine1`, `leaf1`, `cn001`. GUIDs are distinct, and HCA GUIDs
/// 16 apart so that no port GUID (node GUID + port) is another node's GUID.
pub fn fat_tree_648() -> Result<Fabric, LinkError> {
    const SPINES: u32 = 18;
    const LEAVES: u32 = 36;
    const HOSTS: u32 = 648;
    let mut b = FabricBuilder::new("fat-tree-648");
    let switch = |name: String, guid: u64| {
        let mut s = NodeSpec::new(name, NodeKind::Switch, Guid(guid), 36);
        s.vendor_id = 0x2c9;
        s.device_id = 0xcf08;
        s
    };
    let spines = (1..=SPINES)
        .map(|s| {
            b.add_node(switch(
                format!("spine{s}"),
                0x7cfe_9003_0000_0000 + u64::from(s),
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let leaves = (1..=LEAVES)
        .map(|l| {
            b.add_node(switch(
                format!("leaf{l}"),
                0x7cfe_9003_0001_0000 + u64::from(l),
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (l, &leaf) in (1u8..).zip(&leaves) {
        for (s, &spine) in (1u8..).zip(&spines) {
            b.add_link(PortRef::new(leaf, 18 + s), PortRef::new(spine, l))?;
        }
    }
    for n in 1..=HOSTS {
        let mut spec = NodeSpec::new(
            format!("cn{n:03}"),
            NodeKind::Hca,
            Guid(0x0002_c903_0000_0000 + u64::from(n) * 0x10),
            1,
        );
        spec.vendor_id = 0x2c9;
        spec.device_id = 0x1017;
        let host = b.add_node(spec)?;
        let leaf = leaves
            .get(((n - 1) / 18) as usize)
            .copied()
            .ok_or(LinkError::UnknownNode(n))?;
        b.add_link(
            PortRef::new(host, 1),
            PortRef::new(leaf, ((n - 1) % 18 + 1) as u8),
        )?;
    }
    Ok(b.finish())
}

/// A small deterministic generator for seeded random test cases: weft's SplitMix64
/// ([`weft_fabric::rng`]), with `usize` bounds reduced modulo `n` (not its multiply-shift
/// `below`), so that every seeded case here, and the benchmarks' generated fabrics, stay the
/// ones they have always been.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n` (`0`, drawing nothing, when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let mut r = weft_fabric::rng::SplitMix64(self.0);
        let x = (r.next_u64() % n as u64) as usize;
        self.0 = r.0;
        x
    }
}

/// A random connected irregular fabric routed by `layered` on up to 8 VLs: `n` switches on a
/// random spanning tree plus random extra cables, one to three hosts per switch.
pub fn irregular_source(rng: &mut Rng, n: usize, name: &str) -> String {
    let mut next_port = vec![1u8; n];
    let mut cables: Vec<(usize, usize)> = Vec::new();
    for s in 1..n {
        cables.push((rng.below(s), s));
    }
    for _ in 0..rng.below(n * 2) {
        let (a, b) = (rng.below(n), rng.below(n));
        if a != b {
            cables.push((a, b));
        }
    }
    let mut body = String::new();
    for s in 0..n {
        body += &format!("        switch s{s} : sb7800\n");
    }
    let mut h = 0;
    for (s, port) in next_port.iter_mut().enumerate() {
        for _ in 0..1 + rng.below(3) {
            body += &format!("        hca h{h} : connectx5\n");
            body += &format!("        link s{s}.p[{port}] <-> h{h}.p[1]\n");
            *port += 1;
            h += 1;
        }
    }
    for (a, b) in cables {
        let (Some(&pa), Some(&pb)) = (next_port.get(a), next_port.get(b)) else {
            continue;
        };
        if pa > 36 || pb > 36 {
            continue;
        }
        body += &format!("        link s{a}.p[{pa}] <-> s{b}.p[{pb}]\n");
        if let Some(p) = next_port.get_mut(a) {
            *p += 1;
        }
        if let Some(p) = next_port.get_mut(b) {
            *p += 1;
        }
    }
    format!(
        "use std::hardware::{{sb7800, connectx5}}\nfabric {name} {{\n    topology {{\n{body}    }}\n    vls {{ budget = 8 }}\n    routing {{ engine = layered }}\n}}\n"
    )
}

/// A `.weft` program of `pgft(m, w, p)` (parallel cables) with `faults` (lines inside a
/// `faults` block) and `extra` (lines after it, inside the fabric).
pub fn pgft_source(m: &[u32], w: &[u32], p: &[u32], faults: &str, extra: &str) -> String {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    format!(
        "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::pgft\nfabric t {{\n    topology = pgft(m: [{}], w: [{}], p: [{}], switch: sb7800, hca: connectx5)\n    faults {{\n{faults}    }}\n{extra}}}\n",
        list(m),
        list(w),
        list(p)
    )
}

/// A weft program: the stdlib's XGFT(h; m; w) of SB7800 switches and ConnectX-5 hosts, the
/// given `faults` lines, and `extra` lines (a `routing` section, say) inside the fabric.
pub fn xgft_source(h: usize, m: &[u32], w: &[u32], faults: &str, extra: &str) -> String {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    format!(
        "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::xgft\nfabric t {{\n    topology = xgft(h: {h}, m: [{}], w: [{}], switch: sb7800, hca: connectx5)\n    faults {{\n{faults}    }}\n{extra}}}\n",
        list(m),
        list(w)
    )
}

/// The text of `examples/NAME`.
#[expect(clippy::panic, reason = "a test fixture stops on a missing example")]
pub fn example(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The state weft compiles for a program, through the driver as every command compiles
/// (panics, with the rendered diagnostics, on errors).
pub fn compiled(src: &str) -> weft_fabric::ValidState {
    built(weft_driver::compile_text(
        "t.weft",
        src,
        &weft_compiler::NoFiles,
        &weft_driver::quietly,
    ))
    .state
}

/// The build of what the driver compiled (panics, with the rendered diagnostics, when the
/// program or its routing has errors).
#[expect(
    clippy::panic,
    reason = "a test fixture stops on a program weft refuses"
)]
pub fn built(c: weft_driver::Compiled) -> weft_compiler::build::Built {
    use weft_compiler::diagnostic::{render, RenderOptions};
    let shown = render(
        &c.diagnostics(),
        &c.compilation.sources,
        RenderOptions::plain(),
    );
    match c.built {
        Some(Ok(b)) if !c.compilation.has_errors() => b,
        _ => panic!("{shown}"),
    }
}

/// `(switch GUID, LID) → port` from OpenSM's LFT dump or `dump_fts` output.
pub fn parse_fts(text: &str) -> std::collections::BTreeMap<(u64, u16), u8> {
    let mut out = std::collections::BTreeMap::new();
    let mut switch = None;
    for line in text.lines() {
        if line.starts_with("Unicast lids") {
            switch = line.split(" guid 0x").nth(1).and_then(|r| {
                u64::from_str_radix(r.split_whitespace().next().unwrap_or(""), 16).ok()
            });
            continue;
        }
        let mut it = line.split_whitespace();
        if let (Some(lid), Some(port), Some(sw)) = (it.next(), it.next(), switch) {
            if let (Some(lid), Ok(port)) = (lid.strip_prefix("0x"), port.parse::<u8>()) {
                if let Ok(lid) = u16::from_str_radix(lid, 16) {
                    out.insert((sw, lid), port);
                }
            }
        }
    }
    out
}

/// `(switch GUID, LID) → port` of every set entry of `state`'s LFTs (what `dump_fts` lists).
pub fn lft_entries(state: &weft_fabric::FabricState) -> std::collections::BTreeMap<(u64, u16), u8> {
    let mut ours = std::collections::BTreeMap::new();
    for (&id, sw) in &state.switches {
        let guid = state.fabric.node(id).guid().0;
        for lid in 1..=sw.lft.top().0 {
            if let Some(p) = sw.lft.get(weft_fabric::Lid(lid)) {
                ours.insert((guid, lid), p.0);
            }
        }
    }
    ours
}

/// `(VL, weight)` entries of a VL arbitration table.
pub type ArbTable = Vec<(u8, u8)>;

/// The entries of weight > 0 from `smpquery vlarb` output, low table then high.
pub fn parse_vlarb(text: &str) -> (ArbTable, ArbTable) {
    let hex = |w: &str| u8::from_str_radix(w.trim().trim_start_matches("0x"), 16).ok();
    let mut tables = Vec::new();
    let mut vls: Vec<u8> = Vec::new();
    for line in text.lines() {
        if let Some(r) = line.strip_prefix("VL    :") {
            vls = r.split('|').filter_map(hex).collect();
        } else if let Some(r) = line.strip_prefix("WEIGHT:") {
            let w: Vec<u8> = r.split('|').filter_map(hex).collect();
            tables.push(
                vls.iter()
                    .zip(w)
                    .filter(|(_, w)| *w > 0)
                    .map(|(&v, w)| (v, w))
                    .collect::<Vec<_>>(),
            );
        }
    }
    let mut it = tables.into_iter();
    (it.next().unwrap_or_default(), it.next().unwrap_or_default())
}

/// `smpquery vlarb` output as a state's VL arbitration (the entries of weight > 0).
pub fn vlarb_of(text: &str) -> weft_fabric::VlArb {
    let (low, high) = parse_vlarb(text);
    let entries = |t: ArbTable| {
        t.into_iter()
            .map(|(vl, weight)| weft_fabric::VlWeight { vl, weight })
            .collect()
    };
    weft_fabric::VlArb {
        high_limit: 0,
        high: entries(high),
        low: entries(low),
    }
}

/// `(in, out) → VLs by SL` from `smpquery sl2vl` output (`ports: in  1, out  2: | 0| 1|…|`).
pub fn parse_sl2vl(text: &str) -> std::collections::BTreeMap<(u8, u8), Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("ports: in") else {
            continue;
        };
        let Some((ports, vls)) = rest.split_once(':') else {
            continue;
        };
        let nums: Vec<u8> = ports
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        let vls: Vec<u8> = vls
            .split('|')
            .filter_map(|w| w.trim().parse().ok())
            .collect();
        if let [i, o] = nums.as_slice() {
            let (i, o) = (*i, *o);
            out.insert((i, o), vls);
        }
    }
    out
}

/// In `dir` (emptied first): `old.weft` (`old_src`) built by the `weft` binary into `old/`, and
/// `weft plan` (with `args`) from its state to `new.weft` (`new_src`) into `plan.json`, the end
/// state into `new.json`.
#[expect(clippy::panic, reason = "a test fixture stops on a step that fails")]
pub fn build_and_plan(weft: &Path, dir: &Path, old_src: &str, new_src: &str, args: &[&str]) {
    let _ = std::fs::remove_dir_all(dir);
    let run = |a: &[&str]| {
        let o = std::process::Command::new(weft)
            .args(a)
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", weft.display()));
        if !o.status.success() {
            panic!(
                "weft {}: {}",
                a.join(" "),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    };
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for (f, src) in [("old.weft", old_src), ("new.weft", new_src)] {
        std::fs::write(dir.join(f), src).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let p = |f: &str| dir.join(f).to_string_lossy().into_owned();
    run(&["build", &p("old.weft"), "-o", &p("old"), "-q"]);
    let (from, to, plan, state) = (
        p("old/state.json"),
        p("new.weft"),
        p("plan.json"),
        p("new.json"),
    );
    let mut a = vec!["plan", "--from", &from, &to];
    a.extend(args);
    a.extend(["-o", &plan, "--write-state", &state, "-q"]);
    run(&a);
}

/// Helpers for `weft apply` on the in-process `sim` fabric.
pub mod sim {
    use weft_deploy::sim::Tables;
    use weft_fabric::{FabricState, NodeKind, PortRef};

    /// Every kind of fault the sim injects, once each: a Set lost once (the retry lands) and on
    /// every try, late once and on every try, rejected, read back wrong, the writer crashing.
    pub const FAULT_KINDS: [weft_deploy::sim::FaultKind; 7] = {
        use weft_deploy::sim::FaultKind;
        [
            FaultKind::Drop { times: 1 },
            FaultKind::Drop { times: 3 },
            FaultKind::Delay { times: 1 },
            FaultKind::Delay { times: 3 },
            FaultKind::Reject {
                status: weft_deploy::sim::STATUS_INVALID,
            },
            FaultKind::CorruptReadback,
            FaultKind::Crash,
        ]
    };

    /// The first HCA port on a live link: where the SM sits.
    #[expect(
        clippy::expect_used,
        reason = "a test fixture: every test fabric has hosts"
    )]
    pub fn sm_port(st: &FabricState) -> PortRef {
        let f = &st.fabric;
        f.nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind() == NodeKind::Hca)
            .flat_map(|(i, n)| {
                (1..=n.spec.port_count).map(move |p| PortRef::new(weft_fabric::NodeId(i as u32), p))
            })
            .find(|&p| f.peer(p).is_some())
            .expect("a host port on a live link")
    }

    /// Asserts two fabrics hold the same tables, naming the first difference and where
    /// (`at`), not printing them whole.
    pub fn same_at(a: &Tables, b: &Tables, at: &str) {
        #[expect(clippy::panic, reason = "an assertion")]
        fn first<K: Ord + std::fmt::Debug + Clone, V: PartialEq + std::fmt::Debug>(
            at: &str,
            what: &str,
            x: &std::collections::BTreeMap<K, V>,
            y: &std::collections::BTreeMap<K, V>,
        ) {
            let keys: std::collections::BTreeSet<&K> = x.keys().chain(y.keys()).collect();
            if let Some(k) = keys.into_iter().find(|k| x.get(k) != y.get(k)) {
                let show = |v: Option<&V>| format!("{v:?}").chars().take(300).collect::<String>();
                panic!(
                    "{at}: {what} differ at {k:?}: {} vs {}",
                    show(x.get(k)),
                    show(y.get(k))
                );
            }
        }
        first(at, "LIDs", &a.lids, &b.lids);
        first(at, "LFTs", &a.lfts, &b.lfts);
        first(at, "P_Keys", &a.pkeys, &b.pkeys);
        first(at, "SL2VL", &a.sl2vl, &b.sl2vl);
        first(at, "VLArb", &a.vlarb, &b.vlarb);
        first(at, "VFs", &a.vfs, &b.vfs);
        first(at, "MFTs", &a.mfts, &b.mfts);
    }
}

/// A multicast group `mlid` whose full members are port 1 of the end nodes named `members`,
/// and its tree: from switch `root` over live switch-to-switch links (breadth first, ports and
/// neighbours in order), each member's switch reached along its branch, every switch on it
/// forwarding to the next one down and to its members. The masks are a tree: a packet from
/// any member reaches every other member once.
///
/// # Panics
///
/// When a name is not a node of `st`, or a member's switch is not reachable from `root`.
#[expect(clippy::expect_used, reason = "a test fixture")]
pub fn multicast_tree(
    st: &weft_fabric::FabricState,
    mlid: u16,
    root: &str,
    members: &[&str],
) -> weft_fabric::Multicast {
    use weft_fabric::{JoinState, McGroup, Mlid, Multicast, NodeId, PortMask, PortNum};
    let f = &st.fabric;
    let mlid = Mlid::new(mlid).expect("a multicast LID");
    let root = f.find(root).expect("the root switch");
    // Breadth first from the root: each switch's parent and the ports between them.
    let mut parent: BTreeMap<NodeId, (NodeId, u8, u8)> = BTreeMap::new();
    let mut seen = BTreeSet::from([root]);
    let mut queue = std::collections::VecDeque::from([root]);
    while let Some(x) = queue.pop_front() {
        for p in 1..=f.node(x).spec.port_count {
            let Some((peer, link)) = f.peer(PortRef::new(x, p)) else {
                continue;
            };
            let live = f.link(link).state == LinkState::Up;
            if live && f.node(peer.node).is_switch() && seen.insert(peer.node) {
                parent.insert(peer.node, (x, p, peer.port.0));
                queue.push_back(peer.node);
            }
        }
    }
    let mut masks: BTreeMap<NodeId, PortMask> = BTreeMap::new();
    let mut group = McGroup {
        mlid,
        pkey: 0xffff,
        sl: weft_fabric::Sl(0),
        members: BTreeMap::new(),
    };
    for name in members {
        let host = f.find(name).expect("a member");
        let at = PortRef::new(host, 1);
        group.members.insert(at, JoinState::FULL);
        let (sw, _) = f.peer(at).expect("a cabled member");
        masks.entry(sw.node).or_default().insert(sw.port);
        let mut x = sw.node;
        while x != root {
            let &(up, up_port, here) = parent.get(&x).expect("a switch the root reaches");
            masks.entry(x).or_default().insert(PortNum(here));
            masks.entry(up).or_default().insert(PortNum(up_port));
            x = up;
        }
    }
    let mut m = Multicast {
        groups: vec![group],
        mfts: BTreeMap::new(),
    };
    for (sw, mask) in masks {
        m.mfts.entry(sw).or_default().set(mlid, mask);
    }
    m
}

/// A one-step plan of `writes` (SL→VL and VL arbitration writes, say, from
/// [`weft_plan::qos::writes`]) from `old` (its fabric, LIDs and wire view) to `new`, as a test
/// assembles one: nothing proven with it beyond what the steps' re-proof on the fabric shows.
pub fn one_step_plan(
    old: &weft_fabric::FabricState,
    new: &weft_fabric::FabricState,
    writes: Vec<weft_formats::plan::SmpWrite>,
) -> weft_formats::plan::Plan {
    use weft_formats::plan::{Plan, PlanStep, Proof, PLAN_FORMAT, PLAN_VERSION};
    Plan {
        format: PLAN_FORMAT.to_owned(),
        version: PLAN_VERSION,
        fabric_name: old.fabric.name.clone(),
        from: weft_fabric::Fingerprint::of(old),
        to: weft_fabric::Fingerprint::of(new),
        wire: Some(weft_fabric::WireView::of(old)),
        partitions: Vec::new(),
        sm: Vec::new(),
        proof: Proof {
            scope: "all".to_owned(),
            properties: Vec::new(),
            path_sls: true,
        },
        steps: vec![PlanStep::of(writes)],
        recorded_digest: None,
    }
}

/// A test's own temporary directory: fresh and empty, unique even among the tests of one
/// process (they share a binary), and removed with everything in it when dropped, so a failing
/// test cleans up as well as a passing one. It reads as the [`Path`] it is.
#[derive(Debug)]
pub struct Scratch(tempfile::TempDir);

impl Scratch {
    /// The directory.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh [`Scratch`] directory whose name starts with `weft-{name}-` (for whoever looks in
/// the temporary directory while a test runs).
#[expect(
    clippy::panic,
    reason = "a test fixture: no temporary directory, no test"
)]
pub fn scratch(name: &str) -> Scratch {
    match tempfile::Builder::new()
        .prefix(&format!("weft-{name}-"))
        .tempdir()
    {
        Ok(d) => Scratch(d),
        Err(e) => panic!("cannot make a scratch directory for {name}: {e}"),
    }
}

/// Whether the large examples run: `WEFT_BIG_EXAMPLES=1` (`.ci/run` sets it for its release
/// runs). Every suite asks here, so one value means the same everywhere; any other value,
/// or none, leaves them out.
pub fn big_examples() -> bool {
    std::env::var_os("WEFT_BIG_EXAMPLES").is_some_and(|v| v == "1")
}
