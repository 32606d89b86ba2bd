//! Large blocks kept for reuse: what a reset does with the large blocks of the cycle that ends,
//! and where a freed large block goes once resets have shown what the cycles need.
//!
//! A cycle's *large need* is the most bytes of large blocks (whole blocks) it had in use at once.
//! The arena remembers the needs of the last [`WINDOW`] cycles; their largest, and an eighth, is
//! the **allowance**: what the arena may hold in large blocks, in use and kept together, before
//! a freed one goes back to the backing allocator.
//!
//! - A **reset** keeps every large block in use then (the blocks the cycle ended with: what the
//!   next cycle, built the same way, ends with too), and the kept ones taken during the cycle's
//!   frees; it gives back the ones kept before it that the cycle never took (they were not
//!   needed), then the smallest while the kept ones pass the allowance.
//! - A **free** (a `deallocate`, a resize that moves, a scope's exit or a checkpoint's restore)
//!   keeps the block when the large blocks in use and kept, with it, stay within the allowance;
//!   otherwise the block goes back. Before the first reset the allowance is 0: a fresh arena
//!   gives every freed large block back at once, as it always has.
//! - A **request** takes the kept block that fits best (the least that holds it, of the same
//!   alignment) before it calls the backing allocator. A block that grows (a `Vec` past the
//!   threshold, or a large block past its room) takes any that holds it: it goes on growing in
//!   place up to the kept block's size, as the collection did in the cycle before. A new block
//!   (a hash table's next table) takes one of at most half as much again as it asks for, so that
//!   a table does not take the block its larger successor will need.
//!
//! A block that grew out of the end of its chunk as the chunk's last block (a lone `Vec`) is not
//! kept: the chunk need counts it where it started (see `RawArena::retire_large`), so that the
//! chunk the reset keeps holds it in place next time.
//!
//! So a loop whose cycles build the same collections settles: a `Vec` that grows to the same
//! size every cycle grows into the block it ended in last time, with no backing call; what the
//! arena holds in large blocks stays within the allowance, about what the cycles had in use at
//! their peak.

use core::alloc::Layout;
use core::cell::Cell;

use super::large::{Large, LargeList};
use super::retention::WINDOW;

/// The large blocks an arena keeps for reuse, and the large needs of its last cycles.
pub(crate) struct Spares {
    /// The kept blocks, newest first (their sequence numbers are this list's own).
    list: LargeList,
    /// `list`'s mark at the last reset: a block kept with a lower sequence number has waited
    /// since then without being taken.
    settled: Cell<u64>,
    /// The most bytes of large blocks in use the current cycle was seen with.
    peak: Cell<usize>,
    /// The large needs of the last cycles, newest first.
    needs: Cell<[usize; WINDOW]>,
    /// Whether a reset has anything to do here: a block kept, or a large need in the window or
    /// the current cycle (one flag, so that a reset of an arena with no large block asks one
    /// question).
    active: Cell<bool>,
}

impl Spares {
    pub(crate) const fn new() -> Spares {
        Spares {
            list: LargeList::new(),
            settled: Cell::new(0),
            peak: Cell::new(0),
            needs: Cell::new([0; WINDOW]),
            active: Cell::new(false),
        }
    }

    /// Blocks kept (walked).
    pub(crate) fn count(&self) -> usize {
        self.list.count()
    }

    /// Whether no block is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Bytes of the blocks kept (whole blocks).
    pub(crate) fn bytes(&self) -> usize {
        self.list.bytes()
    }

    /// Bytes of data the blocks kept hold.
    pub(crate) fn data_bytes(&self) -> usize {
        self.list.data_bytes()
    }

    /// Whether there is nothing to keep, give back or remember at a reset with no large block
    /// in use: no block kept, and no large need in the window or the current cycle.
    #[inline]
    pub(crate) fn idle(&self) -> bool {
        !self.active.get()
    }

    /// Records that the cycle has `in_use` bytes of large blocks in use.
    #[inline]
    pub(crate) fn note(&self, in_use: usize) {
        if in_use > self.peak.get() {
            self.peak.set(in_use);
            self.active.set(true);
        }
    }

    /// What the arena may hold in large blocks, in use and kept: the largest need of the window,
    /// and an eighth (0 before the first reset).
    pub(crate) fn allowance(&self) -> usize {
        let need = self.needs.get().into_iter().max().unwrap_or(0);
        need.saturating_add(need / 8)
    }

    /// The kept block that fits a block of `block`'s layout best, taken out of the list: of the
    /// same alignment, and the least that holds it; with `growing` false, one of a size
    /// [`pairs_with`] the request (see the module documentation). Its layout stays its own (the
    /// room it gives).
    pub(crate) fn take(&self, block: Layout, growing: bool) -> Option<Large> {
        let best = self
            .list
            .blocks()
            .filter(|b| {
                let l = b.layout();
                l.align() == block.align()
                    && l.size() >= block.size()
                    && (growing || pairs_with(l.size(), block.size()))
            })
            .min_by_key(|b| b.layout().size())?;
        self.list.unlink(best);
        Some(best)
    }

    /// Keeps `b`, a freed block, when the large blocks in use (`in_use` bytes, `b` not among
    /// them) and kept stay within the allowance with it; otherwise hands it back, for the
    /// caller to give back to the backing allocator.
    pub(crate) fn offer(&self, b: Large, in_use: usize) -> Option<Large> {
        let with = in_use
            .saturating_add(self.bytes())
            .saturating_add(b.layout().size());
        if with <= self.allowance() {
            self.list.push(b);
            None
        } else {
            Some(b)
        }
    }

    /// A kept block smaller than `below` bytes that goes back, taken out of the list (the
    /// smallest), when the large blocks in use (`in_use` bytes) and kept, with `more` bytes
    /// besides, pass the allowance: room made for a larger block, freed or new. `None` when they
    /// do not, or no smaller block is kept.
    pub(crate) fn make_room(&self, in_use: usize, more: usize, below: usize) -> Option<Large> {
        let with = in_use.saturating_add(self.bytes()).saturating_add(more);
        if with <= self.allowance() {
            return None;
        }
        let b = self
            .list
            .blocks()
            .filter(|b| b.layout().size() < below)
            .min_by_key(|b| b.layout().size())?;
        self.list.unlink(b);
        Some(b)
    }

    /// A reset's first step: records the cycle's large need and moves every block of `live`
    /// (the blocks in use) to the kept ones. [`surplus`](Self::surplus) then says which go back.
    pub(crate) fn retire(&self, live: &LargeList) {
        let [a, b, c, _] = self.needs.get();
        self.needs
            .set([self.peak.replace(0).max(live.bytes()), a, b, c]);
        while let Some(x) = live.pop_since(0) {
            self.list.push(x);
        }
    }

    /// A kept block that goes back at this reset, taken out of the list: one the cycle never
    /// took, else the smallest while the kept ones pass the allowance. `None` when the rest
    /// stay; the reset then calls [`settle`](Self::settle).
    pub(crate) fn surplus(&self) -> Option<Large> {
        let settled = self.settled.get();
        let b = match self.list.blocks().find(|b| b.seq() < settled) {
            Some(stale) => stale,
            None if self.bytes() > self.allowance() => {
                self.list.blocks().min_by_key(|b| b.layout().size())?
            }
            None => return None,
        };
        self.list.unlink(b);
        Some(b)
    }

    /// Marks the blocks kept now as kept before the next cycle (the end of a reset).
    pub(crate) fn settle(&self) {
        self.settled.set(self.list.mark());
        self.active
            .set(!self.list.is_empty() || self.needs.get() != [0; WINDOW]);
    }

    /// Takes any kept block out of the list (to give them all back: `trim`, drop, or a request
    /// that the limit refuses while they are held).
    pub(crate) fn pop(&self) -> Option<Large> {
        self.list.pop_since(0)
    }
}

/// Whether a kept block of `kept` bytes may take a new block of `wanted` bytes (at most `kept`):
/// when it holds about as much (at most half as much again), or about four, sixteen, … times
/// as much (an even number of doublings away, each band reaching half as much again past its
/// power of two).
///
/// Why: a collection that doubles by a new block (a hash table) has two tables at once, each
/// twice the one before; the cycle before ended with the last two kept, `T` and `T/2`. Sent by
/// the parity of its doublings, every table of the next cycle takes `T` or `T/2` in turn, so
/// two tables alive at once never want the same block, and the last two find theirs free: no
/// backing call, and the two blocks the first cycle had at its peak. A table that took the
/// nearest larger block instead would hold, one step early, the block its successor needs.
fn pairs_with(kept: usize, wanted: usize) -> bool {
    // The bands: [w, 1.5w] is 0 doublings, (1.5w, 3w] one, (3w, 6w] two, and so on.
    let mut band_end = wanted.saturating_add(wanted / 2);
    let mut even = true;
    while kept > band_end {
        if band_end == usize::MAX {
            return false;
        }
        band_end = band_end.saturating_mul(2);
        even = !even;
    }
    even
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::alloc::{alloc, dealloc};
    use alloc::vec::Vec;

    use crate::arena::large::block_layout;

    /// A block of `size` data bytes from the global allocator, with its header written.
    fn block(size: usize) -> Large {
        let (layout, _) = block_layout(Layout::from_size_align(size, 8).unwrap()).unwrap();
        // SAFETY: a non-empty layout.
        let p = unsafe { alloc(layout) };
        let p = core::ptr::NonNull::new(p).unwrap();
        // SAFETY: a fresh block of `layout`, ours alone.
        unsafe { Large::init(p, layout) }
    }

    fn free(b: Large) {
        // SAFETY: made by `block` with this layout; not used again.
        unsafe { dealloc(b.block().as_ptr(), b.layout()) };
    }

    fn free_all(s: &Spares) {
        while let Some(b) = s.pop() {
            free(b);
        }
    }

    #[test]
    fn a_new_block_pairs_with_kept_blocks_an_even_number_of_doublings_larger() {
        let w = 100_000;
        assert!(pairs_with(w, w) && pairs_with(w + w / 2, w));
        assert!(!pairs_with(w + w / 2 + 1, w) && !pairs_with(2 * w, w) && !pairs_with(3 * w, w));
        assert!(pairs_with(3 * w + 1, w) && pairs_with(4 * w, w) && pairs_with(6 * w, w));
        assert!(!pairs_with(8 * w, w) && pairs_with(16 * w, w));
        // A doubling table's steps alternate between the last two blocks.
        let (t, half) = (1 << 21, 1 << 20);
        for k in 0..6 {
            let step = t >> k;
            assert_eq!(pairs_with(t, step), k % 2 == 0, "{k}");
            assert_eq!(pairs_with(half, step), k % 2 == 1 || step > half, "{k}");
        }
    }

    #[test]
    fn nothing_is_kept_before_the_first_reset() {
        let s = Spares::new();
        let b = block(100_000);
        s.note(b.layout().size());
        assert_eq!(s.offer(b, 0), Some(b));
        free(b);
    }

    #[test]
    fn a_reset_keeps_what_the_cycle_ended_with_and_a_request_takes_the_best_fit() {
        let s = Spares::new();
        let live = LargeList::new();
        let (small, big) = (block(100_000), block(400_000));
        live.push(small);
        live.push(big);
        s.note(live.bytes());
        s.retire(&live);
        assert_eq!(live.count(), 0);
        assert_eq!(s.surplus(), None);
        s.settle();
        assert_eq!(s.count(), 2);
        let want = |n| {
            block_layout(Layout::from_size_align(n, 8).unwrap())
                .unwrap()
                .0
        };
        // A new block takes one of about its size or an even number of doublings larger; a
        // growing one any that holds it.
        assert_eq!(s.take(want(300_000), false), Some(big));
        assert_eq!(s.take(want(50_000), false), None);
        assert_eq!(s.take(want(50_000), true), Some(small));
        // Both in use again, then freed within the cycle: kept within the allowance.
        assert_eq!(s.offer(small, big.layout().size()), None);
        assert_eq!(s.offer(big, 0), None);
        free_all(&s);
    }

    #[test]
    fn a_reset_gives_back_what_the_cycle_never_took_and_what_passes_the_allowance() {
        let s = Spares::new();
        let live = LargeList::new();
        let blocks: Vec<Large> = [100_000, 200_000, 300_000].map(block).into();
        let sizes: Vec<usize> = blocks.iter().map(|b| b.layout().size()).collect();
        for &b in &blocks {
            live.push(b);
        }
        s.note(live.bytes());
        s.retire(&live);
        s.settle();
        // The next cycle takes only the largest, and ends with it.
        let want = block_layout(Layout::from_size_align(300_000, 8).unwrap())
            .unwrap()
            .0;
        let taken = s.take(want, false).unwrap();
        live.push(taken);
        s.note(live.bytes());
        s.retire(&live);
        let mut back = Vec::new();
        while let Some(b) = s.surplus() {
            back.push(b.layout().size());
            free(b);
        }
        s.settle();
        back.sort();
        assert_eq!(back, sizes[..2]);
        assert_eq!(s.count(), 1);
        // Four cycles with no large block: the allowance is 0, nothing is kept.
        for _ in 0..WINDOW {
            s.retire(&live);
            while let Some(b) = s.surplus() {
                free(b);
            }
            s.settle();
        }
        assert_eq!((s.count(), s.allowance()), (0, 0));
    }
}
