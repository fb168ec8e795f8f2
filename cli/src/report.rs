//! `weft report FILE`: compile a fabric (check + build), or read a state (`state.json` or a
//! build directory), and print the quality of its routing (`weft_metrics`), as a table, as
//! JSON, or as one self-contained HTML page (`crate::html::report`: the fabric drawn with its
//! link loads and the verifier's findings on it).

use crate::{out, ColorChoice, Fatal};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use weft_metrics::{self as metrics, Quality, QualityOptions, Unroutable};

/// Output of `weft report`.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
    Human,
    Json,
}

impl Format {
    /// The format refused input is shown in.
    pub(crate) fn findings(self) -> crate::findings::Format {
        match self {
            Format::Human => crate::findings::Format::Human,
            Format::Json => crate::findings::Format::Json,
        }
    }
}

/// Output of `weft report`: [`Format`]'s, or a page.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub(crate) enum ReportFormat {
    Human,
    Json,
    /// One self-contained page: the fabric drawn with link loads and findings.
    Html,
}

impl ReportFormat {
    /// The format refused input is shown in (the page's is the human text).
    pub(crate) fn findings(self) -> crate::findings::Format {
        match self {
            ReportFormat::Json => crate::findings::Format::Json,
            ReportFormat::Human | ReportFormat::Html => crate::findings::Format::Human,
        }
    }
}

/// `weft report` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The `.weft` file, a build directory, or a `state.json`.
    file: PathBuf,
    /// Write the output here (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// More inputs (`.weft` files, build directories, `state.json`s): each is reported in turn, then all of them side by side.
    more: Vec<PathBuf>,
    /// Output format.
    #[arg(long, default_value = "human")]
    pub(crate) format: ReportFormat,
    /// Random bisections for the eBB (default: 1000, fewer on large fabrics).
    #[arg(long)]
    bisections: Option<usize>,
    /// Shifts evaluated, evenly spaced, when the fabric has too many hosts for all of them.
    #[arg(long, default_value_t = metrics::SHIFT_SAMPLES)]
    shifts: usize,
    /// Seed of the random bisections (default 0), and of the simulated traffic.
    #[arg(long)]
    seed: Option<u64>,
    /// Also simulate the standard patterns (uniform, a shift by half the hosts, all-to-all,
    /// one hot-spot) for T each (default 50us) and print the throughput per node.
    #[arg(long, value_name = "T", num_args = 0..=1, require_equals = true,
        default_missing_value = crate::report_sim::DEFAULT_DURATION)]
    simulate: Option<String>,
}

/// The tables reported on: compiled from a `.weft` file (the engine named), or read from a
/// build directory or a `state.json`.
struct Tables {
    state: weft_fabric::ValidState,
    /// The build, when compiled here.
    built: Option<weft_compiler::build::Built>,
    /// Where the tables come from, in words.
    source: String,
}

fn tables(file: &std::path::Path, color: ColorChoice) -> Result<Tables, Fatal> {
    let state_file = if file.is_dir() {
        Some(file.join(weft_formats::build_dir::STATE))
    } else if file.extension().is_some_and(|e| e == "json") {
        Some(file.to_path_buf())
    } else {
        None
    };
    if let Some(p) = state_file {
        crate::term::phase("reading");
        let state = crate::plan::load_state(&p)?;
        return Ok(Tables {
            state,
            built: None,
            source: format!("tables read from `{}`", p.display()),
        });
    }
    let built = crate::compile_and_build(file, color)?;
    Ok(Tables {
        state: built.state.clone(),
        source: format!(
            "compiled from `{}`, engine {} ({})",
            file.display(),
            built.engine,
            built.why
        ),
        built: Some(built),
    })
}

/// Runs `weft report`.
pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    use crate::report_sim::{self as sim, Column};
    if args.format == ReportFormat::Html && !args.more.is_empty() {
        return Err(Fatal::Run(
            "--format html draws one fabric: give one input (the side-by-side comparison of \
             several is in the human and JSON formats)"
                .to_owned(),
        ));
    }
    let sim_opts = sim::options(args.simulate.as_deref(), args.seed.unwrap_or(0))?;
    let opts = QualityOptions {
        bisections: args.bisections,
        shift_samples: args.shifts,
        seed: args.seed.unwrap_or(0),
        ..QualityOptions::default()
    };
    let files: Vec<&PathBuf> = std::iter::once(&args.file).chain(&args.more).collect();
    let (mut texts, mut docs, mut cols) = (Vec::new(), Vec::new(), Vec::new());
    let mut page = None;
    for file in files {
        let Tables {
            state,
            built,
            source,
        } = tables(file, color)?;
        crate::term::phase("measuring");
        let q = metrics::quality(&state, &opts);
        let simulated = sim_opts.map(|o| sim::simulate(&state, o)).transpose()?;
        let head = match &built {
            Some(b) => format!(
                "fabric `{}`, engine {} ({})\n",
                state.fabric.name, b.engine, b.why
            ),
            None => format!("fabric `{}`, {source}\n", state.fabric.name),
        };
        let mut text = head + &human(&q);
        if let Some(s) = &simulated {
            text += &sim::human(s);
        }
        match args.format {
            ReportFormat::Human => texts.push(text),
            ReportFormat::Json => {
                let mut v = serde_json::json!({
                    "fabric": state.fabric.name,
                    "engine": built.as_ref().map(|b| b.engine.name()),
                    "engine_used": built.as_ref().map(|b| b.engine_used.name()),
                    "engine_why": built.as_ref().map(|b| b.why.clone()),
                    "source": source,
                    "quality": q,
                    "findings": crate::findings::of_crossed_rails(
                        q.machines.as_ref().map_or(&[][..], |m| &m.cabling.crossed[..]),
                        &file.display().to_string(),
                    ),
                });
                if let Some(s) = &simulated {
                    v["simulated"] = serde_json::to_value(s)?;
                }
                if !args.more.is_empty() {
                    v["file"] = serde_json::json!(file.display().to_string());
                }
                docs.push(v);
            }
            ReportFormat::Html => {
                crate::term::phase("loading links");
                let loads = metrics::link_loads(&state, &opts);
                crate::term::phase("verifying");
                let properties = match &built {
                    Some(b) => weft_driver::properties(b),
                    None => weft_verifier::Property::defaults(&state),
                };
                let report = weft_verifier::verify(
                    &state,
                    &weft_verifier::Options {
                        properties: properties.clone(),
                        certificate: false,
                        max_listed: HTML_LISTED,
                        ..weft_verifier::Options::default()
                    },
                );
                let found = crate::findings::of_report(
                    crate::findings::Violations::of(&report),
                    &file.display().to_string(),
                    None,
                );
                crate::term::phase("drawing");
                page = Some(crate::html::report::render(&crate::html::report::Input {
                    state: &state,
                    source,
                    quality: &q,
                    loads: &loads,
                    report: &report,
                    properties: &properties,
                    findings: &found,
                    text: &text,
                }));
            }
        }
        cols.push(Column {
            file: file.clone(),
            quality: q,
            simulated,
        });
    }
    let text = match args.format {
        ReportFormat::Human => {
            let mut t = texts.join("\n");
            if cols.len() > 1 {
                t += &sim::side_by_side(&cols);
            }
            t
        }
        ReportFormat::Json => {
            let body = if docs.len() == 1 {
                docs.pop().unwrap_or_default()
            } else {
                serde_json::json!({ "reports": docs })
            };
            serde_json::to_string_pretty(&crate::findings::document("report", body))? + "\n"
        }
        ReportFormat::Html => page.unwrap_or_default(),
    };
    match &args.output {
        Some(p) => crate::output::write_file(p, text.as_bytes()).map_err(Fatal::Run)?,
        None => out(None, &text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Credit loops and failed routes listed on the HTML page, at most.
const HTML_LISTED: usize = 20;

fn unroutable(u: &Unroutable) -> String {
    if u.total() == 0 {
        return "0 unroutable".to_owned();
    }
    let mut parts = Vec::new();
    for (n, what) in [
        (u.unset, "unset entry"),
        (u.dead_end, "dead end"),
        (u.loops, "loop"),
        (u.misdelivered, "misdelivered"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    format!("{} unroutable ({})", u.total(), parts.join(", "))
}

/// What a metric means, in one line under it.
fn explain(t: &mut String, what: &str) {
    let _ = writeln!(t, "                    · {what}");
}

/// How many unbalanced switches the table names.
const NAMED: usize = 8;

/// The quality as a table.
pub fn human(q: &Quality) -> String {
    let mut t = String::new();
    let service = match q.service_ports {
        0 => String::new(),
        n => format!("; {n} service node ports routed, not in the patterns"),
    };
    match &q.machines {
        Some(m) => {
            let sizes: Vec<String> = m
                .ports_per_host
                .iter()
                .rev()
                .map(|(ports, hosts)| format!("{hosts} × {ports}"))
                .collect();
            let default_named = match m.default_named {
                0 => String::new(),
                n => format!("; {n} of one port with an adapter's default name, one machine per system image GUID"),
            };
            let _ = writeln!(
                t,
                "  hosts             {} machines ({}{default_named}), {} end ports ({} left out{service}), {} switches, {} directed switch links",
                q.hosts, sizes.join(", "), q.end_ports, q.end_ports_excluded, q.switches, q.fabric_links
            );
            explain(&mut t, "hosts are machines: a host of several HCAs (`host = \"…\"`) counts once [machines × end ports each]; end ports are what the patterns below send between, each on its rail; loads are flows per directed switch-to-switch link");
        }
        None => {
            let _ = writeln!(
                t,
                "  hosts             {} machines, {} end ports ({} left out{service}), {} switches, {} directed switch links",
                q.hosts, q.end_ports, q.end_ports_excluded, q.switches, q.fabric_links
            );
            explain(&mut t, "hosts are machines (an end node without `host` is one); end ports are what the patterns below send between; loads are flows per directed switch-to-switch link");
        }
    }
    let b = &q.balance;
    let _ = writeln!(
        t,
        "  port balance      {} switches, {} unbalanced (max spread {}); by direction {} unbalanced (max spread {})",
        b.switches, b.unbalanced, b.max_spread, b.unbalanced_by_direction, b.max_spread_by_direction
    );
    let bad: Vec<&str> = b
        .per_switch
        .iter()
        .filter(|u| u.unbalanced_by_direction)
        .map(|u| u.switch.as_str())
        .collect();
    if !bad.is_empty() {
        let more = bad.len().saturating_sub(NAMED);
        let _ = write!(
            t,
            "                    unbalanced by direction: {}",
            bad.iter()
                .take(NAMED)
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if more > 0 {
            let _ = write!(t, " and {more} more");
        }
        t.push('\n');
    }
    explain(&mut t, "end-node LIDs per switch-facing port; unbalanced: the busiest port has 2+ more than the idlest (check_lft_balance); by direction: up ports vs up, down vs down, what a fat-tree balances");
    let s = &q.shift;
    let _ = writeln!(
        t,
        "  shift             {} shifts{}: max load {}, mean max {:.3}, mean load {:.3}, {} of {} flows unroutable",
        s.shifts,
        if s.all { " (all)" } else { " (evenly spaced)" },
        s.max_load,
        s.mean_max_load,
        s.mean_load,
        s.unroutable,
        s.flows
    );
    explain(&mut t, "host i sends to host i+k, for each shift k; max load 1 means no two flows of a shift share a link");
    let a = &q.all_to_all;
    let _ = writeln!(
        t,
        "  all-to-all        max load {}, mean load {:.1}, {} of {} flows unroutable",
        a.max_load, a.mean_load, a.unroutable, a.flows
    );
    explain(&mut t, "every host sends to every other host at once");
    let r = &q.bisections;
    let _ = writeln!(
        t,
        "  bisections        {} (seed {}): max load {}, mean max {:.3}, mean load {:.3}, {} of {} flows unroutable",
        r.count, r.seed, r.max_load, r.mean_max_load, r.mean_load, r.unroutable, r.flows
    );
    explain(&mut t, "random halvings of the hosts, each host exchanging one flow with its partner in the other half");
    let _ = writeln!(
        t,
        "  eBB               {} (worst bisection {}, best {})",
        ebb(r.ebb),
        ebb(r.ebb_min),
        ebb(r.ebb_max)
    );
    explain(&mut t, "effective bisection bandwidth: a flow gets 1 / the load of its busiest link, averaged over flows and bisections; 1.0 is full");
    if let Some(m) = &q.machines {
        rails(&mut t, m);
    }
    let h = &q.hops;
    let hist: Vec<String> = h
        .histogram
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let _ = writeln!(
        t,
        "  hops              mean {:.3}, max {} [{}], {}",
        h.mean,
        h.max,
        hist.join(", "),
        unroutable(&h.unroutable)
    );
    explain(&mut t, "links crossed by each host-to-host path [links: paths]; unroutable paths meet an unset entry, a dead end, a loop or the wrong host");
    excess(&mut t, &q.hop_excess);
    let w = &q.switch_to_switch;
    let _ = writeln!(
        t,
        "  switch-to-switch  {} pairs, {}",
        w.pairs,
        unroutable(&w.unroutable)
    );
    explain(&mut t, "every switch toward every other switch's LID: what management, monitoring and SM traffic need");
    t
}

/// An eBB to four places, or `n/a` where no bisection had a flow.
pub(crate) fn ebb(e: Option<f64>) -> String {
    e.map_or_else(|| "n/a".to_owned(), |e| format!("{e:.4}"))
}

/// The hop excess: pairs routed longer than a shortest (up*/down*) path, and the worst named.
fn excess(t: &mut String, e: &metrics::HopExcess) {
    let _ = writeln!(
        t,
        "  hop excess        over the shortest up*/down* path: {} of {} pairs (max {}); over the shortest path: {} pairs (max {}); {} pairs have no up*/down* path",
        e.over_updown, e.updown_pairs, e.max_over_updown, e.over_shortest, e.max_over_shortest, e.without_updown
    );
    for w in &e.worst {
        let updown = match w.updown {
            Some(u) => format!("shortest up*/down* {u}"),
            None => "no up*/down* path".to_owned(),
        };
        let _ = writeln!(
            t,
            "                    `{}` → `{}`: {} links (shortest {}, {updown})",
            w.source, w.destination, w.links, w.shortest
        );
    }
    explain(t, "links each host-to-host route crosses beyond the shortest path that climbs then descends (levels counted from the switches with hosts) and beyond the shortest path in the graph; the worst pairs first");
}

/// The patterns over machines and per rail, where the fabric is rail-optimised; what the
/// cabling says of the rails either way.
fn rails(t: &mut String, m: &metrics::Hosts) {
    let c = &m.cabling;
    if c.rail_optimised {
        let _ = writeln!(
            t,
            "  rails             rail-optimised: {} of {} machines of several HCAs reach a different leaf with each",
            c.spread, c.machines
        );
    } else {
        let _ = writeln!(
            t,
            "  rails             not rail-optimised: {} of {} machines of several HCAs have all their HCAs on one leaf, {} reach a different leaf with each; no rail metrics",
            c.one_leaf, c.machines, c.spread
        );
    }
    for h in &c.crossed {
        let each: Vec<String> = h
            .hcas
            .iter()
            .map(|x| {
                format!(
                    "`{}` on `{}` (rail {}, its peers' rail {})",
                    x.hca, x.leaf, x.leaf_rail, x.expected_rail
                )
            })
            .collect();
        let _ = writeln!(
            t,
            "                    crossed cables: host `{}`: {}",
            h.host,
            each.join(", ")
        );
    }
    if c.rail_optimised {
        explain(t, "a rail is the leaves one HCA position of the machines reaches; an HCA's rail is its leaf's; crossed: a host whose HCAs reach their rails' leaves in another order");
    } else {
        explain(t, "rail-optimised: more than half the machines of several HCAs reach a different leaf with each; here an HCA's rail is its device's rank, and rail metrics would measure leaves, not rails");
    }
    for (what, b, means) in [
        (
            "rail-aligned eBB ",
            &m.rail_aligned,
            "random halvings of the hosts, partners exchanging one flow per rail each way (HCA r with HCA r), as rail-aligned collectives send",
        ),
        (
            "cross-rail eBB   ",
            &m.cross_rail,
            "the same halvings, each HCA sending to its partner's HCA on the next rail: traffic that must leave its rail",
        ),
    ] {
        let Some(b) = b else {
            continue;
        };
        let _ = writeln!(
            t,
            "  {what}{} (worst bisection {}, best {}; {} bisections, max load {}, {} of {} flows unroutable)",
            ebb(b.ebb), ebb(b.ebb_min), ebb(b.ebb_max), b.count, b.max_load, b.unroutable, b.flows
        );
        explain(t, means);
    }
    for r in &m.rails {
        let b = &r.bisections;
        let _ = writeln!(
            t,
            "  rail {:<3}          eBB {} (worst {}, best {}; {} ports, max load {}, {} of {} flows unroutable)",
            r.rail, ebb(b.ebb), ebb(b.ebb_min), ebb(b.ebb_max), r.hosts, b.max_load, b.unroutable, b.flows
        );
    }
    if !m.rails.is_empty() {
        explain(
            t,
            "per rail, random halvings of that rail's HCAs alone: the rail's own eBB (n/a: a rail of one HCA has no pair)",
        );
    }
}
