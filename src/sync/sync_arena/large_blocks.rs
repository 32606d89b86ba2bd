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

use super::{Chunks, SyncArena};
use crate::arena::{
    LARGE_THRESHOLD, Large, LargeList, Resize, block_layout, dangling, data_size, resize_plan,
};
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
        if let Some(limit) = chunks.limit {
            let held = chunks.held + chunks.pending + chunks.large_bytes;
            if size > limit.saturating_sub(held) {
                return Err(Failure::LimitReached { limit });
            }
        }
        Ok(self.unlocked(chunks, size, call))
    }

    /// Takes a large block of `block`'s layout (from `block_layout`) from the backing allocator
    /// and counts it.
    pub(super) fn take_large(&self, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        let (p, mut chunks) = self.with_pending(block.size(), || self.alloc.allocate(block))?;
        let p = p.map_err(|AllocError| Failure::OutOfMemory(block))?;
        chunks.large_bytes += block.size();
        chunks.large_data += data_size(block);
        chunks.large_count += 1;
        chunks.large_peak = chunks.large_peak.max(chunks.large_data);
        Ok(p)
    }

    /// Gives a large block of `block`'s layout back to the backing allocator and uncounts it.
    ///
    /// # Safety
    /// `p` is a large block of `block` taken by [`take_large`](Self::take_large) or resized by
    /// [`resize_large_block`](Self::resize_large_block), unlinked and not used again.
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
    pub(super) unsafe fn resize_large_block(
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
    pub(super) fn place_large(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
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
    /// of the list (the caller frees it or links it back); only a block of at least the
    /// threshold can be one.
    #[inline(always)]
    pub(super) fn unlink_large(&self, p: NonNull<u8>, layout: Layout) -> Option<Large> {
        if layout.size() < LARGE_THRESHOLD {
            return None;
        }
        self.unlink_large_slow(p, layout)
    }

    #[cold]
    #[inline(never)]
    fn unlink_large_slow(&self, p: NonNull<u8>, layout: Layout) -> Option<Large> {
        let chunks = self.chunks.lock();
        let b = chunks.large.find(p, layout.align())?;
        chunks.large.unlink(b);
        Some(b)
    }

    /// Frees the shared path's large block `b`, unlinked.
    ///
    /// # Safety
    /// `b` came from this arena's list and its data is not used again.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn free_large(&self, b: Large) {
        // SAFETY: forwarded from the caller.
        unsafe { self.give_large(b.block(), b.layout()) }
    }

    /// Grows or shrinks the shared path's large block `b` (unlinked), the caller's block of
    /// `old`, to `new`, as [`resize_plan`] decides (the arena's rule). On failure it is linked
    /// back unchanged; while it stays a large block it goes back where it was in the list (it
    /// keeps its sequence number).
    ///
    /// # Safety
    /// `b`'s data is the caller's live block of `old`.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn resize_large(
        &self,
        b: Large,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<u8>, Failure> {
        // Linked back when this fails, or when the backing allocator unwinds: it is still the
        // caller's block.
        let relink = OnUnwind::new(|| self.chunks.lock().large.reinsert(b));
        let old_block = b.layout();
        let q = match resize_plan(old_block, old, new, false).ok_or(Failure::CapacityOverflow)? {
            Resize::Free => {
                relink.disarm();
                // SAFETY: the caller gives its block up for an empty one; `b` is unlinked.
                unsafe { self.free_large(b) };
                return Ok(dangling(new.align()));
            }
            Resize::IntoChunks => {
                let q = self.place(new)?;
                // SAFETY: `q` is fresh, distinct from `b`'s data; both hold the bytes copied.
                unsafe {
                    ptr::copy_nonoverlapping(
                        b.data().as_ptr(),
                        q.as_ptr(),
                        old.size().min(new.size()),
                    )
                };
                relink.disarm();
                // SAFETY: the caller's old block, not used again.
                unsafe { self.free_large(b) };
                q
            }
            Resize::NewBlock(block) => {
                let p = self.take_large(block)?;
                // SAFETY: a fresh block of `block`'s layout, ours alone.
                let moved = unsafe { Large::init(p.cast(), block) };
                // Read before the block is linked (see the module documentation).
                let data = moved.data();
                // SAFETY: both blocks hold at least the bytes copied, and they are distinct.
                unsafe {
                    ptr::copy_nonoverlapping(
                        b.data().as_ptr(),
                        data.as_ptr(),
                        old.size().min(new.size()),
                    )
                };
                relink.disarm();
                {
                    // The new block takes the old one's place (and sequence number).
                    let chunks = self.chunks.lock();
                    chunks.large.reinsert(b);
                    chunks.large.replace(b, moved);
                }
                // SAFETY: `b` is unlinked again, and its data was the caller's old block.
                unsafe { self.free_large(b) };
                data
            }
            Resize::InPlace => {
                relink.disarm();
                // Read before the block is linked again (see the module documentation).
                let data = b.data();
                self.chunks.lock().large.reinsert(b);
                data
            }
            Resize::Backing(block) => {
                // SAFETY: `b` is unlinked, of its layout, and `block` has its alignment.
                let p = unsafe { self.resize_large_block(b.block(), old_block, block) }?;
                relink.disarm();
                // SAFETY: the block holds the old block's bytes, header included.
                let b = unsafe { Large::resized(p.cast(), block) };
                // Read before the block is linked (see the module documentation).
                let data = b.data();
                self.chunks.lock().large.reinsert(b);
                data
            }
        };
        if zeroed && new.size() > old.size() {
            // SAFETY: `q` is writable for `new.size()` bytes.
            unsafe { q.add(old.size()).write_bytes(0, new.size() - old.size()) };
        }
        Ok(q)
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
