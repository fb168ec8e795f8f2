//! The `weft-formats` crate's one integration-test binary: a module per suite (one link step
//! for all of them; `cargo test -p weft-formats --test it NAME::` runs one suite).

mod guid_spaces;
mod ibnetdiscover_roundtrip;
mod ibnetdiscover_sample;
mod multicast_dumps;
mod report_formats;
mod subnet_lst;
