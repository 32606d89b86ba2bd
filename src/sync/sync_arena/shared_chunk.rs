//! The chunks of a [`SyncArena`](super::SyncArena): the header at the start of each, the handle
//! through which threads bump its cursor with atomics, the probe a reset sets, and the chunk lists
//! and accounting that the arena's lock guards.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use allocator_api2::alloc::Allocator;

use crate::arena::Spares;
use crate::arena::{Budget, HEADER_SIZE, LargeList, Recent};
use crate::sync::shim::{AtomicPtr, AtomicUsize, Ordering};

/// The header at the start of every chunk of a [`SyncArena`](super::SyncArena).
pub(super) struct SharedHeader {
    /// Address of the next free byte. Only moved by compare-and-swap (or under `&mut`).
    pub(super) cursor: AtomicUsize,
    /// Where bumps stop (an address): the chunk's end, or below it while a reset's probe holds
    /// the chunk (see `crate::arena::retention`; only the probe's chunk, `Chunks::probe`). Only
    /// raised, under the lock; set under `&mut`.
    pub(super) limit: AtomicUsize,
    /// Size of the block taken from the backing allocator; written before the chunk is linked
    /// or published, fixed after. The chunk's usable bytes end where the block does
    /// ([`SharedChunk::end`]: not stored, so the header stays 32 bytes).
    pub(super) size: usize,
    /// The next chunk of the list this chunk is on (used chunks, newest first; or spares).
    /// Read and written only under the lock or `&mut SyncArena` (the lists are the lock's).
    pub(super) next: Option<NonNull<SharedHeader>>,
}

/// Offset of a chunk's first usable byte: the header, rounded up so that data starts aligned to
/// the chunk's alignment (under loom, whose atomics are larger, the header is too).
pub(super) const DATA_OFFSET: usize = size_of::<SharedHeader>().next_multiple_of(CHUNK_ALIGN);
/// Alignment of every chunk block, hence of every chunk's first usable byte.
pub(super) const CHUNK_ALIGN: usize = crate::arena::CHUNK_ALIGN;
/// Header bytes beyond the `Arena`'s chunk header (zero except under loom): added to a request so
/// that the `Arena`'s sizing policy, which counts its own header, sizes our chunks.
pub(super) const EXTRA_HEADER: usize = DATA_OFFSET.saturating_sub(HEADER_SIZE);
// Outside loom, a shared chunk's header is no larger than an `Arena` chunk's: the two take the
// same chunk sizes for the same blocks (16 bytes more moved a row of the memory suite from 76.0
// to 104.8 KiB, a cycle's last block spilling into one more chunk).
#[cfg(not(loom))]
const _: () = assert!(EXTRA_HEADER == 0);

/// The chunk that threads bump without the lock: a chunk of the arena, or, while it has none, a
/// header that no request fits. Outside loom that is a static header whose cursor (1) lies above
/// its limit (0): every bump of it fails its room test, and a compare-and-swap of its cursor
/// expects the end of a caller's block, which is never 1 but for an empty block dangling at 1,
/// whose swap writes 1 back. The header never changes, so the fast paths bump it without a null
/// test ([`with`](Self::with)). Under loom, whose atomics cannot be built in a static, it is a
/// null pointer, tested.
pub(super) struct Current(AtomicPtr<SharedHeader>);

/// The header [`Current`] points at while the arena has no chunk (outside loom).
#[cfg(not(loom))]
struct NoChunk(SharedHeader);

// SAFETY: threads reach the header only through `Current::with`, which reads its atomics and
// attempts compare-and-swaps on its cursor that leave it at 1 (see `Current`); `size` and
// `next` are never read or written through it.
#[cfg(not(loom))]
unsafe impl Sync for NoChunk {}

#[cfg(not(loom))]
static NO_CHUNK: NoChunk = NoChunk(SharedHeader {
    cursor: AtomicUsize::new(1),
    limit: AtomicUsize::new(0),
    size: 0,
    next: None,
});

impl Current {
    /// What `Current` holds while there is no chunk.
    #[inline(always)]
    fn none() -> *mut SharedHeader {
        #[cfg(not(loom))]
        {
            ptr::from_ref(&NO_CHUNK.0).cast_mut()
        }
        #[cfg(loom)]
        {
            ptr::null_mut()
        }
    }

    /// No chunk yet.
    #[inline(always)]
    pub(super) fn new() -> Current {
        Current(AtomicPtr::new(Current::none()))
    }

    /// The current chunk, if any.
    #[inline(always)]
    pub(super) fn get(&self, order: Ordering) -> Option<SharedChunk> {
        Current::chunk_at(self.0.load(order))
    }

    /// The current chunk of an arena held exclusively.
    #[cfg(test)]
    pub(super) fn get_mut(&mut self) -> Option<SharedChunk> {
        Current::chunk_at(*self.0.get_mut())
    }

    /// The chunk a value of `Current` points at, if it is one.
    #[inline(always)]
    fn chunk_at(p: *mut SharedHeader) -> Option<SharedChunk> {
        if p == Current::none() {
            return None;
        }
        NonNull::new(p).map(SharedChunk)
    }

    /// Makes `c` the current chunk (or none).
    #[inline]
    pub(super) fn set(&self, c: Option<SharedChunk>, order: Ordering) {
        self.0
            .store(c.map_or(Current::none(), |c| c.0.as_ptr()), order);
    }

    /// Whether `c` is the current chunk.
    #[inline]
    pub(super) fn is(&self, c: SharedChunk, order: Ordering) -> bool {
        self.0.load(order) == c.0.as_ptr()
    }

    /// `f` of the current chunk; without a chunk, `f` of the empty header (which fails every
    /// bump and every compare-and-swap, see [`Current`]), or `None` under loom. For the fast
    /// paths only: `f` may only bump, or move the cursor from an address of the caller's block.
    #[inline(always)]
    pub(super) fn with<R>(
        &self,
        order: Ordering,
        f: impl FnOnce(SharedChunk) -> Option<R>,
    ) -> Option<R> {
        let p = self.0.load(order);
        #[cfg(not(loom))]
        {
            // SAFETY: `Current` holds a chunk's header or `NO_CHUNK`'s, never null.
            f(SharedChunk(unsafe { NonNull::new_unchecked(p) }))
        }
        #[cfg(loom)]
        {
            NonNull::new(p).and_then(|c| f(SharedChunk(c)))
        }
    }

    /// [`with`](Self::with) for a test: whether `f` holds of the current chunk (of the empty
    /// header only for a swap that leaves its cursor as it is, see [`Current`]).
    #[inline(always)]
    pub(super) fn holds(&self, order: Ordering, f: impl FnOnce(SharedChunk) -> bool) -> bool {
        self.with(order, |c| f(c).then_some(())).is_some()
    }
}

/// A handle to a chunk (the block's own pointer, which carries its provenance).
///
/// The header is reached one field at a time, never as a whole `&SharedHeader`: a thread that
/// reaches the chunk without the lock (through `current`) uses its atomics (`cursor`, `limit`)
/// and reads `size`, while `next` is only read and written under the lock (or `&mut`), so that
/// relinking a list never writes memory that a thread without the lock reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct SharedChunk(pub(super) NonNull<SharedHeader>);

impl SharedChunk {
    /// The cursor, for any thread that reaches the chunk.
    pub(super) fn cursor(&self) -> &AtomicUsize {
        // SAFETY: a `SharedChunk` is only made for an initialised header, and the arena keeps the block
        // until `&mut self` methods or drop, none of which runs while a `&self` borrow (and so a
        // chunk handle in use) is alive. The reference covers the atomic field only.
        unsafe { &(*self.0.as_ptr()).cursor }
    }

    /// The limit, for any thread that reaches the chunk.
    pub(super) fn limit(&self) -> &AtomicUsize {
        // SAFETY: as in `cursor`.
        unsafe { &(*self.0.as_ptr()).limit }
    }

    /// Links this chunk to `next`. Only under the lock or `&mut SyncArena`.
    pub(super) fn set_next(&self, next: Option<SharedChunk>) {
        // `next` is read and written only under the lock or `&mut self` (see `next`), which the
        // caller holds, so this write excludes every other access to it.
        // SAFETY: the header is initialised and kept (as in `cursor`); no reference to the field
        // (or to the whole header) is alive.
        unsafe { (*self.0.as_ptr()).next = next.map(|c| c.0) };
    }

    /// The next chunk of the list. Only under the lock or `&mut SyncArena`.
    pub(super) fn next(&self) -> Option<SharedChunk> {
        // SAFETY: as in `set_next`: the caller holds the lock or `&mut`, which orders this read
        // after every write of the field.
        unsafe { (*self.0.as_ptr()).next.map(SharedChunk) }
    }

    pub(super) fn start(&self) -> usize {
        self.0.addr().get() + DATA_OFFSET
    }

    /// Size of the block taken from the backing allocator.
    pub(super) fn size(&self) -> usize {
        // SAFETY: as in `cursor`. `size` is written once, before the chunk is linked or published
        // (a thread reaches it through the lock, or the Release store of `current` that its
        // Acquire load sees), and never again.
        unsafe { (*self.0.as_ptr()).size }
    }

    /// One past the last usable byte (an address): the end of the block.
    pub(super) fn end(&self) -> usize {
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
    pub(super) fn bump(&self, layout: Layout) -> Option<NonNull<u8>> {
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
    pub(super) fn move_cursor(&self, from: usize, to: usize) -> bool {
        // AcqRel: moving back releases bytes our writes touched; moving forward acquires bytes
        // another thread may have released.
        self.cursor()
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Bytes handed out from this chunk.
    pub(super) fn used(&self) -> usize {
        self.cursor().load(Ordering::Relaxed) - self.start()
    }

    pub(super) fn capacity(&self) -> usize {
        self.end() - self.start()
    }

    /// Whether a probe holds the chunk below its end.
    pub(super) fn probed(&self) -> bool {
        self.limit().load(Ordering::Relaxed) != self.end()
    }
}

/// The chunk iteration's step over a list of chunks (a [`crate::arena::ListStep`]): the bytes in
/// use of the chunk whose header is at `header`, `[start, cursor)` with the block's provenance,
/// and the next chunk of its list.
///
/// # Safety
/// `header` is a chunk of this arena on a list that does not change meanwhile, and its cursor
/// does not move: the caller holds `&mut SyncArena` (no thread, and no handle, uses the arena).
pub(super) unsafe fn list_step(header: NonNull<u8>) -> ((NonNull<u8>, usize), Option<NonNull<u8>>) {
    let c = SharedChunk(header.cast());
    let range = (c.at(c.start()), c.used());
    (range, c.next().map(|n| n.0.cast()))
}

/// A reset's probe (see `crate::arena::retention`): the chunk whose `limit` it holds.
#[derive(Clone, Copy)]
pub(super) struct SharedProbe {
    pub(super) chunk: SharedChunk,
    /// A request has met the probe (and moved it up).
    pub(super) met: bool,
}

/// The chunk lists and accounting, guarded by the arena's lock.
pub(super) struct Chunks {
    /// Chunks in use, newest (the current one) first.
    pub(super) used: Option<SharedChunk>,
    /// Chunks kept by `reset` for reuse.
    pub(super) spares: Option<SharedChunk>,
    /// Sum of the nominal sizes of the regular chunks taken (drives the next chunk's size).
    pub(super) growth: usize,
    /// Bytes held from the backing allocator, headers included.
    pub(super) held: usize,
    /// Chunks held.
    pub(super) count: usize,
    /// Cap on `held`.
    pub(super) limit: Option<usize>,
    /// Whether the `Allocator` methods (this arena's and its handles') panic at the limit.
    pub(super) panic_on_limit: bool,
    /// Bytes being taken from the backing allocator right now, which happens with the lock
    /// released: counted against the limit until they arrive.
    pub(super) pending: usize,
    /// The shared path's large blocks, and those of dropped handles.
    pub(super) large: LargeList,
    /// Bytes, data bytes and number of every large block taken through this arena (the
    /// handles' included).
    pub(super) large_bytes: usize,
    pub(super) large_data: usize,
    pub(super) large_count: usize,
    /// The needs of the last cycles (see `crate::arena::retention`).
    pub(super) recent: Recent,
    /// Usable bytes of the next chunk taken, when a reset planned it (0: sized as usual).
    pub(super) plan: usize,
    /// Usable bytes reserved by `with_capacity`: a reset never keeps less.
    pub(super) reserved: usize,
    /// The large blocks kept for reuse, and the large needs of the last cycles (see
    /// `crate::arena::large_spares`).
    pub(super) kept: Spares,
    /// The most bytes the chunks were seen to hold at a roll-back of at least the large-block
    /// threshold since the last reset (what the chunks held before it, which a reset cannot see).
    pub(super) chunk_peak: usize,
    /// The most bytes the chunks held, with the block that did not fit, when a block (not a
    /// `LocalArena`'s piece, which gives its unused end back) needed another chunk since the
    /// last reset: a need that later roll-backs of smaller blocks hide from the reset.
    pub(super) fill_peak: usize,
    /// The probe a reset set on the chunk it kept, for the cycle after it.
    pub(super) probe: Option<SharedProbe>,
}

impl Chunks {
    /// Holds the chunk `c` under a probe `reached` bytes from its start (`reached` below its
    /// capacity), for the cycle after a reset; the reset that follows lifts it.
    pub(super) fn set_probe(&mut self, c: SharedChunk, reached: usize) {
        debug_assert!(reached < c.capacity() && self.probe.is_none());
        c.limit().store(c.start() + reached, Ordering::Relaxed);
        self.probe = Some(SharedProbe {
            chunk: c,
            met: false,
        });
    }

    /// Bytes the chunks in use hold now, up to their cursors.
    pub(super) fn in_chunks(&self) -> usize {
        let mut held = 0;
        let mut c = self.used;
        while let Some(x) = c {
            held += x.used();
            c = x.next();
        }
        held
    }

    /// Usable bytes of every chunk held (headers excluded).
    pub(super) fn chunk_bytes(&self) -> usize {
        self.held - self.count * DATA_OFFSET
    }

    /// What the arena holds from the backing allocator (the bytes being taken included), and
    /// its limit.
    pub(super) fn budget(&self) -> Budget {
        Budget {
            limit: self.limit,
            held: self.held + self.pending + self.large_bytes + self.kept.bytes(),
        }
    }

    /// Counts a chunk of `size` bytes just taken, of `nominal` bytes for the growth state.
    pub(super) fn record(&mut self, size: usize, nominal: usize) {
        self.held += size;
        self.count += 1;
        self.growth = self.growth.saturating_add(nominal);
    }
}

// SAFETY: `Chunks` holds pointers to chunks the arena owns exclusively; they are only followed
// under the arena's lock or through `&mut SyncArena`, so moving the list to another thread (inside
// the lock) is sound.
unsafe impl Send for Chunks {}

/// Unpoisons a chunk's whole block (ASan builds; nothing otherwise): the pieces a `LocalArena`
/// took from it may hold poisoned bytes.
pub(super) fn unpoison_block(c: SharedChunk) {
    let base = c.0.as_ptr().cast::<u8>().cast_const();
    crate::arena::poison::unpoison(base, base.wrapping_add(c.size()));
}

/// Frees a chunk's block.
///
/// # Safety
/// `c` is held by the arena owning `alloc`, is unlinked, and none of its blocks is used again.
pub(super) unsafe fn free_chunk<A: Allocator>(alloc: &A, c: SharedChunk) {
    let layout = c.block_layout();
    unpoison_block(c);
    // SAFETY: the header is ours and initialised; dropping it in place releases what loom's
    // atomics track (nothing for the standard ones).
    unsafe { ptr::drop_in_place(c.0.as_ptr()) };
    // SAFETY: the block came from `alloc` with this layout (caller).
    unsafe { alloc.deallocate(c.0.cast(), layout) };
}

/// Removes `c` from the list starting at `head`; returns the new head.
pub(super) fn unlink(head: Option<SharedChunk>, c: SharedChunk) -> Option<SharedChunk> {
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
pub(super) fn take_spare(chunks: &mut Chunks, layout: Layout) -> Option<SharedChunk> {
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
