//! Slurm's topology files from the scheduler tree ([`weft_fabric::sched_tree`]):
//! `topology.conf` for the `topology/tree` plugin, and `topology.yaml`'s tree topology.

use std::fmt::Write as _;
use weft_fabric::hostlist::compress;
use weft_fabric::sched_tree::{SchedTree, TreeFabric};
use weft_fabric::Role;

/// `n` and what it counts, `one` when `n` is 1 and `many` otherwise (`1 host`, `2 hosts`).
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The comment lines both files open with: what the tree holds, what it leaves out and why.
fn header(t: &mut String, tree: &SchedTree, fabric: &str, what: &str) {
    let hosts: usize = tree.fabrics.iter().map(|f| f.hosts).sum();
    let leaves: usize = tree
        .fabrics
        .iter()
        .flat_map(|f| &f.switches)
        .filter(|s| !s.hosts.is_empty())
        .count();
    let _ = writeln!(
        t,
        "# {what} for fabric `{fabric}`, written by `weft export`."
    );
    let _ = writeln!(
        t,
        "# {} under {}. Levels as weft's fat-tree detection finds them from the cabling (a leaf has hosts, each level above is one cable further from the leaves) unless the description records them; a switch's children are its switches one level down.",
        count(hosts, "host", "hosts"),
        count(leaves, "leaf switch", "leaf switches")
    );
    let l = &tree.left_out;
    let mut service: Vec<String> = l
        .service
        .iter()
        .map(|(r, n)| {
            let what = match r {
                Role::Aggregation => "SHARP aggregation",
                other => other.keyword(),
            };
            format!("{n} {what}")
        })
        .collect();
    if l.routers > 0 {
        service.push(format!("{} router", l.routers));
    }
    let _ = writeln!(
        t,
        "# Left out: service nodes (SHARP aggregation, storage, management) and routers, which run no jobs: {}.",
        if service.is_empty() { "none".to_owned() } else { service.join(", ") }
    );
    let _ = writeln!(
        t,
        "# Left out: switches with no host listed below them (they lead only to service nodes, to nothing, or to hosts listed under another leaf) and switches outside the tree's levels (a host-less sub-tree hanging off it): {}.",
        if l.switches.is_empty() { "none".to_owned() } else { compress(&l.switches) }
    );
    if !l.unnamed.is_empty() {
        let guids: Vec<String> = l.unnamed.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            t,
            "# Left out: HCAs with no host name (give them one with --name-map): {}.",
            guids.join(",")
        );
    }
    if !l.unattached.is_empty() {
        let _ = writeln!(
            t,
            "# Left out: hosts cabled to no switch: {}.",
            compress(&l.unattached)
        );
    }
    let _ = writeln!(
        t,
        "# A host cabled to several leaf switches (several rails or ports) is listed under the leaf of its lowest port GUID only: {}.",
        match l.multi_leaf {
            0 => "none here".to_owned(),
            n => count(n, "host", "hosts"),
        }
    );
    if tree.fabrics.len() > 1 {
        let _ = writeln!(
            t,
            "# {} fabrics with no cable between them, one tree each: Slurm places a job within one.",
            tree.fabrics.len()
        );
    }
}

/// The comment line above one fabric's switches.
fn fabric_line(t: &mut String, tree: &SchedTree, i: usize, f: &TreeFabric) {
    let which = if tree.fabrics.len() > 1 {
        format!("fabric {} of {}: ", i + 1, tree.fabrics.len())
    } else {
        String::new()
    };
    let _ = writeln!(
        t,
        "# {which}{}, {}, {}",
        count(f.hosts, "host", "hosts"),
        count(
            f.switches.iter().filter(|s| s.node.is_some()).count(),
            "switch",
            "switches"
        ),
        count(usize::from(f.levels), "level", "levels")
    );
    for s in f
        .switches
        .iter()
        .filter(|s| s.node.is_none() && !s.hosts.is_empty())
    {
        let _ = writeln!(
            t,
            "# `{}` is not a real switch: it holds the hosts cabled straight to a switch that also has switches below it, which Slurm does not take on one line.",
            s.name
        );
    }
    if f.added_top {
        if let Some(top) = f
            .switches
            .iter()
            .find(|s| s.node.is_none() && s.hosts.is_empty())
        {
            let _ = writeln!(
                t,
                "# No switch reaches every leaf of this fabric: `{}` is not a real switch, it joins the topmost ones so that jobs may span them.",
                top.name
            );
        }
    }
}

/// `topology.conf` for `topology/tree`: one `SwitchName=` line per switch, top level first.
pub(crate) fn tree_conf(tree: &SchedTree, fabric: &str) -> String {
    let mut t = String::new();
    header(
        &mut t,
        tree,
        fabric,
        "Slurm topology.conf (TopologyPlugin=topology/tree)",
    );
    for (i, f) in tree.fabrics.iter().enumerate() {
        fabric_line(&mut t, tree, i, f);
        for s in &f.switches {
            if s.hosts.is_empty() {
                let _ = writeln!(
                    t,
                    "SwitchName={} Switches={}",
                    s.name,
                    compress(&s.children)
                );
            } else {
                let _ = writeln!(t, "SwitchName={} Nodes={}", s.name, compress(&s.hosts));
            }
        }
    }
    t
}

/// A YAML scalar: plain when it reads back as the same string, else double-quoted.
fn yaml(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && s.parse::<f64>().is_err()
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        s.to_owned()
    } else {
        let mut q = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                c if c.is_control() => {
                    let _ = write!(q, "\\u{:04x}", u32::from(c));
                }
                c => q.push(c),
            }
        }
        q.push('"');
        q
    }
}

/// `topology.yaml`: one tree topology, the cluster's default, with the same switches as
/// [`tree_conf`].
pub(crate) fn tree_yaml(tree: &SchedTree, fabric: &str) -> String {
    let mut t = String::new();
    header(
        &mut t,
        tree,
        fabric,
        "Slurm topology.yaml (a tree topology)",
    );
    let _ = writeln!(t, "- topology: {}", yaml(fabric));
    let _ = writeln!(t, "  cluster_default: true");
    let _ = writeln!(t, "  tree:");
    let _ = writeln!(t, "    switches:");
    for (i, f) in tree.fabrics.iter().enumerate() {
        let mut c = String::new();
        fabric_line(&mut c, tree, i, f);
        for line in c.lines() {
            let _ = writeln!(t, "      {line}");
        }
        for s in &f.switches {
            let _ = writeln!(t, "      - switch: {}", yaml(&s.name));
            if s.hosts.is_empty() {
                let _ = writeln!(t, "        children: {}", yaml(&compress(&s.children)));
            } else {
                let _ = writeln!(t, "        nodes: {}", yaml(&compress(&s.hosts)));
            }
        }
    }
    t
}
