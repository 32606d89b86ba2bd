//! [`SyncArena`]: a bump arena shared by threads. The bump is one compare-and-swap on the current
//! chunk's cursor; taking a new chunk happens under a lock.

use core::alloc::Layout;
use core::fmt;
use core::ptr::{self, NonNull};

use allocator_api2::alloc::{AllocError, Allocator, Global};

use super::shim::{AtomicPtr, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::arena::resize::{self, Front};
use crate::arena::{
    ArenaStats, Budget, Checkpoint, ChunkSource, Core, Cycle, HEADER_SIZE, LARGE_THRESHOLD,
    LargeList, NewChunk, Plan, Position, Recent, chunk_size_for_capacity, dangling, min_chunk_size,
    next_probe, plan, refuse, satisfies,
};
use crate::error::Failure;
use crate::reentry::OnUnwind;
use crate::sync::LocalArena;

mod large_blocks;

/// The header at the start of every chunk of a [`SyncArena`].
struct SharedHeader {
    /// Address of the next free byte. Only moved by compare-and-swap (or under `&mut`).
    cursor: AtomicUsize,
    /// Where bumps stop (an address): the chunk's end, or below it while a reset's probe holds
    /// the chunk (see `crate::arena::retention`; only the probe's chunk, `Chunks::probe`). Only
    /// raised, under the lock; set under `&mut`.
    limit: AtomicUsize,
    /// Size of the block taken from the backing allocator; written before the chunk is linked
    /// or published, fixed after. The chunk's usable bytes end where the block does
    /// ([`SharedChunk::end`]: not stored, so the header stays 32 bytes).
    size: usize,
    /// The next chunk of the list this chunk is on (used chunks, newest first; or spares).
    /// Read and written only under the lock or `&mut SyncArena` (the lists are the lock's).
    next: Option<NonNull<SharedHeader>>,
}

/// Offset of a chunk's first usable byte: the header, rounded up so that data starts aligned to
/// the chunk's alignment (under loom, whose atomics are larger, the header is too).
const DATA_OFFSET: usize = size_of::<SharedHeader>().next_multiple_of(CHUNK_ALIGN);
/// Alignment of every chunk block, hence of every chunk's first usable byte.
const CHUNK_ALIGN: usize = crate::arena::CHUNK_ALIGN;
/// Header bytes beyond the `Arena`'s chunk header (zero except under loom): added to a request so
/// that the `Arena`'s sizing policy, which counts its own header, sizes our chunks.
const EXTRA_HEADER: usize = DATA_OFFSET.saturating_sub(HEADER_SIZE);
// Outside loom, a shared chunk's header is no larger than an `Arena` chunk's: the two take the
// same chunk sizes for the same blocks (16 bytes more moved a row of the memory suite from 76.0
// to 104.8 KiB, a cycle's last block spilling into one more chunk).
#[cfg(not(loom))]
const _: () = assert!(EXTRA_HEADER == 0);

/// A handle to a chunk (the block's own pointer, which carries its provenance).
///
/// The header is reached one field at a time, never as a whole `&SharedHeader`: a thread that
/// reaches the chunk without the lock (through `current`) uses its atomics (`cursor`, `limit`)
/// and reads `size`, while `next` is only read and written under the lock (or `&mut`), so that
/// relinking a list never writes memory that a thread without the lock reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct SharedChunk(NonNull<SharedHeader>);

impl SharedChunk {
    /// The cursor, for any thread that reaches the chunk.
    fn cursor(&self) -> &AtomicUsize {
        // SAFETY: a `SharedChunk` is only made for an initialised header, and the arena keeps the block
        // until `&mut self` methods or drop, none of which runs while a `&self` borrow (and so a
        // chunk handle in use) is alive. The reference covers the atomic field only.
        unsafe { &(*self.0.as_ptr()).cursor }
    }

    /// The limit, for any thread that reaches the chunk.
    fn limit(&self) -> &AtomicUsize {
        // SAFETY: as in `cursor`.
        unsafe { &(*self.0.as_ptr()).limit }
    }

    /// Links this chunk to `next`. Only under the lock or `&mut SyncArena`.
    fn set_next(&self, next: Option<SharedChunk>) {
        // SAFETY: the header is initialised and kept (as in `cursor`); `next` is read and written
        // only under the lock or `&mut self` (see `next`), which the caller holds, so this write
        // excludes every other access to it, and no reference to the field (or to the whole
        // header) is alive.
        unsafe { (*self.0.as_ptr()).next = next.map(|c| c.0) };
    }

    /// The next chunk of the list. Only under the lock or `&mut SyncArena`.
    fn next(&self) -> Option<SharedChunk> {
        // SAFETY: as in `set_next`: the caller holds the lock or `&mut`, which orders this read
        // after every write of the field.
        unsafe { (*self.0.as_ptr()).next.map(SharedChunk) }
    }

    fn start(&self) -> usize {
        self.0.addr().get() + DATA_OFFSET
    }

    /// Size of the block taken from the backing allocator.
    fn size(&self) -> usize {
        // SAFETY: as in `cursor`. `size` is written once, before the chunk is linked or published
        // (a thread reaches it through the lock, or the Release store of `current` that its
        // Acquire load sees), and never again.
        unsafe { (*self.0.as_ptr()).size }
    }

    /// One past the last usable byte (an address): the end of the block.
    fn end(&self) -> usize {
        self.0.addr().get() + self.size()
    }

    fn block_layout(&self) -> Layout {
        // SAFETY: the block was allocated with this size and alignment.
        unsafe { Layout::from_size_align_unchecked(self.size(), CHUNK_ALIGN) }
    }

    /// A pointer to `addr` inside this chunk, with the block's provenance.
    fn at(&self, addr: usize) -> NonNull<u8> {
        debug_assert!(addr >= self.start() && addr <= self.end());
        // SAFETY: `addr` lies inside the chunk's block, which does not contain address 0.
        unsafe { NonNull::new_unchecked(self.0.as_ptr().cast::<u8>().with_addr(addr)) }
    }

    /// Bumps `layout` with a compare-and-swap loop; `None` when it does not fit. (An empty layout
    /// takes its padding only: the typed API may pass one of alignment 1.)
    #[inline(always)]
    fn bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        let (cursor, limit) = (self.cursor(), self.limit());
        // Relaxed: a stale value only makes the first compare-and-swap fail.
        let mut cur = cursor.load(Ordering::Relaxed);
        loop {
            let pad = cur.wrapping_neg() & (layout.align() - 1);
            // `pad + size` cannot overflow, and is at most `isize::MAX` (see `RawArena::bump`).
            // `cur <= end`, and `limit - cur` is exact as an `isize` (both lie in one chunk). It
            // is negative when a stale limit (read Relaxed: it only rises while threads share
            // the arena) lies below a cursor another thread has moved past it: nothing fits
            // then, and the request takes the locked path, which sees the latest limit.
            let room = limit.load(Ordering::Relaxed).wrapping_sub(cur) as isize;
            if (pad + layout.size()) as isize > room {
                return None;
            }
            let start = cur + pad;
            // Acquire on success: the bytes may have been given back by another thread
            // (`deallocate`/`shrink` of the last block, a `LocalArena`'s unused tail) with a
            // Release compare-and-swap; their last writes must happen before ours.
            match cursor.compare_exchange_weak(
                cur,
                start + layout.size(),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(self.at(start)),
                Err(now) => cur = now,
            }
        }
    }

    /// Moves the cursor from `from` to `to` if it is at `from`: growing or shrinking the last
    /// block in place (or giving a tail back). Returns whether it moved.
    #[inline(always)]
    fn move_cursor(&self, from: usize, to: usize) -> bool {
        // AcqRel: moving back releases bytes our writes touched; moving forward acquires bytes
        // another thread may have released.
        self.cursor()
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Bytes handed out from this chunk.
    fn used(&self) -> usize {
        self.cursor().load(Ordering::Relaxed) - self.start()
    }

    fn capacity(&self) -> usize {
        self.end() - self.start()
    }

    /// Whether a probe holds the chunk below its end.
    fn probed(&self) -> bool {
        self.limit().load(Ordering::Relaxed) != self.end()
    }
}

/// What a request placed on the shared path is, which decides the size of a new chunk taken for
/// it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Request {
    /// A block: a regular chunk of the growth state (or one of its own size, if larger).
    Block,
    /// The new block of a grow that could not stay in place: as `Block`, with room to go on
    /// growing in place (twice its size, as `Arena`'s growing blocks get) when the chunk is of
    /// its own size.
    Grown,
    /// A [`LocalArena`]'s piece: a chunk of the piece's own size (or the chunk a reset planned),
    /// not a regular chunk of the growth state. A handle's pieces grow like an arena's chunks,
    /// so a regular chunk sized for them would keep a rest that the handle's next, larger piece
    /// does not fit: memory held twice over, once by each level of growth.
    Piece,
}

/// A reset's probe (see `crate::arena::retention`): the chunk whose `limit` it holds.
#[derive(Clone, Copy)]
struct SharedProbe {
    chunk: SharedChunk,
    /// A request has met the probe (and moved it up).
    met: bool,
}

/// The chunk lists and accounting, guarded by the arena's lock.
struct Chunks {
    /// Chunks in use, newest (the current one) first.
    used: Option<SharedChunk>,
    /// Chunks kept by `reset` for reuse.
    spares: Option<SharedChunk>,
    /// Sum of the nominal sizes of the regular chunks taken (drives the next chunk's size).
    growth: usize,
    /// Bytes held from the backing allocator, headers included.
    held: usize,
    /// Chunks held.
    count: usize,
    /// Cap on `held`.
    limit: Option<usize>,
    /// Whether the `Allocator` methods (this arena's and its handles') panic at the limit.
    panic_on_limit: bool,
    /// Bytes being taken from the backing allocator right now, which happens with the lock
    /// released: counted against the limit until they arrive.
    pending: usize,
    /// The shared path's large blocks, and those of dropped handles.
    large: LargeList,
    /// Bytes, data bytes and number of every large block taken through this arena (the
    /// handles' included).
    large_bytes: usize,
    large_data: usize,
    large_count: usize,
    /// The needs of the last cycles (see `crate::arena::retention`).
    recent: Recent,
    /// Usable bytes of the next chunk taken, when a reset planned it (0: sized as usual).
    plan: usize,
    /// Usable bytes reserved by `with_capacity`: a reset never keeps less.
    reserved: usize,
    /// The most data bytes of large blocks held at once since the last reset.
    large_peak: usize,
    /// The most bytes the chunks were seen to hold at a roll-back of at least the large-block
    /// threshold since the last reset (what the chunks held before it, which a reset cannot see).
    chunk_peak: usize,
    /// The probe a reset set on the chunk it kept, for the cycle after it.
    probe: Option<SharedProbe>,
}

impl Chunks {
    /// Holds the chunk `c` under a probe `reached` bytes from its start (`reached` below its
    /// capacity), for the cycle after a reset; the reset that follows lifts it.
    fn set_probe(&mut self, c: SharedChunk, reached: usize) {
        debug_assert!(reached < c.capacity() && self.probe.is_none());
        c.limit().store(c.start() + reached, Ordering::Relaxed);
        self.probe = Some(SharedProbe {
            chunk: c,
            met: false,
        });
    }

    /// What the arena holds from the backing allocator (the bytes being taken included), and
    /// its limit.
    fn budget(&self) -> Budget {
        Budget {
            limit: self.limit,
            held: self.held + self.pending + self.large_bytes,
        }
    }

    /// Counts a chunk of `size` bytes just taken, of `nominal` bytes for the growth state.
    fn record(&mut self, size: usize, nominal: usize) {
        self.held += size;
        self.count += 1;
        self.growth = self.growth.saturating_add(nominal);
    }
}

// SAFETY: `Chunks` holds pointers to chunks the arena owns exclusively; they are only followed
// under the arena's lock or through `&mut SyncArena`, so moving the list to another thread (inside
// the lock) is sound.
unsafe impl Send for Chunks {}

/// A bump arena that threads share: `&SyncArena` allocates from any thread, as an
/// [`Allocator`] and through typed helpers, and every block stays valid until the arena is
/// [`reset`](SyncArena::reset) or dropped.
///
/// - **Shared path**: each allocation is one compare-and-swap on the current chunk's cursor; a
///   thread that finds the chunk full takes a new one under a lock, while the others keep
///   bumping.
/// - **Per-thread path**: [`local`](SyncArena::local) gives a [`LocalArena`] that takes pieces of
///   the shared arena and bumps inside them with no atomic operation at all; its typed helpers
///   return references that live as long as the `SyncArena` borrow, so a thread can build part of
///   a shared result and hand it out.
/// - **Typed API** on both paths: the methods of [`BumpAlloc`](crate::BumpAlloc), also inherent
///   on `SyncArena` and `LocalArena` (no import needed).
/// - The last block of the current chunk can be grown, shrunk or given back in place (one
///   compare-and-swap), so a `Vec` growing alone at the end of the arena does not copy.
/// - Values are never dropped by the arena (as with [`Arena`](crate::Arena)).
///
/// `SyncArena` is `Sync` when `A` is, and `Send` when `A` is.
///
/// ```
/// use arena_pool::SyncArena;
///
/// let arena = SyncArena::new();
/// let parts: Vec<&[u32]> = std::thread::scope(|s| {
///     let jobs: Vec<_> = (0..4u32)
///         .map(|t| {
///             let arena = &arena;
///             s.spawn(move || {
///                 let local = arena.local();
///                 &*local.alloc_slice_fill_with(100, |i| t * 1000 + i as u32)
///             })
///         })
///         .collect();
///     jobs.into_iter().map(|j| j.join().unwrap()).collect()
/// });
/// assert_eq!(parts[3][99], 3099);
/// assert_eq!(*arena.alloc(7u8), 7); // the shared path
/// ```
pub struct SyncArena<A: Allocator = Global> {
    /// The chunk being bumped (null before the first one). Stored with Release after the chunk's
    /// header is written, loaded with Acquire.
    current: AtomicPtr<SharedHeader>,
    chunks: Mutex<Chunks>,
    alloc: A,
}

impl SyncArena {
    /// An empty arena on the global allocator. Allocates nothing until the first allocation.
    #[must_use]
    pub fn new() -> SyncArena {
        SyncArena::new_in(Global)
    }

    /// An arena on the global allocator whose first chunk holds at least `capacity` bytes.
    ///
    /// # Panics
    /// When the capacity overflows; calls `handle_alloc_error` when the allocator fails.
    ///
    /// ```
    /// let arena = arena_pool::SyncArena::with_capacity(1 << 16);
    /// assert!(arena.stats().chunk_capacity >= 1 << 16);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_capacity(capacity: usize) -> SyncArena {
        SyncArena::with_capacity_in(capacity, Global)
    }
}

impl Default for SyncArena {
    fn default() -> SyncArena {
        SyncArena::new()
    }
}

impl<A: Allocator> SyncArena<A> {
    /// An empty arena taking its chunks from `alloc`.
    ///
    /// # The backing allocator
    /// Chunks are taken from `alloc` with the arena's lock released (their size counted against
    /// the limit meanwhile), so a slow `alloc` holds up no other thread, and:
    /// - **it may panic**: the arena is then as it was before the request (nothing is left
    ///   counted against the limit), every block in place;
    /// - **its `deallocate` may panic** (in a reset, [`trim`](SyncArena::trim), the drop, or when
    ///   a large block is freed or moved): the arena then no longer refers to the block it was
    ///   giving back, or counts it, and stays usable, with the chunks it had not given back yet.
    ///   Such a `deallocate` must leave its block allocated (it is leaked), as for
    ///   [`Arena::new_in`](crate::Arena::new_in);
    /// - **it may use this arena** (allocate, free, read the statistics): every such nested call
    ///   is served, including one that takes a chunk of its own.
    ///
    /// A [`LocalArena`] takes its pieces through the shared path; a nested request to the *same
    /// handle* that needs a new piece is refused (as for [`Arena::new_in`](crate::Arena::new_in)).
    pub fn new_in(alloc: A) -> SyncArena<A> {
        SyncArena {
            current: AtomicPtr::new(ptr::null_mut()),
            chunks: Mutex::new(Chunks {
                used: None,
                spares: None,
                growth: 0,
                held: 0,
                count: 0,
                limit: None,
                panic_on_limit: false,
                pending: 0,
                large: LargeList::new(),
                large_bytes: 0,
                large_data: 0,
                large_count: 0,
                recent: Recent::new(),
                plan: 0,
                reserved: 0,
                large_peak: 0,
                chunk_peak: 0,
                probe: None,
            }),
            alloc,
        }
    }

    /// An arena taking its chunks from `alloc`, whose first chunk holds at least `capacity`
    /// bytes.
    ///
    /// # Panics
    /// When the capacity overflows; calls `handle_alloc_error` when `alloc` fails.
    #[track_caller]
    pub fn with_capacity_in(capacity: usize, alloc: A) -> SyncArena<A> {
        match SyncArena::reserved(capacity, alloc) {
            Ok(arena) => arena,
            Err(e) => e.raise(),
        }
    }

    /// Like [`with_capacity_in`](SyncArena::with_capacity_in), returning `Err` instead of
    /// panicking.
    pub fn try_with_capacity_in(capacity: usize, alloc: A) -> Result<SyncArena<A>, AllocError> {
        SyncArena::reserved(capacity, alloc).map_err(|_| AllocError)
    }

    fn reserved(capacity: usize, alloc: A) -> Result<SyncArena<A>, Failure> {
        let mut arena = SyncArena::new_in(alloc);
        let (size, nominal) = capacity
            .checked_add(EXTRA_HEADER)
            .and_then(chunk_size_for_capacity)
            .ok_or(Failure::CapacityOverflow)?;
        let c = arena.take_block(size)?;
        let chunks = arena.chunks.get_mut();
        chunks.record(size, nominal);
        chunks.reserved = c.capacity();
        chunks.used = Some(c);
        arena.current.store(c.0.as_ptr(), Ordering::Release);
        Ok(arena)
    }

    /// The backing allocator.
    pub fn allocator(&self) -> &A {
        &self.alloc
    }

    /// A per-thread handle that bumps without atomic operations inside pieces taken from this
    /// arena. Its blocks, like all of this arena's, stay valid until the arena is reset or
    /// dropped; dropping the handle gives the unused end of its last piece back when no other
    /// thread took memory after it.
    ///
    /// ```
    /// let arena = arena_pool::SyncArena::new();
    /// let s = arena.local().alloc_str("built on one thread");
    /// assert_eq!(s, "built on one thread"); // outlives the handle
    /// ```
    pub fn local(&self) -> LocalArena<'_, A> {
        LocalArena::new(self)
    }

    /// Caps the bytes held from the backing allocator (chunk headers included, large blocks
    /// and the pieces of [`LocalArena`] handles too); `None` removes the cap. Allocations that
    /// would need more fail (`Err` from the fallible API, the `try_` and `Allocator` methods; a
    /// panic from the others); memory already held stays.
    ///
    /// **In collections the limit aborts**, as with [`Arena`](crate::Arena): the infallible
    /// methods of `Vec`, `Box` and `hashbrown::HashMap` call `handle_alloc_error` on an `Err`,
    /// which aborts the process. Reserve with their fallible methods (`Vec::try_reserve`,
    /// `HashMap::try_reserve`, `Box::try_new_in`) or turn on
    /// [`set_panic_on_limit`](Self::set_panic_on_limit); see
    /// [`Arena::set_allocation_limit`](crate::Arena::set_allocation_limit).
    ///
    /// ```
    /// use arena_pool::SyncArena;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let arena = SyncArena::new();
    /// arena.set_allocation_limit(Some(8192));
    /// let mut v: Vec<u8, &SyncArena> = Vec::new_in(&arena);
    /// assert!(v.try_reserve(100_000).is_err());
    /// assert!(v.try_reserve(1000).is_ok());
    /// assert_eq!(arena.local().allocation_limit(), Some(8192)); // its handles share it
    /// ```
    pub fn set_allocation_limit(&self, limit: Option<usize>) {
        self.chunks.lock().limit = limit;
    }

    /// The allocation limit, if one is set.
    pub fn allocation_limit(&self) -> Option<usize> {
        self.chunks.lock().limit
    }

    /// With `true`, the `Allocator` methods of this arena and of its [`LocalArena`] handles
    /// panic when the [allocation limit](Self::set_allocation_limit) is reached ("arena-pool:
    /// the arena's allocation limit of N bytes is reached") instead of returning
    /// `Err(AllocError)`, so that a collection's `push` or `insert` past the limit unwinds, on
    /// the thread that made it, rather than aborting the process. As for
    /// [`Arena::set_panic_on_limit`](crate::Arena::set_panic_on_limit): the arena is consistent
    /// when the panic unwinds, the collections' fallible calls (`try_reserve`) panic too, the
    /// arena's own `try_` methods still return `Err`, and only the limit panics (not the backing
    /// allocator running out of memory).
    ///
    /// ```
    /// use std::panic::{AssertUnwindSafe, catch_unwind};
    /// use arena_pool::SyncArena;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let arena = SyncArena::new();
    /// arena.set_allocation_limit(Some(64 * 1024));
    /// arena.set_panic_on_limit(true);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         let local = arena.local();
    ///         let too_big = catch_unwind(AssertUnwindSafe(|| {
    ///             let mut v = Vec::new_in(&local);
    ///             v.extend(0..1_000_000u32);
    ///         }));
    ///         assert!(too_big.is_err()); // a panic on this thread, not an abort
    ///         assert_eq!(local.alloc_str("still usable"), "still usable");
    ///     });
    /// });
    /// ```
    pub fn set_panic_on_limit(&self, panic: bool) {
        self.chunks.lock().panic_on_limit = panic;
    }

    /// Whether the `Allocator` methods panic at the allocation limit (see
    /// [`set_panic_on_limit`](Self::set_panic_on_limit)).
    pub fn panics_on_limit(&self) -> bool {
        self.chunks.lock().panic_on_limit
    }

    /// Forgets every block, gives the large blocks back, and keeps one chunk, sized for what
    /// recent cycles needed, as [`Arena::reset`](crate::Arena::reset) does; every other chunk
    /// goes back to the backing allocator. A `LocalArena` handle's pieces count as used in full,
    /// except the last one of a dropped handle, which counts what the handle used of it (in full
    /// when the handle had rolled back every block in it); and a new piece takes the rest of the
    /// current chunk when the request it is for fits there, so a steady loop of handles settles
    /// in one chunk. An oversized chunk is first kept under a probe, which requests that reach it raise
    /// under the refill lock.
    pub fn reset(&mut self) {
        self.free_all_large();
        let chunks = self.chunks.get_mut();
        // Move every used chunk onto the spare list, counting what the cycle used, then rewind
        // every spare's cursor and find the largest. `&mut self`: no other thread is inside the
        // arena, no block is used again.
        // What the cycle used: the most its chunks held (now, or before a big roll-back), and
        // the most its large blocks held at once.
        let mut in_chunks = 0;
        let mut used = chunks.used.take();
        // A cycle that moved on to further chunks and gave back all it had bumped in its last
        // one (the current chunk, first of the list) reached an unknown height there, unless a
        // roll-back it saw says (below): at most the whole chunk. (0: the need is known.)
        let mut bound = 0;
        if let Some(c) = used {
            if c.used() == 0 && c.next().is_some() {
                bound = c.capacity();
            }
        }
        while let Some(c) = used {
            in_chunks += c.used();
            used = c.next();
            c.set_next(chunks.spares);
            chunks.spares = Some(c);
        }
        let chunk_peak = core::mem::take(&mut chunks.chunk_peak);
        if chunk_peak > in_chunks {
            // A roll-back seen this cycle says how far it reached.
            bound = 0;
        }
        let mut now = in_chunks
            .max(chunk_peak)
            .saturating_add(core::mem::take(&mut chunks.large_peak));
        // A cycle that ran under a probe reached no further than it in its chunk; when it met the
        // probe, that bound is its need (its blocks may all have been given back since). One
        // that never met it needed less than the renewal the probe stands for.
        // Only the probe's chunk has its limit below its end: it is lifted here.
        let probed = chunks.probe.take().map(|probe| {
            let c = probe.chunk;
            if probe.met {
                now = now.max(c.limit().load(Ordering::Relaxed) - c.start());
            }
            c.limit().store(c.end(), Ordering::Relaxed);
            probe.met
        });
        if bound != 0 {
            bound += now;
        }
        let mut largest: Option<SharedChunk> = None;
        let mut spare = chunks.spares;
        while let Some(c) = spare {
            c.cursor().store(c.start(), Ordering::Relaxed);
            // A `LocalArena` may have poisoned bytes of its pieces (ASan builds): the shared
            // path hands them out again as they are.
            unpoison_block(c);
            if largest.is_none_or(|l| c.size() > l.size()) {
                largest = Some(c);
            }
            spare = c.next();
        }
        let Some(keep) = largest else {
            chunks.recent.record(now);
            self.current.store(ptr::null_mut(), Ordering::Relaxed);
            return;
        };
        chunks.spares = unlink(chunks.spares, keep);
        chunks.plan = 0;
        let plan = plan(
            &mut chunks.recent,
            Cycle {
                now,
                bound,
                probed,
                largest: keep.capacity(),
                reserved: chunks.reserved,
            },
        );
        let renew = match plan {
            Plan::Keep { plan, probe } => {
                chunks.plan = plan;
                if let Some(reached) = probe {
                    chunks.set_probe(keep, reached);
                }
                None
            }
            Plan::Renew { capacity, probe } => {
                // Every chunk goes back first (below), so that the arena never holds both.
                keep.set_next(chunks.spares);
                chunks.spares = Some(keep);
                Some((capacity, probe))
            }
        };
        // The arena is in its final state before any block goes back (the backing allocator may
        // unwind there): the chunk kept, if any, is the one in use and the current one, and every
        // other chunk is a spare. Growth starts again from the chunk kept: a cycle that outgrows
        // it takes about twice.
        let kept = if renew.is_none() { Some(keep) } else { None };
        if let Some(k) = kept {
            k.set_next(None);
        }
        chunks.used = kept;
        chunks.growth = kept.map_or(0, |k| k.size());
        self.current.store(
            kept.map_or(ptr::null_mut(), |k| k.0.as_ptr()),
            Ordering::Relaxed,
        );
        // Every spare goes back.
        self.trim();
        let Some((capacity, probe)) = renew else {
            return;
        };
        // The renewed chunk. Should the backing allocator or the limit refuse it, the arena holds
        // none, as a new one, and takes chunks again as it allocates.
        let chunks = self.chunks.get_mut();
        let Some((size, nominal)) = capacity
            .checked_add(EXTRA_HEADER)
            .and_then(chunk_size_for_capacity)
            .filter(|&(size, _)| {
                chunks
                    .limit
                    .is_none_or(|l| size <= l.saturating_sub(chunks.held + chunks.large_bytes))
            })
        else {
            return;
        };
        let Ok(k) = self.take_block(size) else {
            return;
        };
        let chunks = self.chunks.get_mut();
        chunks.record(size, nominal);
        chunks.growth = k.size();
        if let Some(reached) = probe.filter(|&r| r < k.capacity()) {
            chunks.set_probe(k, reached);
        }
        chunks.used = Some(k);
        self.current.store(k.0.as_ptr(), Ordering::Relaxed);
    }

    /// Same as [`reset`](SyncArena::reset).
    ///
    /// ```compile_fail,E0502
    /// let mut arena = arena_pool::SyncArena::new();
    /// let x = arena.alloc(42u32);
    /// arena.clear();
    /// assert_eq!(*x, 42); // error: `arena` is borrowed by `x`
    /// ```
    pub fn clear(&mut self) {
        self.reset();
    }

    // ----- scopes and checkpoints -----

    /// The current position of the shared path, for [`reset_to`](SyncArena::reset_to). It takes
    /// `&mut self`, so no other thread is inside the arena while it is taken.
    ///
    /// ```
    /// let mut arena = arena_pool::SyncArena::new();
    /// arena.alloc(1u32);
    /// let cp = arena.checkpoint();
    /// arena.alloc_slice_fill_copy(100, 1u32);
    /// // SAFETY: `cp` is from this arena, and nothing allocated after it is used again.
    /// unsafe { arena.reset_to(cp) };
    /// assert_eq!(arena.used_bytes(), 4);
    /// ```
    pub fn checkpoint(&mut self) -> Checkpoint {
        Checkpoint(Position::Shared(self.shared_checkpoint()))
    }

    /// Returns the shared path to `checkpoint`, freeing everything allocated after it (through
    /// `&SyncArena`, by any thread, and through the [`LocalArena`] handles made since).
    ///
    /// # Safety
    /// - `checkpoint` was taken from this arena by [`checkpoint`](SyncArena::checkpoint),
    /// - the arena has not been reset or trimmed since, and no position before it was restored
    ///   since,
    /// - no block allocated after it is used afterwards (a block grown or shrunk through the
    ///   `Allocator` methods after it counts as allocated after it).
    ///
    /// # Panics
    /// When `checkpoint` is an [`Arena`](crate::Arena)'s or a scope's.
    pub unsafe fn reset_to(&mut self, checkpoint: Checkpoint) {
        let Position::Shared(cp) = checkpoint.0 else {
            panic!("arena-pool: reset_to: the checkpoint is an Arena's, not this SyncArena's");
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.restore(cp) }
    }

    /// Runs `f` in a scope: everything allocated through the `&SyncArena` it is given (by any
    /// thread `f` starts and joins, through handles made from it too) is freed when `f` returns
    /// or unwinds, and the position goes back exactly to where it was. The references `f` makes
    /// cannot escape it.
    ///
    /// ```
    /// let mut arena = arena_pool::SyncArena::new();
    /// arena.alloc(7u64);
    /// let sum = arena.with_scope(|scope| {
    ///     std::thread::scope(|s| {
    ///         let parts: Vec<_> = (0..2u64)
    ///             .map(|t| s.spawn(move || scope.alloc_slice_fill_with(100, |i| t + i as u64)))
    ///             .collect();
    ///         parts.into_iter().map(|p| p.join().unwrap().iter().sum::<u64>()).sum::<u64>()
    ///     })
    /// });
    /// assert_eq!(sum, 2 * 4950 + 100);
    /// assert_eq!(arena.used_bytes(), 8);
    /// ```
    pub fn with_scope<R>(&mut self, f: impl for<'s> FnOnce(&'s SyncArena<A>) -> R) -> R {
        let guard = self.scope_guard();
        f(guard.arena)
    }

    /// Starts a scope that lasts until the returned guard is dropped; allocate through
    /// [`SyncScopeGuard::arena`], whose references borrow the guard (so it cannot be dropped while
    /// one of them is alive).
    ///
    /// ```
    /// let mut arena = arena_pool::SyncArena::new();
    /// {
    ///     let guard = arena.scope_guard();
    ///     let scratch = guard.arena().alloc_str("temporary");
    ///     assert_eq!(scratch, "temporary");
    /// } // freed here
    /// assert_eq!(arena.used_bytes(), 0);
    /// ```
    pub fn scope_guard(&mut self) -> SyncScopeGuard<'_, A> {
        let checkpoint = self.shared_checkpoint();
        SyncScopeGuard {
            arena: self,
            checkpoint,
        }
    }

    /// The shared path's position: the current chunk (the newest in use) and its cursor, and the
    /// large blocks' mark.
    fn shared_checkpoint(&mut self) -> SharedCheckpoint {
        let chunks = self.chunks.get_mut();
        let chunk = chunks.used;
        SharedCheckpoint {
            chunk,
            cursor: chunk.map_or(0, |c| c.cursor().load(Ordering::Relaxed)),
            large: chunks.large.mark(),
        }
    }

    /// Returns to `cp`: large blocks made since go back to the backing allocator (each out of the
    /// list first), chunks put in use since become spares, and the current chunk's cursor goes
    /// back to where it was.
    ///
    /// # Safety
    /// As for [`reset_to`](SyncArena::reset_to).
    unsafe fn restore(&mut self, cp: SharedCheckpoint) {
        // What the cycle had in use counts for retention before it is given back.
        let chunks = self.chunks.get_mut();
        let mut in_chunks = 0;
        let mut c = chunks.used;
        while let Some(x) = c {
            in_chunks += x.used();
            c = x.next();
        }
        chunks.chunk_peak = chunks.chunk_peak.max(in_chunks);
        while let Some(b) = self.chunks.get_mut().large.pop_since(cp.large) {
            // SAFETY: made after `cp`, so not used again (the caller); unlinked just now.
            unsafe { self.free_large(b) };
        }
        let chunks = self.chunks.get_mut();
        while let Some(c) = chunks.used {
            if Some(c) == cp.chunk {
                break;
            }
            chunks.used = c.next();
            c.cursor().store(c.start(), Ordering::Relaxed);
            // A `LocalArena` may have poisoned bytes of its pieces (ASan builds).
            unpoison_block(c);
            c.set_next(chunks.spares);
            chunks.spares = Some(c);
        }
        if let Some(c) = cp.chunk {
            debug_assert_eq!(chunks.used, Some(c), "a checkpoint of this arena's chunks");
            c.cursor().store(cp.cursor, Ordering::Relaxed);
            unpoison_block(c);
        }
        self.current.store(
            cp.chunk.map_or(ptr::null_mut(), |c| c.0.as_ptr()),
            Ordering::Relaxed,
        );
    }

    /// Returns the spare chunks to the backing allocator: those a thread took while another
    /// installed a chunk with room (a `reset` gives back every chunk but one itself). Should the
    /// backing allocator unwind, the spares not yet returned stay the arena's.
    pub fn trim(&mut self) {
        self.free_list(|chunks| &mut chunks.spares);
    }

    /// Returns every chunk of the list `list` picks out to the backing allocator, one at a time:
    /// each is unlinked and uncounted before its block goes back, so that a backing allocator
    /// that unwinds leaves the rest listed and held, and nothing that points to a freed block
    /// (the chunk it was freeing is forgotten: leaked at worst). Neither `current` nor the probe
    /// points to a chunk of the list, and none of its chunks holds a block still in use.
    fn free_list(&mut self, list: fn(&mut Chunks) -> &mut Option<SharedChunk>) {
        loop {
            let chunks = self.chunks.get_mut();
            let head = list(chunks);
            let Some(c) = *head else {
                return;
            };
            *head = c.next();
            chunks.held -= c.size();
            chunks.count -= 1;
            debug_assert!(chunks.probe.is_none_or(|p| p.chunk != c));
            debug_assert_ne!(self.current.load(Ordering::Relaxed), c.0.as_ptr());
            // SAFETY: a spare (or, in drop, any chunk) holds no live block, `&mut self` proves no
            // thread uses it, and it is unlinked and uncounted: nothing in the arena refers to it.
            unsafe { free_chunk(&self.alloc, c) };
        }
    }

    /// Statistics, as for [`Arena`](crate::Arena). `used_bytes` counts the pieces taken by
    /// [`LocalArena`]s in full (but the unused end a dropped handle gave back).
    pub fn stats(&self) -> ArenaStats {
        let chunks = self.chunks.lock();
        let mut used_bytes = 0;
        let mut c = chunks.used;
        while let Some(x) = c {
            used_bytes += x.used();
            c = x.next();
        }
        let current = NonNull::new(self.current.load(Ordering::Acquire)).map(SharedChunk);
        ArenaStats {
            chunks: chunks.count,
            large_blocks: chunks.large_count,
            large_bytes: chunks.large_bytes,
            used_bytes,
            allocated_bytes: chunks.held - chunks.count * DATA_OFFSET + chunks.large_data,
            allocated_bytes_including_metadata: chunks.held + chunks.large_bytes,
            chunk_capacity: current.map_or(0, |c| c.capacity() - c.used()),
            allocation_limit: chunks.limit,
        }
    }

    /// Bytes handed out (see [`stats`](SyncArena::stats)).
    pub fn used_bytes(&self) -> usize {
        self.stats().used_bytes
    }

    /// Usable bytes of every chunk held (see [`stats`](SyncArena::stats)).
    pub fn allocated_bytes(&self) -> usize {
        self.stats().allocated_bytes
    }

    /// Bytes held from the backing allocator, chunk and large-block headers included: what the
    /// allocation limit caps (see [`stats`](SyncArena::stats)).
    pub fn allocated_bytes_including_metadata(&self) -> usize {
        self.stats().allocated_bytes_including_metadata
    }

    /// Bytes left in the current chunk: how much the shared path can allocate (at alignment 1)
    /// before it takes another chunk. Other threads may take them first.
    ///
    /// ```
    /// let arena = arena_pool::SyncArena::new();
    /// arena.alloc(1u64);
    /// let room = arena.chunk_capacity();
    /// arena.alloc_slice_fill_copy(room, 0u8);
    /// assert_eq!((arena.chunk_capacity(), arena.stats().chunks), (0, 1));
    /// ```
    pub fn chunk_capacity(&self) -> usize {
        let current = NonNull::new(self.current.load(Ordering::Acquire)).map(SharedChunk);
        current.map_or(0, |c| c.capacity() - c.used())
    }

    // ----- allocation -----

    /// Allocates `layout`: bump the current chunk, or take the cold path.
    #[inline(always)]
    pub(crate) fn alloc_block(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        if layout.size() != 0 {
            if let Some(c) = NonNull::new(self.current.load(Ordering::Acquire)) {
                if let Some(p) = SharedChunk(c).bump(layout) {
                    return Ok(p);
                }
            }
        }
        self.alloc_slow(layout, Request::Block)
    }

    /// Places a request whose new chunk, if it needs one, is sized as `how` says (a grown block
    /// or a [`LocalArena`]'s piece, see [`Request`]): bumped in the current chunk when it has
    /// room, else through [`alloc_slow`](Self::alloc_slow).
    fn alloc_block_as(&self, layout: Layout, how: Request) -> Result<NonNull<u8>, Failure> {
        match self.core_bump(layout) {
            Some(p) => Ok(p),
            None => self.alloc_slow(layout, how),
        }
    }

    /// Under the lock: bump the chunk another thread may have installed meanwhile, else take a
    /// spare or a new chunk, bump the block in it and publish it as current.
    ///
    /// A new chunk is taken from the backing allocator with the lock released, its size
    /// counted against the limit meanwhile: the backing allocator may be slow, may unwind, or
    /// may allocate in this arena itself (that nested call is served like any other), and no
    /// other thread waits for it. So several threads may take a chunk at once; one that finds a
    /// chunk with room installed when it comes back keeps its own as a spare.
    /// `how` says what the request is, which sizes a new chunk (see [`Request`]).
    #[cold]
    #[inline(never)]
    fn alloc_slow(&self, layout: Layout, how: Request) -> Result<NonNull<u8>, Failure> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        let mut chunks = self.chunks.lock();
        if chunks.probe.is_some() {
            if let Some(p) = self.pass_probe(&mut chunks, layout) {
                return Ok(p);
            }
        }
        // A large request is a large block unless a reset planned a chunk that holds it (a loop
        // that needs it every cycle then settles in that chunk, with no backing call).
        if layout.size() >= LARGE_THRESHOLD
            && min_chunk_size(layout).is_none_or(|own| own - HEADER_SIZE > chunks.plan)
        {
            drop(chunks);
            return self.alloc_large(layout);
        }
        if let Some(p) = self.bump_current(layout) {
            return Ok(p);
        }
        if let Some(c) = take_spare(&mut chunks, layout) {
            return self.install(&mut chunks, c, layout);
        }
        self.alloc_in_new_chunk(chunks, layout, how)
    }

    /// The end of [`alloc_slow`](Self::alloc_slow): a new chunk for `layout`, taken with the lock
    /// released, in which the request is bumped.
    #[inline(always)]
    fn alloc_in_new_chunk<'s>(
        &'s self,
        chunks: MutexGuard<'s, Chunks>,
        layout: Layout,
        how: Request,
    ) -> Result<NonNull<u8>, Failure> {
        if chunks.plan != 0 {
            return self.alloc_in_planned_chunk(chunks, layout, how);
        }
        let (size, nominal) = self.new_chunk_size(&chunks, layout, how, 0)?;
        let (taken, chunks) = self.unlocked(chunks, size, || self.take_block(size));
        self.install_new(chunks, taken?, size, nominal, layout)
    }

    /// [`alloc_in_new_chunk`](Self::alloc_in_new_chunk) when a reset planned the next chunk.
    ///
    /// A reset plans one chunk: a thread that comes for a chunk while this one takes it sizes its
    /// own by growth (and keeps it as a spare if this one is installed first), rather than both
    /// taking the planned size. A failure leaves the plan as it was, and so does a backing
    /// allocator that unwinds; a backing allocator out of memory for the planned chunk drops the
    /// plan, and the request gets a chunk sized as usual.
    #[cold]
    #[inline(never)]
    fn alloc_in_planned_chunk<'s>(
        &'s self,
        mut chunks: MutexGuard<'s, Chunks>,
        layout: Layout,
        how: Request,
    ) -> Result<NonNull<u8>, Failure> {
        let plan = core::mem::take(&mut chunks.plan);
        let keep_plan = |chunks: &mut Chunks| {
            if chunks.plan == 0 {
                chunks.plan = plan;
            }
        };
        let (size, nominal) = match self.new_chunk_size(&chunks, layout, how, plan) {
            Ok(sized) => sized,
            Err(e) => {
                keep_plan(&mut chunks);
                return Err(e);
            }
        };
        let (taken, mut chunks) = self.unlocked(chunks, size, || {
            // Runs with the lock released (as `unlocked`'s own undo does).
            let on_unwind = OnUnwind::new(|| keep_plan(&mut self.chunks.lock()));
            let taken = self.take_block(size);
            on_unwind.disarm();
            taken
        });
        match taken {
            Ok(c) => self.install_new(chunks, c, size, nominal, layout),
            // Sized as usual now (the plan stays taken).
            Err(Failure::OutOfMemory(_)) => self.alloc_in_new_chunk(chunks, layout, how),
            Err(e) => {
                keep_plan(&mut chunks);
                Err(e)
            }
        }
    }

    /// Counts `c`, a new chunk of `size` bytes (`nominal` for the growth state), and bumps
    /// `layout` in it as the current chunk; or, when another thread or a nested call from the
    /// backing allocator installed a chunk with room meanwhile, bumps it there and keeps `c` for
    /// later.
    #[inline(always)]
    fn install_new(
        &self,
        mut chunks: MutexGuard<'_, Chunks>,
        c: SharedChunk,
        size: usize,
        nominal: usize,
        layout: Layout,
    ) -> Result<NonNull<u8>, Failure> {
        chunks.record(size, nominal);
        if let Some(p) = self.bump_current(layout) {
            c.set_next(chunks.spares);
            chunks.spares = Some(c);
            return Ok(p);
        }
        self.install(&mut chunks, c, layout)
    }

    /// Runs `call`, a call into the backing allocator for `size` bytes, with the lock released
    /// and those bytes counted against the limit meanwhile; returns its result with the lock
    /// taken again and the bytes no longer pending (taken off also when `call` unwinds).
    #[inline(always)]
    fn unlocked<'s, R>(
        &'s self,
        mut chunks: MutexGuard<'s, Chunks>,
        size: usize,
        call: impl FnOnce() -> R,
    ) -> (R, MutexGuard<'s, Chunks>) {
        chunks.pending += size;
        drop(chunks);
        let undo = OnUnwind::new(|| self.chunks.lock().pending -= size);
        let result = call();
        undo.disarm();
        let mut chunks = self.chunks.lock();
        chunks.pending -= size;
        (result, chunks)
    }

    /// Moves the probe up past a request that met it (see `crate::arena::retention`), then bumps
    /// `layout` in the chunk. `None` when the probe is not what stopped the request (see
    /// [`raise_probe`](Self::raise_probe)). Only under the lock.
    #[cold]
    #[inline(never)]
    fn pass_probe(&self, chunks: &mut Chunks, layout: Layout) -> Option<NonNull<u8>> {
        // What the request needs of the chunk: the cursor, the padding that aligns it, and the
        // size. The cursor read may be stale (other threads bump without the lock), and
        // they may bump meanwhile: raise again until the request fits, or the probe can go no
        // further (each raise moves it up by a step at least).
        loop {
            let raised = self.raise_probe(chunks, |c| {
                let at = c.cursor().load(Ordering::Relaxed);
                Some(
                    (at - c.start())
                        .saturating_add(at.wrapping_neg() & (layout.align() - 1))
                        .saturating_add(layout.size()),
                )
            });
            if !raised {
                return None;
            }
            if let Some(p) = self.bump_current(layout) {
                return Some(p);
            }
        }
    }

    /// Moves the probe, when it holds the current chunk `c`, up by a step (a quarter, at least
    /// `PROBE_STEP`) or to the `wanted(c)` bytes a request needs of the chunk from its start,
    /// up to the chunk's end; returns whether it moved. It does not move when `wanted` is `None`
    /// or more than the chunk holds (the request goes elsewhere), or when the probe has reached
    /// the end. Only under the lock.
    fn raise_probe(
        &self,
        chunks: &mut Chunks,
        wanted: impl FnOnce(SharedChunk) -> Option<usize>,
    ) -> bool {
        let Some(probe) = chunks.probe.as_mut() else {
            return false;
        };
        let c = probe.chunk;
        // Relaxed is enough: `current` is only stored under the lock, which the caller holds.
        if self.current.load(Ordering::Relaxed) != c.0.as_ptr() || !c.probed() {
            return false;
        }
        let Some(wanted) = wanted(c).filter(|&w| w <= c.capacity()) else {
            return false;
        };
        let start = c.start();
        let limit = c.limit().load(Ordering::Relaxed);
        let reached = next_probe(limit - start, wanted, c.capacity());
        c.limit().store(start + reached, Ordering::Relaxed);
        probe.met = true;
        true
    }

    /// Bumps the current chunk; only under the lock (where `current` does not change).
    fn bump_current(&self, layout: Layout) -> Option<NonNull<u8>> {
        // Relaxed is enough: `current` is only stored under the lock, which the caller holds.
        NonNull::new(self.current.load(Ordering::Relaxed)).and_then(|c| SharedChunk(c).bump(layout))
    }

    /// Makes `c`, a chunk no other thread sees yet, the current one, with `layout` bumped in it.
    fn install(
        &self,
        chunks: &mut Chunks,
        c: SharedChunk,
        layout: Layout,
    ) -> Result<NonNull<u8>, Failure> {
        c.set_next(chunks.used);
        chunks.used = Some(c);
        // Nobody else sees `c` yet: bump the request before publishing. (The chunk was chosen or
        // sized for the layout, so this does not fail; if it did, the chunk stays held.)
        let p = c.bump(layout).ok_or(Failure::CapacityOverflow)?;
        // Release: the header written above is visible to every thread that loads `c`.
        self.current.store(c.0.as_ptr(), Ordering::Release);
        Ok(p)
    }

    /// The size of a new chunk for `layout`, and its nominal size for the growth state, within
    /// the limit (counting the chunks being taken by other threads).
    #[inline(always)]
    fn new_chunk_size(
        &self,
        chunks: &Chunks,
        layout: Layout,
        how: Request,
        plan: usize,
    ) -> Result<(usize, usize), Failure> {
        // The arena's sizing policy, for a header of `DATA_OFFSET` bytes.
        let padded = Layout::from_size_align(
            layout
                .size()
                .checked_add(EXTRA_HEADER)
                .ok_or(Failure::CapacityOverflow)?,
            layout.align(),
        )
        .map_err(|_| Failure::CapacityOverflow)?;
        crate::arena::new_chunk_size(NewChunk {
            layout: padded,
            growth: chunks.growth,
            slack: how == Request::Grown,
            // A piece gets a chunk that it fills (see `Request::Piece`).
            own: how == Request::Piece,
            plan: match plan {
                0 => 0,
                plan => plan.saturating_add(EXTRA_HEADER),
            },
            limit: chunks.budget().headroom(),
        })
    }

    /// Takes a block of `size` bytes from the backing allocator and makes it a chunk (not linked,
    /// not counted yet). Called without the lock.
    fn take_block(&self, size: usize) -> Result<SharedChunk, Failure> {
        let block_layout =
            Layout::from_size_align(size, CHUNK_ALIGN).map_err(|_| Failure::CapacityOverflow)?;
        let block = self
            .alloc
            .allocate(block_layout)
            .map_err(|AllocError| Failure::OutOfMemory(block_layout))?;
        let base = block.cast::<SharedHeader>();
        let start = base.addr().get() + DATA_OFFSET;
        // SAFETY: the block is fresh, CHUNK_ALIGN-aligned (enough for the header) and at least
        // `size >= DATA_OFFSET` bytes long.
        unsafe {
            base.write(SharedHeader {
                cursor: AtomicUsize::new(start),
                limit: AtomicUsize::new(base.addr().get() + size),
                size,
                next: None,
            });
        }
        Ok(SharedChunk(base))
    }

    /// Gives `[from, to)` back when it is the end of what the current chunk handed out;
    /// returns whether it did.
    #[inline(always)]
    pub(crate) fn release_bump(&self, from: NonNull<u8>, to: NonNull<u8>) -> bool {
        if from == to {
            return false;
        }
        // Succeeds only when `to` is the cursor, which proves `[from, to)` lies in this chunk
        // (chunks do not overlap, and the cursor is inside its own chunk).
        NonNull::new(self.current.load(Ordering::Acquire))
            .is_some_and(|c| SharedChunk(c).move_cursor(to.addr().get(), from.addr().get()))
    }

    /// In-place growth of the last block `[p, p + old)` to `new_size`, if it is the last block of
    /// the current chunk and the chunk has room.
    #[inline(always)]
    fn grow_last(&self, p: NonNull<u8>, old: usize, new_size: usize) -> bool {
        let Some(c) = NonNull::new(self.current.load(Ordering::Acquire)).map(SharedChunk) else {
            return false;
        };
        // `p + old` ends the caller's block, so it does not overflow; `p + new_size` may.
        let from = p.addr().get() + old;
        let Some(to) = p.addr().get().checked_add(new_size) else {
            return false;
        };
        to <= c.limit().load(Ordering::Relaxed) && c.move_cursor(from, to)
    }

    /// In-place shrink of the last block `[p, p + old)` to `new_size <= old`, if it is the last
    /// block of the current chunk: the cursor moves down, so no limit is asked.
    #[inline(always)]
    fn shrink_last(&self, p: NonNull<u8>, old: usize, new_size: usize) -> bool {
        debug_assert!(new_size <= old);
        let Some(c) = NonNull::new(self.current.load(Ordering::Acquire)).map(SharedChunk) else {
            return false;
        };
        // `p + old` ends the caller's block, so neither sum overflows.
        let (from, to) = (p.addr().get() + old, p.addr().get() + new_size);
        c.move_cursor(from, to)
    }
}

/// Unpoisons a chunk's whole block (ASan builds; nothing otherwise): the pieces a `LocalArena`
/// took from it may hold poisoned bytes.
fn unpoison_block(c: SharedChunk) {
    let base = c.0.as_ptr().cast::<u8>().cast_const();
    crate::arena::poison::unpoison(base, base.wrapping_add(c.size()));
}

/// Frees a chunk's block.
///
/// # Safety
/// `c` is held by the arena owning `alloc`, is unlinked, and none of its blocks is used again.
unsafe fn free_chunk<A: Allocator>(alloc: &A, c: SharedChunk) {
    let layout = c.block_layout();
    unpoison_block(c);
    // SAFETY: the header is ours and initialised; dropping it in place releases what loom's
    // atomics track (nothing for the standard ones).
    unsafe { ptr::drop_in_place(c.0.as_ptr()) };
    // SAFETY: the block came from `alloc` with this layout (caller).
    unsafe { alloc.deallocate(c.0.cast(), layout) };
}

/// Removes `c` from the list starting at `head`; returns the new head.
fn unlink(head: Option<SharedChunk>, c: SharedChunk) -> Option<SharedChunk> {
    if head == Some(c) {
        return c.next();
    }
    let mut prev = head;
    while let Some(x) = prev {
        if x.next() == Some(c) {
            x.set_next(c.next());
            break;
        }
        prev = x.next();
    }
    head
}

/// Takes the first spare chunk that holds `layout`, if any.
fn take_spare(chunks: &mut Chunks, layout: Layout) -> Option<SharedChunk> {
    let mut s = chunks.spares;
    while let Some(c) = s {
        let start = c.start();
        let pad = start.wrapping_neg() & (layout.align() - 1);
        if pad.checked_add(layout.size())? <= c.capacity() {
            chunks.spares = unlink(chunks.spares, c);
            return Some(c);
        }
        s = c.next();
    }
    None
}

/// A saved position of a `SyncArena`'s shared path (see [`SyncArena::checkpoint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedCheckpoint {
    /// The current chunk then, the newest in use (`None`: there was none).
    chunk: Option<SharedChunk>,
    /// Its cursor then.
    cursor: usize,
    /// Large blocks made from this mark on are freed by a restore.
    large: u64,
}

/// A scope of a [`SyncArena`] that lasts until the guard is dropped, from
/// [`SyncArena::scope_guard`]: dropping it (also during unwinding) frees everything allocated
/// through [`arena`](SyncScopeGuard::arena) and returns the position to where it was.
/// Forgetting it (`mem::forget`) is safe: the scope's memory then stays used until the arena is
/// reset.
pub struct SyncScopeGuard<'a, A: Allocator = Global> {
    arena: &'a mut SyncArena<A>,
    checkpoint: SharedCheckpoint,
}

impl<A: Allocator> SyncScopeGuard<'_, A> {
    /// The arena, for allocating in the scope from any thread; what it hands out borrows the
    /// guard.
    pub fn arena(&self) -> &SyncArena<A> {
        self.arena
    }
}

impl<A: Allocator> Drop for SyncScopeGuard<'_, A> {
    fn drop(&mut self) {
        // SAFETY: the checkpoint was taken when the guard was made, from this arena, which stayed
        // mutably borrowed by the guard (no reset, trim or other restore since); every block
        // allocated through `arena()` borrowed the guard and is gone now.
        unsafe { self.arena.restore(self.checkpoint) }
    }
}

impl<A: Allocator> fmt::Debug for SyncScopeGuard<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncScopeGuard")
            .field("stats", &self.arena.stats())
            .finish()
    }
}

impl<A: Allocator> Drop for SyncArena<A> {
    fn drop(&mut self) {
        self.free_all_large();
        // No block is used again: every chunk goes back, the current one no longer current.
        self.current.store(ptr::null_mut(), Ordering::Relaxed);
        self.chunks.get_mut().probe = None;
        self.free_list(|chunks| &mut chunks.used);
        self.free_list(|chunks| &mut chunks.spares);
    }
}

impl<A: Allocator> fmt::Debug for SyncArena<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncArena")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// A [`LocalArena`]'s pieces: blocks of the shared arena, owned by it until reset or drop.
impl<A: Allocator> ChunkSource for SyncArena<A> {
    fn allocate_chunk(&self, layout: Layout) -> Result<NonNull<[u8]>, Failure> {
        let p = self.alloc_block_as(layout, Request::Piece)?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    /// The room a piece (`CHUNK_ALIGN`-aligned) has in the current chunk, up to its limit.
    fn spare_room(&self) -> usize {
        let Some(c) = NonNull::new(self.current.load(Ordering::Acquire)).map(SharedChunk) else {
            return 0;
        };
        // Relaxed, as in `bump`: a stale value only makes the hint wrong, and a piece that does
        // not fit takes the locked path.
        let Some(from) = c
            .cursor()
            .load(Ordering::Relaxed)
            .checked_next_multiple_of(CHUNK_ALIGN)
        else {
            return 0;
        };
        c.limit().load(Ordering::Relaxed).saturating_sub(from) & !(CHUNK_ALIGN - 1)
    }

    unsafe fn deallocate_chunk(&self, _ptr: NonNull<u8>, _layout: Layout) {
        // Pieces stay with the shared arena: the `LocalArena`'s blocks in them outlive it.
    }

    fn extends_chunks(&self) -> bool {
        true
    }

    /// A piece that ends at the current chunk's cursor grows as the last block does there.
    unsafe fn extend_chunk(&self, base: NonNull<u8>, size: usize, more: usize) -> bool {
        size.checked_add(more)
            .is_some_and(|longer| self.grow_last(base, size, longer))
    }

    /// A handle's large blocks come from the shared arena's backing allocator, counted by the
    /// shared arena (and its limit); the handle lists them, and hands them over when dropped.
    fn allocate_large(&self, layout: Layout) -> Result<NonNull<[u8]>, Failure> {
        self.take_large(layout)
    }

    unsafe fn deallocate_large(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { self.give_large(ptr, layout) }
    }

    unsafe fn resize_large(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, Failure> {
        // SAFETY: forwarded from the caller.
        unsafe { self.backing_resize(ptr, old, new) }
    }

    fn allocation_limit(&self) -> Option<usize> {
        SyncArena::allocation_limit(self)
    }

    fn panics_on_limit(&self) -> bool {
        SyncArena::panics_on_limit(self)
    }
}

// ----- the shared path's Allocator rules and typed helpers -----

impl<A: Allocator> SyncArena<A> {
    /// `Allocator::deallocate`: gives the block back when it is the last of the current chunk.
    ///
    /// # Safety
    /// The `Allocator::deallocate` contract.
    pub(crate) unsafe fn deallocate_impl(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: `p + size` is the end of the caller's block (`p` itself for an empty one, which
        // `release_bump` ignores).
        let end = unsafe { p.add(layout.size()) };
        if self.release_bump(p, end) {
            if layout.size() >= LARGE_THRESHOLD {
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
        let mut held = size;
        let mut c = chunks.used;
        while let Some(x) = c {
            held += x.used();
            c = x.next();
        }
        chunks.chunk_peak = chunks.chunk_peak.max(held);
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
    unsafe fn grow_in_place(&self, p: NonNull<u8>, old: Layout, new: Layout, zeroed: bool) -> bool {
        if old.size() != 0
            // SAFETY: `p` was allocated with `old` (the contract).
            && unsafe { satisfies(p, old, new) }
            && self.grow_last(p, old.size(), new.size())
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
    fn raise_probe_for(&self, p: NonNull<u8>, old: Layout, new: Layout) -> bool {
        let p = p.addr().get();
        let is_last =
            |c: SharedChunk| p.checked_add(old.size()) == Some(c.cursor().load(Ordering::Relaxed));
        // Without the lock first: a probe is rare, and only the cycle after a reset has one.
        let current = NonNull::new(self.current.load(Ordering::Acquire)).map(SharedChunk);
        if !current.is_some_and(|c| c.probed() && is_last(c)) {
            return false;
        }
        let mut chunks = self.chunks.lock();
        self.raise_probe(&mut chunks, |c| {
            if is_last(c) {
                p.checked_sub(c.start())?.checked_add(new.size())
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
        if unsafe { satisfies(p, old, new) } && self.shrink_last(p, old.size(), new.size()) {
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
    fn current_chunk(&self) -> Option<SharedChunk> {
        NonNull::new(self.current.load(Ordering::Acquire)).map(SharedChunk)
    }
}

/// The typed API's primitives ([`BumpAlloc`](crate::BumpAlloc)): the shared path's
/// compare-and-swap bump, its cold path and its `Allocator` rules.
impl<A: Allocator> Core for SyncArena<A> {
    #[inline(always)]
    fn core_bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        NonNull::new(self.current.load(Ordering::Acquire)).and_then(|c| SharedChunk(c).bump(layout))
    }

    #[inline(always)]
    unsafe fn core_release_bump(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: `p + size` is the end of the caller's block, bumped in a chunk.
        let end = unsafe { p.add(layout.size()) };
        self.release_bump(p, end);
    }

    #[inline(always)]
    fn core_alloc_slow(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        self.alloc_slow(layout, Request::Block)
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use allocator_api2::vec::Vec;

    /// A `SyncArena` whose one chunk a reset has kept with a probe: a spike of `spike` bytes in
    /// blocks of 32 KiB (renewed into one chunk at the reset), then four cycles with nothing in
    /// use, after which the reset that would renew the chunk probes it instead. (The loom model
    /// `a_probe_passed_by_two_threads` sets its arena up the same way.) Returns the chunk.
    fn probed_arena(spike: usize) -> (SyncArena, SharedChunk) {
        let mut arena = SyncArena::new();
        for _ in 0..spike.div_ceil(32 * 1024) {
            arena.alloc_slice_fill_copy(32 * 1024, 1u8);
        }
        for _ in 0..1 + crate::arena::WINDOW {
            arena.reset();
        }
        let chunks = arena.chunks.get_mut();
        let probe = chunks.probe.expect("a reset set a probe");
        assert!(!probe.met && probe.chunk.probed());
        assert_eq!(chunks.used, Some(probe.chunk));
        let c = probe.chunk;
        (arena, c)
    }

    fn reached(c: SharedChunk) -> usize {
        c.limit().load(Ordering::Relaxed) - c.start()
    }

    #[test]
    fn a_probe_moves_up_on_every_path_and_the_reset_counts_it() {
        let n: usize = if cfg!(miri) { 2_000 } else { 20_000 };
        // A chunk well above what a renewal for nothing in use would keep (the need and 128 KiB).
        let (mut arena, c) = probed_arena((32 * n).max(256 * 1024));
        let capacity = c.capacity();
        let below = reached(c);
        assert!(capacity >= 32 * n && below < 8 * n, "{below} of {capacity}");

        // Threads bump past the probe on the shared path, each raising it in turn under the
        // lock; nobody takes a chunk.
        let parts: std::vec::Vec<&[u64]> = std::thread::scope(|s| {
            let jobs: std::vec::Vec<_> = (0..2u64)
                .map(|t| {
                    let arena = &arena;
                    s.spawn(move || {
                        (0..n / 8)
                            .map(|i| &*arena.alloc_slice_fill_copy(4, t << 32 | i as u64))
                            .collect::<std::vec::Vec<_>>()
                    })
                })
                .collect();
            jobs.into_iter().flat_map(|j| j.join().unwrap()).collect()
        });
        assert_eq!(parts.len(), n / 4);
        for (k, part) in parts.iter().enumerate() {
            let (t, i) = ((k / (n / 8)) as u64, (k % (n / 8)) as u64);
            assert!(part.iter().all(|&x| x == t << 32 | i));
        }
        let after_threads = reached(c);
        assert!(after_threads >= 8 * n && after_threads < capacity);
        assert!(arena.chunks.get_mut().probe.unwrap().met);

        // The last block grows in place across the probe.
        let mut v = Vec::with_capacity_in(n / 2, &arena);
        v.extend((0..n / 2).map(|i| i as u64));
        let at = v.as_ptr();
        v.reserve_exact(n + n / 2);
        assert_eq!((v.as_ptr(), v.capacity()), (at, 2 * n));
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        assert!(reached(c) >= at.addr() - c.start() + 16 * n);
        drop(v);

        // A handle's piece passes it too.
        let local = arena.local();
        assert!(local.alloc_slice_fill_copy(n, 3u8).iter().all(|&b| b == 3));
        drop(local);
        assert_eq!(arena.stats().chunks, 1);
        assert_eq!(arena.stats().large_blocks, 0);

        // The reset counts what the cycle reached, though much was given back: the chunk it
        // keeps (this one, or a renewed one) holds that, and the probe is gone.
        let reached = reached(c);
        assert!(reached <= capacity);
        arena.reset();
        assert!(arena.chunks.get_mut().probe.is_none());
        let s = arena.stats();
        assert_eq!(s.chunks, 1);
        assert!(
            s.chunk_capacity >= reached,
            "{} < {reached}",
            s.chunk_capacity
        );
        let current = NonNull::new(*arena.current.get_mut())
            .map(SharedChunk)
            .unwrap();
        assert!(!current.probed());
    }
}
