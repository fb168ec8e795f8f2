//! Host lists as operators write them, in Slurm's hostlist syntax: `cn[001-128,200]`,
//! `rack[1-2]-cn[01-04]`. A host list is one token: a name that starts with a letter or `_`,
//! goes on with letters, digits, `_` and `-`, and has brackets of numbers and ranges in it,
//! at least one of them with a range (`1-4`) or a comma; `cn[5]` alone is an index, not a
//! host list. `token_len` is that shape, for the compiler's hand lexer and its grammar's
//! `hostlist` rule (a test in the compiler holds the two equal) and for the simulator's job
//! files.
//!
//! A range keeps the zero padding of its first number (`cn[001-128]` names `cn001` …
//! `cn128`; `[8-10]` names `8`, `9`, `10`); with several brackets the last counts fastest
//! (`rack[1-2]-cn[01-02]`: `rack1-cn01`, `rack1-cn02`, `rack2-cn01`, `rack2-cn02`).

use std::fmt::Write as _;

/// One piece of a host list: text, or a bracket of numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Text copied into every name.
    Text(String),
    /// A bracket: its runs in order.
    Numbers(Vec<Run>),
}

/// `lo-hi` inside a bracket (one number: `lo == hi`), each number printed at least `width`
/// digits wide (the digits of `lo` as written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// First number.
    pub lo: u64,
    /// Last number (inclusive, at least `lo`).
    pub hi: u64,
    /// Zero padding: the digits `lo` was written with.
    pub width: usize,
}

impl Run {
    /// How many numbers the run holds.
    fn len(self) -> u64 {
        self.hi.saturating_sub(self.lo).saturating_add(1)
    }
}

/// A parsed host list: its text as written and its pieces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostList {
    /// The list as written (`cn[001-128,200]`).
    pub text: String,
    /// Text and brackets, in order.
    pub parts: Vec<Part>,
}

/// Why a host list cannot be expanded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostListError {
    /// `[9-3]`.
    #[error("the range `{lo}-{hi}` runs backwards")]
    Backwards {
        /// The first number as written.
        lo: String,
        /// The last number as written.
        hi: String,
    },
    /// A number of more digits than a 64-bit count holds.
    #[error("`{0}` is too long a number to count with")]
    TooLong(String),
}

impl HostList {
    /// How many names the list expands to (saturating at `u64::MAX`).
    pub fn len(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(_) => 1,
                Part::Numbers(runs) => runs.iter().fold(0u64, |n, r| n.saturating_add(r.len())),
            })
            .fold(1u64, u64::saturating_mul)
    }

    /// Whether the list names nothing (never, for a parsed list: every bracket holds a run).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The names, in order: the last bracket counts fastest.
    pub fn names(&self) -> Names<'_> {
        let brackets: Vec<&[Run]> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Numbers(runs) => Some(runs.as_slice()),
                Part::Text(_) => None,
            })
            .collect();
        Names {
            list: self,
            digits: brackets
                .iter()
                .map(|runs| (0, runs.first().map_or(0, |r| r.lo)))
                .collect(),
            brackets,
            done: self.is_empty(),
        }
    }
}

/// The names of a [`HostList`], in order ([`HostList::names`]).
#[derive(Debug)]
pub struct Names<'a> {
    list: &'a HostList,
    /// The brackets' runs, in order.
    brackets: Vec<&'a [Run]>,
    /// Per bracket: the run and the number it is at.
    digits: Vec<(usize, u64)>,
    done: bool,
}

impl Iterator for Names<'_> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        if self.done {
            return None;
        }
        let mut name = String::new();
        let mut at = self.digits.iter();
        for p in &self.list.parts {
            match p {
                Part::Text(t) => name.push_str(t),
                Part::Numbers(runs) => {
                    let (run, n) = at.next().copied().unwrap_or_default();
                    let width = runs.get(run).map_or(0, |r| r.width);
                    let _ = write!(name, "{n:0width$}");
                }
            }
        }
        // Count up, the last bracket fastest.
        self.done = true;
        for (slot, runs) in self.digits.iter_mut().zip(&self.brackets).rev() {
            let (run, n) = *slot;
            let Some(r) = runs.get(run) else { continue };
            if n < r.hi {
                *slot = (run, n + 1);
                self.done = false;
                break;
            }
            if let Some(next) = runs.get(run + 1) {
                *slot = (run + 1, next.lo);
                self.done = false;
                break;
            }
            *slot = (0, runs.first().map_or(0, |f| f.lo));
        }
        Some(name)
    }
}

/// Reads a host list token (the grammar has checked its shape).
pub fn parse(text: &str) -> Result<HostList, HostListError> {
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.split_once('[') {
            None => {
                parts.push(Part::Text(rest.to_owned()));
                rest = "";
            }
            Some((before, after)) => {
                if !before.is_empty() {
                    parts.push(Part::Text(before.to_owned()));
                }
                let (inside, next) = after.split_once(']').unwrap_or((after, ""));
                let mut runs = Vec::new();
                for item in inside.split(',') {
                    let (lo, hi) = item.split_once('-').unwrap_or((item, item));
                    let number = |s: &str| {
                        s.parse::<u64>()
                            .map_err(|_| HostListError::TooLong(s.to_owned()))
                    };
                    let (l, h) = (number(lo)?, number(hi)?);
                    if h < l {
                        return Err(HostListError::Backwards {
                            lo: lo.to_owned(),
                            hi: hi.to_owned(),
                        });
                    }
                    runs.push(Run {
                        lo: l,
                        hi: h,
                        width: lo.len(),
                    });
                }
                parts.push(Part::Numbers(runs));
                rest = next;
            }
        }
    }
    Ok(HostList {
        text: text.to_owned(),
        parts,
    })
}

/// The length of the host list token at the start of `s`, if one starts there: the shape
/// of the grammar's `hostlist` rule, for the hand lexer.
pub fn token_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let tail = |mut i: usize| {
        while at(i).is_ascii_alphanumeric() || at(i) == b'_' || at(i) == b'-' {
            i += 1;
        }
        i
    };
    if !(at(0).is_ascii_alphabetic() || at(0) == b'_') {
        return None;
    }
    let mut i = tail(1);
    let mut multi = false;
    while at(i) == b'[' {
        let Some((len, many)) = bracket(b.get(i..).unwrap_or_default()) else {
            break;
        };
        multi |= many;
        i = tail(i + len);
    }
    multi.then_some(i)
}

/// The length of the bracket `[item,item,…]` at the start of `b`, and whether it holds a
/// range or a comma; items are digits, optionally `-` and digits.
fn bracket(b: &[u8]) -> Option<(usize, bool)> {
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let digits = |mut i: usize| {
        let start = i;
        while at(i).is_ascii_digit() {
            i += 1;
        }
        (i > start).then_some(i)
    };
    let mut i = 1;
    let mut many = false;
    loop {
        i = digits(i)?;
        if at(i) == b'-' {
            i = digits(i + 1)?;
            many = true;
        }
        match at(i) {
            b',' => {
                many = true;
                i += 1;
            }
            b']' => return Some((i + 1, many)),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn names(text: &str) -> Vec<String> {
        parse(text).unwrap().names().collect()
    }

    #[test]
    fn ranges_commas_padding_and_products() {
        assert_eq!(
            names("cn[001-003,200]"),
            ["cn001", "cn002", "cn003", "cn200"]
        );
        assert_eq!(names("n[8-10]"), ["n8", "n9", "n10"]);
        assert_eq!(names("n[08-10]x"), ["n08x", "n09x", "n10x"]);
        assert_eq!(
            names("rack[1-2]-cn[01-02]"),
            ["rack1-cn01", "rack1-cn02", "rack2-cn01", "rack2-cn02"]
        );
        assert_eq!(names("a[1][2,3]"), ["a12", "a13"]);
        assert_eq!(parse("cn[001-128,200]").unwrap().len(), 129);
        assert_eq!(
            parse("cn[9-3]"),
            Err(HostListError::Backwards {
                lo: "9".into(),
                hi: "3".into()
            })
        );
        assert!(matches!(
            parse("cn[1-99999999999999999999]"),
            Err(HostListError::TooLong(_))
        ));
    }

    #[test]
    fn the_token_needs_a_range_or_a_comma() {
        assert_eq!(token_len("cn[001-128,200] "), Some(15));
        assert_eq!(token_len("cn[1,2]"), Some(7));
        assert_eq!(token_len("rack[1-2]-cn[01-04].p"), Some(19));
        assert_eq!(token_len("a[1][2,3]"), Some(9));
        // An index, a slice, an expression inside: not host lists.
        assert_eq!(token_len("cn[5]"), None);
        assert_eq!(token_len("m[l..h]"), None);
        assert_eq!(token_len("leaf[i-1]"), None);
        assert_eq!(token_len("cn[1-]"), None);
        assert_eq!(token_len("1[1-2]"), None);
        // A malformed bracket after a host list ends the token there.
        assert_eq!(token_len("cn[1-2][x]"), Some(7));
    }
}
