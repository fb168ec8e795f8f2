//! Slurm's topology files from the scheduler tree ([`weft_formats::sched_tree`]):
//! `topology.conf` for the `topology/tree` plugin, and `topology.yaml`'s tree topology.

use std::fmt::Write as _;
use weft_fabric::Role;
use weft_formats::hostlist::compress;
use weft_formats::sched_tree::{SchedTree, TreeFabric};

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
        "# {what} for fabric `{}`, written by `weft export`.",
        comment(fabric)
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
        if l.switches.is_empty() { "none".to_owned() } else { comment(&compress(&l.switches)) }
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
            comment(&compress(&l.unattached))
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

/// `s` in a `#` comment line: control characters (a line break would end the comment) as
/// spaces.
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A switch or host name Slurm reads back as written, only ever made by [`slurm_name`].
struct Name<'a>(&'a str);

impl std::fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// `s` as a Slurm switch or host name, or why Slurm could not read it back: whitespace and
/// control characters end a `key=value` (or a line), `#` starts a comment, `=` splits a pair,
/// `[`, `]` and `,` are host-list syntax (`a[1-3],b` is four hosts), quotes and `\` are
/// Slurm's own quoting.
fn slurm_name(s: &str) -> Result<Name<'_>, String> {
    let bad = s
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "#=[],\"'\\".contains(*c));
    match bad {
        _ if s.is_empty() => Err("an empty name cannot be written for Slurm".to_owned()),
        Some(c) => Err(format!(
            "{s:?} cannot be written for Slurm: it holds {c:?}, which Slurm's topology files and host lists read as syntax; give the host another name with --name-map or rename the node"
        )),
        None => Ok(Name(s)),
    }
}

/// Every switch, child and host name of `tree` as Slurm names, or the first refusal.
fn check_names(tree: &SchedTree) -> Result<(), String> {
    for s in tree.fabrics.iter().flat_map(|f| &f.switches) {
        slurm_name(&s.name)?;
        for h in s.hosts.iter().chain(&s.children) {
            slurm_name(h)?;
        }
    }
    Ok(())
}

/// A host list of names checked by [`check_names`], compressed.
fn list(names: &[String]) -> Result<String, String> {
    for n in names {
        slurm_name(n)?;
    }
    Ok(compress(names))
}

/// `topology.conf` for `topology/tree`: one `SwitchName=` line per switch, top level first.
/// A name Slurm would read otherwise is refused.
pub(crate) fn tree_conf(tree: &SchedTree, fabric: &str) -> Result<String, String> {
    check_names(tree)?;
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
            let name = slurm_name(&s.name)?;
            if s.hosts.is_empty() {
                let _ = writeln!(t, "SwitchName={name} Switches={}", list(&s.children)?);
            } else {
                let _ = writeln!(t, "SwitchName={name} Nodes={}", list(&s.hosts)?);
            }
        }
    }
    Ok(t)
}

/// A YAML scalar, only ever made by [`yaml`].
struct Yaml(String);

impl std::fmt::Display for Yaml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A YAML scalar that YAML 1.1 and 1.2 parsers read back as the string `s`: plain only when
/// it starts with a letter, holds nothing but letters, digits and `_.,-[]`, and is none of
/// YAML 1.1's booleans and nulls (so no number, date, sexagesimal `1:20`, `~` or `0x10`);
/// else double-quoted, `"` and `\` escaped, control and non-characters as `\uXXXX`.
fn yaml(s: &str) -> Yaml {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.,-[]".contains(c))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        return Yaml(s.to_owned());
    }
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() || matches!(c, '\u{fffe}' | '\u{ffff}' | '\u{feff}') => {
                let _ = write!(q, "\\u{:04x}", u32::from(c));
            }
            c => q.push(c),
        }
    }
    q.push('"');
    Yaml(q)
}

/// `topology.yaml`: one tree topology, the cluster's default, with the same switches as
/// [`tree_conf`].
pub(crate) fn tree_yaml(tree: &SchedTree, fabric: &str) -> Result<String, String> {
    check_names(tree)?;
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
            let _ = writeln!(t, "      - switch: {}", yaml(slurm_name(&s.name)?.0));
            if s.hosts.is_empty() {
                let _ = writeln!(t, "        children: {}", yaml(&list(&s.children)?));
            } else {
                let _ = writeln!(t, "        nodes: {}", yaml(&list(&s.hosts)?));
            }
        }
    }
    Ok(t)
}
