//! `weft export FILE`: the topology as an ibnetdiscover/ibsim net file, the model as JSON,
//! the scheduler's tree as Slurm's `topology.conf` or `topology.yaml`, or the fabric for
//! drawing tools (Graphviz DOT, GraphML).

mod graph;
mod slurm;

use crate::{compile, emit_diagnostics, out, ColorChoice, Fatal};
use clap::ValueEnum;
use std::path::PathBuf;
use std::process::ExitCode;
use weft_formats::sched_tree::{sched_tree, NameMap};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// ibnetdiscover topology (also ibsim's net file).
    Ibnetdiscover,
    /// The elaborated fabric as JSON.
    Json,
    /// Slurm's topology.conf for the topology/tree plugin.
    SlurmTree,
    /// Slurm's topology.yaml, one tree topology.
    SlurmYaml,
    /// Graphviz DOT.
    Dot,
    /// GraphML.
    Graphml,
}

impl ExportFormat {
    /// The format refused input is shown in.
    pub(crate) fn findings(self) -> crate::findings::Format {
        match self {
            ExportFormat::Json => crate::findings::Format::Json,
            _ => crate::findings::Format::Human,
        }
    }

    /// Whether the format is one of Slurm's.
    fn slurm(self) -> bool {
        matches!(self, ExportFormat::SlurmTree | ExportFormat::SlurmYaml)
    }
}

/// `weft export` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The fabric: a `.weft` file (an imported dump: a `.weft` whose topology is
    /// `import("DUMP")`), a `state.json`, or a `weft build` directory.
    file: PathBuf,
    /// Output format.
    #[arg(long, default_value = "ibnetdiscover")]
    pub(crate) format: ExportFormat,
    /// Host names for the Slurm formats: `GUID-or-name hostname` lines (node GUID, port GUID,
    /// node or host name), `#` comments.
    #[arg(long, value_name = "FILE")]
    name_map: Option<PathBuf>,
    /// Output file (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// The switches' levels per node index: weft's fat-tree detection (recorded by the
/// description, else found from the hosts, with host-less sub-trees set aside); all `None`
/// when the fabric has no host to find them from.
fn switch_levels(fabric: &weft_fabric::Fabric) -> Vec<Option<u8>> {
    weft_compiler::routing::shape::levels(fabric)
        .map(|l| l.level)
        .unwrap_or_else(|_| vec![None; fabric.nodes().len()])
}

/// Refused input of `weft export`: a finding under `weft::input`.
fn refused(message: String) -> Fatal {
    Fatal::Input(
        vec![crate::findings::of_input("weft::input", None, message)],
        None,
    )
}

/// The fabric of `file`: a build directory's state, a state file, or a description (which
/// may import a dump), its diagnostics shown.
pub(crate) fn load_fabric(
    file: &std::path::Path,
    color: ColorChoice,
) -> Result<weft_fabric::Fabric, Fatal> {
    if file.is_dir() {
        Ok(
            crate::plan::load_state(&file.join(weft_formats::build_dir::STATE))?
                .fabric
                .clone(),
        )
    } else if file.extension().is_some_and(|e| e == "json") {
        Ok(crate::plan::load_state(file)?.fabric.clone())
    } else {
        let c = compile(file, weft_driver::Until::Elaborated)?;
        let Some(e) = c.elaborated.as_ref().filter(|_| !c.has_errors()) else {
            return Err(Fatal::not_compiled(&c.diagnostics, &c.sources, color));
        };
        emit_diagnostics(&c.diagnostics, &c.sources, color);
        Ok(e.fabric.clone())
    }
}

/// Runs `weft export`.
pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    let Args {
        file,
        format,
        name_map,
        output,
    } = args;
    if name_map.is_some() && !format.slurm() {
        return Err(Fatal::Run(
            "`--name-map` goes with `--format slurm-tree` or `slurm-yaml`".to_owned(),
        ));
    }
    // The name map is read before the fabric is compiled: a missing file fails at once.
    let names = match &name_map {
        Some(p) => {
            let text = crate::read(p)?;
            NameMap::parse(&text).map_err(|e| refused(format!("`{}`: {e}", p.display())))?
        }
        None => NameMap::default(),
    };
    let fabric = &load_fabric(&file, color)?;
    let text = match format {
        ExportFormat::Ibnetdiscover => weft_compiler::export_ibnetdiscover(fabric)
            .map_err(|e| Fatal::Run(format!("cannot write the fabric as ibnetdiscover: {e}")))?,
        ExportFormat::Json => {
            let mut v = Vec::new();
            weft_formats::state_json::write_fabric(fabric, &mut v)?;
            String::from_utf8(v)
                .map_err(|e| Fatal::Run(format!("the fabric's JSON is not UTF-8: {e}")))?
        }
        ExportFormat::SlurmTree | ExportFormat::SlurmYaml => {
            let levels = switch_levels(fabric);
            let tree = sched_tree(fabric, &levels, &names).map_err(|e| refused(e.to_string()))?;
            if format == ExportFormat::SlurmTree {
                slurm::tree_conf(&tree, &fabric.name)
            } else {
                slurm::tree_yaml(&tree, &fabric.name)
            }
            .map_err(refused)?
        }
        ExportFormat::Dot => graph::dot(fabric).map_err(refused)?,
        ExportFormat::Graphml => graph::graphml(fabric).map_err(refused)?,
    };
    out(output.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}
