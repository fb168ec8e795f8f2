//! weft's deploy backends (the `Transport` trait, simulator, MAD and OpenSM hand-off).
//!
//! Architecture invariant: deploy depends on `weft-fabric`, and on `weft-plan` and
//! `weft-verifier` to prove what it writes on the tables it reads off the fabric (a plan's
//! steps again, or the way from what a fabric runs to a desired state), and on
//! `weft-traffic` for dFtree's controller, which its loop feeds; never on the compiler.
//! A fabric ends an apply in exactly the old state or exactly the new one, or the journal says
//! which block holds what; no file weft creates is reached through a name someone else could
//! have planted ([`files`]).
//!
//! **Code map.** [`smp`] (the attributes at their IBA byte and bit offsets: the only module
//! that knows them), [`transport`] (`Transport`: Get/Set by directed route, `Retrying`,
//! `Paced`, `Counted`), [`sim`] (the in-process fabric, fault injection keyed to the n-th Set),
//! [`mad`] (libibmad loaded at run time: the only `unsafe` in weft, each block with its SAFETY
//! note; `mad/window.rs` decides what a window of SMPs in flight sends), [`pma`] (port
//! counters), [`dftree`] (dFtree's loop on a live fabric, `Loop<P: Pma>`: the counter-trust rules,
//! the wire check, `qos-policy.conf`, `repath.txt` and `repath.log`), [`discover`](mod@discover), [`read`], [`observe`] (the fabric as read, and
//! the one normalisation into what a state holds), [`audit`], [`prove`] (what apply proves
//! before it writes), [`journal`] and [`apply`](mod@apply) (the transaction and recovery), [`opensm`] (the
//! hand-off to a running OpenSM), [`watch`] (`weft watch`'s sweeps and differences), [`files`] (locks, files replaced whole, the build
//! directory's exchange) and `codes.rs` ([`CODES`]: every `weft::deploy::…` code; every error
//! type's `code()` matches each variant with no wildcard).

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

pub mod apply;
pub mod audit;
mod codes;
pub mod dftree;
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
pub mod watch;

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
