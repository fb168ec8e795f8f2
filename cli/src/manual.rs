//! `weft completions SHELL` and `weft man --out DIR`: shell completion scripts and man pages
//! generated from the same clap definitions that parse the command line (`clap_complete`,
//! `clap_mangen`), so they name every command and option the binary takes; and the hidden
//! `weft __commands`, the command tree as JSON for the tests that keep `docs/commands/` and
//! ARCHITECTURE.md in step with it.
//!
//! The man pages are written by the binary, not by a build script: the clap definitions are
//! the binary's own types, and a build script cannot see them without moving every command's
//! arguments into a library. `weft man --out DIR` writes `DIR/man1/weft.1` and one
//! `DIR/man1/weft-COMMAND.1` per command, so `MANPATH=DIR man weft-plan` (or `man -l
//! DIR/man1/weft-plan.1`) reads one; `DIR` may be a directory `man` already searches.

use crate::{out, output, Fatal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `weft completions` arguments.
#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in: load the script with `source <(weft completions bash)`, or
    /// save it where the shell looks for completions (bash: `~/.local/share/bash-completion/completions/weft`).
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// `weft man` arguments.
#[derive(clap::Args)]
pub struct ManArgs {
    /// The directory to write under: the pages go to `DIR/man1/` (created if missing), which
    /// `MANPATH=DIR man weft-plan` reads.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Prints `shell`'s completion script for `cmd` on stdout.
pub fn completions(args: &CompletionsArgs, mut cmd: clap::Command) -> Result<ExitCode, Fatal> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "weft", &mut script);
    let text = String::from_utf8(script)
        .map_err(|e| Fatal::Run(format!("the completion script is not UTF-8: {e}")))?;
    out(None, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// The man pages of `cmd` and of each of its visible commands: (file name, roff text), the
/// top-level page first, then the commands in the order `weft --help` lists them.
pub fn pages(cmd: clap::Command) -> Result<Vec<(String, Vec<u8>)>, Fatal> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    for c in std::iter::once(&cmd).chain(visible(&cmd)) {
        let man = clap_mangen::Man::new(c.clone()).manual("weft manual");
        let mut text = Vec::new();
        man.render(&mut text).map_err(|e| {
            Fatal::Run(format!(
                "cannot render the man page of `{}`: {e}",
                c.get_name()
            ))
        })?;
        pages.push((man.get_filename(), text));
    }
    Ok(pages)
}

/// Writes every man page under `DIR/man1/` and says where.
pub fn man(args: &ManArgs, cmd: clap::Command, quiet: bool) -> Result<ExitCode, Fatal> {
    let dir = args.out.join("man1");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Fatal::Run(format!("cannot create `{}`: {e}", dir.display())))?;
    let pages = pages(cmd)?;
    for (name, text) in &pages {
        output::write_file(&dir.join(name), text).map_err(Fatal::Run)?;
    }
    if !quiet {
        out(
            None,
            &format!(
                "wrote {} man pages to {}; read one with `MANPATH={} man weft-plan`\n",
                pages.len(),
                dir.display(),
                shown(&args.out)
            ),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `path` as a shell word (quoted when it holds anything but plain characters).
fn shown(path: &Path) -> String {
    let p = path.display().to_string();
    if !p.is_empty()
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,@%:".contains(c))
    {
        p
    } else {
        format!("'{}'", p.replace('\'', r"'\''"))
    }
}

/// The commands of `cmd` users see: neither hidden ones nor clap's `help`.
fn visible(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// The hidden command's name ([`commands`]).
pub const COMMANDS: &str = "__commands";

/// `weft __commands`: the visible commands as JSON, in the order `weft --help` lists them:
/// each one's name and its one-line summary. The tests read the command tree from here (not
/// by parsing help text) to hold `docs/commands/` and ARCHITECTURE.md to it.
pub fn commands(mut cmd: clap::Command) -> Result<ExitCode, Fatal> {
    cmd.build();
    let list: Vec<serde_json::Value> = visible(&cmd)
        .map(|c| {
            serde_json::json!({
                "name": c.get_name(),
                "about": c.get_about().map(ToString::to_string).unwrap_or_default(),
            })
        })
        .collect();
    let doc = serde_json::json!({"format": "weft-commands", "version": 1, "commands": list});
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Fatal::Run(format!("cannot write the command list: {e}")))?;
    out(None, &(text + "\n"))?;
    Ok(ExitCode::SUCCESS)
}
