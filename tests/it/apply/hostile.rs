//! `weft apply` against a fabric that answers its own way: lies in every field of the
//! discovery answers read or refused, a fabric without end refused.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use super::*;

/// A fabric that answers SMPs its own way: `lie` sees every Get (target and what the sim
/// fabric answered) and says what goes back instead.
pub(super) struct Hostile<F> {
    pub(super) sim: SimFabric,
    pub(super) lie: F,
}

pub(super) type Answer = Result<weft_deploy::Payload, weft_deploy::SmpError>;

impl<F: FnMut(&weft_deploy::transport::Target, Answer) -> Answer> weft_deploy::Transport
    for Hostile<F>
{
    fn get(&mut self, target: &weft_deploy::transport::Target) -> Answer {
        let a = self.sim.get(target);
        (self.lie)(target, a)
    }
    fn set(
        &mut self,
        target: &weft_deploy::transport::Target,
        data: &weft_deploy::Payload,
    ) -> Answer {
        self.sim.set(target, data)
    }
}

/// What discovery, audit (with the state it reads made valid and verified) and apply make of
/// a hostile fabric: each ends, with a typed error or an answer.
fn against<F: FnMut(&weft_deploy::transport::Target, Answer) -> Answer + Clone>(
    name: &str,
    lie: F,
) {
    let (start, _, plan) = link_failure();
    let sm = sm_port(&start);
    let hostile = || Hostile {
        sim: SimFabric::new(&start, sm).unwrap(),
        lie: lie.clone(),
    };
    let _ = weft_deploy::discover(&mut hostile());
    if let Ok(a) = weft_deploy::audit::audit(&mut hostile(), name) {
        if let Ok(v) = ValidState::new(a.state) {
            let _ = weft_verifier::verify(&v, &weft_verifier::Options::default());
        }
    }
    let dir = tmp(name);
    let mut t = hostile();
    match apply(&mut t, &plan, &options(&dir), &mut |_| {}) {
        Ok(r) => assert_eq!(r.state, Final::New, "{name}: {r:?}"),
        Err(e) => assert_eq!(t.sim.counts().sets, 0, "{name}: {e}"),
    }
}

pub(super) fn node_info(
    target: &weft_deploy::transport::Target,
    a: Answer,
    edit: impl FnOnce(&mut weft_deploy::smp::NodeInfo),
) -> Answer {
    if target.attr != weft_deploy::Attr::NodeInfo {
        return a;
    }
    let mut i = weft_deploy::smp::NodeInfo::decode(&a?);
    edit(&mut i);
    Ok(i.encode())
}

/// Odd answers from the fabric: discovery, audit and apply end with a typed error or a
/// report, never a panic, never a write to a fabric that is not the plan's.
#[test]
fn a_hostile_fabric_is_read_or_refused() {
    use weft_deploy::smp::{NodeType, PortInfo, SwitchInfo};
    use weft_deploy::Attr;
    let deep = |t: &weft_deploy::transport::Target| t.path.0.len() == 2;
    against("ports-0", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Switch {
                i.num_ports = 0;
            }
        })
    });
    against("ports-255", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Switch {
                i.num_ports = 255;
            }
        })
    });
    against("guid-0", move |t, a| node_info(t, a, |i| i.node_guid = 0));
    against("same-guid", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Switch {
                i.node_guid = 0x77;
            }
        })
    });
    against("switch-then-ca", move |t, a| {
        node_info(t, a, |i| {
            if deep(t) {
                i.node_type = NodeType::Ca;
            }
        })
    });
    against("ca-a-switch", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Ca && !t.path.0.is_empty() {
                i.node_type = NodeType::Switch;
            }
        })
    });
    against("local-port-200", move |t, a| {
        node_info(t, a, |i| i.local_port = 200)
    });
    against("local-port-0", move |t, a| {
        node_info(t, a, |i| i.local_port = 0)
    });
    against("node-type-9", move |t, a| {
        node_info(t, a, |i| {
            if deep(t) {
                i.node_type = NodeType::Other(9);
            }
        })
    });
    against("top-ffff", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::SwitchInfo {
            SwitchInfo {
                linear_fdb_top: 0xffff,
                ..SwitchInfo::decode(&p)
            }
            .encode_into(&mut p);
        }
        if t.attr == Attr::Lft && t.modifier >= 768 {
            p = [3; 64];
        }
        Ok(p)
    });
    against("lft-beyond-cap", move |t, a| match (t.attr, a) {
        (Attr::Lft, Err(_)) => Ok([1; 64]),
        (Attr::SwitchInfo, Ok(mut p)) => {
            p[6..8].copy_from_slice(&0xffffu16.to_be_bytes());
            Ok(p)
        }
        (_, a) => a,
    });
    against("lid-ffff", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[16..18].copy_from_slice(&0xffffu16.to_be_bytes());
        }
        Ok(p)
    });
    against("lmc-7", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[34] |= 7 << 3;
        }
        Ok(p)
    });
    against("port-info-port-99", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[28] = 99;
            let _ = PortInfo::decode(&p);
        }
        Ok(p)
    });
    against("all-down", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[32] = 1;
            p[33] = 2 << 4;
        }
        Ok(p)
    });
    against("descriptions", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::NodeDescription {
            p = [0xff; 64];
        }
        Ok(p)
    });
}

/// A fabric that never ends: every switch port leads to another switch, new each time (its
/// GUID made from the route). Discovery gives up with a typed error instead of walking
/// forever.
#[test]
fn an_endless_fabric_is_refused() {
    use weft_deploy::smp::{NodeInfo, NodeType};
    use weft_deploy::Attr;
    let (start, _, _) = link_failure();
    let sm = sm_port(&start);
    let mut t = Hostile {
        sim: SimFabric::new(&start, sm).unwrap(),
        lie: |t: &weft_deploy::transport::Target, a: Answer| {
            if t.path.0.is_empty() {
                return a;
            }
            let mut p = [0u8; 64];
            match t.attr {
                Attr::NodeInfo => {
                    let guid = t.path.0.iter().fold(0x1000u64, |g, &h| {
                        g.wrapping_mul(31).wrapping_add(u64::from(h))
                    });
                    p = NodeInfo {
                        node_type: NodeType::Switch,
                        num_ports: 4,
                        system_guid: guid,
                        node_guid: guid,
                        port_guid: guid,
                        partition_cap: 8,
                        local_port: 1,
                    }
                    .encode();
                }
                Attr::PortInfo => {
                    p[32] = 4;
                    p[33] = 5 << 4;
                }
                _ => {}
            }
            Ok(p)
        },
    };
    let e = weft_deploy::discover(&mut t).unwrap_err();
    assert!(matches!(e, weft_deploy::DiscoverError::TooMany(_)), "{e}");
}
