//! Readers and writers of the files weft exchanges with the InfiniBand tools and with itself,
//! over the model of `weft-fabric`: [`ibnetdiscover`] (what `ibnetdiscover` prints and `ibsim`
//! loads, and the `ibnetdiscover -p`, `iblinkinfo` and ibdm `subnet.lst` reports), [`opensm`]
//! (OpenSM's and ibdiagnet's files), the plan file ([`plan`]), the cabling spreadsheet and the
//! comparison of a found fabric's cabling with a design's ([`cabling`]), Slurm host lists
//! ([`hostlist`]) and the tree Slurm's topology files describe ([`sched_tree`]), and the names
//! of the files of a build directory ([`build_dir`]). `state.json` is the model's own format
//! and stays in `weft-fabric` (`weft_formats::state_json`).
//!
//! Readers take text and return the model plus every problem found (the ibnetdiscover reader
//! with byte spans, the others with line numbers); writers take the model and return text.
//! The codes they report are in [`CODES`].
//!
//! Architecture invariant: this crate depends on `weft-fabric` only (no other weft crate), does
//! no I/O besides what its callers hand it (text in, text out), never prints, and is
//! deterministic.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

pub mod build_dir;
pub mod cabling;
mod code;
pub mod hostlist;
pub mod ibnetdiscover;
pub mod opensm;
pub mod plan;
pub mod sched_tree;
pub mod state_json;

pub use code::CODES;
