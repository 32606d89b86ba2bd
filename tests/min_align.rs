//! An arena's minimum alignment (`Arena<A, MIN_ALIGN>`, made by `Arena::with_min_align`): every
//! block starts at a multiple of it and takes a multiple of it, through every entry point (typed
//! helpers, the `Allocator` methods, views, scopes, guards, checkpoints), and the arena's rules
//! (roll-back of the last block, in-place growth, `grow_zeroed`, bad layouts) hold unchanged for
//! the rounded sizes. The exact `used_bytes` of random operation sequences at minimum alignment 8
//! is checked by the model in tests/model/ (`allocator_model_min_align_8`).
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use arena_pool::allocator_api2::alloc::{Allocator, Global, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, ArenaRef, BumpAlloc};
use common::Counting;

fn addr<T: ?Sized>(p: *const T) -> usize {
    p.cast::<u8>() as usize
}

/// Places values of sizes 1, 2, 3, 4, 8 and 12 bytes (alignments 1 to 8) with the typed helpers
/// and checks that each starts at a multiple of `M` right after the previous one rounded up.
fn typed_helpers_round_to<const M: usize>() {
    let arena = Arena::<Global, M>::with_min_align();
    let a = addr(arena.alloc(1u8));
    let b = addr(arena.alloc(2u16));
    let c = addr(arena.alloc_slice_copy(&[3u8; 3]));
    let d = addr(arena.alloc(4u32));
    let e = addr(arena.alloc(5u64));
    let f = addr(arena.alloc_str("twelve bytes"));
    for (x, align) in [(a, 1), (b, 2), (c, 1), (d, 4), (e, 8), (f, 1)] {
        assert_eq!(
            x % M.max(align),
            0,
            "M = {M}: a block of alignment {align} at {x:#x}"
        );
    }
    // Each block starts right after the previous one's size rounded up to `M`, at the next
    // multiple of its own alignment (and of `M`).
    let next = |prev: usize, size: usize, align: usize| {
        (prev + size.next_multiple_of(M)).next_multiple_of(align.max(M))
    };
    assert_eq!(b, next(a, 1, 2));
    assert_eq!(c, next(b, 2, 1));
    assert_eq!(d, next(c, 3, 4));
    assert_eq!(e, next(d, 4, 8));
    assert_eq!(f, next(e, 8, 1));
    // Each block counts its size rounded up to `M`, and the padding an alignment needs.
    assert_eq!(arena.used_bytes(), f - a + 12usize.next_multiple_of(M));
}

#[test]
fn typed_helpers_place_every_block_at_a_multiple_of_the_minimum() {
    typed_helpers_round_to::<1>();
    typed_helpers_round_to::<2>();
    typed_helpers_round_to::<4>();
    typed_helpers_round_to::<8>();
    typed_helpers_round_to::<16>();
}

#[test]
fn a_minimum_alignment_of_one_rounds_nothing() {
    let arena = Arena::new();
    let a = addr(arena.alloc(1u8));
    let b = addr(arena.alloc(2u8));
    assert_eq!(b - a, 1);
    let one: Arena<Global, 1> = Arena::with_min_align();
    let a = addr(one.alloc(1u8));
    let b = addr(one.alloc(2u8));
    assert_eq!(b - a, 1);
}

#[test]
fn the_allocator_methods_round_and_roll_back_the_last_block() {
    let arena = Arena::<Global, 8>::with_min_align();
    let layout = Layout::from_size_align(3, 1).unwrap();
    let p = arena.allocate(layout).unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(addr(p.as_ptr()) % 8, 0);
    assert_eq!(arena.used_bytes(), 8);
    let q = arena.allocate(layout).unwrap();
    assert_eq!(addr(q.as_ptr()) - addr(p.as_ptr()), 8);
    // SAFETY: `q` is the last block, allocated with `layout`.
    unsafe { arena.deallocate(q.cast(), layout) };
    assert_eq!(
        arena.used_bytes(),
        8,
        "freeing the last block rolls back its 8 bytes"
    );
    // Grow in place from 3 to 13 bytes: the block takes 16.
    let grown = Layout::from_size_align(13, 1).unwrap();
    // SAFETY: `p` is live with `layout`, and 13 >= 3.
    let g = unsafe { arena.grow(p.cast(), layout, grown) }.unwrap();
    assert_eq!(
        g.cast::<u8>(),
        p.cast::<u8>(),
        "the last block grows in place"
    );
    assert_eq!(arena.used_bytes(), 16);
    // Shrink in place to 1 byte: the block takes 8 again.
    let small = Layout::from_size_align(1, 1).unwrap();
    // SAFETY: `g` is live with `grown`, and 1 <= 13.
    let s = unsafe { arena.shrink(g.cast(), grown, small) }.unwrap();
    assert_eq!(s.cast::<u8>(), p.cast::<u8>());
    assert_eq!(arena.used_bytes(), 8);
    // SAFETY: `s` is live with `small`.
    unsafe { arena.deallocate(s.cast(), small) };
    assert_eq!(arena.used_bytes(), 0);
}

#[test]
fn grow_zeroed_zeroes_the_padding_of_the_rounded_block_too() {
    let mut arena = Arena::<Global, 16>::with_min_align();
    // A first cycle leaves non-zero bytes in the chunk.
    arena.alloc_slice_fill_copy(64, 0xAAu8);
    arena.reset();
    let old = Layout::from_size_align(3, 1).unwrap();
    let p = arena.allocate(old).unwrap().cast::<u8>();
    // SAFETY: the block has 3 writable bytes.
    unsafe { p.write_bytes(1, 3) };
    // In place (the last block), and elsewhere (after another block).
    for moved in [false, true] {
        let (p, old) = if moved {
            let p = arena.allocate(old).unwrap().cast::<u8>();
            // SAFETY: as above.
            unsafe { p.write_bytes(1, 3) };
            arena.alloc(0u8);
            (p, old)
        } else {
            (p, old)
        };
        let new = Layout::from_size_align(40, 1).unwrap();
        // SAFETY: `p` is live with `old`, and 40 >= 3.
        let g = unsafe { arena.grow_zeroed(p, old, new) }
            .unwrap()
            .cast::<u8>();
        // SAFETY: the grown block has 40 readable bytes.
        let bytes = unsafe { core::slice::from_raw_parts(g.as_ptr(), 40) };
        assert_eq!(&bytes[..3], &[1, 1, 1], "moved: {moved}");
        assert!(
            bytes[3..].iter().all(|&b| b == 0),
            "moved: {moved}: {bytes:?}"
        );
    }
}

#[test]
fn collections_work_on_a_minimum_aligned_arena() {
    let mut arena = Arena::<Global, 8>::with_min_align();
    {
        let mut v = Vec::new_in(&arena);
        v.extend(0..1000u16);
        v.shrink_to_fit();
        assert_eq!(v.iter().map(|&x| u32::from(x)).sum::<u32>(), 499_500);
        let mut s = Vec::new_in(&arena);
        s.extend_from_slice(b"abc");
        let b = Box::new_in([7u8; 5], &arena);
        assert_eq!(addr(&*b) % 8, 0);
        let mut map = hashbrown::HashMap::new_in(&arena);
        for i in 0..500u32 {
            map.insert(i, i * 2);
        }
        assert_eq!(map[&250], 500);
        map.retain(|k, _| k % 2 == 0);
        map.shrink_to_fit();
        assert_eq!(map.len(), 250);
    }
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
}

#[test]
fn scopes_keep_the_minimum_alignment_and_restore_the_position() {
    let mut arena = Arena::<Global, 8>::with_min_align();
    arena.alloc(1u8);
    let before = arena.used_bytes();
    assert_eq!(before, 8);
    let inner = arena.with_scope(|scope: &mut ArenaRef<'_, 8>| {
        let a = addr(scope.alloc(2u8));
        assert_eq!(a % 8, 0);
        let nested = scope.with_scope(|s| addr(s.alloc(3u8)) % 8);
        let mut v = Vec::new_in(&*scope);
        v.extend_from_slice(&[1u8, 2, 3]);
        assert_eq!(addr(v.as_ptr()) % 8, 0);
        nested + addr(scope.alloc(4u16)) % 8
    });
    assert_eq!(inner, 0);
    assert_eq!(
        arena.used_bytes(),
        before,
        "the scope's exit restores the position"
    );
    {
        let mut guard = arena.scope_guard();
        assert_eq!(addr(guard.alloc(5u8)) % 8, 0);
        let scope = guard.scope();
        assert_eq!(addr(scope.alloc(6u8)) % 8, 0);
    }
    assert_eq!(
        arena.used_bytes(),
        before,
        "the guard's drop restores the position"
    );
    let cp = arena.checkpoint();
    arena.alloc_slice_fill_copy(9, 1u8);
    // SAFETY: `cp` is from this arena, and nothing allocated after it is used again.
    unsafe { arena.reset_to(cp) };
    assert_eq!(arena.used_bytes(), before);
    // The parent goes on at a multiple of 8.
    assert_eq!(addr(arena.alloc(7u8)) % 8, 0);
}

#[test]
fn a_scope_entered_on_a_full_chunk_keeps_the_minimum_alignment() {
    // Fill the first chunk to its last byte, so that entering a scope has no room to step over
    // the parent's last block: the position parks and the scope's blocks go to a new chunk.
    let mut arena = Arena::<Global, 16>::with_min_align_and_capacity(256);
    let room = arena.chunk_capacity();
    assert_eq!(room % 16, 0);
    arena.alloc_slice_fill_copy(room, 0u8);
    assert_eq!(arena.chunk_capacity(), 0, "no room left in the chunk");
    let before = arena.used_bytes();
    arena.with_scope(|scope| {
        for i in 0..100u8 {
            assert_eq!(addr(scope.alloc(i)) % 16, 0);
        }
    });
    assert_eq!(arena.used_bytes(), before);
    assert_eq!(addr(arena.alloc(1u8)) % 16, 0);
}

#[test]
fn generic_code_and_views_see_the_minimum_alignment() {
    fn place_three<X: BumpAlloc + ?Sized>(x: &X) -> [usize; 3] {
        [addr(x.alloc(1u8)), addr(x.alloc(2u8)), addr(x.alloc(3u8))]
    }
    let arena = Arena::<Global, 4>::with_min_align();
    let [a, b, c] = place_three(&arena);
    assert_eq!((b - a, c - b), (4, 4));
    let view: &ArenaRef<'_, 4> = (&arena).into();
    let [a, b, _] = place_three(view);
    assert_eq!(b - a, 4);
    assert_eq!(a % 4, 0);
    assert_eq!(addr(arena.as_arena_ref().alloc(9u8)) % 4, 0);
}

#[test]
fn the_fill_and_format_helpers_round_what_they_keep() {
    let arena = Arena::<Global, 8>::with_min_align();
    let s = arena.alloc_fmt(format_args!("{}-{}", 12, "abc"));
    assert_eq!(s, "12-abc");
    let used = arena.used_bytes();
    assert_eq!(used % 8, 0);
    let slice = arena.alloc_slice_fill_iter((0..5u8).map(|x| x * 3));
    assert_eq!(slice, &[0, 3, 6, 9, 12]);
    assert_eq!(arena.used_bytes(), used + 8);
    let mut v = Vec::new_in(&arena);
    v.extend_from_slice(b"hello");
    let kept = Arena::into_slice(v);
    assert_eq!(kept, b"hello");
    assert_eq!(addr(arena.alloc(0u8)) % 8, 0);
}

#[test]
fn bad_layouts_are_refused_at_every_minimum_alignment() {
    let arena = Arena::<Global, 16>::with_min_align();
    // Rounding this size up to 16 passes what a `Layout` allows: refused, not wrapped.
    let huge = Layout::from_size_align(isize::MAX as usize - 3, 1).unwrap();
    assert!(arena.allocate(huge).is_err());
    assert!(arena.try_alloc_layout(huge).is_err());
    let p = arena.allocate(Layout::new::<u8>()).unwrap().cast::<u8>();
    // SAFETY: `p` is live with the layout of a `u8`; the new size is at least the old.
    assert!(unsafe { arena.grow(p, Layout::new::<u8>(), huge) }.is_err());
    // The arena is unchanged and serves the next request.
    assert_eq!(arena.used_bytes(), 16);
    assert_eq!(addr(arena.alloc(1u8)) % 16, 0);
    // Zero-sized blocks take nothing.
    let before = arena.used_bytes();
    arena.alloc(());
    arena.alloc_slice_copy::<u64>(&[]);
    let z = arena
        .allocate(Layout::from_size_align(0, 4).unwrap())
        .unwrap();
    assert_eq!(addr(z.as_ptr()) % 4, 0);
    assert_eq!(arena.used_bytes(), before);
}

#[test]
fn constructors_on_a_backing_allocator_give_everything_back() {
    let backing = Counting::default();
    {
        let arena: Arena<&Counting, 8> = Arena::with_min_align_in(&backing);
        assert_eq!(
            backing.calls(),
            0,
            "allocates nothing until the first allocation"
        );
        arena.alloc_slice_fill_copy(10_000, 1u8);
        let with_capacity = Arena::<&Counting, 8>::with_min_align_and_capacity_in(1000, &backing);
        assert!(with_capacity.chunk_capacity() >= 1000);
        let fallible = Arena::<&Counting, 2>::try_with_min_align_and_capacity_in(100, &backing);
        assert!(fallible.unwrap().chunk_capacity() >= 100);
        assert!(
            Arena::<&Counting, 8>::try_with_min_align_and_capacity_in(usize::MAX, &backing)
                .is_err()
        );
    }
    assert_eq!(backing.live.get(), 0);
    let default: Arena<Global, 16> = Arena::default();
    assert_eq!(addr(default.alloc(1u8)) % 16, 0);
    let global = Arena::<Global, 8>::try_with_min_align_and_capacity(64).unwrap();
    assert!(global.chunk_capacity() >= 64);
}
