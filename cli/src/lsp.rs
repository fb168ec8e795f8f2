//! `weft lsp`: the language server on stdin and stdout (`weft_lsp`), for editors.

use crate::Fatal;
use std::process::ExitCode;

/// `weft lsp` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Accepted for editors that pass it (the Language Server Protocol's usual flag); stdio
    /// is the only transport.
    #[arg(long)]
    stdio: bool,
}

/// Runs the server until the client says `exit` or closes its end.
pub fn run(args: Args) -> Result<ExitCode, Fatal> {
    let Args { stdio: _ } = args;
    let stdin = std::io::BufReader::new(std::io::stdin());
    let (conn, io) = weft_lsp::transport::connect(stdin, std::io::stdout())
        .map_err(|e| Fatal::Run(format!("cannot start the language server: {e}")))?;
    // The standard library of the source tree this binary was built from, when it is still
    // there (definitions jump into its files; `weft-std:` URIs otherwise).
    let config = weft_lsp::Config {
        stdlib_dir: std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(|root| root.join("stdlib")),
    };
    let served = weft_lsp::serve(&conn, &config);
    drop(conn);
    io.join();
    served.map_err(|e| Fatal::Run(format!("language server: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
