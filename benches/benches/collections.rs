//! The `collections` suite: allocator-api2 0.2's `Vec` and `Box` and hashbrown's `HashMap` on
//! every allocator through the same code ([`Api02`]), a frame loop of mixed-size allocations, and
//! formatted strings through each crate's own `alloc_fmt` or its nearest equivalent
//! ([`TypedAlloc::alloc_fmt`]). Ids are `collections/<crate>/<case>`.
//!
//! As in the `allocator_api` suite, one allocator serves every iteration and each iteration ends
//! with the crate's `reset` (after the collections are dropped).

use core::hash::{BuildHasher, Hasher};
use std::hint::black_box;

use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;
use arena_pool_benches::harness::{Driver, Runner, reset_loop, run_suite};
use arena_pool_benches::meter::unmetered;
use arena_pool_benches::{Api02, Layout, SystemAlloc, TypedAlloc};

const VEC_PUSHES: usize = 100_000;
const OUTER: usize = 1_000;
const INNER: usize = 100;
const MAP_KEYS: u64 = 100_000;
const LIST_NODES: usize = 10_000;
const FRAMES: usize = 100;
const FRAME_ALLOCS: usize = 1_000;
const STRINGS: usize = 1_000;

#[derive(Clone, Copy)]
enum Case {
    /// `Vec<u64>`: `push` × `VEC_PUSHES` (growing by doubling), drop.
    VecPush,
    /// `Vec<Vec<u32>>`: `OUTER` inner vectors of `INNER` pushes each, pushed into the outer one;
    /// drop.
    VecOfVecs,
    /// `HashMap<u64, u64>`: `MAP_KEYS` inserts, then a lookup of each key; drop.
    HashMap,
    /// A singly linked list of `LIST_NODES` boxed nodes, built by pushing at the head, then
    /// dropped from the head.
    BoxList,
    /// `FRAMES` frames of `FRAME_ALLOCS` allocations of mixed sizes and alignments, with the
    /// crate's reset after each frame.
    Frames,
    /// `STRINGS` formatted strings (two numbers and a string) with `alloc_fmt` or the crate's
    /// equivalent.
    Format,
}

impl Case {
    fn ops(self) -> u64 {
        (match self {
            Case::VecPush => VEC_PUSHES,
            Case::VecOfVecs => OUTER * INNER,
            Case::HashMap => 2 * MAP_KEYS as usize,
            Case::BoxList => LIST_NODES,
            Case::Frames => FRAMES * FRAME_ALLOCS,
            Case::Format => STRINGS,
        }) as u64
    }

    fn run<A: TypedAlloc>(self, d: &mut Driver<'_, '_>) {
        match self {
            Case::VecPush => reset_loop::<A>(d, |a| {
                let mut v = Vec::new_in(Api02(a));
                for i in 0..VEC_PUSHES as u64 {
                    v.push(i);
                }
                black_box(&mut v);
            }),
            Case::VecOfVecs => reset_loop::<A>(d, |a| {
                let mut outer = Vec::new_in(Api02(a));
                for _ in 0..OUTER {
                    let mut inner = Vec::new_in(Api02(a));
                    for j in 0..INNER as u32 {
                        inner.push(j);
                    }
                    outer.push(inner);
                }
                black_box(&mut outer);
            }),
            Case::HashMap => reset_loop::<A>(d, |a| {
                let mut map = hashbrown::HashMap::with_hasher_in(MixHasher(0), Api02(a));
                for k in 0..MAP_KEYS {
                    map.insert(k, k);
                }
                let mut sum = 0u64;
                for k in 0..MAP_KEYS {
                    sum = sum.wrapping_add(map[&black_box(k)]);
                }
                black_box((sum, &mut map));
            }),
            Case::BoxList => reset_loop::<A>(d, |a| {
                let mut head: Option<Box<Node<'_, A>, Api02<'_, A>>> = None;
                for i in 0..LIST_NODES as u64 {
                    head = Some(Box::new_in(
                        Node {
                            value: i,
                            next: head.take(),
                        },
                        Api02(a),
                    ));
                }
                black_box(&mut head);
                // Node by node: the default recursive drop could overflow the stack.
                while let Some(mut node) = head {
                    black_box(node.value);
                    head = node.next.take();
                }
            }),
            Case::Frames => {
                // The layouts are the case's data, not the allocator's: not metered.
                let layouts = unmetered(|| mixed_layouts(FRAME_ALLOCS));
                let mut a = A::new();
                d.steady(|| {
                    for _ in 0..FRAMES {
                        for &layout in &layouts {
                            black_box(a.allocate(layout).unwrap());
                        }
                        a.reset();
                    }
                });
                drop(a);
                unmetered(|| drop(layouts));
            }
            Case::Format => reset_loop::<A>(d, |a| {
                for i in 0..STRINGS {
                    black_box(a.alloc_fmt(format_args!("entry {i}: {:#x} {}", i * 7, "name")));
                }
            }),
        }
    }
}

/// A list node in the allocator `A`.
struct Node<'a, A: TypedAlloc> {
    value: u64,
    next: Option<Box<Node<'a, A>, Api02<'a, A>>>,
}

/// A fixed, seedless hasher for the `HashMap` case (the same hashing work for every crate and
/// every run): a multiply-xor-shift of the key.
#[derive(Clone, Copy)]
struct MixHasher(u64);

impl Hasher for MixHasher {
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

impl BuildHasher for MixHasher {
    type Hasher = MixHasher;
    fn build_hasher(&self) -> MixHasher {
        MixHasher(0)
    }
}

/// `n` layouts of a frame: mostly 8 to 256 bytes, one in sixteen up to 4 KiB, alignments 1 to 16
/// (a fixed pseudo-random sequence, the same for every crate and every run).
fn mixed_layouts(n: usize) -> std::vec::Vec<Layout> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let size = if x.is_multiple_of(16) {
                256 + (x >> 8) % 3841
            } else {
                8 + (x >> 8) % 249
            };
            let align = 1 << ((x >> 20) % 5);
            Layout::from_size_align(size as usize, align).unwrap()
        })
        .collect()
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

fn collections(r: &mut Runner<'_>) {
    row(r, &format!("Vec<u64> push x {VEC_PUSHES}"), Case::VecPush);
    row(
        r,
        &format!("Vec<Vec<u32>> {OUTER} x {INNER} pushes"),
        Case::VecOfVecs,
    );
    row(
        r,
        &format!("HashMap<u64, u64> insert + get x {MAP_KEYS}"),
        Case::HashMap,
    );
    row(
        r,
        &format!("Box list of {LIST_NODES} nodes, built and dropped"),
        Case::BoxList,
    );
    row(
        r,
        &format!("{FRAMES} frames of {FRAME_ALLOCS} mixed-size allocations + reset"),
        Case::Frames,
    );
    row(r, &format!("alloc_fmt x {STRINGS}"), Case::Format);
}

fn main() {
    run_suite("collections", collections);
}
