//! Resetting a [`SyncArena`]: `reset` (what a cycle used, and the chunk kept for the next one as
//! `crate::arena::retention` plans it) and the return to a saved position of the shared path
//! ([`SharedCheckpoint`]) behind `reset_to` and the scopes.

use allocator_api2::alloc::Allocator;

use super::SyncArena;
use super::shared_chunk::{EXTRA_HEADER, SharedChunk, unlink, unpoison_block};
use crate::arena::resize::Front;
use crate::arena::{Cycle, Plan, chunk_size_for_capacity, plan};
use crate::sync::shim::Ordering;

impl<A: Allocator> SyncArena<A> {
    /// Forgets every block and keeps one chunk, sized for what recent cycles needed, and the
    /// large blocks the next cycles are expected to need, as [`Arena::reset`](crate::Arena::reset)
    /// does (including its first reset that keeps every chunk for the next cycle); every other
    /// chunk and large block goes back to the backing allocator. A `LocalArena` handle's pieces count as used in full, except the last
    /// one of a dropped handle, which counts what the handle used of it (in full when the handle
    /// had rolled back every block in it); and a new piece takes the rest of the current chunk
    /// when the request it is for fits there, so a steady loop of handles settles in one chunk.
    /// An oversized chunk is first kept under a probe, which requests that reach it raise under
    /// the refill lock.
    pub fn reset(&mut self) {
        self.forget_pieces();
        self.retire_all_large();
        let chunks = self.chunks.get_mut();
        // Move every used chunk onto the spare list, counting what the cycle used, then rewind
        // every spare's cursor and find the largest. `&mut self`: no other thread is inside the
        // arena, no block is used again.
        // What the cycle used: the most its chunks held (now, or before a big roll-back); its
        // large blocks are sized apart (`retire_all_large`).
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
        // The oldest chunk: the first the cycle took (with the spares of before, if any).
        let first = chunks.spares;
        let chunk_peak = core::mem::take(&mut chunks.chunk_peak);
        if chunk_peak > in_chunks {
            // A roll-back seen this cycle says how far it reached.
            bound = 0;
        }
        let fill_peak = core::mem::take(&mut chunks.fill_peak);
        let mut now = in_chunks.max(chunk_peak).max(fill_peak);
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
            self.current.set(None, Ordering::Relaxed);
            return;
        };
        chunks.plan = 0;
        let held = chunks.chunk_bytes();
        let plan = plan(
            &mut chunks.recent,
            Cycle {
                now,
                bound,
                probed,
                largest: keep.capacity(),
                held,
                reserved: chunks.reserved,
            },
        );
        // The chunk the arena goes on in: the largest, or for a reuse the one the cycle took
        // first (the head of the spares), so that the next cycle, which makes the same requests,
        // fills the chunks in the order this one did.
        let mut reuse = false;
        let (kept, renew) = match plan {
            Plan::Keep { plan, probe } => {
                chunks.plan = plan;
                if let Some(reached) = probe {
                    chunks.set_probe(keep, reached);
                }
                (Some(keep), None)
            }
            Plan::Reuse => {
                reuse = true;
                (first.or(Some(keep)), None)
            }
            // Every chunk goes back first (below), so that the arena never holds both.
            Plan::Renew { capacity, probe } => (None, Some((capacity, probe))),
        };
        // The arena is in its final state before any block goes back (the backing allocator may
        // unwind there): the chunk kept, if any, is the one in use and the current one, and every
        // other chunk is a spare. Growth starts again from the chunk kept: a cycle that outgrows
        // it takes about twice.
        if let Some(k) = kept {
            chunks.spares = unlink(chunks.spares, k);
            k.set_next(None);
        }
        chunks.used = kept;
        chunks.growth = kept.map_or(0, |k| k.size());
        self.current.set(kept, Ordering::Relaxed);
        if reuse {
            // The spares stay for the next cycle; growth starts again from them all.
            let chunks = self.chunks.get_mut();
            chunks.growth = chunks.held;
            return;
        }
        // Every spare chunk goes back (the kept large blocks stay).
        self.free_list(|chunks| &mut chunks.spares);
        let Some((capacity, probe)) = renew else {
            return;
        };
        // The renewed chunk. Should the backing allocator or the limit refuse it, the arena holds
        // none, as a new one, and takes chunks again as it allocates.
        let chunks = self.chunks.get_mut();
        let Some((size, nominal)) = capacity
            .checked_add(EXTRA_HEADER)
            .and_then(chunk_size_for_capacity)
            .filter(|&(size, _)| chunks.budget().admit(size).is_ok())
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
        self.current.set(Some(k), Ordering::Relaxed);
    }

    /// The shared path's position: the current chunk (the newest in use) and its cursor, and the
    /// large blocks' mark.
    pub(super) fn shared_checkpoint(&mut self) -> SharedCheckpoint {
        // Blocks allocated after the checkpoint go to new pieces, above it.
        self.forget_pieces();
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
    pub(super) unsafe fn restore(&mut self, cp: SharedCheckpoint) {
        self.forget_pieces();
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
        self.current.set(cp.chunk, Ordering::Relaxed);
    }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use allocator_api2::alloc::Layout;
    use allocator_api2::vec::Vec;

    /// A `SyncArena` whose one chunk a reset has kept with a probe: two cycles of a spike of
    /// `spike` bytes in blocks of 32 KiB (the first reset keeps the largest chunk and plans the
    /// rest, the second renews them into one chunk), then four cycles with nothing in use, after
    /// which the reset that would renew the chunk probes it instead. (The loom model
    /// `a_probe_passed_by_two_threads` sets its arena up the same way.) Returns the chunk.
    fn probed_arena(spike: usize) -> (SyncArena, SharedChunk) {
        let mut arena = SyncArena::new();
        for _ in 0..2 {
            // Blocks placed without writing them: only the room they take matters here (and
            // Miri would write them a byte at a time).
            for _ in 0..spike.div_ceil(32 * 1024) {
                arena.alloc_layout(Layout::new::<[u8; 32 * 1024]>());
            }
            arena.reset();
        }
        for _ in 0..crate::arena::WINDOW {
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

        // The last block grows in place across the probe (from below the large-block
        // threshold: a larger request through the `Allocator` methods is a large block).
        let mut v = Vec::with_capacity_in(n / 4, &arena);
        v.extend((0..n / 4).map(|i| i as u64));
        let at = v.as_ptr();
        v.reserve_exact(2 * n - n / 4);
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
        let current = arena.current.get_mut().unwrap();
        assert!(!current.probed());
    }
}
