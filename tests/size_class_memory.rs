//! `SizeClassPool`'s memory on a churning live set of mixed sizes (the pools suite's map of byte
//! vectors): the bytes it holds from its backing allocator against the bytes the same program
//! takes when every block is allocated directly, measured by a metering backing allocator.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use arena_pool::SizeClassPool;
use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global};
use arena_pool::allocator_api2::vec::Vec;

/// Scales a count down under Miri (about 1 000 times slower than a native run).
const fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { native }
}

/// Entries of the map, replacements per cycle, and cycles (one pool for all of them).
const ENTRIES: u64 = scaled(1000, 100) as u64;
const REPLACEMENTS: u64 = scaled(100_000, 250) as u64;
const CYCLES: usize = scaled(6, 2);

/// A backing allocator on `Global` that counts the bytes it holds (the sizes asked for), their
/// peak, and its calls.
#[derive(Default)]
struct Meter {
    held: Cell<usize>,
    peak: Cell<usize>,
    calls: Cell<usize>,
}

// SAFETY: every call is forwarded to `Global` with the caller's arguments; the counters do not
// touch the memory.
unsafe impl Allocator for Meter {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let p = Global.allocate(layout)?;
        self.calls.set(self.calls.get() + 1);
        self.held.set(self.held.get() + layout.size());
        self.peak.set(self.peak.get().max(self.held.get()));
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.calls.set(self.calls.get() + 1);
        self.held.set(self.held.get() - layout.size());
        // SAFETY: forwarded from the caller.
        unsafe { Global.deallocate(ptr, layout) }
    }
}

/// A xorshift64 sequence: the same lengths and keys on every run.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x % n
    }
}

/// The keys are distinct integers: their identity, mixed, is enough.
#[derive(Clone, Copy, Default)]
struct MixHasher(u64);

impl core::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^ (x >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 ^= x;
    }
}

impl core::hash::BuildHasher for MixHasher {
    type Hasher = MixHasher;
    fn build_hasher(&self) -> MixHasher {
        MixHasher(0)
    }
}

/// A byte vector of 8 to 512 bytes in `a`.
fn byte_vec<A: Allocator>(rng: &mut XorShift, fill: u8, a: A) -> Vec<u8, A> {
    let len = 8 + rng.below(505) as usize;
    let mut v: Vec<u8, A> = Vec::with_capacity_in(len, a);
    // Written at once (`resize` writes a byte at a time, which Miri interprets a thousand times
    // slower than the rest of the loop).
    // SAFETY: the capacity is at least `len`, and the `len` bytes are written before `set_len`.
    unsafe {
        v.as_mut_ptr().write_bytes(fill, len);
        v.set_len(len);
    }
    v
}

/// `CYCLES` times: a map of `ENTRIES` byte vectors is built, `REPLACEMENTS` random entries are
/// replaced by new vectors of random lengths, and the map is dropped; everything in `a`.
fn map_of_vecs<A: Allocator + Copy>(a: A) {
    for _ in 0..CYCLES {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut map = hashbrown::HashMap::with_hasher_in(MixHasher::default(), a);
        for key in 0..ENTRIES {
            map.insert(key, byte_vec(&mut rng, key as u8, a));
        }
        for step in 0..REPLACEMENTS {
            let key = rng.below(ENTRIES);
            let old = map.insert(key, byte_vec(&mut rng, step as u8, a));
            assert!(old.is_some_and(|v| v.len() >= 8));
        }
        assert_eq!(map.len() as u64, ENTRIES);
    }
}

#[test]
fn a_churning_map_of_byte_vectors_holds_at_most_1_45_times_the_direct_peak() {
    // The same program with every block taken from the meter directly (the map's entries are the
    // same size: both hold a reference to their allocator).
    let direct = Meter::default();
    map_of_vecs(&direct);
    assert_eq!(direct.held.get(), 0);

    let meter = Meter::default();
    let pool = SizeClassPool::new_in(&meter);
    map_of_vecs(&pool);
    let (peak, direct_peak) = (meter.peak.get(), direct.peak.get());
    // Class rounding (at most a quarter of a block, about 8% here), the pages' free blocks and
    // headers, and the address map's table. (Under Miri the map is too small for a ratio: each
    // class's first pages and the table outweigh its blocks.)
    assert!(
        cfg!(miri) || 20 * peak <= 29 * direct_peak,
        "the pool peaked at {peak} B, direct allocation at {direct_peak} B"
    );
    // With every block free, the pool keeps at most its cache of empty pages (four largest
    // pages' worth of bytes), the small pages its classes keep formatted in place, and the
    // address map's table.
    let s = pool.stats();
    assert_eq!(s.live_blocks(), 0);
    assert!(s.empty_bytes <= 4 * pool.options().page_size);
    assert!(
        meter.held.get() <= s.empty_bytes + 19 * 4096 + 64 * 1024,
        "held {} B at the end: {s:?}",
        meter.held.get()
    );
}
