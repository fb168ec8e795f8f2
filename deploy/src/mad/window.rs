//! The window of SMPs in flight together on one umad port: which SMP goes out next (and under
//! which transaction ID), which response answers which SMP, and when an SMP has timed out.
//!
//! No FFI and no clock here: the caller sends what [`Window::next`] hands out, feeds every
//! MAD it receives to [`Window::receive`] and the time to [`Window::expire`], and waits at
//! most [`Window::wait`] for the next MAD. So the matching can be tested (and property-tested
//! against a fabric that answers out of order, late, twice or not at all) without libibmad.
//!
//! The rules:
//!
//! * At most `width` SMPs are in flight; each goes out at most `tries` times, every time under
//!   a transaction ID (TID) not in flight, and the ID source (libibmad's `mad_trid`) never
//!   repeats one within a process in practice (a 32-bit counter).
//! * A MAD answers an SMP only if the low 32 bits of its TID are those of the SMP's latest
//!   send (umad and the kernel use the high 32 bits for the agent), and its class, attribute
//!   and modifier are the request's. It is then either the response (method GetResp, the
//!   directed-route direction bit set, umad status 0) or the request itself handed back by
//!   umad with a non-zero status (its method the request's; `ETIMEDOUT`: no response came in
//!   time, or ibsim dropped it on the way). Anything else (an unknown or no longer awaited
//!   TID, a second response, a late one to a send already given up on, another attribute) is
//!   dropped: it never settles an SMP.
//! * A send with no answer by its deadline (sent + timeout) is a failed try, as is a
//!   handed-back request. A failed try goes out again at once under a fresh TID, until the
//!   tries run out: then the SMP is a [`Outcome::Timeout`], or [`Outcome::Transport`] if its
//!   last try was handed back with a status other than `ETIMEDOUT` (as libibmad reports it).
//! * A response with a non-zero MAD status settles the SMP as [`Outcome::Status`]; it is not
//!   sent again (libibmad does not resend it either).

use crate::smp::{Payload, PAYLOAD};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Linux's `ETIMEDOUT`: the umad status of a request handed back unanswered.
pub(crate) const ETIMEDOUT: i32 = 110;

/// `IB_SMI_DIRECT_CLASS`.
const DIRECT_CLASS: u8 = 0x81;
/// `IB_MAD_METHOD_GET_RESPONSE` (the response bit included).
const GET_RESPONSE: u8 = 0x81;
/// The directed-route direction bit (the top bit of the status word): set on the way back.
const DIRECTION: u16 = 0x8000;
/// Where the SMP data starts in a MAD (`IB_SMP_DATA_OFFS`).
const DATA: usize = 64;

/// What an SMP's answer must carry, from its request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Expect {
    /// The request's method: `0x01` Get, `0x02` Set.
    pub method: u8,
    /// The attribute ID.
    pub attr: u16,
    /// The attribute modifier.
    pub modifier: u32,
}

/// How an SMP ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The response's SMP data.
    Answer(Payload),
    /// The response's non-zero status (the 15 bits without the direction bit).
    Status(u16),
    /// No answer to any of `tries` sends.
    Timeout {
        /// Sends.
        tries: u32,
    },
    /// It could not be sent, its last try was handed back with a status other than
    /// `ETIMEDOUT`, or the port failed while it was in flight.
    Transport(String),
}

/// What [`Window::receive`] made of a MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Received {
    /// It settled SMP `index` (answered, rejected, or out of tries).
    Settled(usize),
    /// It was a failed try of SMP `index`, which goes out again.
    Again(usize),
    /// It matched nothing awaited and was dropped.
    Dropped,
}

/// One send in flight.
#[derive(Clone, Copy, Debug)]
struct Flight {
    /// The SMP, by its index in the batch.
    index: usize,
    /// When it counts as lost.
    deadline: Instant,
}

/// The window over one batch of SMPs.
#[derive(Debug)]
pub(crate) struct Window {
    /// Per SMP; `None`: never sent (settled when the window was made).
    expect: Vec<Option<Expect>>,
    width: usize,
    tries: u32,
    timeout: Duration,
    /// SMPs to send (again), the next first.
    queue: VecDeque<usize>,
    /// In flight, by the low 32 bits of the TID.
    flights: HashMap<u32, Flight>,
    /// Sends so far, per SMP.
    sent: Vec<u32>,
    outcomes: Vec<Option<Outcome>>,
    /// SMPs not settled yet.
    open: usize,
}

/// A MAD's header fields the matching reads, or `None` if it is too short to be an SMP.
struct Header {
    class: u8,
    method: u8,
    status: u16,
    tid: u32,
    attr: u16,
    modifier: u32,
}

fn be16(mad: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(mad.get(at..at + 2)?.try_into().ok()?))
}

fn be32(mad: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(mad.get(at..at + 4)?.try_into().ok()?))
}

impl Header {
    /// The common MAD header (IBA 13.4.2) and the directed-route status word (14.2.1.2).
    fn parse(mad: &[u8]) -> Option<Header> {
        if mad.len() < DATA + PAYLOAD {
            return None;
        }
        Some(Header {
            class: *mad.get(1)?,
            method: *mad.get(3)?,
            status: be16(mad, 4)?,
            // Bytes 8..16 are the TID; the low 32 bits are the sender's own.
            tid: be32(mad, 12)?,
            attr: be16(mad, 16)?,
            modifier: be32(mad, 20)?,
        })
    }
}

impl Window {
    /// A window of up to `width` SMPs in flight (at least 1) over SMPs that must be answered
    /// as `expect` says, each sent up to `tries` times (at least 1), each send lost after
    /// `timeout`. An `Err` in `expect` is an SMP that cannot be sent: settled at once as
    /// [`Outcome::Transport`] with that text.
    pub(crate) fn new(
        expect: Vec<Result<Expect, String>>,
        width: usize,
        tries: u32,
        timeout: Duration,
    ) -> Window {
        let n = expect.len();
        let mut window = Window {
            expect: Vec::with_capacity(n),
            width: width.max(1),
            tries: tries.max(1),
            timeout,
            queue: VecDeque::with_capacity(n),
            flights: HashMap::new(),
            sent: vec![0; n],
            outcomes: vec![None; n],
            open: 0,
        };
        for (index, e) in expect.into_iter().enumerate() {
            match e {
                Ok(e) => {
                    window.expect.push(Some(e));
                    window.queue.push_back(index);
                    window.open += 1;
                }
                Err(reason) => {
                    window.expect.push(None);
                    if let Some(o) = window.outcomes.get_mut(index) {
                        *o = Some(Outcome::Transport(reason));
                    }
                }
            }
        }
        window
    }

    /// The next SMP to send now and the TID to send it under (drawn from `tid`, skipping 0
    /// and any TID in flight), if the window has room and an SMP waits; it counts as in
    /// flight from `now`.
    pub(crate) fn next(
        &mut self,
        now: Instant,
        mut tid: impl FnMut() -> u32,
    ) -> Option<(usize, u32)> {
        if self.flights.len() >= self.width {
            return None;
        }
        let index = self.queue.pop_front()?;
        let id = loop {
            let id = tid();
            if id != 0 && !self.flights.contains_key(&id) {
                break id;
            }
        };
        self.flights.insert(
            id,
            Flight {
                index,
                deadline: now + self.timeout,
            },
        );
        if let Some(s) = self.sent.get_mut(index) {
            *s += 1;
        }
        Some((index, id))
    }

    /// The send of `tid` (just handed out by [`Window::next`]) failed: its SMP is settled as
    /// [`Outcome::Transport`] with `reason` (libibmad does not resend after a failed send
    /// either).
    pub(crate) fn send_failed(&mut self, tid: u32, reason: String) {
        if let Some(f) = self.flights.remove(&tid) {
            self.settle(f.index, Outcome::Transport(reason));
        }
    }

    /// A MAD received: `umad_status` from the umad header, `mad` the MAD itself (256 bytes).
    pub(crate) fn receive(&mut self, umad_status: i32, mad: &[u8]) -> Received {
        let Some(h) = Header::parse(mad) else {
            return Received::Dropped;
        };
        let Some(&flight) = self.flights.get(&h.tid) else {
            return Received::Dropped;
        };
        let Some(&Some(want)) = self.expect.get(flight.index) else {
            return Received::Dropped;
        };
        if h.class != DIRECT_CLASS || h.attr != want.attr || h.modifier != want.modifier {
            return Received::Dropped;
        }
        if umad_status == 0 {
            if h.method != GET_RESPONSE || h.status & DIRECTION == 0 {
                return Received::Dropped;
            }
            self.flights.remove(&h.tid);
            let status = h.status & !DIRECTION;
            let outcome = if status != 0 {
                Outcome::Status(status)
            } else {
                let mut data = [0u8; PAYLOAD];
                if let Some(d) = mad.get(DATA..DATA + PAYLOAD) {
                    data.copy_from_slice(d);
                }
                Outcome::Answer(data)
            };
            self.settle(flight.index, outcome);
            Received::Settled(flight.index)
        } else {
            // The request handed back: the method is the request's own.
            if h.method != want.method {
                return Received::Dropped;
            }
            self.flights.remove(&h.tid);
            let failure = (umad_status != ETIMEDOUT).then_some(umad_status);
            if self.failed_try(flight.index, failure) {
                Received::Again(flight.index)
            } else {
                Received::Settled(flight.index)
            }
        }
    }

    /// Every send whose deadline is `now` or earlier is a failed try: sent again, or settled
    /// when out of tries.
    pub(crate) fn expire(&mut self, now: Instant) {
        let mut lost: Vec<(u32, Flight)> = self
            .flights
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(&tid, &f)| (tid, f))
            .collect();
        // The earliest first, so resends go out in the order the SMPs went out.
        lost.sort_by_key(|(_, f)| (f.deadline, f.index));
        for (tid, f) in lost.into_iter().rev() {
            self.flights.remove(&tid);
            self.failed_try(f.index, None);
        }
    }

    /// How long to wait for a MAD before the next deadline (zero if one has passed); `None`
    /// when nothing is in flight.
    pub(crate) fn wait(&self, now: Instant) -> Option<Duration> {
        self.flights
            .values()
            .map(|f| f.deadline.saturating_duration_since(now))
            .min()
    }

    /// The port failed: every SMP not settled yet is settled as [`Outcome::Transport`]. What
    /// is in flight is forgotten (an answer to it is dropped as unknown).
    pub(crate) fn abort(&mut self, reason: &str) {
        self.flights.clear();
        self.queue.clear();
        for o in &mut self.outcomes {
            if o.is_none() {
                *o = Some(Outcome::Transport(reason.to_owned()));
            }
        }
        self.open = 0;
    }

    /// Whether every SMP is settled.
    pub(crate) fn done(&self) -> bool {
        self.open == 0
    }

    /// SMPs in flight now.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// One outcome per SMP, in the batch's order (an SMP not settled yet, which
    /// [`Window::done`] rules out, as a transport failure).
    pub(crate) fn outcomes(self) -> Vec<Outcome> {
        self.outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Outcome::Transport("never settled".to_owned())))
            .collect()
    }

    /// A failed try of `index` (`failure`: `None` a timeout, else the umad status): queued
    /// again (first) if it has tries left, else settled. Whether it goes out again.
    fn failed_try(&mut self, index: usize, failure: Option<i32>) -> bool {
        let sent = self.sent.get(index).copied().unwrap_or(self.tries);
        if sent < self.tries {
            self.queue.push_front(index);
            return true;
        }
        let outcome = match failure {
            None => Outcome::Timeout { tries: sent },
            Some(status) => Outcome::Transport(format!(
                "umad handed the SMP back with status {status} ({})",
                std::io::Error::from_raw_os_error(status)
            )),
        };
        self.settle(index, outcome);
        false
    }

    fn settle(&mut self, index: usize, outcome: Outcome) {
        if let Some(o) = self.outcomes.get_mut(index) {
            if o.is_none() {
                *o = Some(outcome);
                self.open -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashSet};

    const GET: u8 = 0x01;
    const SET: u8 = 0x02;
    /// What umad2sim (and the kernel) put in the high 32 bits of a TID: the agent.
    const AGENT: u64 = 0x0003_0000_0000_0000;

    /// A directed-route MAD as IBA 13.4.2 and 14.2.1.2 lay it out.
    fn mad(method: u8, status: u16, tid: u64, attr: u16, modifier: u32, data: &Payload) -> Vec<u8> {
        let mut m = vec![0u8; 256];
        m[0] = 1;
        m[1] = DIRECT_CLASS;
        m[2] = 1;
        m[3] = method;
        m[4..6].copy_from_slice(&status.to_be_bytes());
        m[8..16].copy_from_slice(&tid.to_be_bytes());
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        m[20..24].copy_from_slice(&modifier.to_be_bytes());
        m[64..128].copy_from_slice(data);
        m
    }

    fn expect(method: u8, attr: u16, modifier: u32) -> Result<Expect, String> {
        Ok(Expect {
            method,
            attr,
            modifier,
        })
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_response_is_matched_by_the_low_32_bits_of_its_tid() {
        let t0 = Instant::now();
        let mut w = Window::new(
            vec![expect(GET, 0x19, 3), expect(SET, 0x19, 4)],
            8,
            1,
            ms(100),
        );
        let mut tids = [7u32, 9].into_iter();
        assert_eq!(w.next(t0, || tids.next().unwrap()), Some((0, 7)));
        assert_eq!(w.next(t0, || tids.next().unwrap()), Some((1, 9)));
        assert_eq!(w.next(t0, || 1), None, "nothing left to send");
        let data = [0x5a; PAYLOAD];
        // The second SMP's answer first, with the agent in the high bits.
        let r = mad(GET_RESPONSE, DIRECTION, AGENT | 9, 0x19, 4, &data);
        assert_eq!(w.receive(0, &r), Received::Settled(1));
        // Its duplicate is dropped.
        assert_eq!(w.receive(0, &r), Received::Dropped);
        // The first SMP: the wrong modifier, then no direction bit, then a request, then an
        // unknown TID, are all dropped.
        for bad in [
            mad(GET_RESPONSE, DIRECTION, 7, 0x19, 4, &data),
            mad(GET_RESPONSE, 0, 7, 0x19, 3, &data),
            mad(GET, DIRECTION, 7, 0x19, 3, &data),
            mad(GET_RESPONSE, DIRECTION, 8, 0x19, 3, &data),
            mad(GET_RESPONSE, DIRECTION, 7, 0x11, 3, &data),
            mad(GET_RESPONSE, DIRECTION, 7, 0x19, 3, &data)[..100].to_vec(),
        ] {
            assert_eq!(w.receive(0, &bad), Received::Dropped);
        }
        assert!(!w.done());
        // A status: the 15 bits without the direction bit.
        let r = mad(GET_RESPONSE, DIRECTION | 0x1c, 7, 0x19, 3, &data);
        assert_eq!(w.receive(0, &r), Received::Settled(0));
        assert!(w.done());
        assert_eq!(
            w.outcomes(),
            vec![Outcome::Status(0x1c), Outcome::Answer(data)]
        );
    }

    #[test]
    fn a_handed_back_request_is_a_failed_try_and_goes_out_again_under_a_fresh_tid() {
        let t0 = Instant::now();
        let mut w = Window::new(vec![expect(SET, 0x19, 0)], 4, 2, ms(100));
        let mut next = 0u32;
        let mut tid = || {
            next += 1;
            next
        };
        assert_eq!(w.next(t0, &mut tid), Some((0, 1)));
        let req = mad(SET, 0, AGENT | 1, 0x19, 0, &[1; PAYLOAD]);
        // Handed back with the response's method: not the request, dropped.
        let resp = mad(GET_RESPONSE, 0, 1, 0x19, 0, &[1; PAYLOAD]);
        assert_eq!(w.receive(ETIMEDOUT, &resp), Received::Dropped);
        assert_eq!(w.receive(ETIMEDOUT, &req), Received::Again(0));
        assert_eq!(w.next(t0, &mut tid), Some((0, 2)));
        // The old TID's answer is late: dropped.
        let late = mad(GET_RESPONSE, DIRECTION, 1, 0x19, 0, &[1; PAYLOAD]);
        assert_eq!(w.receive(0, &late), Received::Dropped);
        let req = mad(SET, 0, 2, 0x19, 0, &[1; PAYLOAD]);
        assert_eq!(w.receive(ETIMEDOUT, &req), Received::Settled(0));
        assert_eq!(w.outcomes(), vec![Outcome::Timeout { tries: 2 }]);
    }

    #[test]
    fn a_request_handed_back_with_another_status_on_its_last_try_is_a_transport_failure() {
        let t0 = Instant::now();
        let mut w = Window::new(vec![expect(GET, 0x11, 0)], 4, 1, ms(100));
        let (_, tid) = w.next(t0, || 5).unwrap();
        let req = mad(GET, 0, u64::from(tid), 0x11, 0, &[0; PAYLOAD]);
        assert_eq!(w.receive(5, &req), Received::Settled(0));
        match &w.outcomes()[0] {
            Outcome::Transport(why) => assert!(why.contains("status 5"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deadlines_expire_in_the_order_the_smps_went_out() {
        let t0 = Instant::now();
        let mut w = Window::new(
            vec![expect(GET, 1, 0), expect(GET, 1, 1), expect(GET, 1, 2)],
            2,
            2,
            ms(10),
        );
        let mut next = 0u32;
        let mut tid = || {
            next += 1;
            next
        };
        assert_eq!(w.next(t0, &mut tid), Some((0, 1)));
        assert_eq!(w.next(t0 + ms(1), &mut tid), Some((1, 2)));
        assert_eq!(w.next(t0 + ms(1), &mut tid), None, "the window is full");
        assert_eq!(w.wait(t0 + ms(4)), Some(ms(6)));
        w.expire(t0 + ms(11));
        assert_eq!(w.in_flight(), 0);
        // The two lost ones before the one never sent, the first lost first.
        assert_eq!(w.next(t0 + ms(11), &mut tid), Some((0, 3)));
        assert_eq!(w.next(t0 + ms(11), &mut tid), Some((1, 4)));
        assert_eq!(w.next(t0 + ms(11), &mut tid), None);
        assert_eq!(w.wait(t0 + ms(30)), Some(Duration::ZERO));
    }

    #[test]
    fn an_smp_that_cannot_be_sent_is_settled_at_once_and_a_tid_in_flight_is_never_reused() {
        let t0 = Instant::now();
        let mut w = Window::new(
            vec![
                Err("too long".to_owned()),
                expect(GET, 1, 0),
                expect(GET, 1, 1),
            ],
            4,
            1,
            ms(10),
        );
        // The source repeats itself and offers 0: both skipped.
        let mut tids = [4u32, 4, 0, 4, 6].into_iter();
        assert_eq!(w.next(t0, || tids.next().unwrap()), Some((1, 4)));
        assert_eq!(w.next(t0, || tids.next().unwrap()), Some((2, 6)));
        w.send_failed(6, "no device".to_owned());
        w.abort("the port failed");
        assert!(w.done());
        assert_eq!(
            w.outcomes(),
            vec![
                Outcome::Transport("too long".to_owned()),
                Outcome::Transport("the port failed".to_owned()),
                Outcome::Transport("no device".to_owned()),
            ]
        );
    }

    /// How the fake fabric treats one SMP.
    #[derive(Clone, Copy, Debug)]
    enum Fate {
        /// Every send answered after `delay` ms.
        Answer { delay: u64 },
        /// The first `lost` sends vanish; later ones answered after `delay`.
        Lose { lost: u32, delay: u64 },
        /// The first `back` sends handed back (`ETIMEDOUT`) after `delay`; then answered.
        HandBack { back: u32, delay: u64 },
        /// Answered with a MAD status.
        Reject { status: u16, delay: u64 },
        /// Every send answered twice.
        Twice { delay: u64, again: u64 },
        /// The first send answered after its deadline (with other data), later ones in time.
        Late { delay: u64 },
        /// Answered with another attribute modifier: never an answer.
        Stray { delay: u64 },
        /// Every send handed back with `EIO`.
        Broken { delay: u64 },
    }

    /// What a fate must end in, with `tries` sends per SMP: the answer of which send.
    fn expected(fate: Fate, index: usize, tries: u32) -> Outcome {
        let answer = |send: u32| {
            if send <= tries {
                Outcome::Answer(data(index, send, false))
            } else {
                Outcome::Timeout { tries }
            }
        };
        match fate {
            Fate::Answer { .. } | Fate::Twice { .. } => answer(1),
            Fate::Lose { lost, .. } => answer(lost + 1),
            Fate::HandBack { back, .. } => answer(back + 1),
            Fate::Reject { status, .. } => Outcome::Status(status),
            Fate::Late { .. } => answer(2),
            Fate::Stray { .. } => Outcome::Timeout { tries },
            Fate::Broken { .. } => Outcome::Transport(format!(
                "umad handed the SMP back with status 5 ({})",
                std::io::Error::from_raw_os_error(5)
            )),
        }
    }

    /// The SMP data the fake answers send `send` of SMP `index` with (`late`: an answer that
    /// comes after the deadline).
    fn data(index: usize, send: u32, late: bool) -> Payload {
        let mut d = [0u8; PAYLOAD];
        d[..8].copy_from_slice(&(index as u64).to_be_bytes());
        d[8..12].copy_from_slice(&send.to_be_bytes());
        d[12] = u8::from(late);
        d
    }

    fn fate(timeout: u64) -> impl Strategy<Value = Fate> {
        let delay = 0..timeout;
        prop_oneof![
            4 => delay.clone().prop_map(|delay| Fate::Answer { delay }),
            1 => (0u32..5, delay.clone()).prop_map(|(lost, delay)| Fate::Lose { lost, delay }),
            1 => (0u32..5, delay.clone()).prop_map(|(back, delay)| Fate::HandBack { back, delay }),
            1 => (1u16..0x7fff, delay.clone()).prop_map(|(status, delay)| Fate::Reject { status, delay }),
            1 => (delay.clone(), 0..3 * timeout).prop_map(|(delay, again)| Fate::Twice { delay, again }),
            1 => delay.clone().prop_map(|delay| Fate::Late { delay }),
            1 => delay.clone().prop_map(|delay| Fate::Stray { delay }),
            1 => delay.prop_map(|delay| Fate::Broken { delay }),
        ]
    }

    /// Runs a batch against the fake fabric in virtual time; the outcomes.
    fn run(
        fates: &[Fate],
        width: usize,
        tries: u32,
        timeout: u64,
        strays: &[(u64, u32)],
    ) -> Vec<Outcome> {
        let t0 = Instant::now();
        let expects: Vec<_> = (0..fates.len())
            .map(|i| expect(if i % 2 == 0 { SET } else { GET }, 0x19, i as u32))
            .collect();
        let want: Vec<Expect> = expects.iter().map(|e| *e.as_ref().unwrap()).collect();
        let mut w = Window::new(expects, width, tries, ms(timeout));
        // Deliveries: (at, sequence, umad status, MAD), the earliest first.
        type Delivery = Reverse<(u64, u64, i32, Vec<u8>)>;
        let mut queue: BinaryHeap<Delivery> = BinaryHeap::new();
        let mut seq = 0u64;
        let mut deliver = |queue: &mut BinaryHeap<Delivery>, at: u64, status: i32, m: Vec<u8>| {
            seq += 1;
            queue.push(Reverse((at, seq, status, m)));
        };
        for &(at, tid) in strays {
            // TIDs the window never hands out (its source counts up from 1).
            let m = mad(
                GET_RESPONSE,
                DIRECTION,
                u64::from(tid | 0x8000_0000),
                0x19,
                0,
                &[9; 64],
            );
            deliver(&mut queue, at, 0, m);
        }
        let mut next_tid = 0u32;
        let mut sends = vec![0u32; fates.len()];
        let mut tids = HashSet::new();
        let mut now = 0u64;
        for _ in 0..100_000 {
            let t = t0 + ms(now);
            w.expire(t);
            while let Some((i, tid)) = w.next(t, || {
                next_tid += 1;
                next_tid
            }) {
                assert!(tids.insert(tid), "TID {tid} handed out twice");
                assert!(w.in_flight() <= width, "more than {width} in flight");
                sends[i] += 1;
                let send = sends[i];
                assert!(send <= tries, "SMP {i} sent {send} times, tries {tries}");
                let e = want[i];
                let wire = AGENT | u64::from(tid);
                let answer = |late: bool| {
                    mad(
                        GET_RESPONSE,
                        DIRECTION,
                        wire,
                        e.attr,
                        e.modifier,
                        &data(i, send, late),
                    )
                };
                let request = || mad(e.method, 0, wire, e.attr, e.modifier, &[0; 64]);
                match fates[i] {
                    Fate::Answer { delay } => deliver(&mut queue, now + delay, 0, answer(false)),
                    Fate::Lose { lost, delay } => {
                        if send > lost {
                            deliver(&mut queue, now + delay, 0, answer(false));
                        }
                    }
                    Fate::HandBack { back, delay } => {
                        if send > back {
                            deliver(&mut queue, now + delay, 0, answer(false));
                        } else {
                            deliver(&mut queue, now + delay, ETIMEDOUT, request());
                        }
                    }
                    Fate::Reject { status, delay } => {
                        let m = mad(
                            GET_RESPONSE,
                            DIRECTION | status,
                            wire,
                            e.attr,
                            e.modifier,
                            &[0; 64],
                        );
                        deliver(&mut queue, now + delay, 0, m);
                    }
                    Fate::Twice { delay, again } => {
                        deliver(&mut queue, now + delay, 0, answer(false));
                        deliver(&mut queue, now + delay + again, 0, answer(true));
                    }
                    Fate::Late { delay } => {
                        if send == 1 {
                            deliver(&mut queue, now + timeout + 1 + delay, 0, answer(true));
                        } else {
                            deliver(&mut queue, now + delay, 0, answer(false));
                        }
                    }
                    Fate::Stray { delay } => {
                        let m = mad(
                            GET_RESPONSE,
                            DIRECTION,
                            wire,
                            e.attr,
                            e.modifier + 1000,
                            &[7; 64],
                        );
                        deliver(&mut queue, now + delay, 0, m);
                    }
                    Fate::Broken { delay } => deliver(&mut queue, now + delay, 5, request()),
                }
            }
            if w.done() {
                return w.outcomes();
            }
            let wait = w.wait(t).expect("something in flight while not done");
            let until = now + u64::try_from(wait.as_millis()).unwrap();
            match queue.peek() {
                Some(Reverse((at, ..))) if *at <= until => {
                    let Reverse((at, _, status, m)) = queue.pop().unwrap();
                    now = now.max(at);
                    w.receive(status, &m);
                }
                _ => now = until,
            }
        }
        panic!("the batch never ended");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the fabric does (answers out of order, loses, hands back, answers twice,
        /// late, with another attribute, or strays arrive), every SMP ends as its fate says,
        /// with the answer to its own latest send, in the batch's order.
        #[test]
        fn every_smp_gets_its_own_outcome(
            (timeout, fates) in (5u64..40).prop_flat_map(|t| (Just(t), prop::collection::vec(fate(t), 0..60))),
            width in 1usize..20,
            tries in 1u32..5,
            strays in prop::collection::vec((0u64..500, any::<u32>()), 0..20),
        ) {
            let got = run(&fates, width, tries, timeout, &strays);
            let want: Vec<Outcome> = fates
                .iter()
                .enumerate()
                .map(|(i, &f)| expected(f, i, tries))
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
