//! Running ibsim, the OFED fabric simulator, and InfiniBand tools against it.
//!
//! ```no_run
//! # use std::time::Duration;
//! # use weft_tests::ibsim::{self, Ibsim};
//! let Some(tools) = ibsim::require("my_test", &["ibnetdiscover"]) else { return };
//! let sim = Ibsim::start(&tools, "Switch 8 \"S1\"\n", None).unwrap();
//! let out = sim.run("ibnetdiscover", &[], Duration::from_secs(60)).unwrap();
//! assert!(out.status.success());
//! // ibsim is killed and reaped when `sim` is dropped.
//! ```
//!
//! How it works, and the ibsim behaviour it accounts for:
//!
//! * Each simulator gets its own `IBSIM_SOCKNAME` (process id and a counter), which both ibsim
//!   and the `libumad2sim.so` preload library read, so tests can run in parallel. The sockets
//!   are abstract (`@<name>:ctl`), so a killed simulator leaves no files behind.
//! * ibsim runs with `-n` (no console: with a console and stdin at end of file it spins a core)
//!   and stdin from `/dev/null`; `-N`/`-S`/`-P` are raised when a fabric needs more nodes,
//!   switches or ports than ibsim's defaults (2048, 256, 13312).
//! * Readiness: ibsim prints `Network simulator ready.` once the net file is loaded and its
//!   control socket is bound; the harness waits for both (bounded), and fails at once with
//!   ibsim's log if ibsim exits instead (it aborts on a net file it cannot load).
//! * A client of a simulator that is not there blocks forever, so every client runs with a
//!   timeout, its output going to files (a large `ibnetdiscover` output would fill a pipe).
//! * The simulator is killed and reaped in `Drop`, also when a test panics.
//!
//! When ibsim or a tool is missing, [`require`] fails the test if the `CI` environment variable
//! is set, and otherwise prints a loud SKIP message and returns `None`.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use weft_fabric::Fabric;
use weft_formats::state_json::FromJson;

mod load;

/// ibsim's default limits (`ibsim -h`; printed when it starts).
const DEFAULT_NODES: usize = 2048;
const DEFAULT_SWITCHES: usize = 256;
const DEFAULT_PORTS: usize = 13312;

/// What ibsim prints on stdout once the net file is loaded.
const READY: &str = "Network simulator ready.";

/// Where the simulator and the tools were found.
#[derive(Clone, Debug)]
pub struct Tools {
    /// The `ibsim` binary.
    pub ibsim: PathBuf,
    /// `libumad2sim.so`, preloaded into clients.
    pub umad2sim: PathBuf,
    /// Client programs asked for in [`require`], by name.
    pub programs: Vec<(String, PathBuf)>,
}

impl Tools {
    /// Finds ibsim, libumad2sim and `programs`; the names of whatever is missing otherwise.
    pub fn find(programs: &[&str]) -> Result<Tools, Vec<String>> {
        let mut missing = Vec::new();
        let ibsim = find_program("ibsim");
        if ibsim.is_none() {
            missing.push("ibsim (package ibsim-utils)".to_owned());
        }
        let umad2sim = find_umad2sim();
        if umad2sim.is_none() {
            missing.push("libumad2sim.so (package libumad2sim0)".to_owned());
        }
        let mut found = Vec::new();
        for p in programs {
            match find_program(p) {
                Some(path) => found.push(((*p).to_owned(), path)),
                None => missing.push((*p).to_owned()),
            }
        }
        match (ibsim, umad2sim) {
            (Some(ibsim), Some(umad2sim)) if missing.is_empty() => Ok(Tools {
                ibsim,
                umad2sim,
                programs: found,
            }),
            _ => Err(missing),
        }
    }

    fn program(&self, name: &str) -> PathBuf {
        self.programs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
            .or_else(|| find_program(name))
            .unwrap_or_else(|| PathBuf::from(name))
    }
}

/// The tools a test needs, or `None` (after a loud SKIP message) when they are missing and the
/// `CI` environment variable is not set. In CI a missing tool fails the test.
#[expect(
    clippy::print_stderr,
    reason = "a skipped interop test must say so where the developer sees it"
)]
pub fn require(test: &str, programs: &[&str]) -> Option<Tools> {
    match Tools::find(programs) {
        Ok(tools) => Some(tools),
        Err(missing) => {
            let missing = missing.join(", ");
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: missing {missing}; CI must run the ibsim interop tests (.ci/run \
                 installs them)"
            );
            eprintln!();
            eprintln!("==================================================================");
            eprintln!("SKIP {test}: missing {missing}");
            eprintln!("     (install ibsim-utils, libumad2sim0 and infiniband-diags to run it)");
            eprintln!("==================================================================");
            eprintln!();
            None
        }
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(
            [
                "/usr/sbin",
                "/sbin",
                "/usr/bin",
                "/usr/local/sbin",
                "/usr/local/bin",
            ]
            .map(PathBuf::from),
        )
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn find_umad2sim() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WEFT_UMAD2SIM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let mut candidates = Vec::new();
    for lib in ["/usr/lib", "/usr/lib64", "/usr/local/lib"] {
        candidates.push(Path::new(lib).join("umad2sim/libumad2sim.so"));
        // Multiarch directories such as /usr/lib/x86_64-linux-gnu.
        if let Ok(entries) = fs::read_dir(lib) {
            let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            dirs.sort();
            candidates.extend(dirs.iter().map(|d| d.join("umad2sim/libumad2sim.so")));
        }
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Sizes ibsim must hold (its `-N`, `-S`, `-P` options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nodes.
    pub nodes: usize,
    /// Switches.
    pub switches: usize,
    /// Ports, a switch's port 0 included.
    pub ports: usize,
}

impl Limits {
    /// What `fabric` needs, with some room.
    pub fn for_fabric(fabric: &Fabric) -> Limits {
        let ports: usize = fabric
            .nodes()
            .iter()
            .map(|n| usize::from(n.spec.port_count) + usize::from(n.is_switch()))
            .sum();
        Limits {
            nodes: fabric.nodes().len() + 16,
            switches: fabric.switch_count() + 16,
            ports: ports + 256,
        }
    }

    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.nodes > DEFAULT_NODES {
            args.extend(["-N".to_owned(), self.nodes.to_string()]);
        }
        if self.switches > DEFAULT_SWITCHES {
            args.extend(["-S".to_owned(), self.switches.to_string()]);
        }
        if self.ports > DEFAULT_PORTS {
            args.extend(["-P".to_owned(), self.ports.to_string()]);
        }
        args
    }
}

/// Why the simulator or a client failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum IbsimError {
    /// Files or processes could not be created.
    Io(String, std::io::Error),
    /// ibsim exited before it was ready (usually: it could not load the net file).
    Exited {
        /// How it exited.
        status: ExitStatus,
        /// Its stdout and stderr.
        log: String,
    },
    /// ibsim did not become ready in time.
    NotReady {
        /// How long we waited.
        waited: Duration,
        /// Its stdout and stderr so far.
        log: String,
    },
    /// A client did not finish in time (it was killed).
    Timeout {
        /// The command.
        command: String,
        /// The time it had.
        after: Duration,
        /// ibsim's log, which says why when it died.
        log: String,
    },
    /// OpenSM did not load the built tables.
    NotLoaded {
        /// Why.
        error: Box<IbsimError>,
        /// ibsim's log.
        log: String,
    },
    /// A client exited unsuccessfully.
    Failed {
        /// The command.
        command: String,
        /// Its output.
        output: ClientOutput,
    },
}

impl fmt::Display for IbsimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IbsimError::Io(what, e) => write!(f, "{what}: {e}"),
            IbsimError::Exited { status, log } => {
                write!(
                    f,
                    "ibsim exited before it was ready ({status}); its log:\n{log}"
                )
            }
            IbsimError::NotReady { waited, log } => {
                write!(f, "ibsim not ready after {waited:?}; its log:\n{log}")
            }
            IbsimError::Timeout {
                command,
                after,
                log,
            } => write!(
                f,
                "`{command}` did not finish within {after:?} and was killed; ibsim's log:\n{log}"
            ),
            IbsimError::NotLoaded { error, log } => {
                write!(f, "{error}\nibsim's log:\n{log}")
            }
            IbsimError::Failed { command, output } => write!(
                f,
                "`{command}` failed ({}); stderr:\n{}",
                output.status, output.stderr
            ),
        }
    }
}

impl std::error::Error for IbsimError {}

/// What a client printed.
#[derive(Debug)]
pub struct ClientOutput {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// A running ibsim, killed when dropped.
#[derive(Debug)]
pub struct Ibsim {
    child: Child,
    sockname: String,
    dir: PathBuf,
    umad2sim: PathBuf,
    tools: Tools,
    clients: AtomicUsize,
    /// ibsim's console input, when started with [`Ibsim::start_with_console`].
    console: Option<std::sync::Mutex<std::process::ChildStdin>>,
}

static INSTANCES: AtomicUsize = AtomicUsize::new(0);

impl Ibsim {
    /// Starts ibsim on the net file `netfile` and waits (up to 120 s: an 11 664-node net file
    /// on a loaded machine takes more than 30) until it is ready.
    /// `limits` raises ibsim's node, switch and port limits where needed.
    pub fn start(
        tools: &Tools,
        netfile: &str,
        limits: Option<Limits>,
    ) -> Result<Ibsim, IbsimError> {
        Ibsim::start_as(tools, netfile, limits, false)
    }

    /// [`Ibsim::start`] with ibsim's console open on a pipe (its input never at end of file,
    /// so it does not spin), for [`Ibsim::console`]: `Unlink`, `ReLink`, … as an operator
    /// types them.
    pub fn start_with_console(
        tools: &Tools,
        netfile: &str,
        limits: Option<Limits>,
    ) -> Result<Ibsim, IbsimError> {
        Ibsim::start_as(tools, netfile, limits, true)
    }

    fn start_as(
        tools: &Tools,
        netfile: &str,
        limits: Option<Limits>,
        console: bool,
    ) -> Result<Ibsim, IbsimError> {
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let sockname = format!("weft{pid}x{n}");
        let dir = std::env::temp_dir().join(format!("weft-ibsim-{pid}-{n}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir)
            .map_err(|e| IbsimError::Io(format!("cannot create {}", dir.display()), e))?;
        let net = dir.join("fabric.net");
        fs::write(&net, netfile)
            .map_err(|e| IbsimError::Io(format!("cannot write {}", net.display()), e))?;
        let file = |name: &str| {
            fs::File::create(dir.join(name))
                .map_err(|e| IbsimError::Io(format!("cannot create {name}"), e))
        };
        let mut cmd = Command::new(&tools.ibsim);
        cmd.args(limits.map(|l| l.args()).unwrap_or_default())
            .args(if console { &[][..] } else { &["-n"][..] })
            .arg("-s")
            .arg(&net)
            .current_dir(&dir)
            .env("IBSIM_SOCKNAME", &sockname)
            .stdin(if console {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(file("ibsim.out")?)
            .stderr(file("ibsim.err")?);
        let mut child = cmd
            .spawn()
            .map_err(|e| IbsimError::Io(format!("cannot start {}", tools.ibsim.display()), e))?;
        let console = child.stdin.take().map(std::sync::Mutex::new);
        let mut sim = Ibsim {
            console,
            child,
            sockname,
            dir,
            umad2sim: tools.umad2sim.clone(),
            tools: tools.clone(),
            clients: AtomicUsize::new(0),
        };
        sim.wait_ready(Duration::from_secs(120))?;
        Ok(sim)
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), IbsimError> {
        let start = Instant::now();
        let socket = format!("@{}:ctl", self.sockname);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    return Err(IbsimError::Exited {
                        status,
                        log: self.log(),
                    })
                }
                Ok(None) => {}
                Err(e) => return Err(IbsimError::Io("cannot poll ibsim".to_owned(), e)),
            }
            let printed =
                fs::read_to_string(self.dir.join("ibsim.out")).is_ok_and(|out| out.contains(READY));
            // Where /proc is readable, also wait for the control socket.
            let bound = fs::read_to_string("/proc/net/unix")
                .map(|t| t.contains(&socket))
                .unwrap_or(true);
            if printed && bound {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(IbsimError::NotReady {
                    waited: limit,
                    log: self.log(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Types `line` at ibsim's console (see [`Ibsim::start_with_console`]) and waits (up to
    /// 30 s) for its next prompt: what ibsim printed in between (`# …` lines are its
    /// complaints, e.g. `# nodeid "S-…" (…) not found`).
    pub fn console(&self, line: &str) -> Result<String, IbsimError> {
        use std::io::Write as _;
        let out = self.dir.join("ibsim.out");
        let from = fs::read(&out).map(|t| t.len()).unwrap_or(0);
        let Some(stdin) = &self.console else {
            return Err(IbsimError::Io(
                "ibsim was started without a console".to_owned(),
                std::io::ErrorKind::Unsupported.into(),
            ));
        };
        {
            let mut stdin = stdin
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            writeln!(stdin, "{line}")
                .and_then(|()| stdin.flush())
                .map_err(|e| IbsimError::Io("cannot write to ibsim's console".to_owned(), e))?;
        }
        let start = Instant::now();
        loop {
            let text = fs::read(&out).unwrap_or_default();
            let new = String::from_utf8_lossy(text.get(from..).unwrap_or_default());
            if let Some(i) = new.find("sim> ") {
                return Ok(new.get(..i).unwrap_or_default().to_owned());
            }
            if start.elapsed() > Duration::from_secs(30) {
                return Err(IbsimError::Timeout {
                    command: format!("ibsim console: {line}"),
                    after: Duration::from_secs(30),
                    log: self.log(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The `IBSIM_SOCKNAME` of this simulator.
    pub fn socket_name(&self) -> &str {
        &self.sockname
    }

    /// The process id of ibsim.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// ibsim's stdout and stderr so far.
    pub fn log(&self) -> String {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        format!("{}{}", read("ibsim.out"), read("ibsim.err"))
    }

    /// The warnings and errors ibsim printed so far (`ibwarn:`/`ibpanic:` lines).
    pub fn warnings(&self) -> Vec<String> {
        fs::read_to_string(self.dir.join("ibsim.err"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("ibwarn") || l.starts_with("ibpanic"))
            .map(str::to_owned)
            .collect()
    }

    /// Runs `program` against this simulator (preloading libumad2sim), killing it after
    /// `timeout`; an error unless it exits successfully.
    pub fn run(
        &self,
        program: &str,
        args: &[&str],
        timeout: Duration,
    ) -> Result<ClientOutput, IbsimError> {
        self.run_env(program, args, &[], timeout)
    }

    /// The simulator's private working directory (removed when it stops); clients run there.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// [`Ibsim::run`] with extra environment variables (e.g. `OSM_CACHE_DIR` for OpenSM).
    pub fn run_env(
        &self,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<ClientOutput, IbsimError> {
        let command = std::iter::once(program)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        let n = self.clients.fetch_add(1, Ordering::Relaxed);
        let out_path = self.dir.join(format!("client{n}.out"));
        let err_path = self.dir.join(format!("client{n}.err"));
        let create = |p: &Path| {
            fs::File::create(p)
                .map_err(|e| IbsimError::Io(format!("cannot create {}", p.display()), e))
        };
        let mut child = self
            .client(program, args, env)
            .stdout(create(&out_path)?)
            .stderr(create(&err_path)?)
            .spawn()
            .map_err(|e| IbsimError::Io(format!("cannot start `{command}`"), e))?;
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() > timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(IbsimError::Timeout {
                        command,
                        after: timeout,
                        log: self.log(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(IbsimError::Io(format!("cannot wait for `{command}`"), e));
                }
            }
        };
        let output = ClientOutput {
            status,
            stdout: fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: fs::read_to_string(&err_path).unwrap_or_default(),
        };
        let _ = fs::remove_file(&out_path);
        let _ = fs::remove_file(&err_path);
        if status.success() {
            Ok(output)
        } else {
            Err(IbsimError::Failed { command, output })
        }
    }

    /// [`Ibsim::run_env`] whatever the exit status: a client that ran and failed (a refuted
    /// fabric, a refused plan) gives its output as one that succeeded; one that could not run
    /// or timed out is a broken test setup and panics.
    #[expect(
        clippy::panic,
        reason = "test support: a client that cannot run is a broken setup"
    )]
    pub fn run_any(
        &self,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        timeout: Duration,
    ) -> ClientOutput {
        match self.run_env(program, args, env, timeout) {
            Ok(o) | Err(IbsimError::Failed { output: o, .. }) => o,
            Err(e) => panic!("{e}"),
        }
    }

    /// `weft audit --target mad --write-state FILE` (the `weft` binary `weft`) on the
    /// simulator: the state it wrote, and what it printed.
    #[expect(
        clippy::panic,
        reason = "test support: a state that cannot be read is a failed audit"
    )]
    pub fn audit_state(
        &self,
        weft: &str,
        file: &std::path::Path,
        timeout: Duration,
    ) -> (weft_fabric::ValidState, ClientOutput) {
        let o = self.run_any(
            weft,
            &[
                "audit",
                "--target",
                "mad",
                "--write-state",
                &file.to_string_lossy(),
            ],
            &[],
            timeout,
        );
        let text = std::fs::read_to_string(file).unwrap_or_default();
        match weft_fabric::ValidState::from_json(&text) {
            Ok(st) => (st, o),
            Err(e) => panic!("{e}\n{}\n{}", o.stdout, o.stderr),
        }
    }

    /// [`Ibsim::run`], retried until it succeeds or `total` has passed (each try gets
    /// `per_try`); for the first query of a simulator that is still settling.
    pub fn run_retrying(
        &self,
        program: &str,
        args: &[&str],
        per_try: Duration,
        total: Duration,
    ) -> Result<ClientOutput, IbsimError> {
        let start = Instant::now();
        loop {
            match self.run(program, args, per_try) {
                Ok(out) => return Ok(out),
                Err(e) if start.elapsed() + per_try > total => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

impl Ibsim {
    /// `tests/fixtures/mcjoin/mcjoin.c` (a host's SA join: one SubnAdmSet(MCMemberRecord))
    /// built with gcc against libibmad into the simulator's directory; run it with
    /// [`Ibsim::run_env`] and `SIM_HOST` naming the host (`H-<node GUID>`). Its path, or gcc's
    /// error.
    pub fn build_mcjoin(&self) -> Result<PathBuf, String> {
        let out = self.dir.join("mcjoin");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcjoin/mcjoin.c");
        let cc = Command::new("gcc")
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .args(["-libmad", "-libumad"])
            .output()
            .map_err(|e| format!("cannot run gcc: {e}"))?;
        if cc.status.success() {
            Ok(out)
        } else {
            Err(String::from_utf8_lossy(&cc.stderr).into_owned())
        }
    }

    /// Every switch's MFT as `ibroute -M` prints it, asked by the switch's LID in `lids`:
    /// the non-empty tables by switch GUID (retried while the simulator settles; an error
    /// when a print does not read cleanly).
    pub fn mfts(
        &self,
        fabric: &Fabric,
        lids: &weft_fabric::LidAssignment,
    ) -> Result<std::collections::BTreeMap<u64, weft_fabric::Mft>, String> {
        let mut text = String::new();
        for (id, ports) in &lids.base {
            if !fabric.node(*id).is_switch() {
                continue;
            }
            let Some(lid) = ports.values().next() else {
                continue;
            };
            text += &self
                .run_retrying(
                    "ibroute",
                    &["-M", &lid.0.to_string()],
                    Duration::from_secs(60),
                    Duration::from_secs(120),
                )
                .map_err(|e| e.to_string())?
                .stdout;
        }
        let (read, problems) =
            weft_formats::opensm::parse_mfts(&text, fabric).map_err(|e| format!("{e}\n{text}"))?;
        if !problems.is_empty() {
            return Err(format!("{problems:?}\n{text}"));
        }
        Ok(read
            .tables
            .into_iter()
            .filter(|(_, t)| !t.is_empty())
            .map(|(id, t)| (fabric.node(id).guid().0, t))
            .collect())
    }
}

/// A client left running against a simulator (an SM answering queries); killed, by its own
/// PID, when dropped.
pub struct Background {
    child: Child,
    /// Where its standard output and error go.
    pub out: PathBuf,
}

impl Background {
    /// Its process ID (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (up to `timeout`, else it is killed) for it to exit: how, and what it printed
    /// (standard output and error together, in [`ClientOutput::stdout`]).
    pub fn wait(mut self, timeout: Duration) -> Result<ClientOutput, IbsimError> {
        let start = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() > timeout => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(IbsimError::Timeout {
                        command: format!("background client {}", self.child.id()),
                        after: timeout,
                        log: fs::read_to_string(&self.out).unwrap_or_default(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => {
                    return Err(IbsimError::Io("cannot wait for a client".to_owned(), e));
                }
            }
        };
        Ok(ClientOutput {
            status,
            stdout: fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: String::new(),
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ibsim {
    /// `program args` as a client of this simulator: in its directory, attached to its socket
    /// through libumad2sim, with `env` added and no input.
    fn client(&self, program: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(self.tools.program(program));
        c.args(args)
            .current_dir(&self.dir)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .env("LD_PRELOAD", &self.umad2sim)
            .envs(env.iter().copied())
            .stdin(Stdio::null());
        c
    }

    /// Starts `program` against this simulator and leaves it running (standard output and
    /// error to one file in the simulator's directory).
    pub fn spawn_env(
        &self,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Background, IbsimError> {
        let n = self.clients.fetch_add(1, Ordering::Relaxed);
        let out = self.dir.join(format!("background{n}.out"));
        let file = fs::File::create(&out)
            .map_err(|e| IbsimError::Io(format!("cannot create {}", out.display()), e))?;
        let err = file
            .try_clone()
            .map_err(|e| IbsimError::Io(format!("cannot create {}", out.display()), e))?;
        let child = self
            .client(program, args, env)
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| IbsimError::Io(format!("cannot start `{program}`"), e))?;
        Ok(Background { child, out })
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// `state` with each vSwitch hypervisor port modelled as Paper A says the SM sees it: a switch
/// (`<host>-vswitch`, port 1 to where the hypervisor was cabled, port 2 to the hypervisor's
/// port — the PF —, port `3 + k` to VF `k`) and one single-port channel adapter per VF
/// (`<host>-vf<k>`, its port GUID the VF's GUID — ibsim gives an adapter's port `p` the GUID
/// node GUID + `p` —, the VF's LID and P_Key table). The VFs are nodes now, so the model has
/// no `vports`; every other node keeps its id and tables. The model switches get no LID and
/// forward nothing: on real vSwitch hardware the adapter delivers to its VFs by itself.
#[expect(
    clippy::expect_used,
    reason = "a test fixture: a valid state always models (GUIDs and ports are new)"
)]
pub fn vswitched(state: &weft_fabric::FabricState) -> weft_fabric::FabricState {
    use std::collections::BTreeMap;
    use weft_fabric::{FabricBuilder, Guid, NodeKind, NodeSpec, PortNum, PortRef, PortState};
    let f = &state.fabric;
    let mut b = FabricBuilder::new(f.name.clone());
    b.set_lmc(f.lmc);
    for id in f.node_ids() {
        b.add_node(f.node(id).spec.clone())
            .expect("a valid fabric's node");
    }
    let mut by_host: BTreeMap<PortRef, Vec<&weft_fabric::VirtualPort>> = BTreeMap::new();
    for v in &state.lids.vports {
        by_host.entry(v.host).or_default().push(v);
    }
    for l in f.links() {
        if by_host.contains_key(&l.a) || by_host.contains_key(&l.b) {
            continue;
        }
        let id = b.add_link(l.a, l.b).expect("a valid fabric's link");
        b.set_link_rate(id, l.speed, l.width);
        if l.state == weft_fabric::LinkState::Down {
            b.set_link_down(id);
        }
    }
    let mut lids = state.lids.clone();
    lids.vports.clear();
    let mut ports = state.ports.clone();
    let mut next = 0x7657_0000_0000_0000u64;
    for (host, vfs) in &by_host {
        let h = f.node(host.node);
        // A switch's node GUID is its ports' GUID too: free in both name spaces.
        while f.find_guid(Guid(next)).is_some() || f.find_port_guid(Guid(next)).is_some() {
            next += 1;
        }
        let mut spec = NodeSpec::new(
            format!("{}-vswitch", h.name()),
            NodeKind::Switch,
            Guid(next),
            2 + vfs.iter().map(|v| v.vf).max().unwrap_or(0) + 1,
        );
        next += 1;
        spec.caps = h.spec.caps;
        let sw = b.add_node(spec).expect("a new GUID");
        if let Some((far, _)) = f.peer(*host) {
            b.add_link(far, PortRef::new(sw, 1)).expect("a free port");
        }
        b.add_link(PortRef::new(sw, 2), *host).expect("a free port");
        for v in vfs {
            let mut spec = NodeSpec::new(
                format!("{}-vf{}", h.name(), v.vf),
                NodeKind::Hca,
                Guid(v.guid.0.wrapping_sub(1)),
                1,
            );
            spec.port_guids = Some(vec![v.guid]);
            spec.caps = h.spec.caps;
            let ca = b.add_node(spec).expect("a VF's GUID is unique");
            b.add_link(PortRef::new(sw, 3 + v.vf), PortRef::new(ca, 1))
                .expect("a free port");
            if let Some(l) = v.lid {
                lids.base.entry(ca).or_default().insert(PortNum(1), l);
            }
            if v.pkeys.is_some() {
                ports.insert(
                    PortRef::new(ca, 1),
                    PortState {
                        pkeys: v.pkeys.clone(),
                        ..PortState::default()
                    },
                );
            }
        }
    }
    let mut out = weft_fabric::FabricState::new(b.finish());
    out.lids = lids;
    out.switches = state.switches.clone();
    out.ports = ports;
    out.path_sl = state.path_sl.clone();
    out
}

/// The ibsim net file of [`vswitched`]`(state)`, with the modelled state (for
/// [`Limits::for_fabric`]).
#[expect(
    clippy::expect_used,
    reason = "a test fixture: weft writes every model it makes"
)]
pub fn vswitched_net(state: &weft_fabric::FabricState) -> (String, weft_fabric::FabricState) {
    let m = vswitched(state);
    let net =
        weft_formats::ibnetdiscover::write(&m.fabric, Some(&m.lids)).expect("a writable fabric");
    (net, m)
}

/// The directed route (`smpquery -D`, `ibroute -D`) from the node ibsim attaches clients to
/// (the net file's first node, a switch) to `to`: the exit port of every hop, `0` for that
/// node itself. A fabric on which `to` cannot be reached is a broken test setup: it panics.
#[expect(
    clippy::panic,
    reason = "test support: an unreachable node is a broken setup"
)]
pub fn dr_path(f: &weft_fabric::Fabric, to: weft_fabric::NodeId) -> String {
    use weft_fabric::PortRef;
    let Some(start) = f.node_ids().next() else {
        panic!("an empty fabric");
    };
    if start == to {
        return "0".to_owned();
    }
    let mut seen = std::collections::BTreeSet::from([start]);
    let mut queue = std::collections::VecDeque::from([(start, vec![0u8])]);
    while let Some((n, path)) = queue.pop_front() {
        for p in &f.node(n).ports {
            let Some((far, _)) = f.peer(PortRef::new(n, p.num.0)) else {
                continue;
            };
            let mut next = path.clone();
            next.push(p.num.0);
            if far.node == to {
                return next.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
            }
            if f.node(far.node).is_switch() && seen.insert(far.node) {
                queue.push_back((far.node, next));
            }
        }
    }
    panic!("no route to {}", f.node(to).name())
}
