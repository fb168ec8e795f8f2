//! Files the CLI writes outside `weft build`'s directory (`-o` of `export` and `import`,
//! `fmt --write`, `verify --write-certificate`): whole or not at all.
//!
//! The text goes to a temporary file created exclusively beside the target (a file or symlink
//! planted at that name is an error, never followed), synced, given the permissions of the
//! file it replaces, and renamed over it. A target that is a symlink is written through: the
//! file it points at is replaced and the link stays. Interrupted before the rename, the
//! temporary file is removed ([`crate::term`]).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Writes `text` to `path`, all or nothing.
pub fn write_file(path: &Path, text: &[u8]) -> Result<(), String> {
    let target = resolve(path)?;
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("`{}` is not a file name", path.display()))?;
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    static SERIAL: AtomicU32 = AtomicU32::new(0);
    let tmp = dir.join(format!(
        ".{name}.weft-tmp-{}-{}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let fail = |e: std::io::Error| format!("cannot write `{}`: {e}", target.display());
    let guard = crate::term::unfinished(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(&fail)?;
    let written = (|| {
        f.write_all(text)?;
        if let Ok(m) = std::fs::metadata(&target) {
            f.set_permissions(m.permissions())?;
        }
        f.sync_all()
    })();
    drop(f);
    let result = written
        .map_err(&fail)
        .and_then(|()| crate::term::commit(|| std::fs::rename(&tmp, &target)).map_err(&fail));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    drop(guard);
    result
}

/// The file `path` names: itself, or where its chain of symlinks ends.
fn resolve(path: &Path) -> Result<PathBuf, String> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)
                    .map_err(|e| format!("cannot read the link `{}`: {e}", p.display()))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            Ok(m) if !m.is_file() => {
                return Err(format!("`{}` is not a regular file", path.display()));
            }
            _ => return Ok(p),
        }
    }
    Err(format!("`{}`: too many levels of symlinks", path.display()))
}
