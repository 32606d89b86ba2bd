//! The bump core: the arena's position, its one-branch fast path, the cold refill path, and the
//! rules for growing, shrinking and freeing the last block.
//!
//! Invariants (docs/DESIGN.md §3):
//! - `ptr <= end`, both inside the current chunk's usable bytes (or inside a `LocalArena`'s
//!   headless piece, see [`headless`], or both the dangling sentinel when there is neither), and
//!   both carry the provenance of the chunk's block. `end` is the chunk's
//!   own end, or below it: at a reset's probe (see `retention`), which only slow paths move, or at
//!   the chunk's start while a scope has parked there (see [`RawArena::enter_scope`]).
//! - No block of an enclosing scope ends at `ptr` while a child scope is active: entering a scope
//!   steps the position past the parent's last block (see [`RawArena::enter_scope`]), and the
//!   child's blocks all start after it. So "ends at `ptr`" alone identifies the current scope's
//!   last block, and a parent's block is never moved, grown in place or rolled back by a child.
//! - The chunks form a ring which, read from `head`, is `[used chunks …, current, spares …]`;
//!   `used_before` is the number of bytes used in the chunks before the current one, recorded when
//!   each was left. `reset` only moves `head` (to the largest chunk): no relinking.
//! - Each chunk from `head` to the current one records in its header the bytes of it that
//!   `used_before` counts ([`ChunkHeader::used`](super::chunk::ChunkHeader::used)), so that
//!   `used_before` is their sum: a chunk's fill, written when the position leaves it; for the
//!   current chunk 0, or its fill while a scope has parked there. A chunk's bytes in use are
//!   then its header's count plus, for the current chunk, `ptr - start`. Only slow paths write
//!   the count (leaving or entering a chunk, a restore, a block moved out of a chunk just left).
//!   A headless piece the position has left adds one term: its bytes in use are what
//!   `used_before` counts beyond the headers (see [`headless`]).

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::{self, NonNull};

use super::chunk::{CHUNK_ALIGN, Chunk, ChunkSource, HEADER_SIZE};
use super::large::LargeList;
use super::large_spares::Spares;
use super::poison::{poison, unpoison};
use super::retention::Recent;
use crate::error::Failure;
use crate::reentry::BackingCall;

mod front;
mod headless;
mod large_glue;
mod recycle;
mod refill;
mod rules;

pub(crate) use self::rules::refuse;

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
    /// Largest nominal size of a regular chunk (what the growth state may reach).
    growth_cap: usize,
    /// The large blocks (outside the chunks) in use, newest first.
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
    /// The start of the headless piece while the position is in it, else [`SENTINEL`] (see
    /// [`headless`](self::headless)).
    headless: Cell<NonNull<u8>>,
    /// The start of the headless piece once the position has left it: its bytes in use are
    /// what `used_before` counts beyond the chunk headers.
    headless_left: Cell<Option<NonNull<u8>>>,
    // The one-byte fields last, side by side: no padding between fields, so that a new arena's
    // fields are plain stores.
    /// Whether the `Allocator` methods panic at the limit instead of returning `AllocError`
    /// (read through the arena's [`ChunkSource::panics_on_limit`], never on a fast path).
    panic_on_limit: Cell<bool>,
    /// Set while the arena waits for its backing allocator: a nested request that needs the
    /// cold path is refused ([`RawArena::alloc_slow`]).
    backing_call: BackingCall,
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

/// The position of an arena with no chunk (`ptr == end`): no provenance, and aligned as a chunk's
/// first byte is, so that it is a multiple of every minimum alignment (an empty layout may bump
/// there by no bytes).
pub(super) const SENTINEL: NonNull<u8> = {
    // SAFETY: `CHUNK_ALIGN` is not zero.
    unsafe { NonNull::new_unchecked(ptr::without_provenance_mut(CHUNK_ALIGN)) }
};

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
        let none = SENTINEL;
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
            headless: Cell::new(none),
            headless_left: Cell::new(None),
        }
    }

    /// Like [`with_growth_cap`](RawArena::with_growth_cap), its position in `lent`, a range its
    /// source lent for its headless piece (see `headless`), if any.
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by `LocalArena`
    pub(crate) fn with_headless(cap: usize, lent: Option<(NonNull<u8>, NonNull<u8>)>) -> RawArena {
        let (start, end) = lent.unwrap_or((SENTINEL, SENTINEL));
        poison(start.as_ptr(), end.as_ptr());
        RawArena {
            ptr: Cell::new(start),
            end: Cell::new(end),
            headless: Cell::new(start),
            held: Cell::new(end.addr().get() - start.addr().get()),
            // The next piece is sized as if this one had been the first chunk (see
            // `enter_headless`).
            growth: Cell::new(end.addr().get() - start.addr().get()),
            ..RawArena::with_growth_cap(cap)
        }
    }

    // ----- the fast path -----

    /// Bumps `layout` in the current chunk: the one branch of the fast path. An empty layout
    /// bumps too (by its alignment padding); [`alloc_block`](Self::alloc_block) gives empty layouts a
    /// dangling pointer before they get here.
    #[inline(always)]
    pub(crate) fn bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        self.bump_parts(layout.size(), layout.align(), 1)
    }

    /// [`bump`](Self::bump) of `size` bytes at alignment `align`, for an arena whose position is
    /// always a multiple of `min` (a power of two, at most `align`; see `min_align`): the padding
    /// arithmetic keeps only the bits of `align` above `min`, none for `align == min`, and folds
    /// away when both are known at compile time. `size` is a multiple of `min`, so the position
    /// stays one.
    ///
    /// The end check cannot overflow. On 64-bit targets every chunk lies below address
    /// `isize::MAX` (checked when a chunk is taken, see [`address_space_ok`]) and `pad < align`;
    /// a `Layout` keeps its size rounded up to its alignment within `isize::MAX`, and the
    /// widened size of `min_align` is no larger than that rounded size when `align` is the
    /// layout's own, and at most `isize::MAX + 15` with no padding when `align == min`, so
    /// `ptr + pad + size < 2^64`; the check is then a compare of the new position with `end`.
    /// Elsewhere the check compares `pad + size` (which cannot overflow, by the same bounds)
    /// with the room left. The sentinel has `ptr == end`, so it fails every non-empty layout.
    #[inline(always)]
    pub(crate) fn bump_parts(&self, size: usize, align: usize, min: usize) -> Option<NonNull<u8>> {
        let ptr = self.ptr.get();
        let addr = ptr.addr().get();
        debug_assert!(
            addr % min == 0,
            "arena-pool: position off its minimum alignment"
        );
        // The position is a multiple of `min`: rounding it up to `align` needs only the bits
        // above `min`'s.
        let mask = (align - 1) & !(min - 1);
        // `start` and `new` are not yet known to be in bounds: computed with wrapping arithmetic,
        // used only after the check.
        #[cfg(target_pointer_width = "64")]
        let (fits, start, new) = {
            // Rounding up cannot overflow: `addr <= isize::MAX` and `mask < 2^63`.
            let pad = ((addr + mask) & !mask) - addr;
            let start = ptr.as_ptr().wrapping_add(pad);
            let new = start.wrapping_add(size);
            (new.addr() <= self.end.get().addr().get(), start, new)
        };
        #[cfg(not(target_pointer_width = "64"))]
        let (fits, start, new) = {
            let pad = addr.wrapping_neg() & mask;
            let start = ptr.as_ptr().wrapping_add(pad);
            let fits = pad + size <= self.end.get().addr().get() - addr;
            (fits, start, start.wrapping_add(size))
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

    // ----- statistics -----

    /// Bytes handed out, alignment padding included, up to the current position.
    pub(crate) fn used_bytes(&self) -> usize {
        self.bump_used()
    }

    /// Usable bytes of all held chunks and large blocks (in use or kept).
    pub(crate) fn allocated_bytes<S: ChunkSource + ?Sized>(&self, src: &S) -> usize {
        self.chunk_bytes() + self.large.data_bytes() + src.kept().map_or(0, Spares::data_bytes)
    }

    /// Usable bytes of all held chunks (headers excluded).
    pub(crate) fn chunk_bytes(&self) -> usize {
        self.held.get() - self.chunks.get() * HEADER_SIZE
    }

    /// Bytes held from the backing allocator, headers included.
    pub(crate) fn allocated_bytes_including_metadata<S: ChunkSource + ?Sized>(
        &self,
        src: &S,
    ) -> usize {
        self.held_total(src)
    }

    /// The chunks in use, for the chunk iteration: the current chunk with its bytes in use, and
    /// `head`, the oldest (the walk goes from the current chunk back to it through `prev`).
    /// `None` when no chunk is held.
    pub(crate) fn chunks_in_use(&self) -> Option<(Chunk, usize, Chunk)> {
        let cur = self.chunk.get()?;
        let head = self.head.get()?;
        let used = cur.used() + (self.ptr.get().addr().get() - cur.start().addr().get());
        Some((cur, used, head))
    }

    /// Large blocks in use.
    pub(crate) fn large_count(&self) -> usize {
        self.large.count()
    }

    /// Bytes of the large blocks in use, headers included.
    pub(crate) fn large_bytes(&self) -> usize {
        self.large.bytes()
    }

    /// Large blocks kept for reuse, and their bytes (headers included).
    pub(crate) fn kept_large<S: ChunkSource + ?Sized>(&self, src: &S) -> (usize, usize) {
        src.kept().map_or((0, 0), |k| (k.count(), k.bytes()))
    }

    /// The large blocks (a `LocalArena` hands them to its `SyncArena` when it is dropped; the
    /// chunk iteration walks them).
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

    /// The start of what the position bumps in: the current chunk's usable bytes, or the
    /// headless piece; `None` for an arena with neither.
    #[inline]
    pub(crate) fn current_start(&self) -> Option<NonNull<u8>> {
        match self.chunk.get() {
            Some(c) => Some(c.start()),
            None => self.in_headless().then(|| self.headless.get()),
        }
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

#[cfg(test)]
mod tests {
    use super::{RawArena, address_space_ok};
    use crate::arena::typed::OnRaw;

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
        // The cycle outgrew its chunks: the first reset keeps them all for the next one, and the
        // reset after that renews them into one that holds 16n bytes.
        for _ in 0..2 {
            for i in 0..2 * n {
                arena.alloc(i as u64);
            }
            arena.reset();
        }
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

        // The last block grows in place across the probe (from below the large-block
        // threshold: a larger request through the `Allocator` methods is a large block).
        let mut v = allocator_api2::vec::Vec::with_capacity_in(n / 4, &arena);
        v.extend((0..n / 4).map(|i| i as u64));
        let at = v.as_ptr();
        v.reserve_exact(2 * n - n / 4);
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

    /// Checks that the chunks from `head` to the current one count in their headers exactly
    /// `used_before` (the current one its part, 0 unless parked).
    fn assert_counts(raw: &RawArena) {
        let (Some(head), Some(cur)) = (raw.head.get(), raw.chunk.get()) else {
            return;
        };
        let before: usize = super::super::chunk::chunks_until(head, cur)
            .map(|c| c.used())
            .sum();
        assert_eq!(before + cur.used(), raw.used_before.get());
    }

    #[test]
    fn chunk_headers_count_what_used_before_counts() {
        let n: usize = if cfg!(miri) { 300 } else { 3000 };
        let mut arena = crate::Arena::new();
        for i in 0..n {
            arena.alloc_slice_fill_copy(1 + i % 37, i as u8);
            assert_counts(&arena.raw);
        }
        // A scope parked on a full chunk, a scope nested in it, and the moves on after them.
        let room = arena.chunk_capacity();
        arena.alloc_slice_fill_copy(room, 1u8);
        arena.with_scope(|scope| {
            scope.with_scope(|inner| {
                inner.alloc_slice_fill_copy(40, 2u8);
                assert_counts(inner.raw());
            });
            assert_counts(scope.raw());
            scope.alloc_slice_fill_copy(n, 3u8);
            assert_counts(scope.raw());
        });
        assert_counts(&arena.raw);
        arena.alloc_slice_fill_copy(1000, 4u8);
        assert_counts(&arena.raw);
        // A vector that grows out of chunks as their last block.
        let mut v = allocator_api2::vec::Vec::new_in(&arena);
        for i in 0..10 * n {
            v.push(i as u8);
        }
        assert_counts(&arena.raw);
        drop(v);
        // A restore, and the moves on through the spares after it.
        let cp = arena.checkpoint();
        for i in 0..n {
            arena.alloc_slice_fill_copy(1 + i % 37, i as u8);
        }
        // SAFETY: nothing allocated after the checkpoint is used again.
        unsafe { arena.reset_to(cp) };
        assert_counts(&arena.raw);
        for i in 0..n / 2 {
            arena.alloc_slice_fill_copy(1 + i % 50, i as u8);
            assert_counts(&arena.raw);
        }
        // Resets, which keep all the chunks (the first) or one.
        for _ in 0..3 {
            arena.reset();
            assert_counts(&arena.raw);
            for i in 0..n {
                arena.alloc_slice_fill_copy(1 + i % 37, i as u8);
            }
            assert_counts(&arena.raw);
        }
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
