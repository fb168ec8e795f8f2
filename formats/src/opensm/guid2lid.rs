//! Writing OpenSM's `guid2lid` cache (`$OSM_CACHE_DIR/guid2lid`).
//!
//! One record per port GUID: `0x<16 hex guid> 0x<min lid> 0x<max lid>`, records separated by
//! a blank line (OpenSM's database reader takes everything up to a blank line as one record,
//! so consecutive lines would be read as a single garbled record). With this file in its cache
//! directory OpenSM gives every port the LIDs weft assigned, on its first sweep.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_fabric::{FabricState, Guid};

/// The LIDs of every port of `state`, sorted by port GUID.
pub fn write_guid2lid(state: &FabricState) -> String {
    let f = &state.fabric;
    let mut records: BTreeMap<Guid, (u16, u16)> = BTreeMap::new();
    for (&id, ports) in &state.lids.base {
        let node = f.node(id);
        let span = state.lids.span(node.is_switch());
        for (&p, &lid) in ports {
            let guid = if node.is_switch() {
                node.guid()
            } else {
                node.port(p).map_or(node.guid(), |x| x.guid)
            };
            records.insert(guid, (lid.0, lid.0.saturating_add(span - 1)));
        }
    }
    let mut out = String::new();
    for (guid, (lo, hi)) in records {
        let _ = writeln!(out, "0x{:016x} 0x{lo:04x} 0x{hi:04x}\n", guid.0);
    }
    out
}
