//! Every `Allocator` implementation of the crate, in one place: thin forwarding to the inherent
//! bump core, so that following the trait's evolution touches only this file.
//!
//! The implementations are on the owning types; `&Arena` and `&ArenaRef` get theirs from
//! allocator-api2's blanket `impl Allocator for &A`, which is how collections share an arena.

use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Layout};

#[cfg(feature = "std")]
use crate::SyncPool;
use crate::arena::min_align::{placed_unchecked, shrunk};
#[cfg(feature = "std")]
use crate::arena::refuse;
use crate::arena::{Arena, ArenaRef, OnRaw};
use crate::{Pool, SizeClassPool, TypedPool};

/// Implements `Allocator` for an arena type with private `raw()` and `src()` accessors.
macro_rules! arena_allocator {
    ([$($generics:tt)*] $ty:ty) => {
        // SAFETY: blocks come from chunks the arena owns, are aligned and sized as requested,
        // never overlap a live block (the position only moves back over the last block of the
        // current scope), and stay valid until deallocated, the scope ends, the arena is reset or
        // it is dropped; the last three need `&mut`/ownership, which no live `&Self` allows.
        // Moving the arena does not move its chunks.
        unsafe impl<$($generics)*> Allocator for $ty {
            #[inline(always)]
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
                self.raw().allocate(layout, Self::MIN_ALIGN, self.src())
            }

            #[inline]
            fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
                self.raw().allocate_zeroed(layout, Self::MIN_ALIGN, self.src())
            }

            #[inline(always)]
            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: `ptr` fits `layout` (the caller), so its widened form is valid; the
                // rest is forwarded from the caller's `Allocator::deallocate` contract, for the
                // widened layout the block was placed with.
                unsafe {
                    let layout = placed_unchecked(layout, Self::MIN_ALIGN);
                    self.raw().deallocate(ptr, layout, self.src())
                }
            }

            #[inline]
            unsafe fn grow(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                // SAFETY: forwarded from the caller's `Allocator::grow` contract.
                let p = unsafe { self.raw().grow::<_, true>(ptr, old_layout, new_layout, false, Self::MIN_ALIGN, self.src()) };
                Ok(NonNull::slice_from_raw_parts(p?, new_layout.size()))
            }

            #[inline]
            unsafe fn grow_zeroed(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                // SAFETY: forwarded from the caller's `Allocator::grow_zeroed` contract.
                let p = unsafe { self.raw().grow::<_, true>(ptr, old_layout, new_layout, true, Self::MIN_ALIGN, self.src()) };
                Ok(NonNull::slice_from_raw_parts(p?, new_layout.size()))
            }

            #[inline]
            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                // SAFETY: forwarded from the caller's `Allocator::shrink` contract, for the
                // widened layouts, which are valid (see `min_align::shrunk`).
                unsafe {
                    let (old, new) = shrunk(old_layout, new_layout, Self::MIN_ALIGN);
                    self.raw().shrink::<_, true>(ptr, old, new, self.src())
                }
            }
        }
    };
}

arena_allocator!([A: Allocator, const MIN_ALIGN: usize] Arena<A, MIN_ALIGN>);
arena_allocator!(['a, const MIN_ALIGN: usize] ArenaRef<'a, MIN_ALIGN>);
#[cfg(feature = "std")]
arena_allocator!(['a, A: Allocator] crate::LocalArena<'a, A>);

/// The shared path of `SyncArena`.
// SAFETY: blocks are disjoint ranges of chunks the arena owns, each claimed by one
// compare-and-swap of the chunk's cursor (or under the lock before the chunk is published), aligned
// and sized as requested; the cursor moves back only over the last block of the current chunk,
// given back by its owner. Blocks stay valid until deallocated, `reset` (`&mut`) or drop.
#[cfg(feature = "std")]
unsafe impl<A: Allocator> Allocator for crate::SyncArena<A> {
    #[inline(always)]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        match self.allocator_block(layout) {
            Ok(p) => Ok(NonNull::slice_from_raw_parts(p, layout.size())),
            // The limit's panic, if the arena asks for it, is raised out of line.
            Err(f) => Err(refuse(f, || self)),
        }
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's `Allocator::deallocate` contract.
        unsafe { self.deallocate_impl(ptr, layout) }
    }

    #[inline]
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old_layout: Layout,
        new_layout: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller's `Allocator::grow` contract.
        unsafe { self.grow_impl(ptr, old_layout, new_layout, false) }
    }

    #[inline]
    unsafe fn grow_zeroed(
        &self,
        ptr: NonNull<u8>,
        old_layout: Layout,
        new_layout: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller's `Allocator::grow_zeroed` contract.
        unsafe { self.grow_impl(ptr, old_layout, new_layout, true) }
    }

    #[inline]
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old_layout: Layout,
        new_layout: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller's `Allocator::shrink` contract.
        unsafe { self.shrink_impl(ptr, old_layout, new_layout, false) }
    }
}

/// Implements `Allocator` for a pool type with inherent `*_impl` methods. A failure goes through
/// the pool's `refused`, out of line, which raises the allocation limit's panic when the pool
/// asks for it.
macro_rules! pool_allocator {
    ([$($generics:tt)*] $ty:ty) => {
        // SAFETY: pooled blocks are distinct free slots of slabs or pages the pool owns (a slot is on a
        // free list or handed out, never both), aligned and at least as long as reported; other blocks come
        // from `A` and go back to it, routed by layout alone, which is constant over every size a caller
        // may pass for a block. Blocks stay valid until deallocated, `reset`, `trim` or drop, which need
        // `&mut`/ownership. Moving the pool does not move its slabs.
        unsafe impl<$($generics)*> Allocator for $ty {
            // Always inlined: it is the pool's rule and an out-of-line error path, and a grow
            // that moves a block (`relocate`) allocates through it.
            #[inline(always)]
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
                self.allocate_impl(layout).map_err(|_| self.refused())
            }

            #[inline]
            fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
                self.allocate_zeroed_impl(layout).map_err(|_| self.refused())
            }

            #[inline]
            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: forwarded from the caller's `Allocator::deallocate` contract.
                unsafe { self.deallocate_impl(ptr, layout) }
            }

            #[inline]
            unsafe fn grow(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                // SAFETY: forwarded from the caller's `Allocator::grow` contract.
                unsafe { self.reallocate_impl(ptr, old_layout, new_layout, false) }
                    .map_err(|_| self.refused())
            }

            #[inline]
            unsafe fn grow_zeroed(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                // SAFETY: forwarded from the caller's `Allocator::grow_zeroed` contract.
                unsafe { self.reallocate_impl(ptr, old_layout, new_layout, true) }
                    .map_err(|_| self.refused())
            }

            #[inline]
            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, AllocError> {
                // SAFETY: forwarded from the caller's `Allocator::shrink` contract.
                unsafe { self.reallocate_impl(ptr, old_layout, new_layout, false) }
                    .map_err(|_| self.refused())
            }
        }
    };
}

pool_allocator!([A: Allocator] Pool<A>);
// A `Pool`'s rules, with the slot shape as a constant.
pool_allocator!([T, A: Allocator] TypedPool<T, A>);
pool_allocator!([A: Allocator] SizeClassPool<A>);
// Its slots are the shards' `Pool` slots, each taken and given back under its shard's lock.
#[cfg(feature = "std")]
pool_allocator!([A: Allocator] SyncPool<A>);
