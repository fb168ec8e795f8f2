//! weft's deploy backends (the `Transport` trait, simulator, MAD and OpenSM hand-off).
//!
//! Architecture invariant: deploy depends on `weft-fabric` only; it writes a plan someone
//! else compiled and verified.
