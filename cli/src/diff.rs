//! `weft diff A B`: the cabling of fabric B compared with fabric A's (the design's) — each
//! miswired, missing or extra cable, each cable at another speed or width, each missing or
//! extra node — as findings. Exit 0 when they do not differ, 1 when they do, 2 when an input
//! cannot be read (a description that does not compile included: 1 says they differ).

use crate::findings::{self, Finding, Format, Level, Object};
use crate::{out, ColorChoice, Fatal};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use weft_fabric::cabling::{Difference, End};

/// `weft diff` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The design: a `.weft` file, a `state.json`, or a `weft build` directory.
    design: PathBuf,
    /// The fabric compared with it, in any of the same forms.
    found: PathBuf,
    /// Output format.
    #[arg(long, default_value = "human")]
    pub(crate) format: Format,
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
                Difference::Miswired {
                    a,
                    b,
                    a_joined,
                    b_joined,
                } => [Some(a), Some(b), a_joined.as_ref(), b_joined.as_ref()]
                    .into_iter()
                    .flatten()
                    .map(port)
                    .collect(),
                Difference::Missing { a, b }
                | Difference::Extra { a, b }
                | Difference::Speed { a, b, .. }
                | Difference::Width { a, b, .. } => vec![port(a), port(b)],
            };
            f.properties = serde_json::to_value(d).unwrap_or_default();
            f
        })
        .collect()
}

/// Runs `weft diff`.
pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    // An input that cannot be read or compiled: exit 2 (1 is for fabrics that differ).
    let load = |p: &std::path::Path| {
        crate::export::load_fabric(p, color).map_err(|e| match e {
            Fatal::Input(found, _) => Fatal::Failed(found),
            e => e,
        })
    };
    let design = load(&args.design)?;
    let found = load(&args.found)?;
    let diffs = weft_fabric::cabling::compare(&design, &found);
    let shown = of_differences(&diffs, &args.found.display().to_string());
    let ok = diffs.is_empty();
    let text = match args.format {
        Format::Human => {
            if ok {
                format!(
                    "{} is cabled as {} says: no difference\n",
                    args.found.display(),
                    args.design.display()
                )
            } else {
                findings::human(&shown)
            }
        }
        Format::Json => {
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
        Format::Sarif => {
            serde_json::to_string_pretty(&findings::sarif(&shown, json!({ "ok": ok })))? + "\n"
        }
    };
    out(None, &text)?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
