//! Byte offsets and LSP positions (lines and UTF-16 code units, what the protocol counts by
//! default).

use lsp_types::{Position, Range};

/// The line starts of one text.
#[derive(Clone, Debug)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// The index of `text`.
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// The position of byte `offset` in `text` (clamped to the text, and back to a character
    /// boundary).
    pub(crate) fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let col: usize = text
            .get(start..offset)
            .unwrap_or("")
            .chars()
            .map(char::len_utf16)
            .sum();
        Position::new(line as u32, col as u32)
    }

    /// The range of bytes `start..end`.
    pub(crate) fn range(&self, text: &str, start: usize, end: usize) -> Range {
        Range::new(
            self.position(text, start),
            self.position(text, end.max(start)),
        )
    }

    /// The byte offset of `pos` (clamped to its line and to the text).
    pub(crate) fn offset(&self, text: &str, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else {
            return text.len();
        };
        let end = self
            .starts
            .get(pos.line as usize + 1)
            .copied()
            .unwrap_or(text.len());
        let line = text.get(start..end).unwrap_or("");
        let mut units = 0usize;
        for (i, c) in line.char_indices() {
            if units >= pos.character as usize || c == '\n' {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }
}

/// The identifier around byte `offset` of `text` and its byte range.
pub(crate) fn word_at(text: &str, offset: usize) -> Option<(&str, usize, usize)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let before = text.get(..offset)?;
    let start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let after = text.get(offset..)?;
    let end = offset
        + after
            .char_indices()
            .find(|(_, c)| !is_word(*c))
            .map_or(after.len(), |(i, _)| i);
    let w = text.get(start..end)?.trim_matches(':');
    (!w.is_empty()).then_some((w, start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns() {
        // `é` is one UTF-16 unit and two bytes; `𝄞` is two units and four bytes.
        let text = "é𝄞x\nab";
        let ix = LineIndex::new(text);
        assert_eq!(ix.position(text, 6), Position::new(0, 3));
        assert_eq!(ix.position(text, 8), Position::new(1, 0));
        assert_eq!(ix.offset(text, Position::new(0, 3)), 6);
        assert_eq!(ix.offset(text, Position::new(1, 1)), 9);
        assert_eq!(ix.offset(text, Position::new(7, 0)), text.len());
    }
}
