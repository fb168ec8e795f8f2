//! `weft check FILE`: parse, elaborate and validate a description, then route it and prove
//! the result (unless `--no-verify`); a summary, or what is wrong.

use crate::findings::{self, Format};
use crate::{compile, display_name, human_summary, out, ColorChoice, Fatal};
use std::path::PathBuf;
use std::process::ExitCode;
use weft_compiler::Summary;

/// `weft check` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The `.weft` file.
    file: PathBuf,
    /// Output format.
    #[arg(long, default_value = "human")]
    pub(crate) format: Format,
    /// Stop after validating the description: no routing, no proof.
    #[arg(long)]
    no_verify: bool,
}

/// Runs `weft check`.
pub fn run(args: Args, color: ColorChoice, quiet: bool) -> Result<ExitCode, Fatal> {
    let Args {
        file,
        format,
        no_verify,
    } = args;
    let c = compile(&file, weft_driver::Until::Checked)?;
    let mut failed = c.has_errors();
    let summary = c.elaborated.as_ref().map(|e| Summary::of(&e.fabric));
    // Compile and prove what the description says, unless it is already wrong.
    let mut routed: Option<weft_compiler::build::Built> = None;
    let mut build_errors = Vec::new();
    if !no_verify {
        match weft_driver::route(&c, &crate::progress) {
            Some(Ok(b)) => routed = Some(b),
            Some(Err(d)) => {
                failed = true;
                build_errors = d;
            }
            None => {}
        }
    }
    let proof = weft_driver::Proof {
        certificate: false,
        max_listed: 20,
    };
    let report = routed
        .as_ref()
        .map(|b| weft_driver::prove(b, proof, &crate::progress));
    if report.as_ref().is_some_and(|r| !r.is_proven()) {
        failed = true;
    }
    let all_diags: Vec<_> = c.diagnostics.iter().chain(&build_errors).cloned().collect();
    // Every finding: the diagnostics, then the proof's violations placed at the declarations.
    let found = || {
        let name = display_name(&file);
        let mut f = findings::of_compiled(&c, &all_diags, report.as_ref(), &name);
        if let Some(b) = &routed {
            f.extend(findings::of_notes(&b.notes, &name));
        }
        f
    };
    // What was proved, for the JSON and SARIF documents only (the digest writes the whole
    // state: the human summary does not pay for it).
    let proved = || {
        routed
            .as_ref()
            .zip(report.as_ref())
            .map(|(b, r)| findings::proved(&b.state, r))
    };
    match format {
        Format::Human => {
            let found = found();
            findings::emit_diagnostics(&found, &c.sources, color);
            if quiet && !failed {
                return Ok(ExitCode::SUCCESS);
            }
            let mut text = String::new();
            if let (Some(s), false) = (&summary, c.has_errors() || !build_errors.is_empty()) {
                text += &human_summary(s);
            }
            if let (Some(b), Some(r)) = (&routed, &report) {
                text += &crate::engine_line(b);
                let st = &b.state;
                if r.is_proven() {
                    text += &format!(
                        "  verified  deadlock-free and connected ({} routes, {} channels, {} VL(s))\n            traffic: {}\n",
                        r.stats.routes, r.stats.channels, r.stats.vls, r.traffic.describe()
                    );
                    if let Some(m) = &r.multicast {
                        text += &format!(
                            "  verified  multicast: {}\n",
                            crate::render::multicast_line(m)
                        );
                    }
                    if let Some(i) = &r.isolation {
                        text += &format!(
                            "  verified  isolated: the P_Key tables of {} end ports enforce exactly the {} declared partition(s){}\n",
                            i.ports,
                            i.partitions,
                            if i.classes > 0 {
                                format!("; {} tenant(s)' traffic stays on its class's SLs and VLs", i.classes)
                            } else {
                                String::new()
                            }
                        );
                        text += &format!("            the SM {}\n", crate::render::sm_line(i));
                    }
                    if let Some(a) = &r.apm {
                        text += &format!(
                            "  verified  APM: each of {} (source, destination) pairs has an alternate path sharing no cable between switches with its primary\n",
                            a.pairs
                        );
                    }
                } else {
                    text +=
                        &crate::render::human(st, Some(r), None, &found, &display_name(&file), 20);
                }
            }
            out(None, &text)?;
        }
        Format::Json => {
            let v = findings::document(
                "check",
                serde_json::json!({
                    "ok": !failed,
                    "summary": if c.has_errors() { None } else { summary },
                    "engine": routed.as_ref().map(|b| b.engine.name()),
                    "engine_used": routed.as_ref().map(|b| b.engine_used.name()),
                    "engine_why": routed.as_ref().map(|b| &b.why),
                    "verdict": report.as_ref().map(|r| &r.verdict),
                "traffic": report.as_ref().map(|r| &r.traffic),
                    "traffic": report.as_ref().map(|r| &r.traffic),
                    "proved": proved(),
                    "findings": found(),
                }),
            );
            out(None, &(serde_json::to_string_pretty(&v)? + "\n"))?;
        }
        Format::Sarif => {
            let summary = serde_json::json!({
                "ok": !failed,
                "engine": routed.as_ref().map(|b| b.engine.name()),
                "engine_used": routed.as_ref().map(|b| b.engine_used.name()),
                "verdict": report.as_ref().map(|r| &r.verdict),
                "proved": proved(),
            });
            out(
                None,
                &(serde_json::to_string_pretty(&findings::sarif(&found(), summary))? + "\n"),
            )?;
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
