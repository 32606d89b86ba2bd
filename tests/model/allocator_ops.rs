//! `allocator_model`: random sequences of allocate / grow / shrink / deallocate / reset on an
//! `Arena`, with `used_bytes` checked exactly where the design fixes it.

use arena_pool::Arena;
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use proptest::prelude::*;

use crate::blocks::{Block, bytes_of, check_blocks, fill, layout};
use crate::common::Counting;
use crate::{MAX_REST, Pick, dice};

#[derive(Clone, Debug)]
pub(crate) enum Op {
    Alloc {
        size: usize,
        align_log: u32,
        zeroed: bool,
    },
    Grow {
        pick: Pick,
        extra: usize,
        align_log: u32,
        zeroed: bool,
    },
    Shrink {
        pick: Pick,
        /// The new size is `keep % (old size + 1)`.
        keep: usize,
        align_log: u32,
    },
    Dealloc {
        pick: Pick,
    },
    /// Allocate exactly the bytes left in the current chunk (at most `MAX_REST`), alignment 1.
    AllocRest {
        zeroed: bool,
    },
    /// Grow a block by exactly the bytes left in the current chunk (at most `MAX_REST`).
    GrowRest {
        pick: Pick,
    },
    Reset,
}

/// Weights: allocate 8, grow 3, shrink 3, deallocate 5, allocate-rest 1, grow-rest 1, reset 1.
pub(crate) fn op() -> impl Strategy<Value = Op> {
    dice(22).prop_map(|d| match d.kind {
        0..=7 => Op::Alloc {
            size: d.size,
            align_log: d.align_log,
            zeroed: d.zeroed,
        },
        8..=10 => Op::Grow {
            pick: d.pick(),
            extra: d.size,
            align_log: d.align_log,
            zeroed: d.zeroed,
        },
        11..=13 => Op::Shrink {
            pick: d.pick(),
            keep: d.keep,
            align_log: d.align_log,
        },
        14..=18 => Op::Dealloc { pick: d.pick() },
        19 => Op::AllocRest { zeroed: d.zeroed },
        20 => Op::GrowRest { pick: d.pick() },
        _ => Op::Reset,
    })
}

/// The block that ends at the bump position, when the model knows it, with `used_bytes` at its
/// start (where freeing it rolls back to).
#[derive(Clone, Copy, Debug)]
struct Last {
    id: u64,
    start_used: usize,
}

struct Model {
    blocks: Vec<Block>,
    next_id: u64,
    /// Only ever a block of non-zero size.
    last: Option<Last>,
    /// The block allocated by the previous operation, with `used_bytes` before it, if that
    /// operation was an allocation.
    just_allocated: Option<(u64, usize)>,
    /// The most bytes the backing allocator held at once in each of the last four cycles (the
    /// current one last): a cycle needs at most what was held in it.
    peaks: Vec<usize>,
    /// A reset has kept every chunk for the next cycle (a fresh arena does that once).
    reused: bool,
}

impl Model {
    fn is_last(&self, id: u64) -> bool {
        self.last.is_some_and(|l| l.id == id)
    }
}

/// docs/DESIGN.md §3.1: a zero-sized request gets an aligned dangling pointer, "no bump" (not even
/// alignment padding), so `used_bytes` stays at `expected`.
fn check_zero_sized(step: usize, what: &str, layout: Layout, expected: usize, after: usize) {
    assert_eq!(
        after, expected,
        "step {step}: a zero-sized {what} ({layout:?}) moved the position: used_bytes {expected} \
         -> {after}"
    );
}

/// `used_bytes` after a grow or shrink that moved the block to `new_layout`: the copy is the
/// last block now, placed after the old block's start when the old block was the last one (it is
/// rolled back first) and after everything otherwise. When the model does not know which block
/// is last (`start_used` is `None`), only the upper bound is certain.
fn check_moved(
    step: usize,
    what: &str,
    was_last: bool,
    start_used: Option<usize>,
    before: usize,
    after: usize,
    new_layout: Layout,
) {
    let new = new_layout.size();
    let base = match (was_last, start_used) {
        (true, Some(s)) => s,
        (false, Some(_)) => before,
        (_, None) => {
            assert!(
                after >= new && after < before + new + new_layout.align(),
                "step {step}: moving {what} to {new_layout:?}: used_bytes {before} -> {after}"
            );
            return;
        }
    };
    assert!(
        after >= base + new && after < base + new + new_layout.align(),
        "step {step}: moving {what} to {new_layout:?}: used_bytes {before} -> {after}, the \
         copy should start at {base} (+ padding)"
    );
}

/// `layout` as an arena of minimum alignment `M` places it: the size rounded up to a multiple of
/// `M`, the alignment at least `M`. What `used_bytes` counts.
fn wide<const M: usize>(layout: Layout) -> Layout {
    Layout::from_size_align(layout.size().next_multiple_of(M), layout.align().max(M)).unwrap()
}

fn apply<const M: usize>(arena: &mut Arena<&Counting, M>, m: &mut Model, op: &Op, step: usize) {
    // The "rest" operations are an allocation / a grow sized by the room left in the chunk.
    let rest = arena.chunk_capacity().min(MAX_REST);
    match *op {
        Op::AllocRest { zeroed } => {
            return apply(
                arena,
                m,
                &Op::Alloc {
                    size: rest,
                    align_log: 0,
                    zeroed,
                },
                step,
            );
        }
        Op::GrowRest { pick } => {
            if let Some(b) = m.blocks.get(pick.index(m.blocks.len().max(1))) {
                let op = Op::Grow {
                    pick,
                    extra: rest,
                    align_log: b.layout.align().trailing_zeros(),
                    zeroed: false,
                };
                return apply(arena, m, &op, step);
            }
            return;
        }
        _ => {}
    }
    let just_allocated = m.just_allocated.take();
    let before = arena.used_bytes();
    match *op {
        Op::Alloc {
            size,
            align_log,
            zeroed,
        } => {
            let layout = layout(size, align_log);
            let block = if zeroed {
                arena.allocate_zeroed(layout)
            } else {
                arena.allocate(layout)
            }
            .unwrap_or_else(|_| panic!("step {step}: allocation of {layout:?} failed"));
            assert!(block.len() >= size);
            let ptr = block.cast::<u8>();
            if zeroed {
                assert!(
                    bytes_of(ptr, 0, size).iter().all(|&b| b == 0),
                    "step {step}: allocate_zeroed gave non-zero bytes"
                );
            }
            let after = arena.used_bytes();
            let placed = wide::<M>(layout);
            assert_eq!(
                ptr.as_ptr().addr() % placed.align(),
                0,
                "step {step}: {layout:?} not at the minimum alignment {M}"
            );
            if size == 0 {
                check_zero_sized(step, "allocation", layout, before, after);
            } else {
                assert!(
                    after >= before + placed.size()
                        && after < before + placed.size() + placed.align(),
                    "step {step}: used_bytes {before} -> {after} for {layout:?}"
                );
                if placed.align() == 1 {
                    assert_eq!(after, before + size, "step {step}: padding at alignment 1");
                }
            }
            let id = m.next_id;
            m.next_id += 1;
            let mut b = Block {
                ptr,
                layout,
                id,
                content: Vec::new(),
            };
            fill(&mut b, 0, size);
            m.blocks.push(b);
            if size > 0 {
                m.last = Some(Last {
                    id,
                    start_used: after - placed.size(),
                });
                m.just_allocated = Some((id, before));
            }
        }
        Op::Dealloc { pick } => {
            if m.blocks.is_empty() {
                return;
            }
            let b = m.blocks.remove(pick.index(m.blocks.len()));
            // SAFETY: `b` is live, was allocated by this arena with this layout (or shrunk or
            // grown to it), and is forgotten by the model now.
            unsafe { arena.deallocate(b.ptr, b.layout) };
            let after = arena.used_bytes();
            if let Some((id, used_before_alloc)) = just_allocated {
                if id == b.id && wide::<M>(b.layout).align() == 1 {
                    assert_eq!(
                        after, used_before_alloc,
                        "step {step}: allocate + deallocate at alignment 1 did not give back \
                         every byte"
                    );
                }
            }
            match m.last {
                Some(l) if l.id == b.id => {
                    assert_eq!(
                        after, l.start_used,
                        "step {step}: freeing the last block did not roll back to its start"
                    );
                    m.last = None;
                }
                Some(_) => assert_eq!(
                    after, before,
                    "step {step}: freeing a block that is not the last one moved the position"
                ),
                None => assert!(
                    after <= before,
                    "step {step}: freeing a block made used_bytes grow {before} -> {after}"
                ),
            }
        }
        Op::Grow {
            pick,
            extra,
            align_log,
            zeroed,
        } => {
            if m.blocks.is_empty() {
                return;
            }
            let idx = pick.index(m.blocks.len());
            let (old_ptr, old_layout, id) = {
                let b = &m.blocks[idx];
                (b.ptr, b.layout, b.id)
            };
            let old = old_layout.size();
            let new = old.max((old + extra).min(MAX_REST));
            let new_layout = layout(new, align_log);
            let was_last = m.is_last(id);
            let start_used = m.last.map(|l| l.start_used);
            let room = arena.chunk_capacity();
            let (old_placed, new_placed) = (wide::<M>(old_layout).size(), wide::<M>(new_layout));
            let fits_in_place = was_last
                && old_ptr.as_ptr().addr() % new_placed.align() == 0
                && new_placed.size() - old_placed <= room;
            // SAFETY: the block is live with `old_layout`, and `new >= old`.
            let grown = unsafe {
                if zeroed {
                    arena.grow_zeroed(old_ptr, old_layout, new_layout)
                } else {
                    arena.grow(old_ptr, old_layout, new_layout)
                }
            }
            .unwrap_or_else(|_| panic!("step {step}: grow to {new_layout:?} failed"));
            assert!(grown.len() >= new);
            let q = grown.cast::<u8>();
            let after = arena.used_bytes();
            let b = &mut m.blocks[idx];
            b.ptr = q;
            b.layout = new_layout;
            assert_eq!(
                bytes_of(q, 0, old),
                b.content,
                "step {step}: grow of block {id} lost its contents"
            );
            if zeroed {
                assert!(
                    bytes_of(q, old, new).iter().all(|&x| x == 0),
                    "step {step}: grow_zeroed left non-zero bytes"
                );
            }
            fill(b, old, new);
            if new == 0 {
                check_zero_sized(step, "grow", new_layout, before, after);
            }
            if fits_in_place {
                assert_eq!(
                    q, old_ptr,
                    "step {step}: the last block was moved although it could grow in place"
                );
            }
            if q == old_ptr && old > 0 {
                assert_eq!(
                    after,
                    before + (new_placed.size() - old_placed),
                    "step {step}: in-place grow {old} -> {new} changed used_bytes {before} -> \
                     {after}"
                );
            } else if new > 0 {
                // Moved: the copy is the new last block, placed after the old block's start when
                // the old block was last (it is rolled back first), else after everything.
                check_moved(
                    step, "grow", was_last, start_used, before, after, new_placed,
                );
            }
            if new > 0 {
                m.last = Some(Last {
                    id,
                    start_used: after - new_placed.size(),
                });
                let b = m.blocks.remove(idx);
                m.blocks.push(b);
            }
        }
        Op::Shrink {
            pick,
            keep,
            align_log,
        } => {
            if m.blocks.is_empty() {
                return;
            }
            let idx = pick.index(m.blocks.len());
            let (old_ptr, old_layout, id) = {
                let b = &m.blocks[idx];
                (b.ptr, b.layout, b.id)
            };
            let old = old_layout.size();
            let new = keep % (old + 1);
            let new_layout = layout(new, align_log);
            let was_last = m.is_last(id);
            let (old_placed, new_placed) = (wide::<M>(old_layout).size(), wide::<M>(new_layout));
            let aligned = old_ptr.as_ptr().addr() % new_placed.align() == 0;
            // SAFETY: the block is live with `old_layout`, and `new <= old`.
            let shrunk = unsafe { arena.shrink(old_ptr, old_layout, new_layout) }
                .unwrap_or_else(|_| panic!("step {step}: shrink to {new_layout:?} failed"));
            assert!(shrunk.len() >= new);
            let q = shrunk.cast::<u8>();
            let after = arena.used_bytes();
            let b = &mut m.blocks[idx];
            b.content.truncate(new);
            assert_eq!(
                bytes_of(q, 0, new),
                b.content,
                "step {step}: shrink of block {id} lost its contents"
            );
            b.ptr = q;
            b.layout = new_layout;
            if aligned {
                assert_eq!(q, old_ptr, "step {step}: an aligned shrink moved the block");
            }
            if q == old_ptr {
                if was_last {
                    assert_eq!(
                        after,
                        before - (old_placed - new_placed.size()),
                        "step {step}: in-place shrink of the last block {old} -> {new}"
                    );
                    if new == 0 {
                        m.last = None;
                    }
                } else if m.last.is_some() {
                    assert_eq!(
                        after, before,
                        "step {step}: shrinking a block that is not the last one moved the \
                         position"
                    );
                } else {
                    assert!(
                        after <= before,
                        "step {step}: an in-place shrink made used_bytes grow {before} -> {after}"
                    );
                }
            } else {
                assert!(!aligned, "step {step}: an aligned shrink moved the block");
                let start_used = m.last.map(|l| l.start_used);
                if new == 0 {
                    // The old block is released (rolled back when it was last) and the new one
                    // is zero-sized: no bump, no padding.
                    let expected = match (was_last, start_used) {
                        (true, Some(s)) => Some(s),
                        (false, Some(_)) => Some(before),
                        (_, None) => None,
                    };
                    // When the model does not know which block is last, the position can only
                    // have gone back (the old block was released) or stayed.
                    let expected = expected.unwrap_or(after.min(before));
                    check_zero_sized(step, "shrink", new_layout, expected, after);
                } else {
                    check_moved(
                        step, "shrink", was_last, start_used, before, after, new_placed,
                    );
                }
                m.last = (new > 0).then_some(Last {
                    id,
                    start_used: after - new_placed.size(),
                });
                let b = m.blocks.remove(idx);
                m.blocks.push(b);
            }
        }
        Op::AllocRest { .. } | Op::GrowRest { .. } => unreachable!(),
        Op::Reset => {
            let chunks = arena.stats().chunks;
            let backing = *arena.allocator();
            m.peaks.push(backing.peak.get());
            if m.peaks.len() > 4 {
                m.peaks.remove(0);
            }
            arena.reset();
            m.blocks.clear();
            m.last = None;
            assert_eq!(arena.used_bytes(), 0, "step {step}: used_bytes after reset");
            // Reset keeps one chunk and no large block: the largest chunk, or one renewed for the
            // most any of the last four cycles needed, which is at most what was held in it,
            // plus at most a quarter and the rounding to pages. Once, before any renewal, a
            // fresh arena's reset keeps every chunk for the next cycle instead (they held what
            // the cycle needed).
            let need = m.peaks.iter().copied().max().unwrap_or(0);
            assert!(
                arena.allocated_bytes() <= need + need / 4 + 4096,
                "step {step}: reset took {} bytes for cycles that held {:?}",
                arena.allocated_bytes(),
                m.peaks
            );
            backing.restart_peak();
            let kept = arena.stats().chunks;
            if kept > 1 && !m.reused {
                m.reused = true;
                assert_eq!(kept, chunks, "step {step}: a reuse keeps every chunk");
            } else {
                assert_eq!(kept, chunks.min(1), "step {step}");
            }
            assert_eq!(arena.stats().large_blocks, 0);
        }
    }
}

/// Runs `ops` on an arena of minimum alignment `M` (1: `Arena::new_in`).
pub(crate) fn run_allocator_model<const M: usize>(ops: &[Op]) {
    let backing = Counting::default();
    let mut arena: Arena<&Counting, M> = Arena::with_min_align_in(&backing);
    let mut m = Model {
        blocks: Vec::new(),
        next_id: 0,
        last: None,
        just_allocated: None,
        peaks: Vec::new(),
        reused: false,
    };
    for (step, op) in ops.iter().enumerate() {
        apply(&mut arena, &mut m, op, step);
        check_blocks(&m.blocks, &|| format!("step {step}: {op:?}"));
        let s = arena.stats();
        assert_eq!(s.used_bytes, arena.used_bytes());
        assert!(s.used_bytes <= s.allocated_bytes);
        assert!(s.chunk_capacity <= s.allocated_bytes);
    }
}
