//! Scopes: `with_scope`, the scope guard and raw checkpoints restore the position exactly, keep
//! the chunks they took for the parent, and leave the parent's blocks alone.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use arena_pool::Arena;
use arena_pool::allocator_api2::vec::Vec;
use common::Counting;

#[test]
fn scope_on_a_fresh_arena_keeps_its_chunks_reachable() {
    // A scope entered before the arena has any chunk: the chunks it takes must stay in the
    // arena's list (reused by the parent, freed on drop), not be orphaned.
    let backing = Counting::default();
    {
        let mut arena = Arena::new_in(&backing);
        arena.with_scope(|scope| {
            scope.alloc_slice_fill_copy(10_000, 1u8);
        });
        assert_eq!(arena.used_bytes(), 0);
        let held = arena.allocated_bytes();
        assert!(held >= 10_000);
        let allocs = backing.allocs.get();
        arena.alloc_slice_fill_copy(10_000, 2u8);
        assert_eq!(
            backing.allocs.get(),
            allocs,
            "the parent reuses the scope's chunk"
        );
        assert_eq!(arena.allocated_bytes(), held);
    }
    assert_eq!(backing.live.get(), 0, "every chunk is freed on drop");
    assert_eq!(backing.allocs.get(), backing.frees.get());
}

#[test]
fn a_thousand_scopes_stop_calling_the_backing_allocator() {
    let backing = Counting::default();
    let mut arena = Arena::new_in(&backing);
    let keep = arena.alloc(7u64) as *const u64;
    let rounds = if cfg!(miri) { 60 } else { 1_000 };
    let mut calls_after_warmup = None;
    for round in 0..rounds {
        let before = arena.used_bytes();
        arena.with_scope(|scope| {
            let mut v = Vec::new_in(&*scope);
            for i in 0..(round % 7 + 1) * 50 {
                v.push(i as u32);
            }
            scope.alloc_slice_fill_with(round % 13 * 40, |i| i as u16);
            assert_eq!(v.len(), (round % 7 + 1) * 50);
        });
        assert_eq!(arena.used_bytes(), before);
        if round == 20 {
            calls_after_warmup = Some(backing.calls());
        }
    }
    assert_eq!(Some(backing.calls()), calls_after_warmup);
    // SAFETY: `keep` was allocated before every scope, so no scope rolled it back.
    assert_eq!(unsafe { *keep }, 7);
}

#[test]
fn scope_guard_restores_on_drop() {
    let mut arena = Arena::new();
    let parent = arena.as_arena_ref_mut();
    let kept = parent.alloc_str("parent");
    let before = parent.used_bytes();
    let held_before = parent.allocated_bytes();
    // Several chunks' worth (fewer under Miri, which fills a byte at a time).
    let len = if cfg!(miri) { 8_000 } else { 50_000 };
    {
        let mut guard = parent.scope_guard();
        let scope = guard.scope();
        scope.alloc_slice_fill_copy(len, 0xAAu8);
        let mut inner = scope.scope_guard();
        inner.scope().alloc(1u128);
    }
    assert_eq!(parent.used_bytes(), before);
    assert!(
        parent.allocated_bytes() > held_before,
        "the scope's chunks are kept"
    );
    let held = parent.allocated_bytes();
    parent.alloc_slice_fill_copy(len, 0u8);
    assert_eq!(parent.allocated_bytes(), held, "and reused by the parent");
    assert_eq!(kept, "parent");
}

#[test]
fn scope_guard_restores_when_unwinding() {
    let mut arena = Arena::new();
    arena.alloc(1u8);
    let before = arena.used_bytes();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut guard = arena.scope_guard();
        guard.scope().alloc_slice_fill_copy(1000, 3u32);
        panic!("inside the guarded scope");
    }));
    assert!(result.is_err());
    assert_eq!(arena.used_bytes(), before);
}

#[test]
fn with_scope_restores_when_unwinding() {
    let mut arena = Arena::new();
    arena.alloc(1u8);
    let before = arena.used_bytes();
    let result = catch_unwind(AssertUnwindSafe(|| {
        arena.with_scope(|scope| {
            scope.alloc_slice_fill_copy(1000, 3u32);
            scope.with_scope(|inner| {
                inner.alloc(5u64);
                panic!("two scopes deep");
            })
        })
    }));
    assert!(result.is_err());
    assert_eq!(arena.used_bytes(), before);
    assert_eq!(*arena.alloc(9u8), 9);
}

#[test]
fn forgotten_guard_is_safe_and_only_keeps_memory_used() {
    let mut arena = Arena::new();
    let a = arena.alloc(1u32) as *const u32;
    {
        let mut guard = arena.scope_guard();
        guard.scope().alloc(2u32);
        core::mem::forget(guard);
    }
    // 4 bytes for `a`, the byte stepped over at the scope's entry, padding to 4, and 4 bytes.
    assert_eq!(arena.used_bytes(), 12);
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
    let _ = a;
}

#[test]
fn checkpoint_reset_to_frees_what_came_after() {
    let mut arena = Arena::new();
    let a = arena.alloc(11u32) as *const u32;
    let cp = arena.checkpoint();
    let used = arena.used_bytes();
    for i in 0..100 {
        arena.alloc_slice_fill_copy(100 + i, i as u8);
    }
    assert!(arena.used_bytes() > used + 10_000);
    let held = arena.allocated_bytes();
    // SAFETY: `cp` was taken from this arena outside any scope, nothing reset it since, and the
    // slices allocated after it are not used again.
    unsafe { arena.reset_to(cp) };
    assert_eq!(arena.used_bytes(), used);
    assert_eq!(arena.allocated_bytes(), held, "chunks are kept");
    // SAFETY: `a` was allocated before the checkpoint.
    assert_eq!(unsafe { *a }, 11);
    arena.alloc_slice_fill_copy(5000, 0u8);
    assert_eq!(arena.allocated_bytes(), held, "and reused");
}

#[test]
fn checkpoint_inside_a_scope() {
    let mut arena = Arena::new();
    arena.with_scope(|scope| {
        let x = scope.alloc(1u64) as *const u64;
        let cp = scope.checkpoint();
        scope.alloc_slice_fill_copy(3000, 0u8);
        // SAFETY: `cp` is from this scope and what followed it is not used again.
        unsafe { scope.reset_to(cp) };
        assert_eq!(scope.used_bytes(), 8);
        // SAFETY: allocated before the checkpoint.
        assert_eq!(unsafe { *x }, 1);
    });
    assert_eq!(arena.used_bytes(), 0);
}

#[test]
fn a_parent_block_is_never_rolled_back_or_grown_in_place_from_a_child() {
    use arena_pool::allocator_api2::alloc::{Allocator, Layout};
    let small = Layout::new::<[u8; 16]>();
    let big = Layout::new::<[u8; 64]>();
    let mut arena = Arena::new();
    let live = arena.alloc([0x5Au8; 32]) as *const [u8; 32];
    for op in ["deallocate", "grow", "shrink"] {
        // The parent's last block ends exactly where the child starts: by address it looks like
        // the child's last block.
        let block = arena.allocate(small).unwrap().cast::<u8>();
        let before = arena.used_bytes();
        arena.with_scope(|scope| {
            let at_entry = scope.used_bytes();
            // SAFETY: `block` is a live block of this arena with layout `small`; each operation
            // gives it up, and it is not used afterwards.
            unsafe {
                match op {
                    "deallocate" => scope.deallocate(block, small),
                    "grow" => {
                        let grown = scope.grow(block, small, big).unwrap().cast::<u8>();
                        assert_ne!(grown, block, "a parent's block must not grow in place");
                    }
                    _ => {
                        let shrunk = scope.shrink(block, small, Layout::new::<[u8; 4]>());
                        assert_eq!(shrunk.unwrap().cast::<u8>(), block);
                    }
                }
            }
            if op != "grow" {
                assert_eq!(
                    scope.used_bytes(),
                    at_entry,
                    "{op}: the position did not move"
                );
            }
            scope.alloc_slice_fill_copy(100, 0x11u8);
        });
        assert_eq!(
            arena.used_bytes(),
            before,
            "{op}: the scope restored its entry position"
        );
    }
    // SAFETY: `live` was allocated before every scope and never given up.
    assert_eq!(unsafe { *live }, [0x5A; 32]);
}

// ----- SyncArena: scopes and checkpoints through `&mut self` -----

#[test]
fn a_sync_arena_scope_frees_what_threads_and_handles_allocated_in_it() {
    use arena_pool::SyncArena;
    let n = if cfg!(miri) { 50 } else { 2_000 };
    let mut arena = SyncArena::new();
    let before: &mut u64 = arena.alloc(7);
    let before = before as *mut u64;
    let used = arena.used_bytes();
    let (chunks, held) = (
        arena.stats().chunks,
        arena.stats().allocated_bytes_including_metadata,
    );
    let total = arena.with_scope(|scope| {
        std::thread::scope(|s| {
            let workers: std::vec::Vec<_> = (0..2u64)
                .map(|t| {
                    s.spawn(move || {
                        // The shared path, a handle, and a large block of each kind.
                        let a = scope.alloc_slice_fill_with(n, |i| t + i as u64);
                        let local = scope.local();
                        let b = local.alloc_slice_fill_with(n, |i| i as u64);
                        let mut big: Vec<u8, _> = Vec::with_capacity_in(70_000, &local);
                        big.push(1);
                        let mut shared_big: Vec<u8, _> = Vec::with_capacity_in(70_000, scope);
                        shared_big.push(2);
                        core::mem::forget((big, shared_big));
                        a.iter().sum::<u64>() + b.iter().sum::<u64>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
        })
    });
    let each = (n * (n - 1) / 2) as u64;
    assert_eq!(total, 4 * each + n as u64);
    let s = arena.stats();
    assert_eq!(arena.used_bytes(), used, "the scope's blocks are freed");
    assert_eq!(s.large_blocks, 0, "the scope's large blocks went back");
    assert!(s.chunks >= chunks);
    // SAFETY: allocated before the scope, which freed only what was allocated in it.
    assert_eq!(unsafe { *before }, 7);
    // The chunks the scope took are spares now: the same work again takes no new memory.
    let held_after = s.allocated_bytes_including_metadata;
    assert!(held_after >= held);
    arena.with_scope(|scope| {
        scope.alloc_slice_fill_copy(n, 1u64);
    });
    assert_eq!(arena.stats().allocated_bytes_including_metadata, held_after);
}

#[test]
fn a_sync_arena_scope_guard_and_checkpoint_restore_the_position() {
    use arena_pool::SyncArena;
    let mut arena = SyncArena::new();
    arena.alloc_slice_fill_copy(10, 1u8);
    let used = arena.used_bytes();
    {
        let guard = arena.scope_guard();
        let a = guard.arena().alloc_slice_fill_copy(1000, 2u8);
        let b = guard.arena().alloc_str("in the scope");
        assert_eq!((a[999], &*b), (2, "in the scope"));
    }
    assert_eq!(arena.used_bytes(), used);
    let cp = arena.checkpoint();
    for _ in 0..100 {
        arena.alloc_slice_fill_copy(100, 3u8);
    }
    // SAFETY: `cp` is from this arena; nothing allocated after it is used again.
    unsafe { arena.reset_to(cp) };
    assert_eq!(arena.used_bytes(), used);
    // A scope on an arena with no chunk yet.
    let mut fresh = SyncArena::new();
    fresh.with_scope(|s| {
        s.alloc_slice_fill_copy(5000, 4u8);
    });
    assert_eq!(fresh.used_bytes(), 0);
    assert_eq!(*fresh.alloc(5u8), 5);
}

#[test]
#[should_panic(expected = "the checkpoint is an Arena's")]
fn a_sync_arena_refuses_an_arenas_checkpoint() {
    let arena = Arena::new();
    let cp = arena.checkpoint();
    let mut shared = arena_pool::SyncArena::new();
    // SAFETY: refused before anything happens.
    unsafe { shared.reset_to(cp) };
}
