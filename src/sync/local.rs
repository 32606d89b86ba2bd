//! [`LocalArena`]: one thread's handle on a [`SyncArena`], bumping without atomic operations.

use core::fmt;

use allocator_api2::alloc::{Allocator, Global};

use crate::arena::RawArena;
use crate::sync::SyncArena;

/// A per-thread handle on a [`SyncArena`], made by [`SyncArena::local`].
///
/// It takes pieces of the shared arena (one compare-and-swap each, growing geometrically like an
/// [`Arena`](crate::Arena)'s chunks) and bumps inside them with plain loads and stores: the same
/// fast path as `Arena`. It has `Arena`'s typed helpers and statistics and implements
/// [`Allocator`], growing, shrinking and freeing its last block in place.
///
/// **Its blocks belong to the `SyncArena`**: the typed helpers return references that live as
/// long as the `&'a SyncArena` borrow, not just the handle, and dropping the handle frees
/// nothing (it only gives the unused end of its last piece back when it can). There is no `reset`
/// or scope here; reset the `SyncArena`.
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
// is; so moving the handle to another thread is sound. Its `Cell`s keep it `!Sync`.
unsafe impl<A: Allocator + Sync> Send for LocalArena<'_, A> {}

/// The largest regular piece a handle takes (nominal bytes): pieces grow 512 B, 1 KiB, … up to
/// this, so a handle dropped while other threads bump leaves at most this much unused behind.
/// Requests larger than a piece still get a piece of their own size.
const PIECE_CAP: usize = 256 * 1024;

impl<'a, A: Allocator> LocalArena<'a, A> {
    pub(crate) fn new(shared: &'a SyncArena<A>) -> LocalArena<'a, A> {
        LocalArena {
            raw: RawArena::with_growth_cap(PIECE_CAP),
            shared,
        }
    }

    /// The shared arena this handle takes its pieces from.
    pub fn shared(&self) -> &'a SyncArena<A> {
        self.shared
    }

    #[inline(always)]
    pub(crate) fn raw(&self) -> &RawArena {
        &self.raw
    }

    #[inline(always)]
    pub(crate) fn src(&self) -> &'a SyncArena<A> {
        self.shared
    }
}

impl<A: Allocator> Drop for LocalArena<'_, A> {
    fn drop(&mut self) {
        // The pieces stay with the shared arena (the blocks in them live on); only the unused end
        // of the last one goes back, if nothing was taken after it.
        let (from, to) = self.raw.free_range();
        // The shared arena hands these bytes out without poisoning (ASan builds).
        crate::arena::poison::unpoison(from.as_ptr(), to.as_ptr());
        self.shared.give_back(from, to);
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

crate::arena::typed_api!(impl['a, A: Allocator] LocalArena<'a, A>, 'a, no_examples);
crate::arena::stats_api!(impl['a, A: Allocator] LocalArena<'a, A>);
