//! ibnetdiscover dumps (and `ibnetdiscover -p` and `iblinkinfo` reports) read through
//! `weft-fabric`: `topology = import("file")` and `weft import` (with its `--partial` and
//! `--strict`), with the roles of service nodes given on import (`--role`, `--roles`,
//! `--io-guids`) or recognised ([`weft_fabric::roles`]).

use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use crate::syntax::ast::Span;
use std::collections::BTreeMap;
use weft_fabric::{Fabric, FabricBuilder, Guid, NodeId, Role};
use weft_formats::ibnetdiscover::{self, ParseOptions};

fn convert_one(d: &ibnetdiscover::IbnetDiagnostic, source: SourceId) -> Diagnostic {
    Diagnostic::from_miette(d, Code::Ibnet(d.code()), source)
}

fn convert(errors: &ibnetdiscover::ParseErrors, source: SourceId) -> Vec<Diagnostic> {
    errors
        .diagnostics()
        .iter()
        .map(|d| convert_one(d, source))
        .collect()
}

/// How `weft import` reads a dump: its `--partial` and `--strict`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// A dump whose discovery was cut short is read: a port line naming a node no record
    /// describes drops its link with a warning ([`ParseOptions::partial`]).
    pub partial: bool,
    /// Every warning is an error ([`ParseOptions::strict`]).
    pub strict: bool,
}

/// Reads an ibnetdiscover dump; warnings on success, every error on failure.
pub(crate) fn ibnetdiscover(
    text: &str,
    path: &str,
    fabric_name: &str,
    source: SourceId,
) -> Result<(Fabric, Vec<Diagnostic>), Vec<Diagnostic>> {
    read(
        text,
        path,
        fabric_name,
        source,
        None,
        ImportOptions::default(),
    )
    .map(|(found, w)| (found.fabric, w))
}

fn read(
    text: &str,
    path: &str,
    fabric_name: &str,
    source: SourceId,
    name_map: Option<(&str, SourceId)>,
    options: ImportOptions,
) -> Result<(ibnetdiscover::Discovered, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut opts = ParseOptions {
        fabric_name: fabric_name.to_owned(),
        source_name: path.to_owned(),
        partial: options.partial,
        strict: options.strict,
        ..Default::default()
    };
    if let Some((map, map_source)) = name_map {
        opts.name_map =
            ibnetdiscover::parse_node_name_map(map).map_err(|e| convert(&e, map_source))?;
    }
    match ibnetdiscover::parse(text, &opts) {
        Ok(found) => {
            let warnings = found
                .warnings
                .iter()
                .map(|w| convert_one(w, source))
                .collect();
            Ok((found, warnings))
        }
        Err(errors) => Err(convert(&errors, source)),
    }
}

/// `weft import`: an ibnetdiscover dump (and optional node-name map) → a weft program.
pub fn import_ibnetdiscover(
    text: &str,
    source_name: &str,
    source: SourceId,
    name_map: Option<(&str, SourceId)>,
    fabric_name: &str,
) -> Result<(String, Vec<Diagnostic>), Vec<Diagnostic>> {
    import_ibnetdiscover_with(
        text,
        source_name,
        source,
        name_map,
        fabric_name,
        ImportOptions::default(),
        &[],
    )
}

/// [`import_ibnetdiscover`], reading as `options` say (`weft import --partial`, `--strict`)
/// and with roles given for some end nodes (`weft import --role`, `--roles`, `--io-guids`):
/// each GUID names an end node by its node GUID or one of its port GUIDs. The dump may also
/// be `ibnetdiscover -p` or `iblinkinfo` output; the program's header says which. The end
/// nodes given no role that look like SHARP aggregation nodes
/// ([`weft_fabric::roles::aggregation_nodes`]) become aggregation nodes. The program writes
/// every role that is not `host` (and `role = host` where a given role keeps a node that
/// looks like an aggregation node a host). A GUID that names no end node of the dump, or one
/// node given two roles, is an error.
pub fn import_ibnetdiscover_with(
    text: &str,
    source_name: &str,
    source: SourceId,
    name_map: Option<(&str, SourceId)>,
    fabric_name: &str,
    options: ImportOptions,
    roles: &[GivenRole],
) -> Result<(String, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (found, warnings) = read(text, source_name, fabric_name, source, name_map, options)?;
    let mut b = FabricBuilder::from(found.fabric);
    let given = give_roles(&mut b, roles, source_name)?;
    let recognised = weft_fabric::roles::aggregation_nodes(b.fabric(), |id| given.contains(&id));
    for r in &recognised {
        b.set_role(r.node, Role::Aggregation);
    }
    let inferred = weft_fabric::machines::infer(b.fabric());
    for h in &inferred.hosts {
        for (&n, &rail) in h.members.iter().zip(&h.rails) {
            b.set_host(n, &h.name, Some(rail));
        }
    }
    let mut warnings = warnings;
    let found_here = machine_warnings(b.fabric(), &inferred);
    if options.strict && !found_here.is_empty() {
        return Err(found_here
            .into_iter()
            .map(|mut d| {
                d.severity = crate::diagnostic::Severity::Error;
                d
            })
            .collect());
    }
    warnings.extend(found_here);
    let hosts = inferred.hosts;
    let mut fabric = b.finish();
    fabric.name = fabric_name.to_owned();
    let origin = match found.format {
        ibnetdiscover::InputFormat::Topology => format!("`{source_name}`"),
        other => format!("`{source_name}` (`{}` output)", other.as_str()),
    };
    let mut program = crate::emit::fabric_to_weft(&fabric, Some(&found.lids), &origin);
    if !hosts.is_empty() {
        program = format!(
            "{}{program}",
            hosts_comment(&fabric, &hosts, &inferred.rails)
        );
    }
    if !recognised.is_empty() {
        program = format!("{}{program}", recognised_comment(&fabric, &recognised));
    }
    Ok((program, warnings))
}

/// The warnings the machines found on import call for: each machine whose HCAs reach other
/// rails' leaves than its peers' (crossed cables), and the HCAs with an adapter's default
/// description, each left a machine of its own.
fn machine_warnings(fabric: &Fabric, found: &weft_fabric::machines::Inference) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in &found.rails.crossed {
        let Some(h) = found.hosts.get(c.group) else {
            continue;
        };
        let each: Vec<String> = c
            .misplaced
            .iter()
            .map(|m| {
                format!(
                    "`{}` is cabled to `{}`, a leaf of rail {}, where its peers are on rail {}",
                    fabric.node(m.node).name(),
                    fabric.node(m.leaf).name(),
                    m.found,
                    m.expected
                )
            })
            .collect();
        out.push(
            Diagnostic::warning(
                Code::CrossedRails,
                format!(
                    "host `{}` has HCAs on other rails' leaves than its peers': {}",
                    h.name,
                    each.join("; ")
                ),
            )
            .help(
                "swap the cables back (each HCA to its rail's leaf); until then its HCAs take \
                 their leaves' rails",
            ),
        );
    }
    if let Some(&first) = found.default_named.first() {
        let n = found.default_named.len();
        let name = fabric.node(first).name();
        let shown = name.split(" (0x").next().unwrap_or(name);
        out.push(
            Diagnostic::warning(
                Code::DefaultNamedHcas,
                format!(
                    "{n} HCA(s) have the adapter's default NodeDescription (`{shown}`, e.g. GUID {}) \
                     and no system image GUID shared with another: each is counted as a machine \
                     of its own (one machine per system image GUID)",
                    fabric.node(first).guid()
                ),
            )
            .help(
                "set the hosts' NodeDescriptions (`HOST DEVICE`, e.g. `dgx01 mlx5_0`) or give a \
                 node-name map (`--node-name-map`) so their HCAs group into machines",
            ),
        );
    }
    out
}

/// One comment line saying how many hosts of several HCAs were found, and by what evidence.
fn hosts_comment(
    fabric: &Fabric,
    hosts: &[weft_fabric::machines::Inferred],
    rails: &weft_fabric::machines::Rails,
) -> String {
    use weft_fabric::machines::Grouped;
    let hcas: usize = hosts.iter().map(|h| h.members.len()).sum();
    let mut by: Vec<String> = Vec::new();
    for (how, what) in [
        (
            Grouped::Description,
            "by the host name in their NodeDescriptions",
        ),
        (Grouped::SystemGuid, "by a shared system image GUID"),
    ] {
        let mut of = hosts.iter().filter(|h| h.by == how);
        if let Some(first) = of.next() {
            let example = first
                .members
                .first()
                .map(|&n| format!(", `{}`", fabric.node(n).name()))
                .unwrap_or_default();
            by.push(format!("{} {what}{example}", 1 + of.count()));
        }
    }
    let how = if rails.optimised {
        format!(
            "rail-optimised ({} of {} reach a different leaf with each HCA): an HCA's `rail` is its leaf's",
            rails.spread, rails.machines
        )
    } else {
        format!(
            "not rail-optimised ({} of {} have all their HCAs on one leaf, {} reach a different leaf with each): an HCA's `rail` is its device's rank",
            rails.one_leaf, rails.machines, rails.spread
        )
    };
    format!(
        "// {} hosts of several HCAs ({hcas} HCAs) grouped: {}; `host` and `rail` below; {how}.\n",
        hosts.len(),
        by.join("; ")
    )
}

/// One comment line saying how many end nodes were recognised as aggregation nodes, and by
/// what evidence.
fn recognised_comment(fabric: &Fabric, found: &[weft_fabric::roles::Recognised]) -> String {
    use weft_fabric::roles::Evidence;
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for r in found {
        let what = match r.evidence {
            Evidence::Description => "NodeDescription",
            Evidence::DeviceId => "device ID 0xcf09",
            Evidence::Position { .. } => "position on a switch's extra port",
        };
        *by.entry(what).or_default() += 1;
    }
    let how: Vec<String> = by.iter().map(|(w, n)| format!("{n} by {w}")).collect();
    let first = found
        .first()
        .map(|r| format!(", e.g. `{}`", fabric.node(r.node).name()))
        .unwrap_or_default();
    format!(
        "// {} SHARP aggregation node(s) recognised ({}{first}): `role = aggregation` below.\n",
        found.len(),
        how.join(", ")
    )
}

/// A role given on import for the end node with this node or port GUID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GivenRole {
    /// A node GUID, or the port GUID of one of the node's ports.
    pub guid: Guid,
    /// The role.
    pub role: Role,
    /// Where it was given: a line of a roles file, or `None` for `--role GUID=ROLE`.
    pub at: Option<(SourceId, Span)>,
}

/// Sets the given roles; returns the end nodes that were given one. Every GUID must name an
/// end node, and no node may be given two different roles.
fn give_roles(
    b: &mut FabricBuilder,
    roles: &[GivenRole],
    dump: &str,
) -> Result<std::collections::BTreeSet<NodeId>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut set: BTreeMap<NodeId, &GivenRole> = BTreeMap::new();
    for g in roles {
        let f = b.fabric();
        let node = f
            .find_guid(g.guid)
            .or_else(|| f.find_port_guid(g.guid).map(|(n, _)| n));
        let problem = match node {
            None => Some(format!("GUID {} names no node of `{dump}`", g.guid)),
            Some(n) if f.node(n).is_switch() => Some(format!(
                "GUID {} is switch `{}`: roles are for end nodes",
                g.guid,
                f.node(n).name()
            )),
            Some(n) => match set.get(&n) {
                Some(first) if first.role != g.role => Some(format!(
                    "`{}` is given two roles, `{}` and `{}`",
                    f.node(n).name(),
                    first.role,
                    g.role
                )),
                _ => {
                    set.insert(n, g);
                    None
                }
            },
        };
        if let Some(message) = problem {
            let mut d = Diagnostic::error(Code::RoleGuid, message);
            if let Some((src, span)) = g.at {
                d = d.label(src, span, "given here");
            }
            errors.push(d.help(
                "name each end node once, by its node GUID or a port GUID as the dump shows \
                 them (`caguid=`, or the `(…)` after a port)",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    for (&n, g) in &set {
        b.set_role(n, g.role);
    }
    Ok(set.into_keys().collect())
}

/// Reads a roles file: one `GUID ROLE` per line (`0x0002c90300a1b2c1 storage`), or, with
/// `only`, one GUID per line given that role (OpenSM's `io_guid_file` shape:
/// `weft import --io-guids FILE` gives `storage`). A GUID is hex with or without `0x`; `#`
/// starts a comment; blank lines are skipped. Every bad line is reported.
pub fn parse_roles(
    text: &str,
    source: SourceId,
    only: Option<Role>,
) -> Result<Vec<GivenRole>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut offset = 0usize;
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.split('#').next().unwrap_or("");
        let words: Vec<(usize, &str)> = words(line).collect();
        let Some(&(at, first)) = words.first() else {
            continue;
        };
        let end = words.last().map_or(at + first.len(), |&(i, w)| i + w.len());
        let span = Span::new(start + at, start + end);
        let want = if only.is_some() {
            "one GUID per line"
        } else {
            "`GUID ROLE` per line"
        };
        let guid = Guid::lenient(first).ok();
        let role = match (only, words.get(1)) {
            (Some(r), None) => Some(r),
            (None, Some(&(_, w))) if words.len() == 2 => Role::from_keyword(w),
            _ => None,
        };
        match (guid, role) {
            (Some(guid), Some(role)) => out.push(GivenRole {
                guid,
                role,
                at: Some((source, span)),
            }),
            (guid, _) => {
                let what = match (guid, only, words.get(1)) {
                    (None, _, _) => format!("`{first}` is not a GUID"),
                    (Some(_), None, Some(&(_, w))) if words.len() == 2 => {
                        format!("`{w}` is not a role")
                    }
                    _ => format!("a roles file has {want}"),
                };
                errors.push(
                    Diagnostic::error(Code::RoleFile, what)
                        .label(source, span, "this line")
                        .help(format!(
                            "{want}: a GUID in hex (`0x0002c90300a1b2c1`){}; `#` starts a comment",
                            if only.is_some() {
                                String::new()
                            } else {
                                ", then `host`, `aggregation`, `storage` or `management`".to_owned()
                            }
                        )),
                );
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The blank-separated words of `line` with their byte offsets.
fn words(line: &str) -> impl Iterator<Item = (usize, &str)> {
    line.split_ascii_whitespace().map(move |w| {
        let at = w.as_ptr() as usize - line.as_ptr() as usize;
        (at, w)
    })
}

/// The fabric in ibnetdiscover format (what `ibsim` loads).
pub fn export_ibnetdiscover(fabric: &Fabric) -> Result<String, ibnetdiscover::WriteError> {
    ibnetdiscover::write(fabric, None)
}
