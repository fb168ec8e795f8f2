//! `weft build FILE -o DIR`: compile a fabric and write what switches and OpenSM consume.
//!
//! Files: `lfts.dump` (OpenSM's `file` engine input), `guid2lid` (OpenSM's LID cache),
//! `topology.net` (ibnetdiscover/ibsim format, with the LIDs), `state.json` (everything,
//! the input of `weft plan`). Every file is written under a temporary name and renamed, and
//! nothing is written unless the whole compilation succeeds.

use std::path::Path;

/// Everything `weft build` writes, as (file name, contents).
pub fn artifacts(
    built: &weft_compiler::build::Built,
) -> Result<Vec<(&'static str, String)>, String> {
    let st = &built.state;
    let net =
        weft_fabric::ibnetdiscover::write(&st.fabric, Some(&st.lids)).map_err(|e| e.to_string())?;
    let json = serde_json::to_string_pretty(st).map_err(|e| e.to_string())? + "\n";
    Ok(vec![
        ("lfts.dump", weft_fabric::opensm::write_lfts(st)),
        ("guid2lid", weft_fabric::opensm::write_guid2lid(st)),
        ("topology.net", net),
        ("state.json", json),
    ])
}

/// Writes the artifacts into `dir` (created if needed), each atomically.
pub fn write_all(dir: &Path, files: &[(&'static str, String)]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    // Write every temporary first, then rename: a failure leaves the old outputs intact.
    let mut temps = Vec::new();
    for (name, text) in files {
        let tmp = dir.join(format!(".{name}.weft-tmp"));
        if let Err(e) = std::fs::write(&tmp, text) {
            for t in &temps {
                let _ = std::fs::remove_file(t);
            }
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("cannot write `{}`: {e}", tmp.display()));
        }
        temps.push(tmp);
    }
    for ((name, _), tmp) in files.iter().zip(&temps) {
        let dst = dir.join(name);
        std::fs::rename(tmp, &dst).map_err(|e| format!("cannot write `{}`: {e}", dst.display()))?;
    }
    Ok(())
}
