//! weft's deploy backends (the `Transport` trait, simulator, MAD and OpenSM hand-off).
//!
//! Architecture invariant: deploy depends on `weft-fabric` only; it writes a plan someone
//! else compiled and verified.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing))]

pub mod apply;
pub mod audit;
pub mod discover;
pub mod files;
pub mod journal;
pub mod mad;
pub mod opensm;
pub mod read;
pub mod sim;
pub mod smp;
pub mod transport;

pub use apply::{apply, recover, ApplyError, ApplyOptions, Direction, Final, Progress, Report};
pub use discover::{discover, DiscoverError, Discovery};
pub use mad::{Mad, MadError, MadOptions};
pub use sim::{Fault, FaultKind, SimFabric};
pub use smp::{Attr, DrPath, Payload};
pub use transport::{Paced, Retrying, SmpError, Target, Transport, TransportExt};
