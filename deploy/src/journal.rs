//! The journal of a `weft apply`: every block the plan touches, as it was before and as the
//! plan writes it, on disk (fsync) before the first write; then a line as each step begins and
//! ends, and how the apply ended. After a crash, `weft apply --recover` reads it back and
//! rolls back, or forward.
//!
//! JSON lines (format `weft-journal`, version 1):
//!
//! ```text
//! {"format":"weft-journal","version":1,"fabric":"…","from":{fingerprint},"to":{fingerprint},"wire":{…}}
//! {"block":{"step":0,"node":"0x…","port":null,"attr":"lft","modifier":3,"before":"ff…","after":"ff…"}}
//! …
//! {"event":"begin","step":0}
//! {"event":"done","step":0}
//! {"event":"committed"}              (or "rolled_back")
//! ```
//!
//! A plan too large to read in one part is journaled part by part: the journal is created
//! with the first part's blocks and `{"event":"partial"}`, each later part's blocks are
//! appended (synced) before any of its SMPs goes out, and `{"event":"complete"}` follows the
//! last. Blocks never journaled were never written; a journal that is partial and not
//! complete can be rolled back, not forward (the plan's other blocks are not in it).
//!
//! A torn last line (the writer died while writing it) is ignored.

use crate::smp::{Attr, Payload};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use weft_fabric::{Fingerprint, Guid, WireView};

/// The `format` of a journal.
pub const JOURNAL_FORMAT: &str = "weft-journal";

/// The journal's first line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`JOURNAL_FORMAT`].
    pub format: String,
    /// 1.
    pub version: u32,
    /// The fabric's name.
    pub fabric: String,
    /// The plan's `from`.
    pub from: Fingerprint,
    /// The plan's `to`.
    pub to: Fingerprint,
    /// The fabric as the plan expected it (and discovery found it).
    pub wire: WireView,
}

/// One block the plan touches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    /// The step that writes it (from 0).
    pub step: usize,
    /// The node.
    #[serde(with = "weft_fabric::guid_hex")]
    pub node: Guid,
    /// For an end node, the port the SMP goes through.
    pub port: Option<u8>,
    /// The attribute.
    #[serde(with = "attr_id")]
    pub attr: Attr,
    /// Its modifier.
    pub modifier: u32,
    /// The payload before, as read (hex).
    #[serde(with = "weft_fabric::hex::block")]
    pub before: Payload,
    /// The payload the plan writes (hex).
    #[serde(with = "weft_fabric::hex::block")]
    pub after: Payload,
    /// An LFT block wholly above its switch's LinearFDBTop when the apply began, written
    /// before any step raises the top over it: the switch forwards by none of its entries
    /// then, so whatever it holds counts as its old (the apply does not read it first, and
    /// `before` is what the plan counts it as, written back on undo while the top hides it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
}

/// A journal line after the blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event", deny_unknown_fields)]
pub enum Event {
    /// A step's writes start going out.
    Begin {
        /// The step.
        step: usize,
    },
    /// A step landed whole and read back equal.
    Done {
        /// The step.
        step: usize,
    },
    /// Rolling back starts.
    RollbackBegin,
    /// Every step landed: the fabric holds the new state.
    Committed,
    /// Every block holds what it held before.
    RolledBack,
    /// The journal holds the first part of the plan's blocks; the others follow, part by
    /// part, each before its SMPs go out.
    Partial,
    /// Every block of the plan is journaled (after [`Event::Partial`]).
    Complete,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Header(Header),
    Block { block: Block },
    Event(Event),
}

/// A journal read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Journal {
    /// Its header.
    pub header: Header,
    /// The blocks.
    pub blocks: Vec<Block>,
    /// The events, in order.
    pub events: Vec<Event>,
}

impl Journal {
    /// Whether the apply it records ended (committed or rolled back).
    pub fn ended(&self) -> Option<Event> {
        self.events
            .iter()
            .rev()
            .find(|e| matches!(e, Event::Committed | Event::RolledBack))
            .copied()
    }

    /// Whether the journal holds only some of the plan's blocks (journaled part by part, the
    /// last part never reached): it can be rolled back, not forward.
    pub fn partial(&self) -> bool {
        self.events.contains(&Event::Partial) && !self.events.contains(&Event::Complete)
    }

    /// The highest step that began, if any.
    pub fn last_begun(&self) -> Option<usize> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Begin { step } => Some(*step),
                _ => None,
            })
            .max()
    }
}

/// Why a journal cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The file.
    #[error("journal {path}: {source}")]
    Io {
        /// Its path.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Its text.
    #[error("journal {path}, line {line}: {why}")]
    Parse {
        /// Its path.
        path: PathBuf,
        /// The line (from 1).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A file that cannot be read as one (a directory, a FIFO, a device, too large, not
    /// UTF-8), or the system said no.
    #[error("journal {path}: {source}")]
    Read {
        /// Its path.
        path: PathBuf,
        /// What is wrong.
        source: weft_fabric::input::ReadError,
    },
    /// An empty file where a journal is: weft writes a journal whole (header first, beside,
    /// then renamed), so no apply of weft's recorded anything in it.
    #[error(
        "journal {0} is empty: weft writes a journal whole, its header first, so no apply \
         recorded anything in it and nothing is to recover; remove it if no other tool uses it"
    )]
    Empty(PathBuf),
    /// A journal already there from an apply that did not end.
    #[error(
        "journal {0} records an apply that did not end: recover it first \
         (`weft apply --recover {0}`)"
    )]
    Unfinished(PathBuf),
}

impl weft_fabric::code::Coded for JournalError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            JournalError::Io { .. } | JournalError::Read { .. } => "weft::deploy::journal_io",
            JournalError::Empty(_) => "weft::deploy::journal_parse",
            JournalError::Parse { .. } => "weft::deploy::journal_parse",
            JournalError::Unfinished(_) => "weft::deploy::journal_unfinished",
        }
    }
}

/// A journal write that fails, for drills: the `at`-th write (0: the journal's creation —
/// header and blocks —, then each event in turn) fails as a full disk does, and with
/// `lasting` every write after it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalFault {
    /// Which write.
    pub at: usize,
    /// Whether every later write fails too (a disk that stays full).
    pub lasting: bool,
}

impl JournalFault {
    /// Whether write `n` fails.
    fn strikes(self, n: usize) -> bool {
        n == self.at || (self.lasting && n > self.at)
    }

    fn error() -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            "no space left on device (injected)",
        )
    }
}

/// A journal being written.
#[derive(Debug)]
pub struct Writer {
    file: File,
    path: PathBuf,
    /// Writes so far (the creation is write 0).
    writes: usize,
    fault: Option<JournalFault>,
}

impl Writer {
    /// Creates the journal at `path` with its header and blocks, synced to disk. A journal
    /// already at `path` is replaced only when the apply it records ended.
    pub fn create(
        path: &Path,
        header: &Header,
        blocks: &[Block],
        fault: Option<JournalFault>,
    ) -> Result<Writer, JournalError> {
        Writer::create_with(path, header, blocks, fault, false)
    }

    /// [`Writer::create`] with the first part of a plan's blocks and [`Event::Partial`] after
    /// them, in the same write: the other parts follow ([`Writer::blocks`]).
    pub fn create_partial(
        path: &Path,
        header: &Header,
        blocks: &[Block],
        fault: Option<JournalFault>,
    ) -> Result<Writer, JournalError> {
        Writer::create_with(path, header, blocks, fault, true)
    }

    fn create_with(
        path: &Path,
        header: &Header,
        blocks: &[Block],
        fault: Option<JournalFault>,
        partial: bool,
    ) -> Result<Writer, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_owned(),
            source,
        };
        if fault.is_some_and(|f| f.strikes(0)) {
            return Err(io(JournalFault::error()));
        }
        if path.exists() {
            match read(path) {
                Ok(j) if j.ended().is_some() => {}
                Ok(_) => return Err(JournalError::Unfinished(path.to_owned())),
                // Not a journal weft can read (empty, damaged, not a file): said as such,
                // never "recover it first", which would refuse it the same way.
                Err(e) => return Err(e),
            }
        }
        let mut text = line(&Line::Header(header.clone()));
        for b in blocks {
            text += &line(&Line::Block { block: b.clone() });
        }
        if partial {
            text += &line(&Line::Event(Event::Partial));
        }
        // Written beside (an exclusive temporary with an unpredictable name), synced, then
        // renamed over: a crash leaves the old journal or the new one, whole.
        let written = crate::files::replace(path, text.as_bytes())
            .map_err(|e| io(std::io::Error::other(e)))?;
        let file = open_append(&written).map_err(io)?;
        Ok(Writer {
            file,
            path: path.to_owned(),
            writes: 1,
            fault,
        })
    }

    /// Opens an existing journal to append to (recovery).
    pub fn append(path: &Path) -> Result<Writer, JournalError> {
        let file = open_append(path).map_err(|source| JournalError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(Writer {
            file,
            path: path.to_owned(),
            writes: 1,
            fault: None,
        })
    }

    /// Appends `blocks` (a part of a plan journaled part by part), synced to disk.
    pub fn blocks(&mut self, blocks: &[Block]) -> Result<(), JournalError> {
        let text: String = blocks
            .iter()
            .map(|b| line(&Line::Block { block: b.clone() }))
            .collect();
        self.write(&text)
    }

    /// Appends `event`, synced to disk.
    pub fn event(&mut self, event: Event) -> Result<(), JournalError> {
        self.write(&line(&Line::Event(event)))
    }

    /// Appends `text` (whole lines), synced to disk: one write, as the fault counts them.
    fn write(&mut self, text: &str) -> Result<(), JournalError> {
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        let n = self.writes;
        self.writes += 1;
        if self.fault.is_some_and(|f| f.strikes(n)) {
            return Err(io(JournalFault::error()));
        }
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.sync_data().map_err(io)
    }
}

/// `path` opened to append to, not through a symbolic link.
fn open_append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    OpenOptions::new()
        .append(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

fn line(l: &Line) -> String {
    let mut s = serde_json::to_string(l).unwrap_or_default();
    s.push('\n');
    s
}

/// Reads the journal at `path`.
pub fn read(path: &Path) -> Result<Journal, JournalError> {
    let text = weft_fabric::input::read_regular(path, weft_fabric::input::MAX_DUMP_BYTES).map_err(
        |source| JournalError::Read {
            path: path.to_owned(),
            source,
        },
    )?;
    if text.is_empty() {
        return Err(JournalError::Empty(path.to_owned()));
    }
    parse(&text).map_err(|(line, why)| JournalError::Parse {
        path: path.to_owned(),
        line,
        why,
    })
}

/// Parses a journal's text; the line and what is wrong otherwise.
pub fn parse(text: &str) -> Result<Journal, (usize, String)> {
    let mut header = None;
    let mut blocks = Vec::new();
    let mut events = Vec::new();
    // Journaled part by part and not complete yet: blocks may follow events.
    let mut parts_open = false;
    let mut done = std::collections::BTreeSet::new();
    let torn = !text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if torn && i + 1 == lines.len() {
            break;
        }
        let parsed: Line = serde_json::from_str(l).map_err(|e| (i + 1, e.to_string()))?;
        match (parsed, i) {
            (Line::Header(h), 0) => {
                if h.format != JOURNAL_FORMAT || h.version != 1 {
                    return Err((
                        1,
                        format!(
                            "`{}` version {}, not a weft journal v1",
                            h.format, h.version
                        ),
                    ));
                }
                header = Some(h);
            }
            // Blocks come before the events, or (journaled part by part) after `partial` and
            // before `complete`.
            (Line::Block { block }, _) if header.is_some() && (events.is_empty() || parts_open) => {
                // The writer journals blocks step by step, every step from 0 on holding one:
                // anything else is an edited journal (and a step far out would have recovery
                // walk every step up to it).
                let next = blocks
                    .last()
                    .map_or(0, |b: &Block| b.step.saturating_add(1));
                if block.step > next || next > block.step.saturating_add(1) {
                    return Err((
                        i + 1,
                        format!("a block of step {} out of order", block.step),
                    ));
                }
                // A part journaled after its step ended: an edited journal.
                if done.contains(&block.step) {
                    return Err((
                        i + 1,
                        format!("a block of step {} after it ended", block.step),
                    ));
                }
                blocks.push(block)
            }
            (Line::Event(e), _) if header.is_some() => {
                if let Event::Begin { step } | Event::Done { step } = e {
                    if blocks.last().is_none_or(|b| step > b.step) {
                        return Err((i + 1, format!("step {step} has no blocks")));
                    }
                }
                match e {
                    Event::Done { step } => {
                        done.insert(step);
                    }
                    Event::Partial => parts_open = true,
                    Event::Complete => parts_open = false,
                    _ => {}
                }
                events.push(e)
            }
            _ => return Err((i + 1, "out of place".to_owned())),
        }
    }
    let header = header.ok_or((1, "no header".to_owned()))?;
    Ok(Journal {
        header,
        blocks,
        events,
    })
}

mod attr_id {
    use crate::smp::Attr;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(a: &Attr, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(a.id())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Attr, D::Error> {
        let id = u16::deserialize(d)?;
        Attr::from_id(id).ok_or_else(|| {
            serde::de::Error::custom(format!("attribute {id:#06x} is not one weft writes"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smp::PAYLOAD;
    use proptest::prelude::*;

    fn journal() -> String {
        let header = Header {
            format: JOURNAL_FORMAT.to_owned(),
            version: 1,
            fabric: "f".to_owned(),
            from: Fingerprint {
                topology: "ab".repeat(32),
                lids: "cd".repeat(32),
                nodes: 2,
                links: 1,
                lid_ports: 2,
            },
            to: Fingerprint {
                topology: "ab".repeat(32),
                lids: "cd".repeat(32),
                nodes: 2,
                links: 1,
                lid_ports: 2,
            },
            wire: WireView::default(),
        };
        let block = Block {
            step: 0,
            node: Guid(0x10),
            port: None,
            attr: Attr::Lft,
            modifier: 3,
            before: [0xff; PAYLOAD],
            after: [1; PAYLOAD],
            hidden: false,
        };
        let mut t = line(&Line::Header(header));
        t += &line(&Line::Block { block });
        t += &line(&Line::Event(Event::Begin { step: 0 }));
        t
    }

    #[test]
    fn a_journal_reads_back_and_a_torn_last_line_is_ignored() {
        let text = journal();
        let j = parse(&text).unwrap();
        assert_eq!(j.blocks.len(), 1);
        assert_eq!(j.events, [Event::Begin { step: 0 }]);
        assert_eq!(j.ended(), None);
        // The writer died halfway through the next line.
        let torn = format!("{text}{{\"event\":\"do");
        assert_eq!(parse(&torn).unwrap(), j);
        // A block after an event, an unknown attribute, a short payload: refused with the line.
        let bad_attr = text.replace("\"attr\":25", "\"attr\":99");
        assert_eq!(parse(&bad_attr).unwrap_err().0, 2);
        let short = text.replace(&"01".repeat(PAYLOAD), "0101");
        assert_eq!(parse(&short).unwrap_err().0, 2);
        let late = text.clone() + text.lines().nth(1).unwrap() + "\n";
        assert_eq!(parse(&late).unwrap_err().0, 4);
        // Blocks out of step order, a step skipped, a step far out, an event of a step with no
        // blocks: an edited journal, refused (recovery would walk every step up to it).
        let second = |step: usize| {
            let b = text.lines().nth(1).unwrap();
            b.replace("\"step\":0", &format!("\"step\":{step}"))
        };
        let lines: Vec<&str> = text.lines().collect();
        for (edited, line) in [
            (format!("{}\n{}\n{}\n", lines[0], second(1), lines[2]), 2),
            (
                format!("{}\n{}\n{}\n{}\n", lines[0], lines[1], second(2), lines[2]),
                3,
            ),
            (
                format!("{}\n{}\n{}\n", lines[0], second(usize::MAX), lines[2]),
                2,
            ),
            (
                format!("{}{{\"event\":\"begin\",\"step\":{}}}\n", text, u64::MAX),
                4,
            ),
        ] {
            assert_eq!(parse(&edited).unwrap_err().0, line, "{edited}");
        }
        let two_steps = format!("{}\n{}\n{}\n", lines[0], lines[1], second(1));
        assert_eq!(parse(&two_steps).unwrap().blocks.len(), 2);
    }

    #[test]
    fn a_journal_written_part_by_part_takes_blocks_after_its_events_until_complete() {
        let text = journal();
        let lines: Vec<&str> = text.lines().collect();
        let partial = line(&Line::Event(Event::Partial));
        let complete = line(&Line::Event(Event::Complete));
        let done = line(&Line::Event(Event::Done { step: 0 }));
        let block = format!("{}\n", lines[1]);
        let next = block.replace("\"step\":0", "\"step\":1");
        // Header, part one, partial, begin, part two (step 0), complete: read, partial no more.
        let whole = format!(
            "{}\n{block}{partial}{}\n{block}{complete}",
            lines[0], lines[2]
        );
        let j = parse(&whole).unwrap();
        assert_eq!(j.blocks.len(), 2);
        assert!(!j.partial());
        // Without `complete`: partial (rolled back only).
        let cut = format!("{}\n{block}{partial}{}\n{block}", lines[0], lines[2]);
        assert!(parse(&cut).unwrap().partial());
        // After `complete`, or of a step that ended, or with no `partial`: refused.
        for (edited, at) in [
            (format!("{whole}{block}"), 7),
            (format!("{cut}{done}{block}"), 7),
            (format!("{text}{next}"), 4),
        ] {
            assert_eq!(parse(&edited).unwrap_err().0, at, "{edited}");
        }
        // The next step's blocks after this one ended: read.
        assert_eq!(
            parse(&format!("{cut}{done}{next}")).unwrap().blocks.len(),
            3
        );
    }

    proptest! {
        /// Any text, and any edit of a real journal, is read or refused; never a panic.
        #[test]
        fn any_text_is_read_or_refused(cut in 0usize..2000, junk in ".{0,40}") {
            let text = journal();
            let at = cut.min(text.len());
            let mut edited = text.clone();
            if text.is_char_boundary(at) {
                edited.insert_str(at, &junk);
            }
            let _ = parse(&edited);
            let _ = parse(&junk);
        }
    }
}
