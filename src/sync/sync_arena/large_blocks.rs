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
use super::thread_piece::NOTED_ROLLBACK;
use super::{Chunks, SharedChunk, SyncArena};
use crate::arena::resize::Front;
use crate::arena::{
    HEADER_SIZE, LARGE_THRESHOLD, Large, LargeList, block_layout, data_size, min_chunk_size,
};
use crate::error::Failure;
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
        chunks.kept.note(chunks.large_bytes);
        Ok(q)
    }

    /// The shared path's large block for `layout` (at least the threshold): a kept one that fits
    /// (`growing`: for a block that grows, see `crate::arena::large_spares`), else a new one.
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc_large(
        &self,
        layout: Layout,
        growing: bool,
    ) -> Result<NonNull<u8>, Failure> {
        let (block, _) = block_layout(layout).ok_or(Failure::CapacityOverflow)?;
        let b = match self.take_kept_counted(block, growing) {
            Some(b) => b,
            None => {
                let p = self.take_new_large(block)?;
                // SAFETY: a fresh block of `block`'s layout, ours alone.
                unsafe { Large::init_taken(p, block) }
            }
        };
        // Read before the block is linked (see the module documentation).
        let data = b.data();
        self.chunks.lock().large.push(b);
        Ok(data)
    }

    /// A large block of at least `block` for a handle ([`ChunkSource::allocate_large`]): a kept
    /// one that fits, else a new one; the slice's length is the size it is given back with.
    pub(super) fn allocate_large_for(
        &self,
        block: Layout,
        growing: bool,
    ) -> Result<NonNull<[u8]>, Failure> {
        match self.take_kept_counted(block, growing) {
            Some(b) => Ok(NonNull::slice_from_raw_parts(b.block(), b.layout().size())),
            None => self.take_new_large(block),
        }
    }

    /// A kept block that fits `block` (see `Spares::take`), taken out of the kept ones and
    /// counted among the large blocks in use; not linked.
    fn take_kept_counted(&self, block: Layout, growing: bool) -> Option<Large> {
        let mut chunks = self.chunks.lock();
        let b = chunks.kept.take(block, growing)?;
        let l = b.layout();
        chunks.large_bytes += l.size();
        chunks.large_data += data_size(l);
        chunks.large_count += 1;
        chunks.kept.note(chunks.large_bytes);
        Some(b)
    }

    /// A new block for `block` from the backing allocator, counted, after the kept blocks
    /// smaller than it made room within the allowance (and all of them, should the limit refuse
    /// it while they are held).
    fn take_new_large(&self, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        self.make_room(block.size(), block.size());
        match Front::take_large(self, block) {
            Err(Failure::LimitReached { .. }) if !self.chunks.lock().kept.is_empty() => {
                self.free_kept();
                Front::take_large(self, block)
            }
            r => r,
        }
    }

    /// Gives back the smallest kept blocks below `below` bytes while the large blocks in use
    /// and kept, with `more` bytes besides, pass the allowance; the lock is released for each
    /// call.
    fn make_room(&self, more: usize, below: usize) {
        loop {
            let chunks = self.chunks.lock();
            let in_use = chunks.large_bytes;
            let Some(b) = chunks.kept.make_room(in_use, more, below) else {
                return;
            };
            drop(chunks);
            // SAFETY: a kept block, out of every list and uncounted, from `self.alloc`.
            unsafe { self.alloc.deallocate(b.block(), b.layout()) };
        }
    }

    /// A large block freed on the shared path (unlinked, still counted): kept for reuse within
    /// the allowance, else given back (see `crate::arena::large_spares`).
    ///
    /// # Safety
    /// `b` is unlinked, from `self.alloc`, and its data is not used again.
    pub(super) unsafe fn retire_large(&self, b: Large) {
        let l = b.layout();
        if b.origin() != 0 {
            let mut chunks = self.chunks.lock();
            uncount(&mut chunks, l);
            // The last block of a chunk that grew out of it: the cycle needed a chunk that
            // holds it where it started (the next reset sizes one), and it goes back.
            let need = (b.origin() - 1).saturating_add(data_size(l));
            chunks.chunk_peak = chunks.chunk_peak.max(need);
            drop(chunks);
            // SAFETY: forwarded from the caller; uncounted above.
            unsafe { self.alloc.deallocate(b.block(), l) };
            return;
        }
        // `b` stays listed and counted as in use while kept blocks go back to make room for
        // it: should one of those calls unwind, it is still the arena's, and the reset or the
        // drop gives it back. It must stay allocated then (a resize that moved it unwinds while
        // its caller still holds it).
        self.chunks.lock().large.reinsert(b);
        self.make_room(0, l.size());
        let mut chunks = self.chunks.lock();
        chunks.large.unlink(b);
        uncount(&mut chunks, l);
        let in_use = chunks.large_bytes;
        if let Some(b) = chunks.kept.offer(b, in_use) {
            drop(chunks);
            // SAFETY: forwarded from the caller; uncounted above.
            unsafe { self.alloc.deallocate(b.block(), l) };
        }
    }

    /// A reset's large blocks (`&mut self`: none is used again): those in use join the kept
    /// ones, and the kept ones the next cycles are not expected to need go back.
    #[inline]
    pub(super) fn retire_all_large(&mut self) {
        let chunks = self.chunks.get_mut();
        if !chunks.large.is_empty() || !chunks.kept.idle() {
            self.retire_all_large_slow();
        }
    }

    /// The rest of [`retire_all_large`](Self::retire_all_large), out of line: a reset of an
    /// arena with no large block in use, kept or remembered asks one question.
    #[cold]
    #[inline(never)]
    fn retire_all_large_slow(&mut self) {
        // Blocks that grew out of a chunk's end count as its need (see `retire_large`).
        while let Some(b) = {
            let large = &self.chunks.get_mut().large;
            large.blocks().find(|b| b.origin() != 0)
        } {
            self.chunks.get_mut().large.unlink(b);
            // SAFETY: unlinked just now, from `self.alloc`; `&mut self`: not used again.
            unsafe { self.retire_large(b) };
        }
        let chunks = self.chunks.get_mut();
        chunks.large_bytes -= chunks.large.bytes();
        chunks.large_data -= chunks.large.data_bytes();
        chunks.large_count -= chunks.large.count();
        chunks.kept.retire(&chunks.large);
        while let Some(b) = self.chunks.get_mut().kept.surplus() {
            // SAFETY: a kept block, out of every list and uncounted, from `self.alloc`.
            unsafe { self.alloc.deallocate(b.block(), b.layout()) };
        }
        self.chunks.get_mut().kept.settle();
    }

    /// Marks the large block `q` (of `new`) as the last block of chunk `c`, at `p`, grown out of
    /// it (see `retire_large`): a chunk that holds the chunks' bytes in use before it and the
    /// block would have held it where it grew.
    #[cold]
    fn mark_grown_out(&self, c: SharedChunk, p: NonNull<u8>, q: NonNull<u8>, new: Layout) {
        let chunks = self.chunks.lock();
        let mut before = p.addr().get() - c.start();
        let mut x = chunks.used;
        while let Some(u) = x {
            if u != c {
                before += u.used();
            }
            x = u.next();
        }
        if let Some(b) = chunks.large.find(q, new.align()) {
            b.set_origin(before + 1);
        }
    }

    /// Whether a reset planned a chunk that holds `layout` (see `alloc_slow_body`).
    fn plan_holds(&self, layout: Layout) -> bool {
        let plan = self.chunks.lock().plan;
        plan != 0 && min_chunk_size(layout).is_some_and(|own| own - HEADER_SIZE <= plan)
    }

    /// Records that the cycle needed `bytes` in one chunk (see `ChunkSource::note_need`).
    pub(crate) fn note_chunk_need(&self, bytes: usize) {
        let mut chunks = self.chunks.lock();
        chunks.chunk_peak = chunks.chunk_peak.max(bytes);
    }

    /// Gives every kept large block back (`trim`, drop, and a request the limit refuses while
    /// they are held), the lock released for each call.
    pub(super) fn free_kept(&self) {
        loop {
            let Some(b) = self.chunks.lock().kept.pop() else {
                return;
            };
            // SAFETY: a kept block, out of every list and uncounted, from `self.alloc`.
            unsafe { self.alloc.deallocate(b.block(), b.layout()) };
        }
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

    /// Takes over a dropped handle's large blocks: they live until reset or drop. Inlined, so
    /// that a handle without any (a handle per job) pays one test when dropped.
    #[inline(always)]
    pub(crate) fn adopt_large(&self, list: &LargeList) {
        if !list.is_empty() {
            self.adopt_large_slow(list);
        }
    }

    /// [`adopt_large`](Self::adopt_large) of a non-empty list.
    #[cold]
    #[inline(never)]
    fn adopt_large_slow(&self, list: &LargeList) {
        self.chunks.lock().large.adopt(list);
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
        // A block that reaches the threshold moves to a large block, never to a chunk, where it
        // would leave its old bytes behind at each later move.
        let q = if new.size() >= LARGE_THRESHOLD {
            if grows && self.plan_holds(new) {
                // A chunk a reset planned for it (see `alloc_slow_body`).
                self.alloc_slow_as(new, Request::Grown)?
            } else {
                self.alloc_large(new, grows)?
            }
        } else if grows {
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
        if old.size() != 0 && !self.release_in_piece(p, old.size()) {
            if let Some(c) = left {
                // `p + old` ends the caller's block, so it does not overflow.
                if c.move_cursor(p.addr().get() + old.size(), p.addr().get()) {
                    if old.size() >= NOTED_ROLLBACK {
                        self.note_rollback(old.size());
                    }
                    if grows && new.size() >= LARGE_THRESHOLD {
                        self.mark_grown_out(c, p, q, new);
                    }
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
        chunks.kept.note(chunks.large_bytes);
        // Exactly the size counted, which is the size it goes back with.
        Ok(NonNull::slice_from_raw_parts(p.cast(), block.size()))
    }

    unsafe fn resize_large_block(&self, b: Large, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        // SAFETY: forwarded from the caller; `block` has `b`'s alignment.
        unsafe { self.backing_resize(b.block(), b.layout(), block) }
    }

    unsafe fn free_large(&self, b: Large) {
        // SAFETY: forwarded from the caller.
        unsafe { self.retire_large(b) }
    }

    fn link_large(&self, b: Large) {
        self.chunks.lock().large.reinsert(b);
    }

    fn has_kept(&self) -> bool {
        !self.chunks.lock().kept.is_empty()
    }

    fn take_kept(&self, block: Layout) -> Option<Large> {
        self.take_kept_counted(block, true)
    }

    fn link_large_for(&self, old: Large, new: Large, _kept: bool) {
        self.chunks.lock().large.reinsert_for(old, new);
    }
}

/// Takes a large block of layout `l` out of the counts of the blocks in use.
fn uncount(chunks: &mut Chunks, l: Layout) {
    chunks.large_bytes -= l.size();
    chunks.large_data -= data_size(l);
    chunks.large_count -= 1;
}
