//! Reading input files: regular files only (a FIFO or a device such as `/dev/zero` would block
//! or never end), under a size cap, checked before and while reading.

use std::io::Read as _;
use std::path::Path;

/// Largest `.weft` source or `import()`ed file.
pub const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// Largest state, certificate or OpenSM dump (the 11 664-node `lfts.dump` is about 1.5 GB).
pub const MAX_DUMP_BYTES: u64 = 16 << 30;

/// The text of `path`, which must be a regular file (symbolic links followed) of at most
/// `cap` bytes. The error says what is wrong, without the path (callers name it).
pub fn read_regular(path: &Path, cap: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, FIFO or socket)"
        };
        return Err(format!("{kind}; weft reads regular files only"));
    }
    if meta.len() > cap {
        return Err(format!(
            "{} bytes, over the {} byte limit for this input",
            meta.len(),
            cap
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(format!("grew past the {cap} byte limit while being read"));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}
