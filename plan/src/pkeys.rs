//! P_Keys in plans: the declared partitions a plan carries (by GUID, so `weft apply` can
//! resolve them on the fabric it reads), and a plan's P_Key and VF writes as the checker of
//! `isolated` in every mix sees them ([`weft_verifier::partition_mix`]).

use crate::migrate;
use crate::PlanError;
use std::collections::BTreeMap;
use weft_fabric::{Lid, PKey, PortRef, ValidState, VirtualPort};
use weft_formats::plan::{Member, Plan, PlanPartition, PlanStep, SmPort, SmpWrite, PKEY_BLOCK};
use weft_verifier::partition_mix::{Declared, MixCheck, PkeyMix, PkeyWrite};

/// The partitions `st` declares, by GUID: each member port by its node's GUID and number,
/// each member VM by the port GUID of the VF it runs on (a VM on no VF is left out: it has no
/// port to be a member with).
pub fn plan_partitions(st: &ValidState) -> Vec<PlanPartition> {
    let f = &st.fabric;
    let vf_of: BTreeMap<&str, &weft_fabric::VirtualPort> = st
        .lids
        .vports
        .iter()
        .filter_map(|v| Some((v.vm.as_deref()?, v)))
        .collect();
    st.partitions
        .iter()
        .map(|p| {
            let mut members: Vec<Member> = p
                .members
                .iter()
                .map(|(r, &membership)| Member::Port {
                    node: f.node(r.node).guid(),
                    port: r.port.0,
                    membership,
                })
                .chain(p.vms.iter().filter_map(|(vm, &membership)| {
                    let v = vf_of.get(vm.as_str())?;
                    Some(Member::Vf {
                        host: f.node(v.host.node).guid(),
                        port: v.host.port.0,
                        vf: v.vf,
                        guid: v.guid,
                        membership,
                    })
                }))
                .collect();
            members.sort();
            PlanPartition {
                name: p.name.clone(),
                pkey: p.pkey,
                members,
            }
        })
        .collect()
}

/// The ports the SM runs on in `st`, by GUID.
pub fn plan_sm(st: &ValidState) -> Vec<SmPort> {
    st.sm
        .iter()
        .map(|r| SmPort {
            node: st.fabric.node(r.node).guid(),
            port: r.port.0,
        })
        .collect()
}

/// The partitions a plan declares, resolved on `st` (the state it starts from, as read off a
/// fabric): each member port by GUID and number, each VF by its port GUID among `st`'s VFs,
/// else (a fabric that does not show VF GUIDs) by its hypervisor port and index. A VF of a
/// hypervisor port behind which `st` has no VF at all (a fabric that addresses VFs in ways
/// weft does not read) is left out and counted; any other member `st` does not have is
/// named.
pub fn declared(plan: &Plan, st: &ValidState) -> Result<(Declared, usize), String> {
    let parts = &plan.partitions;
    let f = &st.fabric;
    let vfs: BTreeMap<weft_fabric::Guid, (PortRef, u8)> = st
        .lids
        .vports
        .iter()
        .map(|v| (v.guid, (v.host, v.vf)))
        .collect();
    let by_index: BTreeMap<(weft_fabric::Guid, u8, u8), (PortRef, u8)> = st
        .lids
        .vports
        .iter()
        .map(|v| {
            (
                (f.node(v.host.node).guid(), v.host.port.0, v.vf),
                (v.host, v.vf),
            )
        })
        .collect();
    let hosts: std::collections::BTreeSet<(weft_fabric::Guid, u8)> = st
        .lids
        .vports
        .iter()
        .map(|v| (f.node(v.host.node).guid(), v.host.port.0))
        .collect();
    let mut unseen = 0;
    let mut d = Declared::default();
    for (i, p) in parts.iter().enumerate() {
        d.partitions.push((p.name.clone(), p.pkey));
        for m in &p.members {
            let (end, membership) = match *m {
                Member::Port {
                    node,
                    port,
                    membership,
                } => {
                    let id = f
                        .find_guid(node)
                        .filter(|&id| {
                            let n = f.node(id);
                            !n.is_switch() && port >= 1 && port <= n.spec.port_count
                        })
                        .ok_or_else(|| {
                            format!(
                                "partition `{}` declares {node} port {port}, which is not an end \
                                 port of the fabric",
                                p.name
                            )
                        })?;
                    ((PortRef::new(id, port), None), membership)
                }
                Member::Vf {
                    host,
                    port,
                    vf,
                    guid,
                    membership,
                } => {
                    if !hosts.contains(&(host, port)) && !vfs.contains_key(&guid) {
                        unseen += 1;
                        continue;
                    }
                    let &(at, k) = vfs
                        .get(&guid)
                        .or_else(|| by_index.get(&(host, port, vf)))
                        .ok_or_else(|| {
                            format!(
                                "partition `{}` declares VF {vf} of {host} port {port} (port GUID \
                                 {guid}), which the fabric does not show",
                                p.name
                            )
                        })?;
                    ((at, Some(k)), membership)
                }
            };
            d.members.entry(end).or_default().push((i, membership));
        }
    }
    for m in d.members.values_mut() {
        m.sort_unstable();
    }
    for p in &plan.sm {
        let id = f
            .find_guid(p.node)
            .filter(|&id| {
                let n = f.node(id);
                if n.is_switch() {
                    p.port == 0
                } else {
                    p.port >= 1 && p.port <= n.spec.port_count
                }
            })
            .ok_or_else(|| {
                format!(
                    "the SM runs on {} port {}, which is not a port of the fabric",
                    p.node, p.port
                )
            })?;
        d.sm.insert((PortRef::new(id, p.port), None));
    }
    Ok((d, unseen))
}

/// The P_Key writes of one step as the checker sees them: each port block by its port, each
/// VF (by hypervisor port, then port GUID, else index) with its LID and table. A write to a
/// node `st` does not have, to a switch's ports (partition enforcement is not modelled), or
/// to a VF it does not have is named.
pub fn pkey_writes(st: &ValidState, writes: &[SmpWrite]) -> Result<Vec<PkeyWrite>, String> {
    let f = &st.fabric;
    let mut out = Vec::new();
    for w in writes {
        match w {
            SmpWrite::Lft { .. }
            | SmpWrite::Mft { .. }
            | SmpWrite::Sl2vl { .. }
            | SmpWrite::VlArb { .. } => {}
            SmpWrite::Pkeys {
                node,
                port,
                block,
                new,
                ..
            } => {
                let id = f.find_guid(*node).ok_or_else(|| {
                    format!("a P_Key write to {node}, which is not on the fabric")
                })?;
                let n = f.node(id);
                if n.is_switch() {
                    return Err(format!(
                        "a P_Key write to switch `{}` port {port}: switch partition enforcement \
                         is not modelled, so it cannot be proven",
                        n.name()
                    ));
                }
                if *port == 0 || *port > n.spec.port_count {
                    return Err(format!(
                        "a P_Key write to `{}` port {port}, which it does not have",
                        n.name()
                    ));
                }
                out.push(PkeyWrite::Port {
                    at: PortRef::new(id, *port),
                    block: *block,
                    new: new.clone(),
                });
            }
            SmpWrite::Vport {
                node,
                port,
                vf,
                guid,
                new_lid,
                new_pkeys,
                ..
            } => {
                let id = f
                    .find_guid(*node)
                    .ok_or_else(|| format!("a VF write to {node}, which is not on the fabric"))?;
                let at = PortRef::new(id, *port);
                let vs = &st.lids.vports;
                let v = vs
                    .iter()
                    .find(|v| v.host == at && v.guid == *guid)
                    .or_else(|| vs.iter().find(|v| v.host == at && v.vf == *vf))
                    .ok_or_else(|| {
                        format!(
                            "VF {vf} of `{}` port {port} is not a VF of the fabric as read",
                            f.node(id).name()
                        )
                    })?;
                out.push(PkeyWrite::Vf {
                    at: (v.host, v.vf),
                    lid: new_lid.map(Lid),
                    new: new_pkeys.clone(),
                });
            }
        }
    }
    Ok(out)
}
/// Proves `isolated` in every mix of `steps`' P_Key and VF writes from `start`, against the
/// partitions `end` declares (the last step also leaves tables isolated against them): one
/// check per step, or the first that is not proven as an error.
pub(crate) fn prove_pkeys(
    start: &ValidState,
    end: &ValidState,
    steps: &[PlanStep],
) -> Result<Vec<MixCheck>, PlanError> {
    let writes: Vec<Vec<weft_verifier::partition_mix::PkeyWrite>> = steps
        .iter()
        .map(|s| pkey_writes(start, &s.writes))
        .collect::<Result<_, _>>()
        .map_err(PlanError::Unproven)?;
    let mut mix = PkeyMix::new(start, Declared::of_state(end), &writes, None);
    let mut out = Vec::with_capacity(steps.len());
    for (i, w) in writes.iter().enumerate() {
        let mut c = mix.step(w);
        if i + 1 == writes.len() && c.outcome == weft_verifier::Outcome::Proven {
            let e = mix.end();
            if e.outcome == weft_verifier::Outcome::Violated {
                c = e;
            }
        }
        if c.outcome != weft_verifier::Outcome::Proven {
            let why = c
                .breach
                .as_ref()
                .map_or_else(|| "not isolated".to_owned(), |b| b.describe());
            return Err(PlanError::Unproven(format!(
                "step {} is not isolated in every mix: {why}",
                i + 1
            )));
        }
        out.push(c);
    }
    Ok(out)
}

/// P_Key table blocks that differ between the two states, in two steps: first every table
/// loses what the desired one does not have (keys gone, full memberships made limited), in
/// place; then it becomes the desired one. Any mix of landed writes in the first step lets only
/// pairs talk that the current tables let talk, in the second only pairs the desired ones do:
/// no pair that neither allows ever talks (a pair whose partition changes may be cut between
/// the steps). A port without a table holds the default key `0xffff`.
pub(crate) fn pkey_steps(old: &ValidState, new: &ValidState) -> (Vec<SmpWrite>, Vec<SmpWrite>) {
    let table = |s: &ValidState, r: &PortRef| -> Vec<u16> {
        s.ports.get(r).and_then(|p| p.pkeys.as_ref()).map_or_else(
            || vec![PKey::DEFAULT.0],
            |t| t.iter().map(|k: &PKey| k.0).collect(),
        )
    };
    let ports: std::collections::BTreeSet<PortRef> = old
        .ports
        .iter()
        .chain(&new.ports)
        .filter(|(_, p)| p.pkeys.is_some())
        .map(|(r, _)| *r)
        .collect();
    // What stays of each current entry: its key, limited unless full in both.
    let mid = |a: &[u16], b: &[u16]| -> Vec<u16> {
        a.iter()
            .map(|&k| {
                b.iter()
                    .find(|&&n| n & 0x7fff == k & 0x7fff)
                    .map_or(0, |&n| (k & 0x7fff) | (k & n & 0x8000))
            })
            .collect()
    };
    let (mut remove, mut add) = (Vec::new(), Vec::new());
    for r in ports {
        let (a, b) = (table(old, &r), table(new, &r));
        if a == b {
            continue;
        }
        let mid = mid(&a, &b);
        let guid = new.fabric.node(r.node).guid();
        remove.extend(blocks(guid, r.port.0, &a, &mid));
        add.extend(blocks(guid, r.port.0, &mid, &b));
    }
    // A VF's table is one block, written whole (with its LID, unchanged) by a `vport` write:
    // in the same two steps as the ports', so no mix lets it talk where neither table does.
    let desired: std::collections::BTreeMap<_, &VirtualPort> =
        new.lids.vports.iter().map(|w| (w.key(), w)).collect();
    for v in &old.lids.vports {
        let Some(&w) = desired.get(&v.key()) else {
            continue;
        };
        let (a, b) = (migrate::vf_pkeys(v), migrate::vf_pkeys(w));
        if v.lid != w.lid || a == b {
            continue;
        }
        let between = VirtualPort {
            pkeys: Some(mid(&a, &b).into_iter().map(PKey).collect()),
            ..v.clone()
        };
        if migrate::vf_pkeys(&between) != a {
            remove.push(migrate::vf_write(old, v, &between));
        }
        if migrate::vf_pkeys(&between) != b {
            add.push(migrate::vf_write(old, &between, w));
        }
    }
    (remove, add)
}

/// The 32-entry blocks in which table `a` and `b` differ, as writes from `a` to `b`.
pub(crate) fn blocks(node: weft_fabric::Guid, port: u8, a: &[u16], b: &[u16]) -> Vec<SmpWrite> {
    let n = a.len().max(b.len()).div_ceil(PKEY_BLOCK);
    (0..n)
        .filter_map(|k| {
            let cut = |t: &[u16]| -> Vec<u16> {
                (k * PKEY_BLOCK..(k + 1) * PKEY_BLOCK)
                    .map(|i| t.get(i).copied().unwrap_or(0))
                    .collect()
            };
            let (x, y) = (cut(a), cut(b));
            (x != y).then_some(SmpWrite::Pkeys {
                node,
                port,
                block: k as u16,
                old: x,
                new: y,
            })
        })
        .collect()
}
