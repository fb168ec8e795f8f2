//! `weft verify`: prove a fabric state deadlock-free and connected, or show why not.
//!
//! Inputs (one of):
//!
//! * `weft verify FILE.weft`: compile (LIDs, routing) and verify what was compiled;
//! * `weft verify --state state.json`: a state `weft build` wrote;
//! * `weft verify --topology FILE.ibnetdiscover --lfts opensm-lfts.dump [--sl2vl
//!   opensm-sl2vl.dump] [--path-sl FILE.psl] [--guid2lid guid2lid]`: a fabric OpenSM
//!   configured (LIDs from the topology's `lid` annotations unless a guid2lid is given).
//!
//! `--certificate FILE` re-checks a certificate against the state instead (linear time,
//! trusting nothing else); `--write-certificate FILE` writes one when the state is proven.
//! Output: human (default), `--format json` or `--format sarif` (SARIF 2.1.0). Exit codes, as
//! README.md's table gives them: 0 every property asked for proven, 1 one violated or unknown
//! (or a rejected certificate), 2 could not run (bad input, unreadable files).

use crate::findings::{self, Format, Origins};
use crate::{ColorChoice, Fatal};
use clap::ValueEnum;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_fabric::{FabricState, ValidState};
use weft_verifier::{
    certificate, CreditLoop, FailureKind, FailurePattern, Options, Outcome, Property, Report,
    Route, Scope,
};

/// Arguments of `weft verify`.
#[derive(clap::Args)]
pub struct Args {
    /// A `.weft` file to compile and verify.
    file: Option<PathBuf>,
    /// A state written by `weft build` (`state.json`).
    #[arg(long, conflicts_with_all = ["file", "topology"])]
    state: Option<PathBuf>,
    /// An ibnetdiscover topology (with `lid` annotations unless `--guid2lid` is given).
    #[arg(long, requires = "lfts", conflicts_with = "file")]
    topology: Option<PathBuf>,
    /// OpenSM's `opensm-lfts.dump` (or `dump_fts` output).
    #[arg(long, requires = "topology")]
    lfts: Option<PathBuf>,
    /// OpenSM's `opensm-sl2vl.dump` (default: every SL on VL 0).
    #[arg(long, requires = "topology")]
    sl2vl: Option<PathBuf>,
    /// Path SLs, ibdiagnet `.psl` form: `src_node_guid dlid sl` (default: SL 0).
    #[arg(long, requires = "topology")]
    path_sl: Option<PathBuf>,
    /// OpenSM's `guid2lid` cache (instead of the topology's LIDs).
    #[arg(long, requires = "topology")]
    guid2lid: Option<PathBuf>,
    /// A node-name map for the topology (`<guid> "<name>"` per line).
    #[arg(long, requires = "topology")]
    node_name_map: Option<PathBuf>,
    /// What to prove and how to report it.
    #[command(flatten)]
    pub check: CheckArgs,
}

/// What `weft verify` (and `weft audit`) prove, and how they report it.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// Re-check this certificate against the state instead of verifying.
    #[arg(long)]
    certificate: Option<PathBuf>,
    /// Write the certificate here when the state is proven.
    #[arg(long, conflicts_with = "certificate")]
    write_certificate: Option<PathBuf>,
    /// Required pairs.
    #[arg(long, default_value = "all")]
    scope: ScopeArg,
    /// A property to prove (repeat for several; default: deadlock_free and connected, and
    /// isolated when the state declares partitions).
    #[arg(long = "property", value_name = "PROPERTY")]
    properties: Vec<PropertyArg>,
    /// Engine: explicit, z3, or both (they must agree).
    #[arg(long, default_value = "explicit")]
    engine: Engine,
    /// z3 timeout per property, in seconds.
    #[arg(long, default_value_t = 60)]
    z3_timeout: u32,
    /// Output format.
    #[arg(long, default_value = "human")]
    format: Format,
    /// Failure patterns, failed routes and credit loops listed at most (all are counted).
    #[arg(long, default_value_t = 20)]
    max_listed: usize,
    /// A port the subnet manager runs on: `NODE` (an end node's port 1, a switch's port 0),
    /// `NODE:PORT`, or a node GUID for NODE; repeat for standbys. Replaces where the state
    /// says the SM runs (`isolated` checks every end port can reach it).
    #[arg(long = "sm", value_name = "NODE[:PORT]")]
    pub sm: Vec<String>,
}

/// `state` with the SM on the ports `specs` name (`NODE`, `NODE:PORT`, a node GUID for NODE).
fn with_sm(state: ValidState, specs: &[String]) -> Result<ValidState, Fatal> {
    let mut st = state.into_inner();
    let f = &st.fabric;
    let mut ports = Vec::new();
    for spec in specs {
        let (name, port) = match spec.rsplit_once(':') {
            Some((n, p)) => {
                let p: u8 = p
                    .parse()
                    .map_err(|_| Fatal(format!("`--sm {spec}`: `{p}` is not a port number")))?;
                (n, Some(p))
            }
            None => (spec.as_str(), None),
        };
        let guid = name
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .and_then(|g| f.find_guid(weft_fabric::Guid(g)));
        let Some(n) = f.find(name).or(guid) else {
            return Err(Fatal(format!(
                "`--sm {spec}`: no node `{name}` in the fabric"
            )));
        };
        let node = f.node(n);
        let p = match (node.is_switch(), port) {
            (true, None | Some(0)) => 0,
            (true, Some(p)) => {
                return Err(Fatal(format!(
                    "`--sm {spec}`: `{name}` is a switch, whose SM runs on port 0, not {p}"
                )))
            }
            (false, None) => 1,
            (false, Some(p)) if (1..=node.spec.port_count).contains(&p) => p,
            (false, Some(p)) => {
                return Err(Fatal(format!(
                    "`--sm {spec}`: `{name}` has {} port(s), not port {p}",
                    node.spec.port_count
                )))
            }
        };
        ports.push(weft_fabric::PortRef::new(n, p));
    }
    ports.sort();
    ports.dedup();
    st.sm = ports;
    ValidState::new(st).map_err(|e| Fatal(format!("with `--sm`, the state is not valid:\n{e}")))
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Engine {
    Explicit,
    Z3,
    Both,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
#[value(rename_all = "snake_case")]
enum PropertyArg {
    /// The channel dependency graph is acyclic (`weft::credit_loop` when not).
    DeadlockFree,
    /// Every required route arrives (`weft::unreachable` when not).
    Connected,
    /// The P_Key tables let exactly the declared partitions' pairs talk
    /// (`weft::partition_breach` when not).
    Isolated,
    /// With LMC > 0, every pair's alternate path shares no cable between switches with its
    /// primary (`weft::apm_shared_cable` when not).
    ApmDisjoint,
}

#[derive(Clone, Copy, ValueEnum)]
enum ScopeArg {
    /// Every end-node port and switch to every other.
    All,
    /// End-node ports to end-node ports.
    HcaToHca,
}

fn read(path: &Path) -> Result<String, Fatal> {
    weft_driver::input::read_regular(path, weft_driver::input::MAX_DUMP_BYTES)
        .map_err(|e| Fatal(format!("cannot read `{}`: {e}", path.display())))
}

fn warn(msg: &str) {
    use std::io::Write as _;
    crate::term::clear();
    let _ = writeln!(std::io::stderr(), "warning: {msg}");
}

/// Loads the state and names the file findings point at.
/// What `weft verify` checks: the state, the name of the input, and the compilation when the
/// input was a `.weft` file (its diagnostics and where each node was declared).
pub(crate) struct Loaded {
    state: ValidState,
    origin: String,
    compiled: Option<weft_compiler::Compilation>,
    /// What the build promises, when compiled here ([`weft_driver::properties`]): proven
    /// unless `--property` says otherwise, so `verify x.weft` proves what `check` and `build`
    /// prove.
    promised: Option<Vec<Property>>,
}

impl Loaded {
    /// A state to verify, named by where it came from (for findings).
    pub(crate) fn of(state: ValidState, origin: String) -> Loaded {
        Loaded {
            state,
            origin,
            compiled: None,
            promised: None,
        }
    }

    /// Findings: the compilation's diagnostics, then the verdict's violations (placed at
    /// node declarations when compiled here).
    fn findings(
        &self,
        report: Option<&Report>,
        z3: Option<&weft_verifier::z3::Z3Report>,
    ) -> Vec<findings::Finding> {
        let (loops, total, patterns, isolation, apm) = match (report, z3) {
            (Some(r), _) => (
                r.credit_loops.as_slice(),
                r.credit_loops_total,
                r.failures.as_slice(),
                r.isolation.as_ref(),
                r.apm.as_ref(),
            ),
            (None, Some(z)) => (
                z.credit_loop.as_slice(),
                u64::from(z.credit_loop.is_some()),
                &[][..],
                None,
                None,
            ),
            (None, None) => (&[][..], 0, &[][..], None, None),
        };
        let mut out: Vec<findings::Finding> = self
            .compiled
            .iter()
            .flat_map(|c| findings::of_diagnostics(&c.diagnostics, &c.sources))
            .collect();
        let origins = self.compiled.as_ref().and_then(Origins::of);
        out.extend(findings::of_report(
            loops,
            total,
            patterns,
            isolation,
            apm,
            &self.origin,
            origins.as_ref(),
        ));
        out
    }
}

fn load(args: &Args, color: ColorChoice) -> Result<Loaded, Fatal> {
    if let Some(p) = &args.state {
        let st = ValidState::from_json(&read(p)?)
            .map_err(|e| Fatal(format!("`{}` is not a valid weft state:\n{e}", p.display())))?;
        return Ok(Loaded::of(st, p.display().to_string()));
    }
    if let Some(topo) = &args.topology {
        let text = read(topo)?;
        let mut opts = weft_fabric::ibnetdiscover::ParseOptions {
            source_name: topo.display().to_string(),
            fabric_name: topo
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "discovered".to_owned()),
            ..Default::default()
        };
        if let Some(m) = &args.node_name_map {
            opts.name_map = weft_fabric::ibnetdiscover::parse_node_name_map(&read(m)?)
                .map_err(|e| Fatal(format!("{:?}", miette::Report::new(e))))?;
        }
        let d = weft_fabric::ibnetdiscover::parse(&text, &opts)
            .map_err(|e| Fatal(format!("{:?}", miette::Report::new(e))))?;
        let lfts_path = args
            .lfts
            .as_deref()
            .ok_or_else(|| Fatal("`--lfts` is required".into()))?;
        let lfts = read(lfts_path)?;
        let opt = |p: &Option<PathBuf>| p.as_deref().map(read).transpose();
        let (sl2vl, psl, g2l) = (opt(&args.sl2vl)?, opt(&args.path_sl)?, opt(&args.guid2lid)?);
        let dumps = weft_fabric::opensm::Dumps {
            lfts: &lfts,
            sl2vl: sl2vl.as_deref(),
            path_sl: psl.as_deref(),
            guid2lid: g2l.as_deref(),
        };
        let (st, warnings) = weft_fabric::opensm::assemble(d.fabric, d.lids, &dumps)
            .map_err(|e| Fatal(format!("cannot read OpenSM's files:\n{e}")))?;
        for w in warnings {
            warn(&w.to_string());
        }
        if st.lids.base.is_empty() {
            return Err(Fatal(format!(
                "`{}` has no LIDs (`lid N` annotations); give `--guid2lid`",
                topo.display()
            )));
        }
        return Ok(Loaded::of(st, lfts_path.display().to_string()));
    }
    if let Some(file) = &args.file {
        let weft_driver::Compiled {
            compilation: c,
            built,
        } = weft_driver::compile_and_route(file, &crate::progress)?;
        let found = findings::of_diagnostics(&c.diagnostics, &c.sources);
        findings::emit_diagnostics(&found, &c.sources, color);
        let built = match built {
            None => return Err(Fatal(format!("`{}` does not compile", file.display()))),
            Some(Err(diags)) => {
                let found = findings::of_diagnostics(&diags, &c.sources);
                findings::emit_diagnostics(&found, &c.sources, color);
                return Err(Fatal(format!("`{}` could not be routed", file.display())));
            }
            Some(Ok(b)) => b,
        };
        let promised = Some(weft_driver::properties(&built));
        return Ok(Loaded {
            state: built.state,
            origin: file.display().to_string(),
            compiled: Some(c),
            promised,
        });
    }
    Err(Fatal(
        "nothing to verify: give a `.weft` file, `--state`, or `--topology` and `--lfts`".into(),
    ))
}

/// Runs `weft verify`.
pub fn run(args: Args, color: ColorChoice, quiet: bool) -> Result<ExitCode, Fatal> {
    crate::term::phase("reading");
    let loaded = load(&args, color)?;
    run_checks(loaded, &args.check, quiet)
}

/// Proves (or re-checks a certificate for) a loaded state and reports.
pub(crate) fn run_checks(
    mut loaded: Loaded,
    args: &CheckArgs,
    quiet: bool,
) -> Result<ExitCode, Fatal> {
    if args.engine != Engine::Explicit && !weft_verifier::z3::BUILT_IN {
        return Err(Fatal(format!(
            "--engine {}: {}",
            if args.engine == Engine::Z3 {
                "z3"
            } else {
                "both"
            },
            weft_verifier::z3::NOT_BUILT_IN
        )));
    }
    if !args.sm.is_empty() {
        loaded.state = with_sm(loaded.state, &args.sm)?;
    }
    let (state, origin) = (&loaded.state, loaded.origin.as_str());
    let scope = match args.scope {
        ScopeArg::All => Scope::All,
        ScopeArg::HcaToHca => Scope::HcaToHca,
    };
    let mut properties: Vec<Property> = args
        .properties
        .iter()
        .map(|p| match p {
            PropertyArg::DeadlockFree => Property::DeadlockFree,
            PropertyArg::Connected => Property::Connected,
            PropertyArg::Isolated => Property::Isolated,
            PropertyArg::ApmDisjoint => Property::ApmDisjoint,
        })
        .collect();
    properties.sort();
    properties.dedup();
    if properties.is_empty() {
        properties = match &loaded.promised {
            Some(p) => p.clone(),
            None => Property::defaults(state),
        };
    }
    if let Some(p) = &args.certificate {
        let cert = weft_verifier::Certificate::from_json(&read(p)?)
            .map_err(|e| Fatal(format!("`{}`: {e}", p.display())))?;
        let req = weft_verifier::Request {
            scope,
            properties: properties.clone(),
        };
        crate::term::phase("checking the certificate");
        let result = certificate::check(state, &cert, &req);
        let text = match (&result, args.format) {
            (Ok(_), Format::Human) if quiet => String::new(),
            (Ok(s), Format::Human) => format!(
                "✓ certificate accepted: {} ({} routes, {} route states checked)\n",
                proven_sentence(
                    &s.properties,
                    s.scope,
                    s.destinations,
                    s.hca_destinations,
                    s.switch_destinations
                ),
                group(s.routes),
                group(s.states)
            ),
            (Err(e), Format::Human) => findings::human_loops(&[findings::of_certificate_error(
                e,
                &p.display().to_string(),
            )]),
            (r, Format::Sarif) => {
                let found: Vec<findings::Finding> = r
                    .as_ref()
                    .err()
                    .map(|e| findings::of_certificate_error(e, &p.display().to_string()))
                    .into_iter()
                    .collect();
                let summary = json!({"accepted": r.is_ok(), "summary": r.as_ref().ok()});
                serde_json::to_string_pretty(&findings::sarif(&found, summary))? + "\n"
            }
            (r, _) => {
                serde_json::to_string_pretty(&json!({
                    "certificate": p.display().to_string(),
                    "accepted": r.is_ok(),
                    "summary": r.as_ref().ok(),
                    "error": r.as_ref().err().map(|e| e.to_string()),
                }))? + "\n"
            }
        };
        crate::out(None, &text)?;
        return Ok(if result.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let opts = Options {
        scope,
        properties: properties.clone(),
        certificate: args.write_certificate.is_some(),
        max_listed: args.max_listed,
        ..Options::default()
    };
    let z3 = weft_verifier::z3::Z3 {
        timeout_ms: args.z3_timeout.saturating_mul(1000),
    };
    crate::term::phase("proving");
    let report = (args.engine != Engine::Z3).then(|| weft_verifier::verify(state, &opts));
    let z3_report = (args.engine != Engine::Explicit).then(|| z3.run(state, &opts));
    if let (Some(r), Some(z)) = (&report, &z3_report) {
        if r.verdict != z.verdict {
            return Err(Fatal(format!(
                "the explicit and z3 engines disagree (explicit: {:?}, z3: {:?}); please report this",
                r.verdict, z.verdict
            )));
        }
    }
    let verdict = report
        .as_ref()
        .map(|r| r.verdict.clone())
        .or_else(|| z3_report.as_ref().map(|z| z.verdict.clone()))
        .ok_or_else(|| Fatal("no engine ran".into()))?;
    if let (Some(p), Some(r)) = (&args.write_certificate, &report) {
        if let Some(c) = &r.certificate {
            crate::output::write_file(p, (c.to_json() + "\n").as_bytes()).map_err(Fatal)?;
        }
    }
    let not_asked = Outcome::Unknown(String::new());
    let outcome = |p: Property| match p {
        Property::DeadlockFree => &verdict.deadlock_free,
        Property::Connected => &verdict.connected,
        Property::Isolated => verdict.isolated.as_ref().unwrap_or(&not_asked),
        _ => verdict.apm_disjoint.as_ref().unwrap_or(&not_asked),
    };
    let all_proven = properties.iter().all(|&p| *outcome(p) == Outcome::Proven);
    let text = match args.format {
        Format::Human if quiet && all_proven => String::new(),
        Format::Human => {
            // The compilation's diagnostics were shown when it was loaded; `human` renders the
            // violations only.
            let found = loaded.findings(report.as_ref(), z3_report.as_ref());
            human(
                state,
                report.as_ref(),
                z3_report.as_ref(),
                &found,
                origin,
                args.max_listed,
            )
        }
        Format::Json => {
            serde_json::to_string_pretty(&json!({
                "input": origin,
                "verdict": verdict,
                "findings": loaded.findings(report.as_ref(), z3_report.as_ref()),
                "report": report,
                "z3": z3_report.as_ref().map(|z| json!({
                    "verdict": z.verdict,
                    "channels": z.channels,
                    "dependencies": z.dependencies,
                    "routes": z.routes,
                    "credit_loop": z.credit_loop,
                })),
            }))? + "\n"
        }
        Format::Sarif => {
            let found = loaded.findings(report.as_ref(), z3_report.as_ref());
            serde_json::to_string_pretty(&findings::sarif(&found, Value::Null))? + "\n"
        }
    };
    crate::out(None, &text)?;
    // Exit 0 only when every property asked for is proven; 1 when one is violated or
    // unknown (the verifier ran and could not prove it: a finding about the state, as `check`
    // and `build` count it); 2 is for a run that could not happen (bad input), returned above.
    Ok(if all_proven {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A count with thin groups of three digits: `13 284`.
pub(crate) fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// What was proven, in words: "deadlock freedom and connectivity, all 13 284 LIDs, HCA and
/// switch pairs".
pub(crate) fn proven_sentence(
    properties: &[weft_verifier::Property],
    scope: Scope,
    lids: u64,
    hca_lids: u64,
    switch_lids: u64,
) -> String {
    let names: Vec<&str> = properties.iter().map(|p| p.noun()).collect();
    let what = match names.as_slice() {
        [] => "nothing".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    match scope {
        Scope::HcaToHca => format!(
            "{what}, {} HCA LIDs, HCA pairs only (switch LIDs not covered)",
            group(hca_lids)
        ),
        _ => format!(
            "{what}, all {} LIDs ({} HCA, {} switch), HCA and switch pairs",
            group(lids),
            group(hca_lids),
            group(switch_lids)
        ),
    }
}

pub(crate) fn ch(c: &weft_verifier::Channel) -> String {
    format!(
        "`{}` port {} → `{}` port {} on VL {}",
        c.node.name, c.port, c.to.name, c.to_port, c.vl
    )
}

/// A route as `H1 ─1→ L1 ─5→ S1 ✗`.
pub(crate) fn route_line(r: &Route) -> String {
    let mut s = String::new();
    for (k, h) in r.hops.iter().enumerate() {
        if k > 0 {
            s.push(' ');
        }
        s += &format!("`{}`", h.node.name);
        match (h.out_port, h.vl) {
            (Some(o), Some(v)) => s += &format!(" ─{o}/VL{v}→"),
            (Some(o), None) => s += &format!(" ─{o}→ ✗"),
            (None, _) if k + 1 == r.hops.len() => {}
            (None, _) => {}
        }
    }
    s
}

pub(crate) fn route_name(r: &Route) -> String {
    format!(
        "`{}`{} → `{}` (LID {}, SL {})",
        r.src.node.name,
        if r.src.port == 0 {
            String::new()
        } else {
            format!(" port {}", r.src.port)
        },
        r.dst.node.name,
        r.dlid.0,
        r.sl
    )
}

/// What the properties asked for came to, in one line each, plus the sentence of what was
/// proven when everything was.
pub(crate) fn verdict_lines(t: &mut String, r: &Report) {
    if r.is_proven() {
        let switch_lids = r.stats.switch_destinations;
        let _ = writeln!(
            t,
            "✓ {} ({} routes, {} channels, {} VL(s))",
            proven_sentence(
                &r.properties,
                r.scope,
                r.stats.destinations,
                r.stats.destinations - switch_lids,
                switch_lids
            ),
            group(r.stats.routes),
            group(r.stats.channels),
            r.stats.vls
        );
        if let Some(i) = &r.isolation {
            let _ = writeln!(
                t,
                "  isolation: the P_Key tables of {} end ports enforce exactly the {} declared partition(s){}",
                group(i.ports as u64),
                i.partitions,
                if i.classes > 0 {
                    format!(", and {} tenant(s)' traffic stays on its class's SLs and VLs", i.classes)
                } else {
                    String::new()
                }
            );
            let _ = writeln!(t, "  the SM {}", sm_line(i));
        }
        if let Some(a) = &r.apm {
            let _ = writeln!(
                t,
                "  APM: every one of {} (source, destination) pairs has an alternate path sharing no cable between switches with its primary",
                group(a.pairs)
            );
        }
        return;
    }
    for &p in &r.properties {
        let line = match (r.outcome(p), p) {
            (Outcome::Proven, _) => format!("✓ {}: proven", p.noun()),
            (Outcome::Unknown(why), _) => format!("? {}: unknown ({why})", p.noun()),
            (Outcome::Violated, Property::DeadlockFree) => format!(
                "× {}: {} credit loop(s)",
                p.noun(),
                group(r.credit_loops_total)
            ),
            (Outcome::Violated, Property::ApmDisjoint) => format!(
                "× {}: {} pair(s) of end ports share a cable between their primary and alternate paths",
                p.noun(),
                group(r.apm.as_ref().map_or(0, |a| a.shared_pairs))
            ),
            (Outcome::Violated, Property::Isolated) => format!(
                "× {}: {}",
                p.noun(),
                r.isolation.as_ref().map_or_else(String::new, isolation_count)
            ),
            (Outcome::Violated, _) => format!(
                "× {}: {} route(s) fail, in {} pattern(s)",
                p.noun(),
                group(r.failed_routes),
                r.failures.len()
            ),
        };
        // A violation carries its finding's code; an unknown found nothing to tag.
        if *r.outcome(p) == Outcome::Violated {
            let _ = writeln!(t, "{line} [{}]", p.code());
        } else {
            let _ = writeln!(t, "{line}");
        }
    }
}

/// A verification for people: what was checked, the credit loops and failed-route patterns
/// among `findings` (other findings are rendered elsewhere), the verdict lines and the z3
/// engine's answer.
pub(crate) fn human(
    state: &FabricState,
    report: Option<&Report>,
    z3: Option<&weft_verifier::z3::Z3Report>,
    findings: &[findings::Finding],
    origin: &str,
    max_listed: usize,
) -> String {
    let mut t = String::new();
    if let Some(r) = report {
        let s = &r.stats;
        let _ = writeln!(
            t,
            "verifying `{}` ({origin}), scope {}: {} sources, {} destinations, {} routes, {} channels, {} dependencies, {} VL(s)",
            r.fabric,
            r.scope.as_str(),
            group(s.sources),
            group(s.destinations),
            group(s.routes),
            group(s.channels),
            group(s.dependencies),
            s.vls
        );
        t += &findings::human_loops(findings);
        if r.credit_loops_total > r.credit_loops.len() as u64 {
            let _ = writeln!(
                t,
                "\n… and {} more credit loop(s) (`--max-listed` shows more)",
                group(r.credit_loops_total - r.credit_loops.len() as u64)
            );
        }
        let shown = r.failures.len().min(max_listed.max(1));
        t += &findings::human_patterns(findings, shown);
        if r.failures.len() > shown {
            let rest: u64 = r.failures.iter().skip(shown).map(|p| p.routes).sum();
            let _ = writeln!(
                t,
                "\n… and {} more pattern(s) of failed routes ({} routes; `--max-listed` shows more)",
                r.failures.len() - shown,
                group(rest)
            );
        }
        if !r.failures.is_empty() {
            let hca_hca = r.failures.iter().any(|p| {
                p.source.kind != weft_fabric::NodeKind::Switch
                    && p.destination.kind != weft_fabric::NodeKind::Switch
            });
            if !hca_hca {
                let _ = writeln!(t, "\n  HCA→HCA routes: none fail");
            }
        }
        if let Some(i) = r.isolation.as_ref().filter(|i| !i.breaches.is_empty()) {
            human_isolation(&mut t, i);
        }
        if let Some(a) = r.apm.as_ref().filter(|a| !a.shared.is_empty()) {
            let _ = writeln!(
                t,
                "\n× {} pair(s) of end ports have primary and alternate paths through one cable [{}]",
                group(a.shared_pairs),
                Property::ApmDisjoint.code()
            );
            for s in &a.shared {
                let _ = writeln!(t, "  {}", s.describe());
            }
        }
        let _ = writeln!(t);
        verdict_lines(&mut t, r);
        if let Some(c) = &r.certificate {
            let _ = writeln!(
                t,
                "  certificate: {} channels ranked, {} destinations labelled",
                group(c.deadlock_free.channels.len() as u64),
                group(c.connected.destinations.len() as u64)
            );
        }
    }
    if let Some(z) = z3 {
        let _ = writeln!(
            t,
            "z3: deadlock free {:?}, connected {:?} ({} channels, {} dependencies, {} routes)",
            z.verdict.deadlock_free, z.verdict.connected, z.channels, z.dependencies, z.routes
        );
        if report.is_none() {
            t += &findings::human_loops(findings);
        }
    }
    let _ = state;
    t
}

/// Where the SM runs, as the isolation check took it (a verb phrase).
pub(crate) fn sm_line(i: &weft_verifier::Isolation) -> String {
    if i.sm.is_empty() {
        return "runs where the state does not say (`sm on NODE` in the source, `--sm NODE`): \
                every end port holds a default-partition key, the SM's own port is not checked"
            .to_owned();
    }
    let ports: Vec<String> =
        i.sm.iter()
            .map(|e| format!("`{}` port {}", e.node.name, e.port))
            .collect();
    format!(
        "runs on {}, a full member of the default partition every end port reaches",
        ports.join(", ")
    )
}

/// How many pairs break the declared partitions (and, with classes, leave them).
fn isolation_count(i: &weft_verifier::Isolation) -> String {
    let mut t = format!(
        "{} pair(s) of end ports break the declared partitions",
        group(i.pairs)
    );
    if i.sm_breaches > 0 {
        t += &format!(
            "; {} port(s) keep end ports from the SM",
            group(i.sm_breaches)
        );
    }
    if i.classes > 0 {
        t += &format!(
            "; {} pair(s) or hop(s) leave their tenant's class",
            group(i.off_class)
        );
    }
    t
}

/// The pairs of end ports that break the declared partitions.
fn human_isolation(t: &mut String, i: &weft_verifier::Isolation) {
    let _ = writeln!(
        t,
        "\n× {} [{}]",
        isolation_count(i),
        Property::Isolated.code()
    );
    for b in &i.breaches {
        let _ = writeln!(t, "  {}", b.describe());
    }
    let listed: u64 = i.breaches.iter().map(|b| b.pairs).sum();
    if listed < i.pairs {
        let _ = writeln!(
            t,
            "  … and {} more pair(s) (`--max-listed` shows more)",
            group(i.pairs - listed)
        );
    }
}

pub(crate) fn human_loop(t: &mut String, l: &CreditLoop, k: usize, n: u64) {
    let _ = writeln!(
        t,
        "\n× credit loop {} of {n}: {} channels in a cycle of dependencies [{}]",
        k + 1,
        l.channels.len(),
        Property::DeadlockFree.code()
    );
    for d in &l.cycle {
        let _ = writeln!(t, "  │ {}", ch(&d.from));
        let _ = writeln!(
            t,
            "  │   waits for {} — route {}",
            ch(&d.to),
            route_name(&d.route)
        );
    }
    let _ = writeln!(t, "  ╰─ back to the first channel");
    if l.channels.len() > l.cycle.len() {
        let shown = l.channels.len().min(12);
        let _ = writeln!(t, "  channels of the loop:");
        for c in l.channels.iter().take(shown) {
            let _ = writeln!(t, "    {}", ch(c));
        }
        if l.channels.len() > shown {
            let _ = writeln!(t, "    … and {} more", l.channels.len() - shown);
        }
    }
    let _ = writeln!(
        t,
        "  help: packets holding each channel wait for the next; break the cycle with up/down routing or move a route to another VL (SL2VL)"
    );
}

/// One sentence for a pattern: "402 084 level-3 switch → level-3 switch routes fail at the
/// source: no forwarding entry (255)".
pub(crate) fn pattern_sentence(p: &FailurePattern) -> String {
    let place = if p.at_source {
        "at the source".to_owned()
    } else if p.at_nodes == 1 {
        match p.witnesses.first() {
            Some(w) => format!("at `{}`", w.at.name),
            None => format!("at one {}", p.at.describe()),
        }
    } else {
        format!("at {} {}", group(p.at_nodes), p.at.describe_plural())
    };
    format!(
        "{} {} → {} route(s) fail {place}: {}",
        group(p.routes),
        p.source.describe(),
        p.destination.describe(),
        p.reason.describe()
    )
}

pub(crate) fn human_pattern(t: &mut String, p: &FailurePattern) {
    let _ = writeln!(
        t,
        "\n× {} [{}]",
        pattern_sentence(p),
        Property::Connected.code()
    );
    let _ = writeln!(
        t,
        "  {} source port(s), {} destination LID(s){}",
        group(p.sources),
        group(p.destinations),
        if p.at_source {
            String::new()
        } else {
            format!(", failing at {} node(s)", group(p.at_nodes))
        }
    );
    for w in &p.witnesses {
        // A route that fails where it starts has no hops worth drawing.
        let hops = if w.route.hops.len() > 1 {
            format!("{} — ", route_line(&w.route))
        } else {
            String::new()
        };
        let _ = writeln!(
            t,
            "  e.g. {}: {hops}`{}` {}",
            route_name(&w.route),
            w.at.name,
            w.reason.describe()
        );
    }
    let help = match p.reason {
        FailureKind::Unset => "set the entries for these LIDs on those switches",
        FailureKind::Loop => "the LFTs send these destinations round in a circle",
        FailureKind::PortDown | FailureKind::PortUnwired => "reroute around the dead port",
        FailureKind::VlNotOperational | FailureKind::Sl2VlUnassigned => {
            "map the SL to a VL every port on the path supports"
        }
        FailureKind::VlAboveMaxVls => {
            "map the SL to a VL below max_vls, or let the SM operate more VLs"
        }
        FailureKind::VlNotScheduled => {
            "give the VL a weight above 0 in the port's high or low VL arbitration table"
        }
        _ => "point the entries at the ports toward the destinations",
    };
    let _ = writeln!(t, "  help: {help}");
}
