//! `weft`: the command-line front end. The only crate that writes to the terminal.
//!
//! Exit codes: 0 ok, 1 findings (errors in the input or the fabric), 2 could not run.

mod apply;
mod audit;
mod build;
mod check;
mod export;
mod findings;
mod fmt;
mod import;
mod input;
mod output;
mod plan;
mod report;
mod term;
mod verify;

use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_compiler::diagnostic::{self, Diagnostic, RenderOptions, SourceMap};
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
    /// No progress line and no summary when all is well: only findings and errors.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
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
    /// Format a `.weft` file canonically.
    Fmt(fmt::Args),
    /// Write the fabric's topology in another format.
    Export(export::Args),
    /// Turn an ibnetdiscover dump into a `.weft` program.
    Import(import::Args),
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
    term::phase("compiling");
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

/// What compiling and routing a file gave: the compilation, and the build or the routing's
/// diagnostics (`None` when the description itself has errors).
type Routed = (
    Compilation,
    Option<Result<weft_compiler::build::Built, Vec<Diagnostic>>>,
);

/// Compiles `file` (check + LIDs + routing) without printing anything.
fn compile_and_route(file: &Path) -> Result<Routed, Fatal> {
    let c = compile(file, true)?;
    let routed = c.elaborated.as_ref().filter(|_| !c.has_errors()).map(|e| {
        term::phase("routing");
        weft_compiler::build::build(e)
    });
    Ok((c, routed))
}

/// The most switches a layered build has for z3 to look for fewer layers.
const Z3_LAYER_SWITCHES: usize = 64;

/// A layered build of a small fabric with z3's word on its layer count as a note: the fewest
/// layers its routes fit in (every smaller count proven impossible), or that z3 did not
/// decide. When z3 places the routes in fewer layers than weft's heuristic did, the build
/// takes z3's placement (the verifier then proves it like any other).
fn with_layer_bound(
    e: &weft_compiler::Elaborated,
    mut b: weft_compiler::build::Built,
) -> weft_compiler::build::Built {
    use weft_verifier::z3::{LayerBound, Z3};
    let layers = b.lanes.layers;
    // One layer is the fewest there is.
    if layers < 2 || b.layers.is_none() || b.state.fabric.switch_count() > Z3_LAYER_SWITCHES {
        return b;
    }
    term::phase("z3: fewest layers");
    let z3 = Z3 { timeout_ms: 20_000 };
    let message = match z3.place_layers(&b.state, layers) {
        (LayerBound::Minimum(k), _) if k == layers => format!(
            "z3: {k} layer(s) is the fewest these routes fit in (every smaller count is impossible)"
        ),
        (LayerBound::Minimum(k), Some(placement)) => {
            match weft_compiler::build::relayer(e, &b, &placement, k) {
                Ok(mut fewer) => {
                    fewer.notes.push(weft_compiler::routing::RouteNote {
                        code: weft_compiler::code::Code::Layers,
                        message: format!(
                            "z3 placed these routes in {k} layer(s), the fewest they fit in (every smaller count is impossible); weft's heuristic used {layers}"
                        ),
                    });
                    return fewer;
                }
                Err(d) => format!(
                    "z3: these routes fit in {k} layer(s); weft used {layers} (z3's placement was not taken: {})",
                    d.first().map_or("", |d| d.message.as_str())
                ),
            }
        }
        (LayerBound::Minimum(k), None) => {
            format!("z3: these routes fit in {k} layer(s); weft used {layers} (z3 gave no placement)")
        }
        (LayerBound::MoreThan(k), _) => format!(
            "z3 found no placement of these routes in {k} layer(s) (a bug in weft's layering or in its check)"
        ),
        (LayerBound::Unknown { at, reason }, _) => {
            format!("z3 did not decide whether {at} layer(s) suffice ({reason})")
        }
    };
    b.notes.push(weft_compiler::routing::RouteNote {
        code: weft_compiler::code::Code::Layers,
        message,
    });
    b
}

/// Compiles `file` (check + LIDs + routing), printing every diagnostic; `None` when it has
/// errors (the caller exits 1).
fn compile_and_build(
    file: &Path,
    color: ColorChoice,
) -> Result<Option<weft_compiler::build::Built>, Fatal> {
    let (c, routed) = compile_and_route(file)?;
    emit_diagnostics(&c.diagnostics, &c.sources, color);
    match routed {
        Some(Ok(b)) => Ok(Some(b)),
        Some(Err(diags)) => {
            emit_diagnostics(&diags, &c.sources, color);
            Ok(None)
        }
        None => Ok(None),
    }
}

/// What `check` and `build` prove about a build: the properties of routes, `isolated` when it
/// declares partitions, and `apm_disjoint` when the engine that wrote the tables claims it
/// (`fat_tree` with LMC > 0 promises each port's LIDs link-disjoint paths).
fn properties(b: &weft_compiler::build::Built) -> Vec<weft_verifier::Property> {
    let mut p = weft_verifier::Property::defaults(&b.state);
    if b.claims().apm_disjoint {
        p.push(weft_verifier::Property::ApmDisjoint);
    }
    p
}

/// Prints `text` on stdout, or writes it to `output` whole ([`output::write_file`]).
fn out(output: Option<&Path>, text: &str) -> Result<(), Fatal> {
    term::clear();
    match output {
        Some(p) => output::write_file(p, text.as_bytes()).map_err(Fatal),
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
        Command::Verify(args) => verify::run(args, cli.color, cli.quiet),
        Command::Report(args) => report::run(args, cli.color),
        Command::Build(args) => build::run(args, cli.color, cli.quiet),
        Command::Check(args) => check::run(args, cli.color, cli.quiet),
        Command::Plan(args) => plan::run(args, cli.color, cli.quiet),
        Command::Apply(args) => apply::run(args, cli.quiet),
        Command::Audit(args) => audit::run(args, cli.quiet),
        Command::Fmt(args) => fmt::run(args, cli.color),
        Command::Export(args) => export::run(args, cli.color),
        Command::Import(args) => import::run(args, cli.color),
    }
}

/// Stack of the thread that does the work: the compiler's depth limits keep recursion far
/// below this, with room to spare for the deepest input they admit.
const STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    term::start(cli.quiet);
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
    term::clear();
    match result {
        Ok(code) => code,
        Err(Fatal(msg)) if msg == CLOSED_PIPE => ExitCode::from(CLOSED_PIPE_EXIT),
        Err(Fatal(msg)) => {
            let _ = writeln!(std::io::stderr(), "error: {msg}");
            ExitCode::from(2)
        }
    }
}
