//! What `weft build` writes into its output directory, and when: the tables every build has
//! ([`FILES`]; the names are `weft_formats::build_dir`'s, which deploy and the benchmarks read
//! by), the certificate or the `UNPROVEN` marker, and for a state with SL→VL tables or
//! partitions the OpenSM files that carry them ([`EXTRAS`]). Each file is created exclusively
//! in a fresh directory and synced; putting that directory in place, all or nothing, is the
//! caller's (the CLI's, which also cleans up on interruption).

use std::io::{BufWriter, Write};
use std::path::Path;
use weft_compiler::build::Built;
use weft_fabric::FabricState;

pub use weft_formats::build_dir::{
    CERTIFICATE, EXTRAS, FILES, GUID2LID, LFTS, OPENSM_CONF, PARTITIONS, PATH_SL, QOS_POLICY,
    SL2VL, STATE, TOPOLOGY, UNPROVEN,
};

/// The most lines `path-sl.psl` is written with (one per source node and destination LID).
pub const PSL_LINES: u64 = 10_000_000;

/// Why a build's file could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The file could not be created (it exists, or the directory refuses).
    #[error("cannot write `{path}`: {source}")]
    Create {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Writing or syncing it failed.
    #[error("cannot write `{name}`: {source}")]
    Write {
        /// The file's name in the directory.
        name: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// Its content could not be produced.
    #[error("cannot write `{name}`: {reason}")]
    Content {
        /// The file's name in the directory.
        name: &'static str,
        /// Why.
        reason: String,
    },
}

/// What [`write_tables`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// The files written besides [`FILES`], in order.
    pub extras: Vec<&'static str>,
    /// Why `qos-policy.conf` was not written for a state with layers (path SLs the policy
    /// language cannot say); `state.json` has every path SL.
    pub no_policy: Option<String>,
}

/// Creates `name` in `dir` (exclusively), fills it with `write`, syncs it.
fn create_in(
    dir: &Path,
    name: &'static str,
    write: impl FnOnce(&mut std::fs::File) -> Result<(), WriteError>,
) -> Result<(), WriteError> {
    let p = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .map_err(|source| WriteError::Create {
            path: p.display().to_string(),
            source,
        })?;
    write(&mut f)?;
    f.sync_all()
        .map_err(|source| WriteError::Write { name, source })
}

/// Writes `text` as `name` in `dir`.
fn create_text(dir: &Path, name: &'static str, text: &str) -> Result<(), WriteError> {
    create_in(dir, name, |f| {
        f.write_all(text.as_bytes())
            .map_err(|source| WriteError::Write { name, source })
    })
}

/// Whether a state routes on SL→VL tables (a routing on layers or QoS classes), so that
/// `sl2vl.dump`, OpenSM's QoS files and `path-sl.psl` belong beside its tables.
pub fn has_layers(st: &FabricState) -> bool {
    st.switches
        .values()
        .any(weft_fabric::SwitchState::has_sl2vl)
}

/// Lines `path-sl.psl` would have: one per (source node with a LID, LID of another node).
pub fn psl_lines(st: &FabricState) -> u64 {
    let nodes = st.lids.base.len() as u64;
    let lids: u64 = st
        .lids
        .base
        .values()
        .map(|ports| ports.len() as u64 * (1u64 << st.lids.lmc))
        .sum();
    nodes * lids
}

/// Writes the tables of `built` into `dir`: [`FILES`], then for a state with SL→VL tables
/// those tables, OpenSM's QoS settings and policy and the path SLs (only up to
/// [`PSL_LINES`] lines), and for a state with partitions `partitions.conf`.
pub fn write_tables(
    dir: &Path,
    built: &Built,
    quality: &weft_metrics::Quality,
) -> Result<Written, WriteError> {
    let st = &built.state;
    create_in(dir, LFTS, |f| {
        weft_formats::opensm::write_lfts_to(st, f)
            .map_err(|source| WriteError::Write { name: LFTS, source })
    })?;
    create_text(dir, GUID2LID, &weft_formats::opensm::write_guid2lid(st))?;
    let net = weft_formats::ibnetdiscover::write(&st.fabric, Some(&st.lids)).map_err(|e| {
        WriteError::Content {
            name: TOPOLOGY,
            reason: e.to_string(),
        }
    })?;
    create_text(dir, TOPOLOGY, &net)?;
    create_in(dir, STATE, |f| {
        let fail = |source| WriteError::Write {
            name: STATE,
            source,
        };
        let q = serde_json::to_string(quality).map_err(|e| WriteError::Content {
            name: STATE,
            reason: e.to_string(),
        })?;
        // The engine that wrote the tables is recorded, not only the one asked for (OpenSM
        // records the engine it used for the same reason: a fallback changes what is
        // promised).
        let routing = serde_json::json!({
            "engine": built.engine.name(),
            "engine_used": built.engine_used.name(),
            "why": built.why,
        })
        .to_string();
        let mut w = BufWriter::new(f);
        weft_formats::state_json::write(st, &mut w, &[("quality", &q), ("routing", &routing)])
            .map_err(fail)?;
        w.flush().map_err(fail)
    })?;
    let mut written = Written::default();
    if has_layers(st) {
        create_text(dir, SL2VL, &weft_formats::opensm::write_sl2vl(st))?;
        written.extras.push(SL2VL);
        let conf = weft_compiler::qos::opensm_conf(&built.lanes, &st.fabric.name);
        create_text(dir, OPENSM_CONF, &conf)?;
        written.extras.push(OPENSM_CONF);
        match weft_compiler::qos::qos_policy(st, &built.lanes, built.layers.as_ref()) {
            Ok(policy) => {
                create_text(dir, QOS_POLICY, &policy)?;
                written.extras.push(QOS_POLICY);
            }
            Err(why) => written.no_policy = Some(why.to_string()),
        }
        if psl_lines(st) <= PSL_LINES {
            let psl = weft_formats::opensm::write_path_sl(st, weft_formats::opensm::PslSls::Lowest);
            create_text(dir, PATH_SL, &psl)?;
            written.extras.push(PATH_SL);
        }
    }
    if let Some(conf) = weft_formats::opensm::write_partitions(st) {
        create_text(dir, PARTITIONS, &conf)?;
        written.extras.push(PARTITIONS);
    }
    Ok(written)
}

/// Writes the verdict's files into `dir`: the certificate when proven, `UNPROVEN` (with
/// `verdict`, the verdict in words) when not and `allow_unproven`; nothing otherwise (nothing
/// will be put in place). Returns their names.
pub fn write_verdict(
    dir: &Path,
    report: &weft_verifier::Report,
    allow_unproven: bool,
    verdict: &str,
) -> Result<Vec<&'static str>, WriteError> {
    let mut names = Vec::new();
    if let Some(c) = &report.certificate {
        create_text(dir, CERTIFICATE, &c.to_json())?;
        names.push(CERTIFICATE);
    }
    if !report.is_proven() && allow_unproven {
        let text = format!(
            "This directory holds tables weft could not prove (written with \
             --allow-unproven).\n{verdict}"
        );
        create_text(dir, UNPROVEN, &text)?;
        names.push(UNPROVEN);
    }
    Ok(names)
}
