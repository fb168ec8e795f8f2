//! A digest of every switch's LFT on every example and real fixture that builds, for checking
//! that a change to the engine's speed leaves the tables as they were: run
//! `cargo test -p weft-compiler --test it lft_digest:: -- --ignored --nocapture` before and
//! after, and compare the lines.

#![expect(
    clippy::print_stdout,
    reason = "a tool run by hand: the digests printed are what it is for"
)]

use std::hash::{Hash, Hasher};
use weft_compiler::{check, NoFiles};

/// `name digest` of the tables `src` builds to, or `name refused` when it does not build.
fn line(name: &str, program: &str) -> String {
    let c = check("t.weft", program, &NoFiles);
    if c.has_errors() {
        return format!("{name} refused");
    }
    let Some(e) = c.elaborated else {
        return format!("{name} refused");
    };
    let Ok(b) = weft_compiler::build::build(&e) else {
        return format!("{name} refused");
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (id, s) in &b.state.switches {
        id.hash(&mut h);
        s.lft.ports.hash(&mut h);
    }
    format!(
        "{name} {:016x} ({} switches, engine {:?})",
        h.finish(),
        b.state.switches.len(),
        b.engine_used
    )
}

#[test]
#[ignore = "a tool: prints the digests to compare by hand"]
fn digest_of_every_lft() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<_> = std::fs::read_dir(format!("{root}/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .collect();
    names.sort();
    for p in names {
        let text = std::fs::read_to_string(&p).unwrap();
        println!("{}", line(&p.display().to_string(), &text));
    }
    let mut dumps: Vec<_> = std::fs::read_dir(format!("{root}/tests/fixtures/real"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ibnetdiscover"))
        .collect();
    dumps.sort();
    for p in dumps {
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.display().to_string();
        // As `weft import` reads it, else as `weft import --partial` does.
        let import = |partial: bool| {
            weft_compiler::import_ibnetdiscover_with(
                &text,
                "t.ibnd",
                weft_compiler::diagnostic::SourceId(0),
                None,
                "imported",
                weft_compiler::ImportOptions {
                    partial,
                    strict: false,
                },
                &[],
            )
        };
        match (import(false), import(true)) {
            (Ok((program, _)), _) => println!("{}", line(&name, &program)),
            (Err(_), Ok((program, _))) => println!("{} (partial)", line(&name, &program)),
            (Err(_), Err(_)) => println!("{name} not imported"),
        }
    }
}
