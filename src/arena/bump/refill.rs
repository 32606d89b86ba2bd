//! The cold path of [`RawArena`] (docs/DESIGN.md §3.2): a request the current chunk cannot hold
//! meets a reset's probe, reuses a spare chunk, takes a new chunk or a large block; and the first
//! chunk `with_capacity` reserves.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::AllocError;

use super::rules::refuse;
use super::{Probe, RawArena, address_space_ok};
use crate::arena::chunk::{
    CHUNK_ALIGN, Chunk, ChunkSource, FIRST_CHUNK_BLOCK, FIRST_CHUNK_ROOM, FIRST_CHUNK_SIZE,
    NewChunk, chunk_size_for_capacity, chunks_until, min_chunk_size, new_chunk_size,
};
use crate::arena::large::LARGE_THRESHOLD;
use crate::arena::poison::poison;
use crate::arena::retention::next_probe;
use crate::error::Failure;

impl RawArena {
    /// Finds room for `layout` in a spare chunk or a new one and bumps it there; `slack` asks a
    /// new chunk for room to keep growing the block. Changes nothing when it fails.
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc_slow<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        slack: bool,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        self.alloc_slow_inline(layout, slack, src)
    }

    /// [`alloc_slow`](Self::alloc_slow) for the `Allocator` methods: its failure is answered by
    /// [`refuse`] here, on the cold path, so that their inlined fast paths carry nothing for it.
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_slow_or_refuse<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, AllocError> {
        self.alloc_slow_inline(layout, false, src)
            .map_err(|f| refuse(f, || src))
    }

    /// A large block for an `Allocator` request of at least the threshold (see
    /// `allocator_alloc`), its failure answered by [`refuse`].
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_large_or_refuse<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, AllocError> {
        // As in `alloc_slow_inline`: a request nested in a backing call changes nothing.
        if self.backing_call.in_progress() {
            return Err(refuse(Failure::Reentered, || src));
        }
        self.alloc_large(layout, false, src)
            .map_err(|f| refuse(f, || src))
    }

    /// The body of [`alloc_slow`](Self::alloc_slow) and
    /// [`alloc_slow_or_refuse`](Self::alloc_slow_or_refuse).
    #[inline(always)]
    fn alloc_slow_inline<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        slack: bool,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        // Its callers, `alloc`, `allocate` and `move_last`, answer empty layouts themselves.
        debug_assert!(layout.size() != 0);
        // A probe is met before anything else: past it, the request is a bump like any other.
        if self.probe.get().is_some() {
            if let Some(p) = self.pass_probe(layout) {
                return Ok(p);
            }
        }
        // A backing allocator that allocates in the arena it backs reaches this point while the
        // outer call waits for it: the outer call has read the chunk ring and will link its new
        // chunk there, so the nested request must not change it.
        if self.backing_call.in_progress() {
            return Err(Failure::Reentered);
        }
        // A handle's headless piece, new or lengthened (see `headless`). Asked of a source that
        // extends chunks only, so that an arena over a backing allocator has no call here.
        if self.chunk.get().is_none() && src.extends_chunks() && layout.size() < LARGE_THRESHOLD {
            if let Some(p) = self.alloc_headless(layout, src) {
                return Ok(p);
            }
        }
        // A small dispatcher, so that the first allocation of an arena does not pay for the
        // general path's stack frame (a layout the first chunk holds is never large).
        if self.chunk.get().is_none() && self.first_chunk_holds(layout) {
            self.alloc_first(layout, src)
        } else if layout.size() >= LARGE_THRESHOLD && !(slack && self.plan_holds(layout)) {
            self.alloc_large(layout, slack, src)
        } else {
            self.refill(layout, slack, src)
        }
    }

    /// The general refill path of [`alloc_slow`](Self::alloc_slow).
    #[inline(never)]
    fn refill<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        slack: bool,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        let current = self.chunk.get();
        if let Some(cur) = current {
            // Reuse the first spare that fits (spares are the chunks a finished scope took).
            // The walk visits each spare once, so it terminates; spares too small for this
            // request stay where they are for later, smaller ones.
            if let Some(c) = self.spares(cur).find(|c| c.fits(layout)) {
                if cur.next() != c {
                    c.unlink();
                    cur.insert_after(c);
                }
                return self.enter_chunk(c, layout, src);
            }
        }
        let c = self.take_chunk(layout, slack, src)?;
        if let Some(cur) = current {
            cur.insert_after(c);
        }
        self.enter_chunk(c, layout, src)
    }

    /// Moves the probe up past a request that met it (see `retention`): by a step, or to what
    /// `layout` needs at the position, up to the chunk's own end; then bumps `layout` there.
    /// `None` when the probe is not what stopped the request: the position is on another chunk or
    /// parked there by a scope, the probe has reached the chunk's end, or the request does not
    /// fit the chunk even so (the probe stays).
    #[cold]
    #[inline(never)]
    pub(super) fn pass_probe(&self, layout: Layout) -> Option<NonNull<u8>> {
        let probe = self.holding_probe()?;
        let c = probe.chunk;
        let start = c.start().addr().get();
        let capacity = c.end().addr().get() - start;
        if probe.reached() == capacity {
            return None;
        }
        // What the request needs of the chunk, from its start: the position, the padding that
        // aligns it, and the size.
        let at = self.ptr.get().addr().get();
        let wanted = (at - start)
            .saturating_add(at.wrapping_neg() & (layout.align() - 1))
            .saturating_add(layout.size());
        if wanted > capacity {
            // It goes elsewhere (a large block, another chunk) and leaves the probe where it is.
            return None;
        }
        let reached = next_probe(probe.reached(), wanted, capacity);
        // SAFETY: `reached <= capacity`, and the position, on `c`, is below the probe.
        unsafe { self.set_probe(c, reached, true) };
        self.bump(layout)
    }

    /// Holds the end of `c`, the current chunk, at `reached` bytes from its start: a probe (see
    /// `retention`), `met` when a request has met it.
    ///
    /// # Safety
    /// `reached <= c.capacity()`, and the position is on `c`, at most `reached` bytes from its
    /// start.
    pub(super) unsafe fn set_probe(&self, c: Chunk, reached: usize, met: bool) {
        debug_assert!(self.chunk.get() == Some(c) && reached <= c.capacity());
        // SAFETY: `reached <= c.capacity()` (the caller): inside the chunk's usable bytes, from
        // its own pointer.
        let end = unsafe { c.start().add(reached) };
        self.probe.set(Some(Probe { chunk: c, end, met }));
        self.end.set(end);
    }

    /// Whether `layout` is a request an empty arena serves with its first regular chunk, with no
    /// sizing to work out: no chunk was ever taken, no limit is set, and the layout fits a first
    /// regular chunk from its start.
    #[inline(always)]
    fn first_chunk_holds(&self, layout: Layout) -> bool {
        self.growth.get() == 0
            && self.limit.get().is_none()
            && layout.size() <= FIRST_CHUNK_ROOM
            && layout.align() <= CHUNK_ALIGN
    }

    /// The first allocation of an empty arena (see [`first_chunk_holds`](Self::first_chunk_holds)):
    /// takes the first regular chunk, the one the general path would size, and bumps `layout`.
    #[inline(always)]
    fn alloc_first<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        // Never in a headless piece: taking one counts it in `growth` (see `headless`).
        debug_assert!(!self.in_headless());
        let c = self.new_chunk(FIRST_CHUNK_BLOCK, src)?;
        // `take_block`'s bookkeeping, for an arena that held nothing (`growth == 0` means no
        // chunk was ever taken, so `held`, `chunks` and `head` are all empty).
        self.held.set(FIRST_CHUNK_BLOCK);
        self.chunks.set(1);
        self.head.set(Some(c));
        self.growth.set(FIRST_CHUNK_SIZE);
        self.set_current_new(c);
        // The chunk's data starts CHUNK_ALIGN-aligned with FIRST_CHUNK_ROOM bytes, so this never
        // fails; the error (rather than a panic) keeps the fallible API free of panicking paths.
        self.bump(layout).ok_or(Failure::CapacityOverflow)
    }

    /// The spare chunks after `cur`, the current chunk: the ring from `cur`'s successor up to
    /// `head`.
    pub(super) fn spares(&self, cur: Chunk) -> impl Iterator<Item = Chunk> {
        chunks_until(cur.next(), self.head.get().unwrap_or(cur))
    }

    /// Takes a new chunk for `layout` from the backing allocator, honouring the limit. The chunk
    /// is not linked yet.
    fn take_chunk<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        slack: bool,
        src: &S,
    ) -> Result<Chunk, Failure> {
        let planned = self.plan.get() != 0;
        match self.take_chunk_sized(layout, slack, planned, src) {
            Err(Failure::OutOfMemory(_)) if planned => {
                // The backing allocator refuses the cycle's whole need: the plan is dropped, and
                // the request gets a chunk sized as usual.
                self.plan.set(0);
                self.take_chunk_sized(layout, slack, false, src)
            }
            taken => {
                if taken.is_ok() {
                    self.plan.set(0);
                }
                taken
            }
        }
    }

    /// [`take_chunk`](Self::take_chunk), sized for the chunk a reset planned when `planned` and
    /// it holds the request, else by growth.
    fn take_chunk_sized<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        slack: bool,
        planned: bool,
        src: &S,
    ) -> Result<Chunk, Failure> {
        // A chunk a reset planned holds a whole cycle (see `retention`): sized by what the
        // cycles needed rather than by growth.
        let sized = || {
            new_chunk_size(NewChunk {
                layout,
                growth: self.growth.get().min(self.growth_cap),
                slack,
                own: false,
                plan: if planned { self.plan.get() } else { 0 },
                limit: self.budget(src).headroom(),
            })
        };
        let (mut size, mut nominal) = match sized() {
            // Large blocks kept for reuse never make a request fail at the limit: they go back.
            Err(Failure::LimitReached { .. }) if src.kept().is_some_and(|k| !k.is_empty()) => {
                // SAFETY: `src` is the arena's source (the caller).
                unsafe { self.release_spares(src) };
                sized()?
            }
            r => r?,
        };
        // A source holding a rest of its own (a `SyncArena`'s current chunk, for a handle's
        // piece) gives it when the request fits there (a growing block with room to grow to
        // twice its size). A piece sized by growth alone would leave that rest behind and take
        // a chunk of its own size: a new block of the backing allocator in every cycle whose
        // last piece outgrows what the reset kept.
        let room = src.spare_room();
        if room < size
            && room >= FIRST_CHUNK_SIZE
            && min_chunk_size(layout)
                .is_some_and(|own| own.saturating_mul(if slack { 2 } else { 1 }) <= room)
        {
            size = room;
            nominal = nominal.min(size);
        }
        self.take_block(size, nominal, src)
    }

    /// Takes a block of `size` bytes from `src` and makes it a chunk (not linked, not counted):
    /// the part of taking a chunk that does not touch the arena's state.
    ///
    /// The arena is marked busy while `src` runs, so that a nested request from it takes no
    /// cold path; should `src` unwind, the mark is cleared and nothing else has changed.
    fn new_chunk<S: ChunkSource + ?Sized>(&self, size: usize, src: &S) -> Result<Chunk, Failure> {
        let block_layout =
            Layout::from_size_align(size, CHUNK_ALIGN).map_err(|_| Failure::CapacityOverflow)?;
        let block = self.backing_call.run(|| src.allocate_chunk(block_layout))?;
        if !address_space_ok(block.cast::<u8>().addr().get(), size) {
            // SAFETY: the block came from `src` just now with `block_layout`, and is not used.
            unsafe {
                self.backing_call
                    .run(|| src.deallocate_chunk(block.cast(), block_layout))
            };
            return Err(Failure::OutOfMemory(block_layout));
        }
        // Use exactly the requested size (the allocator may return more): the limit stays exact
        // and `size` is a valid length to give back.
        let block = NonNull::slice_from_raw_parts(block.cast::<u8>(), size);
        // SAFETY: the block is fresh from the backing allocator, aligned to CHUNK_ALIGN, writable
        // for at least `size` bytes, and `size >= HEADER_SIZE` because every size we request
        // includes the header.
        let chunk = unsafe { Chunk::init(block) };
        poison(chunk.start().as_ptr(), chunk.end().as_ptr());
        Ok(chunk)
    }

    /// Takes a block of `size` bytes from the backing allocator and makes it a chunk, recording it
    /// in the statistics and the growth state.
    pub(super) fn take_block<S: ChunkSource + ?Sized>(
        &self,
        size: usize,
        nominal: usize,
        src: &S,
    ) -> Result<Chunk, Failure> {
        let chunk = self.new_chunk(size, src)?;
        self.held.set(self.held.get() + size);
        self.chunks.set(self.chunks.get() + 1);
        if self.head.get().is_none() {
            // The first chunk: the list had none, and it is not linked to anything yet.
            self.head.set(Some(chunk));
        }
        self.growth.set(self.growth.get().saturating_add(nominal));
        Ok(chunk)
    }

    /// Makes `c` the current chunk and bumps `layout` from its start. A position in the
    /// headless piece leaves it here, once the chunk is taken: a request that fails or unwinds
    /// on the way leaves the position where it was.
    fn enter_chunk<S: ChunkSource + ?Sized>(
        &self,
        c: Chunk,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        // The cycle needs at least what it has in use and this request (see `retention`).
        self.note_peak(self.in_use().saturating_add(layout.size()));
        self.leave_headless(src);
        self.leave_current();
        self.set_current(c);
        // `c` was chosen or sized so that `layout` fits from its start: this never fails, and the
        // error (rather than a panic) keeps the fallible API free of panicking paths.
        self.bump(layout).ok_or(Failure::CapacityOverflow)
    }

    /// Records the bytes used in the current chunk before moving past it: in `used_before`, and
    /// in the chunk's header (what the chunk iteration reads). A chunk a scope has parked on
    /// counts its fill already (the position is at its start): both add nothing then.
    pub(super) fn leave_current(&self) {
        if let Some(cur) = self.chunk.get() {
            let used = self.ptr.get().addr().get() - cur.start().addr().get();
            self.used_before.set(self.used_before.get() + used);
            cur.set_used(cur.used() + used);
        }
    }

    /// Makes `c` current with its whole capacity free: none of its bytes is counted in
    /// `used_before` (a spare's header may still hold the fill of an earlier visit).
    pub(super) fn set_current(&self, c: Chunk) {
        c.set_used(0);
        self.set_current_new(c);
    }

    /// [`set_current`](Self::set_current) for a chunk just made, whose header counts no byte yet.
    pub(super) fn set_current_new(&self, c: Chunk) {
        debug_assert_eq!(c.used(), 0);
        self.chunk.set(Some(c));
        self.ptr.set(c.start());
        self.end.set(c.end());
    }

    /// Takes a first chunk of at least `capacity` usable bytes (for `with_capacity`; none for 0).
    pub(crate) fn reserve_first<S: ChunkSource + ?Sized>(
        &self,
        capacity: usize,
        src: &S,
    ) -> Result<(), Failure> {
        debug_assert!(self.chunk.get().is_none());
        if capacity == 0 {
            return Ok(());
        }
        let (size, nominal) = chunk_size_for_capacity(capacity).ok_or(Failure::CapacityOverflow)?;
        self.budget(src).admit(size)?;
        let c = self.take_block(size, nominal, src)?;
        self.set_current_new(c);
        self.reserved.set(c.capacity());
        Ok(())
    }
}
