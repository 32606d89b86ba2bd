//! Going back with a [`RawArena`] (docs/DESIGN.md §3.3): checkpoints, scopes and their restore;
//! `reset`, which keeps the chunk retention plans; `trim` and `release_all`; and the measure of
//! what a cycle has in use.

use core::alloc::Layout;

use super::{Probe, RawArena, RawCheckpoint, Room, SENTINEL, poison_chunks};
use crate::arena::chunk::{
    CHUNK_ALIGN, Chunk, ChunkSource, chunk_size_for_capacity, chunks_until, ring,
};
use crate::arena::poison::{poison, unpoison};
use crate::arena::retention::{Cycle, Decision, Plan, decide, plan_for};

impl RawArena {
    /// The current position. A position in the headless piece leaves it first (see
    /// `headless`): the checkpoint is then that of an arena with no chunk.
    pub(crate) fn checkpoint<S: ChunkSource + ?Sized>(&self, src: &S) -> RawCheckpoint {
        self.leave_headless(src);
        let end = self.end.get();
        let room = match self.chunk.get() {
            Some(c) if end == c.end() => Room::Chunk,
            Some(_) if self.holding_probe().is_some() => Room::Probe,
            _ => Room::Exact,
        };
        RawCheckpoint {
            chunk: self.chunk.get(),
            ptr: self.ptr.get(),
            end,
            room,
            used_before: self.used_before.get(),
            large: self.large.mark(),
        }
    }

    /// Starts a scope and returns what to restore at its end.
    ///
    /// The parent's last block may end at the position: the position steps `step` bytes past it
    /// (one, or the arena's minimum alignment, a power of two of at most [`CHUNK_ALIGN`], so that
    /// the position stays a multiple of it), so that no block of the parent ends at `ptr` while
    /// the child is active (the child's blocks all start after those bytes); `used_bytes` counts
    /// them, like padding, until the scope ends.
    ///
    /// When the chunk has no room for the step there are no bytes to step over: the position parks at the chunk's
    /// start with no room (its bytes counted as used before it), and the child's first allocation
    /// moves on to the next chunk. Only an empty block can end at a chunk's start, and with no
    /// room there it can be neither grown in place nor rolled back over anything. A checkpoint
    /// taken while parked restores exactly that (no room), and a probe on the chunk is moved to
    /// its end first (the chunk is full: the cycle reached it), so that no probe can hold the
    /// parked end and hand out the room above it. Restoring the checkpoint undoes either step.
    pub(crate) fn enter_scope<S: ChunkSource + ?Sized>(
        &self,
        step: usize,
        src: &S,
    ) -> RawCheckpoint {
        debug_assert!(step.is_power_of_two() && step <= CHUNK_ALIGN);
        let cp = self.checkpoint(src);
        if let Some(c) = cp.chunk {
            if cp.end.addr().get() - cp.ptr.addr().get() >= step {
                // SAFETY: `ptr + step <= end`, so `step` bytes further is still inside the chunk.
                self.ptr.set(unsafe { cp.ptr.add(step) });
            } else if self.probe.get().is_some()
                // The step as a layout: from a position that is a multiple of `step`, bumping it
                // moves exactly `step` bytes.
                && Layout::from_size_align(step, step)
                    .ok()
                    .and_then(|stride| self.pass_probe(stride))
                    .is_some()
            {
                // A probe held the end: moved up, it gave the bytes to step over.
            } else {
                if let Some(probe) = self.probe.get().filter(|p| p.chunk == c) {
                    self.probe.set(Some(Probe {
                        end: c.end(),
                        met: true,
                        ..probe
                    }));
                }
                self.leave_current();
                self.ptr.set(c.start());
                self.end.set(c.start());
            }
        }
        cp
    }

    /// Returns to `cp`; chunks entered since become spares, large blocks made since are kept for
    /// reuse or go back to the backing allocator (see `large_spares`).
    ///
    /// # Safety
    /// `cp` was taken from this arena, its chunk is still held (no `reset`/`trim` since), no
    /// block allocated after it is used again, and `src` is the arena's source.
    pub(crate) unsafe fn restore<S: ChunkSource + ?Sized>(&self, cp: RawCheckpoint, src: &S) {
        self.note_peak(self.in_use());
        // SAFETY: the large blocks made since `cp` are not used again (the caller).
        unsafe { self.release_large_since(cp.large, src) };
        // Everything after `cp` is free again: the rest of its chunk and every later chunk.
        let Some(c) = cp.chunk else {
            // Taken before the first chunk (and outside the headless piece, see `checkpoint`):
            // what was used then is what `used_before` counted (the headless piece's bytes, if
            // the position had left it), and the position goes back to the start of the first
            // piece taken since: the headless piece it is in, or the first chunk (the others
            // follow it in the ring, as spares).
            self.used_before.set(cp.used_before);
            if self.in_headless() {
                let start = self.headless.get();
                poison(start.as_ptr(), self.ptr.get().as_ptr());
                self.ptr.set(start);
            } else if let Some(head) = self.head.get() {
                self.poison_ring(head);
                self.set_current(head);
            }
            return;
        };
        // The chunk may have been lengthened since, and a probe on it may have moved up: both
        // only rise, and everything after `cp` is free, so the position gets the room up to the
        // bound that held it then, as that bound is now. A parked position gets none: the bytes
        // above it are its parent's.
        let end = match cp.room {
            Room::Chunk => c.end(),
            Room::Probe => match self.probe.get() {
                Some(probe) if probe.chunk == c && probe.end > cp.end => probe.end,
                _ => cp.end,
            },
            Room::Exact => cp.end,
        };
        poison(cp.ptr.as_ptr(), end.as_ptr());
        poison_chunks(self.spares(c));
        self.chunk.set(cp.chunk);
        self.ptr.set(cp.ptr);
        self.end.set(end);
        self.used_before.set(cp.used_before);
        // The chunk's header counts what `cp.used_before` counted of it: nothing, unless the
        // position was parked there (`Room::Exact` with a chunk), whose fill the header still
        // holds (only a restore past the checkpoint, which invalidates it, could have changed
        // it: a parked chunk is left with nothing more counted).
        if cp.room != Room::Exact {
            c.set_used(0);
        }
    }

    /// Forgets every block, keeps or gives back the large ones (see `large_spares`), and keeps
    /// one chunk: the largest, unless
    /// retention replaces it (see [`retention`](crate::arena::retention)); every other chunk
    /// goes back to `src`. A loop that has settled keeps the same single chunk and makes no call:
    /// that is the short path here, the rest is [`reset_slow`](Self::reset_slow).
    ///
    /// # Safety
    /// No block of this arena is used again, and `src` is the arena's source.
    #[inline]
    pub(crate) unsafe fn reset<S: ChunkSource + ?Sized>(&self, src: &S) {
        // With nothing kept on `src` (never so for an `Arena`), any large block in use goes.
        if src.kept().map_or(!self.large.is_empty(), |k| !k.idle()) {
            // SAFETY: forwarded from the caller.
            unsafe { self.retire_all_large(src) };
        }
        let mut now = self.in_use().max(self.cycle_peak.replace(0));
        // A cycle that ran under a probe reached no further than it in its chunk; when it met
        // the probe, that bound is its need (its blocks may all have been given back since).
        // One that never met it needed less than the renewal the probe stands for.
        let probed = self.probe.take().map(|probe| {
            if probe.met {
                now = now.max(probe.reached());
            }
            probe.met
        });
        let Some(head) = self.head.get() else {
            return;
        };
        let mut recent = self.recent.get();
        let need = recent.record(now);
        if head.next() == head
            && probed != Some(true)
            && decide(
                head.capacity(),
                recent.renewed,
                now,
                need,
                self.reserved.get(),
            ) == (Decision::Keep { plan: 0 })
        {
            // A loop that has settled: its one chunk, as it is (the plan, see `plan_for`).
            self.recent.set(recent);
            self.used_before.set(0);
            self.set_current(head);
            self.poison_ring(head);
            return;
        }
        // A cycle that moved on to further chunks and gave back all it had bumped in its last
        // one (a list freed from its newest node) reached an unknown height there: at most the
        // whole chunk. Should a roll-back the cycle's slow points saw have said less, the probe
        // set after a renewal measures the next cycle.
        let mut bound = 0;
        if self.used_before.get() != 0 {
            if let Some(c) = self.chunk.get() {
                if self.ptr.get() == c.start() {
                    bound = self.used_before.get() + c.capacity();
                }
            }
        }
        // The largest chunk, the first of the ring on a tie.
        let keep = ring(head).fold(head, |l, x| if x.size() > l.size() { x } else { l });
        let plan = plan_for(
            &mut recent,
            Cycle {
                now,
                bound,
                probed,
                largest: keep.capacity(),
                held: self.chunk_bytes(),
                reserved: self.reserved.get(),
            },
            need,
        );
        self.recent.set(recent);
        // SAFETY: forwarded from the caller.
        unsafe { self.reset_slow(keep, plan, src) }
    }

    /// The rest of [`reset`](Self::reset): several chunks, or a plan other than keeping the
    /// only one as it is. `keep` is the largest chunk.
    ///
    /// # Safety
    /// As for `reset`; `keep` is one of the arena's chunks.
    #[cold]
    #[inline(never)]
    unsafe fn reset_slow<S: ChunkSource + ?Sized>(&self, keep: Chunk, plan: Plan, src: &S) {
        match plan {
            Plan::Keep { plan, probe } => {
                // The arena moves to the kept chunk first, the others following it as spares:
                // should the backing allocator unwind while they go back, what is left is an
                // arena at the start of `keep` with the chunks not yet released as its spares.
                self.plan.set(plan);
                self.head.set(Some(keep));
                // Growth starts again from the chunk kept: a cycle that outgrows it takes about
                // twice.
                self.growth.set(keep.size());
                self.used_before.set(0);
                self.set_current(keep);
                self.poison_ring(keep);
                if let Some(reached) = probe {
                    // SAFETY: a probe of a kept chunk lies below its capacity (`plan`), and the
                    // position is at its start.
                    unsafe { self.set_probe(keep, reached, false) };
                }
                // SAFETY: the spares hold no live block (no block is used again, the caller),
                // and every chunk came from `src`.
                unsafe { self.trim(src) };
            }
            Plan::Reuse => {
                // Every chunk stays, in the order the cycle took them: the next cycle, which makes
                // the same requests, fills them as this one did (the others follow the first as
                // spares, taken as it outgrows the one before). Growth counts them all.
                let first = self.head.get().unwrap_or(keep);
                self.growth.set(self.held.get());
                self.used_before.set(0);
                self.set_current(first);
                self.poison_ring(first);
            }
            Plan::Renew { capacity, probe } => {
                // Every chunk goes back first, so that the arena never holds both; the arena is
                // then as a new one.
                // SAFETY: as above.
                unsafe { self.release_all(src) };
                // Should the backing allocator or the limit refuse the chunk, the arena holds
                // none, as a new one, and takes chunks again as it allocates.
                if let Some(c) = chunk_size_for_capacity(capacity)
                    .filter(|&(size, _)| self.check_limit(size, src).is_ok())
                    .and_then(|(size, nominal)| self.take_block(size, nominal, src).ok())
                {
                    self.set_current_new(c);
                    if let Some(reached) = probe.filter(|&r| r < c.capacity()) {
                        // SAFETY: `reached < c.capacity()`, and the position is at its start.
                        unsafe { self.set_probe(c, reached, false) };
                    }
                }
            }
        }
    }

    /// Bytes the cycle has in use in the chunks, what sizes them (see `retention`; the large
    /// blocks are sized apart, see `large_spares`).
    #[inline]
    pub(super) fn in_use(&self) -> usize {
        self.bump_used()
    }

    /// Records that the cycle has `used` bytes in use (at a slow point).
    #[inline]
    pub(super) fn note_peak(&self, used: usize) {
        if used > self.cycle_peak.get() {
            self.cycle_peak.set(used);
        }
    }

    /// Bump bytes in use: [`used_bytes`](Self::used_bytes) without the large blocks.
    #[inline]
    pub(super) fn bump_used(&self) -> usize {
        match self.chunk.get() {
            Some(c) => {
                self.used_before.get() + (self.ptr.get().addr().get() - c.start().addr().get())
            }
            // The headless piece, or none (`ptr` and `headless` both the sentinel): what its
            // position reached, beyond what `used_before` counts.
            None => {
                self.used_before.get()
                    + (self.ptr.get().addr().get() - self.headless.get().addr().get())
            }
        }
    }

    /// Poisons the usable bytes of every chunk in the ring of `first` (ASan builds only).
    #[inline]
    fn poison_ring(&self, first: Chunk) {
        poison_chunks(ring(first));
    }

    /// Returns every spare chunk (after the current one) to the backing allocator (and not the
    /// large blocks kept for reuse: `Arena::trim` gives those back too).
    ///
    /// Each spare leaves the ring and the counts before its block goes back, so should the
    /// backing allocator unwind, the arena holds the spares not yet released, as it should.
    ///
    /// # Safety
    /// `src` is the source the chunks came from, and no checkpoint into a spare is restored later.
    pub(crate) unsafe fn trim<S: ChunkSource + ?Sized>(&self, src: &S) {
        let Some(cur) = self.chunk.get() else {
            return;
        };
        while cur.next() != self.head.get().unwrap_or(cur) {
            let c = cur.next();
            c.unlink();
            self.uncount(c);
            // SAFETY: a spare holds no live block, it is out of the ring and the counts, and the
            // caller vouches for `src`.
            unsafe { self.free_chunk(c, src) };
        }
    }

    /// Returns every chunk and large block in use to the backing allocator; the arena is then as
    /// a new one (for `Drop`, and a reset that renews its chunk), but for the large blocks kept
    /// for reuse ([`release_spares`](Self::release_spares) gives those back).
    ///
    /// The arena forgets its position, its chunks and their counts before the first block goes
    /// back: should the backing allocator unwind, it is an empty arena (the chunks not yet
    /// released are leaked), never one that points into a released block.
    ///
    /// # Safety
    /// `src` is the source the chunks came from and no block is used again.
    pub(crate) unsafe fn release_all<S: ChunkSource + ?Sized>(&self, src: &S) {
        let none = SENTINEL;
        self.ptr.set(none);
        self.end.set(none);
        self.chunk.set(None);
        self.probe.set(None);
        self.used_before.set(0);
        self.growth.set(0);
        self.plan.set(0);
        let head = self.head.take();
        self.held.set(0);
        self.chunks.set(0);
        while let Some(b) = self.large.pop_since(0) {
            // SAFETY: unlinked just now; no block is used again (the caller).
            unsafe { self.release_large(b, src) };
        }
        let Some(head) = head else { return };
        // The next chunk is read before a chunk goes back, and `head`, where the walk stops,
        // goes back last.
        for x in chunks_until(head.next(), head) {
            // SAFETY: the caller guarantees no block is used again; the arena no longer refers
            // to any chunk.
            unsafe { self.free_chunk(x, src) };
        }
        // SAFETY: as above.
        unsafe { self.free_chunk(head, src) };
    }

    /// Takes chunk `c` out of the counts of what the arena holds.
    fn uncount(&self, c: Chunk) {
        self.held.set(self.held.get() - c.size());
        self.chunks.set(self.chunks.get() - 1);
    }

    /// Gives chunk `c`'s block back to `src`. The arena is marked busy meanwhile, so that a
    /// backing allocator that allocates in this arena from its `deallocate` takes no chunk (it
    /// could pick a spare that is about to go back).
    ///
    /// # Safety
    /// Nothing of the arena refers to `c` any more (not its ring, position or counts), `c` holds
    /// no live block, and it came from `src`.
    unsafe fn free_chunk<S: ChunkSource + ?Sized>(&self, c: Chunk, src: &S) {
        let layout = c.block_layout();
        unpoison(c.start().as_ptr(), c.end().as_ptr());
        // SAFETY: the block came from `src` with this alignment and its returned length.
        self.backing_call
            .run(|| unsafe { src.deallocate_chunk(c.0.cast(), layout) });
    }
}
