//! [`RawFront`], the [`RawArena`]'s answers to the shared resize ([`Front`], docs/DESIGN.md §2),
//! and the re-placing of the last block it asks for (`move_last`, lengthening a `LocalArena`'s
//! piece in place).

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::{self, NonNull};

use super::{RawArena, dangling};
use crate::arena::chunk::{CHUNK_ALIGN, ChunkSource};
use crate::arena::large::{LARGE_THRESHOLD, Large};
use crate::arena::poison::poison;
use crate::arena::resize::Front;
use crate::error::Failure;

impl RawArena {
    /// Re-places the last block `[start, ptr)` for `new`, keeping its first `keep` bytes: first
    /// in the same chunk (the block is released for that bump, so the new place may overlap it
    /// and the bytes are moved with `ptr::copy`), else in another chunk. On failure nothing
    /// changes.
    ///
    /// The block stays allocated while the backing allocator is called for another chunk: that
    /// call may unwind, or allocate in this arena, and must find every live block where it is.
    /// Once the block has moved to another chunk it is no longer last, so its bytes stay used
    /// until the chunk is reused.
    ///
    /// # Safety
    /// `[start, ptr)` is the last block of the current scope, with `keep` initialised-or-not bytes
    /// the caller owns, and `keep <= new.size()`.
    unsafe fn move_last<S: ChunkSource + ?Sized>(
        &self,
        start: NonNull<u8>,
        new: Layout,
        keep: usize,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        let saved = self.ptr.get();
        self.ptr.set(start);
        if new.size() == 0 {
            // The old block is released, and an empty one takes no room (`keep` is 0).
            poison(start.as_ptr(), saved.as_ptr());
            return Ok(dangling(new.align()));
        }
        // A probe in the way moves up here, so that the block grows where it is.
        let bumped = match self.bump(new) {
            None if self.probe.get().is_some() => self.pass_probe(new),
            q => q,
        };
        if let Some(q) = bumped {
            // SAFETY: both ranges lie in the current chunk (`q >= start`); `ptr::copy` allows
            // them to overlap. `start` is our own pointer, valid for the old block.
            unsafe { ptr::copy(start.as_ptr(), q.as_ptr(), keep) };
            // What the old block covered outside the new one is free again.
            poison(start.as_ptr(), q.as_ptr());
            poison(self.ptr.get().as_ptr(), saved.as_ptr());
            return Ok(q);
        }
        // A `LocalArena`'s piece grows in place into the shared chunk while nothing was placed
        // after it, as an arena's chunk holds its last block. Asked first, so that an arena
        // over a backing allocator has no call here.
        if src.extends_chunks() {
            if let Some(q) = self.lengthen_for(new, src) {
                if q != start {
                    // SAFETY: both ranges lie in the current chunk (`q > start`); `ptr::copy`
                    // allows them to overlap.
                    unsafe { ptr::copy(start.as_ptr(), q.as_ptr(), keep) };
                    poison(start.as_ptr(), q.as_ptr());
                }
                return Ok(q);
            }
        }
        // The old block is last again before anything else runs.
        self.ptr.set(saved);
        let chunk = self.chunk.get();
        // What the chunk (or the headless piece) left behind will have recorded as used if the
        // old block is still its last one then (a nested request may have bumped after it
        // meanwhile).
        let used_with_block = self
            .current_start()
            .map(|s| self.used_before.get() + (saved.addr().get() - s.addr().get()));
        // The chunk bytes in use before the block.
        let before = used_with_block.map_or(0, |u| u - (saved.addr().get() - start.addr().get()));
        let q = self.alloc_slow(new, keep < new.size(), src)?;
        if new.size() >= LARGE_THRESHOLD {
            // A large block now (see `alloc_slow`), the newest: a chunk with room for it after
            // `before` bytes would have held it where it grew, and a reset sizes the next
            // chunk so (see `retire_large`).
            if let Some(b) = self.large.newest().filter(|b| b.data() == q) {
                b.set_origin(before + 1);
            }
        }
        // SAFETY: `q` is a fresh block in another chunk, so the ranges cannot overlap; the old
        // block is still allocated and holds the caller's bytes.
        unsafe { ptr::copy_nonoverlapping(start.as_ptr(), q.as_ptr(), keep) };
        poison(start.as_ptr(), saved.as_ptr());
        if self.chunk.get() == chunk && self.ptr.get() == saved {
            // `q` is a large block: the old block is still the current chunk's last one.
            self.ptr.set(start);
        } else if used_with_block == Some(self.used_before.get()) {
            // The chunk was left with the old block last: it no longer counts as used, in the
            // total or in the chunk's header (a headless piece has none: its count is what
            // `used_before` holds beyond the headers).
            let size = saved.addr().get() - start.addr().get();
            self.used_before.set(self.used_before.get() - size);
            // (The request moved on to another chunk: in the same one, `ptr` would be `saved`.)
            debug_assert!(self.chunk.get() != chunk);
            if let Some(c) = chunk {
                c.set_used(c.used() - size);
            }
        }
        Ok(q)
    }

    /// Lengthens the current chunk (or the headless piece) in place when its source hands it
    /// the bytes after it ([`ChunkSource::extend_chunk`]: a `LocalArena`'s piece that ends at
    /// the shared cursor or at its thread's piece's),
    /// by its own size (up to the growth cap) or else by what `layout` lacks at the position
    /// (rounded to [`CHUNK_ALIGN`]), then bumps `layout`. `None`, with nothing changed,
    /// otherwise: no chunk, a probe or a scope holding the end, the limit, or a source that
    /// does not extend.
    #[cold]
    #[inline(never)]
    pub(super) fn lengthen_for<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Option<NonNull<u8>> {
        let end = self.end.get();
        // The block the position is in, as the source handed it out: the current chunk (whose
        // end no probe or scope holds), or the headless piece.
        let (chunk, base, size) = match self.chunk.get() {
            Some(c) if end == c.end() => (Some(c), c.0.cast(), c.size()),
            Some(_) => return None,
            None if self.in_headless() => {
                let base = self.headless.get();
                (None, base, end.addr().get() - base.addr().get())
            }
            None => return None,
        };
        let wanted = self
            .ptr
            .get()
            .addr()
            .get()
            .checked_next_multiple_of(layout.align())?
            .checked_add(layout.size())?;
        let needed = wanted
            .checked_sub(end.addr().get())?
            .checked_next_multiple_of(CHUNK_ALIGN)?;
        // Room to keep growing, as a chunk taken for a growing block has: the chunk doubles (up
        // to the growth cap) when the source has that much, else it takes what the source has
        // (so that a block growing by small steps takes this path once per lengthening, not
        // once per step), else what is needed.
        let ample = needed.max(size.min(self.growth_cap) & !(CHUNK_ALIGN - 1));
        let extended = |more: usize| {
            self.check_limit(more, src).is_ok()
                // SAFETY: `[base, base + size)` is the current chunk's block or the headless
                // piece, taken from `src` (the arena's only source), at its current length.
                && unsafe { src.extend_chunk(base, size, more) }
        };
        let more = if extended(ample) {
            ample
        } else {
            let room = src.spare_room().min(ample) & !(CHUNK_ALIGN - 1);
            if room > needed && extended(room) {
                room
            } else if ample != needed && extended(needed) {
                needed
            } else {
                return None;
            }
        };
        let new_end = match chunk {
            Some(c) => {
                // SAFETY: the source handed the `more` bytes after the block to it.
                unsafe { c.lengthen(more) };
                c.end()
            }
            None => {
                // The next chunk is sized as if the headless piece had been taken at its new
                // length (see `enter_headless`).
                self.growth.set(self.growth.get().saturating_add(more));
                // SAFETY: the source handed the `more` bytes after the piece to it: `end + more`
                // is in the same block of the source's.
                unsafe { end.add(more) }
            }
        };
        self.held.set(self.held.get() + more);
        self.end.set(new_end);
        poison(end.as_ptr(), new_end.as_ptr());
        self.bump(layout)
    }
}

/// The arena's answers to the shared resize ([`resize::Front`](Front)), with its source. A large
/// block being resized is out of the list meanwhile; its bytes (`detached`) still count against
/// the limit.
pub(super) struct RawFront<'a, S: ?Sized> {
    raw: &'a RawArena,
    src: &'a S,
    detached: Cell<usize>,
}

impl<'a, S: ChunkSource + ?Sized> RawFront<'a, S> {
    #[inline(always)]
    pub(super) fn new(raw: &'a RawArena, src: &'a S) -> Self {
        RawFront {
            raw,
            src,
            detached: Cell::new(0),
        }
    }

    /// `b` is back in the list, or gone: its bytes are counted there, or no longer held.
    fn attach(&self, b: Large) {
        self.detached.set(self.detached.get() - b.layout().size());
    }
}

impl<S: ChunkSource + ?Sized> Front for RawFront<'_, S> {
    #[inline(always)]
    fn unlink_large(&self, p: NonNull<u8>, layout: Layout) -> Option<Large> {
        if layout.size() < LARGE_THRESHOLD {
            return None;
        }
        let raw = self.raw;
        let b = raw.large.find(p, layout.align())?;
        // The cycle had the block in use up to now (see `retention`).
        raw.note_large(self.src);
        raw.large.unlink(b);
        self.detached.set(self.detached.get() + b.layout().size());
        Some(b)
    }

    #[inline(always)]
    unsafe fn move_last(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        keep: usize,
    ) -> Option<Result<NonNull<u8>, Failure>> {
        let start = self.raw.last_start(p, old.size())?;
        // SAFETY: `[start, ptr)` is the last block of the scope, holding the caller's bytes, and
        // `keep <= new.size()` (the caller).
        Some(unsafe { self.raw.move_last(start, new, keep, self.src) })
    }

    #[inline(always)]
    unsafe fn move_to_fresh(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        keep: usize,
        grows: bool,
    ) -> Result<NonNull<u8>, Failure> {
        // A block that reaches the threshold moves to a large block, never to the chunk, where
        // it would leave its old bytes behind at each later move.
        let q = if new.size() >= LARGE_THRESHOLD {
            self.raw.alloc_large(new, grows, self.src)?
        } else {
            self.raw.alloc_block(new, self.src)?
        };
        // SAFETY: `q` is a fresh block after (or outside) every live block, so it does not
        // overlap `p`; `p` is readable and `q` writable for `keep` bytes (the caller).
        unsafe { ptr::copy_nonoverlapping(p.as_ptr(), q.as_ptr(), keep) };
        // Not the last block (or it would have been moved by `move_last`): its bytes stay used
        // until the chunk is reused.
        poison(p.as_ptr(), p.as_ptr().wrapping_add(old.size()));
        Ok(q)
    }

    fn alloc_in_chunks(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        self.raw.alloc_block(layout, self.src)
    }

    fn take_large(&self, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        self.raw
            .take_large(block, self.detached.get(), false, self.src)
    }

    unsafe fn resize_large_block(&self, b: Large, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        let old_block = b.layout();
        if block.size() > old_block.size() {
            // The block's bytes are among the detached ones until it is linked back.
            self.raw.check_limit(
                self.detached.get() + (block.size() - old_block.size()),
                self.src,
            )?;
        }
        let resized = self.raw.backing_call.run(|| {
            // SAFETY: `b`'s block came from `src` with `old_block` (the caller); `block` has its
            // alignment.
            unsafe { self.src.resize_large(b.block(), old_block, block) }
        })?;
        self.detached
            .set(self.detached.get() - old_block.size() + block.size());
        Ok(resized)
    }

    fn has_kept(&self) -> bool {
        self.src.kept().is_some_and(|k| !k.is_empty())
    }

    fn take_kept(&self, block: Layout) -> Option<Large> {
        let b = self.src.kept()?.take(block, true)?;
        // Out of every list until it is linked: counted as detached meanwhile.
        self.detached.set(self.detached.get() + b.layout().size());
        Some(b)
    }

    unsafe fn free_large(&self, b: Large) {
        self.attach(b);
        // SAFETY: forwarded from the caller.
        unsafe { self.raw.retire_large(b, self.src) };
    }

    fn link_large(&self, b: Large) {
        self.attach(b);
        self.raw.large.reinsert(b);
        self.raw.note_large(self.src);
    }

    fn link_large_for(&self, old: Large, new: Large, kept: bool) {
        if kept {
            // It came from the kept blocks (`take_kept`): the list counts it from now on.
            self.attach(new);
        }
        // `old`'s bytes are counted by the limit until it is freed: `detached` keeps them.
        self.raw.large.reinsert_for(old, new);
        self.raw.note_large(self.src);
    }
}
