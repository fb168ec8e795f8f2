//! Problems found reading OpenSM and ibdiagnet files: every one, with its line.

use std::fmt;

/// One problem in a file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("{file}:{line}: {message}")]
#[diagnostic(code(weft::opensm))]
pub struct DumpError {
    /// Which kind of file (`lfts`, `sl2vl`, `path-sl`, `guid2lid`).
    pub file: &'static str,
    /// 1-based line number (0: the whole file).
    pub line: usize,
    /// What is wrong (lowercase, no final period).
    pub message: String,
}

/// Every problem found in one file. Displayed capped: at most [`DumpErrors::SHOWN`] problems
/// of one kind (the same message up to names and numbers), then how many more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpErrors(pub Vec<DumpError>);

impl DumpErrors {
    /// Problems of one kind shown before "… and N more like this".
    pub const SHOWN: usize = 10;
}

/// The shape of a message: backticked names and numbers blanked, so that "no switch with GUID
/// `0x…1`" and "… `0x…2`" are one kind.
pub(crate) fn shape(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    let mut digits = false;
    for c in message.chars() {
        if c == '`' {
            quoted = !quoted;
            if quoted {
                out.push_str("`…`");
            }
            continue;
        }
        if quoted {
            continue;
        }
        if c.is_ascii_hexdigit() && (digits || c.is_ascii_digit()) || (digits && c == 'x') {
            if !digits {
                out.push('#');
            }
            digits = true;
            continue;
        }
        digits = false;
        out.push(c);
    }
    out
}

/// Writes `errors` capped per kind (see [`DumpErrors::SHOWN`]).
pub(crate) fn write_capped<'a>(
    f: &mut fmt::Formatter<'_>,
    errors: impl Iterator<Item = (String, &'a dyn fmt::Display)>,
    shown: usize,
) -> fmt::Result {
    let mut count: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut first = true;
    for (kind, e) in errors {
        let n = count.entry(kind.clone()).or_insert_with(|| {
            order.push(kind.clone());
            0
        });
        *n += 1;
        if *n <= shown {
            if !first {
                writeln!(f)?;
            }
            first = false;
            write!(f, "{e}")?;
        }
    }
    for kind in order {
        let n = count.get(&kind).copied().unwrap_or(0);
        if n > shown {
            write!(f, "\n… and {} more like this ({})", n - shown, kind.trim())?;
        }
    }
    Ok(())
}

impl fmt::Display for DumpErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_capped(
            f,
            self.0.iter().map(|e| {
                (
                    format!("{}: {}", e.file, shape(&e.message)),
                    e as &dyn fmt::Display,
                )
            }),
            Self::SHOWN,
        )
    }
}

impl std::error::Error for DumpErrors {}

pub(crate) struct Collector {
    pub file: &'static str,
    pub errors: Vec<DumpError>,
    pub warnings: Vec<DumpError>,
}

impl Collector {
    pub(super) fn new(file: &'static str) -> Collector {
        Collector {
            file,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub(super) fn error(&mut self, line: usize, message: impl Into<String>) {
        self.errors.push(DumpError {
            file: self.file,
            line,
            message: message.into(),
        });
    }

    pub(super) fn warn(&mut self, line: usize, message: impl Into<String>) {
        self.warnings.push(DumpError {
            file: self.file,
            line,
            message: message.into(),
        });
    }

    pub(super) fn finish<T>(self, value: T) -> Result<(T, Vec<DumpError>), DumpErrors> {
        if self.errors.is_empty() {
            Ok((value, self.warnings))
        } else {
            Err(DumpErrors(self.errors))
        }
    }
}

/// `0x…` hex or decimal.
pub(crate) fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Why a state could not be assembled from OpenSM's files: problems in the files, or in the
/// state they describe together with the topology (LID clashes, live ports without LIDs, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssembleErrors {
    /// Problems in the files, with their lines.
    pub dumps: Vec<DumpError>,
    /// Problems of the assembled state.
    pub state: Vec<weft_fabric::StateError>,
}

impl fmt::Display for AssembleErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.dumps.is_empty() {
            write!(f, "{}", DumpErrors(self.dumps.clone()))?;
        }
        if !self.state.is_empty() {
            if !self.dumps.is_empty() {
                writeln!(f)?;
            }
            write!(f, "{}", weft_fabric::StateErrors(self.state.clone()))?;
        }
        Ok(())
    }
}

impl std::error::Error for AssembleErrors {}
