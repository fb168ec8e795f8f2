//! Text → [`File`]: the entry of the parser, which runs the pest grammar and lowers what it
//! reads to the typed AST (`lower.rs`), recovering from errors (`recover.rs`).
//!
//! Parsing never fails: [`parse`] returns the items it could read plus every syntax error.
//! pest stops at the first error, so recovery blanks out the statement around each error
//! (keeping byte offsets, so later spans stay right) and parses again, up to a bound. Text
//! nested deeper than [`MAX_NESTING`] is refused before pest sees it.

use super::ast::{File, Span};
use super::lower::Lower;
use super::recover::{blank, syntax_error, too_deep};
use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use pest::Parser as _;

#[derive(pest_derive::Parser)]
#[grammar = "syntax/weft.pest"]
struct WeftParser;

/// Most syntax errors reported for one file before giving up.
const MAX_ERRORS: usize = 32;

/// Deepest nesting of brackets and `else if` chains the parser accepts: the grammar is
/// recursive, and a few thousand levels would overflow the stack.
pub(super) const MAX_NESTING: usize = 128;

/// Deepest expression tree (operands of one operator chain count as levels) lowering keeps;
/// evaluation and formatting recurse over it.
pub(super) const MAX_EXPR_DEPTH: usize = 256;

/// Parses a whole file; returns what could be read and every syntax error.
pub(crate) fn parse(text: &str, source: SourceId) -> (File, Vec<Diagnostic>) {
    if let Some((at, what)) = too_deep(text) {
        let d = Diagnostic::error(
            Code::TooDeep,
            format!("nesting deeper than {MAX_NESTING} levels"),
        )
        .label(
            source,
            Span::new(at, at + what.len()),
            format!("this `{what}` is level {}", MAX_NESTING + 1),
        )
        .help("flatten the expression: bind parts with `let`, or use a loop");
        return (File::default(), vec![d]);
    }
    let mut diags = Vec::new();
    let mut buf = text.to_owned();
    let mut lower = Lower::new(source);
    loop {
        match WeftParser::parse(Rule::file, &buf) {
            Ok(mut pairs) => {
                let file = pairs.next().map(|p| lower.file(p)).unwrap_or_default();
                diags.append(&mut lower.diags);
                return (file, diags);
            }
            Err(e) => {
                let (diag, region) = syntax_error(&buf, &e, source);
                diags.push(diag);
                let blanked = region.and_then(|(s, t)| blank(&mut buf, s, t).then_some(()));
                if blanked.is_none() || diags.len() >= MAX_ERRORS {
                    return (File::default(), diags);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the grammar's `hostlist` rule matches at the start of `s`, as a length.
    fn rule_len(s: &str) -> Option<usize> {
        WeftParser::parse(Rule::hostlist, s)
            .ok()
            .and_then(|mut p| p.next())
            .map(|p| p.as_str().len())
    }

    proptest! {
        /// The hand lexer's host list token is the grammar's: `weft fmt` keeps every host
        /// list the parser reads as one word, and reads nothing else as one.
        #[test]
        fn the_lexer_and_the_grammar_agree_on_host_lists(
            s in "[a-c_][a-c0-2_\\-\\[\\],. ]{0,16}",
            t in "[a-c][a-c-]{0,2}(\\[[0-9]{1,3}(-[0-9]{1,3})?(,[0-9]{1,2}(-[0-9])?){0,2}\\][a-c-]{0,2}){1,3}[\\[\\].,0-9 ]{0,3}",
        ) {
            prop_assert_eq!(rule_len(&s), super::super::hostlist::token_len(&s), "{:?}", s);
            prop_assert_eq!(rule_len(&t), super::super::hostlist::token_len(&t), "{:?}", t);
        }
    }
}
