//! Per-job traffic files: which hosts run which pattern, when and at what load.
//!
//! One job a line; `#` starts a comment; blank lines are skipped:
//!
//! ```text
//! # job NAME  hosts LIST  pattern SPEC  [load F]  [from T]  [until T]
//! job a  hosts cn[001-032]  pattern all-to-all  load 0.8
//! job b  hosts cn[033-040]  pattern hotspot:1:20%  from 50us until 300us
//! job c  hosts cn041,cn[050-060]  pattern uniform
//! ```
//!
//! `LIST` is host names and Slurm host lists (`cn[001-018]`) separated by commas, no spaces;
//! a name is an end node's name in the state (a host's name as `weft export` writes it).
//! `SPEC` is any `--traffic` pattern; it runs among the job's own hosts only, in the order
//! the list names them (`hotspot:1`'s hot-spot is the job's first host). `load` (above 0,
//! at most 1) overrides `--load` for the job's hosts; `from` and `until` bound when they
//! generate. Hosts in no job are idle; a host in two jobs, a job without hosts or pattern,
//! and anything else not in this shape are errors naming the file, line and column.

use crate::pattern::parse_time;
use crate::{SimError, Traffic};
use weft_formats::hostlist::parse as hostlist;

/// Hosts one job may name, at most (a guard against `cn[1-999999999]`).
const MAX_HOSTS: u64 = 1_000_000;

/// A parsed job file.
#[derive(Clone, Debug, PartialEq)]
pub struct Jobs {
    /// The file's name, as given (errors and the report's `traffic` name it).
    pub file: String,
    /// The jobs, in file order.
    pub jobs: Vec<Job>,
}

/// One job.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Its name.
    pub name: String,
    /// Its hosts' names, in the order the list names them.
    pub hosts: Vec<String>,
    /// Its pattern, among its own hosts.
    pub traffic: Traffic,
    /// Offered load per host (`None`: the run's).
    pub load: Option<f64>,
    /// From when its hosts generate, in nanoseconds (0: the start).
    pub from_ns: u64,
    /// Until when (`None`: the end).
    pub until_ns: Option<u64>,
    /// Where it is written: line and column of the `hosts` list (errors about unknown
    /// hosts point there).
    pub line: usize,
    /// Column of the `hosts` list.
    pub hosts_column: usize,
}

impl Jobs {
    /// Parses the text of job file `file`.
    pub fn parse(file: &str, text: &str) -> Result<Jobs, SimError> {
        let err = |line: usize, column: usize, why: String| SimError::JobFile {
            file: file.to_owned(),
            line,
            column,
            why,
        };
        let mut jobs: Vec<Job> = Vec::new();
        // Host name → (job index).
        let mut owner: std::collections::BTreeMap<String, usize> = Default::default();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let body = raw.split('#').next().unwrap_or("");
            let toks = tokens(body);
            let Some(&(c0, first)) = toks.first() else {
                continue;
            };
            if first != "job" {
                return Err(err(
                    line,
                    c0,
                    format!("a line starts with `job NAME`, not `{first}`"),
                ));
            }
            let Some(&(cn, name)) = toks.get(1) else {
                return Err(err(line, c0 + 3, "`job` needs a name".into()));
            };
            if let Some(j) = jobs.iter().find(|j| j.name == name) {
                return Err(err(
                    line,
                    cn,
                    format!("job `{name}` is already defined on line {}", j.line),
                ));
            }
            let Keys {
                hosts,
                traffic,
                load,
                from,
                until,
            } = parse_keys(file, line, toks.get(2..).unwrap_or_default())?;
            let Some((hosts_column, names)) = hosts else {
                return Err(err(
                    line,
                    c0,
                    format!("job `{name}` names no hosts (`hosts LIST`)"),
                ));
            };
            let Some(traffic) = traffic else {
                return Err(err(
                    line,
                    c0,
                    format!("job `{name}` has no pattern (`pattern SPEC`)"),
                ));
            };
            let from_ns = from.map_or(0, |f| f.1);
            if let Some((cu, u)) = until {
                if u <= from_ns {
                    return Err(err(line, cu, "`until` must be after `from`".into()));
                }
            }
            let idx = jobs.len();
            for h in &names {
                if let Some(&j) = owner.get(h) {
                    let other = jobs.get(j).map_or("?", |o| o.name.as_str());
                    let why = if j == idx {
                        format!("host `{h}` is named twice in job `{name}`")
                    } else {
                        format!(
                            "host `{h}` is in job `{other}` (line {}) and in job `{name}`",
                            jobs.get(j).map_or(0, |o| o.line)
                        )
                    };
                    return Err(err(line, hosts_column, why));
                }
                owner.insert(h.clone(), idx);
            }
            jobs.push(Job {
                name: name.to_owned(),
                hosts: names,
                traffic,
                load,
                from_ns,
                until_ns: until.map(|u| u.1),
                line,
                hosts_column,
            });
        }
        if jobs.is_empty() {
            return Err(err(
                1,
                1,
                "no jobs: write one a line, `job NAME hosts LIST pattern SPEC`".into(),
            ));
        }
        Ok(Jobs {
            file: file.to_owned(),
            jobs,
        })
    }
}

/// A line's tokens with their 1-based character columns.
fn tokens(body: &str) -> Vec<(usize, &str)> {
    let mut toks: Vec<(usize, &str)> = Vec::new();
    let mut start: Option<usize> = None;
    for (b, c) in body.char_indices().chain([(body.len(), ' ')]) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(b),
            (true, Some(s)) => {
                toks.push((
                    body.get(..s).map_or(0, |p| p.chars().count()) + 1,
                    body.get(s..b).unwrap_or(""),
                ));
                start = None;
            }
            _ => {}
        }
    }
    toks
}

/// A job line's `KEY VALUE` pairs, read.
struct Keys {
    /// The hosts' column and names.
    hosts: Option<(usize, Vec<String>)>,
    traffic: Option<Traffic>,
    load: Option<f64>,
    /// `from` and `until`: the value's column and the time in ns.
    from: Option<(usize, u64)>,
    until: Option<(usize, u64)>,
}

/// Reads the `KEY VALUE` pairs `toks` of line `line` of job file `file`.
fn parse_keys(file: &str, line: usize, toks: &[(usize, &str)]) -> Result<Keys, SimError> {
    let err = |line: usize, column: usize, why: String| SimError::JobFile {
        file: file.to_owned(),
        line,
        column,
        why,
    };
    let mut hosts: Option<(usize, Vec<String>)> = None;
    let mut traffic: Option<Traffic> = None;
    let (mut load, mut from, mut until) = (None, None, None);
    let mut rest = toks.iter();
    while let Some(&(ck, key)) = rest.next() {
        let Some(&(cv, val)) = rest.next() else {
            return Err(err(line, ck, format!("`{key}` needs a value")));
        };
        let dup = || err(line, ck, format!("`{key}` is given twice"));
        match key {
            "hosts" => {
                if hosts.is_some() {
                    return Err(dup());
                }
                let names = expand(val).map_err(|(off, why)| err(line, cv + off, why))?;
                hosts = Some((cv, names));
            }
            "pattern" => {
                if traffic.is_some() {
                    return Err(dup());
                }
                let t = Traffic::parse(val).map_err(|e| err(line, cv, e.to_string()))?;
                if matches!(t, Traffic::Multicast { .. }) {
                    return Err(err(
                        line,
                        cv,
                        format!("traffic `{val}`: multicast in a job file is not built yet; give it to `--traffic`"),
                    ));
                }
                traffic = Some(t);
            }
            "load" => {
                if load.is_some() {
                    return Err(dup());
                }
                let f: f64 = val
                    .parse()
                    .ok()
                    .filter(|f| *f > 0.0 && *f <= 1.0)
                    .ok_or_else(|| {
                        err(
                            line,
                            cv,
                            format!("load `{val}`: give a fraction above 0 and at most 1"),
                        )
                    })?;
                load = Some(f);
            }
            "from" | "until" => {
                let slot = if key == "from" { &mut from } else { &mut until };
                if slot.is_some() {
                    return Err(dup());
                }
                let t = parse_time(val).ok_or_else(|| {
                    err(
                        line,
                        cv,
                        format!("{key} `{val}`: give a time such as `0`, `50us` or `1ms`"),
                    )
                })?;
                *slot = Some((cv, t));
            }
            _ => {
                return Err(err(
                    line,
                    ck,
                    format!("unknown key `{key}`: give hosts, pattern, load, from or until"),
                ))
            }
        }
    }
    Ok(Keys {
        hosts,
        traffic,
        load,
        from,
        until,
    })
}

/// The names a `hosts` list names, or the character offset in it and what is wrong.
fn expand(list: &str) -> Result<Vec<String>, (usize, String)> {
    let mut names = Vec::new();
    let mut at = 0usize;
    let mut rest = list;
    loop {
        let (item, after) = match hostlist::token_len(rest) {
            Some(n) => rest.split_at(n.min(rest.len())),
            None => rest.split_at(rest.find(',').unwrap_or(rest.len())),
        };
        if item.is_empty() {
            return Err((at, "an empty host name in the list".into()));
        }
        if item.contains(['[', ']']) {
            if hostlist::token_len(item) != Some(item.len()) {
                return Err((
                    at,
                    format!("`{item}` is not a host list such as `cn[001-018]`"),
                ));
            }
            let l = hostlist::parse(item).map_err(|e| (at, format!("`{item}`: {e}")))?;
            if l.len() > MAX_HOSTS {
                return Err((
                    at,
                    format!("`{item}` names {} hosts, more than {MAX_HOSTS}", l.len()),
                ));
            }
            names.extend(l.names());
        } else {
            names.push(item.to_owned());
        }
        at += item.chars().count();
        match after.strip_prefix(',') {
            Some(r) => {
                at += 1;
                rest = r;
            }
            None if after.is_empty() => return Ok(names),
            None => return Err((at, format!("`{after}`: host lists are separated by commas"))),
        }
    }
}

/// Where each job's hosts are among the simulation's hosts (named `names`, one per host):
/// per job, the host indices in list order. Every host named must exist.
pub(crate) fn resolve(jobs: &Jobs, names: &[String]) -> Result<Vec<Vec<u32>>, SimError> {
    let mut by_name: std::collections::BTreeMap<&str, Vec<u32>> = Default::default();
    for (i, n) in names.iter().enumerate() {
        by_name.entry(n.as_str()).or_default().push(i as u32);
    }
    jobs.jobs
        .iter()
        .map(|j| {
            let mut members = Vec::new();
            for h in &j.hosts {
                match by_name.get(h.as_str()) {
                    Some(ix) => members.extend(ix),
                    None => {
                        let hint = weft_fabric::closest(h, by_name.keys().copied())
                            .map_or(String::new(), |c| format!(" (did you mean `{c}`?)"));
                        return Err(SimError::JobFile {
                            file: jobs.file.clone(),
                            line: j.line,
                            column: j.hosts_column,
                            why: format!("job `{}`: no host `{h}` in the fabric{hint}", j.name),
                        });
                    }
                }
            }
            if members.len() < 2 {
                return Err(SimError::JobFile {
                    file: jobs.file.clone(),
                    line: j.line,
                    column: j.hosts_column,
                    why: format!(
                        "job `{}` has {} host(s); traffic needs at least two",
                        j.name,
                        members.len()
                    ),
                });
            }
            Ok(members)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_file_parses() {
        let j = Jobs::parse(
            "jobs.txt",
            "# a comment\n\njob a  hosts cn[001-003],cn010  pattern all-to-all  load 0.8 # tail\n\
             job b hosts rack[1-2]-cn[01-02] pattern hotspot:1:20% from 50us until 300us\n",
        )
        .unwrap();
        assert_eq!(j.jobs.len(), 2);
        let a = &j.jobs[0];
        assert_eq!(a.hosts, ["cn001", "cn002", "cn003", "cn010"]);
        assert_eq!((a.load, a.line, a.hosts_column), (Some(0.8), 3, 14));
        assert_eq!(a.traffic, Traffic::AllToAll);
        let b = &j.jobs[1];
        assert_eq!(
            b.hosts,
            ["rack1-cn01", "rack1-cn02", "rack2-cn01", "rack2-cn02"]
        );
        assert_eq!((b.from_ns, b.until_ns), (50_000, Some(300_000)));
    }

    #[test]
    fn job_file_errors_name_file_line_and_column() {
        let cases = [
            "",
            "# only a comment\n",
            "jobs a hosts x,y pattern uniform\n",
            "job\n",
            "job a hosts x,y\n",
            "job a pattern uniform\n",
            "job a hosts x,y pattern uniform load\n",
            "job a hosts x,y pattern uniform load 1.5\n",
            "job a hosts x,y pattern zipf\n",
            "job a hosts x,y pattern multicast:0xc000\n",
            "job a hosts x,y pattern uniform pattern uniform\n",
            "job a hosts x,y pattern uniform colour red\n",
            "job a hosts x,y pattern uniform from 1us until 1us\n",
            "job a hosts x,y pattern uniform from soon\n",
            "job a hosts x,,y pattern uniform\n",
            "job a hosts x,cn[9-3] pattern uniform\n",
            "job a hosts x,cn[1-2 pattern uniform\n",
            "job a hosts cn[1-4] pattern uniform\njob b hosts cn5,cn3 pattern uniform\n",
            "job a hosts cn1,cn2,cn1 pattern uniform\n",
            "job a hosts x,y pattern uniform\n  job a hosts z,w pattern uniform\n",
        ];
        let out: Vec<String> = cases
            .iter()
            .map(|c| format!("{:?}\n  {}", c, Jobs::parse("jobs.txt", c).unwrap_err()))
            .collect();
        insta::assert_snapshot!("job_file_errors", out.join("\n"));
    }
}
