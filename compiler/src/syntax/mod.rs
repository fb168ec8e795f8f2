//! The weft syntax: grammar (`weft.pest`), typed AST and a recovering parser.
//!
//! Architecture invariant: syntax knows nothing of elaboration or the fabric model.

pub mod ast;
mod parser;

pub use parser::parse;
