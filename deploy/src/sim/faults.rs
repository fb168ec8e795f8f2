//! The faults the `sim` fabric injects ([`Fault`]: what goes wrong, at which Set) and their
//! text, `KIND@N`, as `weft apply --inject` takes it ([`Injected`], which also names the
//! journal's faults).

use super::STATUS_INVALID;
use crate::journal::JournalFault;
use std::str::FromStr;

/// What goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The Set and the next `times - 1` sends of the same SMP are lost: nothing lands,
    /// nothing answers.
    Drop {
        /// Sends lost.
        times: u32,
    },
    /// The Set lands but its response (and those of the next `times - 1` sends of the same
    /// SMP) come after the timeout.
    Delay {
        /// Responses lost.
        times: u32,
    },
    /// The Set is refused with this MAD status; nothing lands.
    Reject {
        /// The status.
        status: u16,
    },
    /// The Set lands, but the next Get of the same attribute reads back wrong (one bit of
    /// what was written).
    CorruptReadback,
    /// The writer dies before this Set goes out: every SMP from here on fails.
    Crash,
}

/// A fault and the Set it strikes (0: the first Set the fabric receives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Which Set.
    pub at_set: usize,
    /// What happens.
    pub kind: FaultKind,
}

/// Text that is not a fault: what [`Fault::from_str`] and [`Injected::from_str`] refuse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "write KIND@N, KIND one of drop, drop-all, delay, delay-all, reject, corrupt, crash, journal, \
     journal-full"
)]
pub struct FaultSyntax;

impl weft_fabric::code::Coded for FaultSyntax {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        "weft::deploy::fault_syntax"
    }
}

impl FromStr for FaultKind {
    type Err = FaultSyntax;

    /// `drop`, `delay` (one send), `drop-all`, `delay-all` (every send), `reject` (status
    /// [`STATUS_INVALID`]), `corrupt`, `crash`.
    fn from_str(s: &str) -> Result<FaultKind, FaultSyntax> {
        Ok(match s {
            "drop" => FaultKind::Drop { times: 1 },
            "drop-all" => FaultKind::Drop { times: u32::MAX },
            "delay" => FaultKind::Delay { times: 1 },
            "delay-all" => FaultKind::Delay { times: u32::MAX },
            "reject" => FaultKind::Reject {
                status: STATUS_INVALID,
            },
            "corrupt" => FaultKind::CorruptReadback,
            "crash" => FaultKind::Crash,
            _ => return Err(FaultSyntax),
        })
    }
}

impl FromStr for Fault {
    type Err = FaultSyntax;

    /// `KIND@N`: [`FaultKind`]'s text, struck at Set `N` (from 0).
    fn from_str(s: &str) -> Result<Fault, FaultSyntax> {
        match s.parse()? {
            Injected::Smp(f) => Ok(f),
            Injected::Journal(_) => Err(FaultSyntax),
        }
    }
}

/// A fault `weft apply --inject` asks for: one struck by an SMP Set, or by a journal write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// A Set of the `sim` fabric goes wrong.
    Smp(Fault),
    /// A write of the journal fails as a full disk does.
    Journal(JournalFault),
}

impl FromStr for Injected {
    type Err = FaultSyntax;

    /// `KIND@N`: a [`Fault`], or `journal@N` (write `N` of the journal fails) or
    /// `journal-full@N` (write `N` and every one after it).
    fn from_str(s: &str) -> Result<Injected, FaultSyntax> {
        let (kind, at) = s.split_once('@').ok_or(FaultSyntax)?;
        let at: usize = at.parse().map_err(|_| FaultSyntax)?;
        Ok(match kind {
            "journal" | "journal-full" => Injected::Journal(JournalFault {
                at,
                lasting: kind == "journal-full",
            }),
            k => Injected::Smp(Fault {
                at_set: at,
                kind: k.parse()?,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_kind_reads_from_its_text() {
        let smp = |at_set, kind| Ok(Injected::Smp(Fault { at_set, kind }));
        assert_eq!("drop@0".parse(), smp(0, FaultKind::Drop { times: 1 }));
        assert_eq!(
            "drop-all@3".parse(),
            smp(3, FaultKind::Drop { times: u32::MAX })
        );
        assert_eq!("delay@1".parse(), smp(1, FaultKind::Delay { times: 1 }));
        assert_eq!(
            "delay-all@2".parse(),
            smp(2, FaultKind::Delay { times: u32::MAX })
        );
        assert_eq!(
            "reject@4".parse(),
            smp(
                4,
                FaultKind::Reject {
                    status: STATUS_INVALID
                }
            )
        );
        assert_eq!("corrupt@5".parse(), smp(5, FaultKind::CorruptReadback));
        assert_eq!("crash@6".parse(), smp(6, FaultKind::Crash));
        let journal = |at, lasting| Ok(Injected::Journal(JournalFault { at, lasting }));
        assert_eq!("journal@7".parse(), journal(7, false));
        assert_eq!("journal-full@8".parse(), journal(8, true));
        assert_eq!(
            "crash@6".parse(),
            Ok(Fault {
                at_set: 6,
                kind: FaultKind::Crash
            })
        );
        assert_eq!("journal@7".parse::<Fault>(), Err(FaultSyntax));
        for bad in [
            "", "drop", "drop@", "drop@-1", "drop@x", "@1", "lose@1", "Drop@1",
        ] {
            assert_eq!(bad.parse::<Injected>(), Err(FaultSyntax), "{bad:?}");
        }
    }
}
