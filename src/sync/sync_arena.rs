//! [`SyncArena`]: a bump arena shared by threads. Each thread bumps a piece of its own, taken
//! from the current chunk with one compare-and-swap; taking a new chunk happens under a lock.

use core::fmt;

use allocator_api2::alloc::{AllocError, Allocator, Global};

use self::shared_chunk::{Chunks, Current, EXTRA_HEADER, SharedChunk, free_chunk, list_step};
use self::thread_piece::PieceKey;
use super::shim::{Mutex, Ordering};
use crate::arena::Spares;
use crate::arena::{
    ArenaStats, Checkpoint, ChunkIter, ChunkRawIter, LargeList, Position, Recent,
    chunk_size_for_capacity,
};
use crate::error::Failure;
use crate::sync::LocalArena;

mod allocator_rules;
mod bumping;
mod large_blocks;
mod reset;
mod shared_chunk;
mod thread_piece;

pub(crate) use self::reset::SharedCheckpoint;

/// A bump arena that threads share: `&SyncArena` allocates from any thread, as an
/// [`Allocator`] and through typed helpers, and every block stays valid until the arena is
/// [`reset`](SyncArena::reset) or dropped.
///
/// - **Shared path**: `&SyncArena` from any thread. Each thread bumps a piece of its own (taken
///   from the current chunk with one compare-and-swap, and kept in a small thread-local table),
///   with plain loads and stores: threads allocating at once do not fight over a cursor. Blocks
///   too large for a piece take one compare-and-swap on the chunk; a thread that finds the chunk
///   full takes a new one under a lock, while the others keep bumping.
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
    /// The chunk being bumped (an empty header before the first one, see `Current`). Stored with
    /// Release after the chunk's header is written, loaded with Acquire.
    current: Current,
    /// Names the threads' pieces of the arena (see `thread_piece`): renewed by every `&mut`
    /// operation that moves a cursor back or frees a chunk.
    pieces: PieceKey,
    chunks: Mutex<Chunks>,
    alloc: A,
}

impl SyncArena {
    /// An empty arena on the global allocator. Allocates nothing until the first allocation.
    #[must_use]
    pub fn new() -> SyncArena {
        SyncArena::new_in(Global)
    }

    /// An arena on the global allocator whose first chunk holds at least `capacity` bytes (none
    /// for 0: as [`new`](SyncArena::new), it allocates nothing).
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

    /// Like [`with_capacity`](SyncArena::with_capacity), returning `Err` instead of panicking.
    pub fn try_with_capacity(capacity: usize) -> Result<SyncArena, AllocError> {
        SyncArena::try_with_capacity_in(capacity, Global)
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
    /// handle* that needs a new piece or a large block is refused (as for
    /// [`Arena::new_in`](crate::Arena::new_in)).
    pub fn new_in(alloc: A) -> SyncArena<A> {
        SyncArena {
            current: Current::new(),
            pieces: PieceKey::new(),
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
                kept: Spares::new(),
                chunk_peak: 0,
                fill_peak: 0,
                probe: None,
            }),
            alloc,
        }
    }

    /// An arena taking its chunks from `alloc`, whose first chunk holds at least `capacity`
    /// bytes (none for 0).
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
        if capacity == 0 {
            return Ok(arena);
        }
        let (size, nominal) = capacity
            .checked_add(EXTRA_HEADER)
            .and_then(chunk_size_for_capacity)
            .ok_or(Failure::CapacityOverflow)?;
        let c = arena.take_block(size)?;
        let chunks = arena.chunks.get_mut();
        chunks.record(size, nominal);
        chunks.reserved = c.capacity();
        chunks.used = Some(c);
        arena.current.set(Some(c), Ordering::Release);
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
    /// Making a handle calls no backing allocator. When the calling thread's piece of this
    /// arena has 256 bytes left, the handle's first piece is lent from it at once (this arena's
    /// [`used_bytes`](Self::used_bytes) counts it from then on, as it counts every piece of a
    /// handle), so that a handle per job places its first blocks with no call to the shared
    /// arena.
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

    /// Returns the spare chunks to the backing allocator (those a thread took while another
    /// installed a chunk with room; a `reset` gives back every chunk but one itself), and the
    /// large blocks the arena keeps for reuse. Should the backing allocator unwind, the spares
    /// not yet returned stay the arena's.
    pub fn trim(&mut self) {
        self.free_list(|chunks| &mut chunks.spares);
        self.free_kept();
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
            debug_assert!(!self.current.is(c, Ordering::Relaxed));
            // SAFETY: a spare (or, in drop, any chunk) holds no live block, `&mut self` proves no
            // thread uses it, and it is unlinked and uncounted: nothing in the arena refers to it.
            unsafe { free_chunk(&self.alloc, c) };
        }
    }

    /// All the statistics at once (see [`ArenaStats`] for what each counts).
    pub fn stats(&self) -> ArenaStats {
        let chunks = self.chunks.lock();
        let mut used_bytes = 0;
        let mut c = chunks.used;
        while let Some(x) = c {
            used_bytes += x.used();
            c = x.next();
        }
        used_bytes -= self.own_piece_rest();
        let current = self.current.get(Ordering::Acquire);
        ArenaStats {
            chunks: chunks.count,
            large_blocks: chunks.large_count,
            large_bytes: chunks.large_bytes,
            kept_large_blocks: chunks.kept.count(),
            kept_large_bytes: chunks.kept.bytes(),
            used_bytes,
            allocated_bytes: chunks.chunk_bytes() + chunks.large_data + chunks.kept.data_bytes(),
            allocated_bytes_including_metadata: chunks.held
                + chunks.large_bytes
                + chunks.kept.bytes(),
            chunk_capacity: current.map_or(0, |c| c.capacity() - c.used())
                + self.own_piece_rest_at_cursor(),
            allocation_limit: chunks.limit,
        }
    }

    /// The memory the arena has handed out, as byte slices: the same contract as
    /// [`Arena::iter_allocated_chunks`](crate::Arena::iter_allocated_chunks) (bumpalo's).
    ///
    /// - **Each chunk that holds blocks**, newest first: its bytes from its first usable byte up
    ///   to its cursor, which every chunk in use keeps; they add up to
    ///   [`used_bytes`](SyncArena::used_bytes). Within a chunk, the bytes are in the order the
    ///   bumps took them (threads bumping at once interleave). The pieces
    ///   [`LocalArena`] handles took are inside, each in full as `used_bytes` counts it: the
    ///   handle's own chunk header, its blocks, and the unused end a handle could
    ///   not give back. Spare chunks are not yielded.
    /// - **Then each large block in use**, newest first (those of dropped handles included): its
    ///   data, as for `Arena`.
    ///
    /// Bytes may be uninitialised: the items are `&[MaybeUninit<u8>]`. `&mut self` proves that
    /// no thread and no handle uses the arena, and that no reference into it is alive (every one
    /// borrows the arena): nothing writes the bytes while the slices live.
    ///
    /// There is no `iter_allocated_chunks_raw` on `SyncArena`: through `&self`, other threads
    /// may bump and relink the chunks meanwhile.
    ///
    /// ```
    /// let mut arena = arena_pool::SyncArena::new();
    /// arena.alloc_slice_copy(b"shared");
    /// std::thread::scope(|s| {
    ///     s.spawn(|| arena.local().alloc_slice_copy(b"local"));
    /// });
    /// let total: usize = arena.iter_allocated_chunks().map(<[_]>::len).sum();
    /// assert_eq!(total, arena.used_bytes());
    /// ```
    pub fn iter_allocated_chunks(&mut self) -> ChunkIter<'_> {
        // This thread's piece gives its unused rest back, so the chunks add up to `used_bytes`.
        self.forget_pieces();
        let chunks = self.chunks.get_mut();
        let first = chunks.used.map(|c| c.0.cast());
        // SAFETY: `first` heads the list of chunks in use, which `list_step` reads; `&mut self`,
        // held by the iterator, keeps the lists, the cursors and the large blocks as they are,
        // every chunk and block held, and rules out every other user of the arena.
        unsafe {
            let raw = ChunkRawIter::over_list(first, list_step, &chunks.large);
            ChunkIter::new(raw)
        }
    }

    /// [`ArenaStats::used_bytes`]: bytes handed out from the chunks, large blocks not included.
    pub fn used_bytes(&self) -> usize {
        self.stats().used_bytes
    }

    /// [`ArenaStats::allocated_bytes`]: usable bytes of every chunk and large block held.
    pub fn allocated_bytes(&self) -> usize {
        self.stats().allocated_bytes
    }

    /// [`ArenaStats::allocated_bytes_including_metadata`]: bytes held from the backing allocator,
    /// what the allocation limit caps.
    pub fn allocated_bytes_including_metadata(&self) -> usize {
        self.stats().allocated_bytes_including_metadata
    }

    /// Bytes left in the current chunk: how much the shared path can allocate (at alignment 1)
    /// before it takes another chunk, the unused rest of the calling thread's piece included
    /// when the piece ends at the chunk's cursor (a block that does not fit the piece takes the
    /// rest back). Other threads may take them first.
    ///
    /// ```
    /// let arena = arena_pool::SyncArena::new();
    /// arena.alloc(1u64);
    /// let room = arena.chunk_capacity();
    /// arena.alloc_slice_fill_copy(room, 0u8);
    /// assert_eq!((arena.chunk_capacity(), arena.stats().chunks), (0, 1));
    /// ```
    pub fn chunk_capacity(&self) -> usize {
        let current = self.current.get(Ordering::Acquire);
        current.map_or(0, |c| c.capacity() - c.used()) + self.own_piece_rest_at_cursor()
    }
}

/// A scope of a [`SyncArena`] that lasts until the guard is dropped, from
/// [`SyncArena::scope_guard`]: dropping it (also during unwinding) frees everything allocated
/// through [`arena`](SyncScopeGuard::arena) and returns the position to where it was.
/// Forgetting it (`mem::forget`) is safe: the scope's memory then stays used until the arena is
/// reset.
///
/// ```
/// let mut arena = arena_pool::SyncArena::new();
/// arena.alloc(1u32);
/// let before = arena.used_bytes();
/// {
///     let guard = arena.scope_guard();
///     guard.arena().alloc_slice_fill_copy(100, 0u8);
/// } // freed here
/// assert_eq!(arena.used_bytes(), before);
/// ```
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
        self.free_kept();
        // No block is used again: every chunk goes back, the current one no longer current.
        self.current.set(None, Ordering::Relaxed);
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
