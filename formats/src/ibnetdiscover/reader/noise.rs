//! Lines that belong to no topology format but turn up in real dumps, recognised so that one
//! of them does not refuse the whole file: terminal-log headers, shell prompts, messages of
//! the InfiniBand libraries captured from standard error, and the chassis headers of grouped
//! output (`ibnetdiscover -g`). Each class has its own warning code; the readers of all three
//! formats skip such a line with a warning located on it and read on as if it were not there
//! (a record it interrupts goes on after it). A line that looks like none of these stays an
//! error.
//!
//! The shapes are those the tools print: PuTTY's `=~=~=~… PuTTY log 2024.01.02 10:11:12 =~=~…`,
//! util-linux `script`'s `Script started on …`/`Script done on …`; prompts `user@host:dir$ cmd`,
//! `[user@host dir]$ cmd`, `bash-5.1# cmd`, `$ cmd`, and the switch CLI's (NVIDIA Onyx,
//! MLNX-OS) `host [ mgmt-ha-active ] (config) # cmd`, `switch > cmd`; libibmad's and libibumad's `ibwarn: [pid]
//! func: …` and `ibpanic: …`, infiniband-diags' `prog: iberror: …`, libibnetdisc's
//! `file.c:line; message` (`src/query_smp.c:195; umad (DR path …) bad status 110; Connection
//! timed out`); grouped output's `Non-Chassis Nodes`, `Chassis 3 (guid 0x…)` and `Hostname: …`
//! (rdma-core's `infiniband-diags/ibnetdiscover.c`, `out_chassis` and `dump_topology`).

use super::*;

/// What a noise line looks like: its warning code and a description for the message.
pub(super) struct Noise {
    pub(super) code: Code,
    /// What the line looks like, as a noun phrase (`a PuTTY session-log header`).
    pub(super) looks_like: String,
    /// What else it tells the reader of the dump, if anything.
    pub(super) note: Option<&'static str>,
}

impl Noise {
    fn new(code: Code, looks_like: impl Into<String>) -> Noise {
        Noise {
            code,
            looks_like: looks_like.into(),
            note: None,
        }
    }
}

/// The class of `line` (a whole line, without its line end), if it is noise.
pub(super) fn classify(line: &str) -> Option<Noise> {
    let t = line.trim_matches([' ', '\t']);
    let first = *t.as_bytes().first()?;
    match first {
        b'=' if t.starts_with("=~=~") => {
            return Some(Noise::new(Code::TerminalLog, "a PuTTY session-log header"));
        }
        b'S' if t.starts_with("Script started on ") || t.starts_with("Script done on ") => {
            return Some(Noise::new(
                Code::TerminalLog,
                "a session-log line of `script`",
            ));
        }
        b'N' if t == "Non-Chassis Nodes" => {
            return Some(Noise::new(
                Code::GroupedHeader,
                "the `Non-Chassis Nodes` header of grouped output (`ibnetdiscover -g`)",
            ));
        }
        b'C' if is_chassis_header(t) => {
            return Some(Noise::new(
                Code::GroupedHeader,
                "a chassis header of grouped output (`ibnetdiscover -g`)",
            ));
        }
        b'H' if t.starts_with("Hostname: ") => {
            return Some(Noise::new(
                Code::GroupedHeader,
                "a chassis host name of grouped output (`ibnetdiscover -g`)",
            ));
        }
        _ => {}
    }
    if let Some(n) = stderr_message(t) {
        return Some(n);
    }
    if let Some(cmd) = switch_prompt(t) {
        let looks_like = match cmd.split_whitespace().next() {
            Some(command) => format!("a switch CLI prompt running `{command}`"),
            None => "a switch CLI prompt".to_owned(),
        };
        return Some(Noise::new(Code::ShellPrompt, looks_like));
    }
    prompt(t).map(|cmd| {
        let looks_like = match cmd.split_whitespace().next() {
            Some(program) => format!("a shell prompt running `{program}`"),
            None => "a shell prompt".to_owned(),
        };
        Noise::new(Code::ShellPrompt, looks_like)
    })
}

/// `Chassis 3` or `Chassis 3 (guid 0x…)`.
fn is_chassis_header(t: &str) -> bool {
    let Some(rest) = t.strip_prefix("Chassis ") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Some(tail) = rest.get(digits..) else {
        return false;
    };
    if digits == 0 {
        return false;
    }
    if tail.is_empty() {
        return true;
    }
    tail.strip_prefix(" (guid 0x")
        .and_then(|g| g.strip_suffix(')'))
        .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A message of libibmad, libibumad, libibnetdisc or an infiniband-diags tool.
fn stderr_message(t: &str) -> Option<Noise> {
    for (prefix, what) in [
        (
            "ibwarn: ",
            "a warning of libibmad or libibumad captured from standard error",
        ),
        (
            "ibpanic: ",
            "a fatal error of libibmad captured from standard error",
        ),
        (
            "iberror: ",
            "an error of an InfiniBand tool captured from standard error",
        ),
    ] {
        if t.starts_with(prefix) {
            return Some(Noise::new(Code::ToolStderr, what));
        }
    }
    // `ibnetdiscover: iberror: [pid 123] main: failed: discover failed`
    if let Some((word, rest)) = t.split_once(": ") {
        if rest.starts_with("iberror: ") && is_program_name(word) {
            return Some(Noise::new(
                Code::ToolStderr,
                format!("an error of `{word}` captured from standard error"),
            ));
        }
    }
    // libibnetdisc's IBND_ERROR: `src/query_smp.c:195; umad (…) bad status 110; …`
    let (head, _) = t.split_once("; ")?;
    let (path, number) = head.rsplit_once(':')?;
    let located = path.ends_with(".c")
        && !path.contains([' ', '\t'])
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit());
    if !located {
        return None;
    }
    let mut n = Noise::new(
        Code::ToolStderr,
        "an error of libibnetdisc (the discovery library of `ibnetdiscover`) captured from \
         standard error",
    );
    if t.contains("bad status") || t.contains("timed out") {
        n.note =
            Some("a node did not answer during discovery: the dump may lack part of the fabric");
    }
    Some(n)
}

fn is_program_name(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
}

/// The command after a shell prompt (possibly empty), if `t` starts with one:
/// `user@host:dir$ `, `[user@host dir]# `, `user@host dir % `, `bash-5.1$ `, or a bare `$ `.
fn prompt(t: &str) -> Option<&str> {
    if let Some(cmd) = t.strip_prefix("$ ") {
        return cmd
            .starts_with(|c: char| c.is_ascii_alphabetic() || c == '.' || c == '/')
            .then_some(cmd);
    }
    let after = if let Some(inner) = t.strip_prefix('[') {
        // `[user@host dir]$ cmd`
        let (inside, rest) = inner.split_once(']')?;
        let (user_host, _dir) = inside.split_once(' ').unwrap_or((inside, ""));
        if !is_user_at_host(user_host) {
            return None;
        }
        rest
    } else {
        let end = t.find([' ', '\t', '#', '$', '%', '>']).unwrap_or(t.len());
        let head = t.get(..end)?;
        let rest = t.get(end..)?;
        match head.split_once(':') {
            // `user@host:~/dir$ cmd`
            Some((user_host, _dir)) if is_user_at_host(user_host) => rest,
            // `user@host ~ % cmd`: the directory is a word before the prompt character.
            None if is_user_at_host(head) => {
                let r = rest.trim_start_matches([' ', '\t']);
                match r.split_once(' ') {
                    Some((dir, more)) if !dir.contains(['#', '$', '%', '>']) => more,
                    _ => r,
                }
            }
            // `bash-5.1$ cmd`, `sh-4.2# cmd`
            None if is_shell_version(head) => rest,
            _ => return None,
        }
    };
    let after = after.trim_start_matches([' ', '\t']);
    let mut chars = after.chars();
    match chars.next() {
        Some('#' | '$' | '%' | '>') => {}
        _ => return None,
    }
    let cmd = chars.as_str();
    if cmd.is_empty() {
        return Some(cmd);
    }
    cmd.strip_prefix([' ', '\t'])
}

/// The command after a switch CLI prompt (possibly empty), if `t` is one: NVIDIA Onyx and
/// MLNX-OS print `host [ mgmt-ha-active ] (config) # `, `switch [standalone: master] > ` or
/// `switch # ` — a host
/// name, then an optional `[ … ]` (high-availability state) and `(config…)` (mode), then `>`
/// or `#` followed by a space or the end of the line. No line of the formats has that shape:
/// their headers have a count or an id after the first word, and port lines start with `[`.
fn switch_prompt(t: &str) -> Option<&str> {
    let (host, rest) = t.split_once(' ')?;
    let hostlike = host.bytes().any(|b| b.is_ascii_alphabetic())
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !hostlike {
        return None;
    }
    let mut rest = rest.trim_start_matches(' ');
    if let Some(inner) = rest.strip_prefix('[') {
        let (state, after) = inner.split_once(']')?;
        let state = state.trim_matches(' ');
        let statelike = !state.is_empty()
            && state
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':' | b' '));
        if !statelike {
            return None;
        }
        rest = after.trim_start_matches(' ');
    }
    if let Some(inner) = rest.strip_prefix('(') {
        let (mode, after) = inner.split_once(')')?;
        if !mode.starts_with("config") || mode.contains(' ') {
            return None;
        }
        rest = after.trim_start_matches(' ');
    }
    let cmd = rest.strip_prefix(['>', '#'])?;
    if cmd.is_empty() {
        return Some(cmd);
    }
    cmd.strip_prefix(' ')
}

/// `user@host` (letters, digits, `_`, `-`, `.` on both sides).
fn is_user_at_host(s: &str) -> bool {
    let Some((user, host)) = s.split_once('@') else {
        return false;
    };
    let ok = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    };
    ok(user) && ok(host)
}

/// `bash-5.1`, `sh-4.2`.
fn is_shell_version(s: &str) -> bool {
    let Some((shell, version)) = s.split_once('-') else {
        return false;
    };
    matches!(shell, "sh" | "bash" | "zsh" | "ksh" | "dash")
        && !version.is_empty()
        && version.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// Skips `line` with a warning when it is noise; whether it was.
pub(super) fn skip(cx: &mut Cx<'_>, line: &Line<'_>) -> bool {
    let Some(noise) = classify(line.text) else {
        return false;
    };
    let trimmed = line.text.trim_end_matches([' ', '\t']);
    let lead = trimmed.len() - trimmed.trim_start_matches([' ', '\t']).len();
    let span = sp(line.start + lead, (trimmed.len() - lead).max(1));
    let mut help = "weft reads on as if the line were not there; remove it from the file to \
                    silence this warning"
        .to_owned();
    if let Some(note) = noise.note {
        help = format!("{note}; {help}");
    }
    cx.warn(
        noise.code,
        span,
        format!("skipped {}", noise.looks_like),
        "not part of the topology",
        help,
    );
    true
}
