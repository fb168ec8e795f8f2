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

#![allow(unsafe_code)]

use crate::smp::{DrPath, Payload, MAX_HOPS, PAYLOAD};
use crate::transport::{SmpError, Target, Transport};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::fmt;
use std::ptr::NonNull;

/// The library, by its soname.
pub const LIBIBMAD: &str = "libibmad.so.5";
/// The Debian package that holds it.
pub const LIBIBMAD_PACKAGE: &str = "libibmad5";

/// `IB_SMI_CLASS`: LID-routed SMPs.
const IB_SMI_CLASS: c_int = 0x01;
/// `IB_SMI_DIRECT_CLASS`: directed-route SMPs.
const IB_SMI_DIRECT_CLASS: c_int = 0x81;
/// `IB_SUBNET_PATH_HOPS_MAX`: entries of `ib_dr_path_t.p` (the first is the local node).
const IB_SUBNET_PATH_HOPS_MAX: usize = 64;
/// Linux's `ETIMEDOUT`, which libibmad leaves in `errno` when no response came.
const ETIMEDOUT: i32 = 110;

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

/// The libibmad functions the backend calls.
#[derive(Clone, Copy)]
struct Api {
    open_port: OpenPortFn,
    close_port: ClosePortFn,
    query: SmpStatusViaFn,
    set: SmpStatusViaFn,
    set_timeout: SetIntFn,
    set_retries: SetIntFn,
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
}

impl Default for MadOptions {
    /// The first CA's first active port; 200 ms and 3 retries, OpenSM's defaults
    /// (`transaction_timeout`, `transaction_retries`). A switch answers an SMP in
    /// microseconds, so 200 ms only waits on loss; ibsim reports a dropped SMP at once, so
    /// the timeout never runs there.
    fn default() -> MadOptions {
        MadOptions {
            ca: None,
            port: 0,
            timeout_ms: 200,
            retries: 3,
            mkey: None,
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

impl From<MadError> for SmpError {
    fn from(e: MadError) -> SmpError {
        SmpError::Transport(e.to_string())
    }
}

/// The SMI of a local CA port, through libibmad: SMP Get and Set by directed route.
///
/// Closed when dropped. One SMP at a time: libibmad waits for each response.
pub struct Mad {
    port: NonNull<IbmadPort>,
    api: Api,
    tries: u32,
    device: String,
    /// Kept loaded while the port is open; dropped after [`Drop`] closes it.
    _lib: Library,
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
            .finish_non_exhaustive()
    }
}

fn load(library: &str) -> Result<Library, MadError> {
    // SAFETY: loading libibmad runs its initialisers, which only set up static data (it has
    // no constructors with side effects on the process).
    unsafe { Library::new(library) }.map_err(|e| MadError::Load {
        library: library.to_owned(),
        package: LIBIBMAD_PACKAGE,
        reason: e.to_string(),
    })
}

fn symbol<T: Copy>(lib: &Library, library: &str, name: &'static str) -> Result<T, MadError> {
    let mut cname = name.as_bytes().to_vec();
    cname.push(0);
    // SAFETY: every `T` asked for is the function pointer type written from mad.h's
    // prototype of `name`; the pointer is used only while `lib` is loaded (Mad keeps it).
    unsafe { lib.get::<T>(&cname) }
        .map(|s| *s)
        .map_err(|e| MadError::Symbol {
            library: library.to_owned(),
            symbol: name,
            package: LIBIBMAD_PACKAGE,
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

fn clamp(v: u32) -> c_int {
    c_int::try_from(v).unwrap_or(c_int::MAX)
}

impl Mad {
    /// Opens the SMI of a CA port through libibmad (loaded now).
    pub fn open(options: &MadOptions) -> Result<Mad, MadError> {
        Mad::open_with(LIBIBMAD, options)
    }

    fn open_with(library: &str, options: &MadOptions) -> Result<Mad, MadError> {
        let lib = load(library)?;
        let api = Api {
            open_port: symbol(&lib, library, "mad_rpc_open_port")?,
            close_port: symbol(&lib, library, "mad_rpc_close_port")?,
            query: symbol(&lib, library, "smp_query_status_via")?,
            set: symbol(&lib, library, "smp_set_status_via")?,
            set_timeout: symbol(&lib, library, "mad_rpc_set_timeout")?,
            set_retries: symbol(&lib, library, "mad_rpc_set_retries")?,
        };
        let mkey_set: Option<MkeySetFn> = match options.mkey {
            Some(_) => {
                Some(
                    symbol(&lib, library, "smp_mkey_set").map_err(|_| MadError::NoMkey {
                        library: library.to_owned(),
                    })?,
                )
            }
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
        let mut classes = [IB_SMI_CLASS, IB_SMI_DIRECT_CLASS];
        let ca_ptr = ca
            .as_ref()
            .map_or(std::ptr::null_mut(), |c| c.as_ptr().cast_mut());
        // SAFETY: `ca_ptr` is NULL or a NUL-terminated string alive for the call (libibmad
        // only reads it, despite the `char *`); `classes` holds the 2 classes passed.
        let raw =
            unsafe { (api.open_port)(ca_ptr, c_int::from(options.port), classes.as_mut_ptr(), 2) };
        let errno = std::io::Error::last_os_error();
        let port = NonNull::new(raw).ok_or(MadError::Open {
            device: device.clone(),
            reason: errno,
        })?;
        let tries = options.retries.saturating_add(1);
        let mad = Mad {
            port,
            api,
            tries,
            device,
            _lib: lib,
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
}

impl Transport for Mad {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        self.send(target, None)
    }

    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        self.send(target, Some(data))
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
    #![allow(clippy::unwrap_used, clippy::panic)]
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
        let err = Mad::open_with("libibmad-weft-missing.so.5", &MadOptions::default())
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
        assert_eq!(
            (o.ca, o.port, o.timeout_ms, o.retries, o.mkey),
            (None, 0, 200, 3, None)
        );
        assert_eq!(clamp(u32::MAX), c_int::MAX);
    }
}
