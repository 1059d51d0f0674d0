//! Lenient, borrowing JSON readers for the transcript parser: a value of
//! the shape a reader wants is taken (strings borrowed from the line when
//! they hold no escape), anything else is skipped with [`IgnoredAny`] and
//! reads as empty, the way `serde_json::Value`'s `get` / `as_str` chains
//! read it. No reader fails on a well-formed line of the wrong shape; a
//! duplicated key keeps its last value, as `Value` does.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer, de::value::SeqAccessDeserializer};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A value read from JSON of any shape: each method takes one shape and
/// the ones a type does not override give its empty value.
pub(crate) trait Lenient<'de>: Default {
    fn string(_s: Cow<'de, str>) -> Self {
        Self::default()
    }
    fn boolean(_b: bool) -> Self {
        Self::default()
    }
    fn int(_n: i64) -> Self {
        Self::default()
    }
    fn uint(n: u64) -> Self {
        i64::try_from(n).map_or_else(|_| Self::default(), Self::int)
    }
    fn float(_f: f64) -> Self {
        Self::default()
    }
    fn null() -> Self {
        Self::default()
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

/// An object's fields: each key read is handed to [`Record::field`], which
/// reads its value (or skips it).
pub(crate) trait Record<'de>: Default {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// Reads the fields of an object into a [`Record`].
pub(crate) fn record<'de, R: Record<'de>, A: MapAccess<'de>>(mut map: A) -> Result<R, A::Error> {
    let mut r = R::default();
    while let Some(key) = map.next_key::<Scalar<'de>>()? {
        match key.as_str() {
            Some(k) => r.field(k, &mut map)?,
            None => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(r)
}

/// Skips the value of the current key.
pub(crate) fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(|_| ())
}

pub(crate) struct LenientVisitor<T>(PhantomData<T>);

impl<T> LenientVisitor<T> {
    pub(crate) fn new() -> Self {
        LenientVisitor(PhantomData)
    }
}

impl<'de, T: Lenient<'de>> Visitor<'de> for LenientVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Ok(T::boolean(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Ok(T::int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Ok(T::uint(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Ok(T::float(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<T, E> {
        Ok(T::string(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
}

/// `impl Deserialize` through [`LenientVisitor`] for a [`Lenient`] type.
macro_rules! lenient_deserialize {
    ($($t:ident),* $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $t<'de> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any($crate::json::LenientVisitor::new())
            }
        }
    )*};
}
pub(crate) use lenient_deserialize;

/// A string, a boolean or an integer (as `Value::as_str`, `as_bool`,
/// `as_i64` read them); anything else is empty.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) enum Scalar<'a> {
    /// Missing, or of another shape.
    #[default]
    None,
    Str(Cow<'a, str>),
    Bool(bool),
    Int(i64),
}

impl<'a> Scalar<'a> {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }
    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self {
            Scalar::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Scalar::Int(n) => Some(*n),
            _ => None,
        }
    }
}

impl<'de> Lenient<'de> for Scalar<'de> {
    fn string(s: Cow<'de, str>) -> Self {
        Scalar::Str(s)
    }
    fn boolean(b: bool) -> Self {
        Scalar::Bool(b)
    }
    fn int(n: i64) -> Self {
        Scalar::Int(n)
    }
}

/// An array of `T` (each element read leniently); anything else is empty.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct List<T>(pub Option<Vec<T>>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(None)
    }
}

impl<'de, T: Deserialize<'de>> Lenient<'de> for List<T> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(x) = seq.next_element::<T>()? {
            v.push(x);
        }
        Ok(List(Some(v)))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LenientVisitor::new())
    }
}

/// A string, or any other JSON value kept whole (for a field whose text is
/// the value's JSON when it is not a string).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) enum StrOrValue<'a> {
    #[default]
    Missing,
    Str(Cow<'a, str>),
    Value(serde_json::Value),
}

impl<'de> Lenient<'de> for StrOrValue<'de> {
    fn string(s: Cow<'de, str>) -> Self {
        StrOrValue::Str(s)
    }
    fn boolean(b: bool) -> Self {
        StrOrValue::Value(serde_json::Value::Bool(b))
    }
    fn int(n: i64) -> Self {
        StrOrValue::Value(n.into())
    }
    fn uint(n: u64) -> Self {
        StrOrValue::Value(n.into())
    }
    fn float(f: f64) -> Self {
        // As `Value` reads a float (a non-finite one is null).
        StrOrValue::Value(
            serde_json::Number::from_f64(f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
        )
    }
    fn null() -> Self {
        StrOrValue::Value(serde_json::Value::Null)
    }
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        serde_json::Value::deserialize(MapAccessDeserializer::new(map)).map(StrOrValue::Value)
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        serde_json::Value::deserialize(SeqAccessDeserializer::new(seq)).map(StrOrValue::Value)
    }
}

lenient_deserialize!(Scalar, StrOrValue);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Pair<'a> {
        a: Scalar<'a>,
        b: List<Scalar<'a>>,
    }

    impl<'de> Record<'de> for Pair<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
            match key {
                "a" => self.a = map.next_value()?,
                "b" => self.b = map.next_value()?,
                _ => skip(map)?,
            }
            Ok(())
        }
    }

    impl<'de> Lenient<'de> for Pair<'de> {
        fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
            record(map)
        }
    }

    lenient_deserialize!(Pair);

    fn pair(s: &str) -> Result<Pair<'_>, serde_json::Error> {
        serde_json::from_str(s)
    }

    #[test]
    fn takes_its_shapes_and_skips_the_rest() {
        let p =
            pair(r#"{"x": {"deep": [1, {"y": null}]}, "a": "hi", "b": ["s", 3, true, {}, []]}"#)
                .unwrap_or_default();
        assert_eq!(p.a.as_str(), Some("hi"));
        assert!(
            matches!(p.a, Scalar::Str(Cow::Borrowed(_))),
            "unescaped strings are borrowed"
        );
        assert_eq!(
            p.b.0,
            Some(vec![
                Scalar::Str("s".into()),
                Scalar::Int(3),
                Scalar::Bool(true),
                Scalar::None,
                Scalar::None
            ])
        );
        // Wrong shapes read as empty, never as an error.
        for s in [
            r#"{"a": [1], "b": {"k": 1}}"#,
            "[1, 2]",
            "7",
            "null",
            r#""s""#,
        ] {
            let p = pair(s);
            assert!(p.is_ok(), "{s}: {p:?}");
            let p = p.unwrap_or_default();
            assert_eq!(p.a, Scalar::None, "{s}");
            assert_eq!(p.b.0, None, "{s}");
        }
    }

    #[test]
    fn escaped_strings_are_unescaped_and_the_last_duplicate_wins() {
        let p = pair(r#"{"a": "first", "\u0061": "line\nnext \"q\""}"#).unwrap_or_default();
        assert_eq!(p.a.as_str(), Some("line\nnext \"q\""));
        assert_eq!(Scalar::Int(1).as_i64(), Some(1));
        let big = pair(r#"{"a": 18446744073709551615}"#).unwrap_or_default();
        assert_eq!(big.a, Scalar::None, "a u64 over i64::MAX is not an i64");
        let f = pair(r#"{"a": 2.0}"#).unwrap_or_default();
        assert_eq!(f.a.as_i64(), None, "a float is not an i64");
    }

    #[test]
    fn malformed_json_is_still_an_error() {
        for s in ["{\"a\":", "{} x", "not json", ""] {
            assert!(pair(s).is_err(), "{s}");
        }
    }

    #[test]
    fn other_values_keep_their_json() {
        let v: Result<List<StrOrValue<'_>>, _> =
            serde_json::from_str(r#"["s", {"k": [1, 2.5]}, null, 7]"#);
        let v = v.map(|l| l.0).unwrap_or_default().unwrap_or_default();
        assert_eq!(v[0], StrOrValue::Str("s".into()));
        assert_eq!(v[1], StrOrValue::Value(serde_json::json!({"k": [1, 2.5]})));
        assert_eq!(v[2], StrOrValue::Value(serde_json::Value::Null));
        assert_eq!(v[3], StrOrValue::Value(serde_json::json!(7)));
    }
}
