//! `weft`: the command-line front end. The only crate that writes to the terminal; it renders
//! what the libraries return as data and does no domain work (compiling is the driver's,
//! reading a live fabric deploy's).
//!
//! Exit codes: 0 ok, 1 findings (errors in the input or the fabric), 2 could not run, 130
//! interrupted, 141 a closed pipe.
//!
//! One module per command, each with its clap `Args` and a `run`; this file dispatches, owns
//! `Fatal` (`Input`: refused input, its findings, exit 1; `Failed`: could not run, for a
//! coded reason such as a deploy error, exit 2; both shown in the command's format; `Run`:
//! could not run, no code — option combinations, an unreadable file — `error: …`, exit 2) and
//! `--explain`. `apply/` is `mod.rs` (arguments, the run, refusals), `target.rs` (the sim or
//! MAD target, `--inject`, `--sm`), `opensm.rs` (the hand-off) and `report.rs` (the dry-run
//! listing, the report and its exit status). `export/` writes the formats other tools read
//! (`slurm.rs`, `graph.rs`); `report_sim.rs` is `weft report --simulate`; `html/` the
//! self-contained pages of `report`, `plan` and `diff` (`topo.rs` draws the fabric);
//! `manual.rs` the completion scripts and man pages. `args.rs` parses `--property` and
//! `--scope` from the verifier's own lists; `codes.rs` puts the crates' code registries
//! together (the SARIF rules, `--explain`, `docs/codes.md`, the test that every code written
//! is registered). `findings/` is the one finding model and its renderers (`human.rs`,
//! `sarif.rs`, the JSON `document`), `input.rs` the findings of files a reader refused;
//! `render.rs` shows the verifier's results for people. `output.rs` writes `-o` files whole
//! through `weft_deploy::files`; `build.rs` swaps its directory in with
//! `renameat2(RENAME_EXCHANGE)`; `term.rs` owns the terminal around a run (the progress line,
//! Ctrl-C and SIGTERM).

// A binary: nothing in it is reachable from another crate, so `pub` and `pub(crate)` say the
// same here (the libraries are held to `unreachable_pub`).
#![expect(
    unreachable_pub,
    reason = "a binary crate: no item is reachable from outside it"
)]

mod apply;
mod args;
mod audit;
mod build;
mod check;
mod codes;
mod dftree;
mod diff;
mod export;
mod findings;
mod fmt;
mod html;
mod import;
mod lsp;
mod manual;
mod output;
mod plan;
mod render;
mod report;
mod report_sim;
mod simulate;
mod term;
mod verify;
mod watch;

use weft_driver::display_name;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum};
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use weft_compiler::diagnostic::{self, Diagnostic, RenderOptions, SourceMap};
use weft_compiler::{Compilation, Summary};

#[derive(Parser)]
#[command(
    name = "weft",
    version,
    arg_required_else_help = true,
    about = "A declarative compiler and verifier for InfiniBand fabrics"
)]
struct Cli {
    /// Colour in diagnostics: auto, always or never.
    #[arg(long, global = true, default_value = "auto")]
    color: ColorChoice,
    /// No progress line and no summary when all is well: only findings and errors.
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Print what a finding code means (`weft --explain weft::credit_loop`) and exit; not
    /// with a command.
    #[arg(long, value_name = "CODE")]
    explain: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a fabric and prove it; write lfts.dump, guid2lid, topology.net, state.json and
    /// certificate.json.
    Build(build::Args),
    /// Compile a fabric and print the quality of its routing (balance, loads, eBB, hops).
    Report(report::Args),
    /// Simulate traffic on a fabric state (credit-based, per VL): throughput per node,
    /// latency, link utilisation and stalls; `--compare` gives the gain over another state.
    Simulate(simulate::Args),
    /// Prove a fabric state deadlock-free and connected (or show credit loops and failed routes).
    Verify(verify::Args),
    /// Parse, elaborate, validate, route and prove a fabric; print a summary.
    Check(check::Args),
    /// Plan the ordered, proven steps of SMP writes from the state a fabric runs to a
    /// desired one.
    Plan(plan::Args),
    /// Write a plan to a fabric as a transaction (journal, ordered steps, read-back,
    /// rollback), or recover from a crashed one.
    Apply(apply::Args),
    /// Read a live fabric over SMPs (LIDs, LFTs) and prove or refute it like `verify`.
    Audit(audit::Args),
    /// Run dFtree's loop on a live fabric: read every port's counters each sweep, move
    /// hot-spot contributors to their slow lane (writes qos-policy.conf and repath.txt,
    /// appends repath.log).
    Dftree(dftree::Args),
    /// Keep a live fabric proven: a light sweep each interval, a heavy sweep of what changed,
    /// the proof, the difference from a desired state and a repair plan; events and metrics.
    Watch(watch::Args),
    /// Format a `.weft` file canonically.
    Fmt(fmt::Args),
    /// Write the fabric's topology in another format.
    Export(export::Args),
    /// Compare a fabric's cabling with a design's: miswired, missing and extra cables,
    /// speeds and widths, missing and extra nodes (exit 1 when they differ).
    Diff(diff::Args),
    /// Turn an ibnetdiscover dump into a `.weft` program.
    Import(import::Args),
    /// Serve the Language Server Protocol on stdin and stdout (for editors).
    Lsp(lsp::Args),
    /// Print a shell completion script for weft (bash, zsh, fish, elvish, powershell).
    Completions(manual::CompletionsArgs),
    /// Write weft's man pages (weft.1 and one weft-COMMAND.1 per command) under DIR/man1.
    Man(manual::ManArgs),
}

/// Why a command stopped short.
enum Fatal {
    /// It could not run (exit 2): a file it cannot read or write, a fabric that does not
    /// answer, options that do not go together.
    Run(String),
    /// Its input is wrong (exit 1): what a reader refused, as findings, shown in the
    /// command's output format ([`Command::output`]); for people, as `human` when given
    /// (the compiler's rendering of its diagnostics, with source excerpts).
    Input(Vec<findings::Finding>, Option<String>),
    /// It could not run (exit 2), for a reason with a registered code (a deploy backend's: a
    /// device, a transport, a lock, journal or OpenSM file): findings, shown as refused input
    /// is.
    Failed(Vec<findings::Finding>),
    /// Its output went to a pipe whose reader has gone (`weft export … | head`): no message,
    /// and the exit status a process killed by SIGPIPE has (128 + 13), so a pipeline still sees
    /// the output was cut short.
    ClosedPipe,
}

impl Fatal {
    /// A description that does not compile or route: its diagnostics.
    fn not_compiled(diags: &[Diagnostic], sources: &SourceMap, color: ColorChoice) -> Fatal {
        let (errors, warnings) = diagnostic::count(diags);
        let human = diagnostic::render(diags, sources, render_opts(color))
            + &format!("{errors} error(s), {warnings} warning(s)\n");
        Fatal::Input(findings::of_diagnostics(diags, sources), Some(human))
    }

    /// A command that could not run, for a reason under `code`, said in `message`.
    fn failed(code: &str, message: String) -> Fatal {
        Fatal::Failed(vec![findings::of_input(code, None, message)])
    }

    /// A command that could not run, for the reason `e` gives under its registered code.
    fn coded(e: &impl weft_fabric::code::Coded) -> Fatal {
        Fatal::failed(e.code(), e.to_string())
    }

    /// A write to the terminal or an output file that failed: a closed pipe ends quietly, any
    /// other error says what was being written.
    fn write(what: &str, e: &std::io::Error) -> Fatal {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Fatal::ClosedPipe
        } else {
            Fatal::Run(format!("cannot write {what}: {e}"))
        }
    }

    /// A report that could not be encoded as JSON (a bug: every report is serialisable).
    fn json(e: &serde_json::Error) -> Fatal {
        Fatal::Run(format!("cannot encode the report as JSON: {e}"))
    }
}

impl From<std::io::Error> for Fatal {
    /// Writing the output: [`Fatal::write`].
    fn from(e: std::io::Error) -> Fatal {
        Fatal::write("the output", &e)
    }
}

impl From<serde_json::Error> for Fatal {
    /// Encoding a report: [`Fatal::json`].
    fn from(e: serde_json::Error) -> Fatal {
        Fatal::json(&e)
    }
}

impl From<weft_driver::SourceError> for Fatal {
    /// A source that could not be read: it cannot run (exit 2), as any unreadable file.
    fn from(e: weft_driver::SourceError) -> Fatal {
        Fatal::Run(e.to_string())
    }
}

/// The exit status of a process killed by SIGPIPE (128 + 13).
const CLOSED_PIPE_EXIT: u8 = 141;

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

/// The text of the source (or dump) at `path` (a regular file, under the source size cap).
fn read(path: &Path) -> Result<String, Fatal> {
    weft_driver::input::read_regular(path, weft_driver::input::MAX_SOURCE_BYTES)
        .map_err(|e| Fatal::Run(format!("cannot read `{}`: {e}", path.display())))
}

/// Shows the pipeline's phase on the progress line.
fn progress(p: weft_driver::Phase) {
    term::phase(p.as_str());
}

/// Reads and compiles `file` ([`weft_driver::compile`]).
fn compile(file: &Path, until: weft_driver::Until) -> Result<Compilation, Fatal> {
    Ok(weft_driver::compile(file, until, &progress)?)
}

/// Prints `diags` (rendered against `sources`) and their count on stderr.
fn emit_diagnostics(diags: &[Diagnostic], sources: &SourceMap, color: ColorChoice) {
    if diags.is_empty() {
        return;
    }
    term::clear();
    let text = diagnostic::render(diags, sources, render_opts(color));
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let (errors, warnings) = diagnostic::count(diags);
    let _ = writeln!(err, "{errors} error(s), {warnings} warning(s)");
}

/// Compiles and routes `file`, printing its warnings; its errors refuse it
/// ([`Fatal::not_compiled`]).
fn compile_and_build(
    file: &Path,
    color: ColorChoice,
) -> Result<weft_compiler::build::Built, Fatal> {
    Ok(compiled(file, color)?.1)
}

/// Compiles and routes `file`, printing its warnings: the compilation and its build; its
/// errors refuse it ([`Fatal::not_compiled`]).
fn compiled(
    file: &Path,
    color: ColorChoice,
) -> Result<(Compilation, weft_compiler::build::Built), Fatal> {
    let c = weft_driver::compile_and_route(file, &progress)?;
    let diags = c.diagnostics();
    match c.built {
        Some(Ok(b)) => {
            emit_diagnostics(&diags, &c.compilation.sources, color);
            Ok((c.compilation, b))
        }
        _ => Err(Fatal::not_compiled(&diags, &c.compilation.sources, color)),
    }
}

/// Prints `text` on stdout, or writes it to `output` whole ([`output::write_file`]).
fn out(output: Option<&Path>, text: &str) -> Result<(), Fatal> {
    term::clear();
    match output {
        Some(p) => output::write_file(p, text.as_bytes()).map_err(Fatal::Run),
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())?;
            Ok(())
        }
    }
}

/// The engine lines of a build for people: the engine asked for, the one that wrote the
/// tables when it gave way, and why; then the engine's notes (one the engine line already
/// carries is not repeated).
fn engine_line(b: &weft_compiler::build::Built) -> String {
    let mut t = if b.engine_used == b.engine {
        format!("  engine    {}: {}\n", b.engine, b.why)
    } else {
        format!(
            "  engine    {} (the tables are {}'s, its last resort): {}\n",
            b.engine, b.engine_used, b.why
        )
    };
    for n in b.notes.iter().filter(|n| !b.why.contains(&n.message)) {
        t += &format!("  note      {}\n", n.message);
    }
    t
}

fn human_summary(s: &Summary) -> String {
    let mut t = format!("fabric `{}`\n", s.fabric);
    t += &format!("  switches  {}\n", s.switches);
    let service: usize = s.service.values().sum();
    if service == 0 {
        t += &format!("  hcas      {}\n", s.hcas);
    } else {
        // As the engine line sets them aside: `666 service nodes (666 aggregation)`.
        let kinds: Vec<String> = s.service.iter().map(|(r, n)| format!("{n} {r}")).collect();
        t += &format!(
            "  hcas      {} + {service} service node{} ({})\n",
            s.hcas,
            if service == 1 { "" } else { "s" },
            kinds.join(", ")
        );
    }
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

/// `weft --explain CODE`: the code's section of the codes page, exit 0; an unknown code is
/// an error naming the closest codes (exit 2).
fn explain(code: &str) -> Result<ExitCode, Fatal> {
    let code = code.trim();
    let full = if code.starts_with("weft::") {
        code.to_owned()
    } else {
        format!("weft::{code}")
    };
    if let Some(page) = codes::explain(&full) {
        out(None, &page)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut near: Vec<(usize, &str)> = codes::REGISTRIES
        .iter()
        .flat_map(|(_, c)| c.iter())
        .map(|c| (weft_fabric::edit_distance(&full, c.code), c.code))
        .collect();
    near.sort_unstable();
    let near: Vec<&str> = near.iter().take(3).map(|(_, c)| *c).collect();
    Err(Fatal::Run(format!(
        "no code `{code}`; the closest are {} (every code: docs/codes.md)",
        near.join(", ")
    )))
}

impl Command {
    /// The command's name and the format its findings are shown in.
    fn output(&self) -> (&'static str, findings::Format) {
        use findings::Format;
        match self {
            Command::Build(a) => ("build", a.format),
            Command::Report(a) => ("report", a.format.findings()),
            Command::Simulate(a) => ("simulate", a.format.findings()),
            Command::Verify(a) => ("verify", a.check.format),
            Command::Check(a) => ("check", a.format),
            Command::Plan(a) => ("plan", a.format.findings()),
            Command::Apply(_) => ("apply", Format::Human),
            Command::Audit(a) => ("audit", a.check.format),
            Command::Dftree(a) => ("dftree", a.format.findings()),
            Command::Watch(a) => ("watch", a.findings_format()),
            Command::Fmt(_) => ("fmt", Format::Human),
            Command::Export(a) => ("export", a.format.findings()),
            Command::Diff(a) => ("diff", a.format.findings()),
            Command::Import(_) => ("import", Format::Human),
            Command::Lsp(_) => ("lsp", Format::Human),
            Command::Completions(_) => ("completions", Format::Human),
            Command::Man(_) => ("man", Format::Human),
        }
    }
}

/// Shows the findings of a refused input (exit 1) or of a command that could not run (exit 2),
/// `status`, in `format`: on stderr for people (`human` when given), as the command's JSON
/// document (`ok: false`) or a SARIF run on stdout.
fn refused(
    command: &str,
    format: findings::Format,
    found: &[findings::Finding],
    human: Option<String>,
    status: u8,
) -> ExitCode {
    use findings::Format;
    let shown = match format {
        Format::Human => {
            term::clear();
            let text = human.unwrap_or_else(|| findings::human(found));
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
            Ok(())
        }
        Format::Json => serde_json::to_string_pretty(&findings::document(
            command,
            serde_json::json!({"ok": false, "findings": found}),
        ))
        .map_err(Fatal::from)
        .and_then(|t| out(None, &(t + "\n"))),
        Format::Sarif => {
            serde_json::to_string_pretty(&findings::sarif(found, serde_json::json!({"ok": false})))
                .map_err(Fatal::from)
                .and_then(|t| out(None, &(t + "\n")))
        }
    };
    match shown {
        Ok(()) => ExitCode::from(status),
        Err(_) => ExitCode::from(2),
    }
}

fn run(cli: Cli) -> Result<ExitCode, Fatal> {
    let command = match (cli.command, &cli.explain) {
        (None, Some(code)) => return explain(code),
        (Some(_), Some(_)) => {
            return Err(Fatal::Run(
                "`--explain CODE` prints a code's page; give it without a command".into(),
            ))
        }
        (Some(c), None) => c,
        // `arg_required_else_help` shows the help before this.
        (None, None) => return Err(Fatal::Run("give a command or `--explain CODE`".into())),
    };
    let (name, format) = command.output();
    let result = dispatch(command, cli.color, cli.quiet);
    match result {
        Err(Fatal::Input(found, human)) => Ok(refused(name, format, &found, human, 1)),
        Err(Fatal::Failed(found)) => Ok(refused(name, format, &found, None, 2)),
        other => other,
    }
}

fn dispatch(command: Command, color: ColorChoice, quiet: bool) -> Result<ExitCode, Fatal> {
    let cli = Flags { color, quiet };
    match command {
        Command::Verify(args) => verify::run(args, cli.color, cli.quiet),
        Command::Report(args) => report::run(args, cli.color),
        Command::Simulate(args) => simulate::run(args, cli.color),
        Command::Build(args) => build::run(args, cli.color, cli.quiet),
        Command::Check(args) => check::run(args, cli.color, cli.quiet),
        Command::Plan(args) => plan::run(args, cli.color, cli.quiet),
        Command::Apply(args) => apply::run(args, cli.quiet),
        Command::Audit(args) => audit::run(args, cli.color, cli.quiet),
        Command::Dftree(args) => dftree::run(args, cli.color, cli.quiet),
        Command::Watch(args) => watch::run(args, cli.color, cli.quiet),
        Command::Fmt(args) => fmt::run(args, cli.color),
        Command::Export(args) => export::run(args, cli.color),
        Command::Diff(args) => diff::run(args, cli.color),
        Command::Import(args) => import::run(args, cli.color),
        Command::Lsp(args) => lsp::run(args),
        Command::Completions(args) => manual::completions(&args, Cli::command()),
        Command::Man(args) => manual::man(&args, Cli::command(), cli.quiet),
    }
}

/// The global flags a command runs with.
struct Flags {
    color: ColorChoice,
    quiet: bool,
}

/// Stack of the thread that does the work: the compiler's depth limits keep recursion far
/// below this, with room to spare for the deepest input they admit.
const STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    // The hidden `weft __commands` is added here, outside `Cli`, so that the completion
    // scripts and man pages made from `Cli::command()` never offer it.
    let matches = Cli::command()
        .subcommand(clap::Command::new(manual::COMMANDS).hide(true))
        .get_matches();
    if matches.subcommand_name() == Some(manual::COMMANDS) {
        return match manual::commands(Cli::command()) {
            Ok(code) => code,
            Err(_) => ExitCode::from(2),
        };
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    term::start(cli.quiet);
    let work = std::thread::Builder::new()
        .name("weft".into())
        .stack_size(STACK_BYTES)
        .spawn(move || run(cli));
    let result = match work {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            Err(Fatal::Run(
                "internal error (a bug in weft; please report it)".into(),
            ))
        }),
        Err(e) => Err(Fatal::Run(format!("cannot start the worker thread: {e}"))),
    };
    term::clear();
    match result {
        Ok(code) => code,
        Err(Fatal::ClosedPipe) => ExitCode::from(CLOSED_PIPE_EXIT),
        Err(Fatal::Run(msg)) => {
            let _ = writeln!(std::io::stderr(), "error: {msg}");
            ExitCode::from(2)
        }
        // `run` shows findings itself.
        Err(Fatal::Input(found, human)) => {
            let text = human.unwrap_or_else(|| findings::human(&found));
            let _ = std::io::stderr().write_all(text.as_bytes());
            ExitCode::from(1)
        }
        Err(Fatal::Failed(found)) => {
            let _ = std::io::stderr().write_all(findings::human(&found).as_bytes());
            ExitCode::from(2)
        }
    }
}
