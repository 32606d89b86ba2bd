//! [`Arena`]: a chunked bump allocator that bumps upward, and [`ArenaRef`], the scoped view of it.

pub(crate) mod budget;
mod bump;
mod bump_alloc;
mod chunk;
mod chunk_iter;
mod large;
mod large_spares;
pub(crate) mod min_align;
pub(crate) mod poison;
pub(crate) mod resize;
mod retention;
mod scope;
mod stats;
pub(crate) mod typed;

use core::fmt;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global, Layout};

use crate::error::Failure;

#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use budget::Budget;
#[cfg(feature = "std")]
pub(crate) use bump::satisfies;
pub(crate) use bump::{RawArena, dangling};
// Used by `crate::sync` and the `SyncArena` `Allocator` impl (feature `std`) only.
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use bump::refuse;
pub use bump_alloc::BumpAlloc;
pub(crate) use chunk::ChunkSource;
pub use chunk_iter::{ChunkIter, ChunkRawIter};
// Used by `crate::sync` (feature `std`) only.
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use chunk::{
    CHUNK_ALIGN, HEADER_SIZE, NewChunk, chunk_size_for_capacity, min_chunk_size, new_chunk_size,
};
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use large::{LARGE_THRESHOLD, Large, LargeList, block_layout, data_size};
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use large_spares::Spares;

#[cfg(test)]
pub(crate) use retention::WINDOW;
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use retention::{Cycle, Plan, Recent, next_probe, plan};
#[cfg(feature = "std")]
pub(crate) use scope::Position;
pub use scope::{ArenaRef, Checkpoint, ScopeGuard};
pub use stats::ArenaStats;
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use stats::stats_api;
pub(crate) use typed::OnRaw;
// Used by `crate::sync` (feature `std`) only.
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
pub(crate) use typed::Core;

/// Fuzz builds only: the chunk arithmetic, re-exported by `crate::__fuzzing`.
#[cfg(fuzzing)]
pub(crate) mod fuzzing {
    pub(crate) use super::chunk::{
        CHUNK_ALIGN, FIRST_CHUNK_SIZE, HEADER_SIZE, MAX_CHUNK_SIZE, SIZE_UNIT, chunk_size_for,
        chunk_size_for_capacity, min_chunk_size, regular_nominal,
    };
    pub(crate) use super::large::LARGE_THRESHOLD;
    pub(crate) use super::retention::{Cycle, Plan, Recent, WINDOW, plan};
}

/// A bump allocator: allocation moves a pointer forward through chunks taken from the backing
/// allocator `A`, and everything is freed at once by [`reset`](Arena::reset) or drop.
///
/// - **Upward bumping**: the last block grows and shrinks in place, so a `Vec` growing at the end
///   of the arena copies only when it outgrows its chunk, and freeing the last block gives its
///   bytes back.
/// - **Large blocks**: a block of at least 64 KiB that does not fit the current chunk gets a
///   block of its own from the backing allocator, given back as soon as it is freed and grown by
///   the backing allocator's `grow` (realloc), so growing collections hold about what they use.
/// - **Any collection**: `Arena` implements allocator-api2's [`Allocator`], so
///   `allocator_api2::vec::Vec::new_in(&arena)`, `allocator_api2::boxed::Box::new_in(x, &arena)` and
///   `hashbrown::HashMap::new_in(&arena)` work unchanged.
/// - **Typed helpers**: [`alloc`](Arena::alloc), [`alloc_str`](Arena::alloc_str),
///   [`alloc_fmt`](Arena::alloc_fmt), the slice fills, … place values, slices, strings and
///   formatted text and return `&mut T` for as long as the arena's borrow. They are the methods of
///   [`BumpAlloc`] (documented there; generic code over the arena kinds takes `X: BumpAlloc`),
///   also inherent here, so calling them needs no import.
/// - **Values placed with `alloc` are never dropped.** The typed helpers
///   ([`alloc`](BumpAlloc::alloc), [`alloc_slice_clone`](BumpAlloc::alloc_slice_clone), …) return
///   `&mut T` and the arena does not run destructors: a `String` or `Vec` placed there leaks its
///   heap buffer. When a value must be dropped, use
///   `allocator_api2::boxed::Box::new_in(value, &arena)`.
/// - **Validity**: a block lives until it is deallocated, the arena is reset, the scope it was
///   allocated in ends, or the arena is dropped. The last three need `&mut Arena` or ownership,
///   so the borrow checker rules them out while any `&Arena` (inside a reference, `Vec` or `Box`)
///   is alive.
///
/// `Arena` is `Send` when `A` is, and never `Sync`; it is not `Clone`: share it as `&Arena`.
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::allocator_api2::vec::Vec;
///
/// let mut arena = Arena::new();
/// let x = arena.alloc(42u32);
/// *x += 1;
/// let mut v = Vec::new_in(&arena);
/// v.extend([1u64, 2, 3]);
/// assert_eq!((*x, v.len()), (43, 3));
/// drop(v);
/// arena.reset(); // every block is gone; a chunk is kept for the next cycle
/// assert_eq!(arena.used_bytes(), 0);
/// ```
#[repr(C)]
pub struct Arena<A: Allocator = Global, const MIN_ALIGN: usize = 1> {
    // Must stay the first field: `ArenaRef` reads it at offset 0.
    raw: RawArena,
    /// The large blocks kept for reuse across resets, reached through `ChunkSource::kept`.
    spares: Spares,
    alloc: A,
}

// SAFETY: the arena exclusively owns its chunks; its raw pointers point only into them, and every
// reference it hands out borrows the arena, so none is alive when the arena moves. Moving it to
// another thread moves the chunks with it, and they are given back through `A` there, which needs
// `A: Send`. (The arena is not `Sync`: see `crate::sharing`, whose impl never holds.)
unsafe impl<A: Allocator + Send, const MIN_ALIGN: usize> Send for Arena<A, MIN_ALIGN> {}

impl Arena {
    /// An empty arena on the global allocator. Allocates nothing until the first allocation.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// const EMPTY: Arena = Arena::new(); // usable in constants
    /// let arena = EMPTY;
    /// assert_eq!(arena.allocated_bytes(), 0);
    /// ```
    #[must_use]
    pub const fn new() -> Arena {
        Arena::new_in(Global)
    }

    /// An arena on the global allocator whose first chunk holds at least `capacity` bytes: it
    /// takes `capacity` usable bytes plus the chunk header, rounded up to 512 bytes or whole
    /// pages (at most 4 KiB more), and `reset` never keeps less. `with_capacity(0)` takes
    /// nothing, as [`new`](Arena::new).
    ///
    /// # Panics
    /// When the capacity overflows; calls [`handle_alloc_error`](alloc::alloc::handle_alloc_error)
    /// when the global allocator fails.
    ///
    /// ```
    /// let arena = arena_pool::Arena::with_capacity(4096);
    /// assert!(arena.chunk_capacity() >= 4096);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_capacity(capacity: usize) -> Arena {
        Arena::with_capacity_in(capacity, Global)
    }

    /// Like [`with_capacity`](Arena::with_capacity), returning `Err` instead of panicking.
    pub fn try_with_capacity(capacity: usize) -> Result<Arena, AllocError> {
        Arena::try_with_capacity_in(capacity, Global)
    }
}

impl<A: Allocator> Arena<A> {
    /// An empty arena taking its chunks from `alloc`. Allocates nothing until the first
    /// allocation.
    ///
    /// # The backing allocator
    /// - **It may panic.** When a call into `alloc` unwinds, the arena is exactly as it was
    ///   before the request that made it: every live block is where it was (a `Vec` whose grow
    ///   unwinds keeps its buffer, still allocated, still the last block), every statistic is
    ///   unchanged, and the arena stays usable.
    /// - **Its `deallocate` may panic** (when a reset, [`trim`](Arena::trim), a scope's exit or
    ///   the drop gives chunks and large blocks back, or a large block is freed or moved): the
    ///   arena then no longer refers to the block it was giving back, and stays usable; a reset or
    ///   `trim` keeps the chunks it had not given back yet (a drop, or a reset that renews its
    ///   chunk, leaves them to `alloc`). A `deallocate` that unwinds must leave its block
    ///   allocated (it is leaked): a grow or shrink that moves a large block gives the old block
    ///   back last, and unwinds with it while its caller still holds the old block.
    /// - **It may allocate in this arena** (reached through a shared handle such as a `Weak`).
    ///   Such a nested request is served when the current chunk holds it; when it needs a new
    ///   chunk or a large block it is refused, `Err(AllocError)` from the fallible API and a
    ///   panic naming the cause from the panicking one, because the outer request is taking
    ///   memory at that moment. Through the `Allocator` methods a request of 64 KiB or more is
    ///   always a large block, so made nested it is refused even where the chunk has room.
    ///   Nested frees, and grows and shrinks in place, are served.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::alloc::Global;
    ///
    /// let arena = Arena::new_in(Global);
    /// assert_eq!(*arena.alloc(7u8), 7);
    /// ```
    pub const fn new_in(alloc: A) -> Arena<A> {
        Arena::with_min_align_in(alloc)
    }

    /// An arena taking its chunks from `alloc`, whose first chunk holds at least `capacity`
    /// bytes (none for 0).
    ///
    /// # Panics
    /// When the capacity overflows; calls [`handle_alloc_error`](alloc::alloc::handle_alloc_error)
    /// when `alloc` fails.
    #[track_caller]
    pub fn with_capacity_in(capacity: usize, alloc: A) -> Arena<A> {
        Arena::with_min_align_and_capacity_in(capacity, alloc)
    }

    /// Like [`with_capacity_in`](Arena::with_capacity_in), returning `Err` instead of panicking.
    pub fn try_with_capacity_in(capacity: usize, alloc: A) -> Result<Arena<A>, AllocError> {
        Arena::try_with_min_align_and_capacity_in(capacity, alloc)
    }
}

impl<A: Allocator, const MIN_ALIGN: usize> Arena<A, MIN_ALIGN> {
    /// The backing allocator.
    pub fn allocator(&self) -> &A {
        &self.alloc
    }

    /// Forgets every allocation and keeps one chunk, sized for what recent cycles needed, and
    /// the large blocks the next cycles are expected to need; every other chunk and large block
    /// goes back to the backing allocator.
    ///
    /// The large blocks in use at the reset are kept for the next cycle's large requests, with
    /// those a free kept during the cycle, as long as they fit the *allowance*: the most bytes of
    /// large blocks the last four cycles had in use at once, and an eighth. Kept blocks that a
    /// whole cycle did not take go back. So a loop that builds the same collections every cycle
    /// (a `Vec` that grows past 64 KiB, a hash table) holds what its first cycle held, and from
    /// the fourth cycle on makes no backing call. [`trim`](Arena::trim) gives kept blocks back.
    ///
    /// A cycle's need is the most bytes it had in use in the chunks. The chunk kept is
    /// the largest when it holds the need. The chunks are *renewed* (all given back, then one of
    /// the need plus a sixteenth taken, rounded up to 512 bytes or to pages) when the largest is
    /// oversized (more than 1.5x the most any of the last four cycles needed, and more than that
    /// plus 128 KiB, and more than a `with_capacity` reservation) or when the cycle needed more
    /// than it holds, up to three times (with a quarter to spare instead of a sixteenth once the
    /// chunks have been renewed before: the cycles vary); should the backing allocator or the
    /// limit refuse the new chunk, the arena holds none until its next allocation. A cycle that
    /// needed far more makes the next chunk the arena takes one sized for it. The first time a
    /// fresh arena's cycle outgrows its largest chunk, its reset keeps every chunk instead, and
    /// makes no backing call: the next cycle runs in them, and the reset after it renews them.
    ///
    /// An oversized chunk is not renewed at once: it is kept for one more cycle with a *probe*
    /// where the renewed chunk would end. A cycle that reaches the probe moves it up (by a
    /// quarter, at least 4 KiB) on a slow path and bumps on, and the probe's last place counts as
    /// the cycle's need. So a cycle whose blocks were all given back before the reset (each
    /// `deallocate` of the last block rolls the position back, and nothing is in use at the
    /// reset) is measured too; the reset after a measured cycle renews a chunk of more than its
    /// need and a quarter. A cycle that moved on to further chunks and gave back all it had
    /// bumped in its last one counts that whole chunk as needed: the renewed chunk holds the
    /// next such cycle, and a probe in it where the part the reset saw ends measures it.
    ///
    /// So a steady loop of "allocate, reset" settles in one chunk of at most 1.5x its need (or
    /// the need and 128 KiB) within three cycles and makes no backing call after that, and a
    /// cycle many times larger than the others is forgotten after four resets and a probed
    /// cycle.
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// for _ in 0..5 {
    ///     for i in 0..1000u32 {
    ///         arena.alloc(i);
    ///     }
    ///     arena.reset();
    ///     assert_eq!(arena.used_bytes(), 0);
    /// }
    /// let s = arena.stats();
    /// assert_eq!(s.chunks, 1);
    /// assert!(s.allocated_bytes >= 4000 && s.allocated_bytes <= 6000);
    /// ```
    pub fn reset(&mut self) {
        // SAFETY: `&mut self` proves no reference, collection or scope borrows the arena, so no
        // block is used again.
        unsafe { self.raw.reset(&*self) }
    }

    /// Same as [`reset`](Arena::reset).
    ///
    /// ```compile_fail,E0502
    /// let mut arena = arena_pool::Arena::new();
    /// let x = arena.alloc(42u32);
    /// arena.clear();
    /// assert_eq!(*x, 42); // error: `arena` is borrowed by `x`
    /// ```
    pub fn clear(&mut self) {
        self.reset()
    }

    /// Returns the chunks the arena holds but does not use (those past the current one: the
    /// chunks a finished scope took), and the large blocks it keeps for reuse, to the backing
    /// allocator. The current chunk is kept.
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// arena.alloc(1u8);
    /// arena.with_scope(|scope| {
    ///     scope.alloc_slice_fill_copy(10_000, 0u8);
    /// });
    /// assert_eq!(arena.stats().chunks, 2);
    /// arena.trim();
    /// assert_eq!(arena.stats().chunks, 1);
    /// ```
    pub fn trim(&mut self) {
        // SAFETY: the chunks and large blocks came from `self.alloc`; `&mut self` rules out a
        // live scope whose checkpoint could point into a spare.
        unsafe {
            self.raw.trim(&*self);
            self.raw.release_spares(&*self);
        }
    }

    /// Sets a cap on the bytes the arena holds from its backing allocator (chunk headers
    /// included, large blocks too), or removes it with `None`. A request that would pass it
    /// fails with `AllocError` from the fallible API (the `try_` methods and the `Allocator`
    /// methods) and panics with a message naming the limit from the panicking one. Chunks already
    /// held are kept even when they exceed a new, lower limit. Scopes share their arena's limit.
    ///
    /// ```
    /// let arena = arena_pool::Arena::new();
    /// arena.set_allocation_limit(Some(4096));
    /// assert!(arena.try_alloc_slice_fill_copy(1000, 0u8).is_ok());
    /// assert!(arena.try_alloc_slice_fill_copy(10_000, 0u8).is_err());
    /// assert!(arena.allocated_bytes_including_metadata() <= 4096);
    /// ```
    ///
    /// # In collections: the limit aborts unless you ask for an error or a panic
    /// A collection's infallible methods (`Vec::push`, `Box::new_in`, `HashMap::insert`, …)
    /// treat an `Err` from the allocator as out of memory: allocator-api2's and hashbrown's
    /// collections then call `handle_alloc_error`, which **aborts the process** ("memory
    /// allocation of N bytes failed"). So a `push` past the limit does not panic, it aborts, and
    /// so does one that finds the backing allocator out of memory. Two ways out:
    /// - **Fallible calls**: reserve with `Vec::try_reserve` (hashbrown's `HashMap::try_reserve`,
    ///   `Box::try_new_in`, `arena_pool::collections::String::try_reserve`) and handle the
    ///   error; the infallible calls within the reserved capacity then allocate nothing.
    /// - **A panic**: with [`set_panic_on_limit(true)`](Self::set_panic_on_limit) the
    ///   `Allocator` methods panic at the limit, so the collection's call unwinds and
    ///   `std::panic::catch_unwind` around the work (a request, a job) recovers.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let arena = Arena::new();
    /// arena.set_allocation_limit(Some(4096));
    /// let mut v: Vec<u64, &Arena> = Vec::new_in(&arena);
    /// assert!(v.try_reserve(10_000).is_err()); // 80 KB: past the limit, an error
    /// assert!(v.try_reserve(100).is_ok());
    /// v.extend(0..100); // within the capacity reserved: no allocation, cannot fail
    /// assert_eq!(v.len(), 100);
    /// ```
    pub fn set_allocation_limit(&self, limit: Option<usize>) {
        self.raw.set_allocation_limit(limit)
    }

    /// With `true`, the arena's [`Allocator`] methods (`allocate`, `grow`, `shrink`, …, what
    /// collections call) **panic** when the [allocation limit](Self::set_allocation_limit) is
    /// reached, with the same message as the panicking helpers ("arena-pool: the arena's
    /// allocation limit of N bytes is reached"), instead of returning `Err(AllocError)`. A
    /// collection whose `push` or `insert` hits the limit then unwinds instead of aborting the
    /// process, and `std::panic::catch_unwind` around a request makes the limit a per-request
    /// memory cap. `false` (the default) restores `Err`. Scopes ([`ArenaRef`]) follow their arena.
    ///
    /// - **The arena stays consistent**: the panic is raised after the failed request has
    ///   undone all it did (no chunk half taken, the limit's accounting exact), so the arena and
    ///   the collections on it stay usable after `catch_unwind`: a `Vec` whose `push` panicked
    ///   keeps its elements, and a [`reset`](Self::reset) frees everything as usual.
    /// - **The trade-off**: every `Allocator` call panics at the limit, the fallible ones too:
    ///   `Vec::try_reserve`, hashbrown's `try_reserve` and `Box::try_new_in` panic instead of
    ///   returning `Err`. The arena's own `try_` methods (`try_alloc`, …) still return `Err`.
    /// - **Only the limit panics.** A backing allocator out of memory is still `Err`, and a
    ///   collection still aborts on it, as it does on the global allocator.
    ///
    /// ```
    /// use std::panic::{AssertUnwindSafe, catch_unwind};
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let mut arena = Arena::new();
    /// arena.set_allocation_limit(Some(16 * 1024));
    /// arena.set_panic_on_limit(true);
    /// let request = |n: u64| {
    ///     catch_unwind(AssertUnwindSafe(|| {
    ///         let mut v = Vec::new_in(&arena);
    ///         v.extend(0..n); // a request too large for the limit panics here
    ///         v.iter().sum::<u64>()
    ///     }))
    /// };
    /// assert_eq!(request(100).ok(), Some(4950));
    /// assert!(request(1_000_000).is_err()); // 8 MB: a panic, not an abort
    /// assert_eq!(request(100).ok(), Some(4950)); // the arena serves the next request
    /// arena.reset();
    /// assert_eq!(arena.used_bytes(), 0);
    /// ```
    pub fn set_panic_on_limit(&self, panic: bool) {
        self.raw.set_panic_on_limit(panic)
    }

    /// The arena as an [`ArenaRef`], the type every scope hands out.
    ///
    /// ```
    /// let arena = arena_pool::Arena::new();
    /// let r = arena.as_arena_ref();
    /// assert_eq!(*r.alloc(5u16), 5);
    /// ```
    pub fn as_arena_ref(&self) -> &ArenaRef<'_, MIN_ALIGN> {
        let src: &dyn ChunkSource = self;
        // The view takes the arena's minimum alignment, so it bumps only widened layouts too.
        // SAFETY: `ArenaRef` is `repr(transparent)` over `dyn ChunkSource` (address and vtable
        // kept); the concrete type `Arena<A, MIN_ALIGN>` has the `RawArena` it reads at offset 0.
        unsafe { &*(src as *const dyn ChunkSource as *const ArenaRef<'_, MIN_ALIGN>) }
    }

    /// The arena as a mutable [`ArenaRef`]: what [`ArenaRef::with_scope`] needs.
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// let arena = arena.as_arena_ref_mut();
    /// let a = arena.alloc(1u32);
    /// arena.with_scope(|scope| {
    ///     assert_eq!(*scope.alloc(2u32), 2);
    /// });
    /// assert_eq!(*a, 1);
    /// ```
    pub fn as_arena_ref_mut(&mut self) -> &mut ArenaRef<'_, MIN_ALIGN> {
        let src: &mut dyn ChunkSource = self;
        // SAFETY: as in `as_arena_ref`; the unique borrow of `self` becomes the unique borrow of
        // the `ArenaRef`.
        unsafe { &mut *(src as *mut dyn ChunkSource as *mut ArenaRef<'_, MIN_ALIGN>) }
    }

    /// Runs `f` in a scope: everything `f` allocates is freed when it returns (or unwinds), and
    /// the chunks it took are kept for reuse. See [`ArenaRef::with_scope`].
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// let before = arena.used_bytes();
    /// let sum = arena.with_scope(|scope| scope.alloc_slice_fill_with(100, |i| i).iter().sum::<usize>());
    /// assert_eq!(sum, 4950);
    /// assert_eq!(arena.used_bytes(), before);
    /// ```
    pub fn with_scope<R>(
        &mut self,
        f: impl for<'s> FnOnce(&'s mut ArenaRef<'s, MIN_ALIGN>) -> R,
    ) -> R {
        self.as_arena_ref_mut().with_scope(f)
    }

    /// Starts a scope that lasts until the returned guard is dropped. See
    /// [`ArenaRef::scope_guard`].
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// {
    ///     let mut guard = arena.scope_guard();
    ///     assert_eq!(guard.scope().alloc_str("temporary"), "temporary");
    /// }
    /// assert_eq!(arena.used_bytes(), 0);
    /// ```
    pub fn scope_guard(&mut self) -> ScopeGuard<'_, MIN_ALIGN> {
        self.as_arena_ref_mut().scope_guard()
    }

    /// The current position, for [`reset_to`](Arena::reset_to).
    pub fn checkpoint(&self) -> Checkpoint {
        self.as_arena_ref().checkpoint()
    }

    /// Returns the position to `checkpoint`. See [`ArenaRef::reset_to`].
    ///
    /// # Safety
    /// As for [`ArenaRef::reset_to`]: `checkpoint` comes from this arena (outside any scope),
    /// it was not invalidated by `reset`, `trim` or an earlier `reset_to` past it, and no block
    /// allocated (or grown or shrunk, which may move it) after it is used again.
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// let a = arena.alloc(1u32) as *mut u32;
    /// let cp = arena.checkpoint();
    /// arena.alloc_slice_fill_copy(1000, 0u8);
    /// // SAFETY: `cp` is from this arena, and the slice allocated after it is not used again.
    /// unsafe { arena.reset_to(cp) };
    /// assert_eq!(arena.used_bytes(), 4);
    /// // SAFETY: `a` was allocated before the checkpoint, so it is still valid.
    /// assert_eq!(unsafe { *a }, 1);
    /// ```
    pub unsafe fn reset_to(&mut self, checkpoint: Checkpoint) {
        // SAFETY: forwarded from the caller.
        unsafe { self.as_arena_ref_mut().reset_to(checkpoint) }
    }
}

impl<'a, A: Allocator, const MIN_ALIGN: usize> From<&'a Arena<A, MIN_ALIGN>>
    for &'a ArenaRef<'a, MIN_ALIGN>
{
    /// [`Arena::as_arena_ref`]: a helper written for `&ArenaRef` takes `(&arena).into()`.
    ///
    /// ```
    /// use arena_pool::{Arena, ArenaRef};
    ///
    /// fn name<'a>(arena: &ArenaRef<'a>) -> &'a str {
    ///     arena.alloc_str("name")
    /// }
    ///
    /// let arena = Arena::new();
    /// assert_eq!(name((&arena).into()), "name");
    /// ```
    fn from(arena: &'a Arena<A, MIN_ALIGN>) -> &'a ArenaRef<'a, MIN_ALIGN> {
        arena.as_arena_ref()
    }
}

impl<'a, A: Allocator, const MIN_ALIGN: usize> From<&'a mut Arena<A, MIN_ALIGN>>
    for &'a mut ArenaRef<'a, MIN_ALIGN>
{
    /// [`Arena::as_arena_ref_mut`].
    fn from(arena: &'a mut Arena<A, MIN_ALIGN>) -> &'a mut ArenaRef<'a, MIN_ALIGN> {
        arena.as_arena_ref_mut()
    }
}

impl<A: Allocator, const MIN_ALIGN: usize> ChunkSource for Arena<A, MIN_ALIGN> {
    fn allocate_chunk(&self, layout: Layout) -> Result<NonNull<[u8]>, Failure> {
        self.alloc
            .allocate(layout)
            .map_err(|AllocError| Failure::OutOfMemory(layout))
    }

    unsafe fn deallocate_chunk(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller: `ptr` came from `self.alloc` with `layout`.
        unsafe { self.alloc.deallocate(ptr, layout) }
    }

    fn allocate_large(&self, layout: Layout, _growing: bool) -> Result<NonNull<[u8]>, Failure> {
        // The arena keeps its large blocks itself (`RawArena`): exactly the size asked for.
        let p = self.allocate_chunk(layout)?;
        Ok(NonNull::slice_from_raw_parts(p.cast(), layout.size()))
    }

    unsafe fn deallocate_large(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller: `ptr` came from `self.alloc` with `layout`.
        unsafe { self.alloc.deallocate(ptr, layout) }
    }

    unsafe fn resize_large(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, Failure> {
        // SAFETY: forwarded from the caller: `ptr` is a live block of `self.alloc` with `old`.
        let resized = unsafe {
            if new.size() >= old.size() {
                self.alloc.grow(ptr, old, new)
            } else {
                self.alloc.shrink(ptr, old, new)
            }
        };
        resized.map_err(|AllocError| Failure::OutOfMemory(new))
    }

    fn allocation_limit(&self) -> Option<usize> {
        self.raw.allocation_limit()
    }

    fn panics_on_limit(&self) -> bool {
        self.raw.panics_on_limit()
    }

    #[inline(always)]
    fn kept(&self) -> Option<&Spares> {
        Some(&self.spares)
    }
}

impl<A: Allocator, const MIN_ALIGN: usize> Drop for Arena<A, MIN_ALIGN> {
    fn drop(&mut self) {
        // SAFETY: the chunks and large blocks came from `self.alloc`, and ownership proves no
        // block is used again.
        unsafe {
            self.raw.release_spares(&*self);
            self.raw.release_all(&*self);
        }
    }
}

impl<A: Allocator + Default, const MIN_ALIGN: usize> Default for Arena<A, MIN_ALIGN> {
    fn default() -> Arena<A, MIN_ALIGN> {
        Arena::with_min_align_in(A::default())
    }
}

impl<A: Allocator, const MIN_ALIGN: usize> fmt::Debug for Arena<A, MIN_ALIGN> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("stats", &self.stats())
            .finish()
    }
}

impl<A: Allocator, const MIN_ALIGN: usize> OnRaw for Arena<A, MIN_ALIGN> {
    type Src = Self;
    const MIN_ALIGN: usize = MIN_ALIGN;

    #[inline(always)]
    fn raw(&self) -> &RawArena {
        &self.raw
    }

    #[inline(always)]
    fn src(&self) -> &Self {
        self
    }
}

stats::stats_api!(impl[A: Allocator, const MIN_ALIGN: usize] Arena<A, MIN_ALIGN>);
