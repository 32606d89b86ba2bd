//! What a caller that keeps every documented contract can never get from an arena: a block that
//! is still in use handed out again, or a position in memory the backing allocator no longer
//! holds. Each case is the shape of a fault once found: a fallible fill whose iterator or
//! initialiser allocates in the same arena, scopes nested on a position parked over a full chunk,
//! `into_slice` between a checkpoint and its restore, and a backing allocator whose `deallocate`
//! unwinds (in a reset, a trim, a scope's exit, the drop, or while a large block is freed). Run natively, under Miri (both borrow models) and AddressSanitizer.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use core::cell::Cell;
use core::fmt;
use core::ptr::NonNull;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arena_pool::allocator_api2::alloc::Layout;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::collections::String;
use arena_pool::{AllocOrInitError, Arena, ArenaRef, BumpAlloc, LocalArena, SyncArena};
use common::{Tracked, all_bytes, expect_backing_panic};

/// Scales a count down under Miri.
const fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { native }
}

/// `len` bytes of value `byte` placed in `arena` (written at once: Miri runs a per-element loop
/// about a thousand times slower).
fn bytes<'s, 'r, X: BumpAlloc + ?Sized>(arena: &'s X, len: usize, byte: u8) -> &'r mut [u8]
where
    X::Blocks<'s>: 'r,
{
    let p = arena.alloc_layout(Layout::array::<u8>(len).unwrap());
    // SAFETY: a fresh block of `len` bytes, written before the slice is made; it lives as long
    // as the arena's blocks (`Blocks<'s>`, which outlives `'r`), as the crate's own slices do.
    unsafe {
        p.as_ptr().write_bytes(byte, len);
        core::slice::from_raw_parts_mut(p.as_ptr(), len)
    }
}

/// Whether two blocks share a byte.
fn overlap<T, U>(a: &[T], b: &[U]) -> bool {
    let a = a.as_ptr_range();
    let b = b.as_ptr_range();
    (a.start as usize) < b.end as usize && (b.start as usize) < a.end as usize
}

// ----- fills whose iterator or initialiser allocates in the same arena, then fails -----

/// An iterator that places a byte in `arena` with its first item and fails at its second: the
/// byte lands between the position the fill started from and the buffer's first block (which is
/// allocated only with the first item, as the size hint is 0), within the buffer's alignment.
fn placing_then_failing<'a, X: BumpAlloc + ?Sized>(
    arena: &'a X,
    placed: &'a Cell<Option<NonNull<u8>>>,
) -> impl Iterator<Item = Result<u64, &'static str>> + 'a {
    let mut i = 0;
    core::iter::from_fn(move || {
        i += 1;
        match i {
            1 => {
                placed.set(Some(NonNull::from(arena.alloc(0xAAu8))));
                Some(Ok(1))
            }
            _ => Some(Err("stop")),
        }
    })
}

/// The byte the iterator placed is still its own after the fill failed: the arena hands out
/// other bytes, and the byte keeps its value.
fn check_placed_survives<X: BumpAlloc + ?Sized>(arena: &X, placed: &Cell<Option<NonNull<u8>>>) {
    let z = placed.get().expect("the iterator ran");
    let w: &mut [u8] = arena.alloc_slice_fill_copy(16, 0x55);
    assert!(
        !overlap(
            // SAFETY: `z` is a live byte of the arena (the point of the test).
            unsafe { core::slice::from_raw_parts(z.as_ptr(), 1) },
            w
        ),
        "a block placed by the fill's iterator was handed out again"
    );
    // SAFETY: as above.
    assert_eq!(unsafe { *z.as_ptr() }, 0xAA);
    assert!(w.iter().all(|&b| b == 0x55));
}

/// Every fallible fill on `arena`: its failure gives back what it placed itself and nothing
/// its iterator or initialiser placed.
fn fills_keep_what_their_callbacks_placed<X: BumpAlloc + ?Sized>(arena: &X) {
    // `alloc_slice_try_fill_iter`, with the position unaligned for `u64`.
    arena.alloc(0u8);
    let placed = Cell::new(None);
    let r: Result<&mut [u64], _> =
        arena.alloc_slice_try_fill_iter(placing_then_failing(arena, &placed));
    assert_eq!(r.err(), Some("stop"));
    check_placed_survives(arena, &placed);

    // Its `try_` form.
    arena.alloc(0u8);
    let placed = Cell::new(None);
    let r: Result<&mut [u64], _> =
        arena.try_alloc_slice_try_fill_iter(placing_then_failing(arena, &placed));
    assert!(matches!(r, Err(AllocOrInitError::Init("stop"))));
    check_placed_survives(arena, &placed);

    // The same with a panic instead of an error.
    arena.alloc(0u8);
    let placed = Cell::new(None);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut i = 0;
        arena.alloc_slice_fill_iter(core::iter::from_fn(|| {
            i += 1;
            if i == 1 {
                placed.set(Some(NonNull::from(arena.alloc(0xAAu8))));
                Some(1u64)
            } else {
                panic!("the iterator panics (test)")
            }
        }));
    }));
    assert!(r.is_err());
    check_placed_survives(arena, &placed);

    // A fill with an initialiser that places a block, then fails.
    arena.alloc(0u8);
    let placed = Cell::new(None);
    let r: Result<&mut [u64], &str> = arena.alloc_slice_try_fill_with(3, |i| {
        if i == 0 {
            placed.set(Some(NonNull::from(arena.alloc(0xAAu8))));
            Ok(1)
        } else {
            Err("stop")
        }
    });
    assert_eq!(r.err(), Some("stop"));
    check_placed_survives(arena, &placed);

    // `alloc_try_with` and `alloc_with` (a panic), whose initialiser places a block.
    arena.alloc(0u8);
    let placed = Cell::new(None);
    let r: Result<&mut u64, &str> = arena.alloc_try_with(|| {
        placed.set(Some(NonNull::from(arena.alloc(0xAAu8))));
        Err("stop")
    });
    assert_eq!(r.err(), Some("stop"));
    check_placed_survives(arena, &placed);
    arena.alloc(0u8);
    let placed = Cell::new(None);
    let r = catch_unwind(AssertUnwindSafe(|| {
        arena.alloc_with(|| -> u64 {
            placed.set(Some(NonNull::from(arena.alloc(0xAAu8))));
            panic!("the initialiser panics (test)")
        });
    }));
    assert!(r.is_err());
    check_placed_survives(arena, &placed);

    // Formatting whose `Display` places a block, then fails.
    struct Placing<'a, X: ?Sized>(&'a X, &'a Cell<Option<NonNull<u8>>>);
    impl<X: BumpAlloc + ?Sized> fmt::Display for Placing<'_, X> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("some text first")?;
            self.1.set(Some(NonNull::from(self.0.alloc(0xAAu8))));
            Err(fmt::Error)
        }
    }
    arena.alloc(0u8);
    let placed = Cell::new(None);
    assert!(
        arena
            .try_alloc_fmt(format_args!("{}", Placing(arena, &placed)))
            .is_err()
    );
    check_placed_survives(arena, &placed);
}

#[test]
fn a_failed_fill_keeps_what_its_iterator_placed_on_an_arena() {
    let arena = Arena::new();
    fills_keep_what_their_callbacks_placed(&arena);
    // And with the fill's buffer on a chunk of its own (the position near a chunk's end).
    let arena = Arena::new();
    arena.alloc(0u8);
    let room = arena.chunk_capacity();
    arena.alloc_slice_fill_copy(room - 3, 0u8);
    fills_keep_what_their_callbacks_placed(&arena);
}

#[test]
fn a_failed_fill_keeps_what_its_iterator_placed_on_scopes_and_handles() {
    let mut arena = Arena::new();
    fills_keep_what_their_callbacks_placed(arena.as_arena_ref());
    arena.with_scope(|scope| fills_keep_what_their_callbacks_placed(scope));
    {
        let guard = arena.scope_guard();
        fills_keep_what_their_callbacks_placed(&guard);
    }
    let shared = SyncArena::new();
    let local = shared.local();
    fills_keep_what_their_callbacks_placed(&local);
    fills_keep_what_their_callbacks_placed(local.as_arena_ref());
    // The shared path gives back only its own block (no padding): the same holds.
    fills_keep_what_their_callbacks_placed(&shared);
}

// ----- nested scopes on a position parked over a full chunk -----

/// An arena whose reset has set a probe on the one chunk it kept (an oversized chunk, kept while
/// a cycle measures what it needs), returned with that chunk's capacity.
fn probed_arena() -> Arena {
    let mut arena = Arena::new();
    for _ in 0..16 {
        arena.alloc_layout(Layout::array::<u8>(32 * 1024).unwrap());
    }
    for _ in 0..5 {
        arena.reset();
    }
    arena
}

#[test]
fn a_nested_scope_never_gives_its_parent_room_over_the_grandparents_blocks() {
    let mut arena = probed_arena();
    let parent = arena.as_arena_ref_mut();
    let cap = parent.chunk_capacity();
    // Fills the chunk: a scope entered now parks at the chunk's start with no room.
    let kept: &mut [u8] = bytes(parent, cap, 0xAA);
    parent.with_scope(|outer| {
        outer.with_scope(|_inner| {});
        let a: &mut [u8] = outer.alloc_slice_fill_copy(64, 0x55);
        assert!(
            !overlap(a, kept),
            "a scope's block lies in its parent's block"
        );
        outer.with_scope(|inner| {
            inner.with_scope(|_| {});
            let b: &mut [u8] = inner.alloc_slice_fill_copy(64, 0x66);
            assert!(!overlap(b, kept) && !overlap(b, a));
        });
        assert!(a.iter().all(|&x| x == 0x55));
    });
    assert!(all_bytes(kept, 0xAA));
}

#[test]
fn a_checkpoint_taken_while_parked_restores_no_room() {
    let mut arena = probed_arena();
    let parent = arena.as_arena_ref_mut();
    let cap = parent.chunk_capacity();
    let kept: &mut [u8] = bytes(parent, cap, 0xAA);
    parent.with_scope(|outer| {
        let cp = outer.checkpoint();
        outer.alloc_slice_fill_copy(100, 0x11u8);
        // SAFETY: `cp` is from this scope, and the slice allocated after it is not used again.
        unsafe { outer.reset_to(cp) };
        let a: &mut [u8] = outer.alloc_slice_fill_copy(64, 0x55);
        assert!(
            !overlap(a, kept),
            "a restored checkpoint handed out its parent's bytes"
        );
    });
    assert!(all_bytes(kept, 0xAA));
}

/// The same shapes on a chunk that was never probed, and on a full chunk whose last byte a
/// scope nested deeper fills again: the room a restore gives back is the room the position had.
#[test]
fn nested_scopes_on_full_chunks_restore_exactly_their_room() {
    let mut arena = Arena::new();
    let parent = arena.as_arena_ref_mut();
    for depth in 0..4 {
        let cap = parent.chunk_capacity();
        let kept: &mut [u8] = bytes(parent, cap, depth as u8);
        parent.with_scope(|a| {
            a.with_scope(|b| {
                let room = b.chunk_capacity();
                let x: &mut [u8] = bytes(b, room, 0xEE);
                b.with_scope(|c| {
                    c.with_scope(|_| {});
                    let y: &mut [u8] = c.alloc_slice_fill_copy(8, 0xDD);
                    assert!(!overlap(y, x) && !overlap(y, kept));
                });
                let z: &mut [u8] = b.alloc_slice_fill_copy(8, 0xCC);
                assert!(!overlap(z, x) && !overlap(z, kept));
                assert!(all_bytes(x, 0xEE));
            });
            let w: &mut [u8] = a.alloc_slice_fill_copy(8, 0xBB);
            assert!(!overlap(w, kept));
        });
        assert!(all_bytes(kept, depth as u8));
    }
}

// ----- `into_slice` between a checkpoint and its restore -----

/// A `Vec` made before a checkpoint, turned into a slice after it (the caller allocates nothing),
/// survives the checkpoint's restore, at every length around the large-block threshold.
fn into_slice_survives_reset_to(arena: &mut ArenaRef<'_>) {
    for (cap, len) in [
        (100_000, 1000),
        (100_000, 70_000),
        (100_000, 0),
        (200_000, 100_000),
        (1000, 10),
    ] {
        let mut v: Vec<u8, &ArenaRef> = Vec::with_capacity_in(cap, &*arena);
        // SAFETY: `len <= cap` bytes, all written before `set_len`.
        unsafe {
            v.as_mut_ptr().write_bytes(7, len);
            v.set_len(len);
        }
        let cp = arena.checkpoint();
        let s: &mut [u8] = ArenaRef::into_slice(v);
        let s = NonNull::from(s);
        // SAFETY: `cp` is from this arena; nothing was allocated after it.
        unsafe { arena.reset_to(cp) };
        let t: &mut [u8] = bytes(arena, len.max(1), 9);
        // SAFETY: `s` was made from a block allocated before `cp` (the point of the test).
        let s = unsafe { &*s.as_ptr() };
        assert!(
            !overlap(s, t),
            "reset_to handed out the bytes of a slice made before it"
        );
        assert!(all_bytes(s, 7));
    }
    // A string whose buffer became a large block and was then cut short (its room reserved at
    // once: a push of 70 000 bytes copies them one at a time, which under Miri takes minutes).
    let mut text = String::new_in(&*arena);
    text.reserve_exact(70_000);
    text.push_str(&"x".repeat(100));
    assert!(text.capacity() >= 70_000);
    let cp = arena.checkpoint();
    let s = NonNull::from(ArenaRef::into_str(text));
    // SAFETY: `cp` is from this arena; nothing was allocated after it.
    unsafe { arena.reset_to(cp) };
    arena.alloc_slice_fill_copy(100, b'y');
    // SAFETY: as above.
    assert_eq!(unsafe { &*s.as_ptr() }, "x".repeat(100));
}

#[test]
fn into_slice_after_a_checkpoint_survives_its_restore() {
    let mut arena = Arena::new();
    into_slice_survives_reset_to(arena.as_arena_ref_mut());
    arena.reset();
    arena.with_scope(into_slice_survives_reset_to);
    let shared = SyncArena::new();
    let mut local = shared.local();
    into_slice_survives_reset_to(local.as_arena_ref_mut());
    drop(local);
    let mut local: LocalArena<'_> = shared.local();
    local
        .as_arena_ref_mut()
        .with_scope(into_slice_survives_reset_to);
}

// ----- a backing allocator whose `deallocate` unwinds -----

/// A cycle of the arena: small blocks over several chunks, a large block, a scope that takes
/// chunks of its own (spares afterwards); `scale` sets how much.
fn cycle(arena: &mut Arena<&Tracked>, scale: usize) {
    for i in 0..scale {
        bytes(&*arena, 100 + i % 900, i as u8);
    }
    if scale > 4 {
        let mut v: Vec<u8, &Arena<&Tracked>> = Vec::with_capacity_in(70_000, &*arena);
        v.push(1);
        core::mem::forget(v);
    }
    arena.with_scope(|s| {
        for i in 0..scale {
            bytes(s, 200, i as u8);
        }
    });
}

/// After an unwind out of `what`, the arena is usable: what it hands out is writable, distinct
/// and keeps its values, and a reset and the drop run cleanly.
fn usable_after(arena: &mut Arena<&Tracked>) {
    let blocks: std::vec::Vec<&mut [u8]> = (0..scaled(300, 40))
        .map(|i| bytes(&*arena, 64 + i % 200, i as u8))
        .collect();
    for (i, b) in blocks.iter().enumerate() {
        assert!(
            arena.allocator().holds(NonNull::from(&**b).cast(), b.len()),
            "a block in memory the backing allocator does not hold"
        );
        assert!(all_bytes(b, i as u8));
    }
    for (i, a) in blocks.iter().enumerate() {
        for b in &blocks[i + 1..] {
            assert!(!overlap(a, b));
        }
    }
    arena.reset();
    arena.alloc_slice_fill_copy(64, 0xAB);
}

/// Every `deallocate` call of a reset (chunks, large blocks) unwinds in turn, over cycles that
/// grow, settle and shrink (so that the reset keeps, renews and trims): the arena stays usable.
#[test]
fn a_reset_whose_backing_deallocate_unwinds_leaves_a_usable_arena() {
    let scales = if cfg!(miri) {
        [30, 5, 30]
    } else {
        [400, 40, 400]
    };
    for (which, &scale) in scales.iter().enumerate() {
        // How many backing frees a reset after this cycle makes.
        let frees = {
            let backing = Tracked::default();
            let mut arena = Arena::new_in(&backing);
            for &s in &scales[..which] {
                cycle(&mut arena, s);
                arena.reset();
            }
            cycle(&mut arena, scale);
            let before = backing.deallocs();
            arena.reset();
            backing.deallocs() - before
        };
        for n in 0..frees {
            let backing = Tracked::default();
            let mut arena = Arena::new_in(&backing);
            for &s in &scales[..which] {
                cycle(&mut arena, s);
                arena.reset();
            }
            cycle(&mut arena, scale);
            backing.panic_in_dealloc(n);
            expect_backing_panic(|| arena.reset());
            usable_after(&mut arena);
        }
    }
}

#[test]
fn a_trim_or_scope_exit_whose_backing_deallocate_unwinds_leaves_a_usable_arena() {
    /// An arena with spare chunks (taken by a scope, left after it).
    fn with_spares(backing: &Tracked) -> Arena<&Tracked> {
        let mut arena = Arena::new_in(backing);
        cycle(&mut arena, scaled(300, 30));
        arena.with_scope(|s| {
            for _ in 0..scaled(40, 20) {
                bytes(s, 30_000, 3);
            }
        });
        arena
    }
    let spares = {
        let backing = Tracked::default();
        let mut arena = with_spares(&backing);
        let before = backing.deallocs();
        arena.trim();
        backing.deallocs() - before
    };
    assert!(spares >= 2, "the scope left spares to give back: {spares}");
    for n in 0..spares {
        let backing = Tracked::default();
        let mut arena = with_spares(&backing);
        backing.panic_in_dealloc(n);
        expect_backing_panic(|| arena.trim());
        usable_after(&mut arena);
    }
    // A scope's exit gives back the large blocks it made.
    let backing = Tracked::default();
    let mut arena = Arena::new_in(&backing);
    let kept: &mut [u8] = arena.alloc_slice_fill_copy(100, 0x77);
    let kept = NonNull::from(kept);
    backing.panic_in_dealloc(1);
    expect_backing_panic(|| {
        arena.with_scope(|s| {
            for _ in 0..3 {
                let mut v: Vec<u8, &ArenaRef> = Vec::with_capacity_in(70_000, s);
                v.push(1);
                core::mem::forget(v);
            }
        })
    });
    // SAFETY: allocated before the scope, never freed.
    assert!(unsafe { kept.as_ref() }.iter().all(|&x| x == 0x77));
    usable_after(&mut arena);
}

#[test]
fn a_drop_whose_backing_deallocate_unwinds_leaks_at_most() {
    for n in 0..4 {
        let backing = Tracked::default();
        let mut arena = Arena::new_in(&backing);
        cycle(&mut arena, scaled(300, 30));
        arena.alloc_slice_fill_copy(50, 1u8);
        backing.panic_in_dealloc(n);
        expect_backing_panic(move || drop(arena));
    }
}

/// A large block freed while the arena holds more in large blocks than its allowance: a smaller
/// kept block goes back first to make room for it, and that `deallocate` unwinds. The freed
/// block stays the arena's (counted, and given back by the reset), never lost between its list
/// and the kept ones; a resize that moved it would unwind while its caller still holds it.
fn a_free_whose_room_making_unwinds_keeps_the_block<X>(
    backing: &Tracked,
    arena: &mut X,
    reset: fn(&mut X),
    stats: fn(&X) -> arena_pool::ArenaStats,
) where
    for<'x> &'x X: arena_pool::allocator_api2::alloc::Allocator,
{
    use arena_pool::allocator_api2::alloc::Allocator;
    let layout = |size: usize, align: usize| Layout::from_size_align(size, align).unwrap();
    // Cycle 1: a peak of 1 MB in large blocks, 120 KB of them in use at the reset, which keeps
    // those: the allowance is about 1.26 MB from then on.
    let (peak, kept) = (layout(1_000_000, 8), layout(120_000, 8));
    let _in_use_at_reset = (&*arena).allocate(kept).unwrap();
    let p = (&*arena).allocate(peak).unwrap().cast::<u8>();
    // SAFETY: allocated just above with `peak`, not used again.
    unsafe { (&*arena).deallocate(p, peak) };
    reset(arena);
    assert_eq!(stats(arena).kept_large_blocks, 1);
    // Cycle 2: `x` (larger than the kept block, of another alignment, so it is new), then
    // blocks smaller than the kept one until the large blocks pass the allowance.
    let (x, small) = (layout(130_000, 4096), layout(70_000, 4096));
    let xp = (&*arena).allocate(x).unwrap().cast::<u8>();
    let smalls: std::vec::Vec<NonNull<u8>> = (0..16)
        .map(|_| (&*arena).allocate(small).unwrap().cast::<u8>())
        .collect();
    let s = stats(arena);
    assert_eq!((s.large_blocks, s.kept_large_blocks), (17, 1));
    // Freeing `x` gives the kept block back to make room, and that call unwinds.
    backing.panic_in_dealloc(0);
    // SAFETY: allocated above with `x`; not used again.
    expect_backing_panic(|| unsafe { (&*arena).deallocate(xp, x) });
    backing.disarm();
    let s = stats(arena);
    assert_eq!(s.kept_large_blocks, 0, "the kept block was given up");
    assert_eq!(s.large_blocks, 17, "the freed block stays the arena's");
    assert_eq!(
        s.chunks + s.large_blocks + s.kept_large_blocks,
        backing.held_blocks(),
        "every block the backing allocator holds is the arena's"
    );
    assert!(backing.holds(xp, x.size()));
    for q in smalls {
        // SAFETY: allocated above with `small`; not used again.
        unsafe { (&*arena).deallocate(q, small) };
    }
    reset(arena);
    let s = stats(arena);
    assert_eq!(s.large_blocks, 0);
    assert_eq!(
        s.chunks + s.kept_large_blocks,
        backing.held_blocks(),
        "the reset accounted for every block"
    );
}

#[test]
fn a_free_whose_room_making_unwinds_keeps_the_block_on_an_arena() {
    let backing = Tracked::default();
    let mut arena = Arena::new_in(&backing);
    a_free_whose_room_making_unwinds_keeps_the_block(
        &backing,
        &mut arena,
        |a| a.reset(),
        |a| a.stats(),
    );
}

#[test]
fn a_free_whose_room_making_unwinds_keeps_the_block_on_a_sync_arena() {
    let backing = Tracked::default();
    let mut arena = SyncArena::new_in(&backing);
    a_free_whose_room_making_unwinds_keeps_the_block(
        &backing,
        &mut arena,
        |a| a.reset(),
        |a| a.stats(),
    );
}
