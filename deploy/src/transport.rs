//! The `Transport`: SMP Get and Set by directed route, whatever carries them (the in-process
//! [`sim`](crate::sim) fabric, real MADs through libibmad), and the typed reads and writes
//! built on it.

use crate::smp::{self, Attr, DrPath, NodeInfo, Payload, PortInfo, SwitchInfo};
use std::fmt;

/// One SMP a transport sends: what and where.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    /// The directed route to the node.
    pub path: DrPath,
    /// The attribute.
    pub attr: Attr,
    /// Its modifier.
    pub modifier: u32,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (modifier {:#x}) at {}",
            self.attr, self.modifier, self.path
        )
    }
}

/// Why an SMP failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SmpError {
    /// No response within the timeout, after every retry.
    #[error("{target}: no response after {tries} tries")]
    Timeout {
        /// What was sent.
        target: Target,
        /// How many times.
        tries: u32,
    },
    /// The node answered with a non-zero MAD status.
    #[error("{target}: rejected with MAD status {status:#06x}{}", status_text(*status))]
    Status {
        /// What was sent.
        target: Target,
        /// The status field.
        status: u16,
    },
    /// The directed route leads nowhere (a port with no link, or past a node that is not a
    /// switch).
    #[error("{target}: the directed route leads nowhere")]
    NoRoute {
        /// What was sent.
        target: Target,
    },
    /// The transport itself failed (the device, the library).
    #[error("{0}")]
    Transport(String),
    /// The simulated writer crashed (fault injection only).
    #[error("the writer crashed (injected after {after} writes)")]
    Crashed {
        /// Writes that had gone out.
        after: usize,
    },
}

fn status_text(status: u16) -> &'static str {
    match status & 0x1c {
        0x04 => " (bad version)",
        0x08 => " (method not supported)",
        0x0c => " (method/attribute not supported)",
        0x1c => " (invalid attribute or modifier)",
        _ if status & 1 == 1 => " (busy)",
        _ => "",
    }
}

/// SMP Get and Set by directed route.
///
/// A transport answers one SMP at a time; [`Transport::set_all`] sends a batch whose SMPs may
/// land in any order (a step of a plan), and its default sends them one after another.
pub trait Transport {
    /// Gets `attr` at `path`.
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError>;

    /// Sets `attr` at `path` to `data`; the response's payload (what the node now holds).
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError>;

    /// Sets every `(target, data)`, in any order; one result per SMP, in the batch's order.
    fn set_all(&mut self, batch: &[(Target, Payload)]) -> Vec<Result<Payload, SmpError>> {
        batch.iter().map(|(t, d)| self.set(t, d)).collect()
    }

    /// Gets every target, in any order; one result per SMP, in the batch's order.
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
        batch.iter().map(|t| self.get(t)).collect()
    }
}

impl<T: Transport + ?Sized> Transport for &mut T {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        (**self).get(target)
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        (**self).set(target, data)
    }
    fn set_all(&mut self, batch: &[(Target, Payload)]) -> Vec<Result<Payload, SmpError>> {
        (**self).set_all(batch)
    }
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
        (**self).get_all(batch)
    }
}

/// Typed reads and writes on any transport.
pub trait TransportExt: Transport {
    /// NodeInfo at `path`.
    fn node_info(&mut self, path: &DrPath) -> Result<NodeInfo, SmpError> {
        self.get(&Target {
            path: path.clone(),
            attr: Attr::NodeInfo,
            modifier: 0,
        })
        .map(|p| NodeInfo::decode(&p))
    }

    /// PortInfo of `port` at `path` (with the raw payload, to write back).
    fn port_info(&mut self, path: &DrPath, port: u8) -> Result<(PortInfo, Payload), SmpError> {
        self.get(&Target {
            path: path.clone(),
            attr: Attr::PortInfo,
            modifier: u32::from(port),
        })
        .map(|p| (PortInfo::decode(&p), p))
    }

    /// SwitchInfo at `path` (with the raw payload).
    fn switch_info(&mut self, path: &DrPath) -> Result<(SwitchInfo, Payload), SmpError> {
        self.get(&Target {
            path: path.clone(),
            attr: Attr::SwitchInfo,
            modifier: 0,
        })
        .map(|p| (SwitchInfo::decode(&p), p))
    }

    /// LFT block `block` at `path`.
    fn lft_block(&mut self, path: &DrPath, block: u16) -> Result<Payload, SmpError> {
        self.get(&Target {
            path: path.clone(),
            attr: Attr::Lft,
            modifier: u32::from(block),
        })
    }

    /// P_Key block `block` of `port` (a switch port, or `None` on a CA: the port the path
    /// enters by) at `path`.
    fn pkey_block(
        &mut self,
        path: &DrPath,
        switch_port: Option<u8>,
        block: u16,
    ) -> Result<[u16; smp::PKEY_BLOCK], SmpError> {
        self.get(&Target {
            path: path.clone(),
            attr: Attr::PKeyTable,
            modifier: smp::pkey_modifier(block, switch_port),
        })
        .map(|p| smp::decode_pkeys(&p))
    }
}

impl<T: Transport + ?Sized> TransportExt for T {}

/// A transport that sends each SMP again after a timeout, up to `tries` times in all.
#[derive(Debug)]
pub struct Retrying<T> {
    /// The transport underneath.
    pub inner: T,
    /// Tries per SMP (at least 1).
    pub tries: u32,
}

impl<T: Transport> Retrying<T> {
    fn again<R>(
        &mut self,
        mut once: impl FnMut(&mut T) -> Result<R, SmpError>,
    ) -> Result<R, SmpError> {
        let mut n = 1;
        loop {
            match once(&mut self.inner) {
                Err(SmpError::Timeout { target, .. }) if n >= self.tries.max(1) => {
                    return Err(SmpError::Timeout { target, tries: n })
                }
                Err(SmpError::Timeout { .. }) => n += 1,
                r => return r,
            }
        }
    }
}

impl<T: Transport> Transport for Retrying<T> {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        self.again(|t| t.get(target))
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        self.again(|t| t.set(target, data))
    }
    /// The batch goes out through the transport underneath; what timed out is sent again,
    /// one by one.
    fn set_all(&mut self, batch: &[(Target, Payload)]) -> Vec<Result<Payload, SmpError>> {
        let mut out = self.inner.set_all(batch);
        for (r, (t, d)) in out.iter_mut().zip(batch) {
            if matches!(r, Err(SmpError::Timeout { .. })) && self.tries > 1 {
                let mut again = Retrying {
                    inner: &mut self.inner,
                    tries: self.tries - 1,
                };
                *r = again.set(t, d).map_err(|e| match e {
                    SmpError::Timeout { target, tries } => SmpError::Timeout {
                        target,
                        tries: tries + 1,
                    },
                    e => e,
                });
            }
        }
        out
    }
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
        let mut out = self.inner.get_all(batch);
        for (r, t) in out.iter_mut().zip(batch) {
            if matches!(r, Err(SmpError::Timeout { .. })) && self.tries > 1 {
                let mut again = Retrying {
                    inner: &mut self.inner,
                    tries: self.tries - 1,
                };
                *r = again.get(t);
            }
        }
        out
    }
}

/// A transport that waits `gap` before every Set: a rate limit for fabrics (or management
/// networks) that must not see SMPs at full speed.
#[derive(Debug)]
pub struct Paced<T> {
    /// The transport underneath.
    pub inner: T,
    /// The wait before each Set.
    pub gap: std::time::Duration,
}

impl<T: Transport> Transport for Paced<T> {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        self.inner.get(target)
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        if !self.gap.is_zero() {
            std::thread::sleep(self.gap);
        }
        self.inner.set(target, data)
    }
    /// Without a gap the batch goes out as the transport underneath sends batches; with one,
    /// one Set at a time.
    fn set_all(&mut self, batch: &[(Target, Payload)]) -> Vec<Result<Payload, SmpError>> {
        if self.gap.is_zero() {
            self.inner.set_all(batch)
        } else {
            batch.iter().map(|(t, d)| self.set(t, d)).collect()
        }
    }
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
        self.inner.get_all(batch)
    }
}
