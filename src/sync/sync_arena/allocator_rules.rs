//! The shared path's `Allocator` rules (deallocate, grow and shrink: in place when the block is the
//! current chunk's last, else through `crate::arena::resize`) and the typed API's primitives
//! ([`Core`]).

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use super::SyncArena;
use super::shared_chunk::SharedChunk;
use super::thread_piece::NOTED_ROLLBACK;
use crate::arena::resize::{self, Front};
use crate::arena::{ArenaStats, Core, refuse, satisfies};
use crate::error::Failure;
use crate::sync::shim::Ordering;

impl<A: Allocator> SyncArena<A> {
    /// `Allocator::deallocate`: gives the block back when it is the last of the current chunk.
    ///
    /// # Safety
    /// The `Allocator::deallocate` contract.
    pub(crate) unsafe fn deallocate_impl(&self, p: NonNull<u8>, layout: Layout) {
        if self.release_in_piece(p, layout.size()) {
            return;
        }
        // SAFETY: `p + size` is the end of the caller's block (`p` itself for an empty one, which
        // `release_bump` ignores).
        let end = unsafe { p.add(layout.size()) };
        if self.release_bump(p, end) {
            if layout.size() >= NOTED_ROLLBACK {
                self.note_rollback(layout.size());
            }
        } else if let Some(b) = self.unlink_large(p, layout) {
            // SAFETY: the caller's large block, not used again.
            unsafe { self.free_large(b) };
        }
    }

    /// Records what the chunks held before a roll-back of `size` bytes (see `chunk_peak`).
    #[cold]
    #[inline(never)]
    pub(crate) fn note_rollback(&self, size: usize) {
        let mut chunks = self.chunks.lock();
        chunks.chunk_peak = chunks.chunk_peak.max(chunks.in_chunks() + size);
    }

    /// `Allocator::grow` / `grow_zeroed`: in place when the block is last and the chunk has room
    /// (no stack frame on this path); otherwise [`grow_elsewhere`](Self::grow_elsewhere).
    ///
    /// # Safety
    /// The `Allocator::grow` contract.
    #[inline(always)]
    pub(crate) unsafe fn grow_impl(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        if unsafe { self.grow_in_place(p, old, new, zeroed) } {
            return Ok(NonNull::slice_from_raw_parts(p, new.size()));
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.grow_elsewhere(p, old, new, zeroed) }
    }

    /// Grows the block in place when it is the last of the current chunk, its start satisfies
    /// the new alignment and the chunk has room; returns whether it did.
    ///
    /// # Safety
    /// The `Allocator::grow` contract.
    #[inline(always)]
    pub(super) unsafe fn grow_in_place(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> bool {
        if old.size() != 0
            // SAFETY: `p` was allocated with `old` (the contract).
            && unsafe { satisfies(p, old, new) }
            && self.grow_last_any(p, old.size(), new.size())
        {
            if zeroed {
                // SAFETY: `p` is writable for `new.size()` bytes now.
                unsafe { p.add(old.size()).write_bytes(0, new.size() - old.size()) };
            }
            return true;
        }
        false
    }

    /// The rest of [`grow_impl`](Self::grow_impl) (see [`resize::grow`]): a large block grows
    /// through the backing allocator; any other block moves to a fresh one.
    ///
    /// # Safety
    /// The `Allocator::grow` contract.
    #[cold]
    #[inline(never)]
    unsafe fn grow_elsewhere(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        match unsafe { resize::grow(self, p, old, new, zeroed) } {
            Ok(q) => Ok(NonNull::slice_from_raw_parts(q, new.size())),
            // The `Allocator` method's answer: `AllocError`, or the limit's panic when asked.
            Err(f) => Err(refuse(f, || self)),
        }
    }

    /// [`grow_elsewhere`](Self::grow_elsewhere) for the typed API, which names the cause of a
    /// failure.
    ///
    /// # Safety
    /// The `Allocator::grow` contract.
    #[cold]
    #[inline(never)]
    unsafe fn grow_moving(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, Failure> {
        // SAFETY: forwarded from the caller.
        unsafe { resize::grow(self, p, old, new, false) }
    }

    /// Moves a probe on the current chunk up so that the block `[p, p + old)`, when it is the
    /// chunk's last, can grow to `new` where it is; returns whether the probe moved.
    #[cold]
    #[inline(never)]
    pub(super) fn raise_probe_for(&self, p: NonNull<u8>, old: Layout, new: Layout) -> bool {
        let p = p.addr().get();
        match (p.checked_add(old.size()), p.checked_add(new.size())) {
            (Some(end), Some(reach)) => self.raise_probe_to(end, reach),
            _ => false,
        }
    }

    /// Moves a probe on the current chunk up so that what ends at `end`, when `end` is the
    /// chunk's cursor, can reach `reach` (an address) where it is; returns whether the probe
    /// moved.
    #[cold]
    #[inline(never)]
    pub(super) fn raise_probe_to(&self, end: usize, reach: usize) -> bool {
        let is_last = |c: SharedChunk| end == c.cursor().load(Ordering::Relaxed);
        // Without the lock first: a probe is rare, and only the cycle after a reset has one.
        let current = self.current.get(Ordering::Acquire);
        if !current.is_some_and(|c| c.probed() && is_last(c)) {
            return false;
        }
        let mut chunks = self.chunks.lock();
        self.raise_probe(&mut chunks, |c| {
            if is_last(c) {
                // `end` is the chunk's cursor, so it lies in the chunk; `reach` is checked.
                reach.checked_sub(c.start())
            } else {
                None
            }
        })
    }

    /// `Allocator::shrink`: gives the tail back when the block is last (no stack frame on this
    /// path); otherwise [`shrink_elsewhere`](Self::shrink_elsewhere). With `settle`, as
    /// `Core::core_shrink_settled`.
    ///
    /// # Safety
    /// The `Allocator::shrink` contract; with `settle`, the block is not resized or deallocated
    /// afterwards.
    #[inline(always)]
    pub(crate) unsafe fn shrink_impl(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        settle: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: `p` was allocated with `old` (the contract).
        if unsafe { satisfies(p, old, new) } && self.shrink_last_any(p, old.size(), new.size()) {
            return Ok(NonNull::slice_from_raw_parts(p, new.size()));
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.shrink_elsewhere(p, old, new, settle) }
    }

    /// The rest of [`shrink_impl`](Self::shrink_impl) (see [`resize::shrink`]): a large block
    /// shrinks through the backing allocator; any other block keeps its place and length, and
    /// moves only for a larger alignment.
    ///
    /// # Safety
    /// As for [`shrink_impl`](Self::shrink_impl).
    #[cold]
    #[inline(never)]
    unsafe fn shrink_elsewhere(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        settle: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { resize::shrink(self, p, old, new, settle) }.map_err(|f| refuse(f, || self))
    }

    /// The chunk being bumped, if any.
    #[inline(always)]
    pub(super) fn current_chunk(&self) -> Option<SharedChunk> {
        self.current.get(Ordering::Acquire)
    }
}

/// The typed API's primitives ([`BumpAlloc`](crate::BumpAlloc)): the shared path's
/// compare-and-swap bump, its cold path and its `Allocator` rules.
impl<A: Allocator> Core for SyncArena<A> {
    #[inline(always)]
    fn core_bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        self.pieces.piece(|t| t.bump(layout))
    }

    #[inline(always)]
    unsafe fn core_release_bump(&self, p: NonNull<u8>, layout: Layout) {
        if self.release_in_piece(p, layout.size()) {
            return;
        }
        // SAFETY: `p + size` is the end of the caller's block, bumped in a piece or a chunk.
        let end = unsafe { p.add(layout.size()) };
        self.release_bump(p, end);
    }

    #[inline(always)]
    fn core_alloc_slow(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        self.alloc_thread_slow(layout)
    }

    /// [`alloc_block`](SyncArena::alloc_block), the shared path's own allocation (an empty layout gets its
    /// dangling pointer from the cold path): the same work as the provided method, in the shape
    /// the optimizer lays out best in a caller's loop: through `core_bump` and `core_alloc_slow`,
    /// a loop of `alloc(u64)` takes one jump more per call.
    #[inline(always)]
    fn core_alloc(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        self.alloc_block(layout)
    }

    #[inline(always)]
    unsafe fn core_deallocate(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { self.deallocate_impl(p, layout) }
    }

    #[inline(always)]
    unsafe fn core_grow(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, Failure> {
        // SAFETY: forwarded from the caller.
        if unsafe { self.grow_in_place(p, old, new, false) } {
            return Ok(p);
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.grow_moving(p, old, new) }
    }

    #[inline(always)]
    unsafe fn core_shrink(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.shrink_impl(p, old, new, false) }
    }

    #[inline(always)]
    unsafe fn core_shrink_settled(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.shrink_impl(p, old, new, true) }
    }

    /// The shared path does not rewind padding: other threads may have bumped blocks between a
    /// mark and the block that follows it, so only the block itself is given back.
    #[inline(always)]
    fn core_stats(&self) -> ArenaStats {
        self.stats()
    }

    fn core_mark(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn core_rewind(&self, _start: NonNull<u8>, _mark: usize, _align: usize) {}
}
