//! Hex text of bytes: how a plan file writes an LFT block (two digits an entry, `ff` for
//! none), a journal a 64-byte SMP payload, and both their SHA-256 digests. One encoder, one
//! decoder and one serde adaptor ([`block`]) for all of them.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex, two digits a byte.
pub fn encode(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        for nibble in [b >> 4, b & 15] {
            s.push(char::from(
                DIGITS.get(usize::from(nibble)).copied().unwrap_or(b'0'),
            ));
        }
    }
    s
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Exactly `2 × N` hex digits (either case) as `N` bytes; anything else (a digit short or
/// over, a sign, a blank) is `None`.
pub fn decode<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (b, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let (hi, lo) = (pair.first().copied()?, pair.get(1).copied()?);
        *b = (nibble(hi)? << 4) | nibble(lo)?;
    }
    Some(out)
}

/// A fixed-size block of bytes as one hex string in JSON: `#[serde(with =
/// "weft_fabric::hex::block")]` on a `[u8; N]`. Reading refuses anything but `2 × N` hex
/// digits ("not N bytes of hex").
pub mod block {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes [`encode`](super::encode)'s text.
    pub fn serialize<S: Serializer, const N: usize>(b: &[u8; N], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::encode(b))
    }

    /// Reads what [`decode`](super::decode) takes.
    pub fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
        d: D,
    ) -> Result<[u8; N], D::Error> {
        let text = String::deserialize(d)?;
        super::decode(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not {N} bytes of hex: `{text}`")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn only_whole_blocks_of_hex_digits_decode() {
        assert_eq!(decode::<2>("ff0A"), Some([0xff, 0x0a]));
        // `u8::from_str_radix` takes a sign; a block of hex does not.
        for bad in ["ff0", "ff0a0", "+f0a", "ff 0", "zz0a", "", "ffé"] {
            assert_eq!(decode::<2>(bad), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn encoding_round_trips(bytes in proptest::array::uniform32(any::<u8>())) {
            let text = encode(&bytes);
            prop_assert_eq!(text.len(), 64);
            prop_assert!(text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            prop_assert_eq!(decode::<32>(&text), Some(bytes));
            prop_assert_eq!(decode::<32>(&text.to_uppercase()), Some(bytes));
        }
    }
}
