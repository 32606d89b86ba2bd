//! [`DeserializeIn`] for text: [`String<A>`](crate::collections::String) in any allocator, and
//! `&'a str` in an arena (its typed API places the copy).

use core::fmt;

use ::serde::de::{self, Deserializer, Visitor};
use allocator_api2::alloc::Allocator;

use super::{DeserializeIn, reserve_failed};
use crate::BumpAlloc;
use crate::collections::String;

impl<'de, A: Allocator> DeserializeIn<'de, A> for String<A> {
    /// A copy of the input's string in `alloc`, with no spare capacity. Bytes are taken too when
    /// they are valid UTF-8 (as serde does for std's `String`).
    fn deserialize_in<D: Deserializer<'de>>(deserializer: D, alloc: A) -> Result<Self, D::Error> {
        struct StringVisitor<A>(A);

        impl<A: Allocator> Visitor<'_> for StringVisitor<A> {
            type Value = String<A>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<String<A>, E> {
                String::try_from_str_in(v, self.0).map_err(reserve_failed)
            }

            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<String<A>, E> {
                match core::str::from_utf8(v) {
                    Ok(text) => self.visit_str(text),
                    Err(_) => Err(de::Error::invalid_value(de::Unexpected::Bytes(v), &self)),
                }
            }
        }

        deserializer.deserialize_str(StringVisitor(alloc))
    }
}

impl<'de, 'a, X> DeserializeIn<'de, &'a X> for &'a str
where
    X: BumpAlloc + ?Sized,
    &'a X: Allocator,
    X::Blocks<'a>: 'a,
{
    /// A copy of the input's string in the arena (as [`alloc_str`](BumpAlloc::alloc_str) makes),
    /// which lives as long as the borrow of the arena. Bytes are taken too when they are valid UTF-8.
    fn deserialize_in<D: Deserializer<'de>>(
        deserializer: D,
        arena: &'a X,
    ) -> Result<Self, D::Error> {
        struct StrVisitor<'a, X: ?Sized>(&'a X);

        impl<'a, X> Visitor<'_> for StrVisitor<'a, X>
        where
            X: BumpAlloc + ?Sized,
            &'a X: Allocator,
            X::Blocks<'a>: 'a,
        {
            type Value = &'a str;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<&'a str, E> {
                // Through a `String`, as `alloc_str` would copy: a call of `alloc_str` cannot name
                // the lifetime `'a` that the result needs (it has an anonymous one of its own).
                let text = String::try_from_str_in(v, self.0).map_err(reserve_failed)?;
                Ok(X::into_str::<'a, 'a>(text))
            }

            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<&'a str, E> {
                match core::str::from_utf8(v) {
                    Ok(text) => self.visit_str(text),
                    Err(_) => Err(de::Error::invalid_value(de::Unexpected::Bytes(v), &self)),
                }
            }
        }

        deserializer.deserialize_str(StrVisitor(arena))
    }
}
