//! The crate's pure size arithmetic against models computed in `u128`, where nothing overflows
//! (see README.md): arena chunk sizing (`min_chunk_size`, `regular_nominal`, `chunk_size_for`,
//! `chunk_size_for_capacity`), size classes (`class_of`, `class_size`, and the normalized
//! `SizeClassOptions`), `Pool` slot sizing and `Pool` slab layouts, over the whole range of
//! their inputs (every valid layout, every growth state and capacity).
//!
//! The functions are exposed by the library only in fuzz builds (`arena_pool::__fuzzing`). The
//! models follow the policy as documented in the sources; the constants the library does not
//! expose (the malloc overhead of two words, the outsized-chunk factor and threshold, the slab
//! header of five words) are restated here.

#![no_main]

use arbitrary::Arbitrary;
use arena_pool::__fuzzing as f;
use arena_pool::allocator_api2::alloc::Layout;
use arena_pool::{Pool, SizeClassOptions, SizeClassPool};
use libfuzzer_sys::fuzz_target;

const WORD: u128 = size_of::<usize>() as u128;
/// What the arena assumes a `malloc` keeps in front of a block.
const MALLOC_OVERHEAD: u128 = 2 * WORD;
/// A chunk above this many regular chunks (and [`OUTSIZED_MIN`]) does not count for growth.
const OUTSIZED_FACTOR: u128 = 4;
const OUTSIZED_MIN: u128 = 64 * 1024;
/// A `Pool` slab header: next, size, align, slots, first.
const SLAB_HEADER: u128 = 5 * WORD;
/// The largest `usize` and `isize` values, widened.
const USIZE_MAX: u128 = usize::MAX as u128;
const ISIZE_MAX: u128 = isize::MAX as u128;
/// The number of size classes the pool has room for.
const MAX_CLASSES: usize = 64;

#[derive(Arbitrary, Debug)]
struct Input {
    /// A size, biased towards the edges by [`edge`].
    size: u64,
    size_edge: u8,
    /// log2 of an alignment (reduced modulo the word's bits).
    align_shift: u8,
    growth: u64,
    growth_edge: u8,
    slack: bool,
    capacity: u64,
    capacity_edge: u8,
    slots: u32,
    slots_edge: u8,
    class: u8,
    page_shift: u8,
    granule_shift: u8,
}

/// `x`, or a value near a power of two or near `usize::MAX` / `isize::MAX`, as `edge` says.
fn edge(x: u64, edge: u8) -> usize {
    let x = x as usize;
    let k = (edge >> 3) as u32 % usize::BITS;
    let d = x % 64;
    match edge % 8 {
        0..=2 => x,
        3 => usize::MAX - d,
        4 => isize::MAX as usize - d,
        5 => (1usize << k).wrapping_sub(d % 17),
        6 => (1usize << k).wrapping_add(d % 17),
        _ => x % 100_000,
    }
}

/// Whether `size` at `align` is a valid `Layout`: rounded up to `align`, at most `isize::MAX`.
fn valid(size: u128, align: u128) -> bool {
    size.next_multiple_of(align) <= ISIZE_MAX
}

fn min_chunk_model(size: u128, align: u128) -> Option<u128> {
    let pad = align.saturating_sub(f::CHUNK_ALIGN as u128);
    let own = (f::HEADER_SIZE as u128 + pad + size).next_multiple_of(f::CHUNK_ALIGN as u128);
    (own <= USIZE_MAX && valid(own, f::CHUNK_ALIGN as u128)).then_some(own)
}

/// The first chunk's size when none was taken; then half the sum of the regular chunks so far,
/// within the bounds, rounded up to 512 bytes up to a page (4 KiB) and to whole pages above.
fn regular_nominal_model(growth: u128) -> u128 {
    if growth == 0 {
        return f::FIRST_CHUNK_SIZE as u128;
    }
    let half = (growth / 2).clamp(f::SIZE_UNIT as u128, f::MAX_CHUNK_SIZE as u128);
    if half <= 4096 {
        half.next_multiple_of(f::SIZE_UNIT as u128)
    } else {
        half.next_multiple_of(4096)
    }
}

fn chunk_size_model(size: u128, align: u128, growth: u128, slack: bool) -> Option<(u128, u128)> {
    let own = min_chunk_model(size, align)?;
    let nominal = regular_nominal_model(growth);
    let regular = nominal - MALLOC_OVERHEAD;
    if own <= regular {
        return Some((regular, nominal));
    }
    let wanted = if slack { (own * 2).min(USIZE_MAX) } else { own };
    // Rounded as `with_capacity` rounds: 512 bytes up to 32 KiB, pages above.
    let block = round_block_model(wanted + MALLOC_OVERHEAD);
    let mut rounded = if block <= USIZE_MAX {
        block - MALLOC_OVERHEAD
    } else {
        own
    };
    if !valid(rounded, f::CHUNK_ALIGN as u128) {
        rounded = own;
    }
    let limit = (nominal * OUTSIZED_FACTOR).clamp(OUTSIZED_MIN, USIZE_MAX);
    Some(if rounded + MALLOC_OVERHEAD <= limit {
        (rounded, rounded + MALLOC_OVERHEAD)
    } else if slack {
        (rounded, 0)
    } else {
        (own, 0)
    })
}

/// A block size rounded up to a multiple of 512 bytes up to 32 KiB and to whole pages (4 KiB)
/// above.
fn round_block_model(required: u128) -> u128 {
    if required <= 8 * 4096 {
        required.next_multiple_of(f::SIZE_UNIT as u128)
    } else {
        required.next_multiple_of(4096)
    }
}

/// `with_capacity`'s chunk: the capacity, the header and malloc's overhead, rounded.
fn capacity_model(capacity: u128) -> Option<(u128, u128)> {
    let required = capacity + f::HEADER_SIZE as u128 + MALLOC_OVERHEAD;
    let nominal = round_block_model(required);
    if required > USIZE_MAX || nominal > USIZE_MAX {
        return None;
    }
    let size = nominal - MALLOC_OVERHEAD;
    valid(size, f::CHUNK_ALIGN as u128).then_some((size, nominal))
}

/// Block size of the class of `size` (> 0): 16-byte steps up to 128, then four per power of two.
fn class_size_model(size: u128) -> u128 {
    if size <= 128 {
        size.next_multiple_of(16)
    } else {
        let lower = 1u128 << (127 - (size - 1).leading_zeros());
        size.next_multiple_of(lower / 4)
    }
}

/// Index of the class of `size` (> 0).
fn class_index_model(size: u128) -> u128 {
    if size <= 128 {
        (size - 1) / 16
    } else {
        let p = 127 - (size - 1).leading_zeros() as u128;
        let step = 1u128 << (p - 2);
        8 + (p - 7) * 4 + (class_size_model(size) - (1 << p)) / step - 1
    }
}

fn widen(p: Option<(usize, usize)>) -> Option<(u128, u128)> {
    p.map(|(a, b)| (a as u128, b as u128))
}

fn check_chunks(input: &Input) {
    let align = 1usize << (input.align_shift as u32 % (usize::BITS - 1));
    let size = edge(input.size, input.size_edge).min(isize::MAX as usize - (align - 1));
    let layout = Layout::from_size_align(size, align).expect("a clamped layout");
    let growth = edge(input.growth, input.growth_edge);
    let (s, a, g) = (size as u128, align as u128, growth as u128);

    let own = f::min_chunk_size(layout).map(|x| x as u128);
    assert_eq!(own, min_chunk_model(s, a), "min_chunk_size({layout:?})");
    if let Some(own) = own {
        // A chunk of `own` bytes holds the block after the header wherever its 16-aligned data
        // start lands: the worst padding is `align - 16`.
        let pad = a.saturating_sub(f::CHUNK_ALIGN as u128);
        assert!(own >= f::HEADER_SIZE as u128 + pad + s);
        assert_eq!(own % f::CHUNK_ALIGN as u128, 0);
    }

    let nominal = f::regular_nominal(growth) as u128;
    assert_eq!(
        nominal,
        regular_nominal_model(g),
        "regular_nominal({growth})"
    );
    assert!(
        (g == 0 && nominal == f::FIRST_CHUNK_SIZE as u128)
            || (nominal.is_multiple_of(f::SIZE_UNIT as u128)
                && nominal <= f::MAX_CHUNK_SIZE as u128)
    );
    assert!(
        nominal >= (g / 2).min(f::MAX_CHUNK_SIZE as u128),
        "chunks grow with the sum taken: at least half of it, up to the cap"
    );
    assert!(
        nominal <= (g / 2).max(f::SIZE_UNIT as u128) + 4096,
        "a regular chunk is at most half the sum taken, rounded up"
    );

    let got = widen(f::chunk_size_for(layout, growth, input.slack));
    let want = chunk_size_model(s, a, g, input.slack);
    assert_eq!(
        got, want,
        "chunk_size_for({layout:?}, {growth}, {})",
        input.slack
    );
    if let (Some((block, nominal)), Some(own)) = (got, own) {
        assert!(block >= own, "the chunk holds the request");
        assert_eq!(block % f::CHUNK_ALIGN as u128, 0);
        assert!(valid(block, f::CHUNK_ALIGN as u128));
        assert!(
            nominal == 0 || nominal >= block,
            "nominal {nominal}, block {block}"
        );
    }

    let capacity = edge(input.capacity, input.capacity_edge);
    let got = widen(f::chunk_size_for_capacity(capacity));
    assert_eq!(
        got,
        capacity_model(capacity as u128),
        "chunk_size_for_capacity({capacity})"
    );
    if let Some((block, _)) = got {
        assert!(block - f::HEADER_SIZE as u128 >= capacity as u128);
        // At most a page more than asked (beyond the first chunk's size).
        assert!(
            block
                <= (capacity as u128).max(f::FIRST_CHUNK_SIZE as u128)
                    + f::HEADER_SIZE as u128
                    + 4096,
            "chunk_size_for_capacity({capacity}) = {block}"
        );
    }
}

fn check_classes(input: &Input) {
    // Every size a pool may be asked about maps to its class; beyond the largest page's pooled
    // range only the index is defined.
    let size = edge(input.size, input.size_edge).max(1);
    let class = f::class_of(size);
    assert_eq!(
        class as u128,
        class_index_model(size as u128),
        "class_of({size})"
    );
    if class < MAX_CLASSES {
        let block = f::class_size(class);
        assert_eq!(
            block as u128,
            class_size_model(size as u128),
            "class of {size}"
        );
        assert!(block >= size && block.is_multiple_of(16));
        assert_eq!(f::class_of(block), class);
        if class > 0 {
            assert!(
                f::class_size(class - 1) < size,
                "{size} fits a smaller class"
            );
        }
    }
    let class = input.class as usize % MAX_CLASSES;
    let block = f::class_size(class);
    assert_eq!(f::class_of(block), class);
    assert_eq!(class_size_model(block as u128), block as u128);

    // Options as the pool normalizes them.
    let page = 1usize << (input.page_shift as u32 % (usize::BITS - 1));
    let pool = SizeClassPool::with_options(SizeClassOptions {
        largest_pooled: size,
        page_size: page,
        max_empty_pages: 1,
    });
    let o = pool.options();
    let want_page = (page as u128).clamp(4096, 1 << 20);
    assert_eq!(o.page_size as u128, want_page);
    let cap = want_page / 8;
    let wanted = (size as u128).clamp(16, cap);
    let mut largest = class_size_model(wanted);
    if largest > cap {
        // The largest class that still fits eight blocks in a page.
        largest = (16..=cap)
            .rev()
            .find(|&b| class_size_model(b) == b)
            .expect("16 is a class");
    }
    assert_eq!(
        o.largest_pooled as u128, largest,
        "options for {size}, {page}"
    );
}

fn check_pool(input: &Input) {
    let align = 1usize << (input.align_shift as u32 % (usize::BITS - 1));
    let size = edge(input.size, input.size_edge).min(isize::MAX as usize - (align - 1));
    let layout = Layout::from_size_align(size, align).expect("a clamped layout");
    let pool = Pool::new(layout);
    let slot_align = (align as u128).max(WORD);
    let slot = (size as u128).max(WORD).next_multiple_of(slot_align);
    assert_eq!(pool.slot_size() as u128, slot, "slot of {layout:?}");
    assert_eq!(pool.stats().slot_align as u128, slot_align);

    // Slab layouts for any slot count, slot and alignment (the pool asks for powers of two).
    let slots = edge(input.slots as u64, input.slots_edge).max(1);
    let granule = 1usize << (input.granule_shift % 24);
    let slot = slot.min(USIZE_MAX) as usize;
    let got = f::slab_layout_for(slots, slot, slot_align as usize, granule);
    let bitmap = if cfg!(debug_assertions) {
        (slots as u128).div_ceil(64) * 8
    } else {
        0
    };
    let meta = SLAB_HEADER + bitmap;
    let first = meta.next_multiple_of(slot_align);
    let block_align = slot_align.max(WORD).max(granule as u128);
    let block = slots as u128 * slot as u128 + first;
    let want = (meta <= USIZE_MAX && first <= USIZE_MAX && block <= USIZE_MAX)
        .then_some(block)
        .filter(|&b| valid(b, block_align));
    assert_eq!(
        got.map(|l| l.size() as u128),
        want,
        "slab of {slots} x {slot} aligned {slot_align}, granule {granule}"
    );
    if let Some(l) = got {
        assert_eq!(l.align() as u128, block_align);
        // The slots start aligned, after the metadata, and fill the block exactly.
        assert_eq!(l.size() - slots * slot, first as usize);
    }
}

fuzz_target!(|input: Input| {
    check_chunks(&input);
    check_classes(&input);
    check_pool(&input);
});
