//! weft's language server (`weft lsp`): the Language Server Protocol on the compiler's own
//! passes — no second parser.
//!
//! `server.rs` is the loop (handshake, full document sync, dispatch); `analysis.rs` a
//! document and its compilation (parse, elaborate, validate: what `weft check --no-verify`
//! runs) with its diagnostics at UTF-16 positions (`text.rs`) and what each attribute means; `proof.rs` routing and the
//! proof on save in a worker thread, with `$/progress` and cancellation by generation;
//! `navigate.rs` hover, definition, references, rename and the outline (on
//! `weft_compiler::outline`); `edit.rs` completion, formatting (`weft fmt`'s formatter) and
//! quick fixes (`edit/fabric.rs`: ports and host lists from the fabric); `stdlib.rs` the standard library as
//! documents; `transport.rs` the protocol's framing over any byte streams.
//!
//! The library never prints and never touches the process's standard streams: the CLI hands
//! it stdin and stdout ([`transport::connect`]); tests hand it pipes or an in-memory
//! [`lsp_server::Connection`].

// Nothing indexes with a value that might be out of range.
#![deny(clippy::indexing_slicing)]

mod analysis;
mod edit;
mod navigate;
mod proof;
mod server;
mod stdlib;
mod text;
pub mod transport;

pub use lsp_server::Connection;
use std::path::PathBuf;

/// How the server runs.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// A directory holding the standard library's source (`hardware.weft`, …): definitions
    /// into it jump to its files when they hold exactly the text compiled in, and to
    /// `weft-std:///MODULE.weft` URIs otherwise.
    pub stdlib_dir: Option<PathBuf>,
}

/// Why the server stopped before the client said `exit`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The client's end of the connection closed while the server was answering.
    #[error("the client disconnected")]
    Disconnected,
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// Serves one client on `conn` until it says `exit` or goes away.
pub fn serve(conn: &Connection, config: &Config) -> Result<(), Error> {
    server::run(conn, config)
}
