//! `arena_pool::collections`: the UTF-8 `String<A>` on every allocator of the crate and on
//! `Global`, `format_in!` / `try_format_in!`, `collect_in` into `Vec`, `Box<[T]>` and `String`,
//! in-place growth at the end of an arena, allocation limits, panicking iterators and formatting
//! trait implementations.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;
use core::cell::Cell;
use core::fmt::{self, Write};
use core::ptr::NonNull;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arena_pool::allocator_api2::alloc::{Allocator, Global};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::collections::{FromIteratorIn, String};
use arena_pool::prelude::*;
use arena_pool::{
    Arena, ArenaRef, Pool, SizeClassPool, SyncArena, SyncPool, TypedPool, format_in, try_format_in,
};

// ----- helpers -----

/// The message of a caught panic.
fn message(payload: &(dyn core::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<std::string::String>()
        .map(|s| s.as_str())
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("")
}

/// Text with characters of one to four bytes.
const MIXED: &str = "aé€🦀";

/// Everything a `String` does, on one allocator.
fn exercise<A: Allocator + Copy>(alloc: A) {
    // push, push_str, write!
    let mut s = String::new_in(alloc);
    assert!(s.is_empty());
    s.push_str("Zürich");
    s.push(' ');
    s.push('€');
    write!(s, " {}-{:?}", 42, "ß").unwrap();
    s.write_char('🦀').unwrap();
    assert_eq!(s, "Zürich € 42-\"ß\"🦀");
    assert_eq!(s.len(), "Zürich € 42-\"ß\"🦀".len());
    assert_eq!(s.chars().count(), 16);

    // Long text, through several growths; every byte kept.
    let mut long = String::new_in(alloc);
    let mut expected = std::string::String::new();
    for i in 0..if cfg!(miri) { 80 } else { 200 } {
        let piece = &MIXED[..[1, 3, 6, 10][i % 4]];
        long.push_str(piece);
        expected.push_str(piece);
        long.push(char::from_u32(0x3B1 + (i as u32 % 25)).unwrap());
        expected.push(char::from_u32(0x3B1 + (i as u32 % 25)).unwrap());
    }
    assert_eq!(long, expected.as_str());
    assert!(long.capacity() >= long.len());

    // pop and truncate at boundaries.
    let mut t = String::from_str_in(MIXED, alloc);
    assert_eq!(t.pop(), Some('🦀'));
    assert_eq!(t.pop(), Some('€'));
    assert_eq!(t, "aé");
    t.truncate(10); // longer: nothing
    assert_eq!(t, "aé");
    t.truncate(1);
    assert_eq!(t, "a");
    t.clear();
    assert_eq!(t.pop(), None);

    // Comparisons, hashing, cloning, conversions.
    let c = long.clone();
    assert_eq!(c, long);
    assert_ne!(c.as_ptr(), long.as_ptr());
    let boxed: Box<str, A> = c.into_boxed_str();
    assert_eq!(&*boxed, expected.as_str());
    let bytes = String::from_str_in(MIXED, alloc).into_bytes();
    assert_eq!(bytes, MIXED.as_bytes());
    let back = String::from_utf8(bytes).unwrap();
    assert_eq!(back, MIXED);

    // Collected in the same allocator.
    let rev: String<A> = MIXED.chars().rev().collect_in(alloc);
    assert_eq!(rev, "🦀€éa");
    let v: Vec<u32, A> = (0..100).collect_in(alloc);
    assert_eq!(v.iter().sum::<u32>(), 4950);

    // format_in!
    let f = format_in!(alloc, "{}:{:>4}|{:?}", "k", 7, MIXED);
    assert_eq!(f, "k:   7|\"aé€🦀\"");

    // Leaked text lives on, in a block of the allocator: given back here by hand (on `Global` it
    // would otherwise leak for good).
    let s = String::from_str_in("leaked", alloc);
    assert_eq!(s.capacity(), 6);
    let leaked: &mut str = s.leak();
    assert_eq!(leaked, "leaked");
    let block = NonNull::from(leaked).cast::<u8>();
    // SAFETY: the string's block, allocated by `alloc` with the layout of its capacity (6 bytes,
    // align 1), is no longer used.
    unsafe { alloc.deallocate(block, Layout::array::<u8>(6).unwrap()) };
}

// ----- every allocator -----

#[test]
fn string_on_an_arena() {
    let arena = Arena::new();
    exercise(&arena);
}

#[test]
fn string_in_a_scope() {
    let mut arena = Arena::new();
    let outer = format_in!(&arena, "outer {}", 1).leak() as *const str;
    let used = arena.used_bytes();
    arena.with_scope(|scope: &mut ArenaRef| {
        exercise(&*scope);
        let s = format_in!(&*scope, "in the scope {}", "ü");
        assert_eq!(s, "in the scope ü");
    });
    // Everything the scope made is given back; the parent's text is untouched.
    assert_eq!(arena.used_bytes(), used);
    // SAFETY: allocated in the parent before the scope, which does not free it.
    assert_eq!(unsafe { &*outer }, "outer 1");
}

#[test]
fn string_on_a_sync_arena_and_its_local_handles() {
    let arena = SyncArena::new();
    exercise(&arena);
    let texts: std::vec::Vec<&str> = std::thread::scope(|t| {
        let handles: std::vec::Vec<_> = (0..2)
            .map(|i| {
                let arena = &arena;
                t.spawn(move || {
                    let local = arena.local();
                    exercise(&local);
                    // Text that outlives the handle: leak through the shared arena.
                    let s = format_in!(arena, "thread {i}: {}", "ç");
                    &*s.leak()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(texts, ["thread 0: ç", "thread 1: ç"]);
}

#[test]
fn string_on_global() {
    exercise(Global);
    let s: String = String::from_str_in("heap", Global);
    assert_eq!(s, "heap");
    assert_eq!(String::<Global>::default(), "");
}

#[test]
fn string_on_pools() {
    // A `Pool` of 32-byte slots keeps text of up to 32 bytes in its slots; longer text goes to
    // its backing allocator (routing by layout).
    let pool = Pool::new(Layout::new::<[u8; 32]>());
    exercise(&pool);
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 0));
    let short = String::from_str_in("fits a slot", &pool);
    assert_eq!(pool.in_use(), 1);
    let long = String::from_str_in(&"x".repeat(100), &pool);
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (1, 1));
    drop((short, long));
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 0));

    // A `SizeClassPool` takes every size; its blocks come back when the strings are dropped.
    let classes = SizeClassPool::new();
    exercise(&classes);
    assert_eq!(classes.stats().live_blocks(), 0);
    let all: std::vec::Vec<String<&SizeClassPool>> = (0..50)
        .map(|i| format_in!(&classes, "{}", "é".repeat(i)))
        .collect();
    assert_eq!(all[49].chars().count(), 49);
    assert_eq!(classes.stats().live_blocks(), 49); // "" takes no block
    drop(all);
    assert_eq!(classes.stats().live_blocks(), 0);

    let typed = TypedPool::<[u8; 64]>::new();
    exercise(&typed);
    let sync = SyncPool::new(Layout::new::<[u8; 16]>());
    exercise(&sync);
}

// ----- growth at the end of an arena -----

#[test]
fn a_string_that_is_the_last_block_grows_in_place_while_it_fits_the_chunk() {
    // (Under Miri, a smaller chunk: a push at a time is slow there.)
    let capacity = if cfg!(miri) { 1024 } else { 4096 };
    let arena = Arena::with_capacity(capacity);
    let chunk = arena.chunk_capacity();
    let mut s = String::new_in(&arena);
    s.push('é');
    let start = s.as_ptr();
    let mut moved_at = None;
    let mut i = 0;
    while moved_at.is_none() {
        let c = MIXED.chars().nth(i % 4).unwrap();
        let capacity = s.capacity();
        s.push(c);
        if s.capacity() <= chunk {
            // Still within the chunk: the same block, grown in place, and the only one.
            assert_eq!(s.as_ptr(), start, "moved at {} bytes", s.len());
            assert_eq!(arena.used_bytes(), s.capacity());
            assert_eq!(arena.stats().chunks, 1);
        } else {
            assert!(capacity <= chunk);
            moved_at = Some(s.len());
        }
        i += 1;
    }
    // It outgrew the chunk: moved once, text intact.
    assert_ne!(s.as_ptr(), start);
    let expected: std::string::String = core::iter::once('é')
        .chain((0..i).map(|i| MIXED.chars().nth(i % 4).unwrap()))
        .collect();
    assert_eq!(s, expected);
    // Capacities double from 8 bytes: `capacity` fits the chunk of `with_capacity(capacity)`,
    // twice it not.
    assert!(moved_at.unwrap() > capacity, "moved at {moved_at:?}");
}

#[test]
fn a_string_that_is_not_the_last_block_moves_and_keeps_its_text() {
    let arena = Arena::new();
    let mut s = String::from_str_in("first", &arena);
    let other = arena.alloc(1u64);
    let before = s.as_ptr();
    s.push_str(" and more than fits the old block");
    assert_ne!(s.as_ptr(), before);
    assert_eq!(s, "first and more than fits the old block");
    assert_eq!(*other, 1);
}

#[test]
fn shrink_and_boxing_give_the_tail_back() {
    let arena = Arena::new();
    let mut s = String::with_capacity_in(256, &arena);
    s.push_str(MIXED);
    assert_eq!(arena.used_bytes(), 256);
    s.shrink_to_fit();
    assert_eq!(arena.used_bytes(), MIXED.len());
    s.reserve(100);
    let b = s.into_boxed_str();
    assert_eq!((&*b, arena.used_bytes()), (MIXED, MIXED.len()));
}

// ----- fmt::Write, format_in!, try_format_in! -----

#[test]
fn write_macro_and_format_in() {
    let arena = Arena::new();
    let mut s = String::new_in(&arena);
    for i in 0..3 {
        write!(s, "{i}·").unwrap();
    }
    writeln!(s, "{:>3}", "ñ").unwrap();
    assert_eq!(s, "0·1·2·  ñ\n");

    // Any allocator expression, captured identifiers, a trailing comma, a plain literal.
    let name = "Ωmega";
    assert_eq!(format_in!(&arena, "{name}!"), "Ωmega!");
    assert_eq!(format_in!(&arena, "{}+{}", 1, 2,), "1+2");
    assert_eq!(format_in!(Global, "literal only"), "literal only");
    let alloc = &arena;
    assert_eq!(
        format_in!(alloc, "{:?}", Some(alloc.used_bytes() > 0)),
        "Some(true)"
    );
    // A literal takes exactly its bytes.
    let before = arena.used_bytes();
    let lit = format_in!(&arena, "exact");
    assert_eq!((lit.capacity(), arena.used_bytes() - before), (5, 5));

    let ok = try_format_in!(&arena, "{}-{}", "a", 'β').unwrap();
    assert_eq!(ok, "a-β");
}

/// A `Display` implementation that fails.
struct Fails;

impl fmt::Display for Fails {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Err(fmt::Error)
    }
}

#[test]
fn a_failing_display_panics_with_a_clear_message_and_frees_the_text() {
    let arena = Arena::new();
    let kept = format_in!(&arena, "kept");
    let used = arena.used_bytes();
    let e = catch_unwind(AssertUnwindSafe(|| {
        format_in!(&arena, "{} then {}", "some text", Fails)
    }))
    .unwrap_err();
    assert!(
        message(&*e).contains("formatting trait implementation"),
        "{:?}",
        message(&*e)
    );
    // The partial text was dropped: the arena rolled it back.
    assert_eq!(arena.used_bytes(), used);
    let e = catch_unwind(AssertUnwindSafe(|| {
        try_format_in!(&arena, "{}{}", "x", Fails)
    }))
    .unwrap_err();
    assert!(message(&*e).contains("formatting trait implementation"));
    assert_eq!(kept, "kept");
}

// ----- allocation limits -----

#[test]
fn try_reserve_and_try_format_in_hit_the_limit_and_lose_nothing() {
    let arena = Arena::new();
    arena.set_allocation_limit(Some(2048));
    let mut s = String::from_str_in("intact ✓", &arena);
    let capacity = s.capacity();
    let used = arena.used_bytes();

    assert!(s.try_reserve(1 << 20).is_err());
    assert!(s.try_reserve_exact(1 << 20).is_err());
    assert!(s.try_push_str(&"x".repeat(4096)).is_err());
    assert!(s.try_reserve(usize::MAX).is_err()); // capacity overflow
    assert_eq!((s.as_str(), s.capacity()), ("intact ✓", capacity));
    assert_eq!(arena.used_bytes(), used);
    assert!(String::try_with_capacity_in(1 << 20, &arena).is_err());
    assert!(String::try_from_str_in(&"y".repeat(4096), &arena).is_err());

    // The fallible macro: Err, and the partial text is freed.
    let r = try_format_in!(&arena, "{}{:>4000}", s, "end");
    assert!(r.is_err());
    assert_eq!(arena.used_bytes(), used);

    // Within the limit, all of them work.
    s.try_reserve(100).unwrap();
    s.try_push('!').unwrap();
    assert_eq!(s, "intact ✓!");
    assert_eq!(try_format_in!(&arena, "{}", 5).unwrap(), "5");
}

#[test]
fn growth_past_the_limit_panics_naming_the_cause_and_keeps_the_string() {
    let arena = Arena::new();
    arena.set_allocation_limit(Some(2048));
    let mut s = String::from_str_in("before", &arena);
    let big = "z".repeat(4096);
    let e = catch_unwind(AssertUnwindSafe(|| s.push_str(&big))).unwrap_err();
    assert!(
        message(&*e).contains("cannot make room for 4096 more bytes"),
        "{:?}",
        message(&*e)
    );
    assert_eq!(s, "before");
    let e = catch_unwind(AssertUnwindSafe(|| {
        let _ = format_in!(&arena, "{big}");
    }))
    .unwrap_err();
    assert!(message(&*e).contains("memory allocation failed"));
    s.push('!');
    assert_eq!(s, "before!");
}

// ----- Unicode -----

#[test]
fn truncate_inside_a_character_panics_with_a_clear_message() {
    let arena = Arena::new();
    let mut s = String::from_str_in("aé€🦀", &arena);
    for (cut, c) in [(2, 'é'), (4, '€'), (5, '€'), (7, '🦀'), (9, '🦀')] {
        let e = catch_unwind(AssertUnwindSafe(|| s.truncate(cut))).unwrap_err();
        let m = message(&*e);
        assert!(m.contains("not on a character boundary"), "{m}");
        assert!(
            m.contains(&format!("byte {cut} is inside the character {c:?}")),
            "{m}"
        );
    }
    assert_eq!(s, "aé€🦀");
    for (cut, rest) in [(10, "aé€🦀"), (6, "aé€"), (3, "aé"), (1, "a"), (0, "")] {
        s.truncate(cut);
        assert_eq!(s, rest);
    }
}

#[test]
fn from_utf8_gives_invalid_bytes_back() {
    let arena = Arena::new();
    let mut bytes = Vec::new_in(&arena);
    bytes.extend_from_slice("ok é".as_bytes());
    bytes.push(0xc3); // a truncated 'é'
    let e = String::from_utf8(bytes).unwrap_err();
    assert_eq!(e.utf8_error().valid_up_to(), 5);
    assert_eq!(e.as_bytes().len(), 6);
    assert!(
        e.to_string().contains("utf-8 byte sequence from index 5"),
        "{e}"
    );
    let mut bytes = e.into_bytes();
    bytes.pop();
    assert_eq!(String::from_utf8(bytes).unwrap(), "ok é");
}

// ----- traits -----

#[test]
fn strings_key_a_hash_map_searched_by_str() {
    let arena = Arena::new();
    let mut map = hashbrown::HashMap::new_in(&arena);
    for (i, w) in ["ünïcode", "keys", "in", "the", "arena"].iter().enumerate() {
        map.insert(String::from_str_in(w, &arena), i);
    }
    assert_eq!(map.get("keys"), Some(&1));
    assert_eq!(map.get("ünïcode"), Some(&0));
    assert_eq!(map.get("missing"), None);

    // Hashes like `str`.
    use core::hash::BuildHasher;
    let h = map.hasher();
    assert_eq!(
        h.hash_one(String::from_str_in("arena", &arena)),
        h.hash_one("arena")
    );
}

#[test]
fn comparisons_order_and_conversions() {
    let arena = Arena::new();
    let a = String::from_str_in("apple", &arena);
    let b = String::from_str_in("banana", Global);
    assert_ne!(a, b);
    assert_eq!(a, "apple");
    assert_eq!("apple", a);
    assert_eq!(a, *"apple");
    assert_eq!(*"apple", a);
    let owned = std::string::String::from("apple");
    assert_eq!(a, owned);
    assert_eq!(owned, a);
    assert_ne!(a, *"apples");
    let mut words: std::vec::Vec<String<&Arena>> = ["pear", "apple", "fig"]
        .iter()
        .map(|w| String::from_str_in(w, &arena))
        .collect();
    words.sort();
    assert_eq!(words, ["apple", "fig", "pear"]);
    assert!(words[0] < words[1]);

    let s: &str = a.as_ref();
    let bytes: &[u8] = a.as_ref();
    assert_eq!((s, bytes), ("apple", &b"apple"[..]));
    assert_eq!(&a[1..3], "pp"); // indexing through `Deref`
    assert_eq!(format!("{a} {a:?} {a:>7}"), "apple \"apple\"   apple");

    let mut m = String::from_str_in("mixed", &arena);
    m.make_ascii_uppercase(); // `str` methods through `DerefMut`
    m += "!";
    let m = m + "?";
    assert_eq!(m, "MIXED!?");
    let v: Vec<u8, &Arena> = m.into();
    assert_eq!(v, b"MIXED!?");
}

#[test]
fn extend_with_chars_strs_and_strings() {
    let arena = Arena::new();
    let mut s = String::new_in(&arena);
    s.extend(['a', 'ß']);
    s.extend(&['→', 'z']);
    s.extend(["str", "ïng"]);
    s.extend([String::from_str_in("·global", Global)]);
    assert_eq!(s, "aß→zstrïng·global");
}

// ----- collect_in -----

#[test]
fn collect_in_vec_box_and_string() {
    let arena = Arena::new();
    let v: Vec<u32, _> = (0..10).collect_in(&arena);
    assert_eq!(v, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // An exact-size iterator takes one block of its size.
    assert_eq!((v.capacity(), arena.used_bytes()), (10, 40));
    let odd = (0..10u8)
        .filter(|n| n % 2 == 1)
        .collect_in::<Vec<_, _>>(&arena);
    assert_eq!(odd, [1, 3, 5, 7, 9]);
    let b: Box<[u16], _> = (1..=3).collect_in(&arena);
    assert_eq!(&*b, &[1, 2, 3]);

    let s: String<_> = "abc€".chars().rev().collect_in(&arena);
    assert_eq!(s, "€cba");
    let s: String<_> = ['x', 'ÿ'].iter().collect_in(&arena);
    assert_eq!(s, "xÿ");
    let s: String<_> = "a b c".split(' ').collect_in(&arena);
    assert_eq!(s, "abc");
    let parts = [
        String::from_str_in("ein", Global),
        String::from_str_in("zwei", Global),
    ];
    let s: String<&Arena> = parts.into_iter().collect_in(&arena);
    assert_eq!(s, "einzwei");
    let s = String::from_iter_in("from".chars(), Global);
    assert_eq!(s, "from");

    // Nested: a Vec of Strings, all in the arena.
    let lines: Vec<String<&Arena>, _> = (0..3)
        .map(|i| format_in!(&arena, "line {i}"))
        .collect_in(&arena);
    assert_eq!(lines[2], "line 2");
}

/// An iterator whose `size_hint` says what it is told to.
struct Hint<I> {
    inner: I,
    hint: (usize, Option<usize>),
}

impl<I: Iterator> Iterator for Hint<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        self.inner.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.hint
    }
}

#[test]
fn collect_in_survives_wrong_size_hints() {
    let arena = Arena::new();
    for hint in [
        (0, Some(0)),
        (usize::MAX, None),
        (1000, Some(1)),
        (2, Some(2)),
    ] {
        let v: Vec<u64, _> = Hint {
            inner: 0..5u64,
            hint,
        }
        .collect_in(&arena);
        assert_eq!(v, [0, 1, 2, 3, 4], "{hint:?}");
        let s: String<_> = Hint {
            inner: "héllo".chars(),
            hint,
        }
        .collect_in(&arena);
        assert_eq!(s, "héllo", "{hint:?}");
    }
}

#[test]
fn collect_in_an_iterator_that_allocates_in_the_same_arena() {
    let arena = Arena::new();
    let v: Vec<&str, _> = (0..200)
        .map(|i| &*arena.alloc_fmt(format_args!("{i}")))
        .collect_in(&arena);
    assert_eq!(v.len(), 200);
    assert!(v.iter().enumerate().all(|(i, s)| *s == i.to_string()));
}

/// Counts its drops in a shared counter.
struct DropCounter<'c>(&'c Cell<usize>);

impl Drop for DropCounter<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn collect_in_a_panicking_iterator_drops_each_item_once() {
    let n = if cfg!(miri) { 20 } else { 200 };
    for panic_at in [0, 1, 7, n / 2] {
        let arena = Arena::new();
        let drops = Cell::new(0);
        let made = Cell::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let v: Vec<DropCounter, _> = (0..n)
                .map(|i| {
                    if i == panic_at {
                        panic!("iterator panics at {i}");
                    }
                    made.set(made.get() + 1);
                    DropCounter(&drops)
                })
                .collect_in(&arena);
            v
        }));
        let e = r.err().expect("the iterator panicked");
        assert_eq!(message(&*e), format!("iterator panics at {panic_at}"));
        // Every item made was dropped exactly once, and the block went back to the arena.
        assert_eq!((made.get(), drops.get()), (panic_at, panic_at));
        assert_eq!(arena.used_bytes(), 0);
    }
    // Without a panic: dropped when the Vec is.
    let arena = Arena::new();
    let drops = Cell::new(0);
    let v: Vec<DropCounter, _> = (0..n).map(|_| DropCounter(&drops)).collect_in(&arena);
    assert_eq!(drops.get(), 0);
    drop(v);
    assert_eq!(drops.get(), n);
}

#[test]
fn collect_in_a_panicking_iterator_into_a_string_frees_it() {
    let arena = Arena::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        let s: String<&Arena> = "abcdef"
            .chars()
            .map(|c| if c == 'e' { panic!("at e") } else { c })
            .collect_in(&arena);
        s
    }));
    assert!(r.is_err());
    assert_eq!(arena.used_bytes(), 0);
}

// ----- leaking -----

/// Text for the arena's lifetime (the borrow of `arena`), made in a function.
fn label(arena: &Arena, n: u32) -> &str {
    format_in!(arena, "label-{n}").leak()
}

#[test]
fn leaked_text_lives_as_long_as_the_arena_borrow() {
    let mut arena = Arena::new();
    for round in 0..3 {
        let labels: std::vec::Vec<&str> = (0..10).map(|n| label(&arena, n)).collect();
        assert_eq!(labels[9], "label-9");
        let mut s = String::with_capacity_in(64, &arena);
        s.push_str("shrunk");
        s.shrink_to_fit();
        let leaked: &mut str = s.leak();
        leaked.make_ascii_uppercase();
        assert_eq!(leaked, "SHRUNK");
        assert!(arena.used_bytes() > 0, "round {round}");
        arena.reset();
    }
    // `Vec::leak` is the same for other element types.
    let v: &mut [u32] = (0..4).collect_in::<Vec<_, _>>(&arena).leak();
    v[0] = 9;
    assert_eq!(v, [9, 1, 2, 3]);
}

#[test]
fn allocator_api2_vec_macro_takes_the_arena_in_its_repeat_form() {
    // allocator-api2's `vec!` (absent with the `nightly` feature, where its types are std's).
    // Its list form, `vec![in &arena; 1, 2, 3]`, does not compile with 0.2.21 (it builds a
    // `Box<[_], Global>`); `Vec::from_iter_in([1, 2, 3], &arena)` does what it would.
    #[cfg(not(feature = "nightly"))]
    {
        let arena = Arena::new();
        let zeros = arena_pool::allocator_api2::vec![in &arena; 0u32; 4];
        let mut empty = arena_pool::allocator_api2::vec![in &arena];
        empty.push(1u8);
        assert_eq!(
            (zeros.as_slice(), empty.as_slice()),
            (&[0u32; 4][..], &[1u8][..])
        );
        assert_eq!(arena.used_bytes(), 16 + 8);
    }
    let arena = Arena::new();
    let list = Vec::from_iter_in([1u8, 2, 3], &arena);
    assert_eq!((list.as_slice(), list.capacity()), (&[1u8, 2, 3][..], 3));
}

#[test]
fn try_collect_in_returns_the_refusal_and_frees_what_it_took() {
    let arena = Arena::new();
    arena.set_allocation_limit(Some(4096));
    let used = arena.used_bytes();
    let counted = Cell::new(0);
    let big = (0..10_000u64).inspect(|_| counted.set(counted.get() + 1));
    let r: Result<Vec<u64, _>, _> = big.try_collect_in(&arena);
    assert!(r.is_err());
    // The items taken were dropped with the buffer, which went back.
    assert_eq!(arena.used_bytes(), used);
    assert!(counted.get() < 10_000);
    let r: Result<String<_>, _> = core::iter::repeat_n("0123456789", 1000).try_collect_in(&arena);
    assert!(r.is_err());
    assert_eq!(arena.used_bytes(), used);
    // Within the limit, every target is built.
    let v: Vec<u32, _> = (0..10).try_collect_in(&arena).unwrap();
    let b: Box<[u32], _> = (0..10).try_collect_in(&arena).unwrap();
    let s: String<_> = "abc".chars().try_collect_in(&arena).unwrap();
    assert_eq!(
        (&v[..], &b[..], s.as_str()),
        (&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9][..], &v[..], "abc")
    );
}

#[test]
fn vec_in_builds_in_the_allocator_given() {
    let arena = Arena::new();
    let v = arena_pool::vec_in![&arena; String::from_str_in("a", &arena), String::from_str_in("b", &arena)];
    assert_eq!(v.len(), 2);
    let z = arena_pool::vec_in![&arena; 7u16; 5];
    assert_eq!(z, [7; 5]);
    let e: Vec<u8, _> = arena_pool::vec_in![&arena];
    assert!(e.is_empty());
    let shared = arena_pool::SyncArena::new();
    assert_eq!(arena_pool::vec_in![&shared; 1, 2], [1, 2]);
    let pool = arena_pool::Pool::for_type::<[u64; 2]>();
    assert_eq!(arena_pool::vec_in![&pool; 9u64; 2], [9, 9]);
}

#[test]
fn string_edits_in_the_middle_keep_utf8_and_the_allocator() {
    let arena = Arena::new();
    let mut s = String::from_str_in("añc", &arena);
    s.insert(0, '¿');
    s.insert_str(s.len(), "?!");
    assert_eq!(s, "¿añc?!");
    assert_eq!(s.remove(3), 'ñ');
    assert_eq!(s, "¿ac?!");
    s.replace_range(2..3, "ßßß");
    assert_eq!(s, "¿ßßßc?!");
    s.replace_range(..2, "");
    assert_eq!(s, "ßßßc?!");
    s.extend_from_within(6..);
    assert_eq!(s, "ßßßc?!c?!");
    s.retain(|c| c != 'ß');
    assert_eq!(s, "c?!c?!");
    let rest = s.split_off(3);
    assert_eq!((s.as_str(), rest.as_str()), ("c?!", "c?!"));
    assert!(core::ptr::eq(*rest.allocator(), &arena));

    // A drain removes its whole range, used up or not, from either end.
    let mut t = String::from_str_in("αβγδε", &arena);
    let mut d = t.drain(2..8);
    assert_eq!((d.next(), d.next_back()), (Some('β'), Some('δ')));
    assert_eq!(d.as_str(), "γ");
    drop(d);
    assert_eq!(t, "αε");
    let all: std::string::String = t.drain(..).collect();
    assert_eq!((all.as_str(), t.as_str()), ("αε", ""));

    let lossy = String::from_utf8_lossy_in(b"ok \xF0\x90\x80 \xE2\x82\xAC", &arena);
    assert_eq!(lossy, "ok \u{FFFD} €");
}

#[test]
fn string_edits_refuse_bad_positions_and_survive_a_panicking_predicate() {
    let arena = Arena::new();
    let mut s = String::from_str_in("añb", &arena);
    let inside = catch_unwind(AssertUnwindSafe(|| s.insert(2, 'x'))).unwrap_err();
    assert!(message(&*inside).contains("not on a character boundary"));
    let past = catch_unwind(AssertUnwindSafe(|| s.remove(4))).unwrap_err();
    assert!(message(&*past).starts_with("arena-pool: "));
    let (from, to) = (3, 1);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(s.drain(from..to)))).is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| s.split_off(9))).is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| s.replace_range(..2, "z"))).is_err());
    assert_eq!(s, "añb");

    // A predicate that panics leaves the characters kept so far and those it did not reach.
    let mut t = String::from_str_in("a1ñ2b3", &arena);
    let mut seen = 0;
    let e = catch_unwind(AssertUnwindSafe(|| {
        t.retain(|c| {
            seen += 1;
            assert!(seen < 5, "stop");
            !c.is_ascii_digit()
        })
    }));
    assert!(e.is_err());
    assert_eq!(t, "añb3");

    // At the limit, the fallible insert returns the refusal and changes nothing.
    arena.set_allocation_limit(Some(arena.allocated_bytes_including_metadata()));
    let mut u = String::from_str_in("", &arena);
    assert!(u.try_insert_str(0, &"x".repeat(100_000)).is_err());
    assert!(u.is_empty());
}
