//! [`FieldName`]: a struct's field name read from the input without allocating.

use core::fmt;

use ::serde::de::{self, DeserializeSeed, Deserializer, Visitor};

/// A [`DeserializeSeed`] for a map key that names a struct's field: it gives the name from
/// `names` that the key equals (`Some("id")`), or `None` for a key that is none of them, and
/// allocates nothing. It takes the key however the deserializer has it (borrowed from the input,
/// unescaped into a buffer of its own, or as bytes), and also as a field's index, as compact
/// formats write it.
///
/// It is what a hand-written [`DeserializeIn`](super::DeserializeIn) impl of a struct passes to
/// [`next_key_seed`](::serde::de::MapAccess::next_key_seed) (see [Your own
/// types](super#your-own-types)).
///
/// ```
/// use arena_pool::serde::FieldName;
/// use serde::de::DeserializeSeed;
///
/// const FIELDS: &[&str] = &["id", "name"];
/// let mut json = serde_json::Deserializer::from_str(r#""name""#);
/// assert_eq!(FieldName::new(FIELDS).deserialize(&mut json).unwrap(), Some("name"));
/// // An escaped key is unescaped into serde_json's buffer, not the arena's:
/// let mut json = serde_json::Deserializer::from_str(r#""\u0069d""#);
/// assert_eq!(FieldName::new(FIELDS).deserialize(&mut json).unwrap(), Some("id"));
/// let mut json = serde_json::Deserializer::from_str(r#""other""#);
/// assert_eq!(FieldName::new(FIELDS).deserialize(&mut json).unwrap(), None);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct FieldName<'f> {
    names: &'f [&'f str],
}

impl<'f> FieldName<'f> {
    /// A seed that looks keys up in `names` (the fields of the struct, in declaration order: a
    /// key given as an index `i` stands for `names[i]`).
    ///
    /// ```
    /// use arena_pool::serde::FieldName;
    /// use serde::de::DeserializeSeed;
    /// use serde::de::value::{Error, U64Deserializer};
    ///
    /// let seed = FieldName::new(&["id", "name"]);
    /// assert_eq!(seed.deserialize(U64Deserializer::<Error>::new(1)), Ok(Some("name")));
    /// ```
    #[must_use]
    pub const fn new(names: &'f [&'f str]) -> Self {
        FieldName { names }
    }

    fn find(self, key: &[u8]) -> Option<&'f str> {
        self.names
            .iter()
            .copied()
            .find(|name| name.as_bytes() == key)
    }
}

impl<'de, 'f> DeserializeSeed<'de> for FieldName<'f> {
    type Value = Option<&'f str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'f> Visitor<'_> for FieldName<'f> {
    type Value = Option<&'f str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.find(key.as_bytes()))
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Self::Value, E> {
        Ok(self.find(key))
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<Self::Value, E> {
        Ok(usize::try_from(index)
            .ok()
            .and_then(|i| self.names.get(i).copied()))
    }
}
