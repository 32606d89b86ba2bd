//! The bump core: the arena's position, its one-branch fast path, the cold refill path, and the
//! rules for growing, shrinking and freeing the last block.
//!
//! Invariants (docs/DESIGN.md §3):
//! - `ptr <= end`, both inside the current chunk's usable bytes (or both the dangling sentinel when
//!   there is no chunk), and both carry the provenance of the chunk's block. `end` is the chunk's
//!   own end, or below it: at a reset's probe (see `retention`), which only slow paths move, or at
//!   the chunk's start while a scope has parked there (see [`RawArena::enter_scope`]).
//! - No block of an enclosing scope ends at `ptr` while a child scope is active: entering a scope
//!   steps the position past the parent's last block (see [`RawArena::enter_scope`]), and the
//!   child's blocks all start after it. So "ends at `ptr`" alone identifies the current scope's
//!   last block, and a parent's block is never moved, grown in place or rolled back by a child.
//! - The chunks form a ring which, read from `head`, is `[used chunks …, current, spares …]`;
//!   `used_before` is the number of bytes used in the chunks before the current one, recorded when
//!   each was left. `reset` only moves `head` (to the largest chunk): no relinking.

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::{self, NonNull};

use allocator_api2::alloc::AllocError;

use super::budget::Budget;
use super::chunk::{
    CHUNK_ALIGN, Chunk, ChunkSource, FIRST_CHUNK_BLOCK, FIRST_CHUNK_ROOM, FIRST_CHUNK_SIZE,
    HEADER_SIZE, NewChunk, chunk_size_for_capacity, chunks_until, min_chunk_size, new_chunk_size,
    ring,
};
use super::large::{LARGE_THRESHOLD, Large, LargeList, block_layout};
use super::poison::{poison, unpoison};
use super::resize::{self, Front};
use super::retention::{Cycle, Decision, Plan, Recent, decide, next_probe, plan_for};
use crate::error::Failure;
use crate::reentry::BackingCall;

/// The state of an arena's bump position and chunk list. Every `Arena` starts with one (so that an
/// `ArenaRef` can find it at offset 0).
#[repr(C)]
pub(crate) struct RawArena {
    /// Next free byte of the current chunk.
    ptr: Cell<NonNull<u8>>,
    /// One past the last usable byte of the current chunk.
    end: Cell<NonNull<u8>>,
    /// The current chunk, `None` until the first chunk is taken.
    chunk: Cell<Option<Chunk>>,
    /// The first chunk of the ring, where `reset` starts (`None` exactly when no chunk is held).
    head: Cell<Option<Chunk>>,
    /// Bytes used in the chunks before the current one.
    used_before: Cell<usize>,
    /// Sum of the nominal sizes of the regular chunks taken; drives the next chunk's size.
    growth: Cell<usize>,
    /// Bytes currently held from the backing allocator, headers included.
    held: Cell<usize>,
    /// Chunks currently held.
    chunks: Cell<usize>,
    /// Cap on `held`, if any.
    limit: Cell<Option<usize>>,
    /// Whether the `Allocator` methods panic at the limit instead of returning `AllocError`
    /// (read through the arena's [`ChunkSource::panics_on_limit`], never on a fast path).
    panic_on_limit: Cell<bool>,
    /// Largest nominal size of a regular chunk (what the growth state may reach).
    growth_cap: usize,
    /// Set while the arena waits for its backing allocator: a nested request that needs the
    /// cold path is refused ([`RawArena::alloc_slow`]).
    backing_call: BackingCall,
    /// The large blocks (outside the chunks), newest first.
    large: LargeList,
    /// The most bump bytes this cycle was seen to use at a slow point (see `retention`).
    cycle_peak: Cell<usize>,
    /// The needs of the last cycles.
    recent: Cell<Recent>,
    /// Usable bytes of the next chunk taken, when a reset planned it (0: sized as usual).
    plan: Cell<usize>,
    /// Usable bytes reserved by `with_capacity`: a reset never keeps less.
    reserved: Cell<usize>,
    /// The probe a reset set on the chunk it kept, for the cycle after it (see `retention`).
    probe: Cell<Option<Probe>>,
}

/// A reset's probe: `end` is held at `end` on `chunk` (below the chunk's own end, or at it once
/// the cycle has reached it) while the position is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Probe {
    chunk: Chunk,
    end: NonNull<u8>,
    /// A request has met the probe (and moved it up).
    met: bool,
}

impl Probe {
    /// Bytes from the chunk's start to the probe: a bound on what the cycle reached there.
    fn reached(self) -> usize {
        self.end.addr().get() - self.chunk.start().addr().get()
    }
}

/// A saved position: what a scope restores on exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawCheckpoint {
    chunk: Option<Chunk>,
    ptr: NonNull<u8>,
    end: NonNull<u8>,
    /// What held `end` then, so that a restore gives back the room the position had and never
    /// more: the room above a parked position belongs to the parent.
    room: Room,
    used_before: usize,
    /// Large blocks made from this mark on are freed by a restore.
    large: u64,
}

/// What bounded the position's room when a checkpoint was taken. Only the first two may rise
/// while the checkpoint is out, and a restore follows them: everything after the checkpoint is
/// free again, so the room up to the bound as it is then is the position's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Room {
    /// The chunk's own end (a `LocalArena`'s piece may be lengthened since).
    Chunk,
    /// A reset's probe on the chunk (it only moves up).
    Probe,
    /// Exactly the checkpoint's `end`: a position parked by a scope (see
    /// [`RawArena::enter_scope`]), whose chunk's bytes are the parent's, or no chunk at all.
    Exact,
}

/// An aligned, non-null pointer for a zero-sized block.
#[inline]
pub(crate) fn dangling(align: usize) -> NonNull<u8> {
    // SAFETY: `align` is a power of two, hence non-zero.
    unsafe { NonNull::new_unchecked(ptr::without_provenance_mut(align)) }
}

/// Whether a chunk block at `addr` of `size` bytes lies where [`RawArena::bump`]'s end check
/// cannot overflow: on 64-bit targets, entirely below address `isize::MAX`. The mainstream 64-bit
/// systems keep user memory far below that (under 2^57), so this holds there in practice; a block
/// outside is given back and the request fails as out of memory, never an overflow.
#[inline]
pub(crate) fn address_space_ok(addr: usize, size: usize) -> bool {
    #[cfg(target_pointer_width = "64")]
    {
        // `addr + size <= isize::MAX`, written so that it cannot overflow (and, for the constant
        // size of a first chunk, is one compare).
        addr <= (isize::MAX as usize).saturating_sub(size)
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        let _ = (addr, size);
        true
    }
}

/// Whether a block at `p`, allocated with `old`, satisfies `new`'s alignment.
///
/// # Safety
/// `p` was allocated with `old`'s alignment (the `Allocator` contract for `grow` and `shrink`).
/// The address is then known to have its low bits clear, so when `new` asks for no more (the
/// layouts of a collection, the same element type on both sides) the test folds away.
#[inline(always)]
pub(crate) unsafe fn satisfies(p: NonNull<u8>, old: Layout, new: Layout) -> bool {
    let addr = p.addr().get();
    // SAFETY: forwarded from the caller.
    unsafe { core::hint::assert_unchecked(addr & (old.align() - 1) == 0) };
    addr & (new.align() - 1) == 0
}

/// Poisons the usable bytes of `chunks` (ASan builds only; nothing to do, and no walk, otherwise).
#[inline]
fn poison_chunks(chunks: impl Iterator<Item = Chunk>) {
    if cfg!(arena_pool_asan) {
        for x in chunks {
            poison(x.start().as_ptr(), x.end().as_ptr());
        }
    }
}

impl RawArena {
    /// An arena with no chunk: the sentinel position fails every non-empty bump.
    pub(crate) const fn new() -> RawArena {
        RawArena::with_growth_cap(usize::MAX)
    }

    /// Like [`new`](RawArena::new), with regular chunks of at most `cap` bytes (nominal; a
    /// `LocalArena` keeps its pieces small, so that little is left unused in the shared arena).
    pub(crate) const fn with_growth_cap(cap: usize) -> RawArena {
        let none = NonNull::dangling();
        RawArena {
            ptr: Cell::new(none),
            end: Cell::new(none),
            chunk: Cell::new(None),
            head: Cell::new(None),
            used_before: Cell::new(0),
            growth: Cell::new(0),
            held: Cell::new(0),
            chunks: Cell::new(0),
            limit: Cell::new(None),
            panic_on_limit: Cell::new(false),
            growth_cap: cap,
            backing_call: BackingCall::new(),
            large: LargeList::new(),
            cycle_peak: Cell::new(0),
            recent: Cell::new(Recent::new()),
            plan: Cell::new(0),
            reserved: Cell::new(0),
            probe: Cell::new(None),
        }
    }

    // ----- the fast path -----

    /// Bumps `layout` in the current chunk: the one branch of the fast path. An empty layout
    /// bumps too (by its alignment padding); [`alloc_block`](Self::alloc_block) gives empty layouts a
    /// dangling pointer before they get here.
    ///
    /// The end check cannot overflow. On 64-bit targets every chunk lies below address
    /// `isize::MAX` (checked when a chunk is taken, see [`address_space_ok`]), `pad < align` and
    /// `Layout` keeps `size <= isize::MAX - (align - 1)`, so `ptr + pad + size < 2^64`; the check
    /// is then a compare of the new position with `end`. Elsewhere the check compares
    /// `pad + size` (which cannot overflow) with the room left. The sentinel has `ptr == end`, so
    /// it fails every non-empty layout.
    #[inline(always)]
    pub(crate) fn bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        let ptr = self.ptr.get();
        let addr = ptr.addr().get();
        let mask = layout.align() - 1;
        // `start` and `new` are not yet known to be in bounds: computed with wrapping arithmetic,
        // used only after the check.
        #[cfg(target_pointer_width = "64")]
        let (fits, start, new) = {
            // Rounding up cannot overflow: `addr <= isize::MAX` and `mask < 2^63`.
            let pad = ((addr + mask) & !mask) - addr;
            let start = ptr.as_ptr().wrapping_add(pad);
            let new = start.wrapping_add(layout.size());
            (new.addr() <= self.end.get().addr().get(), start, new)
        };
        #[cfg(not(target_pointer_width = "64"))]
        let (fits, start, new) = {
            let pad = addr.wrapping_neg() & mask;
            let start = ptr.as_ptr().wrapping_add(pad);
            let fits = pad + layout.size() <= self.end.get().addr().get() - addr;
            (fits, start, start.wrapping_add(layout.size()))
        };
        if fits {
            unpoison(start, new);
            // SAFETY: `ptr + pad + size <= end` (without overflow, see above): both `start` and
            // `new` lie inside the current chunk's usable bytes (or equal `ptr` on the
            // sentinel), at or after `ptr`, which is non-null.
            unsafe {
                self.ptr.set(NonNull::new_unchecked(new));
                Some(NonNull::new_unchecked(start))
            }
        } else {
            None
        }
    }

    /// Allocates `layout`: an empty layout gets an aligned dangling pointer (and takes no room);
    /// any other is bumped, or takes the cold path. For a layout known at compile time the
    /// empty-layout test folds away.
    #[inline(always)]
    pub(crate) fn alloc_block<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        match self.bump(layout) {
            Some(p) => Ok(p),
            None => self.alloc_slow(layout, false, src),
        }
    }

    // ----- the cold path -----

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
    fn alloc_slow_or_refuse<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, AllocError> {
        self.alloc_slow_inline(layout, false, src)
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
        // A small dispatcher, so that the first allocation of an arena does not pay for the
        // general path's stack frame (a layout the first chunk holds is never large).
        if self.chunk.get().is_none() && self.first_chunk_holds(layout) {
            self.alloc_first(layout, src)
        } else if layout.size() >= LARGE_THRESHOLD && !self.plan_holds(layout) {
            self.alloc_large(layout, src)
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
                return self.enter_chunk(c, layout);
            }
        }
        let c = self.take_chunk(layout, slack, src)?;
        if let Some(cur) = current {
            cur.insert_after(c);
        }
        self.enter_chunk(c, layout)
    }

    /// Moves the probe up past a request that met it (see `retention`): by a step, or to what
    /// `layout` needs at the position, up to the chunk's own end; then bumps `layout` there.
    /// `None` when the probe is not what stopped the request: the position is on another chunk or
    /// parked there by a scope, the probe has reached the chunk's end, or the request does not
    /// fit the chunk even so (the probe stays).
    #[cold]
    #[inline(never)]
    fn pass_probe(&self, layout: Layout) -> Option<NonNull<u8>> {
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
    unsafe fn set_probe(&self, c: Chunk, reached: usize, met: bool) {
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
        let c = self.new_chunk(FIRST_CHUNK_BLOCK, src)?;
        // `take_block`'s bookkeeping, for an arena that held nothing (`growth == 0` means no
        // chunk was ever taken, so `held`, `chunks` and `head` are all empty).
        self.held.set(FIRST_CHUNK_BLOCK);
        self.chunks.set(1);
        self.head.set(Some(c));
        self.growth.set(FIRST_CHUNK_SIZE);
        self.set_current(c);
        // The chunk's data starts CHUNK_ALIGN-aligned with FIRST_CHUNK_ROOM bytes, so this never
        // fails; the error (rather than a panic) keeps the fallible API free of panicking paths.
        self.bump(layout).ok_or(Failure::CapacityOverflow)
    }

    /// The spare chunks after `cur`, the current chunk: the ring from `cur`'s successor up to
    /// `head`.
    fn spares(&self, cur: Chunk) -> impl Iterator<Item = Chunk> {
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
        let (mut size, mut nominal) = new_chunk_size(NewChunk {
            layout,
            growth: self.growth.get().min(self.growth_cap),
            slack,
            own: false,
            plan: if planned { self.plan.get() } else { 0 },
            limit: self.budget().headroom(),
        })?;
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
    fn take_block<S: ChunkSource + ?Sized>(
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

    /// Makes `c` the current chunk and bumps `layout` from its start.
    fn enter_chunk(&self, c: Chunk, layout: Layout) -> Result<NonNull<u8>, Failure> {
        // The cycle needs at least what it has in use and this request (see `retention`).
        self.note_peak(self.in_use().saturating_add(layout.size()));
        self.leave_current();
        self.set_current(c);
        // `c` was chosen or sized so that `layout` fits from its start: this never fails, and the
        // error (rather than a panic) keeps the fallible API free of panicking paths.
        self.bump(layout).ok_or(Failure::CapacityOverflow)
    }

    /// Records the bytes used in the current chunk before moving past it.
    fn leave_current(&self) {
        if let Some(cur) = self.chunk.get() {
            let used = self.ptr.get().addr().get() - cur.start().addr().get();
            self.used_before.set(self.used_before.get() + used);
        }
    }

    /// Makes `c` current with its whole capacity free.
    fn set_current(&self, c: Chunk) {
        self.chunk.set(Some(c));
        self.ptr.set(c.start());
        self.end.set(c.end());
    }

    /// Takes a first chunk of at least `capacity` usable bytes (for `with_capacity`).
    pub(crate) fn reserve_first<S: ChunkSource + ?Sized>(
        &self,
        capacity: usize,
        src: &S,
    ) -> Result<(), Failure> {
        debug_assert!(self.chunk.get().is_none());
        let (size, nominal) = chunk_size_for_capacity(capacity).ok_or(Failure::CapacityOverflow)?;
        self.budget().admit(size)?;
        let c = self.take_block(size, nominal, src)?;
        self.set_current(c);
        self.reserved.set(c.capacity());
        Ok(())
    }

    // ----- the Allocator rules -----

    /// The start of `[p, p + size)` when it is the last block of the current scope (it ends at
    /// `ptr`; no block of an enclosing scope does, see the module invariants), re-derived from
    /// our own position: the caller's `p` may carry a narrower provenance than the chunk.
    #[inline(always)]
    fn last_start(&self, p: NonNull<u8>, size: usize) -> Option<NonNull<u8>> {
        let ptr = self.ptr.get();
        if p.addr().get().wrapping_add(size) != ptr.addr().get() {
            return None;
        }
        // `p`'s address with our pointer's provenance (`p` lies in the current chunk, at or
        // below `ptr`). Spelled as `with_addr` rather than `ptr - size`, the compiler sees that the
        // result is `p`'s value and reuses the caller's register: a growing collection's
        // in-place path loses a subtraction and a register copy.
        Some(ptr.with_addr(p.addr()))
    }

    /// [`alloc_block`](Self::alloc_block) for the `Allocator` methods: the failure is answered on the cold
    /// path ([`alloc_slow_or_refuse`](Self::alloc_slow_or_refuse)).
    #[inline(always)]
    fn allocator_alloc<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        match self.bump(layout) {
            Some(p) => Ok(p),
            None => self.alloc_slow_or_refuse(layout, src),
        }
    }

    /// `Allocator::allocate`.
    #[inline(always)]
    pub(crate) fn allocate<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.allocator_alloc(layout, src)?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    /// `Allocator::allocate_zeroed`.
    #[inline]
    pub(crate) fn allocate_zeroed<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.allocator_alloc(layout, src)?;
        // SAFETY: `p` is a fresh block of `layout.size()` writable bytes; no reference is formed.
        unsafe { p.write_bytes(0, layout.size()) };
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    /// `Allocator::deallocate`: rolls the position back when `p` is the last block of the scope;
    /// a large block (only a block of at least the threshold can be one) goes back to the
    /// backing allocator.
    ///
    /// # Safety
    /// `p` was allocated by this arena with `layout` (any size between the requested size and the
    /// returned length) and is not used afterwards; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn deallocate<S: ChunkSource + ?Sized>(
        &self,
        p: NonNull<u8>,
        layout: Layout,
        src: &S,
    ) {
        // A freed block is never touched again (a rolled-back one is handed out anew by a later
        // bump, which unpoisons it).
        if let Some(start) = self.last_start(p, layout.size()) {
            if layout.size() >= LARGE_THRESHOLD {
                // A roll-back that big is what retention must see (the size test folds away for
                // a layout known at compile time).
                self.note_peak(self.in_use());
            }
            poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size()));
            self.ptr.set(start);
        } else if layout.size() >= LARGE_THRESHOLD {
            // SAFETY: forwarded from the caller.
            unsafe { self.deallocate_not_last(p, layout, src) }
        } else {
            poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size()));
        }
    }

    /// [`deallocate`](Self::deallocate) of a block bumped in the current chunk (never a large
    /// block): rolled back when it is last.
    ///
    /// # Safety
    /// As for `deallocate`; the block lies in a chunk.
    #[inline(always)]
    pub(crate) unsafe fn release_bump(&self, p: NonNull<u8>, layout: Layout) {
        poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size()));
        if let Some(start) = self.last_start(p, layout.size()) {
            self.ptr.set(start);
        }
    }

    /// The position, as an address: a mark for [`rewind`](Self::rewind).
    #[inline(always)]
    pub(crate) fn mark(&self) -> usize {
        self.ptr.get().addr().get()
    }

    /// Moves the position back over the padding in front of a block that was just given back:
    /// from `start` to `mark`, when the position is at `start` and `mark` lies in the current
    /// chunk, less than `align` bytes before it (so that only that padding lies between them).
    ///
    /// # Safety
    /// `mark` was taken, by [`mark`](Self::mark), just before the block that starts at `start`
    /// (of alignment `align`) was allocated, and that block has been given back.
    #[inline]
    pub(crate) unsafe fn rewind(&self, start: NonNull<u8>, mark: usize, align: usize) {
        let ptr = self.ptr.get();
        let Some(c) = self.chunk.get() else {
            return;
        };
        let start = start.addr().get();
        if ptr.addr().get() == start
            && mark >= c.start().addr().get()
            && mark <= start
            && start - mark < align
        {
            // `mark` lies in the current chunk at or before `ptr`, so it is non-null; our own
            // pointer carries the chunk's provenance.
            if let Some(m) = core::num::NonZero::new(mark) {
                self.ptr.set(ptr.with_addr(m));
            }
        }
    }

    /// Grows a block: in place when the block is last, its start satisfies the new alignment
    /// and the chunk has room (no stack frame on this path); otherwise
    /// [`grow_elsewhere`](Self::grow_elsewhere). `ALLOCATOR` is true on the `Allocator` methods'
    /// path, where a failure at the allocation limit may panic on the cold path (see
    /// [`raise_if_asked`]), and false for the typed helpers, which get the failure's cause.
    ///
    /// # Safety
    /// The `Allocator::grow` contract: `p` is a live block of this arena fitting `old`, and
    /// `new.size() >= old.size()`; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn grow<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        debug_assert!(new.size() >= old.size());
        if let Some(start) = self.last_start(p, old.size()) {
            let room = self.end.get().addr().get() - start.addr().get();
            // SAFETY: `start` is `p`'s address, a block allocated with `old` (the contract).
            if unsafe { satisfies(start, old, new) } && new.size() <= room {
                // SAFETY: `new.size() <= end - start`.
                self.ptr.set(unsafe { start.add(new.size()) });
                unpoison(start.as_ptr(), self.ptr.get().as_ptr());
                if zeroed {
                    // SAFETY: `[start, start + new.size())` is ours now; the tail past
                    // `old.size()` is written through a raw pointer.
                    unsafe {
                        start
                            .add(old.size())
                            .write_bytes(0, new.size() - old.size())
                    };
                }
                return Ok(start);
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe {
            if zeroed {
                self.grow_elsewhere::<S, ALLOCATOR, true>(p, old, new, src)
            } else {
                self.grow_elsewhere::<S, ALLOCATOR, false>(p, old, new, src)
            }
        }
    }

    /// The common way a block that is not last grows: a small block copied to a fresh block
    /// bumped in the current chunk. `None` (nothing changed) when the block is last, large or
    /// empty, or the current chunk has no room for `new`; the rest of
    /// [`grow_elsewhere`](Self::grow_elsewhere) then does the work. It is the first thing
    /// `grow_elsewhere` tries, and everything else is one more call away, so that this path
    /// saves two registers rather than six (a `Vec` of `Vec`s grown by pushes spends most of its
    /// growth here).
    ///
    /// # Safety
    /// As for [`grow`](Self::grow), `old_size` being the size of the caller's old layout.
    #[inline(always)]
    unsafe fn grow_to_bump(
        &self,
        p: NonNull<u8>,
        old_size: usize,
        new: Layout,
    ) -> Option<NonNull<u8>> {
        // An empty `new` takes no room (not even padding): `grow_moving` answers it.
        if old_size >= LARGE_THRESHOLD || new.size() == 0 || self.last_start(p, old_size).is_some()
        {
            return None;
        }
        let q = self.bump(new)?;
        // SAFETY: `q` is a fresh block bumped after every live block of the chunk and `p` is a
        // live block that is not a large one, so they do not overlap; `p` is readable for
        // `old_size` bytes, `q` writable for `new.size() >= old_size`.
        unsafe { ptr::copy_nonoverlapping(p.as_ptr(), q.as_ptr(), old_size) };
        poison(p.as_ptr(), p.as_ptr().wrapping_add(old_size));
        Some(q)
    }

    /// The rest of [`grow`](Self::grow): the block moves, within the chunk when it is last,
    /// else to a fresh block.
    ///
    /// # Safety
    /// As for [`grow`](Self::grow).
    #[cold]
    #[inline(never)]
    unsafe fn grow_elsewhere<S: ChunkSource + ?Sized, const ALLOCATOR: bool, const ZEROED: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        if !ZEROED {
            // SAFETY: forwarded from the caller.
            if let Some(q) = unsafe { self.grow_to_bump(p, old.size(), new) } {
                return Ok(q);
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.grow_moving_or_raise::<S, ALLOCATOR>(p, old, new, ZEROED, src) }
    }

    /// The rest of [`grow_elsewhere`](Self::grow_elsewhere), out of line so that the common
    /// case before it saves few registers.
    ///
    /// # Safety
    /// As for [`grow`](Self::grow).
    #[cold]
    #[inline(never)]
    unsafe fn grow_moving_or_raise<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        // SAFETY: forwarded from the caller.
        let grown = unsafe { resize::grow(&RawFront::new(self, src), p, old, new, zeroed) };
        if ALLOCATOR {
            if let Err(f) = grown {
                // Everything the attempt did is undone: the arena may panic now.
                raise_if_asked(f, || src);
            }
        }
        grown
    }

    /// Shrinks a block: the last block gives its tail back in place; any other block keeps its
    /// place and length (the slack is lost until reset). A block must move only when the new
    /// alignment is larger than its start satisfies ([`shrink_elsewhere`](Self::shrink_elsewhere)).
    /// `ALLOCATOR` as for [`grow`](Self::grow): on the `Allocator` methods' path a failure at the
    /// limit may panic there.
    ///
    /// # Safety
    /// The `Allocator::shrink` contract: `p` is a live block of this arena fitting `old`, and
    /// `new.size() <= old.size()`; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn shrink<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.shrink_as::<S, ALLOCATOR, false>(p, old, new, src) }
    }

    /// Shrinks a block its owner gives up for good, to become a slice that lives as long as the
    /// arena's blocks (`into_slice`): it is never resized or deallocated again, only freed with
    /// everything else by a reset, its scope's exit or drop. So it never moves to a new block:
    /// the last block gives its tail back, a large block shrinks through the backing allocator
    /// and stays a large block at any size (its place among them kept), and any other block
    /// keeps its place. A block made before a checkpoint is thus still there when it is
    /// restored.
    ///
    /// # Safety
    /// The `Allocator::shrink` contract, with `new.align() == old.align()`; the block is not
    /// resized or deallocated afterwards; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn shrink_settled<S: ChunkSource + ?Sized>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert!(new.align() == old.align());
        // SAFETY: forwarded from the caller.
        unsafe { self.shrink_as::<S, false, true>(p, old, new, src) }
    }

    /// [`shrink`](Self::shrink), and with `SETTLE` [`shrink_settled`](Self::shrink_settled).
    ///
    /// # Safety
    /// As for `shrink`, and with `SETTLE` as for `shrink_settled`.
    #[inline(always)]
    unsafe fn shrink_as<S: ChunkSource + ?Sized, const ALLOCATOR: bool, const SETTLE: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert!(new.size() <= old.size());
        // SAFETY: `p` was allocated with `old` (the contract).
        if !unsafe { satisfies(p, old, new) } {
            // SAFETY: forwarded from the caller.
            return unsafe { self.shrink_elsewhere::<S, ALLOCATOR, SETTLE>(p, old, new, src) };
        }
        let Some(start) = self.last_start(p, old.size()) else {
            if old.size() >= LARGE_THRESHOLD {
                // Possibly a large block.
                // SAFETY: forwarded from the caller.
                return unsafe { self.shrink_elsewhere::<S, ALLOCATOR, SETTLE>(p, old, new, src) };
            }
            // The caller may keep using the whole block.
            return Ok(NonNull::slice_from_raw_parts(p, old.size()));
        };
        // SAFETY: `new.size() <= old.size()`, so this stays inside the old block.
        let new_end = unsafe { start.add(new.size()) };
        poison(new_end.as_ptr(), self.ptr.get().as_ptr());
        self.ptr.set(new_end);
        Ok(NonNull::slice_from_raw_parts(start, new.size()))
    }

    /// The rest of [`shrink`](Self::shrink) (see [`resize::shrink`]): a large block shrinks
    /// through the backing allocator (with `SETTLE`, staying a large block at any size), and a
    /// block that needs a larger alignment moves.
    ///
    /// # Safety
    /// As for [`shrink`](Self::shrink), and with `SETTLE` as for
    /// [`shrink_settled`](Self::shrink_settled).
    #[cold]
    #[inline(never)]
    unsafe fn shrink_elsewhere<
        S: ChunkSource + ?Sized,
        const ALLOCATOR: bool,
        const SETTLE: bool,
    >(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { resize::shrink(&RawFront::new(self, src), p, old, new, SETTLE) }
            .map_err(|f| shrink_failed::<S, ALLOCATOR>(f, src))
    }

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
        // What the chunk left behind will have recorded as used if the old block is still its
        // last one then (a nested request may have bumped after it meanwhile).
        let used_with_block = self
            .chunk
            .get()
            .map(|c| self.used_before.get() + (saved.addr().get() - c.start().addr().get()));
        let q = self.alloc_slow(new, keep < new.size(), src)?;
        // SAFETY: `q` is a fresh block in another chunk, so the ranges cannot overlap; the old
        // block is still allocated and holds the caller's bytes.
        unsafe { ptr::copy_nonoverlapping(start.as_ptr(), q.as_ptr(), keep) };
        poison(start.as_ptr(), saved.as_ptr());
        if self.chunk.get() == chunk && self.ptr.get() == saved {
            // `q` is a large block: the old block is still the current chunk's last one.
            self.ptr.set(start);
        } else if used_with_block == Some(self.used_before.get()) {
            // The chunk was left with the old block last: it no longer counts as used.
            self.used_before
                .set(self.used_before.get() - (saved.addr().get() - start.addr().get()));
        }
        Ok(q)
    }

    /// Lengthens the current chunk in place when its source hands it the bytes after it
    /// ([`ChunkSource::extend_chunk`]: a `LocalArena`'s piece that ends at the shared cursor),
    /// by its own size (up to the growth cap) or else by what `layout` lacks at the position
    /// (rounded to [`CHUNK_ALIGN`]), then bumps `layout`. `None`, with nothing changed,
    /// otherwise: no chunk, a probe or a scope holding the end, the limit, or a source that
    /// does not extend.
    #[cold]
    #[inline(never)]
    fn lengthen_for<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        src: &S,
    ) -> Option<NonNull<u8>> {
        let c = self.chunk.get()?;
        let end = self.end.get();
        if end != c.end() {
            return None;
        }
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
        // to the growth cap) when the source has that much, else it takes what is needed.
        let ample = needed.max(c.size().min(self.growth_cap) & !(CHUNK_ALIGN - 1));
        let extended = |more: usize| {
            self.check_limit(more).is_ok()
                // SAFETY: `c` is a chunk of this arena, taken from `src` (the arena's only
                // source), and `c.size()` is its block's current length.
                && unsafe { src.extend_chunk(c.0.cast(), c.size(), more) }
        };
        let more = if extended(ample) {
            ample
        } else if ample != needed && extended(needed) {
            needed
        } else {
            return None;
        };
        // SAFETY: the source handed the `more` bytes after the block to it.
        unsafe { c.lengthen(more) };
        self.held.set(self.held.get() + more);
        self.end.set(c.end());
        poison(end.as_ptr(), c.end().as_ptr());
        self.bump(layout)
    }

    // ----- large blocks (see `super::large`) -----

    /// Bytes held from the backing allocator: chunks and large blocks.
    fn held_total(&self) -> usize {
        self.held.get() + self.large.bytes()
    }

    /// What the arena holds from the backing allocator, and its limit.
    fn budget(&self) -> Budget {
        Budget {
            limit: self.limit.get(),
            held: self.held_total(),
        }
    }

    /// Fails when `more` bytes from the backing allocator would pass the limit.
    fn check_limit(&self, more: usize) -> Result<(), Failure> {
        self.budget().admit(more)
    }

    /// Whether a reset planned a chunk that holds `layout`: a loop whose cycles needed more than
    /// the chunk kept (large blocks included) then settles in the planned chunk, where even its
    /// large requests are bump blocks, rather than taking and freeing large blocks every cycle.
    fn plan_holds(&self, layout: Layout) -> bool {
        let plan = self.plan.get();
        plan != 0 && min_chunk_size(layout).is_some_and(|own| own - HEADER_SIZE <= plan)
    }

    /// Takes a large block for `layout`, a request of at least the threshold that does not fit
    /// the current chunk. Changes nothing when it fails (or the backing allocator unwinds).
    #[inline(never)]
    fn alloc_large<S: ChunkSource + ?Sized>(
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
    fn take_large<S: ChunkSource + ?Sized>(
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
    unsafe fn release_large<S: ChunkSource + ?Sized>(&self, b: Large, src: &S) {
        // SAFETY: the block came from `src` with this layout (the caller).
        self.backing_call
            .run(|| unsafe { src.deallocate_large(b.block(), b.layout()) });
    }

    /// Frees the large blocks made at or after `mark` (every one for 0).
    ///
    /// # Safety
    /// None of them is used again; `src` is the arena's source.
    unsafe fn release_large_since<S: ChunkSource + ?Sized>(&self, mark: u64, src: &S) {
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
    unsafe fn deallocate_not_last<S: ChunkSource + ?Sized>(
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

    // ----- positions, scopes and reset -----

    /// The current position.
    pub(crate) fn checkpoint(&self) -> RawCheckpoint {
        let end = self.end.get();
        let room = match self.chunk.get() {
            Some(c) if end == c.end() => Room::Chunk,
            Some(_) if self.holding_probe().is_some() => Room::Probe,
            _ => Room::Exact,
        };
        RawCheckpoint {
            chunk: self.chunk.get(),
            ptr: self.ptr.get(),
            end,
            room,
            used_before: self.used_before.get(),
            large: self.large.mark(),
        }
    }

    /// Starts a scope and returns what to restore at its end.
    ///
    /// The parent's last block may end at the position: the position steps one byte past it, so
    /// that no block of the parent ends at `ptr` while the child is active (the child's blocks all
    /// start after that byte); `used_bytes` counts that byte, like padding, until the scope ends.
    ///
    /// When the chunk is full there is no byte to step over: the position parks at the chunk's
    /// start with no room (its bytes counted as used before it), and the child's first allocation
    /// moves on to the next chunk. Only an empty block can end at a chunk's start, and with no
    /// room there it can be neither grown in place nor rolled back over anything. A checkpoint
    /// taken while parked restores exactly that (no room), and a probe on the chunk is moved to
    /// its end first (the chunk is full: the cycle reached it), so that no probe can hold the
    /// parked end and hand out the room above it. Restoring the checkpoint undoes either step.
    pub(crate) fn enter_scope(&self) -> RawCheckpoint {
        let cp = self.checkpoint();
        if let Some(c) = cp.chunk {
            if cp.ptr < cp.end {
                // SAFETY: `ptr < end`, so one byte further is still inside the chunk.
                self.ptr.set(unsafe { cp.ptr.add(1) });
            } else if self.probe.get().is_some() && self.pass_probe(Layout::new::<u8>()).is_some() {
                // A probe held the end: moved up, it gave the byte to step over.
            } else {
                if let Some(probe) = self.probe.get().filter(|p| p.chunk == c) {
                    self.probe.set(Some(Probe {
                        end: c.end(),
                        met: true,
                        ..probe
                    }));
                }
                self.leave_current();
                self.ptr.set(c.start());
                self.end.set(c.start());
            }
        }
        cp
    }

    /// Returns to `cp`; chunks entered since become spares, large blocks made since go back to
    /// the backing allocator.
    ///
    /// # Safety
    /// `cp` was taken from this arena, its chunk is still held (no `reset`/`trim` since), no
    /// block allocated after it is used again, and `src` is the arena's source.
    pub(crate) unsafe fn restore<S: ChunkSource + ?Sized>(&self, cp: RawCheckpoint, src: &S) {
        self.note_peak(self.in_use());
        // SAFETY: the large blocks made since `cp` are not used again (the caller).
        unsafe { self.release_large_since(cp.large, src) };
        // Everything after `cp` is free again: the rest of its chunk and every later chunk.
        let Some(c) = cp.chunk else {
            // Taken before the first chunk: "nothing used" is the start of the first chunk, if
            // one was taken since (the others follow it in the ring, as spares).
            if let Some(head) = self.head.get() {
                self.poison_ring(head);
                self.used_before.set(0);
                self.set_current(head);
            }
            return;
        };
        // The chunk may have been lengthened since, and a probe on it may have moved up: both
        // only rise, and everything after `cp` is free, so the position gets the room up to the
        // bound that held it then, as that bound is now. A parked position gets none: the bytes
        // above it are its parent's.
        let end = match cp.room {
            Room::Chunk => c.end(),
            Room::Probe => match self.probe.get() {
                Some(probe) if probe.chunk == c && probe.end > cp.end => probe.end,
                _ => cp.end,
            },
            Room::Exact => cp.end,
        };
        poison(cp.ptr.as_ptr(), end.as_ptr());
        poison_chunks(self.spares(c));
        self.chunk.set(cp.chunk);
        self.ptr.set(cp.ptr);
        self.end.set(end);
        self.used_before.set(cp.used_before);
    }

    /// Forgets every block, frees the large ones, and keeps one chunk: the largest, unless
    /// retention replaces it (see [`retention`](super::retention)); every other chunk goes back
    /// to `src`. A loop that has settled keeps the same single chunk and makes no call: that is
    /// the short path here, the rest is [`reset_slow`](Self::reset_slow).
    ///
    /// # Safety
    /// No block of this arena is used again, and `src` is the arena's source.
    #[inline]
    pub(crate) unsafe fn reset<S: ChunkSource + ?Sized>(&self, src: &S) {
        let mut now = self.in_use().max(self.cycle_peak.replace(0));
        // A cycle that ran under a probe reached no further than it in its chunk; when it met
        // the probe, that bound is its need (its blocks may all have been given back since).
        // One that never met it needed less than the renewal the probe stands for.
        let probed = self.probe.take().map(|probe| {
            if probe.met {
                now = now.max(probe.reached());
            }
            probe.met
        });
        if self.large.count() != 0 {
            // SAFETY: forwarded from the caller.
            unsafe { self.release_large_since(0, src) };
        }
        let Some(head) = self.head.get() else {
            return;
        };
        let mut recent = self.recent.get();
        let need = recent.record(now);
        if head.next() == head
            && probed != Some(true)
            && decide(
                head.capacity(),
                recent.renewed,
                now,
                need,
                self.reserved.get(),
            ) == (Decision::Keep { plan: 0 })
        {
            // A loop that has settled: its one chunk, as it is (the plan, see `plan_for`).
            self.recent.set(recent);
            self.used_before.set(0);
            self.set_current(head);
            self.poison_ring(head);
            return;
        }
        // A cycle that moved on to further chunks and gave back all it had bumped in its last
        // one (a list freed from its newest node) reached an unknown height there: at most the
        // whole chunk. Should a roll-back the cycle's slow points saw have said less, the probe
        // set after a renewal measures the next cycle.
        let mut bound = 0;
        if self.used_before.get() != 0 {
            if let Some(c) = self.chunk.get() {
                if self.ptr.get() == c.start() {
                    bound = self.used_before.get() + c.capacity();
                }
            }
        }
        // The largest chunk, the first of the ring on a tie.
        let keep = ring(head).fold(head, |l, x| if x.size() > l.size() { x } else { l });
        let plan = plan_for(
            &mut recent,
            Cycle {
                now,
                bound,
                probed,
                largest: keep.capacity(),
                reserved: self.reserved.get(),
            },
            need,
        );
        self.recent.set(recent);
        // SAFETY: forwarded from the caller.
        unsafe { self.reset_slow(keep, plan, src) }
    }

    /// The rest of [`reset`](Self::reset): several chunks, or a plan other than keeping the
    /// only one as it is. `keep` is the largest chunk.
    ///
    /// # Safety
    /// As for `reset`; `keep` is one of the arena's chunks.
    #[cold]
    #[inline(never)]
    unsafe fn reset_slow<S: ChunkSource + ?Sized>(&self, keep: Chunk, plan: Plan, src: &S) {
        match plan {
            Plan::Keep { plan, probe } => {
                // The arena moves to the kept chunk first, the others following it as spares:
                // should the backing allocator unwind while they go back, what is left is an
                // arena at the start of `keep` with the chunks not yet released as its spares.
                self.plan.set(plan);
                self.head.set(Some(keep));
                // Growth starts again from the chunk kept: a cycle that outgrows it takes about
                // twice.
                self.growth.set(keep.size());
                self.used_before.set(0);
                self.set_current(keep);
                self.poison_ring(keep);
                if let Some(reached) = probe {
                    // SAFETY: a probe of a kept chunk lies below its capacity (`plan`), and the
                    // position is at its start.
                    unsafe { self.set_probe(keep, reached, false) };
                }
                // SAFETY: the spares hold no live block (no block is used again, the caller),
                // and every chunk came from `src`.
                unsafe { self.trim(src) };
            }
            Plan::Renew { capacity, probe } => {
                // Every chunk goes back first, so that the arena never holds both; the arena is
                // then as a new one.
                // SAFETY: as above.
                unsafe { self.release_all(src) };
                // Should the backing allocator or the limit refuse the chunk, the arena holds
                // none, as a new one, and takes chunks again as it allocates.
                if let Some(c) = chunk_size_for_capacity(capacity)
                    .filter(|&(size, _)| self.check_limit(size).is_ok())
                    .and_then(|(size, nominal)| self.take_block(size, nominal, src).ok())
                {
                    self.set_current(c);
                    if let Some(reached) = probe.filter(|&r| r < c.capacity()) {
                        // SAFETY: `reached < c.capacity()`, and the position is at its start.
                        unsafe { self.set_probe(c, reached, false) };
                    }
                }
            }
        }
    }

    /// Bytes the cycle has in use: bump bytes and large blocks' (see `retention`).
    #[inline]
    fn in_use(&self) -> usize {
        self.bump_used() + self.large.data_bytes()
    }

    /// Records that the cycle has `used` bytes in use (at a slow point).
    #[inline]
    fn note_peak(&self, used: usize) {
        if used > self.cycle_peak.get() {
            self.cycle_peak.set(used);
        }
    }

    /// Bump bytes in use: [`used_bytes`](Self::used_bytes) without the large blocks.
    #[inline]
    fn bump_used(&self) -> usize {
        match self.chunk.get() {
            Some(c) => {
                self.used_before.get() + (self.ptr.get().addr().get() - c.start().addr().get())
            }
            None => 0,
        }
    }

    /// Poisons the usable bytes of every chunk in the ring of `first` (ASan builds only).
    #[inline]
    fn poison_ring(&self, first: Chunk) {
        poison_chunks(ring(first));
    }

    /// Returns every spare chunk (after the current one) to the backing allocator.
    ///
    /// Each spare leaves the ring and the counts before its block goes back, so should the
    /// backing allocator unwind, the arena holds the spares not yet released, as it should.
    ///
    /// # Safety
    /// `src` is the source the chunks came from, and no checkpoint into a spare is restored later.
    pub(crate) unsafe fn trim<S: ChunkSource + ?Sized>(&self, src: &S) {
        let Some(cur) = self.chunk.get() else {
            return;
        };
        while cur.next() != self.head.get().unwrap_or(cur) {
            let c = cur.next();
            c.unlink();
            self.uncount(c);
            // SAFETY: a spare holds no live block, it is out of the ring and the counts, and the
            // caller vouches for `src`.
            unsafe { self.free_chunk(c, src) };
        }
    }

    /// Returns every chunk and large block to the backing allocator; the arena is then as a new
    /// one (for `Drop`, and a reset that renews its chunk).
    ///
    /// The arena forgets its position, its chunks and their counts before the first block goes
    /// back: should the backing allocator unwind, it is an empty arena (the chunks not yet
    /// released are leaked), never one that points into a released block.
    ///
    /// # Safety
    /// `src` is the source the chunks came from and no block is used again.
    pub(crate) unsafe fn release_all<S: ChunkSource + ?Sized>(&self, src: &S) {
        let none = NonNull::dangling();
        self.ptr.set(none);
        self.end.set(none);
        self.chunk.set(None);
        self.probe.set(None);
        self.used_before.set(0);
        self.growth.set(0);
        self.plan.set(0);
        let head = self.head.take();
        self.held.set(0);
        self.chunks.set(0);
        // SAFETY: forwarded from the caller.
        unsafe { self.release_large_since(0, src) };
        let Some(head) = head else { return };
        // The next chunk is read before a chunk goes back, and `head`, where the walk stops,
        // goes back last.
        for x in chunks_until(head.next(), head) {
            // SAFETY: the caller guarantees no block is used again; the arena no longer refers
            // to any chunk.
            unsafe { self.free_chunk(x, src) };
        }
        // SAFETY: as above.
        unsafe { self.free_chunk(head, src) };
    }

    /// Takes chunk `c` out of the counts of what the arena holds.
    fn uncount(&self, c: Chunk) {
        self.held.set(self.held.get() - c.size());
        self.chunks.set(self.chunks.get() - 1);
    }

    /// Gives chunk `c`'s block back to `src`. The arena is marked busy meanwhile, so that a
    /// backing allocator that allocates in this arena from its `deallocate` takes no chunk (it
    /// could pick a spare that is about to go back).
    ///
    /// # Safety
    /// Nothing of the arena refers to `c` any more (not its ring, position or counts), `c` holds
    /// no live block, and it came from `src`.
    unsafe fn free_chunk<S: ChunkSource + ?Sized>(&self, c: Chunk, src: &S) {
        let layout = c.block_layout();
        unpoison(c.start().as_ptr(), c.end().as_ptr());
        // SAFETY: the block came from `src` with this alignment and its returned length.
        self.backing_call
            .run(|| unsafe { src.deallocate_chunk(c.0.cast(), layout) });
    }

    // ----- statistics -----

    /// Bytes handed out, alignment padding included, up to the current position.
    pub(crate) fn used_bytes(&self) -> usize {
        self.bump_used()
    }

    /// Usable bytes of all held chunks and large blocks.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.held.get() - self.chunks.get() * HEADER_SIZE + self.large.data_bytes()
    }

    /// Bytes held from the backing allocator, headers included.
    pub(crate) fn allocated_bytes_including_metadata(&self) -> usize {
        self.held_total()
    }

    /// Large blocks held.
    pub(crate) fn large_count(&self) -> usize {
        self.large.count()
    }

    /// Bytes of the large blocks held, headers included.
    pub(crate) fn large_bytes(&self) -> usize {
        self.large.bytes()
    }

    /// The large blocks (a `LocalArena` hands them to its `SyncArena` when it is dropped).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn large_list(&self) -> &LargeList {
        &self.large
    }

    /// Bytes left in the current chunk (a probe's hold aside: it moves up as the chunk fills).
    pub(crate) fn chunk_capacity(&self) -> usize {
        let end = match self.holding_probe() {
            Some(probe) => probe.chunk.end(),
            None => self.end.get(),
        };
        end.addr().get() - self.ptr.get().addr().get()
    }

    /// The probe, when it is what holds `end`: the position is on its chunk, not parked.
    fn holding_probe(&self) -> Option<Probe> {
        self.probe
            .get()
            .filter(|p| self.chunk.get() == Some(p.chunk) && self.end.get() == p.end)
    }

    /// The free bytes of the current chunk, `[ptr, end)` (empty on the sentinel).
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by `LocalArena`
    pub(crate) fn free_range(&self) -> (NonNull<u8>, NonNull<u8>) {
        (self.ptr.get(), self.end.get())
    }

    /// Whether the current chunk hands out nothing now: every block bumped in it (if any) was
    /// rolled back, so how far it reached is not known.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by `LocalArena`
    pub(crate) fn current_is_bare(&self) -> bool {
        self.chunk
            .get()
            .is_some_and(|c| self.ptr.get() == c.start())
    }

    /// Bytes the cycle's recorded peak exceeds what is in use now (roll-backs seen at the slow
    /// points where the peak is noted).
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by `LocalArena`
    pub(crate) fn peak_above_use(&self) -> usize {
        self.cycle_peak.get().saturating_sub(self.in_use())
    }

    /// Chunks held.
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.get()
    }

    pub(crate) fn allocation_limit(&self) -> Option<usize> {
        self.limit.get()
    }

    pub(crate) fn set_allocation_limit(&self, limit: Option<usize>) {
        self.limit.set(limit);
    }

    /// Whether the `Allocator` methods panic at the limit (an `Arena`'s own flag; a
    /// `LocalArena` asks its `SyncArena` through [`ChunkSource::panics_on_limit`]).
    pub(crate) fn panics_on_limit(&self) -> bool {
        self.panic_on_limit.get()
    }

    pub(crate) fn set_panic_on_limit(&self, panic: bool) {
        self.panic_on_limit.set(panic);
    }
}

/// The arena's answers to the shared resize ([`resize::Front`]), with its source. A large block
/// being resized is out of the list meanwhile; its bytes (`detached`) still count against the
/// limit.
struct RawFront<'a, S: ?Sized> {
    raw: &'a RawArena,
    src: &'a S,
    detached: Cell<usize>,
}

impl<'a, S: ChunkSource + ?Sized> RawFront<'a, S> {
    #[inline(always)]
    fn new(raw: &'a RawArena, src: &'a S) -> Self {
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
        raw.note_peak(raw.in_use());
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
        _grows: bool,
    ) -> Result<NonNull<u8>, Failure> {
        let q = self.raw.alloc_block(new, self.src)?;
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
        self.raw.take_large(block, self.detached.get(), self.src)
    }

    unsafe fn resize_large_block(&self, b: Large, block: Layout) -> Result<NonNull<[u8]>, Failure> {
        let old_block = b.layout();
        if block.size() > old_block.size() {
            // The block's bytes are among the detached ones until it is linked back.
            self.raw
                .check_limit(self.detached.get() + (block.size() - old_block.size()))?;
        }
        // SAFETY: `b`'s block came from `src` with `old_block` (the caller); `block` has its
        // alignment.
        let resized = self
            .raw
            .backing_call
            .run(|| unsafe { self.src.resize_large(b.block(), old_block, block) })?;
        self.detached
            .set(self.detached.get() - old_block.size() + block.size());
        Ok(resized)
    }

    unsafe fn free_large(&self, b: Large) {
        self.attach(b);
        // SAFETY: forwarded from the caller.
        unsafe { self.raw.release_large(b, self.src) };
    }

    fn link_large(&self, b: Large) {
        self.attach(b);
        self.raw.large.reinsert(b);
        self.raw.note_peak(self.raw.in_use());
    }

    fn link_large_for(&self, old: Large, new: Large) {
        // `new`'s bytes are counted by the list from now on, and `old`'s by the limit until it
        // is freed: `detached` keeps them.
        self.raw.large.reinsert_for(old, new);
        self.raw.note_peak(self.raw.in_use());
    }
}

/// The answer of a shrink that failed (it had to move the block): for the `Allocator` methods
/// ([`refuse`]) the limit's panic when the arena asks for it, else `AllocError`.
#[inline(always)]
fn shrink_failed<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
    f: Failure,
    src: &S,
) -> AllocError {
    if ALLOCATOR {
        refuse(f, || src)
    } else {
        AllocError
    }
}

/// The answer of an `Allocator` method that failed: `AllocError`, or the limit's panic (see
/// [`raise_if_asked`]).
#[cold]
#[inline(never)]
pub(crate) fn refuse<'s, S: ChunkSource + ?Sized + 's>(
    f: Failure,
    src: impl FnOnce() -> &'s S,
) -> AllocError {
    raise_if_asked(f, src);
    AllocError
}

/// Raises the limit's panic when `f` is the allocation limit and the arena that owns the limit
/// (`src()`) asks for it (`set_panic_on_limit`); otherwise does nothing.
///
/// Called on the failure paths of the `Allocator` methods only, once the failed request has
/// undone everything it did (every rule here changes nothing when it fails), so the arena is
/// consistent and usable when the panic unwinds. It is handed a closure that finds the limit's
/// owner (a `LocalArena` loads its `SyncArena` pointer for that), so that even that load stays
/// off the fast paths.
#[inline]
pub(crate) fn raise_if_asked<'s, S: ChunkSource + ?Sized + 's>(
    f: Failure,
    src: impl FnOnce() -> &'s S,
) {
    if let Failure::LimitReached { .. } = f {
        if src().panics_on_limit() {
            f.raise()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RawArena, address_space_ok};

    /// Sets a probe on the current chunk at its start, where a reset sets one after cycles that
    /// had nothing in use at their resets (the position must be at the start).
    fn probe_at_start(raw: &RawArena) -> super::Chunk {
        let c = raw.chunk.get().unwrap();
        assert_eq!(raw.ptr.get(), c.start());
        // SAFETY: 0 bytes, and the position is at the chunk's start (asserted).
        unsafe { raw.set_probe(c, 0, false) };
        c
    }

    #[test]
    fn a_probe_moves_up_on_every_path_and_the_reset_counts_it() {
        let n: usize = if cfg!(miri) { 2_000 } else { 20_000 };
        let mut arena = crate::Arena::new();
        for i in 0..2 * n {
            arena.alloc(i as u64);
        }
        // The cycle outgrew its chunks: renewed into one that holds 16n bytes.
        arena.reset();
        assert_eq!(arena.raw.chunks.get(), 1);
        let c = probe_at_start(&arena.raw);
        let capacity = c.capacity();
        assert!(capacity >= 16 * n && arena.stats().chunk_capacity == capacity);

        // A scope entered at the probe: moved up by a byte, the scope steps over it. Its slice
        // (a large request, 8n bytes) moves the probe up rather than leaving the chunk.
        let sum = arena.with_scope(|s| {
            let xs = s.alloc_slice_fill_with(n, |i| i as u64);
            xs.iter().sum::<u64>()
        });
        assert_eq!(sum, (n * (n - 1) / 2) as u64);
        let probe = arena.raw.probe.get().unwrap();
        assert!(probe.met && probe.reached() > 8 * n && probe.reached() < capacity);
        // The exit restores the position with the room up to where the probe is now.
        assert_eq!(arena.raw.ptr.get(), c.start());
        assert_eq!(arena.raw.end.get(), probe.end);
        assert_eq!(arena.stats().large_blocks, 0);

        // The last block grows in place across the probe.
        let mut v = allocator_api2::vec::Vec::with_capacity_in(n / 2, &arena);
        v.extend((0..n / 2).map(|i| i as u64));
        let at = v.as_ptr();
        v.reserve_exact(n + n / 2);
        assert_eq!((v.as_ptr(), v.capacity()), (at, 2 * n));
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        let reached = arena.raw.probe.get().unwrap().reached();
        assert!(reached >= 16 * n);
        drop(v);
        assert_eq!(arena.raw.ptr.get(), c.start());

        // A checkpoint taken under the probe returns with the room up to where the probe moved
        // since (here to the chunk's end).
        let cp = arena.checkpoint();
        assert!(
            arena
                .alloc_slice_fill_copy(16 * n + 100, 7u8)
                .iter()
                .all(|&b| b == 7)
        );
        assert_eq!(arena.raw.probe.get().unwrap().end, c.end());
        // SAFETY: nothing allocated after the checkpoint is used again.
        unsafe { arena.reset_to(cp) };
        assert_eq!(arena.raw.end.get(), c.end());

        // Nothing is in use at the reset, but the probe says what the cycle reached: the chunk
        // is kept, and the probe is gone.
        assert_eq!(arena.used_bytes(), 0);
        arena.reset();
        assert_eq!(arena.raw.chunk.get(), Some(c));
        assert_eq!(arena.raw.chunks.get(), 1);
        assert!(arena.raw.probe.get().is_none());
        assert_eq!(arena.raw.end.get(), c.end());
    }

    #[test]
    fn chunks_must_lie_where_the_end_check_cannot_overflow() {
        assert!(address_space_ok(0x1000, 4096));
        #[cfg(target_pointer_width = "64")]
        {
            let top = isize::MAX as usize;
            assert!(address_space_ok(top - 4096, 4096));
            assert!(!address_space_ok(top - 4095, 4096));
            assert!(!address_space_ok(usize::MAX - 100, 50));
            assert!(!address_space_ok(usize::MAX - 100, 200)); // wraps
        }
    }
}
