//! The `memory` suite: workloads chosen for what an allocator holds from the allocator below it
//! (the memory mode's figures, see `benches/src/harness.rs`), run for every arena crate and the
//! system allocator, and timed and counted as the other suites are. Ids are
//! `memory/<crate>/<case>`.
//!
//! Most rows: each iteration is one unit of work on a fresh allocator, its construction and
//! teardown included ([`Driver::fresh`]). Where it matters, a unit marks the bytes still held
//! ([`mark_held`]: after the collections are dropped, after the scope ends, after the resets)
//! and the window whose calls into the allocator below are its "calls after settling"
//! ([`settled`]).
//!
//! The reuse-loop rows ([`Reuse`]): one allocator for all iterations, each iteration one cycle
//! and then the crate's reset ([`reset_loop`], so [`Driver::steady`]); the memory mode reports
//! their first cycle and their steady state apart, both counted from before the allocator was
//! built, so what a reset keeps counts in every cycle after it.
//!
//! Every unit and every cycle checks its result, the same on every crate.

use std::hint::black_box;

use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;
use arena_pool_benches::harness::{Driver, Runner, mark_held, reset_loop, run_suite, settled};
use arena_pool_benches::meter::unmetered;
use arena_pool_benches::{
    AllocError, Allocator, Api02, BenchAlloc, Layout, MixHasher, SystemAlloc,
};
use core::ptr::NonNull;

/// Pushes of the `Vec<u64>` case.
const VEC_PUSHES: u64 = 100_000;
/// Inserts of the `HashMap` case.
const MAP_KEYS: u64 = 100_000;
/// Inner vectors of the `Vec<Vec<u32>>` case, and pushes into each.
const OUTER: usize = 1_000;
const INNER: u32 = 100;
/// Large buffers of the free-in-the-middle case, and their size.
const BUFFERS: usize = 10;
const MIB: usize = 1 << 20;
/// Size of the vector built in a scope, and the step it grows by.
const SCOPED_BYTES: usize = 8 * MIB;
const SCOPED_STEP: usize = 4096;
/// Blocks of one cycle of the reset loops (64 B each: 62.5 KiB), and the cycles.
const CYCLE_BLOCKS: usize = 1_000;
const STEADY_CYCLES: usize = 20;
/// Cycles of the steady loop after which its calls are counted.
const STEADY_SETTLE: usize = 4;
/// Blocks of the spike (64 B each: 61 MiB), then cycles until the held bytes are read, then
/// cycles whose calls are counted.
const SPIKE_BLOCKS: usize = 1_000_000;
const SPIKE_SETTLE: usize = 8;
const SPIKE_AFTER: usize = 8;

/// Pushes of the reuse loop's `Vec<u64>` between two `u64`s placed in the allocator.
const PLACE_EVERY: u64 = 10;
/// Strings of the interner.
const INTERNED: u32 = 50_000;

#[derive(Clone, Copy)]
enum Case {
    /// `Vec<u64>`: `push` × `VEC_PUSHES`, no reserve (it grows by doubling).
    VecPush,
    /// hashbrown `HashMap<u64, u64>`: `MAP_KEYS` inserts.
    HashMap,
    /// `Vec<Vec<u32>>`: `OUTER` inner vectors of `INNER` pushes each.
    VecOfVecs,
    /// `BUFFERS` times: a 1 MiB `Vec<u8>`, a small block after it (kept), the buffer freed (while
    /// it is not the last block).
    FreeInTheMiddle,
    /// An 8 MiB `Vec<u8>` grown in a scope (`SCOPED_STEP` bytes at a time); held is read after
    /// the scope.
    Scoped,
    /// `STEADY_CYCLES` × (`CYCLE_BLOCKS` blocks of 64 B, reset): held after the last cycle, the
    /// calls of the cycles after the `STEADY_SETTLE`th.
    SteadyResets,
    /// `SPIKE_BLOCKS` blocks of 64 B and a reset, then `SPIKE_SETTLE` cycles as above (held is
    /// read after them), then `SPIKE_AFTER` cycles whose calls are counted.
    Spike,
}

impl Case {
    /// Operations of one unit: the divisor of the instruction counts.
    fn ops(self) -> u64 {
        match self {
            Case::VecPush => VEC_PUSHES,
            Case::HashMap => MAP_KEYS,
            Case::VecOfVecs => (OUTER as u64) * u64::from(INNER),
            Case::FreeInTheMiddle => BUFFERS as u64,
            Case::Scoped => (SCOPED_BYTES / SCOPED_STEP) as u64,
            Case::SteadyResets => (STEADY_CYCLES * CYCLE_BLOCKS) as u64,
            Case::Spike => (SPIKE_BLOCKS + (SPIKE_SETTLE + SPIKE_AFTER) * CYCLE_BLOCKS) as u64,
        }
    }

    /// One unit of the case on a fresh `A`.
    fn unit<A: BenchAlloc>(self) {
        let mut a = A::new();
        match self {
            Case::VecPush => {
                let mut v = Vec::new_in(Api02(&a));
                for i in 0..VEC_PUSHES {
                    v.push(i);
                }
                let v = black_box(v);
                assert_eq!(v.iter().sum::<u64>(), VEC_PUSHES * (VEC_PUSHES - 1) / 2);
            }
            Case::HashMap => {
                let mut map = hashbrown::HashMap::with_hasher_in(MixHasher::default(), Api02(&a));
                for k in 0..MAP_KEYS {
                    map.insert(k, 2 * k);
                }
                let map = black_box(map);
                assert_eq!(map.len() as u64, MAP_KEYS);
                assert_eq!(map.values().sum::<u64>(), MAP_KEYS * (MAP_KEYS - 1));
            }
            Case::VecOfVecs => {
                let mut outer = Vec::new_in(Api02(&a));
                for _ in 0..OUTER {
                    let mut inner = Vec::new_in(Api02(&a));
                    for j in 0..INNER {
                        inner.push(j);
                    }
                    outer.push(inner);
                }
                let outer = black_box(outer);
                let sum: u64 = outer.iter().flatten().map(|&j| u64::from(j)).sum();
                assert_eq!(sum, OUTER as u64 * u64::from(INNER * (INNER - 1) / 2));
            }
            Case::FreeInTheMiddle => {
                let mut kept: [Option<Box<u64, Api02<'_, A>>>; BUFFERS] = Default::default();
                for (i, slot) in kept.iter_mut().enumerate() {
                    let mut buffer = Vec::with_capacity_in(MIB, Api02(&a));
                    buffer.resize(MIB, i as u8);
                    *slot = Some(Box::new_in(i as u64, Api02(&a)));
                    let buffer = black_box(buffer);
                    assert_eq!((buffer[0], buffer[MIB - 1]), (i as u8, i as u8));
                }
                let kept = black_box(kept);
                let sum: u64 = kept.iter().flatten().map(|b| **b).sum();
                assert_eq!(sum, (BUFFERS * (BUFFERS - 1) / 2) as u64);
            }
            Case::Scoped => unreachable!("the scoped case has its own unit (`Scoped::unit`)"),
            Case::SteadyResets => {
                for _ in 0..STEADY_SETTLE {
                    cycle(&mut a, CYCLE_BLOCKS);
                }
                settled(|| {
                    for _ in STEADY_SETTLE..STEADY_CYCLES {
                        cycle(&mut a, CYCLE_BLOCKS);
                    }
                });
            }
            Case::Spike => {
                cycle(&mut a, SPIKE_BLOCKS);
                for _ in 0..SPIKE_SETTLE {
                    cycle(&mut a, CYCLE_BLOCKS);
                }
                mark_held();
                settled(|| {
                    for _ in 0..SPIKE_AFTER {
                        cycle(&mut a, CYCLE_BLOCKS);
                    }
                });
                // The held bytes are those marked after the `SPIKE_SETTLE` cycles, not here.
                drop(a);
                return;
            }
        }
        mark_held();
        drop(a);
    }
}

/// The reuse-loop rows: one allocator for all iterations, each iteration one cycle of the case
/// and then the crate's reset (`System`'s frees what the cycle left).
#[derive(Clone, Copy)]
enum Reuse {
    /// `Vec<u64>` pushed to `VEC_PUSHES` (no reserve), a `u64` placed in the allocator after
    /// every `PLACE_EVERY`th push, counted from the first (so that the vector, whose first block
    /// comes with the first push, is never the last block when it grows); the vector dropped, the
    /// placed values left to the reset.
    VecPushPlaced,
    /// An interner: `INTERNED` strings `key{i}`, each looked up in a hashbrown
    /// `HashMap<&str, u32>` that lives in the allocator and, not found, copied into the allocator
    /// and inserted with the next id; the map dropped, the strings left to the reset.
    Interner,
    /// hashbrown `HashMap<u64, u64>`: `MAP_KEYS` inserts; the map dropped.
    HashMap,
}

impl Reuse {
    /// Operations of one cycle: the divisor of the instruction counts.
    fn ops(self) -> u64 {
        match self {
            Reuse::VecPushPlaced => VEC_PUSHES,
            Reuse::Interner => u64::from(INTERNED),
            Reuse::HashMap => MAP_KEYS,
        }
    }

    /// The case on `A`, one cycle per iteration.
    fn run<A: BenchAlloc>(self, d: &mut Driver<'_, '_>) {
        match self {
            Reuse::VecPushPlaced => {
                // The addresses of the placed values are the case's data, not the allocator's:
                // not metered, and of a capacity no cycle exceeds (pushing never allocates).
                let places = (VEC_PUSHES / PLACE_EVERY) as usize;
                let mut placed = unmetered(|| std::vec::Vec::with_capacity(places));
                reset_loop::<A>(d, |a| {
                    let mut v = Vec::new_in(Api02(a));
                    for i in 0..VEC_PUSHES {
                        v.push(i);
                        if i % PLACE_EVERY == 0 {
                            let p = a.allocate(Layout::new::<u64>()).expect("out of memory");
                            let p = p.cast::<u64>();
                            // SAFETY: `p` is a fresh block for one `u64`.
                            unsafe { p.write(i) };
                            placed.push(p);
                        }
                    }
                    let v = black_box(v);
                    assert_eq!(v.iter().sum::<u64>(), VEC_PUSHES * (VEC_PUSHES - 1) / 2);
                    drop(v);
                    // Each placed value is whole after the vector's moves.
                    for (k, p) in (0u64..).zip(placed.drain(..)) {
                        // SAFETY: written above, live until the reset that follows this cycle.
                        assert_eq!(unsafe { *black_box(p).as_ptr() }, k * PLACE_EVERY);
                    }
                });
                unmetered(|| drop(placed));
            }
            Reuse::Interner => reset_loop::<A>(d, |a| {
                let mut map = hashbrown::HashMap::with_hasher_in(MixHasher::default(), Api02(a));
                let mut key = Key::default();
                for i in 0..INTERNED {
                    let id = intern(&mut map, a, key.of(i));
                    assert_eq!(id, i);
                }
                let map = black_box(map);
                assert_eq!(map.len(), INTERNED as usize);
                // Every string is whole (and apart from the others): found under its own text.
                for i in 0..INTERNED {
                    assert_eq!(map.get(key.of(i)), Some(&i));
                }
            }),
            Reuse::HashMap => reset_loop::<A>(d, |a| {
                let mut map = hashbrown::HashMap::with_hasher_in(MixHasher::default(), Api02(a));
                for k in 0..MAP_KEYS {
                    map.insert(k, 2 * k);
                }
                let map = black_box(map);
                assert_eq!(map.len() as u64, MAP_KEYS);
                assert_eq!(map.values().sum::<u64>(), MAP_KEYS * (MAP_KEYS - 1));
            }),
        }
    }
}

/// The interner's map: strings placed in `A`, in a map that lives in `A` too.
type Interned<'a, A> = hashbrown::HashMap<&'a str, u32, MixHasher, Api02<'a, A>>;

/// The id of `text` in `map`: the one it has, or else the next one, given to a copy of `text`
/// placed in `a`.
fn intern<'a, A: BenchAlloc>(map: &mut Interned<'a, A>, a: &'a A, text: &str) -> u32 {
    if let Some(&id) = map.get(text) {
        return id;
    }
    let len = text.len();
    let block = a
        .allocate(Layout::array::<u8>(len).expect("a short string"))
        .expect("out of memory")
        .cast::<u8>();
    // SAFETY: `block` is a fresh block of `len` bytes, apart from `text`; the bytes copied are
    // those of a `str`, so UTF-8; the block lives as long as `a` is borrowed (until the crate's
    // reset, which takes `&mut`).
    let placed = unsafe {
        core::ptr::copy_nonoverlapping(text.as_ptr(), block.as_ptr(), len);
        core::str::from_utf8_unchecked(core::slice::from_raw_parts(block.as_ptr(), len))
    };
    let id = map.len() as u32;
    map.insert(placed, id);
    id
}

/// A buffer for the interner's strings `key{i}`, written without allocating.
#[derive(Default)]
struct Key {
    bytes: [u8; 16],
}

impl Key {
    /// `key{i}`, in the buffer.
    fn of(&mut self, i: u32) -> &str {
        let mut digits = [0u8; 10];
        let mut n = i;
        let mut count = 0;
        loop {
            digits[count] = b'0' + (n % 10) as u8;
            count += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.bytes[..3].copy_from_slice(b"key");
        for (dst, &digit) in self.bytes[3..3 + count]
            .iter_mut()
            .zip(digits[..count].iter().rev())
        {
            *dst = digit;
        }
        core::str::from_utf8(&self.bytes[..3 + count]).expect("ASCII")
    }
}

/// What a block of the reset loops holds (the rest of its 64 bytes is left alone).
struct Link {
    index: u64,
    prev: *const Link,
}

/// One cycle of the reset loops: `blocks` blocks of 64 B from `a`, each holding its index and the
/// address of the block before; the chain is walked back (so every block is checked to be whole
/// and apart from the others), then the crate's reset.
fn cycle<A: BenchAlloc>(a: &mut A, blocks: usize) {
    let layout = Layout::new::<[u64; 8]>();
    let mut prev: *const Link = core::ptr::null();
    for index in 0..blocks as u64 {
        let p = a.allocate(layout).expect("out of memory").cast::<Link>();
        // SAFETY: `p` is a fresh block of 64 bytes aligned to 8, room for a `Link`.
        unsafe { p.write(Link { index, prev }) };
        prev = p.as_ptr();
    }
    let mut sum = 0;
    let mut seen = 0;
    while !prev.is_null() {
        // SAFETY: every link of the chain is a block written above, live until the reset below.
        let link = unsafe { &*black_box(prev) };
        sum += link.index;
        seen += 1;
        prev = link.prev;
    }
    assert_eq!((seen, sum), (blocks, (blocks * (blocks - 1) / 2) as u64));
    a.reset();
}

/// The vector of the scoped case, grown in `alloc` `SCOPED_STEP` bytes at a time (the `Vec`
/// doubles its capacity as it needs); returns its length after checking it.
fn build_scoped<B: Allocator>(alloc: B) -> usize {
    let mut v = Vec::new_in(alloc);
    for step in 0..SCOPED_BYTES / SCOPED_STEP {
        v.resize(v.len() + SCOPED_STEP, step as u8);
    }
    let v = black_box(v);
    for step in 0..SCOPED_BYTES / SCOPED_STEP {
        assert_eq!(v[step * SCOPED_STEP], step as u8);
    }
    v.len()
}

/// The crates with a scope (or an equivalent) for the scoped case. bumpalo and blink-alloc have
/// none (no scope, no checkpoint to reset to): they have no cell in that row.
trait Scoped: BenchAlloc {
    /// Runs `build_scoped` in a scope of `self`; what it allocated is released when it ends.
    fn build_in_scope(&mut self) -> usize;

    /// One unit of the scoped case.
    fn unit() {
        let mut a = Self::new();
        assert_eq!(a.build_in_scope(), SCOPED_BYTES);
        mark_held();
        drop(a);
    }
}

impl Scoped for arena_pool::Arena {
    fn build_in_scope(&mut self) -> usize {
        self.with_scope(|scope| build_scoped(&*scope))
    }
}

impl Scoped for bump_scope::Bump {
    fn build_in_scope(&mut self) -> usize {
        self.scoped(|scope| build_scoped(&*scope))
    }
}

impl Scoped for stumpalo::Arena {
    fn build_in_scope(&mut self) -> usize {
        self.with_scope(|scope| build_scoped(Api04(&*scope)))
    }
}

/// The system allocator's equivalent: a block scope, at whose end the vector is freed.
impl Scoped for SystemAlloc {
    fn build_in_scope(&mut self) -> usize {
        build_scoped(Api02(&*self))
    }
}

/// `&A` as an allocator-api2 0.2 `Allocator`, for an `A` that implements only 0.4's (stumpalo's
/// scope; its arenas go through [`Api02`]).
struct Api04<'a, A>(&'a A);

// SAFETY: every method forwards to allocator-api2 0.4's `Allocator` for `&A`, whose contract is
// the same as 0.2's.
unsafe impl<A> Allocator for Api04<'_, A>
where
    for<'x> &'x A: allocator_api2_04::alloc::Allocator,
{
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        allocator_api2_04::alloc::Allocator::allocate(&self.0, layout).map_err(|_| AllocError)
    }
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's `Allocator::deallocate` contract.
        unsafe { allocator_api2_04::alloc::Allocator::deallocate(&self.0, ptr, layout) }
    }
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller's `Allocator::grow` contract.
        unsafe { allocator_api2_04::alloc::Allocator::grow(&self.0, ptr, old, new) }
            .map_err(|_| AllocError)
    }
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller's `Allocator::shrink` contract.
        unsafe { allocator_api2_04::alloc::Allocator::shrink(&self.0, ptr, old, new) }
            .map_err(|_| AllocError)
    }
}

/// One row: the case for every crate, arena-pool first (criterion-table's baseline column).
fn row(r: &mut Runner<'_>, name: &str, case: Case) {
    fn one<A: BenchAlloc>(r: &mut Runner<'_>, name: &str, case: Case) {
        r.bench(A::NAME, name, case.ops(), |d: &mut Driver<'_, '_>| {
            d.fresh(|| case.unit::<A>());
        });
    }
    one::<arena_pool::Arena>(r, name, case);
    one::<bumpalo::Bump>(r, name, case);
    one::<bump_scope::Bump>(r, name, case);
    one::<blink_alloc::Blink>(r, name, case);
    one::<stumpalo::Arena>(r, name, case);
    one::<SystemAlloc>(r, name, case);
}

/// A reuse-loop row: the case for every crate, as [`row`].
fn reuse_row(r: &mut Runner<'_>, name: &str, case: Reuse) {
    fn one<A: BenchAlloc>(r: &mut Runner<'_>, name: &str, case: Reuse) {
        r.bench(A::NAME, name, case.ops(), |d| case.run::<A>(d));
    }
    one::<arena_pool::Arena>(r, name, case);
    one::<bumpalo::Bump>(r, name, case);
    one::<bump_scope::Bump>(r, name, case);
    one::<blink_alloc::Blink>(r, name, case);
    one::<stumpalo::Arena>(r, name, case);
    one::<SystemAlloc>(r, name, case);
}

/// The scoped row: only the crates with a scope (see [`Scoped`]).
fn scoped_row(r: &mut Runner<'_>, name: &str) {
    fn one<A: Scoped>(r: &mut Runner<'_>, name: &str) {
        r.bench(A::NAME, name, Case::Scoped.ops(), |d| d.fresh(A::unit));
    }
    one::<arena_pool::Arena>(r, name);
    one::<bump_scope::Bump>(r, name);
    one::<stumpalo::Arena>(r, name);
    one::<SystemAlloc>(r, name);
}

fn memory(r: &mut Runner<'_>) {
    row(r, &format!("Vec<u64> push x {VEC_PUSHES}"), Case::VecPush);
    row(
        r,
        &format!("HashMap<u64, u64> insert x {MAP_KEYS}"),
        Case::HashMap,
    );
    row(
        r,
        &format!("Vec<Vec<u32>> {OUTER} x {INNER} pushes"),
        Case::VecOfVecs,
    );
    row(
        r,
        &format!("{BUFFERS} x (1 MiB Vec<u8>, small block after it, free the buffer)"),
        Case::FreeInTheMiddle,
    );
    scoped_row(r, "8 MiB Vec<u8> grown in a scope; held after it");
    row(
        r,
        &format!(
            "reset loop: {STEADY_CYCLES} x ({CYCLE_BLOCKS} x 64 B; reset); calls after cycle {STEADY_SETTLE}"
        ),
        Case::SteadyResets,
    );
    row(
        r,
        &format!(
            "spike: {SPIKE_BLOCKS} x 64 B; reset; then {CYCLE_BLOCKS} x 64 B cycles; held after {SPIKE_SETTLE}"
        ),
        Case::Spike,
    );
    reuse_row(
        r,
        &format!(
            "reuse loop: Vec<u64> push x {VEC_PUSHES}, a u64 placed after every {PLACE_EVERY}th; reset"
        ),
        Reuse::VecPushPlaced,
    );
    reuse_row(
        r,
        &format!("reuse loop: intern {INTERNED} strings (HashMap<&str, u32>); reset"),
        Reuse::Interner,
    );
    reuse_row(
        r,
        &format!("reuse loop: HashMap<u64, u64> insert x {MAP_KEYS}; reset"),
        Reuse::HashMap,
    );
}

fn main() {
    run_suite("memory", memory);
}
