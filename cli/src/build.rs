//! `weft build FILE -o DIR`: compile a fabric and write what switches and OpenSM consume.
//!
//! Files: `lfts.dump` (OpenSM's `file` engine input), `guid2lid` (OpenSM's LID cache),
//! `topology.net` (ibnetdiscover/ibsim format, with the LIDs), `state.json` (everything, plus
//! the routing's quality metrics under `quality`), and `certificate.json` (the proof, which
//! `weft verify --certificate` re-checks). Nothing is written unless the state is proven
//! (`--allow-unproven` writes it with an `UNPROVEN` file naming what failed). The directory is
//! written whole beside the target — the tables while the proof runs, since they do not
//! depend on it — and put in place only once proven: all or nothing (see [`swap_in`]: one
//! `renameat2(RENAME_EXCHANGE)` where the filesystem has it, else two renames that the next
//! run completes if a kill falls between them; [`recover`]). An output that is a symbolic
//! link to a directory is written through: the directory it points at is replaced, the link
//! stays.

use crate::findings::{self, Format};
use crate::{human_summary, out, ColorChoice, Fatal};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_compiler::build::Built;
use weft_compiler::Summary;
use weft_driver::build_dir::{self, EXTRAS, FILES, PSL_LINES};

/// `weft build` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The `.weft` file.
    file: PathBuf,
    /// Output directory (created, or replaced whole when it holds only a previous build).
    #[arg(long, short)]
    output: PathBuf,
    /// Write the tables even when a property is not proven, with an `UNPROVEN` file naming
    /// what failed (the exit code is still 1).
    #[arg(long)]
    allow_unproven: bool,
    /// Output format: human, json (the outcome with a `findings` array) or sarif.
    #[arg(long, default_value = "human")]
    pub(crate) format: Format,
}

/// Runs `weft build`.
pub fn run(args: Args, color: ColorChoice, quiet: bool) -> Result<ExitCode, Fatal> {
    let Args {
        file,
        output,
        allow_unproven,
        format,
    } = args;
    // A swap a kill interrupted is finished (or undone) first, whatever this run does.
    if let Some(note) = recover(&output).map_err(Fatal::Run)? {
        crate::term::clear();
        let _ = writeln!(std::io::stderr().lock(), "weft: {note}");
    }
    let compiled = weft_driver::compile_and_route(&file, &crate::progress)?;
    let diags = compiled.diagnostics();
    let weft_driver::Compiled {
        compilation: c,
        built: routed,
    } = compiled;
    let found = |report: Option<&weft_verifier::Report>| {
        findings::of_compiled(&c, &diags, report, &file.display().to_string())
    };
    if format == Format::Human {
        findings::emit_diagnostics(&found(None), &c.sources, color);
    }
    let doc = |ok: bool,
               written: &[PathBuf],
               built: Option<&Built>,
               report: Option<&weft_verifier::Report>| {
        let mut found = found(report);
        if let Some(b) = built {
            found.extend(findings::of_notes(&b.notes, &file.display().to_string()));
        }
        let outcome = serde_json::json!({
            "ok": ok,
            "output": output.display().to_string(),
            "written": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "engine": built.map(|b| b.engine.name()),
            "engine_used": built.map(|b| b.engine_used.name()),
            "engine_why": built.map(|b| &b.why),
            "verdict": report.map(|r| &r.verdict),
            "traffic": report.map(|r| &r.traffic),
            "proved": built.zip(report).map(|(b, r)| findings::proved(&b.state, r)),
        });
        match format {
            Format::Sarif => findings::sarif(&found, outcome),
            _ => {
                let mut v = findings::document("build", outcome);
                v["findings"] = serde_json::to_value(&found).unwrap_or_default();
                v
            }
        }
    };
    let Some(Ok(built)) = routed else {
        if format != Format::Human {
            out(
                None,
                &(serde_json::to_string_pretty(&doc(false, &[], None, None))? + "\n"),
            )?;
        }
        return Ok(ExitCode::from(1));
    };
    // The output directory is checked before any work, and written beside it while the
    // proof runs (the tables do not depend on it); it goes in place only when proven.
    let staging = Staging::new(&output).map_err(Fatal::Run)?;
    let (report, tables) = prove_and_write(&staging, &built, allow_unproven);
    let build_dir::Written {
        extras: tables,
        no_policy,
    } = tables.map_err(Fatal::Run)?;
    let mut files = FILES.to_vec();
    files.extend(tables);
    let mut verdict = String::new();
    crate::render::verdict_lines(&mut verdict, &report);
    let proven = report.is_proven();
    if !proven && !allow_unproven {
        drop(staging);
        if format != Format::Human {
            let v = doc(false, &[], Some(&built), Some(&report));
            out(None, &(serde_json::to_string_pretty(&v)? + "\n"))?;
            return Ok(ExitCode::from(1));
        }
        let text = crate::render::human(
            &built.state,
            Some(&report),
            None,
            &found(Some(&report)),
            "compiled",
            20,
        );
        out(None, &text)?;
        crate::term::clear();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "error: the compiled state is not proven; nothing written to `{}` \
             (`--allow-unproven` writes it anyway, marked UNPROVEN)",
            output.display()
        );
        return Ok(ExitCode::from(1));
    }
    crate::term::phase("writing");
    let written = staging.commit(&files).map_err(Fatal::Run)?;
    if format != Format::Human {
        let v = doc(proven, &written, Some(&built), Some(&report));
        out(None, &(serde_json::to_string_pretty(&v)? + "\n"))?;
        return Ok(if proven {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    if quiet && proven {
        return Ok(ExitCode::SUCCESS);
    }
    let text = built_text(&built, &verdict, &written, no_policy.as_deref());
    out(None, &text)?;
    Ok(if proven {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Proves `built` while its tables are written into `staging` (they do not depend on the
/// proof), then writes the verdict's files: the report, and what was written or why not.
fn prove_and_write(
    staging: &Staging,
    built: &Built,
    allow_unproven: bool,
) -> (weft_verifier::Report, Result<build_dir::Written, String>) {
    let proof = weft_driver::Proof {
        certificate: true,
        max_listed: 20,
    };
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let quality = weft_metrics::of_build(&built.state);
            build_dir::write_tables(staging.path(), built, &quality).map_err(|e| e.to_string())
        });
        let report = weft_driver::prove(built, proof, &crate::progress);
        // The verdict's files are written while the tables may still be.
        let mut verdict = String::new();
        crate::render::verdict_lines(&mut verdict, &report);
        let verdict = build_dir::write_verdict(staging.path(), &report, allow_unproven, &verdict)
            .map_err(|e| e.to_string());
        let tables = writer
            .join()
            .unwrap_or_else(|_| Err("the writer stopped (a bug in weft)".to_owned()));
        let written = tables.and_then(|mut t| {
            t.extras.extend(verdict?);
            Ok(t)
        });
        (report, written)
    })
}

/// What a build says for people: the fabric, the engine, the verdict, the files written and
/// the notes on files left out.
fn built_text(
    built: &Built,
    verdict: &str,
    written: &[PathBuf],
    no_policy: Option<&str>,
) -> String {
    let s = Summary::of(&built.state.fabric);
    let mut text = human_summary(&s);
    text += &crate::engine_line(built);
    text += verdict;
    for p in written {
        text += &format!("  wrote     {}\n", p.display());
    }
    if let Some(why) = no_policy {
        text += &format!(
            "  note      qos-policy.conf not written: {why}; state.json has every path SL\n"
        );
    }
    if build_dir::has_layers(&built.state) && build_dir::psl_lines(&built.state) > PSL_LINES {
        text += &format!(
            "  note      path-sl.psl not written: {} lines exceed {}; state.json has every path SL\n",
            crate::render::group(build_dir::psl_lines(&built.state)),
            crate::render::group(PSL_LINES)
        );
    }
    text
}

/// A fresh directory beside the output, created exclusively (a planted file or symlink at its
/// name is an error, never followed), filled, then put in the output's place: all or nothing.
/// Dropped without [`Staging::commit`], it is removed.
struct Staging {
    /// The output as named (the paths reported).
    dir: PathBuf,
    /// The directory replaced: the output, or where its symbolic links end.
    target: PathBuf,
    parent: PathBuf,
    name: String,
    fresh: PathBuf,
    _unfinished: crate::term::Unfinished,
}

/// The directory `-o DIR` replaces (`DIR`, or where its chain of symbolic links ends), the
/// directory it is in, and its name.
fn place(dir: &Path) -> Result<(PathBuf, PathBuf, String), String> {
    let target = weft_deploy::files::resolve(dir).map_err(|e| e.to_string())?;
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .ok_or_else(|| {
            format!(
                "`{}` cannot be replaced as a whole; name a new or existing output directory",
                dir.display()
            )
        })?
        .to_owned();
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((target, parent, name))
}

impl Staging {
    /// Checks that `dir` may be replaced (absent, or holding nothing but what `weft build`
    /// writes) and creates the fresh directory beside it.
    fn new(dir: &Path) -> Result<Staging, String> {
        let (target, parent, name) = place(dir)?;
        std::fs::create_dir_all(&parent)
            .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
        check_replaceable(&target)?;
        let fresh = parent.join(format!(".{name}.weft-build-{}", std::process::id()));
        std::fs::create_dir(&fresh)
            .map_err(|e| format!("cannot create `{}`: {e}", fresh.display()))?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            target,
            parent,
            name,
            _unfinished: crate::term::unfinished(&fresh),
            fresh,
        })
    }

    fn path(&self) -> &Path {
        &self.fresh
    }

    /// Puts the fresh directory in the output's place; returns the paths of `files` there.
    fn commit(self, files: &[&str]) -> Result<Vec<PathBuf>, String> {
        crate::term::commit(|| swap_in(&self.fresh, &self.target, &self.parent, &self.name))?;
        Ok(files.iter().map(|f| self.dir.join(f)).collect())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // After a commit the fresh directory is gone (renamed); otherwise it is removed.
        let _ = std::fs::remove_dir_all(&self.fresh);
    }
}

/// `dir` may be replaced: absent, or a directory holding only what `weft build` writes.
fn check_replaceable(dir: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read `{}`: {e}", dir.display())),
    };
    if !meta.is_dir() {
        return Err(format!(
            "`{}` exists and is not a directory; weft build writes a directory",
            dir.display()
        ));
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?;
        let file = entry.file_name();
        // Only what a previous `weft build` leaves may be replaced.
        if !FILES
            .iter()
            .chain(&EXTRAS)
            .any(|o| file.to_str() == Some(o))
        {
            return Err(format!(
                "`{}` holds `{}`, which weft build did not write; choose a new or empty output \
                 directory (weft replaces the whole directory)",
                dir.display(),
                file.to_string_lossy()
            ));
        }
    }
    Ok(())
}

/// The names beside `DIR` that a swap leaves only when a kill interrupts it: `.DIR.weft-new`, a
/// whole build (the new one waiting to go in, or after an exchange the old one), and
/// `.DIR.weft-old`, the previous build moved aside.
fn aside(parent: &Path, name: &str) -> (PathBuf, PathBuf) {
    (
        parent.join(format!(".{name}.weft-new")),
        parent.join(format!(".{name}.weft-old")),
    )
}

/// Test only: `two-step` takes the fallback of [`swap_in`] even where the filesystem has
/// `RENAME_EXCHANGE`; `two-step-abort` also aborts the process between its two renames, and
/// `exchange-abort` right after the exchange (what a SIGKILL, an OOM kill or a power loss
/// there would leave).
const TEST_SWAP: &str = "WEFT_TEST_SWAP";

fn test_swap(what: &str) -> bool {
    std::env::var(TEST_SWAP).is_ok_and(|v| v == what || v.starts_with(&format!("{what}-")))
}

fn abort_if(what: &str) {
    if std::env::var(TEST_SWAP).is_ok_and(|v| v == what) {
        std::process::abort();
    }
}

/// Puts `fresh` (a whole build, synced) where `dir` is, so that a kill at any moment leaves
/// `dir` holding the old build or the new one, or (two-step only) lets the next run put one
/// back ([`recover`]):
///
/// - `dir` absent: one rename.
/// - Otherwise `fresh` is first renamed to `.DIR.weft-new` (a whole build waiting to go in).
/// - `renameat2(RENAME_EXCHANGE)`: `.DIR.weft-new` and `dir` swap in one step; the old build,
///   now at `.DIR.weft-new`, is removed.
/// - Where the filesystem cannot exchange (`EINVAL`, `ENOSYS`): `dir` is renamed to
///   `.DIR.weft-old`, `.DIR.weft-new` to `dir`, and the old one removed. A kill between these
///   two renames leaves no `dir`: the next `weft build -o DIR` finds `.DIR.weft-new` and moves
///   it in before anything else (by hand: `mv .DIR.weft-new DIR`).
///
/// The directory holding them is synced after each step that matters.
fn swap_in(fresh: &Path, dir: &Path, parent: &Path, name: &str) -> Result<(), String> {
    use weft_deploy::files::{exchange, sync_dir};
    let fail = |e: std::io::Error| format!("cannot replace `{}`: {e}", dir.display());
    let sync = |p: &Path| sync_dir(p).map_err(|e| e.to_string());
    sync(fresh)?;
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::rename(fresh, dir).map_err(fail)?;
        return sync(parent);
    }
    let (new, old) = aside(parent, name);
    std::fs::rename(fresh, &new).map_err(fail)?;
    // From here a failure puts the build back at `fresh`, for the staging's drop to remove.
    let undo = |e: String| {
        let _ = std::fs::rename(&new, fresh);
        e
    };
    sync(parent).map_err(undo)?;
    let exchanged = if test_swap("two-step") {
        false
    } else {
        exchange(&new, dir).map_err(|e| undo(e.to_string()))?
    };
    if exchanged {
        sync(parent)?;
        abort_if("exchange-abort");
        // The old build; a kill while removing it leaves what the next run removes.
        let _ = std::fs::remove_dir_all(&new);
        return Ok(());
    }
    std::fs::rename(dir, &old).map_err(|e| undo(fail(e)))?;
    abort_if("two-step-abort");
    if let Err(e) = std::fs::rename(&new, dir) {
        let _ = std::fs::rename(&old, dir);
        return Err(undo(fail(e)));
    }
    sync(parent)?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

/// Finishes a swap a kill interrupted ([`swap_in`]), before `weft build -o DIR` does anything
/// else: with no `DIR`, `.DIR.weft-new` (a whole build) is moved in, else `.DIR.weft-old` is
/// moved back; with a `DIR`, what is left beside it is removed. Only directories holding
/// nothing but what `weft build` writes are touched. Returns what was done when something
/// was put in place.
fn recover(dir: &Path) -> Result<Option<String>, String> {
    let Ok((target, parent, name)) = place(dir) else {
        // Not a name a build can go to: `Staging::new` says why.
        return Ok(None);
    };
    let (new, old) = aside(&parent, &name);
    let ours = |p: &Path| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) && check_replaceable(p).is_ok()
    };
    let fail = |e: std::io::Error| format!("cannot recover `{}`: {e}", target.display());
    let mut note = None;
    if std::fs::symlink_metadata(&target).is_err() {
        for (from, what) in [
            (
                &new,
                "moved in the build an interrupted run was putting there",
            ),
            (
                &old,
                "put back the previous build an interrupted run had moved aside",
            ),
        ] {
            if ours(from) {
                std::fs::rename(from, &target).map_err(fail)?;
                weft_deploy::files::sync_dir(&parent).map_err(|e| e.to_string())?;
                note = Some(format!("`{}` was missing: {what}", target.display()));
                break;
            }
        }
    }
    if std::fs::symlink_metadata(&target).is_ok() {
        for p in [&new, &old] {
            if ours(p) {
                std::fs::remove_dir_all(p).map_err(fail)?;
            }
        }
    }
    Ok(note)
}
