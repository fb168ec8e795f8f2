//! Reading input files: regular files only (a FIFO or a device such as `/dev/zero` would block
//! or never end), under a size cap, checked before and while reading. Every input weft reads
//! from a path (sources, states, dumps, plans, journals, traffic files) comes through here;
//! it sits in the bottom crate so that every crate that reads a file can use it.

use std::io::Read as _;
use std::path::Path;

/// Largest `.weft` source or `import()`ed file.
pub const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// Largest state, certificate, plan or OpenSM dump (the 11 664-node `lfts.dump` is about
/// 1.5 GB).
pub const MAX_DUMP_BYTES: u64 = 16 << 30;

/// Why a file could not be read. The text says what is wrong, without the path (callers name
/// it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The system said no (missing, permissions, I/O).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A directory, device, FIFO or socket.
    #[error("{kind}; weft reads regular files only")]
    NotRegular {
        /// "a directory", or what else it is.
        kind: &'static str,
    },
    /// Larger than the cap before reading.
    #[error("{len} bytes, over the {cap} byte limit for this input")]
    TooLarge {
        /// Its size in bytes.
        len: u64,
        /// The cap in bytes.
        cap: u64,
    },
    /// It grew past the cap while being read.
    #[error("grew past the {cap} byte limit while being read")]
    Grew {
        /// The cap in bytes.
        cap: u64,
    },
    /// Not UTF-8.
    #[error("not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The first invalid byte.
        offset: usize,
    },
}

/// The text of `path`, which must be a regular file (symbolic links followed) of at most
/// `cap` bytes.
pub fn read_regular(path: &Path, cap: u64) -> Result<String, ReadError> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, FIFO or socket)"
        };
        return Err(ReadError::NotRegular { kind });
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge {
            len: meta.len(),
            cap,
        });
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::Grew { cap });
    }
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })
}

/// A time span as people write it in options and files: a decimal number (digits and one
/// optional `.`; no sign, no exponent) and a unit, `ns`, `us` (or `µs`), `ms` or `s`, with
/// blanks around either allowed (`500ms`, `2s`, `0.25 s`): the span in nanoseconds, unrounded.
/// `None` for anything else. The one duration parser of weft; callers say which range they
/// take.
pub fn duration_ns(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    if num.is_empty() || num.matches('.').count() > 1 || num == "." {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    Some(v * scale)
}

#[cfg(test)]
mod tests {
    use super::duration_ns;

    #[test]
    fn durations_are_a_number_and_a_unit() {
        assert_eq!(duration_ns("500ms"), Some(5e8));
        assert_eq!(duration_ns(" 2 s "), Some(2e9));
        assert_eq!(duration_ns("0.25s"), Some(2.5e8));
        assert_eq!(duration_ns("100us"), Some(1e5));
        assert_eq!(duration_ns("100µs"), Some(1e5));
        assert_eq!(duration_ns("7ns"), Some(7.0));
        assert_eq!(duration_ns("0ms"), Some(0.0));
        for bad in [
            "", "5", "ms", ".s", "1.2.3s", "-1s", "+1s", "1e9s", "nans", "infs", "2 min", "1 h",
        ] {
            assert_eq!(duration_ns(bad), None, "{bad}");
        }
    }
}
