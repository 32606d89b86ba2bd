//! The arena and its backing allocator: how many calls it makes, how much it holds, what happens
//! when the backing allocator fails or a limit is set, and how chunks are reused, trimmed and
//! freed.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;
use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use std::collections::HashMap;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global};
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{AllocOrInitError, Arena};

// ----- a counting (and optionally failing) backing allocator -----

/// Wraps `Global`, counting calls and live bytes, checking that every block is given back with
/// the layout it was taken with, and refusing every request once its budget is spent.
#[derive(Default)]
struct Counting {
    allocs: Cell<usize>,
    deallocs: Cell<usize>,
    refused: Cell<usize>,
    live: Cell<usize>,
    /// Sizes of the successful `allocate` calls, in order.
    sizes: RefCell<std::vec::Vec<usize>>,
    /// Live blocks by address.
    blocks: RefCell<HashMap<usize, Layout>>,
    /// Calls left before every request fails; `None` for no limit.
    budget: Cell<Option<usize>>,
}

impl Counting {
    fn failing_after(calls: usize) -> Counting {
        let c = Counting::default();
        c.budget.set(Some(calls));
        c
    }

    fn allocs(&self) -> usize {
        self.allocs.get()
    }

    fn deallocs(&self) -> usize {
        self.deallocs.get()
    }

    fn live(&self) -> usize {
        self.live.get()
    }

    fn sizes(&self) -> std::vec::Vec<usize> {
        self.sizes.borrow().clone()
    }

    fn last_size(&self) -> usize {
        *self.sizes.borrow().last().expect("no allocation yet")
    }
}

// SAFETY: every block comes from `Global` and goes back to it unchanged; the bookkeeping does not
// touch the blocks.
unsafe impl Allocator for Counting {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if let Some(left) = self.budget.get() {
            if left == 0 {
                self.refused.set(self.refused.get() + 1);
                return Err(AllocError);
            }
            self.budget.set(Some(left - 1));
        }
        let p = Global.allocate(layout)?;
        self.allocs.set(self.allocs.get() + 1);
        self.live.set(self.live.get() + layout.size());
        self.sizes.borrow_mut().push(layout.size());
        let old = self
            .blocks
            .borrow_mut()
            .insert(p.cast::<u8>().addr().get(), layout);
        assert!(old.is_none(), "block handed out twice");
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let taken = self.blocks.borrow_mut().remove(&ptr.addr().get());
        assert_eq!(
            taken,
            Some(layout),
            "deallocate with a foreign block or another layout"
        );
        self.deallocs.set(self.deallocs.get() + 1);
        self.live.set(self.live.get() - layout.size());
        // SAFETY: `ptr` came from `Global` with `layout` (checked just above).
        unsafe { Global.deallocate(ptr, layout) }
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A layout of 1..=2000 bytes aligned to 1..=64.
    fn layout(&mut self) -> Layout {
        let size = 1 + (self.next() % 2000) as usize;
        let align = 1usize << (self.next() % 7);
        Layout::from_size_align(size, align).unwrap()
    }
}

/// Marks the first and last byte of a block with `tag`.
///
/// # Safety
/// `p` is valid for writes of `size >= 1` bytes.
unsafe fn mark(p: NonNull<u8>, size: usize, tag: u8) {
    // SAFETY: both offsets are inside the block.
    unsafe {
        p.write(tag);
        if size > 1 {
            p.add(size - 1).write(!tag);
        }
    }
}

/// Whether a block marked by `mark` still holds its marks.
///
/// # Safety
/// `p` is valid for reads of `size >= 1` bytes and was marked.
unsafe fn marked(p: NonNull<u8>, size: usize, tag: u8) -> bool {
    // SAFETY: both offsets are inside the block and were written.
    unsafe { p.read() == tag && (size == 1 || p.add(size - 1).read() == !tag) }
}

/// Allocates `size >= 1` bytes aligned to `align` and marks them with `tag` (cheaper under Miri
/// than filling whole slices).
fn block<A: Allocator>(
    arena: &Arena<A>,
    size: usize,
    align: usize,
    tag: u8,
) -> (NonNull<u8>, usize, u8) {
    let p = arena.alloc_layout(Layout::from_size_align(size, align).unwrap());
    assert_eq!(p.addr().get() % align, 0);
    // SAFETY: a fresh block of `size >= 1` bytes.
    unsafe { mark(p, size, tag) };
    (p, size, tag)
}

/// Whether every block made by `block` still holds its marks.
fn intact(blocks: &[(NonNull<u8>, usize, u8)]) -> bool {
    // SAFETY: the callers pass only live blocks made by `block`.
    blocks
        .iter()
        .all(|&(p, size, tag)| unsafe { marked(p, size, tag) })
}

// ----- reset loops -----

#[test]
fn steady_reset_loop_stops_calling_the_backing_allocator() {
    let per_cycle = if cfg!(miri) { 200 } else { 400 };
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let mut calls_after = std::vec::Vec::new();
    let cycles = if cfg!(miri) { 12 } else { 20 };
    for cycle in 0..cycles as u8 {
        // The same mixed layouts every cycle: a steady loop.
        let mut rng = Rng(0x1234_5678_9ABC_DEF1);
        let mut blocks = std::vec::Vec::with_capacity(per_cycle);
        for i in 0..per_cycle {
            let l = rng.layout();
            let p = arena.try_alloc_layout(l).unwrap();
            assert_eq!(p.addr().get() % l.align(), 0);
            let tag = cycle.wrapping_mul(31).wrapping_add(i as u8);
            // SAFETY: a fresh block of `l.size() >= 1` bytes.
            unsafe { mark(p, l.size(), tag) };
            blocks.push((p, l.size(), tag));
        }
        assert!(intact(&blocks), "cycle {cycle}: blocks overlap");
        assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
        let used = arena.used_bytes();
        arena.reset();
        assert_eq!(arena.used_bytes(), 0);
        calls_after.push(backing.allocs() + backing.deallocs());
        if cycle >= 3 {
            // Settled: one chunk of at most 1.5x a cycle's bytes, plus a header.
            assert_eq!(arena.stats().chunks, 1);
            assert!(
                arena.allocated_bytes() <= used + used / 2,
                "{} held for {used}",
                arena.allocated_bytes()
            );
        }
    }
    // Reset gives back what the loop does not use (the first cycle's small chunks), then the
    // loop makes no backing call from its fourth cycle on.
    assert!(backing.deallocs() > 0);
    assert_eq!(
        calls_after[2],
        calls_after[cycles - 1],
        "backing calls after each cycle: {calls_after:?}"
    );
    drop(arena);
    assert_eq!(backing.live(), 0);
    assert_eq!(backing.allocs(), backing.deallocs());
}

#[test]
fn reset_loop_that_overflows_converges_to_one_chunk() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let (per_cycle, size) = (150, 8);
    let mut firsts = std::vec::Vec::new();
    for cycle in 0..6u8 {
        let allocs = backing.allocs();
        // The room of the chunk the cycle starts in (the one reset kept).
        let room = arena.chunk_capacity();
        let mut blocks = std::vec::Vec::with_capacity(per_cycle);
        for i in 0..per_cycle {
            blocks.push(block(&arena, size, 8, cycle.wrapping_add(i as u8)));
        }
        assert!(intact(&blocks), "cycle {cycle}");
        let lo = blocks.iter().map(|b| b.0.addr().get()).min().unwrap();
        let hi = blocks.iter().map(|b| b.0.addr().get() + b.1).max().unwrap();
        let in_one_chunk = hi - lo <= room && blocks[0].0.addr().get() == lo;
        let chunks = arena.stats().chunks;
        let deallocs = backing.deallocs();
        arena.reset();
        match cycle {
            0 => {
                // The scenario: the largest chunk cannot hold a cycle, all of them together can
                // (a fresh arena's chunks grow by half). The first reset keeps them all and makes
                // no backing call.
                assert!(chunks >= 2);
                assert_eq!(
                    (backing.allocs(), backing.deallocs()),
                    (allocs + chunks, deallocs)
                );
                assert_eq!(arena.stats().chunks, chunks);
            }
            1 => {
                // The cycle ran in those chunks with no backing call, and the reset renews them
                // into one chunk for the whole cycle.
                assert_eq!(backing.allocs(), allocs + 1);
                assert_eq!(backing.deallocs(), deallocs + chunks);
                assert_eq!(arena.stats().chunks, 1);
                assert!(arena.chunk_capacity() >= per_cycle * size);
                assert!(arena.chunk_capacity() <= per_cycle * size * 3 / 2);
            }
            // From then on every cycle fits in the chunk kept, with no backing call.
            _ => {
                assert_eq!(arena.stats().chunks, 1);
                assert_eq!(backing.deallocs(), deallocs, "cycle {cycle}");
                assert!(in_one_chunk, "cycle {cycle} spans {} bytes", hi - lo);
                assert_eq!(backing.allocs(), allocs, "cycle {cycle}");
                firsts.push(blocks[0].0);
            }
        }
    }
    assert!(firsts.windows(2).all(|w| w[0] == w[1]), "{firsts:?}");
}

#[test]
fn reset_keeps_the_largest_chunk_when_it_holds_the_cycle() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    // A fresh arena's cycle: the first reset keeps its chunks for the next cycle, and the reset
    // after that renews them into one chunk for it.
    for _ in 0..2 {
        for i in 0..100u32 {
            arena.alloc_slice_fill_copy(50, i);
        }
        arena.reset();
    }
    assert_eq!(arena.stats().chunks, 1);
    // Smaller cycles after it keep that chunk, current, whole.
    let kept = backing.live();
    let cap = arena.chunk_capacity();
    for _ in 0..3 {
        for i in 0..60u32 {
            arena.alloc_slice_fill_copy(50, i);
        }
        arena.reset();
        assert_eq!((backing.live(), arena.chunk_capacity()), (kept, cap));
    }
    // A scope that spills into a chunk of its own counts for the cycle's need (its exit is seen):
    // reset leaves one chunk that holds what the scope used, and the next such cycle makes no
    // backing call.
    for round in 0..3 {
        let allocs = backing.allocs();
        arena.with_scope(|scope| {
            for i in 0..200u32 {
                scope.alloc_slice_fill_copy(50, i);
            }
        });
        arena.reset();
        assert_eq!(arena.stats().chunks, 1);
        assert!(arena.chunk_capacity() >= 200 * 200);
        if round > 0 {
            assert_eq!(backing.allocs(), allocs, "round {round}");
        }
    }
    let header = arena.allocated_bytes_including_metadata() - arena.allocated_bytes();
    assert_eq!(arena.chunk_capacity() + header, backing.live());
}

#[test]
fn spares_a_scope_left_are_reused_then_given_back_by_reset() {
    // A scope spills over several chunks; after it, the parent fills those chunks (every one,
    // each wasting less than a block at its end) before it takes a new one, and in the end
    // reset keeps only the largest.
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let first = block(&arena, 16, 8, 1);
    arena.with_scope(|scope| {
        for i in 0..if cfg!(miri) { 1200 } else { 3000 } {
            scope.alloc([i as u8; 16]);
        }
    });
    let chunks = arena.stats().chunks;
    assert!(chunks >= 4, "{chunks}");
    let held = arena.allocated_bytes();
    let allocs = backing.allocs();
    let mut again = std::vec::Vec::new();
    while backing.allocs() == allocs {
        again.push(block(&arena, 16, 8, again.len() as u8));
    }
    let filled = (again.len() - 1) * 16 + 16;
    assert!(
        filled + 16 * chunks >= held,
        "{filled} bytes before a new chunk, {held} held in {chunks} chunks"
    );
    assert!(intact(&again) && intact(&[first]));
    assert_eq!(backing.deallocs(), 0);
    // The first reset of a fresh arena keeps every chunk for the next cycle; a reset after a
    // cycle that fits the largest keeps only that one.
    let before = arena.stats().chunks;
    arena.reset();
    assert_eq!((arena.stats().chunks, backing.deallocs()), (before, 0));
    block(&arena, 16, 8, 2);
    arena.reset();
    assert_eq!(arena.stats().chunks, 1);
    assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
    drop(arena);
    assert_eq!(backing.live(), 0);
    assert_eq!(backing.allocs(), backing.deallocs());
}

// ----- allocation limit -----

#[test]
fn allocation_limit_of_one_mib_is_never_passed_and_mostly_used() {
    const LIMIT: usize = 1 << 20;
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    arena.set_allocation_limit(Some(LIMIT));
    assert_eq!(arena.allocation_limit(), Some(LIMIT));
    assert_eq!(arena.stats().allocation_limit, Some(LIMIT));
    let mut rng = Rng(42);
    let mut blocks = std::vec::Vec::new();
    let mut refused = None;
    for i in 0..100_000usize {
        let l = rng.layout();
        match arena.try_alloc_layout(l) {
            Ok(p) => {
                // SAFETY: a fresh block of `l.size() >= 1` bytes.
                unsafe { mark(p, l.size(), i as u8) };
                blocks.push((p, l.size(), i as u8));
            }
            Err(AllocError) => {
                refused = Some(l);
                break;
            }
        }
        assert!(arena.allocated_bytes_including_metadata() <= LIMIT);
        assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
    }
    let refused = refused.expect("the limit never stopped an allocation");
    let s = arena.stats();
    assert!(s.allocated_bytes_including_metadata <= LIMIT);
    // Every chunk left behind (and the current one) has a tail smaller than the request that
    // did not fit it: at most 63 bytes of padding plus 2000 bytes.
    assert!(
        s.used_bytes + s.chunks * (63 + 2000) >= s.allocated_bytes,
        "{s:?}"
    );
    assert!(s.used_bytes >= LIMIT * 3 / 4, "{s:?}");
    // The same request is refused again, and nothing changed.
    assert!(arena.try_alloc_layout(refused).is_err());
    assert!(arena.allocate(refused).is_err());
    assert_eq!(arena.stats(), s);
    // Lifting the limit lets it through; every block is intact.
    arena.set_allocation_limit(None);
    assert!(arena.try_alloc_layout(refused).is_ok());
    for &(p, size, tag) in &blocks {
        // SAFETY: every block is live and was marked.
        assert!(unsafe { marked(p, size, tag) });
    }
}

#[test]
fn allocation_limit_applies_to_oversized_and_first_chunks() {
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    arena.set_allocation_limit(Some(4096));
    assert!(arena.try_alloc_slice_fill_copy(1000, 1u8).is_ok());
    assert!(arena.try_alloc_slice_fill_copy(10_000, 2u8).is_err());
    assert!(arena.allocated_bytes_including_metadata() <= 4096);
    assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());

    // A limit lower than what is held keeps the chunks but takes no more.
    let held = arena.allocated_bytes_including_metadata();
    arena.set_allocation_limit(Some(16));
    let cap = arena.chunk_capacity();
    assert!(arena.try_alloc_slice_fill_copy(cap, 3u8).is_ok());
    assert!(arena.try_alloc(4u8).is_err());
    assert_eq!(arena.allocated_bytes_including_metadata(), held);
}

#[test]
#[should_panic(expected = "allocation limit")]
fn panicking_api_names_the_allocation_limit() {
    let arena = Arena::new();
    arena.set_allocation_limit(Some(64 * 1024));
    for _ in 0..1000 {
        arena.alloc([7u8; 1000]);
    }
}

#[test]
#[should_panic(expected = "allocation limit")]
fn panicking_slice_api_names_the_allocation_limit() {
    let arena = Arena::new();
    arena.set_allocation_limit(Some(4096));
    arena.alloc_slice_fill_copy(10_000, 0u8);
}

// ----- a failing backing allocator -----

#[test]
fn failing_backing_allocator_gives_errors_and_keeps_the_arena_usable() {
    let backing = Counting::failing_after(1);
    let arena = Arena::new_in(&backing);
    let early = arena.alloc_slice_copy(&[1u32, 2, 3]);
    let l = Layout::from_size_align(64, 8).unwrap();
    let last = arena.allocate(l).unwrap().cast::<u8>();
    // SAFETY: a fresh block of 64 bytes.
    unsafe { last.write_bytes(0x5C, 64) };
    let before = arena.stats();
    assert_eq!(backing.allocs(), 1);

    // Everything below needs a second chunk.
    let big = Layout::from_size_align(4000, 8).unwrap();
    assert_eq!(arena.try_alloc([0u8; 4000]).map(|_| ()), Err(AllocError));
    assert_eq!(
        arena.try_alloc_with(|| [1u8; 4000]).map(|_| ()),
        Err(AllocError)
    );
    assert_eq!(
        arena
            .try_alloc_try_with(|| Ok::<_, ()>([0u8; 4000]))
            .map(|_| ()),
        Err(AllocOrInitError::Alloc(AllocError))
    );
    assert!(arena.try_alloc_layout(big).is_err());
    assert!(arena.allocate(big).is_err());
    assert!(arena.allocate_zeroed(big).is_err());
    assert!(arena.try_alloc_slice_copy(&[0u8; 4000]).is_err());
    assert!(arena.try_alloc_slice_fill_with(4000, |i| i as u8).is_err());
    assert!(arena.try_alloc_slice_fill_iter(0..4000u32).is_err());
    assert!(arena.try_alloc_str(&"x".repeat(4000)).is_err());
    assert!(arena.as_arena_ref().try_alloc_layout(big).is_err());
    // SAFETY: `last` is live with `l`; `big` is larger.
    assert!(unsafe { arena.grow(last, l, big) }.is_err());
    // SAFETY: as above.
    assert!(unsafe { arena.grow_zeroed(last, l, big) }.is_err());
    let mut v: Vec<u8, &Arena<&Counting>> = Vec::new_in(&arena);
    assert!(v.try_reserve(4000).is_err());
    drop(v);
    assert!(backing.refused.get() >= 14);
    assert_eq!(arena.stats(), before);
    assert_eq!(backing.allocs(), 1);

    // What fits the current chunk still works, and the earlier blocks are intact.
    assert_eq!(early, &[1, 2, 3]);
    // SAFETY: `last` is live with 64 initialised bytes; the failed grows kept it.
    let last_bytes = unsafe { core::slice::from_raw_parts(last.as_ptr(), 64) };
    assert!(last_bytes.iter().all(|&b| b == 0x5C));
    // SAFETY: `last` is still the last block: it grows in place.
    let grown = unsafe { arena.grow(last, l, Layout::from_size_align(80, 8).unwrap()) }.unwrap();
    assert_eq!(grown.cast::<u8>(), last);
    assert_eq!(*arena.alloc(9u16), 9);

    // Once the allocator works again, so does the arena.
    backing.budget.set(None);
    let big_block = arena.alloc([0xABu8; 4000]);
    assert!(big_block.iter().all(|&b| b == 0xAB));
    assert_eq!(early, &[1, 2, 3]);
    assert_eq!(backing.allocs(), 2);
    assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
}

#[test]
fn failing_backing_allocator_refuses_first_chunks() {
    let backing = Counting::failing_after(0);
    assert!(Arena::try_with_capacity_in(1024, &backing).is_err());
    let arena = Arena::new_in(&backing);
    assert!(arena.try_alloc(1u8).is_err());
    assert!(arena.allocate(Layout::new::<u64>()).is_err());
    assert_eq!(arena.stats().chunks, 0);
    assert_eq!(arena.used_bytes(), 0);
    // Zero-sized requests need no chunk.
    assert!(arena.try_alloc(()).is_ok());
    assert!(
        arena
            .allocate(Layout::from_size_align(0, 64).unwrap())
            .is_ok()
    );
    backing.budget.set(None);
    assert_eq!(*arena.alloc(5u8), 5);
    assert_eq!(backing.allocs(), 1);
}

// ----- trim and drop -----

#[test]
fn reset_returns_the_chunks_it_does_not_keep_and_drop_frees_all() {
    let backing = Counting::default();
    {
        let mut arena = Arena::new_in(&backing);
        let n = if cfg!(miri) { 40 } else { 200 };
        let blocks: std::vec::Vec<_> = (0..n).map(|i| block(&arena, 1000, 4, i)).collect();
        assert!(intact(&blocks));
        let chunks = arena.stats().chunks;
        assert!(chunks >= 4, "{chunks}");
        assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
        arena.reset();
        // A fresh arena's first reset keeps every chunk for the next cycle; trim gives back
        // every one but the current one (the largest).
        assert_eq!((backing.deallocs(), arena.stats().chunks), (0, chunks));
        arena.trim();
        assert_eq!(backing.deallocs(), chunks - 1);
        assert_eq!(arena.stats().chunks, 1);
        assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
        // Nothing left to trim.
        arena.trim();
        assert_eq!(backing.deallocs(), chunks - 1);
        // Still usable.
        let b = block(&arena, 10_000, 8, 7);
        assert!(intact(&[b]));
        assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
    }
    assert_eq!(backing.live(), 0);
    assert_eq!(backing.allocs(), backing.deallocs());
    assert!(backing.blocks.borrow().is_empty());
}

#[test]
fn trim_after_a_scope_keeps_the_parents_blocks() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let kept: *const [u64] = arena.alloc_slice_fill_with(20, |i| i as u64 * 3);
    let kept_addr = kept.cast::<u64>().addr();
    let chunks = arena.stats().chunks;
    let used = arena.used_bytes();
    arena.with_scope(|s| {
        for i in 0..20u32 {
            s.alloc_slice_fill_copy(500, i);
        }
    });
    assert!(arena.stats().chunks > chunks);
    arena.trim();
    assert_eq!(arena.stats().chunks, chunks);
    assert_eq!(arena.used_bytes(), used);
    assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
    // The parent's block is where it was, intact, and the parent goes on after it.
    let next = arena.alloc(0u64) as *mut u64;
    assert_eq!(next.addr(), kept_addr + 20 * 8);
    arena.reset();
    let again = arena.alloc_slice_fill_with(20, |i| i as u64 * 3);
    assert_eq!(again.as_ptr().addr(), kept_addr);
    drop(arena);
    assert_eq!(backing.live(), 0);
}

#[test]
fn drop_frees_every_chunk_including_oversized_and_spares() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    arena.alloc_layout(Layout::from_size_align(100_000, 1).unwrap());
    for i in 0..50u32 {
        arena.alloc_slice_fill_copy(10, i);
    }
    arena.with_scope(|s| {
        s.alloc_layout(Layout::from_size_align(300_000, 1).unwrap());
    });
    assert!(backing.allocs() >= 3);
    assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
    drop(arena);
    assert_eq!(backing.live(), 0);
    assert_eq!(backing.allocs(), backing.deallocs());
}

// ----- oversized requests and growth -----

/// Sizes of the chunks taken for small allocations around oversized ones of `big` bytes.
fn small_chunks_around_big_requests(big: usize) {
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    arena.alloc(0u64);
    let mut small_chunks = std::vec![backing.last_size()];
    let small_total = 4 * 32 * 64 + 8;
    for round in 0..4 {
        let before = backing.allocs();
        let p = arena.alloc_layout(Layout::from_size_align(big, 16).unwrap());
        assert_eq!(p.addr().get() % 16, 0);
        assert_eq!(backing.allocs(), before + 1, "round {round}");
        let own = backing.last_size();
        assert!(own >= big && own <= big + 4096, "round {round}: {own}");
        let n = backing.allocs();
        for _ in 0..32 {
            arena.alloc([round as u8; 64]);
        }
        small_chunks.extend_from_slice(&backing.sizes()[n..]);
    }
    let largest = *small_chunks.iter().max().unwrap();
    let sum: usize = small_chunks.iter().sum();
    assert!(largest <= 16 * 1024, "small chunks {small_chunks:?}");
    assert!(
        sum <= 4 * small_total + 1024,
        "small chunks {small_chunks:?}"
    );
    assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
}

#[test]
#[cfg_attr(miri, ignore)]
fn huge_requests_get_their_own_chunk_and_keep_small_chunks_small() {
    small_chunks_around_big_requests(64 << 20);
}

#[test]
fn oversized_requests_get_their_own_chunk_and_keep_small_chunks_small() {
    small_chunks_around_big_requests(64 << 10);
}

#[test]
fn failing_alloc_try_with_does_not_grow_the_arena() {
    // bumpalo #314: a loop of failing `alloc_try_with` must not ratchet chunk sizes.
    let iterations = if cfg!(miri) { 50 } else { 1000 };
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    arena.alloc(1u64);
    let mut held = None;
    for i in 0..iterations {
        let r: Result<&mut [u8; 8192], u32> = arena.alloc_try_with(|| Err(i));
        assert_eq!(r.map(|_| ()), Err(i));
        let now = arena.allocated_bytes();
        assert_eq!(*held.get_or_insert(now), now, "iteration {i}");
    }
    assert!(backing.allocs() <= 2, "{:?}", backing.sizes());
    // The room of the failed value is reused: 8 KiB of small values need no new chunk.
    let n = backing.allocs();
    for _ in 0..8192 / 64 {
        arena.alloc([0u8; 64]);
    }
    assert_eq!(backing.allocs(), n, "{:?}", backing.sizes());
    // And chunks keep growing geometrically, not ratcheting: each new chunk is at most twice
    // the sum of the ones before it.
    for _ in 0..(64 * 1024) / 64 {
        arena.alloc([0u8; 64]);
    }
    assert_geometric(&backing.sizes(), 8192);
}

/// Each chunk is at most twice the sum of the chunks taken before it plus twice the largest
/// single request (`largest`): growth, never a ratchet.
fn assert_geometric(sizes: &[usize], largest: usize) {
    let mut sum = 0;
    for (i, &s) in sizes.iter().enumerate() {
        assert!(
            s <= 2 * sum + 2 * largest + 4096,
            "chunk {i} of {s} bytes: {sizes:?}"
        );
        sum += s;
    }
}

#[test]
fn failing_alloc_try_with_between_small_allocations_stays_linear() {
    let iterations: usize = if cfg!(miri) { 30 } else { 500 };
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    for i in 0..iterations {
        let small = arena.alloc(i as u64);
        let r: Result<&mut [u8; 8192], ()> = arena.alloc_try_with(|| Err(()));
        assert!(r.is_err());
        assert_eq!(*small, i as u64);
    }
    // No ratchet: chunks grow geometrically, and the failed values' room is reused, so a
    // handful of chunks serve every iteration.
    let sizes = backing.sizes();
    assert_geometric(&sizes, 8192);
    assert!(sizes.len() <= 8, "{sizes:?}");
    assert!(
        arena.allocated_bytes() <= iterations * (8192 + 64) + 4096,
        "{} bytes after {iterations} iterations",
        arena.allocated_bytes()
    );
    // Each failed value was rolled back: only the small values count.
    assert_eq!(arena.used_bytes(), 8 * iterations);
}

#[test]
fn growing_the_last_block_one_step_at_a_time_takes_few_chunks() {
    // A vector grown by `reserve_exact(1)` is the last block throughout: it should move to a new
    // chunk a logarithmic number of times, not once per push.
    let n: usize = if cfg!(miri) { 1_000 } else { 20_000 };
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    let mut v: Vec<u32, &Arena<&Counting>> = Vec::new_in(&arena);
    for i in 0..n {
        v.reserve_exact(1);
        v.push(i as u32);
    }
    assert!(v.iter().copied().eq(0..n as u32));
    assert!(
        backing.allocs() <= 40,
        "{} backing allocations, {} bytes held, for a {}-byte vector",
        backing.allocs(),
        backing.live(),
        n * 4
    );
}

#[test]
fn mid_sized_requests_still_grow_chunks_geometrically() {
    // Requests a little larger than the first regular chunk (but far below the growth cap) are
    // the common case for buffers: a stream of them must not cost one backing call each.
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    let l = Layout::from_size_align(1000, 8).unwrap();
    let n = if cfg!(miri) { 100 } else { 200 };
    for i in 0..n {
        let p = arena.alloc_layout(l);
        // SAFETY: a fresh block of 1000 bytes.
        unsafe { mark(p, l.size(), i) };
    }
    assert!(
        backing.allocs() <= 16,
        "{} backing allocations for {n} blocks of 1000 bytes: {:?}",
        backing.allocs(),
        backing.sizes()
    );
}

// ----- the chunk-reuse walk -----

#[test]
fn chunk_reuse_walk_terminates_and_takes_a_new_chunk_when_none_fits() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    arena.alloc(0u8);
    // A scope leaves spares behind: a chunk of 64 KiB (for a 40 000-byte block) and smaller ones.
    arena.with_scope(|scope| {
        scope.alloc_layout(Layout::from_size_align(40_000, 8).unwrap());
        for i in 0..200u8 {
            scope.alloc([i; 100]);
        }
    });
    let chunks = arena.stats().chunks;
    let allocs = backing.allocs();
    assert!(chunks >= 2, "{chunks}");

    // Larger than any spare, below the large-block threshold: the walk visits them all and a
    // new chunk is taken.
    let l = Layout::from_size_align(65_500, 64).unwrap();
    let p = arena.alloc_layout(l);
    assert_eq!(p.addr().get() % 64, 0);
    // SAFETY: a fresh block of 65 500 bytes.
    unsafe { mark(p, l.size(), 0x3C) };
    assert_eq!(backing.allocs(), allocs + 1);
    assert_eq!(arena.stats().chunks, chunks + 1);
    assert_eq!(arena.stats().large_blocks, 0);

    // Fits the 64 KiB spare: no backing call.
    let allocs = backing.allocs();
    let a = block(&arena, 30_000, 1, 2);
    let b = block(&arena, 200, 1, 3);
    assert_eq!(backing.allocs(), allocs);
    // Small requests still find room without the backing allocator.
    let d = block(&arena, 100, 1, 5);
    assert_eq!(backing.allocs(), allocs);
    assert!(intact(&[a, b, d]));
    // SAFETY: `p` is live and was marked.
    assert!(unsafe { marked(p, l.size(), 0x3C) });
    assert_eq!(backing.live(), arena.allocated_bytes_including_metadata());
}

#[test]
fn chunk_reuse_walk_over_many_small_spares() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    // Many chunks: a scope allocates a lot, then leaves them all as spares.
    let (n, rounds) = if cfg!(miri) { (150, 2) } else { (400, 3) };
    arena.with_scope(|s| {
        for i in 0..n {
            s.alloc_layout(Layout::from_size_align(240, 4).unwrap());
            s.alloc(i);
        }
    });
    let chunks = arena.stats().chunks;
    assert!(chunks >= 5, "{chunks}");
    let chunk_bytes = arena.allocated_bytes();
    for round in 0..rounds {
        arena.reset();
        let allocs = backing.allocs();
        // Under a limit of what it holds, the arena reuses the retained chunks (without one, the
        // first overflow of the largest chunk takes a larger one, see
        // `reset_loop_that_overflows_converges_to_one_chunk`).
        arena.set_allocation_limit(Some(arena.allocated_bytes_including_metadata()));
        let mut blocks = std::vec::Vec::new();
        let mut total = 0;
        while total < chunk_bytes / 2 {
            blocks.push(block(&arena, 240, 4, round));
            total += 240;
        }
        assert_eq!(backing.allocs(), allocs, "round {round}");
        assert!(intact(&blocks));
        // A request larger than every chunk (and twice the one the round before, which the
        // arena keeps for reuse): one new block, and the walk ends.
        arena.set_allocation_limit(None);
        let size = chunk_bytes << (round + 1);
        blocks.push(block(&arena, size, 8, 9));
        assert_eq!(backing.allocs(), allocs + 1, "round {round}");
        assert!(intact(&blocks));
    }
    drop(arena);
    assert_eq!(backing.live(), 0);
}

// ----- a planned chunk the backing allocator cannot give -----

/// A backing allocator over `Global` that refuses every block above `max` bytes.
struct Capped {
    max: usize,
    refused: Cell<usize>,
}

// SAFETY: every block comes from `Global` and goes back to it unchanged.
unsafe impl Allocator for Capped {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if layout.size() > self.max {
            self.refused.set(self.refused.get() + 1);
            return Err(AllocError);
        }
        Global.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { Global.deallocate(ptr, layout) }
    }
}

/// A cycle that needed far more than its largest chunk makes the reset plan one chunk for all of
/// it; when the backing allocator cannot give that chunk, a small request after the reset is
/// served from a chunk sized as usual, and the plan is dropped.
#[test]
fn a_planned_chunk_the_backing_allocator_refuses_falls_back_to_a_regular_one() {
    // More than three times the largest chunk an arena grows to (16 MiB), in blocks of the
    // chunks (below the large-block threshold), untouched.
    let (count, size) = (900, 60_000);
    let backing = Capped {
        max: 17 << 20,
        refused: Cell::new(0),
    };
    let mut arena = Arena::new_in(&backing);
    for _ in 0..2 {
        for _ in 0..count {
            arena.alloc_layout(Layout::from_size_align(size, 8).unwrap());
        }
        arena.reset();
        // The kept chunk filled, the next chunk would be the planned one, of the cycle's need.
        arena.alloc_layout(Layout::array::<u8>(arena.chunk_capacity()).unwrap());
        assert_eq!(*arena.try_alloc(7u64).expect("a regular chunk"), 7);
        assert!(backing.refused.get() > 0, "the planned chunk was asked for");
        let refused = backing.refused.get();
        assert_eq!(*arena.alloc_slice_fill_copy(3000, 1u8).last().unwrap(), 1);
        assert_eq!(backing.refused.get(), refused, "the plan was dropped");
        arena.reset();
    }
    let mut shared = arena_pool::SyncArena::new_in(&backing);
    for _ in 0..2 {
        for _ in 0..count {
            shared.alloc_layout(Layout::from_size_align(size, 8).unwrap());
        }
        shared.reset();
        let refused = backing.refused.get();
        shared.alloc_layout(Layout::array::<u8>(shared.stats().chunk_capacity).unwrap());
        assert_eq!(*shared.try_alloc(7u64).expect("a regular chunk"), 7);
        assert!(
            backing.refused.get() > refused,
            "the planned chunk was asked for"
        );
        shared.reset();
    }
}
