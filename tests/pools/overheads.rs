//! Measured overheads, printed with `--nocapture`: `Pool` metadata per slab and per slot,
//! `SizeClassPool` blocks per page and waste per class.

use crate::{class_size, layout};
use arena_pool::allocator_api2::alloc::Allocator;
use arena_pool::{Pool, SizeClassOptions, SizeClassPool};

/// Metadata (header, debug bitmap, alignment padding) per slab of a `Pool`, for several slot
/// layouts and slab sizes; and the slab sizes the pool picks by itself.
#[test]
fn pool_metadata_per_slab() {
    let cases = [(8, 8), (24, 8), (64, 64), (512, 8), (600, 8), (4096, 4096)];
    let slab_slots: &[usize] = if cfg!(miri) {
        &[8, 512]
    } else {
        &[8, 64, 512, 4096, 1 << 17]
    };
    for (size, align) in cases {
        let l = layout(size, align);
        for &slots in slab_slots {
            let pool = Pool::with_capacity(l, slots);
            let s = pool.stats();
            assert_eq!((s.slabs, s.capacity), (1, slots));
            let meta = s.bytes_held - s.capacity * s.slot_size;
            eprintln!(
                "Pool slot {size}/{align}: slab of {slots} slots: {meta} B metadata ({:.3} B/slot)",
                meta as f64 / slots as f64
            );
            // At most a header of 64 bytes, one bit per slot, and the alignment padding.
            assert!(meta <= 64 + slots.div_ceil(64) * 8 + align, "{meta}");
            if align <= 64 {
                // Less than 8 bytes of metadata per slot.
                assert!(meta <= 8 * slots, "{meta} for {slots} slots");
            }
        }
        // The slabs the pool picks: the first holds about 512 bytes of slots (at least 4), each
        // later one three tenths of the slots held, at least the first's.
        let pool = Pool::new(l);
        let mut blocks = Vec::new();
        let mut last = (0, 0);
        let mut slabs = Vec::new();
        while slabs.len() < if cfg!(miri) { 3 } else { 12 } {
            blocks.push(pool.allocate(l).unwrap().cast::<u8>());
            let s = pool.stats();
            if s.capacity != last.0 {
                let (slots, bytes) = (s.capacity - last.0, s.bytes_held - last.1);
                slabs.push((slots, bytes - slots * s.slot_size));
                last = (s.capacity, s.bytes_held);
            }
        }
        eprintln!("Pool slot {size}/{align}: natural slabs (slots, metadata B): {slabs:?}");
        let slot = pool.slot_size();
        let first = slabs[0].0;
        assert!(first == 4 || first * slot + slot > 512 && first * slot <= 512);
        let mut held = first;
        for &(slots, _) in &slabs[1..] {
            assert_eq!(
                slots,
                (held * 3 / 10).max(first),
                "after {held} slots: {slabs:?}"
            );
            held += slots;
        }
        for p in blocks {
            // SAFETY: each block is live, from `pool`, with layout `l`.
            unsafe { pool.deallocate(p, l) };
        }
    }
}

/// Blocks per page and waste of each `SizeClassPool` class: the worst internal waste (smallest
/// request of the class) and the page's metadata plus tail.
#[test]
fn size_class_blocks_per_page_and_waste() {
    let options = if cfg!(miri) {
        SizeClassOptions {
            largest_pooled: 512,
            page_size: 4096,
            max_empty_pages: 1,
        }
    } else {
        SizeClassOptions::default()
    };
    let pool = SizeClassPool::with_options(options);
    let o = pool.options();
    let sizes: Vec<usize> = pool.stats().classes().map(|c| c.block_size).collect();
    assert_eq!(*sizes.last().unwrap(), o.largest_pooled);
    let mut prev = 0;
    for (i, &block) in sizes.iter().enumerate() {
        assert_eq!(
            class_size(block),
            block,
            "the class table matches the documented one"
        );
        // Requests prev+1 ..= block share the class.
        for req in [prev + 1, block] {
            let p = pool.allocate(layout(req, 1)).unwrap();
            assert_eq!(p.len(), block, "request {req}");
            // SAFETY: a fresh block of this layout.
            unsafe { pool.deallocate(p.cast(), layout(req, 1)) };
        }
        let waste = block - (prev + 1);
        if block <= 128 {
            assert!(waste < 16);
        } else {
            assert!(waste * 4 <= block, "class {block}: {waste} bytes of waste");
        }
        // Under Miri, which reads the statistics at every block below, every fifth class and
        // the last one.
        if cfg!(miri) && i % 5 != 4 && i + 1 != sizes.len() {
            prev = block;
            continue;
        }
        // Blocks per page: allocate from a fresh pool until the class takes a third page.
        let fresh = SizeClassPool::with_options(options);
        let l = layout(block, 16);
        let mut blocks = Vec::new();
        let class = |pool: &SizeClassPool| {
            pool.stats()
                .classes()
                .find(|c| c.block_size == block)
                .unwrap()
        };
        // (blocks, bytes) of the first and the second page.
        let mut pages = [(0, 0); 2];
        loop {
            blocks.push(fresh.allocate(l).unwrap().cast::<u8>());
            let c = class(&fresh);
            if c.pages == 3 {
                break;
            }
            pages[c.pages - 1].0 += 1;
            pages[c.pages - 1].1 = c.bytes - if c.pages == 2 { pages[0].1 } else { 0 };
        }
        let [(first_blocks, first_page), (second_blocks, second_page)] = pages;
        let metadata = first_page - first_blocks * block;
        eprintln!(
            "class {block:5}: worst request {:5} wastes {waste:4} B ({:4.1}%); first page \
             {first_blocks:3} blocks in {first_page:5} B (metadata {metadata} B), second \
             {second_blocks:3} in {second_page:5} B",
            prev + 1,
            100.0 * waste as f64 / block as f64,
        );
        // The first page holds about 1 KiB of blocks, at least one, and nothing but its
        // metadata (header + one debug bit per 16 bytes) besides: no tail.
        assert_eq!(first_blocks, (1024 / block).max(1), "class {block}");
        assert!(metadata < 128 + first_page / 128, "class {block}");
        // The second: 4 KiB (an eighth of the class's bytes, at least 4 KiB, in whole 4 KiB
        // granules), filled to within a block, or as many blocks as the first if 4 KiB holds
        // fewer.
        assert!(second_blocks >= first_blocks, "class {block}");
        if second_blocks > first_blocks {
            assert!(second_page <= 4096, "class {block}: {second_page} B");
            assert!(
                second_page + block + 160 > 4096,
                "class {block}: {second_page} B"
            );
        }
        assert!(second_page - second_blocks * block < 128 + second_page / 128);
        for p in blocks {
            // SAFETY: each block is live in `fresh` with layout `l`.
            unsafe { fresh.deallocate(p, l) };
        }
        prev = block;
    }
    // Above the largest class: the backing allocator.
    let p = pool.allocate(layout(o.largest_pooled + 1, 1)).unwrap();
    assert_eq!(pool.stats().fallback_blocks, 1);
    // SAFETY: a fresh block of this layout.
    unsafe { pool.deallocate(p.cast(), layout(o.largest_pooled + 1, 1)) };
}
