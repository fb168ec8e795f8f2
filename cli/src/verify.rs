//! `weft verify`: prove a fabric state deadlock-free and connected, or show why not.
//!
//! Inputs (one of):
//!
//! * `weft verify FILE.weft`: compile (LIDs, routing) and verify what was compiled;
//! * `weft verify --state state.json`: a state `weft build` wrote;
//! * `weft verify --topology FILE.ibnetdiscover --lfts opensm-lfts.dump [--sl2vl
//!   opensm-sl2vl.dump] [--path-sl FILE.psl] [--guid2lid guid2lid] [--mfts opensm.mcfdbs
//!   [--mcmembers saquery.txt]]`: a fabric OpenSM configured (LIDs from the topology's `lid` annotations unless a guid2lid is given; the
//!   ports it gives none are taken out of the proof and named as not covered).
//!
//! `--certificate FILE` re-checks a certificate against the state instead (linear time,
//! trusting nothing else); `--write-certificate FILE` writes one when the state is proven.
//! Output: human (default), `--format json` or `--format sarif` (SARIF 2.1.0). Exit codes, as
//! docs/commands/weft-verify.md gives them: 0 every property asked for proven, 1 one violated or unknown
//! (or a rejected certificate), 2 could not run (bad input, unreadable files).

use crate::findings::{self, Format, Origins};
use crate::{ColorChoice, Fatal};
use clap::ValueEnum;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_fabric::ValidState;
use weft_formats::state_json::FromJson;
use weft_verifier::engines::Engines;
use weft_verifier::{certificate, Options, Outcome, Property, Report, Scope};

/// Arguments of `weft verify`.
#[derive(clap::Args)]
pub struct Args {
    /// A `.weft` file to compile and verify.
    file: Option<PathBuf>,
    /// A state written by `weft build` (`state.json`).
    #[arg(long, conflicts_with_all = ["file", "topology"])]
    state: Option<PathBuf>,
    /// An ibnetdiscover topology (with `lid` annotations unless `--guid2lid` is given), or
    /// OpenSM's `opensm-subnet.lst`.
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
    /// Multicast forwarding tables: OpenSM's `opensm.mcfdbs`, or `ibroute -M`, `dump_fts -M`
    /// or `dump_mfts` output (without them the proof covers unicast only, and says so).
    #[arg(long, requires = "topology")]
    mfts: Option<PathBuf>,
    /// Multicast groups: `saquery` output (`saquery -g` and `saquery -m`, or `saquery MCMR`),
    /// giving each group's SL and members (without it: members inferred from the MFTs, SL 0).
    /// Query with the SM_Key (`saquery --smkey …`): OpenSM hides members from an untrusted
    /// query, and records naming no member of a group the MFTs forward are refused.
    #[arg(long, requires = "mfts")]
    mcmembers: Option<PathBuf>,
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
    /// Required pairs: all (every end-node port and switch) or hca-to-hca.
    #[arg(long, default_value = "all", value_parser = crate::args::scope())]
    scope: Scope,
    /// A property to prove (repeat for several; default: deadlock_free and connected,
    /// isolated when the state declares partitions, and what a compiled build promises):
    /// deadlock_free (`weft::credit_loop` when not), connected (`weft::unreachable`),
    /// isolated (`weft::partition_breach`), apm_disjoint (`weft::apm_shared_cable`).
    #[arg(long = "property", value_name = "PROPERTY", value_parser = crate::args::property())]
    properties: Vec<Property>,
    /// Engine: explicit, z3, or both (they must agree).
    #[arg(long, default_value = "explicit")]
    engine: Engine,
    /// z3 timeout per property, in seconds.
    #[arg(long, default_value_t = 60)]
    z3_timeout: u32,
    /// Output format.
    #[arg(long, default_value = "human")]
    pub(crate) format: Format,
    /// Failure patterns, failed routes and credit loops listed at most (all are counted).
    #[arg(long, default_value_t = 20)]
    max_listed: usize,
    /// The fabric routes adaptively (e.g. NVIDIA's `ar_updn`): what the static tables prove
    /// about routes is reported unknown ("not proven: adaptive routing"), violations stay.
    #[arg(long, conflicts_with = "certificate")]
    adaptive_routing: bool,
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
                let p: u8 = p.parse().map_err(|_| {
                    Fatal::Run(format!("`--sm {spec}`: `{p}` is not a port number"))
                })?;
                (n, Some(p))
            }
            None => (spec.as_str(), None),
        };
        // A word that is not a node's name may be a GUID, written with `0x` as weft writes it.
        let guid = name
            .parse::<weft_fabric::Guid>()
            .ok()
            .and_then(|g| f.find_guid(g));
        let Some(n) = f.find(name).or(guid) else {
            return Err(Fatal::Run(format!(
                "`--sm {spec}`: no node `{name}` in the fabric"
            )));
        };
        let node = f.node(n);
        let p = match (node.is_switch(), port) {
            (true, None | Some(0)) => 0,
            (true, Some(p)) => {
                return Err(Fatal::Run(format!(
                    "`--sm {spec}`: `{name}` is a switch, whose SM runs on port 0, not {p}"
                )))
            }
            (false, None) => 1,
            (false, Some(p)) if (1..=node.spec.port_count).contains(&p) => p,
            (false, Some(p)) => {
                return Err(Fatal::Run(format!(
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
    ValidState::new(st)
        .map_err(|e| Fatal::Run(format!("with `--sm`, the state is not valid:\n{e}")))
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Engine {
    Explicit,
    Z3,
    Both,
}

fn read(path: &Path) -> Result<String, Fatal> {
    weft_driver::input::read_regular(path, weft_driver::input::MAX_DUMP_BYTES)
        .map_err(|e| Fatal::Run(format!("cannot read `{}`: {e}", path.display())))
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
    /// The ports no route to or from was checked: a topology gave them no LID
    /// ([`without_unassigned`]). Named for people, in fabric order.
    uncovered: Vec<String>,
    /// How the cabling differs from a design (`weft audit --expect`): findings that fail
    /// the run (exit 1) whatever the verdict.
    cabling: Vec<findings::Finding>,
    /// What the readers of the input warned about (a loopback cable in the topology, a
    /// guid2lid record naming no port of it), shown and counted with the verdict.
    warnings: Vec<findings::Finding>,
}

impl Loaded {
    /// A state to verify, named by where it came from (for findings).
    pub(crate) fn of(state: ValidState, origin: String) -> Loaded {
        Loaded {
            state,
            origin,
            compiled: None,
            promised: None,
            uncovered: Vec::new(),
            cabling: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The same, with how its cabling differs from a design.
    pub(crate) fn with_cabling(mut self, cabling: Vec<findings::Finding>) -> Loaded {
        self.cabling = cabling;
        self
    }

    /// The finding naming the ports not covered, if any.
    fn not_covered(&self) -> Option<findings::Finding> {
        let n = self.uncovered.len();
        if n == 0 {
            return None;
        }
        let mut f = findings::of_input(
            "weft::not_covered",
            Some(&self.origin),
            format!(
                "{n} port{} not covered: the topology gives {} no LID (`lid 0` or `lid 65535`, \
                 or none), so no route to or from {} was checked: {}",
                if n == 1 { "" } else { "s" },
                if n == 1 { "it" } else { "them" },
                if n == 1 { "it" } else { "them" },
                self.uncovered.join(", ")
            ),
        );
        f.level = findings::Level::Warning;
        f.help = Some(
            "verify again once the subnet manager has assigned every port a LID, or give \
             `--guid2lid`"
                .to_owned(),
        );
        Some(f)
    }

    /// Findings: the ports not covered, then [`Loaded::violations`].
    fn findings(
        &self,
        report: Option<&Report>,
        z3: Option<&weft_verifier::z3::Z3Report>,
    ) -> Vec<findings::Finding> {
        let mut out: Vec<findings::Finding> = self.not_covered().into_iter().collect();
        out.extend(self.warnings.iter().cloned());
        out.extend(self.cabling.iter().cloned());
        out.extend(self.violations(report, z3));
        out
    }

    /// The compilation's diagnostics, then the verdict's violations (placed at node
    /// declarations when compiled here).
    fn violations(
        &self,
        report: Option<&Report>,
        z3: Option<&weft_verifier::z3::Z3Report>,
    ) -> Vec<findings::Finding> {
        let v = match (report, z3) {
            (Some(r), _) => findings::Violations::of(r),
            (None, Some(z)) => findings::Violations {
                loops: z.credit_loop.as_slice(),
                loops_total: u64::from(z.credit_loop.is_some()),
                ..findings::Violations::default()
            },
            (None, None) => findings::Violations::default(),
        };
        let mut out: Vec<findings::Finding> = self
            .compiled
            .iter()
            .flat_map(|c| findings::of_diagnostics(&c.diagnostics, &c.sources))
            .collect();
        let origins = self.compiled.as_ref().and_then(Origins::of);
        out.extend(findings::of_report(v, &self.origin, origins.as_ref()));
        out
    }
}

fn load(args: &Args, color: ColorChoice) -> Result<Loaded, Fatal> {
    if let Some(p) = &args.state {
        let st = ValidState::from_json(&read(p)?).map_err(|e| {
            Fatal::Input(
                findings::of_state_errors(&e, &p.display().to_string()),
                None,
            )
        })?;
        return Ok(Loaded::of(st, p.display().to_string()));
    }
    if let Some(topo) = &args.topology {
        let text = read(topo)?;
        let mut opts = weft_formats::ibnetdiscover::ParseOptions {
            source_name: topo.display().to_string(),
            fabric_name: topo
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "discovered".to_owned()),
            ..Default::default()
        };
        if let Some(m) = &args.node_name_map {
            let map = read(m)?;
            opts.name_map =
                weft_formats::ibnetdiscover::parse_node_name_map(&map).map_err(|e| {
                    let e = e.with_source_name(&m.display().to_string());
                    Fatal::Input(
                        findings::of_miette(&e, &m.display().to_string(), Some(&map)),
                        None,
                    )
                })?;
        }
        let topo_name = topo.display().to_string();
        let d = weft_formats::ibnetdiscover::parse(&text, &opts)
            .map_err(|e| Fatal::Input(findings::of_miette(&e, &topo_name, Some(&text)), None))?;
        let mut input_warnings: Vec<findings::Finding> = d
            .warnings
            .iter()
            .flat_map(|w| findings::of_miette(w, &topo_name, Some(&text)))
            .collect();
        let lfts_path = args
            .lfts
            .as_deref()
            .ok_or_else(|| Fatal::Run("`--lfts` is required".into()))?;
        let lfts = read(lfts_path)?;
        let opt = |p: &Option<PathBuf>| p.as_deref().map(read).transpose();
        let (sl2vl, psl, g2l) = (opt(&args.sl2vl)?, opt(&args.path_sl)?, opt(&args.guid2lid)?);
        let (mfts, mcmembers) = (opt(&args.mfts)?, opt(&args.mcmembers)?);
        let dumps = weft_formats::opensm::Dumps {
            lfts: &lfts,
            sl2vl: sl2vl.as_deref(),
            path_sl: psl.as_deref(),
            guid2lid: g2l.as_deref(),
            mfts: mfts.as_deref(),
            mcmembers: mcmembers.as_deref(),
        };
        let path_of = |kind: &str| {
            let p = match kind {
                "sl2vl" => args.sl2vl.as_deref(),
                "path-sl" => args.path_sl.as_deref(),
                "guid2lid" => args.guid2lid.as_deref(),
                "mfts" => args.mfts.as_deref(),
                "mcmembers" => args.mcmembers.as_deref(),
                _ => Some(lfts_path),
            };
            p.unwrap_or(lfts_path).display().to_string()
        };
        // Without a guid2lid, the topology's LIDs are the fabric's: the ports it gives none
        // cannot be routed to, and are taken out of what is proven.
        let (fabric, uncovered) = if args.guid2lid.is_none() {
            without_unassigned(d.fabric, &d.unassigned)
        } else {
            (d.fabric, Vec::new())
        };
        let (st, warnings) = match weft_formats::opensm::assemble(fabric, d.lids, &dumps) {
            Ok(found) => found,
            Err(e) => {
                // The warnings too: the summary counts everything shown.
                input_warnings.extend(findings::of_assemble_errors(&e, path_of, &topo_name));
                return Err(Fatal::Input(findings::capped(input_warnings), None));
            }
        };
        let dump_warnings = weft_formats::opensm::AssembleErrors {
            dumps: warnings,
            state: Vec::new(),
        };
        input_warnings.extend(
            findings::of_assemble_errors(&dump_warnings, path_of, &topo_name)
                .into_iter()
                .map(|mut f| {
                    if f.level == findings::Level::Error {
                        f.level = findings::Level::Warning;
                    }
                    f
                }),
        );
        if st.lids.base.is_empty() {
            return Err(Fatal::Run(format!(
                "`{}` has no LIDs (`lid N` annotations); give `--guid2lid`",
                topo.display()
            )));
        }
        let mut loaded = Loaded::of(st, lfts_path.display().to_string());
        loaded.uncovered = uncovered;
        loaded.warnings = findings::capped(input_warnings);
        return Ok(loaded);
    }
    if let Some(file) = &args.file {
        let (c, built) = crate::compiled(file, color)?;
        let promised = Some(weft_driver::properties(&built));
        return Ok(Loaded {
            state: built.state,
            origin: file.display().to_string(),
            compiled: Some(c),
            promised,
            uncovered: Vec::new(),
            cabling: Vec::new(),
            warnings: Vec::new(),
        });
    }
    Err(Fatal::Run(
        "nothing to verify: give a `.weft` file, `--state`, or `--topology` and `--lfts`".into(),
    ))
}

/// `fabric` without the ports `unassigned` (those a topology gives no LID: not yet assigned
/// by an SM): an end port's link and a switch are marked down, so no route to or from them is
/// required — nothing can address a port without a LID — and routes through a switch taken
/// out fail. Returns the fabric and every live port this leaves uncovered (with the end ports
/// cut off behind a switch taken out), named for people.
fn without_unassigned(
    fabric: weft_fabric::Fabric,
    unassigned: &[weft_fabric::PortRef],
) -> (weft_fabric::Fabric, Vec<String>) {
    if unassigned.is_empty() {
        return (fabric, Vec::new());
    }
    let live_ends = |f: &weft_fabric::Fabric| -> Vec<weft_fabric::PortRef> {
        f.node_ids()
            .filter(|&id| !f.node(id).is_switch())
            .flat_map(|id| {
                f.node(id)
                    .ports
                    .iter()
                    .map(move |p| weft_fabric::PortRef::new(id, p.num.0))
            })
            .filter(|&p| f.live_peer(p).is_some())
            .collect()
    };
    let before = live_ends(&fabric);
    let mut b = weft_fabric::FabricBuilder::from(fabric);
    let mut switches = Vec::new();
    for &p in unassigned {
        let node = b.fabric().node(p.node);
        if node.is_switch() {
            if !node.down {
                switches.push(p.node);
                b.set_node_down(p.node);
            }
        } else if let Some((_, link)) = b.fabric().peer(p) {
            b.set_link_down(link);
        }
    }
    let fabric = b.finish();
    let after: std::collections::BTreeSet<weft_fabric::PortRef> =
        live_ends(&fabric).into_iter().collect();
    let mut names: Vec<(weft_fabric::NodeId, u8, String)> = switches
        .iter()
        .map(|&id| (id, 0, format!("switch `{}`", fabric.node(id).name())))
        .collect();
    names.extend(before.into_iter().filter(|p| !after.contains(p)).map(|p| {
        let name = format!("`{}` port {}", fabric.node(p.node).name(), p.port.0);
        (p.node, p.port.0, name)
    }));
    names.sort_by_key(|(id, port, _)| (*id, *port));
    (fabric, names.into_iter().map(|(_, _, n)| n).collect())
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
        return Err(Fatal::Run(format!(
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
    let scope = args.scope;
    let mut properties = args.properties.clone();
    properties.sort();
    properties.dedup();
    if properties.is_empty() {
        properties = match &loaded.promised {
            Some(p) => p.clone(),
            None => Property::defaults(state),
        };
    }
    if let Some(p) = &args.certificate {
        return check_certificate(state, p, properties, scope, args.format, quiet);
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
    let engines = match args.engine {
        Engine::Explicit => Engines::Explicit,
        Engine::Z3 => Engines::Z3,
        Engine::Both => Engines::Both,
    };
    crate::term::phase("proving");
    let run = weft_verifier::engines::run(state, &opts, engines, z3, args.adaptive_routing)
        .map_err(|e| Fatal::Run(format!("{e} [weft::engines_disagree]")))?;
    let (report, z3_report, verdict) = (run.explicit, run.z3, run.verdict);
    if let (Some(p), Some(r)) = (&args.write_certificate, &report) {
        if let Some(c) = &r.certificate {
            crate::output::write_file(p, (c.to_json() + "\n").as_bytes()).map_err(Fatal::Run)?;
        }
    }
    let all_proven = properties
        .iter()
        .all(|&p| *verdict.outcome(p) == Outcome::Proven);
    // Cabling notes (nodes matched by position) are no difference.
    let cabled = !loaded
        .cabling
        .iter()
        .any(|f| f.level == findings::Level::Error);
    let text = match args.format {
        Format::Human if quiet && all_proven && cabled => {
            if let Some(f) = loaded.not_covered() {
                warn(&f.message);
            }
            String::new()
        }
        Format::Human => {
            // The compilation's diagnostics were shown when it was loaded; `human` renders the
            // violations only, and the ports not covered follow the verdict.
            let found = loaded.violations(report.as_ref(), z3_report.as_ref());
            let mut t = crate::render::human(
                state,
                report.as_ref(),
                z3_report.as_ref(),
                &found,
                origin,
                args.max_listed,
            );
            if let Some(f) = loaded.not_covered() {
                t += &format!("⚠ {}\n", f.message);
            }
            for f in &loaded.warnings {
                let at = f.place.as_ref().map_or_else(
                    || f.artifact.clone().unwrap_or_default(),
                    |p| format!("{}:{}", p.file, p.line),
                );
                t += &format!("⚠ {at}: {} [{}]\n", f.message, f.code);
            }
            t += &crate::diff::human(&loaded.cabling);
            t
        }
        Format::Json => {
            serde_json::to_string_pretty(&findings::document(
                "verify",
                json!({
                    "ok": all_proven && cabled,
                    "input": origin,
                    "verdict": verdict,
                    "traffic": weft_verifier::Traffic::of(state),
                    "proved": report.as_ref().map(|r| findings::proved(state, r)),
                    "findings": loaded.findings(report.as_ref(), z3_report.as_ref()),
                    "report": report.as_ref().map(report_json),
                    "z3": z3_report.as_ref().map(|z| json!({
                        "verdict": z.verdict,
                        "channels": z.channels,
                        "dependencies": z.dependencies,
                        "routes": z.routes,
                        "credit_loop": z.credit_loop,
                    })),
                }),
            ))? + "\n"
        }
        Format::Sarif => {
            let found = loaded.findings(report.as_ref(), z3_report.as_ref());
            let summary = json!({
                "ok": all_proven && cabled,
                "verdict": verdict,
                "traffic": weft_verifier::Traffic::of(state),
            });
            serde_json::to_string_pretty(&findings::sarif(&found, summary))? + "\n"
        }
    };
    crate::out(None, &text)?;
    // Exit 0 only when every property asked for is proven; 1 when one is violated or
    // unknown (the verifier ran and could not prove it: a finding about the state, as `check`
    // and `build` count it); 2 is for a run that could not happen (bad input), returned above.
    // A cabling that differs from the design (`audit --expect`) is exit 1 too.
    Ok(if all_proven && cabled {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `weft verify --certificate FILE`: re-checks the certificate against `state` for `properties`
/// in `scope`, and reports.
fn check_certificate(
    state: &ValidState,
    p: &Path,
    properties: Vec<Property>,
    scope: Scope,
    format: Format,
    quiet: bool,
) -> Result<ExitCode, Fatal> {
    let cert = weft_verifier::Certificate::from_json(&read(p)?).map_err(|e| {
        Fatal::Input(
            vec![findings::of_certificate_error(&e, &p.display().to_string())],
            None,
        )
    })?;
    let req = weft_verifier::Request { scope, properties };
    crate::term::phase("checking the certificate");
    let result = certificate::check(state, &cert, &req);
    let found: Vec<findings::Finding> = result
        .as_ref()
        .err()
        .map(|e| findings::of_certificate_error(e, &p.display().to_string()))
        .into_iter()
        .collect();
    let text = match (&result, format) {
        (Ok(_), Format::Human) if quiet => String::new(),
        (Ok(s), Format::Human) => format!(
            "✓ certificate accepted: {} ({} routes, {} route states checked)\n  traffic: {}\n",
            crate::render::proven_sentence(
                &s.properties,
                s.scope,
                s.destinations,
                s.hca_destinations,
                s.switch_destinations
            ),
            crate::render::group(s.routes),
            crate::render::group(s.states),
            s.traffic.describe()
        ),
        (Err(_), Format::Human) => findings::human_loops(&found),
        (r, Format::Sarif) => {
            let summary = json!({"accepted": r.is_ok(), "summary": r.as_ref().ok()});
            serde_json::to_string_pretty(&findings::sarif(&found, summary))? + "\n"
        }
        (r, _) => {
            serde_json::to_string_pretty(&findings::document(
                "verify",
                json!({
                    "ok": r.is_ok(),
                    "certificate": p.display().to_string(),
                    "accepted": r.is_ok(),
                    "summary": r.as_ref().ok(),
                    "findings": found,
                }),
            ))? + "\n"
        }
    };
    crate::out(None, &text)?;
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The verifier's report for JSON: its scope, verdict, statistics and counts. The violations
/// themselves (credit loops, failure patterns, partition breaches, shared cables) are the
/// document's findings, each with its whole record in `properties`, and are not repeated.
fn report_json(r: &Report) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("credit_loops");
        o.remove("failures");
    }
    if let Some(o) = v.get_mut("isolation").and_then(Value::as_object_mut) {
        o.remove("breaches");
    }
    if let Some(o) = v.get_mut("apm").and_then(Value::as_object_mut) {
        o.remove("shared");
    }
    v
}
