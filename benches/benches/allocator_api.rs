//! The `allocator_api` suite: `Allocator` trait calls, `N` per iteration, for arena-pool and each
//! peer through the same code ([`BenchAlloc`]). Ids are `allocator_api/<crate>/<case>`, so
//! criterion-table renders one row per case and one column per crate (arena-pool first).
//!
//! Layouts go through `black_box` at every call, so the runtime-layout paths (what `Vec` and
//! hashbrown use) are measured. Unless a case says otherwise, one allocator serves every iteration
//! and each iteration ends with the crate's own `reset`: this is the steady state of a reuse loop
//! (criterion's warm-up reaches it before measuring).

use std::hint::black_box;

use allocator_api2::vec::Vec;
use arena_pool_benches::harness::{Driver, Runner, reset_loop, run_suite};
use arena_pool_benches::{Api02, BenchAlloc, Layout, LocalHandle, N, SystemAlloc};

#[derive(Clone, Copy)]
enum Case {
    /// `allocate(layout)` × N, then reset.
    Allocate(Layout),
    /// (`allocate(old)`, then `grow` it to `new`) × N, then reset.
    Grow(Layout, Layout),
    /// (`allocate(old)`, then `shrink` it to `new`) × N, then reset.
    Shrink(Layout, Layout),
    /// `new()` plus the first `allocate(u32)`, written in place; the allocator is dropped
    /// outside the measurement.
    FirstAllocation,
    /// The crate's `reset` of a fresh allocator after `allocate(u32)` × N (its first cycle, so
    /// with all the chunks it grew). Only the reset is measured.
    Reset,
    /// `Vec<usize>`: `push` × N, drop, reset.
    VecPush,
    /// `Vec<u32>`: (`reserve_exact(1)`; `push`) × N, drop, reset: one grow of the last block per
    /// push, quadratic for allocators that copy on every grow.
    ReserveExactPush,
}

impl Case {
    /// Operations per run: the divisor of the instruction counts.
    fn ops(self) -> u64 {
        match self {
            Case::FirstAllocation | Case::Reset => 1,
            _ => N as u64,
        }
    }

    fn run<A: BenchAlloc>(self, d: &mut Driver<'_, '_>) {
        match self {
            Case::Allocate(layout) => reset_loop::<A>(d, |a| {
                for _ in 0..N {
                    black_box(a.allocate(black_box(layout)).unwrap());
                }
            }),
            Case::Grow(old, new) => reset_loop::<A>(d, |a| {
                for _ in 0..N {
                    let p = a.allocate(black_box(old)).unwrap();
                    // SAFETY: `p` was just allocated by `a` with `old`, and `new` is not smaller.
                    black_box(unsafe { a.grow(p.cast(), black_box(old), black_box(new)) }.unwrap());
                }
            }),
            Case::Shrink(old, new) => reset_loop::<A>(d, |a| {
                for _ in 0..N {
                    let p = a.allocate(black_box(old)).unwrap();
                    // SAFETY: `p` was just allocated by `a` with `old`, and `new` is not larger.
                    black_box(
                        unsafe { a.shrink(p.cast(), black_box(old), black_box(new)) }.unwrap(),
                    );
                }
            }),
            Case::FirstAllocation => d.batched(
                || None,
                |slot: &mut Option<A>| {
                    let a = slot.insert(A::new());
                    black_box(a.allocate(black_box(Layout::new::<u32>())).unwrap());
                },
            ),
            Case::Reset => d.batched(
                || {
                    let a = A::new();
                    for _ in 0..N {
                        black_box(a.allocate(black_box(Layout::new::<u32>())).unwrap());
                    }
                    a
                },
                |a| a.reset(),
            ),
            Case::VecPush => reset_loop::<A>(d, |a| {
                let mut v = Vec::new_in(Api02(a));
                for i in 0..N {
                    v.push(i);
                }
                black_box(&mut v);
            }),
            Case::ReserveExactPush => reset_loop::<A>(d, |a| {
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

/// One row: the case for every crate, arena-pool first (criterion-table's baseline column).
fn row(r: &mut Runner<'_>, name: &str, case: Case) {
    fn one<A: BenchAlloc>(r: &mut Runner<'_>, name: &str, case: Case) {
        r.bench(A::NAME, name, case.ops(), |d| case.run::<A>(d));
    }
    one::<arena_pool::Arena>(r, name, case);
    one::<arena_pool_benches::ArenaMin8>(r, name, case);
    one::<arena_pool::SyncArena>(r, name, case);
    one::<LocalHandle>(r, name, case);
    one::<bumpalo::Bump>(r, name, case);
    one::<bump_scope::Bump>(r, name, case);
    one::<blink_alloc::Blink>(r, name, case);
    one::<stumpalo::Arena>(r, name, case);
    one::<SystemAlloc>(r, name, case);
}

fn allocator_api(r: &mut Runner<'_>) {
    let l = Layout::new::<u32>;
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
        row(r, &format!("allocate({ty}) x {N}"), Case::Allocate(layout));
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
        row(r, &format!("grow {what} x {N}"), Case::Grow(old, new));
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
        row(r, &format!("shrink {what} x {N}"), Case::Shrink(old, new));
    }
    row(
        r,
        "first allocation (new + allocate(u32))",
        Case::FirstAllocation,
    );
    row(r, &format!("reset after allocate(u32) x {N}"), Case::Reset);
    row(r, &format!("Vec push(usize) x {N}"), Case::VecPush);
    row(
        r,
        &format!("Vec reserve_exact(1); push(u32) x {N}"),
        Case::ReserveExactPush,
    );
}

fn main() {
    run_suite("allocator_api", allocator_api);
}
