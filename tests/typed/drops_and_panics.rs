//! Drops (the arena runs none; an owning box drops once) and panic safety: an initialiser, a
//! clone or an iterator that panics drops what it built and gives the room back.

use crate::{CloneBudget, CountDrop, Tracked, ZstDrop, boom, drops, take_dropped};
use arena_pool::allocator_api2::boxed::Box as ArenaBox;
use arena_pool::{AllocOrInitError, Arena};
use std::panic::{AssertUnwindSafe, catch_unwind};

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
