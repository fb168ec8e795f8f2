//! This crate's one integration-test binary: a module per suite (one link step for all of
//! them; `cargo test -p weft-verifier --test it NAME::` runs one suite).

mod apm;
mod differential;
mod engines;
mod isolation;
mod tamper;
mod transition;
