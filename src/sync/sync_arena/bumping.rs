//! The shared path's allocation: the compare-and-swap bump of the current chunk, the locked cold
//! path that takes a spare or a new chunk for a request, in-place growth and shrinking of the last
//! block, and the pieces a [`LocalArena`](crate::LocalArena) takes.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use super::SyncArena;
use super::shared_chunk::{
    CHUNK_ALIGN, Chunks, DATA_OFFSET, EXTRA_HEADER, SharedChunk, SharedHeader, take_spare,
};
use super::thread_piece::{PIECES, Piece, ends_at_cursor, fits_pieces};
use crate::arena::{
    ChunkSource, HEADER_SIZE, LARGE_THRESHOLD, Large, NewChunk, dangling, min_chunk_size,
    next_probe,
};
use crate::error::Failure;
use crate::reentry::OnUnwind;
use crate::sync::shim::{AtomicUsize, MutexGuard, Ordering};

/// What a request placed on the shared path is, which decides the size of a new chunk taken for
/// it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Request {
    /// A block: a regular chunk of the growth state (or one of its own size, if larger).
    Block,
    /// The new block of a grow that could not stay in place: as `Block`, with room to go on
    /// growing in place (twice its size, as `Arena`'s growing blocks get) when the chunk is of
    /// its own size.
    Grown,
    /// A [`LocalArena`](crate::LocalArena)'s piece, never a large block: up to [`SMALL_PIECE`]
    /// bytes, as `Block` (the pieces of short-lived handles, a handle per job, then share a
    /// chunk); above it, a chunk of the piece's own size (or the chunk a reset planned), not a
    /// regular chunk of the growth state. A handle's pieces grow like an arena's chunks, so a
    /// regular chunk sized for its larger pieces would keep a rest that the handle's next,
    /// larger piece does not fit: memory held twice over, once by each level of growth.
    Piece,
}

/// The largest piece that comes out of a regular chunk of the shared arena (see
/// [`Request::Piece`]), cut from the calling thread's piece where it can be: a handle's first
/// pieces, and those of short-lived handles.
const SMALL_PIECE: usize = 1024;

/// The bytes of its thread's piece a handle's headless piece takes at first (see
/// [`SyncArena::lend_piece`]): what a short job needs, so that a handle per job makes no cold
/// call; a handle that needs more lengthens the piece in place, doubling it.
const LENT_PIECE: usize = 256;

/// Lends `[p, p + size)` of the thread's piece `t` (or up to its limit, if nearer), where `p` is
/// at or after the piece's cursor: the piece's cursor moves to the range's end.
#[inline(always)]
fn lend_from(t: &Piece, p: NonNull<u8>, size: usize) -> (NonNull<u8>, NonNull<u8>) {
    let (_, limit) = t.range();
    let end = limit.min(p.addr().get().saturating_add(size));
    t.set_cursor(end);
    let (cursor, _) = t.rest();
    (p, cursor)
}

impl<A: Allocator> SyncArena<A> {
    /// Allocates `layout`: bump the thread's piece, or take the cold path.
    #[inline(always)]
    pub(crate) fn alloc_block(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        if layout.size() != 0 {
            if let Some(p) = self.pieces.piece(|t| t.bump(layout)) {
                return Ok(p);
            }
        }
        self.alloc_thread_slow(layout)
    }

    /// [`alloc_block`](Self::alloc_block) for the `Allocator` methods: a collection's buffer of
    /// at least the threshold is a large block even where the chunk has room (each of its moves
    /// in a chunk would leave the old buffer behind until the reset).
    #[inline(always)]
    pub(crate) fn allocator_block(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        // Empty or large in one test (`size - 1` wraps for 0), both answered out of line.
        if layout.size().wrapping_sub(1) >= LARGE_THRESHOLD - 1 {
            return self.allocator_empty_or_large(layout);
        }
        if let Some(p) = self.pieces.piece(|t| t.bump(layout)) {
            return Ok(p);
        }
        self.alloc_thread_slow(layout)
    }

    /// The cold path of the shared path's allocation: an empty layout gets a dangling pointer; a
    /// small request a new piece for the thread (see `thread_piece`), in which it is bumped; any
    /// other request (or one whose piece could not be taken) is placed on the current chunk
    /// directly.
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_thread_slow(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        // With no chunk yet (a new or emptied arena), the thread has no piece of it and none can
        // be cut: the block takes the first chunk directly, and the next request cuts a piece.
        if PIECES && self.current.get(Ordering::Relaxed).is_some() {
            if let Some(p) = self.refill_piece(layout, 0) {
                return Ok(p);
            }
            // Placed on the chunk: the thread's piece gives its rest back first when it ends at
            // the chunk's cursor, so that the rest counts as the chunk's room
            // (`chunk_capacity`) and the block follows the piece's last one.
            self.return_piece_rest();
        }
        self.alloc_direct(layout)
    }

    /// Places `layout` on the current chunk, not in a piece: one compare-and-swap, or the locked
    /// path.
    #[inline(always)]
    pub(super) fn alloc_direct(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        match self.chunk_bump(layout) {
            Some(p) => Ok(p),
            None => self.alloc_slow(layout),
        }
    }

    /// Bytes between the current chunk's cursor and its limit (a hint: other threads bump
    /// meanwhile).
    fn chunk_room(&self) -> usize {
        // Relaxed, as in `bump`: a stale value only makes the hint wrong.
        self.current
            .with(Ordering::Acquire, |c| {
                let cursor = c.cursor().load(Ordering::Relaxed);
                Some(c.limit().load(Ordering::Relaxed).saturating_sub(cursor))
            })
            .unwrap_or(0)
    }

    /// The compare-and-swap bump of the current chunk.
    #[inline(always)]
    pub(super) fn chunk_bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        self.current.with(Ordering::Acquire, |c| c.bump(layout))
    }

    /// Gives the thread a new piece of the arena and bumps `layout` in it; `None` when the
    /// request is too large for pieces, or no piece could be taken (the request is then placed
    /// directly, which names the failure, if any). The piece lengthens in place when it ends at
    /// the current chunk's cursor (no other thread took memory after it); otherwise it is the
    /// next size cut from the current chunk (or the chunk's rest, if smaller and the request fits
    /// there), and the rest of the old piece stays unused until the reset. The new piece is at
    /// least `floor` bytes (up to the largest piece): a handle's small piece asks for room to be
    /// cut from the thread's piece again.
    fn refill_piece(&self, layout: Layout, floor: usize) -> Option<NonNull<u8>> {
        self.pieces.claim(|t| {
            t.raise_next_size(floor);
            let next = t.next_size();
            if !fits_pieces(layout, next) {
                return None;
            }
            let (_, limit) = t.range();
            let longer = limit.checked_add(next)?;
            // The empty piece's limit (1) is no chunk's cursor: the swap fails.
            if self.current.holds(Ordering::Acquire, |c| {
                longer <= c.limit().load(Ordering::Relaxed) && c.move_cursor(limit, longer)
            }) {
                t.set_limit(longer);
            } else {
                // The old piece's rest goes back when it ends at the chunk's cursor: the blocks
                // before it and after it are then next to each other, and are given back in turn.
                let (from, to) = t.rest();
                if self.release_bump(from, to) {
                    t.clear();
                }
                // A piece is cut from the current chunk only: a request that does not fit there
                // is placed directly, which takes the next chunk, sized as the arena sizes its
                // chunks (pieces do not change that), and the next refill cuts from it.
                let room = self.chunk_room();
                if room < layout.size() + layout.align() - 1 {
                    return None;
                }
                let size = room.min(next);
                // Alignment 1: the piece starts at the cursor, so that the blocks before it and
                // in it are given back in turn, last first, as on the chunk.
                let piece = Layout::from_size_align(size, 1).ok()?;
                // May call the backing allocator, which may use this arena on this thread (and
                // change this entry meanwhile): the piece set after it is the one taken here.
                let p = self.alloc_direct(piece).ok()?;
                t.set(p, size);
            }
            t.take_next_size();
            t.bump(layout)
        })
    }

    /// [`allocator_block`](Self::allocator_block) of an empty layout (a dangling pointer) or of
    /// a large one. Out of line, so that the bump's loop is laid out straight.
    #[cold]
    #[inline(never)]
    fn allocator_empty_or_large(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        self.alloc_large(layout, false)
    }

    /// Places a request whose new chunk, if it needs one, is sized as `how` says (a grown block
    /// or a [`LocalArena`](crate::LocalArena)'s piece, see [`Request`]): bumped in the current
    /// chunk when it has room, else through [`alloc_slow`](Self::alloc_slow).
    pub(super) fn alloc_block_as(
        &self,
        layout: Layout,
        how: Request,
    ) -> Result<NonNull<u8>, Failure> {
        match self.chunk_bump(layout) {
            Some(p) => Ok(p),
            None => self.alloc_slow_as(layout, how),
        }
    }

    /// [`alloc_slow`](Self::alloc_slow) for a request of another kind than a block (see
    /// [`Request`]). Apart, so that a block's cold path has the request's kind folded in.
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_slow_as(
        &self,
        layout: Layout,
        how: Request,
    ) -> Result<NonNull<u8>, Failure> {
        self.alloc_slow_body(layout, how)
    }

    /// Under the lock: bump the chunk another thread may have installed meanwhile, else take a
    /// spare or a new chunk, bump the block in it and publish it as current.
    ///
    /// A new chunk is taken from the backing allocator with the lock released, its size
    /// counted against the limit meanwhile: the backing allocator may be slow, may unwind, or
    /// may allocate in this arena itself (that nested call is served like any other), and no
    /// other thread waits for it. So several threads may take a chunk at once; one that finds a
    /// chunk with room installed when it comes back keeps its own as a spare.
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_slow(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        self.alloc_slow_body(layout, Request::Block)
    }

    /// The body of [`alloc_slow`](Self::alloc_slow) and [`alloc_slow_as`](Self::alloc_slow_as):
    /// `how` says what the request is, which sizes a new chunk (see [`Request`]).
    #[inline(always)]
    fn alloc_slow_body(&self, layout: Layout, how: Request) -> Result<NonNull<u8>, Failure> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        let mut chunks = self.chunks.lock();
        if chunks.probe.is_some() {
            if let Some(p) = self.pass_probe(&mut chunks, layout) {
                return Ok(p);
            }
        }
        // A large request is a large block, but for a growing block that a chunk a reset planned
        // holds (the last block of a chunk grew out of it last cycle: in the planned chunk it
        // grows on in place). A handle's piece is never one: it is a chunk the handle bumps in.
        if layout.size() >= LARGE_THRESHOLD
            && how != Request::Piece
            && !(how == Request::Grown
                && min_chunk_size(layout).is_some_and(|own| own - HEADER_SIZE <= chunks.plan))
        {
            drop(chunks);
            return self.alloc_large(layout, how == Request::Grown);
        }
        if let Some(p) = self.bump_current(layout) {
            return Ok(p);
        }
        if how != Request::Piece {
            // The cycle needs at least what the chunks hold and this block (see `fill_peak`).
            chunks.fill_peak = chunks.fill_peak.max(chunks.in_chunks() + layout.size());
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
    pub(super) fn unlocked<'s, R>(
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
    pub(super) fn raise_probe(
        &self,
        chunks: &mut Chunks,
        wanted: impl FnOnce(SharedChunk) -> Option<usize>,
    ) -> bool {
        let Some(probe) = chunks.probe.as_mut() else {
            return false;
        };
        let c = probe.chunk;
        // Relaxed is enough: `current` is only stored under the lock, which the caller holds.
        if !self.current.is(c, Ordering::Relaxed) || !c.probed() {
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
        self.current.with(Ordering::Relaxed, |c| c.bump(layout))
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
        self.current.set(Some(c), Ordering::Release);
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
            // A small piece comes out of a regular chunk, where the pieces of other handles
            // (a handle per job) follow it; a larger one gets a chunk it fills (see
            // `Request::Piece`).
            own: how == Request::Piece && layout.size() > SMALL_PIECE,
            plan: match plan {
                0 => 0,
                plan => plan.saturating_add(EXTRA_HEADER),
            },
            limit: chunks.budget().headroom(),
        })
    }

    /// Takes a block of `size` bytes from the backing allocator and makes it a chunk (not linked,
    /// not counted yet). Called without the lock.
    pub(super) fn take_block(&self, size: usize) -> Result<SharedChunk, Failure> {
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
        self.current.holds(Ordering::Acquire, |c| {
            c.move_cursor(to.addr().get(), from.addr().get())
        })
    }

    /// In-place growth of the last block `[p, p + old)` to `new_size`, if it is the last block of
    /// the current chunk and the chunk has room.
    #[inline(always)]
    pub(super) fn grow_last(&self, p: NonNull<u8>, old: usize, new_size: usize) -> bool {
        // `p + old` ends the caller's block, so it does not overflow; `p + new_size` may.
        let from = p.addr().get() + old;
        let Some(to) = p.addr().get().checked_add(new_size) else {
            return false;
        };
        self.current.holds(Ordering::Acquire, |c| {
            to <= c.limit().load(Ordering::Relaxed) && c.move_cursor(from, to)
        })
    }

    /// In-place shrink of the last block `[p, p + old)` to `new_size <= old`, if it is the last
    /// block of the current chunk: the cursor moves down, so no limit is asked.
    #[inline(always)]
    pub(super) fn shrink_last(&self, p: NonNull<u8>, old: usize, new_size: usize) -> bool {
        debug_assert!(new_size <= old);
        // `p + old` ends the caller's block, so neither sum overflows.
        let (from, to) = (p.addr().get() + old, p.addr().get() + new_size);
        self.current
            .holds(Ordering::Acquire, |c| c.move_cursor(from, to))
    }
}

impl<A: Allocator> SyncArena<A> {
    /// Gives the caller's block `[p, p + size)` back to the thread's piece when it is the
    /// piece's last; returns whether it did.
    #[inline(always)]
    pub(super) fn release_in_piece(&self, p: NonNull<u8>, size: usize) -> bool {
        size != 0
            && self
                .pieces
                .piece(|t| {
                    ends_at_cursor(t, p, size)?;
                    t.set_cursor(p.addr().get());
                    Some(())
                })
                .is_some()
    }

    /// In-place growth of the caller's block `[p, p + old)` to `new_size`: in the thread's
    /// piece when it is the piece's last (lengthening the piece when it ends at the current
    /// chunk's cursor), else on the current chunk when it is the chunk's last.
    #[inline(always)]
    pub(super) fn grow_last_any(&self, p: NonNull<u8>, old: usize, new_size: usize) -> bool {
        let in_piece = self.pieces.piece(|t| {
            ends_at_cursor(t, p, old)?;
            Some(self.grow_in_piece(t, p, new_size))
        });
        match in_piece {
            Some(grown) => grown,
            None => self.grow_last(p, old, new_size),
        }
    }

    /// [`grow_last_any`](Self::grow_last_any) of the piece's last block.
    #[inline(always)]
    fn grow_in_piece(&self, t: &Piece, p: NonNull<u8>, new_size: usize) -> bool {
        // No overflow: the block ends at the piece's cursor, so it lies in a chunk, below
        // `isize::MAX`, and a layout's size is at most `isize::MAX`.
        let to = p.addr().get() + new_size;
        let (_, limit) = t.range();
        if to <= limit {
            t.set_cursor(to);
            return true;
        }
        self.lengthen_piece(t, limit, to)
    }

    /// Lengthens the thread's piece `t`, which ends at `limit`, to `to`, when it ends at the
    /// current chunk's cursor and the chunk has room; the piece's cursor moves to `to` (its last
    /// block grew there). Returns whether it did.
    ///
    /// The piece takes the size of the thread's next piece beyond `to` as well, as far as the
    /// chunk has room: a block that grows a little at a time (a `Vec` pushed one element after
    /// `reserve_exact`) then grows on in the piece with plain stores, not with a
    /// compare-and-swap at each step.
    #[cold]
    #[inline(never)]
    fn lengthen_piece(&self, t: &Piece, limit: usize, to: usize) -> bool {
        let want = to.saturating_add(t.next_size());
        let longer = self.current.with(Ordering::Acquire, |c| {
            let end = c.limit().load(Ordering::Relaxed);
            if to > end {
                return None;
            }
            let longer = want.min(end);
            c.move_cursor(limit, longer).then_some(longer)
        });
        match longer {
            Some(longer) => {
                t.set_limit(longer);
                t.set_cursor(to);
                true
            }
            None => false,
        }
    }

    /// [`grow_last_any`](Self::grow_last_any) of a handle's piece `[base, base + size)` to
    /// `longer`, after raising the probe that stopped it: what ends at the chunk's cursor (the
    /// thread's piece the handle's piece ends in, else the handle's piece) must reach `base +
    /// longer`. False, with nothing changed, when no probe was in the way.
    #[cold]
    #[inline(never)]
    fn extend_past_probe(&self, base: NonNull<u8>, size: usize, longer: usize) -> bool {
        // Most refusals are a full chunk, not a probe: those return before the thread's piece
        // is looked up.
        if !self
            .current
            .get(Ordering::Acquire)
            .is_some_and(|c| c.probed())
        {
            return false;
        }
        let end = self
            .pieces
            .piece(|t| {
                ends_at_cursor(t, base, size)?;
                Some(t.range().1)
            })
            .unwrap_or(base.addr().get() + size);
        let Some(reach) = base.addr().get().checked_add(longer) else {
            return false;
        };
        self.raise_probe_to(end, reach) && self.grow_last_any(base, size, longer)
    }

    /// In-place shrink of the caller's block `[p, p + old)` to `new_size <= old`: in the
    /// thread's piece when it is the piece's last, else on the current chunk when it is the
    /// chunk's last.
    #[inline(always)]
    pub(super) fn shrink_last_any(&self, p: NonNull<u8>, old: usize, new_size: usize) -> bool {
        let in_piece = self.pieces.piece(|t| {
            ends_at_cursor(t, p, old)?;
            t.set_cursor(p.addr().get() + new_size);
            Some(())
        });
        in_piece.is_some() || self.shrink_last(p, old, new_size)
    }

    /// [`allocate_chunk`](ChunkSource::allocate_chunk) when the thread's piece has no room for
    /// `layout` (or it is larger than a small piece): a small piece is cut from a new piece of
    /// the thread's, at least twice its size (see [`fits_pieces`]); any other, or one for which
    /// no piece could be taken (the arena has no chunk yet), goes on the chunk directly.
    #[cold]
    #[inline(never)]
    fn allocate_piece_slow(&self, layout: Layout) -> Result<NonNull<[u8]>, Failure> {
        if PIECES {
            if layout.size() <= SMALL_PIECE && self.current.get(Ordering::Relaxed).is_some() {
                let floor = (layout.size() + layout.align() - 1)
                    .saturating_mul(2)
                    .checked_next_power_of_two();
                if let Some(p) = floor.and_then(|floor| self.refill_piece(layout, floor)) {
                    return Ok(NonNull::slice_from_raw_parts(p, layout.size()));
                }
            }
            self.return_piece_rest();
        }
        let p = self.alloc_block_as(layout, Request::Piece)?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    /// Lends a handle its headless piece ([`ChunkSource::lend_piece`]): [`LENT_PIECE`] bytes
    /// (or `layout`'s block if that is larger) of the calling thread's piece, from `layout`'s
    /// block on; when the thread's piece has not that much left, of a new piece of the
    /// thread's (taken as [`allocate_piece_slow`](Self::allocate_piece_slow) takes one). The
    /// range is the last thing cut from the thread's piece: the handle's last block lengthens it
    /// in place (see `grow_last_any`), and the handle gives its unused end back (see
    /// [`release_to_piece`](Self::release_to_piece)) while nothing was cut after it, so
    /// that the next handle on the thread starts where this one's blocks end.
    /// `None` for a layout larger than a small piece, in a build without pieces, or when the
    /// shared arena cannot take the bytes (its limit, or out of memory): the handle then takes
    /// a chunk of its own, or fails as that does.
    pub(crate) fn lend_piece(&self, layout: Layout) -> Option<(NonNull<u8>, NonNull<u8>)> {
        if !PIECES || layout.size() > SMALL_PIECE {
            return None;
        }
        let size = layout.size().max(LENT_PIECE);
        // The worst padding in front of the block, and the range after it.
        let room = size + layout.align() - 1;
        let lend = |t: &Piece| {
            let (cursor, limit) = t.range();
            if limit - cursor < room {
                return None;
            }
            Some(lend_from(t, t.bump(layout)?, size))
        };
        if let Some(range) = self.pieces.piece(lend) {
            return Some(range);
        }
        // A new piece (or the thread's lengthened), with room for the whole range: a range cut
        // short would have to lengthen for the handle's next requests, which fails as soon as
        // another thread has taken a piece after it. A piece is cut from the current chunk
        // only.
        let piece = Layout::from_size_align(room, 1).ok()?;
        if self.current.get(Ordering::Relaxed).is_some() {
            let floor = room.saturating_mul(2).checked_next_power_of_two()?;
            if let Some(p) = self.refill_piece(piece, floor) {
                return self.pieces.piece(|t| {
                    // `room` bytes were bumped from `p`, the new piece's cursor: back there, the
                    // range is lent from them.
                    t.set_cursor(p.addr().get());
                    lend(t)
                });
            }
        }
        // No chunk yet, or the current one has no room for a piece: the range is placed on the
        // chunk directly (taking the next chunk, or the first), as `allocate_piece_slow` places
        // a piece, after the thread's piece gave its rest back. It lengthens and goes back on
        // the chunk then.
        self.return_piece_rest();
        let p = self.alloc_block_as(piece, Request::Piece).ok()?;
        // SAFETY: `[p, p + room)` is the block just placed.
        Some((p, unsafe { p.add(room) }))
    }

    /// Lends a new handle its headless piece before its first request: [`LENT_PIECE`] bytes of
    /// the calling thread's piece, when it has that many left (see
    /// [`lend_piece`](Self::lend_piece)); `None` otherwise, and the handle's first request
    /// asks [`lend_piece`](Self::lend_piece) then. A handle per job then places its first
    /// blocks on the fast path, as a handle per thread does.
    #[inline]
    pub(crate) fn lend_first_piece(&self) -> Option<(NonNull<u8>, NonNull<u8>)> {
        if !PIECES {
            return None;
        }
        self.pieces.piece(|t| {
            let (from, to) = t.rest();
            if to.addr().get() - from.addr().get() < LENT_PIECE {
                return None;
            }
            // Checked above: the range ends within the piece, so no clamp to its limit.
            t.set_cursor(from.addr().get() + LENT_PIECE);
            Some((from, t.rest().0))
        })
    }

    /// Gives a dropped handle's unused end `[from, to)` back to this thread's piece when the
    /// handle's piece was cut from it last (the piece's cursor is `to`); returns whether it did.
    /// The chunk's cursor does not move. (Otherwise the handle tries
    /// [`release_bump`](Self::release_bump), on its cold path.)
    #[inline(always)]
    pub(crate) fn release_to_piece(&self, from: NonNull<u8>, to: NonNull<u8>) -> bool {
        self.release_in_piece(from, to.addr().get() - from.addr().get())
    }

    /// Gives this thread's unused rest back to the current chunk when the piece ends at the
    /// chunk's cursor; the piece is then empty.
    #[cold]
    #[inline(never)]
    fn return_piece_rest(&self) {
        self.pieces.piece(|t| {
            let (from, to) = t.rest();
            if self.release_bump(from, to) {
                t.clear();
            }
            Some(())
        });
    }

    /// The unused rest of this thread's piece when the piece ends at the current chunk's cursor,
    /// in bytes: room of the chunk's that the thread can hand out.
    pub(super) fn own_piece_rest_at_cursor(&self) -> usize {
        self.pieces
            .piece(|t| {
                let (cursor, limit) = t.range();
                let at_cursor = self.current.holds(Ordering::Acquire, |c| {
                    c.cursor().load(Ordering::Relaxed) == limit
                });
                Some(if at_cursor { limit - cursor } else { 0 })
            })
            .unwrap_or(0)
    }

    /// The unused rest of this thread's piece, in bytes (counted as used by the chunk it is in).
    pub(super) fn own_piece_rest(&self) -> usize {
        self.pieces
            .piece(|t| {
                let (cursor, limit) = t.range();
                Some(limit - cursor)
            })
            .unwrap_or(0)
    }

    /// Before a `&mut` operation that reads or moves the cursors: this thread's piece gives its
    /// unused rest back when it ends at the current chunk's cursor, and every thread's piece is
    /// forgotten (the key is renewed). Another thread's unused rest stays counted as used until
    /// the reset.
    pub(super) fn forget_pieces(&mut self) {
        self.pieces.piece(|t| {
            let (from, to) = t.rest();
            self.release_bump(from, to);
            t.clear();
            Some(())
        });
        self.pieces.renew();
    }
}

/// A [`LocalArena`](crate::LocalArena)'s pieces: blocks of the shared arena, owned by it until
/// reset or drop.
impl<A: Allocator> ChunkSource for SyncArena<A> {
    /// A handle's small piece (a handle's first pieces, and all of a short-lived handle's) is
    /// cut from the calling thread's piece with plain loads and stores, as a block of the shared
    /// path is: a handle per job then touches no shared cache line per job. A larger piece goes
    /// on the chunk, as a block placed directly: the calling thread's piece gives its rest back
    /// first when it ends at the chunk's cursor (see `alloc_thread_slow`), so that no rest is
    /// left between the two, counted neither as used nor as the chunk's room.
    #[inline(always)]
    fn allocate_chunk(&self, layout: Layout) -> Result<NonNull<[u8]>, Failure> {
        // The thread's piece has room: a short function, without the cold path's frame.
        if PIECES && layout.size() <= SMALL_PIECE {
            if let Some(p) = self.pieces.piece(|t| t.bump(layout)) {
                return Ok(NonNull::slice_from_raw_parts(p, layout.size()));
            }
        }
        self.allocate_piece_slow(layout)
    }

    /// The room a piece (`CHUNK_ALIGN`-aligned) has in the current chunk, up to its limit.
    fn spare_room(&self) -> usize {
        let Some(c) = self.current.get(Ordering::Acquire) else {
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

    /// A piece that ends at the thread's piece's cursor (a small piece cut from it) or at the
    /// current chunk's cursor grows as the last block does there; a probe in the way moves up,
    /// as it does for the shared path's last block.
    unsafe fn extend_chunk(&self, base: NonNull<u8>, size: usize, more: usize) -> bool {
        size.checked_add(more).is_some_and(|longer| {
            self.grow_last_any(base, size, longer) || self.extend_past_probe(base, size, longer)
        })
    }

    /// A handle's large blocks come from the shared arena's backing allocator, counted by the
    /// shared arena (and its limit); the handle lists them, and hands them over when dropped.
    fn note_need(&self, bytes: usize) {
        self.note_chunk_need(bytes);
    }

    fn allocate_large(&self, layout: Layout, growing: bool) -> Result<NonNull<[u8]>, Failure> {
        self.allocate_large_for(layout, growing)
    }

    unsafe fn deallocate_large(&self, ptr: NonNull<u8>, layout: Layout) {
        // A handle's large block (its header written, its layout the header's): kept for
        // reuse within the allowance, as the shared path's are, or given back.
        // SAFETY: the caller's block came from `allocate_large` (a handle's `RawArena`, which
        // writes the header) and is not used again.
        let b = unsafe { Large::from_block(ptr) };
        debug_assert_eq!(b.layout(), layout);
        // SAFETY: as above; out of the handle's list, and counted here as in use.
        unsafe { self.retire_large(b) }
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
