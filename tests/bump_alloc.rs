//! The typed API as one trait, `BumpAlloc`: generic code over every arena type, the lifetime each
//! type's references keep, the conversions between `Arena`, `ArenaRef` and `LocalArena`, a
//! `Vec` or `String` turned into a slice or `str` that outlives its handle (`into_slice`,
//! `into_str`), the fallible fills (`alloc_slice_try_fill_with`, `alloc_slice_try_fill_iter` and
//! their `try_` forms), and allocating through a scope guard.
//!
//! Runs under Miri (both borrow models): drop counters check that nothing is dropped twice or
//! leaked, and the sizes are small.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::cell::Cell;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arena_pool::allocator_api2::vec::Vec;
use arena_pool::collections::String;
use arena_pool::{
    AllocError, AllocOrInitError, Arena, ArenaRef, BumpAlloc, LocalArena, SyncArena, format_in,
};

thread_local! {
    /// Drops of `Counted` values on this thread.
    static DROPS: Cell<usize> = const { Cell::new(0) };
}

fn drops() -> usize {
    DROPS.with(Cell::get)
}

/// Counts its drops in `DROPS`.
#[derive(Debug, PartialEq)]
struct Counted(usize);

impl Drop for Counted {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

/// A zero-sized value that counts its drops in `DROPS`.
#[derive(Debug)]
struct CountedZst;

impl Drop for CountedZst {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

/// An iterator of `Ok(0), Ok(1), …` that returns `Err(k)` at item `k` (when `k < len`) and
/// claims `hint` as its size.
struct FailAt {
    next: usize,
    len: usize,
    fail: usize,
    hint: usize,
}

impl Iterator for FailAt {
    type Item = Result<Counted, usize>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.next == self.len {
            return None;
        }
        let i = self.next;
        self.next += 1;
        Some(if i == self.fail {
            Err(i)
        } else {
            Ok(Counted(i))
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.hint, None)
    }
}

/// Many typed methods at once, through any arena: what a helper generic over the arena kinds
/// looks like. The references live as long as the borrow of `a`.
fn build<X: BumpAlloc + ?Sized>(a: &X, seed: u32) -> (&[u32], &str) {
    let x = a.alloc(seed);
    let y = a.alloc_with(|| seed + 1);
    *x += *y;
    let copied = a.alloc_slice_copy(&[*x, *y]);
    let filled = a.alloc_slice_fill_with(3, |i| i as u32 + seed);
    let from_iter = a.alloc_slice_fill_iter(copied.iter().chain(filled.iter()).copied());
    let name = a.alloc_fmt(format_args!("{seed}:{}", from_iter.len()));
    let tail: &mut [u32; 2] = a.alloc_sized_slice_fill_with(|i| i as u32 * 10);
    assert_eq!(tail, &[0, 10]);
    let s = a.alloc_str(name);
    assert!(a.try_alloc_slice_fill_default::<u64>(4).is_ok());
    (from_iter, s)
}

#[test]
fn one_generic_helper_takes_every_arena() {
    let check = |(nums, s): (&[u32], &str), seed: u32| {
        assert_eq!(nums, [2 * seed + 1, seed + 1, seed, seed + 1, seed + 2]);
        assert_eq!(s, format!("{seed}:5"));
    };
    let mut arena = Arena::new();
    check(build(&arena, 1), 1);
    check(build(arena.as_arena_ref(), 2), 2);
    arena.with_scope(|scope| check(build(scope, 3), 3));
    {
        let mut guard = arena.scope_guard();
        check(build(&guard, 4), 4);
        check(build(guard.as_arena_ref(), 5), 5);
        check(build(guard.scope(), 6), 6);
    }
    let shared = SyncArena::new();
    check(build(&shared, 7), 7);
    let mut local = shared.local();
    check(build(&local, 8), 8);
    check(build(local.as_arena_ref(), 9), 9);
    local
        .as_arena_ref_mut()
        .with_scope(|scope| check(build(scope, 10), 10));
}

#[test]
fn each_type_keeps_its_lifetime() {
    // `ArenaRef<'a>`: the references live for 'a, so the `ArenaRef` can be borrowed mutably for
    // a nested scope while they are alive.
    let mut arena = Arena::new();
    let parent = arena.as_arena_ref_mut();
    let a = parent.alloc(1u32);
    let s = parent.alloc_str("parent");
    let inner = parent.with_scope(|scope| *scope.alloc(2u32));
    *a += inner;
    assert_eq!((*a, &*s), (3, "parent"));

    // `LocalArena<'a>`: the references outlive the handle.
    let shared = SyncArena::new();
    let (n, text) = {
        let local = shared.local();
        (local.alloc(5u64), local.alloc_fmt(format_args!("{}", 6)))
    };
    *n += 1;
    assert_eq!((*n, &*text), (6, "6"));

    // The same through a helper that names the longer lifetime.
    fn word<'a>(arena: &ArenaRef<'a>) -> &'a str {
        arena.alloc_str("word")
    }
    let w = word(shared.local().as_arena_ref());
    assert_eq!(w, "word");

    // Generic code that keeps the blocks' lifetime states it (see the trait's docs).
    fn label<'s, 'r, X>(arena: &'s X, i: u32) -> &'r mut u32
    where
        X: BumpAlloc + ?Sized,
        X::Blocks<'s>: 'r,
    {
        X::alloc::<'s, 'r, u32>(arena, i)
    }
    let l = {
        let local = shared.local();
        label(&local, 9)
    };
    assert_eq!(*l, 9);
}

#[test]
fn sync_arena_has_the_whole_typed_api() {
    let arena = SyncArena::new();
    let texts: std::vec::Vec<&str> = std::thread::scope(|s| {
        let jobs: std::vec::Vec<_> = (0..2)
            .map(|t| {
                let arena = &arena;
                s.spawn(move || &*arena.alloc_fmt(format_args!("thread {t}")))
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert_eq!(texts, ["thread 0", "thread 1"]);
    let cells = arena.alloc_slice_clone(&[Cell::new(1u8), Cell::new(2)]);
    cells[1].set(7);
    assert_eq!(cells[1].get() + cells[0].get(), 8);
    assert_eq!(arena.alloc_slice_fill_iter((0..4).rev()), &[3, 2, 1, 0]);
    assert_eq!(arena.alloc_slice_fill_default::<u8>(2), &[0, 0]);
    assert_eq!(arena.alloc_sized_slice_copy(&[4u16; 3]), &[4, 4, 4]);
    let r: Result<&mut u8, &str> = arena.alloc_try_with(|| Err("no"));
    assert_eq!(r, Err("no"));
    assert_eq!(
        arena.try_alloc_fmt(format_args!("{:>3}", 1)).as_deref(),
        Ok("  1")
    );
}

#[test]
fn conversions_to_arena_ref() {
    fn name<'a>(arena: &ArenaRef<'a>, s: &str) -> &'a str {
        arena.alloc_str(s)
    }
    fn scoped(arena: &mut ArenaRef<'_>) -> usize {
        arena.with_scope(|scope| scope.alloc_slice_fill_copy(100, 1u8).len())
    }
    let mut arena = Arena::new();
    assert_eq!(name((&arena).into(), "arena"), "arena");
    let before = arena.used_bytes();
    assert_eq!(scoped((&mut arena).into()), 100);
    assert_eq!(arena.used_bytes(), before);

    let shared = SyncArena::new();
    let mut local = shared.local();
    let kept = name((&local).into(), "local");
    let before = local.used_bytes();
    assert_eq!(scoped((&mut local).into()), 100);
    assert_eq!(local.used_bytes(), before);
    drop(local);
    assert_eq!(kept, "local");
}

#[test]
fn scopes_on_a_local_arena_give_their_blocks_back() {
    let shared = SyncArena::new();
    let mut local = shared.local();
    let kept = local.alloc_slice_fill_copy(10, 7u32);
    let before = local.used_bytes();
    let view = local.as_arena_ref_mut();
    view.with_scope(|scope| {
        let big = scope.alloc_slice_fill_copy(3000, 1u8);
        assert_eq!(big.len(), 3000);
        scope.with_scope(|inner| inner.alloc_str("inner").len())
    });
    assert_eq!(view.used_bytes(), before);
    {
        let mut guard = view.scope_guard();
        let scope = guard.scope();
        let a = scope.alloc(1u64);
        let b = scope.alloc(2u64);
        assert_eq!(*a + *b, 3);
    }
    assert_eq!(local.used_bytes(), before);
    // A large block (64 KiB and more) taken in a scope goes back at its end.
    let large = if cfg!(miri) { 64 << 10 } else { 256 << 10 };
    local.as_arena_ref_mut().with_scope(|scope| {
        let p = scope.alloc_layout(std::alloc::Layout::from_size_align(large, 8).unwrap());
        // SAFETY: the block holds `large` bytes.
        unsafe { p.write_bytes(1, large) };
        assert_eq!(shared.stats().large_blocks, 1);
    });
    assert_eq!(shared.stats().large_blocks, 0);
    drop(local);
    assert_eq!(kept, &[7; 10]);
}

#[test]
fn into_slice_outlives_the_handle() {
    let shared = SyncArena::new();
    let (evens, big) = {
        let local = shared.local();
        let mut v = Vec::new_in(&local);
        v.extend((0..20u32).filter(|n| n % 2 == 0));
        let evens = LocalArena::into_slice(v);
        // A buffer large enough to be a block of its own outside the pieces.
        let n = if cfg!(miri) { 9_000 } else { 40_000 };
        let mut big = Vec::with_capacity_in(n, &local);
        big.extend((0..n as u64).map(|i| i * 3));
        (evens, LocalArena::into_slice(big))
    };
    assert_eq!(evens, &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
    evens[0] = 100;
    assert_eq!(big[big.len() - 1], 3 * (big.len() as u64 - 1));
    assert_eq!(evens[0], 100);
    // A second handle does not reuse the bytes of the first one's slices.
    let other = shared.local();
    let fresh = other.alloc_slice_fill_copy(64, 0xFFu8);
    assert!(fresh.iter().all(|&b| b == 0xFF));
    assert_eq!(evens[1], 2);
}

/// `into_slice` of a `Vec` that outgrew the chunks, on both arenas: the block shrinks through
/// the backing allocator and stays a large block at any length (never moved into the chunks,
/// where a checkpoint taken after it was made would free it).
#[test]
fn into_slice_of_a_large_vec_keeps_its_large_block() {
    fn check<X: BumpAlloc>(arena: &X, into_slice: impl FnOnce(Vec<u8, &X>) -> &mut [u8])
    where
        for<'a> &'a X: arena_pool::allocator_api2::alloc::Allocator,
    {
        let mut v = Vec::with_capacity_in(200_000, arena);
        v.extend_from_slice(&[7; 100]);
        let before = arena.stats();
        assert_eq!(before.large_blocks, 1);
        assert!(before.large_bytes >= 200_000);
        let s = into_slice(v);
        assert_eq!(s, &[7; 100][..]);
        let after = arena.stats();
        assert_eq!(after.large_blocks, 1, "the block left the large blocks");
        assert!(after.large_bytes < 1024, "kept {} bytes", after.large_bytes);
        // Nothing moved into the chunks.
        assert_eq!(
            (after.chunks, after.used_bytes),
            (before.chunks, before.used_bytes)
        );
    }
    let arena = Arena::new();
    check(&arena, Arena::into_slice);
    let shared = SyncArena::new();
    check(&shared, SyncArena::into_slice);
}

#[test]
fn into_slice_gives_the_unused_capacity_back() {
    let arena = Arena::new();
    arena.alloc(1u8);
    let mut v = Vec::with_capacity_in(64, &arena);
    v.extend([1u32, 2, 3]);
    let used = arena.used_bytes();
    let s = Arena::into_slice(v);
    assert_eq!(s, &[1, 2, 3]);
    assert_eq!(arena.used_bytes(), used - 61 * 4);

    // Zero-sized elements and an empty `Vec` take nothing.
    let start = drops();
    let mut z = Vec::new_in(&arena);
    z.extend([CountedZst, CountedZst]);
    let zs = Arena::into_slice(z);
    assert_eq!(zs.len(), 2);
    let empty: &mut [u64] = Arena::into_slice(Vec::new_in(&arena));
    assert!(empty.is_empty());
    assert_eq!(drops(), start, "into_slice dropped an element");

    // The shared path, and a scope's `ArenaRef`.
    let shared = SyncArena::new();
    let mut v = Vec::new_in(&shared);
    v.extend_from_slice(b"shared");
    assert_eq!(SyncArena::into_slice(v), b"shared");
    let mut arena = Arena::new();
    arena.with_scope(|scope| {
        let mut v = Vec::new_in(&*scope);
        v.push(5u16);
        let s = ArenaRef::into_slice(v);
        // The scope is free for a nested scope while the slice lives.
        let n = scope.with_scope(|inner| inner.alloc_slice_fill_copy(8, 0u8).len());
        assert_eq!((s[0], n), (5, 8));
    });
}

#[test]
fn into_str_outlives_the_handle_and_gives_capacity_back() {
    let shared = SyncArena::new();
    let (greeting, numbers) = {
        let local = shared.local();
        let mut s = format_in!(&local, "hello");
        s.push_str(", world");
        let greeting = LocalArena::into_str(s);
        let mut n = String::with_capacity_in(256, &local);
        for i in 0..5 {
            write!(n, "{i} ").unwrap();
        }
        (greeting, LocalArena::into_str(n))
    };
    // The handle is gone: a second handle does not reuse the bytes of the first one's text.
    let other = shared.local();
    let fresh = other.alloc_slice_fill_copy(512, b'x');
    assert!(fresh.iter().all(|&b| b == b'x'));
    greeting.make_ascii_uppercase();
    assert_eq!((&*greeting, &*numbers), ("HELLO, WORLD", "0 1 2 3 4 "));

    // On an `Arena`: the unused capacity of the last block is given back.
    let arena = Arena::new();
    arena.alloc(1u8);
    let mut s = String::with_capacity_in(100, &arena);
    s.push_str("abc");
    let used = arena.used_bytes();
    assert_eq!(Arena::into_str(s), "abc");
    assert_eq!(arena.used_bytes(), used - 97);
    // In a scope, the text lives as long as the scope.
    let mut arena = Arena::new();
    arena.with_scope(|scope| {
        let t = ArenaRef::into_str(format_in!(&*scope, "{}-{}", 1, 2));
        let n = scope.with_scope(|inner| inner.alloc_str("nested").len());
        assert_eq!((&*t, n), ("1-2", 6));
    });
}

/// The fallible fills through any arena: an `Err` (or a panic) at item `k` drops exactly the
/// `k` values made, gives the block back (`used_bytes` as before) and returns the error.
fn fallible_fills<X: BumpAlloc + ?Sized>(a: &X, used: &dyn Fn() -> usize) {
    for k in [0, 1, 4, 7] {
        let before = (used(), drops());
        let r = a.alloc_slice_try_fill_with(8, |i| if i == k { Err(i) } else { Ok(Counted(i)) });
        assert_eq!(r.map(|s| s.len()), Err(k));
        assert_eq!(
            (used(), drops()),
            (before.0, before.1 + k),
            "try_fill_with, Err at {k}"
        );

        let r =
            a.try_alloc_slice_try_fill_with(8, |i| if i == k { Err(i) } else { Ok(Counted(i)) });
        assert_eq!(r.map(|s| s.len()), Err(AllocOrInitError::Init(k)));
        assert_eq!((used(), drops()), (before.0, before.1 + 2 * k));

        for hint in [0, 3, 8, 1000] {
            let before = (used(), drops());
            let it = FailAt {
                next: 0,
                len: 8,
                fail: k,
                hint,
            };
            let r = a.alloc_slice_try_fill_iter(it);
            assert_eq!(r.map(|s| s.len()), Err(k));
            assert_eq!(
                (used(), drops()),
                (before.0, before.1 + k),
                "try_fill_iter, hint {hint}"
            );
            let it = FailAt {
                next: 0,
                len: 8,
                fail: k,
                hint,
            };
            let r = a.try_alloc_slice_try_fill_iter(it);
            assert_eq!(r.map(|s| s.len()), Err(AllocOrInitError::Init(k)));
            assert_eq!((used(), drops()), (before.0, before.1 + 2 * k));
        }

        // A panic midway: the same clean-up, and the panic goes on.
        let before = (used(), drops());
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _ = a.alloc_slice_try_fill_with(8, |i| {
                if i == k {
                    panic!("test: fill panics at {k}");
                }
                Ok::<_, ()>(Counted(i))
            });
        }));
        assert!(r.is_err());
        assert_eq!((used(), drops()), (before.0, before.1 + k), "panic at {k}");
        let r = catch_unwind(AssertUnwindSafe(|| {
            let it = (0..8).map(|i| {
                if i == k {
                    panic!("test: iterator panics at {k}");
                }
                Ok::<_, ()>(Counted(i))
            });
            let _ = a.alloc_slice_try_fill_iter(it);
        }));
        assert!(r.is_err());
        assert_eq!(
            (used(), drops()),
            (before.0, before.1 + 2 * k),
            "iterator panic at {k}"
        );
    }

    // Success: every value is kept, none dropped (the arena never drops them).
    let before = drops();
    let ok = a
        .alloc_slice_try_fill_with(5, |i| Ok::<_, ()>(Counted(i)))
        .unwrap();
    assert_eq!(ok.iter().map(|c| c.0).sum::<usize>(), 10);
    let ok = a
        .try_alloc_slice_try_fill_iter((0..5).map(|i| Ok::<_, ()>(Counted(i))))
        .unwrap();
    assert_eq!(ok.len(), 5);
    assert_eq!(drops(), before);

    // Zero-sized values with drop glue are dropped too.
    let before = drops();
    let r = a.alloc_slice_try_fill_with(6, |i| if i == 3 { Err(()) } else { Ok(CountedZst) });
    assert!(r.is_err());
    assert_eq!(drops(), before + 3);
}

#[test]
fn fallible_fills_rewind_every_arena() {
    let arena = Arena::new();
    arena.alloc(1u8);
    fallible_fills(&arena, &|| arena.used_bytes());
    let r = arena.as_arena_ref();
    fallible_fills(r, &|| r.used_bytes());
    let mut arena = Arena::new();
    {
        let guard = arena.scope_guard();
        fallible_fills(&guard, &|| guard.as_arena_ref().used_bytes());
    }
    // The shared path gives the block back, not the padding before it (another thread may have
    // bumped there): a word-aligned start needs none.
    let shared = SyncArena::new();
    shared.alloc(1u64);
    fallible_fills(&shared, &|| shared.used_bytes());
    let local = shared.local();
    local.alloc(1u8);
    fallible_fills(&local, &|| local.used_bytes());
}

#[test]
fn fallible_fills_tell_allocation_failures_apart() {
    fn check<X: BumpAlloc + ?Sized>(a: &X) {
        let calls = Cell::new(0);
        let r = a.try_alloc_slice_try_fill_with(100_000, |i| {
            calls.set(calls.get() + 1);
            Ok::<_, &str>(i as u64)
        });
        assert_eq!(r.map(|s| s.len()), Err(AllocOrInitError::Alloc(AllocError)));
        assert_eq!(
            calls.get(),
            0,
            "the closure ran though nothing was allocated"
        );
        // The iterator form finds out while it grows: the items taken are dropped.
        let before = drops();
        let r = a.try_alloc_slice_try_fill_iter((0..100_000).map(|i| Ok::<_, &str>(Counted(i))));
        assert!(matches!(r, Err(AllocOrInitError::Alloc(AllocError))));
        assert!(drops() > before);
        // A failing closure still wins when the room is there.
        let r = a.try_alloc_slice_try_fill_with(2, |_| Err::<u8, _>("bad"));
        assert_eq!(r, Err(AllocOrInitError::Init("bad")));
    }
    let arena = Arena::new();
    arena.set_allocation_limit(Some(4096));
    check(&arena);
    let shared = SyncArena::new();
    shared.set_allocation_limit(Some(4096));
    check(&shared);
    check(&shared.local());
}

#[test]
fn scope_guard_allocates_twice_with_both_results_alive() {
    let mut arena = Arena::new();
    let before = arena.used_bytes();
    {
        let guard = arena.scope_guard();
        // Through the guard itself: the references borrow the guard.
        let a = guard.alloc(1u32);
        let b = guard.alloc_str("two");
        assert_eq!((*a, &*b), (1, "two"));
    }
    {
        // Through `scope()`, bound once.
        let mut guard = arena.scope_guard();
        let scope = guard.scope();
        let a = scope.alloc(3u32);
        let b = scope.alloc(4u32);
        *a += *b;
        assert_eq!(*a, 7);
    }
    assert_eq!(arena.used_bytes(), before);
}

#[test]
fn fallible_fills_in_a_new_chunk_and_with_allocating_closures() {
    // The block needs a new chunk: the error leaves `used_bytes` as before all the same.
    let arena = Arena::new();
    arena.alloc_slice_fill_copy(arena.chunk_capacity().max(400) - 3, 0u8);
    let before = arena.used_bytes();
    let r = arena.alloc_slice_try_fill_with(200, |i| if i == 3 { Err(i) } else { Ok(i as u64) });
    assert_eq!(r.map(|s| s.len()), Err(3));
    assert_eq!(arena.used_bytes(), before);

    // A closure (or iterator) that allocates in the arena keeps its blocks: the fill's own
    // block is not the last one then, and nothing is rewound over them.
    for rewind_iter in [false, true] {
        let arena = Arena::new();
        arena.alloc(1u8);
        let mut kept = std::vec::Vec::new();
        let r = if rewind_iter {
            let it = (0..4).map(|i| {
                kept.push(arena.alloc(i as u8 + 10));
                if i == 2 { Err(i) } else { Ok(i as u64) }
            });
            arena.alloc_slice_try_fill_iter(it).map(|s| s.len())
        } else {
            arena
                .alloc_slice_try_fill_with(4, |i| {
                    kept.push(arena.alloc(i as u8 + 10));
                    if i == 2 { Err(i) } else { Ok(i as u64) }
                })
                .map(|s| s.len())
        };
        assert_eq!(r, Err(2));
        let fresh = arena.alloc_slice_fill_copy(64, 0xEEu8);
        assert!(fresh.iter().all(|&b| b == 0xEE));
        assert_eq!(
            kept.iter().map(|k| **k).collect::<std::vec::Vec<_>>(),
            [10, 11, 12]
        );
    }
}
