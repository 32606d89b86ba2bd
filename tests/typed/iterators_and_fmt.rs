//! Iterators whose size hints lie or that allocate in the same arena, and formatting into the
//! arena.

use crate::{FailingDisplay, Liar, Many, addr, disjoint, panic_message, range};
use arena_pool::{AllocError, Arena};
use std::panic::{AssertUnwindSafe, catch_unwind};

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
