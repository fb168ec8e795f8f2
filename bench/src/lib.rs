//! Inputs for the benchmarks, built deterministically from the repository's examples.
#![expect(
    clippy::panic,
    reason = "benchmark fixtures stop on a broken example; they are not product code"
)]

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The text of `examples/NAME`.
pub fn example(name: &str) -> String {
    let p = root().join("examples").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The fabric an example elaborates to.
pub fn fabric(name: &str) -> weft_fabric::Fabric {
    let c = weft_compiler::elaborate(name, &example(name), &weft_compiler::NoFiles);
    assert!(!c.has_errors(), "{name} has errors");
    c.elaborated
        .map(|e| e.fabric)
        .unwrap_or_else(|| panic!("{name} elaborates to nothing"))
}

/// An explicit program (one line per node and link, as `weft import` writes) for an example.
pub fn explicit_program(name: &str) -> String {
    weft_compiler::emit::fabric_to_weft(&fabric(name), None, name)
}
