//! `weft export FILE`: the topology as an ibnetdiscover/ibsim net file, or the model as JSON.

use crate::{compile, emit_diagnostics, out, ColorChoice, Fatal};
use clap::ValueEnum;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ExportFormat {
    /// ibnetdiscover topology (also ibsim's net file).
    Ibnetdiscover,
    /// The elaborated fabric as JSON.
    Json,
}

impl ExportFormat {
    /// The format refused input is shown in.
    pub(crate) fn findings(self) -> crate::findings::Format {
        match self {
            ExportFormat::Json => crate::findings::Format::Json,
            ExportFormat::Ibnetdiscover => crate::findings::Format::Human,
        }
    }
}

/// `weft export` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The `.weft` file.
    file: PathBuf,
    /// Output format.
    #[arg(long, default_value = "ibnetdiscover")]
    pub(crate) format: ExportFormat,
    /// Output file (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Runs `weft export`.
pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    let Args {
        file,
        format,
        output,
    } = args;
    let c = compile(&file, weft_driver::Until::Elaborated)?;
    let Some(e) = c.elaborated.as_ref().filter(|_| !c.has_errors()) else {
        return Err(Fatal::not_compiled(&c.diagnostics, &c.sources, color));
    };
    emit_diagnostics(&c.diagnostics, &c.sources, color);
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
