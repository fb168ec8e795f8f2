//! The weft syntax: grammar (`weft.pest`), typed AST and a recovering parser.
//!
//! `weft.pest` is the grammar, `ast.rs` the typed AST with spans, `parser.rs` the entry (it
//! never fails: what it could read plus every syntax error), `recover.rs` the nesting guard
//! and error regions, `lower.rs` pest's pairs to the AST, `scan.rs` the one hand lexer (for
//! `weft fmt` and the recovery), `hostlist.rs` Slurm host lists as one token.
//!
//! Architecture invariant: syntax knows nothing of elaboration or the fabric model.

pub(crate) mod ast;
pub(crate) mod hostlist;
mod lower;
mod parser;
mod recover;
pub(crate) mod scan;

pub(crate) use crate::words::RESERVED;
pub(crate) use parser::parse;

/// Whether `s` can be written as a bare identifier.
pub(crate) fn is_plain_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&s)
}
