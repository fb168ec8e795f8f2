//! The standard library as the editor sees it: each `std::MODULE` is a document the client
//! can open. When the server knows a directory holding the same text the compiler embeds
//! (the `stdlib/` of the source tree the binary was built from), a definition jumps to its
//! `file://` URI; otherwise to `weft-std:///MODULE.weft`, a URI of the server's own scheme
//! whose text the client asks for with the `weft/stdlib` request (`{"uri": …}` → the text).

use lsp_types::{Location, Position, Range, Url};
use std::path::{Path, PathBuf};
use weft_compiler::outline::{self, Symbol};

/// The URI scheme of standard-library modules without a directory.
pub(crate) const SCHEME: &str = "weft-std";

/// Where the standard library's modules are for the client.
#[derive(Clone, Debug)]
pub(crate) struct Stdlib {
    dir: Option<PathBuf>,
}

impl Stdlib {
    /// The standard library, at `dir` when every module there is the embedded text.
    pub(crate) fn new(dir: Option<&Path>) -> Stdlib {
        let dir = dir.filter(|d| {
            outline::stdlib_modules().iter().all(|m| {
                let p = d.join(format!("{m}.weft"));
                weft_fabric::input::read_regular(&p, weft_fabric::input::MAX_SOURCE_BYTES)
                    .is_ok_and(|t| Some(t.as_str()) == outline::stdlib_source(m))
            })
        });
        Stdlib {
            dir: dir.map(Path::to_path_buf),
        }
    }

    /// The URI of `std::module`.
    pub(crate) fn uri(&self, module: &str) -> Option<Url> {
        outline::stdlib_source(module)?;
        match &self.dir {
            Some(d) => Url::from_file_path(d.join(format!("{module}.weft"))).ok(),
            None => Url::parse(&format!("{SCHEME}:///{module}.weft")).ok(),
        }
    }

    /// The text of the module a URI names (either form), for `weft/stdlib`.
    pub(crate) fn text_of(&self, uri: &Url) -> Option<&'static str> {
        let module = uri.path().rsplit('/').next()?.strip_suffix(".weft")?;
        (self.uri(module).as_ref() == Some(uri))
            .then(|| outline::stdlib_source(module))
            .flatten()
    }

    /// The top of `std::module`.
    pub(crate) fn module_location(&self, module: &str) -> Option<Location> {
        let p = Position::new(0, 0);
        Some(Location::new(self.uri(module)?, Range::new(p, p)))
    }

    /// The declaration of `name` in `std::module` (every module when `None`).
    pub(crate) fn item(&self, module: Option<&str>, name: &str) -> Option<Symbol> {
        self.find(module, name).map(|(_, s, _)| s)
    }

    fn find(&self, module: Option<&str>, name: &str) -> Option<(String, Symbol, &'static str)> {
        let modules: Vec<&str> = match module {
            Some(m) => vec![m],
            None => outline::stdlib_modules().to_vec(),
        };
        modules.into_iter().find_map(|m| {
            let text = outline::stdlib_source(m)?;
            let o = outline::outline(text);
            let s = o.symbols.into_iter().find(|s| {
                s.name == name
                    && matches!(
                        s.kind,
                        outline::SymbolKind::Model | outline::SymbolKind::Template
                    )
            })?;
            Some((m.to_owned(), s, text))
        })
    }

    /// Where `name` is declared in `std::module` (or any module).
    pub(crate) fn item_location(&self, module: Option<&str>, name: &str) -> Option<Location> {
        let (m, s, text) = self.find(module, name)?;
        let ix = crate::text::LineIndex::new(text);
        let range = ix.range(text, s.name_span.start as usize, s.name_span.end as usize);
        Some(Location::new(self.uri(&m)?, range))
    }

    /// The models and templates of `std::module`, with their signatures.
    pub(crate) fn items(module: &str) -> Vec<Symbol> {
        outline::stdlib_source(module)
            .map(|t| outline::outline(t).symbols)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| {
                matches!(
                    s.kind,
                    outline::SymbolKind::Model | outline::SymbolKind::Template
                )
            })
            .collect()
    }
}
