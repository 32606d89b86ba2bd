//! The large blocks of a [`RawArena`] (docs/DESIGN.md §3.4, over `crate::arena::large`): taking,
//! freeing and finding them, and what the arena holds from the backing allocator against its limit.

use core::alloc::Layout;
use core::ptr::NonNull;

use super::RawArena;
use crate::arena::budget::Budget;
use crate::arena::chunk::{ChunkSource, HEADER_SIZE, min_chunk_size};
use crate::arena::large::{Large, block_layout};
use crate::arena::large_spares::Spares;
use crate::arena::poison::poison;
use crate::error::Failure;

impl RawArena {
    /// Bytes held from the backing allocator: chunks and large blocks (in use or kept).
    pub(super) fn held_total<S: ChunkSource + ?Sized>(&self, src: &S) -> usize {
        self.held.get() + self.large.bytes() + src.kept().map_or(0, Spares::bytes)
    }

    /// What the arena holds from the backing allocator (with what `src` keeps for it), and its
    /// limit.
    pub(super) fn budget<S: ChunkSource + ?Sized>(&self, src: &S) -> Budget {
        Budget {
            limit: self.limit.get(),
            held: self.held_total(src),
        }
    }

    /// Fails when `more` bytes from the backing allocator would pass the limit.
    pub(super) fn check_limit<S: ChunkSource + ?Sized>(
        &self,
        more: usize,
        src: &S,
    ) -> Result<(), Failure> {
        self.budget(src).admit(more)
    }

    /// Whether a reset planned a chunk that holds `layout`, a block that grows: the last block of
    /// a chunk that grew out of it last cycle made the reset plan one that holds it where it
    /// starts (see `retire_large`), and moving there it grows on in place, no large block.
    pub(super) fn plan_holds(&self, layout: Layout) -> bool {
        let plan = self.plan.get();
        plan != 0 && min_chunk_size(layout).is_some_and(|own| own - HEADER_SIZE <= plan)
    }

    /// Gives a large block to `layout`, a request of at least the threshold: a kept one that
    /// fits (see `large_spares`), else a new one. `growing`: the request is a block that grows
    /// (it may take a kept block of any size that holds it, and grows on in place there).
    /// Changes nothing when it fails (or the backing allocator unwinds).
    #[inline(never)]
    pub(super) fn alloc_large<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        growing: bool,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        let (block, _) = block_layout(layout).ok_or(Failure::CapacityOverflow)?;
        let b = match src.kept().and_then(|k| k.take(block, growing)) {
            Some(kept) => kept,
            None => {
                let p = self.take_large(block, 0, growing, src)?;
                // SAFETY: a fresh block of at least `block`'s layout, ours alone.
                unsafe { Large::init_taken(p, block) }
            }
        };
        self.large.push(b);
        self.note_large(src);
        Ok(b.data())
    }

    /// Records, at a slow point, what the cycle has in use (see `retention` and
    /// `large_spares`).
    pub(super) fn note_large<S: ChunkSource + ?Sized>(&self, src: &S) {
        if let Some(k) = src.kept() {
            k.note(self.large.bytes());
        }
        self.note_peak(self.in_use());
    }

    /// Takes a block of at least `block`'s layout (from `block_layout`) from `src` for a large
    /// block (see [`ChunkSource::allocate_large`]), within the limit with `detached` bytes held
    /// beside those counted (a large block being resized, out of the list meanwhile); not
    /// linked. Should the limit refuse it while large blocks are kept for reuse, those go back
    /// first.
    pub(super) fn take_large<S: ChunkSource + ?Sized>(
        &self,
        block: Layout,
        detached: usize,
        growing: bool,
        src: &S,
    ) -> Result<NonNull<[u8]>, Failure> {
        let more = block.size().saturating_add(detached);
        // Kept blocks smaller than this one (none of them could take it) make room for it
        // within the allowance.
        // SAFETY: `src` is the arena's source (the caller).
        unsafe { self.make_room(more, block.size(), src) };
        if self.check_limit(more, src).is_err() {
            // SAFETY: `src` is the arena's source (the caller).
            unsafe { self.release_spares(src) };
        }
        self.check_limit(more, src)?;
        self.backing_call.run(|| src.allocate_large(block, growing))
    }

    /// Gives `b`, unlinked from the list, back to the backing allocator.
    ///
    /// # Safety
    /// `b` came from `src`, is unlinked, and its data is not used again.
    pub(super) unsafe fn release_large<S: ChunkSource + ?Sized>(&self, b: Large, src: &S) {
        // SAFETY: the block came from `src` with this layout (the caller).
        self.backing_call
            .run(|| unsafe { src.deallocate_large(b.block(), b.layout()) });
    }

    /// A large block freed within the cycle: kept for reuse within the allowance (see
    /// `large_spares`), else given back.
    ///
    /// # Safety
    /// As for [`release_large`](Self::release_large).
    pub(super) unsafe fn retire_large<S: ChunkSource + ?Sized>(&self, b: Large, src: &S) {
        if b.origin() != 0 {
            // The last block of a chunk that grew out of it: the cycle needed a chunk that holds
            // it where it started, which the next reset sizes, so that the next cycle's block
            // grows in place there (no copy, no large block). It goes back.
            let need = (b.origin() - 1).saturating_add(b.data_size());
            self.note_peak(need);
            src.note_need(need);
            // SAFETY: forwarded from the caller.
            return unsafe { self.release_large(b, src) };
        }
        let Some(kept) = src.kept() else {
            // Nothing is kept on this source: the block goes back at once.
            // SAFETY: forwarded from the caller.
            return unsafe { self.release_large(b, src) };
        };
        let size = b.layout().size();
        // `b` stays listed and counted as in use while kept blocks go back to make room for it
        // (as in `SyncArena`): should one of those calls unwind, it is still the arena's, and
        // the reset or the drop gives it back. It must stay allocated then (a resize that moved
        // it unwinds while its caller still holds it).
        self.large.reinsert(b);
        // SAFETY: forwarded from the caller.
        unsafe { self.make_room(0, size, src) };
        self.large.unlink(b);
        if let Some(b) = kept.offer(b, self.large.bytes()) {
            // SAFETY: forwarded from the caller.
            unsafe { self.release_large(b, src) };
        }
    }

    /// Gives back the smallest kept blocks below `below` bytes while the large blocks in use and
    /// kept, with `more` bytes besides, pass the allowance (see `large_spares`).
    ///
    /// # Safety
    /// `src` is the arena's source.
    unsafe fn make_room<S: ChunkSource + ?Sized>(&self, more: usize, below: usize, src: &S) {
        let Some(kept) = src.kept() else { return };
        while let Some(b) = kept.make_room(self.large.bytes(), more, below) {
            // SAFETY: a kept block (not in use), unlinked just now, from `src`.
            unsafe { self.release_large(b, src) };
        }
    }

    /// Frees the large blocks made at or after `mark`, as [`retire_large`](Self::retire_large)
    /// does.
    ///
    /// # Safety
    /// None of them is used again; `src` is the arena's source.
    pub(super) unsafe fn release_large_since<S: ChunkSource + ?Sized>(&self, mark: u64, src: &S) {
        while let Some(b) = self.large.pop_since(mark) {
            // SAFETY: unlinked just now; the caller vouches for the rest.
            unsafe { self.retire_large(b, src) };
        }
    }

    /// A reset's large blocks: those in use join the kept ones, and the kept ones that the
    /// next cycles are not expected to need go back (see `large_spares`).
    ///
    /// # Safety
    /// No large block is used again; `src` is the arena's source.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn retire_all_large<S: ChunkSource + ?Sized>(&self, src: &S) {
        // Blocks that grew out of a chunk's end count as its need (see `retire_large`).
        while let Some(b) = self.large.blocks().find(|b| b.origin() != 0) {
            self.large.unlink(b);
            // SAFETY: unlinked just now; no block is used again (the caller).
            unsafe { self.retire_large(b, src) };
        }
        let Some(kept) = src.kept() else {
            // Nothing is kept on this source: the blocks go back.
            // SAFETY: no block is used again (the caller); `src` is the arena's source.
            return unsafe { self.release_large_since(0, src) };
        };
        kept.retire(&self.large);
        while let Some(b) = kept.surplus() {
            // SAFETY: a kept block, unlinked just now, from `src`.
            unsafe { self.release_large(b, src) };
        }
        kept.settle();
    }

    /// Gives every kept large block back.
    ///
    /// # Safety
    /// `src` is the arena's source.
    pub(crate) unsafe fn release_spares<S: ChunkSource + ?Sized>(&self, src: &S) {
        let Some(kept) = src.kept() else { return };
        while let Some(b) = kept.pop() {
            // SAFETY: a kept block (not in use), unlinked just now, from `src`.
            unsafe { self.release_large(b, src) };
        }
    }

    /// `deallocate` of a block that is not the last one, of at least the threshold: a large
    /// block is kept for reuse or goes back to the backing allocator, a bump block stays where
    /// it is.
    ///
    /// # Safety
    /// As for [`deallocate`](Self::deallocate).
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn deallocate_not_last<S: ChunkSource + ?Sized>(
        &self,
        p: NonNull<u8>,
        layout: Layout,
        src: &S,
    ) {
        match self.large.find(p, layout.align()) {
            Some(b) => {
                self.note_large(src);
                self.large.unlink(b);
                // SAFETY: the caller's block, not used again.
                unsafe { self.retire_large(b, src) };
            }
            None => poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size())),
        }
    }
}
