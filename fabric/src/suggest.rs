//! "Did you mean" suggestions, in every reader and in the compiler: the edit distance and the
//! one rule for when a name is close enough to suggest ([`closest`]).

/// Optimal string alignment distance between `a` and `b` in characters: insertions,
/// deletions, substitutions and swaps of adjacent characters each cost one.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let at = |i: usize, j: usize| i * w + j;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for (k, x) in d.iter_mut().enumerate() {
        let (i, j) = (k / w, k % w);
        if i == 0 || j == 0 {
            *x = i + j;
        }
    }
    let get = |d: &[usize], i: usize, j: usize| d.get(at(i, j)).copied().unwrap_or(usize::MAX);
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let (ai, bj) = (a.get(i - 1), b.get(j - 1));
            let cost = usize::from(ai != bj);
            let mut v = get(&d, i - 1, j)
                .saturating_add(1)
                .min(get(&d, i, j - 1).saturating_add(1))
                .min(get(&d, i - 1, j - 1).saturating_add(cost));
            if i > 1 && j > 1 && ai == b.get(j - 2) && a.get(i - 2) == bj {
                v = v.min(get(&d, i - 2, j - 2).saturating_add(1));
            }
            if let Some(x) = d.get_mut(at(i, j)) {
                *x = v;
            }
        }
    }
    get(&d, a.len(), b.len())
}

/// The closest of `candidates` to `name`, if close enough to suggest: at most a third of the
/// longer of the two words' length away (at least 1), ties to the alphabetically first.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(name, c);
        let limit = (name.len().max(c.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, bc)| d < bd || (d == bd && c < bc)) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::{closest, edit_distance};

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("switch", "switch"), 0);
        assert_eq!(edit_distance("swtich", "switch"), 1); // a swap
        assert_eq!(edit_distance("levle", "level"), 1);
        assert_eq!(edit_distance("sb7801", "sb7800"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("héllo", "hello"), 1); // characters, not bytes
    }

    #[test]
    fn suggestions() {
        assert_eq!(closest("sb7801", ["sb7800", "qm8700"]), Some("sb7800"));
        assert_eq!(closest("zzz", ["sb7800"]), None);
        assert_eq!(closest("levle", ["level", "lid"]), Some("level"));
        // Ties go to the alphabetically first, whatever the order given.
        assert_eq!(closest("ab", ["ac", "aa"]), Some("aa"));
    }
}
