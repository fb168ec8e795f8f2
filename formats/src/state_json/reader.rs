//! Reading a state file back: the JSON parsed into the shapes of [`super`], the fabric built
//! through [`FabricBuilder`], every GUID resolved, the fingerprint checked and the result
//! validated, every problem reported.

use super::*;

fn json_error(e: &serde_json::Error) -> StateError {
    StateError::Json {
        line: e.line(),
        column: e.column(),
        message: e
            .to_string()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// Reads a state file: parses it, builds the fabric through [`FabricBuilder`], resolves every
/// GUID, checks the fingerprint and validates the result. Every problem is reported.
pub fn read(text: &str) -> Result<ValidState, StateErrors> {
    let raw: StateJson = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            // Say "another version" rather than "missing field" when that is the cause.
            let header: Option<Header> = serde_json::from_str(text).ok();
            if let Some(h) = header {
                let known = matches!(h.version, Some(VERSION | VERSION_MULTICAST));
                if h.format.as_deref() != Some(FORMAT) || !known {
                    return Err(StateErrors(vec![StateError::Version {
                        format: h.format,
                        version: h.version,
                    }]));
                }
            }
            return Err(StateErrors(vec![json_error(&e)]));
        }
    };
    if raw.format != FORMAT || !matches!(raw.version, VERSION | VERSION_MULTICAST) {
        return Err(StateErrors(vec![StateError::Version {
            format: Some(raw.format),
            version: Some(raw.version),
        }]));
    }
    let mut errors = Vec::new();
    let state = build(raw.fabric, &mut errors).map(|fabric| {
        let mut st = FabricState::new(fabric);
        fill(
            &mut st,
            raw.lids,
            raw.switches,
            raw.ports,
            raw.path_sl,
            &mut errors,
        );
        partitions(&mut st, raw.partitions, &mut errors);
        vports(&mut st, raw.vports, &mut errors);
        st.max_vls = raw.max_vls;
        st.dftree_lanes = raw
            .dftree_lanes
            .iter()
            .map(|&(fast, slow)| (Sl(fast), Sl(slow)))
            .collect();
        if let Some(m) = raw.multicast {
            multicast(&mut st, m, &mut errors);
        }
        if raw.version == VERSION && version_of(&st) != VERSION {
            errors.push(StateError::Version {
                format: Some(FORMAT.to_owned()),
                version: Some(VERSION),
            });
        }
        for (i, (g, port)) in raw.sm.into_iter().enumerate() {
            match st.fabric.find_guid(g.0) {
                Some(n) => st.sm.push(PortRef::new(n, port)),
                None => errors.push(StateError::UnknownGuid {
                    at: format!("sm[{i}]"),
                    guid: g.0.to_string(),
                }),
            }
        }
        st
    });
    let Some(state) = state else {
        return Err(StateErrors(errors));
    };
    if let Some(recorded) = &raw.fingerprint {
        if errors.is_empty() {
            if let Err(m) = recorded.compare(&Fingerprint::of(&state)) {
                errors.push(StateError::Fingerprint {
                    reason: m.to_string(),
                });
            }
        }
    }
    match ValidState::new(state) {
        Ok(v) if errors.is_empty() => Ok(v),
        Ok(_) => Err(StateErrors(errors)),
        Err(StateErrors(more)) => {
            errors.extend(more);
            Err(StateErrors(errors))
        }
    }
}

fn build(raw: FabricJson, errors: &mut Vec<StateError>) -> Option<Fabric> {
    let mut b = FabricBuilder::new(raw.name);
    b.set_lmc(raw.lmc);
    let mut down = Vec::new();
    // GUIDs of nodes that could not be added: links to them are not reported again.
    let mut rejected: std::collections::BTreeSet<Guid> = std::collections::BTreeSet::new();
    let before = errors.len();
    for (i, n) in raw.nodes.into_iter().enumerate() {
        let at = format!("fabric.nodes[{i}] `{}`", n.name);
        let guid = n.guid.0;
        let spec = NodeSpec {
            name: n.name,
            kind: n.kind,
            guid: n.guid.0,
            system_guid: n.system_guid.map(|g| g.0),
            port_count: n.ports,
            port_guids: n.port_guids.map(|v| v.into_iter().map(|g| g.0).collect()),
            caps: PortCaps {
                speed: n.speed,
                width: n.width,
                vl_cap: n.vl_cap,
                mtu: n.mtu,
            },
            linear_fdb_cap: n.linear_fdb_cap,
            multicast_fdb_cap: n.multicast_fdb_cap,
            partition_cap: n.partition_cap,
            vendor_id: n.vendor_id,
            device_id: n.device_id,
            level: n.level,
            model: n.model,
            lid: n.lid.map(Lid),
            role: n.role,
            host: n.host,
            rail: n.rail,
        };
        match b.add_node(spec) {
            Ok(id) => {
                if n.down {
                    down.push(id);
                }
            }
            Err(e) => {
                rejected.insert(guid);
                errors.push(StateError::Fabric {
                    at,
                    message: e.to_string(),
                });
            }
        }
    }
    for (i, l) in raw.links.into_iter().enumerate() {
        let at = format!("fabric.links[{i}]");
        let mut end = |(g, p): (GuidHex, u8)| match b.fabric().find_guid(g.0) {
            Some(node) => Some(PortRef {
                node,
                port: PortNum(p),
            }),
            None if rejected.contains(&g.0) => None,
            None => {
                errors.push(StateError::UnknownGuid {
                    at: at.clone(),
                    guid: g.0.to_string(),
                });
                None
            }
        };
        let (Some(a), Some(bb)) = (end(l.a), end(l.b)) else {
            continue;
        };
        match b.add_link(a, bb) {
            Ok(id) => {
                b.set_link_rate(id, l.speed, l.width);
                if l.state == LinkState::Down {
                    b.set_link_down(id);
                }
            }
            Err(e) => errors.push(StateError::Fabric {
                at,
                message: e.to_string(),
            }),
        }
    }
    for id in down {
        b.set_node_down(id);
    }
    if let Err(e) = weft_fabric::machines::Machines::of(b.fabric()) {
        errors.push(StateError::Fabric {
            at: format!("fabric.nodes `{}`", b.fabric().node(e.node()).name()),
            message: e.to_string(),
        });
    }
    (errors.len() == before).then(|| b.finish())
}

fn fill(
    st: &mut FabricState,
    lids: Vec<(GuidHex, u8, u16)>,
    switches: Vec<SwitchJson<Lft>>,
    ports: Vec<PortJson>,
    path_sl: PathSlJson,
    errors: &mut Vec<StateError>,
) {
    let resolve = |g: GuidHex, at: String, errors: &mut Vec<StateError>| -> Option<NodeId> {
        let found = st.fabric.find_guid(g.0);
        if found.is_none() {
            errors.push(StateError::UnknownGuid {
                at,
                guid: g.0.to_string(),
            });
        }
        found
    };
    let mut base: BTreeMap<NodeId, BTreeMap<PortNum, Lid>> = BTreeMap::new();
    for (i, (g, p, lid)) in lids.into_iter().enumerate() {
        let at = format!("lids[{i}]");
        let Some(n) = resolve(g, at.clone(), errors) else {
            continue;
        };
        if base
            .entry(n)
            .or_default()
            .insert(PortNum(p), Lid(lid))
            .is_some()
        {
            errors.push(StateError::Fabric {
                at,
                message: format!("port {p} of {} has two LID entries", g.0),
            });
        }
    }
    st.lids.base = base;
    for (i, s) in switches.into_iter().enumerate() {
        let at = format!("switches[{i}]");
        let Some(n) = resolve(s.guid, at.clone(), errors) else {
            continue;
        };
        let table = SwitchState {
            lft: s.lft,
            sl2vl: s.sl2vl,
            sl2vl_all: s.sl2vl_all,
        };
        if st.switches.insert(n, table).is_some() {
            errors.push(StateError::Fabric {
                at,
                message: format!("{} has two switch tables", s.guid.0),
            });
        }
    }
    for (i, p) in ports.into_iter().enumerate() {
        let at = format!("ports[{i}]");
        let Some(n) = resolve(p.guid, at.clone(), errors) else {
            continue;
        };
        let table = PortState {
            sl2vl: p.sl2vl,
            vlarb: p.vlarb,
            pkeys: p.pkeys.map(|v| v.into_iter().map(|k| PKey(k.0)).collect()),
        };
        if st.ports.insert(PortRef::new(n, p.port), table).is_some() {
            errors.push(StateError::Fabric {
                at,
                message: format!("port {} of {} has two port tables", p.port, p.guid.0),
            });
        }
    }
    let mut psl = PathSl {
        default: path_sl.default.0,
        by_dlid: path_sl
            .by_dlid
            .into_iter()
            .map(|(lo, hi, s)| DlidSls {
                lids: LidRange {
                    lo: Lid(lo),
                    hi: Lid(hi),
                },
                sls: s.0,
            })
            .collect(),
        by_switch: Vec::new(),
        by_source: Vec::new(),
    };
    for (i, (g, lo, hi, s)) in path_sl.by_switch.into_iter().enumerate() {
        let Some(n) = resolve(g, format!("path_sl.by_switch[{i}]"), errors) else {
            continue;
        };
        psl.by_switch.push(SwitchSls {
            switch: n,
            lids: LidRange {
                lo: Lid(lo),
                hi: Lid(hi),
            },
            sls: s.0,
        });
    }
    for (i, (g, port, lo, hi, s)) in path_sl.by_source.into_iter().enumerate() {
        let Some(n) = resolve(g, format!("path_sl.by_source[{i}]"), errors) else {
            continue;
        };
        psl.by_source.push(SourceSls {
            src: PortRef::new(n, port),
            lids: LidRange {
                lo: Lid(lo),
                hi: Lid(hi),
            },
            sls: s.0,
        });
    }
    psl.sort();
    st.path_sl = psl;
}

/// Members given as (node GUID, port, value), resolved into a map: a GUID no node has is an
/// error at `at(j)` (`j` the member's index), a port listed twice the error `twice(at, port,
/// GUID)`.
fn members_of<V>(
    f: &Fabric,
    raw: Vec<(GuidHex, u8, V)>,
    at: impl Fn(usize) -> String,
    twice: impl Fn(String, u8, Guid) -> StateError,
    errors: &mut Vec<StateError>,
) -> BTreeMap<PortRef, V> {
    let mut members = BTreeMap::new();
    for (j, (g, port, v)) in raw.into_iter().enumerate() {
        let Some(n) = f.find_guid(g.0) else {
            errors.push(StateError::UnknownGuid {
                at: at(j),
                guid: g.0.to_string(),
            });
            continue;
        };
        if members.insert(PortRef::new(n, port), v).is_some() {
            errors.push(twice(at(j), port, g.0));
        }
    }
    members
}

fn partitions(st: &mut FabricState, raw: Vec<PartitionJson>, errors: &mut Vec<StateError>) {
    for (i, p) in raw.into_iter().enumerate() {
        let members = members_of(
            &st.fabric,
            p.members,
            |j| format!("partitions[{i}].members[{j}]"),
            |at, port, g| StateError::Fabric {
                at,
                message: format!(
                    "port {port} of {g} is listed twice in partition `{}`",
                    p.name
                ),
            },
            errors,
        );
        let class = p.class.map(|c| {
            let mut vls = 0u16;
            for v in c.vls {
                if v < 16 {
                    vls |= 1 << v;
                } else {
                    errors.push(StateError::Partition {
                        name: p.name.clone(),
                        what: format!("class `{}` names VL {v} (VLs are 0..=15)", c.name),
                    });
                }
            }
            TrafficClass {
                name: c.name,
                sls: c.sls.0,
                vls,
            }
        });
        let mut vms = BTreeMap::new();
        for (j, (vm, m)) in p.vms.into_iter().enumerate() {
            if vms.insert(vm, m).is_some() {
                errors.push(StateError::Partition {
                    name: p.name.clone(),
                    what: format!("VM entry {j} lists a VM twice"),
                });
            }
        }
        st.partitions.push(Partition {
            name: p.name,
            pkey: p.pkey.0,
            members,
            vms,
            class,
        });
    }
}

fn multicast(st: &mut FabricState, raw: MulticastJson, errors: &mut Vec<StateError>) {
    for (i, g) in raw.groups.into_iter().enumerate() {
        let Some(mlid) = Mlid::new(g.mlid.0) else {
            errors.push(StateError::McGroup {
                mlid: g.mlid.0,
                what: format!("multicast.groups[{i}]: not a multicast LID (0xc000..=0xfffe)"),
            });
            continue;
        };
        if g.sl > 15 {
            errors.push(StateError::McGroup {
                mlid: mlid.get(),
                what: format!(
                    "multicast.groups[{i}]: SL {} is out of range (0..=15)",
                    g.sl
                ),
            });
            continue;
        }
        let members = members_of(
            &st.fabric,
            g.members.into_iter().map(|(g, p, j)| (g, p, j.0)).collect(),
            |j| format!("multicast.groups[{i}].members[{j}]"),
            |at, port, g| StateError::McGroup {
                mlid: mlid.get(),
                what: format!("{at}: port {port} of {g} is listed twice"),
            },
            errors,
        );
        st.multicast.groups.push(McGroup {
            mlid,
            pkey: g.pkey.0,
            sl: Sl(g.sl),
            members,
        });
    }
    for (i, (guid, mlid, ports)) in raw.mfts.into_iter().enumerate() {
        let at = format!("multicast.mfts[{i}]");
        let Some(n) = st.fabric.find_guid(guid.0) else {
            errors.push(StateError::UnknownGuid {
                at,
                guid: guid.0.to_string(),
            });
            continue;
        };
        let node = st.fabric.node(n);
        let bad = |what: String| StateError::Mft {
            node: node.name().to_owned(),
            guid: guid.0.to_string(),
            mlid: Some(mlid.0),
            what: format!("{at}: {what}"),
        };
        let Some(m) = Mlid::new(mlid.0) else {
            errors.push(bad("not a multicast LID (0xc000..=0xfffe)".to_owned()));
            continue;
        };
        if ports.is_empty() {
            errors.push(bad("an entry without ports (leave it out)".to_owned()));
            continue;
        }
        let table = st.multicast.mfts.entry(n).or_default();
        if !table.get(m).is_empty() {
            errors.push(bad("is given twice".to_owned()));
            continue;
        }
        table.set(m, PortMask::of(ports.into_iter().map(PortNum)));
    }
}

fn vports(st: &mut FabricState, raw: Vec<VportJson>, errors: &mut Vec<StateError>) {
    for (i, v) in raw.into_iter().enumerate() {
        let Some(n) = st.fabric.find_guid(v.host.0 .0) else {
            errors.push(StateError::UnknownGuid {
                at: format!("vports[{i}].host"),
                guid: v.host.0 .0.to_string(),
            });
            continue;
        };
        st.lids.vports.push(weft_fabric::VirtualPort {
            host: PortRef::new(n, v.host.1),
            vf: v.vf,
            guid: v.guid.0,
            lid: v.lid.map(Lid),
            vm: v.vm,
            pkeys: v.pkeys.map(|t| t.into_iter().map(|k| PKey(k.0)).collect()),
        });
    }
    st.lids.vports.sort_by_key(|v| v.key());
}
