//! The `typed` suite: the typed helpers (`alloc`, `alloc_slice_copy`, `alloc_str`, the slice
//! fills, formatted text is in `collections`) of arena-pool and of each peer, each called through
//! its crate's own API ([`TypedAlloc`]; the system allocator's column builds each operation from
//! `allocate` and plain writes). Ids are `typed/<crate>/<case>`.
//!
//! Each case makes `N` calls and then the crate's `reset`, on one allocator for every iteration
//! (the steady state of a reuse loop); the values and slices go through `black_box`.

use std::hint::black_box;

use arena_pool_benches::harness::{Driver, Runner, run_suite};
use arena_pool_benches::{N, Payload, SystemAlloc, TypedAlloc};

/// A 13-byte value with alignment 1.
#[derive(Clone, Copy)]
struct Bytes13(#[allow(dead_code)] [u8; 13]);

/// Frames of the clear-and-reuse case, and allocations per frame.
const FRAMES: usize = 100;
const FRAME_ALLOCS: usize = 100;

/// The operations of the suite: each is one call of the typed API.
#[derive(Clone, Copy)]
enum Op {
    AllocU8,
    AllocU16,
    AllocU32,
    AllocU64,
    AllocU128,
    AllocBytes13,
    AllocWords8,
    AllocWords32,
    AllocWords128,
    SliceCopyU8(usize),
    SliceCopyU64(usize),
    Str(usize),
    FillDefault(usize),
    SizedFillDefaultU64x16,
    SizedFillDefaultU8x128,
    FillWith(usize),
}

#[derive(Clone, Copy)]
enum Case {
    /// `N` calls of `Op`, then reset.
    Calls(Op),
    /// `FRAMES` × (`alloc(u64)` × `FRAME_ALLOCS`, reset): small frames, where reset and
    /// restarting count.
    ClearAndReuse,
}

impl Op {
    /// `N` calls, each result to `black_box` (the `match` is outside the loop, so the loop holds
    /// only the call and its `black_box`es).
    #[inline(always)]
    fn calls<A: TypedAlloc>(self, a: &A, bytes: &[u8], words: &[u64], text: &str) {
        macro_rules! n_times {
            (|$i:ident| $call:expr) => {
                for $i in 0..N {
                    black_box($call);
                }
            };
        }
        match self {
            Op::AllocU8 => n_times!(|i| a.alloc(black_box(i as u8))),
            Op::AllocU16 => n_times!(|i| a.alloc(black_box(i as u16))),
            Op::AllocU32 => n_times!(|i| a.alloc(black_box(i as u32))),
            Op::AllocU64 => n_times!(|i| a.alloc(black_box(i as u64))),
            Op::AllocU128 => n_times!(|i| a.alloc(black_box(i as u128))),
            Op::AllocBytes13 => n_times!(|i| a.alloc(black_box(Bytes13([i as u8; 13])))),
            Op::AllocWords8 => n_times!(|i| a.alloc(black_box(Payload::<8>::new(i as u64)))),
            Op::AllocWords32 => n_times!(|i| a.alloc(black_box(Payload::<32>::new(i as u64)))),
            Op::AllocWords128 => n_times!(|i| a.alloc(black_box(Payload::<128>::new(i as u64)))),
            Op::SliceCopyU8(_) => n_times!(|_i| a.alloc_slice_copy(black_box(bytes))),
            Op::SliceCopyU64(_) => n_times!(|_i| a.alloc_slice_copy(black_box(words))),
            Op::Str(_) => n_times!(|_i| a.alloc_str(black_box(text))),
            Op::FillDefault(len) => {
                n_times!(|_i| a.alloc_slice_fill_default::<u64>(black_box(len)));
            }
            Op::SizedFillDefaultU64x16 => {
                n_times!(|_i| a.alloc_sized_slice_fill_default::<u64, 16>());
            }
            Op::SizedFillDefaultU8x128 => {
                n_times!(|_i| a.alloc_sized_slice_fill_default::<u8, 128>());
            }
            Op::FillWith(len) => {
                n_times!(|_i| a.alloc_slice_fill_with(black_box(len), |j| (j as u32) * 3));
            }
        }
    }
}

impl Case {
    fn ops(self) -> u64 {
        match self {
            Case::Calls(_) => N as u64,
            Case::ClearAndReuse => (FRAMES * FRAME_ALLOCS) as u64,
        }
    }

    fn run<A: TypedAlloc>(self, d: &mut Driver<'_, '_>) {
        let mut a = A::new();
        match self {
            Case::Calls(op) => {
                // The source of the copies, made before the measurement.
                let len = match op {
                    Op::SliceCopyU8(len) | Op::SliceCopyU64(len) | Op::Str(len) => len,
                    _ => 0,
                };
                let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let words: Vec<u64> = (0..len as u64).collect();
                let text: String = (0..len)
                    .map(|i| char::from(b'a' + (i % 26) as u8))
                    .collect();
                d.steady(|| {
                    op.calls(&a, &bytes, &words, &text);
                    a.reset();
                });
            }
            Case::ClearAndReuse => d.steady(|| {
                for _ in 0..FRAMES {
                    for i in 0..FRAME_ALLOCS {
                        black_box(a.alloc(black_box(i as u64)));
                    }
                    a.reset();
                }
            }),
        }
    }
}

/// One row: the case for every crate, arena-pool first (criterion-table's baseline column).
fn row(r: &mut Runner<'_>, name: &str, case: Case) {
    fn one<A: TypedAlloc>(r: &mut Runner<'_>, name: &str, case: Case) {
        r.bench(A::NAME, name, case.ops(), |d| case.run::<A>(d));
    }
    one::<arena_pool::Arena>(r, name, case);
    one::<bumpalo::Bump>(r, name, case);
    one::<bump_scope::Bump>(r, name, case);
    one::<blink_alloc::Blink>(r, name, case);
    one::<stumpalo::Arena>(r, name, case);
    one::<SystemAlloc>(r, name, case);
}

fn typed(r: &mut Runner<'_>) {
    let calls = [
        ("alloc(u8)", Op::AllocU8),
        ("alloc(u16)", Op::AllocU16),
        ("alloc(u32)", Op::AllocU32),
        ("alloc(u64)", Op::AllocU64),
        ("alloc(u128)", Op::AllocU128),
        ("alloc(struct of 13 B, align 1)", Op::AllocBytes13),
        ("alloc(struct of 64 B)", Op::AllocWords8),
        ("alloc(struct of 256 B)", Op::AllocWords32),
        ("alloc(struct of 1024 B)", Op::AllocWords128),
        ("alloc_slice_copy(&[u8; 16])", Op::SliceCopyU8(16)),
        ("alloc_slice_copy(&[u8; 256])", Op::SliceCopyU8(256)),
        ("alloc_slice_copy(&[u64; 16])", Op::SliceCopyU64(16)),
        ("alloc_slice_copy(&[u64; 256])", Op::SliceCopyU64(256)),
        ("alloc_str(8 B)", Op::Str(8)),
        ("alloc_str(64 B)", Op::Str(64)),
        ("alloc_str(512 B)", Op::Str(512)),
        ("alloc_slice_fill_default::<u64>(16)", Op::FillDefault(16)),
        (
            "alloc_sized_slice_fill_default::<u64, 16>",
            Op::SizedFillDefaultU64x16,
        ),
        (
            "alloc_sized_slice_fill_default::<u8, 128>",
            Op::SizedFillDefaultU8x128,
        ),
        (
            "alloc_slice_fill_with(16, i -> 3i as u32)",
            Op::FillWith(16),
        ),
        (
            "alloc_slice_fill_with(256, i -> 3i as u32)",
            Op::FillWith(256),
        ),
    ];
    for (name, op) in calls {
        row(r, &format!("{name} x {N}"), Case::Calls(op));
    }
    row(
        r,
        &format!("clear and reuse: {FRAMES} x (alloc(u64) x {FRAME_ALLOCS}; reset)"),
        Case::ClearAndReuse,
    );
}

fn main() {
    run_suite("typed", typed);
}
