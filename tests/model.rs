//! Model-based property tests of `Arena` through allocator-api2's `Allocator` trait
//! (docs/DESIGN.md §3 and §8).
//!
//! `allocator_model` runs random sequences of allocate / allocate_zeroed / grow / grow_zeroed /
//! shrink / deallocate / reset (sizes 0..4096, alignments 1..=4096, both biased towards small
//! values; plus requests sized to end exactly at the end of the current chunk) against a model
//! of the live blocks. After every operation it checks that each block is aligned, that no two
//! blocks overlap and that every block still holds the bytes written to it (each block gets its
//! own byte pattern; zeroed memory is checked for zeros first). It also checks `used_bytes`
//! exactly where the design fixes it: zero-sized requests do not bump (not even padding);
//! allocate + deallocate at alignment 1 gives back every byte; freeing the last block rolls the
//! position back to that block's start; the last block grows in place whenever its alignment and
//! the chunk's room allow, and an in-place grow / shrink of the last block changes `used_bytes`
//! by exactly the size difference; freeing or shrinking a block that is not the last one changes
//! nothing; a moved block lands right after the old start (last block) or the old position;
//! reset goes back to 0 and keeps every chunk.
//!
//! `scope_model` runs random trees of nested `with_scope` calls (some of them unwinding) with
//! allocations, grows, shrinks and frees inside, and checks that every scope exit restores
//! `used_bytes` exactly and that the blocks of the enclosing scopes keep their contents, also
//! when a child frees, grows or shrinks a parent's block.
//!
//! Case counts: 256 cases per property natively (sequences of up to 200 operations; scope trees
//! of depth up to 4); 8 cases under Miri (sequences of up to 40 operations, smaller trees).
//! Failures are not persisted to a regressions file (`failure_persistence: None`); proptest
//! prints the minimal failing input.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::{Arena, ArenaRef};
use common::Counting;
use proptest::collection::vec;
use proptest::prelude::*;

// ----- configuration -----

/// 256 cases natively, 8 under Miri (where proptest must not touch the file system).
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 8 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Longest operation sequence of `allocator_model`.
const MAX_OPS: usize = if cfg!(miri) { 40 } else { 200 };

/// Largest block a grow may reach in `scope_model` (grows add up to 4095 bytes at a time).
const MAX_BLOCK: usize = 3 * 4096;

/// Largest block a grow may reach in `allocator_model`, and largest request of `AllocRest` /
/// `GrowRest` (which probe the exact end of the current chunk). Below the large-block threshold
/// (64 KiB): this model checks the bump position exactly; large blocks, which live outside the
/// chunks, have tests of their own (tests/memory.rs) and the fuzz targets.
const MAX_REST: usize = if cfg!(miri) { 16 * 1024 } else { 60 * 1024 };

// ----- strategies -----

/// The random numbers one operation is made of. The weighted choices (operation kind, size
/// class, alignment class) are made by arithmetic on plain integer ranges: `prop_oneof!` value
/// trees turned out to cost most of the Miri run.
#[derive(Clone, Copy, Debug)]
struct Dice {
    kind: u8,
    /// In 0..4096: exactly 0 with weight 1, below 64 with weight 4, below 512 with weight 3,
    /// anywhere with weight 2.
    size: usize,
    /// log2 of an alignment in 1..=4096: up to 8 with weight 8, 16..=64 with weight 3, 128..=4096
    /// with weight 1.
    align_log: u32,
    newest: bool,
    pick: usize,
    keep: usize,
    zeroed: bool,
}

impl Dice {
    fn pick(&self) -> Pick {
        if self.newest {
            Pick::Newest
        } else {
            Pick::Any(self.pick)
        }
    }
}

/// Dice whose `kind` is in `0..kinds`.
fn dice(kinds: u8) -> impl Strategy<Value = Dice> {
    (
        (0..kinds, 0..10u8, 0..4096usize, 0..12u8, 0..12u8),
        (any::<bool>(), any::<usize>(), any::<usize>(), any::<bool>()),
    )
        .prop_map(
            |((kind, size_class, n, align_class, a), (newest, pick, keep, zeroed))| Dice {
                kind,
                size: match size_class {
                    0 => 0,
                    1..=4 => n % 64,
                    5..=7 => n % 512,
                    _ => n,
                },
                align_log: match align_class {
                    0..=7 => u32::from(a % 4),
                    8..=10 => 4 + u32::from(a % 3),
                    _ => 7 + u32::from(a % 6),
                },
                newest,
                pick,
                keep,
                zeroed,
            },
        )
}

/// Which live block an operation applies to: the newest (to exercise the last-block rules), or
/// one chosen modulo the live count.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Newest,
    Any(usize),
}

impl Pick {
    fn index(self, len: usize) -> usize {
        match self {
            Pick::Newest => len - 1,
            Pick::Any(i) => i % len,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
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
fn op() -> impl Strategy<Value = Op> {
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

// ----- the model -----

/// A live block and the bytes it must hold.
#[derive(Debug)]
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
    id: u64,
    content: Vec<u8>,
}

/// Length of the pattern table: a prime, so that blocks starting at different phases differ.
const PATTERN_LEN: usize = 4099;

/// A fixed pseudo-random byte sequence; block `id` holds it cyclically from phase
/// `id * 1237 % PATTERN_LEN` on. (Copying from a table keeps Miri fast, where a per-byte
/// computation would dominate the run.)
fn pattern_table() -> &'static [u8] {
    static TABLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut x: u32 = 0x2545_F491;
        (0..PATTERN_LEN)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    })
}

/// Appends the pattern bytes `from..to` of the block `id` to `out`.
fn pattern(id: u64, from: usize, to: usize, out: &mut Vec<u8>) {
    let table = pattern_table();
    let phase = (id as usize).wrapping_mul(1237) % PATTERN_LEN;
    let mut i = from;
    while i < to {
        let at = (phase + i) % PATTERN_LEN;
        let n = (PATTERN_LEN - at).min(to - i);
        out.extend_from_slice(&table[at..at + n]);
        i += n;
    }
}

/// Writes the pattern of `block` to its bytes `from..to` (and to the model).
fn fill(block: &mut Block, from: usize, to: usize) {
    block.content.truncate(from);
    pattern(block.id, from, to, &mut block.content);
    let src = &block.content[from..to];
    // SAFETY: the block is live, was allocated for at least `to` bytes, and no reference into it
    // is alive; `src` is a `Vec` outside the arena.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), block.ptr.as_ptr().add(from), to - from) };
}

/// The bytes `from..to` of a live block whose bytes up to `to` are all initialised.
fn bytes_of(ptr: NonNull<u8>, from: usize, to: usize) -> Vec<u8> {
    // SAFETY: the callers pass a live block of at least `to` bytes, the first `to` of which were
    // written (pattern, zeroes or a copy of written bytes); the slice is dropped before the
    // arena is used again.
    unsafe { std::slice::from_raw_parts(ptr.as_ptr().add(from), to - from) }.to_vec()
}

/// Checks alignment, overlap and contents of every live block.
fn check_blocks<'b>(blocks: impl IntoIterator<Item = &'b Block>, what: &dyn Fn() -> String) {
    let mut ranges = Vec::new();
    for b in blocks {
        let a = b.ptr.as_ptr().addr();
        assert_eq!(
            a % b.layout.align(),
            0,
            "block {} ({:?}) misaligned at {a:#x} after {}",
            b.id,
            b.layout,
            what()
        );
        assert_eq!(b.content.len(), b.layout.size());
        // SAFETY: a live block whose `layout.size()` bytes were all written (see `fill`).
        let actual = unsafe { std::slice::from_raw_parts(b.ptr.as_ptr(), b.layout.size()) };
        if actual != &b.content[..] {
            let at = actual
                .iter()
                .zip(&b.content)
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            panic!(
                "block {} ({:?} at {a:#x}) corrupted at offset {at} after {}",
                b.id,
                b.layout,
                what()
            );
        }
        if b.layout.size() > 0 {
            ranges.push((a, a + b.layout.size(), b.id));
        }
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "blocks {} [{:#x}, {:#x}) and {} [{:#x}, {:#x}) overlap after {}",
            w[0].2,
            w[0].0,
            w[0].1,
            w[1].2,
            w[1].0,
            w[1].1,
            what()
        );
    }
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
}

impl Model {
    fn is_last(&self, id: u64) -> bool {
        self.last.is_some_and(|l| l.id == id)
    }
}

fn layout(size: usize, align_log: u32) -> Layout {
    Layout::from_size_align(size, 1 << align_log).unwrap()
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

fn apply(arena: &mut Arena<&Counting>, m: &mut Model, op: &Op, step: usize) {
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
            if size == 0 {
                check_zero_sized(step, "allocation", layout, before, after);
            } else {
                assert!(
                    after >= before + size && after < before + size + layout.align(),
                    "step {step}: used_bytes {before} -> {after} for {layout:?}"
                );
                if layout.align() == 1 {
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
                    start_used: after - size,
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
                if id == b.id && b.layout.align() == 1 {
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
            let fits_in_place =
                was_last && old_ptr.as_ptr().addr() % new_layout.align() == 0 && new - old <= room;
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
                    before + (new - old),
                    "step {step}: in-place grow {old} -> {new} changed used_bytes {before} -> \
                     {after}"
                );
            } else if new > 0 {
                // Moved: the copy is the new last block, placed after the old block's start when
                // the old block was last (it is rolled back first), else after everything.
                check_moved(
                    step, "grow", was_last, start_used, before, after, new_layout,
                );
            }
            if new > 0 {
                m.last = Some(Last {
                    id,
                    start_used: after - new,
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
            let aligned = old_ptr.as_ptr().addr() % new_layout.align() == 0;
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
                        before - (old - new),
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
                        step, "shrink", was_last, start_used, before, after, new_layout,
                    );
                }
                m.last = (new > 0).then_some(Last {
                    id,
                    start_used: after - new,
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
            // plus at most a quarter and the rounding to pages.
            let need = m.peaks.iter().copied().max().unwrap_or(0);
            assert!(
                arena.allocated_bytes() <= need + need / 4 + 4096,
                "step {step}: reset took {} bytes for cycles that held {:?}",
                arena.allocated_bytes(),
                m.peaks
            );
            backing.restart_peak();
            assert_eq!(arena.stats().chunks, chunks.min(1));
            assert_eq!(arena.stats().large_blocks, 0);
        }
    }
}

fn run_allocator_model(ops: &[Op]) {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let mut m = Model {
        blocks: Vec::new(),
        next_id: 0,
        last: None,
        just_allocated: None,
        peaks: Vec::new(),
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

// ----- scopes -----

#[derive(Clone, Debug)]
enum ScopeOp {
    /// Allocate in the current scope.
    Alloc { size: usize, align_log: u32 },
    /// Grow a block of the current scope.
    Grow { pick: Pick, extra: usize },
    /// Shrink a block of the current scope (same alignment: never moves).
    Shrink { pick: Pick, keep: usize },
    /// Free a block of the current scope.
    Free { pick: Pick },
    /// Free a block of the parent scope from the child: the position must not move.
    FreeOuter { pick: Pick },
    /// Grow a block of the parent scope from the child: never in place; the copy belongs to the
    /// child.
    GrowOuter { pick: Pick, extra: usize },
    /// Shrink a block of the parent scope from the child: the position must not move.
    ShrinkOuter { pick: Pick, keep: usize },
    /// A child scope; `unwind` leaves it by unwinding instead of returning.
    Scope { ops: Vec<ScopeOp>, unwind: bool },
}

/// Leaf weights: allocate 6, grow 2, shrink 1, free 3, free-outer 2, grow-outer 1,
/// shrink-outer 1; a quarter of the child scopes unwind.
fn scope_op() -> impl Strategy<Value = ScopeOp> {
    let leaf = dice(16).prop_map(|d| match d.kind {
        0..=5 => ScopeOp::Alloc {
            size: d.size,
            align_log: d.align_log,
        },
        6..=7 => ScopeOp::Grow {
            pick: d.pick(),
            extra: d.size,
        },
        8 => ScopeOp::Shrink {
            pick: d.pick(),
            keep: d.keep,
        },
        9..=11 => ScopeOp::Free { pick: d.pick() },
        12..=13 => ScopeOp::FreeOuter { pick: d.pick() },
        14 => ScopeOp::GrowOuter {
            pick: d.pick(),
            extra: d.size,
        },
        _ => ScopeOp::ShrinkOuter {
            pick: d.pick(),
            keep: d.keep,
        },
    });
    let (depth, nodes, branch) = if cfg!(miri) { (3, 24, 5) } else { (4, 96, 10) };
    leaf.prop_recursive(depth, nodes, branch, move |inner| {
        (
            vec(inner, 0..branch as usize),
            proptest::bool::weighted(0.25),
        )
            .prop_map(|(ops, unwind)| ScopeOp::Scope { ops, unwind })
    })
}

/// The payload of a deliberate unwind out of a scope.
struct LeaveScope;

/// The blocks of every open scope, outermost first, and the next block id.
struct Levels {
    levels: Vec<Vec<Block>>,
    next_id: u64,
}

impl Levels {
    fn check(&self, what: &dyn Fn() -> String) {
        check_blocks(self.levels.iter().flatten(), what);
    }

    fn current(&mut self) -> &mut Vec<Block> {
        self.levels.last_mut().unwrap()
    }

    /// The parent scope's blocks, if there is a parent.
    fn parent(&mut self) -> Option<&mut Vec<Block>> {
        let n = self.levels.len();
        if n < 2 {
            None
        } else {
            Some(&mut self.levels[n - 2])
        }
    }
}

fn run_scope(scope: &mut ArenaRef<'_>, ops: &[ScopeOp], lv: &mut Levels, path: &str) {
    for (step, op) in ops.iter().enumerate() {
        let at = format!("{path}/{step}");
        let before = scope.used_bytes();
        match op {
            ScopeOp::Alloc { size, align_log } => {
                let layout = layout(*size, *align_log);
                let p = scope
                    .allocate(layout)
                    .unwrap_or_else(|_| panic!("{at}: allocation of {layout:?} failed"))
                    .cast::<u8>();
                let id = lv.next_id;
                lv.next_id += 1;
                let mut b = Block {
                    ptr: p,
                    layout,
                    id,
                    content: Vec::new(),
                };
                fill(&mut b, 0, *size);
                lv.current().push(b);
            }
            ScopeOp::Grow { pick, extra } => {
                let blocks = lv.current();
                if blocks.is_empty() {
                    continue;
                }
                let idx = pick.index(blocks.len());
                let b = &mut blocks[idx];
                let old = b.layout.size();
                let new_layout = Layout::from_size_align(
                    old.max((old + extra).min(MAX_BLOCK)),
                    b.layout.align(),
                )
                .unwrap();
                // SAFETY: a live block of this scope with `b.layout`, grown to a larger size.
                let q = unsafe { scope.grow(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: grow failed"))
                    .cast::<u8>();
                b.ptr = q;
                b.layout = new_layout;
                assert_eq!(bytes_of(q, 0, old), b.content, "{at}: grow lost contents");
                fill(b, old, new_layout.size());
                let b = blocks.remove(idx);
                blocks.push(b);
            }
            ScopeOp::Shrink { pick, keep } => {
                let blocks = lv.current();
                if blocks.is_empty() {
                    continue;
                }
                let idx = pick.index(blocks.len());
                let b = &mut blocks[idx];
                let new = keep % (b.layout.size() + 1);
                let new_layout = Layout::from_size_align(new, b.layout.align()).unwrap();
                // SAFETY: a live block of this scope with `b.layout`, shrunk to a smaller size
                // with the same alignment.
                let q = unsafe { scope.shrink(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: shrink failed"))
                    .cast::<u8>();
                assert_eq!(
                    q, b.ptr,
                    "{at}: a shrink at the same alignment moved the block"
                );
                b.layout = new_layout;
                b.content.truncate(new);
            }
            ScopeOp::Free { pick } => {
                let blocks = lv.current();
                if blocks.is_empty() {
                    continue;
                }
                let b = blocks.remove(pick.index(blocks.len()));
                // SAFETY: a live block of this scope with this layout, forgotten by the model.
                unsafe { scope.deallocate(b.ptr, b.layout) };
                assert!(scope.used_bytes() <= before);
            }
            ScopeOp::FreeOuter { pick } => {
                let Some(blocks) = lv.parent() else { continue };
                if blocks.is_empty() {
                    continue;
                }
                let b = blocks.remove(pick.index(blocks.len()));
                // SAFETY: a live block of the parent scope, allocated from the same arena with
                // this layout, forgotten by the model.
                unsafe { scope.deallocate(b.ptr, b.layout) };
                assert_eq!(
                    scope.used_bytes(),
                    before,
                    "{at}: freeing the parent's block {} moved the child's position",
                    b.id
                );
            }
            ScopeOp::GrowOuter { pick, extra } => {
                let Some(blocks) = lv.parent() else { continue };
                if blocks.is_empty() {
                    continue;
                }
                let mut b = blocks.remove(pick.index(blocks.len()));
                let old = b.layout.size();
                let new_layout = Layout::from_size_align(
                    old.max((old + extra).min(MAX_BLOCK)),
                    b.layout.align(),
                )
                .unwrap();
                // SAFETY: a live block of the parent scope with `b.layout`, grown; from now on
                // the model owns the copy in the child scope.
                let q = unsafe { scope.grow(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: grow of a parent's block failed"))
                    .cast::<u8>();
                if old > 0 {
                    assert_ne!(q, b.ptr, "{at}: the parent's block {} grew in place", b.id);
                }
                assert!(scope.used_bytes() >= before, "{at}: used_bytes went down");
                b.ptr = q;
                b.layout = new_layout;
                assert_eq!(bytes_of(q, 0, old), b.content, "{at}: grow lost contents");
                fill(&mut b, old, new_layout.size());
                lv.current().push(b);
            }
            ScopeOp::ShrinkOuter { pick, keep } => {
                let Some(blocks) = lv.parent() else { continue };
                if blocks.is_empty() {
                    continue;
                }
                let idx = pick.index(blocks.len());
                let b = &mut blocks[idx];
                let new = keep % (b.layout.size() + 1);
                let new_layout = Layout::from_size_align(new, b.layout.align()).unwrap();
                // SAFETY: a live block of the parent scope with `b.layout`, shrunk at the same
                // alignment (so it stays where it is and stays the parent's).
                let q = unsafe { scope.shrink(b.ptr, b.layout, new_layout) }
                    .unwrap_or_else(|_| panic!("{at}: shrink of a parent's block failed"))
                    .cast::<u8>();
                assert_eq!(q, b.ptr, "{at}: shrinking a parent's block moved it");
                assert_eq!(
                    scope.used_bytes(),
                    before,
                    "{at}: shrinking the parent's block {} moved the child's position",
                    b.id
                );
                b.layout = new_layout;
                b.content.truncate(new);
            }
            ScopeOp::Scope { ops, unwind } => {
                let unwind = *unwind;
                lv.levels.push(Vec::new());
                let entry = scope.used_bytes();
                let r = catch_unwind(AssertUnwindSafe(|| {
                    scope.with_scope(|child| {
                        // At most the one byte stepped over at entry (none when the chunk
                        // is full or there is none).
                        assert!(
                            child.used_bytes() - entry <= 1,
                            "{at}: entering moved the position"
                        );
                        run_scope(child, ops, lv, &at);
                        if unwind {
                            resume_unwind(Box::new(LeaveScope));
                        }
                    })
                }));
                match r {
                    Ok(()) => assert!(!unwind),
                    Err(payload) => {
                        if !(unwind && payload.is::<LeaveScope>()) {
                            resume_unwind(payload);
                        }
                    }
                }
                lv.levels.pop();
                assert_eq!(
                    scope.used_bytes(),
                    entry,
                    "{at}: leaving the scope (unwind: {unwind}) did not restore used_bytes"
                );
            }
        }
        lv.check(&|| format!("{at}: {op:?}"));
    }
}

fn run_scope_model(ops: &[ScopeOp], prefill: bool) {
    let mut arena = Arena::new();
    let root = arena.as_arena_ref_mut();
    let mut lv = Levels {
        levels: vec![Vec::new()],
        next_id: 0,
    };
    if prefill {
        // Start with a chunk in use (otherwise the first scope takes the first chunk).
        run_scope(
            root,
            &[ScopeOp::Alloc {
                size: 24,
                align_log: 3,
            }],
            &mut lv,
            "prefill",
        );
    }
    let entry = root.used_bytes();
    lv.levels.push(Vec::new());
    root.with_scope(|child| run_scope(child, ops, &mut lv, "top"));
    lv.levels.pop();
    assert_eq!(
        root.used_bytes(),
        entry,
        "top-level scope did not restore used_bytes"
    );
    lv.check(&|| String::from("the top-level scope"));
    run_scope(root, ops, &mut lv, "root");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn allocator_model(ops in vec(op(), 1..=MAX_OPS)) {
        run_allocator_model(&ops);
    }

    #[test]
    fn scope_model(ops in vec(scope_op(), 0..if cfg!(miri) { 6 } else { 12 }), prefill: bool) {
        run_scope_model(&ops, prefill);
    }
}
