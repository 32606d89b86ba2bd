//! [`LocalArena`]: one thread's handle on a [`SyncArena`], bumping without atomic operations.

use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;

use allocator_api2::alloc::{Allocator, Global};

use crate::ArenaRef;
use crate::arena::{ChunkSource, OnRaw, RawArena};
use crate::error::Failure;
use crate::sync::SyncArena;

/// A per-thread handle on a [`SyncArena`], made by [`SyncArena::local`].
///
/// It takes pieces of the shared arena, growing geometrically like an [`Arena`](crate::Arena)'s
/// chunks (or the rest of the shared chunk when the request fits there), and bumps inside them
/// with plain loads and stores: the same fast path as `Arena`. Its first piece is lent when it
/// is made, from the calling thread's own piece of the shared arena, without a chunk header or
/// an atomic operation; its next pieces, up to 1 KiB, are cut there too. A dropped handle gives
/// its unused end back there, so a short-lived handle per job costs its blocks and no more, and
/// no shared cache line; larger pieces take one compare-and-swap each. It has the typed API
/// ([`BumpAlloc`](crate::BumpAlloc)) and `Arena`'s statistics and implements [`Allocator`],
/// growing, shrinking and freeing its last block in place. Its last block grows in place past
/// the end of its piece too, while nothing was placed after the piece in the shared chunk: the
/// piece lengthens into the shared chunk (one compare-and-swap), so a growing `Vec` on a handle
/// is not copied at each piece boundary.
///
/// **Its blocks belong to the `SyncArena`**: the typed helpers return references that live as
/// long as the `&'a SyncArena` borrow, not just the handle, and dropping the handle frees
/// nothing (it only gives the unused end of its last piece back when it can). A `Vec` built on
/// the handle (`Vec::new_in(&local)`) borrows the handle; [`into_slice`](crate::BumpAlloc::into_slice)
/// turns it into a slice of the `SyncArena` borrow, which outlives the handle. There is no
/// `reset` here (reset the `SyncArena`); scopes run on the handle's
/// [`ArenaRef`] view ([`as_arena_ref_mut`](LocalArena::as_arena_ref_mut)).
///
/// ```
/// use arena_pool::{LocalArena, SyncArena};
/// use arena_pool::allocator_api2::vec::Vec;
///
/// let shared = SyncArena::new();
/// let primes: &[u32] = {
///     let local = shared.local();
///     let mut v = Vec::new_in(&local);
///     v.extend((2..30u32).filter(|n| (2..*n).all(|d| n % d != 0)));
///     LocalArena::into_slice(v)
/// }; // the handle is gone, the slice stays until `shared` is reset or dropped
/// assert_eq!(primes, [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]);
/// ```
///
/// **Limits are the `SyncArena`'s**: its pieces and large blocks count against the shared
/// arena's [allocation limit](SyncArena::set_allocation_limit) (which
/// [`allocation_limit`](Self::allocation_limit) reports), and its `Allocator` methods panic at
/// that limit when the shared arena asks for it ([`SyncArena::set_panic_on_limit`]). As for any
/// arena, a collection's infallible call past the limit aborts otherwise.
///
/// `LocalArena` is `Send` (a thread may hand its handle to another) but never `Sync`.
///
/// ```
/// use arena_pool::SyncArena;
/// use arena_pool::allocator_api2::vec::Vec;
///
/// let arena = SyncArena::new();
/// let words: Vec<&str> = std::thread::scope(|s| {
///     let t = s.spawn(|| {
///         let local = arena.local();
///         let mut words = Vec::new(); // on the global allocator
///         for i in 0..3 {
///             words.push(&*local.alloc_fmt(format_args!("word{i}")));
///         }
///         let mut scratch = Vec::new_in(&local); // in the arena, grown in place
///         scratch.extend(0..100u32);
///         words
///     });
///     t.join().unwrap()
/// });
/// assert_eq!(words.as_slice(), ["word0", "word1", "word2"]);
/// ```
#[repr(C)]
pub struct LocalArena<'a, A: Allocator = Global> {
    raw: RawArena,
    shared: &'a SyncArena<A>,
}

// SAFETY: the handle exclusively owns its bump position and pieces (no other handle or thread
// bumps them), and it reaches the shared arena only through `&SyncArena`, which is `Sync` when `A`
// is; so moving the handle to another thread is sound. It is never `Sync` (`crate::sharing`).
unsafe impl<A: Allocator + Sync> Send for LocalArena<'_, A> {}

/// The largest regular piece a handle takes (nominal bytes): pieces grow as an `Arena`'s chunks
/// do (256 B, 512 B, …) up to this, so a handle dropped while other threads bump leaves at most
/// this much unused behind. Requests larger than a piece still get a piece of their own size.
const PIECE_CAP: usize = 256 * 1024;

impl<'a, A: Allocator> LocalArena<'a, A> {
    #[inline]
    pub(crate) fn new(shared: &'a SyncArena<A>) -> LocalArena<'a, A> {
        // Its first piece, lent now from the thread's piece when it has room: the first
        // requests are then bumps like any other. Built in one expression, so that the handle
        // is written where the caller keeps it.
        LocalArena {
            raw: RawArena::with_headless(PIECE_CAP, shared.lend_first_piece()),
            shared,
        }
    }

    /// The shared arena this handle takes its pieces from.
    pub fn shared(&self) -> &'a SyncArena<A> {
        self.shared
    }
}

impl<'a, A: Allocator> OnRaw for LocalArena<'a, A> {
    // The handle itself, which forwards to the shared arena: its address is at hand wherever the
    // raw arena is, so a fast path does not load the shared arena's for its cold branch.
    type Src = Self;

    #[inline(always)]
    fn raw(&self) -> &RawArena {
        &self.raw
    }

    #[inline(always)]
    fn src(&self) -> &Self {
        self
    }
}

impl<'a, A: Allocator> LocalArena<'a, A> {
    /// The handle as an [`ArenaRef`], the view every scope hands out: what helpers written for
    /// `&ArenaRef` take. Its typed helpers return references that live for `'a`, like the
    /// handle's.
    ///
    /// ```
    /// use arena_pool::{ArenaRef, SyncArena};
    ///
    /// fn word<'a>(arena: &ArenaRef<'a>, i: u32) -> &'a str {
    ///     arena.alloc_fmt(format_args!("word{i}"))
    /// }
    ///
    /// let shared = SyncArena::new();
    /// let w = word(shared.local().as_arena_ref(), 1); // outlives the handle
    /// assert_eq!(w, "word1");
    /// ```
    pub fn as_arena_ref(&self) -> &ArenaRef<'a> {
        let src: &(dyn ChunkSource + 'a) = self;
        // `ArenaRef` is a `repr(transparent)` wrapper around `dyn ChunkSource`, and the concrete
        // type, `LocalArena<'a, A>`, is `repr(C)` with the `RawArena` that `ArenaRef` reads first.
        // SAFETY: the cast keeps the address and the vtable (see above); the handle's blocks live
        // for `'a` (they belong to the `SyncArena`), as `ArenaRef<'a>` hands them out.
        unsafe { &*(src as *const (dyn ChunkSource + 'a) as *const ArenaRef<'a>) }
    }

    /// The handle as a mutable [`ArenaRef`]: scopes on a handle
    /// ([`ArenaRef::with_scope`], [`ArenaRef::scope_guard`]). A scope's blocks are given back to
    /// the handle when it ends; the handle's other blocks stay.
    ///
    /// ```
    /// use arena_pool::SyncArena;
    ///
    /// let shared = SyncArena::new();
    /// let mut local = shared.local();
    /// let kept = local.alloc_str("kept");
    /// let scope_bytes = local.as_arena_ref_mut().with_scope(|scope| {
    ///     scope.alloc_slice_fill_copy(1000, 0u8);
    ///     scope.used_bytes()
    /// });
    /// assert!(local.used_bytes() < scope_bytes);
    /// drop(local);
    /// assert_eq!(kept, "kept");
    /// ```
    pub fn as_arena_ref_mut(&mut self) -> &mut ArenaRef<'a> {
        let src: &mut (dyn ChunkSource + 'a) = self;
        // SAFETY: as in `as_arena_ref`; the unique borrow of `self` becomes the unique borrow of
        // the `ArenaRef`.
        unsafe { &mut *(src as *mut (dyn ChunkSource + 'a) as *mut ArenaRef<'a>) }
    }
}

impl<'x, 'a, A: Allocator> From<&'x LocalArena<'a, A>> for &'x ArenaRef<'a> {
    /// [`LocalArena::as_arena_ref`].
    fn from(local: &'x LocalArena<'a, A>) -> &'x ArenaRef<'a> {
        local.as_arena_ref()
    }
}

impl<'x, 'a, A: Allocator> From<&'x mut LocalArena<'a, A>> for &'x mut ArenaRef<'a> {
    /// [`LocalArena::as_arena_ref_mut`].
    fn from(local: &'x mut LocalArena<'a, A>) -> &'x mut ArenaRef<'a> {
        local.as_arena_ref_mut()
    }
}

/// The source an [`ArenaRef`] view of the handle calls through its vtable: the shared arena's
/// pieces and large blocks, as for the handle itself.
impl<A: Allocator> ChunkSource for LocalArena<'_, A> {
    fn allocate_chunk(&self, layout: Layout) -> Result<NonNull<[u8]>, Failure> {
        self.shared.allocate_chunk(layout)
    }

    unsafe fn deallocate_chunk(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { self.shared.deallocate_chunk(ptr, layout) }
    }

    fn note_need(&self, bytes: usize) {
        self.shared.note_chunk_need(bytes);
    }

    fn allocate_large(&self, layout: Layout, growing: bool) -> Result<NonNull<[u8]>, Failure> {
        self.shared.allocate_large(layout, growing)
    }

    unsafe fn deallocate_large(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { self.shared.deallocate_large(ptr, layout) }
    }

    unsafe fn resize_large(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, Failure> {
        // SAFETY: forwarded from the caller.
        unsafe { self.shared.resize_large(ptr, old, new) }
    }

    fn allocation_limit(&self) -> Option<usize> {
        self.shared.allocation_limit()
    }

    fn panics_on_limit(&self) -> bool {
        self.shared.panics_on_limit()
    }

    fn spare_room(&self) -> usize {
        self.shared.spare_room()
    }

    fn extends_chunks(&self) -> bool {
        self.shared.extends_chunks()
    }

    unsafe fn extend_chunk(&self, base: NonNull<u8>, size: usize, more: usize) -> bool {
        // SAFETY: forwarded from the caller.
        unsafe { self.shared.extend_chunk(base, size, more) }
    }

    fn lend_piece(&self, layout: Layout) -> Option<(NonNull<u8>, NonNull<u8>)> {
        self.shared.lend_piece(layout)
    }

    unsafe fn give_back(&self, from: NonNull<u8>, to: NonNull<u8>) -> bool {
        self.give_back_rest(from, to)
    }
}

impl<A: Allocator> LocalArena<'_, A> {
    /// Gives `[from, to)`, the unused end of the handle's current piece, back to the shared
    /// arena when nothing was taken after it there; returns whether it did.
    #[inline]
    fn give_back_rest(&self, from: NonNull<u8>, to: NonNull<u8>) -> bool {
        // The shared arena hands these bytes out without poisoning (ASan builds).
        crate::arena::poison::unpoison(from.as_ptr(), to.as_ptr());
        // Given back to the thread's piece it was cut from (the common case: a handle per job),
        // the bytes stay counted as the chunk's use (as the piece's are): nothing is hidden
        // from the reset.
        self.shared.release_to_piece(from, to) || self.give_back_to_chunk(from, to)
    }

    /// [`give_back_rest`](Self::give_back_rest) of a rest not in the thread's piece: to the
    /// current chunk when it ends at the chunk's cursor; returns whether it went there.
    #[cold]
    #[inline(never)]
    fn give_back_to_chunk(&self, from: NonNull<u8>, to: NonNull<u8>) -> bool {
        if !self.shared.release_bump(from, to) {
            return false;
        }
        // A roll-back on the shared chunk hides what the handle used above `from` (its own
        // blocks rolled back inside its piece): the shared arena's reset must see it. When the
        // piece hands out nothing, how far it reached is unknown, and it counts in full (as
        // `Arena`'s reset bounds an emptied last chunk); otherwise what the handle recorded, as
        // an `Arena` records it.
        let unseen = if self.raw.current_is_bare() {
            to.addr().get() - from.addr().get()
        } else {
            self.raw.peak_above_use()
        };
        if unseen != 0 {
            self.shared.note_rollback(unseen);
        }
        true
    }
}

impl<A: Allocator> Drop for LocalArena<'_, A> {
    // Inline: a handle per job drops once per job, and its common case is a few instructions.
    #[inline]
    fn drop(&mut self) {
        // The pieces stay with the shared arena (the blocks in them live on); only the unused end
        // of the last one goes back, if nothing was taken after it.
        let (from, to) = self.raw.free_range();
        self.give_back_rest(from, to);
        // Its large blocks outlive it too: the shared arena frees them on reset or drop.
        self.shared.adopt_large(self.raw.large_list());
    }
}

impl<A: Allocator> fmt::Debug for LocalArena<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalArena")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

crate::arena::stats_api!(impl['a, A: Allocator] LocalArena<'a, A>);
