//! The `Allocator` implementation of `Arena`, through collections (`Vec`, `Box`, hashbrown's
//! `HashMap`) and through direct trait calls: in-place growth of the last block, roll-back on
//! deallocate, every alignment, zeroing, scopes, and refused layouts.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;
use core::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, ArenaRef};

// ----- helpers -----

/// Longest pattern the tests write.
const PATTERN_MAX: usize = 1 << 15;

/// Pseudo-random bytes; the pattern `seed` is this table from index `seed` on. (Whole-slice copies
/// and comparisons keep the tests fast under Miri.)
fn table() -> &'static [u8] {
    static TABLE: std::sync::OnceLock<std::vec::Vec<u8>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..PATTERN_MAX + 256)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    })
}

fn pattern(len: usize, seed: u8) -> &'static [u8] {
    assert!(len <= PATTERN_MAX);
    &table()[seed as usize..seed as usize + len]
}

/// Writes the pattern `seed` over `len` bytes at `p`.
///
/// # Safety
/// `p` is valid for writes of `len` bytes and no reference to them is alive.
unsafe fn fill(p: NonNull<u8>, len: usize, seed: u8) {
    let src = pattern(len, seed);
    // SAFETY: the caller guarantees `len` writable bytes at `p`; `src` is a static table, so the
    // ranges do not overlap.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), p.as_ptr(), len) };
}

/// The `len` bytes at `p`.
///
/// # Safety
/// `p` is valid for reads of `len` initialised bytes, not written while the slice is used.
unsafe fn bytes<'x>(p: NonNull<u8>, len: usize) -> &'x [u8] {
    // SAFETY: forwarded from the caller.
    unsafe { core::slice::from_raw_parts(p.as_ptr(), len) }
}

/// Whether the `len` bytes at `p` hold the pattern `seed`.
///
/// # Safety
/// `p` is valid for reads of `len` initialised bytes.
unsafe fn holds(p: NonNull<u8>, len: usize, seed: u8) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { bytes(p, len) == pattern(len, seed) }
}

/// Whether the `len` bytes at `p` are all `byte`.
///
/// # Safety
/// `p` is valid for reads of `len` initialised bytes.
unsafe fn all_eq(p: NonNull<u8>, len: usize, byte: u8) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { bytes(p, len) == std::vec![byte; len].as_slice() }
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

fn aligns() -> impl Iterator<Item = usize> {
    (0..=12).map(|k| 1usize << k)
}

fn sizes(align: usize) -> [usize; 5] {
    [0, 1, align, 3 * align + 1, 5000]
}

/// Allocates `l` as the last block of `arena` at an address that is aligned to `l.align()` but
/// not to `2 * l.align()`, so that any larger alignment forces a move.
fn alloc_misaligned<A: Allocator>(arena: &Arena<A>, l: Layout) -> NonNull<u8> {
    let align = l.align();
    for _ in 0..4 {
        // A one-byte probe, rolled back at once, tells where the bump position is.
        let probe = arena.allocate(layout(1, 1)).unwrap().cast::<u8>();
        let pos = probe.addr().get();
        // SAFETY: `probe` is the last block, allocated just above with this layout.
        unsafe { arena.deallocate(probe, layout(1, 1)) };
        let filler = (align + 2 * align - pos % (2 * align)) % (2 * align);
        if filler > 0 {
            arena.allocate(layout(filler, 1)).unwrap();
        }
        let p = arena.allocate(l).unwrap().cast::<u8>();
        if p.addr().get() % (2 * align) == align {
            return p;
        }
        // It landed in a fresh chunk: give it back and try again from there.
        // SAFETY: `p` is the last block, allocated just above with `l`.
        unsafe { arena.deallocate(p, l) };
    }
    panic!("could not place a misaligned block for {l:?}");
}

// ----- Vec and Box -----

#[test]
fn vec_push_grows_in_place_while_the_chunk_has_room() {
    let n: u32 = if cfg!(miri) { 3_000 } else { 100_000 };
    let arena = Arena::new();
    let mut v: Vec<u32, &Arena> = Vec::new_in(&arena);
    let (mut moves, mut in_place, mut large) = (0usize, 0usize, 0usize);
    for i in 0..n {
        let (old_ptr, old_cap) = (v.as_ptr(), v.capacity());
        let room = arena.chunk_capacity();
        let was_large = arena.stats().large_blocks == 1;
        v.push(i);
        if v.capacity() == old_cap {
            assert_eq!(v.as_ptr(), old_ptr, "pointer moved without a reallocation");
            continue;
        }
        if old_cap == 0 {
            continue; // the first allocation
        }
        if was_large {
            // A large block grows through the backing allocator (realloc), outside the chunks.
            assert_eq!(arena.chunk_capacity(), room);
            assert_eq!(arena.stats().large_blocks, 1);
            large += 1;
            continue;
        }
        // The vector is the last block of an otherwise idle arena: it can grow in place exactly
        // when the rest of its chunk holds the extra bytes.
        let needed = (v.capacity() - old_cap) * 4;
        let moved = v.as_ptr() != old_ptr;
        assert_eq!(
            moved,
            room < needed,
            "push {i}: cap {old_cap} -> {}, room {room}, needed {needed}, moved {moved}",
            v.capacity()
        );
        if moved {
            moves += 1;
        } else {
            in_place += 1;
            assert_eq!(arena.chunk_capacity(), room - needed);
        }
    }
    assert!(moves <= 20, "{moves} moves");
    assert!(in_place >= 1, "never grew in place");
    // Past 64 KiB the vector is a large block (it gets there within the native run's count).
    assert_eq!(large > 0, !cfg!(miri), "{large} grows of a large block");
    assert!(v.iter().copied().eq(0..n));
    let cap_bytes = v.capacity() * 4;
    // The old blocks were released when the vector moved to a new chunk or a large block, so the
    // arena counts exactly the vector's current block: in the chunks, or as a large block
    // (counted apart, in `large_bytes`, with its header and any room to grow).
    if large > 0 {
        assert_eq!(arena.used_bytes(), 0);
        let s = arena.stats();
        assert!(
            s.large_bytes >= cap_bytes && s.large_bytes <= 2 * cap_bytes + 64,
            "{s:?}"
        );
    } else {
        assert_eq!(arena.used_bytes(), cap_bytes);
    }
}

#[test]
fn reserve_exact_one_by_one_stays_linear() {
    let n: usize = if cfg!(miri) { 2_000 } else { 20_000 };
    let arena = Arena::new();
    let mut v: Vec<u32, &Arena> = Vec::new_in(&arena);
    let mut max_allocated = 0;
    for i in 0..n {
        v.reserve_exact(1);
        v.push(i as u32);
        max_allocated = max_allocated.max(arena.allocated_bytes());
    }
    assert_eq!(v.capacity(), n);
    assert!(v.iter().copied().eq(0..n as u32));
    let final_bytes = n * 4;
    assert!(
        max_allocated < 16 * final_bytes,
        "allocated {max_allocated} bytes for a {final_bytes}-byte vector"
    );
    assert_eq!(arena.used_bytes(), final_bytes);
}

#[test]
fn shrink_to_fit_of_the_last_vector_gives_bytes_back() {
    let arena = Arena::new();
    let mut v: Vec<u32, &Arena> = Vec::with_capacity_in(1000, &arena);
    v.extend(0..600u32);
    let ptr = v.as_ptr();
    let before = arena.used_bytes();
    v.shrink_to_fit();
    assert_eq!(v.capacity(), 600);
    assert_eq!(v.as_ptr(), ptr);
    assert_eq!(before - arena.used_bytes(), 400 * 4);
    assert!(v.iter().copied().eq(0..600));

    // A vector that is not last keeps its bytes counted (the slack is lost until reset).
    let mut w: Vec<u32, &Arena> = Vec::with_capacity_in(100, &arena);
    w.push(1);
    let _after: &mut u8 = arena.alloc(0u8);
    let before = arena.used_bytes();
    w.shrink_to_fit();
    assert_eq!(w.capacity(), 1);
    assert_eq!(arena.used_bytes(), before);
    assert_eq!(w[0], 1);
}

#[test]
fn dropping_the_last_box_rolls_back() {
    let arena = Arena::new();
    let mut v: Vec<u32, &Arena> = Vec::with_capacity_in(10, &arena);
    v.extend(0..10);
    // 40 bytes from a 16-aligned chunk start: the next u64 needs no padding.
    let before = arena.used_bytes();
    let b = Box::new_in([7u64; 16], &arena);
    assert_eq!(arena.used_bytes(), before + 128);
    assert_eq!(b[15], 7);
    drop(b);
    assert_eq!(arena.used_bytes(), before);

    // With padding in front of it, the Box is rolled back to its own start; the padding stays.
    let _odd: &mut u8 = arena.alloc(1u8);
    let before = arena.used_bytes();
    let b = Box::new_in(9u64, &arena);
    let pad = arena.used_bytes() - before - 8;
    assert!(pad < 8);
    assert_eq!(*b, 9);
    drop(b);
    assert_eq!(arena.used_bytes(), before + pad);
    assert!(v.iter().copied().eq(0..10));
}

// ----- direct trait calls -----

#[test]
fn every_alignment_and_size_round_trips() {
    let arena = Arena::new();
    let mut blocks = std::vec::Vec::new();
    let mut seed = 0u8;
    for align in aligns() {
        for size in sizes(align) {
            let l = layout(size, align);
            let p = arena.allocate(l).unwrap();
            assert!(p.len() >= size);
            let p = p.cast::<u8>();
            assert_eq!(p.addr().get() % align, 0, "{l:?}");
            // SAFETY: a fresh block of at least `size` bytes.
            unsafe { fill(p, size, seed) };
            // SAFETY: just written.
            assert!(unsafe { holds(p, size, seed) });
            blocks.push((p, size, seed));
            seed = seed.wrapping_add(7);
        }
    }
    // Nothing overwrote anything: the blocks do not overlap.
    for &(p, size, seed) in &blocks {
        // SAFETY: every block is still live and was filled.
        assert!(unsafe { holds(p, size, seed) });
    }
    let mut ranges: std::vec::Vec<_> = blocks
        .iter()
        .filter(|b| b.1 > 0)
        .map(|&(p, size, _)| (p.addr().get(), p.addr().get() + size))
        .collect();
    ranges.sort_unstable();
    assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0));
}

#[test]
fn grow_to_a_larger_alignment_moves_and_keeps_contents() {
    let arena = Arena::with_capacity(1 << 16);
    let mut seed = 1u8;
    let mut overlapping_moves = 0;
    for align in aligns() {
        for size in sizes(align) {
            let old = layout(size, align);
            let new = layout(2 * size + align, 2 * align);

            // The last block, placed so that the larger alignment is not met where it is.
            let p = alloc_misaligned(&arena, old);
            // SAFETY: fresh block of `size` bytes.
            unsafe { fill(p, size, seed) };
            // SAFETY: `p` is live with `old`; `new` is larger.
            let q = unsafe { arena.grow(p, old, new) }.unwrap();
            assert!(q.len() >= new.size());
            let q = q.cast::<u8>();
            assert_eq!(q.addr().get() % (2 * align), 0, "{old:?} -> {new:?}");
            assert_ne!(q, p);
            if q.addr().get() < p.addr().get() + size {
                overlapping_moves += 1;
            }
            // SAFETY: `q` holds the `size` bytes copied from `p`.
            assert!(unsafe { holds(q, size, seed) }, "{old:?} -> {new:?}");
            // SAFETY: `q` is writable for `new.size()` bytes.
            unsafe { fill(q, new.size(), seed) };

            // A block that is not last.
            let p = arena.allocate(old).unwrap().cast::<u8>();
            // SAFETY: fresh block of `size` bytes.
            unsafe { fill(p, size, seed ^ 0x55) };
            let spacer = arena.alloc(0xA5u8);
            // SAFETY: `p` is live with `old`; `new` is larger.
            let r = unsafe { arena.grow(p, old, new) }.unwrap().cast::<u8>();
            assert_eq!(r.addr().get() % (2 * align), 0);
            // SAFETY: `r` holds the `size` bytes copied from `p`.
            assert!(unsafe { holds(r, size, seed ^ 0x55) });
            assert_eq!(*spacer, 0xA5);
            // SAFETY: the previous block `q` is still live (never freed).
            assert!(unsafe { holds(q, new.size(), seed) });
            seed = seed.wrapping_add(3);
        }
    }
    // Growing a misaligned last block of more than `align` bytes moves it by `align` in the same
    // chunk, over its own bytes, at least for the smaller alignments.
    assert!(overlapping_moves >= 5, "{overlapping_moves}");
}

#[test]
fn grow_of_the_last_block_with_the_same_alignment_is_in_place() {
    let arena = Arena::with_capacity(4096);
    let _first = arena.alloc(1u64);
    let l = layout(100, 8);
    let p = arena.allocate(l).unwrap().cast::<u8>();
    // SAFETY: fresh block.
    unsafe { fill(p, 100, 9) };
    let used = arena.used_bytes();
    // SAFETY: `p` is live with `l`.
    let q = unsafe { arena.grow(p, l, layout(300, 8)) }
        .unwrap()
        .cast::<u8>();
    assert_eq!(q, p);
    assert_eq!(arena.used_bytes(), used + 200);
    // SAFETY: kept in place.
    assert!(unsafe { holds(q, 100, 9) });
    // Shrinking it back gives the bytes back, in place.
    // SAFETY: `q` is live with (300, 8).
    let s = unsafe { arena.shrink(q, layout(300, 8), layout(50, 8)) }.unwrap();
    assert_eq!((s.cast::<u8>(), s.len()), (p, 50));
    assert_eq!(arena.used_bytes(), used - 50);
    // SAFETY: the first 50 bytes are kept.
    assert!(unsafe { holds(p, 50, 9) });
}

#[test]
fn shrink_to_a_larger_alignment_moves_and_keeps_contents() {
    let arena = Arena::with_capacity(1 << 16);
    let mut seed = 2u8;
    let mut overlapping_moves = 0;
    for align in aligns() {
        for size in sizes(align) {
            let old = layout(size, align);
            let new = layout(size / 2 + size % 2, 2 * align);

            // The last block, misaligned for `2 * align`.
            let p = alloc_misaligned(&arena, old);
            // SAFETY: fresh block.
            unsafe { fill(p, size, seed) };
            // SAFETY: `p` is live with `old`; `new` is not larger.
            let q = unsafe { arena.shrink(p, old, new) }.unwrap();
            assert!(q.len() >= new.size());
            let q = q.cast::<u8>();
            assert_eq!(q.addr().get() % (2 * align), 0, "{old:?} -> {new:?}");
            assert_ne!(q, p);
            if q.addr().get() < p.addr().get() + new.size() {
                overlapping_moves += 1;
            }
            // SAFETY: `q` holds the first `new.size()` bytes of `p`.
            assert!(unsafe { holds(q, new.size(), seed) }, "{old:?} -> {new:?}");
            // SAFETY: writable for `new.size()` bytes.
            unsafe { fill(q, new.size(), seed ^ 1) };

            // Not the last block.
            let p = arena.allocate(old).unwrap().cast::<u8>();
            // SAFETY: fresh block.
            unsafe { fill(p, size, seed ^ 0x33) };
            let spacer = arena.alloc(0x5Au8);
            // SAFETY: `p` is live with `old`.
            let r = unsafe { arena.shrink(p, old, new) }.unwrap();
            assert!(r.len() >= new.size());
            let r = r.cast::<u8>();
            assert_eq!(r.addr().get() % (2 * align), 0);
            // SAFETY: `r` holds the first `new.size()` bytes of `p`.
            assert!(unsafe { holds(r, new.size(), seed ^ 0x33) });
            assert_eq!(*spacer, 0x5A);
            // SAFETY: `q` was never freed.
            assert!(unsafe { holds(q, new.size(), seed ^ 1) });
            seed = seed.wrapping_add(5);
        }
    }
    assert!(overlapping_moves >= 3, "{overlapping_moves}");
}

#[test]
fn shrink_of_a_block_that_is_not_last_keeps_its_pointer() {
    let arena = Arena::new();
    let l = layout(256, 16);
    let p = arena.allocate(l).unwrap().cast::<u8>();
    // SAFETY: fresh block.
    unsafe { fill(p, 256, 4) };
    let _after = arena.alloc(3u32);
    let used = arena.used_bytes();
    // SAFETY: `p` is live with `l`.
    let q = unsafe { arena.shrink(p, l, layout(10, 8)) }.unwrap();
    assert_eq!(q.cast::<u8>(), p);
    assert!(q.len() >= 10);
    assert_eq!(arena.used_bytes(), used);
    // SAFETY: the block keeps its bytes.
    assert!(unsafe { holds(p, 10, 4) });
    // SAFETY: `p` is live with (10, 8) (the requested size of the shrink).
    unsafe { arena.deallocate(p, layout(10, 8)) };
    assert_eq!(arena.used_bytes(), used);
}

#[test]
fn grow_zeroed_zeroes_the_tail_even_over_stale_bytes() {
    let arena = Arena::with_capacity(4096);
    let _first = arena.alloc(1u64);
    // Dirty the memory past the bump position and give it back.
    let big = layout(1024, 8);
    let d = arena.allocate(big).unwrap().cast::<u8>();
    // SAFETY: fresh block of 1024 bytes.
    unsafe { d.write_bytes(0xFF, 1024) };
    let used = arena.used_bytes();
    // SAFETY: `d` is the last block, allocated with `big`.
    unsafe { arena.deallocate(d, big) };
    assert_eq!(arena.used_bytes(), used - 1024);

    // A small block lands on the dirty bytes, then grows in place with zeroes.
    let small = layout(16, 8);
    let p = arena.allocate(small).unwrap().cast::<u8>();
    assert_eq!(p, d);
    // SAFETY: fresh block of 16 bytes.
    unsafe { p.write_bytes(0xAA, 16) };
    // SAFETY: `p` is live with `small`.
    let q = unsafe { arena.grow_zeroed(p, small, big) }
        .unwrap()
        .cast::<u8>();
    assert_eq!(q, p, "expected an in-place grow");
    // SAFETY: `q` holds 16 kept bytes and 1008 zeroed ones.
    unsafe {
        assert!(all_eq(q, 16, 0xAA));
        assert!(all_eq(q.add(16), 1008, 0));
    }

    // Not the last block: copied, then zeroed.
    let _spacer = arena.alloc(0u8);
    // SAFETY: `q` is live with `big`.
    let r = unsafe { arena.grow_zeroed(q, big, layout(2000, 64)) }
        .unwrap()
        .cast::<u8>();
    assert_ne!(r, q);
    assert_eq!(r.addr().get() % 64, 0);
    // SAFETY: `r` holds 1024 copied bytes and 976 zeroed ones.
    unsafe {
        assert!(all_eq(r, 16, 0xAA));
        assert!(all_eq(r.add(16), 1008, 0));
        assert!(all_eq(r.add(1024), 976, 0));
    }

    // The last block, moved to a new chunk: the new chunk's fresh bytes are zeroed too.
    let last = layout(100, 8);
    let s = arena.allocate(last).unwrap().cast::<u8>();
    // SAFETY: fresh block.
    unsafe { s.write_bytes(0x11, 100) };
    let huge = layout(64 * 1024, 8);
    // SAFETY: `s` is live with `last`.
    let t = unsafe { arena.grow_zeroed(s, last, huge) }
        .unwrap()
        .cast::<u8>();
    assert_ne!(t, s);
    // SAFETY: `t` holds 100 copied bytes and the rest zeroed.
    unsafe {
        assert!(all_eq(t, 100, 0x11));
        assert!(all_eq(t.add(100), huge.size() - 100, 0));
    }
}

#[test]
fn allocate_zeroed_after_reuse_of_dirty_memory_is_zero() {
    let mut arena = Arena::new();
    let l = layout(512, 16);
    let d = arena.allocate(l).unwrap().cast::<u8>();
    // SAFETY: fresh block.
    unsafe { d.write_bytes(0xFF, 512) };
    // SAFETY: `d` is the last block, allocated with `l`.
    unsafe { arena.deallocate(d, l) };
    let z = arena.allocate_zeroed(l).unwrap();
    assert_eq!(z.cast::<u8>(), d);
    // SAFETY: zeroed block of 512 bytes.
    assert!(unsafe { all_eq(z.cast(), 512, 0) });
    // SAFETY: fresh-ish block of 512 bytes, ours.
    unsafe { z.cast::<u8>().write_bytes(0xEE, 512) };

    // After a reset, the same bytes come back zeroed.
    arena.reset();
    let z = arena.allocate_zeroed(l).unwrap().cast::<u8>();
    assert_eq!(z, d);
    // SAFETY: zeroed block.
    assert!(unsafe { all_eq(z, 512, 0) });
    // SAFETY: ours.
    unsafe { z.write_bytes(0xDD, 512) };

    // After a scope, too.
    let outer = arena.used_bytes();
    let inner_ptr = arena.with_scope(|s| {
        let p = s.allocate(l).unwrap().cast::<u8>();
        // SAFETY: fresh block.
        unsafe { p.write_bytes(0xCC, 512) };
        p
    });
    assert_eq!(arena.used_bytes(), outer);
    let z = arena.allocate_zeroed(l).unwrap().cast::<u8>();
    assert_eq!(z, inner_ptr);
    // SAFETY: zeroed block.
    assert!(unsafe { all_eq(z, 512, 0) });
}

// ----- scopes -----

/// Deallocates, grows and shrinks the parent's last block `x` (of `l`, filled with `seed`) from
/// inside the scope `s`, checking that the scope's bump position never moves over it.
/// Whether `a..a + a_len` and `b..b + b_len` share no byte (a scope's block may lie below its
/// parent's when it comes from a chunk the backing allocator placed lower).
fn disjoint(a: NonNull<u8>, a_len: usize, b: NonNull<u8>, b_len: usize) -> bool {
    let (a, b) = (a.addr().get(), b.addr().get());
    a + a_len <= b || b + b_len <= a
}

fn poke_parent_block(s: &ArenaRef<'_>, x: NonNull<u8>, l: Layout, seed: u8) {
    let at_entry = s.used_bytes();

    // Deallocate: no roll-back into the parent.
    // SAFETY: `x` is a live block of this arena with `l`, not used afterwards.
    unsafe { s.deallocate(x, l) };
    assert_eq!(
        s.used_bytes(),
        at_entry,
        "deallocate rolled back a parent's block"
    );
    let y = s.allocate(l).unwrap().cast::<u8>();
    assert!(
        disjoint(y, l.size(), x, l.size()),
        "a scope block overlaps the parent's"
    );
    // SAFETY: fresh block of the scope.
    unsafe { fill(y, l.size(), !seed) };
    // SAFETY: `y` is the scope's last block.
    unsafe { s.deallocate(y, l) };
    // Rolled back to the block's start: at most its alignment padding stays used.
    let used = s.used_bytes();
    assert!(
        used >= at_entry && used < at_entry + l.align(),
        "the scope's own last block is rolled back"
    );
    let again = s.allocate(l).unwrap().cast::<u8>();
    assert_eq!(again, y, "the rolled-back room is handed out again");
    // SAFETY: `again` is the scope's last block.
    unsafe { s.deallocate(again, l) };
}

fn grow_parent_block(s: &ArenaRef<'_>, x: NonNull<u8>, l: Layout, seed: u8) {
    let at_entry = s.used_bytes();
    let bigger = layout(l.size() * 2, l.align());
    // SAFETY: `x` is a live block of this arena with `l`.
    let q = unsafe { s.grow(x, l, bigger) }.unwrap().cast::<u8>();
    assert_ne!(q, x, "a parent's block grew in place inside a scope");
    assert!(
        disjoint(q, bigger.size(), x, l.size()),
        "the grown block overlaps the parent's"
    );
    // SAFETY: `q` holds the `l.size()` bytes copied from `x`.
    assert!(unsafe { holds(q, l.size(), seed) });
    assert!(s.used_bytes() >= at_entry + bigger.size());
}

fn shrink_parent_block(s: &ArenaRef<'_>, x: NonNull<u8>, l: Layout, seed: u8) {
    let at_entry = s.used_bytes();
    let smaller = layout(l.size() / 2, l.align());
    // SAFETY: `x` is a live block of this arena with `l`.
    let q = unsafe { s.shrink(x, l, smaller) }.unwrap();
    assert_eq!(q.cast::<u8>(), x);
    assert_eq!(
        q.len(),
        l.size(),
        "a parent's block was shrunk in place inside a scope"
    );
    assert_eq!(s.used_bytes(), at_entry);
    // SAFETY: the block is untouched.
    assert!(unsafe { holds(x, l.size(), seed) });
    // With an alignment `x` does not have, it moves, by copy, clear of the parent's data (in
    // the same chunk above it, or in another chunk when the alignment is large).
    let x_align = 1usize << x.addr().get().trailing_zeros();
    let realigned = layout(l.size() / 2, 2 * x_align);
    // SAFETY: `x` is still live with `l` (the shrink returned the same block).
    let r = unsafe { s.shrink(x, l, realigned) }.unwrap().cast::<u8>();
    assert_ne!(r, x);
    assert!(
        r.addr().get() >= x.addr().get() + l.size()
            || r.addr().get() + realigned.size() <= x.addr().get(),
        "the moved block overlaps the parent's"
    );
    // SAFETY: `r` holds the first `realigned.size()` bytes of `x`.
    assert!(unsafe { holds(r, realigned.size(), seed) });
}

#[test]
fn scope_never_moves_over_a_parent_block_allocated_on_the_arena() {
    let l = layout(64, 8);
    for (i, op) in [poke_parent_block, grow_parent_block, shrink_parent_block]
        .into_iter()
        .enumerate()
    {
        let mut arena = Arena::new();
        let keep = arena.allocate(l).unwrap().cast::<u8>();
        // SAFETY: fresh block.
        unsafe { fill(keep, 64, 100) };
        let x = arena.allocate(l).unwrap().cast::<u8>();
        let seed = 10 + i as u8;
        // SAFETY: fresh block.
        unsafe { fill(x, 64, seed) };
        let entry = arena.used_bytes();
        arena.with_scope(|s| {
            op(s, x, l, seed);
            // A lot of scope allocation, spilling into further chunks.
            for k in 0..50u32 {
                s.alloc_slice_fill_copy(100, k);
            }
        });
        assert_eq!(arena.used_bytes(), entry, "op {i}");
        // SAFETY: `keep` was never handed to the scope and is live.
        assert!(unsafe { holds(keep, 64, 100) }, "op {i}");
        // The parent goes on right after its own blocks.
        let next = arena.allocate(layout(8, 8)).unwrap().cast::<u8>();
        assert_eq!(next.addr().get(), x.addr().get() + 64, "op {i}");
    }
}

#[test]
fn scope_never_moves_over_a_parent_block_allocated_on_the_arena_ref() {
    let l = layout(48, 16);
    for (i, op) in [poke_parent_block, grow_parent_block, shrink_parent_block]
        .into_iter()
        .enumerate()
    {
        let mut arena = Arena::new();
        let r = arena.as_arena_ref_mut();
        let keep = r.allocate(l).unwrap().cast::<u8>();
        // SAFETY: fresh block.
        unsafe { fill(keep, 48, 200) };
        let x = r.allocate(l).unwrap().cast::<u8>();
        let seed = 20 + i as u8;
        // SAFETY: fresh block.
        unsafe { fill(x, 48, seed) };
        let entry = r.used_bytes();
        r.with_scope(|s| {
            // `x` is the last block at entry: the scope must leave it alone.
            op(s, x, l, seed);
            // A block of this scope is just as untouchable from a nested scope.
            let y = s.allocate(l).unwrap().cast::<u8>();
            // SAFETY: fresh block.
            unsafe { fill(y, 48, !seed) };
            let mid = s.used_bytes();
            s.with_scope(|inner| op(inner, y, l, !seed));
            assert_eq!(s.used_bytes(), mid, "op {i}");
        });
        assert_eq!(r.used_bytes(), entry, "op {i}");
        // SAFETY: `keep` is live and untouched.
        assert!(unsafe { holds(keep, 48, 200) }, "op {i}");
        let next = r.allocate(layout(16, 16)).unwrap().cast::<u8>();
        assert_eq!(next.addr().get(), x.addr().get() + 48, "op {i}");
    }
}

#[test]
fn a_vector_made_in_a_scope_grows_in_place_there() {
    let mut arena = Arena::new();
    let _parent = arena.alloc([1u8; 24]);
    let entry = arena.used_bytes();
    let (moves, total) = arena.with_scope(|s| {
        let mut v: Vec<u64, &ArenaRef<'_>> = Vec::new_in(&*s);
        let mut moves = 0;
        for i in 0..2000u64 {
            let p = v.as_ptr();
            let cap = v.capacity();
            v.push(i);
            if cap != 0 && v.as_ptr() != p {
                moves += 1;
            }
        }
        (moves, v.iter().sum::<u64>())
    });
    assert_eq!(total, 1999 * 2000 / 2);
    assert!(moves <= 8, "{moves} moves");
    assert_eq!(arena.used_bytes(), entry);
}

// ----- hashbrown -----

#[test]
fn hashbrown_map_on_the_arena() {
    use hashbrown::{DefaultHashBuilder, HashMap};

    let n: u64 = if cfg!(miri) { 300 } else { 100_000 };
    let arena = Arena::new();
    let mut map: HashMap<u64, u64, DefaultHashBuilder, &Arena> = HashMap::new_in(&arena);
    for i in 0..n {
        assert_eq!(map.insert(i, i * 3 + 1), None);
    }
    assert_eq!(map.len() as u64, n);
    for i in 0..n {
        assert_eq!(map.get(&i), Some(&(i * 3 + 1)));
    }
    assert_eq!(map.get(&n), None);
    for i in (0..n).step_by(2) {
        assert_eq!(map.remove(&i), Some(i * 3 + 1));
    }
    assert_eq!(map.len() as u64, n / 2);
    for i in 0..n {
        let expected = (i % 2 == 1).then_some(i * 3 + 1);
        assert_eq!(map.get(&i).copied(), expected);
    }

    let copy = map.clone();
    assert_eq!(copy, map);
    let cap = map.capacity();
    map.shrink_to_fit();
    assert!(map.capacity() < cap, "{} >= {cap}", map.capacity());
    assert_eq!(copy, map);
    for i in (1..n).step_by(2) {
        assert_eq!(map.get(&i), Some(&(i * 3 + 1)));
    }
    drop(copy);
    drop(map);

    let mut other = HashMap::with_hasher_in(DefaultHashBuilder::default(), &arena);
    other.extend((0..100u64).map(|i| (i, !i)));
    assert!((0..100u64).all(|i| other[&i] == !i));
}

// ----- refused layouts -----

fn near_limit_layouts() -> std::vec::Vec<Layout> {
    let max = isize::MAX as usize;
    let mut v = std::vec![
        layout(max - 4095, 4096),
        layout(max, 1),
        layout(max - 15, 16),
        layout(max - 16, 1),
        layout(max - (1 << 20) + 1, 1 << 20),
        layout(max - 63, 64),
    ];
    // These pass the size arithmetic and reach the backing allocator, which refuses them (Miri
    // would stop on them instead).
    if !cfg!(miri) {
        v.push(layout(max / 2 + 1, 1));
        v.push(layout(max / 4, 4096));
    }
    v
}

#[test]
fn near_limit_layouts_are_refused_and_the_arena_survives() {
    let arena = Arena::new();
    let keep = arena.alloc_slice_copy(b"still here");
    let held = arena.allocated_bytes();
    let chunks = arena.stats().chunks;
    for l in near_limit_layouts() {
        assert_eq!(arena.allocate(l).map(|_| ()), Err(AllocError), "{l:?}");
        assert_eq!(
            arena.allocate_zeroed(l).map(|_| ()),
            Err(AllocError),
            "{l:?}"
        );
        assert_eq!(
            arena.try_alloc_layout(l).map(|_| ()),
            Err(AllocError),
            "{l:?}"
        );
        assert_eq!(
            arena.as_arena_ref().try_alloc_layout(l).map(|_| ()),
            Err(AllocError)
        );
        assert_eq!(arena.allocated_bytes(), held, "{l:?}");
        assert_eq!(arena.stats().chunks, chunks, "{l:?}");
        assert_eq!(keep, b"still here");
        assert_eq!(*arena.alloc(l.align()), l.align());
    }
    assert!(
        arena
            .try_alloc_slice_fill_copy(usize::MAX / 2, 0u64)
            .is_err()
    );
    assert!(
        arena
            .try_alloc_slice_fill_copy(isize::MAX as usize / 8 + 1, 0u64)
            .is_err()
    );
    assert!(
        arena
            .try_alloc_slice_fill_copy(isize::MAX as usize, 0u8)
            .is_err()
    );
    assert!(
        arena
            .try_alloc_slice_fill_default::<u32>(usize::MAX)
            .is_err()
    );
    assert!(
        arena
            .try_alloc_slice_fill_with(usize::MAX / 4, |_| 0u16)
            .is_err()
    );
    assert!(arena.try_alloc([0u8; 0]).is_ok());
    assert_eq!(arena.allocated_bytes(), held);
    assert_eq!(keep, b"still here");
    assert_eq!(arena.alloc_slice_copy(&[1u16, 2, 3]), &[1, 2, 3]);
}

#[test]
fn a_refused_grow_keeps_the_block_and_the_position() {
    let arena = Arena::new();
    let l = layout(100, 8);
    let p = arena.allocate(l).unwrap().cast::<u8>();
    // SAFETY: fresh block.
    unsafe { fill(p, 100, 77) };
    let used = arena.used_bytes();
    let held = arena.allocated_bytes();
    let max = isize::MAX as usize;
    let mut refused = std::vec![
        layout(max - 4095, 4096),
        layout(max - 15, 16),
        layout(max - 7, 8),
        layout(max - 63, 64),
    ];
    if !cfg!(miri) {
        refused.push(layout(max / 2, 8));
    }
    for new in refused {
        // SAFETY: `p` is live with `l` and `new` is larger.
        assert!(unsafe { arena.grow(p, l, new) }.is_err(), "{new:?}");
        // SAFETY: as above.
        assert!(unsafe { arena.grow_zeroed(p, l, new) }.is_err(), "{new:?}");
        assert_eq!(arena.used_bytes(), used);
        assert_eq!(arena.allocated_bytes(), held);
    }
    // SAFETY: the failed grows left `p` live and intact.
    assert!(unsafe { holds(p, 100, 77) });
    // Still the last block: it grows in place.
    // SAFETY: `p` is live with `l`.
    let q = unsafe { arena.grow(p, l, layout(200, 8)) }
        .unwrap()
        .cast::<u8>();
    assert_eq!(q, p);

    // Through a Vec.
    let mut v: Vec<u32, &Arena> = Vec::new_in(&arena);
    v.extend([5, 6, 7]);
    // A valid array layout whose chunk (with its header) would pass isize::MAX.
    assert!(v.try_reserve(isize::MAX as usize / 4 - v.len()).is_err());
    assert!(v.try_reserve_exact(usize::MAX / 8).is_err());
    v.push(8);
    assert_eq!(v, [5, 6, 7, 8]);
}

#[test]
#[should_panic(expected = "allocation size overflows")]
fn alloc_layout_panics_on_overflow() {
    let arena = Arena::new();
    arena.alloc_layout(layout(isize::MAX as usize - 4095, 4096));
}

#[test]
#[should_panic(expected = "allocation size overflows")]
fn alloc_slice_fill_copy_panics_on_overflow() {
    let arena = Arena::new();
    arena.alloc_slice_fill_copy(usize::MAX / 2, 0u64);
}

#[test]
#[should_panic(expected = "allocation size overflows")]
fn alloc_slice_fill_copy_of_bytes_panics_on_overflow() {
    let arena = Arena::new();
    let _ = arena.alloc(1u8);
    arena.alloc_slice_fill_copy(isize::MAX as usize, 0u8);
}

// ----- zero-sized layouts -----

#[test]
fn zero_sized_layouts_are_aligned_and_harmless() {
    for warm in [false, true] {
        let arena = Arena::new();
        let keep = warm.then(|| arena.alloc_slice_copy(&[3u8, 1, 4]));
        for align in aligns() {
            let l = layout(0, align);
            let p = arena.allocate(l).unwrap();
            assert_eq!(p.len(), 0);
            let p = p.cast::<u8>();
            assert_eq!(p.addr().get() % align, 0, "{l:?}");
            let z = arena.allocate_zeroed(l).unwrap().cast::<u8>();
            assert_eq!(z.addr().get() % align, 0, "{l:?}");
            let used = arena.used_bytes();
            // SAFETY: `p` and `z` were allocated with `l`.
            unsafe {
                arena.deallocate(z, l);
                arena.deallocate(p, l);
            }
            assert_eq!(arena.used_bytes(), used);
            // Growing from empty works like a fresh allocation.
            let p = arena.allocate(l).unwrap().cast::<u8>();
            let big = layout(3 * align, align);
            // SAFETY: `p` is live with `l`.
            let q = unsafe { arena.grow(p, l, big) }.unwrap().cast::<u8>();
            assert_eq!(q.addr().get() % align, 0);
            // SAFETY: `q` is writable for `3 * align` bytes.
            unsafe { fill(q, big.size(), 8) };
            // SAFETY: just written.
            assert!(unsafe { holds(q, big.size(), 8) });
        }
        if let Some(keep) = keep {
            assert_eq!(keep, &[3, 1, 4]);
        }
    }
}

#[test]
fn zero_sized_layouts_do_not_bump() {
    // Zero-sized layouts: an aligned dangling pointer, no bump (docs/DESIGN.md §3.1).
    let arena = Arena::new();
    let _odd = arena.alloc(1u8); // the bump position is now odd
    let l = layout(8, 1);
    let p = arena.allocate(l).unwrap().cast::<u8>();
    let used = arena.used_bytes();
    let room = arena.chunk_capacity();
    for align in aligns() {
        let z = arena.allocate(layout(0, align)).unwrap().cast::<u8>();
        assert_eq!(z.addr().get() % align, 0);
        assert_eq!(
            arena.used_bytes(),
            used,
            "a zero-sized layout of align {align} bumped"
        );
        assert_eq!(arena.chunk_capacity(), room);
    }
    // So the last real block is still last: it grows in place.
    // SAFETY: `p` is live with `l`.
    let q = unsafe { arena.grow(p, l, layout(16, 1)) }
        .unwrap()
        .cast::<u8>();
    assert_eq!(q, p);
}
