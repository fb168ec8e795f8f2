//! Hex text of bytes: how a plan file writes an LFT block (two digits an entry, `ff` for
//! none), a journal a 64-byte SMP payload, and both their SHA-256 digests. One encoder, one
//! decoder and one serde adaptor ([`block`]) for all of them; and [`lenient_u64`], the one
//! reader of a 64-bit number people write in hex (a GUID, an M_Key).

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

/// A 64-bit number as people and tools write it in hex: with or without `0x` (or `0X`), 1 to
/// 16 digits (`0x0002c903000a1b2c`, `2c903000a1b2c`), or four groups of four digits joined by
/// `:` as `ibv_devinfo` prints a GUID (`0002:c903:000a:1b2c`). `None` for anything else: no
/// sign, no blanks, no empty text.
pub fn lenient_u64(text: &str) -> Option<u64> {
    let hex = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    let digits: String = if hex.contains(':') {
        let groups: Vec<&str> = hex.split(':').collect();
        if groups.len() != 4 || groups.iter().any(|g| g.len() != 4) {
            return None;
        }
        groups.concat()
    } else {
        hex.to_owned()
    };
    if !(1..=16).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(&digits, 16).ok()
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

/// An SL→VL table as 16 hex digits, one a SL (SL 0 first), as `SmpWrite::Sl2vl` writes it:
/// `#[serde(with = "weft_fabric::hex::vls")]` on a `[u8; 16]`. Reading refuses anything but
/// 16 hex digits; writing cuts each VL to its low four bits (an SMP carries no more).
pub mod vls {
    use serde::{Deserialize, Deserializer, Serializer};

    /// The 16 VLs, one digit each.
    pub fn serialize<S: Serializer>(v: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
        let text: String = v
            .iter()
            .map(|&vl| {
                char::from(
                    super::DIGITS
                        .get(usize::from(vl & 15))
                        .copied()
                        .unwrap_or(b'0'),
                )
            })
            .collect();
        s.serialize_str(&text)
    }

    /// Reads 16 hex digits.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 16], D::Error> {
        let text = String::deserialize(d)?;
        let bad = || serde::de::Error::custom(format!("not 16 VLs of hex: `{text}`"));
        let digits = text.as_bytes();
        if digits.len() != 16 {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        for (v, &c) in out.iter_mut().zip(digits) {
            *v = super::nibble(c).ok_or_else(bad)?;
        }
        Ok(out)
    }
}

/// VL arbitration entries as hex, four digits an entry as the SMP carries it (the VL's byte,
/// then the weight's), as `SmpWrite::VlArb` writes them: `#[serde(with =
/// "weft_fabric::hex::arb")]` on a `Vec<(u8, u8)>`. Reading refuses a length that is not a
/// multiple of four digits, a VL above 15 and more than 32 entries.
pub mod arb {
    use serde::{Deserialize, Deserializer, Serializer};

    /// The entries, four digits each.
    pub fn serialize<S: Serializer>(e: &[(u8, u8)], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = e.iter().flat_map(|&(vl, w)| [vl & 15, w]).collect();
        s.serialize_str(&super::encode(&bytes))
    }

    /// Reads up to 32 entries.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u8, u8)>, D::Error> {
        let text = String::deserialize(d)?;
        let bad = || {
            serde::de::Error::custom(format!(
                "not VL arbitration entries (up to 32, four hex digits each, VL 0 to 15): `{text}`"
            ))
        };
        let digits = text.as_bytes();
        if !digits.len().is_multiple_of(4) || digits.len() > 4 * 32 {
            return Err(bad());
        }
        let mut out = Vec::with_capacity(digits.len() / 4);
        for e in digits.chunks_exact(4) {
            let [a, b, c, d] = e else {
                return Err(bad());
            };
            let byte = |h: u8, l: u8| Some((super::nibble(h)? << 4) | super::nibble(l)?);
            let (vl, w) = (byte(*a, *b).ok_or_else(bad)?, byte(*c, *d).ok_or_else(bad)?);
            if vl > 15 {
                return Err(bad());
            }
            out.push((vl, w));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
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
