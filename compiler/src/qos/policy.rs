//! OpenSM's QoS policy (`qos-policy.conf`), under which its SA answers PathRecords with the
//! SLs weft chose.
//!
//! This writer stays in the compiler, unlike the other OpenSM files (written from the state
//! by `weft_formats::opensm`): its match rules are the classes' `match { service_id = … }`
//! criteria and which class takes the unmatched traffic, and the state (`state.json`) records
//! SLs per path, not the classes or what traffic each one is.

use super::lanes::Pairs;
use super::{ClassLanes, LaneMap};
use crate::routing::Layers;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_fabric::{FabricState, NodeId, PortRef, Sl};

/// The largest `qos-policy.conf` weft writes (bytes); past it OpenSM's parser would spend
/// longer than a sweep, and `state.json` holds every path SL anyway.
pub const QOS_POLICY_BYTES: usize = 64 << 20;

/// Why `qos-policy.conf` was not written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The file would exceed [`QOS_POLICY_BYTES`].
    #[error("it would exceed {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// A class's SL toward one destination switch's ports differs between them, which port
    /// groups by switch cannot say (no weft engine routes so).
    #[error("class `{class}` sends from `{from}` toward the ports at `{to}` on more than one SL")]
    Uneven {
        /// The class.
        class: String,
        /// The source switch.
        from: String,
        /// The destination switch.
        to: String,
    },
    /// The policy dFtree's moves go into is not one [`qos_policy`] wrote.
    #[error("the QoS policy to add dFtree's moves to is not one weft wrote: {0}")]
    Base(String),
    /// A moved flow's destination LID that no port of the state owns.
    #[error("dFtree moved a flow toward LID {lid}, which no port of the state owns")]
    NoLid {
        /// The LID.
        lid: u16,
    },
}

/// OpenSM's QoS policy (`opensm -Q -Y qos-policy.conf`) under which its SA answers every
/// PathRecord with the SL weft chose: a port group per switch (its port 0 and the end ports
/// cabled to it), a QoS level per SL used, and match rules — per class in declaration order
/// (its `match` criteria), per source switch whose SLs vary, the destination switches that
/// take each SL other than the class's usual one, then the class's usual SL. The first class
/// without `match` (else the first class) takes the rest, and its usual SL is `DEFAULT`.
/// dFtree answers the fast lane (hosts move flows to the slow one themselves).
pub fn qos_policy(
    state: &FabricState,
    map: &LaneMap,
    layers: Option<&Layers>,
) -> Result<String, PolicyError> {
    let pairs = Pairs::new(state, map, layers);
    let f = &state.fabric;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# OpenSM QoS policy written by weft for fabric `{}`: with `opensm -Q -Y qos-policy.conf`\n\
         # the SA answers PathRecords with the SLs weft verified.",
        use_text(&f.name)
    );
    let members = port_groups(&mut out, state);
    let default_class = map
        .classes
        .iter()
        .position(|c| c.matches.is_empty())
        .unwrap_or(0);
    qos_levels(&mut out, map, pairs.class_sls(default_class, None, 0).0);
    out.push_str("\nqos-match-rules\n");
    tenant_rules(&mut out, state);
    // Per destination switch: one LID of each port there (the SLs are by switch).
    let mut by_dst: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
    for (lid, o) in pairs.owners.iter().enumerate() {
        if let Some((n, p)) = o {
            if let Some(y) = state.source_switch(PortRef::new(*n, p.0)) {
                by_dst.entry(y).or_default().push(lid);
            }
        }
    }
    let order = (0..map.classes.len())
        .filter(|&c| c != default_class)
        .chain(std::iter::once(default_class));
    for c in order {
        let Some(class) = map.classes.get(c) else {
            continue;
        };
        let criteria = criteria(class);
        let common = pairs.class_sls(c, None, 0).0;
        if pairs.per_pair() {
            let sources = members.keys().copied().filter(|&x| pairs.varies_from(x));
            for x in sources {
                let rules = Rules {
                    state,
                    pairs: &pairs,
                    class: c,
                    lanes: class,
                    criteria: &criteria,
                };
                rules.write_from(&mut out, x, common, &by_dst)?;
            }
        }
        if !criteria.is_empty() {
            let _ = write!(
                out,
                "    qos-match-rule\n        use: class {}\n{criteria}        qos-level-name: SL{}\n    end-qos-match-rule\n",
                use_text(&class.name),
                common.0
            );
        }
    }
    out.push_str("end-qos-match-rules\n");
    Ok(out)
}

/// A switch's port group name.
fn group_name(state: &FabricState, x: NodeId) -> String {
    format!("weft-{:016x}", state.fabric.node(x).guid().0)
}

/// Writes the port groups: per switch, its port 0 and the end ports cabled to it (with the VFs
/// behind them); returns each switch's GUIDs.
fn port_groups(out: &mut String, state: &FabricState) -> BTreeMap<NodeId, Vec<u64>> {
    let f = &state.fabric;
    let mut members: BTreeMap<NodeId, Vec<u64>> = BTreeMap::new();
    for (&n, ports) in &state.lids.base {
        for &p in ports.keys() {
            let src = PortRef::new(n, p.0);
            let Some(x) = state.source_switch(src) else {
                continue;
            };
            let guid = f
                .node(n)
                .port(p)
                .map_or(f.node(n).guid().0, |port| port.guid.0);
            let group = members.entry(x).or_default();
            group.push(guid);
            // The VFs behind the port send from the same switch (their own GUIDs).
            group.extend(
                state
                    .lids
                    .vports
                    .iter()
                    .filter(|v| v.host == src)
                    .map(|v| v.guid.0),
            );
        }
    }
    out.push_str("\nport-groups\n");
    for (x, guids) in &mut members {
        guids.sort_unstable();
        guids.dedup();
        let list: Vec<String> = guids.iter().map(|g| format!("{g:#018x}")).collect();
        let _ = write!(
            out,
            "    port-group\n        name: {}\n        use: {}\n        port-guid: {}\n    end-port-group\n",
            group_name(state, *x),
            use_text(f.node(*x).name()),
            list.join(", ")
        );
    }
    out.push_str("end-port-groups\n");
    members
}

/// Writes the QoS levels: `DEFAULT` on the default class's usual SL, and one per SL some class
/// owns.
fn qos_levels(out: &mut String, map: &LaneMap, default_sl: Sl) {
    out.push_str("\nqos-levels\n");
    let used = map
        .sl2vl
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != LaneMap::DROP)
        .fold(0u16, |m, (sl, _)| m | 1 << sl);
    let _ = write!(
        out,
        "    qos-level\n        name: DEFAULT\n        sl: {}\n    end-qos-level\n",
        default_sl.0
    );
    for sl in (0..16u8).filter(|s| used & (1 << s) != 0) {
        let _ = write!(
            out,
            "    qos-level\n        name: SL{sl}\n        sl: {sl}\n    end-qos-level\n"
        );
    }
    out.push_str("end-qos-levels\n");
}

/// Writes the tenants' rules: a tenant's traffic (on its P_Key) is its class's, before any
/// other rule.
fn tenant_rules(out: &mut String, state: &FabricState) {
    for p in &state.partitions {
        let Some(c) = &p.class else { continue };
        if let Some(sl) = c.sls.iter().next() {
            let _ = write!(
                out,
                "    qos-match-rule\n        use: tenant {} (class {})\n        pkey: {:#06x}\n        qos-level-name: SL{}\n    end-qos-match-rule\n",
                use_text(&p.name),
                use_text(&c.name),
                p.pkey,
                sl.0
            );
        }
    }
}

/// A class's `match` criteria as rule lines (its service IDs), empty when it has none.
fn criteria(class: &ClassLanes) -> String {
    let mut criteria = String::new();
    if !class.matches.service_ids.is_empty() {
        let ids: Vec<String> = class
            .matches
            .service_ids
            .iter()
            .map(|r| {
                if r.first == r.last {
                    format!("{:#x}", r.first)
                } else {
                    format!("{:#x}-{:#x}", r.first, r.last)
                }
            })
            .collect();
        let _ = writeln!(criteria, "        service-id: {}", ids.join(", "));
    }
    criteria
}

/// One class's per-source rules.
struct Rules<'a> {
    state: &'a FabricState,
    pairs: &'a Pairs<'a>,
    class: usize,
    lanes: &'a ClassLanes,
    criteria: &'a str,
}

impl Rules<'_> {
    /// Writes the rules from source switch `x`: per SL other than `common`, the destination
    /// switches that take it (every LID at a switch must take the same SL).
    fn write_from(
        &self,
        out: &mut String,
        x: NodeId,
        common: Sl,
        by_dst: &BTreeMap<NodeId, Vec<usize>>,
    ) -> Result<(), PolicyError> {
        let f = &self.state.fabric;
        let class = self.lanes;
        let mut by_sl: BTreeMap<Sl, Vec<NodeId>> = BTreeMap::new();
        for (&y, lids) in by_dst {
            let mut sls = lids
                .iter()
                .map(|&l| self.pairs.class_sls(self.class, Some(x), l).0);
            let Some(first) = sls.next() else { continue };
            if sls.any(|s| s != first) {
                return Err(PolicyError::Uneven {
                    class: class.name.clone(),
                    from: f.node(x).name().to_owned(),
                    to: f.node(y).name().to_owned(),
                });
            }
            if first != common {
                by_sl.entry(first).or_default().push(y);
            }
        }
        for (sl, ys) in by_sl {
            let names: Vec<String> = ys.iter().map(|&y| group_name(self.state, y)).collect();
            let _ = write!(
                out,
                "    qos-match-rule\n        use: class {} from {}\n{}        source: {}\n        destination: {}\n        qos-level-name: SL{}\n    end-qos-match-rule\n",
                use_text(&class.name),
                use_text(f.node(x).name()),
                self.criteria,
                group_name(self.state, x),
                names.join(", "),
                sl.0
            );
            if out.len() > QOS_POLICY_BYTES {
                return Err(PolicyError::TooLarge {
                    limit: QOS_POLICY_BYTES,
                });
            }
        }
        Ok(())
    }
}

/// A flow dFtree moved to its slow lane: every QP of a source port toward a destination LID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlowFlow {
    /// The source's port GUID (what OpenSM's port groups match).
    pub src_port_guid: u64,
    /// The destination LID.
    pub dst_lid: u16,
    /// The SL the SA answers for the pair without the move (its fast lane).
    pub fast_sl: u8,
    /// The SL it answers with the move (its slow lane).
    pub slow_sl: u8,
}

/// The port GUID that owns `lid` in `state` (a VF's own GUID for a VF's LID).
pub fn lid_port_guid(state: &FabricState, lid: u16) -> Option<u64> {
    if let Some(v) = state
        .lids
        .vports
        .iter()
        .find(|v| v.lid.is_some_and(|l| l.0 == lid))
    {
        return Some(v.guid.0);
    }
    let f = &state.fabric;
    let (n, p) = state
        .lids
        .owners(f)
        .get(usize::from(lid))
        .copied()
        .flatten()?;
    let node = f.nodes().get(n.index())?;
    Some(node.port(p).map_or(node.guid().0, |port| port.guid.0))
}

/// One match rule of a policy's text: its lines, and the SL its level names (`SLn`).
struct Rule {
    text: String,
    sl: Option<u8>,
}

/// `text` split around a line that is `keyword` alone (surrounding blanks aside): the text
/// before that line and the text after it, at the first such line (the last with `last`). A
/// name that merely contains the keyword (a switch called `leaf-end-port-groups`) is no
/// section line.
fn section<'a>(text: &'a str, keyword: &str, last: bool) -> Option<(&'a str, &'a str)> {
    let mut at = 0;
    let mut found = None;
    for line in text.split_inclusive('\n') {
        if line.trim() == keyword {
            found = Some((at, at + line.len()));
            if !last {
                break;
            }
        }
        at += line.len();
    }
    let (start, end) = found?;
    Some((text.get(..start)?, text.get(end..)?))
}

/// `base` (a `qos-policy.conf` [`qos_policy`] wrote) with dFtree's slow flows: a port group
/// per destination LID (`weft-dftree-dst-<lid>`: its port) and per destination and slow SL
/// (`weft-dftree-src-<lid>-sl<sl>`: the sources moved toward it), and for each such group a
/// copy of every match rule that answers the pair's fast SL — its criteria kept, its source
/// and destination replaced by the groups, its level the slow SL — just before the rule it
/// copies (OpenSM takes the first rule that matches); when the `DEFAULT` level is the fast SL
/// (unmatched traffic), one more without criteria after every other rule. With no flows,
/// `base` unchanged. Same flows in any order, same text.
pub fn with_slow_flows(
    base: &str,
    state: &FabricState,
    flows: &[SlowFlow],
) -> Result<String, PolicyError> {
    use std::collections::{BTreeMap, BTreeSet};
    use std::fmt::Write as _;
    if flows.is_empty() {
        return Ok(base.to_owned());
    }
    let bad = |why: &str| PolicyError::Base(why.to_owned());
    // (destination LID, fast SL, slow SL) → sources.
    let mut groups: BTreeMap<(u16, u8, u8), BTreeSet<u64>> = BTreeMap::new();
    for fl in flows {
        groups
            .entry((fl.dst_lid, fl.fast_sl, fl.slow_sl))
            .or_default()
            .insert(fl.src_port_guid);
    }
    let dsts: BTreeSet<u16> = groups.keys().map(|k| k.0).collect();
    let src_group = |lid: u16, slow: u8| format!("weft-dftree-src-{lid}-sl{slow}");
    let dst_group = |lid: u16| format!("weft-dftree-dst-{lid}");
    // Port groups, before the base's end.
    let (head, rest) = section(base, "end-port-groups", false)
        .ok_or_else(|| bad("it has no `end-port-groups`"))?;
    let mut out = head.to_owned();
    for &lid in &dsts {
        let guid = lid_port_guid(state, lid).ok_or(PolicyError::NoLid { lid })?;
        let _ = write!(
            out,
            "    port-group\n        name: {}\n        use: dFtree hot-spot LID {lid}\n        port-guid: {guid:#018x}\n    end-port-group\n",
            dst_group(lid)
        );
    }
    let mut named: BTreeSet<(u16, u8)> = BTreeSet::new();
    for (lid, _, slow) in groups.keys() {
        // Two fast SLs toward one LID with one slow SL share a group: the union of sources.
        if !named.insert((*lid, *slow)) {
            continue;
        }
        let all: BTreeSet<u64> = groups
            .iter()
            .filter(|((l, _, s), _)| l == lid && s == slow)
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        let list: Vec<String> = all.iter().map(|g| format!("{g:#018x}")).collect();
        let _ = write!(
            out,
            "    port-group\n        name: {}\n        use: dFtree contributors toward LID {lid} (slow lane SL{slow})\n        port-guid: {}\n    end-port-group\n",
            src_group(*lid, *slow),
            list.join(", ")
        );
    }
    out.push_str("end-port-groups\n");
    // Levels: the DEFAULT level's SL, and a level per slow SL (added if missing).
    let (levels, rules_part) = section(rest, "qos-match-rules", false)
        .ok_or_else(|| bad("it has no `qos-match-rules`"))?;
    let default_sl: Option<u8> = levels
        .split("qos-level\n")
        .find(|b| b.contains("name: DEFAULT\n"))
        .and_then(|b| b.lines().find_map(|l| l.trim().strip_prefix("sl: ")))
        .and_then(|s| s.trim().parse().ok());
    let (levels_head, levels_tail) =
        section(levels, "end-qos-levels", true).ok_or_else(|| bad("it has no `end-qos-levels`"))?;
    out.push_str(levels_head);
    let slows: BTreeSet<u8> = groups.keys().map(|k| k.2).collect();
    for sl in slows {
        if !levels_head.contains(&format!("        name: SL{sl}\n")) {
            let _ = write!(
                out,
                "    qos-level\n        name: SL{sl}\n        sl: {sl}\n    end-qos-level\n"
            );
        }
    }
    out.push_str("end-qos-levels\n");
    out.push_str(levels_tail);
    out.push_str("qos-match-rules\n");
    let (rules_text, tail) = section(rules_part, "end-qos-match-rules", true)
        .ok_or_else(|| bad("it has no `end-qos-match-rules`"))?;
    let mut rules: Vec<Rule> = Vec::new();
    let mut block = String::new();
    for line in rules_text.split_inclusive('\n') {
        block.push_str(line);
        if line.trim() != "end-qos-match-rule" {
            continue;
        }
        let sl = block
            .lines()
            .find_map(|l| l.trim().strip_prefix("qos-level-name: SL"))
            .and_then(|s| s.trim().parse().ok());
        rules.push(Rule {
            text: std::mem::take(&mut block),
            sl,
        });
    }
    if !block.trim().is_empty() {
        rules.push(Rule {
            text: block,
            sl: None,
        });
    }
    // A copy of `rule` (its criteria) for a group, or the bare rule when `rule` is `None`.
    let copy = |rule: Option<&Rule>, (lid, fast, slow): (u16, u8, u8)| -> String {
        let mut s = format!(
            "    qos-match-rule\n        use: dFtree slow lane toward LID {lid} (SL{fast} to SL{slow})\n"
        );
        if let Some(r) = rule {
            for l in r.text.lines() {
                let t = l.trim();
                if ["service-id:", "pkey:", "qos-class:"]
                    .iter()
                    .any(|k| t.starts_with(k))
                {
                    let _ = writeln!(s, "        {t}");
                }
            }
        }
        let _ = write!(
            s,
            "        source: {}\n        destination: {}\n        qos-level-name: SL{slow}\n    end-qos-match-rule\n",
            src_group(lid, slow),
            dst_group(lid)
        );
        s
    };
    for r in &rules {
        for &(lid, fast, slow) in groups.keys() {
            if r.sl == Some(fast) {
                out.push_str(&copy(Some(r), (lid, fast, slow)));
            }
        }
        out.push_str(&r.text);
        if out.len() > QOS_POLICY_BYTES {
            return Err(PolicyError::TooLarge {
                limit: QOS_POLICY_BYTES,
            });
        }
    }
    for &(lid, fast, slow) in groups.keys() {
        if default_sl == Some(fast) {
            out.push_str(&copy(None, (lid, fast, slow)));
        }
    }
    out.push_str("end-qos-match-rules\n");
    out.push_str(tail);
    Ok(out)
}

/// A name as the text of a `use:` line, which OpenSM reads as one line of description: what
/// could end the line, start a comment or a quoted string, or read as a keyword's `:` (line
/// ends, `#`, quotes, backslashes, `:`, other controls) becomes `_`, so no name can add a
/// line or a rule of its own. The group's `name:` (from the GUID) is what rules refer to.
fn use_text(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '#' | '"' | '\'' | '\\' | ':' | '`') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod use_text_tests {
    use super::use_text;

    #[test]
    fn a_name_cannot_add_a_line_or_a_comment_to_the_policy() {
        assert_eq!(use_text("cn001 HCA-1"), "cn001 HCA-1");
        assert_eq!(
            use_text("a\n    end-port-group\r\n# x \"q\" y:z"),
            "a_    end-port-group___ x _q_ y_z"
        );
        assert_eq!(use_text("tab\there\u{85}\u{0}"), "tab_here__");
    }
}
