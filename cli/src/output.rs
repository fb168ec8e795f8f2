//! Files the CLI writes outside `weft build`'s directory (`-o` of `export` and `import`,
//! `fmt --write`, `verify --write-certificate`): whole or not at all.
//!
//! One implementation with the rest of weft ([`weft_deploy::files::Pending`]): the text goes
//! to a temporary file created exclusively beside the target under an unpredictable name (a
//! file or symlink planted at any name is never followed), synced, given the permissions of
//! the file it replaces, and renamed over it; the directory is synced. A target that is a
//! symlink is written through: the file it points at is replaced and the link stays.
//! Interrupted before the rename, the temporary file is removed ([`crate::term`]).

use weft_deploy::files::Pending;

/// Writes `text` to `path`, all or nothing.
pub fn write_file(path: &std::path::Path, text: &[u8]) -> Result<(), String> {
    let fail = |e: weft_deploy::files::FileError| format!("cannot write `{}`: {e}", path.display());
    let mut pending = Pending::beside(path).map_err(fail)?;
    let _guard = crate::term::unfinished(pending.temp());
    pending.write_all(text).map_err(fail)?;
    crate::term::commit(|| pending.commit()).map_err(fail)?;
    Ok(())
}
