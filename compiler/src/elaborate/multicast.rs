//! `multicast { ipoib = true|false, group NAME { mlid = …, pkey = …, members = [...] | all,
//! sl = N, send_only = [...] } }`: multicast groups the build gives trees, and whether the
//! implicit IPoIB broadcast groups are built. The P_Keys are checked against the partitions
//! once every section is read ([`Elab::multicast_pkeys`]); the SLs against the lanes when the
//! build places them (`crate::multicast`).

use super::*;
use crate::{GroupDecl, GroupMembers};

/// What a `multicast` section takes.
const MULTICAST_ATTRS: &[&str] = &["ipoib", "group"];
/// What a `group` takes.
const GROUP_ATTRS: &[&str] = &["mlid", "pkey", "members", "sl", "send_only"];

impl Elab<'_> {
    /// The `multicast` section.
    pub(super) fn multicast(&mut self, s: &Section, config: &mut FabricConfig) {
        for item in s.body.iter().flatten() {
            match item {
                SectionItem::Attr(a) if a.name.name == "ipoib" => match self.eval(&a.value) {
                    Ok(Value::Bool(b)) => config.multicast.ipoib = b,
                    Ok(other) => self.type_err("`true` or `false`", &other, a.value.span),
                    Err(()) => {}
                },
                SectionItem::Section(g) if g.kind.name == "group" => self.group(g, config),
                other => self.unknown_in_section(other, "multicast", MULTICAST_ATTRS),
            }
        }
    }

    /// One `group NAME { … }`, checked against the groups before it (names and MLIDs).
    fn group(&mut self, g: &Section, config: &mut FabricConfig) {
        if !self.takes_only(g, true) {
            return;
        }
        let Some(name) = &g.name else {
            self.err_help(
                Code::Syntax,
                "a `group` needs a name",
                g.kind.span,
                "unnamed",
                "write `group jobs { mlid = 0xc001, members = [cn001, cn002] }`",
            );
            return;
        };
        if let Some(first) = config.multicast.groups.iter().find(|d| d.name == name.name) {
            let first = first.span;
            self.second(
                &format!("group `{}` is declared twice", name.name),
                name.span,
                first,
                "give each group its own name",
            );
            return;
        }
        self.attrs_once(g);
        let mut ok = true;
        let mut mlid: Option<(weft_fabric::Mlid, Span)> = None;
        let mut pkey: Option<(u16, Span)> = None;
        let mut members: Option<GroupMembers> = None;
        let mut send_only: Vec<NodeId> = Vec::new();
        let mut sl: Option<(u8, Span)> = None;
        for item in g.body.iter().flatten() {
            let SectionItem::Attr(a) = item else {
                self.unknown_in_section(item, "group", GROUP_ATTRS);
                ok = false;
                continue;
            };
            match a.name.name.as_str() {
                "mlid" => match self.mlid(&a.value) {
                    Some(m) => mlid = Some((m, a.value.span)),
                    None => ok = false,
                },
                "pkey" => match self.int_in(&a.value, 1, 0xffff, "a P_Key (0x0001..=0xffff)") {
                    Some(n) if n & 0x7fff == 0 => {
                        self.err_help(
                            Code::OutOfRange,
                            format!("P_Key {n:#06x} names partition 0, which does not exist"),
                            a.value.span,
                            "no partition",
                            "name a declared partition's P_Key, or 0xffff for the default partition",
                        );
                        ok = false;
                    }
                    Some(n) => pkey = Some((n as u16 | 0x8000, a.value.span)),
                    None => ok = false,
                },
                "members" => match &a.value.kind {
                    ExprKind::Ident(w) if w == "all" && self.lookup(w).is_none() => {
                        members = Some(GroupMembers::All)
                    }
                    _ => {
                        let (nodes, all) = self.nodes_in(&a.value, "members", false);
                        ok &= all;
                        if all && nodes.is_empty() {
                            self.emit(
                                Diagnostic::warning(
                                    Code::EmptyGroup,
                                    format!("group `{}` has no members", name.name),
                                )
                                .label(self.cur_source(), a.value.span, "no member")
                                .help(
                                    "name the end nodes or hosts that join it (`members = [cn001, cn002]`, \
                                     or `all`), or remove the group",
                                ),
                            );
                        }
                        members = Some(GroupMembers::Nodes(nodes));
                    }
                },
                "send_only" => {
                    let (nodes, all) = self.nodes_in(&a.value, "send_only", false);
                    ok &= all;
                    send_only = nodes;
                }
                "sl" => match self.int_in(&a.value, 0, 15, "an SL of 0 to 15") {
                    Some(n) => sl = Some((n as u8, a.value.span)),
                    None => ok = false,
                },
                _ => {
                    self.unknown_in_section(item, "group", GROUP_ATTRS);
                    ok = false;
                }
            }
        }
        for (what, missing, example) in [
            ("mlid", mlid.is_none(), "mlid = 0xc001"),
            ("members", members.is_none(), "members = [cn001, cn002]"),
        ] {
            if missing && ok {
                self.err_help(
                    Code::MissingAttribute,
                    format!("group `{}` has no `{what}`", name.name),
                    name.span,
                    format!("no `{what}`"),
                    format!("give it one: `{example}`"),
                );
                ok = false;
            }
        }
        let (Some((mlid, mlid_span)), Some(members), true) = (mlid, members, ok) else {
            return;
        };
        if let Some(first) = config.multicast.groups.iter().find(|d| d.mlid == mlid) {
            let (first_name, first_span) = (first.name.clone(), first.span);
            self.second(
                &format!(
                    "groups `{first_name}` and `{}` both use MLID {mlid}",
                    name.name
                ),
                mlid_span,
                first_span,
                "each group needs its own MLID",
            );
            return;
        }
        if let GroupMembers::Nodes(nodes) = &members {
            if let Some(&n) = send_only.iter().find(|n| nodes.contains(n)) {
                let node = self.builder.fabric().node(n).name().to_owned();
                self.err_help(
                    Code::DuplicateItem,
                    format!(
                        "`{node}` is both a full and a send-only member of group `{}`",
                        name.name
                    ),
                    name.span,
                    "named in `members` and `send_only`",
                    "a port joins a group one way; keep it in one list (with `members = all`, \
                     `send_only` names the end nodes that join send-only instead)",
                );
                return;
            }
        }
        config.multicast.groups.push(GroupDecl {
            name: name.name.clone(),
            span: name.span,
            mlid,
            pkey: pkey.unwrap_or((0xffff, name.span)),
            members,
            send_only,
            sl,
        });
    }

    /// A declared group's MLID: 0xC001..=0xFFFE (0xC000 is the default partition's IPoIB
    /// group, 0xFFFF the permissive LID).
    fn mlid(&mut self, e: &Expr) -> Option<weft_fabric::Mlid> {
        let v = self.eval(e).ok()?;
        let Value::Int(n) = v else {
            self.type_err("a multicast LID (0xc001..=0xfffe)", &v, e.span);
            return None;
        };
        match u16::try_from(n).ok().and_then(weft_fabric::Mlid::new) {
            Some(m) if m != weft_fabric::Mlid::MIN => Some(m),
            _ => {
                self.err_help(
                    Code::OutOfRange,
                    format!("{n:#x} is not an MLID a group may declare"),
                    e.span,
                    "must be 0xc001..=0xfffe",
                    "multicast LIDs are 0xc000..=0xfffe, and 0xc000 is the default \
                     partition's IPoIB broadcast group",
                );
                None
            }
        }
    }

    /// Every declared group's P_Key names a partition: the default one (0x7fff) or a
    /// `tenant`'s or `shared` partition's.
    pub(super) fn multicast_pkeys(&mut self, config: &FabricConfig) {
        for g in &config.multicast.groups {
            let (key, span) = g.pkey;
            let base = key & 0x7fff;
            if base == 0x7fff || config.tenants.iter().any(|t| t.pkey == base) {
                continue;
            }
            let declared: Vec<String> = config
                .tenants
                .iter()
                .map(|t| format!("`{}` {:#06x}", t.name, t.pkey | 0x8000))
                .collect();
            let help = if declared.is_empty() {
                "no partition is declared: use 0xffff (the default partition), or declare a \
                 `tenant` or `shared` partition with this P_Key"
                    .to_owned()
            } else {
                format!(
                    "declared: {}, and 0xffff (the default partition)",
                    declared.join(", ")
                )
            };
            let d = Diagnostic::error(
                Code::MulticastPkey,
                format!(
                    "group `{}` uses P_Key {key:#06x}, which no partition declares",
                    g.name
                ),
            )
            .label(self.main, span, "no such partition")
            .help(help);
            self.emit(d);
        }
    }
}
