//! This crate's one integration-test binary: a module per suite (one link step for all of
//! them; `cargo test -p weft-bench --test it NAME::` runs one suite).

mod guid2lid_onto;
mod never_worse_than_opensm;
