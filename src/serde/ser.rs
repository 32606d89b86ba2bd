//! [`Serialize`] for the crate's own types: [`String`] as a string, [`Plain`] as its value.

use ::serde::{Serialize, Serializer};
use allocator_api2::alloc::Allocator;

use super::Plain;
use crate::collections::String;

/// ```
/// use arena_pool::Arena;
/// use arena_pool::collections::String;
///
/// let arena = Arena::new();
/// let s = String::from_str_in("say \"hi\"", &arena);
/// assert_eq!(serde_json::to_string(&s).unwrap(), r#""say \"hi\"""#);
/// ```
impl<A: Allocator> Serialize for String<A> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// ```
/// use arena_pool::serde::Plain;
///
/// assert_eq!(serde_json::to_string(&Plain([1, 2])).unwrap(), "[1,2]");
/// ```
impl<T: Serialize> Serialize for Plain<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}
