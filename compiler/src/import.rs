//! ibnetdiscover dumps (and `ibnetdiscover -p` and `iblinkinfo` reports) read through
//! `weft-fabric`: `topology = import("file")` and `weft import` (with its `--partial` and
//! `--strict`).

use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use weft_fabric::ibnetdiscover::{self, ParseOptions};
use weft_fabric::Fabric;

fn convert_one(d: &ibnetdiscover::IbnetDiagnostic, source: SourceId) -> Diagnostic {
    Diagnostic::from_miette(d, Code::Ibnet(d.code()), source)
}

fn convert(errors: &ibnetdiscover::ParseErrors, source: SourceId) -> Vec<Diagnostic> {
    errors
        .diagnostics()
        .iter()
        .map(|d| convert_one(d, source))
        .collect()
}

/// How `weft import` reads a dump: its `--partial` and `--strict`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// A dump whose discovery was cut short is read: a port line naming a node no record
    /// describes drops its link with a warning ([`ParseOptions::partial`]).
    pub partial: bool,
    /// Every warning is an error ([`ParseOptions::strict`]).
    pub strict: bool,
}

/// Reads an ibnetdiscover dump; warnings on success, every error on failure.
pub(crate) fn ibnetdiscover(
    text: &str,
    path: &str,
    fabric_name: &str,
    source: SourceId,
) -> Result<(Fabric, Vec<Diagnostic>), Vec<Diagnostic>> {
    read(
        text,
        path,
        fabric_name,
        source,
        None,
        ImportOptions::default(),
    )
    .map(|(found, w)| (found.fabric, w))
}

fn read(
    text: &str,
    path: &str,
    fabric_name: &str,
    source: SourceId,
    name_map: Option<(&str, SourceId)>,
    options: ImportOptions,
) -> Result<(ibnetdiscover::Discovered, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut opts = ParseOptions {
        fabric_name: fabric_name.to_owned(),
        source_name: path.to_owned(),
        partial: options.partial,
        strict: options.strict,
        ..Default::default()
    };
    if let Some((map, map_source)) = name_map {
        opts.name_map =
            ibnetdiscover::parse_node_name_map(map).map_err(|e| convert(&e, map_source))?;
    }
    match ibnetdiscover::parse(text, &opts) {
        Ok(found) => {
            let warnings = found
                .warnings
                .iter()
                .map(|w| convert_one(w, source))
                .collect();
            Ok((found, warnings))
        }
        Err(errors) => Err(convert(&errors, source)),
    }
}

/// `weft import`: an ibnetdiscover dump (and optional node-name map) → a weft program.
pub fn import_ibnetdiscover(
    text: &str,
    source_name: &str,
    source: SourceId,
    name_map: Option<(&str, SourceId)>,
    fabric_name: &str,
) -> Result<(String, Vec<Diagnostic>), Vec<Diagnostic>> {
    import_ibnetdiscover_with(
        text,
        source_name,
        source,
        name_map,
        fabric_name,
        ImportOptions::default(),
    )
}

/// [`import_ibnetdiscover`], reading as `options` say (`weft import --partial`, `--strict`).
/// The dump may also be `ibnetdiscover -p` or `iblinkinfo` output; the program's header
/// says which.
pub fn import_ibnetdiscover_with(
    text: &str,
    source_name: &str,
    source: SourceId,
    name_map: Option<(&str, SourceId)>,
    fabric_name: &str,
    options: ImportOptions,
) -> Result<(String, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (found, warnings) = read(text, source_name, fabric_name, source, name_map, options)?;
    let mut fabric = found.fabric;
    fabric.name = fabric_name.to_owned();
    let origin = match found.format {
        ibnetdiscover::InputFormat::Topology => format!("`{source_name}`"),
        other => format!("`{source_name}` (`{}` output)", other.as_str()),
    };
    let program = crate::emit::fabric_to_weft(&fabric, Some(&found.lids), &origin);
    Ok((program, warnings))
}

/// The fabric in ibnetdiscover format (what `ibsim` loads).
pub fn export_ibnetdiscover(fabric: &Fabric) -> Result<String, ibnetdiscover::WriteError> {
    ibnetdiscover::write(fabric, None)
}
