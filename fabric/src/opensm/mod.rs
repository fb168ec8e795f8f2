//! OpenSM's file formats: the unicast LFT dump (the input of OpenSM's `file` routing engine,
//! `opensm -R file -U FILE`, also what `dump_fts` prints) and the `guid2lid` cache.
//!
//! Formats are described in `../shared/research/anchors.md` §2.1 and §2.6 and were checked
//! against OpenSM 3.3.23 (`osm_dump.c` writes the dump, `osm_ucast_file.c` reads it,
//! `osm_db_pack.c` the guid2lid records).

mod guid2lid;
mod lfts;

pub use guid2lid::write_guid2lid;
pub use lfts::write_lfts;
