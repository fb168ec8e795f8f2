//! ibnetdiscover dumps read through `weft-fabric`: `topology = import("file")` and
//! `weft import`.

use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use weft_fabric::ibnetdiscover::{self, ParseOptions};
use weft_fabric::{Fabric, LidAssignment};

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

/// Reads an ibnetdiscover dump; warnings on success, every error on failure.
pub(crate) fn ibnetdiscover(
    text: &str,
    path: &str,
    fabric_name: &str,
    source: SourceId,
) -> Result<(Fabric, Vec<Diagnostic>), Vec<Diagnostic>> {
    read(text, path, fabric_name, source, None).map(|(f, _, w)| (f, w))
}

fn read(
    text: &str,
    path: &str,
    fabric_name: &str,
    source: SourceId,
    name_map: Option<(&str, SourceId)>,
) -> Result<(Fabric, LidAssignment, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut opts = ParseOptions {
        fabric_name: fabric_name.to_owned(),
        source_name: path.to_owned(),
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
            Ok((found.fabric, found.lids, warnings))
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
    let (mut fabric, lids, warnings) = read(text, source_name, fabric_name, source, name_map)?;
    fabric.name = fabric_name.to_owned();
    let program = crate::emit::fabric_to_weft(&fabric, Some(&lids), &format!("`{source_name}`"));
    Ok((program, warnings))
}

/// The fabric in ibnetdiscover format (what `ibsim` loads).
pub fn export_ibnetdiscover(fabric: &Fabric) -> Result<String, ibnetdiscover::WriteError> {
    ibnetdiscover::write(fabric, None)
}
