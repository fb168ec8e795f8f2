//! `weft import DUMP`: an ibnetdiscover dump (or `ibnetdiscover -p` or `iblinkinfo` output,
//! or OpenSM's `opensm-subnet.lst`, detected from the text; and an optional node-name map) → an editable weft program, with
//! tree levels when the cabling is a fat-tree and the roles of service nodes (given with
//! `--role`, `--roles`, `--io-guids`, or recognised aggregation nodes). `--partial` reads a
//! dump cut short, `--strict` makes every warning an error.

use crate::{display_name, emit_diagnostics, out, read, ColorChoice, Fatal};
use std::path::PathBuf;
use std::process::ExitCode;
use weft_compiler::diagnostic;

/// `weft import` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The ibnetdiscover file (or an ibsim net file, `ibnetdiscover -p` or `iblinkinfo`
    /// output, or OpenSM's `opensm-subnet.lst`).
    file: PathBuf,
    /// A node-name map (`<guid> "<name>"` per line).
    #[arg(long)]
    node_name_map: Option<PathBuf>,
    /// Fabric name (default: the file's stem).
    #[arg(long)]
    name: Option<String>,
    /// Output file (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Read a dump whose discovery was cut short: a port line naming a node that has no
    /// record is a warning, its link is dropped and that node left out (its ports unknown).
    #[arg(long)]
    partial: bool,
    /// Every warning is an error (exit 1): for CI, where a dump must read clean.
    #[arg(long)]
    strict: bool,
    /// The role of one end node, by node or port GUID: `--role 0x0002c90300a1b2c1=storage`
    /// (`host`, `aggregation`, `storage`, `management`); repeatable.
    #[arg(long = "role", value_name = "GUID=ROLE", value_parser = parse_role)]
    role: Vec<(weft_fabric::Guid, weft_fabric::Role)>,
    /// A file of roles: `GUID ROLE` per line, `#` comments.
    #[arg(long, value_name = "FILE")]
    roles: Option<PathBuf>,
    /// OpenSM's `io_guid_file`: one GUID per line, each a storage (IO) node.
    #[arg(long, value_name = "FILE")]
    io_guids: Option<PathBuf>,
}

/// `GUID=ROLE` of `--role`.
fn parse_role(s: &str) -> Result<(weft_fabric::Guid, weft_fabric::Role), String> {
    let (g, r) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not `GUID=ROLE`"))?;
    let guid = weft_fabric::Guid::lenient(g.trim())
        .map_err(|_| format!("`{g}` is not a GUID (hex, with or without `0x`)"))?;
    let role = weft_fabric::Role::from_keyword(r.trim()).ok_or_else(|| {
        format!("`{r}` is not a role (`host`, `aggregation`, `storage` or `management`)")
    })?;
    Ok((guid, role))
}

/// Runs `weft import`.
pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    let Args {
        file,
        node_name_map,
        name,
        output,
        partial,
        strict,
        role,
        roles,
        io_guids,
    } = args;
    let text = read(&file)?;
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fabric_name = name.unwrap_or_else(|| {
        let n: String = stem
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if n.starts_with(|c: char| c.is_ascii_digit()) || n.is_empty() {
            format!("f_{n}")
        } else {
            n
        }
    });
    let map_text = node_name_map.as_deref().map(read).transpose()?;
    let mut sources = diagnostic::SourceMap::new();
    let main = sources.add(display_name(&file), text.as_str());
    let map_id = map_text
        .as_ref()
        .zip(node_name_map.as_ref())
        .map(|(t, p)| sources.add(display_name(p), t.as_str()));
    let mut given: Vec<weft_compiler::GivenRole> = role
        .into_iter()
        .map(|(guid, role)| weft_compiler::GivenRole {
            guid,
            role,
            at: None,
        })
        .collect();
    let files = [(roles, None), (io_guids, Some(weft_fabric::Role::Storage))];
    let mut role_errors = Vec::new();
    for (path, only) in files {
        let Some(path) = path else { continue };
        let t = read(&path)?;
        let id = sources.add(display_name(&path), t.as_str());
        match weft_compiler::parse_roles(&t, id, only) {
            Ok(found) => given.extend(found),
            Err(e) => role_errors.extend(e),
        }
    }
    if !role_errors.is_empty() {
        emit_diagnostics(&role_errors, &sources, color);
        return Ok(ExitCode::from(1));
    }
    crate::term::phase("reading");
    match weft_compiler::import_ibnetdiscover_with(
        &text,
        &display_name(&file),
        main,
        map_text.as_deref().zip(map_id),
        &fabric_name,
        weft_compiler::ImportOptions { partial, strict },
        &given,
    ) {
        Ok((program, warnings)) => {
            emit_diagnostics(&warnings, &sources, color);
            out(output.as_deref(), &program)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(diags) => {
            emit_diagnostics(&diags, &sources, color);
            Ok(ExitCode::from(1))
        }
    }
}
