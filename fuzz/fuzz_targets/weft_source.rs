//! Any text → parse, elaborate, validate and format: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = weft_compiler::Limits { steps: 20_000 };
    let c = weft_compiler::check_with("fuzz.weft", text, &weft_compiler::NoFiles, limits);
    let _ = weft_compiler::diagnostic::render(
        &c.diagnostics,
        &c.sources,
        weft_compiler::diagnostic::RenderOptions::plain(),
    );
    if let Ok(formatted) = weft_compiler::fmt::format(text, c.main) {
        // Formatting keeps a valid program valid and is idempotent.
        let again = weft_compiler::fmt::format(&formatted, c.main);
        assert_eq!(again.as_deref().ok(), Some(formatted.as_str()));
    }
});
