//! The `workloads` suite: small deterministic programs of the kind arenas are made for, run on
//! every crate through the same generic code (allocator-api2 0.2's `Vec` and `Box` and
//! hashbrown's `HashMap`, each in the allocator under test through [`Api02`]). Ids are
//! `workloads/<crate>/<case>`.
//!
//! - **Compiler front end** (`compiler`): a generated source of about 200 KB is lexed into a
//!   token vector (identifiers interned in a map whose keys are copied into the allocator),
//!   parsed by recursive descent into a tree of boxed nodes, and constant-folded into a second
//!   tree.
//! - **Request handler** (`requests`): 1 000 generated text requests (one of them about 4 MiB,
//!   the others mostly 1 to 4 KB), each parsed (headers into a map, body records into vectors)
//!   and answered in a growing response buffer, with the crate's reset after each request.
//! - **Graph frame** and **graph churn** (`graph`): adjacency lists of 10 000 nodes and 50 000
//!   edges, built by pushes, then a breadth-first search; the churn case keeps the graph for 16
//!   frames and replaces 5% of its edges before each frame's search.
//!
//! One allocator serves every iteration, and each iteration is one unit of work followed by the
//! crate's reset (the request handler resets after every request). The inputs are generated once
//! per process from fixed seeds, outside the memory meter's count ([`unmetered`]). Every unit
//! computes a summary of its result and checks it against the summary of the same unit run on
//! the global allocator (computed once, unmeasured): every crate must give the same answer.
//!
//! `System` is the system allocator as a program uses it ([`Malloc`]); `mimalloc` is
//! `mimalloc::MiMalloc` used the same way as an allocator instance ([`Mi`]), not as the
//! process's global allocator. mimalloc takes its memory from the operating system, not from the
//! global allocator the memory meter counts, so its cases are not registered in memory mode
//! ([`memory_mode`]): the `mimalloc` column has times and instruction counts, no memory figures.

use core::borrow::Borrow;
use core::hash::{Hash, Hasher};
use std::hint::black_box;
use std::sync::OnceLock;

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;
use arena_pool_benches::harness::{Driver, Runner, memory_mode, reset_loop, run_suite};
use arena_pool_benches::meter::unmetered;
use arena_pool_benches::{Api02, BenchAlloc, Malloc, Mi, MixHasher};

mod compiler;
mod graph;
mod requests;

use compiler::{CompileSum, SOURCE_BYTES, Source, SourceGen, compile};
use graph::{BfsSum, ChurnSum, EDGES, FRAMES, NODES, generate_edges, graph_churn, graph_frame};
use requests::{LARGE_BODY, REQUESTS, Requests, ServeSum, generate_requests, handle};

/// A hashbrown map in the allocator `Al`, hashed by [`MixHasher`] (the same work for every crate).
type Map<K, V, Al> = hashbrown::HashMap<K, V, MixHasher, Al>;

/// An empty [`Map`] in `a`.
fn new_map<K, V, Al: Allocator>(a: Al) -> Map<K, V, Al> {
    Map::with_hasher_in(MixHasher::default(), a)
}

/// A byte string in the allocator under test, as a map key that can be looked up by `&[u8]`
/// (allocator-api2 0.2's `Vec` does not implement `Borrow<[u8]>`; this wrapper does, and hashes
/// and compares as the slice, as `Borrow` requires).
struct Bytes<Al: Allocator>(Vec<u8, Al>);

impl<Al: Allocator> Bytes<Al> {
    /// A copy of `src` in `a`.
    fn copy_of(src: &[u8], a: Al) -> Self {
        let mut v = Vec::with_capacity_in(src.len(), a);
        v.extend_from_slice(src);
        Bytes(v)
    }

    /// A lower-cased copy of `src` in `a`.
    fn lowercase_of(src: &[u8], a: Al) -> Self {
        let mut v = Vec::with_capacity_in(src.len(), a);
        v.extend(src.iter().map(u8::to_ascii_lowercase));
        Bytes(v)
    }
}

impl<Al: Allocator> Borrow<[u8]> for Bytes<Al> {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl<Al: Allocator> Hash for Bytes<Al> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_slice().hash(state);
    }
}

impl<Al: Allocator> PartialEq for Bytes<Al> {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_slice() == other.0.as_slice()
    }
}

impl<Al: Allocator> Eq for Bytes<Al> {}

/// Runs `f` once per process, outside the memory meter's count, and keeps its result (for the
/// expected summaries, computed on the global allocator).
fn once<T: Copy + Send + Sync>(cell: &'static OnceLock<T>, f: impl FnOnce() -> T) -> T {
    *cell.get_or_init(|| unmetered(f))
}

// ---------------------------------------------------------------------------------------------
// The suite.

/// The inputs of every case, generated once per process (outside the memory meter's count) and
/// shared by all crates.
struct Inputs {
    source: Source,
    requests: Requests,
    edges: std::vec::Vec<(u32, u32)>,
}

fn inputs() -> &'static Inputs {
    static INPUTS: OnceLock<Inputs> = OnceLock::new();
    INPUTS.get_or_init(|| {
        unmetered(|| Inputs {
            source: SourceGen::generate(),
            requests: generate_requests(),
            edges: generate_edges(),
        })
    })
}

#[derive(Clone, Copy)]
enum Case {
    /// The compiler front end over the generated source ([`compile`]).
    Compiler,
    /// The request handler over the `REQUESTS` requests ([`handle`]), a reset after each.
    Requests,
    /// [`graph_frame`].
    GraphFrame,
    /// [`graph_churn`].
    GraphChurn,
}

impl Case {
    /// Tokens; lines parsed; edges; edges times frames.
    fn ops(self) -> u64 {
        match self {
            Case::Compiler => inputs().source.tokens,
            Case::Requests => inputs().requests.lines,
            Case::GraphFrame => EDGES as u64,
            Case::GraphChurn => (FRAMES * EDGES) as u64,
        }
    }

    fn run<A: BenchAlloc>(self, d: &mut Driver<'_, '_>) {
        let input = inputs();
        match self {
            Case::Compiler => {
                static EXPECTED: OnceLock<CompileSum> = OnceLock::new();
                let src = &input.source.text[..];
                let expected = once(&EXPECTED, || compile(src, Global));
                assert_eq!(expected.tokens, input.source.tokens, "tokens generated");
                reset_loop::<A>(d, |a| {
                    assert_eq!(compile(black_box(src), Api02(a)), expected);
                });
            }
            Case::Requests => {
                static EXPECTED: OnceLock<ServeSum> = OnceLock::new();
                let list = &input.requests.list;
                let expected = once(&EXPECTED, || {
                    list.iter()
                        .fold(ServeSum::default(), |sum, req| sum.add(handle(req, Global)))
                });
                assert_eq!(expected.lines, input.requests.lines, "lines generated");
                let mut a = A::new();
                d.steady(|| {
                    let mut sum = ServeSum::default();
                    for req in black_box(list) {
                        sum = sum.add(handle(req, Api02(&a)));
                        a.reset();
                    }
                    assert_eq!(sum, expected);
                });
            }
            Case::GraphFrame => {
                static EXPECTED: OnceLock<BfsSum> = OnceLock::new();
                let edges = &input.edges[..];
                let expected = once(&EXPECTED, || graph_frame(edges, Global));
                reset_loop::<A>(d, |a| {
                    assert_eq!(graph_frame(black_box(edges), Api02(a)), expected);
                });
            }
            Case::GraphChurn => {
                static EXPECTED: OnceLock<ChurnSum> = OnceLock::new();
                let edges = &input.edges[..];
                let expected = once(&EXPECTED, || graph_churn(edges, Global));
                reset_loop::<A>(d, |a| {
                    assert_eq!(graph_churn(black_box(edges), Api02(a)), expected);
                });
            }
        }
    }
}

/// One row: the case for every crate, arena-pool first (criterion-table's baseline column), its
/// `SizeClassPool` second, the general-purpose allocators last (mimalloc not in memory mode).
fn row(r: &mut Runner<'_>, name: &str, case: Case) {
    fn one<A: BenchAlloc>(r: &mut Runner<'_>, name: &str, case: Case) {
        r.bench(A::NAME, name, case.ops(), |d| case.run::<A>(d));
    }
    one::<arena_pool::Arena>(r, name, case);
    one::<arena_pool::SizeClassPool>(r, name, case);
    one::<bumpalo::Bump>(r, name, case);
    one::<bump_scope::Bump>(r, name, case);
    one::<blink_alloc::Blink>(r, name, case);
    one::<stumpalo::Arena>(r, name, case);
    one::<Malloc>(r, name, case);
    if !memory_mode() {
        one::<Mi>(r, name, case);
    }
}

fn workloads(r: &mut Runner<'_>) {
    // Iterations of milliseconds.
    r.long_running();
    row(
        r,
        &format!(
            "compiler front end: lex, intern, parse, fold {} KB",
            SOURCE_BYTES / 1000
        ),
        Case::Compiler,
    );
    row(
        r,
        &format!(
            "request handler: {REQUESTS} requests (one of {} MiB), parse + respond",
            LARGE_BODY >> 20
        ),
        Case::Requests,
    );
    row(
        r,
        &format!("graph frame: {NODES} nodes, {EDGES} edges, BFS"),
        Case::GraphFrame,
    );
    row(
        r,
        &format!("graph churn: {FRAMES} frames, 5% of edges replaced per frame"),
        Case::GraphChurn,
    );
}

fn main() {
    run_suite("workloads", workloads);
}
