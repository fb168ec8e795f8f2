//! `weft diff A B`: the cabling of fabric B compared with fabric A's (the design's) — each
//! miswired, missing or extra cable, each cable at another speed or width, each missing or
//! extra node — as findings (for people, JSON, SARIF), or as one page drawing the found
//! fabric with each difference on it (`--format html`, [`crate::html::cabling`]). Exit 0 when
//! they do not differ, 1 when they do, 2 when an input cannot be read (a description that
//! does not compile included: 1 says they differ) or its nodes cannot be matched without
//! guessing, in every format.
//!
//! What a path is, by its form: a directory is a `weft build` directory; `*.json` a
//! `state.json`; `*.csv` a cabling spreadsheet (the design only,
//! [`weft_formats::cabling::table`]); `*.weft` a description; anything else an ibnetdiscover
//! dump (or `ibnetdiscover -p` / `iblinkinfo` output).

use crate::findings::{self, Finding, Format, Level, Object};
use crate::{out, ColorChoice, Fatal};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_fabric::Fabric;
use weft_formats::cabling::{Comparison, Difference, End, MatchMode, Options};

/// `weft diff` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The design: a `.weft` file, a `state.json`, a `weft build` directory, an
    /// ibnetdiscover dump, or a cabling spreadsheet (`.csv`: StartDevice, StartPort,
    /// EndDevice, EndPort).
    design: PathBuf,
    /// The fabric compared with it, in any of the same forms but a spreadsheet.
    found: PathBuf,
    /// How nodes are matched to the design's.
    #[arg(long = "match", value_enum, default_value = "auto")]
    matching: MatchArg,
    /// Output format.
    #[arg(long, default_value = "human")]
    pub(crate) format: DiffFormat,
    /// Write the output here (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Output of `weft diff`: the findings' formats, or a page.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub(crate) enum DiffFormat {
    /// Text for people.
    Human,
    /// One JSON document, with a `findings` array.
    Json,
    /// SARIF 2.1.0 (code-scanning tools, CI annotations).
    Sarif,
    /// One self-contained page: the found fabric drawn with every difference on it.
    Html,
}

impl DiffFormat {
    /// The format refused input is shown in (the page's is the human text).
    pub(crate) fn findings(self) -> Format {
        match self {
            DiffFormat::Human | DiffFormat::Html => Format::Human,
            DiffFormat::Json => Format::Json,
            DiffFormat::Sarif => Format::Sarif,
        }
    }
}

/// How `--match` matches the found fabric's nodes to the design's.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum MatchArg {
    /// By name (node description): whole, else its first word.
    Names,
    /// By node GUID.
    Guids,
    /// By place in the graph (port numbers), from nodes whose place is unique.
    Position,
    /// By GUID, then name, then place for the nodes left.
    Auto,
}

impl MatchArg {
    pub(crate) fn mode(self) -> MatchMode {
        match self {
            MatchArg::Names => MatchMode::Names,
            MatchArg::Guids => MatchMode::Guids,
            MatchArg::Position => MatchMode::Position,
            MatchArg::Auto => MatchMode::Auto,
        }
    }
}

/// A design as read: its fabric, and whether it is a spreadsheet (made-up GUIDs, no rates but
/// its columns').
pub(crate) struct Design {
    fabric: Fabric,
    table: bool,
}

fn is_csv(p: &Path) -> bool {
    p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// Reads a fabric given by `path` as the module docs say (a spreadsheet is refused here: it
/// is only a design). What cannot be read is exit 2.
fn load_found(path: &Path, color: ColorChoice) -> Result<Fabric, Fatal> {
    if is_csv(path) {
        return Err(Fatal::failed(
            "weft::input",
            format!(
                "`{}`: a cabling spreadsheet is a design: give it as the design (first)",
                path.display()
            ),
        ));
    }
    let weft = path.extension().is_some_and(|e| e == "weft");
    if path.is_dir() || weft || path.extension().is_some_and(|e| e == "json") {
        return crate::export::load_fabric(path, color).map_err(|e| match e {
            Fatal::Input(found, _) => Fatal::Failed(found),
            e => e,
        });
    }
    let text = crate::read(path)?;
    let name = path
        .file_stem()
        .map_or_else(|| "found".to_owned(), |s| s.to_string_lossy().into_owned());
    let opts = weft_formats::ibnetdiscover::ParseOptions {
        fabric_name: name,
        source_name: path.display().to_string(),
        ..Default::default()
    };
    weft_formats::ibnetdiscover::parse(&text, &opts)
        .map(|d| d.fabric)
        .map_err(|e| {
            Fatal::failed(
                "weft::input",
                format!(
                    "`{}` is not a `.weft`, `.json`, `.csv` or build directory, and cannot be read as an ibnetdiscover dump: {e}",
                    path.display()
                ),
            )
        })
}

/// Reads a design (any form [`load_found`] reads, or a spreadsheet).
pub(crate) fn load_design(path: &Path, color: ColorChoice) -> Result<Design, Fatal> {
    if !is_csv(path) {
        return Ok(Design {
            fabric: load_found(path, color)?,
            table: false,
        });
    }
    let text = crate::read(path)?;
    let name = path
        .file_stem()
        .map_or_else(|| "design".to_owned(), |s| s.to_string_lossy().into_owned());
    let fabric = weft_formats::cabling::table::read(&name, text.as_bytes()).map_err(|e| {
        let code = miette::Diagnostic::code(&e)
            .map_or_else(|| "weft::input".to_owned(), |c| c.to_string());
        Fatal::Failed(vec![findings::of_input(
            &code,
            Some(&path.display().to_string()),
            e.to_string(),
        )])
    })?;
    Ok(Design {
        fabric,
        table: true,
    })
}

/// `found`'s cabling compared with `design`'s, nodes matched as `mode` says. Matching that
/// would have to guess is exit 2 (a finding about `artifact`).
pub(crate) fn compare(
    design: &Design,
    found: &Fabric,
    mode: MatchMode,
    artifact: &str,
) -> Result<Comparison, Fatal> {
    let opts = if design.table {
        Options::table(mode)
    } else {
        Options::fabric(mode)
    };
    weft_formats::cabling::compare(&design.fabric, found, &opts).map_err(|e| {
        let code = miette::Diagnostic::code(&e)
            .map_or_else(|| "weft::input".to_owned(), |c| c.to_string());
        Fatal::Failed(vec![findings::of_input(
            &code,
            Some(artifact),
            e.to_string(),
        )])
    })
}

/// A comparison as findings about `artifact`: the differences (errors, in its order), then
/// the nodes matched by position (notes).
pub(crate) fn of_comparison(c: &Comparison, artifact: &str) -> Vec<Finding> {
    let mut out = of_differences(&c.differences, artifact);
    for p in &c.by_position {
        let mut f = findings::of_input(
            "weft::node_matched_by_position",
            Some(artifact),
            format!(
                "the design's {} is {} ({}): matched by position",
                p.design, p.found.node, p.found.guid
            ),
        );
        f.level = Level::Note;
        f.objects = vec![Object {
            name: p.found.node.clone(),
            kind: "node",
            path: p.found.node.clone(),
        }];
        f.properties = serde_json::to_value(p).unwrap_or_default();
        out.push(f);
    }
    out
}

/// `found`'s cabling compared with `design`'s, nodes matched as `mode` says: the differences
/// (errors) and the nodes matched by position (notes), as findings about `artifact`. Matching
/// that would have to guess is exit 2.
pub(crate) fn cabling(
    design: &Design,
    found: &Fabric,
    mode: MatchMode,
    artifact: &str,
) -> Result<Vec<Finding>, Fatal> {
    Ok(of_comparison(
        &compare(design, found, mode, artifact)?,
        artifact,
    ))
}

/// Findings for people: the notes as `note: …` lines, then the errors as every command
/// shows them (with their count), when there are any.
pub(crate) fn human(shown: &[Finding]) -> String {
    let mut t = String::new();
    for f in shown.iter().filter(|f| f.level == Level::Note) {
        t += &format!("note: {} [{}]\n", f.message, f.code);
    }
    let errors: Vec<Finding> = shown
        .iter()
        .filter(|f| f.level != Level::Note)
        .cloned()
        .collect();
    if !errors.is_empty() {
        t += &findings::human(&errors);
    }
    t
}

/// The code of a difference.
pub(crate) fn code(d: &Difference) -> &'static str {
    match d {
        Difference::MissingNode(_) => "weft::node_missing",
        Difference::ExtraNode(_) => "weft::node_extra",
        Difference::Miswired { .. } => "weft::cable_miswired",
        Difference::Missing { .. } => "weft::cable_missing",
        Difference::Extra { .. } => "weft::cable_extra",
        Difference::Speed { .. } => "weft::cable_speed",
        Difference::Width { .. } => "weft::cable_width",
    }
}

fn port(e: &End) -> Object {
    Object {
        name: e.node.clone(),
        kind: "port",
        path: format!("{}/port{}", e.node, e.port),
    }
}

/// The differences as findings (errors) about `artifact`: each names its ports (or node)
/// as objects, and carries the difference itself as its properties.
pub(crate) fn of_differences(diffs: &[Difference], artifact: &str) -> Vec<Finding> {
    diffs
        .iter()
        .map(|d| {
            let mut f = findings::of_input(code(d), Some(artifact), d.to_string());
            f.level = Level::Error;
            f.objects = match d {
                Difference::MissingNode(n) | Difference::ExtraNode(n) => vec![Object {
                    name: n.node.clone(),
                    kind: "node",
                    path: n.node.clone(),
                }],
                _ => d.ends().into_iter().map(port).collect(),
            };
            f.properties = serde_json::to_value(d).unwrap_or_default();
            f
        })
        .collect()
}

/// Runs `weft diff`.
/// The machines of `fabric` whose rail cables cross: its hosts as declared (`host = "…"`),
/// else as `weft import` groups a dump's HCAs ([`weft_fabric::machines::infer`]).
pub(crate) fn crossed_rails(fabric: &Fabric) -> Vec<weft_metrics::CrossedHost> {
    use weft_fabric::machines::{self, Machines};
    let declared: Vec<(String, Vec<weft_fabric::NodeId>)> = Machines::of(fabric)
        .map(|m| {
            m.machines
                .into_iter()
                .filter(|x| x.members.len() > 1)
                .map(|x| (x.name, x.members.iter().map(|y| y.node).collect()))
                .collect()
        })
        .unwrap_or_default();
    let groups = if declared.is_empty() {
        machines::infer(fabric)
            .hosts
            .into_iter()
            .map(|h| (h.name, h.members))
            .collect()
    } else {
        declared
    };
    let members: Vec<Vec<weft_fabric::NodeId>> = groups.iter().map(|g| g.1.clone()).collect();
    let name = |n: weft_fabric::NodeId| fabric.node(n).name().to_owned();
    machines::rails::rails(fabric, &members)
        .crossed
        .iter()
        .filter_map(|c| {
            Some(weft_metrics::CrossedHost {
                host: groups.get(c.group)?.0.clone(),
                hcas: c
                    .misplaced
                    .iter()
                    .map(|x| weft_metrics::CrossedHca {
                        hca: name(x.node),
                        leaf: name(x.leaf),
                        expected_rail: x.expected,
                        leaf_rail: x.found,
                    })
                    .collect(),
            })
        })
        .collect()
}

pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    // An input that cannot be read or compiled: exit 2 (1 is for fabrics that differ).
    let design = load_design(&args.design, color)?;
    let found = load_found(&args.found, color)?;
    let artifact = args.found.display().to_string();
    let comparison = compare(&design, &found, args.matching.mode(), &artifact)?;
    let mut shown = of_comparison(&comparison, &artifact);
    shown.extend(findings::of_crossed_rails(
        &crossed_rails(&found),
        &artifact,
    ));
    let ok = !shown.iter().any(|f| f.level == Level::Error);
    let human_text = || {
        let mut t = human(&shown);
        if ok {
            t += &format!(
                "{} is cabled as {} says: no difference\n",
                args.found.display(),
                args.design.display()
            );
        }
        t
    };
    let text = match args.format {
        DiffFormat::Human => human_text(),
        DiffFormat::Json => {
            serde_json::to_string_pretty(&findings::document(
                "diff",
                json!({
                    "ok": ok,
                    "design": args.design.display().to_string(),
                    "found": args.found.display().to_string(),
                    "findings": shown,
                }),
            ))? + "\n"
        }
        DiffFormat::Sarif => {
            serde_json::to_string_pretty(&findings::sarif(&shown, json!({ "ok": ok })))? + "\n"
        }
        DiffFormat::Html => crate::html::cabling::render(&crate::html::cabling::Input {
            found: &found,
            design_name: args.design.display().to_string(),
            found_name: artifact.clone(),
            comparison: &comparison,
            findings: &shown,
            text: &human_text(),
        }),
    };
    out(args.output.as_deref(), &text)?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
