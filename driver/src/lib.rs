//! weft's pipeline: the one road from a `.weft` file to a proven state.
//!
//! source → [`compile`] (parse, elaborate, check) → [`route`] (LIDs, the engine's tables, and
//! for a `layered` build z3's placement in fewer layers, [`layers`]) → [`properties`] (what the
//! build promises: the properties of routes, `isolated` when it declares partitions,
//! `apm_disjoint` when the engine actually used claims it) → [`prove`] → [`build_dir`] (the
//! files `weft build` writes).
//!
//! Every command that takes a `.weft` file (`check`, `build`, `verify`, `report`, `plan`,
//! `export`) goes through here, so they compile, route and prove the same state with the same
//! properties; tests and benchmarks use it instead of assembling the chain themselves (only
//! tests of one compiler pass call the compiler's passes directly).
//!
//! The driver never prints: progress goes to a callback ([`Phase`]), findings come back as
//! values. It sits between the libraries and the CLI: it depends on the compiler, the
//! verifier and the metrics, and nothing but the CLI, tests and benchmarks depends on it.
//! [`input`] reads inputs: regular files only, under a size cap, with a typed error. A CLI test
//! (`cli/tests/same_proof.rs`) holds `check`, `verify` and `build` of every example to the same
//! fingerprint, digest and properties.

// Nothing indexes with a value that might be out of range.
#![deny(clippy::indexing_slicing)]

pub mod build_dir;
pub use weft_fabric::input;
pub mod layers;

use std::path::{Path, PathBuf};
use weft_compiler::build::Built;
use weft_compiler::diagnostic::Diagnostic;
use weft_compiler::Compilation;
use weft_verifier::{Property, Report};

/// What the pipeline is doing, for a progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Reading and compiling the source.
    Compiling,
    /// Assigning LIDs and routing.
    Routing,
    /// z3 looking for fewer layers ([`layers`]).
    FewestLayers,
    /// The verifier at work.
    Proving,
    /// Writing outputs.
    Writing,
}

impl Phase {
    /// The phase in words ("z3: fewest layers").
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Compiling => "compiling",
            Phase::Routing => "routing",
            Phase::FewestLayers => "z3: fewest layers",
            Phase::Proving => "proving",
            Phase::Writing => "writing",
        }
    }
}

/// A progress callback that ignores every phase.
pub fn quietly(_: Phase) {}

/// Why a `.weft` file could not be compiled at all (its own errors are diagnostics, not this).
#[derive(Debug, thiserror::Error)]
#[error("cannot read `{path}`: {source}")]
pub struct SourceError {
    /// The file, as named.
    pub path: String,
    /// Why.
    #[source]
    pub source: input::ReadError,
}

/// Reads `import(…)`ed files relative to the main file's directory, under the source size cap.
#[derive(Clone, Debug)]
pub struct FileHost {
    /// The main file's directory.
    pub dir: PathBuf,
}

impl FileHost {
    /// The host of the file at `path`.
    pub fn beside(path: &Path) -> FileHost {
        FileHost {
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        }
    }
}

impl weft_compiler::Host for FileHost {
    fn read(&self, path: &str) -> Result<String, weft_compiler::HostError> {
        let p = self.dir.join(path);
        input::read_regular(&p, input::MAX_SOURCE_BYTES).map_err(|e| {
            weft_compiler::HostError::Unreadable {
                path: p.display().to_string(),
                source: Box::new(e),
            }
        })
    }
}

/// The name diagnostics give `path`.
pub fn display_name(path: &Path) -> String {
    path.display().to_string()
}

/// How far [`compile`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Parse and elaborate (`fmt`, `export`: the fabric as written, faults included).
    Elaborated,
    /// And the fabric checks (what routing needs).
    Checked,
}

/// Reads and compiles the `.weft` file at `path`; its errors are the compilation's
/// diagnostics.
pub fn compile(
    path: &Path,
    until: Until,
    progress: &dyn Fn(Phase),
) -> Result<Compilation, SourceError> {
    progress(Phase::Compiling);
    let text =
        input::read_regular(path, input::MAX_SOURCE_BYTES).map_err(|source| SourceError {
            path: display_name(path),
            source,
        })?;
    let host = FileHost::beside(path);
    let name = display_name(path);
    Ok(match until {
        Until::Checked => weft_compiler::check(&name, &text, &host),
        Until::Elaborated => weft_compiler::elaborate(&name, &text, &host),
    })
}

/// Routes a checked compilation: LIDs, the engine's tables, z3's layer bound
/// ([`layers::with_layer_bound`]). `None` when the description has errors (nothing to
/// route); the routing's own errors are diagnostics.
pub fn route(c: &Compilation, progress: &dyn Fn(Phase)) -> Option<Result<Built, Vec<Diagnostic>>> {
    let e = c.elaborated.as_ref().filter(|_| !c.has_errors())?;
    progress(Phase::Routing);
    Some(weft_compiler::build::build(e).map(|b| layers::with_layer_bound(e, b, progress)))
}

/// What a build must prove: the properties of routes, `isolated` when it declares
/// partitions, and `apm_disjoint` when the engine that wrote the tables claims it (`fat_tree`
/// with LMC > 0 promises each port's LIDs link-disjoint paths).
pub fn properties(b: &Built) -> Vec<Property> {
    let mut p = Property::defaults(&b.state);
    if b.claims().apm_disjoint {
        p.push(Property::ApmDisjoint);
    }
    p
}

/// How to prove a build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// Build a certificate when proven.
    pub certificate: bool,
    /// At most this many failed routes and credit loops listed.
    pub max_listed: usize,
}

/// The verifier's options for `b`: [`properties`], all pairs.
pub fn options(b: &Built, proof: Proof) -> weft_verifier::Options {
    weft_verifier::Options {
        certificate: proof.certificate,
        max_listed: proof.max_listed,
        properties: properties(b),
        ..weft_verifier::Options::default()
    }
}

/// Proves `b`'s state with the properties it promises.
pub fn prove(b: &Built, proof: Proof, progress: &dyn Fn(Phase)) -> Report {
    progress(Phase::Proving);
    weft_verifier::verify(&b.state, &options(b, proof))
}

/// A `.weft` file compiled and routed.
#[derive(Debug)]
pub struct Compiled {
    /// The compilation: sources, the elaborated fabric, its diagnostics.
    pub compilation: Compilation,
    /// The build, or the routing's errors; `None` when the description has errors.
    pub built: Option<Result<Built, Vec<Diagnostic>>>,
}

impl Compiled {
    /// The build, when there is one.
    pub fn built(&self) -> Option<&Built> {
        self.built.as_ref().and_then(|b| b.as_ref().ok())
    }

    /// Every diagnostic: the compilation's, then the routing's.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut d = self.compilation.diagnostics.clone();
        if let Some(Err(r)) = &self.built {
            d.extend(r.iter().cloned());
        }
        d
    }

    /// Whether the description or its routing has errors.
    pub fn has_errors(&self) -> bool {
        self.compilation.has_errors() || matches!(self.built, Some(Err(_)))
    }
}

/// Compiles and routes the `.weft` file at `path` ([`compile`], then [`route`]).
pub fn compile_and_route(path: &Path, progress: &dyn Fn(Phase)) -> Result<Compiled, SourceError> {
    let compilation = compile(path, Until::Checked, progress)?;
    let built = route(&compilation, progress);
    Ok(Compiled { compilation, built })
}

/// Compiles the `.weft` source `text` (named `name`, its imports read by `host`) and routes
/// it: for tests and benchmarks, which hold sources in memory.
pub fn compile_text(
    name: &str,
    text: &str,
    host: &dyn weft_compiler::Host,
    progress: &dyn Fn(Phase),
) -> Compiled {
    progress(Phase::Compiling);
    let compilation = weft_compiler::check(name, text, host);
    let built = route(&compilation, progress);
    Compiled { compilation, built }
}
