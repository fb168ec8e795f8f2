//! The `opensm` target: a site that keeps OpenSM as its subnet manager gets weft's state
//! through OpenSM's own files, and OpenSM distributes it on its next sweep.
//!
//! OpenSM reads its routing from the `file` engine (`routing_engine file`, `lfts_file PATH`),
//! partitions from `partition_config_file`, the QoS policy from `qos_policy_file`, and the QoS
//! settings from the `qos*` lines of its `opensm.conf`. On SIGHUP it re-reads the
//! configuration (the `qos*` lines may change at run time; the paths may not) and sweeps
//! again, routing with the files' new contents. So the hand-off checks that the running
//! configuration names those files, replaces their contents (each file whole: written beside
//! and written to a temporary file created exclusively beside it under an unpredictable name and
//! renamed over it, the previous one kept as `FILE.weft-prev`; a link planted at either name is
//! never followed), merges the `qos*` lines into
//! `opensm.conf`, and then the caller signals OpenSM.

use crate::files;
use std::path::{Path, PathBuf};
use weft_formats::build_dir;
use weft_formats::opensm::{conf_values, merge_conf};

/// Why the hand-off cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum OpensmError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A file could not be replaced safely (see [`files`]).
    #[error(transparent)]
    File(#[from] files::FileError),
    /// OpenSM's configuration does not route from a file weft can write.
    #[error(
        "{conf} has {what}; OpenSM must route with the file engine: set `routing_engine file` \
         and `lfts_file PATH` there and restart OpenSM once (these are read only at start)"
    )]
    NotFileEngine {
        /// The configuration file.
        conf: PathBuf,
        /// What it has instead.
        what: String,
    },
    /// The state needs a file OpenSM's configuration does not name.
    #[error("the state has {what}, but {conf} sets no `{key}`; set it and restart OpenSM once")]
    Unset {
        /// The configuration file.
        conf: PathBuf,
        /// What the state has.
        what: &'static str,
        /// The key to set.
        key: &'static str,
    },
    /// OpenSM could not be sent SIGHUP.
    #[error("OpenSM (pid {pid}) could not be signalled: {reason}")]
    Signal {
        /// The process id given.
        pid: u32,
        /// Why.
        reason: String,
    },
}

impl weft_fabric::code::Coded for OpensmError {
    /// The error's registered code ([`crate::CODES`]): a file's own, or the hand-off's.
    fn code(&self) -> &'static str {
        match self {
            OpensmError::Io { .. } => "weft::deploy::opensm_io",
            OpensmError::File(e) => e.code(),
            OpensmError::NotFileEngine { .. } => "weft::deploy::opensm_not_file_engine",
            OpensmError::Unset { .. } => "weft::deploy::opensm_unset",
            OpensmError::Signal { .. } => "weft::deploy::opensm_signal",
        }
    }
}

/// Writes `text` to `path` whole ([`files::replace`]: a temporary file created exclusively
/// beside it under an unpredictable name, synced, renamed over it; a symbolic link at `path` is
/// written through, the link kept), keeping what was there as `FILE.weft-prev` beside the file
/// written (with its permissions; whatever is at that name is replaced, a link never followed).
fn replace(path: &Path, text: &str) -> Result<(), OpensmError> {
    let target = files::resolve(path)?;
    match std::fs::read(&target) {
        Ok(old) => {
            let mut prev = target.as_os_str().to_owned();
            prev.push(".weft-prev");
            let mut p = files::Pending::at(Path::new(&prev))?;
            if let Ok(m) = std::fs::metadata(&target) {
                p.set_mode(std::os::unix::fs::PermissionsExt::mode(&m.permissions()));
            }
            p.write_all(&old)?;
            p.commit()?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(OpensmError::Io {
                path: target,
                source,
            })
        }
    }
    files::replace(&target, text.as_bytes())?;
    Ok(())
}

fn read(path: &Path) -> Result<String, OpensmError> {
    std::fs::read_to_string(path).map_err(|source| OpensmError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Hands the `weft build` directory `build` to the OpenSM configured by `conf`: the files
/// written, in order.
pub fn hand_off(build: &Path, conf: &Path) -> Result<Vec<PathBuf>, OpensmError> {
    let conf_text = read(conf)?;
    let values = conf_values(&conf_text);
    let engine = values.get("routing_engine").cloned().unwrap_or_default();
    if engine.split(',').next().map(str::trim) != Some("file") {
        return Err(OpensmError::NotFileEngine {
            conf: conf.to_owned(),
            what: if engine.is_empty() {
                "no `routing_engine`".to_owned()
            } else {
                format!("`routing_engine {engine}`")
            },
        });
    }
    let named = |key: &'static str| {
        values
            .get(key)
            .filter(|v| !v.is_empty() && *v != "(null)")
            .map(PathBuf::from)
    };
    let lfts_file = named("lfts_file").ok_or_else(|| OpensmError::NotFileEngine {
        conf: conf.to_owned(),
        what: "no `lfts_file`".to_owned(),
    })?;
    // What each file of the build needs, checked before anything is written.
    let partitions = build.join(build_dir::PARTITIONS);
    let policy = build.join(build_dir::QOS_POLICY);
    let qos = build.join(build_dir::OPENSM_CONF);
    let needed = |file: &Path, key: &'static str, what: &'static str| {
        if !file.exists() {
            return Ok(None);
        }
        named(key).map(Some).ok_or(OpensmError::Unset {
            conf: conf.to_owned(),
            what,
            key,
        })
    };
    let partition_file = needed(&partitions, "partition_config_file", "partitions")?;
    let policy_file = needed(&policy, "qos_policy_file", "a QoS policy")?;
    // Every file read, and every place to write checked, before anything is written: a
    // hand-off stops whole or not at all.
    let mut files = vec![(lfts_file, read(&build.join(build_dir::LFTS))?)];
    if let Some(p) = partition_file {
        files.push((p, read(&partitions)?));
    }
    if let Some(p) = policy_file {
        files.push((p, read(&policy)?));
    }
    if qos.exists() {
        // Only the QoS settings: the paths OpenSM routes from are the site's.
        let mut lines = conf_values(&read(&qos)?);
        lines.retain(|k, _| k.starts_with("qos") && k != "qos_policy_file");
        files.push((conf.to_owned(), merge_conf(&conf_text, &lines)));
    }
    for (path, _) in &files {
        if path.is_dir() {
            return Err(OpensmError::Io {
                path: path.clone(),
                source: std::io::Error::other("a directory, not a file"),
            });
        }
    }
    for (path, text) in &files {
        replace(path, text)?;
    }
    Ok(files.into_iter().map(|(path, _)| path).collect())
}

/// Sends OpenSM (process `pid`) SIGHUP: it re-reads its configuration and the files
/// [`hand_off`] wrote, and sweeps again. Process id 0 (which would signal weft's own process
/// group) and ids beyond a process id's range are refused.
pub fn signal(pid: u32) -> Result<(), OpensmError> {
    let refused = |reason: String| OpensmError::Signal { pid, reason };
    let id = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| refused("not a process id".to_owned()))?;
    rustix::process::kill_process(id, rustix::process::Signal::HUP)
        .map_err(|e| refused(e.to_string()))
}

/// What OpenSM writes in its log (`-f FILE`) when a sweep brought the subnet up.
pub const SUBNET_UP: &str = "SUBNET UP";
/// What each of OpenSM's error lines holds (its level, between blanks).
pub const ERROR_MARK: &str = " ERR ";

/// OpenSM's log from a mark on: what a hand-off waits for after [`signal`], without counting
/// what OpenSM wrote before it.
#[derive(Clone, Debug)]
pub struct OpensmLog {
    path: PathBuf,
    /// Bytes the log held at the mark.
    offset: u64,
}

impl OpensmLog {
    /// The log at `path` from its present end on (a log that cannot be read yet: from its
    /// start).
    pub fn mark(path: &Path) -> OpensmLog {
        OpensmLog {
            path: path.to_owned(),
            offset: std::fs::metadata(path).map_or(0, |m| m.len()),
        }
    }

    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What OpenSM wrote since the mark: all of the log when it is now shorter than the mark
    /// (rotated or truncated); nothing when it cannot be read. Bytes that are not UTF-8 read as
    /// U+FFFD.
    pub fn since(&self) -> String {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return String::new();
        };
        let len = f.metadata().map_or(0, |m| m.len());
        let from = if len < self.offset { 0 } else { self.offset };
        let mut bytes = Vec::new();
        if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut bytes).is_err() {
            return String::new();
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Whether a sweep brought the subnet up since the mark.
    pub fn swept(&self) -> bool {
        self.since().contains(SUBNET_UP)
    }

    /// The error lines OpenSM wrote since the mark.
    pub fn errors(&self) -> Vec<String> {
        self.since()
            .lines()
            .filter(|l| l.contains(ERROR_MARK))
            .map(str::to_owned)
            .collect()
    }

    /// Waits for a sweep since the mark, looking every 100 ms, for up to `timeout`: then the
    /// error lines written since the mark (none: a clean sweep), or `None` when no sweep
    /// brought the subnet up in time.
    pub fn wait_for_sweep(&self, timeout: std::time::Duration) -> Option<Vec<String>> {
        let start = std::time::Instant::now();
        while !self.swept() {
            if start.elapsed() >= timeout {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Some(self.errors())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_read_from_the_mark_on() {
        use std::io::Write as _;
        let dir = std::env::temp_dir().join(format!("weft-osm-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("osm.log");
        let append = |text: &str| {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        // Not there yet: from its start.
        let early = OpensmLog::mark(&path);
        append("1 osm_x ERR 0A01: old\n2 SUBNET UP\n");
        assert!(early.swept());
        assert_eq!(early.errors(), ["1 osm_x ERR 0A01: old"]);
        // What came before the mark does not count.
        let log = OpensmLog::mark(&path);
        assert!(!log.swept());
        assert!(log.errors().is_empty());
        assert_eq!(
            log.wait_for_sweep(std::time::Duration::ZERO),
            None,
            "no sweep since the mark"
        );
        append("3 osm_y ERR 0B02: new\n4 SUBNET UP\n5 ERRANT is not an error\n");
        assert_eq!(
            log.wait_for_sweep(std::time::Duration::ZERO),
            Some(vec!["3 osm_y ERR 0B02: new".to_owned()])
        );
        // Rotated: shorter than the mark, read whole.
        let late = OpensmLog::mark(&path);
        std::fs::write(&path, "6 SUBNET UP\n").unwrap();
        assert!(late.swept());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sighup_goes_to_the_process_named() {
        use std::os::unix::process::ExitStatusExt as _;
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        signal(child.id()).unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(1), "SIGHUP");
        // Process 0 would be weft's own group.
        for pid in [0, u32::MAX] {
            let e = signal(pid).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("OpenSM (pid {pid}) could not be signalled: not a process id")
            );
        }
    }

    #[test]
    fn another_engine_is_refused_before_anything_is_written() {
        let dir = std::env::temp_dir().join(format!("weft-osm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("opensm.conf");
        for (text, what) in [
            (
                "routing_engine ftree\nlfts_file /x\n",
                "`routing_engine ftree`",
            ),
            ("lfts_file /x\n", "no `routing_engine`"),
            ("routing_engine file\n", "no `lfts_file`"),
        ] {
            std::fs::write(&conf, text).unwrap();
            let e = hand_off(&dir, &conf).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// OpenSM takes a value's first word (`strtok` on blanks): the file it reads is the one
    /// written, whatever follows on the line.
    #[test]
    fn the_file_written_is_the_one_opensm_reads() {
        let dir = std::env::temp_dir().join(format!("weft-osm-word-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("lfts.dump"), "weft\n").unwrap();
        let conf = dir.join("site.conf");
        let lfts = dir.join("osm-lfts");
        for tail in [" # weft writes this", "\tand more", " "] {
            std::fs::write(
                &conf,
                format!(
                    "routing_engine\tfile,ftree  \nlfts_file   {}{tail}\n",
                    lfts.display()
                ),
            )
            .unwrap();
            let _ = std::fs::remove_file(&lfts);
            assert_eq!(hand_off(&dir, &conf).unwrap(), [lfts.as_path()], "{tail:?}");
            assert_eq!(std::fs::read_to_string(&lfts).unwrap(), "weft\n");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Links planted at the names the hand-off once wrote through (`FILE.weft-new`, the
    /// temporary file, and `FILE.weft-prev`) are not followed: the files they point at are
    /// untouched; the site's file is replaced and the previous one kept as a regular file.
    #[test]
    fn links_planted_beside_the_site_files_are_not_followed() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("weft-osm-planted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let build = dir.join("build");
        std::fs::create_dir_all(&build).unwrap();
        std::fs::write(build.join("lfts.dump"), "weft\n").unwrap();
        let conf = dir.join("opensm.conf");
        let lfts = dir.join("osm-lfts");
        std::fs::write(
            &conf,
            format!("routing_engine file\nlfts_file {}\n", lfts.display()),
        )
        .unwrap();
        std::fs::write(&lfts, "site\n").unwrap();
        std::fs::set_permissions(&lfts, std::fs::Permissions::from_mode(0o640)).unwrap();
        let (new_victim, prev_victim) = (dir.join("new-victim"), dir.join("prev-victim"));
        std::fs::write(&new_victim, "precious\n").unwrap();
        std::fs::write(&prev_victim, "precious\n").unwrap();
        std::os::unix::fs::symlink(&new_victim, dir.join("osm-lfts.weft-new")).unwrap();
        std::os::unix::fs::symlink(&prev_victim, dir.join("osm-lfts.weft-prev")).unwrap();
        assert_eq!(hand_off(&build, &conf).unwrap(), [lfts.as_path()]);
        assert_eq!(std::fs::read_to_string(&new_victim).unwrap(), "precious\n");
        assert_eq!(std::fs::read_to_string(&prev_victim).unwrap(), "precious\n");
        assert_eq!(std::fs::read_to_string(&lfts).unwrap(), "weft\n");
        let prev = dir.join("osm-lfts.weft-prev");
        assert!(std::fs::symlink_metadata(&prev).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&prev).unwrap(), "site\n");
        for f in [&lfts, &prev] {
            let mode = std::fs::metadata(f).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640, "{}", f.display());
        }
        // Nothing else left beside them.
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "build",
                "new-victim",
                "opensm.conf",
                "osm-lfts",
                "osm-lfts.weft-new",
                "osm-lfts.weft-prev",
                "prev-victim"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A place to write that cannot be written (a directory), or a build file that cannot be
    /// read: nothing is written. The build's `opensm.conf` gives only `qos*` settings.
    #[test]
    fn a_hand_off_is_whole_or_nothing() {
        let dir = std::env::temp_dir().join(format!("weft-osm-whole-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("etc/parts")).unwrap();
        std::fs::write(dir.join("lfts.dump"), "weft\n").unwrap();
        std::fs::write(
            dir.join("partitions.conf"),
            "Default=0x7fff,ipoib : ALL=full;\n",
        )
        .unwrap();
        let conf = dir.join("etc/opensm.conf");
        let lfts = dir.join("etc/lfts");
        std::fs::write(&lfts, "site\n").unwrap();
        let site = format!(
            "routing_engine file\nlfts_file {}\npartition_config_file {}\n",
            lfts.display(),
            dir.join("etc/parts").display()
        );
        std::fs::write(&conf, &site).unwrap();
        let e = hand_off(&dir, &conf).unwrap_err();
        assert!(e.to_string().contains("parts"), "{e}");
        assert_eq!(std::fs::read_to_string(&lfts).unwrap(), "site\n");
        // A build whose opensm.conf names other files: only its QoS lines are taken.
        let site = format!("routing_engine file\nlfts_file {}\n", lfts.display());
        std::fs::write(&conf, &site).unwrap();
        std::fs::remove_file(dir.join("partitions.conf")).unwrap();
        std::fs::write(
            dir.join("opensm.conf"),
            "qos TRUE\nlfts_file /elsewhere\nrouting_engine ftree\nqos_policy_file /x\n",
        )
        .unwrap();
        // The site's configuration is a link to a file elsewhere: that file is written.
        std::fs::rename(&conf, dir.join("etc/real.conf")).unwrap();
        std::os::unix::fs::symlink(dir.join("etc/real.conf"), &conf).unwrap();
        hand_off(&dir, &conf).unwrap();
        assert!(conf.is_symlink());
        assert_eq!(
            std::fs::read_to_string(&conf).unwrap(),
            format!("{site}# set by weft apply --target opensm\nqos TRUE\n")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
