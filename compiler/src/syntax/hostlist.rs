//! Host lists as operators write them (`cn[001-128,200]`): the reader lives in
//! [`weft_formats::hostlist::parse`], shared with the simulator's job files; the compiler's
//! hand lexer (`scan.rs`) and its grammar's `hostlist` rule take the same token shape
//! ([`token_len`]), and a test holds the two equal.

pub(crate) use weft_formats::hostlist::parse::*;
