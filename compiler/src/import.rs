//! TEMPORARY stub until the ibnetdiscover reader lands.
use crate::diagnostic::{Diagnostic, SourceId};
use weft_fabric::Fabric;
pub(crate) fn ibnetdiscover(
    _: &str,
    _: &str,
    _: &str,
    _: SourceId,
) -> Result<(Fabric, Vec<Diagnostic>), Vec<Diagnostic>> {
    Err(vec![Diagnostic::error("weft::import", "not built yet")])
}
pub fn import_ibnetdiscover(
    _: &str,
    _: SourceId,
    _: Option<(&str, SourceId)>,
    _: &str,
) -> Result<(String, Vec<Diagnostic>), Vec<Diagnostic>> {
    Err(vec![Diagnostic::error("weft::import", "not built yet")])
}
pub fn export_ibnetdiscover(_: &Fabric) -> Result<String, String> {
    Err("not built yet".into())
}
