//! The headless piece (docs/DESIGN.md §6.2): a `LocalArena`'s first piece, a range of its
//! thread's piece of the shared arena lent without a chunk header.
//!
//! A handle that lives for one short job needs a few hundred bytes. A chunk of its own would
//! cost a header and a trip through the chunk path for each handle; the headless piece costs
//! neither. The position bumps in it as in a chunk (`chunk` is `None`, `headless` its start),
//! its last block grows in place while the source lengthens the range
//! ([`ChunkSource::extend_chunk`]), and the handle gives its unused end back when it is
//! dropped, so that the next handle on the thread starts where this one's blocks end.
//!
//! The position leaves the piece, for good, when a request no longer fits it and the source
//! cannot lengthen it, or when a checkpoint is taken (a checkpoint must be able to come back to
//! its position, and the rest of the piece goes back to the source on leaving). The piece's
//! bytes in use stay counted in `used_before` beyond the chunk headers' counts, and
//! `headless_left` keeps its start for the chunk iteration. A handle has at most one headless
//! piece; its later pieces are chunks.

use core::alloc::Layout;
use core::ptr::NonNull;

use super::{RawArena, SENTINEL};
use crate::arena::chunk::{ChunkSource, chunks_until};
use crate::arena::poison::poison;

impl RawArena {
    /// Serves `layout`, which the position could not bump, with the headless piece: a new one
    /// when the arena never had a piece and its source lends one
    /// ([`ChunkSource::lend_piece`]), else the current one lengthened in place. `None` when
    /// neither can: the caller takes a chunk, and the position leaves the headless piece (if
    /// it is in one) once the chunk is taken (`enter_chunk`), so that a failure on the way
    /// changes nothing.
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_headless<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Option<NonNull<u8>> {
        if self.in_headless() {
            return self.lengthen_for(layout, src);
        }
        if self.head.get().is_some()
            || self.headless_left.get().is_some()
            || self.limit.get().is_some()
        {
            return None;
        }
        // The source may take a piece from its backing allocator, which may allocate in this
        // arena: the nested request must take no cold path meanwhile.
        let (start, end) = self.backing_call.run(|| src.lend_piece(layout))?;
        self.enter_headless(start, end);
        self.bump(layout)
    }

    /// Makes `[start, end)`, a range lent by the source, the position's headless piece.
    pub(super) fn enter_headless(&self, start: NonNull<u8>, end: NonNull<u8>) {
        debug_assert!(self.chunk.get().is_none() && self.ptr.get() == SENTINEL);
        debug_assert!(self.head.get().is_none() && self.headless_left.get().is_none());
        poison(start.as_ptr(), end.as_ptr());
        self.headless.set(start);
        self.ptr.set(start);
        self.end.set(end);
        let size = end.addr().get() - start.addr().get();
        self.held.set(self.held.get() + size);
        // The next piece is sized as if this one had been the first chunk; and the first-chunk
        // path, which sets no headless piece aside, is not taken (it needs `growth == 0`).
        self.growth.set(self.growth.get().saturating_add(size));
    }

    /// Whether the position is in the headless piece.
    #[inline]
    pub(super) fn in_headless(&self) -> bool {
        self.headless.get() != SENTINEL
    }

    /// Moves the position out of the headless piece, for good: its bytes in use stay counted
    /// in `used_before`, and its unused end goes back to the source when the source takes it.
    /// The position is then that of an arena with no chunk (until the caller enters one).
    /// Nothing when the position is not in the headless piece.
    pub(super) fn leave_headless<S: ChunkSource + ?Sized>(&self, src: &S) {
        if !self.in_headless() {
            return;
        }
        let (start, ptr, end) = (self.headless.get(), self.ptr.get(), self.end.get());
        self.note_peak(self.in_use());
        self.used_before
            .set(self.used_before.get() + (ptr.addr().get() - start.addr().get()));
        self.headless_left.set(Some(start));
        self.headless.set(SENTINEL);
        self.ptr.set(SENTINEL);
        self.end.set(SENTINEL);
        // SAFETY: `[ptr, end)` is the unused end of the headless piece, which the source lent
        // to this arena and which no block covers; the position no longer reaches it.
        if unsafe { src.give_back(ptr, end) } {
            self.held
                .set(self.held.get() - (end.addr().get() - ptr.addr().get()));
        }
    }

    /// The headless piece's start and bytes in use, if it holds any: the piece the position is
    /// in, or the one it left (whose bytes are what `used_before` counts beyond the headers of
    /// the chunks from `head` to the current one).
    pub(crate) fn headless_in_use(&self) -> Option<(NonNull<u8>, usize)> {
        let (start, used) = if self.in_headless() {
            let start = self.headless.get();
            (start, self.ptr.get().addr().get() - start.addr().get())
        } else {
            let start = self.headless_left.get()?;
            let in_chunks: usize = match (self.head.get(), self.chunk.get()) {
                (Some(head), Some(cur)) => {
                    chunks_until(head, cur).map(|c| c.used()).sum::<usize>() + cur.used()
                }
                _ => 0,
            };
            (start, self.used_before.get() - in_chunks)
        };
        (used != 0).then_some((start, used))
    }
}
