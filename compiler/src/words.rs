//! The language's word lists, in one place: reserved words, node kinds, contextual keywords,
//! built-in functions, link speeds and parameter types. The grammar (`weft.pest`'s
//! `reserved` rule), the formatter, the elaborator and the editor support read them from
//! here or are checked against them: `editors/words.json`, which `editors/check.py` (the
//! editor grammars' test) loads, is [`words_json`] (the tests below compare both with these
//! lists; `WEFT_BLESS=1` rewrites the JSON file).

/// Words that can never be identifiers (`weft.pest`'s `reserved`).
pub(crate) const RESERVED: &[&str] = &[
    "use", "let", "model", "template", "fabric", "for", "in", "if", "else", "true", "false",
    "assert",
];

/// The node kinds, keywords at the start of a node declaration and plain names elsewhere
/// (`switch: sb7800`).
pub(crate) const NODE_KINDS: &[&str] = &["switch", "hca", "router"];

/// Keywords only where the grammar reads them as such (`link a <-> b`, `topology = …`,
/// `faults { … }`, `link … down`, `… on …`), plain names elsewhere.
pub(crate) const CONTEXTUAL: &[&str] = &["link", "topology", "faults", "down", "on"];

/// Built-in functions (the calls `elaborate/builtins.rs` answers).
pub const BUILTINS: &[&str] = &[
    "format", "node", "len", "prod", "sum", "min", "max", "pow", "repeat", "import",
];

/// Whether `word` is a keyword somewhere in the language: a reserved word other than the
/// booleans, a node kind or a contextual keyword (the formatter spaces these as keywords).
pub(crate) fn is_keyword(word: &str) -> bool {
    (RESERVED.contains(&word) && !matches!(word, "true" | "false"))
        || NODE_KINDS.contains(&word)
        || CONTEXTUAL.contains(&word)
}

/// `editors/words.json`: every list of this module, plus the link speeds
/// ([`weft_fabric::Speed::ALL`]) and the parameter types (`Value::TYPES`), as one JSON
/// object of string arrays, keys in order, one line per list.
#[cfg(test)]
fn words_json() -> String {
    let speeds: Vec<&str> = weft_fabric::Speed::ALL.iter().map(|s| s.as_str()).collect();
    let lists: [(&str, &[&str]); 6] = [
        ("reserved", RESERVED),
        ("node_kinds", NODE_KINDS),
        ("contextual", CONTEXTUAL),
        ("builtins", BUILTINS),
        ("speeds", &speeds),
        ("types", &crate::value::Value::TYPES),
    ];
    let mut out = String::from("{\n");
    for (i, (key, words)) in lists.iter().enumerate() {
        let words: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
        let comma = if i + 1 < lists.len() { "," } else { "" };
        out += &format!("  \"{key}\": [{}]{comma}\n", words.join(", "));
    }
    out + "}\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `editors/words.json` is what [`words_json`] writes; `WEFT_BLESS=1` rewrites it.
    #[test]
    fn editors_words_json_is_these_lists() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../editors/words.json");
        let want = words_json();
        if std::env::var_os("WEFT_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "editors/words.json is out of date: run `WEFT_BLESS=1 cargo test -p weft-compiler words`\n\
             want:\n{want}"
        );
    }

    /// `weft.pest`'s `reserved` rule lists exactly [`RESERVED`].
    #[test]
    fn the_grammar_reserves_these_words() {
        let pest = include_str!("syntax/weft.pest");
        let rule = pest
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("reserved"))
            .and_then(|l| l.split_once('(').map(|(_, r)| r))
            .and_then(|r| r.split_once(')').map(|(w, _)| w))
            .expect("weft.pest has a `reserved` rule");
        let mut got: Vec<&str> = rule
            .split('|')
            .map(|w| w.trim().trim_matches('"'))
            .collect();
        let mut want = RESERVED.to_vec();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
    }

    /// A reserved word is never a plain identifier, and a keyword elsewhere in the language
    /// is one only where the grammar says so.
    #[test]
    fn reserved_words_are_not_identifiers() {
        for w in RESERVED {
            assert!(!crate::syntax::is_plain_ident(w), "{w}");
        }
        for w in NODE_KINDS.iter().chain(CONTEXTUAL).chain(BUILTINS) {
            assert!(crate::syntax::is_plain_ident(w), "{w}");
        }
        assert!(is_keyword("down") && is_keyword("if") && !is_keyword("true"));
    }

    /// Every built-in is answered by the elaborator (called with no arguments, it is an
    /// error about its arguments, not an unknown name), and a name that is not one is
    /// unknown.
    #[test]
    fn the_elaborator_answers_every_builtin() {
        let unknown = |name: &str| {
            let c = crate::check("w.weft", &format!("let x = {name}()\n"), &crate::NoFiles);
            assert!(c.has_errors(), "{name}() passes");
            c.diagnostics
                .iter()
                .any(|d| d.code == crate::code::Code::UnknownName)
        };
        for name in BUILTINS {
            assert!(!unknown(name), "{name}");
        }
        assert!(unknown("frobnicate"));
    }
}
