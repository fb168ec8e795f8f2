//! Reading OpenSM's `guid2lid` cache: records `0x<guid> 0x<min lid> 0x<max lid>`, normally
//! separated by blank lines (consecutive lines are accepted too). A switch's record carries
//! its node GUID (port 0); an end node's its port GUID. `max - min + 1` is `2^lmc`.

use super::error::{number, Collector, DumpError, DumpErrors};
use super::sl2vl::node_of_port_guid;
use weft_fabric::{Fabric, Guid, Lid, LidAssignment, PortNum};

/// Reads a `guid2lid` file against `fabric`; GUIDs not in the fabric are warnings.
pub fn parse_guid2lid(
    text: &str,
    fabric: &Fabric,
) -> Result<(LidAssignment, Vec<DumpError>), DumpErrors> {
    let mut c = Collector::new("guid2lid");
    let mut lids = LidAssignment {
        lmc: fabric.lmc,
        base: Default::default(),
        vports: Vec::new(),
    };
    let mut lmc: Option<u8> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let w: Vec<Option<u64>> = line.split_whitespace().map(number).collect();
        let [Some(g), Some(lo), Some(hi)] = w.as_slice() else {
            c.error(
                line_no,
                format!("a record is `0x<guid> 0x<min lid> 0x<max lid>`: `{line}`"),
            );
            continue;
        };
        if *lo == 0 || hi < lo || *hi > u64::from(weft_fabric::MAX_UNICAST_LID) {
            c.error(
                line_no,
                format!("`{lo:#x}..{hi:#x}` is not a unicast LID range"),
            );
            continue;
        }
        let span = hi - lo + 1;
        let Some((id, port)) = node_of_port_guid(fabric, Guid(*g)) else {
            c.warn(
                line_no,
                format!("no port with GUID {g:#018x} in the topology"),
            );
            continue;
        };
        if !fabric.node(id).is_switch() {
            if !span.is_power_of_two() || span > 128 {
                c.error(
                    line_no,
                    format!("{span} LIDs is not a power of two up to 128"),
                );
                continue;
            }
            let l = span.trailing_zeros() as u8;
            if lmc.is_some_and(|m| m != l) {
                c.error(line_no, "end-node ports have different LMCs");
                continue;
            }
            lmc = Some(l);
        }
        lids.base
            .entry(id)
            .or_default()
            .insert(PortNum(port), Lid(*lo as u16));
    }
    if let Some(l) = lmc {
        lids.lmc = l;
    }
    c.finish(lids)
}
