//! Domain newtypes: GUIDs, LIDs, port numbers, SLs and VLs, and dense ids into a [`Fabric`].
//!
//! [`Guid`]'s `Display`/`FromStr` and the [`guid_hex`] serde adaptor are the one GUID text form;
//! [`crate::hex`] is the one hex codec.
//!
//! [`Fabric`]: crate::Fabric

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A 64-bit globally unique identifier (node, port or system image GUID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Guid(pub u64);

impl fmt::Display for Guid {
    /// `0x` and 16 hex digits, the form every weft file writes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// Text that is not a GUID: what [`Guid::from_str`] refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a hex GUID")]
pub struct GuidError(pub String);

impl FromStr for Guid {
    type Err = GuidError;

    /// `0x` (or `0X`) and 1 to 16 hex digits, nothing else (no sign, no blanks): how weft's
    /// files (state, plan, wire view, journal, certificate) write a GUID.
    fn from_str(s: &str) -> Result<Guid, GuidError> {
        s.strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .filter(|h| (1..=16).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .map(Guid)
            .ok_or_else(|| GuidError(s.to_owned()))
    }
}

impl Guid {
    /// A GUID where nothing but a GUID can stand (a roles file, `--role`): `0x` optional, or
    /// `ibv_devinfo`'s four groups ([`crate::hex::lenient_u64`]). [`Guid::from_str`] requires
    /// `0x`, as weft's files write it and where a word may be a GUID or a node's name.
    pub fn lenient(s: &str) -> Result<Guid, GuidError> {
        crate::hex::lenient_u64(s)
            .map(Guid)
            .ok_or_else(|| GuidError(s.to_owned()))
    }
}

/// GUIDs as `0x…` hex strings in JSON (a number loses precision above 2^53):
/// `#[serde(with = "weft_fabric::guid_hex")]`. Written as [`Guid`]'s `Display`, read by
/// [`Guid::from_str`].
pub mod guid_hex {
    use super::Guid;
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;
    use std::fmt;

    /// Writes `0x` and 16 hex digits.
    pub fn serialize<S: Serializer>(g: &Guid, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(g)
    }

    /// Reads a string [`Guid::from_str`](std::str::FromStr::from_str) takes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Guid, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Guid;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a GUID as a hex string such as \"0x0002c90300a1b2c3\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Guid, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// A 16-bit local identifier. Unicast LIDs are `0x0001..=0xBFFF`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Lid(pub u16);

impl fmt::Display for Lid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

/// A physical port number on a node; port 0 is a switch's management port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PortNum(pub u8);

impl fmt::Display for PortNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A service level, `0..=15`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sl(pub u8);

/// A virtual lane, `0..=15` (15 is the management lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Vl(pub u8);

/// Index of a node in [`Fabric::nodes`](crate::Fabric::nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as a `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a link in [`Fabric::links`](crate::Fabric::links).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LinkId(pub u32);

impl LinkId {
    /// The index as a `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder(#[serde(with = "guid_hex")] Guid);

    #[test]
    fn a_guid_is_0x_and_one_to_sixteen_hex_digits() {
        assert_eq!("0x1".parse(), Ok(Guid(1)));
        assert_eq!("0X00A1".parse(), Ok(Guid(0xa1)));
        assert_eq!("0xffffffffffffffff".parse(), Ok(Guid(u64::MAX)));
        // `u64::from_str_radix` takes a sign; a GUID does not.
        for bad in [
            "",
            "0x",
            "1",
            "x1",
            "0x+1",
            "0x 1",
            "0x1 ",
            "0x10000000000000000",
            "0xg",
        ] {
            assert_eq!(
                bad.parse::<Guid>(),
                Err(GuidError(bad.to_owned())),
                "{bad:?}"
            );
        }
        assert_eq!(
            GuidError("0x".to_owned()).to_string(),
            "`0x` is not a hex GUID"
        );
    }

    #[test]
    fn a_lenient_guid_takes_bare_hex_and_four_groups() {
        assert_eq!(Guid::lenient("0x2c903000a1b2c"), Ok(Guid(0x2c903000a1b2c)));
        assert_eq!(Guid::lenient("2c903000a1b2c"), Ok(Guid(0x2c903000a1b2c)));
        assert_eq!(
            Guid::lenient("0002:c903:000a:1b2c"),
            Ok(Guid(0x0002_c903_000a_1b2c))
        );
        assert_eq!(Guid::lenient("FFFFFFFFFFFFFFFF"), Ok(Guid(u64::MAX)));
        for bad in [
            "",
            "0x",
            "+1",
            "0x+1",
            " 1",
            "1 ",
            "0x0x1",
            "10000000000000000",
            "g",
            "1:2:3:4",
            "0002:c903:000a",
            "0002:c903:000a:1b2c:0000",
            "::::",
        ] {
            assert_eq!(
                Guid::lenient(bad),
                Err(GuidError(bad.to_owned())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_serde_adaptor_names_what_it_refuses() {
        let e = serde_json::from_str::<Holder>("\"0xzz\"").unwrap_err();
        assert_eq!(e.to_string(), "`0xzz` is not a hex GUID at line 1 column 6");
        let e = serde_json::from_str::<Holder>("17").unwrap_err();
        assert!(
            e.to_string()
                .contains("expected a GUID as a hex string such as \"0x0002c90300a1b2c3\""),
            "{e}"
        );
    }

    proptest! {
        #[test]
        fn a_guid_reads_back_as_written(g in any::<u64>()) {
            let text = Guid(g).to_string();
            prop_assert_eq!(text.len(), 18);
            prop_assert_eq!(text.parse(), Ok(Guid(g)));
            let json = serde_json::to_string(&Holder(Guid(g))).unwrap();
            prop_assert_eq!(&json, &format!("\"{text}\""));
            prop_assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), Holder(Guid(g)));
        }
    }
}
