//! Chunks: the blocks an arena takes from its backing allocator, their header, and the sizing
//! policy that decides how big the next one is.
//!
//! A chunk is one block from the backing allocator, aligned to [`CHUNK_ALIGN`], that starts with a
//! [`ChunkHeader`]; the bytes after the header are bumped upward. Chunks form a doubly linked ring
//! whose order, from the arena's first chunk, is the order of use: chunks from the first to the
//! current one hold live data, chunks after it (up to the first again) are spares kept for reuse
//! (after `reset`, a scope exit, or a skipped too-small spare). Being a ring, the list starts
//! wherever the arena says: `reset` makes the largest chunk first without relinking anything.

use core::alloc::Layout;
use core::ptr::NonNull;

use super::large_spares::Spares;
use crate::error::Failure;

/// Alignment of every chunk and of the first usable byte after its header.
pub(crate) const CHUNK_ALIGN: usize = 16;

/// Bytes of a chunk taken by its header.
pub(crate) const HEADER_SIZE: usize = size_of::<ChunkHeader>();

/// The size of the first regular chunk as the backing allocator sees it (before
/// [`MALLOC_OVERHEAD`] is subtracted): small, so that an arena holding a few blocks holds little.
pub(crate) const FIRST_CHUNK_SIZE: usize = 256;

/// Later regular chunks, and the chunks sized for a capacity, are whole multiples of this (up to
/// a page for regular chunks, up to 32 KiB for a capacity; whole pages above).
pub(crate) const SIZE_UNIT: usize = 512;

/// Regular chunks stop growing at this size; larger requests get a chunk of their own.
pub(crate) const MAX_CHUNK_SIZE: usize = 16 << 20;

/// The block size of the first regular chunk, and what it can hold: any layout of at most
/// [`FIRST_CHUNK_ROOM`] bytes aligned to at most [`CHUNK_ALIGN`] (its data starts that aligned).
pub(crate) const FIRST_CHUNK_BLOCK: usize = FIRST_CHUNK_SIZE - MALLOC_OVERHEAD;
pub(crate) const FIRST_CHUNK_ROOM: usize = FIRST_CHUNK_BLOCK - HEADER_SIZE;

/// What a typical `malloc` keeps in front of a block: requesting a power of two minus this keeps
/// the real block a power of two.
const MALLOC_OVERHEAD: usize = 2 * size_of::<usize>();

/// The header at the start of every chunk.
#[repr(C, align(16))]
pub(crate) struct ChunkHeader {
    /// The chunk before this one in the ring (itself when it is alone).
    pub(crate) prev: NonNull<ChunkHeader>,
    /// The chunk after this one in the ring (itself when it is alone).
    pub(crate) next: NonNull<ChunkHeader>,
    /// Total bytes of the block, header included, as returned by the backing allocator.
    pub(crate) size: usize,
    /// Bytes of this chunk that its arena's `used_before` counts: for a chunk before the current
    /// one, how far it was filled when the arena moved past it; for the current chunk 0, or its
    /// fill while a scope has parked there (see `RawArena::enter_scope`). Meaningless on a
    /// spare. Written only on slow paths (see `RawArena::leave_current`); read by the chunk
    /// iteration (`chunk_iter`). The field takes what was padding: the header stays 32 bytes.
    pub(crate) used: usize,
}

const _: () = assert!(HEADER_SIZE % CHUNK_ALIGN == 0);
// `used` takes what the alignment left as padding after the other three words (on 64- and 32-bit
// targets alike): recording a chunk's fill costs no header byte.
const _: () = assert!(HEADER_SIZE == (3 * size_of::<usize>()).next_multiple_of(CHUNK_ALIGN));
const _: () = assert!(HEADER_SIZE <= FIRST_CHUNK_SIZE / 4);

/// Where an arena's chunks come from and go back to: its backing allocator, behind a vtable so
/// that [`ArenaRef`](crate::ArenaRef) need not name the allocator's type.
pub(crate) trait ChunkSource {
    /// Takes a block for a chunk from the backing allocator; the failure says why it could not
    /// (out of memory, or a limit of the source).
    fn allocate_chunk(&self, layout: Layout) -> Result<NonNull<[u8]>, Failure>;

    /// Returns a chunk's block to the backing allocator.
    ///
    /// # Safety
    /// `ptr` was returned by [`allocate_chunk`](Self::allocate_chunk) of the same source with a
    /// layout of alignment [`CHUNK_ALIGN`], `layout` has that alignment and a size between the
    /// requested size and the returned length, and the block is not used afterwards.
    unsafe fn deallocate_chunk(&self, ptr: NonNull<u8>, layout: Layout);

    /// Takes a large block (see [`large`](super::large)) of at least `layout`'s size: from the
    /// backing allocator, or one the source kept for reuse (`growing`: for a block that grows,
    /// see `large_spares`). The slice's length is the size the block is given back with.
    fn allocate_large(&self, layout: Layout, growing: bool) -> Result<NonNull<[u8]>, Failure>;

    /// Returns a large block to the backing allocator.
    ///
    /// # Safety
    /// `ptr` is a block of `layout` that [`allocate_large`](Self::allocate_large) or
    /// [`resize_large`](Self::resize_large) of the same source returned, not used afterwards.
    unsafe fn deallocate_large(&self, ptr: NonNull<u8>, layout: Layout);

    /// Grows or shrinks a large block to `new` (the backing allocator's `grow` or `shrink`,
    /// which keep its bytes up to the smaller size); on failure the block is unchanged.
    ///
    /// # Safety
    /// `ptr` is a live block of `old` from this source, and `new` has `old`'s alignment.
    unsafe fn resize_large(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, Failure>;

    /// The allocation limit that caps this source (the arena's own, or for a `LocalArena` its
    /// `SyncArena`'s).
    fn allocation_limit(&self) -> Option<usize>;

    /// Whether the `Allocator` methods of the arenas on this source panic when that limit is
    /// reached, instead of returning `AllocError` (asked on failure paths only).
    fn panics_on_limit(&self) -> bool;

    /// Bytes of a chunk this source can hand out from memory it already holds: for a
    /// [`SyncArena`](crate::SyncArena), the rest of its current chunk, which a `LocalArena`'s
    /// next piece takes when its request fits there (see `RawArena::take_chunk`); 0 for a
    /// backing allocator. A hint read without a lock: another thread may take the rest first,
    /// and the piece then gets a chunk of its own.
    fn spare_room(&self) -> usize {
        0
    }

    /// Records that the cycle needed `bytes` in one chunk of this source: a handle's last block
    /// grew out of its piece into a large block that a chunk of that many bytes would have held
    /// where it grew (see `RawArena::retire_large`). Nothing for a backing allocator.
    fn note_need(&self, _bytes: usize) {}

    /// The large blocks the arena on this source keeps for reuse across resets (see
    /// `large_spares`): an `Arena`'s own. `None` for a source whose arenas are never reset on
    /// their own (a `LocalArena`, whose `SyncArena` keeps its blocks; the default): a large
    /// block freed there goes back at once.
    fn kept(&self) -> Option<&Spares> {
        None
    }

    /// Whether [`extend_chunk`](Self::extend_chunk) can ever hand out bytes: `false` for a
    /// backing allocator (the default), so that an arena over one compiles without the attempt
    /// (on `RawArena::move_last`, a path that growing collections take).
    fn extends_chunks(&self) -> bool {
        false
    }

    /// Hands the `more` bytes right after a chunk taken from this source to that chunk, if they
    /// are free: for a [`SyncArena`](crate::SyncArena), when the chunk (a `LocalArena`'s piece)
    /// ends at the cursor of the current shared chunk, which has the room; never for a backing
    /// allocator (the default). On `true` the bytes belong to the chunk's arena until the
    /// source's reset or drop, as the chunk's own do.
    ///
    /// # Safety
    /// `base` and `size` are the start and the current length of a chunk block this source
    /// returned from [`allocate_chunk`](Self::allocate_chunk), or of a range it lent from
    /// [`lend_piece`](Self::lend_piece) (lengthened by earlier calls), and the block is still in
    /// use by the arena that took it.
    unsafe fn extend_chunk(&self, base: NonNull<u8>, size: usize, more: usize) -> bool {
        let _ = (base, size, more);
        false
    }

    /// Lends a range of memory the source already holds, with room for `layout` at its start,
    /// for an arena's headless piece (see `bump::headless`): for a
    /// [`LocalArena`](crate::LocalArena), the rest of its thread's piece of the shared arena.
    /// `None` (the default) when the source lends nothing: the arena takes a chunk. Asked only
    /// of a source that [extends chunks](Self::extends_chunks). The range belongs to the arena
    /// until it gives its unused end back ([`give_back`](Self::give_back)); its blocks live
    /// until the source's reset or drop, as a chunk's do.
    fn lend_piece(&self, layout: Layout) -> Option<(NonNull<u8>, NonNull<u8>)> {
        let _ = layout;
        None
    }

    /// Takes back `[from, to)`, the unused end of a range lent by
    /// [`lend_piece`](Self::lend_piece), when it can hand those bytes out again (the range is
    /// still the last thing cut from where it came from). Returns whether it did; otherwise
    /// the bytes stay unused until the source's reset.
    ///
    /// # Safety
    /// `[from, to)` is the end of a range this source lent (lengthened by
    /// [`extend_chunk`](Self::extend_chunk)), which no block covers and which the arena does
    /// not use again.
    unsafe fn give_back(&self, from: NonNull<u8>, to: NonNull<u8>) -> bool {
        let _ = (from, to);
        false
    }
}

/// A chunk, seen through its header pointer. Copyable handle; the arena owns the memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Chunk(pub(crate) NonNull<ChunkHeader>);

impl Chunk {
    /// Writes a fresh header at the start of `block` and returns the chunk, a ring of one.
    ///
    /// # Safety
    /// `block` is valid for writes of its whole length, aligned to [`CHUNK_ALIGN`], at least
    /// [`HEADER_SIZE`] long, and not used by anything else.
    pub(crate) unsafe fn init(block: NonNull<[u8]>) -> Chunk {
        let header = block.cast::<ChunkHeader>();
        // SAFETY: the caller guarantees the block is writable, aligned for the header and long
        // enough to hold it.
        unsafe {
            header.write(ChunkHeader {
                prev: header,
                next: header,
                size: block.len(),
                used: 0,
            })
        };
        Chunk(header)
    }

    fn get_prev(self) -> NonNull<ChunkHeader> {
        // SAFETY: a `Chunk` only exists for a header written by `init` whose block the arena still
        // owns; this reads one field through the raw pointer without forming a reference.
        unsafe { (*self.0.as_ptr()).prev }
    }

    fn get_next(self) -> NonNull<ChunkHeader> {
        // SAFETY: as in `get_prev`.
        unsafe { (*self.0.as_ptr()).next }
    }

    fn set_prev(self, prev: Chunk) {
        // SAFETY: as in `get_prev`; the arena is `!Sync` and is the block's only user, so this
        // write races with nothing.
        unsafe { (*self.0.as_ptr()).prev = prev.0 }
    }

    fn set_next(self, next: Chunk) {
        // SAFETY: as in `set_prev`.
        unsafe { (*self.0.as_ptr()).next = next.0 }
    }

    /// The first usable byte, with the provenance of the whole block.
    #[inline]
    pub(crate) fn start(self) -> NonNull<u8> {
        // SAFETY: the header lies at the start of a block at least `HEADER_SIZE` long, so one past
        // the header is in bounds (or one past the end) of that block.
        unsafe { self.0.cast::<u8>().add(HEADER_SIZE) }
    }

    /// One past the last usable byte.
    #[inline]
    pub(crate) fn end(self) -> NonNull<u8> {
        // SAFETY: `size` is the length of the block that starts at the header.
        unsafe { self.0.cast::<u8>().add(self.size()) }
    }

    /// Usable bytes (the block less its header).
    pub(crate) fn capacity(self) -> usize {
        self.size() - HEADER_SIZE
    }

    /// Total bytes of the block.
    pub(crate) fn size(self) -> usize {
        // SAFETY: as in `get_prev`.
        unsafe { (*self.0.as_ptr()).size }
    }

    /// See [`ChunkHeader::used`].
    pub(crate) fn used(self) -> usize {
        // SAFETY: as in `get_prev`.
        unsafe { (*self.0.as_ptr()).used }
    }

    /// Sets [`ChunkHeader::used`] (at most the chunk's capacity).
    pub(crate) fn set_used(self, used: usize) {
        debug_assert!(used <= self.capacity());
        // SAFETY: as in `set_prev`.
        unsafe { (*self.0.as_ptr()).used = used }
    }

    /// Makes the chunk `more` bytes longer at its end.
    ///
    /// # Safety
    /// The `more` bytes after the chunk's end belong to the chunk now: they lie in the same
    /// allocation as its block, and nothing else uses them.
    pub(crate) unsafe fn lengthen(self, more: usize) {
        // SAFETY: as in `set_prev` (the header is the arena's alone); the caller vouches for the
        // bytes the longer block covers.
        unsafe { (*self.0.as_ptr()).size += more }
    }

    /// The chunk after this one in the ring (itself when it is alone).
    pub(crate) fn next(self) -> Chunk {
        Chunk(self.get_next())
    }

    /// The chunk before this one in the ring (itself when it is alone).
    pub(crate) fn prev(self) -> Chunk {
        Chunk(self.get_prev())
    }

    /// The layout the block was taken with (its returned length, which the contract allows).
    pub(crate) fn block_layout(self) -> Layout {
        // SAFETY: the block was allocated with alignment CHUNK_ALIGN and this length, so the pair
        // was a valid layout then and still is.
        unsafe { Layout::from_size_align_unchecked(self.size(), CHUNK_ALIGN) }
    }

    /// Whether a block of `layout` fits in this chunk when bumping from its start.
    pub(crate) fn fits(self, layout: Layout) -> bool {
        let start = self.start().addr().get();
        let pad = start.wrapping_neg() & (layout.align() - 1);
        pad + layout.size() <= self.capacity()
    }

    /// Takes this chunk out of its ring, joining its neighbours; it is left a ring of one.
    pub(crate) fn unlink(self) {
        let (prev, next) = (Chunk(self.get_prev()), self.next());
        prev.set_next(next);
        next.set_prev(prev);
        self.set_prev(self);
        self.set_next(self);
    }

    /// Inserts `chunk`, a ring of one, right after `self`.
    pub(crate) fn insert_after(self, chunk: Chunk) {
        let next = self.next();
        chunk.set_prev(self);
        chunk.set_next(next);
        next.set_prev(chunk);
        self.set_next(chunk);
    }
}

/// The chunks of a ring from `first` on, following `next`, up to but not including `stop`
/// (nothing when `first == stop`). Each chunk's successor is read before the chunk is yielded, so
/// the caller may unlink or release the yielded chunk (but not `stop`).
#[inline]
pub(crate) fn chunks_until(first: Chunk, stop: Chunk) -> impl Iterator<Item = Chunk> {
    let mut cur = (first != stop).then_some(first);
    core::iter::from_fn(move || {
        let c = cur?;
        let next = c.next();
        cur = (next != stop).then_some(next);
        Some(c)
    })
}

/// Every chunk of the ring of `first`, starting with `first`.
#[inline]
pub(crate) fn ring(first: Chunk) -> impl Iterator<Item = Chunk> {
    core::iter::once(first).chain(chunks_until(first.next(), first))
}

/// A chunk larger than both this many times the regular chunk and [`OUTSIZED_MIN`] is
/// "outsized": it does not raise the growth state (one huge request must not make every later
/// chunk huge), and a fresh outsized request gets a chunk of exactly its size.
const OUTSIZED_FACTOR: usize = 4;
/// Chunks up to this size always count for growth: a stream of mid-sized requests must grow the
/// chunks geometrically, not cost a backing call each.
const OUTSIZED_MIN: usize = 64 * 1024;

/// The block size to request for a chunk that must hold `layout`.
///
/// `growth` is the sum of the nominal sizes of the chunks taken so far that count for growth. A
/// regular chunk's nominal size is half that sum ([`regular_nominal`]). A request that does not
/// fit the regular chunk gets a chunk of its own size (twice its size when `slack` is set, for a
/// block that is growing, so it can keep growing in place: a block that grows one element at a
/// time then moves to chunks that double, which hold at most about twice the last one together),
/// rounded up as [`chunk_size_for_capacity`] rounds, which counts for growth unless it is
/// outsized; a fresh outsized request gets a chunk of exactly its size. Returns `(block size, nominal size to add
/// to the growth state)`, or `None` when the sizes overflow.
pub(crate) fn chunk_size_for(layout: Layout, growth: usize, slack: bool) -> Option<(usize, usize)> {
    let own = min_chunk_size(layout)?;
    let nominal = regular_nominal(growth);
    let regular = nominal - MALLOC_OVERHEAD;
    if own <= regular {
        return Some((regular, nominal));
    }
    let wanted = if slack { own.saturating_mul(2) } else { own };
    let rounded = wanted
        .checked_add(MALLOC_OVERHEAD)
        .and_then(round_block)
        .map(|nominal| nominal - MALLOC_OVERHEAD)
        .filter(|&size| Layout::from_size_align(size, CHUNK_ALIGN).is_ok())
        .unwrap_or(own);
    let limit = nominal.saturating_mul(OUTSIZED_FACTOR).max(OUTSIZED_MIN);
    Some(if rounded + MALLOC_OVERHEAD <= limit {
        (rounded, rounded + MALLOC_OVERHEAD)
    } else if slack {
        (rounded, 0)
    } else {
        (own, 0)
    })
}

/// What a new chunk is for, for [`new_chunk_size`]: both arenas size their chunks with it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewChunk {
    /// The request the chunk must hold wherever it lands.
    pub(crate) layout: Layout,
    /// The growth state (see [`chunk_size_for`]).
    pub(crate) growth: usize,
    /// The request is a growing block: room to grow (see [`chunk_size_for`]).
    pub(crate) slack: bool,
    /// A chunk of exactly the request's own size rather than a regular one (a `LocalArena`'s
    /// piece of a `SyncArena`'s chunk: the handle's pieces grow as chunks do).
    pub(crate) own: bool,
    /// Usable bytes of the chunk a reset planned for a whole cycle (0: none), taken when it holds
    /// the request.
    pub(crate) plan: usize,
    /// The allocation limit, and the bytes left under it (counting what is held and being
    /// taken), when one is set.
    pub(crate) limit: Option<(usize, usize)>,
}

/// The block size and nominal size (for the growth state) of a new chunk: regular, or the
/// request's own, or the planned one when it holds the request; capped by the bytes left under
/// the limit, down to the smallest chunk that holds the request (growth then counts what was
/// taken). Fails when the size overflows or the limit leaves too little.
#[inline(always)]
pub(crate) fn new_chunk_size(c: NewChunk) -> Result<(usize, usize), Failure> {
    // The request's own chunk is worked out only where it is needed (the regular size is
    // the common case, and `chunk_size_for` finds it by itself).
    let own = || min_chunk_size(c.layout).ok_or(Failure::CapacityOverflow);
    let (mut size, mut nominal) = if c.own {
        let own = own()?;
        (own, own)
    } else {
        chunk_size_for(c.layout, c.growth, c.slack).ok_or(Failure::CapacityOverflow)?
    };
    if c.plan != 0 {
        if let Some((planned, planned_nominal)) = chunk_size_for_capacity(c.plan) {
            if own()? <= planned {
                (size, nominal) = (planned, planned_nominal);
            }
        }
    }
    if let Some((limit, left)) = c.limit {
        if size > left {
            if own()? > left {
                return Err(Failure::LimitReached { limit });
            }
            size = left & !(CHUNK_ALIGN - 1);
            nominal = nominal.min(size);
        }
    }
    Ok((size, nominal))
}

/// The smallest block size whose chunk holds `layout` wherever the block lands; `None` when it
/// overflows or is not a valid layout.
pub(crate) fn min_chunk_size(layout: Layout) -> Option<usize> {
    // Data starts CHUNK_ALIGN-aligned, so reaching a larger alignment costs at most this padding.
    let pad = layout.align().saturating_sub(CHUNK_ALIGN);
    let own = HEADER_SIZE
        .checked_add(pad)?
        .checked_add(layout.size())?
        .checked_next_multiple_of(CHUNK_ALIGN)?;
    // The block must be a valid layout: at most isize::MAX once rounded to its alignment.
    Layout::from_size_align(own, CHUNK_ALIGN).ok()?;
    Some(own)
}

/// The nominal size of the next regular chunk for a growth state (the sum of the regular chunks
/// so far): [`FIRST_CHUNK_SIZE`] for the first, then half the sum, rounded up to [`SIZE_UNIT`]
/// up to a page and to whole pages above, from [`SIZE_UNIT`] up to [`MAX_CHUNK_SIZE`]. The
/// chunks together grow by half with each new one, so a fresh arena holds about 1.5x the chunks
/// it has filled (doubling would be 2x; what it handed out can be less, by the rest of each chunk
/// a block did not fit); a reset loop settles in one chunk through retention, which renews the
/// chunks for the cycle's need (see `retention`).
pub(crate) fn regular_nominal(growth: usize) -> usize {
    if growth == 0 {
        return FIRST_CHUNK_SIZE;
    }
    let half = (growth / 2).clamp(SIZE_UNIT, MAX_CHUNK_SIZE);
    if half <= PAGE {
        half.next_multiple_of(SIZE_UNIT)
    } else {
        half.next_multiple_of(PAGE)
    }
}

/// What a typical `malloc` hands out without rounding above a page: blocks of whole pages.
const PAGE: usize = 4096;

/// The block size for a chunk that gives at least `capacity` usable bytes, rounded up only a
/// little (to 512 bytes up to 32 KiB, to whole pages above: at most a page more than asked, and
/// at most an eighth), with its nominal size; `None` on overflow. For `with_capacity`, and for
/// the chunks retention plans.
pub(crate) fn chunk_size_for_capacity(capacity: usize) -> Option<(usize, usize)> {
    let required = capacity
        .checked_add(HEADER_SIZE)?
        .checked_add(MALLOC_OVERHEAD)?;
    let nominal = round_block(required)?;
    let size = nominal - MALLOC_OVERHEAD;
    Layout::from_size_align(size, CHUNK_ALIGN).ok()?;
    Some((size, nominal))
}

/// A block size rounded up a little, as malloc likes it: to [`SIZE_UNIT`] (512 bytes) up to
/// 32 KiB, to whole pages above; `None` on overflow.
fn round_block(required: usize) -> Option<usize> {
    if required <= 8 * PAGE {
        Some(required.next_multiple_of(SIZE_UNIT))
    } else {
        required.checked_next_multiple_of(PAGE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_chunk_shortcut_takes_what_the_general_sizing_takes() {
        for (size, align) in [
            (1, 1),
            (4, 4),
            (FIRST_CHUNK_ROOM, 1),
            (FIRST_CHUNK_ROOM, 16),
        ] {
            let layout = Layout::from_size_align(size, align).unwrap();
            assert_eq!(
                chunk_size_for(layout, 0, false),
                Some((FIRST_CHUNK_BLOCK, FIRST_CHUNK_SIZE)),
                "{layout:?}"
            );
        }
        // One byte more no longer fits a first regular chunk.
        let over = Layout::from_size_align(FIRST_CHUNK_ROOM + 1, 1).unwrap();
        assert_ne!(chunk_size_for(over, 0, false).unwrap().0, FIRST_CHUNK_BLOCK);
    }

    #[test]
    fn regular_chunks_are_half_the_sum_of_the_previous_ones() {
        let mut growth = 0;
        let mut sum = 0;
        for _ in 0..40 {
            let (size, nominal) = chunk_size_for(Layout::new::<u64>(), growth, false).unwrap();
            assert!(
                nominal >= (sum / 2).min(MAX_CHUNK_SIZE),
                "nominal {nominal} < half the previous {sum}"
            );
            assert!(
                nominal <= (sum / 2).max(SIZE_UNIT) + PAGE,
                "nominal {nominal} for previous {sum}"
            );
            assert_eq!(size + MALLOC_OVERHEAD, nominal);
            sum += nominal;
            growth += nominal;
        }
        assert!(sum > 16 << 20);
    }

    #[test]
    fn growth_is_capped_and_oversized_requests_do_not_raise_it() {
        let (_, nominal) = chunk_size_for(Layout::new::<u8>(), usize::MAX / 2, false).unwrap();
        assert_eq!(nominal, MAX_CHUNK_SIZE);
        let big = Layout::from_size_align(MAX_CHUNK_SIZE * 2, 8).unwrap();
        let (size, nominal) = chunk_size_for(big, 0, false).unwrap();
        assert_eq!(nominal, 0);
        assert!(size >= MAX_CHUNK_SIZE * 2 + HEADER_SIZE);
        // A request far above the regular chunk does not count for growth either.
        let (size, nominal) = chunk_size_for(Layout::new::<[u8; 65536]>(), 0, false).unwrap();
        assert_eq!(nominal, 0);
        assert!(size >= 65536 + HEADER_SIZE);
    }

    #[test]
    fn mid_sized_requests_count_for_growth_and_growing_blocks_get_slack() {
        let layout = Layout::new::<[u8; 1000]>();
        let (size, nominal) = chunk_size_for(layout, 0, false).unwrap();
        assert!(size >= 1000 + HEADER_SIZE && nominal == size + MALLOC_OVERHEAD);
        let (slack, _) = chunk_size_for(layout, 0, true).unwrap();
        assert!(slack >= 2 * (1000 + HEADER_SIZE));
    }

    #[test]
    fn capacities_are_rounded_to_at_most_a_page_more() {
        for capacity in [0, 1, 100, 400, 4000, 4096, 40_000, 1 << 20, (1 << 20) + 1] {
            let (size, nominal) = chunk_size_for_capacity(capacity).unwrap();
            assert!(size - HEADER_SIZE >= capacity, "{capacity}");
            assert!(
                size <= capacity.max(FIRST_CHUNK_ROOM) + HEADER_SIZE + PAGE,
                "{capacity}"
            );
            assert_eq!(nominal, size + MALLOC_OVERHEAD);
            assert!(nominal % SIZE_UNIT == 0, "{capacity}");
            assert!(nominal <= 8 * PAGE || nominal % PAGE == 0, "{capacity}");
        }
    }

    #[test]
    fn a_new_chunk_is_regular_own_or_planned_and_within_the_limit() {
        let small = Layout::new::<u64>();
        let req = |layout, own, plan, limit| NewChunk {
            layout,
            growth: 4096,
            slack: false,
            own,
            plan,
            limit,
        };
        let regular = chunk_size_for(small, 4096, false).unwrap();
        assert_eq!(
            new_chunk_size(req(small, false, 0, None)).ok(),
            Some(regular)
        );
        let own = min_chunk_size(small).unwrap();
        assert_eq!(
            new_chunk_size(req(small, true, 0, None)).ok(),
            Some((own, own))
        );
        // A plan that holds the request is taken; one that does not is not.
        let planned = chunk_size_for_capacity(100_000).unwrap();
        assert_eq!(
            new_chunk_size(req(small, false, 100_000, None)).ok(),
            Some(planned)
        );
        let big = Layout::from_size_align(200_000, 8).unwrap();
        assert_eq!(
            new_chunk_size(req(big, false, 100_000, None)).ok(),
            chunk_size_for(big, 4096, false)
        );
        // Under a limit: capped to what is left, down to the request's own chunk, else refused.
        let (size, nominal) =
            new_chunk_size(req(small, false, 100_000, Some((1 << 20, 5000)))).unwrap();
        assert_eq!((size, nominal), (4992, planned.1.min(4992)));
        assert!(matches!(
            new_chunk_size(req(small, false, 0, Some((64, 16)))),
            Err(Failure::LimitReached { limit: 64 })
        ));
    }

    #[test]
    fn overflowing_requests_are_refused() {
        let huge = Layout::from_size_align(isize::MAX as usize - 4095, 4096).unwrap();
        assert_eq!(chunk_size_for(huge, 0, false), None);
        assert_eq!(chunk_size_for_capacity(usize::MAX - 8), None);
    }
}
