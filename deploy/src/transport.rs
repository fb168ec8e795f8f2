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

impl weft_fabric::code::Coded for SmpError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            SmpError::Timeout { .. } => "weft::deploy::smp_timeout",
            SmpError::Status { .. } => "weft::deploy::smp_status",
            SmpError::NoRoute { .. } => "weft::deploy::smp_no_route",
            SmpError::Transport(_) => "weft::deploy::transport",
            SmpError::Crashed { .. } => "weft::deploy::crashed",
        }
    }
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

/// A transport that counts the SMPs asked of it (each one of a batch, a resend underneath not
/// again): what a reading took, for the reports of `weft apply` and `weft audit`.
#[derive(Debug)]
pub struct Counted<T> {
    /// The transport underneath.
    pub inner: T,
    gets: usize,
    sets: usize,
}

impl<T: Transport> Counted<T> {
    /// Counts what goes through to `inner`, from 0.
    pub fn new(inner: T) -> Counted<T> {
        Counted {
            inner,
            gets: 0,
            sets: 0,
        }
    }

    /// Gets asked so far.
    pub fn gets(&self) -> usize {
        self.gets
    }

    /// Sets asked so far.
    pub fn sets(&self) -> usize {
        self.sets
    }
}

impl<T: Transport> Transport for Counted<T> {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        self.gets += 1;
        self.inner.get(target)
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        self.sets += 1;
        self.inner.set(target, data)
    }
    /// The batch goes out as the transport underneath sends batches.
    fn set_all(&mut self, batch: &[(Target, Payload)]) -> Vec<Result<Payload, SmpError>> {
        self.sets += batch.len();
        self.inner.set_all(batch)
    }
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
        self.gets += batch.len();
        self.inner.get_all(batch)
    }
}

/// A transport that sends each SMP again after a timeout, up to `tries` times in all.
#[derive(Debug)]
pub struct Retrying<T> {
    /// The transport underneath.
    pub inner: T,
    /// Tries per SMP (at least 1).
    pub tries: u32,
}

impl<T: Transport> Retrying<T> {
    /// Calls `once` until it answers or `tries` calls in all have timed out, `before` (calls
    /// made already, and the sends their timeouts reported) counted in both. A timeout
    /// reports every send it took: those of the transport underneath, which may resend on
    /// its own, added up.
    fn again<R>(
        &mut self,
        before: (u32, u32),
        mut once: impl FnMut(&mut T) -> Result<R, SmpError>,
    ) -> Result<R, SmpError> {
        let (mut calls, mut sent) = before;
        loop {
            match once(&mut self.inner) {
                Err(SmpError::Timeout { target, tries }) => {
                    calls += 1;
                    sent = sent.saturating_add(tries);
                    if calls >= self.tries.max(1) {
                        return Err(SmpError::Timeout {
                            target,
                            tries: sent,
                        });
                    }
                }
                r => return r,
            }
        }
    }

    /// After a batch: each SMP that timed out sent again, one by one (`send` sends one).
    fn again_each<B>(
        &mut self,
        out: &mut [Result<Payload, SmpError>],
        batch: &[B],
        mut send: impl FnMut(&mut T, &B) -> Result<Payload, SmpError>,
    ) {
        for (r, b) in out.iter_mut().zip(batch) {
            if let Err(SmpError::Timeout { tries, .. }) = r {
                if self.tries > 1 {
                    let before = (1, *tries);
                    *r = self.again(before, |t| send(t, b));
                }
            }
        }
    }
}

impl<T: Transport> Transport for Retrying<T> {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        self.again((0, 0), |t| t.get(target))
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        self.again((0, 0), |t| t.set(target, data))
    }
    /// The batch goes out through the transport underneath; what timed out is sent again,
    /// one by one.
    fn set_all(&mut self, batch: &[(Target, Payload)]) -> Vec<Result<Payload, SmpError>> {
        let mut out = self.inner.set_all(batch);
        self.again_each(&mut out, batch, |t, (target, data)| t.set(target, data));
        out
    }
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
        let mut out = self.inner.get_all(batch);
        self.again_each(&mut out, batch, |t, target| t.get(target));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Never answers; each call reports that it sent the SMP 4 times (as libibmad, resending
    /// on its own, does), and counts the calls.
    struct Silent(u32);

    impl Transport for Silent {
        fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
            self.0 += 1;
            Err(SmpError::Timeout {
                target: target.clone(),
                tries: 4,
            })
        }
        fn set(&mut self, target: &Target, _: &Payload) -> Result<Payload, SmpError> {
            self.get(target)
        }
    }

    fn tries(r: &Result<Payload, SmpError>) -> u32 {
        match r {
            Err(SmpError::Timeout { tries, .. }) => *tries,
            _ => 0,
        }
    }

    /// Counted counts what is asked of it, batches SMP by SMP, and passes batches on whole.
    #[test]
    fn counted_counts_each_smp_asked() {
        #[derive(Default)]
        struct Batches(Vec<usize>);
        impl Transport for Batches {
            fn get(&mut self, _: &Target) -> Result<Payload, SmpError> {
                self.0.push(1);
                Ok([0; crate::smp::PAYLOAD])
            }
            fn set(&mut self, t: &Target, _: &Payload) -> Result<Payload, SmpError> {
                self.get(t)
            }
            fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
                self.0.push(batch.len());
                batch.iter().map(|_| Ok([0; crate::smp::PAYLOAD])).collect()
            }
        }
        let t = Target {
            path: DrPath::local(),
            attr: Attr::NodeInfo,
            modifier: 0,
        };
        let mut c = Counted::new(Batches::default());
        let _ = c.get(&t);
        let _ = c.get_all(&[t.clone(), t.clone(), t.clone()]);
        let _ = c.set(&t, &[0; crate::smp::PAYLOAD]);
        let _ = c.set_all(&[(t.clone(), [0; crate::smp::PAYLOAD])]);
        assert_eq!((c.gets(), c.sets()), (4, 2));
        assert_eq!(c.inner.0, [1, 3, 1, 1], "the batch of 3 went on whole");
    }

    #[test]
    fn a_timeout_counts_every_send_underneath() {
        let t = Target {
            path: DrPath::local(),
            attr: Attr::NodeInfo,
            modifier: 0,
        };
        for (calls, sent) in [(1, 4), (3, 12)] {
            let mut r = Retrying {
                inner: Silent(0),
                tries: calls,
            };
            assert_eq!(tries(&r.get(&t)), sent);
            assert_eq!(tries(&r.set(&t, &[0; crate::smp::PAYLOAD])), sent);
            let all = r.get_all(&[t.clone(), t.clone()]);
            assert_eq!(all.iter().map(tries).collect::<Vec<_>>(), [sent, sent]);
            let all = r.set_all(&[(t.clone(), [0; crate::smp::PAYLOAD])]);
            assert_eq!(all.iter().map(tries).collect::<Vec<_>>(), [sent]);
            assert_eq!(r.inner.0, 5 * calls, "each SMP called `tries` times");
        }
    }
}
