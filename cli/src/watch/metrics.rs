//! `weft watch --metrics ADDR`: the watch's figures in the Prometheus (OpenMetrics) text
//! format through `prometheus-client`, served by a thread on a `TcpListener` to every GET.
//!
//! `weft_fabric_proven{property}` is 1 proven, 0 refuted, NaN unknown (a partial read, a
//! state weft cannot verify): an alert on `weft_fabric_proven == 0` fires on a refutation,
//! one on `weft_fabric_proven != weft_fabric_proven` (NaN) on unknown.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_verifier::{Outcome, Property};

/// A property's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PropertyLabel {
    /// Its name (`deadlock_free`, `connected`, …).
    pub property: String,
}

/// A sweep kind's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// `light` or `heavy`.
    pub kind: String,
}

/// Every figure the watch keeps.
#[derive(Clone, Default)]
pub struct Metrics {
    pub proven: Family<PropertyLabel, Gauge<f64, AtomicU64>>,
    pub sweeps: Family<KindLabel, Counter>,
    pub duration: Family<KindLabel, Gauge<f64, AtomicU64>>,
    pub smps: Family<KindLabel, Counter>,
    pub changes: Counter,
    pub plans_written: Counter,
    pub plans_applied: Counter,
    pub ports_down: Gauge,
    pub tables_differing: Gauge,
    pub switches_differing: Gauge,
    pub verdict_sweep: Gauge,
    pub verdict_full: Gauge,
    pub verdict_time: Gauge<f64, AtomicU64>,
    pub last_full_time: Gauge<f64, AtomicU64>,
}

impl Metrics {
    /// `weft_fabric_proven` for `outcomes`: 1, 0, or NaN for unknown; a property set before
    /// and not judged now is NaN too (never a stale 1).
    pub fn set_verdict(&self, outcomes: &[(Property, Outcome)]) {
        let label = |p: &Property| PropertyLabel {
            property: p.name().to_owned(),
        };
        for p in Property::ALL {
            let now = outcomes.iter().find(|(q, _)| *q == p).map(|(_, o)| o);
            let v = match now {
                Some(Outcome::Proven) => 1.0,
                Some(Outcome::Violated) => 0.0,
                Some(Outcome::Unknown(_)) => f64::NAN,
                None if self.proven.get(&label(&p)).is_some() => f64::NAN,
                None => continue,
            };
            self.proven.get_or_create(&label(&p)).set(v);
        }
    }

    /// The figures in the text format.
    #[cfg(test)]
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut body = String::new();
        encode(&mut body, &self.registry())?;
        Ok(body)
    }

    /// The registry they are encoded from.
    fn registry(&self) -> Registry {
        let mut r = Registry::with_prefix("weft");
        r.register(
            "fabric_proven",
            "1 when the property is proven on the state last read, 0 refuted, NaN unknown",
            self.proven.clone(),
        );
        r.register(
            "sweeps",
            "Sweeps done, light and heavy",
            self.sweeps.clone(),
        );
        r.register(
            "sweep_duration_seconds",
            "Wall time of the last sweep of each kind",
            self.duration.clone(),
        );
        r.register(
            "smps",
            "SMPs sent by sweeps of each kind",
            self.smps.clone(),
        );
        r.register("changes", "Changes the sweeps found", self.changes.clone());
        r.register(
            "plans_written",
            "Repair plans written",
            self.plans_written.clone(),
        );
        r.register(
            "plans_applied",
            "Repair plans applied",
            self.plans_applied.clone(),
        );
        r.register(
            "ports_down",
            "Ports whose cable is up in the reference state and down on the fabric",
            self.ports_down.clone(),
        );
        r.register(
            "tables_differing",
            "LFT blocks that differ from the reference state's",
            self.tables_differing.clone(),
        );
        r.register(
            "switches_differing",
            "Switches with an LFT block that differs from the reference state's",
            self.switches_differing.clone(),
        );
        r.register(
            "verdict_sweep",
            "The sweep whose read weft_fabric_proven is on (0: the first read); older than the last sweep when nothing changed since",
            self.verdict_sweep.clone(),
        );
        r.register(
            "verdict_full",
            "1 when the read weft_fabric_proven is on read every table, 0 when it read only what changed",
            self.verdict_full.clone(),
        );
        r.register(
            "verdict_timestamp_seconds",
            "Unix time of the read weft_fabric_proven is on",
            self.verdict_time.clone(),
        );
        r.register(
            "last_full_sweep_timestamp_seconds",
            "Unix time of the last read of every table that every node answered",
            self.last_full_time.clone(),
        );
        r
    }

    /// Serves the figures on `addr` from a thread of its own (every request gets them); the
    /// address bound.
    pub fn serve(&self, addr: &str) -> Result<SocketAddr, String> {
        self.serve_within(addr, IO_TIMEOUT)
    }

    /// [`Metrics::serve`], each connection given `limit` to send its request and take the
    /// answer: a scraper that stalls (sends nothing, or reads nothing) is dropped then, and
    /// never holds up the next one.
    fn serve_within(&self, addr: &str, limit: Duration) -> Result<SocketAddr, String> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| format!("--metrics `{addr}`: cannot listen: {e}"))?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("--metrics `{addr}`: {e}"))?;
        let registry = Arc::new(self.registry());
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    let Ok(mut conn) = conn else {
                        // Out of descriptors, say: wait rather than spin.
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    };
                    answer(&mut conn, &registry, limit);
                }
            })
            .map_err(|e| format!("--metrics: cannot start the server thread: {e}"))?;
        Ok(bound)
    }
}

/// Time a scraper has to send its request and to take the answer (Prometheus's default
/// scrape timeout is 10 s; the answer is a few kB).
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads one request on `conn` within `limit` and answers it with the figures within
/// `limit` more (else drops it).
fn answer(conn: &mut TcpStream, registry: &Registry, limit: Duration) {
    let deadline = Instant::now() + limit;
    // The request line and headers, to the blank line (what was asked does not matter; a
    // request answered before it is all read may meet a reset).
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") && got.len() < 16 * 1024 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || conn.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(buf.get(..n).unwrap_or_default()),
        }
    }
    let mut body = String::new();
    let status = match encode(&mut body, registry) {
        Ok(()) => "200 OK",
        Err(_) => "500 Internal Server Error",
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    // The answer's own time, from when it is ready.
    let deadline = Instant::now() + limit;
    let _ = write_before(conn, head.as_bytes(), deadline)
        .and_then(|()| write_before(conn, body.as_bytes(), deadline));
}

/// Writes `bytes` to `conn` by `deadline` (a reader that takes a byte now and then cannot
/// stretch it: each write waits only for what is left).
fn write_before(conn: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        conn.set_write_timeout(Some(left))?;
        match conn.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `weft_fabric_proven{property="p"}` as served.
    fn proven(m: &Metrics, p: &str) -> Option<String> {
        let head = format!("weft_fabric_proven{{property=\"{p}\"}} ");
        m.encode()
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(&head).map(str::to_owned))
    }

    /// An unknown verdict after a proven one leaves no property at 1: `isolated` (judged
    /// before, not now) once kept its 1.
    #[test]
    fn no_property_stays_proven_after_an_unknown_verdict() {
        let m = Metrics::default();
        m.set_verdict(&[
            (Property::DeadlockFree, Outcome::Proven),
            (Property::Connected, Outcome::Violated),
            (Property::Isolated, Outcome::Proven),
        ]);
        assert_eq!(proven(&m, "deadlock_free").as_deref(), Some("1.0"));
        assert_eq!(proven(&m, "connected").as_deref(), Some("0.0"));
        assert_eq!(proven(&m, "isolated").as_deref(), Some("1.0"));
        assert_eq!(proven(&m, "multicast_connected"), None);
        let unknown = Outcome::Unknown("a read the fabric did not answer".into());
        m.set_verdict(&[
            (Property::DeadlockFree, unknown.clone()),
            (Property::Connected, unknown),
        ]);
        for p in ["deadlock_free", "connected", "isolated"] {
            assert_eq!(proven(&m, p).as_deref(), Some("NaN"), "{p}");
        }
        assert_eq!(proven(&m, "multicast_connected"), None, "never judged");
    }

    /// A scraper that sends its request and never reads the answer (larger than the socket
    /// buffers) holds the server no longer than its time limit: the next scraper is
    /// answered. Without a write timeout the server waited on the first for ever.
    #[test]
    fn a_scraper_that_never_reads_does_not_hold_up_the_next() {
        use std::io::{Read as _, Write as _};
        let m = Metrics::default();
        // About 12 MB of text: more than loopback's socket buffers hold.
        for k in 0..200_000 {
            m.proven
                .get_or_create(&PropertyLabel {
                    property: format!("p{k:0>40}"),
                })
                .set(1.0);
        }
        let addr = m
            .serve_within("127.0.0.1:0", Duration::from_millis(500))
            .unwrap();
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let mut next = TcpStream::connect(addr).unwrap();
        next.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        next.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut got = Vec::new();
        next.read_to_end(&mut got)
            .expect("the next scraper is answered");
        assert!(got.starts_with(b"HTTP/1.1 200 OK"), "{}", got.len());
        drop(stalled);
    }
}
