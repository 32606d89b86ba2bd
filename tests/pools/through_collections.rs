//! `Box`, `Vec` and `hashbrown` on the pools: churn, the slot / classes / fallback, over-aligned
//! and zero-sized layouts, and a `Pool` on an `Arena`.

use crate::common::Counting;
use crate::{
    Lcg, addr, class_size, drop_in_order, empty_cache, kept_in_place, layout, live_classes,
};
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec as AVec;
use arena_pool::{Arena, Pool, SizeClassOptions, SizeClassPool, TypedPool};
use std::ptr::NonNull;

/// `rounds` rounds of `n` boxes made by `make` (checked by `check`); after the first round the
/// backing allocator is asked for nothing and its live bytes never exceed the first round's peak.
fn box_churn<T>(
    counting: &Counting,
    rounds: u64,
    n: u64,
    make: impl Fn(u64, u64) -> T,
    check: impl Fn(&T, u64, u64),
) {
    let mut peak = 0;
    let mut allocs = 0;
    for round in 0..rounds {
        let mut boxes = Vec::with_capacity(n as usize);
        for i in 0..n {
            boxes.push(make(round, i));
            if round > 0 {
                assert!(
                    counting.live.get() <= peak,
                    "round {round}: backing live bytes {} above the first round's {peak}",
                    counting.live.get()
                );
                assert_eq!(
                    counting.allocs.get(),
                    allocs,
                    "round {round}: new backing allocation"
                );
            }
        }
        if round == 0 {
            peak = counting.live.get();
            allocs = counting.allocs.get();
            assert!(peak > 0);
        }
        for (i, b) in boxes.iter().enumerate() {
            check(b, round, i as u64);
        }
        drop_in_order(boxes, round);
    }
    assert_eq!(counting.allocs.get(), allocs);
}

/// `box_churn` of `[u64; 3]` boxes on a pool that serves them from slots (`Pool` or
/// `TypedPool`), whose `stats` are read by `stats`; everything is freed at the end.
fn slot_box_churn<P>(counting: &Counting, pool: &P, stats: impl Fn(&P) -> arena_pool::PoolStats)
where
    for<'p> &'p P: Allocator,
{
    let (rounds, n) = if cfg!(miri) { (10, 50) } else { (200, 1000) };
    box_churn(
        counting,
        rounds,
        n,
        |r, i| Box::new_in([r, i, r ^ i], pool),
        |b, r, i| assert_eq!(**b, [r, i, r ^ i]),
    );
    let s = stats(pool);
    assert_eq!(s.in_use, 0);
    assert!(s.capacity >= n as usize);
    assert_eq!(s.fallback_blocks, 0);
}

#[test]
fn pool_box_churn_is_steady_after_the_first_round() {
    let counting = Counting::default();
    let pool = Pool::new_in(Layout::new::<[u64; 3]>(), &counting);
    slot_box_churn(&counting, &pool, Pool::stats);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

#[test]
fn typed_pool_box_churn_is_steady_after_the_first_round() {
    let counting = Counting::default();
    let pool = TypedPool::<[u64; 3], _>::new_in(&counting);
    slot_box_churn(&counting, &pool, TypedPool::stats);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// Memory of a `Pool` (the backing allocator's live bytes, exact): one live object holds one
/// small slab; a live set of `n` objects, replaced one at a time, holds at most 1.3x its slots
/// plus one first slab and a header per slab (the rule on `Pool`); the address map's table (an
/// entry of 16 bytes per 4 KiB granule of a slab, at most a quarter full after it grows, and the
/// old table held while the new one fills) adds at most a thirty-second of that and 128 bytes
/// per slab.
#[test]
fn pool_memory_follows_the_live_set() {
    let counts: &[usize] = if cfg!(miri) {
        &[1, 5, 60]
    } else {
        &[1, 5, 60, 1000, 10_007]
    };
    for size in [8, 32, 64, 256, 1024] {
        for &n in counts {
            let counting = Counting::default();
            let l = layout(size, 8);
            let pool = Pool::new_in(l, &counting);
            let mut live: Vec<NonNull<u8>> =
                (0..n).map(|_| pool.allocate(l).unwrap().cast()).collect();
            let mut rng = Lcg(n as u64 + 1);
            for _ in 0..2 * n {
                let i = rng.next() as usize % n;
                // SAFETY: a live block of `pool`, freed once with its layout.
                unsafe { pool.deallocate(live[i], l) };
                live[i] = pool.allocate(l).unwrap().cast();
            }
            let s = pool.stats();
            let first_slab = (512 / size).max(4) * size;
            let rule = (13 * n * size).div_ceil(10) + first_slab + s.slabs * (64 + 8);
            assert!(
                s.bytes_held <= rule,
                "{size} B x {n}: slabs hold {} B, the rule allows {rule} ({s:?})",
                s.bytes_held
            );
            let map = s.bytes_held / 32 + 128 * s.slabs;
            assert!(
                counting.peak.get() <= s.bytes_held + map,
                "{size} B x {n}: {} B at the peak for {} B of slabs",
                counting.peak.get(),
                s.bytes_held
            );
            if n == 1 && size == 32 {
                assert!(
                    counting.peak.get() <= 1024,
                    "one object: {} B",
                    counting.peak.get()
                );
            }
            for p in live {
                // SAFETY: as above.
                unsafe { pool.deallocate(p, l) };
            }
        }
    }
}

/// A list whose nodes point to each other through the pool they live in; a `Vec` of the type,
/// which fits a slot while it holds one value and moves to the backing allocator after; a
/// capacity, `reset` and `Debug`.
#[test]
fn typed_pool_serves_recursive_types_and_other_layouts() {
    struct Node<'p> {
        value: u64,
        next: Option<Box<Node<'p>, &'p TypedPool<Node<'p>, &'p Counting>>>,
    }
    let counting = Counting::default();
    let mut pool = TypedPool::<Node<'_>, _>::with_capacity_in(100, &counting);
    assert!(pool.capacity() >= 100);
    let held = counting.live.get();
    let n = if cfg!(miri) { 20 } else { 100 };
    {
        let mut head = None;
        for value in 0..n {
            head = Some(Box::new_in(Node { value, next: head }, &pool));
        }
        assert_eq!(pool.in_use(), n as usize);
        assert_eq!(counting.live.get(), held, "the first slab holds the list");
        let mut sum = 0;
        let mut node = head.as_deref();
        while let Some(x) = node {
            sum += x.value;
            node = x.next.as_deref();
        }
        assert_eq!(sum, n * (n - 1) / 2);
        // Unlink the list node by node (a recursive drop would be deep).
        while let Some(mut x) = head {
            head = x.next.take();
        }
    }
    assert_eq!(pool.in_use(), 0);

    let mut v: AVec<u64, _> = AVec::with_capacity_in(1, &pool);
    v.push(7);
    assert_eq!(
        (pool.in_use(), pool.stats().fallback_blocks),
        (1, 0),
        "one u64 fits the slot"
    );
    v.extend(0..40);
    assert_eq!(
        (pool.in_use(), pool.stats().fallback_blocks),
        (0, 1),
        "moved to the backing"
    );
    assert_eq!(v[0], 7);
    assert_eq!(v.iter().skip(1).sum::<u64>(), (0..40).sum::<u64>());
    v.truncate(1);
    v.shrink_to_fit();
    assert_eq!(
        (pool.in_use(), pool.stats().fallback_blocks),
        (1, 0),
        "back in a slot"
    );
    assert_eq!(v[0], 7);
    drop(v);

    let b = Box::new_in(
        Node {
            value: 1,
            next: None,
        },
        &pool,
    );
    drop(b);
    pool.reset();
    assert_eq!(pool.in_use(), 0);
    let debug = format!("{pool:?}");
    assert!(
        debug.starts_with("TypedPool") && debug.contains("Node"),
        "{debug}"
    );
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// Boxes of two classes (32 and 320 bytes) in one `Vec`.
enum Mixed<A: Allocator> {
    Small(Box<[u64; 3], A>),
    Large(Box<[u64; 40], A>),
}

#[test]
fn size_class_box_churn_is_steady_after_the_first_round() {
    let (rounds, n) = if cfg!(miri) { (10, 50) } else { (200, 1000) };
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    box_churn(
        &counting,
        rounds,
        n,
        |r, i| {
            if i % 3 == 0 {
                Mixed::Large(Box::new_in([r ^ i; 40], &pool))
            } else {
                Mixed::Small(Box::new_in([r, i, r ^ i], &pool))
            }
        },
        |b, r, i| match b {
            Mixed::Large(b) => assert_eq!(**b, [r ^ i; 40]),
            Mixed::Small(b) => assert_eq!(**b, [r, i, r ^ i]),
        },
    );
    // All freed: only cached empty pages are left, and the small pages kept in place.
    let s = pool.stats();
    assert_eq!(s.live_blocks(), 0);
    assert_eq!(s.pages, s.empty_pages + kept_in_place(&s));
    assert!(s.empty_bytes <= empty_cache(&pool));
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- Vec through the slot / classes / fallback -----

#[test]
fn pool_vec_leaves_the_slot_and_comes_back() {
    let counting = Counting::default();
    let pool = Pool::new_in(layout(64, 8), &counting);
    let byte = |i: usize| (i as u8) ^ 0x5a;
    let mut v: AVec<u8, _> = AVec::new_in(&pool);
    let mut slot: Option<*const u8> = None;
    let (mut cap, mut left) = (0, false);
    for i in 0..300 {
        v.push(byte(i));
        if v.capacity() != cap {
            cap = v.capacity();
            if cap <= 64 {
                // In the slot: grown in place.
                assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (1, 0));
                assert_eq!(*slot.get_or_insert(v.as_ptr()), v.as_ptr(), "cap {cap}");
            } else {
                assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 1));
                left = true;
            }
        }
    }
    assert!(left, "the Vec never left the slot");
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // Back below the slot size: the Vec moves into a slot, the one it left (LIFO).
    v.truncate(40);
    v.shrink_to_fit();
    assert_eq!(v.capacity(), 40);
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (1, 0));
    assert_eq!(Some(v.as_ptr()), slot);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // And out again.
    v.extend((40..500).map(byte));
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 1));
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    drop(v);
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 0));
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

#[test]
fn size_class_vec_crosses_classes_and_the_fallback() {
    let counting = Counting::default();
    let options = SizeClassOptions {
        largest_pooled: 1024,
        ..SizeClassOptions::default()
    };
    let pool = SizeClassPool::with_options_in(options, &counting);
    assert_eq!(pool.options().largest_pooled, 1024);
    let byte = |i: usize| (i as u8).wrapping_mul(13) ^ 0xa5;
    let mut v: AVec<u8, _> = AVec::new_in(&pool);
    let mut last: Option<(usize, *const u8)> = None;
    let (mut cap, mut classes, mut in_place, mut fallback) = (0, Vec::new(), 0, false);
    for i in 0..3000 {
        v.push(byte(i));
        if v.capacity() != cap {
            cap = v.capacity();
            if cap <= 1024 {
                let c = class_size(cap);
                assert_eq!(live_classes(&pool), [(c, 1)], "cap {cap}");
                assert_eq!(pool.stats().fallback_blocks, 0);
                if let Some((prev, p)) = last {
                    if prev == c {
                        assert_eq!(p, v.as_ptr(), "cap {cap}: moved within class {c}");
                        in_place += 1;
                    }
                }
                last = Some((c, v.as_ptr()));
                classes.push(c);
            } else {
                assert_eq!(live_classes(&pool), []);
                assert_eq!(pool.stats().fallback_blocks, 1, "cap {cap}");
                fallback = true;
                last = None;
            }
        }
    }
    classes.dedup();
    assert!(classes.len() >= 5 && in_place >= 1 && fallback);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // Back from the fallback into class 112.
    v.truncate(100);
    v.shrink_to_fit();
    assert_eq!(live_classes(&pool), [(112, 1)]);
    assert_eq!(pool.stats().fallback_blocks, 0);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // Growing within the class stays in place; one byte more moves to class 128.
    let p = v.as_ptr();
    v.reserve_exact(12);
    assert_eq!((v.capacity(), v.as_ptr()), (112, p));
    v.reserve_exact(13);
    assert_eq!(live_classes(&pool), [(128, 1)]);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    drop(v);
    assert_eq!(pool.stats().live_blocks(), 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- over-aligned and zero-sized layouts -----

#[repr(C, align(4096))]
#[derive(Clone, Copy)]
struct Page4k([u8; 4096]);

#[repr(align(4096))]
struct Zst4k;

fn assert_zero_sized_layouts<A: Allocator>(alloc: &A, what: &str) {
    for pow in 0..=12 {
        let l = layout(0, 1 << pow);
        let p = alloc.allocate(l).unwrap();
        assert_eq!(addr(p.cast()) % l.align(), 0, "{what}: {l:?}");
        assert_eq!(p.len(), 0, "{what}: {l:?}");
        // SAFETY: a block of `l` from `alloc`.
        unsafe { alloc.deallocate(p.cast(), l) };
        let p = alloc.allocate_zeroed(l).unwrap();
        assert_eq!(addr(p.cast()) % l.align(), 0, "{what}: {l:?}");
        // SAFETY: as above.
        unsafe { alloc.deallocate(p.cast(), l) };
    }
    let unit = Box::new_in((), alloc);
    let zst = Box::new_in(Zst4k, alloc);
    assert_eq!((&*zst as *const Zst4k).addr() % 4096, 0);
    let mut v: AVec<(), &A> = AVec::new_in(alloc);
    for _ in 0..1000 {
        v.push(());
    }
    assert_eq!(v.len(), 1000);
    drop((unit, zst, v));
}

#[test]
fn pool_over_aligned_and_zero_sized_layouts() {
    let counting = Counting::default();
    // Slots aligned to 4096.
    let pool = Pool::new_in(Layout::new::<Page4k>(), &counting);
    assert_eq!((pool.slot_size(), pool.stats().slot_align), (4096, 4096));
    let n = if cfg!(miri) { 3 } else { 20 };
    let boxes: Vec<_> = (0..n)
        .map(|i| Box::new_in(Page4k([i as u8; 4096]), &pool))
        .collect();
    assert_eq!(pool.in_use(), n);
    for (i, b) in boxes.iter().enumerate() {
        assert_eq!((&**b as *const Page4k).addr() % 4096, 0);
        assert!(b.0.iter().all(|&x| x == i as u8));
    }
    // A 4096-aligned request to a pool of small slots goes to the backing allocator, aligned.
    let small = Pool::new_in(Layout::new::<u64>(), &counting);
    let one = Box::new_in(1u64, &small);
    let big = Box::new_in(Page4k([7; 4096]), &small);
    assert_eq!((&*big as *const Page4k).addr() % 4096, 0);
    assert_eq!((small.in_use(), small.stats().fallback_blocks), (1, 1));
    for size in [1, 8, 4096, 5000] {
        let l = layout(size, 4096);
        let p = small.allocate(l).unwrap();
        assert_eq!(addr(p.cast()) % 4096, 0);
        assert!(p.len() >= size);
        // SAFETY: a fresh block of `l` from `small`.
        unsafe { small.deallocate(p.cast(), l) };
    }
    // Zero-sized layouts: dangling, aligned, no slot taken, nothing allocated.
    let allocs = counting.allocs.get();
    assert_zero_sized_layouts(&small, "Pool<u64>");
    assert_eq!((small.in_use(), small.stats().fallback_blocks), (1, 1));
    let zpool = Pool::new_in(Layout::new::<()>(), &counting);
    assert_zero_sized_layouts(&zpool, "Pool<()>");
    assert_eq!((zpool.in_use(), zpool.capacity()), (0, 0));
    assert_eq!(
        counting.allocs.get(),
        allocs,
        "a zero-sized layout allocated"
    );
    let zpool4k = Pool::new_in(Layout::new::<Zst4k>(), &counting);
    assert_zero_sized_layouts(&zpool4k, "Pool<Zst4k>");
    assert_eq!((zpool4k.in_use(), zpool4k.capacity()), (0, 0));
    assert_eq!(*one, 1);
    assert!(big.0.iter().all(|&x| x == 7));
    drop((boxes, one, big));
    drop((pool, small, zpool, zpool4k));
    assert_eq!(counting.live.get(), 0);
}

#[test]
fn size_class_over_aligned_and_zero_sized_layouts() {
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    // Alignment above 16 goes to the backing allocator, whatever the size.
    let big = Box::new_in(Page4k([3; 4096]), &pool);
    assert_eq!((&*big as *const Page4k).addr() % 4096, 0);
    assert_eq!(pool.stats().fallback_blocks, 1);
    assert_eq!(pool.stats().pages, 0);
    for (size, align) in [(64, 32), (16, 4096), (1, 64), (5000, 4096)] {
        let l = layout(size, align);
        let p = pool.allocate(l).unwrap();
        assert_eq!(addr(p.cast()) % align, 0);
        assert_eq!(pool.stats().fallback_blocks, 2);
        // SAFETY: a fresh block of `l` from `pool`.
        unsafe { pool.deallocate(p.cast(), l) };
    }
    assert_eq!(pool.stats().pages, 0);
    // A 4096-aligned block grown and shrunk in the fallback keeps its alignment and contents,
    // and one shrunk to 16-alignment moves into a class.
    let l = layout(64, 4096);
    let p = pool.allocate(l).unwrap().cast::<u8>();
    // SAFETY: 64 fresh bytes of the block.
    unsafe { p.write_bytes(0x3c, 64) };
    let grown = layout(10_000, 4096);
    // SAFETY: `p` is live with layout `l`; `grown` is larger.
    let q = unsafe { pool.grow(p, l, grown) }.unwrap().cast::<u8>();
    assert_eq!(addr(q) % 4096, 0);
    let small = layout(8, 16);
    // SAFETY: `q` is live with layout `grown`; `small` is smaller.
    let r = unsafe { pool.shrink(q, grown, small) }.unwrap();
    assert_eq!(r.len(), 16);
    assert_eq!(
        (pool.stats().live_blocks(), pool.stats().fallback_blocks),
        (1, 1)
    );
    // SAFETY: the first 8 bytes were written above and survived the moves.
    assert_eq!(unsafe { r.cast::<[u8; 8]>().read() }, [0x3c; 8]);
    // SAFETY: `r` is live with layout `small`.
    unsafe { pool.deallocate(r.cast(), small) };
    // Zero-sized layouts: dangling, aligned, no page.
    let allocs = counting.allocs.get();
    assert_zero_sized_layouts(&pool, "SizeClassPool");
    assert_eq!(
        counting.allocs.get(),
        allocs,
        "a zero-sized layout allocated"
    );
    let s = pool.stats();
    assert_eq!((s.live_blocks(), s.fallback_blocks), (0, 1));
    assert!(big.0.iter().all(|&x| x == 3));
    drop(big);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- a Pool on an Arena -----

#[test]
fn pool_on_an_arena_then_arena_reset() {
    let counting = Counting::default();
    let mut arena = Arena::new_in(&counting);
    let n = if cfg!(miri) { 40 } else { 2000 };
    {
        let pool = Pool::new_in(Layout::new::<[u64; 4]>(), &arena);
        let mut used = 0;
        for round in 0..3u64 {
            let boxes: Vec<_> = (0..n)
                .map(|i| Box::new_in([i, round, 0, 1], &pool))
                .collect();
            assert_eq!(pool.in_use(), n as usize);
            for (i, b) in boxes.iter().enumerate() {
                assert_eq!(**b, [i as u64, round, 0, 1]);
            }
            if round == 0 {
                used = arena.used_bytes();
                assert!(used >= n as usize * 32, "the slabs come from the arena");
            } else {
                assert_eq!(
                    arena.used_bytes(),
                    used,
                    "slabs are reused, not taken again"
                );
            }
            drop_in_order(boxes, round);
        }
        // A block too big for the slot comes from the arena too.
        let v: AVec<u64, _> = (0..100u64).fold(AVec::new_in(&pool), |mut v, x| {
            v.push(x);
            v
        });
        assert_eq!(pool.stats().fallback_blocks, 1);
        assert!(arena.used_bytes() > used);
        assert!(v.iter().copied().eq(0..100));
    }
    // The pool is gone: resetting the arena works and it is usable again.
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
    assert_eq!(*arena.alloc(5u64), 5);
    drop(arena);
    assert_eq!(counting.live.get(), 0);
}

// ----- hashbrown and Vec rebuilt in one SizeClassPool -----

#[test]
fn size_class_rebuilt_maps_and_vecs_stay_bounded() {
    use hashbrown::{DefaultHashBuilder, HashMap};
    type Scp<'a> = SizeClassPool<&'a Counting>;
    let n: u64 = if cfg!(miri) { 12 } else { 1000 };
    let counting = Counting::default();
    let pool: Scp<'_> = SizeClassPool::new_in(&counting);
    // Kept across rounds, cleared and shrunk each round.
    let mut kept: HashMap<u64, u64, DefaultHashBuilder, &Scp<'_>> = HashMap::new_in(&pool);
    let mut peaks = Vec::new();
    for round in 0..40u64 {
        let mut map: HashMap<u64, AVec<u8, &Scp<'_>>, DefaultHashBuilder, &Scp<'_>> =
            HashMap::new_in(&pool);
        let mut vecs: AVec<AVec<u64, &Scp<'_>>, &Scp<'_>> = AVec::new_in(&pool);
        for i in 0..n {
            kept.insert(i, i ^ round);
            let mut bytes = AVec::new_in(&pool);
            bytes.resize((i * 7 % 200) as usize, i as u8);
            map.insert(i, bytes);
            if i % 4 == 0 {
                let mut v = AVec::new_in(&pool);
                v.extend(0..i % 100);
                vecs.push(v);
            }
        }
        for i in (0..n).step_by(2) {
            map.remove(&i);
        }
        for i in 0..n {
            assert_eq!(kept[&i], i ^ round);
            if i % 2 == 1 {
                let b = &map[&i];
                assert!(b.len() == (i * 7 % 200) as usize && b.iter().all(|&x| x == i as u8));
            }
        }
        assert!(
            vecs.iter()
                .enumerate()
                .all(|(k, v)| v.iter().copied().eq(0..(4 * k as u64) % 100))
        );
        let s = pool.stats();
        peaks.push((s.bytes_held, counting.live.get()));
        if round % 2 == 0 {
            drop(map);
            drop(vecs);
        } else {
            drop(vecs);
            drop(map);
        }
        kept.clear();
        kept.shrink_to_fit();
        let s = pool.stats();
        assert_eq!(s.live_blocks(), 0, "round {round}");
        assert_eq!(s.pages, s.empty_pages + kept_in_place(&s), "round {round}");
        assert!(s.empty_bytes <= empty_cache(&pool), "round {round}");
    }
    // Bounded: no round after the second holds more than 1.2x what the second did. (Not
    // exactly as much: which cached page each class gets back, and so the size of the pages it
    // takes after, differs from round to round.)
    let within = |x: usize, second: usize| x * 5 <= second * 6;
    for (round, p) in peaks.iter().enumerate().skip(2) {
        assert!(
            within(p.0, peaks[1].0) && within(p.1, peaks[1].1),
            "round {}: (bytes_held, backing live) {p:?} above round 2's {:?}",
            round + 1,
            peaks[1]
        );
    }
    drop(kept);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}
