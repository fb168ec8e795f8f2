//! The `mad` backend: real SMPs by directed route through libibmad.
//!
//! libibmad (`libibmad.so.5`, Debian package libibmad5) is loaded when a [`Mad`] is opened,
//! not linked, so weft runs on machines without it; a missing library is a [`MadError`] that
//! names the package.
//!
//! How libibmad's answers map to [`SmpError`]:
//!
//! * a response with a non-zero status (the 15-bit directed-route status: bit 0 busy, bits
//!   4:2 the code, e.g. `0x1c` an invalid attribute or modifier) is [`SmpError::Status`];
//! * no response after every try (libibmad's `errno` is `ETIMEDOUT`) is
//!   [`SmpError::Timeout`]. A directed route that leads nowhere (an unconnected port, a hop
//!   past a channel adapter) looks the same: the SMP is dropped on the way and nothing comes
//!   back. ibsim reports such a drop at once (the umad status `ETIMEDOUT`) instead of letting
//!   the timeout run, so there it is a `Timeout` returned in microseconds;
//! * anything else libibmad fails at (the device, a send) is [`SmpError::Transport`].
//!
//! libibmad itself writes a line to standard error (`ibwarn: … _do_madrpc failed; dport …`)
//! whenever an SMP gets no response, and when a device cannot be opened; weft does not print.
//!
//! One SMP ([`Transport::get`], [`Transport::set`]) goes through libibmad's own RPC, which
//! waits for its response. A batch ([`Transport::set_all`], [`Transport::get_all`]: a step of
//! a plan and its read-back) keeps up to [`MadOptions::window`] SMPs in flight together on the
//! same umad port: each is sent with libibmad's `mad_send_via` under a transaction ID of its
//! own, and whatever `mad_receive_via` brings back is matched to the SMP it answers by the
//! `window` scheduler (TID, attribute, modifier, method), so the results, the statuses and
//! the timeouts are those the RPC gives one SMP at a time (a lost SMP is sent again under a
//! fresh TID; a late or stray response is dropped). libumad2sim (ibsim's umad) serves one umad
//! port per process only, so the batch shares the port single SMPs use.

#![expect(
    unsafe_code,
    reason = "libibmad is reached through dlopen and C function pointers"
)]

mod window;

use crate::smp::{DrPath, Payload, MAX_HOPS, PAYLOAD};
use crate::transport::{SmpError, Target, Transport};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::fmt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};
use window::{Expect, Outcome, Window};

/// The library, by its soname.
pub const LIBIBMAD: &str = "libibmad.so.5";
/// The Debian package that holds it.
pub const LIBIBMAD_PACKAGE: &str = "libibmad5";
/// libibumad, which libibmad sends through (its umad buffers are read with it), by its soname.
pub const LIBIBUMAD: &str = "libibumad.so.3";
/// The Debian package that holds it.
pub const LIBIBUMAD_PACKAGE: &str = "libibumad3";

/// `IB_SMI_CLASS`: LID-routed SMPs.
const IB_SMI_CLASS: c_int = 0x01;
/// `IB_SMI_DIRECT_CLASS`: directed-route SMPs.
const IB_SMI_DIRECT_CLASS: c_int = 0x81;
/// `IB_PERFORMANCE_CLASS`: PMA GMPs (LID-routed, to QP1).
const IB_PERFORMANCE_CLASS: c_int = 0x04;
/// `IB_DEFAULT_QP1_QKEY`: the Q_Key of QP1.
const QP1_QKEY: u32 = 0x8001_0000;
/// `IB_PC_DATA_OFFS`: where a PMA MAD's data starts.
const PC_DATA_OFFS: c_int = 64;
/// `IB_SUBNET_PATH_HOPS_MAX`: entries of `ib_dr_path_t.p` (the first is the local node).
const IB_SUBNET_PATH_HOPS_MAX: usize = 64;
/// Linux's `ETIMEDOUT`, which libibmad leaves in `errno` when no response came.
const ETIMEDOUT: i32 = window::ETIMEDOUT;
/// Linux's `EINTR`: a wait for a MAD interrupted by a signal (wait again).
const EINTR: i32 = 4;
/// `IB_MAD_METHOD_GET`.
const METHOD_GET: u8 = 0x01;
/// `IB_MAD_METHOD_SET`.
const METHOD_SET: u8 = 0x02;
/// `IB_MAD_SIZE`: every SMP is one 256-byte MAD.
const MAD_SIZE: usize = 256;
/// `IB_SMP_DATA_OFFS`: where the 64 bytes of SMP data start in the MAD.
const SMP_DATA_OFFS: c_int = 64;
/// libibmad's timeout when the port's is 0 (`MAD_DEF_TIMEOUT_MS`).
const DEFAULT_TIMEOUT_MS: u32 = 1000;

/// `ib_dr_path_t` (mad.h).
#[repr(C)]
#[derive(Clone, Copy)]
struct IbDrPath {
    /// Hops (`-1`: no path).
    cnt: c_int,
    /// `p[0]` is 0 (the local node), `p[1..=cnt]` the output ports.
    p: [u8; IB_SUBNET_PATH_HOPS_MAX],
    /// 0xffff: a pure directed route at the source end.
    drslid: u16,
    /// 0xffff: a pure directed route at the destination end.
    drdlid: u16,
}

/// `ib_portid_t` (mad.h): where an SMP goes.
#[repr(C)]
#[derive(Clone, Copy)]
struct IbPortid {
    /// The destination LID, 0 for a directed route.
    lid: c_int,
    drpath: IbDrPath,
    grh_present: c_int,
    /// `ibmad_gid_t`.
    gid: [u8; 16],
    qp: u32,
    qkey: u32,
    sl: u8,
    pkey_idx: c_uint,
}

// The layouts gcc gives mad.h on Linux (x86-64 and every other LP64 or ILP32 target with
// 4-byte `int`): ib_dr_path_t 72 bytes, ib_portid_t 112.
const _: () = assert!(std::mem::size_of::<IbDrPath>() == 72);
const _: () = assert!(std::mem::size_of::<IbPortid>() == 112);
const _: () = assert!(std::mem::align_of::<IbPortid>() == 4);
const _: () = assert!(std::mem::offset_of!(IbPortid, drpath) == 4);
const _: () = assert!(std::mem::offset_of!(IbPortid, grh_present) == 76);
const _: () = assert!(std::mem::offset_of!(IbPortid, gid) == 80);
const _: () = assert!(std::mem::offset_of!(IbPortid, qp) == 96);
const _: () = assert!(std::mem::offset_of!(IbPortid, sl) == 104);
const _: () = assert!(std::mem::offset_of!(IbPortid, pkey_idx) == 108);
const _: () = assert!(std::mem::offset_of!(IbDrPath, drslid) == 68);
const _: () = assert!(MAX_HOPS < IB_SUBNET_PATH_HOPS_MAX);

/// `ib_rpc_t` (mad.h): what `mad_send_via` builds a MAD from.
#[repr(C)]
#[derive(Clone, Copy)]
struct IbRpc {
    mgtclass: c_int,
    method: c_int,
    /// `ib_attr_t.id`.
    attr_id: c_uint,
    /// `ib_attr_t.mod`.
    attr_mod: c_uint,
    rstatus: u32,
    dataoffs: c_int,
    datasz: c_int,
    mkey: u64,
    /// The transaction ID to send under (libibmad draws one when it is 0).
    trid: u64,
    mask: u64,
    recsz: c_uint,
    /// 0: the port's timeout.
    timeout: c_int,
    oui: u32,
}

// What gcc gives mad.h's ib_rpc_t on x86-64 (and every LP64 target with 8-byte-aligned u64).
const _: () = assert!(std::mem::size_of::<IbRpc>() == 72);
const _: () = assert!(std::mem::offset_of!(IbRpc, rstatus) == 16);
const _: () = assert!(std::mem::offset_of!(IbRpc, mkey) == 32);
const _: () = assert!(std::mem::offset_of!(IbRpc, trid) == 40);
const _: () = assert!(std::mem::offset_of!(IbRpc, timeout) == 60);
const _: () = assert!(std::mem::offset_of!(IbRpc, oui) == 64);

/// A umad buffer: the umad header (`umad_size()` bytes: 64, or 56 under the old ABI) and one
/// MAD, 8-byte aligned as `struct ib_user_mad` is.
#[repr(C, align(8))]
struct UmadBuf([u8; 512]);

/// `struct ibmad_port`, opaque.
#[repr(C)]
struct IbmadPort {
    _opaque: [u8; 0],
}

type OpenPortFn = unsafe extern "C" fn(*mut c_char, c_int, *mut c_int, c_int) -> *mut IbmadPort;
type ClosePortFn = unsafe extern "C" fn(*mut IbmadPort);
type SmpStatusViaFn = unsafe extern "C" fn(
    *mut c_void,
    *mut IbPortid,
    c_uint,
    c_uint,
    c_uint,
    *mut c_int,
    *const IbmadPort,
) -> *mut u8;
type SetIntFn = unsafe extern "C" fn(*mut IbmadPort, c_int);
type MkeySetFn = unsafe extern "C" fn(*mut IbmadPort, u64);
type SendViaFn = unsafe extern "C" fn(
    *mut IbRpc,
    *mut IbPortid,
    *mut c_void,
    *mut c_void,
    *mut IbmadPort,
) -> c_int;
type ReceiveViaFn = unsafe extern "C" fn(*mut c_void, c_int, *mut IbmadPort) -> *mut c_void;
type TridFn = unsafe extern "C" fn() -> u64;
type RpcFn = unsafe extern "C" fn(
    *const IbmadPort,
    *mut IbRpc,
    *mut IbPortid,
    *mut c_void,
    *mut c_void,
) -> *mut c_void;
type UmadSizeFn = unsafe extern "C" fn() -> usize;
type UmadStatusFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The libibmad (and libibumad) functions the backend calls.
#[derive(Clone, Copy)]
struct Api {
    open_port: OpenPortFn,
    close_port: ClosePortFn,
    query: SmpStatusViaFn,
    set: SmpStatusViaFn,
    set_timeout: SetIntFn,
    set_retries: SetIntFn,
    send_via: SendViaFn,
    receive_via: ReceiveViaFn,
    trid: TridFn,
    rpc: RpcFn,
    umad_size: UmadSizeFn,
    umad_status: UmadStatusFn,
}

/// How to open the SMI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadOptions {
    /// The CA (`mlx5_0`); `None`: the first one.
    pub ca: Option<String>,
    /// Its port; 0: the first active one (else the first with a physical link).
    pub port: u8,
    /// How long to wait for each response, in milliseconds (0: libibmad's default, 1000).
    pub timeout_ms: u32,
    /// How many times an SMP is sent again after a timeout.
    pub retries: u32,
    /// The M_Key to send in every SMP (`None`: 0).
    pub mkey: Option<u64>,
    /// How many SMPs of a batch ([`Transport::set_all`], [`Transport::get_all`]) are in
    /// flight together; 0 or 1: one at a time, each through libibmad's RPC as a single
    /// [`Transport::get`] or [`Transport::set`] goes.
    pub window: u32,
}

impl MadOptions {
    /// The default [`MadOptions::window`]: 16.
    ///
    /// On ibsim (`bench/deploy-vs-opensm.sh --windows …`: batches of 2 000 LFT-block Gets and
    /// Sets to a switch one hop away; medians of 5 runs on 2 cores), one SMP at a time goes at
    /// ≈ 17 500 a second, each waiting out a round trip through the simulator; 4 in flight
    /// send ≈ 3.5× as many, 16 ≈ 9.7×, 32 ≈ 14×, 64 no more than 32, and 256 fall back to
    /// ≈ 6.5×. A real fabric bounds the window elsewhere: a switch's VL15 buffers are small
    /// and an SMP past them is dropped, costing a timeout ([`MadOptions::timeout_ms`]) before
    /// it goes again, which is why OpenSM keeps 4 on the wire by default (`max_wire_smps`).
    /// 16 keeps most of the gain ibsim shows at 4× OpenSM's number; a fabric that loses SMPs
    /// at 16 takes a smaller window.
    pub const DEFAULT_WINDOW: u32 = 16;

    /// The default [`MadOptions::timeout_ms`]: 200, OpenSM's `transaction_timeout`. A switch
    /// answers an SMP in microseconds, so 200 ms only waits on loss; ibsim reports a dropped
    /// SMP at once, so the timeout never runs there.
    pub const DEFAULT_TIMEOUT_MS: u32 = 200;

    /// Sends per SMP by default before it counts as lost: 3 (the first and
    /// [`MadOptions::retries`] 2 more), what `weft apply` and `weft audit` send unless told
    /// otherwise (`--tries`).
    pub const DEFAULT_TRIES: u32 = 3;
}

impl Default for MadOptions {
    /// The first CA's first active port; [`MadOptions::DEFAULT_TIMEOUT_MS`] and
    /// [`MadOptions::DEFAULT_TRIES`] sends per SMP. Batches go [`MadOptions::DEFAULT_WINDOW`]
    /// SMPs at a time.
    fn default() -> MadOptions {
        MadOptions {
            ca: None,
            port: 0,
            timeout_ms: MadOptions::DEFAULT_TIMEOUT_MS,
            retries: MadOptions::DEFAULT_TRIES - 1,
            mkey: None,
            window: MadOptions::DEFAULT_WINDOW,
        }
    }
}

/// Why the SMI could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MadError {
    /// libibmad is not installed (or not loadable).
    #[error("cannot load {library} (install the Debian package {package}): {reason}")]
    Load {
        /// The library.
        library: String,
        /// The package that holds it.
        package: &'static str,
        /// The loader's message.
        reason: String,
    },
    /// libibmad lacks a function weft calls.
    #[error("{library} lacks `{symbol}` (package {package} too old?): {reason}")]
    Symbol {
        /// The library.
        library: String,
        /// The function.
        symbol: &'static str,
        /// The package that holds it.
        package: &'static str,
        /// The loader's message.
        reason: String,
    },
    /// An M_Key was asked for but this libibmad cannot send one.
    #[error("an M_Key was given, but {library} lacks `smp_mkey_set` to send it")]
    NoMkey {
        /// The library.
        library: String,
    },
    /// The CA name holds a NUL byte.
    #[error("the CA name {0:?} holds a NUL byte")]
    CaName(String),
    /// The device could not be opened.
    #[error("cannot open the SMI of {device} through libibmad: {reason}")]
    Open {
        /// The CA and port asked for.
        device: String,
        /// The system's error.
        reason: std::io::Error,
    },
}

impl weft_fabric::code::Coded for MadError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            MadError::Load { .. } => "weft::deploy::mad_load",
            MadError::Symbol { .. } => "weft::deploy::mad_symbol",
            MadError::NoMkey { .. } => "weft::deploy::mad_no_mkey",
            MadError::CaName(_) => "weft::deploy::mad_ca_name",
            MadError::Open { .. } => "weft::deploy::mad_open",
        }
    }
}

impl From<MadError> for SmpError {
    fn from(e: MadError) -> SmpError {
        SmpError::Transport(e.to_string())
    }
}

/// The SMI of a local CA port, through libibmad: SMP Get and Set by directed route.
///
/// Closed when dropped. A single SMP waits for its response; a batch keeps up to
/// [`MadOptions::window`] in flight.
pub struct Mad {
    port: NonNull<IbmadPort>,
    api: Api,
    tries: u32,
    device: String,
    /// SMPs of a batch in flight together (at least 1).
    window: usize,
    /// How long a batch's SMP waits for its response before it is sent again.
    timeout: Duration,
    /// The M_Key a batch's SMPs carry.
    mkey: u64,
    /// Kept loaded while the port is open; dropped after [`Drop`] closes it.
    _lib: Library,
    /// libibumad, likewise (libibmad holds it loaded too).
    _umad: Library,
}

// SAFETY: the `ibmad_port` is owned by this `Mad` alone (nothing else holds the pointer) and
// used through `&mut self` only; libibmad keeps no thread-local state for it, so moving it to
// another thread is sound. (It is not `Sync`: two threads must not send on it at once.)
unsafe impl Send for Mad {}

impl fmt::Debug for Mad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mad")
            .field("device", &self.device)
            .field("tries", &self.tries)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

fn load(library: &str, package: &'static str) -> Result<Library, MadError> {
    // SAFETY: loading libibmad (or libibumad) runs its initialisers, which only set up static
    // data (neither has constructors with side effects on the process).
    unsafe { Library::new(library) }.map_err(|e| MadError::Load {
        library: library.to_owned(),
        package,
        reason: e.to_string(),
    })
}

fn symbol<T: Copy>(
    lib: &Library,
    library: &str,
    package: &'static str,
    name: &'static str,
) -> Result<T, MadError> {
    let mut cname = name.as_bytes().to_vec();
    cname.push(0);
    // SAFETY: every `T` asked for is the function pointer type written from mad.h's (or
    // umad.h's) prototype of `name`; the pointer is used only while `lib` is loaded (Mad
    // keeps it).
    unsafe { lib.get::<T>(&cname) }
        .map(|s| *s)
        .map_err(|e| MadError::Symbol {
            library: library.to_owned(),
            symbol: name,
            package,
            reason: e.to_string(),
        })
}

/// The `ib_portid_t` of a pure directed route (LID 0, DrSLID and DrDLID 0xffff); `None` past
/// [`MAX_HOPS`].
fn portid(path: &DrPath) -> Option<IbPortid> {
    if path.0.len() > MAX_HOPS {
        return None;
    }
    let mut p = [0u8; IB_SUBNET_PATH_HOPS_MAX];
    for (slot, hop) in p.iter_mut().skip(1).zip(&path.0) {
        *slot = *hop;
    }
    Some(IbPortid {
        lid: 0,
        drpath: IbDrPath {
            cnt: c_int::try_from(path.0.len()).ok()?,
            p,
            drslid: 0xffff,
            drdlid: 0xffff,
        },
        grh_present: 0,
        gid: [0; 16],
        qp: 0,
        qkey: 0,
        sl: 0,
        pkey_idx: 0,
    })
}

/// The method of an SMP: a Set of `data`, or a Get (`None`).
fn method(data: Option<&Payload>) -> u8 {
    if data.is_some() {
        METHOD_SET
    } else {
        METHOD_GET
    }
}

fn clamp(v: u32) -> c_int {
    c_int::try_from(v).unwrap_or(c_int::MAX)
}

impl Mad {
    /// Opens the SMI of a CA port through libibmad (loaded now).
    pub fn open(options: &MadOptions) -> Result<Mad, MadError> {
        Mad::open_with(LIBIBMAD, options, false)
    }

    /// [`Mad::open`], registering the performance management class too: the port also
    /// sends PMA Gets ([`crate::pma::Pma`]). One umad port carries both (ibsim's umad serves
    /// one per process).
    pub fn open_pm(options: &MadOptions) -> Result<Mad, MadError> {
        Mad::open_with(LIBIBMAD, options, true)
    }

    fn open_with(library: &str, options: &MadOptions, pm: bool) -> Result<Mad, MadError> {
        let lib = load(library, LIBIBMAD_PACKAGE)?;
        let umad = load(LIBIBUMAD, LIBIBUMAD_PACKAGE)?;
        macro_rules! mad_fn {
            ($name:literal) => {
                symbol(&lib, library, LIBIBMAD_PACKAGE, $name)
            };
        }
        let api = Api {
            open_port: mad_fn!("mad_rpc_open_port")?,
            close_port: mad_fn!("mad_rpc_close_port")?,
            query: mad_fn!("smp_query_status_via")?,
            set: mad_fn!("smp_set_status_via")?,
            set_timeout: mad_fn!("mad_rpc_set_timeout")?,
            set_retries: mad_fn!("mad_rpc_set_retries")?,
            send_via: mad_fn!("mad_send_via")?,
            receive_via: mad_fn!("mad_receive_via")?,
            trid: mad_fn!("mad_trid")?,
            rpc: mad_fn!("mad_rpc")?,
            umad_size: symbol(&umad, LIBIBUMAD, LIBIBUMAD_PACKAGE, "umad_size")?,
            umad_status: symbol(&umad, LIBIBUMAD, LIBIBUMAD_PACKAGE, "umad_status")?,
        };
        let mkey_set: Option<MkeySetFn> = match options.mkey {
            Some(_) => Some(mad_fn!("smp_mkey_set").map_err(|_| MadError::NoMkey {
                library: library.to_owned(),
            })?),
            None => None,
        };
        let ca = options
            .ca
            .as_deref()
            .map(CString::new)
            .transpose()
            .map_err(|_| MadError::CaName(options.ca.clone().unwrap_or_default()))?;
        let device = format!(
            "{} port {}",
            options.ca.as_deref().unwrap_or("the first CA"),
            if options.port == 0 {
                "(first active)".to_owned()
            } else {
                options.port.to_string()
            }
        );
        let mut classes = [IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_PERFORMANCE_CLASS];
        let n_classes: c_int = if pm { 3 } else { 2 };
        let ca_ptr = ca
            .as_ref()
            .map_or(std::ptr::null_mut(), |c| c.as_ptr().cast_mut());
        // SAFETY: `ca_ptr` is NULL or a NUL-terminated string alive for the call (libibmad
        // only reads it, despite the `char *`); `classes` holds at least the `n_classes`
        // classes passed.
        let raw = unsafe {
            (api.open_port)(
                ca_ptr,
                c_int::from(options.port),
                classes.as_mut_ptr(),
                n_classes,
            )
        };
        let errno = std::io::Error::last_os_error();
        let port = NonNull::new(raw).ok_or(MadError::Open {
            device: device.clone(),
            reason: errno,
        })?;
        let tries = options.retries.saturating_add(1);
        let timeout_ms = match options.timeout_ms {
            0 => DEFAULT_TIMEOUT_MS,
            ms => ms,
        };
        let mad = Mad {
            port,
            api,
            tries,
            device,
            window: usize::try_from(options.window.max(1)).unwrap_or(usize::MAX),
            timeout: Duration::from_millis(u64::from(timeout_ms)),
            mkey: options.mkey.unwrap_or(0),
            _lib: lib,
            _umad: umad,
        };
        // SAFETY: `port` is the open port libibmad just returned, not yet closed (Mad closes
        // it in Drop only).
        unsafe {
            (api.set_timeout)(port.as_ptr(), clamp(options.timeout_ms));
            // libibmad's "retries" is the number of sends in all.
            (api.set_retries)(port.as_ptr(), clamp(tries));
        }
        if let (Some(set), Some(key)) = (mkey_set, options.mkey) {
            // SAFETY: as above; `smp_mkey_set` only stores the key in the port.
            unsafe { set(port.as_ptr(), key) };
        }
        Ok(mad)
    }

    /// The CA and port this SMI was opened on, as asked for.
    pub fn device(&self) -> &str {
        &self.device
    }

    fn send(&mut self, target: &Target, data: Option<&Payload>) -> Result<Payload, SmpError> {
        let mut portid = portid(&target.path).ok_or_else(|| {
            SmpError::Transport(format!(
                "{target}: a directed route holds at most {MAX_HOPS} hops"
            ))
        })?;
        let mut buf: Payload = data.copied().unwrap_or([0; PAYLOAD]);
        let mut rstatus: c_int = 0;
        let call = if data.is_some() {
            self.api.set
        } else {
            self.api.query
        };
        // SAFETY: `buf` holds the 64 bytes (IB_SMP_DATA_SIZE) libibmad reads the SMP data
        // from and writes the response's into; `portid` and `rstatus` are valid for the
        // call; the port is open (closed only in Drop).
        let res = unsafe {
            call(
                buf.as_mut_ptr().cast(),
                &mut portid,
                c_uint::from(target.attr.id()),
                target.modifier,
                0, // the port's timeout
                &mut rstatus,
                self.port.as_ptr(),
            )
        };
        let errno = std::io::Error::last_os_error();
        if !res.is_null() {
            return Ok(buf);
        }
        if rstatus != 0 {
            return Err(SmpError::Status {
                target: target.clone(),
                status: (rstatus & 0xffff) as u16,
            });
        }
        if errno.raw_os_error() == Some(ETIMEDOUT) {
            return Err(SmpError::Timeout {
                target: target.clone(),
                tries: self.tries,
            });
        }
        Err(SmpError::Transport(format!(
            "{target}: libibmad could not send the SMP on {}: {errno}",
            self.device
        )))
    }

    /// Sends a batch (`None`: a Get, `Some`: a Set of that data) with up to `self.window` SMPs
    /// in flight; one result per SMP, in the batch's order.
    fn batch(&mut self, smps: &[(&Target, Option<&Payload>)]) -> Vec<Result<Payload, SmpError>> {
        let mut portids: Vec<Option<IbPortid>> =
            smps.iter().map(|(t, _)| portid(&t.path)).collect();
        let expect = smps
            .iter()
            .zip(&portids)
            .map(|((t, data), p)| match p {
                Some(_) => Ok(Expect {
                    method: method(*data),
                    attr: t.attr.id(),
                    modifier: t.modifier,
                }),
                None => Err(format!("a directed route holds at most {MAX_HOPS} hops")),
            })
            .collect();
        let mut window = Window::new(expect, self.window, self.tries, self.timeout);
        let mut buf = UmadBuf([0; 512]);
        // SAFETY: `umad_size` reads a flag libibumad set when the port was opened.
        let header = unsafe { (self.api.umad_size)() };
        if header + MAD_SIZE > buf.0.len() {
            window.abort(&format!(
                "libibumad's umad header is {header} bytes, more than weft expects"
            ));
        }
        let trid = self.api.trid;
        // SAFETY: `mad_trid` takes nothing and bumps a counter in libibmad's static data. It
        // is what libibmad's own RPC (every single `get`/`set`) draws its TIDs from, so calling
        // it here adds no hazard those calls lack (a race needs another thread inside libibmad
        // at the same moment; `Mad` is not `Sync`), and keeps one sequence for both: a late
        // response to one never carries the TID of the other.
        let mut fresh_tid = move || (unsafe { trid() } & 0xffff_ffff) as u32;
        // Deadlines are enforced only when nothing is waiting to be read: a process that was
        // not scheduled for longer than the timeout (a loaded machine) finds its answers
        // queued, and must take them before calling their SMPs lost (resent under fresh TIDs,
        // the queued answers would be dropped as stale, and after every try the SMP would
        // count as unanswered — a node missing from discovery). A port that never stops
        // delivering (stray MADs without end) still has its deadlines enforced once a whole
        // timeout has passed since the queue was last found empty.
        let mut drained = true;
        let mut last_empty = Instant::now();
        while !window.done() {
            let now = Instant::now();
            if drained || now.duration_since(last_empty) >= self.timeout {
                window.expire(now);
            }
            while let Some((i, tid)) = window.next(Instant::now(), &mut fresh_tid) {
                let (Some((target, data)), Some(Some(portid))) = (smps.get(i), portids.get_mut(i))
                else {
                    window.send_failed(tid, "no such SMP in the batch".to_owned());
                    continue;
                };
                if let Err(errno) = self.send_via(target, *data, portid, tid) {
                    window.send_failed(
                        tid,
                        format!(
                            "libibmad could not send the SMP on {}: {errno}",
                            self.device
                        ),
                    );
                }
            }
            if window.done() {
                break;
            }
            // Wait for a MAD until the earliest deadline (rounded up, so it has passed when
            // the wait ends with nothing), at least 1 ms (0 would mean the port's timeout).
            let wait = window.wait(Instant::now()).unwrap_or(self.timeout);
            let ms = c_int::try_from(wait.as_micros().div_ceil(1000).max(1)).unwrap_or(c_int::MAX);
            // A umad shorter than a MAD (libumad2sim hands back a bare header on a partial
            // read) must not leave the previous MAD's bytes to be read as this one's.
            buf.0.fill(0);
            // SAFETY: `buf` is 8-byte aligned and holds the umad header and the IB_MAD_SIZE
            // bytes `mad_receive_via` reads at most (checked above); the port is open.
            let got = unsafe {
                (self.api.receive_via)(buf.0.as_mut_ptr().cast(), ms, self.port.as_ptr())
            };
            let errno = std::io::Error::last_os_error();
            if got.is_null() {
                match errno.raw_os_error() {
                    Some(ETIMEDOUT) => {
                        drained = true;
                        last_empty = Instant::now();
                        continue;
                    }
                    Some(EINTR) => continue,
                    _ => {
                        window.abort(&format!(
                            "libibmad could not receive on {}: {errno}",
                            self.device
                        ));
                        break;
                    }
                }
            }
            // SAFETY: `buf` holds the umad `mad_receive_via` just filled in.
            let status = unsafe { (self.api.umad_status)(buf.0.as_mut_ptr().cast()) };
            // The MAD follows the umad header (`umad_get_mad`: the header's size on).
            if let Some(mad) = buf.0.get(header..header + MAD_SIZE) {
                window.receive(status, mad);
            }
            drained = false;
        }
        window
            .outcomes()
            .into_iter()
            .zip(smps)
            .map(|(outcome, (target, _))| match outcome {
                Outcome::Answer(p) => Ok(p),
                Outcome::Status(status) => Err(SmpError::Status {
                    target: (*target).clone(),
                    status,
                }),
                Outcome::Timeout { tries } => Err(SmpError::Timeout {
                    target: (*target).clone(),
                    tries,
                }),
                Outcome::Transport(why) => Err(SmpError::Transport(format!("{target}: {why}"))),
            })
            .collect()
    }

    /// Sends one SMP of a batch under transaction ID `tid`, not waiting for its response; the
    /// `errno` if it could not be sent.
    fn send_via(
        &self,
        target: &Target,
        data: Option<&Payload>,
        portid: &mut IbPortid,
        tid: u32,
    ) -> Result<(), std::io::Error> {
        let mut rpc = IbRpc {
            mgtclass: IB_SMI_DIRECT_CLASS,
            method: c_int::from(method(data)),
            attr_id: c_uint::from(target.attr.id()),
            attr_mod: target.modifier,
            rstatus: 0,
            dataoffs: SMP_DATA_OFFS,
            datasz: c_int::try_from(PAYLOAD).unwrap_or(64),
            mkey: self.mkey,
            trid: u64::from(tid),
            mask: 0,
            recsz: 0,
            timeout: 0, // the port's
            oui: 0,
        };
        let mut buf: Option<Payload> = data.copied();
        let data_ptr = buf
            .as_mut()
            .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr().cast());
        // SAFETY: `rpc` and `portid` are valid for the call (libibmad reads them, and would
        // write `rpc.trid` only were it 0); `data_ptr` is NULL (a Get: the SMP data stays
        // zero) or the 64 bytes (`rpc.datasz`) libibmad copies into the MAD; no RMPP header
        // (an SMP has none); the port is open. libibmad builds the MAD in a buffer of its own
        // and umad copies it to the device before the call returns.
        let res = unsafe {
            (self.api.send_via)(
                &mut rpc,
                portid,
                std::ptr::null_mut(),
                data_ptr,
                self.port.as_ptr(),
            )
        };
        if res < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl Transport for Mad {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        self.send(target, None)
    }

    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        self.send(target, Some(data))
    }

    /// Up to [`MadOptions::window`] Sets in flight together (one at a time with a window of
    /// 1, as [`Transport::set`] sends them).
    fn set_all(&mut self, batch: &[(Target, Payload)]) -> Vec<Result<Payload, SmpError>> {
        if self.window <= 1 {
            return batch.iter().map(|(t, d)| self.set(t, d)).collect();
        }
        let smps: Vec<(&Target, Option<&Payload>)> =
            batch.iter().map(|(t, d)| (t, Some(d))).collect();
        self.batch(&smps)
    }

    /// Up to [`MadOptions::window`] Gets in flight together (one at a time with a window of
    /// 1, as [`Transport::get`] sends them).
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<Payload, SmpError>> {
        if self.window <= 1 {
            return batch.iter().map(|t| self.get(t)).collect();
        }
        let smps: Vec<(&Target, Option<&Payload>)> = batch.iter().map(|t| (t, None)).collect();
        self.batch(&smps)
    }
}

impl crate::pma::Pma for Mad {
    /// One PMA Get through libibmad's RPC (`mad_rpc`), LID-routed to QP1, waiting for its
    /// answer; the port must have been opened with [`Mad::open_pm`].
    fn pma_get(
        &mut self,
        lid: u16,
        attr: crate::pma::PmaAttr,
        port_select: u8,
    ) -> Result<crate::pma::PmaData, crate::pma::PmaFailure> {
        use crate::pma::{PmaFailure, PMA_DATA};
        let mut portid = IbPortid {
            lid: c_int::from(lid),
            drpath: IbDrPath {
                cnt: 0,
                p: [0; IB_SUBNET_PATH_HOPS_MAX],
                drslid: 0,
                drdlid: 0,
            },
            grh_present: 0,
            gid: [0; 16],
            qp: 1,
            qkey: QP1_QKEY,
            sl: 0,
            pkey_idx: 0,
        };
        let mut rpc = IbRpc {
            mgtclass: IB_PERFORMANCE_CLASS,
            method: c_int::from(METHOD_GET),
            attr_id: c_uint::from(attr.id()),
            attr_mod: 0,
            rstatus: 0,
            dataoffs: PC_DATA_OFFS,
            datasz: c_int::try_from(PMA_DATA).unwrap_or(192),
            mkey: 0,
            trid: 0, // libibmad draws one
            mask: 0,
            recsz: 0,
            timeout: 0, // the port's
            oui: 0,
        };
        let mut send = [0u8; PMA_DATA];
        if let Some(b) = send.get_mut(1) {
            *b = port_select;
        }
        let mut recv = [0u8; PMA_DATA];
        // SAFETY: `rpc` and `portid` are valid for the call (libibmad reads both and writes
        // `rpc.rstatus`); `send` and `recv` hold the `rpc.datasz` bytes libibmad copies into
        // the MAD at `rpc.dataoffs` and out of the answer; the port is open.
        let res = unsafe {
            (self.api.rpc)(
                self.port.as_ptr(),
                &mut rpc,
                &mut portid,
                send.as_mut_ptr().cast(),
                recv.as_mut_ptr().cast(),
            )
        };
        let errno = std::io::Error::last_os_error();
        if !res.is_null() {
            return Ok(recv);
        }
        if rpc.rstatus != 0 {
            return Err(PmaFailure::Status((rpc.rstatus & 0xffff) as u16));
        }
        if errno.raw_os_error() == Some(ETIMEDOUT) {
            return Err(PmaFailure::Timeout { tries: self.tries });
        }
        Err(PmaFailure::Transport(format!(
            "libibmad could not send the PMA Get on {}: {errno}",
            self.device
        )))
    }
}

impl Drop for Mad {
    fn drop(&mut self) {
        // SAFETY: the port is open and closed here only, once; the library is still loaded
        // (`_lib` drops after this).
        unsafe { (self.api.close_port)(self.port.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portid_is_a_pure_directed_route() {
        let id = portid(&DrPath(vec![1, 5, 2])).unwrap();
        assert_eq!(id.lid, 0);
        assert_eq!(id.drpath.cnt, 3);
        assert_eq!(&id.drpath.p[..5], &[0, 1, 5, 2, 0]);
        assert_eq!((id.drpath.drslid, id.drpath.drdlid), (0xffff, 0xffff));
        assert_eq!(portid(&DrPath::local()).unwrap().drpath.cnt, 0);
        let longest = DrPath(vec![7; MAX_HOPS]);
        let id = portid(&longest).unwrap();
        assert_eq!(id.drpath.cnt, 63);
        assert_eq!(id.drpath.p[63], 7);
        assert!(portid(&DrPath(vec![1; MAX_HOPS + 1])).is_none());
    }

    #[test]
    fn layouts_match_mad_h() {
        // What gcc prints for mad.h (see the const assertions above).
        assert_eq!(std::mem::size_of::<IbPortid>(), 112);
        assert_eq!(std::mem::offset_of!(IbPortid, qkey), 100);
        assert_eq!(std::mem::offset_of!(IbDrPath, drdlid), 70);
    }

    #[test]
    fn a_missing_library_names_its_package() {
        let err = Mad::open_with("libibmad-weft-missing.so.5", &MadOptions::default(), false)
            .err()
            .unwrap();
        assert!(matches!(err, MadError::Load { .. }), "{err:?}");
        let text = SmpError::from(err).to_string();
        assert!(text.contains("libibmad-weft-missing.so.5"), "{text}");
        assert!(text.contains("Debian package libibmad5"), "{text}");
    }

    #[test]
    fn defaults() {
        let o = MadOptions::default();
        // 3 sends an SMP: the first and 2 retries, what `weft apply` and `weft audit` send.
        assert_eq!(
            (o.ca, o.port, o.timeout_ms, o.retries, o.mkey, o.window),
            (None, 0, 200, 2, None, 16)
        );
        assert_eq!(clamp(u32::MAX), c_int::MAX);
    }
}
