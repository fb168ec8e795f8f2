//! One open document and what the compiler says about it: its compilation (parse, elaborate,
//! validate: `weft check --no-verify`), its outline, and the diagnostics published for it.

use crate::text::LineIndex;
use lsp_types::{
    CodeDescription, Diagnostic as LspDiagnostic, DiagnosticSeverity, NumberOrString, Url,
};
use weft_compiler::diagnostic::{Diagnostic, Severity};
use weft_compiler::outline::Outline;
use weft_compiler::Compilation;

/// Files above this many bytes are not analysed as they are typed (a warning says so): a
/// description this large is generated, and `weft check` is the tool for it.
pub(crate) const MAX_ANALYSED_BYTES: usize = 4 << 20;

/// What a build found, kept until the text changes: LIDs and the engine's line.
#[derive(Clone, Debug, Default)]
pub(crate) struct BuildFacts {
    /// `engine: why`.
    pub(crate) engine: String,
    /// Base LID of each node (port 0 of a switch, the first port of an end node), by name.
    pub(crate) lids: std::collections::BTreeMap<String, u16>,
}

/// An open document.
pub(crate) struct Document {
    pub(crate) uri: Url,
    pub(crate) version: i32,
    pub(crate) text: String,
    pub(crate) index: LineIndex,
    pub(crate) outline: Outline,
    /// `None` when the file is too large to analyse as it is typed.
    pub(crate) compilation: Option<Compilation>,
    /// Bumped on every change: a proof started for an older generation is stale.
    pub(crate) generation: u64,
    /// The last proof's diagnostics (cleared by a change).
    pub(crate) proof: Vec<LspDiagnostic>,
    /// The last build's facts (cleared by a change).
    pub(crate) built: Option<BuildFacts>,
    /// The last elaboration that built a fabric, while the text does not (a name typed half
    /// way, `leaf1.`): what completion offers nodes, ports and hosts from.
    pub(crate) previous: Option<weft_compiler::Elaborated>,
}

/// The name the compiler gives the document (its path for a file URI).
pub(crate) fn source_name(uri: &Url) -> String {
    uri.to_file_path()
        .map_or_else(|()| uri.to_string(), |p| p.display().to_string())
}

/// How imports are read: beside the file for a file URI, nowhere for others.
pub(crate) fn host(uri: &Url) -> Box<dyn weft_compiler::Host> {
    match uri.to_file_path() {
        Ok(p) => Box::new(weft_driver::FileHost::beside(&p)),
        Err(()) => Box::new(weft_compiler::NoFiles),
    }
}

impl Document {
    /// Analyses `text`.
    pub(crate) fn new(uri: Url, version: i32, text: String, generation: u64) -> Document {
        let index = LineIndex::new(&text);
        let (outline, compilation) = if text.len() > MAX_ANALYSED_BYTES {
            (Outline::default(), None)
        } else {
            let c = weft_compiler::check(&source_name(&uri), &text, host(&uri).as_ref());
            (weft_compiler::outline::outline(&text), Some(c))
        };
        Document {
            uri,
            version,
            text,
            index,
            outline,
            compilation,
            generation,
            proof: Vec::new(),
            built: None,
            previous: None,
        }
    }

    /// The fabric this text elaborates to, else the last one an earlier text did.
    pub(crate) fn fabric(&self) -> Option<&weft_fabric::Fabric> {
        self.compilation
            .as_ref()
            .and_then(|c| c.elaborated.as_ref())
            .or(self.previous.as_ref())
            .map(|e| &e.fabric)
    }

    /// Keeps `old`'s fabric for completion when this text builds none.
    pub(crate) fn inherit(&mut self, old: Document) {
        let built = self
            .compilation
            .as_ref()
            .is_some_and(|c| c.elaborated.is_some());
        if !built {
            self.previous = old.compilation.and_then(|c| c.elaborated).or(old.previous);
        }
    }

    /// The LSP range of a span of this document.
    pub(crate) fn range(&self, start: u32, end: u32) -> lsp_types::Range {
        self.index.range(&self.text, start as usize, end as usize)
    }

    /// The compiler's diagnostics, then the last proof's.
    pub(crate) fn diagnostics(&self) -> Vec<LspDiagnostic> {
        let Some(c) = &self.compilation else {
            return vec![LspDiagnostic {
                range: self.range(0, 0),
                severity: Some(DiagnosticSeverity::WARNING),
                source: Some("weft".into()),
                message: format!(
                    "this file is {} bytes, more than the {} the editor analyses as you type; run `weft check`",
                    self.text.len(),
                    MAX_ANALYSED_BYTES
                ),
                ..LspDiagnostic::default()
            }];
        };
        let mut out: Vec<LspDiagnostic> = c
            .diagnostics
            .iter()
            .map(|d| convert(&self.text, &self.index, c, d))
            .collect();
        out.extend(self.proof.iter().cloned());
        out
    }
}

/// One compiler diagnostic: at its first label in this file (the top of the file when
/// its labels are elsewhere, in an import or the standard library, which it names).
pub(crate) fn convert(
    text: &str,
    index: &LineIndex,
    c: &Compilation,
    d: &Diagnostic,
) -> LspDiagnostic {
    let main = c.main;
    let range = |s: u32, e: u32| index.range(text, s as usize, e as usize);
    let in_main = d.source.is_none_or(|s| s == main);
    let (range, mut message) = match (in_main, d.labels.first()) {
        (true, Some(l)) => (range(l.span.start, l.span.end), d.message.clone()),
        (true, None) => (range(0, 0), d.message.clone()),
        (false, _) => {
            let name = d
                .source
                .and_then(|s| c.sources.get(s))
                .map_or("another file", |f| f.name.as_str());
            (range(0, 0), format!("{} (in {name})", d.message))
        }
    };
    if let Some(l) = d.labels.first().filter(|l| !l.text.is_empty()) {
        message += &format!(": {}", l.text);
    }
    if let Some(h) = &d.help {
        message += &format!("\nhelp: {h}");
    }
    diagnostic(range, d.severity, d.code.as_str(), message)
}

/// An LSP diagnostic of weft `code`, with the command that explains it in its `data` (the
/// server links the code to its page, [`link_code`]).
pub(crate) fn diagnostic(
    range: lsp_types::Range,
    severity: Severity,
    code: &str,
    message: String,
) -> LspDiagnostic {
    LspDiagnostic {
        range,
        severity: Some(match severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            _ => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String(code.to_owned())),
        source: Some("weft".into()),
        message,
        data: Some(serde_json::json!({ "explain": format!("weft --explain {code}") })),
        ..LspDiagnostic::default()
    }
}

// What each place of a `.weft` file accepts, with what its attributes mean (from
// `docs/language.md`), for hover and completion.

/// Where attributes are written: a section's keyword (`routing`), `node` for node
/// declarations, `model` for models, `link` for cables, `fabric` for the fabric's own.
pub(crate) const ATTRS: &[(&str, &[(&str, &str)])] = &[
    ("fabric", &[("guid_base", "the base of generated GUIDs")]),
    ("model", NODE),
    ("node", NODE),
    (
        "link",
        &[
            (
                "speed",
                "the cable's speed (`SDR DDR QDR FDR10 FDR EDR HDR NDR XDR`)",
            ),
            ("width", "the cable's width (`1x 2x 4x 8x 12x`)"),
        ],
    ),
    ("vls", &[("budget", "the data VLs the fabric may use")]),
    (
        "routing",
        &[
            (
                "engine",
                "the routing engine: `fat_tree`, `updn`, `minhop` or `layered`",
            ),
            (
                "switch_to_switch",
                "`sftree`: every switch pair connected (what `fat_tree` does)",
            ),
            ("lmc", "LID mask control, 0 to 7: 2^lmc LIDs per port"),
            ("roots", "explicit roots for `updn` (a list of switches)"),
            ("seed", "a seed for randomised engines (not built yet)"),
        ],
    ),
    (
        "class",
        &[
            ("sl", "the class's first SL (0 to 15)"),
            ("vl", "the class's first data VL (0 to 14)"),
            ("weight", "its share of the VL arbitration table (1 to 255)"),
            ("priority", "`high` or `low` VL arbitration"),
            (
                "lanes",
                "`single`, `vftree(maxvl: N)` or `dftree`: how traffic spreads over lanes",
            ),
        ],
    ),
    (
        "match",
        &[(
            "service_id",
            "the service IDs (a number or a range) this class is",
        )],
    ),
    (
        "tenant",
        &[
            ("pkey", "the partition's P_Key (0x0001..=0x7ffe)"),
            (
                "hosts",
                "the tenant's hosts (names, ranges or host lists), full members",
            ),
            ("class", "the QoS class the tenant's traffic uses"),
        ],
    ),
    (
        "shared",
        &[
            ("pkey", "the partition's P_Key (0x0001..=0x7ffe)"),
            ("hosts", "the shared hosts, full members"),
            (
                "members",
                "how every tenant's hosts join: `limited` or `full`",
            ),
        ],
    ),
    (
        "vms",
        &[
            ("vfs_per_host", "VFs per hypervisor"),
            (
                "lids",
                "`dynamic` (a VF's LID moves with its VM) or `prepopulated`",
            ),
        ],
    ),
    (
        "multicast",
        &[("ipoib", "build IPoIB's broadcast groups (`true`)")],
    ),
    (
        "group",
        &[
            ("mlid", "the group's MLID (0xC001..=0xFFFE)"),
            ("pkey", "the group's P_Key"),
            ("members", "its full members: `all` or a list of end nodes"),
            ("sl", "the group's SL (0 to 15)"),
            ("send_only", "end nodes that join send-only"),
        ],
    ),
];

const NODE: &[(&str, &str)] = &[
    ("ports", "the number of ports"),
    (
        "speed",
        "link speed (`SDR DDR QDR FDR10 FDR EDR HDR NDR XDR`)",
    ),
    ("width", "link width (`1x 2x 4x 8x 12x`)"),
    ("vlcap", "data VLs the ports support (1, 2, 4, 8 or 15)"),
    ("mtu", "the MTU in bytes (256 to 4096)"),
    ("linear_fdb_cap", "LFT entries a switch holds"),
    ("multicast_fdb_cap", "MFT entries a switch holds"),
    ("partition_cap", "P_Key table entries"),
    ("vendor", "the vendor ID"),
    ("device", "the device ID"),
    ("name", "how an array's nodes are named (`\"leaf{:02}\"`)"),
    ("guid", "the node GUID"),
    ("system_guid", "the system image GUID"),
    ("port_guids", "the ports' GUIDs, a list"),
    ("level", "the tree level (leaves = 1)"),
    ("lid", "a pinned LID"),
    ("host", "the machine an end node belongs to (`\"dgx001\"`)"),
    ("rail", "the rail an end node is on"),
    ("role", "`host`, `aggregation`, `storage` or `management`"),
];

/// Section keywords of a `fabric` block.
pub(crate) const SECTIONS: &[&str] = &[
    "topology",
    "faults",
    "vls",
    "routing",
    "qos",
    "tenant",
    "shared",
    "sm on",
    "multicast",
];

/// The attributes valid in `context` (a section keyword, `node`, `model`, …).
pub(crate) fn in_context(context: &str) -> &'static [(&'static str, &'static str)] {
    ATTRS
        .iter()
        .find(|(c, _)| *c == context)
        .map_or(&[], |(_, a)| a)
}

/// What attribute `name` means in `context`, or in any context when that one has no such.
pub(crate) fn meaning(context: &str, name: &str) -> Option<&'static str> {
    let find = |list: &'static [(&'static str, &'static str)]| {
        list.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    };
    find(in_context(context)).or_else(|| ATTRS.iter().find_map(|(_, l)| find(l)))
}

/// Links `d`'s code to its section of `page` (`docs/codes.md`: `### \`weft::x\`` headings,
/// anchored as Markdown renderers anchor them).
pub(crate) fn link_code(d: &mut LspDiagnostic, page: &Url) {
    if let Some(NumberOrString::String(code)) = &d.code {
        let anchor: String = code
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let mut href = page.clone();
        href.set_fragment(Some(&anchor));
        d.code_description = Some(CodeDescription { href });
    }
}
