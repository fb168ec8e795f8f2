//! This crate's one integration-test binary: a module per suite (one link step for all of
//! them; `cargo test -p weft-compiler --test it NAME::` runs one suite).

mod dftree_policy;
mod diagnostics;
mod lft_digest;
mod multicast;
mod rails_import;
mod robustness;
mod routing;
mod tenants;
mod topologies;
mod vms;
