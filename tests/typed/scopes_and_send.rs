//! Scopes (each exit restores the position, also when the closure unwinds; chunks taken in a
//! scope are kept and reused) and the `Send` bound.

use crate::boom;
use arena_pool::{Arena, ArenaRef};
use std::panic::{AssertUnwindSafe, catch_unwind};

// ----- scopes -----

#[test]
fn with_scope_on_an_arena_ref_mut_compiles_and_passes() {
    let mut arena = Arena::new();
    let arena = arena.as_arena_ref_mut();
    let a = arena.alloc(1u32);
    arena.with_scope(|scope: &mut ArenaRef| {
        let temporary = scope.alloc(2u32);
        assert_eq!(*temporary, 2);
    });
    assert_eq!(*a, 1);
}

#[test]
fn with_scope_restores_used_bytes_on_return() {
    let mut arena = Arena::new();
    let root = arena.as_arena_ref_mut();
    let a = root.alloc_slice_fill_copy(100, 1u8);
    let before = root.used_bytes();
    let n = if cfg!(miri) { 2000 } else { 20_000 };
    let sum = root.with_scope(|s| {
        // Entering steps one byte past the parent's last block.
        assert_eq!(s.used_bytes(), before + 1);
        let v = s.alloc_slice_fill_with(n, |i| i as u64);
        s.alloc_str("temporary");
        // In the chunks, or (160 000 bytes natively) a large block, counted apart.
        assert!(s.used_bytes() + s.stats().large_bytes >= before + n * 8);
        v.iter().sum::<u64>()
    });
    assert_eq!(sum, (n as u64) * (n as u64 - 1) / 2);
    assert_eq!(root.used_bytes(), before);
    assert!(a.iter().all(|&b| b == 1));

    // Also from a fresh arena (the scope takes the first chunk) and through `Arena::with_scope`.
    let mut fresh = Arena::new();
    fresh.with_scope(|s| {
        s.alloc_slice_fill_copy(n, 2u8);
    });
    assert_eq!(fresh.used_bytes(), 0);
    assert_eq!(*fresh.alloc(3u8), 3);
    assert_eq!(fresh.used_bytes(), 1);
}

#[test]
fn with_scope_restores_used_bytes_when_the_closure_panics() {
    let mut arena = Arena::new();
    let root = arena.as_arena_ref_mut();
    let a = root.alloc(5u32);
    let before = root.used_bytes();
    let n = if cfg!(miri) { 2000 } else { 10_000 };
    let r = catch_unwind(AssertUnwindSafe(|| {
        root.with_scope(|s| {
            s.alloc_slice_fill_copy(n, 9u8);
            s.with_scope(|inner| {
                inner.alloc_slice_fill_copy(n, 8u8);
                boom("inside a nested scope");
            });
        });
    }));
    assert!(r.is_err());
    assert_eq!(root.used_bytes(), before);
    assert_eq!(*a, 5);
    let b = root.alloc(6u32);
    assert_eq!(root.used_bytes(), before + 4);
    assert_eq!((*a, *b), (5, 6));
}

#[test]
fn nested_scopes_restore_each_level() {
    let mut arena = Arena::new();
    let root = arena.as_arena_ref_mut();
    let a = root.alloc_slice_fill_copy(100, 1u8);
    let u0 = root.used_bytes();
    root.with_scope(|s1| {
        let b = s1.alloc_slice_fill_copy(1000, 2u8);
        let u1 = s1.used_bytes();
        s1.with_scope(|s2| {
            let c = s2.alloc_slice_fill_copy(3000, 3u8);
            let u2 = s2.used_bytes();
            s2.with_scope(|s3| {
                let d = s3.alloc_slice_fill_copy(5000, 4u8);
                assert!(d.iter().all(|&x| x == 4));
            });
            assert_eq!(s2.used_bytes(), u2);
            // The level below reuses the room the inner scope gave back.
            let e = s2.alloc_slice_fill_copy(5000, 5u8);
            assert!(e.iter().all(|&x| x == 5));
            assert!(c.iter().all(|&x| x == 3));
        });
        assert_eq!(s1.used_bytes(), u1);
        assert!(b.iter().all(|&x| x == 2));
        let f = s1.alloc_slice_fill_copy(10, 6u8);
        assert!(f.iter().all(|&x| x == 6));
    });
    assert_eq!(root.used_bytes(), u0);
    assert!(a.iter().all(|&x| x == 1));
}

#[test]
fn chunks_taken_in_a_scope_are_kept_and_reused() {
    let mut arena = Arena::new();
    arena.alloc(1u8);
    let held0 = arena.allocated_bytes();
    // Below the large-block threshold (64 KiB): a block that needs a chunk of its own.
    let big = if cfg!(miri) { 4096 } else { 60 * 1024 };
    let held_inside = arena.with_scope(|s| {
        let v = s.alloc_slice_fill_copy(big, 1u8);
        assert_eq!(v.len(), big);
        s.allocated_bytes()
    });
    assert!(
        held_inside > held0,
        "the scope should have needed a new chunk"
    );
    assert_eq!(
        arena.allocated_bytes(),
        held_inside,
        "the scope's chunk was not kept"
    );
    let chunks = arena.stats().chunks;
    assert_eq!(arena.used_bytes(), 1);

    // A second identical scope reuses the kept chunk.
    let held_second = arena.with_scope(|s| {
        s.alloc_slice_fill_copy(big, 2u8);
        s.allocated_bytes()
    });
    assert_eq!(held_second, held_inside);
    assert_eq!(arena.allocated_bytes(), held_inside);
    assert_eq!(arena.stats().chunks, chunks);

    // And so does the parent.
    let v = arena.alloc_slice_fill_copy(big, 3u8);
    assert!(v.iter().all(|&b| b == 3));
    assert_eq!(arena.allocated_bytes(), held_inside);
    assert_eq!(arena.stats().chunks, chunks);

    // The same when the scope takes the arena's very first chunks.
    let mut fresh = Arena::new();
    let work = |a: &ArenaRef<'_>| {
        for i in 0..6 {
            let s = a.alloc_slice_fill_copy(100 << i, i as u8);
            assert!(s.iter().all(|&b| b == i as u8));
        }
        a.allocated_bytes()
    };
    let held = fresh.with_scope(|s| work(s));
    assert!(
        fresh.stats().chunks > 1,
        "the scope should have taken several chunks"
    );
    assert_eq!(fresh.used_bytes(), 0);
    assert_eq!(fresh.allocated_bytes(), held);
    let chunks = fresh.stats().chunks;
    assert_eq!(
        work(fresh.as_arena_ref()),
        held,
        "the parent did not reuse the chunks"
    );
    assert_eq!(fresh.stats().chunks, chunks);
}

// ----- thread bounds -----

#[test]
fn arena_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Arena>();
    assert_send::<Arena<arena_pool::allocator_api2::alloc::Global>>();

    let arena = Arena::new();
    arena.alloc_slice_fill_copy(100, 7u8);
    let used = std::thread::spawn(move || {
        let mut arena = arena;
        assert_eq!(*arena.alloc(5u32), 5);
        let used = arena.used_bytes();
        arena.reset();
        used
    })
    .join()
    .unwrap();
    assert_eq!(used, 104);
}
