//! Slurm host lists written: names that share a prefix and a numeric suffix folded into
//! ranges (`cn001 cn002 cn003 cn007` → `cn[001-003,007]`), and the natural order they are
//! listed in (`leaf2` before `leaf10`).
//!
//! This is the writer, for the Slurm topology files `weft export` writes; [`parse`] is the
//! reader (the language's host lists, the simulator's job files).

pub mod parse;

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A name split into a prefix and its trailing digits (empty when it ends in none).
fn split(name: &str) -> (&str, &str) {
    let digits = name
        .bytes()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    name.split_at(name.len() - digits)
}

/// Natural order: runs of digits compare by value (then by length, so `01` sorts before `1`
/// only after equal values), everything else byte by byte.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let dx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let dy = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, rx) = x.split_at(dx);
                let (ny, ry) = y.split_at(dy);
                let tx = trim_zeros(nx);
                let ty = trim_zeros(ny);
                let by_value = tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                if dx != dy {
                    return dx.cmp(&dy);
                }
                x = rx;
                y = ry;
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                x = x.get(1..).unwrap_or_default();
                y = y.get(1..).unwrap_or_default();
            }
        }
    }
}

/// Digits without their leading zeros (`"0"` stays one digit's worth of nothing: empty).
fn trim_zeros(d: &[u8]) -> &[u8] {
    let z = d.iter().take_while(|&&c| c == b'0').count();
    d.get(z..).unwrap_or_default()
}

/// One numeric suffix: its value and how it is written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Num {
    value: u64,
    text: String,
}

impl Num {
    /// Whether the number is written with leading zeros (`007`): then only numbers of its
    /// width may share a range with it.
    fn padded(&self) -> bool {
        self.text.len() > 1 && self.text.starts_with('0')
    }

    /// Whether `next` continues a range that ends at `self`, as Slurm expands ranges: a range
    /// is written at the width of its first number, so padded numbers keep their width and
    /// unpadded ones may grow (`9-10`).
    fn continued_by(&self, next: &Num) -> bool {
        self.value.checked_add(1) == Some(next.value)
            && (self.text.len() == next.text.len() || (!self.padded() && !next.padded()))
    }
}

/// `names` as one Slurm host list: sorted in natural order, duplicates dropped, names that
/// share a prefix and end in digits folded into bracketed ranges (`cn[001-018,020]`); names
/// that end in no digit, or whose number is too long to be one, listed as they are. Expanding
/// the result with Slurm's host list parser gives the names back.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    let mut plain: Vec<&str> = Vec::new();
    let mut by_prefix: BTreeMap<&str, Vec<Num>> = BTreeMap::new();
    for n in names {
        let n = n.as_ref();
        let (prefix, digits) = split(n);
        match digits.parse::<u64>() {
            // A number of more than 18 digits may not survive Slurm's own parser.
            Ok(value) if !digits.is_empty() && digits.len() <= 18 => {
                by_prefix.entry(prefix).or_default().push(Num {
                    value,
                    text: digits.to_owned(),
                });
            }
            _ => plain.push(n),
        }
    }
    // Each entry: the first name (its sort key) and its text.
    let mut parts: Vec<(String, String)> = plain
        .into_iter()
        .map(|n| (n.to_owned(), n.to_owned()))
        .collect();
    for (prefix, mut nums) in by_prefix {
        nums.sort_by(|a, b| a.value.cmp(&b.value).then(a.text.len().cmp(&b.text.len())));
        nums.dedup();
        // Runs of consecutive numbers; numbers of a different width start a list of their
        // own so each bracket reads at one width where padding matters.
        let mut runs: Vec<(Num, Num)> = Vec::new();
        for n in nums {
            match runs.last_mut() {
                Some((_, hi)) if hi.continued_by(&n) => *hi = n,
                _ => runs.push((n.clone(), n)),
            }
        }
        let Some((first, _)) = runs.first() else {
            continue;
        };
        let key = format!("{prefix}{}", first.text);
        if let [(lo, hi)] = runs.as_slice() {
            if lo == hi {
                parts.push((key.clone(), key));
                continue;
            }
        }
        let inner: Vec<String> = runs
            .iter()
            .map(|(lo, hi)| {
                if lo == hi {
                    lo.text.clone()
                } else {
                    format!("{}-{}", lo.text, hi.text)
                }
            })
            .collect();
        parts.push((key, format!("{prefix}[{}]", inner.join(","))));
    }
    parts.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    parts.dedup();
    parts
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slurm's expansion of what [`compress`] writes (brackets of comma-separated numbers and
    /// ranges, each range at its first number's width), written apart from it as a check.
    fn expand(list: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = list;
        while !rest.is_empty() {
            let (item, tail) = match (rest.find(','), rest.find('[')) {
                (Some(c), Some(b)) if b < c => {
                    let close = rest.find(']').unwrap() + 1;
                    (&rest[..close], rest[close..].trim_start_matches(','))
                }
                (None, Some(_)) => {
                    let close = rest.find(']').unwrap() + 1;
                    (&rest[..close], rest[close..].trim_start_matches(','))
                }
                (Some(c), _) => (&rest[..c], &rest[c + 1..]),
                (None, None) => (rest, ""),
            };
            match item.split_once('[') {
                Some((prefix, body)) => {
                    for r in body.trim_end_matches(']').split(',') {
                        let (lo, hi) = r.split_once('-').unwrap_or((r, r));
                        let width = lo.len();
                        for v in lo.parse::<u64>().unwrap()..=hi.parse::<u64>().unwrap() {
                            out.push(format!("{prefix}{v:0width$}"));
                        }
                    }
                }
                None => out.push(item.to_owned()),
            }
            rest = tail;
        }
        out
    }

    #[test]
    fn ranges_fold_at_their_width() {
        let names: Vec<String> = (1..=18).map(|i| format!("cn{i:03}")).collect();
        assert_eq!(compress(&names), "cn[001-018]");
        assert_eq!(
            compress(&["cn001", "cn002", "cn003", "cn007", "cn009", "cn010"]),
            "cn[001-003,007,009-010]"
        );
        assert_eq!(compress(&["cn9", "cn10", "cn11"]), "cn[9-11]");
        assert_eq!(compress(&["cn09", "cn10"]), "cn[09-10]");
        assert_eq!(compress(&["cn9", "cn010"]), "cn[9,010]");
        assert_eq!(compress(&["login", "cn1"]), "cn1,login");
        assert_eq!(compress(&["a1", "b2", "a2", "a2"]), "a[1-2],b2");
        assert_eq!(compress(&["x"]), "x");
        assert_eq!(compress::<&str>(&[]), "");
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["leaf10", "leaf2", "leaf1", "spine1", "leaf02"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["leaf1", "leaf2", "leaf02", "leaf10", "spine1"]);
    }

    proptest::proptest! {
        #[test]
        fn compress_expands_to_the_names(
            names in proptest::collection::vec(
                ("(cn|gpu-|x)", 0u64..40, 0usize..4), 0..40)
        ) {
            let names: Vec<String> = names
                .into_iter()
                .map(|(p, v, w)| format!("{p}{v:0w$}"))
                .collect();
            let mut want = names.clone();
            want.sort();
            want.dedup();
            let mut got = expand(&compress(&names));
            got.sort();
            proptest::prop_assert_eq!(got, want, "{}", compress(&names));
        }
    }
}
