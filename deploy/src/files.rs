//! Files weft creates where another local user might interfere: lock files, and files replaced
//! whole.
//!
//! weft runs as root when it writes a fabric, so no file it creates may be reached through a
//! name someone else could have planted. Two rules hold here:
//!
//! - **Locks** live in a *run directory* only the current user can write ([`run_dir`],
//!   [`private_dir`]): not a symbolic link, owned by the current user, not writable by group or
//!   others. A lock file there ([`lock`]) is created with `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`
//!   and mode 0600 or, when it exists, opened with `O_NOFOLLOW` and taken only as a regular file
//!   owned by the current user; it is never truncated. It is held with `flock`, which the kernel
//!   releases when the holder exits, however it ends (a killed process's lock is free again).
//!   Lock files are never removed: removing one races with a process that has just opened it.
//! - **Files replaced whole** ([`Pending`], [`replace`]) are written to a temporary file created
//!   beside the target with `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC` under an unpredictable name
//!   (`.NAME.weft-` and 16 random hex digits, mode 0600 while written), synced, given the
//!   target's permission bits, renamed over the target, and the directory is synced: a crash
//!   leaves the old file or the new one, whole. A target that is a symbolic link is written
//!   through ([`Pending::beside`]: the file at the end of the chain is replaced, the link
//!   stays); [`Pending::at`] replaces the name itself (a link planted there is replaced by the
//!   file, never followed).
//!
//! [`exchange`] and [`sync_dir`] are the two steps `weft build -o DIR` puts a directory in place
//! with. Everything here is Linux; errors are [`FileError`], naming the path and why.

use rustix::fs::{self as rfs, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt as _};
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};

/// Why a file or directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A system call failed.
    #[error("cannot {what} {path}: {source}")]
    Io {
        /// What was being done ("create", "rename to …").
        what: String,
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A symbolic link where weft does not follow one.
    #[error(
        "{path} is a symbolic link; weft does not follow a link at a name another user could \
         have planted"
    )]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// Owned by another user, who could plant names in it.
    #[error(
        "{path} is owned by uid {owner}, not by this user (uid {uid}); use a directory of your own"
    )]
    Foreign {
        /// The directory or file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The current (effective) user.
        uid: u32,
    },
    /// Writable by group or others, who could plant names in it.
    #[error(
        "{path} is writable by group or others (mode {mode:04o}); only its owner may write it \
         (chmod go-w)"
    )]
    Writable {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Not a directory.
    #[error("{path} is not a directory")]
    NotDirectory {
        /// The path.
        path: PathBuf,
    },
    /// Not a regular file.
    #[error("{path} is not a regular file")]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// A chain of symbolic links that does not end.
    #[error("{path}: too many levels of symbolic links")]
    Loop {
        /// Where the chain starts.
        path: PathBuf,
    },
    /// A name that is not one entry of a directory.
    #[error("`{name}` is not a file name")]
    BadName {
        /// The name.
        name: String,
    },
    /// No run directory could be chosen.
    #[error(
        "no directory for lock files: not running as root and XDG_RUNTIME_DIR is not set; give \
         --lock-dir DIR or set {RUN_DIR_ENV} (a directory only you can write)"
    )]
    NoRunDir,
    /// Another process holds the lock.
    #[error("{path} is held by another process")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
}

impl weft_fabric::code::Coded for FileError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            FileError::Io { .. } => "weft::deploy::file_io",
            FileError::Symlink { .. } => "weft::deploy::file_symlink",
            FileError::Foreign { .. } => "weft::deploy::file_foreign",
            FileError::Writable { .. } => "weft::deploy::file_writable",
            FileError::NotDirectory { .. } => "weft::deploy::file_not_directory",
            FileError::NotRegular { .. } => "weft::deploy::file_not_regular",
            FileError::Loop { .. } => "weft::deploy::file_loop",
            FileError::BadName { .. } => "weft::deploy::file_bad_name",
            FileError::NoRunDir => "weft::deploy::no_run_dir",
            FileError::Locked { .. } => "weft::deploy::file_locked",
        }
    }
}

fn io(what: impl Into<String>, path: &Path, source: impl Into<std::io::Error>) -> FileError {
    FileError::Io {
        what: what.into(),
        path: path.to_owned(),
        source: source.into(),
    }
}

/// The environment variable naming the run directory (below `--lock-dir`, above the default).
pub const RUN_DIR_ENV: &str = "WEFT_RUN_DIR";
/// The run directory of root.
pub const ROOT_RUN_DIR: &str = "/run/weft";

/// The run directory for lock files, ready to use: `given` (`--lock-dir`) when there is one,
/// else `$WEFT_RUN_DIR`, else [`ROOT_RUN_DIR`] when running as root, else
/// `$XDG_RUNTIME_DIR/weft`; created (mode 0700) if missing, and checked by [`private_dir`].
pub fn run_dir(given: Option<&Path>) -> Result<PathBuf, FileError> {
    let env = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = choose_run_dir(
        given,
        env(RUN_DIR_ENV),
        rustix::process::geteuid().is_root(),
        env("XDG_RUNTIME_DIR"),
    )
    .ok_or(FileError::NoRunDir)?;
    private_dir(&dir)?;
    Ok(dir)
}

/// Which run directory [`run_dir`] takes.
fn choose_run_dir(
    given: Option<&Path>,
    env: Option<PathBuf>,
    root: bool,
    xdg: Option<PathBuf>,
) -> Option<PathBuf> {
    given
        .map(Path::to_owned)
        .or(env)
        .or_else(|| root.then(|| PathBuf::from(ROOT_RUN_DIR)))
        .or_else(|| xdg.map(|x| x.join("weft")))
}

/// Creates `dir` (its last component, mode 0700) if it is missing, and checks that only the
/// current user can write it: not a symbolic link, owned by the current user, not writable by
/// group or others. Each refusal names the reason.
pub fn private_dir(dir: &Path) -> Result<(), FileError> {
    let dir = plain(dir);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("create", &dir, e)),
    }
    open_private_dir(&dir).map(drop)
}

/// Opens `dir` without following a link there and checks it as [`private_dir`] says.
fn open_private_dir(dir: &Path) -> Result<File, FileError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd =
        rfs::open(dir, flags, Mode::empty()).map_err(|e| match std::fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => FileError::Symlink {
                path: dir.to_owned(),
            },
            Ok(m) if !m.is_dir() => FileError::NotDirectory {
                path: dir.to_owned(),
            },
            _ => io("open", dir, e),
        })?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(|e| io("read", dir, e))?;
    let uid = rustix::process::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(FileError::Foreign {
            path: dir.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(FileError::Writable {
            path: dir.to_owned(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(file)
}

/// A held lock: released when dropped, or when the process ends however it ends.
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
}

impl Lock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open lock file: the lock is held as long as it (or a duplicate) is open.
    pub fn into_file(self) -> File {
        self.file
    }
}

/// Takes the lock `name` in the run directory `dir` without waiting: [`FileError::Locked`] when
/// another process (or another open of the same file) holds it. `dir` must pass
/// [`private_dir`]'s checks (it is not created here); the lock file is created exclusively
/// without following a link, or opened without following one and taken only as a regular file
/// of the current user's. Nothing is ever truncated.
pub fn lock(dir: &Path, name: &str) -> Result<Lock, FileError> {
    check_name(name)?;
    let dir = plain(dir);
    let d = open_private_dir(&dir)?;
    let path = dir.join(name);
    let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let mut opened = None;
    // Created, or else opened; a file removed between the two is created on the next round.
    for _ in 0..3 {
        match rfs::openat(
            &d,
            name,
            flags | OFlags::CREATE | OFlags::EXCL,
            Mode::RUSR | Mode::WUSR,
        ) {
            Ok(fd) => {
                opened = Some(File::from(fd));
                break;
            }
            Err(Errno::EXIST) => {}
            Err(e) => return Err(io("create", &path, e)),
        }
        match rfs::openat(&d, name, flags, Mode::empty()) {
            Ok(fd) => {
                let file = File::from(fd);
                let meta = file.metadata().map_err(|e| io("read", &path, e))?;
                if !meta.is_file() {
                    return Err(FileError::NotRegular { path });
                }
                let uid = rustix::process::geteuid().as_raw();
                if meta.uid() != uid {
                    return Err(FileError::Foreign {
                        path,
                        owner: meta.uid(),
                        uid,
                    });
                }
                opened = Some(file);
                break;
            }
            Err(Errno::LOOP) => return Err(FileError::Symlink { path }),
            Err(Errno::ISDIR) => return Err(FileError::NotRegular { path }),
            Err(Errno::NOENT) => {}
            Err(e) => return Err(io("open", &path, e)),
        }
    }
    let file = opened.ok_or_else(|| {
        io(
            "open",
            &path,
            std::io::Error::other("it keeps disappearing"),
        )
    })?;
    match file.try_lock() {
        Ok(()) => Ok(Lock { file, path }),
        Err(std::fs::TryLockError::WouldBlock) => Err(FileError::Locked { path }),
        Err(std::fs::TryLockError::Error(e)) => Err(io("lock", &path, e)),
    }
}

/// `name` is one entry of a directory.
fn check_name(name: &str) -> Result<(), FileError> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(FileError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// `path` without a trailing slash (which would make the kernel follow a final symbolic link)
/// or `.` components.
fn plain(path: &Path) -> PathBuf {
    path.components().collect()
}

/// The directory `path` is in (`.` for a bare name).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Where `path` ends: itself, or the end of its chain of symbolic links (which need not exist).
/// A relative link is taken from the directory the link is in.
pub fn resolve(path: &Path) -> Result<PathBuf, FileError> {
    let mut p = plain(path);
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| io("read the link", &p, e))?;
                p = plain(&if to.is_relative() {
                    parent(&p).join(to)
                } else {
                    to
                });
            }
            _ => return Ok(p),
        }
    }
    Err(FileError::Loop {
        path: path.to_owned(),
    })
}

/// 16 random hex digits (the kernel's random numbers).
fn random_hex() -> Result<String, FileError> {
    let mut b = [0u8; 8];
    let mut filled = 0;
    while filled < b.len() {
        let rest = b.get_mut(filled..).unwrap_or_default();
        match rustix::rand::getrandom(rest, rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(io("read random numbers for", Path::new("a file name"), e)),
        }
    }
    Ok(weft_fabric::hex::encode(&b))
}

/// A file being written beside its target, put in place by [`Pending::commit`]; dropped
/// without a commit, the temporary file is removed.
#[derive(Debug)]
pub struct Pending {
    file: File,
    temp: PathBuf,
    target: PathBuf,
    mode: Option<u32>,
    done: bool,
}

impl Pending {
    /// A temporary file beside where `target` ends ([`resolve`]: a symbolic link is written
    /// through, the link stays). The target, if it exists, must be a regular file.
    pub fn beside(target: &Path) -> Result<Pending, FileError> {
        Pending::create(resolve(target)?)
    }

    /// A temporary file beside `path` itself: the commit replaces the name, whatever is there
    /// (a symbolic link is replaced, not followed; a directory is an error).
    pub fn at(path: &Path) -> Result<Pending, FileError> {
        Pending::create(plain(path))
    }

    fn create(target: PathBuf) -> Result<Pending, FileError> {
        let Some(name) = target.file_name().map(OsStrExt::as_bytes) else {
            return Err(FileError::BadName {
                name: target.display().to_string(),
            });
        };
        let mode = match std::fs::symlink_metadata(&target) {
            Ok(m) if m.is_file() => Some(m.mode() & 0o777),
            Ok(m) if m.file_type().is_symlink() => None,
            Ok(_) => return Err(FileError::NotRegular { path: target }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io("read", &target, e)),
        };
        let dir = parent(&target);
        // The temporary name keeps the start of the target's (a name has at most 255 bytes).
        let keep = name.get(..name.len().min(200)).unwrap_or_default();
        for _ in 0..8 {
            let mut temp = b".".to_vec();
            temp.extend_from_slice(keep);
            temp.extend_from_slice(b".weft-");
            temp.extend_from_slice(random_hex()?.as_bytes());
            let temp = dir.join(OsString::from_vec(temp));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags((OFlags::NOFOLLOW | OFlags::CLOEXEC).bits() as i32)
                .open(&temp)
            {
                Ok(file) => {
                    return Ok(Pending {
                        file,
                        temp,
                        target,
                        mode,
                        done: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io("create", &temp, e)),
            }
        }
        Err(io(
            "create a temporary file in",
            &dir,
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        ))
    }

    /// The temporary file.
    pub fn temp(&self) -> &Path {
        &self.temp
    }

    /// The file the commit replaces.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Gives the file these permission bits instead of the target's (or, for a new target,
    /// the default of `0666` less the umask).
    pub fn set_mode(&mut self, mode: u32) {
        self.mode = Some(mode & 0o777);
    }

    /// Appends `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        self.file
            .write_all(bytes)
            .map_err(|e| io("write", &self.temp, e))
    }

    /// Puts the file in place: its permissions set, synced, renamed over the target, the
    /// directory synced. Returns the path written (the end of the target's links).
    pub fn commit(mut self) -> Result<PathBuf, FileError> {
        let mode = self.mode.unwrap_or_else(default_mode);
        self.file
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io("set the permissions of", &self.temp, e))?;
        self.file
            .sync_all()
            .map_err(|e| io("sync", &self.temp, e))?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| {
            io(
                format!("rename {} to", self.temp.display()),
                &self.target,
                e,
            )
        })?;
        self.done = true;
        sync_dir(&parent(&self.target))?;
        Ok(self.target.clone())
    }
}

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// The permissions of a new file: `0666` less the umask (read from `/proc/self/status`; `0600`
/// when it cannot be read).
fn default_mode() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .map_or(0o600, |umask| 0o666 & !umask)
}

/// Writes `bytes` to `target` whole: a temporary file created exclusively beside it, synced,
/// renamed over it, the directory synced (see [`Pending`]; a symbolic link at `target` is
/// written through). Returns the path written.
pub fn replace(target: &Path, bytes: &[u8]) -> Result<PathBuf, FileError> {
    let mut p = Pending::beside(target)?;
    p.write_all(bytes)?;
    p.commit()
}

/// Appends `bytes` to the file where `target` ends ([`resolve`]: a symbolic link is written
/// through, as [`replace`] does), creating it (mode `0666` less the umask) when missing, and
/// syncs its data. The end of the chain is opened with `O_NOFOLLOW` (a link planted after the
/// chain was read is refused) and `O_NONBLOCK` (a FIFO does not block the open) and must be a
/// regular file. Returns the path written.
pub fn append(target: &Path, bytes: &[u8]) -> Result<PathBuf, FileError> {
    let path = resolve(target)?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK).bits() as i32)
        .open(&path)
        .map_err(|e| match e.raw_os_error().map(Errno::from_raw_os_error) {
            Some(Errno::LOOP) => FileError::Symlink { path: path.clone() },
            _ => io("open", &path, e),
        })?;
    let regular = f.metadata().map_err(|e| io("read", &path, e))?.is_file();
    if !regular {
        return Err(FileError::NotRegular { path });
    }
    f.write_all(bytes).map_err(|e| io("append to", &path, e))?;
    f.sync_data().map_err(|e| io("sync", &path, e))?;
    Ok(path)
}

/// Syncs the directory `dir` (its entries: a rename in it is durable). A filesystem that cannot
/// sync a directory (`EINVAL`) has nothing more to make durable.
pub fn sync_dir(dir: &Path) -> Result<(), FileError> {
    let d = rfs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io("open", dir, e))?;
    match rfs::fsync(&d) {
        Ok(()) | Err(Errno::INVAL | Errno::OPNOTSUPP) => Ok(()),
        Err(e) => Err(io("sync", dir, e)),
    }
}

/// Swaps the entries `a` and `b` (both must exist) in one step: `renameat2(RENAME_EXCHANGE)`.
/// `Ok(false)` when the filesystem or kernel cannot (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`):
/// nothing changed.
pub fn exchange(a: &Path, b: &Path) -> Result<bool, FileError> {
    match rfs::renameat_with(rfs::CWD, a, rfs::CWD, b, RenameFlags::EXCHANGE) {
        Ok(()) => Ok(true),
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => Ok(false),
        Err(e) => Err(io(format!("exchange {} with", a.display()), b, e)),
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::print_stdout,
        reason = "test helpers say on the terminal what they skipped or measured"
    )]
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh private directory for one test.
    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("weft-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    #[test]
    fn the_run_directory_is_chosen_in_order() {
        let p = |s: &str| Some(PathBuf::from(s));
        let given = Path::new("/given");
        assert_eq!(
            choose_run_dir(Some(given), p("/env"), true, p("/xdg")),
            p("/given")
        );
        assert_eq!(choose_run_dir(None, p("/env"), true, p("/xdg")), p("/env"));
        assert_eq!(choose_run_dir(None, None, true, p("/xdg")), p("/run/weft"));
        assert_eq!(choose_run_dir(None, None, false, p("/xdg")), p("/xdg/weft"));
        assert_eq!(choose_run_dir(None, None, false, None), None);
        assert!(FileError::NoRunDir.to_string().contains("--lock-dir"));
    }

    #[test]
    fn a_missing_run_directory_is_created_private() {
        let d = tmp("create");
        let run = d.join("run");
        assert_eq!(run_dir(Some(&run)).unwrap(), run);
        let m = std::fs::symlink_metadata(&run).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.mode() & 0o077, 0);
        std::fs::remove_dir_all(d).unwrap();
    }

    /// A run directory others could write, a link, one owned by someone else: refused, naming
    /// why, and no lock file is made in it.
    #[test]
    fn a_run_directory_others_can_write_is_refused() {
        let d = tmp("refused");
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        for mode in [0o770, 0o757, 0o1777] {
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = lock(&open, "x.lock").unwrap_err();
            assert!(matches!(e, FileError::Writable { .. }), "{mode:o}: {e}");
            assert!(e.to_string().contains("writable by group or others"), "{e}");
            assert!(run_dir(Some(&open)).is_err());
        }
        assert!(!open.join("x.lock").exists());

        let private = d.join("private");
        std::fs::create_dir(&private).unwrap();
        let link = d.join("link");
        symlink(&private, &link).unwrap();
        for l in [link.clone(), link.join("")] {
            let e = lock(&l, "x.lock").unwrap_err();
            assert!(matches!(e, FileError::Symlink { .. }), "{e}");
        }
        assert!(!private.join("x.lock").exists());
        let file = d.join("file");
        std::fs::write(&file, "").unwrap();
        let e = run_dir(Some(&file)).unwrap_err();
        assert!(matches!(e, FileError::NotDirectory { .. }), "{e}");

        // Someone else's directory: as root, one given to nobody; otherwise `/`.
        let foreign = if rustix::process::geteuid().is_root() {
            let f = d.join("foreign");
            std::fs::create_dir(&f).unwrap();
            std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
            f
        } else {
            PathBuf::from("/")
        };
        let e = lock(&foreign, "x.lock").unwrap_err();
        assert!(matches!(e, FileError::Foreign { .. }), "{e}");
        assert!(e.to_string().contains("not by this user"), "{e}");
        std::fs::remove_dir_all(d).unwrap();
    }

    /// A symbolic link planted at the lock's name is not followed: the file it points at keeps
    /// its contents, and the lock is refused. So is a lock file of someone else's, or one that
    /// is not a regular file.
    #[test]
    fn a_planted_link_at_the_lock_is_not_followed() {
        let d = tmp("planted");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let run = d.join("run");
        std::fs::DirBuilder::new().mode(0o700).create(&run).unwrap();
        symlink(&victim, run.join("a.lock")).unwrap();
        let e = lock(&run, "a.lock").unwrap_err();
        assert!(matches!(e, FileError::Symlink { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        // A dangling link is not followed either (nothing is created where it points).
        symlink(d.join("nowhere"), run.join("b.lock")).unwrap();
        assert!(matches!(
            lock(&run, "b.lock").unwrap_err(),
            FileError::Symlink { .. }
        ));
        assert!(!d.join("nowhere").exists());
        std::fs::create_dir(run.join("c.lock")).unwrap();
        assert!(matches!(
            lock(&run, "c.lock").unwrap_err(),
            FileError::NotRegular { .. }
        ));
        if rustix::process::geteuid().is_root() {
            std::fs::write(run.join("d.lock"), "").unwrap();
            std::os::unix::fs::chown(run.join("d.lock"), Some(65534), None).unwrap();
            assert!(matches!(
                lock(&run, "d.lock").unwrap_err(),
                FileError::Foreign { .. }
            ));
        }
        for bad in ["", ".", "..", "a/b"] {
            assert!(matches!(
                lock(&run, bad).unwrap_err(),
                FileError::BadName { .. }
            ));
        }
        std::fs::remove_dir_all(d).unwrap();
    }

    /// Two locks on one name exclude each other; dropped, the lock is free; an existing lock
    /// file is taken again without being truncated.
    #[test]
    fn two_locks_on_one_name_exclude_each_other() {
        let d = tmp("twice");
        let a = lock(&d, "x.lock").unwrap();
        assert_eq!(a.path(), d.join("x.lock"));
        let meta = std::fs::metadata(a.path()).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        let e = lock(&d, "x.lock").unwrap_err();
        assert!(matches!(e, FileError::Locked { .. }), "{e}");
        drop(a);
        std::fs::write(d.join("x.lock"), "kept").unwrap();
        let b = lock(&d, "x.lock").unwrap();
        assert_eq!(std::fs::read_to_string(b.path()).unwrap(), "kept");
        std::fs::remove_dir_all(d).unwrap();
    }

    const HOLDER: &str = "WEFT_TEST_HOLD_LOCK";

    /// Run as a child process by the test below: takes the lock, says so, and waits for its
    /// end (it is killed). Without the variable it does nothing.
    #[test]
    fn lock_holder() {
        let Some(dir) = std::env::var_os(HOLDER) else {
            return;
        };
        let _held = lock(Path::new(&dir), "held.lock").unwrap();
        println!("weft-lock-held");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }

    /// A process holding the lock excludes this one; killed (SIGKILL, no cleanup), its lock is
    /// free again.
    #[test]
    fn a_killed_holders_lock_is_free_again() {
        use std::io::BufRead as _;
        let d = tmp("killed");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "files::tests::lock_holder", "--nocapture"])
            .env(HOLDER, &d)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let held = std::io::BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("weft-lock-held"));
        assert!(held, "the holder did not take the lock");
        let e = lock(&d, "held.lock").unwrap_err();
        assert!(matches!(e, FileError::Locked { .. }), "{e}");
        child.kill().unwrap();
        child.wait().unwrap();
        lock(&d, "held.lock").unwrap();
        std::fs::remove_dir_all(d).unwrap();
    }

    /// A file replaced whole: through a symbolic link (the link stays), its permissions kept, no
    /// temporary file left; a link planted at a predictable temporary name is never used.
    #[test]
    fn replace_writes_through_a_link_and_keeps_the_mode() {
        let d = tmp("replace");
        let real = d.join("real.conf");
        std::fs::write(&real, "old\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.join("site.conf");
        symlink("real.conf", &link).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        for planted in [
            "site.conf.weft-new",
            ".real.conf.weft-tmp",
            "real.conf.weft-new",
        ] {
            symlink(&victim, d.join(planted)).unwrap();
        }
        assert_eq!(replace(&link, b"new\n").unwrap(), real);
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new\n");
        assert_eq!(
            std::fs::metadata(&real).unwrap().mode() & 0o777,
            0o640,
            "the mode is kept"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        let mut names: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ".real.conf.weft-tmp",
                "real.conf",
                "real.conf.weft-new",
                "site.conf",
                "site.conf.weft-new",
                "victim"
            ]
        );
        // A directory is not a file to replace; an unfinished one leaves nothing.
        std::fs::create_dir(d.join("dir")).unwrap();
        assert!(matches!(
            replace(&d.join("dir"), b"x").unwrap_err(),
            FileError::NotRegular { .. }
        ));
        let p = Pending::beside(&d.join("new")).unwrap();
        let temp = p.temp().to_owned();
        assert!(temp.exists());
        drop(p);
        assert!(!temp.exists() && !d.join("new").exists());
        std::fs::remove_dir_all(d).unwrap();
    }

    /// [`Pending::at`] replaces a symbolic link at its name with the file: the file the link
    /// pointed at is untouched.
    #[test]
    fn pending_at_replaces_a_link_without_following_it() {
        let d = tmp("at");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let prev = d.join("lfts.weft-prev");
        symlink(&victim, &prev).unwrap();
        let mut p = Pending::at(&prev).unwrap();
        p.set_mode(0o644);
        p.write_all(b"previous\n").unwrap();
        assert_eq!(p.commit().unwrap(), prev);
        assert!(std::fs::symlink_metadata(&prev).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&prev).unwrap(), "previous\n");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        std::fs::remove_dir_all(d).unwrap();
    }

    /// [`append`] adds to the end (creating the file), through a link like [`replace`]; a
    /// FIFO or a directory is refused, and the open does not block on the FIFO.
    #[test]
    fn append_adds_to_a_regular_file_only() {
        let d = tmp("append");
        let log = d.join("repath.log");
        assert_eq!(append(&log, b"one\n").unwrap(), log);
        append(&log, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        let link = d.join("link.log");
        symlink("repath.log", &link).unwrap();
        assert_eq!(append(&link, b"three\n").unwrap(), log);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\nthree\n");
        let fifo = d.join("fifo");
        rustix::fs::mknodat(
            rfs::CWD,
            &fifo,
            rfs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = append(&fifo, b"x").unwrap_err();
        assert!(
            matches!(e, FileError::NotRegular { .. } | FileError::Io { .. }),
            "{e}"
        );
        assert!(matches!(
            append(&d, b"x").unwrap_err(),
            FileError::NotRegular { .. } | FileError::Io { .. }
        ));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn exchange_swaps_two_directories() {
        let d = tmp("exchange");
        std::fs::create_dir(d.join("a")).unwrap();
        std::fs::write(d.join("a/x"), "a").unwrap();
        std::fs::create_dir(d.join("b")).unwrap();
        std::fs::write(d.join("b/x"), "b").unwrap();
        if exchange(&d.join("a"), &d.join("b")).unwrap() {
            assert_eq!(std::fs::read_to_string(d.join("a/x")).unwrap(), "b");
            assert_eq!(std::fs::read_to_string(d.join("b/x")).unwrap(), "a");
        } else {
            println!("this filesystem has no RENAME_EXCHANGE; nothing was swapped");
            assert_eq!(std::fs::read_to_string(d.join("a/x")).unwrap(), "a");
        }
        assert!(exchange(&d.join("a"), &d.join("missing")).is_err());
        sync_dir(&d).unwrap();
        std::fs::remove_dir_all(d).unwrap();
    }
}
