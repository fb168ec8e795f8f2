//! `weft`: the command-line front end. The only crate that writes to the terminal.
//!
//! Exit codes: 0 ok, 1 findings (errors in the input or the fabric), 2 could not run.

mod build;
mod input;
mod report;
mod verify;

use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_compiler::diagnostic::{self, RenderOptions};
use weft_compiler::{Compilation, Summary};

#[derive(Parser)]
#[command(
    name = "weft",
    version,
    about = "A declarative compiler and verifier for InfiniBand fabrics"
)]
struct Cli {
    /// Colour in diagnostics: auto, always or never.
    #[arg(long, global = true, default_value = "auto")]
    color: ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Human,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ExportFormat {
    /// ibnetdiscover topology (also ibsim's net file).
    Ibnetdiscover,
    /// The elaborated fabric as JSON.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a fabric: LIDs and routing; write lfts.dump, guid2lid, topology.net, state.json.
    Build {
        /// The `.weft` file.
        file: PathBuf,
        /// Output directory (created, or replaced whole when it holds only a previous build).
        #[arg(long, short)]
        output: PathBuf,
        /// Write the tables even when a property is not proven, with an `UNPROVEN` file naming
        /// what failed (the exit code is still 1).
        #[arg(long)]
        allow_unproven: bool,
    },
    /// Compile a fabric and print the quality of its routing (balance, loads, eBB, hops).
    Report(report::Args),
    /// Prove a fabric state deadlock-free and connected (or show credit loops and failed routes).
    Verify(verify::Args),
    /// Parse, elaborate and validate a fabric; print a summary.
    Check {
        /// The `.weft` file.
        file: PathBuf,
        /// Output format.
        #[arg(long, default_value = "human")]
        format: Format,
        /// Stop after validating the description: no routing, no proof.
        #[arg(long)]
        no_verify: bool,
    },
    /// Format a `.weft` file canonically.
    Fmt {
        /// The `.weft` file.
        file: PathBuf,
        /// Rewrite the file in place.
        #[arg(long, short)]
        write: bool,
        /// Exit 1 if the file is not formatted; print nothing else.
        #[arg(long, conflicts_with = "write")]
        check: bool,
    },
    /// Write the fabric's topology in another format.
    Export {
        /// The `.weft` file.
        file: PathBuf,
        /// Output format.
        #[arg(long, default_value = "ibnetdiscover")]
        format: ExportFormat,
        /// Output file (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Turn an ibnetdiscover dump into a `.weft` program.
    Import {
        /// The ibnetdiscover file (or an ibsim net file).
        file: PathBuf,
        /// A node-name map (`<guid> "<name>"` per line).
        #[arg(long)]
        node_name_map: Option<PathBuf>,
        /// Fabric name (default: the file's stem).
        #[arg(long)]
        name: Option<String>,
        /// Output file (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// Reads imports relative to the main file's directory.
struct Files {
    dir: PathBuf,
}

impl weft_compiler::Host for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        let p = self.dir.join(path);
        input::read_regular(&p, input::MAX_SOURCE_BYTES)
            .map_err(|e| format!("{}: {e}", p.display()))
    }
}

/// A failure to run at all (exit 2).
struct Fatal(String);

impl<E: std::fmt::Display + 'static> From<E> for Fatal {
    fn from(e: E) -> Fatal {
        let io = (&e as &dyn std::any::Any).downcast_ref::<std::io::Error>();
        if io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
            return Fatal(CLOSED_PIPE.into());
        }
        Fatal(e.to_string())
    }
}

/// What a write to a closed pipe (`weft export … | head`) becomes: no message, and the exit
/// status a process killed by SIGPIPE has (128 + 13), so a pipeline still sees the output was
/// cut short.
const CLOSED_PIPE: &str = "\0closed pipe";
const CLOSED_PIPE_EXIT: u8 = 141;

fn read(path: &Path) -> Result<String, Fatal> {
    input::read_regular(path, input::MAX_SOURCE_BYTES)
        .map_err(|e| Fatal(format!("cannot read `{}`: {e}", path.display())))
}

fn render_opts(color: ColorChoice) -> RenderOptions {
    use std::io::IsTerminal as _;
    let tty = std::io::stderr().is_terminal();
    let color = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => tty && std::env::var_os("NO_COLOR").is_none(),
    };
    RenderOptions {
        color,
        unicode: true,
        width: 100,
    }
}

fn display_name(path: &Path) -> String {
    path.display().to_string()
}

fn compile(file: &Path, check: bool) -> Result<Compilation, Fatal> {
    let text = read(file)?;
    let host = Files {
        dir: file.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let name = display_name(file);
    Ok(if check {
        weft_compiler::check(&name, &text, &host)
    } else {
        weft_compiler::elaborate(&name, &text, &host)
    })
}

fn emit_diagnostics(c: &Compilation, color: ColorChoice) {
    if c.diagnostics.is_empty() {
        return;
    }
    let text = diagnostic::render(&c.diagnostics, &c.sources, render_opts(color));
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let (errors, warnings) = diagnostic::count(&c.diagnostics);
    let _ = writeln!(err, "{errors} error(s), {warnings} warning(s)");
}

/// Compiles `file` (check + LIDs + routing), printing every diagnostic; `None` when it has
/// errors (the caller exits 1).
fn compile_and_build(
    file: &Path,
    color: ColorChoice,
) -> Result<Option<(Compilation, weft_compiler::build::Built)>, Fatal> {
    let c = compile(file, true)?;
    emit_diagnostics(&c, color);
    let Some(e) = c.elaborated.as_ref().filter(|_| !c.has_errors()) else {
        return Ok(None);
    };
    match weft_compiler::build::build(e) {
        Ok(b) => Ok(Some((c, b))),
        Err(diags) => {
            let failed = Compilation {
                sources: c.sources,
                main: c.main,
                elaborated: None,
                diagnostics: diags,
            };
            emit_diagnostics(&failed, color);
            Ok(None)
        }
    }
}

fn out(output: Option<&Path>, text: &str) -> Result<(), Fatal> {
    match output {
        Some(p) => {
            // Write beside, then rename: never leave a half-written file.
            let tmp = p.with_extension("weft-tmp");
            std::fs::write(&tmp, text)
                .map_err(|e| Fatal(format!("cannot write `{}`: {e}", tmp.display())))?;
            std::fs::rename(&tmp, p)
                .map_err(|e| Fatal(format!("cannot write `{}`: {e}", p.display())))?;
            Ok(())
        }
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())?;
            Ok(())
        }
    }
}

fn human_summary(s: &Summary) -> String {
    let mut t = format!("fabric `{}`\n", s.fabric);
    t += &format!("  switches  {}\n", s.switches);
    t += &format!("  hcas      {}\n", s.hcas);
    t += &format!("  links     {} ({} down)\n", s.links, s.links_down);
    if s.nodes_down > 0 {
        t += &format!("  down      {} node(s)\n", s.nodes_down);
    }
    t += &format!("  lids      {} (lmc {})\n", s.lids, s.lmc);
    match s.levels {
        Some(l) => t += &format!("  levels    {l}\n"),
        None => t += "  levels    -\n",
    }
    t
}

fn run(cli: Cli) -> Result<ExitCode, Fatal> {
    match cli.command {
        Command::Verify(args) => verify::run(args, cli.color),
        Command::Report(args) => report::run(args, cli.color),
        Command::Build {
            file,
            output,
            allow_unproven,
        } => {
            let Some((c, built)) = compile_and_build(&file, cli.color)? else {
                return Ok(ExitCode::from(1));
            };
            if c.elaborated.is_none() {
                return Ok(ExitCode::from(1));
            }
            // Prove what is about to be written: every property, every pair.
            let opts = weft_verifier::Options {
                certificate: true,
                max_listed: 20,
                ..weft_verifier::Options::default()
            };
            let report = weft_verifier::verify(&built.state, &opts);
            let mut verdict = String::new();
            verify::verdict_lines(&mut verdict, &report);
            let proven = report.is_proven();
            if !proven && !allow_unproven {
                let text = verify::human(&built.state, Some(&report), None, "compiled", 20);
                out(None, &text)?;
                let mut err = std::io::stderr().lock();
                let _ = writeln!(
                    err,
                    "error: the compiled state is not proven; nothing written to `{}` \
                     (`--allow-unproven` writes it anyway, marked UNPROVEN)",
                    output.display()
                );
                return Ok(ExitCode::from(1));
            }
            let certificate = report.certificate.as_ref().map(|c| c.to_json());
            let unproven = (!proven).then(|| {
                format!(
                    "This directory holds tables weft could not prove (written with \
                     --allow-unproven).\n{verdict}"
                )
            });
            let quality = weft_compiler::metrics::of_build(&built.state);
            let written = build::write_all(
                &output,
                &built,
                &quality,
                &build::Extra {
                    certificate: certificate.as_deref(),
                    unproven: unproven.as_deref(),
                },
            )
            .map_err(Fatal)?;
            let s = Summary::of(&built.state.fabric);
            let mut text = human_summary(&s);
            text += &format!("  engine    {}: {}\n", built.engine, built.why);
            for n in &built.notes {
                text += &format!("  note      {}\n", n.message);
            }
            text += &verdict;
            for p in &written {
                text += &format!("  wrote     {}\n", p.display());
            }
            out(None, &text)?;
            Ok(if proven {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Check {
            file,
            format,
            no_verify,
        } => {
            let c = compile(&file, true)?;
            let mut failed = c.has_errors();
            let summary = c.elaborated.as_ref().map(|e| Summary::of(&e.fabric));
            // Compile and prove what the description says, unless it is already wrong.
            let mut routed: Option<(&'static str, String, weft_fabric::ValidState)> = None;
            let mut build_errors = Vec::new();
            if let (Some(e), false, false) = (c.elaborated.as_ref(), failed, no_verify) {
                match weft_compiler::build::build(e) {
                    Ok(b) => routed = Some((b.engine, b.why, b.state)),
                    Err(d) => {
                        failed = true;
                        build_errors = d;
                    }
                }
            }
            let opts = weft_verifier::Options {
                certificate: false,
                max_listed: 20,
                ..weft_verifier::Options::default()
            };
            let report = routed
                .as_ref()
                .map(|(_, _, st)| weft_verifier::verify(st, &opts));
            let proven = |r: &weft_verifier::Report| {
                r.verdict.deadlock_free == weft_verifier::Outcome::Proven
                    && r.verdict.connected == weft_verifier::Outcome::Proven
            };
            if report.as_ref().is_some_and(|r| !proven(r)) {
                failed = true;
            }
            let all_diags: Vec<_> = c.diagnostics.iter().chain(&build_errors).cloned().collect();
            match format {
                Format::Human => {
                    let shown = Compilation {
                        sources: c.sources.clone(),
                        main: c.main,
                        elaborated: None,
                        diagnostics: all_diags,
                    };
                    emit_diagnostics(&shown, cli.color);
                    let mut text = String::new();
                    if let (Some(s), false) = (&summary, c.has_errors() || !build_errors.is_empty())
                    {
                        text += &human_summary(s);
                    }
                    if let (Some((engine, why, st)), Some(r)) = (&routed, &report) {
                        text += &format!("  engine    {engine}: {why}\n");
                        if proven(r) {
                            text += &format!(
                                "  verified  deadlock-free and connected ({} routes, {} channels, {} VL(s))\n",
                                r.stats.routes, r.stats.channels, r.stats.vls
                            );
                        } else {
                            text += &verify::human(st, Some(r), None, &display_name(&file), 20);
                        }
                    }
                    out(None, &text)?;
                }
                Format::Json => {
                    let v = serde_json::json!({
                        "ok": !failed,
                        "summary": if c.has_errors() { None } else { summary },
                        "engine": routed.as_ref().map(|r| r.0),
                        "engine_why": routed.as_ref().map(|r| &r.1),
                        "verdict": report.as_ref().map(|r| &r.verdict),
                        "diagnostics": diagnostic::to_json(&all_diags, &c.sources),
                    });
                    out(None, &(serde_json::to_string_pretty(&v)? + "\n"))?;
                }
            }
            Ok(if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Fmt { file, write, check } => {
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
                    let c = Compilation {
                        sources,
                        main: id,
                        elaborated: None,
                        diagnostics: diags,
                    };
                    emit_diagnostics(&c, cli.color);
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Export {
            file,
            format,
            output,
        } => {
            let c = compile(&file, false)?;
            emit_diagnostics(&c, cli.color);
            let Some(e) = c.elaborated.as_ref().filter(|_| !c.has_errors()) else {
                return Ok(ExitCode::from(1));
            };
            let text = match format {
                ExportFormat::Ibnetdiscover => weft_compiler::export_ibnetdiscover(&e.fabric)?,
                ExportFormat::Json => {
                    let mut v = Vec::new();
                    weft_fabric::state_json::write_fabric(&e.fabric, &mut v)?;
                    String::from_utf8(v)?
                }
            };
            out(output.as_deref(), &text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Import {
            file,
            node_name_map,
            name,
            output,
        } => {
            let text = read(&file)?;
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let fabric_name = name.unwrap_or_else(|| {
                let n: String = stem
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                if n.starts_with(|c: char| c.is_ascii_digit()) || n.is_empty() {
                    format!("f_{n}")
                } else {
                    n
                }
            });
            let map_text = node_name_map.as_deref().map(read).transpose()?;
            let mut sources = diagnostic::SourceMap::new();
            let main = sources.add(display_name(&file), text.as_str());
            let map_id = map_text
                .as_ref()
                .zip(node_name_map.as_ref())
                .map(|(t, p)| sources.add(display_name(p), t.as_str()));
            match weft_compiler::import_ibnetdiscover(
                &text,
                &display_name(&file),
                main,
                map_text.as_deref().zip(map_id),
                &fabric_name,
            ) {
                Ok((program, warnings)) => {
                    let c = Compilation {
                        sources,
                        main,
                        elaborated: None,
                        diagnostics: warnings,
                    };
                    emit_diagnostics(&c, cli.color);
                    out(output.as_deref(), &program)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(diags) => {
                    let c = Compilation {
                        sources,
                        main,
                        elaborated: None,
                        diagnostics: diags,
                    };
                    emit_diagnostics(&c, cli.color);
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}

/// Stack of the thread that does the work: the compiler's depth limits keep recursion far
/// below this, with room to spare for the deepest input they admit.
const STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let work = std::thread::Builder::new()
        .name("weft".into())
        .stack_size(STACK_BYTES)
        .spawn(move || run(cli));
    let result = match work {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            Err(Fatal(
                "internal error (a bug in weft; please report it)".into(),
            ))
        }),
        Err(e) => Err(Fatal(format!("cannot start the worker thread: {e}"))),
    };
    match result {
        Ok(code) => code,
        Err(Fatal(msg)) if msg == CLOSED_PIPE => ExitCode::from(CLOSED_PIPE_EXIT),
        Err(Fatal(msg)) => {
            let _ = writeln!(std::io::stderr(), "error: {msg}");
            ExitCode::from(2)
        }
    }
}
