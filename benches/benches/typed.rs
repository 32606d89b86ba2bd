//! The `typed` suite: the typed helpers (`alloc`, `alloc_slice_copy`, `alloc_str`, the slice
//! fills, formatted text is in `collections`) of arena-pool and of each peer, each called through
//! its crate's own API ([`TypedAlloc`]; the system allocator's column builds each operation from
//! `allocate` and plain writes). Ids are `typed/<crate>/<case>`.
//!
//! Each case makes `N` calls and then the crate's `reset`, on one allocator for every iteration
//! (the steady state of a reuse loop); the values and slices go through `black_box`.

use std::hint::black_box;

use arena_pool_benches::harness::{Driver, Runner, run_suite};
use arena_pool_benches::meter::unmetered;
use arena_pool_benches::{N, Payload, SystemAlloc, TypedAlloc};

/// A 13-byte value with alignment 1.
#[derive(Clone, Copy)]
struct Bytes13(#[allow(dead_code)] [u8; 13]);

/// How many copies of a copy source there are (see [`Sources`]); a power of two, so that
/// picking one is an `and`.
const SPREAD: usize = 32;
/// Where copy `j` of a source starts, in bytes past a page boundary: `j * SOURCE_STRIDE`.
/// Modulo 2 KiB the starts are 64 bytes apart, so they cover every 64-byte step of a 2 KiB
/// window once; a source is at most 2 KiB long, so the copies do not overlap.
const SOURCE_STRIDE: usize = 2048 + 64;

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
    fn calls<A: TypedAlloc>(self, a: &A, src: &Sources<'_>) {
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
            Op::SliceCopyU8(_) => {
                n_times!(|i| a.alloc_slice_copy(black_box(src.bytes[i % SPREAD])));
            }
            Op::SliceCopyU64(_) => {
                n_times!(|i| a.alloc_slice_copy(black_box(src.words[i % SPREAD])));
            }
            Op::Str(_) => n_times!(|i| a.alloc_str(black_box(src.text[i % SPREAD]))),
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

/// The sources of the copying cases, each [`SPREAD`] times at different page offsets; call `i`
/// copies from copy `i % SPREAD`.
///
/// Why: a copy whose destination lies a little above its source modulo 4 KiB (4K aliasing: the
/// loads seem to depend on the stores just made) runs several times slower. With one source, the
/// time of a row would depend on where the heap happened to put it against each crate's chunks,
/// not on the crate. Spread over a 2 KiB window of offsets, every crate meets the slow distances
/// equally often.
struct Sources<'a> {
    bytes: [&'a [u8]; SPREAD],
    words: [&'a [u64]; SPREAD],
    text: [&'a str; SPREAD],
}

/// [`SPREAD`] slices of `len` items (`item(0)`, `item(1)`, ...) in `buf`, copy `j` starting
/// `j * SOURCE_STRIDE` bytes past a page boundary.
fn spread<T: Copy>(buf: &mut Vec<T>, len: usize, item: impl Fn(usize) -> T) -> [&[T]; SPREAD] {
    const PAGE: usize = 4096;
    let size = size_of::<T>();
    assert!(len * size <= 2048, "a copy source is at most 2 KiB");
    if len == 0 {
        // Nothing to copy: no buffer, so that the heap the crate's chunks come from is the same
        // as in the cases without sources.
        return [&[]; SPREAD];
    }
    let stride = SOURCE_STRIDE / size;
    *buf = vec![item(0); (PAGE + SPREAD * SOURCE_STRIDE) / size];
    // Elements to skip to reach a page boundary (`T`'s size divides the page).
    let first = (PAGE - buf.as_ptr() as usize % PAGE) % PAGE / size;
    for j in 0..SPREAD {
        for (e, slot) in buf[first + j * stride..][..len].iter_mut().enumerate() {
            *slot = item(e);
        }
    }
    let buf = &buf[..];
    std::array::from_fn(|j| &buf[first + j * stride..][..len])
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
                // The sources of the copies, made before the measurement (empty for the
                // operations that copy nothing of that kind).
                let (u8s, u64s, chars) = match op {
                    Op::SliceCopyU8(len) => (len, 0, 0),
                    Op::SliceCopyU64(len) => (0, len, 0),
                    Op::Str(len) => (0, 0, len),
                    _ => (0, 0, 0),
                };
                // The sources are the case's data, not the allocator's: not metered.
                let (mut bytes, mut words, mut text) = (Vec::new(), Vec::new(), Vec::new());
                let src = unmetered(|| Sources {
                    bytes: spread(&mut bytes, u8s, |i| i as u8),
                    words: spread(&mut words, u64s, |i| i as u64),
                    text: spread(&mut text, chars, |i| b'a' + (i % 26) as u8)
                        .map(|s| std::str::from_utf8(s).expect("ASCII")),
                });
                d.steady(|| {
                    op.calls(&a, &src);
                    a.reset();
                });
                unmetered(|| drop((bytes, words, text)));
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
    one::<arena_pool_benches::ArenaMin8>(r, name, case);
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
