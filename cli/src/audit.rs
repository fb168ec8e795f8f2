//! `weft audit --target mad`: discover a live fabric over SMPs, read its LIDs, LFTs, MFTs,
//! SL→VL and P_Key tables, and prove or refute it like `weft verify` does for a state — what
//! ibdiagnet does, with proofs. Multicast group membership is the SA's, not on the fabric: the
//! audited state has every switch's MFT and no group. The SL each path uses is the SA's answer, not on the fabric:
//! every path counts on SL 0 (and each hop's VL is what the tables map SL 0 to). Where the
//! SM runs is the master SM's LID in the local port's PortInfo (`--sm` overrides it).

use crate::verify::CheckArgs;
use crate::Fatal;
use clap::ValueEnum;
use std::path::PathBuf;
use std::process::ExitCode;
use weft_deploy::{Mad, MadOptions, TransportExt};
use weft_fabric::code::Coded as _;
use weft_fabric::ValidState;
use weft_formats::state_json::ToJson;

/// `weft audit` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Where to read: `mad` (real SMPs through libibmad on the local HCA port).
    #[arg(long)]
    target: AuditTarget,
    /// How SMPs go out.
    #[command(flatten)]
    mad: MadArgs,
    /// Also write what was read as a `state.json` here (to plan from, or verify again).
    #[arg(long)]
    write_state: Option<PathBuf>,
    /// The fabric's name in reports.
    #[arg(long, default_value = "audited")]
    name: String,
    /// The design the cabling should match (a `.weft` file, a `state.json`, a build
    /// directory, an ibnetdiscover dump or a cabling spreadsheet `.csv`): each miswired,
    /// missing or extra cable, each cable at another speed or width, each missing or extra
    /// node is a finding (exit 1).
    #[arg(long, value_name = "DESIGN")]
    expect: Option<PathBuf>,
    /// With `--expect`: how the fabric's nodes are matched to the design's.
    #[arg(
        long = "match",
        value_enum,
        default_value = "auto",
        requires = "expect"
    )]
    matching: crate::diff::MatchArg,
    #[command(flatten)]
    pub(crate) check: CheckArgs,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum AuditTarget {
    Mad,
}

/// How SMPs go out through libibmad (`weft apply --target mad`, `weft audit`).
#[derive(clap::Args)]
pub struct MadArgs {
    /// `mad`: the HCA (as `ibstat` names it); by default the first.
    #[arg(long)]
    ca: Option<String>,
    /// `mad`: its port; by default the first active one.
    #[arg(long)]
    port: Option<u8>,
    /// `mad`: the M_Key to send with every SMP (hex).
    #[arg(long, value_parser = parse_hex)]
    mkey: Option<u64>,
    /// Milliseconds to wait for each SMP's response (default 200).
    #[arg(long)]
    timeout_ms: Option<u32>,
    /// Sends per SMP before it counts as lost (default 3).
    #[arg(long)]
    pub tries: Option<u32>,
}

impl MadArgs {
    /// The options to open libibmad with (it retries by itself: `tries - 1` retries).
    pub fn options(&self) -> MadOptions {
        MadOptions {
            ca: self.ca.clone(),
            port: self.port.unwrap_or(0),
            timeout_ms: self.timeout_ms.unwrap_or(MadOptions::DEFAULT_TIMEOUT_MS),
            retries: self.tries().saturating_sub(1),
            mkey: self.mkey,
            window: MadOptions::DEFAULT_WINDOW,
        }
    }

    /// Sends per SMP.
    pub fn tries(&self) -> u32 {
        self.tries.unwrap_or(MadOptions::DEFAULT_TRIES)
    }

    /// The options given that only libibmad uses (HCA, port, M_Key, timeout), by name.
    pub fn hca_options(&self) -> Vec<&'static str> {
        [
            (self.ca.is_some(), "--ca"),
            (self.port.is_some(), "--port"),
            (self.mkey.is_some(), "--mkey"),
            (self.timeout_ms.is_some(), "--timeout-ms"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }
}

/// `--mkey`: a 64-bit key in hex ([`weft_fabric::hex::lenient_u64`]).
fn parse_hex(s: &str) -> Result<u64, String> {
    weft_fabric::hex::lenient_u64(s)
        .ok_or_else(|| format!("`{s}` is not a 64-bit key in hex (up to 16 digits, `0x` optional)"))
}

/// Runs `weft audit`.
pub fn run(args: Args, color: crate::ColorChoice, quiet: bool) -> Result<ExitCode, Fatal> {
    let AuditTarget::Mad = args.target;
    // The design is read first: one that cannot be read stops the audit before any SMP
    // (exit 2, as for `weft diff`).
    let design = match &args.expect {
        Some(p) => Some(crate::diff::load_design(p, color)?),
        None => None,
    };
    let mut mad = Mad::open(&args.mad.options()).map_err(|e| Fatal::coded(&e))?;
    crate::term::phase("reading the fabric");
    let mut audited =
        weft_deploy::audit::audit(&mut mad, &args.name).map_err(|e| Fatal::coded(&e))?;
    // Where the SM runs: the master SM's LID in the local port's PortInfo (modifier 0: the
    // port the SMP arrived on), owned by the port the SM runs on. None yet (LID 0), or a LID
    // no port owns: not said (`isolated` is then unknown unless `--sm` says).
    let (info, _) = mad
        .port_info(&weft_deploy::DrPath::local(), 0)
        .map_err(|e| {
            Fatal::failed(
                e.code(),
                format!("cannot read the local port's PortInfo: {e}"),
            )
        })?;
    // The cabling against the design, as read (it needs no LID).
    let cabling = match &design {
        Some(d) => crate::diff::cabling(
            d,
            &audited.state.fabric,
            args.matching.mode(),
            &format!("the fabric on {}", mad.device()),
        )?,
        None => Vec::new(),
    };
    let owners = audited.state.lids.owners(&audited.state.fabric);
    if let Some(Some((n, p))) = owners.get(usize::from(info.master_sm_lid)) {
        if info.master_sm_lid != 0 {
            audited.state.sm = vec![weft_fabric::PortRef::new(*n, p.0)];
        }
    }
    // What the fabric runs is not a state weft can verify: the state's findings, about the
    // fabric read (the command could not run, as before: exit 2).
    let state = ValidState::new(audited.state).map_err(|e| {
        Fatal::Failed(crate::findings::of_state_errors(
            &e,
            &format!("the fabric on {}", mad.device()),
        ))
    })?;
    if let Some(p) = &args.write_state {
        crate::output::write_file(p, state.to_json().as_bytes()).map_err(Fatal::Run)?;
    }
    // What was not read is said where the verdict is.
    let forwarding = state.multicast.mfts.len();
    let multicast = if forwarding == 0 {
        "no switch's MFT holds an entry".to_owned()
    } else {
        format!(
            "{forwarding} switch(es) forward multicast by their MFTs; group membership is the \
             SA's, not on the fabric: no groups"
        )
    };
    let origin = format!(
        "the fabric on {} ({} SMPs; path SLs are the SA's, not on the fabric: every path on SL \
         0; {multicast})",
        mad.device(),
        audited.smps
    );
    crate::verify::run_checks(
        crate::verify::Loaded::of(state, origin).with_cabling(cabling),
        &args.check,
        quiet,
    )
}
