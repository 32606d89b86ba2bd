//! The `pools` suite: slot pools and the size-class pool against their peers. Ids are
//! `pools/<crate>/<case>`.
//!
//! - Slot level ([`SlotStore`]): arena-pool's `Box<T, &Pool>`, `Box<T>` on the system allocator,
//!   allocator-api2's `Box<T, Mi>` on mimalloc, slab's `insert`/`remove`, fastalloc's `FixedPool`
//!   and shared_arena's `Pool`, each with its own owning handle, in an alloc+free churn and in
//!   fill-then-drain runs freed in LIFO, FIFO and random order.
//! - Mixed sizes: `SizeClassPool` against the system allocator (allocator-api2's `Global`) and
//!   mimalloc ([`Mi`]), with `Vec` and `HashMap` churn and a live set of mixed-size blocks
//!   replaced one at a time.
//!
//! One store serves every iteration, and every iteration frees all it allocated, so the measured
//! state is the pool's steady state (its slabs already taken).
//!
//! The cases' own data (orders of indices, lists of handles or blocks, the replacement steps) is
//! made and dropped outside the memory meter's count ([`unmetered`]): the memory figures are the
//! stores' own.
//!
//! `mimalloc` is `mimalloc::MiMalloc` used as an allocator instance ([`Mi`]), not as the
//! process's global allocator. It takes its memory from the operating system, not from the
//! global allocator the memory meter counts, so its cases are not registered in memory mode
//! ([`memory_mode`]): the `mimalloc` columns have times and instruction counts, no memory figures.
//!
//! The thread-safe pools get their rows here too: a `SlotFamily` (in the library's `slots`
//! module) and one line in `slot_row` for the slot-level rows, one `r.bench` line in `mixed_row`
//! for the mixed-size rows.

use std::hint::black_box;

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;
use arena_pool::{SizeClassPool, SyncArena, SyncPool};
use arena_pool_benches::harness::{
    Driver, Runner, arena_pool_bench_measured_worker, memory_mode, run_suite,
};
use arena_pool_benches::meter::unmetered;
use arena_pool_benches::{
    FastallocSlots, Layout, Mi, MiBox, MixHasher, N, Payload, PoolSlots, SharedArenaSlots,
    SlabSlots, SlotFamily, SlotStore, SyncPoolSlots, SystemBox, TypedPoolSlots, XorShift,
};

/// Live blocks of the fill-then-drain cases.
const FILL_SIZES: [usize; 2] = [1_000, 100_000];
/// Vectors of the `Vec` churn case, and their largest length.
const VECS: usize = 1_000;
const VEC_MAX_LEN: usize = 256;
/// Maps of the `HashMap` churn case, and entries per map.
const MAPS: usize = 100;
const MAP_ENTRIES: u64 = 100;
/// Live blocks of the mixed-size churn case.
const LIVE: usize = 1_000;
/// Live objects of the slot replacement case, and the replacements.
const LIVE_SLOTS: usize = 1_000;
const REPLACEMENTS: usize = 100_000;
/// Entries of the map of byte vectors, their lengths, and the replacements.
const MAP_VECS: usize = 1_000;
const VEC_BYTES: core::ops::RangeInclusive<usize> = 8..=512;

#[derive(Clone, Copy, Debug)]
enum Order {
    Lifo,
    Fifo,
    Random,
}

impl Order {
    /// The order in which the blocks `0..n` (allocated in that order) are freed.
    fn indices(self, n: usize) -> std::vec::Vec<u32> {
        let mut v: std::vec::Vec<u32> = (0..n as u32).collect();
        match self {
            Order::Lifo => v.reverse(),
            Order::Fifo => {}
            Order::Random => {
                // Fisher-Yates with a fixed xorshift sequence: the same order for every crate.
                let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
                for i in (1..n).rev() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    v.swap(i, (x % (i as u64 + 1)) as usize);
                }
            }
        }
        v
    }
}

/// `insert` then `remove` of one value, `N` times: the free slot is reused each time.
fn churn<F: SlotFamily, const W: usize>(d: &mut Driver<'_, '_>) {
    let store = F::Store::<Payload<W>>::with_capacity(1);
    d.steady(|| {
        for i in 0..N as u64 {
            let h = store.insert(Payload::new(i));
            black_box(&h);
            store.remove(h);
        }
    });
}

/// `n` inserts, then the `n` removes in `order`.
fn fill_drain<F: SlotFamily>(d: &mut Driver<'_, '_>, n: usize, order: Order) {
    let store = F::Store::<Payload<4>>::with_capacity(n);
    let order = unmetered(|| order.indices(n));
    let mut handles = unmetered(|| std::vec::Vec::with_capacity(n));
    d.steady(|| {
        for i in 0..n as u64 {
            handles.push(Some(store.insert(Payload::new(i))));
        }
        black_box(&mut handles);
        for &i in &order {
            store.remove(handles[i as usize].take().unwrap());
        }
        handles.clear();
    });
    unmetered(|| drop((order, handles)));
}

/// `n` inserts, the `n` values taken back in a random order, `n` inserts again, taken back in
/// another random order; checks the values it gets back.
fn fill_refill<F: SlotFamily>(d: &mut Driver<'_, '_>, n: usize) {
    let store = F::Store::<Payload<4>>::with_capacity(n);
    let orders = unmetered(|| [Order::Random.indices(n), shuffled(n, 0x5851_f42d_4c95_7f2d)]);
    let mut handles = unmetered(|| std::vec::Vec::with_capacity(n));
    let n64 = n as u64;
    d.steady(|| {
        let mut sum = 0;
        for (round, order) in (0u64..).zip(&orders) {
            for i in 0..n64 {
                handles.push(Some(store.insert(Payload::new(round * n64 + i))));
            }
            black_box(&mut handles);
            for &i in order {
                sum += store.take(handles[i as usize].take().unwrap()).0[0];
            }
            handles.clear();
        }
        assert_eq!(sum, 2 * n64 * (2 * n64 - 1) / 2);
    });
    unmetered(|| drop((orders, handles)));
}

/// `0..n` in a random order (Fisher-Yates from a fixed seed).
fn shuffled(n: usize, seed: u64) -> std::vec::Vec<u32> {
    let mut v: std::vec::Vec<u32> = (0..n as u32).collect();
    let mut rng = XorShift::new(seed);
    for i in (1..n).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

/// A live set of `LIVE_SLOTS` 64-byte objects: `REPLACEMENTS` times, a random one is taken out
/// and a new one put in; then all are taken out. Checks the values taken out (in their order)
/// against a model of the live set.
fn replace_slots<F: SlotFamily>(d: &mut Driver<'_, '_>) {
    let store = F::Store::<Payload<8>>::with_capacity(LIVE_SLOTS);
    let mut handles = unmetered(|| std::vec::Vec::with_capacity(LIVE_SLOTS));
    let expected = replace_checksum();
    d.steady(|| {
        for i in 0..LIVE_SLOTS as u64 {
            handles.push(Some(store.insert(Payload::new(i))));
        }
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut check = 0u64;
        for step in 0..REPLACEMENTS as u64 {
            let i = rng.below(LIVE_SLOTS as u64) as usize;
            let old = store.take(handles[i].take().unwrap()).0[0];
            check = check.wrapping_mul(31).wrapping_add(old);
            handles[i] = Some(store.insert(Payload::new(LIVE_SLOTS as u64 + step)));
        }
        for h in handles.drain(..) {
            check = check
                .wrapping_mul(31)
                .wrapping_add(store.take(h.unwrap()).0[0]);
        }
        assert_eq!(check, expected);
    });
    unmetered(|| drop(handles));
}

/// The checksum `replace_slots` computes, from a model of its live set (on the stack).
fn replace_checksum() -> u64 {
    let mut live: [u64; LIVE_SLOTS] = core::array::from_fn(|i| i as u64);
    let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
    let mut check = 0u64;
    for step in 0..REPLACEMENTS as u64 {
        let i = rng.below(LIVE_SLOTS as u64) as usize;
        check = check.wrapping_mul(31).wrapping_add(live[i]);
        live[i] = LIVE_SLOTS as u64 + step;
    }
    live.iter()
        .fold(check, |c, &v| c.wrapping_mul(31).wrapping_add(v))
}

#[derive(Clone, Copy)]
enum SlotCase {
    /// `churn` with a payload of `W` words.
    Churn(usize),
    /// `fill_drain` of `n` 32-byte payloads.
    FillDrain(usize, Order),
    /// `fill_refill` of `n` 32-byte payloads.
    FillRefill(usize),
    /// `replace_slots`.
    ReplaceSlots,
}

impl SlotCase {
    fn ops(self) -> u64 {
        match self {
            SlotCase::Churn(_) => N as u64,
            SlotCase::FillDrain(n, _) => 2 * n as u64,
            SlotCase::FillRefill(n) => 4 * n as u64,
            SlotCase::ReplaceSlots => REPLACEMENTS as u64,
        }
    }

    fn run<F: SlotFamily>(self, d: &mut Driver<'_, '_>) {
        match self {
            SlotCase::Churn(1) => churn::<F, 1>(d),
            SlotCase::Churn(4) => churn::<F, 4>(d),
            SlotCase::Churn(16) => churn::<F, 16>(d),
            SlotCase::Churn(128) => churn::<F, 128>(d),
            SlotCase::Churn(w) => unreachable!("no churn case for {w} words"),
            SlotCase::FillDrain(n, order) => fill_drain::<F>(d, n, order),
            SlotCase::FillRefill(n) => fill_refill::<F>(d, n),
            SlotCase::ReplaceSlots => replace_slots::<F>(d),
        }
    }
}

/// One slot-level row for every store, arena-pool first.
fn slot_row(r: &mut Runner<'_>, name: &str, case: SlotCase) {
    fn one<F: SlotFamily>(r: &mut Runner<'_>, name: &str, case: SlotCase) {
        r.bench(F::NAME, name, case.ops(), |d| case.run::<F>(d));
    }
    one::<PoolSlots>(r, name, case);
    one::<TypedPoolSlots>(r, name, case);
    one::<SyncPoolSlots>(r, name, case);
    one::<SystemBox>(r, name, case);
    if !memory_mode() {
        one::<MiBox>(r, name, case);
    }
    one::<SlabSlots>(r, name, case);
    one::<FastallocSlots>(r, name, case);
    one::<SharedArenaSlots>(r, name, case);
}

#[derive(Clone, Copy)]
enum MixedCase {
    /// `VECS` vectors of `u64`, of lengths cycling through 1 ..= `VEC_MAX_LEN`, each built by
    /// pushes (growing by doubling) and dropped.
    VecChurn,
    /// `MAPS` maps of `MAP_ENTRIES` entries, each built by inserts and dropped.
    MapChurn,
    /// A live set of `LIVE` blocks of 16 B to 1 KiB: `N` times, one block (a fixed
    /// pseudo-random choice) is freed and replaced by one of another size.
    Replace,
    /// A `HashMap` of `MAP_VECS` byte vectors (`Vec<u8>`, `VEC_BYTES` long), map and vectors in
    /// the allocator: `REPLACEMENTS` times, a random entry's vector is replaced by a new one of
    /// a random length; then the map is dropped. Checks the vectors it replaces.
    MapOfVecs,
}

impl MixedCase {
    fn ops(self) -> u64 {
        match self {
            MixedCase::VecChurn => VECS as u64,
            MixedCase::MapChurn => MAPS as u64 * MAP_ENTRIES,
            MixedCase::Replace => N as u64,
            MixedCase::MapOfVecs => REPLACEMENTS as u64,
        }
    }

    fn run<A: Allocator + Copy>(self, d: &mut Driver<'_, '_>, a: A) {
        match self {
            MixedCase::VecChurn => d.steady(|| {
                for k in 0..VECS {
                    let len = 1 + (k * 37) % VEC_MAX_LEN;
                    let mut v = Vec::new_in(a);
                    for i in 0..len as u64 {
                        v.push(i);
                    }
                    black_box(&mut v);
                }
            }),
            MixedCase::MapChurn => d.steady(|| {
                for m in 0..MAPS as u64 {
                    let mut map = hashbrown::HashMap::with_hasher_in(SeqHash, a);
                    for k in 0..MAP_ENTRIES {
                        map.insert(m * MAP_ENTRIES + k, k);
                    }
                    black_box(&mut map);
                }
            }),
            MixedCase::Replace => {
                let steps = unmetered(|| replacements(N, LIVE));
                let mut live: std::vec::Vec<(core::ptr::NonNull<u8>, Layout)> =
                    unmetered(|| std::vec::Vec::with_capacity(LIVE));
                for &(_, layout) in &steps[..LIVE] {
                    live.push((a.allocate(layout).unwrap().cast(), layout));
                }
                d.steady(|| {
                    for &(i, layout) in &steps {
                        let slot = &mut live[i];
                        // SAFETY: `slot` holds a live block of `a` with its layout; it is
                        // replaced by a fresh one at once.
                        unsafe { a.deallocate(slot.0, slot.1) };
                        *slot = (a.allocate(layout).unwrap().cast(), layout);
                    }
                    black_box(&mut live);
                });
                for &(p, layout) in &live {
                    // SAFETY: every block left in the set is live, allocated by `a` with `layout`.
                    unsafe { a.deallocate(p, layout) };
                }
                unmetered(|| drop((steps, live)));
            }
            MixedCase::MapOfVecs => {
                let expected = map_of_vecs_checksum();
                d.steady(|| {
                    let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
                    let mut map = hashbrown::HashMap::with_hasher_in(MixHasher::default(), a);
                    for key in 0..MAP_VECS as u64 {
                        map.insert(key, byte_vec(&mut rng, key as u8, a));
                    }
                    let mut check = 0u64;
                    for step in 0..REPLACEMENTS as u64 {
                        let key = rng.below(MAP_VECS as u64);
                        let new = byte_vec(&mut rng, step as u8, a);
                        let old = map.insert(key, new).expect("every key is in the map");
                        check = check.wrapping_mul(31).wrapping_add(vec_sum(&old));
                    }
                    let map = black_box(map);
                    let total = (0..MAP_VECS as u64).map(|k| vec_sum(&map[&k])).sum::<u64>();
                    assert_eq!((check, total), expected);
                });
            }
        }
    }
}

/// A byte vector in `a` of a random length in `VEC_BYTES`, filled with `fill`.
#[inline(always)]
fn byte_vec<A: Allocator>(rng: &mut XorShift, fill: u8, a: A) -> Vec<u8, A> {
    let span = (VEC_BYTES.end() - VEC_BYTES.start() + 1) as u64;
    let len = VEC_BYTES.start() + rng.below(span) as usize;
    let mut v = Vec::with_capacity_in(len, a);
    v.resize(len, fill);
    v
}

/// What the map-of-vectors case checks a vector by: its length and its first byte.
fn vec_sum(v: &[u8]) -> u64 {
    ((v.len() as u64) << 8) | u64::from(v[0])
}

/// The checksums of the map-of-vectors case (of the replaced vectors, in order, and of the
/// vectors left), from a model of the map (the same random sequence; no allocation).
fn map_of_vecs_checksum() -> (u64, u64) {
    let span = (VEC_BYTES.end() - VEC_BYTES.start() + 1) as u64;
    let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
    let mut model = [0u64; MAP_VECS];
    for (key, entry) in model.iter_mut().enumerate() {
        let len = *VEC_BYTES.start() as u64 + rng.below(span);
        *entry = (len << 8) | u64::from(key as u8);
    }
    let mut check = 0u64;
    for step in 0..REPLACEMENTS as u64 {
        let key = rng.below(MAP_VECS as u64) as usize;
        let len = *VEC_BYTES.start() as u64 + rng.below(span);
        check = check.wrapping_mul(31).wrapping_add(model[key]);
        model[key] = (len << 8) | u64::from(step as u8);
    }
    (check, model.iter().sum())
}

/// `n` replacement steps over a live set of `live` blocks: which block, and the new layout
/// (16 B to 1 KiB, alignment 8; a fixed xorshift sequence).
fn replacements(n: usize, live: usize) -> std::vec::Vec<(usize, Layout)> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n.max(live))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let size = 16 + (x >> 16) % 1009;
            (
                (x % live as u64) as usize,
                Layout::from_size_align(size as usize, 8).unwrap(),
            )
        })
        .collect()
}

/// A hasher for the map churn: the keys are distinct integers, so their identity (mixed) is
/// enough, and costs every allocator the same.
#[derive(Clone, Copy)]
struct SeqHash;

impl core::hash::BuildHasher for SeqHash {
    type Hasher = SeqHasher;
    fn build_hasher(&self) -> SeqHasher {
        SeqHasher(0)
    }
}

struct SeqHasher(u64);

impl core::hash::Hasher for SeqHasher {
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

/// One mixed-size row: `SizeClassPool` (the column named arena-pool), the system allocator and
/// (not in memory mode) mimalloc.
fn mixed_row(r: &mut Runner<'_>, name: &str, case: MixedCase) {
    r.bench("arena-pool", name, case.ops(), |d| {
        let pool = SizeClassPool::new();
        case.run(d, &pool);
    });
    r.bench("System", name, case.ops(), |d| case.run(d, Global));
    if !memory_mode() {
        r.bench("mimalloc", name, case.ops(), |d| case.run(d, Mi));
    }
}

/// Runs `work` on each of `threads` scoped threads (each iteration spawns and
/// joins them: that cost is in every column of a row alike).
fn on_threads(threads: usize, work: &(dyn Fn() + Sync)) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| arena_pool_bench_measured_worker(&mut || work()));
        }
    });
}

/// The thread-safe types with 1 and 2 threads, each thread doing `N` operations per iteration.
/// Boxes: `SyncPool` against the system allocator and (not in memory mode) mimalloc. Bump
/// allocation: `SyncArena`'s shared path (`&SyncArena`) against a `LocalArena` handle per thread,
/// then `reset` (no peer here has a thread-safe bump arena on allocator-api2 0.2).
fn thread_rows(r: &mut Runner<'_>) {
    for threads in [1, 2] {
        let ops = (threads * N) as u64;
        let name = format!("threads: Box<[u64; 4]> new + drop x {N} on each of {threads} threads");
        r.bench("arena-pool-SyncPool", &name, ops, |d| {
            let pool = SyncPool::for_type::<Payload<4>>();
            d.steady(|| {
                on_threads(threads, &|| {
                    for i in 0..N as u64 {
                        black_box(allocator_api2::boxed::Box::new_in(
                            Payload::<4>::new(i),
                            &pool,
                        ));
                    }
                });
            });
        });
        r.bench("System", &name, ops, |d| {
            d.steady(|| {
                on_threads(threads, &|| {
                    for i in 0..N as u64 {
                        black_box(std::boxed::Box::new(Payload::<4>::new(i)));
                    }
                });
            });
        });
        if !memory_mode() {
            r.bench("mimalloc", &name, ops, |d| {
                d.steady(|| {
                    on_threads(threads, &|| {
                        for i in 0..N as u64 {
                            black_box(allocator_api2::boxed::Box::new_in(Payload::<4>::new(i), Mi));
                        }
                    });
                });
            });
        }
        let name = format!("threads: alloc(u64) x {N} on each of {threads} threads, then reset");
        r.bench("arena-pool-SyncArena", &name, ops, |d| {
            let mut arena = SyncArena::new();
            d.steady(|| {
                on_threads(threads, &|| {
                    for i in 0..N as u64 {
                        black_box(arena.alloc(i));
                    }
                });
                arena.reset();
            });
        });
        r.bench("arena-pool-LocalArena", &name, ops, |d| {
            let mut arena = SyncArena::new();
            d.steady(|| {
                on_threads(threads, &|| {
                    let local = arena.local();
                    for i in 0..N as u64 {
                        black_box(local.alloc(i));
                    }
                });
                arena.reset();
            });
        });
    }
}

fn pools(r: &mut Runner<'_>) {
    for words in [1, 4, 16, 128] {
        slot_row(
            r,
            &format!("Pool: alloc + free of {} B x {N}", 8 * words),
            SlotCase::Churn(words),
        );
    }
    for n in FILL_SIZES {
        for order in [Order::Lifo, Order::Fifo, Order::Random] {
            let order_name = format!("{order:?}").to_uppercase();
            slot_row(
                r,
                &format!("Pool: fill {n} x 32 B, free in {order_name} order"),
                SlotCase::FillDrain(n, order),
            );
        }
    }
    mixed_row(
        r,
        &format!("SizeClassPool: Vec<u64> of 1 to {VEC_MAX_LEN} pushes x {VECS}"),
        MixedCase::VecChurn,
    );
    mixed_row(
        r,
        &format!("SizeClassPool: HashMap<u64, u64> of {MAP_ENTRIES} inserts x {MAPS}"),
        MixedCase::MapChurn,
    );
    mixed_row(
        r,
        &format!("SizeClassPool: replace one of {LIVE} live blocks (16 B to 1 KiB) x {N}"),
        MixedCase::Replace,
    );
    // The workloads of the pools issue (its first, alloc + free of 32 B, is the churn row above).
    slot_row(
        r,
        &format!("Pool: fill {N} x 32 B, free in random order, refill, free in another"),
        SlotCase::FillRefill(N),
    );
    slot_row(
        r,
        &format!("Pool: replace a random one of {LIVE_SLOTS} live x 64 B, x {REPLACEMENTS}"),
        SlotCase::ReplaceSlots,
    );
    mixed_row(
        r,
        &format!(
            "SizeClassPool: HashMap of {MAP_VECS} Vec<u8> (8 to 512 B), replace one x {REPLACEMENTS}"
        ),
        MixedCase::MapOfVecs,
    );
    thread_rows(r);
}

fn main() {
    run_suite("pools", pools);
}
