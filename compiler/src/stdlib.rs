//! The standard library, written in weft and embedded in the binary.
//!
//! `../stdlib/*.weft`, embedded with `include_str!`: hardware models (`std::hardware`) and
//! topology templates (`std::topology`: `pgft`, `xgft`, `fat_tree`, `kary_ntree`, `torus`,
//! `mesh`, `ring`, the rail-optimised `rail_optimized` and `superpod` of DGX SuperPODs,
//! director chassis as their ASICs — `director`, `cs7500`, `cs8500` —, and `aggregation: true`
//! on the fat-trees: a SHARP Aggregation Node, `std::hardware::sharp_an`, on every switch's
//! extra port).

/// Module names under `std::`.
pub(crate) const MODULES: &[&str] = &["hardware", "topology"];

const HARDWARE: &str = include_str!("../../stdlib/hardware.weft");
const TOPOLOGY: &str = include_str!("../../stdlib/topology.weft");

/// The source of `std::<name>`.
pub(crate) fn module(name: &str) -> Option<&'static str> {
    match name {
        "hardware" => Some(HARDWARE),
        "topology" => Some(TOPOLOGY),
        _ => None,
    }
}

/// The module defining a top-level `model` or `template` called `name`, if any.
pub(crate) fn find_item(name: &str) -> Option<&'static str> {
    MODULES.iter().copied().find(|m| {
        module(m).is_some_and(|text| {
            text.lines().any(|l| {
                let l = l.trim_start();
                ["model ", "template "].iter().any(|kw| {
                    l.strip_prefix(kw).is_some_and(|rest| {
                        rest.strip_prefix(name)
                            .is_some_and(|r| r.starts_with([' ', '(', ':']))
                    })
                })
            })
        })
    })
}
