//! With `--cfg arena_pool_asan` (and `-Zsanitizer=address`, as `.ci/run`'s ASan step builds), an
//! arena's free bytes are poisoned: these tests ask the ASan runtime which bytes are.
#![cfg(arena_pool_asan)]
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, SyncArena};

unsafe extern "C" {
    fn __asan_address_is_poisoned(addr: *const u8) -> i32;
}

fn poisoned(p: *const u8) -> bool {
    // SAFETY: the runtime only reads its shadow memory for the address.
    unsafe { __asan_address_is_poisoned(p) != 0 }
}

/// Whether every byte of `[p, p + len)` is usable.
fn usable(p: NonNull<u8>, len: usize) -> bool {
    (0..len).all(|i| !poisoned(p.as_ptr().wrapping_add(i)))
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

#[test]
fn a_block_is_usable_and_the_bytes_after_it_are_poisoned() {
    let arena = Arena::with_capacity(4096);
    let p = arena.allocate(layout(24, 8)).unwrap().cast::<u8>();
    assert!(usable(p, 24));
    assert!(
        poisoned(p.as_ptr().wrapping_add(24)),
        "the byte past the block"
    );
    let q = arena.allocate(layout(8, 8)).unwrap().cast::<u8>();
    assert!(usable(q, 8));
    assert!(usable(p, 24), "the first block is still usable");
}

#[test]
fn freed_blocks_are_poisoned_and_reused_ones_usable_again() {
    let arena = Arena::with_capacity(4096);
    let l = layout(32, 8);
    let a = arena.allocate(l).unwrap().cast::<u8>();
    let b = arena.allocate(l).unwrap().cast::<u8>();
    // SAFETY: `a` is live with `l` (not the last block: it stays in place).
    unsafe { arena.deallocate(a, l) };
    assert!(poisoned(a.as_ptr()), "a freed block that is not last");
    assert!(usable(b, 32));
    // SAFETY: `b` is the last block.
    unsafe { arena.deallocate(b, l) };
    assert!(poisoned(b.as_ptr()), "a rolled-back block");
    let c = arena.allocate(l).unwrap().cast::<u8>();
    assert_eq!(c, b, "the rolled-back room is handed out again");
    assert!(usable(c, 32));
}

#[test]
fn grow_and_shrink_in_place_move_the_boundary() {
    let arena = Arena::with_capacity(4096);
    let p = arena.allocate(layout(16, 8)).unwrap().cast::<u8>();
    // SAFETY: `p` is the last block, live with the old layout.
    let g = unsafe { arena.grow(p, layout(16, 8), layout(64, 8)) }
        .unwrap()
        .cast::<u8>();
    assert_eq!(g, p, "in place");
    assert!(usable(p, 64));
    assert!(poisoned(p.as_ptr().wrapping_add(64)));
    // SAFETY: as above.
    let s = unsafe { arena.shrink(p, layout(64, 8), layout(8, 8)) }
        .unwrap()
        .cast::<u8>();
    assert_eq!(s, p);
    assert!(usable(p, 8));
    assert!(poisoned(p.as_ptr().wrapping_add(8)), "the tail given back");
}

#[test]
fn reset_and_scope_exit_poison_what_they_free() {
    let mut arena = Arena::new();
    let kept = arena.alloc([7u8; 16]) as *const [u8; 16] as *const u8;
    let mut inner = core::ptr::null();
    arena.with_scope(|s| {
        // Enough to spill into further chunks.
        for _ in 0..100 {
            inner = s.alloc_slice_fill_copy(1000, 1u8).as_ptr();
        }
        assert!(!poisoned(inner));
    });
    assert!(poisoned(inner), "a block of the ended scope");
    assert!(
        usable(NonNull::new(kept.cast_mut()).unwrap(), 16),
        "the parent's block"
    );
    arena.reset();
    assert!(poisoned(kept), "after reset");
    let v = arena.alloc_slice_fill_copy(100, 3u8);
    assert!(usable(NonNull::from(&mut v[0]), 100));
}

#[test]
fn a_vec_can_use_its_capacity_and_nothing_beyond() {
    let arena = Arena::with_capacity(4096);
    let mut v: Vec<u8, _> = Vec::with_capacity_in(10, &arena);
    v.extend_from_slice(b"abc");
    let base = NonNull::new(v.as_mut_ptr()).unwrap();
    assert!(usable(base, v.capacity()));
    assert!(poisoned(base.as_ptr().wrapping_add(v.capacity())));
    for i in 0..1000u32 {
        v.push(i as u8);
    }
    let base = NonNull::new(v.as_mut_ptr()).unwrap();
    assert!(usable(base, v.capacity()));
}

#[test]
fn sync_arena_memory_is_usable_again_after_handles_and_reset() {
    let mut shared = SyncArena::new();
    let piece_block;
    {
        let local = shared.local();
        let a = local.alloc_slice_fill_copy(64, 1u8);
        piece_block = a.as_ptr();
        let b = local.alloc(5u64) as *const u64 as *const u8;
        // The piece's free bytes after `b` are poisoned while the handle lives.
        assert!(poisoned(b.wrapping_add(8)));
    }
    // The handle's unused tail went back to the shared arena, usable by its shared path.
    let s = shared.alloc_slice_copy(&[9u8; 32]);
    assert!(usable(NonNull::from(&mut s[0]), 32));
    assert!(
        !poisoned(piece_block),
        "a dropped handle's blocks stay valid"
    );
    shared.reset();
    let t = shared.alloc_slice_copy(&[1u8; 4000]);
    assert!(usable(NonNull::from(&mut t[0]), 4000));
}
