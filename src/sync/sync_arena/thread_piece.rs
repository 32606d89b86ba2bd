//! Each thread's piece of the shared path: the bytes a thread took from the current chunk (one
//! compare-and-swap per piece) and bumps with plain loads and stores, so that `&SyncArena` used
//! from many threads at once touches no shared cache line per allocation.
//!
//! A thread keeps its pieces in a small table of its own (a thread-local), one entry per arena it
//! uses, found by the arena's [`PieceKey`]: a number drawn from a global counter when the arena
//! is made and again by every `&mut` operation that may move a chunk's cursor back or free a
//! chunk (reset, checkpoints, scopes, trim). An entry whose key is not the arena's current key is
//! never used for it, so a piece is bumped only while its chunk is in use and its bytes are the
//! thread's: keys are 64-bit and never repeat, and a stale entry (an arena reset, dropped, or one
//! that shares the entry) is simply overwritten.
//!
//! Where the table cannot be kept (the loom build, whose threads are not the machine's; a target
//! without 64-bit atomics, where a counter could wrap), there are no pieces: every operation
//! reports that it did nothing, and the shared path bumps the chunk with a compare-and-swap.

use core::alloc::Layout;
use core::ptr::NonNull;

/// The largest piece: what a thread may leave unused behind it in a chunk when it stops using
/// the arena before a reset.
pub(super) const PIECE_CAP: usize = 8 * 1024;

/// The smallest block whose roll-back on a chunk is recorded for the reset (what the chunks
/// held before it, see `Chunks::chunk_peak`): a block too large for any piece. Smaller blocks
/// are given back in pieces, where no roll-back hides much of a cycle's need; a larger one placed
/// last on a chunk and given back (a table or buffer that moved on) would hide its bytes from
/// the reset, which would then size the next cycle's chunk short of what the cycle reached.
pub(super) const NOTED_ROLLBACK: usize = PIECE_CAP / 2;

#[cfg(all(not(loom), target_has_atomic = "64"))]
mod table {
    use core::alloc::Layout;
    use core::cell::Cell;
    use core::ptr::{self, NonNull};
    use core::sync::atomic::{AtomicU64, Ordering};

    /// The first piece a thread takes of an arena; each next one is twice as large, up to
    /// [`PIECE_CAP`](super::PIECE_CAP). A request of more than half the next piece is placed on
    /// the chunk directly.
    const FIRST_PIECE: usize = 256;

    /// Entries per thread: a thread that uses this many arenas at once keeps a piece of each
    /// (arenas made one after another take consecutive keys, hence distinct entries).
    const ENTRIES: usize = 4;

    /// The next key to hand out (0 is never one: it names an empty entry).
    static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

    /// Names an arena's current state for the threads' pieces (see the module's documentation).
    /// Read by any thread through `&SyncArena`, written only through `&mut SyncArena`.
    pub(in crate::sync::sync_arena) struct PieceKey {
        key: u64,
        /// The byte offset of the key's entry in a thread's table: worked out once, so that
        /// finding the entry is one load and an add.
        offset: usize,
    }

    impl PieceKey {
        pub(in crate::sync::sync_arena) fn new() -> PieceKey {
            // Relaxed: only uniqueness matters, which the read-modify-write gives.
            let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
            PieceKey {
                key,
                offset: (key as usize & (ENTRIES - 1)) * size_of::<Piece>(),
            }
        }

        /// The key's entry in a thread's table.
        #[inline(always)]
        fn entry(&self, table: &[Piece; ENTRIES]) -> &Piece {
            // SAFETY: `offset` is the offset of the entry of index `key mod ENTRIES` (see `new`),
            // inside the array and aligned as its elements are.
            unsafe { &*table.as_ptr().byte_add(self.offset) }
        }

        /// A key no piece has yet: every thread's piece of the arena is forgotten.
        pub(in crate::sync::sync_arena) fn renew(&mut self) {
            *self = PieceKey::new();
        }

        /// This thread's piece of the arena, if it has one.
        #[inline(always)]
        pub(in crate::sync::sync_arena) fn piece<R>(
            &self,
            f: impl FnOnce(&Piece) -> Option<R>,
        ) -> Option<R> {
            ENTRIES_OF_THREAD.with(|t| {
                let e = self.entry(t);
                if e.key.get() == self.key { f(e) } else { None }
            })
        }

        /// This thread's entry for the arena, made its piece (empty, of the first size) when it
        /// held another arena's.
        pub(in crate::sync::sync_arena) fn claim<R>(
            &self,
            f: impl FnOnce(&Piece) -> Option<R>,
        ) -> Option<R> {
            let key = self.key;
            ENTRIES_OF_THREAD.with(|t| {
                let e = self.entry(t);
                if e.key.get() != key {
                    e.key.set(key);
                    e.empty();
                    e.next.set(FIRST_PIECE);
                }
                f(e)
            })
        }
    }

    /// A thread's piece of one arena: `[cursor, limit)` is the thread's alone to hand out.
    pub(in crate::sync::sync_arena) struct Piece {
        key: Cell<u64>,
        /// The next free byte, with the provenance of the chunk the piece is in (or of nothing
        /// while the piece is empty, address 1).
        cursor: Cell<*mut u8>,
        /// One past the last byte of the piece (an address).
        limit: Cell<usize>,
        /// Size of the next piece to take.
        next: Cell<usize>,
    }

    std::thread_local! {
        static ENTRIES_OF_THREAD: [Piece; ENTRIES] = const { [const { Piece::none() }; ENTRIES] };
    }

    impl Piece {
        /// An entry of no arena, with an empty piece: cursor and limit at address 1, so nothing
        /// but an empty block of alignment 1 fits, and that gets a dangling pointer.
        const fn none() -> Piece {
            Piece {
                key: Cell::new(0),
                cursor: Cell::new(ptr::without_provenance_mut(1)),
                limit: Cell::new(1),
                next: Cell::new(FIRST_PIECE),
            }
        }

        fn empty(&self) {
            self.cursor.set(ptr::without_provenance_mut(1));
            self.limit.set(1);
        }

        /// Bumps `layout` in the piece; `None` when it does not fit.
        #[inline(always)]
        pub(in crate::sync::sync_arena) fn bump(&self, layout: Layout) -> Option<NonNull<u8>> {
            let cur = self.cursor.get();
            // Neither sum overflows: the cursor lies below `isize::MAX` (in a chunk, which lies
            // there, or 1 for the empty piece), a layout's alignment is at most `2^63`, and its
            // size at most `isize::MAX` less the alignment's padding, so `start + size` is below
            // `2 * isize::MAX`.
            let start = (cur.addr() + (layout.align() - 1)) & layout.align().wrapping_neg();
            let end = start + layout.size();
            if end > self.limit.get() {
                return None;
            }
            // `[start, end)` lies in `[cursor, limit]`, inside the piece's chunk (the empty piece
            // fits only an empty block of alignment 1, at its address 1).
            self.cursor.set(cur.with_addr(end));
            // SAFETY: `start` is at least the cursor, which is not null.
            Some(unsafe { NonNull::new_unchecked(cur.with_addr(start)) })
        }

        /// The piece's `(cursor, limit)` addresses.
        pub(in crate::sync::sync_arena) fn range(&self) -> (usize, usize) {
            (self.cursor.get().addr(), self.limit.get())
        }

        /// The unused rest of the piece, as a pointer range (empty for the empty piece).
        pub(in crate::sync::sync_arena) fn rest(&self) -> (NonNull<u8>, NonNull<u8>) {
            let cur = self.cursor.get();
            // SAFETY: the cursor is never null (address 1 when empty), and neither is the limit.
            unsafe {
                (
                    NonNull::new_unchecked(cur),
                    NonNull::new_unchecked(cur.with_addr(self.limit.get())),
                )
            }
        }

        /// Moves the cursor to `to`, an address in `[start of the piece, limit]` (the end of a
        /// block given back, grown or shrunk in place). The piece's own pointer carries the
        /// chunk's provenance, never the caller's.
        #[inline(always)]
        pub(in crate::sync::sync_arena) fn set_cursor(&self, to: usize) {
            self.cursor.set(self.cursor.get().with_addr(to));
        }

        /// Makes `[start, start + size)` the piece.
        pub(in crate::sync::sync_arena) fn set(&self, start: NonNull<u8>, size: usize) {
            self.cursor.set(start.as_ptr());
            self.limit.set(start.addr().get() + size);
        }

        /// Lengthens the piece to `limit`: the bytes up to it were taken from the chunk after it.
        pub(in crate::sync::sync_arena) fn set_limit(&self, limit: usize) {
            self.limit.set(limit);
        }

        /// Forgets the piece (its bytes went back to the chunk).
        pub(in crate::sync::sync_arena) fn clear(&self) {
            self.empty();
        }

        /// Size of the next piece to take; the one after is twice as large, up to the cap.
        pub(in crate::sync::sync_arena) fn take_next_size(&self) -> usize {
            let next = self.next.get();
            self.next.set((next * 2).min(super::PIECE_CAP));
            next
        }

        /// Size of the next piece to take.
        pub(in crate::sync::sync_arena) fn next_size(&self) -> usize {
            self.next.get()
        }

        /// Makes the next piece at least `floor` bytes, up to the cap.
        pub(in crate::sync::sync_arena) fn raise_next_size(&self, floor: usize) {
            let floor = floor.min(super::PIECE_CAP);
            if self.next.get() < floor {
                self.next.set(floor);
            }
        }
    }
}

#[cfg(not(all(not(loom), target_has_atomic = "64")))]
mod table {
    use core::alloc::Layout;
    use core::convert::Infallible;
    use core::ptr::NonNull;

    /// No pieces in this build (see the module's documentation).
    pub(in crate::sync::sync_arena) struct PieceKey;

    /// Never made in this build.
    pub(in crate::sync::sync_arena) struct Piece(Infallible);

    impl PieceKey {
        pub(in crate::sync::sync_arena) fn new() -> PieceKey {
            PieceKey
        }

        pub(in crate::sync::sync_arena) fn renew(&mut self) {}

        #[inline(always)]
        pub(in crate::sync::sync_arena) fn piece<R>(
            &self,
            _f: impl FnOnce(&Piece) -> Option<R>,
        ) -> Option<R> {
            None
        }

        pub(in crate::sync::sync_arena) fn claim<R>(
            &self,
            _f: impl FnOnce(&Piece) -> Option<R>,
        ) -> Option<R> {
            None
        }
    }

    impl Piece {
        pub(in crate::sync::sync_arena) fn bump(&self, _layout: Layout) -> Option<NonNull<u8>> {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn range(&self) -> (usize, usize) {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn rest(&self) -> (NonNull<u8>, NonNull<u8>) {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn set_cursor(&self, _to: usize) {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn clear(&self) {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn set(&self, _start: NonNull<u8>, _size: usize) {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn set_limit(&self, _limit: usize) {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn take_next_size(&self) -> usize {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn next_size(&self) -> usize {
            match self.0 {}
        }

        pub(in crate::sync::sync_arena) fn raise_next_size(&self, _floor: usize) {
            match self.0 {}
        }
    }
}

pub(super) use table::{Piece, PieceKey};

/// Whether threads keep pieces in this build.
pub(super) const PIECES: bool = cfg!(all(not(loom), target_has_atomic = "64"));

/// The end of the block `[p, p + size)` if it is the last block of `piece`.
#[inline(always)]
pub(super) fn ends_at_cursor(piece: &Piece, p: NonNull<u8>, size: usize) -> Option<usize> {
    let end = p.addr().get().wrapping_add(size);
    (end == piece.range().0).then_some(end)
}

/// Whether `layout` is placed in a piece rather than on the chunk directly, given the size of
/// the thread's next piece.
#[inline(always)]
pub(super) fn fits_pieces(layout: Layout, next: usize) -> bool {
    // The worst padding a piece start aligned to the chunk alignment can need.
    layout.size().saturating_add(layout.align() - 1) <= next / 2
}
