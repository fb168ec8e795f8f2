//! weft's verifier.
//!
//! Architecture invariant: the verifier depends on `weft-fabric` only, never on the compiler,
//! so it checks any [`FabricState`](weft_fabric::FabricState), whoever produced it.
//!
//! This scope is the model checks the fabric crate can state on its own; the
//! deadlock/connectivity engines (explicit and z3) land with the verifier issue.
