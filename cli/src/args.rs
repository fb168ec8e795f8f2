//! Arguments several commands take, parsed from the libraries' own lists of names (so a
//! property or scope the verifier adds is accepted without a second list here).

use clap::builder::{PossibleValuesParser, TypedValueParser};
use weft_verifier::{Property, Scope};

/// `--property NAME`: one of [`Property::ALL`], by [`Property::name`].
pub fn property() -> impl TypedValueParser<Value = Property> {
    PossibleValuesParser::new(Property::ALL.map(Property::name))
        .try_map(|name| Property::parse(&name).ok_or_else(|| format!("no property `{name}`")))
}

/// `--scope NAME`: one of [`Scope::ALL`], by [`Scope::as_str`].
pub fn scope() -> impl TypedValueParser<Value = Scope> {
    PossibleValuesParser::new(Scope::ALL.map(Scope::as_str)).try_map(|name| {
        Scope::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| format!("no scope `{name}`"))
    })
}
