//! Resolving a plan's writes to SMPs on the discovered fabric: targets, payloads, expected old values.

use crate::discover::{VfError, VfPorts};
use crate::observe::VfId;
use crate::smp::{PortInfo, SwitchInfo, PAYLOAD, PKEY_BLOCK};
use crate::{smp, ApplyError, Attr, Discovery, DrPath, Payload, Target};
use weft_fabric::{Guid, PortNum, WireView};
use weft_formats::plan::{vlarb_block, Plan, SmpWrite};

/// One SMP of the plan, resolved to the wire.
#[derive(Clone, Debug)]
pub(super) struct Op {
    pub(super) step: usize,
    pub(super) node: Guid,
    pub(super) port: Option<u8>,
    pub(super) target: Target,
    pub(super) after: Payload,
    /// The plan's `old`, where the plan says (LFT and P_Key blocks).
    pub(super) expect: Option<Payload>,
    /// For a PortInfo: the LID written into the payload read before (`after` is filled in
    /// then; nothing else of the port changes).
    pub(super) lid: Option<u16>,
    /// For a SwitchInfo: the top written into the payload it holds before the op (`after` is
    /// filled in then, so a raise of one top keeps what an earlier op wrote of the other).
    pub(super) top: Option<Top>,
    pub(super) what: String,
    /// An LFT block wholly above its switch's LinearFDBTop, written before the top is raised
    /// over it (see [`crate::journal::Block::hidden`]): not read before its Set.
    pub(super) hidden: bool,
}

/// A forwarding table top a SwitchInfo op raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Top {
    /// LinearFDBTop.
    Linear(u16),
    /// MulticastFDBTop.
    Multicast(u16),
}

impl Top {
    /// `before` (a SwitchInfo payload) with this top written.
    pub(super) fn write(self, before: &Payload) -> Payload {
        let mut info = SwitchInfo::decode(before);
        match self {
            Top::Linear(t) => info.linear_fdb_top = t,
            Top::Multicast(t) => info.multicast_fdb_top = t,
        }
        let mut p = *before;
        info.encode_into(&mut p);
        p
    }
}

pub(super) fn pkey_payload(keys: &[u16]) -> Payload {
    let mut k = [0u16; PKEY_BLOCK];
    for (d, s) in k.iter_mut().zip(keys) {
        *d = *s;
    }
    smp::encode_pkeys(&k)
}

/// The SMPs of `plan`, addressed through `d`.
pub(super) fn resolve(plan: &Plan, d: &Discovery, vfs: bool) -> Result<Vec<Op>, ApplyError> {
    // The VFs the fabric shows as nodes: the adapters the wire check folded into each
    // hypervisor (with no wire view, none).
    let wire = plan.wire.as_ref().unwrap_or(&d.view);
    let r = Resolver {
        d,
        wire,
        vf_ports: d.vf_ports(wire),
        vfs,
    };
    let mut ops = Vec::new();
    for (i, s) in plan.steps.iter().enumerate() {
        for w in &s.writes {
            r.push_ops(i, w, &mut ops)?;
        }
    }
    // Within a step the writes land in any order: two to one block could not be read back
    // (which landed last?) nor undone.
    let mut seen = std::collections::BTreeSet::new();
    for o in &ops {
        if !seen.insert((o.step, &o.target)) {
            return Err(ApplyError::Invalid(format!(
                "step {} writes {} twice (its writes go out in any order)",
                o.step + 1,
                o.what
            )));
        }
    }
    Ok(ops)
}

/// What addressing a plan's writes needs: the discovery, the plan's wire view and its VFs.
struct Resolver<'a> {
    d: &'a Discovery,
    wire: &'a WireView,
    vf_ports: VfPorts,
    /// Whether VFs are written through their hypervisor's port.
    vfs: bool,
}

impl Resolver<'_> {
    /// The directed route to node `g` (to its `port`, of an end node).
    fn path(&self, g: Guid, port: Option<u8>) -> Result<DrPath, ApplyError> {
        self.d.path(g, port).cloned().ok_or_else(|| {
            ApplyError::Unaddressable(match port {
                Some(p) => format!("node {g} port {p} is not reachable"),
                None => format!("node {g} is not on the fabric"),
            })
        })
    }

    /// Whether the fabric shows `g` as a switch.
    fn switch(&self, g: Guid) -> bool {
        self.d
            .nodes
            .get(&g)
            .is_some_and(|f| f.info.node_type == smp::NodeType::Switch)
    }

    /// An LFT or P_Key write is to a node of the plan's wire view: not to one the wire check
    /// folded away (a vSwitch's switch, a VF's adapter), which no proof of the plan covers.
    fn known(&self, g: Guid) -> Result<(), ApplyError> {
        if self.wire.nodes.contains_key(&g) {
            Ok(())
        } else {
            Err(ApplyError::Unaddressable(format!(
                "node {:#018x} is not in the plan's wire view (the fabric shows it behind a \
                 vSwitch folded into its hypervisor; only a `vport` write reaches a VF)",
                g.0
            )))
        }
    }

    /// The SMPs of write `w` of step `i`, onto `ops`.
    fn push_ops(&self, i: usize, w: &SmpWrite, ops: &mut Vec<Op>) -> Result<(), ApplyError> {
        match w {
            SmpWrite::Lft {
                switch: sw,
                block,
                old,
                new,
            } => ops.push(self.table_op(
                i,
                *sw,
                (Attr::Lft, u32::from(*block)),
                (old, new),
                format!("switch {sw} LFT block {block}"),
            )?),
            SmpWrite::Mft {
                switch: sw,
                block,
                position,
                old,
                new,
            } => ops.push(self.table_op(
                i,
                *sw,
                (Attr::Mft, smp::mft_modifier(*block, *position)),
                (old, new),
                format!("switch {sw} MFT block {block} position {position}"),
            )?),
            SmpWrite::Pkeys {
                node,
                port,
                block,
                old,
                new,
            } => {
                self.known(*node)?;
                let sw = self.switch(*node);
                ops.push(Op {
                    step: i,
                    node: *node,
                    port: (!sw).then_some(*port),
                    target: Target {
                        path: self.path(*node, (!sw).then_some(*port))?,
                        attr: Attr::PKeyTable,
                        modifier: smp::pkey_modifier(*block, sw.then_some(*port)),
                    },
                    after: pkey_payload(new),
                    expect: Some(pkey_payload(old)),
                    lid: None,
                    top: None,
                    what: format!("{node} port {port} P_Key block {block}"),
                    hidden: false,
                });
            }
            SmpWrite::Vport { .. } => self.vport_ops(i, w, ops)?,
            SmpWrite::Sl2vl {
                node,
                in_port,
                out_port,
                old,
                new,
            } => ops.push(self.qos_op(
                i,
                *node,
                QosAt::Sl2vl(*in_port, *out_port),
                (&smp::encode_sl2vl(old), &smp::encode_sl2vl(new)),
            )?),
            SmpWrite::VlArb {
                node,
                port,
                block,
                old,
                new,
            } => ops.push(self.qos_op(
                i,
                *node,
                QosAt::VlArb(*port, *block),
                (
                    &smp::encode_vlarb(&vlarb_block(old)),
                    &smp::encode_vlarb(&vlarb_block(new)),
                ),
            )?),
        }
        Ok(())
    }

    /// A forwarding table block of a switch of the plan's wire view (LFT, MFT): the whole
    /// 64-byte payload before and after.
    fn table_op(
        &self,
        step: usize,
        sw: Guid,
        (attr, modifier): (Attr, u32),
        (old, new): (&Payload, &Payload),
        what: String,
    ) -> Result<Op, ApplyError> {
        self.known(sw)?;
        if !self.switch(sw) {
            return Err(ApplyError::Unaddressable(format!(
                "{sw} is not a switch on the fabric"
            )));
        }
        Ok(Op {
            step,
            node: sw,
            port: None,
            target: Target {
                path: self.path(sw, None)?,
                attr,
                modifier,
            },
            after: *new,
            expect: Some(*old),
            lid: None,
            top: None,
            what,
            hidden: false,
        })
    }

    /// An SL→VL table or VL arbitration block of a node of the plan's wire view: of a switch,
    /// by its modifier (ports in it); of an end node, by directed route to the port, the
    /// modifier's port fields 0 (as OpenSM sends it: the table of the port the SMP enters).
    fn qos_op(
        &self,
        step: usize,
        node: Guid,
        at: QosAt,
        (old, new): (&Payload, &Payload),
    ) -> Result<Op, ApplyError> {
        self.known(node)?;
        let sw = self.switch(node);
        let ports = self.d.nodes.get(&node).map_or(0, |f| f.info.num_ports);
        let no_port = |p: u8| ApplyError::Unaddressable(format!("{node} has no port {p}"));
        let (attr, modifier, port, what) = match at {
            QosAt::Sl2vl(i, o) if sw => {
                if let Some(p) = [i, o].into_iter().find(|&p| p > ports) {
                    return Err(no_port(p));
                }
                (
                    Attr::SlToVl,
                    smp::sl2vl_modifier(i, o),
                    None,
                    format!("switch {node} SL→VL input {i} output {o}"),
                )
            }
            QosAt::Sl2vl(i, o) => {
                if i != 0 {
                    return Err(ApplyError::Invalid(format!(
                        "an SL→VL write to end node {node} names input port {i}: an end \
                         node's table is its port's own (input 0, output the port)"
                    )));
                }
                (Attr::SlToVl, 0, Some(o), format!("{node} port {o} SL→VL"))
            }
            QosAt::VlArb(p, block) if sw => {
                if p > ports {
                    return Err(no_port(p));
                }
                (
                    Attr::VlArb,
                    smp::vlarb_modifier(block, p),
                    None,
                    format!(
                        "switch {node} port {p} VL arbitration block {block} ({})",
                        weft_plan::qos::block_range(block)
                    ),
                )
            }
            QosAt::VlArb(p, block) => (
                Attr::VlArb,
                smp::vlarb_modifier(block, 0),
                Some(p),
                format!(
                    "{node} port {p} VL arbitration block {block} ({})",
                    weft_plan::qos::block_range(block)
                ),
            ),
        };
        Ok(Op {
            step,
            node,
            port,
            target: Target {
                path: self.path(node, port)?,
                attr,
                modifier,
            },
            after: *new,
            expect: Some(*old),
            lid: None,
            top: None,
            what,
            hidden: false,
        })
    }

    /// A `vport` write of step `i`: the VF's LID (a PortInfo) and its P_Keys, onto `ops`.
    fn vport_ops(&self, i: usize, w: &SmpWrite, ops: &mut Vec<Op>) -> Result<(), ApplyError> {
        let SmpWrite::Vport {
            node,
            port,
            vf,
            guid,
            old_lid,
            new_lid,
            old_pkeys,
            new_pkeys,
        } = w
        else {
            return Ok(());
        };
        let id = VfId {
            host: *node,
            port: PortNum(*port),
            vf: *vf,
            guid: *guid,
        };
        let at = self
            .d
            .vf_at(&self.vf_ports, &id, self.vfs)
            .map_err(|e| match e {
                VfError::NotFound { .. } => ApplyError::Unsupported(format!(
                    "writing {e} (a vSwitch shown as a switch with one adapter per \
                         VF is written by directed route; vendor vPort attributes are \
                         not built)"
                )),
                e => ApplyError::Unaddressable(e.to_string()),
            })?;
        // A PortInfo is compared by its LID only (see `same`); no LID reads 0.
        let lid_info = |lid: &Option<u16>| smp::port_lid_write(&[0; PAYLOAD], lid.unwrap_or(0));
        ops.push(Op {
            step: i,
            node: at.node,
            port: Some(at.port),
            target: Target {
                path: at.path.clone(),
                attr: Attr::PortInfo,
                modifier: at.info_modifier,
            },
            after: lid_info(new_lid),
            expect: Some(lid_info(old_lid)),
            lid: Some(new_lid.unwrap_or(0)),
            top: None,
            what: format!("{node} port {port} VF {vf} LID"),
            hidden: false,
        });
        ops.push(Op {
            step: i,
            node: at.node,
            port: Some(at.port),
            target: Target {
                path: at.path,
                attr: Attr::PKeyTable,
                modifier: at.keys_modifier,
            },
            after: pkey_payload(new_pkeys),
            expect: Some(pkey_payload(old_pkeys)),
            lid: None,
            top: None,
            what: format!("{node} port {port} VF {vf} P_Keys"),
            hidden: false,
        });
        Ok(())
    }
}

/// Where a QoS write goes: an SL→VL table (input, output port) or a VL arbitration block
/// (port, block).
#[derive(Clone, Copy, Debug)]
pub(super) enum QosAt {
    Sl2vl(u8, u8),
    VlArb(u8, u8),
}

/// Compares what a Get returned with what was meant, by the fields weft writes: a PortInfo by
/// its LID, a SwitchInfo by LinearFDBTop and MulticastFDBTop (the rest of both holds state a
/// device changes on its own: PortStateChange, counters), an SLtoVLMappingTable by its 16 VLs
/// and a VLArbitrationTable block by its 32 entries (the rest of their payloads is reserved).
pub(super) fn same(target: &Target, got: &Payload, want: &Payload) -> bool {
    match target.attr {
        Attr::SlToVl => smp::decode_sl2vl(got) == smp::decode_sl2vl(want),
        Attr::VlArb => smp::decode_vlarb(got) == smp::decode_vlarb(want),
        Attr::PortInfo => PortInfo::decode(got).lid == PortInfo::decode(want).lid,
        Attr::SwitchInfo => {
            let (g, w) = (SwitchInfo::decode(got), SwitchInfo::decode(want));
            (g.linear_fdb_top, g.multicast_fdb_top) == (w.linear_fdb_top, w.multicast_fdb_top)
        }
        _ => got == want,
    }
}
