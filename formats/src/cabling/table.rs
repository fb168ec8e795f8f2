//! A design given as a cabling spreadsheet: CSV rows of `StartDevice,StartPort,EndDevice,EndPort`.
//!
//! The first row is the header. Columns are found by name, compared ignoring case, spaces,
//! `_` and `-` (`Start Device`, `start_device` and `StartDevice` are one column), in any order:
//!
//! * `StartDevice`, `StartPort`, `EndDevice`, `EndPort` are required: a device's name and a
//!   port number (a decimal 1–255) at each end of the cable.
//! * `Speed` (`SDR` … `XDR`, as ibnetdiscover writes it; case ignored) and `Width` (`1x`,
//!   `2x`, `4x`, `8x`, `12x`), optional: the cable's designed rate, compared with the found
//!   one. An empty cell, or no such column, expects nothing.
//! * Any other column (cable type, length, label, …) is ignored.
//!
//! Every device is a node of the design, with as many ports as its highest port cabled. A
//! spreadsheet says nothing of GUIDs or of node kinds: [`read`] gives a [`Fabric`] whose nodes
//! are switches with made-up GUIDs, to be compared with [`super::Options::table`] (no GUID
//! matching, no rate expected beyond the columns).
//!
//! Refused, each naming its CSV line (and column where it has one): a row the CSV reader
//! cannot read, a missing or repeated column, an empty device or port, a port that is not a
//! number from 1 to 255, a speed or width weft does not know, a cable from a device to
//! itself, the same cable twice, a port cabled twice, and a file of no cables.

use std::collections::BTreeMap;
use weft_fabric::{Fabric, FabricBuilder, NodeKind, NodeSpec};
use weft_fabric::{Guid, NodeId, PortRef, Speed, Width};

/// Why a cabling spreadsheet cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum TableError {
    /// The CSV itself is malformed (a row of another length than the header, bad UTF-8).
    #[error("line {line}: {message}")]
    #[diagnostic(code(weft::cabling::csv))]
    Csv {
        /// The line (1-based), where the reader says.
        line: u64,
        /// What the CSV reader says.
        message: String,
    },
    /// A required column is not in the header.
    #[error("line 1: no `{column}` column (the header must name StartDevice, StartPort, EndDevice, EndPort)")]
    #[diagnostic(code(weft::cabling::csv_column))]
    MissingColumn {
        /// The column's name.
        column: &'static str,
    },
    /// A column weft reads is named twice.
    #[error("line 1, columns {first} and {second}: both are `{column}`")]
    #[diagnostic(code(weft::cabling::csv_column))]
    RepeatedColumn {
        /// The column's name.
        column: &'static str,
        /// Its first column (1-based).
        first: usize,
        /// Its second column.
        second: usize,
    },
    /// A required cell is empty.
    #[error("line {line}, column {column} ({name}): empty")]
    #[diagnostic(code(weft::cabling::csv_cell))]
    Empty {
        /// The line.
        line: u64,
        /// The column (1-based).
        column: usize,
        /// The column's name.
        name: &'static str,
    },
    /// A cell that should hold a port number, a speed or a width does not.
    #[error("line {line}, column {column} ({name}): `{value}` is not {expected}")]
    #[diagnostic(code(weft::cabling::csv_cell))]
    Bad {
        /// The line.
        line: u64,
        /// The column (1-based).
        column: usize,
        /// The column's name.
        name: &'static str,
        /// The cell.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A cable from a device to itself.
    #[error("line {line}: the cable joins `{device}` to itself (ports {a} and {b})")]
    #[diagnostic(code(weft::cabling::csv_self_link))]
    SelfLink {
        /// The line.
        line: u64,
        /// The device.
        device: String,
        /// One port.
        a: u8,
        /// The other.
        b: u8,
    },
    /// The same cable twice.
    #[error("line {line}: the cable {a} – {b} is already on line {first}")]
    #[diagnostic(code(weft::cabling::csv_duplicate))]
    Duplicate {
        /// The line.
        line: u64,
        /// One end.
        a: String,
        /// The other.
        b: String,
        /// The line it is first on.
        first: u64,
    },
    /// A port at the end of two cables.
    #[error("line {line}: port {port} is already cabled on line {first}")]
    #[diagnostic(code(weft::cabling::csv_port_twice))]
    PortTwice {
        /// The line.
        line: u64,
        /// The port, as `device/port`.
        port: String,
        /// The line that cables it first.
        first: u64,
    },
    /// No cable at all.
    #[error("no cable: the file has no row under its header")]
    #[diagnostic(code(weft::cabling::csv_empty))]
    NoCables,
}

/// The columns weft reads, by their canonical name.
const START_DEVICE: &str = "StartDevice";
const START_PORT: &str = "StartPort";
const END_DEVICE: &str = "EndDevice";
const END_PORT: &str = "EndPort";
const SPEED: &str = "Speed";
const WIDTH: &str = "Width";
const COLUMNS: [&str; 6] = [START_DEVICE, START_PORT, END_DEVICE, END_PORT, SPEED, WIDTH];

/// A header cell as compared: lower case, without spaces, `_` and `-`.
fn folded(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Where each read column is (0-based), by canonical name.
struct Header(BTreeMap<&'static str, usize>);

impl Header {
    fn of(record: &csv::StringRecord) -> Result<Header, TableError> {
        let mut at = BTreeMap::new();
        for (i, cell) in record.iter().enumerate() {
            let f = folded(cell);
            let Some(&name) = COLUMNS.iter().find(|c| folded(c) == f) else {
                continue;
            };
            if let Some(&first) = at.get(name) {
                return Err(TableError::RepeatedColumn {
                    column: name,
                    first: first + 1,
                    second: i + 1,
                });
            }
            at.insert(name, i);
        }
        for c in [START_DEVICE, START_PORT, END_DEVICE, END_PORT] {
            if !at.contains_key(c) {
                return Err(TableError::MissingColumn { column: c });
            }
        }
        Ok(Header(at))
    }
}

/// One row being read.
struct Row<'a> {
    record: &'a csv::StringRecord,
    header: &'a Header,
    line: u64,
}

impl Row<'_> {
    /// The cell of `name` (trimmed), and its column (1-based); `None` for an optional column
    /// the header lacks.
    fn cell(&self, name: &'static str) -> Option<(&str, usize)> {
        let &i = self.header.0.get(name)?;
        Some((self.record.get(i).unwrap_or("").trim(), i + 1))
    }

    fn required(&self, name: &'static str) -> Result<(&str, usize), TableError> {
        // A required column is always in the header (Header::of).
        let (v, column) = self.cell(name).unwrap_or(("", 0));
        if v.is_empty() {
            return Err(TableError::Empty {
                line: self.line,
                column,
                name,
            });
        }
        Ok((v, column))
    }

    fn bad(
        &self,
        name: &'static str,
        column: usize,
        value: &str,
        expected: &'static str,
    ) -> TableError {
        TableError::Bad {
            line: self.line,
            column,
            name,
            value: value.to_owned(),
            expected,
        }
    }

    fn port(&self, name: &'static str) -> Result<u8, TableError> {
        let (v, column) = self.required(name)?;
        match v.parse::<u8>() {
            Ok(p) if p >= 1 && v.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
            _ => Err(self.bad(name, column, v, "a port number from 1 to 255")),
        }
    }

    fn speed(&self) -> Result<Option<Speed>, TableError> {
        match self.cell(SPEED) {
            None | Some(("", _)) => Ok(None),
            Some((v, column)) => Speed::ALL
                .into_iter()
                .find(|s| s.as_str().eq_ignore_ascii_case(v))
                .map(Some)
                .ok_or_else(|| {
                    self.bad(
                        SPEED,
                        column,
                        v,
                        "a speed (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR)",
                    )
                }),
        }
    }

    fn width(&self) -> Result<Option<Width>, TableError> {
        match self.cell(WIDTH) {
            None | Some(("", _)) => Ok(None),
            Some((v, column)) => v
                .strip_suffix(['x', 'X'])
                .and_then(|n| n.parse::<u64>().ok())
                .and_then(Width::from_lanes)
                .map(Some)
                .ok_or_else(|| self.bad(WIDTH, column, v, "a width (1x, 2x, 4x, 8x, 12x)")),
        }
    }
}

/// A device's port: its name and number.
type Port = (String, u8);

/// One cable of the spreadsheet.
struct Cable {
    line: u64,
    a: Port,
    b: Port,
    speed: Option<Speed>,
    width: Option<Width>,
}

fn cables(data: &[u8]) -> Result<Vec<Cable>, TableError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(false)
        .from_reader(data);
    let mut records = reader.records();
    let csv_error = |e: csv::Error| TableError::Csv {
        line: e.position().map_or(0, csv::Position::line),
        message: match e.kind() {
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => format!("{len} field(s) where the header has {expected_len}"),
            csv::ErrorKind::Utf8 { .. } => "not UTF-8".to_owned(),
            _ => e.to_string(),
        },
    };
    let header = match records.next() {
        Some(r) => Header::of(&r.map_err(csv_error)?)?,
        None => {
            return Err(TableError::MissingColumn {
                column: START_DEVICE,
            })
        }
    };
    let mut out = Vec::new();
    for record in records {
        let record = record.map_err(csv_error)?;
        let line = record.position().map_or(0, csv::Position::line);
        // A row of empty cells (a spreadsheet's trailing rows) is no cable.
        if record.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        let row = Row {
            record: &record,
            header: &header,
            line,
        };
        let a = (
            row.required(START_DEVICE)?.0.to_owned(),
            row.port(START_PORT)?,
        );
        let b = (row.required(END_DEVICE)?.0.to_owned(), row.port(END_PORT)?);
        let (speed, width) = (row.speed()?, row.width()?);
        out.push(Cable {
            line,
            a,
            b,
            speed,
            width,
        });
    }
    Ok(out)
}

/// Reads a cabling spreadsheet (CSV, UTF-8) as a design fabric named `name` (see the module
/// docs).
pub fn read(name: &str, data: &[u8]) -> Result<Fabric, TableError> {
    let cables = cables(data)?;
    if cables.is_empty() {
        return Err(TableError::NoCables);
    }
    // Devices in order of first appearance; each with its highest port.
    let mut devices: Vec<(String, u8)> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut ports: BTreeMap<(String, u8), u64> = BTreeMap::new();
    let mut pairs: BTreeMap<(Port, Port), u64> = BTreeMap::new();
    for c in &cables {
        if c.a.0 == c.b.0 {
            return Err(TableError::SelfLink {
                line: c.line,
                device: c.a.0.clone(),
                a: c.a.1,
                b: c.b.1,
            });
        }
        let key = if c.a <= c.b {
            (c.a.clone(), c.b.clone())
        } else {
            (c.b.clone(), c.a.clone())
        };
        let text = |e: &(String, u8)| format!("{}/{}", e.0, e.1);
        if let Some(&first) = pairs.get(&key) {
            return Err(TableError::Duplicate {
                line: c.line,
                a: text(&c.a),
                b: text(&c.b),
                first,
            });
        }
        pairs.insert(key, c.line);
        for end in [&c.a, &c.b] {
            if let Some(&first) = ports.get(end) {
                return Err(TableError::PortTwice {
                    line: c.line,
                    port: text(end),
                    first,
                });
            }
            ports.insert(end.clone(), c.line);
            match index.get(&end.0) {
                Some(&i) => {
                    if let Some(d) = devices.get_mut(i) {
                        d.1 = d.1.max(end.1);
                    }
                }
                None => {
                    index.insert(end.0.clone(), devices.len());
                    devices.push(end.clone());
                }
            }
        }
    }
    let mut b = FabricBuilder::new(name);
    let mut ids: BTreeMap<&str, NodeId> = BTreeMap::new();
    for (i, (device, ports)) in (1u64..).zip(&devices) {
        // Made-up GUIDs (a spreadsheet has none); never matched against a fabric's.
        let id = b
            .add_node(NodeSpec::new(
                device.as_str(),
                NodeKind::Switch,
                Guid(i),
                *ports,
            ))
            .map_err(|e| TableError::Csv {
                line: 0,
                message: e.to_string(),
            })?;
        ids.insert(device.as_str(), id);
    }
    for c in &cables {
        let (Some(&na), Some(&nb)) = (ids.get(c.a.0.as_str()), ids.get(c.b.0.as_str())) else {
            continue;
        };
        let l = b
            .add_link(PortRef::new(na, c.a.1), PortRef::new(nb, c.b.1))
            .map_err(|e| TableError::Csv {
                line: c.line,
                message: e.to_string(),
            })?;
        b.set_link_rate(l, c.speed, c.width);
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::cabling::{compare, MatchMode, Options};

    const SHEET: &str = "\
Start Device,Start Port,End Device,End Port,Cable Type,Length,Speed,Width
leaf1,1,host1,1,DAC,1m,EDR,4x
leaf1,2,host2,1,DAC,1m,,
leaf1,33,spine,1,AOC,5m,EDR,
,,,,,,,
";

    #[test]
    fn a_sheet_reads_as_a_fabric_of_its_cables() {
        let f = read("sheet", SHEET.as_bytes()).unwrap();
        let names: Vec<&str> = f.nodes().iter().map(weft_fabric::Node::name).collect();
        assert_eq!(names, ["leaf1", "host1", "host2", "spine"]);
        assert_eq!(f.nodes()[0].spec.port_count, 33);
        let rates: Vec<(Option<Speed>, Option<Width>)> =
            f.links().iter().map(|l| (l.speed, l.width)).collect();
        assert_eq!(
            rates,
            [
                (Some(Speed::EDR), Some(Width::X4)),
                (None, None),
                (Some(Speed::EDR), None)
            ]
        );
        // Compared with itself (as a fabric): nothing differs.
        let c = compare(&f, &f, &Options::table(MatchMode::Auto)).unwrap();
        assert_eq!(c.differences, vec![]);
        // Columns in another order, other spellings.
        let other = "end_port,END DEVICE,start-port,startdevice\n1,host1,1,leaf1\n";
        let g = read("other", other.as_bytes()).unwrap();
        assert_eq!(g.links().len(), 1);
        assert_eq!(g.nodes()[0].name(), "leaf1");
    }

    #[test]
    fn bad_sheets_are_refused_naming_line_and_column() {
        let h = "StartDevice,StartPort,EndDevice,EndPort,Speed,Width\n";
        let cases: Vec<(&str, String)> = vec![
            ("empty file", String::new()),
            (
                "no EndPort column",
                "StartDevice,StartPort,EndDevice\na,1,b\n".to_owned(),
            ),
            (
                "a column twice",
                "StartDevice,StartPort,EndDevice,EndPort,start device\n".to_owned(),
            ),
            ("header only", h.to_owned()),
            ("short row", format!("{h}a,1,b,1,EDR,4x\na,2,b\n")),
            ("empty device", format!("{h}a,1,b,1,,\n,2,b,2,,\n")),
            ("port not a number", format!("{h}a,1,b,one,,\n")),
            ("port 0", format!("{h}a,0,b,1,,\n")),
            ("port 256", format!("{h}a,256,b,1,,\n")),
            ("port +1", format!("{h}a,+1,b,1,,\n")),
            ("bad speed", format!("{h}a,1,b,1,FAST,\n")),
            ("bad width", format!("{h}a,1,b,1,EDR,3x\n")),
            ("self link", format!("{h}a,1,a,2,,\n")),
            ("same cable twice", format!("{h}a,1,b,1,,\nb,1,a,1,,\n")),
            ("port twice", format!("{h}a,1,b,1,,\nc,1,a,1,,\n")),
        ];
        let mut out = String::new();
        for (what, text) in &cases {
            let e = read("t", text.as_bytes()).unwrap_err();
            out += &format!("{what}: {e}\n");
        }
        let mut bytes = h.as_bytes().to_vec();
        bytes.extend_from_slice(b"a,1,b,1,,\nc,1,d\xff,1,,\n");
        let e = read("t", &bytes).unwrap_err();
        out += &format!("not UTF-8: {e}\n");
        insta::assert_snapshot!(out);
    }
}
