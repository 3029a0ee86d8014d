//! Reading any JSON that is not an object as the value it is, for the hand-written visitors
//! of the request parse, which treat objects their own way.

/// The `visit_*` methods of a visitor that reads anything but an object as the JSON value it
/// is, made into the visitor's value by `$wrap`; with `but strings`, all but strings' (for a
/// visitor that reads strings its own way).
macro_rules! other_json_is {
    ($wrap:expr) => {
        $crate::protocol::other_json::other_json_is!($wrap, but strings);

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($wrap(serde_json::Value::String(v.to_owned())))
        }

        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok($wrap(serde_json::Value::String(v)))
        }
    };
    ($wrap:expr, but strings) => {
        fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok($wrap(serde_json::Value::Bool(v)))
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok($wrap(serde_json::Value::from(v)))
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok($wrap(serde_json::Value::from(v)))
        }

        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok($wrap(serde_json::Value::from(v)))
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($wrap(serde_json::Value::Null))
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            let value = <serde_json::Value as serde::Deserialize>::deserialize(
                serde::de::value::SeqAccessDeserializer::new(seq),
            )?;
            Ok($wrap(value))
        }
    };
}

pub(crate) use other_json_is;
