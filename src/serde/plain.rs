//! [`DeserializeIn`] for the values that hold no allocator memory: the primitives, [`Plain<T>`],
//! and (holding what their elements hold) `Option` and tuples.

use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use ::serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

use super::{DeserializeIn, DeserializeInSeed, Makes};

/// A `T` deserialized with its own [`Deserialize`] impl, not in the allocator: the way to put a
/// type that only has `Deserialize` (an enum of yours, a `std` type) in a container deserialized
/// with [`DeserializeIn`], such as a `Vec<Plain<Kind>, &Arena>`. Whatever memory `T` takes comes
/// from wherever its `Deserialize` takes it. It serializes as its `T`, and dereferences to it.
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::allocator_api2::vec::Vec;
/// use arena_pool::serde::{DeserializeIn, Plain};
///
/// let arena = Arena::new();
/// let mut json = serde_json::Deserializer::from_str(r#"[{"a": 1}, null]"#);
/// let v = Vec::<Plain<serde_json::Value>, _>::deserialize_in(&mut json, &arena).unwrap();
/// assert_eq!(v[0]["a"], 1);
/// assert!(v[1].is_null());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Plain<T>(pub T);

impl<T> Plain<T> {
    /// The `T` inside.
    ///
    /// ```
    /// use arena_pool::serde::Plain;
    ///
    /// assert_eq!(Plain(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Plain<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Plain<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<'de, T: Deserialize<'de>, A> DeserializeIn<'de, A> for Plain<T> {
    fn deserialize_in<D: Deserializer<'de>>(deserializer: D, _alloc: A) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Plain)
    }
}

/// The values that hold no memory: their own `Deserialize`, the allocator unused.
macro_rules! primitives {
    ($($ty:ty),* $(,)?) => {$(
        impl<'de, A> DeserializeIn<'de, A> for $ty {
            #[inline]
            fn deserialize_in<D: Deserializer<'de>>(deserializer: D, _alloc: A) -> Result<Self, D::Error> {
                <$ty>::deserialize(deserializer)
            }
        }
    )*};
}

primitives!(
    bool,
    char,
    (),
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
);

impl<'de, T: DeserializeIn<'de, A>, A> DeserializeIn<'de, A> for Option<T> {
    fn deserialize_in<D: Deserializer<'de>>(deserializer: D, alloc: A) -> Result<Self, D::Error> {
        struct OptionVisitor<T, A>(A, Makes<T>);

        impl<'de, T: DeserializeIn<'de, A>, A> Visitor<'de> for OptionVisitor<T, A> {
            type Value = Option<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an optional value")
            }

            fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
                Ok(None)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
                Ok(None)
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
                T::deserialize_in(d, self.0).map(Some)
            }
        }

        deserializer.deserialize_option(OptionVisitor(alloc, PhantomData))
    }
}

/// Tuples: a sequence of exactly their length, each element in a clone of the allocator.
macro_rules! tuples {
    ($($len:literal => ($($name:ident)+))+) => {$(
        impl<'de, A: Clone, $($name: DeserializeIn<'de, A>),+> DeserializeIn<'de, A> for ($($name,)+) {
            fn deserialize_in<D: Deserializer<'de>>(deserializer: D, alloc: A) -> Result<Self, D::Error> {
                struct TupleVisitor<A, $($name),+>(A, Makes<($($name,)+)>);

                impl<'de, A: Clone, $($name: DeserializeIn<'de, A>),+> Visitor<'de>
                    for TupleVisitor<A, $($name),+>
                {
                    type Value = ($($name,)+);

                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a tuple of {} elements", $len)
                    }

                    #[allow(non_snake_case)]
                    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                        let mut read = 0;
                        $(
                            let $name = match seq.next_element_seed(DeserializeInSeed::<$name, A>::new(self.0.clone()))? {
                                Some(value) => value,
                                None => return Err(de::Error::invalid_length(read, &self)),
                            };
                            read += 1;
                        )+
                        let _ = read;
                        Ok(($($name,)+))
                    }
                }

                deserializer.deserialize_tuple($len, TupleVisitor(alloc, PhantomData))
            }
        }
    )+};
}

tuples! {
    1 => (T0)
    2 => (T0 T1)
    3 => (T0 T1 T2)
    4 => (T0 T1 T2 T3)
    5 => (T0 T1 T2 T3 T4)
    6 => (T0 T1 T2 T3 T4 T5)
}
