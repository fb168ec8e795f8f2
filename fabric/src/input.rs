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
