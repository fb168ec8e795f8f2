//! The weft language and compiler: grammar and AST (`syntax`), diagnostics, the embedded
//! standard library, elaboration into a [`weft_fabric::Fabric`], and validation.
//!
//! Architecture invariant: no I/O. Files reach the compiler as text through a [`Host`]
//! (the driver's `FileHost` reads them, and a typed `HostError` says when it cannot); results
//! and every diagnostic come back as values, and nothing here prints. Syntax knows nothing of
//! elaboration; elaboration knows nothing of files. Every program terminates: no recursion,
//! finite loops, and a budget that every step whose work grows with a value (comparing,
//! formatting, summing, slicing, building) pays for in proportion (`tests/robustness.rs` holds
//! programs of shared lists to it). What the language accepts but weft does not build is a
//! `weft::not_built::…` error at its span, never ignored.
//!
//! After elaboration come the passes ([`build`] runs them in order): [`lids`], [`routing`]
//! (the engines), [`qos`] (lanes onto SLs and VLs), `partitions` and `multicast`. The
//! compiler emits states; it never proves them (that is `weft-verifier`'s, through the
//! driver).

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

pub mod build;
pub mod check;
pub mod code;
pub mod diagnostic;
mod elaborate;
pub mod emit;
pub mod fmt;
mod import;
pub mod lids;
mod multicast;
pub mod outline;
mod partitions;
pub mod qos;
#[expect(
    clippy::indexing_slicing,
    reason = "the engines index their own dense switch and port ids, built from a valid \
              `Fabric`; what they read from input (the fabric, the configuration) goes through \
              `get`"
)]
pub mod routing;
mod stdlib;
mod syntax;
mod value;
mod words;

pub use check::Summary;
pub use elaborate::{Elaborated, Origin, DEFAULT_GUID_BASE};
pub use import::{
    export_ibnetdiscover, import_ibnetdiscover, import_ibnetdiscover_with, parse_roles, GivenRole,
    ImportOptions,
};

use crate::code::Code;
use diagnostic::{Diagnostic, SourceId, SourceMap};
use syntax::ast::{Item, Span};
use weft_fabric::NodeId;

/// Routing engines `routing { engine = … }` accepts: [`routing::Engine::ALL`]'s names.
pub const ENGINES: &[&str] = &routing::Engine::NAMES;

/// How switch-to-switch paths are routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchToSwitch {
    /// Every switch pair connected (sFtree on fat-trees; the other engines route switch LIDs
    /// like any other): what every engine does, and the default.
    Sftree,
}

pub use words::BUILTINS;

/// How the compiler reaches files named in the program (`import("…")`).
pub trait Host {
    /// The text of `path`, resolved relative to the main file; the error says why not (its
    /// text is the label of the `weft::import_unreadable` error).
    fn read(&self, path: &str) -> Result<String, HostError>;
}

/// Why a [`Host`] cannot give the text of a file.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The host has no files at all ([`NoFiles`]).
    #[error("no files are available here")]
    NoFiles,
    /// The file could not be read.
    #[error("{path}: {source}")]
    Unreadable {
        /// The file as the host resolved it (for messages).
        path: String,
        /// What went wrong (I/O, not a regular file, too large, not UTF-8, …).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// A host with no files: every `import` fails.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFiles;

impl Host for NoFiles {
    fn read(&self, _path: &str) -> Result<String, HostError> {
        Err(HostError::NoFiles)
    }
}

/// The `routing { … }` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoutingConfig {
    /// The engine asked for.
    pub engine: Option<routing::Engine>,
    /// Where the engine was named.
    pub engine_span: Option<Span>,
    /// The switch-to-switch scheme asked for, and where.
    pub switch_to_switch: Option<(SwitchToSwitch, Span)>,
    /// LID mask control.
    pub lmc: u8,
    /// Where `lmc` was set.
    pub lmc_span: Option<Span>,
    /// Explicit roots (`updn` only).
    pub roots: Vec<NodeId>,
    /// Where `roots` was set.
    pub roots_span: Option<Span>,
}

/// A partition of end nodes: a `tenant` (its hosts full members, isolated from other tenants)
/// or a `shared` partition (its hosts full members, every tenant's hosts joining it as
/// `members` says).
#[derive(Clone, Debug, PartialEq)]
pub struct Tenant {
    /// Its name.
    pub name: String,
    /// Where it is declared (the name).
    pub span: Span,
    /// The partition number (the P_Key's low 15 bits: 0x0001..=0x7ffe).
    pub pkey: u16,
    /// Its hosts (end nodes), in declaration order.
    pub hosts: Vec<NodeId>,
    /// `shared` only: how every tenant's hosts join it (`None` for a tenant).
    pub others: Option<Membership>,
    /// A tenant's QoS class (its traffic on that class's SLs and VLs), and where it is named.
    pub class: Option<(String, Span)>,
    /// A tenant's `vms on HOSTS { … }` pools: hypervisors whose VFs its VMs run on.
    pub pools: Vec<VmPool>,
    /// A tenant's `vm NAME on HOST` placements, in declaration order.
    pub vms: Vec<Vm>,
}

/// How a pool's VFs get LIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VfLids {
    /// Only a VF a VM runs on has a LID (it moves with the VM).
    Dynamic,
    /// Every VF has a LID from the start (routed before any VM runs).
    Prepopulated,
}

/// `vms on HOSTS { vfs_per_host = N, lids = dynamic|prepopulated }`: vSwitch SR-IOV
/// hypervisors, each with `vfs` VFs.
#[derive(Clone, Debug, PartialEq)]
pub struct VmPool {
    /// The hypervisors, in declaration order.
    pub hosts: Vec<NodeId>,
    /// VFs per hypervisor.
    pub vfs: u8,
    /// The LID scheme.
    pub lids: VfLids,
    /// Where the pool is declared (`vms`).
    pub span: Span,
}

/// `vm NAME on HOST`: a VM on one of its tenant's hypervisors.
#[derive(Clone, Debug, PartialEq)]
pub struct Vm {
    /// Its name.
    pub name: String,
    /// The hypervisor.
    pub host: NodeId,
    /// Where it is declared (the name).
    pub span: Span,
}

pub use weft_fabric::Membership;

impl Tenant {
    /// Every end node the tenant holds: its hosts, then its VMs' hypervisors.
    pub fn members(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.hosts
            .iter()
            .copied()
            .chain(self.pools.iter().flat_map(|p| p.hosts.iter().copied()))
    }
}

/// What a `fabric` block says besides its topology.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FabricConfig {
    /// Data VLs the fabric may use, and where that was said.
    pub vls_budget: Option<(u8, Span)>,
    /// Routing settings.
    pub routing: RoutingConfig,
    /// The `qos { class … }` classes, in declaration order (none: one implicit class on SL 0).
    pub qos: Vec<QosClass>,
    /// `tenant` and `shared` partitions, in declaration order (none: every port a full member
    /// of the default partition).
    pub tenants: Vec<Tenant>,
    /// `sm on NODES`: the ports the subnet manager runs on (an end node's port, a switch's
    /// port 0), in declaration order; empty when not said.
    pub sm: Vec<weft_fabric::PortRef>,
    /// The `multicast { … }` section: declared groups, and whether IPoIB's broadcast groups
    /// are built.
    pub multicast: MulticastConfig,
}

/// The `multicast { ipoib = …, group NAME { … } }` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MulticastConfig {
    /// Whether the implicit IPoIB broadcast groups are built (`ipoib = true`; off without
    /// it, for now): the default partition's (MLID 0xC000, P_Key 0xFFFF, every end port) and
    /// one per tenant or shared partition, as OpenSM creates them when IPoIB joins.
    pub ipoib: bool,
    /// Declared groups, in declaration order.
    pub groups: Vec<GroupDecl>,
}

/// Which end nodes a group names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupMembers {
    /// `members = all`: every end node's live ports.
    All,
    /// These end nodes (hosts expanded to their HCAs), in declaration order.
    Nodes(Vec<NodeId>),
}

/// One `group NAME { mlid = …, pkey = …, members = …, sl = …, send_only = … }`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupDecl {
    /// Its name (for messages; the SA knows groups by MGID, weft by MLID).
    pub name: String,
    /// Where it is declared (the name).
    pub span: Span,
    /// Its MLID (0xC001..=0xFFFE: 0xC000 is the default partition's IPoIB group).
    pub mlid: weft_fabric::Mlid,
    /// Its P_Key with the full-member bit set (`0xffff`: the default partition), and where.
    pub pkey: (u16, Span),
    /// Its full members.
    pub members: GroupMembers,
    /// End nodes that join send-only (the tree reaches their switch, never their port).
    pub send_only: Vec<NodeId>,
    /// `sl = N`, and where; `None`: the SL the default partition's traffic uses.
    pub sl: Option<(u8, Span)>,
}

/// How a QoS class spreads its traffic over lanes (each lane its own SL and VL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneScheme {
    /// One lane.
    Single,
    /// vFtree: a lane per (source leaf, destination leaf) pair from Paper III's Algorithm 1.
    Vftree {
        /// Lanes (`maxvl`).
        maxvl: u8,
    },
    /// dFtree: a fast and a slow lane; every pair may use either.
    Dftree,
}

impl LaneScheme {
    /// Lanes the scheme uses.
    pub fn lanes(self) -> u8 {
        match self {
            LaneScheme::Single => 1,
            LaneScheme::Vftree { maxvl } => maxvl,
            LaneScheme::Dftree => 2,
        }
    }
}

/// One `class name { … }` of a `qos` section.
#[derive(Clone, Debug, PartialEq)]
pub struct QosClass {
    /// Its name.
    pub name: String,
    /// Where it is declared (the name).
    pub span: Span,
    /// `sl = N`: its first SL.
    pub sl: Option<(u8, Span)>,
    /// `vl = N` (or the first of `vftree(vls: [...])`): its first VL.
    pub vl: Option<(u8, Span)>,
    /// `lanes = …`.
    pub lanes: LaneScheme,
    /// Where `lanes` was set.
    pub lanes_span: Option<Span>,
    /// `weight = N`: its share of the VL arbitration table (1 to 255), split over its VLs.
    pub weight: u8,
    /// `priority = high`.
    pub high: bool,
    /// `match { service_id = … }`: the traffic that is this class.
    pub matches: ClassMatch,
}

/// What traffic a class is (SA PathRecord queries with any of these service IDs). Matching by
/// P_Key is not built (`weft::not_built::pkey_match`); a tenant's `class` gives its
/// partition's traffic a class instead.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassMatch {
    /// Service ID ranges.
    pub service_ids: Vec<ServiceIds>,
}

/// A range of service IDs a class matches (`service_id = 0x100` or `0x100..0x200`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceIds {
    /// The first service ID.
    pub first: u64,
    /// The last service ID (inclusive).
    pub last: u64,
    /// Where the range was given (the `service_id` value).
    pub span: Span,
}

impl ClassMatch {
    /// Whether no criterion was given.
    pub fn is_empty(&self) -> bool {
        self.service_ids.is_empty()
    }
}

/// Everything one compilation produced.
#[derive(Debug)]
pub struct Compilation {
    /// Every file diagnostics may point into.
    pub sources: SourceMap,
    /// The main file.
    pub main: SourceId,
    /// The elaborated fabric, unless the program had errors that prevent building one.
    pub elaborated: Option<Elaborated>,
    /// Every finding, in order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Compilation {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Bounds on the work one compilation may do.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Statements (and node declarations) elaboration may execute.
    pub steps: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            steps: elaborate::STEP_LIMIT,
        }
    }
}

/// Parses and elaborates one `.weft` file (without the fabric checks of [`check()`]).
pub fn elaborate(name: &str, text: &str, host: &dyn Host) -> Compilation {
    elaborate_with(name, text, host, Limits::default())
}

/// [`elaborate`] with explicit limits.
pub fn elaborate_with(name: &str, text: &str, host: &dyn Host, limits: Limits) -> Compilation {
    let mut sources = SourceMap::new();
    let main = sources.add(name, text);
    let (file, mut diagnostics) = syntax::parse(text, main);
    let mut elab = elaborate::Elab::new(host, sources, main);
    elab.set_step_limit(limits.steps);
    elab.add_module(&file, main);
    let fabrics: Vec<_> = file
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Fabric(f) => Some(f),
            _ => None,
        })
        .collect();
    let mut elaborated = None;
    match fabrics.as_slice() {
        [] => {
            // A file of models and templates only is a library: fine unless it is empty of
            // everything, which is most likely a mistake.
            if !diagnostics.iter().any(Diagnostic::is_error) && file.items.is_empty() {
                diagnostics.push(
                    Diagnostic::error(Code::NoFabric, "this file describes no fabric")
                        .label(main, Span::new(0, 0), "empty")
                        .help("a weft program is `fabric name { topology = … }`"),
                );
            }
        }
        [f, rest @ ..] => {
            for extra in rest {
                diagnostics.push(
                    Diagnostic::error(Code::DuplicateFabric, "a file describes one fabric")
                        .label(main, extra.name.span, "second fabric")
                        .help("put each fabric in its own file"),
                );
            }
            elaborated = elab.fabric(f);
        }
    }
    diagnostics.append(&mut elab.diags);
    let sources = elab.sources;
    Compilation {
        sources,
        main,
        elaborated,
        diagnostics,
    }
}

/// Parses, elaborates and validates one `.weft` file: what `weft check` runs.
pub fn check(name: &str, text: &str, host: &dyn Host) -> Compilation {
    check_with(name, text, host, Limits::default())
}

/// [`check()`] with explicit limits.
pub fn check_with(name: &str, text: &str, host: &dyn Host, limits: Limits) -> Compilation {
    let mut c = elaborate_with(name, text, host, limits);
    if let Some(e) = &c.elaborated {
        if !c.has_errors() {
            c.diagnostics.extend(check::validate(e));
        }
    }
    c
}
