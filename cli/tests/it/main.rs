//! The `weft` crate's one integration-test binary: a module per suite (one link step for all
//! of them; `cargo test -p weft --test it NAME::` runs one suite).

mod apply;
mod apply_mad;
mod audit_mad;
mod cabling;
mod cabling_mad;
mod cli;
mod dftree_mad;
mod escape;
mod export;
mod files;
mod findings;
mod formats;
mod hostile;
mod html;
mod lsp_nvim;
mod mft_mad;
mod opensm_aggregation;
mod opensm_audit;
mod opensm_engines_multicast;
mod opensm_handoff;
mod opensm_multicast;
mod plan;
mod qos_mad;
mod report;
mod same_proof;
mod simulate;
mod support;
mod tidy;
mod tolerant;
mod verify;
mod watch_mad;
mod writers_mad;
