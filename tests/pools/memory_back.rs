//! Memory going back: the `SizeClassPool` empty-page cache and `trim`, `Pool::trim` and
//! `Pool::reset`, and slots freed and grown through narrowed pointers.

use crate::common::Counting;
use crate::{Lcg, Quarantine, addr, class_size, drop_in_order, empty_cache, kept_in_place, layout};
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::{Pool, SizeClassOptions, SizeClassPool, SizeClassStats};
use std::ptr::NonNull;

#[test]
fn size_class_memory_follows_the_live_set_down() {
    let counting = Counting::default();
    let page = 4096;
    let options = SizeClassOptions {
        largest_pooled: 512,
        page_size: page,
        max_empty_pages: 2,
    };
    let mut pool = SizeClassPool::with_options_in(options, &counting);
    let alloc_n = |pool: &SizeClassPool<&Counting>, l: Layout, n: usize| -> Vec<NonNull<u8>> {
        (0..n).map(|_| pool.allocate(l).unwrap().cast()).collect()
    };
    let class = |pool: &SizeClassPool<&Counting>, size: usize| {
        pool.stats()
            .classes()
            .find(|c| c.block_size == size)
            .unwrap()
    };
    let (l512, l256, l48) = (layout(512, 16), layout(256, 8), layout(48, 16));
    let big = alloc_n(&pool, l512, 40);
    let mid = alloc_n(&pool, l256, 60);
    let small = alloc_n(&pool, l48, 100);
    let s = pool.stats();
    let big_pages = class(&pool, 512).pages;
    // Each class's pages hold its blocks with no more than an eighth to spare, plus a first
    // page (about 1 KiB of blocks) and a header per page.
    for (size, n) in [(512, 40), (256, 60), (48, 100)] {
        let c = class(&pool, size);
        let rule = n * size + n * size / 8 + 1024.max(size) + c.pages * 128;
        assert!(
            c.bytes <= rule,
            "class {size}: {c:?}, the rule allows {rule} B"
        );
    }
    assert_eq!(s.empty_pages, 0);
    assert!(counting.live.get() >= s.bytes_held);
    let table = counting.live.get() - s.bytes_held;
    assert!(
        table < page,
        "besides pages, only the address map's table: {table} bytes"
    );

    // Free all of class 512: its pages are cached up to two largest pages' worth of bytes, the
    // rest go back.
    let big_bytes = class(&pool, 512).bytes;
    for &p in &big {
        // SAFETY: each block is live and freed once, with its layout.
        unsafe { pool.deallocate(p, l512) };
    }
    let t = pool.stats();
    // Its last page (4 KiB at most here) stays formatted in place.
    let kept = class(&pool, 512);
    assert_eq!((kept.live, kept.pages), (0, 1));
    assert!(t.empty_pages > 0 && t.empty_pages < big_pages);
    assert!(t.empty_bytes <= 2 * page && t.empty_bytes > 2 * page - big_bytes.min(page));
    assert_eq!(t.pages, s.pages - big_pages + t.empty_pages + 1);
    assert_eq!(
        t.bytes_held,
        s.bytes_held - big_bytes + t.empty_bytes + kept.bytes
    );
    assert_eq!(counting.live.get(), t.bytes_held + table);

    // A cached page serves another class without a backing allocation.
    let allocs = counting.allocs.get();
    let other = pool.allocate(layout(100, 16)).unwrap().cast::<u8>();
    assert_eq!(counting.allocs.get(), allocs);
    assert_eq!(pool.stats().empty_pages, t.empty_pages - 1);
    // SAFETY: `other` is live with this layout.
    unsafe { pool.deallocate(other, layout(100, 16)) };
    // Its class's only page stays in place.
    assert_eq!(pool.stats().empty_pages, t.empty_pages - 1);
    assert_eq!(class(&pool, 112).pages, 1);

    // Free everything: only the cache's pages are held.
    for (blocks, l) in [(&mid, l256), (&small, l48)] {
        for &p in blocks.iter().rev() {
            // SAFETY: each block is live and freed once, with its layout.
            unsafe { pool.deallocate(p, l) };
        }
    }
    let u = pool.stats();
    assert_eq!(u.live_blocks(), 0);
    assert_eq!(u.pages, u.empty_pages + kept_in_place(&u));
    assert!(u.empty_bytes <= 2 * page);
    assert_eq!(counting.live.get(), u.bytes_held + table);

    // `trim` returns the cached pages and those kept in place.
    pool.trim();
    let v = pool.stats();
    assert_eq!((v.pages, v.empty_pages, v.bytes_held), (0, 0, 0));
    assert_eq!(counting.live.get(), table);
    // Still usable.
    let b = Box::new_in([9u8; 200], &pool);
    assert_eq!(pool.stats().pages, 1);
    assert_eq!(b[199], 9);
    drop(b);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// The cache of empty pages keeps what recent cycles take out of it, not what the largest cycle
/// did: a loop whose cycles shrink gives the difference back without `trim`, and a loop that
/// repeats a cycle keeps what the cycle needs and takes no new memory.
#[test]
fn size_class_empty_pages_follow_recent_cycles_down() {
    // Each cycle allocates `n` blocks of 8 to 512 bytes and frees them all.
    let cycle = |pool: &SizeClassPool<&Counting>, n: usize, seed: u64| {
        let mut rng = Lcg(seed);
        let blocks: Vec<(NonNull<u8>, Layout)> = (0..n)
            .map(|_| {
                let l = layout(8 + rng.next() as usize % 505, 8);
                (pool.allocate(l).unwrap().cast(), l)
            })
            .collect();
        for (p, l) in blocks {
            // SAFETY: a live block of `pool` with its layout, freed once.
            unsafe { pool.deallocate(p, l) };
        }
    };
    let (big, small, cycles) = if cfg!(miri) {
        (200, 20, 16)
    } else {
        (700, 70, 40)
    };
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    // Repeating the big cycle: from the second on, no backing allocation (a page that no cycle
    // takes out of the cache may go back), and never more held than after the first.
    cycle(&pool, big, 1);
    let allocs = counting.allocs.get();
    let after_big = pool.stats();
    assert!(after_big.empty_bytes > 0, "{after_big:?}");
    for _ in 0..if cfg!(miri) { 3 } else { 12 } {
        cycle(&pool, big, 1);
        assert_eq!(
            counting.allocs.get(),
            allocs,
            "a repeated cycle took memory"
        );
        assert!(pool.stats().bytes_held <= after_big.bytes_held);
    }
    // Small cycles from then on: the pages only the big cycle needed go back.
    let small_need = {
        let alone = Counting::default();
        let fresh = SizeClassPool::new_in(&alone);
        cycle(&fresh, small, 2);
        alone.peak.get()
    };
    for _ in 0..cycles {
        cycle(&pool, small, 2);
    }
    let s = pool.stats();
    assert_eq!(s.live_blocks(), 0);
    // About what a fresh pool needs for a small cycle (pages that one cycle empties stay cached
    // for the next, as they would in the fresh pool).
    assert!(
        2 * s.bytes_held <= 3 * small_need,
        "{} B held after {cycles} small cycles (a small cycle alone peaks at {small_need} B, \
         the big one held {} B): {s:?}",
        s.bytes_held,
        after_big.bytes_held
    );
    // A cache bounded by its size alone (four largest pages) kept every page of the big cycle.
    assert!(
        2 * s.bytes_held <= after_big.bytes_held,
        "{} B held, {} B after the big cycle",
        s.bytes_held,
        after_big.bytes_held
    );
}

/// Pages follow each class's population: a class with one live block holds one small page
/// (about 1 KiB of blocks, or one block for the largest classes), and under random churn over
/// sixteen classes each class holds at most 1.125x the bytes of the most blocks it had in use at
/// once or kept among its recently freed ones, plus a first page, a 4 KiB page and a header per
/// page.
#[test]
fn size_class_memory_follows_each_class() {
    // One live block per class, each in a fresh pool: the peak is its first page plus the
    // address map's table (64 bytes for a page in one 4 KiB granule, 128 for up to three).
    let largest = SizeClassOptions::default().largest_pooled;
    for size in [16, 100, 512, 1000, 4096, largest] {
        let counting = Counting::default();
        let pool = SizeClassPool::new_in(&counting);
        let l = layout(size, 8);
        let p = pool.allocate(l).unwrap();
        let block = p.len();
        let first = (1024 / block).max(1) * block + 128 + block / 128;
        assert!(
            counting.peak.get() <= first + if first <= 4096 { 64 } else { 128 },
            "one block of {size} B: {} B held",
            counting.peak.get()
        );
        // SAFETY: a live block of `pool` with layout `l`.
        unsafe { pool.deallocate(p.cast(), l) };
    }

    // Random churn: n live blocks of 8 to 512 bytes, one replaced at a time.
    let (n, steps) = if cfg!(miri) {
        (60, 300)
    } else {
        (1000, 50_000)
    };
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    let mut rng = Lcg(7);
    let mut size = || 8 + rng.next() as usize % 505;
    // The blocks in use per class, and their most, counted here (the pool's statistics, which
    // would give them too, cost a walk of every class at each step under Miri): a block's class
    // is the first whose blocks hold it.
    let classes: Vec<usize> = pool.stats().classes().map(|c| c.block_size).collect();
    let class_of = |l: Layout| classes.partition_point(|&block| block < l.size());
    let mut in_use = vec![0usize; classes.len()];
    let mut most_in_use = vec![0usize; classes.len()];
    let mut live: Vec<(NonNull<u8>, Layout)> = Vec::with_capacity(n);
    for _ in 0..n {
        let l = layout(size(), 8);
        live.push((pool.allocate(l).unwrap().cast(), l));
        in_use[class_of(l)] += 1;
    }
    most_in_use.copy_from_slice(&in_use);
    let mut pick = Lcg(11);
    for _ in 0..steps {
        let i = pick.next() as usize % n;
        // SAFETY: a live block of `pool` with its layout, replaced at once.
        unsafe { pool.deallocate(live[i].0, live[i].1) };
        in_use[class_of(live[i].1)] -= 1;
        let l = layout(size(), 8);
        live[i] = (pool.allocate(l).unwrap().cast(), l);
        let c = class_of(l);
        in_use[c] += 1;
        most_in_use[c] = most_in_use[c].max(in_use[c]);
    }
    let s = pool.stats();
    let counted: Vec<usize> = s.classes().map(|c| c.live).collect();
    assert_eq!(counted, in_use, "the pool's blocks in use per class");
    let mut blocks = 0;
    for (i, c) in s.classes().enumerate().filter(|(_, c)| c.pages > 0) {
        let most = most_in_use[i] * c.block_size;
        let first = (1024 / c.block_size).max(1) * c.block_size;
        // Up to 16 KiB (at most 32 blocks) of recently freed blocks stay out of the pages.
        let recent = (16384 / c.block_size).clamp(1, 32) * c.block_size;
        let rule = (most + recent) * 9 / 8 + first + 4096 + c.pages * 128;
        assert!(c.bytes <= rule, "{c:?}: the rule allows {rule} B");
        blocks += c.live * c.block_size;
    }
    let peaks: usize = classes
        .iter()
        .zip(&most_in_use)
        .map(|(size, most)| size * most)
        .sum();
    eprintln!(
        "{n} live blocks of 8 to 512 B: pages hold {} B for {blocks} B of blocks ({:.2}x), peak \
         {} B; the classes' peaks add up to {peaks} B",
        s.bytes_held,
        s.bytes_held as f64 / blocks as f64,
        counting.peak.get()
    );
    for (p, l) in live {
        // SAFETY: live blocks of `pool`, each freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
    assert_eq!(pool.stats().live_blocks(), 0);
}

/// A class keeps its last-freed blocks out of their pages (handed out first, most recent
/// first): they pin at most 16 KiB of blocks per class, `trim` puts them back so that their
/// pages can go, and freeing a class's last block does too.
#[test]
fn size_class_recent_blocks_come_back_first_and_trim_releases_their_pages() {
    let counting = Counting::default();
    let mut pool = SizeClassPool::new_in(&counting);
    let l = layout(256, 16);
    let n = if cfg!(miri) { 80 } else { 400 };
    let blocks: Vec<NonNull<u8>> = (0..n).map(|_| pool.allocate(l).unwrap().cast()).collect();
    let pages = pool.stats().pages;
    assert!(pages > 3);
    // Freed last, handed out first.
    for &p in &blocks[n - 3..] {
        // SAFETY: a live block of `pool` with layout `l`, freed once.
        unsafe { pool.deallocate(p, l) };
    }
    let again: Vec<NonNull<u8>> = (0..3).map(|_| pool.allocate(l).unwrap().cast()).collect();
    assert_eq!(again, [blocks[n - 1], blocks[n - 2], blocks[n - 3]]);
    // Free all but the first block: the recent blocks (16 KiB / 256 B = 64, at most 32) keep
    // some pages from emptying; `trim` puts them back and every page but the first one goes.
    for &p in blocks[1..n - 3].iter().chain(&again) {
        // SAFETY: as above.
        unsafe { pool.deallocate(p, l) };
    }
    let s = pool.stats();
    assert_eq!(s.live_blocks(), 1);
    let class = s.classes().find(|c| c.block_size == 256).unwrap();
    assert!(class.pages > 1, "{class:?}");
    assert!(class.pages <= 1 + 32, "{class:?}");
    pool.trim();
    let t = pool.stats();
    let class = t.classes().find(|c| c.block_size == 256).unwrap();
    assert_eq!((class.pages, t.empty_pages), (1, 0), "{t:?}");
    assert_eq!(t.pages, 1);
    // The last block: its class's one page (1 KiB of blocks) stays formatted in place.
    // SAFETY: as above.
    unsafe { pool.deallocate(blocks[0], l) };
    let u = pool.stats();
    assert_eq!((u.pages, u.empty_pages, kept_in_place(&u)), (1, 0, 1));
    pool.trim();
    assert_eq!(pool.stats().pages, 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// A population that falls gives its pages back: 3 000 blocks of 8 to 512 bytes, then two freed
/// for one allocated (at random) down to 150: the pages in use shrink to under a third of what
/// they were, the rest is cached (within its budget) or back with the backing allocator.
/// (Measured: 940 096 -> 273 408 bytes of pages in use; with the 64 KiB pages of before,
/// 1 507 328 -> 1 179 648.)
#[test]
fn size_class_pages_follow_a_falling_population() {
    let (high, low) = if cfg!(miri) { (600, 30) } else { (3000, 150) };
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    let mut rng = Lcg(5);
    let mut size = || 8 + rng.next() as usize % 505;
    let mut live: Vec<(NonNull<u8>, Layout)> = (0..high)
        .map(|_| {
            let l = layout(size(), 8);
            (pool.allocate(l).unwrap().cast(), l)
        })
        .collect();
    let at_high = pool.stats();
    let mut pick = Lcg(9);
    while live.len() > low {
        for _ in 0..2 {
            let (p, l) = live.swap_remove(pick.next() as usize % live.len());
            // SAFETY: a live block of `pool` with its layout, freed once.
            unsafe { pool.deallocate(p, l) };
        }
        let l = layout(size(), 8);
        live.push((pool.allocate(l).unwrap().cast(), l));
    }
    let at_low = pool.stats();
    let in_use = |s: &SizeClassStats| s.bytes_held - s.empty_bytes;
    assert!(
        in_use(&at_low) * 3 < in_use(&at_high),
        "pages in use: {} B at {high} blocks, {} B at {low}",
        in_use(&at_high),
        in_use(&at_low)
    );
    assert!(at_low.empty_bytes <= empty_cache(&pool));
    for (p, l) in live {
        // SAFETY: as above.
        unsafe { pool.deallocate(p, l) };
    }
}

/// A class whose population falls but stays above half its blocks gives pages back under
/// churn: it leaves its emptiest page to empty while more than a quarter of its blocks are free,
/// so its pages come down to about 4/3 of the blocks in use (its recent blocks included), plus
/// the page left to empty and a 4 KiB page, where keeping every page it once needed would hold
/// the 1.67x of the blocks it had at its peak.
#[cfg_attr(
    miri,
    ignore = "a bound reached after thousands of steps of churn; under Miri the churn of one \
              class is size_class_pages_follow_a_falling_population's and \
              size_class_empty_pages_follow_recent_cycles_down's"
)]
#[test]
fn size_class_a_class_above_half_gives_pages_back() {
    let (high, steps) = (3000, 150_000);
    let low = high * 3 / 5;
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    let l = layout(256, 16);
    let class = |pool: &SizeClassPool<&Counting>| {
        pool.stats()
            .classes()
            .find(|c| c.block_size == 256)
            .unwrap()
    };
    let mut live: Vec<NonNull<u8>> = (0..high)
        .map(|_| pool.allocate(l).unwrap().cast())
        .collect();
    let at_high = class(&pool);
    let mut pick = Lcg(3);
    let mut free_one = |pool: &SizeClassPool<&Counting>, live: &mut Vec<NonNull<u8>>| {
        let p = live.swap_remove(pick.next() as usize % live.len());
        // SAFETY: a live block of `pool` with layout `l`, freed once.
        unsafe { pool.deallocate(p, l) };
    };
    // Down to three fifths, two blocks freed for one allocated, then churn at that level.
    while live.len() > low {
        free_one(&pool, &mut live);
        free_one(&pool, &mut live);
        live.push(pool.allocate(l).unwrap().cast());
    }
    for _ in 0..steps {
        free_one(&pool, &mut live);
        live.push(pool.allocate(l).unwrap().cast());
    }
    let at_low = class(&pool);
    let rule = low * 256 * 4 / 3 + 2 * 4096 + at_low.pages * 64;
    assert!(
        at_low.bytes <= rule,
        "{low} blocks of 256 B in use: {at_low:?}, the rule allows {rule} B (at {high}: {at_high:?})"
    );
    assert!(
        at_low.bytes * 5 < at_high.bytes * 4,
        "{at_low:?} against {at_high:?}"
    );
    while !live.is_empty() {
        free_one(&pool, &mut live);
    }
}

/// `[u8; 512]` blocks: slot 512, slabs of 8, 16, 32 slots.
type Big = [u8; 512];

fn big(i: usize) -> Big {
    [i as u8; 512]
}

/// A raw block of `pool` holding `big(i)` (raw, so that `trim` can run while it is live).
fn raw_big<A: Allocator>(pool: &Pool<A>, i: usize) -> NonNull<u8> {
    let p = pool.allocate(Layout::new::<Big>()).unwrap().cast::<u8>();
    // SAFETY: a fresh block of `Big`'s layout.
    unsafe { p.cast::<Big>().write(big(i)) };
    p
}

fn read_big(p: NonNull<u8>) -> Big {
    // SAFETY: callers pass live blocks written by `raw_big`.
    unsafe { p.cast::<Big>().read() }
}

/// Fills three slabs of `Big` slots exactly; returns the blocks and the first slab's slots.
fn fill_three_slabs<A: Allocator>(pool: &Pool<A>) -> (Vec<NonNull<u8>>, usize) {
    let mut blocks = vec![raw_big(pool, 0)];
    let first_slab = pool.capacity();
    while pool.stats().slabs < 3 || pool.in_use() < pool.capacity() {
        blocks.push(raw_big(pool, blocks.len()));
    }
    assert_eq!(pool.stats().slabs, 3);
    (blocks, first_slab)
}

#[test]
fn pool_trim_keeps_the_slabs_with_live_slots() {
    let counting = Counting::default();
    let l = Layout::new::<Big>();
    let mut pool = Pool::new_in(l, &counting);
    let (blocks, first_slab) = fill_three_slabs(&pool);
    let full = pool.stats();
    // Keep three slots of the first slab, free everything else.
    let kept_idx = [1, 4, first_slab - 1];
    let mut kept = Vec::new();
    for (i, p) in blocks.into_iter().enumerate() {
        if kept_idx.contains(&i) {
            kept.push((i, p));
        } else {
            // SAFETY: each block is live, from `pool`, freed once with its layout.
            unsafe { pool.deallocate(p, l) };
        }
    }
    assert_eq!(pool.in_use(), 3);
    pool.trim();
    let t = pool.stats();
    assert!(
        t.capacity < full.capacity && t.bytes_held < full.bytes_held,
        "{t:?}"
    );
    assert!(t.capacity >= first_slab && t.slabs >= 1);
    assert_eq!(t.in_use, 3);
    assert!(
        counting.live.get() < full.bytes_held,
        "trimmed slabs went back to the backing allocator"
    );
    for &(i, p) in &kept {
        assert_eq!(read_big(p), big(i));
    }
    // Allocate again: the kept blocks stay intact, new ones are distinct and correct.
    let again: Vec<NonNull<u8>> = (0..60).map(|i| raw_big(&pool, 100 + i)).collect();
    assert_eq!(pool.in_use(), 63);
    for &(i, p) in &kept {
        assert_eq!(read_big(p), big(i));
    }
    for (i, &p) in again.iter().enumerate() {
        assert_eq!(read_big(p), big(100 + i));
    }
    let mut addrs: Vec<usize> = again
        .iter()
        .chain(kept.iter().map(|(_, p)| p))
        .map(|&p| addr(p))
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), 63);
    for p in again.into_iter().chain(kept.into_iter().map(|(_, p)| p)) {
        // SAFETY: each block is live, from `pool`, freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
    assert_eq!(pool.in_use(), 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// `Pool::trim`'s documented rule ("Returns every slab with no slot in use to the backing
/// allocator"), with live slots in the first slab only and every later slab fully carved.
#[test]
fn pool_trim_returns_every_slab_without_live_slots() {
    let l = Layout::new::<Big>();
    // On `Quarantine`, so that this test checks the rule only (see
    // `pool_trim_keeps_the_free_slots_of_kept_slabs` for reads of released slabs).
    let quarantine = Quarantine::default();
    let mut pool = Pool::new_in(l, &quarantine);
    let (blocks, first_slab) = fill_three_slabs(&pool);
    let first_bytes = {
        let probe = Pool::with_capacity(l, first_slab);
        probe.stats().bytes_held
    };
    for &p in &blocks[2..] {
        // SAFETY: each block is live, from `pool`, freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
    pool.trim();
    let t = pool.stats();
    let kept = read_big(blocks[1]);
    // SAFETY: the two blocks left are live, from `pool`, freed once with their layout.
    unsafe {
        pool.deallocate(blocks[0], l);
        pool.deallocate(blocks[1], l);
    }
    assert_eq!(kept, big(1));
    assert_eq!(
        (t.slabs, t.capacity, t.bytes_held),
        (1, first_slab, first_bytes),
        "slabs with no slot in use were kept"
    );
}

/// After `trim`, the free slots of the slabs it kept are all still handed out before the pool
/// asks for a new slab. (On `Quarantine`: a slab that `trim` released reads as zeros, as freed
/// memory may; the pool must not read it at all.)
#[test]
fn pool_trim_keeps_the_free_slots_of_kept_slabs() {
    let quarantine = Quarantine::default();
    let l = Layout::new::<Big>();
    let mut pool = Pool::new_in(l, &quarantine);
    let (blocks, first_slab) = fill_three_slabs(&pool);
    let kept_idx = [1, 4, first_slab - 1];
    let mut kept = Vec::new();
    for (i, p) in blocks.into_iter().enumerate() {
        if kept_idx.contains(&i) {
            kept.push((i, p));
        } else {
            // SAFETY: each block is live, from `pool`, freed once with its layout.
            unsafe { pool.deallocate(p, l) };
        }
    }
    pool.trim();
    let spare = pool.capacity() - pool.in_use();
    let allocs = quarantine.allocs.get();
    let again: Vec<NonNull<u8>> = (0..spare).map(|i| raw_big(&pool, 100 + i)).collect();
    assert_eq!(
        quarantine.allocs.get(),
        allocs,
        "after trim, the {spare} free slots of the kept slabs were not all handed out before a new slab"
    );
    let mut addrs: Vec<usize> = again
        .iter()
        .chain(kept.iter().map(|(_, p)| p))
        .map(|&p| addr(p))
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), spare + kept.len());
    for &(i, p) in &kept {
        assert_eq!(read_big(p), big(i));
    }
    for (i, &p) in again.iter().enumerate() {
        assert_eq!(read_big(p), big(100 + i));
    }
    for p in again.into_iter().chain(kept.into_iter().map(|(_, p)| p)) {
        // SAFETY: each block is live, from `pool`, freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
}

#[test]
fn pool_reset_frees_every_slot_and_keeps_the_slabs() {
    let counting = Counting::default();
    let mut pool = Pool::new_in(Layout::new::<Big>(), &counting);
    let boxes: Vec<_> = (0..20).map(|i| Box::new_in(big(i), &pool)).collect();
    let addrs: Vec<usize> = boxes.iter().map(|b| (&**b as *const Big).addr()).collect();
    let before = pool.stats();
    assert_eq!(before.in_use, 20);
    assert!(before.slabs >= 2, "several slabs: {before:?}");
    // Free a few (so the free list is not empty), forget the rest through reset.
    drop_in_order(boxes, 3);
    pool.reset();
    let s = pool.stats();
    assert_eq!(s.in_use, 0);
    assert_eq!(
        (s.capacity, s.slabs, s.bytes_held),
        (before.capacity, before.slabs, before.bytes_held)
    );
    let allocs = counting.allocs.get();
    // The next allocations start over at the first slot of the first slab, in the same order.
    let again: Vec<_> = (0..before.capacity)
        .map(|i| Box::new_in(big(50 + i), &pool))
        .collect();
    assert_eq!((&*again[0] as *const Big).addr(), addrs[0]);
    let again_addrs: Vec<usize> = again.iter().map(|b| (&**b as *const Big).addr()).collect();
    assert_eq!(again_addrs[..20], addrs[..]);
    assert_eq!(counting.allocs.get(), allocs, "reset slabs were not reused");
    assert_eq!(pool.in_use(), before.capacity);
    for (i, b) in again.iter().enumerate() {
        assert_eq!(**b, big(50 + i));
    }
    drop(again);
    assert_eq!(pool.in_use(), 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// A slot given back through a pointer narrowed to its layout's bytes (what a `&mut u32` in an
/// 8-byte slot leaves a caller with) is handed out again as a whole slot, which the next user may
/// write in full: with a layout smaller than the slot the pool re-derives the slot's pointer
/// (under Miri, writing the whole slot through the narrowed pointer would be undefined
/// behaviour), with a whole-slot layout the caller's pointer covers the slot already.
#[test]
fn pool_reuses_slots_freed_through_narrowed_pointers() {
    let pool = Pool::for_type::<u64>();
    let whole = Layout::new::<u64>();
    for freed in [Layout::new::<u32>(), layout(1, 1), whole] {
        let block = pool.allocate(freed).unwrap();
        assert_eq!(block.len(), 8);
        let p = block.cast::<u8>();
        // SAFETY: the block is live and 8 bytes long; the reference covers its first
        // `freed.size()` bytes, which are initialised first, and the pointer given back is
        // derived from it, so it is valid for exactly `freed.size()` bytes.
        let narrowed = unsafe {
            p.write_bytes(1, freed.size());
            let r = std::slice::from_raw_parts_mut(p.as_ptr(), freed.size());
            NonNull::from(r).cast::<u8>()
        };
        // SAFETY: live, from `pool`, with the layout it was allocated with.
        unsafe { pool.deallocate(narrowed, freed) };
        let again = pool.allocate(whole).unwrap().cast::<u64>();
        assert_eq!(
            again.cast::<u8>(),
            p,
            "the freed slot is the next one handed out"
        );
        // SAFETY: a live block of 8 bytes, aligned for `u64`.
        unsafe {
            again.write(u64::MAX);
            assert_eq!(again.read(), u64::MAX);
            pool.deallocate(again.cast(), whole);
        }
    }
    assert_eq!(pool.in_use(), 0);
}

/// Allocates `old` from `alloc`, narrows the pointer to `old.size()` bytes, grows it (zeroed) to
/// `new`, and checks the whole new block through the returned pointer.
fn grow_through_a_narrowed_pointer<A: Allocator>(alloc: &A, old: Layout, new: Layout) {
    let block = alloc.allocate(old).unwrap();
    let p = block.cast::<u8>();
    // SAFETY: the block is live and at least `old.size()` bytes long; the reference covers those
    // bytes, written first, and the pointer passed on is derived from it, so it is valid for
    // exactly `old.size()` bytes (what `grow` may assume, no more).
    let narrowed = unsafe {
        p.write_bytes(7, old.size());
        let r = std::slice::from_raw_parts_mut(p.as_ptr(), old.size());
        NonNull::from(r).cast::<u8>()
    };
    // SAFETY: live, from `alloc`, with the layout it was allocated with; `new` is larger.
    let grown = unsafe { alloc.grow_zeroed(narrowed, old, new) }.unwrap();
    assert!(grown.len() >= new.size());
    let q = grown.cast::<u8>();
    // SAFETY: the grown block is live and `new.size()` bytes long; all of it is written through
    // the returned pointer (Miri checks that the pointer covers it).
    unsafe {
        for i in 0..new.size() {
            assert_eq!(q.add(i).read(), if i < old.size() { 7 } else { 0 });
        }
        q.write_bytes(9, new.size());
        alloc.deallocate(q, new);
    }
}

#[test]
fn growing_within_a_slot_through_a_narrowed_pointer_covers_the_new_size() {
    let pool = Pool::for_type::<[u64; 4]>();
    grow_through_a_narrowed_pointer(&pool, layout(8, 8), layout(32, 8));
    grow_through_a_narrowed_pointer(&pool, layout(3, 1), layout(20, 4));
    assert_eq!(pool.in_use(), 0);
    let pool = SizeClassPool::new();
    // Both sizes share a class, so the block stays where it is.
    assert_eq!(class_size(40), class_size(48));
    grow_through_a_narrowed_pointer(&pool, layout(40, 8), layout(48, 8));
    let pool = arena_pool::SyncPool::for_type::<[u64; 4]>();
    grow_through_a_narrowed_pointer(&pool, layout(8, 8), layout(32, 8));
}
