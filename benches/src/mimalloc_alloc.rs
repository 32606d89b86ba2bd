//! [`Mi`]: mimalloc as an allocator instance, allocator-api2 0.2's [`Allocator`] over
//! `mimalloc::MiMalloc`'s `GlobalAlloc` impl, for the columns named `mimalloc`.
//!
//! It is not the process's global allocator: every other crate still takes its memory from the
//! global allocator (the system allocator, or the memory meter over it in the `meter` build).
//! mimalloc takes its memory from the operating system itself, so the memory meter never sees
//! it: the suites do not register their `mimalloc` cases in memory mode
//! ([`crate::harness::memory_mode`]), rather than report the bytes requested as its memory.

use core::ptr::NonNull;
use std::alloc::GlobalAlloc;

use allocator_api2::alloc::{AllocError, Allocator, Layout};

/// mimalloc as an allocator instance (see the module docs). `grow` and `shrink` keep a block's
/// alignment through mimalloc's `realloc`, as the system allocator's `Global` does through
/// malloc's, so that growing collections cost both the same kind of call.
#[derive(Clone, Copy, Default, Debug)]
pub struct Mi;

impl Mi {
    /// An empty block aligned for `layout`: never dereferenced, never given to mimalloc.
    #[inline(always)]
    fn dangling(layout: Layout) -> NonNull<[u8]> {
        let dangling = NonNull::<u8>::dangling().with_addr(
            core::num::NonZeroUsize::new(layout.align()).expect("alignments are non-zero"),
        );
        NonNull::slice_from_raw_parts(dangling, 0)
    }

    /// A block of `new` (via `allocate`), the first `old.size().min(new.size())` bytes of `ptr`
    /// copied into it, and `ptr` freed: the move `grow` and `shrink` make when `realloc` cannot
    /// serve them (an empty block, or a change of alignment).
    ///
    /// # Safety
    /// `ptr` is a live block of `Mi` allocated with `old`.
    unsafe fn moved(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let block = self.allocate(new)?;
        // SAFETY: `ptr` is live for `old.size()` bytes (the caller's contract), `block` for
        // `new.size()` bytes, and the two are distinct blocks; `ptr` is freed once, with its
        // layout, after the copy.
        unsafe {
            core::ptr::copy_nonoverlapping(
                ptr.as_ptr(),
                block.cast::<u8>().as_ptr(),
                old.size().min(new.size()),
            );
            self.deallocate(ptr, old);
        }
        Ok(block)
    }

    /// `realloc` of the non-empty block `ptr` (of layout `old`) to `new`'s size.
    ///
    /// # Safety
    /// `ptr` is a live block of `Mi` allocated with `old`; `old.size()` and `new.size()` are not
    /// zero, and `new.align() == old.align()`.
    #[inline(always)]
    unsafe fn realloc(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: `ptr` came from `MiMalloc.alloc` (or `alloc_zeroed`, or an earlier `realloc`)
        // with `old` (the caller's contract, and every non-empty block of `Mi` is one of
        // those); the new size is not zero and, being that of the valid layout `new` of the
        // same alignment, does not overflow `isize` once rounded up to it.
        let p = unsafe { mimalloc::MiMalloc.realloc(ptr.as_ptr(), old, new.size()) };
        NonNull::new(p)
            .map(|p| NonNull::slice_from_raw_parts(p, new.size()))
            .ok_or(AllocError)
    }
}

// SAFETY: `allocate` returns a block of `MiMalloc` of at least `layout`'s size and alignment (or
// a dangling, aligned pointer for a size of zero, which is never dereferenced nor freed), live
// until `deallocate` frees it with the same layout, or `grow`/`shrink` replace it (through
// `realloc`, which keeps the contents up to the smaller size, or through `moved`, which copies
// them). `Mi` holds no state, so its copies are interchangeable, as the trait requires of clones.
unsafe impl Allocator for Mi {
    #[inline(always)]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Ok(Mi::dangling(layout));
        }
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { mimalloc::MiMalloc.alloc(layout) };
        NonNull::new(ptr)
            .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
            .ok_or(AllocError)
    }

    #[inline(always)]
    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() == 0 {
            return Ok(Mi::dangling(layout));
        }
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        NonNull::new(ptr)
            .map(|p| NonNull::slice_from_raw_parts(p, layout.size()))
            .ok_or(AllocError)
    }

    #[inline(always)]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: the caller passes a block `allocate` returned for `layout`: a non-empty one
            // comes from `MiMalloc` with this layout.
            unsafe { mimalloc::MiMalloc.dealloc(ptr.as_ptr(), layout) }
        }
    }

    #[inline(always)]
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        if old.size() == 0 || old.align() != new.align() {
            // SAFETY: the caller's `Allocator::grow` contract: `ptr` is a live block with `old`.
            return unsafe { self.moved(ptr, old, new) };
        }
        // SAFETY: as above; `old.size()` is not zero, `new.size() >= old.size()` (the caller's
        // contract), and the alignments are equal.
        unsafe { self.realloc(ptr, old, new) }
    }

    #[inline(always)]
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        if new.size() == 0 {
            // SAFETY: the caller's `Allocator::shrink` contract: `ptr` is a live block with
            // `old`; it is freed and replaced by an empty block.
            unsafe { self.deallocate(ptr, old) };
            return Ok(Mi::dangling(new));
        }
        if old.align() != new.align() {
            // SAFETY: as above.
            return unsafe { self.moved(ptr, old, new) };
        }
        // SAFETY: as above; `old.size() >= new.size()` (the caller's contract) and `new.size()`
        // are not zero, and the alignments are equal.
        unsafe { self.realloc(ptr, old, new) }
    }
}
