//! The `opensm` target: a site that keeps OpenSM as its subnet manager gets weft's state
//! through OpenSM's own files, and OpenSM distributes it on its next sweep.
//!
//! OpenSM reads its routing from the `file` engine (`routing_engine file`, `lfts_file PATH`),
//! partitions from `partition_config_file`, the QoS policy from `qos_policy_file`, and the QoS
//! settings from the `qos*` lines of its `opensm.conf`. On SIGHUP it re-reads the
//! configuration (the `qos*` lines may change at run time; the paths may not) and sweeps
//! again, routing with the files' new contents. So the hand-off checks that the running
//! configuration names those files, replaces their contents (each file whole: written beside
//! and renamed over, the previous one kept as `FILE.weft-prev`), merges the `qos*` lines into
//! `opensm.conf`, and then the caller signals OpenSM.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
}

/// The `key value` lines of an OpenSM configuration (the last one wins, and a value is its
/// first word, as in OpenSM).
pub fn conf_values(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // OpenSM takes the first word after the key (`strtok_r` on blanks); the rest of the
        // line is ignored.
        let mut words = line.split_ascii_whitespace();
        if let (Some(k), Some(v)) = (words.next(), words.next()) {
            out.insert(k.to_owned(), v.to_owned());
        }
    }
    out
}

/// `conf` with every `key` of `lines` set to its value there: an existing line replaced in
/// place, a missing key appended (with a comment saying weft set it).
pub fn merge_conf(conf: &str, lines: &BTreeMap<String, String>) -> String {
    let mut done = std::collections::BTreeSet::new();
    let mut out = String::new();
    for line in conf.lines() {
        let key = line.split_whitespace().next().unwrap_or("");
        let replaced = (!line.trim_start().starts_with('#'))
            .then(|| lines.get(key))
            .flatten()
            .map(|v| {
                done.insert(key.to_owned());
                format!("{key} {v}")
            });
        match replaced {
            Some(l) => out += &l,
            None => out += line,
        }
        out.push('\n');
    }
    let missing: Vec<_> = lines.iter().filter(|(k, _)| !done.contains(*k)).collect();
    if !missing.is_empty() {
        out += "# set by weft apply --target opensm\n";
        for (k, v) in missing {
            out += &format!("{k} {v}\n");
        }
    }
    out
}

/// Writes `text` to `path` whole (beside it, synced, renamed over it), keeping what was there
/// as `path.weft-prev`.
fn replace(path: &Path, text: &str) -> Result<(), OpensmError> {
    use std::io::Write as _;
    let io = |source| OpensmError::Io {
        path: path.to_owned(),
        source,
    };
    // A symbolic link is followed: the site's file is replaced, the link kept.
    let real = path
        .is_symlink()
        .then(|| std::fs::canonicalize(path).ok())
        .flatten();
    let path = real.as_deref().unwrap_or(path);
    if path.exists() {
        let mut prev = path.as_os_str().to_owned();
        prev.push(".weft-prev");
        std::fs::copy(path, PathBuf::from(prev)).map_err(io)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".weft-new");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
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
    let partitions = build.join("partitions.conf");
    let policy = build.join("qos-policy.conf");
    let qos = build.join("opensm.conf");
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
    let mut files = vec![(lfts_file, read(&build.join("lfts.dump"))?)];
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn qos_lines_replace_in_place_and_append_the_rest() {
        let conf =
            "# site settings\nrouting_engine file\nqos FALSE\n# qos_max_vls 2\nlog_flags 0x03\n";
        let lines = conf_values("qos TRUE\nqos_max_vls 8\nqos_sl2vl 0,1,2\n");
        assert_eq!(
            merge_conf(conf, &lines),
            "# site settings\nrouting_engine file\nqos TRUE\n# qos_max_vls 2\nlog_flags 0x03\n\
             # set by weft apply --target opensm\nqos_max_vls 8\nqos_sl2vl 0,1,2\n"
        );
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
