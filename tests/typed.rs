//! The typed helpers of `Arena` / `ArenaRef`: contents, zero-sized types, drop behaviour, panic
//! safety of the initialisers, lying and re-entrant iterators, formatting, the README examples,
//! scopes, and the `Send` bound.
//!
//! Every test runs under Miri (`MIRIFLAGS=-Zmiri-strict-provenance cargo +nightly miri test
//! --test typed`): the sizes shrink with `cfg!(miri)`, and no heap-owning value is ever left in
//! an arena undropped (Miri would report it as a leak).
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arena_pool::allocator_api2::alloc::Layout;
use arena_pool::allocator_api2::boxed::Box as ArenaBox;
use arena_pool::{AllocError, AllocOrInitError, Arena, ArenaRef};

// ----- helpers -----

thread_local! {
    /// Drops of `CountDrop` / `ZstDrop` on this thread.
    static DROPS: Cell<usize> = const { Cell::new(0) };
    /// Ids of the `Tracked` values dropped on this thread, in drop order.
    static DROPPED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// How many more `Tracked::clone` calls may succeed before one panics.
    static CLONE_BUDGET: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn drops() -> usize {
    DROPS.with(Cell::get)
}

/// Takes (and clears) the ids of the `Tracked` values dropped so far.
fn take_dropped() -> Vec<usize> {
    DROPPED.with(|d| std::mem::take(&mut *d.borrow_mut()))
}

/// Counts its drops in `DROPS`.
#[derive(Debug, PartialEq)]
struct CountDrop(usize);

impl Drop for CountDrop {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

/// A zero-sized type that counts its drops in `DROPS`.
#[derive(Debug)]
struct ZstDrop;

impl Drop for ZstDrop {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

/// Records its id in `DROPPED` when dropped; its clone gets `id + 1000` and panics once
/// `CLONE_BUDGET` is exhausted.
#[derive(Debug, PartialEq)]
struct Tracked(usize);

impl Drop for Tracked {
    fn drop(&mut self) {
        DROPPED.with(|d| d.borrow_mut().push(self.0));
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Tracked {
        let left = CLONE_BUDGET.with(Cell::get);
        if left == 0 {
            panic!("test: clone of Tracked({}) panics", self.0);
        }
        CLONE_BUDGET.with(|b| b.set(left - 1));
        Tracked(self.0 + 1000)
    }
}

/// Restores `CLONE_BUDGET` to "unlimited" when dropped (also while unwinding).
struct CloneBudget;

impl CloneBudget {
    fn set(n: usize) -> CloneBudget {
        CLONE_BUDGET.with(|b| b.set(n));
        CloneBudget
    }
}

impl Drop for CloneBudget {
    fn drop(&mut self) {
        CLONE_BUDGET.with(|b| b.set(usize::MAX));
    }
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("<non-string panic payload>")
    }
}

fn addr<T: ?Sized>(r: &T) -> usize {
    (r as *const T).cast::<u8>().addr()
}

/// `[addr, addr + size)` of a slice.
fn range<T>(s: &[T]) -> std::ops::Range<usize> {
    let a = s.as_ptr().addr();
    a..a + size_of_val(s)
}

fn disjoint(a: &std::ops::Range<usize>, b: &std::ops::Range<usize>) -> bool {
    a.is_empty() || b.is_empty() || a.end <= b.start || b.end <= a.start
}

/// An iterator yielding `0..len` whose `size_hint` is `claim`, whatever it really yields.
struct Liar {
    next: u32,
    len: u32,
    claim: (usize, Option<usize>),
}

impl Iterator for Liar {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.next == self.len {
            return None;
        }
        self.next += 1;
        Some(self.next - 1)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.claim
    }
}

/// Writes `0,1,2,…,n-1,` piece by piece.
struct Many(usize);

impl fmt::Display for Many {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.0 {
            write!(f, "{i},")?;
        }
        Ok(())
    }
}

/// Writes a little, then fails.
struct FailingDisplay;

impl fmt::Display for FailingDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("partial output")?;
        Err(fmt::Error)
    }
}

/// Panics (a plain function, so that closures calling it last still return `()`).
fn boom(what: &str) {
    panic!("test: {what}");
}

/// Runs the body once with `$a: &Arena` and once with `$a: &ArenaRef` (the typed API is the
/// same on both).
macro_rules! on_arena_and_ref {
    ($name:ident, |$a:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn on_arena() {
                let arena = Arena::new();
                let $a: &Arena = &arena;
                $body
            }

            #[test]
            fn on_arena_ref() {
                let arena = Arena::new();
                let $a: &ArenaRef<'_> = arena.as_arena_ref();
                $body
            }
        }
    };
}

// ----- contents, one test per group of helpers -----

on_arena_and_ref!(single_values, |a| {
    let x = a.alloc(42u32);
    let y = a.try_alloc(7u64).unwrap();
    let z = a.alloc_with(|| [1u16, 2, 3]);
    let w = a.try_alloc_with(|| 'λ').unwrap();
    let ok: Result<&mut i64, &str> = a.alloc_try_with(|| Ok(-5));
    let ok = ok.unwrap();
    let try_ok: Result<&mut u8, AllocOrInitError<()>> = a.try_alloc_try_with(|| Ok(9u8));
    let try_ok = try_ok.unwrap();
    let p = a.alloc_layout(Layout::from_size_align(24, 64).unwrap());
    let q = a
        .try_alloc_layout(Layout::from_size_align(3, 8).unwrap())
        .unwrap();
    assert_eq!(p.as_ptr().addr() % 64, 0);
    assert_eq!(q.as_ptr().addr() % 8, 0);
    // SAFETY: `p` is a fresh block of 24 bytes and `q` one of 3 bytes, owned by this test.
    unsafe {
        p.as_ptr().write_bytes(0xAB, 24);
        q.as_ptr().write_bytes(0xCD, 3);
    }
    *x += 1;
    *y *= 3;
    z[2] = 30;
    // Everything is still intact: no block overlaps another.
    assert_eq!(*x, 43);
    assert_eq!(*y, 21);
    assert_eq!(*z, [1, 2, 30]);
    assert_eq!(*w, 'λ');
    assert_eq!(*ok, -5);
    assert_eq!(*try_ok, 9);
    // SAFETY: both blocks were fully initialised above and are not written any more.
    let (pb, qb) = unsafe {
        (
            std::slice::from_raw_parts(p.as_ptr(), 24),
            std::slice::from_raw_parts(q.as_ptr(), 3),
        )
    };
    assert!(pb.iter().all(|&b| b == 0xAB));
    assert!(qb.iter().all(|&b| b == 0xCD));
    assert_eq!(addr(x) % align_of::<u32>(), 0);
    assert_eq!(addr(y) % align_of::<u64>(), 0);
});

on_arena_and_ref!(slices, |a| {
    let copy = a.alloc_slice_copy(&[1u64, 2, 3, 4, 5]);
    let try_copy = a.try_alloc_slice_copy(&[9i8, -9]).unwrap();
    let clone = a.alloc_slice_clone(&["a", "bb", "ccc"]);
    let try_clone = a.try_alloc_slice_clone(&[Some(1u16), None]).unwrap();
    let fill_with = a.alloc_slice_fill_with(6, |i| i * i);
    let try_fill_with = a.try_alloc_slice_fill_with(4, |i| i as u8 + 1).unwrap();
    let fill_copy = a.alloc_slice_fill_copy(5, 0x5Au8);
    let try_fill_copy = a.try_alloc_slice_fill_copy(3, 1.5f64).unwrap();
    let fill_clone = a.alloc_slice_fill_clone(3, &"xy");
    let try_fill_clone = a.try_alloc_slice_fill_clone(2, &[7u32; 3]).unwrap();
    let fill_default = a.alloc_slice_fill_default::<u128>(3);
    let try_fill_default = a.try_alloc_slice_fill_default::<Option<u8>>(4).unwrap();
    let iter = a.alloc_slice_fill_iter((1..=4u32).map(|i| i * 10));
    let try_iter = a.try_alloc_slice_fill_iter("héllo".chars()).unwrap();

    copy[0] = 100;
    assert_eq!(copy, &[100, 2, 3, 4, 5]);
    assert_eq!(try_copy, &[9, -9]);
    assert_eq!(clone, &["a", "bb", "ccc"]);
    assert_eq!(try_clone, &[Some(1), None]);
    assert_eq!(fill_with, &[0, 1, 4, 9, 16, 25]);
    assert_eq!(try_fill_with, &[1, 2, 3, 4]);
    assert_eq!(fill_copy, &[0x5A; 5]);
    assert_eq!(try_fill_copy, &[1.5; 3]);
    assert_eq!(fill_clone, &["xy"; 3]);
    assert_eq!(try_fill_clone, &[[7; 3]; 2]);
    assert_eq!(fill_default, &[0; 3]);
    assert_eq!(try_fill_default, &[None; 4]);
    assert_eq!(iter, &[10, 20, 30, 40]);
    assert_eq!(try_iter, &['h', 'é', 'l', 'l', 'o']);

    let ranges = [
        range(copy),
        range(try_copy),
        range(clone),
        range(try_clone),
        range(fill_with),
        range(try_fill_with),
        range(fill_copy),
        range(try_fill_copy),
        range(fill_clone),
        range(try_fill_clone),
        range(fill_default),
        range(try_fill_default),
        range(iter),
        range(try_iter),
    ];
    for (i, r) in ranges.iter().enumerate() {
        for s in &ranges[i + 1..] {
            assert!(disjoint(r, s), "slices overlap: {r:?} and {s:?}");
        }
    }
    assert_eq!(fill_default.as_ptr().addr() % align_of::<u128>(), 0);
});

on_arena_and_ref!(sized_arrays, |a| {
    let d: &mut [u32; 16] = a.alloc_sized_slice_fill_default();
    let td: &mut [i16; 3] = a.try_alloc_sized_slice_fill_default().unwrap();
    let w: &mut [u64; 5] = a.alloc_sized_slice_fill_with(|i| (i * i) as u64);
    let tw = a
        .try_alloc_sized_slice_fill_with::<char, 4, _>(|i| (b'a' + i as u8) as char)
        .unwrap();
    let c: &mut [i32; 3] = a.alloc_sized_slice_copy(&[1, 2, 3]);
    let tc = a.try_alloc_sized_slice_copy(&[0.25f32; 2]).unwrap();
    d[15] = 15;
    c[1] = 0;
    assert_eq!(d[..15], [0; 15]);
    assert_eq!(d[15], 15);
    assert_eq!(*td, [0; 3]);
    assert_eq!(*w, [0, 1, 4, 9, 16]);
    assert_eq!(*tw, ['a', 'b', 'c', 'd']);
    assert_eq!(*c, [1, 0, 3]);
    assert_eq!(*tc, [0.25; 2]);
    assert!(disjoint(&range(&d[..]), &range(&w[..])));
    assert!(disjoint(&range(&c[..]), &range(&td[..])));
});

on_arena_and_ref!(strings, |a| {
    let s = a.alloc_str("hello world");
    let ts = a.try_alloc_str("grüße ✓").unwrap();
    let f = a.alloc_fmt(format_args!("{}-{:04}-{:?}", "a", 7, 'c'));
    let tf = a
        .try_alloc_fmt(format_args!("{:>5}|{:x}", "r", 255))
        .unwrap();
    // A format string without arguments takes the `as_str` shortcut.
    let plain = a.alloc_fmt(format_args!("plain text"));
    let try_plain = a.try_alloc_fmt(format_args!("ünïcode")).unwrap();
    s.make_ascii_uppercase();
    assert_eq!(s, "HELLO WORLD");
    assert_eq!(ts, "grüße ✓");
    assert_eq!(f, "a-0007-'c'");
    assert_eq!(tf, "    r|ff");
    assert_eq!(plain, "plain text");
    assert_eq!(try_plain, "ünïcode");
});

// ----- zero-sized types and empty slices -----

on_arena_and_ref!(zero_sized_values_and_empty_slices_use_no_bytes, |a| {
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    struct Zst;
    #[derive(Debug, Clone, Copy, PartialEq)]
    #[repr(align(64))]
    struct AlignedZst;

    // Take a chunk and leave the position deliberately misaligned for everything above 1.
    a.alloc(1u8);
    let before = a.used_bytes();
    let check = |what: &str| {
        assert_eq!(
            a.used_bytes(),
            before,
            "{what} changed used_bytes (zero-sized requests must not bump)"
        );
    };

    let unit: &mut () = a.alloc(());
    check("alloc(())");
    assert_eq!(*unit, ());
    assert_eq!(*a.try_alloc(()).unwrap(), ());
    check("try_alloc(())");
    assert_eq!(*a.alloc(Zst), Zst);
    check("alloc(Zst)");
    let aligned = a.alloc(AlignedZst);
    assert_eq!(addr(aligned) % 64, 0);
    check("alloc(AlignedZst)");
    assert_eq!(*a.alloc_with(|| Zst), Zst);
    check("alloc_with(Zst)");
    let zs = a.alloc_slice_fill_with(10, |_| Zst);
    assert_eq!(zs.len(), 10);
    check("alloc_slice_fill_with(10, Zst)");
    let zs = a.try_alloc_slice_fill_with(7, |_| AlignedZst).unwrap();
    assert_eq!((zs.len(), zs.as_ptr().addr() % 64), (7, 0));
    check("try_alloc_slice_fill_with(7, AlignedZst)");
    assert_eq!(a.alloc_slice_fill_iter((0..1000).map(|_| Zst)).len(), 1000);
    check("alloc_slice_fill_iter of 1000 ZSTs");
    let zarr: &mut [Zst; 5] = a.alloc_sized_slice_fill_default();
    assert_eq!(zarr.len(), 5);
    check("alloc_sized_slice_fill_default::<Zst, 5>");

    // Empty slices of non-zero-sized types.
    let e = a.alloc_slice_copy::<u64>(&[]);
    assert!(e.is_empty() && e.as_ptr().addr() % 8 == 0);
    check("alloc_slice_copy::<u64>(&[])");
    assert!(a.try_alloc_slice_copy::<u32>(&[]).unwrap().is_empty());
    check("try_alloc_slice_copy::<u32>(&[])");
    assert!(a.alloc_slice_clone::<&str>(&[]).is_empty());
    check("alloc_slice_clone::<&str>(&[])");
    assert!(a.alloc_slice_fill_with(0, |i| i as u64).is_empty());
    check("alloc_slice_fill_with::<u64>(0, ..)");
    assert!(a.alloc_slice_fill_copy(0, 1u32).is_empty());
    check("alloc_slice_fill_copy(0, 1u32)");
    assert!(a.alloc_slice_fill_clone(0, &"x").is_empty());
    check("alloc_slice_fill_clone(0, &str)");
    assert!(a.alloc_slice_fill_default::<u128>(0).is_empty());
    check("alloc_slice_fill_default::<u128>(0)");
    assert!(
        a.alloc_slice_fill_iter(std::iter::empty::<u64>())
            .is_empty()
    );
    check("alloc_slice_fill_iter(empty::<u64>)");
    let e: &mut [u64; 0] = a.alloc_sized_slice_fill_default();
    assert!(e.is_empty());
    check("alloc_sized_slice_fill_default::<u64, 0>");
    assert!(a.alloc_sized_slice_copy::<u32, 0>(&[]).is_empty());
    check("alloc_sized_slice_copy::<u32, 0>");
    assert_eq!(a.alloc_str(""), "");
    check("alloc_str(\"\")");
    assert_eq!(a.alloc_fmt(format_args!("")), "");
    check("alloc_fmt(\"\")");
    assert_eq!(a.alloc_fmt(format_args!("{}", "")), "");
    check("alloc_fmt(\"{}\", \"\")");
    let p = a.alloc_layout(Layout::from_size_align(0, 4096).unwrap());
    assert_eq!(p.as_ptr().addr() % 4096, 0);
    check("alloc_layout(size 0, align 4096)");
    let p = a
        .try_alloc_layout(Layout::from_size_align(0, 16).unwrap())
        .unwrap();
    assert_eq!(p.as_ptr().addr() % 16, 0);
    check("try_alloc_layout(size 0, align 16)");

    // And the position was really left alone: a byte goes right where the next one would have.
    let before_byte = a.used_bytes();
    a.alloc(2u8);
    assert_eq!(a.used_bytes(), before_byte + 1);
});

// ----- drops -----

#[test]
fn alloc_never_drops_and_reset_drops_nothing() {
    let start = drops();
    let mut arena = Arena::new();
    let x = arena.alloc(CountDrop(1));
    assert_eq!(x.0, 1);
    arena.try_alloc(CountDrop(2)).unwrap();
    arena.alloc_with(|| CountDrop(3));
    arena.alloc_slice_fill_with(5, CountDrop);
    arena.alloc_slice_fill_iter((0..5).map(CountDrop));
    arena.alloc_sized_slice_fill_with::<_, 3, _>(CountDrop);
    arena.alloc(ZstDrop);
    arena.alloc_slice_fill_with(4, |_| ZstDrop);
    let r: Result<&mut CountDrop, ()> = arena.alloc_try_with(|| Ok(CountDrop(4)));
    assert_eq!(r.unwrap().0, 4);
    assert_eq!(drops(), start, "a value placed with alloc* was dropped");
    arena.reset();
    assert_eq!(drops(), start, "reset dropped a value");
    arena.alloc(CountDrop(5));
    arena.clear();
    assert_eq!(drops(), start, "clear dropped a value");
    arena.alloc(CountDrop(6));
    drop(arena);
    assert_eq!(drops(), start, "dropping the arena dropped a value");
}

#[test]
fn box_new_in_drops_exactly_once() {
    let arena = Arena::new();
    arena.alloc(0u64);
    let start = drops();
    let used = arena.used_bytes();
    let b = ArenaBox::new_in(CountDrop(7), &arena);
    assert_eq!(b.0, 7);
    assert_eq!(arena.used_bytes(), used + size_of::<CountDrop>());
    assert_eq!(drops(), start);
    drop(b);
    assert_eq!(drops(), start + 1);
    // The box was the last block: freeing it gave its bytes back.
    assert_eq!(arena.used_bytes(), used);

    let z = ArenaBox::new_in(ZstDrop, &arena);
    assert_eq!(drops(), start + 1);
    drop(z);
    assert_eq!(drops(), start + 2);

    let boxes: Vec<_> = (0..10)
        .map(|i| ArenaBox::new_in(CountDrop(i), &arena))
        .collect();
    assert_eq!(drops(), start + 2);
    for (i, b) in boxes.iter().enumerate() {
        assert_eq!(b.0, i);
    }
    drop(boxes);
    assert_eq!(drops(), start + 12);
    drop(arena);
    assert_eq!(drops(), start + 12);
}

// ----- panic safety -----

#[test]
fn panicking_fill_with_drops_what_it_built_and_rolls_back() {
    let arena = Arena::new();
    let kept = arena.alloc(0xAAAA_u64);
    for k in [0, 1, 5, 9] {
        let before = arena.used_bytes();
        take_dropped();
        let r = catch_unwind(AssertUnwindSafe(|| {
            arena
                .alloc_slice_fill_with(10, |i| {
                    if i == k {
                        boom("fill_with");
                    }
                    Tracked(i)
                })
                .len()
        }));
        assert!(r.is_err(), "the closure's panic was swallowed");
        let mut dropped = take_dropped();
        dropped.sort_unstable();
        assert_eq!(
            dropped,
            (0..k).collect::<Vec<_>>(),
            "panic at {k}: wrong values dropped"
        );
        assert_eq!(
            arena.used_bytes(),
            before,
            "panic at {k}: block not given back"
        );
        let s = arena.alloc_slice_copy(&[1u64, 2, 3]);
        assert_eq!(s, &[1, 2, 3]);
        assert_eq!(arena.used_bytes(), before + 24);
    }
    // The same for a zero-sized type with a destructor, and for a fixed-size array.
    let start = drops();
    let r = catch_unwind(AssertUnwindSafe(|| {
        arena.alloc_slice_fill_with(10, |i| {
            if i == 6 {
                boom("zst fill_with");
            }
            ZstDrop
        });
    }));
    assert!(r.is_err());
    assert_eq!(drops(), start + 6);
    let before = arena.used_bytes();
    let r = catch_unwind(AssertUnwindSafe(|| {
        arena.alloc_sized_slice_fill_with::<_, 8, _>(|i| {
            if i == 3 {
                boom("sized fill_with");
            }
            Tracked(i)
        });
    }));
    assert!(r.is_err());
    let mut dropped = take_dropped();
    dropped.sort_unstable();
    assert_eq!(dropped, [0, 1, 2]);
    assert_eq!(arena.used_bytes(), before);
    assert_eq!(*kept, 0xAAAA);
}

#[test]
fn panicking_clone_drops_the_clones_made_and_rolls_back() {
    let arena = Arena::new();
    arena.alloc(0u64);
    let originals: Vec<Tracked> = (0..8).map(Tracked).collect();
    for k in [0, 1, 4, 7] {
        let before = arena.used_bytes();
        take_dropped();
        let r = {
            let _budget = CloneBudget::set(k);
            catch_unwind(AssertUnwindSafe(|| {
                arena.alloc_slice_clone(&originals).len()
            }))
        };
        assert!(r.is_err(), "the clone's panic was swallowed");
        let mut dropped = take_dropped();
        dropped.sort_unstable();
        assert_eq!(
            dropped,
            (1000..1000 + k).collect::<Vec<_>>(),
            "clone panicking at {k}: wrong values dropped"
        );
        assert_eq!(
            arena.used_bytes(),
            before,
            "clone panicking at {k}: block not given back"
        );

        let r = {
            let _budget = CloneBudget::set(k);
            catch_unwind(AssertUnwindSafe(|| {
                arena.alloc_slice_fill_clone(8, &originals[3]).len()
            }))
        };
        assert!(r.is_err());
        assert_eq!(take_dropped(), vec![1003; k]);
        assert_eq!(arena.used_bytes(), before);
    }
    // The arena is still usable and the originals were never touched.
    assert_eq!(arena.alloc_slice_copy(b"ok"), b"ok");
    assert_eq!(originals, (0..8).map(Tracked).collect::<Vec<_>>());
    drop(originals);
    take_dropped();
}

#[test]
fn panicking_alloc_with_gives_the_room_back() {
    let arena = Arena::new();
    let kept = arena.alloc(5u64);
    let before = arena.used_bytes();
    let r = catch_unwind(AssertUnwindSafe(|| {
        arena.alloc_with(|| -> [u64; 4] { panic!("test: alloc_with") });
    }));
    assert!(r.is_err());
    assert_eq!(arena.used_bytes(), before);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _ = arena.try_alloc_with(|| -> [u64; 4] { panic!("test: try_alloc_with") });
    }));
    assert!(r.is_err());
    assert_eq!(arena.used_bytes(), before);
    let x = arena.alloc([7u64; 4]);
    assert_eq!(*x, [7; 4]);
    assert_eq!(arena.used_bytes(), before + 32);
    assert_eq!(*kept, 5);
}

#[test]
fn panicking_iterator_drops_the_items_taken_and_rolls_back() {
    let arena = Arena::new();
    arena.alloc(0u64);
    for k in [0, 1, 3, 4, 5, 17] {
        // An exact size hint (the buffer is reserved up front) ...
        let before = arena.used_bytes();
        take_dropped();
        let r = catch_unwind(AssertUnwindSafe(|| {
            arena
                .alloc_slice_fill_iter((0..20).map(|i| {
                    if i == k {
                        boom("iterator");
                    }
                    Tracked(i)
                }))
                .len()
        }));
        assert!(r.is_err());
        let mut dropped = take_dropped();
        dropped.sort_unstable();
        assert_eq!(
            dropped,
            (0..k).collect::<Vec<_>>(),
            "exact hint, panic at {k}"
        );
        assert_eq!(arena.used_bytes(), before, "exact hint, panic at {k}");

        // ... and no size hint (the buffer grows while items arrive).
        let mut i = 0;
        let r = catch_unwind(AssertUnwindSafe(|| {
            arena
                .alloc_slice_fill_iter(std::iter::from_fn(|| {
                    if i == k {
                        boom("from_fn iterator");
                    }
                    i += 1;
                    Some(Tracked(i - 1))
                }))
                .len()
        }));
        assert!(r.is_err());
        let mut dropped = take_dropped();
        dropped.sort_unstable();
        assert_eq!(dropped, (0..k).collect::<Vec<_>>(), "no hint, panic at {k}");
        assert_eq!(arena.used_bytes(), before, "no hint, panic at {k}");
    }
    let s = arena.alloc_slice_fill_iter(0..3u64);
    assert_eq!(s, &[0, 1, 2]);
}

#[test]
fn alloc_try_with_err_rewinds_exactly() {
    let arena = Arena::new();
    let kept = arena.alloc(1u64);
    let before = arena.used_bytes();
    let r: Result<&mut [u64; 8], &str> = arena.alloc_try_with(|| Err("nope"));
    assert_eq!(r.unwrap_err(), "nope");
    assert_eq!(arena.used_bytes(), before);

    let r = arena.try_alloc_try_with::<[u64; 8], _, _>(|| Err(42));
    assert_eq!(r.map(|x| x[0]), Err(AllocOrInitError::Init(42)));
    assert_eq!(arena.used_bytes(), before);

    let r: Result<&mut u64, AllocOrInitError<()>> = arena.try_alloc_try_with(|| Ok(9));
    assert_eq!(r.map(|x| *x), Ok(9));
    assert_eq!(arena.used_bytes(), before + 8);

    // When the initialiser allocated in the arena itself before failing, that block stays.
    let mut inner = None;
    let r: Result<&mut u64, ()> = arena.alloc_try_with(|| {
        inner = Some(arena.alloc(77u32));
        Err(())
    });
    assert!(r.is_err());
    assert_eq!(inner.map(|x| *x), Some(77));
    assert_eq!(*kept, 1);
}

// ----- iterators -----

#[test]
fn alloc_slice_fill_iter_with_lying_size_hints() {
    let arena = Arena::new();
    arena.alloc(0u64);

    // Claims far more than it yields: the reservation is trimmed to the items.
    let before = arena.used_bytes();
    let s = arena.alloc_slice_fill_iter(Liar {
        next: 0,
        len: 5,
        claim: (1000, Some(1000)),
    });
    assert_eq!(s, &[0, 1, 2, 3, 4]);
    assert_eq!(arena.used_bytes(), before + 5 * 4);

    // Claims nothing and yields many (more than the first chunk holds).
    let n = if cfg!(miri) { 600 } else { 5000 };
    let before = arena.used_bytes();
    let s = arena.alloc_slice_fill_iter(Liar {
        next: 0,
        len: n,
        claim: (0, Some(0)),
    });
    assert_eq!(s.len(), n as usize);
    assert!(s.iter().copied().eq(0..n));
    assert_eq!(arena.used_bytes(), before + n as usize * 4);

    // The try_ form and an upper bound that lies too.
    let s = arena
        .try_alloc_slice_fill_iter(Liar {
            next: 0,
            len: 7,
            claim: (3, Some(3)),
        })
        .unwrap();
    assert_eq!(s, &[0, 1, 2, 3, 4, 5, 6]);
}

#[test]
fn alloc_slice_fill_iter_that_allocates_in_the_same_arena() {
    let arena = Arena::new();
    let n = if cfg!(miri) { 40 } else { 100 };

    // Exact size hint: the buffer is reserved first, the side allocations come after it.
    let mut side: Vec<&mut usize> = Vec::new();
    let s = arena.alloc_slice_fill_iter((0..n).inspect(|&i| side.push(arena.alloc(i * 3))));
    assert!(s.iter().copied().eq(0..n));
    assert_eq!(side.len(), n);
    for (i, x) in side.iter().enumerate() {
        assert_eq!(**x, i * 3);
        assert!(disjoint(&range(s), &(addr(&**x)..addr(&**x) + 8)));
    }

    // No size hint: the buffer is no longer the last block when it must grow, so it moves.
    let mut side2: Vec<&mut [u8]> = Vec::new();
    let mut i = 0;
    let s2 = arena.alloc_slice_fill_iter(std::iter::from_fn(|| {
        if i == n {
            return None;
        }
        side2.push(arena.alloc_slice_fill_copy(i % 7 + 1, i as u8));
        i += 1;
        Some(i * 1000)
    }));
    assert!(s2.iter().copied().eq((1..=n).map(|i| i * 1000)));
    for (i, x) in side2.iter().enumerate() {
        assert_eq!(x.len(), i % 7 + 1);
        assert!(
            x.iter().all(|&b| b == i as u8),
            "side allocation {i} clobbered"
        );
        assert!(disjoint(&range(s2), &range(x)));
    }
    // The first results are untouched by the second run.
    assert!(s.iter().copied().eq(0..n));
    for (i, x) in side.iter().enumerate() {
        assert_eq!(**x, i * 3);
    }
}

// ----- formatting -----

#[test]
fn alloc_fmt_bigger_than_a_chunk() {
    let arena = Arena::new();
    arena.alloc(1u8);
    let n = if cfg!(miri) { 1000 } else { 10_000 };
    let expected = format!("[{}]<{}>", Many(n), Many(3));
    let before = arena.used_bytes();
    let chunk = arena.chunk_capacity() + arena.used_bytes();
    let s = arena.alloc_fmt(format_args!("[{}]<{}>", Many(n), Many(3)));
    assert!(s.len() > chunk, "the text should outgrow the first chunk");
    assert_eq!(&*s, &*expected);
    assert_eq!(arena.used_bytes(), before + s.len());
    let t = arena
        .try_alloc_fmt(format_args!("{}{}", Many(n / 2), "end"))
        .unwrap();
    assert_eq!(&*t, &*format!("{}end", Many(n / 2)));
    assert_eq!(&*s, &*expected);
}

#[test]
fn alloc_fmt_with_a_failing_display() {
    let arena = Arena::new();
    let kept = arena.alloc_str("kept");
    let before = arena.used_bytes();
    assert_eq!(
        arena.try_alloc_fmt(format_args!("x{}y", FailingDisplay)),
        Err(AllocError)
    );
    assert_eq!(
        arena.used_bytes(),
        before,
        "the partial text was not given back"
    );

    let r = catch_unwind(AssertUnwindSafe(|| {
        arena
            .alloc_fmt(format_args!("{}{}", Many(50), FailingDisplay))
            .len()
    }));
    let payload = r.expect_err("alloc_fmt with a failing Display must panic");
    let msg = panic_message(&*payload);
    assert!(
        msg.contains("formatting trait"),
        "unexpected panic message: {msg:?}"
    );
    assert_eq!(arena.used_bytes(), before);

    assert_eq!(arena.alloc_fmt(format_args!("{}!", 1)), "1!");
    assert_eq!(kept, "kept");
}

// ----- README examples -----

#[test]
fn readme_examples() {
    let arena = Arena::new();
    let x = arena.alloc(42u32);
    assert_eq!(*x, 42);
    let y = arena.alloc_with(|| 2 + 12);
    assert_eq!(*y, 14);
    let s = arena.alloc_slice_copy(&[1, 2, 3, 4, 5]);
    assert_eq!(s, &[1, 2, 3, 4, 5]);
    let arr: &mut [u8; 128] = arena.alloc_sized_slice_fill_default();
    assert!(arr.iter().all(|&b| b == 0));
    let arr = arena.alloc_slice_fill_with(12, |n| n as u8 + 1);
    assert_eq!(arr[2], 3);
    assert_eq!(arr.len(), 12);
    let hello = arena.alloc_str("hello world");
    assert_eq!(hello, "hello world");
    assert_eq!((*x, *y, s[4]), (42, 14, 5));

    let mut arena = Arena::new();
    let x = arena.alloc(42u32);
    assert_eq!(*x, 42);
    let first = addr(x);
    let held = arena.allocated_bytes();
    let chunks = arena.stats().chunks;
    assert_eq!(chunks, 1);
    arena.clear();
    assert_eq!(arena.used_bytes(), 0);
    let x = arena.alloc(10u32);
    assert_eq!(*x, 10);
    assert_eq!(addr(x), first, "clear did not reuse the same chunk");
    assert_eq!(arena.allocated_bytes(), held);
    assert_eq!(arena.stats().chunks, chunks);
    assert_eq!(arena.used_bytes(), 4);
}

// ----- scopes -----

#[test]
fn issue_program_compiles_and_passes() {
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

#[test]
fn alloc_slice_fill_iter_survives_an_impossible_lower_bound() {
    /// Claims at least `usize::MAX / 2` items but yields three.
    struct Liar(u8);
    impl Iterator for Liar {
        type Item = u64;
        fn next(&mut self) -> Option<u64> {
            self.0 += 1;
            (self.0 <= 3).then_some(u64::from(self.0))
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (usize::MAX / 2, None)
        }
    }
    let arena = Arena::new();
    assert_eq!(arena.alloc_slice_fill_iter(Liar(0)), &[1, 2, 3]);
    assert_eq!(
        arena.try_alloc_slice_fill_iter(Liar(0)).unwrap(),
        &[1, 2, 3]
    );
    assert_eq!(arena.used_bytes(), 48);
}
