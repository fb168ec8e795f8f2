//! `weft fmt FILE`: the canonical layout of a `.weft` file (comments kept).

use crate::{display_name, emit_diagnostics, out, read, ColorChoice, Fatal};
use std::path::PathBuf;
use std::process::ExitCode;
use weft_compiler::diagnostic;

/// `weft fmt` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The `.weft` file.
    file: PathBuf,
    /// Rewrite the file in place (through a symlink, keeping its permissions).
    #[arg(long, short)]
    write: bool,
    /// Exit 1 if the file is not formatted; print nothing else.
    #[arg(long, conflicts_with = "write")]
    check: bool,
}

/// Runs `weft fmt`.
pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    let Args { file, write, check } = args;
    let text = read(&file)?;
    let mut sources = diagnostic::SourceMap::new();
    let id = sources.add(display_name(&file), text.as_str());
    match weft_compiler::fmt::format(&text, id) {
        Ok(formatted) => {
            if check {
                return Ok(if formatted == text {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                });
            }
            if write {
                if formatted != text {
                    out(Some(&file), &formatted)?;
                }
            } else {
                out(None, &formatted)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(diags) => {
            emit_diagnostics(&diags, &sources, color);
            Ok(ExitCode::from(1))
        }
    }
}
