//! A [`SyncArena`]'s large blocks (see `crate::arena::large`): requests of at least the threshold
//! that do not fit the current chunk, on the shared path, and the large blocks of its
//! [`LocalArena`](crate::LocalArena) handles, which take them through the shared arena's backing
//! allocator and hand them over when they are dropped.
//!
//! As for chunks, the backing allocator is called with the lock released (the bytes counted
//! against the limit meanwhile); the list and the totals change under the lock.
//!
//! A block's header is read without the lock only while the block is on no list (before it is
//! linked, or after it is unlinked): once linked, other threads relink the list under the lock,
//! which writes the links of the blocks next to theirs. So what a caller needs of a block (its
//! data's address) is taken before the block is linked.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use allocator_api2::alloc::{AllocError, Allocator};

use super::bumping::Request;
use super::{Chunks, SyncArena};
use crate::arena::resize::Front;
use crate::arena::{LARGE_THRESHOLD, Large, LargeList, block_layout, data_size};
use crate::error::Failure;
use crate::reentry::OnUnwind;
use crate::sync::shim::MutexGuard;

impl<A: Allocator> SyncArena<A> {
    /// Runs `call`, a call into the backing allocator for `size` bytes more than now held, within
    /// the limit, with the lock released (see `unlocked`); returns its result under the lock.
    fn with_pending<R>(
        &self,
        size: usize,
        call: impl FnOnce() -> R,
    ) -> Result<(R, MutexGuard<'_, Chunks>), Failure> {
        let chunks = self.chunks.lock();
        chunks.budget().admit(size)?;
        Ok(self.unlocked(chunks, size, call))
    }

    /// Gives a large block of `block`'s layout back to the backing allocator and uncounts it.
    ///
    /// # Safety
    /// `p` is a large block of `block` taken by [`Front::take_large`] or
    /// resized by [`backing_resize`](Self::backing_resize), unlinked and not used again.
    pub(super) unsafe fn give_large(&self, p: NonNull<u8>, block: Layout) {
        // Uncounted once the backing allocator returns, and also when it unwinds: no list holds
        // the block any more (it is leaked at worst), and the limit must not count it for ever.
        // The lock is not held across the call (the backing allocator may use this arena).
        let _uncount = OnUnwind::new(|| {
            let mut chunks = self.chunks.lock();
            chunks.large_bytes -= block.size();
            chunks.large_data -= data_size(block);
            chunks.large_count -= 1;
        });
        // SAFETY: forwarded from the caller: the block came from `self.alloc` with `block`.
        unsafe { self.alloc.deallocate(p, block) };
    }

    /// Grows or shrinks a large block through the backing allocator, and recounts it.
    ///
    /// # Safety
    /// `p` is a live large block of `old`, unlinked, and `new` has `old`'s alignment.
    pub(super) unsafe fn backing_resize(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, Failure> {
        let more = new.size().saturating_sub(old.size());
        // SAFETY: forwarded from the caller.
        let (resized, mut chunks) = self.with_pending(more, || unsafe {
            if new.size() >= old.size() {
                self.alloc.grow(p, old, new)
            } else {
                self.alloc.shrink(p, old, new)
            }
        })?;
        let q = resized.map_err(|AllocError| Failure::OutOfMemory(new))?;
        chunks.large_bytes = chunks.large_bytes - old.size() + new.size();
        chunks.large_data = chunks.large_data - data_size(old) + data_size(new);
        chunks.large_peak = chunks.large_peak.max(chunks.large_data);
        Ok(q)
    }

    /// The shared path's large block for `layout` (at least the threshold).
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_large(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        let (block, _) = block_layout(layout).ok_or(Failure::CapacityOverflow)?;
        let p = self.take_large(block)?;
        // SAFETY: a fresh block of `block`'s layout, ours alone.
        let b = unsafe { Large::init(p.cast(), block) };
        // Read before the block is linked (see the module documentation).
        let data = b.data();
        self.chunks.lock().large.push(b);
        Ok(data)
    }

    /// The shared path's large block whose data is the caller's block `p` of `layout`, taken out
    /// of the list (see [`Front::unlink_large`]).
    #[cold]
    #[inline(never)]
    fn unlink_large_slow(&self, p: NonNull<u8>, layout: Layout) -> Option<Large> {
        let chunks = self.chunks.lock();
        let b = chunks.large.find(p, layout.align())?;
        chunks.large.unlink(b);
        Some(b)
    }

    /// Takes over a dropped handle's large blocks: they live until reset or drop.
    pub(crate) fn adopt_large(&self, list: &LargeList) {
        if list.count() != 0 {
            self.chunks.lock().large.adopt(list);
        }
    }

    /// Frees every large block of the list (for `reset` and drop).
    pub(super) fn free_all_large(&mut self) {
        while let Some(b) = self.chunks.get_mut().large.pop_since(0) {
            // SAFETY: `&mut self`: no block of the arena is used again.
            unsafe { self.free_large(b) };
        }
    }
}

/// The shared path's answers to the shared resize ([`Front`]): blocks are placed on the shared
/// path, and the list changes under the lock.
impl<A: Allocator> Front for SyncArena<A> {
    #[inline(always)]
    fn unlink_large(&self, p: NonNull<u8>, layout: Layout) -> Option<Large> {
        if layout.size() < LARGE_THRESHOLD {
            return None;
        }
        self.unlink_large_slow(p, layout)
    }

    unsafe fn move_last(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        _keep: usize,
    ) -> Option<Result<NonNull<u8>, Failure>> {
        // A probe in the way moves up, so that the last block grows where it is.
        // SAFETY: forwarded from the caller.
        (new.size() > old.size()
            && self.raise_probe_for(p, old, new)
            && unsafe { self.grow_in_place(p, old, new, false) })
        .then_some(Ok(p))
    }

    unsafe fn move_to_fresh(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        keep: usize,
        grows: bool,
    ) -> Result<NonNull<u8>, Failure> {
        let left = self.current_chunk();
        let q = if grows {
            self.alloc_block_as(new, Request::Grown)?
        } else {
            self.alloc_block(new)?
        };
        // SAFETY: `q` is a fresh block, so it does not overlap the caller's live block `p`; `p`
        // is readable and `q` writable for `keep` bytes (the caller).
        unsafe { ptr::copy_nonoverlapping(p.as_ptr(), q.as_ptr(), keep) };
        // The old block goes back when it was the last of the chunk the request left (copied
        // first: once given back, another thread may bump over it). The compare-and-swap
        // succeeds only when its end is that chunk's cursor, so when nothing was bumped after
        // it there (`q` was not: it went to another chunk, or after the cursor).
        if old.size() != 0 {
            if let Some(c) = left {
                // `p + old` ends the caller's block, so it does not overflow.
                if c.move_cursor(p.addr().get() + old.size(), p.addr().get())
                    && old.size() >= LARGE_THRESHOLD
                {
                    self.note_rollback(old.size());
                }
            }
        }
        Ok(q)
    }

    fn alloc_in_chunks(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        self.alloc_block(layout)
    }

    /// Takes the block from the backing allocator (with the lock released, its bytes pending
    /// meanwhile) and counts it.
    fn take_large(&self, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        let (p, mut chunks) = self.with_pending(block.size(), || self.alloc.allocate(block))?;
        let p = p.map_err(|AllocError| Failure::OutOfMemory(block))?;
        chunks.large_bytes += block.size();
        chunks.large_data += data_size(block);
        chunks.large_count += 1;
        chunks.large_peak = chunks.large_peak.max(chunks.large_data);
        Ok(p)
    }

    unsafe fn resize_large_block(&self, b: Large, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        // SAFETY: forwarded from the caller; `block` has `b`'s alignment.
        unsafe { self.backing_resize(b.block(), b.layout(), block) }
    }

    unsafe fn free_large(&self, b: Large) {
        // SAFETY: forwarded from the caller.
        unsafe { self.give_large(b.block(), b.layout()) }
    }

    fn link_large(&self, b: Large) {
        self.chunks.lock().large.reinsert(b);
    }

    fn link_large_for(&self, old: Large, new: Large) {
        self.chunks.lock().large.reinsert_for(old, new);
    }
}
