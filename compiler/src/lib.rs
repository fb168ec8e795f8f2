//! The weft language and compiler: grammar and AST ([`syntax`]), diagnostics, the embedded
//! standard library, elaboration into a [`weft_fabric::Fabric`], and validation.
//!
//! Architecture invariant: no I/O. Files reach the compiler as text through a [`Host`]
//! (the CLI reads them); results and every diagnostic come back as values.

pub mod diagnostic;
pub mod syntax;
