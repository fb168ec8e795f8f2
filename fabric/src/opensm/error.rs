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

/// Every problem found in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpErrors(pub Vec<DumpError>);

impl fmt::Display for DumpErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DumpErrors {}

pub(crate) struct Collector {
    pub file: &'static str,
    pub errors: Vec<DumpError>,
    pub warnings: Vec<DumpError>,
}

impl Collector {
    pub fn new(file: &'static str) -> Collector {
        Collector {
            file,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub fn error(&mut self, line: usize, message: impl Into<String>) {
        self.errors.push(DumpError {
            file: self.file,
            line,
            message: message.into(),
        });
    }

    pub fn warn(&mut self, line: usize, message: impl Into<String>) {
        self.warnings.push(DumpError {
            file: self.file,
            line,
            message: message.into(),
        });
    }

    pub fn finish<T>(self, value: T) -> Result<(T, Vec<DumpError>), DumpErrors> {
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
