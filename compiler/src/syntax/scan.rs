//! The one hand lexer of weft source: words, strings, comments and punctuation with their
//! byte ranges ([`tokens`]). The pest grammar (`weft.pest`) is the language; this lexer is
//! what reads text the grammar cannot be asked about: `weft fmt`'s token stream
//! (`crate::fmt`), and the parser's nesting guard and error recovery (bracket depth, what is
//! code, an unterminated string: `parser.rs`).
//!
//! It never fails: any byte sequence is cut into tokens, whitespace between them skipped
//! (the newlines in it counted). A string ends at its closing `"` or, unterminated, before
//! the end of its line; a backslash escapes the next byte unless that is a newline. A block
//! comment runs to the first `*/` (they do not nest) or the end of the text.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// ASCII letters, digits and `_`: a name, a keyword or a number (`1.5` is three tokens);
    /// or a whole host list, `cn[001-128,200]` (`hostlist.rs`).
    Word,
    /// A string literal with its quotes; `closed` is false when the line (or text) ended
    /// before its closing quote.
    Str {
        /// Whether the closing quote is there.
        closed: bool,
    },
    /// `//` to the end of the line (the newline not included).
    LineComment,
    /// `/*` to `*/` (or the end of the text).
    BlockComment,
    /// An operator or punctuation: one of [`PUNCT3`], [`PUNCT2`], or one character.
    Punct,
}

/// One token: its kind and its byte range in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    /// What it is.
    pub kind: Kind,
    /// Byte offset of its first byte.
    pub start: usize,
    /// Byte offset just past it.
    pub end: usize,
    /// Newlines between the previous token (or the start of the text) and this one.
    pub newlines: usize,
}

/// Three-character operators, read as one token.
pub(crate) const PUNCT3: &[&str] = &["<->", "..="];
/// Two-character operators, read as one token.
pub(crate) const PUNCT2: &[&str] = &["..", "::", "==", "!=", "<=", ">=", "&&", "||"];

/// The tokens of `text`, in order.
pub(crate) fn tokens(text: &str) -> Tokens<'_> {
    Tokens { text, i: 0 }
}

/// The iterator [`tokens`] returns.
pub(crate) struct Tokens<'a> {
    text: &'a str,
    /// Where the next token's search starts.
    i: usize,
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let text = self.text;
        let b = text.as_bytes();
        // Byte at `i` (0 past the end) and the text from `i` ("" off a character boundary).
        let at = |i: usize| b.get(i).copied().unwrap_or(0);
        let from = |i: usize| text.get(i..).unwrap_or("");
        let mut i = self.i;
        let mut newlines = 0;
        while i < b.len() && at(i).is_ascii_whitespace() {
            newlines += usize::from(at(i) == b'\n');
            i += 1;
        }
        if i >= b.len() {
            self.i = i;
            return None;
        }
        let start = i;
        let c = at(i);
        let kind = if from(i).starts_with("//") {
            i = from(i).find('\n').map_or(b.len(), |e| i + e);
            Kind::LineComment
        } else if from(i).starts_with("/*") {
            i = from(i + 2).find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            Kind::BlockComment
        } else if c == b'"' {
            i += 1;
            while i < b.len() && at(i) != b'"' && at(i) != b'\n' {
                if at(i) == b'\\' && i + 1 < b.len() && at(i + 1) != b'\n' {
                    i += 1;
                }
                i += 1;
            }
            let closed = at(i) == b'"';
            if closed {
                i += 1;
            }
            Kind::Str { closed }
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            // A host list (`cn[001-128,200]`) is one word, brackets and all.
            match super::hostlist::token_len(from(i)) {
                Some(n) => i += n,
                None => {
                    while i < b.len() && (at(i).is_ascii_alphanumeric() || at(i) == b'_') {
                        i += 1;
                    }
                }
            }
            Kind::Word
        } else {
            let rest = from(i);
            i += PUNCT3
                .iter()
                .chain(PUNCT2)
                .find(|p| rest.starts_with(**p))
                .map_or_else(
                    || rest.chars().next().map_or(1, char::len_utf8),
                    |p| p.len(),
                );
            Kind::Punct
        };
        let end = i.min(b.len());
        self.i = end;
        Some(Token {
            kind,
            start,
            end,
            newlines,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, &str, usize)> {
        tokens(text)
            .map(|t| (t.kind, text.get(t.start..t.end).unwrap_or("?"), t.newlines))
            .collect()
    }

    #[test]
    fn every_kind_with_its_text_and_the_newlines_before_it() {
        use Kind::*;
        let text = "let a = x[1..=2] // c\n\n/* b\n */ \"s\\\"t\" <-> é\n\"open\nz";
        assert_eq!(
            kinds(text),
            [
                (Word, "let", 0),
                (Word, "a", 0),
                (Punct, "=", 0),
                (Word, "x", 0),
                (Punct, "[", 0),
                (Word, "1", 0),
                (Punct, "..=", 0),
                (Word, "2", 0),
                (Punct, "]", 0),
                (LineComment, "// c", 0),
                (BlockComment, "/* b\n */", 2),
                (Str { closed: true }, "\"s\\\"t\"", 0),
                (Punct, "<->", 0),
                (Punct, "é", 0),
                (Str { closed: false }, "\"open", 1),
                (Word, "z", 1),
            ]
        );
    }

    /// Tokens tile the text: between them only whitespace, whatever the bytes (an
    /// unterminated comment or string, a backslash at the end, multi-byte characters).
    #[test]
    fn tokens_cover_everything_but_whitespace() {
        for text in [
            "",
            "   \n",
            "/* open",
            "\"a\\",
            "\"a\\\nb\"",
            "a/b//c",
            "ü\u{a0}x",
            "{[(<->)]}",
        ] {
            let mut at = 0;
            for t in tokens(text) {
                assert!(t.start < t.end && t.end <= text.len(), "{text:?}: {t:?}");
                assert!(
                    text.get(at..t.start).is_some_and(|g| g.trim().is_empty()),
                    "{text:?}: {t:?}"
                );
                at = t.end;
            }
            assert!(
                text.get(at..).is_some_and(|g| g.trim().is_empty()),
                "{text:?}"
            );
        }
    }
}
