//! OpenSM's QoS policy (`qos-policy.conf`), under which its SA answers PathRecords with the
//! SLs weft chose.
//!
//! This writer stays in the compiler, unlike the other OpenSM files (written from the state
//! by `weft_fabric::opensm`): its match rules are the classes' `match { service_id = … }`
//! criteria and which class takes the unmatched traffic, and the state (`state.json`) records
//! SLs per path, not the classes or what traffic each one is.

use super::lanes::Pairs;
use super::LaneMap;
use crate::routing::Layers;
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
    use std::fmt::Write as _;
    let pairs = Pairs::new(state, map, layers);
    let f = &state.fabric;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# OpenSM QoS policy written by weft for fabric `{}`: with `opensm -Q -Y qos-policy.conf`\n\
         # the SA answers PathRecords with the SLs weft verified.",
        f.name
    );
    // Port groups: per switch, its port 0 and the end ports cabled to it.
    let group = |x: NodeId| format!("weft-{:016x}", f.node(x).guid().0);
    let mut members: std::collections::BTreeMap<NodeId, Vec<u64>> = Default::default();
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
            group(*x),
            f.node(*x).name(),
            list.join(", ")
        );
    }
    out.push_str("end-port-groups\n");
    let default_class = map
        .classes
        .iter()
        .position(|c| c.matches.is_empty())
        .unwrap_or(0);
    let usual = |c: usize| pairs.class_sls(c, None, 0).0;
    out.push_str("\nqos-levels\n");
    // A level per SL some class owns.
    let used = map
        .sl2vl
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != LaneMap::DROP)
        .fold(0u16, |m, (sl, _)| m | 1 << sl);
    let _ = write!(
        out,
        "    qos-level\n        name: DEFAULT\n        sl: {}\n    end-qos-level\n",
        usual(default_class).0
    );
    for sl in (0..16u8).filter(|s| used & (1 << s) != 0) {
        let _ = write!(
            out,
            "    qos-level\n        name: SL{sl}\n        sl: {sl}\n    end-qos-level\n"
        );
    }
    out.push_str("end-qos-levels\n\nqos-match-rules\n");
    // A tenant's traffic (on its P_Key) is its class's, before any other rule.
    for p in &state.partitions {
        let Some(c) = &p.class else { continue };
        if let Some(sl) = c.sls.iter().next() {
            let _ = write!(
                out,
                "    qos-match-rule\n        use: tenant {} (class {})\n        pkey: {:#06x}\n        qos-level-name: SL{}\n    end-qos-match-rule\n",
                p.name, c.name, p.pkey, sl.0
            );
        }
    }
    // Per destination switch: one LID of each port there (the SLs are by switch).
    let mut by_dst: std::collections::BTreeMap<NodeId, Vec<usize>> = Default::default();
    for (lid, o) in pairs.owners.iter().enumerate() {
        if let Some((n, p)) = o {
            if let Some(y) = state.source_switch(PortRef::new(*n, p.0)) {
                by_dst.entry(y).or_default().push(lid);
            }
        }
    }
    let order: Vec<usize> = (0..map.classes.len())
        .filter(|&c| c != default_class)
        .chain(std::iter::once(default_class))
        .collect();
    for c in order {
        let Some(class) = map.classes.get(c) else {
            continue;
        };
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
        let common = usual(c);
        if pairs.per_pair() {
            for &x in members.keys().filter(|&&x| pairs.varies_from(x)) {
                // Destination switches per SL other than the usual one.
                let mut by_sl: std::collections::BTreeMap<Sl, Vec<NodeId>> = Default::default();
                for (&y, lids) in &by_dst {
                    let mut sls = lids.iter().map(|&l| pairs.class_sls(c, Some(x), l).0);
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
                    let names: Vec<String> = ys.iter().map(|&y| group(y)).collect();
                    let _ = write!(
                        out,
                        "    qos-match-rule\n        use: class {} from {}\n{criteria}        source: {}\n        destination: {}\n        qos-level-name: SL{}\n    end-qos-match-rule\n",
                        class.name,
                        f.node(x).name(),
                        group(x),
                        names.join(", "),
                        sl.0
                    );
                    if out.len() > QOS_POLICY_BYTES {
                        return Err(PolicyError::TooLarge {
                            limit: QOS_POLICY_BYTES,
                        });
                    }
                }
            }
        }
        if !criteria.is_empty() {
            let _ = write!(
                out,
                "    qos-match-rule\n        use: class {}\n{criteria}        qos-level-name: SL{}\n    end-qos-match-rule\n",
                class.name,
                common.0
            );
        }
    }
    out.push_str("end-qos-match-rules\n");
    Ok(out)
}
