//! `weft build FILE -o DIR`: compile a fabric and write what switches and OpenSM consume.
//!
//! Files: `lfts.dump` (OpenSM's `file` engine input), `guid2lid` (OpenSM's LID cache),
//! `topology.net` (ibnetdiscover/ibsim format, with the LIDs), `state.json` (everything,
//! the input of `weft plan`, plus the routing's quality metrics under `quality`). Every file is streamed to a temporary name and renamed only when
//! all of them were written, so a failure leaves no half-written output; nothing is written
//! unless the whole compilation succeeded.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use weft_compiler::build::Built;

/// The files `weft build` writes, in order.
pub const FILES: [&str; 4] = ["lfts.dump", "guid2lid", "topology.net", "state.json"];

fn write_one(
    name: &str,
    built: &Built,
    quality: &weft_compiler::metrics::Quality,
    out: &mut dyn Write,
) -> Result<(), String> {
    let st = &built.state;
    let io = |e: std::io::Error| e.to_string();
    match name {
        "lfts.dump" => weft_fabric::opensm::write_lfts_to(st, out).map_err(io),
        "guid2lid" => out
            .write_all(weft_fabric::opensm::write_guid2lid(st).as_bytes())
            .map_err(io),
        "topology.net" => {
            let net = weft_fabric::ibnetdiscover::write(&st.fabric, Some(&st.lids))
                .map_err(|e| e.to_string())?;
            out.write_all(net.as_bytes()).map_err(io)
        }
        _ => {
            let mut w = BufWriter::new(out);
            let q = serde_json::to_string(quality).map_err(|e| e.to_string())?;
            weft_fabric::state_json::write(st, &mut w, &[("quality", &q)]).map_err(io)?;
            w.flush().map_err(io)
        }
    }
}

/// Writes every file into `dir` (created if needed); the paths written.
pub fn write_all(
    dir: &Path,
    built: &Built,
    quality: &weft_compiler::metrics::Quality,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    let mut temps = Vec::new();
    let cleanup = |temps: &[PathBuf]| {
        for t in temps {
            let _ = std::fs::remove_file(t);
        }
    };
    for name in FILES {
        let tmp = dir.join(format!(".{name}.weft-tmp"));
        temps.push(tmp.clone());
        let result = File::create(&tmp)
            .map_err(|e| e.to_string())
            .and_then(|mut f| {
                write_one(name, built, quality, &mut f)
                    .and_then(|()| f.sync_all().map_err(|e| e.to_string()))
            });
        if let Err(e) = result {
            cleanup(&temps);
            return Err(format!("cannot write `{}`: {e}", tmp.display()));
        }
    }
    let mut written = Vec::new();
    for (name, tmp) in FILES.iter().zip(&temps) {
        let dst = dir.join(name);
        std::fs::rename(tmp, &dst).map_err(|e| format!("cannot write `{}`: {e}", dst.display()))?;
        written.push(dst);
    }
    Ok(written)
}
