//! Where the sources attach: per switch, the end ports that inject into it.

use super::Dest;
use super::Net;
use super::PortLink;
use super::Source;
use weft_fabric::Sl;

/// Sources grouped for per-destination work that does not grow with the number of end nodes:
/// end-node ports by the switch port they enter through, with their injection VLs.
pub(crate) struct Attach {
    /// Path SLs depend on the destination only (no per-pair entries).
    pub uniform: bool,
    /// Path SLs depend on the destination and the source's switch only (no per-port
    /// entries): the sources at a switch send alike.
    pub grouped: bool,
    /// Per switch index: `(input port, source index)` of every end-node source cabled to it,
    /// and `(0, index)` for the switch's own traffic.
    pub by_switch: Vec<Vec<(u8, u32)>>,
    /// Per switch index: the SLs every attached source injects on an operational VL.
    pub valid_and: Vec<u16>,
    /// Per source index: the VL each SL is injected on (end nodes only).
    pub inj: Vec<[u8; 16]>,
    /// Switch sources (indices into the source list).
    pub switch_sources: Vec<u32>,
    /// End-node sources not cabled to a switch (handled one by one).
    pub loose: Vec<u32>,
    /// Every hop of every route is on VL 0 when its SLs are in [`Attach::vl0_sls`]: path SLs
    /// by destination only, no loose sources, no switch with SL2VL rows.
    pub one_vl: bool,
    /// The SLs every end-node source injects on VL 0.
    pub vl0_sls: u16,
    /// The one SL→VL map every hop uses, when there is one: every switch has no rows and the
    /// same map for all port pairs, every end-node source injects by it, no source is loose,
    /// and path SLs are by switch or destination. Then a route keeps one VL end to end.
    pub one_map: Option<[u8; 16]>,
    /// Every source port `(node, port)`, sorted (whether a destination's owner sends).
    pub sending: Vec<(u32, u8)>,
}

impl Attach {
    /// The routes toward `d` when path SLs depend on the destination only (`sls`, its SLs):
    /// one per source but its owner, per SL.
    pub(crate) fn routes_by_destination(&self, d: Dest, sls: u16) -> u64 {
        let owner_sends = self.sending.binary_search(&d.owner).is_ok();
        (self.sending.len() as u64 - u64::from(owner_sends)) * u64::from(sls.count_ones())
    }
}

impl Net<'_> {
    pub(crate) fn attach(&self, sources: &[Source]) -> Attach {
        let s = self.switches.len();
        let mut a = Attach {
            uniform: self.st.path_sl.destination_only(),
            grouped: self.st.path_sl.by_source.is_empty(),
            by_switch: vec![Vec::new(); s],
            valid_and: vec![u16::MAX; s],
            inj: vec![[0; 16]; sources.len()],
            switch_sources: Vec::new(),
            loose: Vec::new(),
            one_vl: false,
            vl0_sls: u16::MAX,
            one_map: None,
            sending: sources.iter().map(|s| (s.node, s.port)).collect(),
        };
        a.sending.sort_unstable();
        for (j, src) in sources.iter().enumerate() {
            if self.is_switch(src.node) {
                a.switch_sources.push(j as u32);
                let k = self.switch_of(src.node);
                if let Some(list) = a.by_switch.get_mut(k as usize) {
                    list.push((0, j as u32));
                }
                continue;
            }
            let mut valid = 0u16;
            for sl in 0..16u8 {
                let vl = self
                    .st
                    .injection_vl(self.port_ref(src.node, src.port), Sl(sl))
                    .0;
                if let Some(slot) = a.inj.get_mut(j).and_then(|t| t.get_mut(usize::from(sl))) {
                    *slot = vl;
                }
                if self.vl_ok(src.node, src.port, vl).is_ok() {
                    valid |= 1 << sl;
                }
                if vl != 0 {
                    a.vl0_sls &= !(1 << sl);
                }
            }
            match self.port_link(src.node, src.port) {
                Some(PortLink::Up { node, port }) if self.is_switch(node) => {
                    let k = self.switch_of(node);
                    if let (Some(list), Some(v)) = (
                        a.by_switch.get_mut(k as usize),
                        a.valid_and.get_mut(k as usize),
                    ) {
                        list.push((port, j as u32));
                        *v &= valid;
                    } else {
                        a.loose.push(j as u32);
                    }
                }
                _ => a.loose.push(j as u32),
            }
        }
        // One map for every hop?
        let first = self
            .switches
            .first()
            .and_then(|&x| self.sw.get(x as usize).copied().flatten())
            .and_then(|s| s.sl2vl_all);
        let same_switches = first.is_some()
            && self
                .switches
                .iter()
                .map(|&x| self.sw.get(x as usize).copied().flatten())
                .all(|s| s.is_some_and(|s| s.sl2vl.is_empty() && s.sl2vl_all == first));
        if let (Some(m), true) = (first, same_switches) {
            let injected_alike = sources
                .iter()
                .enumerate()
                .filter(|(_, s)| !self.is_switch(s.node))
                .all(|(j, _)| a.inj.get(j) == Some(&m));
            if injected_alike && a.loose.is_empty() && a.grouped {
                a.one_map = Some(m);
            }
        }
        a.one_vl = a.uniform
            && a.loose.is_empty()
            && self
                .switches
                .iter()
                .all(|&x| self.plain.get(x as usize).copied().unwrap_or(false));
        a
    }
}
