//! [`BumpAlloc`]'s methods as inherent methods of every arena type, one forwarder each.

use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};
use allocator_api2::vec::Vec;

use super::BumpAlloc;
use crate::AllocOrInitError;

/// The typed API as inherent methods of each arena type, so that `arena.alloc(1)` needs no
/// `use arena_pool::BumpAlloc;`: one forwarder per method of [`BumpAlloc`], which only calls the
/// trait's method (the one implementation), with the type's lifetimes in its signature. An
/// inherent method takes precedence over a trait method of the same name, so a call on a concrete
/// type picks the forwarder whether the trait is in scope or not; generic code bounded by
/// `BumpAlloc` calls the trait's.
///
/// `impl[generics] Type, 'r` expands the forwarders for `Type`, whose references live for `'r`:
/// `'_` (the borrow of `self`) or the view's lifetime. A trailing `into_slice` adds
/// [`BumpAlloc::into_slice`] and [`BumpAlloc::into_str`] (for the types whose `&Self` is an
/// `Allocator`).
///
/// A method added to the trait gets its forwarder here: one entry, a one-line description (the
/// documentation lives on the trait) and the signature with `$r` for the references' lifetime.
macro_rules! inherent_forwarders {
    (impl[$($generics:tt)*] $ty:ty, $r:lifetime $(, $into_slice:ident)?) => {
        #[allow(clippy::mut_from_ref)]
        impl<$($generics)*> $ty {
            inherent_forwarders! { @methods
                "places `value` in the arena; never dropped."
                #[track_caller] fn alloc[T](&self, value: T) -> &$r mut T;
                "`alloc`, returning `Err` instead of panicking."
                fn try_alloc[T](&self, value: T) -> Result<&$r mut T, AllocError>;
                "places `f()` in the arena, built in place where the compiler can; never dropped."
                #[track_caller] fn alloc_with[T, F: FnOnce() -> T](&self, f: F) -> &$r mut T;
                "`alloc_with`, returning `Err` instead of panicking."
                fn try_alloc_with[T, F: FnOnce() -> T](&self, f: F)
                    -> Result<&$r mut T, AllocError>;
                "places the `Ok` value of `f()`, or gives the room back; never dropped."
                #[track_caller] fn alloc_try_with[T, E, F: FnOnce() -> Result<T, E>](&self, f: F)
                    -> Result<&$r mut T, E>;
                "`alloc_try_with`, returning `AllocOrInitError::Alloc` instead of panicking."
                fn try_alloc_try_with[T, E, F: FnOnce() -> Result<T, E>](&self, f: F)
                    -> Result<&$r mut T, AllocOrInitError<E>>;
                "an uninitialised block of `layout`."
                #[track_caller] fn alloc_layout[](&self, layout: Layout) -> NonNull<u8>;
                "`alloc_layout`, returning `Err` instead of panicking."
                fn try_alloc_layout[](&self, layout: Layout) -> Result<NonNull<u8>, AllocError>;
                "copies `items` into the arena."
                #[track_caller] fn alloc_slice_copy[T: Copy](&self, items: &[T]) -> &$r mut [T];
                "`alloc_slice_copy`, returning `Err` instead of panicking."
                fn try_alloc_slice_copy[T: Copy](&self, items: &[T])
                    -> Result<&$r mut [T], AllocError>;
                "clones `items` into the arena; never dropped."
                #[track_caller] fn alloc_slice_clone[T: Clone](&self, items: &[T]) -> &$r mut [T];
                "`alloc_slice_clone`, returning `Err` instead of panicking."
                fn try_alloc_slice_clone[T: Clone](&self, items: &[T])
                    -> Result<&$r mut [T], AllocError>;
                "a slice of `len` values, `f(i)` at index `i`; never dropped."
                #[track_caller] fn alloc_slice_fill_with[T, F: FnMut(usize) -> T](
                    &self, len: usize, f: F) -> &$r mut [T];
                "`alloc_slice_fill_with`, returning `Err` instead of panicking."
                fn try_alloc_slice_fill_with[T, F: FnMut(usize) -> T](&self, len: usize, f: F)
                    -> Result<&$r mut [T], AllocError>;
                "a slice of `len` values from `f(i)`, up to its first `Err`; never dropped."
                #[track_caller] fn alloc_slice_try_fill_with[T, E, F: FnMut(usize) -> Result<T, E>](
                    &self, len: usize, f: F) -> Result<&$r mut [T], E>;
                "`alloc_slice_try_fill_with`, returning `AllocOrInitError::Alloc` instead of panicking."
                fn try_alloc_slice_try_fill_with[T, E, F: FnMut(usize) -> Result<T, E>](
                    &self, len: usize, f: F) -> Result<&$r mut [T], AllocOrInitError<E>>;
                "a slice of `len` copies of `value`."
                #[track_caller] fn alloc_slice_fill_copy[T: Copy](&self, len: usize, value: T)
                    -> &$r mut [T];
                "`alloc_slice_fill_copy`, returning `Err` instead of panicking."
                fn try_alloc_slice_fill_copy[T: Copy](&self, len: usize, value: T)
                    -> Result<&$r mut [T], AllocError>;
                "a slice of `len` clones of `value`; never dropped."
                #[track_caller] fn alloc_slice_fill_clone[T: Clone](&self, len: usize, value: &T)
                    -> &$r mut [T];
                "`alloc_slice_fill_clone`, returning `Err` instead of panicking."
                fn try_alloc_slice_fill_clone[T: Clone](&self, len: usize, value: &T)
                    -> Result<&$r mut [T], AllocError>;
                "a slice of `len` default values; never dropped."
                #[track_caller] fn alloc_slice_fill_default[T: Default](&self, len: usize)
                    -> &$r mut [T];
                "`alloc_slice_fill_default`, returning `Err` instead of panicking."
                fn try_alloc_slice_fill_default[T: Default](&self, len: usize)
                    -> Result<&$r mut [T], AllocError>;
                "a slice of every item of `iter`; never dropped."
                #[track_caller] fn alloc_slice_fill_iter[T, I: IntoIterator<Item = T>](&self, iter: I)
                    -> &$r mut [T];
                "`alloc_slice_fill_iter`, returning `Err` instead of panicking."
                fn try_alloc_slice_fill_iter[T, I: IntoIterator<Item = T>](&self, iter: I)
                    -> Result<&$r mut [T], AllocError>;
                "a slice of the `Ok` items of `iter`, up to its first `Err`; never dropped."
                #[track_caller] fn alloc_slice_try_fill_iter[T, E, I: IntoIterator<Item = Result<T, E>>](
                    &self, iter: I) -> Result<&$r mut [T], E>;
                "`alloc_slice_try_fill_iter`, returning `AllocOrInitError::Alloc` instead of panicking."
                fn try_alloc_slice_try_fill_iter[T, E, I: IntoIterator<Item = Result<T, E>>](
                    &self, iter: I) -> Result<&$r mut [T], AllocOrInitError<E>>;
                "an array of `N` default values; never dropped."
                #[track_caller] fn alloc_sized_slice_fill_default[T: Default, const N: usize](&self)
                    -> &$r mut [T; N];
                "`alloc_sized_slice_fill_default`, returning `Err` instead of panicking."
                fn try_alloc_sized_slice_fill_default[T: Default, const N: usize](&self)
                    -> Result<&$r mut [T; N], AllocError>;
                "an array of `N` values, `f(i)` at index `i`; never dropped."
                #[track_caller] fn alloc_sized_slice_fill_with[T, const N: usize, F: FnMut(usize) -> T](
                    &self, f: F) -> &$r mut [T; N];
                "`alloc_sized_slice_fill_with`, returning `Err` instead of panicking."
                fn try_alloc_sized_slice_fill_with[T, const N: usize, F: FnMut(usize) -> T](
                    &self, f: F) -> Result<&$r mut [T; N], AllocError>;
                "a copy of the array `items`."
                #[track_caller] fn alloc_sized_slice_copy[T: Copy, const N: usize](&self, items: &[T; N])
                    -> &$r mut [T; N];
                "`alloc_sized_slice_copy`, returning `Err` instead of panicking."
                fn try_alloc_sized_slice_copy[T: Copy, const N: usize](&self, items: &[T; N])
                    -> Result<&$r mut [T; N], AllocError>;
                "a copy of the string `s`."
                #[track_caller] fn alloc_str[](&self, s: &str) -> &$r mut str;
                "`alloc_str`, returning `Err` instead of panicking."
                fn try_alloc_str[](&self, s: &str) -> Result<&$r mut str, AllocError>;
                "formats `args` straight into the arena."
                #[track_caller] fn alloc_fmt[](&self, args: fmt::Arguments<'_>) -> &$r mut str;
                "`alloc_fmt`, returning `Err` instead of panicking."
                fn try_alloc_fmt[](&self, args: fmt::Arguments<'_>)
                    -> Result<&$r mut str, AllocError>;
            }
            $(
                #[doc = concat!(
                    "[`BumpAlloc::", stringify!($into_slice), "`]: a `Vec` built in the arena as ",
                    "a slice as long-lived as the arena's blocks; never dropped."
                )]
                #[inline(always)]
                pub fn $into_slice<T>(vec: Vec<T, &Self>) -> &$r mut [T] {
                    <Self as BumpAlloc>::$into_slice(vec)
                }

                /// [`BumpAlloc::into_str`]: a `String` built in the arena as a `str` as
                /// long-lived as the arena's blocks.
                #[inline(always)]
                pub fn into_str(s: crate::collections::String<&Self>) -> &$r mut str {
                    <Self as BumpAlloc>::into_str(s)
                }
            )?
        }
    };
    (@methods $(
        $doc:literal
        $(#[$attr:meta])*
        fn $name:ident[$($gen:tt)*](&self $(, $arg:ident: $arg_ty:ty)* $(,)?) -> $ret:ty;
    )*) => {
        $(
            #[doc = concat!("[`BumpAlloc::", stringify!($name), "`]: ", $doc)]
            $(#[$attr])*
            #[inline(always)]
            pub fn $name<$($gen)*>(&self $(, $arg: $arg_ty)*) -> $ret {
                <Self as BumpAlloc>::$name(self $(, $arg)*)
            }
        )*
    };
}

inherent_forwarders!(impl[A: Allocator, const MIN_ALIGN: usize] crate::Arena<A, MIN_ALIGN>, '_, into_slice);
inherent_forwarders!(impl['a, const MIN_ALIGN: usize] crate::ArenaRef<'a, MIN_ALIGN>, 'a, into_slice);
// No `into_slice`: a guard is no `Allocator` (a collection is built on `guard.scope()`, whose
// `ArenaRef::into_slice` serves it).
inherent_forwarders!(impl['p, const MIN_ALIGN: usize] crate::ScopeGuard<'p, MIN_ALIGN>, '_);
#[cfg(feature = "std")]
inherent_forwarders!(impl['a, A: Allocator] crate::LocalArena<'a, A>, 'a, into_slice);
#[cfg(feature = "std")]
inherent_forwarders!(impl[A: Allocator] crate::SyncArena<A>, '_, into_slice);
