//! [`CollectIn`]: `iter.collect_in(alloc)`, the counterpart of `collect` for collections that
//! take an allocator, through [`FromIteratorIn`], and `iter.try_collect_in(alloc)`, which
//! returns the allocator's refusal, through [`TryFromIteratorIn`].

use allocator_api2::alloc::Allocator;
use allocator_api2::boxed::Box;
use allocator_api2::collections::TryReserveError;
use allocator_api2::vec::Vec;

use super::String;

/// A collection that can be built from an iterator in a given allocator: what `FromIterator` is
/// to `collect`, this is to [`collect_in`](CollectIn::collect_in).
///
/// Implemented for allocator-api2's [`Vec<T, A>`](Vec) and [`Box<[T], A>`](Box), and for
/// [`String<A>`](String) from `char`, `&char`, `&str` and `String<B>` items. Implement it for a
/// collection of your own to make `collect_in` build it.
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::allocator_api2::vec::Vec;
/// use arena_pool::collections::FromIteratorIn;
///
/// let arena = Arena::new();
/// let v = Vec::from_iter_in([3, 1, 2], &arena);
/// assert_eq!(v, [3, 1, 2]);
/// ```
pub trait FromIteratorIn<T>: Sized {
    /// The allocator the collection is built in.
    type Alloc: Allocator;

    /// Builds the collection from the items of `iter`, in `alloc`.
    fn from_iter_in<I: IntoIterator<Item = T>>(iter: I, alloc: Self::Alloc) -> Self;
}

/// A collection that can be built from an iterator in a given allocator, returning `Err` when the
/// allocator refuses a block (an arena's allocation limit, out of memory) or the capacity
/// overflows: what [`try_collect_in`](CollectIn::try_collect_in) builds. Implemented for the same
/// collections as [`FromIteratorIn`].
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::allocator_api2::vec::Vec;
/// use arena_pool::collections::TryFromIteratorIn;
///
/// let arena = Arena::new();
/// arena.set_allocation_limit(Some(0));
/// // The limit refuses the first chunk: an error, not a panic.
/// assert!(Vec::<u64, _>::try_from_iter_in(0..100u64, &arena).is_err());
/// arena.set_allocation_limit(None);
/// let v = Vec::<u64, _>::try_from_iter_in(0..100u64, &arena).unwrap();
/// assert_eq!(v.len(), 100);
/// ```
pub trait TryFromIteratorIn<T>: Sized {
    /// The allocator the collection is built in.
    type Alloc: Allocator;

    /// Builds the collection from the items of `iter`, in `alloc`; on `Err`, the items taken so
    /// far are dropped and the collection's block is given back.
    fn try_from_iter_in<I: IntoIterator<Item = T>>(
        iter: I,
        alloc: Self::Alloc,
    ) -> Result<Self, TryReserveError>;
}

/// `iter.collect_in(alloc)`: collects an iterator into a collection that lives in `alloc`, as
/// `collect` does for the global allocator. Implemented for every iterator; bring it into scope
/// with `use arena_pool::prelude::*` (or `use arena_pool::collections::CollectIn`).
///
/// The target is chosen as for `collect`, by the type annotation or a turbofish:
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::allocator_api2::vec::Vec;
/// use arena_pool::collections::String;
/// use arena_pool::prelude::*;
///
/// let arena = Arena::new();
/// let v: Vec<u32, _> = (0..10).collect_in(&arena);
/// assert_eq!(v.len(), 10);
/// let evens = (0..10u8).filter(|n| n % 2 == 0).collect_in::<Vec<_, _>>(&arena);
/// assert_eq!(evens, [0, 2, 4, 6, 8]);
/// let s: String<_> = "abc".chars().rev().collect_in(&arena);
/// assert_eq!(s, "cba");
/// let csv: String<_> = ["a", "b", "c"].iter().flat_map(|w| [*w, ","]).collect_in(&arena);
/// assert_eq!(csv, "a,b,c,");
/// ```
///
/// The collection reserves room for the iterator's lower [`size_hint`](Iterator::size_hint)
/// bound first (a hint only: a wrong one costs speed or space, never correctness), so an
/// exact-size iterator collected into a `Vec` in an arena takes one block of exactly its size.
/// If the iterator panics, the items collected so far are dropped and the block is given back.
pub trait CollectIn: Iterator + Sized {
    /// Collects the items into a `C` that lives in `alloc`.
    fn collect_in<C: FromIteratorIn<Self::Item>>(self, alloc: C::Alloc) -> C {
        C::from_iter_in(self, alloc)
    }

    /// Like [`collect_in`](CollectIn::collect_in), returning `Err` when the allocator refuses a
    /// block or the capacity overflows, where `collect_in` panics or aborts.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::vec::Vec;
    /// use arena_pool::prelude::*;
    ///
    /// let arena = Arena::new();
    /// arena.set_allocation_limit(Some(4096));
    /// let small: Vec<u64, _> = (0..100).try_collect_in(&arena).unwrap();
    /// assert_eq!(small.len(), 100);
    /// assert!((0..10_000u64).try_collect_in::<Vec<_, _>>(&arena).is_err());
    /// ```
    fn try_collect_in<C: TryFromIteratorIn<Self::Item>>(
        self,
        alloc: C::Alloc,
    ) -> Result<C, TryReserveError> {
        C::try_from_iter_in(self, alloc)
    }
}

impl<I: Iterator> CollectIn for I {}

impl<T, A: Allocator> FromIteratorIn<T> for Vec<T, A> {
    type Alloc = A;

    #[track_caller]
    fn from_iter_in<I: IntoIterator<Item = T>>(iter: I, alloc: A) -> Vec<T, A> {
        let iter = iter.into_iter();
        let mut v = Vec::new_in(alloc);
        // A hint: a bound the allocator refuses reserves nothing, and `push` grows as needed
        // (`extend` would reserve for the hint again, and panic on a lower bound that
        // overflows).
        let _ = v.try_reserve_exact(iter.size_hint().0);
        iter.for_each(|item| v.push(item));
        v
    }
}

impl<T, A: Allocator> TryFromIteratorIn<T> for Vec<T, A> {
    type Alloc = A;

    fn try_from_iter_in<I: IntoIterator<Item = T>>(
        iter: I,
        alloc: A,
    ) -> Result<Vec<T, A>, TryReserveError> {
        let iter = iter.into_iter();
        let mut v = Vec::new_in(alloc);
        // The hint, as for `from_iter_in`: a bound refused here is not an error yet.
        let _ = v.try_reserve_exact(iter.size_hint().0);
        for item in iter {
            v.try_reserve(1)?;
            v.push(item);
        }
        Ok(v)
    }
}

impl<T, A: Allocator> TryFromIteratorIn<T> for Box<[T], A> {
    type Alloc = A;

    fn try_from_iter_in<I: IntoIterator<Item = T>>(
        iter: I,
        alloc: A,
    ) -> Result<Box<[T], A>, TryReserveError> {
        let v = Vec::try_from_iter_in(iter, alloc)?;
        Ok(v.into_boxed_slice())
    }
}

impl<T, A: Allocator> FromIteratorIn<T> for Box<[T], A> {
    type Alloc = A;

    #[track_caller]
    fn from_iter_in<I: IntoIterator<Item = T>>(iter: I, alloc: A) -> Box<[T], A> {
        Vec::from_iter_in(iter, alloc).into_boxed_slice()
    }
}

/// Implements `FromIteratorIn<$item>` for `String<A>` through its `Extend<$item>`.
macro_rules! string_from_iter {
    ([$($generics:tt)*] $item:ty) => {
        impl<$($generics)*> FromIteratorIn<$item> for String<A> {
            type Alloc = A;

            #[track_caller]
            fn from_iter_in<I: IntoIterator<Item = $item>>(iter: I, alloc: A) -> String<A> {
                let mut s = String::new_in(alloc);
                s.extend(iter);
                s
            }
        }
    };
}

/// Implements `TryFromIteratorIn<$item>` for `String<A>`, each item through `$push`.
macro_rules! string_try_from_iter {
    ([$($generics:tt)*] $item:ty, |$s:ident, $x:ident| $push:expr) => {
        impl<$($generics)*> TryFromIteratorIn<$item> for String<A> {
            type Alloc = A;

            fn try_from_iter_in<I: IntoIterator<Item = $item>>(
                iter: I,
                alloc: A,
            ) -> Result<String<A>, TryReserveError> {
                let mut $s = String::new_in(alloc);
                for $x in iter {
                    $push?;
                }
                Ok($s)
            }
        }
    };
}

string_try_from_iter!([A: Allocator] char, |s, c| s.try_push(c));
string_try_from_iter!(['c, A: Allocator] &'c char, |s, c| s.try_push(*c));
string_try_from_iter!(['s, A: Allocator] &'s str, |s, t| s.try_push_str(t));
string_try_from_iter!([A: Allocator, B: Allocator] String<B>, |s, t| s.try_push_str(&t));
string_from_iter!([A: Allocator] char);
string_from_iter!(['c, A: Allocator] &'c char);
string_from_iter!(['s, A: Allocator] &'s str);
string_from_iter!([A: Allocator, B: Allocator] String<B>);
