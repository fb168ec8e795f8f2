//! OpenSM's configuration file, `opensm.conf`: its QoS lines ([`QosConf`], the tables of a
//! state or of the compiler's lane map; [`write_qos_conf`], what `weft build` writes for
//! `opensm -Q -F opensm.conf`; [`parse_qos_conf`], its reader), and the reader and merger the
//! `opensm` hand-off uses to put those lines into a site's configuration ([`conf_values`],
//! [`merge_conf`]).
//!
//! Format (opensm(8), `osm_subnet.c`): one `key value` pair per line, `#` comments; OpenSM
//! takes the first word after the key and the last line of a key wins. The QoS keys:
//! `qos`, `qos_max_vls`, `qos_high_limit`, `qos_vlarb_high`/`qos_vlarb_low` (`VL:weight`
//! entries, comma-separated), `qos_sl2vl` (16 VLs, one per SL), and `max_op_vls` (the
//! PortInfo:OperationalVLs code OpenSM sets on every link).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_fabric::{FabricState, NodeId, PortRef, Sl, Vl, VlArb, VlWeight};

/// One QoS class, for the comment `opensm.conf` gives it: the state records the SL→VL map
/// and the arbitration tables, not the classes they were made from, so the compiler says
/// which class holds which SLs and VLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfClass {
    /// The class's name in the description (`default` for the implicit class).
    pub name: String,
    /// Its first SL; it holds `width` consecutive SLs.
    pub first_sl: Sl,
    /// Its first VL; it holds `width` consecutive VLs.
    pub first_vl: Vl,
    /// How many SLs (and VLs) it holds: its lanes times the routing's layers (at least 1).
    pub width: u8,
    /// Whether its VLs are in the high-priority arbitration table.
    pub high: bool,
    /// Its arbitration weight, for the class as a whole.
    pub weight: u8,
}

/// Why a state's QoS cannot be written as `opensm.conf`, which gives every port one SL→VL map
/// and one pair of arbitration tables.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfError {
    /// No switch or end port has an SL→VL table: the state runs without QoS.
    #[error("the state has no SL→VL tables (a fabric without QoS needs no opensm.conf)")]
    NoSl2Vl,
    /// A switch maps SLs to VLs per (input, output) port pair.
    #[error(
        "`{switch}` maps SLs to VLs per port pair; opensm.conf gives every port one SL→VL map"
    )]
    PortPairs {
        /// The switch.
        switch: String,
    },
    /// Two ports map SLs to VLs differently.
    #[error("`{at}` maps SLs to VLs unlike `{first}`; opensm.conf gives every port one SL→VL map")]
    UnevenSl2Vl {
        /// The port (or switch) whose table the others are compared with.
        first: String,
        /// The first port (or switch) that differs.
        at: String,
    },
    /// Two ports have different VL arbitration tables.
    #[error(
        "`{at}` arbitrates VLs unlike `{first}`; opensm.conf gives every port one VL arbitration"
    )]
    UnevenVlArb {
        /// The port whose tables the others are compared with.
        first: String,
        /// The first port that differs.
        at: String,
    },
    /// The state does not say how many data VLs the SM operates.
    #[error(
        "the state sets no `max_vls`, which opensm.conf's `qos_max_vls` and `max_op_vls` need"
    )]
    NoMaxVls,
}

/// The QoS tables `opensm.conf` gives every port: what [`write_qos_conf`] writes and
/// [`parse_qos_conf`] reads back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QosConf {
    /// The SL→VL map of every port (`qos_sl2vl`: entry `i` is SL `i`'s VL).
    pub sl2vl: [u8; 16],
    /// The VL arbitration of every port (`qos_high_limit`, `qos_vlarb_high`,
    /// `qos_vlarb_low`; entries of weight 0 are not written, OpenSM skips them).
    pub vlarb: VlArb,
    /// The data VLs the SM operates (`qos_max_vls`; `max_op_vls` is its PortInfo code).
    pub max_vls: u8,
}

impl QosConf {
    /// The tables of `state`, when every port shares one SL→VL map (a switch's one map for
    /// all its port pairs; a switch without tables maps every SL to VL 0) and every port
    /// that arbitrates VLs shares one arbitration (none: empty tables): the only states
    /// `opensm.conf` can say.
    pub fn of_state(state: &FabricState) -> Result<QosConf, ConfError> {
        Ok(QosConf {
            sl2vl: common_sl2vl(state)?,
            vlarb: common_vlarb(state)?,
            max_vls: state.max_vls.ok_or(ConfError::NoMaxVls)?,
        })
    }
}

/// OpenSM's QoS configuration (`opensm -Q -F opensm.conf`) for fabric `fabric`: a comment
/// per class of `classes`, then `conf`'s SL→VL table, its VL arbitration tables (`0:0`, an
/// entry OpenSM skips, for an empty table), the high-priority limit, and the operational VLs
/// to enable (`max_op_vls` — what OpenSM sets PortInfo:OperationalVLs from — and
/// `qos_max_vls`).
pub fn write_qos_conf(fabric: &str, conf: &QosConf, classes: &[ConfClass]) -> String {
    let list = |t: &[VlWeight]| -> String {
        let t: Vec<String> = t
            .iter()
            .filter(|w| w.weight > 0)
            .map(|w| format!("{}:{}", w.vl, w.weight))
            .collect();
        if t.is_empty() {
            // An entry of weight 0 is skipped: an empty table.
            return "0:0".to_owned();
        }
        t.join(",")
    };
    let mut out = format!(
        "# OpenSM QoS settings written by weft for fabric `{fabric}`; load with\n\
         # `opensm -Q -F opensm.conf` (SL→VL and VL arbitration are the same on every port).\n"
    );
    for c in classes {
        let last = |first: u8| first.saturating_add(c.width.max(1) - 1);
        let _ = writeln!(
            out,
            "# class `{}`: SL {}..={} on VL {}..={}, {} priority, weight {}",
            c.name,
            c.first_sl.0,
            last(c.first_sl.0),
            c.first_vl.0,
            last(c.first_vl.0),
            if c.high { "high" } else { "low" },
            c.weight
        );
    }
    out.push_str("qos TRUE\n");
    // `qos_max_vls` is documentation to OpenSM's core (only torus-2QoS reads it);
    // `max_op_vls` is what limits the operational VLs it sets on every link.
    let _ = writeln!(out, "max_op_vls {}", op_vls_code(conf.max_vls));
    let _ = writeln!(out, "qos_max_vls {}", conf.max_vls);
    let _ = writeln!(out, "qos_high_limit {}", conf.vlarb.high_limit);
    let _ = writeln!(out, "qos_vlarb_high {}", list(&conf.vlarb.high));
    let _ = writeln!(out, "qos_vlarb_low {}", list(&conf.vlarb.low));
    let sl2vl: Vec<String> = conf.sl2vl.iter().map(u8::to_string).collect();
    let _ = writeln!(out, "qos_sl2vl {}", sl2vl.join(","));
    out
}

/// Why the QoS lines of an `opensm.conf` cannot be read as one [`QosConf`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfParseError {
    /// QoS is not turned on (`qos TRUE`), so OpenSM ignores the tables.
    #[error("`qos` is not TRUE: OpenSM ignores the QoS tables")]
    QosOff,
    /// A key the tables need is missing.
    #[error("`{key}` is missing")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A value is not what its key takes.
    #[error("`{key} {value}`: {why}")]
    Value {
        /// The key.
        key: &'static str,
        /// The value as written.
        value: String,
        /// What the key takes.
        why: &'static str,
    },
}

/// The QoS tables of an OpenSM configuration, read as OpenSM reads them ([`conf_values`]:
/// the last line of a key wins, its value is the first word): `qos TRUE`, `qos_max_vls`
/// (1..=15), `qos_high_limit`, `qos_vlarb_high`/`qos_vlarb_low` (`VL:weight` lists, VLs
/// 0..=14, entries of weight 0 dropped) and `qos_sl2vl` (16 VLs, 0..=15). `max_op_vls`
/// must be the code of `qos_max_vls`, as [`write_qos_conf`] writes it.
pub fn parse_qos_conf(text: &str) -> Result<QosConf, ConfParseError> {
    let values = conf_values(text);
    let get = |key: &'static str| {
        values
            .get(key)
            .map(|v| (key, v.as_str()))
            .ok_or(ConfParseError::Missing { key })
    };
    let bad = |(key, value): (&'static str, &str), why| ConfParseError::Value {
        key,
        value: value.to_owned(),
        why,
    };
    if !get("qos")?.1.eq_ignore_ascii_case("TRUE") {
        return Err(ConfParseError::QosOff);
    }
    let kv = get("qos_max_vls")?;
    let max_vls =
        kv.1.parse::<u8>()
            .ok()
            .filter(|n| (1..=15).contains(n))
            .ok_or_else(|| bad(kv, "a number of data VLs, 1..=15"))?;
    let kv = get("max_op_vls")?;
    if kv.1.parse::<u8>().ok() != Some(op_vls_code(max_vls)) {
        return Err(bad(kv, "the PortInfo:OperationalVLs code of `qos_max_vls`"));
    }
    let kv = get("qos_high_limit")?;
    let high_limit = kv.1.parse::<u8>().map_err(|_| bad(kv, "0..=255"))?;
    let table = |key: &'static str| -> Result<Vec<VlWeight>, ConfParseError> {
        let kv = get(key)?;
        let why = "`VL:weight` entries (VL 0..=14, weight 0..=255), comma-separated";
        let mut out = Vec::new();
        for entry in kv.1.split(',') {
            let (vl, weight) = entry.split_once(':').ok_or_else(|| bad(kv, why))?;
            let vl = vl.parse::<u8>().ok().filter(|v| *v < 15);
            let weight = weight.parse::<u8>().ok();
            let (Some(vl), Some(weight)) = (vl, weight) else {
                return Err(bad(kv, why));
            };
            if weight > 0 {
                out.push(VlWeight { vl, weight });
            }
        }
        Ok(out)
    };
    let (high, low) = (table("qos_vlarb_high")?, table("qos_vlarb_low")?);
    let kv = get("qos_sl2vl")?;
    let vls: Vec<u8> =
        kv.1.split(',')
            .map(|v| v.parse::<u8>().ok().filter(|v| *v <= 15))
            .collect::<Option<_>>()
            .ok_or_else(|| bad(kv, "16 VLs (0..=15), comma-separated"))?;
    let sl2vl: [u8; 16] = vls
        .try_into()
        .map_err(|_| bad(kv, "16 VLs (0..=15), comma-separated"))?;
    Ok(QosConf {
        sl2vl,
        vlarb: VlArb {
            high_limit,
            high,
            low,
        },
        max_vls,
    })
}

/// The SL→VL map every switch (one map for all its port pairs; a switch without tables maps
/// every SL to VL 0) and every end port with a table shares.
fn common_sl2vl(state: &FabricState) -> Result<[u8; 16], ConfError> {
    let f = &state.fabric;
    let switch = |id: NodeId| f.node(id).name().to_owned();
    let mut tables: Vec<(String, Option<[u8; 16]>)> = Vec::new();
    for (&id, sw) in &state.switches {
        // Rows per (input, output) pair are more than one map says.
        let table = match (&sw.sl2vl_all, sw.sl2vl.is_empty()) {
            (Some(t), true) => Some(*t),
            (None, true) => None,
            (_, false) => return Err(ConfError::PortPairs { switch: switch(id) }),
        };
        tables.push((switch(id), table));
    }
    let ports = state
        .ports
        .iter()
        .filter_map(|(&p, s)| s.sl2vl.map(|t| (port_name(state, p), Some(t))));
    tables.extend(ports);
    if tables.iter().all(|(_, t)| t.is_none()) {
        return Err(ConfError::NoSl2Vl);
    }
    let mut it = tables.into_iter();
    let Some((first, want)) = it.next() else {
        return Err(ConfError::NoSl2Vl);
    };
    let want = want.unwrap_or([0; 16]);
    for (at, t) in it {
        if t.unwrap_or([0; 16]) != want {
            return Err(ConfError::UnevenSl2Vl { first, at });
        }
    }
    Ok(want)
}

/// The VL arbitration every port that has one shares (none: empty tables).
fn common_vlarb(state: &FabricState) -> Result<VlArb, ConfError> {
    let mut it = state
        .ports
        .iter()
        .filter_map(|(&p, s)| s.vlarb.as_ref().map(|a| (p, a)));
    let Some((first, want)) = it.next() else {
        return Ok(VlArb::default());
    };
    match it.find(|(_, a)| *a != want) {
        Some((at, _)) => Err(ConfError::UnevenVlArb {
            first: port_name(state, first),
            at: port_name(state, at),
        }),
        None => Ok(want.clone()),
    }
}

/// `node port N`, for errors.
fn port_name(state: &FabricState, p: PortRef) -> String {
    format!("{} port {}", state.fabric.node(p.node).name(), p.port.0)
}

/// OpenSM's `max_op_vls` for `n` data VLs (PortInfo:OperationalVLs: 1 = VL 0, 2 = VLs 0–1,
/// 3 = VLs 0–3, 4 = VLs 0–7, 5 = VLs 0–14).
fn op_vls_code(n: u8) -> u8 {
    match n {
        0 | 1 => 1,
        2 => 2,
        3 | 4 => 3,
        5..=8 => 4,
        _ => 5,
    }
}

/// The `key value` lines of an OpenSM configuration (the last one wins, and a value is its
/// first word, as in OpenSM).
pub fn conf_values(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // OpenSM takes the first word after the key (`strtok_r` on blanks); the rest of the
        // line is ignored.
        let mut words = line.split_ascii_whitespace();
        if let (Some(k), Some(v)) = (words.next(), words.next()) {
            out.insert(k.to_owned(), v.to_owned());
        }
    }
    out
}

/// `conf` with every `key` of `lines` set to its value there: an existing line replaced in
/// place, a missing key appended (with a comment saying weft set it).
pub fn merge_conf(conf: &str, lines: &BTreeMap<String, String>) -> String {
    let mut done = std::collections::BTreeSet::new();
    let mut out = String::new();
    for line in conf.lines() {
        let key = line.split_whitespace().next().unwrap_or("");
        let replaced = (!line.trim_start().starts_with('#'))
            .then(|| lines.get(key))
            .flatten()
            .map(|v| {
                done.insert(key.to_owned());
                format!("{key} {v}")
            });
        match replaced {
            Some(l) => out += &l,
            None => out += line,
        }
        out.push('\n');
    }
    let missing: Vec<_> = lines.iter().filter(|(k, _)| !done.contains(*k)).collect();
    if !missing.is_empty() {
        out += "# set by weft apply --target opensm\n";
        for (k, v) in missing {
            out += &format!("{k} {v}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;
    use weft_fabric::{FabricBuilder, Guid, NodeKind, NodeSpec, PortState};

    /// A switch and two hosts on it, with one SL→VL map and one VLArb everywhere.
    fn state() -> FabricState {
        let mut b = FabricBuilder::new("lab");
        let sw = b
            .add_node(NodeSpec::new("S", NodeKind::Switch, Guid(0x10), 4))
            .unwrap();
        for h in 0..2u8 {
            let id = b
                .add_node(NodeSpec::new(
                    format!("H{h}"),
                    NodeKind::Hca,
                    Guid(0x20 + u64::from(h)),
                    1,
                ))
                .unwrap();
            b.add_link(PortRef::new(id, 1), PortRef::new(sw, h + 1))
                .unwrap();
        }
        let mut st = FabricState::new(b.finish());
        let mut map = [15u8; 16];
        map[0] = 0;
        map[1] = 1;
        map[2] = 1;
        st.switches.entry(NodeId(0)).or_default().sl2vl_all = Some(map);
        for h in 1..=2 {
            st.set_node_injection(NodeId(h), map);
        }
        let arb = VlArb {
            high_limit: 4,
            high: vec![VlWeight { vl: 0, weight: 16 }],
            low: vec![VlWeight { vl: 1, weight: 2 }],
        };
        for p in [
            PortRef::new(NodeId(0), 1),
            PortRef::new(NodeId(0), 2),
            PortRef::new(NodeId(1), 1),
            PortRef::new(NodeId(2), 1),
        ] {
            st.ports.entry(p).or_default().vlarb = Some(arb.clone());
        }
        st.max_vls = Some(2);
        st
    }

    /// The lines are the state's tables; the comments are the classes given.
    #[test]
    fn the_qos_lines_are_the_states_tables() {
        let classes = [
            ConfClass {
                name: "admin".into(),
                first_sl: Sl(0),
                first_vl: Vl(0),
                width: 1,
                high: true,
                weight: 16,
            },
            ConfClass {
                name: "bulk".into(),
                first_sl: Sl(1),
                first_vl: Vl(1),
                width: 2,
                high: false,
                weight: 3,
            },
        ];
        assert_eq!(
            write_qos_conf("lab", &QosConf::of_state(&state()).unwrap(), &classes),
            "# OpenSM QoS settings written by weft for fabric `lab`; load with\n\
             # `opensm -Q -F opensm.conf` (SL→VL and VL arbitration are the same on every port).\n\
             # class `admin`: SL 0..=0 on VL 0..=0, high priority, weight 16\n\
             # class `bulk`: SL 1..=2 on VL 1..=2, low priority, weight 3\n\
             qos TRUE\n\
             max_op_vls 2\n\
             qos_max_vls 2\n\
             qos_high_limit 4\n\
             qos_vlarb_high 0:16\n\
             qos_vlarb_low 1:2\n\
             qos_sl2vl 0,1,1,15,15,15,15,15,15,15,15,15,15,15,15,15\n"
        );
    }

    /// A state whose ports do not share one map or one arbitration, or that lacks what the
    /// file needs, is refused, naming where it differs.
    #[test]
    fn a_state_opensm_conf_cannot_say_is_refused() {
        let mut st = state();
        st.ports.get_mut(&PortRef::new(NodeId(2), 1)).unwrap().sl2vl = Some([0; 16]);
        assert_eq!(
            QosConf::of_state(&st).map(|_| ()),
            Err(ConfError::UnevenSl2Vl {
                first: "S".into(),
                at: "H1 port 1".into()
            })
        );
        let mut st = state();
        st.ports
            .get_mut(&PortRef::new(NodeId(0), 2))
            .unwrap()
            .vlarb
            .as_mut()
            .unwrap()
            .low[0]
            .weight = 1;
        assert_eq!(
            QosConf::of_state(&st).map(|_| ()),
            Err(ConfError::UnevenVlArb {
                first: "S port 1".into(),
                at: "S port 2".into()
            })
        );
        let mut st = state();
        st.switches
            .get_mut(&NodeId(0))
            .unwrap()
            .sl2vl
            .push(weft_fabric::Sl2VlRow {
                in_port: 1,
                out_port: 2,
                vl: [0; 16],
            });
        assert_eq!(
            QosConf::of_state(&st).map(|_| ()),
            Err(ConfError::PortPairs { switch: "S".into() })
        );
        let mut st = state();
        st.max_vls = None;
        assert_eq!(QosConf::of_state(&st).map(|_| ()), Err(ConfError::NoMaxVls));
        let mut st = state();
        st.switches.clear();
        st.ports.values_mut().for_each(|p| p.sl2vl = None);
        assert_eq!(QosConf::of_state(&st).map(|_| ()), Err(ConfError::NoSl2Vl));
        // No port with arbitration: empty tables.
        let mut st = state();
        st.ports = st
            .ports
            .into_iter()
            .map(|(p, s)| (p, PortState { vlarb: None, ..s }))
            .collect();
        let conf = QosConf::of_state(&st).unwrap();
        assert_eq!(conf.vlarb, VlArb::default());
        let text = write_qos_conf("lab", &conf, &[]);
        assert!(
            text.contains("qos_high_limit 0\nqos_vlarb_high 0:0\nqos_vlarb_low 0:0\n"),
            "{text}"
        );
        assert_eq!(parse_qos_conf(&text), Ok(conf));
    }

    #[test]
    fn qos_lines_replace_in_place_and_append_the_rest() {
        let conf =
            "# site settings\nrouting_engine file\nqos FALSE\n# qos_max_vls 2\nlog_flags 0x03\n";
        let lines = conf_values("qos TRUE\nqos_max_vls 8\nqos_sl2vl 0,1,2\n");
        assert_eq!(
            merge_conf(conf, &lines),
            "# site settings\nrouting_engine file\nqos TRUE\n# qos_max_vls 2\nlog_flags 0x03\n\
             # set by weft apply --target opensm\nqos_max_vls 8\nqos_sl2vl 0,1,2\n"
        );
    }

    /// A VL arbitration table as `opensm.conf` can say it: VLs 0..=14, weights 1..=255.
    fn table() -> impl Strategy<Value = Vec<VlWeight>> {
        proptest::collection::vec(
            (0u8..15, 1u8..=255).prop_map(|(vl, weight)| VlWeight { vl, weight }),
            0..20,
        )
    }

    proptest! {
        /// What `write_qos_conf` writes, `parse_qos_conf` reads back as the same tables,
        /// whatever the class comments, and so does OpenSM's reading of it after a site's
        /// configuration has it merged in.
        #[test]
        fn written_qos_lines_parse_back(
            sl2vl in proptest::array::uniform16(0u8..=15),
            high_limit in any::<u8>(),
            high in table(),
            low in table(),
            max_vls in 1u8..=15,
            names in proptest::collection::vec("[a-z#` ]{0,8}", 0..4),
        ) {
            let conf = QosConf {
                sl2vl,
                vlarb: VlArb { high_limit, high, low },
                max_vls,
            };
            let classes: Vec<ConfClass> = names
                .into_iter()
                .map(|name| ConfClass {
                    name,
                    first_sl: Sl(0),
                    first_vl: Vl(0),
                    width: 1,
                    high: false,
                    weight: 1,
                })
                .collect();
            let text = write_qos_conf("f", &conf, &classes);
            prop_assert_eq!(parse_qos_conf(&text), Ok(conf.clone()));
            let site = "qos FALSE\nqos_sl2vl 0,0\nrouting_engine ftree\n";
            let merged = merge_conf(site, &conf_values(&text));
            prop_assert_eq!(parse_qos_conf(&merged), Ok(conf));
        }
    }

    /// The parser refuses what OpenSM would not read as these tables, naming the key.
    #[test]
    fn qos_lines_opensm_would_misread_are_refused() {
        let good = write_qos_conf("lab", &QosConf::of_state(&state()).unwrap(), &[]);
        let with =
            |key: &str, value: &str| parse_qos_conf(&format!("{good}{key} {value}\n")).unwrap_err();
        assert_eq!(with("qos", "FALSE"), ConfParseError::QosOff);
        assert_eq!(
            parse_qos_conf(&good.replace("qos_sl2vl", "# qos_sl2vl")),
            Err(ConfParseError::Missing { key: "qos_sl2vl" })
        );
        for (key, value) in [
            ("qos_sl2vl", "0,1,2"),
            ("qos_sl2vl", "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,16"),
            ("qos_vlarb_low", "15:1"),
            ("qos_vlarb_high", "0-4"),
            ("qos_max_vls", "0"),
            ("max_op_vls", "5"),
            ("qos_high_limit", "256"),
        ] {
            assert!(
                matches!(with(key, value), ConfParseError::Value { key: k, .. } if k == key),
                "{key} {value}"
            );
        }
    }
}
