//! The `allocator_api` suite: `Allocator` trait calls, `N` per iteration, for arena-pool and each
//! peer through the same code ([`BenchAlloc`]). Ids are `allocator_api/<crate>/<case>`, so
//! criterion-table renders one row per case and one column per crate (arena-pool first).
//!
//! Layouts go through `black_box` at every call, so the runtime-layout paths (what `Vec` and
//! hashbrown use) are measured. Unless a case says otherwise, one allocator serves every iteration
//! and each iteration ends with the crate's own `reset`: this is the steady state of a reuse loop
//! (criterion's warm-up reaches it before measuring).

use std::hint::black_box;
use std::time::{Duration, Instant};

use allocator_api2::vec::Vec;
use arena_pool_benches::{Api02, BenchAlloc, Layout, N, SystemAlloc, fix_malloc_thresholds};
use criterion::measurement::WallTime;
use criterion::{BatchSize, Bencher, BenchmarkGroup, BenchmarkId, Criterion};

/// Fresh allocators per timed batch in the first-allocation and reset cases (one timer read per
/// batch instead of one per allocator).
const BATCH: u64 = 64;

#[derive(Clone, Copy)]
enum Case {
    /// `allocate(layout)` × N, then reset.
    Allocate(Layout),
    /// (`allocate(old)`, then `grow` it to `new`) × N, then reset.
    Grow(Layout, Layout),
    /// (`allocate(old)`, then `shrink` it to `new`) × N, then reset.
    Shrink(Layout, Layout),
    /// `new()` plus the first `allocate(u32)`; the allocator is dropped outside the timing.
    FirstAllocation,
    /// The crate's `reset` of a fresh allocator after `allocate(u32)` × N (its first cycle, so
    /// with all the chunks it grew). Only the reset is timed.
    Reset,
    /// `Vec<usize>`: `push` × N, drop, reset.
    VecPush,
    /// `Vec<u32>`: (`reserve_exact(1)`; `push`) × N, drop, reset: one grow of the last block per
    /// push, quadratic for allocators that copy on every grow.
    ReserveExactPush,
}

impl Case {
    fn run<A: BenchAlloc>(self, b: &mut Bencher<'_>) {
        match self {
            Case::Allocate(layout) => steady::<A>(b, |a| {
                for _ in 0..N {
                    black_box(a.allocate(black_box(layout)).unwrap());
                }
            }),
            Case::Grow(old, new) => steady::<A>(b, |a| {
                for _ in 0..N {
                    let p = a.allocate(black_box(old)).unwrap();
                    // SAFETY: `p` was just allocated by `a` with `old`, and `new` is not smaller.
                    black_box(unsafe { a.grow(p.cast(), black_box(old), black_box(new)) }.unwrap());
                }
            }),
            Case::Shrink(old, new) => steady::<A>(b, |a| {
                for _ in 0..N {
                    let p = a.allocate(black_box(old)).unwrap();
                    // SAFETY: `p` was just allocated by `a` with `old`, and `new` is not larger.
                    black_box(
                        unsafe { a.shrink(p.cast(), black_box(old), black_box(new)) }.unwrap(),
                    );
                }
            }),
            Case::FirstAllocation => b.iter_batched(
                || (),
                |()| {
                    let a = A::new();
                    black_box(a.allocate(black_box(Layout::new::<u32>())).unwrap());
                    a
                },
                BatchSize::NumIterations(BATCH),
            ),
            // Only the resets are timed, a batch at a time. Criterion picks its iteration counts
            // from the warm-up's wall time of this whole closure, fills included, so the samples
            // still last about as long as asked.
            Case::Reset => b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let k = (iters - done).min(BATCH);
                    let mut batch: std::vec::Vec<A> = (0..k)
                        .map(|_| {
                            let a = A::new();
                            for _ in 0..N {
                                black_box(a.allocate(black_box(Layout::new::<u32>())).unwrap());
                            }
                            a
                        })
                        .collect();
                    let start = Instant::now();
                    for a in &mut batch {
                        a.reset();
                    }
                    total += start.elapsed();
                    black_box(&mut batch);
                    done += k;
                }
                total
            }),
            Case::VecPush => steady::<A>(b, |a| {
                let mut v = Vec::new_in(Api02(a));
                for i in 0..N {
                    v.push(i);
                }
                black_box(&mut v);
            }),
            Case::ReserveExactPush => steady::<A>(b, |a| {
                let mut v = Vec::new_in(Api02(a));
                for i in 0..N as u32 {
                    v.reserve_exact(1);
                    v.push(i);
                }
                black_box(&mut v);
            }),
        }
    }
}

/// One allocator for all iterations; each iteration runs `cycle` and then the crate's `reset`.
fn steady<A: BenchAlloc>(b: &mut Bencher<'_>, mut cycle: impl FnMut(&A)) {
    let mut a = A::new();
    b.iter(|| {
        cycle(&a);
        a.reset();
    });
}

/// One row: the case for every crate, arena-pool first (criterion-table's baseline column).
fn row(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, case: Case) {
    fn one<A: BenchAlloc>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, case: Case) {
        g.bench_function(BenchmarkId::new(A::NAME, name), |b| case.run::<A>(b));
    }
    one::<arena_pool::Arena>(g, name, case);
    one::<bumpalo::Bump>(g, name, case);
    one::<bump_scope::Bump>(g, name, case);
    one::<blink_alloc::BlinkAlloc>(g, name, case);
    one::<stumpalo::Arena>(g, name, case);
    one::<SystemAlloc>(g, name, case);
}

fn allocator_api(c: &mut Criterion) {
    let l = Layout::new::<u32>;
    let mut g = c.benchmark_group("allocator_api");
    let allocs = [
        ("u8", Layout::new::<u8>()),
        ("u32", Layout::new::<u32>()),
        ("u64", Layout::new::<u64>()),
        ("u128", Layout::new::<u128>()),
        ("[u8; 0]", Layout::new::<[u8; 0]>()),
        ("[u8; 1]", Layout::new::<[u8; 1]>()),
        ("[u8; 7]", Layout::new::<[u8; 7]>()),
        ("[u8; 31]", Layout::new::<[u8; 31]>()),
    ];
    for (ty, layout) in allocs {
        row(
            &mut g,
            &format!("allocate({ty}) x {N}"),
            Case::Allocate(layout),
        );
    }
    let grows = [
        (
            "same align (u32 -> [u32; 2])",
            l(),
            Layout::new::<[u32; 2]>(),
        ),
        (
            "smaller align (u32 -> [u16; 4])",
            l(),
            Layout::new::<[u16; 4]>(),
        ),
        ("larger align (u32 -> u64)", l(), Layout::new::<u64>()),
    ];
    for (what, old, new) in grows {
        row(&mut g, &format!("grow {what} x {N}"), Case::Grow(old, new));
    }
    let shrinks = [
        (
            "same align ([u32; 2] -> u32)",
            Layout::new::<[u32; 2]>(),
            l(),
        ),
        ("smaller align (u32 -> u16)", l(), Layout::new::<u16>()),
        (
            "larger align ([u16; 4] -> u32)",
            Layout::new::<[u16; 4]>(),
            l(),
        ),
    ];
    for (what, old, new) in shrinks {
        row(
            &mut g,
            &format!("shrink {what} x {N}"),
            Case::Shrink(old, new),
        );
    }
    row(
        &mut g,
        "first allocation (new + allocate(u32))",
        Case::FirstAllocation,
    );
    row(
        &mut g,
        &format!("reset after allocate(u32) x {N}"),
        Case::Reset,
    );
    row(&mut g, &format!("Vec push(usize) x {N}"), Case::VecPush);
    row(
        &mut g,
        &format!("Vec reserve_exact(1); push(u32) x {N}"),
        Case::ReserveExactPush,
    );
    g.finish();
}

fn main() {
    fix_malloc_thresholds();
    let mut c = Criterion::default().configure_from_args();
    allocator_api(&mut c);
    c.final_summary();
}
