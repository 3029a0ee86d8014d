//! JSON as the model reads it from the admin API, and as the API's document describes it:
//! what serde's derives and utoipa's types do not say by themselves.
//!
//! - An object is an object: serde's derived structs also read an array of their fields in
//!   order (`[1.5, 10]` as a `RateLimit`), which a JSON API must refuse. The types the API
//!   reads derive with `#[serde(remote = "Self")]` and get their `Deserialize` from
//!   [`object_only!`], which reads a JSON object only, nested types included.
//! - A whole number is a whole number however it is written: JSON Schema's `integer` is any
//!   number with no fraction, `5.0` as well as `5` ([`whole`], [`whole_opt`]).
//! - The schemas of a listed name and of per-tool rate limits, with their bounds.
//!
//! Used by the model and the admin API's bodies; uses only the model's bounds.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::Deserialize;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::model::bounds;

/// A deserializer that reads a struct from a map only, never from a sequence.
#[derive(Debug)]
pub(crate) struct MapOnly<D>(pub(crate) D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// `Deserialize` (and, with `serialize:`, `Serialize`) for types that derive them with
/// `#[serde(remote = "Self")]`: the derived code, reading a JSON object only.
macro_rules! object_only {
    ($($ty:ty),* $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                // The inherent function the derive made (`remote = "Self"`), not this one.
                <$ty>::deserialize($crate::wire::MapOnly(deserializer))
            }
        }
    )*};
    (serialize: $($ty:ty),* $(,)?) => {$(
        $crate::wire::object_only!($ty);

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                <$ty>::serialize(self, serializer)
            }
        }
    )*};
}
pub(crate) use object_only;

/// A whole number, written with or without a zero fraction.
struct Whole(u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WholeVisitor;

        impl Visitor<'_> for WholeVisitor {
            type Value = Whole;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a whole number")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Whole, E> {
                Ok(Whole(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Whole, E> {
                u64::try_from(v)
                    .map(Whole)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Whole, E> {
                // 2^64 is exact as an f64; every whole f64 below it fits a u64.
                if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    Ok(Whole(v as u64))
                } else {
                    Err(E::invalid_value(Unexpected::Float(v), &self))
                }
            }
        }

        deserializer.deserialize_any(WholeVisitor)
    }
}

fn narrow<T: TryFrom<u64>, E: de::Error>(n: u64) -> Result<T, E> {
    T::try_from(n).map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &"a smaller number"))
}

/// `deserialize_with` for a whole number field: `5` or `5.0`.
pub(crate) fn whole<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    narrow(Whole::deserialize(deserializer)?.0)
}

/// `deserialize_with` for an optional whole number field (`null` is `None`).
pub(crate) fn whole_opt<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    Option::<Whole>::deserialize(deserializer)?
        .map(|w| narrow(w.0))
        .transpose()
}

/// A tool or prompt name, or a resource URI or URI template, in a disabled or allowed list.
#[derive(Debug)]
pub struct ListedName;

impl PartialSchema for ListedName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(bounds::NAME_LEN))
            .into()
    }
}

impl ToSchema for ListedName {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ListedName")
    }
}

/// The schema of `RateLimits.tools`: a rate limit per tool name, at most
/// [`bounds::TOOL_LIMITS`] tools.
pub fn tool_rate_limits() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(Ref::from_schema_name("RateLimit")))
            .max_properties(Some(bounds::TOOL_LIMITS))
            .description(Some(
                "`tools/call` of a tool, by name, all callers together (at most 256 tools).",
            ))
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::model::{Names, RateLimit, RateLimits};

    #[test]
    fn an_array_is_not_an_object() {
        assert!(serde_json::from_value::<RateLimit>(json!([1.5, 10])).is_err());
        assert!(serde_json::from_value::<RateLimits>(json!([])).is_err());
        assert!(serde_json::from_value::<Names>(json!([["echo"]])).is_err());
        let nested = json!({"tenant": [1.5, 10]});
        assert!(serde_json::from_value::<RateLimits>(nested).is_err());
        let in_a_map = json!({"tools": {"echo": [1.5, 10]}});
        assert!(serde_json::from_value::<RateLimits>(in_a_map).is_err());
    }

    #[test]
    fn an_object_still_is() {
        let limit: RateLimit =
            serde_json::from_value(json!({"per_second": 1.5, "burst": 10})).expect("a limit");
        assert_eq!(limit.burst, 10);
        let limits: RateLimits =
            serde_json::from_value(json!({"tools": {"echo": {"per_second": 1, "burst": 1}}}))
                .expect("limits");
        assert_eq!(limits.tools.len(), 1);
        assert_eq!(
            serde_json::to_value(limit).expect("JSON"),
            json!({"per_second": 1.5, "burst": 10})
        );
    }

    /// The number sent is the number checked: just above a bound is above it (serde_json's
    /// `float_roundtrip`; its default parser may round to the neighbouring f64).
    #[test]
    fn a_number_is_read_to_the_last_bit() {
        let above = f64::from_bits(1e6_f64.to_bits() + 1);
        let read: f64 = serde_json::from_str(&format!("{above:?}")).expect("a number");
        assert_eq!(read, above);
        let limit: RateLimit =
            serde_json::from_value(json!({"per_second": above, "burst": 1})).expect("a limit");
        assert!(limit.per_second > 1e6);
    }

    #[test]
    fn a_whole_number_may_be_written_with_a_zero_fraction() {
        let limit: RateLimit =
            serde_json::from_value(json!({"per_second": 1, "burst": 10.0})).expect("a limit");
        assert_eq!(limit.burst, 10);
        for bad in [
            json!(10.5),
            json!(-1),
            json!(4_294_967_296_u64),
            json!("10"),
        ] {
            let body = json!({"per_second": 1, "burst": bad});
            assert!(serde_json::from_value::<RateLimit>(body).is_err(), "{bad}");
        }
    }
}
