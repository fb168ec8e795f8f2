//! weft's deploy backends (the `Transport` trait, simulator, MAD and OpenSM hand-off).
//!
//! Architecture invariant: deploy depends on `weft-fabric`, and on `weft-plan` and
//! `weft-verifier` to prove what it writes on the tables it reads off the fabric (a plan's
//! steps again, or the way from what a fabric runs to a desired state); never on the compiler.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing))]

pub mod apply;
pub mod audit;
mod codes;
pub mod discover;
pub mod files;
pub mod journal;
pub mod mad;
pub mod observe;
pub mod opensm;
pub mod pma;
pub mod prove;
pub mod read;
pub mod sim;
pub mod smp;
pub mod transport;

pub use apply::{
    apply, recover, ApplyError, ApplyOptions, Direction, Final, Progress, ProofMode, Report,
};
pub use codes::CODES;
pub use discover::{discover, DiscoverError, Discovery};
pub use mad::{Mad, MadError, MadOptions};
pub use pma::{CounterReader, Pma, PmaAttr, PmaError, PortAt, PortCounters};
pub use sim::{Fault, FaultKind, Injected, SimFabric};
pub use smp::{Attr, DrPath, Payload};
pub use transport::{Counted, Paced, Retrying, SmpError, Target, Transport, TransportExt};
