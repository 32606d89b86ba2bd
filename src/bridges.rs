//! The optional `Allocator` impls of allocator-api2 0.3 and 0.4 (features `allocator-api2-03`,
//! `allocator-api2-04`), for users of crates built on those versions. Each forwards to the crate's
//! main impl, allocator-api2 0.2's, so the behaviour is the same; only the trait (and its
//! `AllocError`) differ.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::Allocator as Allocator02;

use crate::{Arena, ArenaRef, Pool, SizeClassPool};

/// Implements one version's `Allocator` for one type by forwarding to the 0.2 impl.
macro_rules! bridge {
    ($krate:ident, [$($generics:tt)*] $ty:ty) => {
        // SAFETY: every method forwards to this type's allocator-api2 0.2 impl, whose contract
        // (memory validity, fitting, currently-allocated blocks) is the same as this version's;
        // only the error type is converted.
        unsafe impl<$($generics)*> $krate::alloc::Allocator for $ty {
            #[inline(always)]
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, $krate::alloc::AllocError> {
                Allocator02::allocate(self, layout).map_err(|_| $krate::alloc::AllocError)
            }

            #[inline]
            fn allocate_zeroed(
                &self,
                layout: Layout,
            ) -> Result<NonNull<[u8]>, $krate::alloc::AllocError> {
                Allocator02::allocate_zeroed(self, layout).map_err(|_| $krate::alloc::AllocError)
            }

            #[inline(always)]
            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: the caller's contract is the same for the 0.2 trait.
                unsafe { Allocator02::deallocate(self, ptr, layout) }
            }

            #[inline]
            unsafe fn grow(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $krate::alloc::AllocError> {
                // SAFETY: the caller's contract is the same for the 0.2 trait.
                unsafe { Allocator02::grow(self, ptr, old, new) }
                    .map_err(|_| $krate::alloc::AllocError)
            }

            #[inline]
            unsafe fn grow_zeroed(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $krate::alloc::AllocError> {
                // SAFETY: the caller's contract is the same for the 0.2 trait.
                unsafe { Allocator02::grow_zeroed(self, ptr, old, new) }
                    .map_err(|_| $krate::alloc::AllocError)
            }

            #[inline]
            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<NonNull<[u8]>, $krate::alloc::AllocError> {
                // SAFETY: the caller's contract is the same for the 0.2 trait.
                unsafe { Allocator02::shrink(self, ptr, old, new) }
                    .map_err(|_| $krate::alloc::AllocError)
            }
        }
    };
}

/// Implements one version's `Allocator` for every type of the crate.
macro_rules! bridge_all {
    ($krate:ident) => {
        bridge!($krate, [A: Allocator02, const MIN_ALIGN: usize] Arena<A, MIN_ALIGN>);
        bridge!($krate, ['a, const MIN_ALIGN: usize] ArenaRef<'a, MIN_ALIGN>);
        bridge!($krate, [A: Allocator02] Pool<A>);
        bridge!($krate, [T, A: Allocator02] crate::TypedPool<T, A>);
        bridge!($krate, [A: Allocator02] SizeClassPool<A>);
        #[cfg(feature = "std")]
        bridge!($krate, [A: Allocator02] crate::SyncArena<A>);
        #[cfg(feature = "std")]
        bridge!($krate, ['a, A: Allocator02] crate::LocalArena<'a, A>);
        #[cfg(feature = "std")]
        bridge!($krate, [A: Allocator02] crate::SyncPool<A>);
    };
}

#[cfg(feature = "allocator-api2-03")]
bridge_all!(allocator_api2_03);
#[cfg(feature = "allocator-api2-04")]
bridge_all!(allocator_api2_04);
