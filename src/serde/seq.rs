//! [`DeserializeIn`] for sequences and boxes: allocator-api2's [`Vec<T, A>`] and [`Box<T, A>`]
//! in any allocator, and `&'a [T]` in an arena.

use core::fmt;
use core::marker::PhantomData;

use ::serde::de::{Deserializer, SeqAccess, Visitor};
use allocator_api2::alloc::Allocator;
use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;

use super::{DeserializeIn, DeserializeInSeed, Makes, cautious, refused, reserve_failed};
use crate::BumpAlloc;

/// Reads a sequence into a `Vec` in `alloc`, each element deserialized in a clone of `alloc`.
/// Every reservation is fallible, so that a refused block is the deserializer's error.
struct VecVisitor<T, A>(A, Makes<T>);

impl<'de, T: DeserializeIn<'de, A>, A: Allocator + Clone> Visitor<'de> for VecVisitor<T, A> {
    type Value = Vec<T, A>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Vec<T, A>, S::Error> {
        let mut vec = Vec::new_in(self.0.clone());
        vec.try_reserve_exact(cautious::<T>(seq.size_hint()))
            .map_err(reserve_failed)?;
        while let Some(value) = seq.next_element_seed(DeserializeInSeed::new(self.0.clone()))? {
            vec.try_reserve(1).map_err(reserve_failed)?;
            // Cannot allocate: one free slot was reserved just above.
            vec.push(value);
        }
        Ok(vec)
    }
}

impl<'de, T: DeserializeIn<'de, A>, A: Allocator + Clone> DeserializeIn<'de, A> for Vec<T, A> {
    /// The elements in a buffer in `alloc`, each deserialized in `alloc` too.
    fn deserialize_in<D: Deserializer<'de>>(deserializer: D, alloc: A) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(VecVisitor(alloc, PhantomData))
    }
}

impl<'de, 'a, T, X> DeserializeIn<'de, &'a X> for &'a [T]
where
    T: DeserializeIn<'de, &'a X>,
    X: BumpAlloc + ?Sized,
    &'a X: Allocator,
    X::Blocks<'a>: 'a,
{
    /// The elements in the arena, read as a `Vec` and turned into a slice with
    /// [`into_slice`](BumpAlloc::into_slice) (the unused capacity goes back when the buffer is
    /// the arena's last block). The elements are **never dropped**.
    fn deserialize_in<D: Deserializer<'de>>(
        deserializer: D,
        arena: &'a X,
    ) -> Result<Self, D::Error> {
        let vec: Vec<T, &'a X> = deserializer.deserialize_seq(VecVisitor(arena, PhantomData))?;
        Ok(X::into_slice(vec))
    }
}

impl<'de, T: DeserializeIn<'de, A>, A: Allocator + Clone> DeserializeIn<'de, A> for Box<T, A> {
    /// The value deserialized in `alloc`, then boxed in `alloc`.
    fn deserialize_in<D: Deserializer<'de>>(deserializer: D, alloc: A) -> Result<Self, D::Error> {
        let value = T::deserialize_in(deserializer, alloc.clone())?;
        Box::try_new_in(value, alloc).map_err(|_| refused(core::mem::size_of::<T>()))
    }
}
