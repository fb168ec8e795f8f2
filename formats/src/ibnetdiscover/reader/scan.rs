//! The diagnostics context every phase reports through, and the small scanner and number
//! parsers the line parsers share.

use super::*;

// Diagnostics context and small helpers.

pub(super) struct Cx<'s> {
    pub(super) src: &'s Source,
    pub(super) diags: Vec<IbnetDiagnostic>,
    /// The first place the whitespace between two fields is missing (`Switch41`, `"…"#`),
    /// which the line parsers accept; the topology reader warns once about it.
    pub(super) missing_ws: Option<SourceSpan>,
}

impl Cx<'_> {
    pub(super) fn error(
        &mut self,
        code: Code,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        let d = self
            .diag(code, Severity::Error, span, message, label)
            .with_help(help);
        self.push(d);
    }

    pub(super) fn warn(
        &mut self,
        code: Code,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        let d = self
            .diag(code, Severity::Warning, span, message, label)
            .with_help(help);
        self.push(d);
    }

    /// Whitespace between two fields is missing at byte `at` (the fields are still told apart).
    pub(super) fn missing_ws(&mut self, at: usize) {
        self.missing_ws.get_or_insert(sp(at, 1));
    }

    pub(super) fn push(&mut self, d: IbnetDiagnostic) {
        self.diags.push(d);
    }

    pub(super) fn diag(
        &self,
        code: Code,
        severity: Severity,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> IbnetDiagnostic {
        IbnetDiagnostic::new(self.src, code, severity, span, message, label)
    }
}

pub(super) fn sp(start: usize, len: usize) -> SourceSpan {
    SourceSpan::new(start.into(), len)
}

/// One line of the input, without its `\n` or `\r\n`.
pub(super) struct Line<'a> {
    pub(super) start: usize,
    pub(super) text: &'a str,
}

/// Every line of `text`, ending at `\n` or `\r\n`, the last one with or without a line end,
/// without carriage returns at its start or end; a byte-order mark at the start (Windows
/// editors write one) is not part of the first line.
pub(super) fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut start = bom;
    text.get(bom..)
        .unwrap_or("")
        .split('\n')
        .filter_map(move |raw| {
            let line_start = start;
            start += raw.len() + 1;
            if raw.is_empty() && line_start >= text.len() {
                return None;
            }
            // A carriage return at either end is a line end or a terminal's return to the
            // start of the line (`\r\r\n` and `\r` before a prompt in terminal captures).
            let body = raw.trim_start_matches('\r');
            Some(Line {
                start: line_start + (raw.len() - body.len()),
                text: body.trim_end_matches('\r'),
            })
        })
}

/// A cursor over one line; `abs()` is the byte offset in the whole text.
pub(super) struct Scan<'a> {
    pub(super) line: &'a str,
    pub(super) base: usize,
    pub(super) pos: usize,
}

impl<'a> Scan<'a> {
    pub(super) fn new(line: &'a str, base: usize) -> Scan<'a> {
        Scan { line, base, pos: 0 }
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.pos).copied()
    }

    pub(super) fn abs(&self) -> usize {
        self.base + self.pos
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.line.len()
    }

    pub(super) fn rest(&self) -> &'a str {
        self.line.get(self.pos..).unwrap_or("")
    }

    pub(super) fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips spaces and tabs; whether there were any.
    pub(super) fn skip_ws(&mut self) -> bool {
        let before = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        self.pos > before
    }

    /// Takes ASCII bytes while `f` holds; returns the slice and its absolute start.
    pub(super) fn take(&mut self, f: impl Fn(u8) -> bool) -> (&'a str, usize) {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if b.is_ascii() && f(b) {
                self.pos += 1;
            } else {
                break;
            }
        }
        (
            self.line.get(start..self.pos).unwrap_or(""),
            self.base + start,
        )
    }

    /// At a `"`: the quoted text and the span of the whole quoted string (quotes included).
    /// On a missing closing quote, the span from the opening quote to the end of the line.
    pub(super) fn quoted(&mut self) -> Result<(&'a str, SourceSpan), SourceSpan> {
        let open = self.pos;
        if !self.eat(b'"') {
            return Err(sp(self.abs(), 1));
        }
        let rest = self.rest();
        match rest.find('"') {
            Some(close) => {
                let inner = rest.get(..close).unwrap_or("");
                self.pos += close + 1;
                Ok((inner, sp(self.base + open, close + 2)))
            }
            None => {
                self.pos = self.line.len();
                Err(sp(self.base + open, self.line.len().saturating_sub(open)))
            }
        }
    }
}

/// `0x…` hex or decimal, no sign; `None` on anything else or overflow.
pub(super) fn parse_uint(tok: &str) -> Option<u64> {
    if let Some(hex) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(hex, 16).ok()
    } else {
        if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        tok.parse().ok()
    }
}

/// Bare hex (as in `(2c90300a1b2c1)`), an optional `0x` allowed.
pub(super) fn parse_hex(tok: &str) -> Option<u64> {
    let hex = tok
        .strip_prefix("0x")
        .or_else(|| tok.strip_prefix("0X"))
        .unwrap_or(tok);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

pub(super) fn kind_index(kind: NodeKind) -> usize {
    match kind {
        NodeKind::Switch => 0,
        NodeKind::Hca => 1,
        NodeKind::Router => 2,
    }
}

pub(super) fn is_end_node(kind: NodeKind) -> bool {
    kind != NodeKind::Switch
}
