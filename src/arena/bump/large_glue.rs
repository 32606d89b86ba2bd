//! The large blocks of a [`RawArena`] (docs/DESIGN.md §3.4, over `crate::arena::large`): taking,
//! freeing and finding them, and what the arena holds from the backing allocator against its limit.

use core::alloc::Layout;
use core::ptr::NonNull;

use super::RawArena;
use crate::arena::budget::Budget;
use crate::arena::chunk::{ChunkSource, HEADER_SIZE, min_chunk_size};
use crate::arena::large::{Large, block_layout};
use crate::arena::poison::poison;
use crate::error::Failure;

impl RawArena {
    /// Bytes held from the backing allocator: chunks and large blocks.
    pub(super) fn held_total(&self) -> usize {
        self.held.get() + self.large.bytes()
    }

    /// What the arena holds from the backing allocator, and its limit.
    pub(super) fn budget(&self) -> Budget {
        Budget {
            limit: self.limit.get(),
            held: self.held_total(),
        }
    }

    /// Fails when `more` bytes from the backing allocator would pass the limit.
    pub(super) fn check_limit(&self, more: usize) -> Result<(), Failure> {
        self.budget().admit(more)
    }

    /// Whether a reset planned a chunk that holds `layout`: a loop whose cycles needed more than
    /// the chunk kept (large blocks included) then settles in the planned chunk, where even its
    /// large requests are bump blocks, rather than taking and freeing large blocks every cycle.
    pub(super) fn plan_holds(&self, layout: Layout) -> bool {
        let plan = self.plan.get();
        plan != 0 && min_chunk_size(layout).is_some_and(|own| own - HEADER_SIZE <= plan)
    }

    /// Takes a large block for `layout`, a request of at least the threshold that does not fit
    /// the current chunk. Changes nothing when it fails (or the backing allocator unwinds).
    #[inline(never)]
    pub(super) fn alloc_large<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        let (block, _) = block_layout(layout).ok_or(Failure::CapacityOverflow)?;
        let p = self.take_large(block, 0, src)?;
        // SAFETY: a fresh block of `block`'s layout, ours alone.
        let b = unsafe { Large::init(p.cast(), block) };
        self.large.push(b);
        self.note_peak(self.in_use());
        Ok(b.data())
    }

    /// Takes a block of `block`'s layout (from `block_layout`) from `src` for a large block,
    /// within the limit with `detached` bytes held beside those counted (a large block being
    /// resized, out of the list meanwhile); not linked.
    pub(super) fn take_large<S: ChunkSource + ?Sized>(
        &self,
        block: Layout,
        detached: usize,
        src: &S,
    ) -> Result<NonNull<[u8]>, Failure> {
        self.check_limit(block.size().saturating_add(detached))?;
        self.backing_call.run(|| src.allocate_large(block))
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

    /// Frees the large blocks made at or after `mark` (every one for 0).
    ///
    /// # Safety
    /// None of them is used again; `src` is the arena's source.
    pub(super) unsafe fn release_large_since<S: ChunkSource + ?Sized>(&self, mark: u64, src: &S) {
        while let Some(b) = self.large.pop_since(mark) {
            // SAFETY: unlinked just now; the caller vouches for the rest.
            unsafe { self.release_large(b, src) };
        }
    }

    /// `deallocate` of a block that is not the last one, of at least the threshold: a large
    /// block goes back to the backing allocator, a bump block stays where it is.
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
                self.note_peak(self.in_use());
                self.large.unlink(b);
                // SAFETY: the caller's block, not used again.
                unsafe { self.release_large(b, src) };
            }
            None => poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size())),
        }
    }
}
