//! Walking the memory an arena has handed out: [`ChunkIter`] and [`ChunkRawIter`], bumpalo's
//! `iter_allocated_chunks` and `iter_allocated_chunks_raw` for [`Arena`], [`ArenaRef`] and
//! [`SyncArena`](crate::SyncArena).
//!
//! The walk reads what the arenas record anyway: a chunk's bytes in use are the count in its
//! header (see the invariants of `bump`) and, for the current chunk, the position; a
//! `SyncArena`'s chunk has its cursor. The large blocks follow, from their list. Nothing here
//! runs on an allocation path.

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use allocator_api2::alloc::Allocator;

use super::chunk::Chunk;
use super::large::{Large, LargeList};
use super::poison::unpoison;
use super::typed::OnRaw;
use super::{Arena, ArenaRef, RawArena};

/// Reads a chunk of another arena kind's list (a `SyncArena`'s): its bytes in use and the chunk
/// after it.
///
/// # Safety
/// The pointer is a chunk of the list the walk was made for, which does not change while the
/// walk is alive.
pub(crate) type ListStep = unsafe fn(NonNull<u8>) -> ((NonNull<u8>, usize), Option<NonNull<u8>>);

/// Where the walk over the chunks is.
#[derive(Clone, Copy)]
enum Chunks {
    /// An arena's ring, from the current chunk back to `head` (the oldest in use) through
    /// `prev`: `next` is the chunk to yield next, with `used` bytes in use.
    Ring {
        next: Chunk,
        used: usize,
        head: Chunk,
    },
    /// A list of chunks, newest first, read through `step` (a `SyncArena`'s).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    List {
        next: Option<NonNull<u8>>,
        step: ListStep,
    },
    /// Every chunk was yielded.
    Done,
}

/// The memory an arena has handed out, as raw ranges `(start, length)`: the bytes in use of
/// each chunk that holds any, newest chunk first, then the data of each large block, newest
/// first. From [`Arena::iter_allocated_chunks_raw`] (see there for the order and what the
/// ranges cover), [`ArenaRef::iter_allocated_chunks_raw`], and inside [`ChunkIter`].
///
/// The iterator reads the arena's chunk headers as it goes: the arena must not change while it
/// is alive (the `# Safety` of the method that made it).
///
/// ```
/// let arena = arena_pool::Arena::new();
/// arena.alloc_slice_copy(b"bytes");
/// // SAFETY: the arena does not change while the iterator is alive, and nothing writes the
/// // bytes read (no `&mut` to them is used again).
/// let ranges: Vec<(*mut u8, usize)> = unsafe { arena.iter_allocated_chunks_raw() }.collect();
/// assert_eq!(ranges.len(), 1);
/// let (start, len) = ranges[0];
/// // SAFETY: as above; the five bytes were written by `alloc_slice_copy`.
/// assert_eq!(unsafe { core::slice::from_raw_parts(start, len) }, b"bytes");
/// ```
pub struct ChunkRawIter<'a> {
    chunks: Chunks,
    /// A `LocalArena`'s headless piece (see `bump::headless`), the oldest of its pieces: yielded
    /// after the chunks.
    headless: Option<(NonNull<u8>, usize)>,
    /// The next large block to yield.
    large: Option<Large>,
    _arena: PhantomData<&'a ()>,
}

impl<'a> ChunkRawIter<'a> {
    /// The walk over `raw`'s chunks in use and large blocks.
    ///
    /// # Safety
    /// `raw` does not change while the iterator is alive.
    unsafe fn over_raw(raw: &'a RawArena) -> ChunkRawIter<'a> {
        let chunks = match raw.chunks_in_use() {
            Some((next, used, head)) => Chunks::Ring { next, used, head },
            None => Chunks::Done,
        };
        ChunkRawIter {
            chunks,
            headless: raw.headless_in_use(),
            large: raw.large_list().newest(),
            _arena: PhantomData,
        }
    }

    /// The walk over a list of chunks, newest first, read through `step`, and the large blocks of
    /// `large` (a `SyncArena`'s).
    ///
    /// # Safety
    /// `first` is the first chunk of a list that `step` reads, and neither that list, its
    /// chunks' bytes in use nor `large` change while the iterator is alive.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn over_list(
        first: Option<NonNull<u8>>,
        step: ListStep,
        large: &'a LargeList,
    ) -> ChunkRawIter<'a> {
        ChunkRawIter {
            chunks: Chunks::List { next: first, step },
            headless: None,
            large: large.newest(),
            _arena: PhantomData,
        }
    }

    /// The next chunk's bytes in use, empty chunks included; `None` after the oldest.
    fn next_chunk(&mut self) -> Option<(NonNull<u8>, usize)> {
        match self.chunks {
            Chunks::Ring { next, used, head } => {
                self.chunks = if next == head {
                    Chunks::Done
                } else {
                    // The ring from `head` to the current chunk holds the chunks in use, each
                    // with its count in its header (see the invariants of `bump`); the arena
                    // does not change meanwhile (the constructor's contract).
                    let prev = next.prev();
                    Chunks::Ring {
                        next: prev,
                        used: prev.used(),
                        head,
                    }
                };
                Some((next.start(), used))
            }
            Chunks::List { next, step } => {
                let c = next?;
                // SAFETY: `c` is a chunk of the list `step` reads, unchanged since the walk was
                // made (the contract of `over_list`).
                let (range, after) = unsafe { step(c) };
                self.chunks = Chunks::List { next: after, step };
                Some(range)
            }
            Chunks::Done => None,
        }
    }
}

impl Iterator for ChunkRawIter<'_> {
    type Item = (*mut u8, usize);

    fn next(&mut self) -> Option<(*mut u8, usize)> {
        let (start, len) = loop {
            match self.next_chunk() {
                // A chunk that holds nothing (the current one right after a reset) is skipped.
                Some((_, 0)) => continue,
                Some(range) => break range,
                None => {
                    if let Some(range) = self.headless.take() {
                        break range;
                    }
                    let b = self.large?;
                    self.large = b.next_older();
                    break (b.data(), b.data_size());
                }
            }
        };
        // The range is handed out for reading: ASan builds unpoison it (padding and blocks freed
        // in place stay poisoned otherwise, see `poison`).
        unpoison(start.as_ptr(), start.as_ptr().wrapping_add(len));
        Some((start.as_ptr(), len))
    }
}

impl FusedIterator for ChunkRawIter<'_> {}

impl fmt::Debug for ChunkRawIter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chunks_done = matches!(self.chunks, Chunks::Done | Chunks::List { next: None, .. })
            && self.headless.is_none();
        f.debug_struct("ChunkRawIter")
            .field("chunks_done", &chunks_done)
            .field("large_done", &self.large.is_none())
            .finish()
    }
}

/// The memory an arena has handed out, as byte slices: the bytes in use of each chunk that
/// holds any, newest chunk first, then the data of each large block, newest first. From
/// [`Arena::iter_allocated_chunks`] (see there for the order and what the slices cover) and
/// [`SyncArena::iter_allocated_chunks`](crate::SyncArena::iter_allocated_chunks); it borrows the
/// arena mutably.
///
/// ```
/// let mut arena = arena_pool::Arena::new();
/// arena.alloc(1u32);
/// let mut chunks = arena.iter_allocated_chunks();
/// assert_eq!(chunks.next().map(<[_]>::len), Some(4));
/// assert!(chunks.next().is_none());
/// ```
pub struct ChunkIter<'a> {
    raw: ChunkRawIter<'a>,
    _arena: PhantomData<&'a mut ()>,
}

impl<'a> ChunkIter<'a> {
    /// The safe iterator over `raw`.
    ///
    /// # Safety
    /// `raw`'s arena is borrowed mutably for `'a` (so no block of it is written, and no `&mut`
    /// to one is alive, while the slices are), and the ranges it yields are valid for reads for
    /// `'a`.
    pub(crate) unsafe fn new(raw: ChunkRawIter<'a>) -> ChunkIter<'a> {
        ChunkIter {
            raw,
            _arena: PhantomData,
        }
    }
}

impl<'a> Iterator for ChunkIter<'a> {
    type Item = &'a [MaybeUninit<u8>];

    fn next(&mut self) -> Option<&'a [MaybeUninit<u8>]> {
        let (start, len) = self.raw.next()?;
        // The range lies in one chunk's usable bytes or one large block's data, from the arena's
        // own pointer to it (the provenance of the whole block); the ranges do not overlap.
        // SAFETY: non-null and valid for reads of `len` bytes for `'a`, which holds the arena
        // borrowed mutably (the contract of `new`), so nothing writes them meanwhile; any byte is
        // a valid `MaybeUninit<u8>`.
        let bytes = unsafe { core::slice::from_raw_parts(start.cast::<MaybeUninit<u8>>(), len) };
        Some(bytes)
    }
}

impl FusedIterator for ChunkIter<'_> {}

impl fmt::Debug for ChunkIter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ChunkIter").field(&self.raw).finish()
    }
}

impl<A: Allocator, const MIN_ALIGN: usize> Arena<A, MIN_ALIGN> {
    /// The memory the arena has handed out, as byte slices, for code that dumps, checksums or
    /// copies it out: what bumpalo's `Bump::iter_allocated_chunks` yields, with the same
    /// contract.
    ///
    /// # What is yielded
    /// - **Each chunk that holds blocks**: its bytes in use, from its first usable byte up to
    ///   the bump position for the current chunk, and up to where it was filled when the arena
    ///   moved on for the earlier ones. The slices of the chunks add up to
    ///   [`used_bytes`](Arena::used_bytes): they cover every block bumped there, with the
    ///   alignment padding between blocks, the blocks freed or moved while they were not last
    ///   (their bytes stay used until a reset or the end of their scope), and the byte a scope
    ///   steps over while it is active. Chunks that hold nothing are not yielded: the spares kept
    ///   after a [`reset`](Arena::reset) or a scope's end, and the current chunk while it is
    ///   empty.
    /// - **Then each large block in use** (a block of at least 64 KiB outside the chunks, see
    ///   [`Arena`]): its data, from the block's start as the allocation returned it, for the
    ///   room the block has (at least the size asked, rounded up to 16 bytes; a block kept for
    ///   reuse may have more). They are not counted in `used_bytes` (see
    ///   [`ArenaStats::large_bytes`](crate::ArenaStats::large_bytes)). Kept large blocks are not
    ///   in use and are not yielded.
    ///
    /// # Order
    /// The newest chunk first (the current one), then the chunks filled before it, newest first,
    /// as bumpalo yields them; then the large blocks, newest first. Within a chunk the bytes are
    /// in **allocation order**: the arena bumps upward, so a block lies after every block
    /// allocated before it in the same chunk (bumpalo bumps downward: there the newest block
    /// comes first). Reversing the chunks (`.collect::<Vec<_>>()` then `.rev()`) gives
    /// everything bumped in allocation order.
    ///
    /// # Contents
    /// The items are `&[MaybeUninit<u8>]`: bytes may be uninitialised (alignment padding, blocks
    /// never written, the room of a large block past its data, the inside padding of a value).
    /// Reading them as `u8` needs the same care as with bumpalo: every block written in full,
    /// with no padding between or inside them (all of one alignment, sizes a multiple of it),
    /// and no freed block (a value whose `Drop` ran through `Box`) read as a live one.
    ///
    /// # Why this is safe
    /// `&mut self` proves that nothing borrows the arena: every reference, collection and scope
    /// the arena handed out borrows it, so none is alive, and no block can be written (or read
    /// through a `&mut`) while the slices are. The slices borrow the arena mutably in turn: no
    /// allocation, reset or drop while they live.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let mut arena = Arena::new();
    /// arena.alloc(b'a');
    /// arena.alloc(b'b');
    /// arena.alloc(b'c');
    /// let chunks: Vec<_> = arena.iter_allocated_chunks().collect();
    /// assert_eq!(chunks.len(), 1);
    /// // Only `u8`s were placed, all written: no padding, no uninitialised byte.
    /// // SAFETY: every byte of the chunk was written.
    /// let bytes: Vec<u8> = chunks[0].iter().map(|b| unsafe { b.assume_init() }).collect();
    /// assert_eq!(bytes, b"abc"); // allocation order
    ///
    /// // Many chunks: the newest first; their lengths add up to `used_bytes`.
    /// for i in 0..10_000u32 {
    ///     arena.alloc(i);
    /// }
    /// let total: usize = arena.iter_allocated_chunks().map(<[_]>::len).sum();
    /// assert_eq!(total, arena.used_bytes());
    ///
    /// // Nothing after a reset.
    /// arena.reset();
    /// assert_eq!(arena.iter_allocated_chunks().count(), 0);
    /// ```
    pub fn iter_allocated_chunks(&mut self) -> ChunkIter<'_> {
        // SAFETY: the arena is borrowed mutably for the iterator's lifetime: it does not change,
        // and its chunks and large blocks stay held.
        unsafe { ChunkIter::new(self.iter_allocated_chunks_raw()) }
    }

    /// [`iter_allocated_chunks`](Arena::iter_allocated_chunks) through a shared borrow, as raw
    /// ranges `(start, length)`: the same ranges in the same order, for memory that references
    /// or collections of the arena still point into. bumpalo's `Bump::iter_allocated_chunks_raw`.
    ///
    /// # Safety
    /// - While the iterator is alive, the arena does not change: nothing allocates, frees, grows
    ///   or shrinks in it (through the typed helpers, the `Allocator` methods, a collection or
    ///   a `Box` on it), and no scope begins or ends. (It reads the chunks' headers as it goes.)
    /// - A range is used only while its memory is still the arena's: not after a
    ///   [`reset`](Arena::reset), [`trim`](Arena::trim), [`reset_to`](Arena::reset_to), the end
    ///   of the scope that allocated in it, or the drop of the arena, nor, for a large block,
    ///   after it is freed or resized (its memory goes back to the backing allocator).
    /// - Reading through a range is reading every block there: nothing may write those bytes
    ///   meanwhile, and no `&mut` to them that is alive then may be used afterwards (a `&mut T`
    ///   from [`alloc`](Arena::alloc), a collection's buffer). Bytes may be uninitialised (see
    ///   [`iter_allocated_chunks`](Arena::iter_allocated_chunks)): read them as
    ///   `MaybeUninit<u8>`. Writing through a range is writing the blocks there, with the rules
    ///   of the references to them.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let arena = Arena::new();
    /// let mut v = Vec::new_in(&arena);
    /// v.extend_from_slice(&[1u8, 2, 3]);
    /// // `v` is alive: the safe form, which needs `&mut arena`, is not available.
    /// // SAFETY: nothing allocates while the iterator lives, and `v` is not written meanwhile.
    /// let total: usize = unsafe { arena.iter_allocated_chunks_raw() }.map(|(_, len)| len).sum();
    /// assert_eq!(total, arena.used_bytes());
    /// v.push(4);
    /// assert_eq!(v, [1, 2, 3, 4]);
    /// ```
    pub unsafe fn iter_allocated_chunks_raw(&self) -> ChunkRawIter<'_> {
        // SAFETY: forwarded from the caller: the arena does not change while the iterator lives.
        unsafe { ChunkRawIter::over_raw(&self.raw) }
    }
}

impl<const MIN_ALIGN: usize> ArenaRef<'_, MIN_ALIGN> {
    /// [`Arena::iter_allocated_chunks_raw`] through a scope or any other `ArenaRef`: the ranges of
    /// the whole arena (the scope's blocks and its parents'; for a
    /// [`LocalArena`](crate::LocalArena)'s view, the handle's pieces and large blocks), in the
    /// same order, under the same `# Safety` rules.
    ///
    /// There is no safe `iter_allocated_chunks` here: a reference placed through an `ArenaRef<'a>`
    /// lives for `'a`, however short the borrow of the `ArenaRef` was, so `&mut ArenaRef` does
    /// not prove that no block is borrowed (nor, in a scope, do the parents' blocks). Use the
    /// one of [`Arena`], which `&mut Arena` makes safe.
    ///
    /// # Safety
    /// As for [`Arena::iter_allocated_chunks_raw`]: the arena does not change while the iterator
    /// lives, a range is used only while its memory is the arena's, and bytes read are not
    /// written meanwhile nor read through a `&mut` alive then that is used afterwards.
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// arena.alloc(7u64);
    /// arena.with_scope(|scope| {
    ///     scope.alloc(8u64);
    ///     // SAFETY: nothing allocates while the iterator lives; nothing is written.
    ///     let total: usize = unsafe { scope.iter_allocated_chunks_raw() }.map(|r| r.1).sum();
    ///     assert_eq!(total, scope.used_bytes()); // the parent's block, the step, the scope's
    /// });
    /// ```
    pub unsafe fn iter_allocated_chunks_raw(&self) -> ChunkRawIter<'_> {
        // SAFETY: forwarded from the caller.
        unsafe { ChunkRawIter::over_raw(self.raw()) }
    }
}
