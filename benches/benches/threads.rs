//! The `threads` suite: how each allocator scales with threads. Ids are
//! `threads/<crate>/<scenario>, T=<threads>`; every scenario runs at T = 1, 2, 4, ... up to the
//! machine's available parallelism, and at that count itself when it is not a power of two
//! (`BENCH_THREADS="1 2 8"` picks others).
//!
//! - **A. Parallel bump + reset.** Each thread allocates [`Sizes::objects`] objects a round, a
//!   `u64` and a copy of a 24-byte `str` alternately, through each crate's own typed calls; after
//!   each round every thread waits for the others and the allocator is reset; [`Sizes::rounds`]
//!   rounds an iteration. `arena-pool-LocalArena`: one `SyncArena`, a `LocalArena` handle per
//!   thread and round; `arena-pool-LocalArena-per-job`: the same with a handle per job of
//!   [`JOB_OBJECTS`] objects, made and dropped in the round (a job queue's shape);
//!   `arena-pool-SyncArena`: every thread calls `&SyncArena` itself (its shared
//!   path); `blink-alloc`: one `SyncBlinkAlloc`, a `LocalBlinkAlloc` per thread and round, driven
//!   through blink-alloc's `Blink` front end (`put_no_drop`, `copy_str`); `bumpalo-herd`: one
//!   `Herd`, a member (`get()`) per thread and round; `bumpalo`: a `Bump` per thread, reset by
//!   its thread; `System` and `mimalloc`: an allocator-api2 `Box` per object (`Box<u64>`, and a
//!   boxed `[u8]` copy of the string), kept in a list per thread and all dropped at the end of the
//!   round (the list's pushes are in their time). The shared allocators (`SyncArena`,
//!   `SyncBlinkAlloc`, `Herd`) sit in an `RwLock`: each thread holds it for reading during a
//!   round (once a round, uncontended), and the reset takes it for writing, on the coordinating
//!   thread, between two rounds.
//! - **B1. Pool churn**: each thread allocates a 64-byte object and frees it at once,
//!   [`Sizes::steps`] times an iteration. **B2. Live set**: each thread keeps [`Sizes::live`] live
//!   64-byte objects (made before the clock starts) and replaces a random one (a fixed xorshift
//!   sequence per thread) [`Sizes::steps`] times an iteration, the old one freed first.
//!   `arena-pool-SyncPool`: one `SyncPool` for all threads, `Box<T, &SyncPool>`; `sharded-slab`:
//!   one `sharded_slab::Slab` for all threads, `insert` and `remove`; `System` and `mimalloc`:
//!   allocator-api2's `Box<T, A>`.
//! - **C. Cross-thread free** (T even): T/2 producers each allocate [`Sizes::batches`] batches
//!   of 64 objects of 64 bytes an iteration and send each batch (an array, moved) over a bounded
//!   channel (`std::sync::mpsc::sync_channel`, 16 batches) to a consumer of their own, which
//!   frees the 64 objects; the crates of B, `sharded-slab` sending keys and its consumers
//!   calling `remove`.
//!
//! `System` is the global allocator of this binary, `std::alloc::System` (glibc malloc), reached
//! through allocator-api2's `Global`. `mimalloc` is `mimalloc::MiMalloc` used as an allocator
//! instance (through its `GlobalAlloc` impl, wrapped in the library's [`Mi`]), not as the
//! process's global allocator: every other crate here still takes its memory from the system
//! allocator.
//!
//! **Method.** Each criterion sample (`iter_custom`) spawns its T worker threads once, in a
//! `std::thread::scope`, and the coordinating thread (criterion's own) steps them through a
//! [`Gate`]: all threads meet at a barrier, the workers do one step (a round for A, an
//! iteration for B and C) while the coordinator waits, all meet again, then the coordinator
//! runs what comes between steps (A's resets). The first step is a warm-up (the allocators'
//! chunks and slabs and the threads' caches are made there); the clock runs from the start of
//! the second step to the end of the last. Spawning and joining the threads, each thread's
//! set-up before its first step (B2's live set) and its teardown are outside the clock. The
//! time per iteration is therefore the time of the slowest thread of each step, barriers
//! included (a few microseconds a step, against milliseconds of work), the same for every
//! crate. The report divides it by the operations of all threads (objects allocated; in C,
//! objects passed from producer to consumer) into nanoseconds per operation, and compares each
//! T with the smallest one (`benches/src/bin/threads_table.rs`).
//!
//! **Counting mode**: none. Instructions counted per thread by callgrind, which runs one thread
//! at a time, say little about contention; `BENCH_COUNT` (but `list`) makes this binary exit with
//! a note, and `benches/report.sh` leaves the suite out of the instruction counts.
//! **Memory mode** (`BENCH_MEMORY`, the `meter` build): every case runs one warm-up step and one
//! iteration (for A, 20 rounds), untimed; the lists of handles and boxes the workers keep, and
//! C's channels, are not counted. The
//! `mimalloc` cases are not registered there (mimalloc does not take its memory from the global
//! allocator, which the meter counts).
//!
//! **Smoke run**, for CI: every scenario at T = 2 only, with small sizes ([`Sizes::SMOKE`]), each
//! case run once by criterion's test mode; it checks that every case completes (a fraction of a
//! second once built):
//!
//! ```text
//! BENCH_THREADS_SMOKE=1 cargo bench -p arena-pool-benches --bench threads -- --test
//! ```

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::hint::black_box;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Barrier, Mutex, RwLock};
use std::time::{Duration, Instant};

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::boxed::Box;
use arena_pool::{SyncArena, SyncPool};
use arena_pool_benches::harness::{Driver, Runner, memory_mode, run_suite};
use arena_pool_benches::meter::unmetered;
use arena_pool_benches::{Mi, Payload, XorShift};

/// The string each thread copies into the allocator in scenario A: 24 bytes.
const TEXT: &str = "twenty-four bytes of str";
const _: () = assert!(TEXT.len() == 24);

/// The objects of B and C: 64 bytes.
type Object = Payload<8>;
const _: () = assert!(size_of::<Object>() == 64);

/// Objects per job of A's `arena-pool-LocalArena-per-job` (a handle per job): 20 000 jobs per
/// thread and round.
const JOB_OBJECTS: u64 = 10;

/// Objects per batch in C.
const BATCH: usize = 64;
/// Batches in flight per channel in C.
const CHANNEL_BOUND: usize = 16;

/// The sizes of the work.
#[derive(Clone, Copy)]
struct Sizes {
    /// A: rounds per iteration ...
    rounds: u64,
    /// ... and objects per thread and round (half `u64`, half strings).
    objects: u64,
    /// B: steps per thread and iteration.
    steps: u64,
    /// B2: live objects per thread.
    live: usize,
    /// C: batches per producer and iteration.
    batches: u64,
}

impl Sizes {
    const FULL: Sizes = Sizes {
        rounds: 20,
        objects: 200_000,
        steps: 100_000,
        live: 1_000,
        batches: 1_600,
    };
    /// For the smoke run: every case completes in milliseconds.
    const SMOKE: Sizes = Sizes {
        rounds: 2,
        objects: 2_000,
        steps: 2_000,
        live: 100,
        batches: 16,
    };
}

/// How the coordinating thread steps the workers: both meet at `barrier` before and after each
/// step; a worker that finds `stop` set after the first meeting leaves.
struct Gate {
    barrier: Barrier,
    stop: AtomicBool,
}

impl Gate {
    /// Worker: waits for the next step; `false` when there is none.
    fn next(&self) -> bool {
        self.barrier.wait();
        // The barrier orders the coordinator's store before this load.
        !self.stop.load(Relaxed)
    }

    /// Worker: this step is done.
    fn done(&self) {
        self.barrier.wait();
    }
}

/// Runs `worker(index, &gate)` on `threads` scoped threads and steps them through the gate: one
/// warm-up step, then `steps` timed ones, `between()` after each on this thread. Returns the
/// time from the start of the first timed step to the end of the last one's `between()`.
fn run_steps(
    threads: usize,
    steps: u64,
    worker: &(dyn Fn(usize, &Gate) + Sync),
    mut between: impl FnMut(),
) -> Duration {
    let gate = Gate {
        barrier: Barrier::new(threads + 1),
        stop: AtomicBool::new(false),
    };
    std::thread::scope(|s| {
        for i in 0..threads {
            let gate = &gate;
            s.spawn(move || {
                // The other threads would wait at the barrier for this one for ever: a worker's
                // panic (a failed check) ends the process instead.
                if std::panic::catch_unwind(AssertUnwindSafe(|| worker(i, gate))).is_err() {
                    std::process::abort();
                }
            });
        }
        let mut step = || {
            gate.barrier.wait();
            gate.barrier.wait();
            between();
        };
        step();
        let start = Instant::now();
        for _ in 0..steps {
            step();
        }
        let elapsed = start.elapsed();
        gate.stop.store(true, Relaxed);
        gate.barrier.wait();
        elapsed
    })
}

/// Runs a case: `run(iterations)` returns the time of that many iterations. Timed by criterion
/// (`iter_custom`); in memory mode, one iteration, untimed.
fn drive(d: &mut Driver<'_, '_>, mut run: impl FnMut(u64) -> Duration) {
    match d {
        Driver::Timed(b) => b.iter_custom(&mut run),
        Driver::Metered => {
            run(1);
        }
        Driver::Counted { .. } => unreachable!("the threads suite has no counting mode"),
    }
}

// ---- A. Parallel bump + reset ----

/// One round of A on one thread: `objects` objects, a `u64` and a copy of [`TEXT`] alternately.
#[inline(always)]
fn bump_round(objects: u64, mut put_u64: impl FnMut(u64), mut put_str: impl FnMut(&str)) {
    let text = black_box(TEXT);
    for i in 0..objects / 2 {
        put_u64(i);
        put_str(text);
    }
}

/// A case of A on a shared allocator reset between rounds: `new()` makes it, `round(&alloc)` is
/// one thread's round (the thread takes its handle there), `reset` resets it.
fn bump_shared<S: Send + Sync>(
    d: &mut Driver<'_, '_>,
    threads: usize,
    sizes: Sizes,
    new: impl Fn() -> S,
    round: impl Fn(&S) + Sync,
    reset: impl Fn(&mut S),
) {
    let shared = RwLock::new(new());
    drive(d, |iters| {
        run_steps(
            threads,
            iters * sizes.rounds,
            &|_, gate| {
                while gate.next() {
                    round(&shared.read().expect("not poisoned"));
                    gate.done();
                }
            },
            || reset(&mut shared.write().expect("not poisoned")),
        )
    });
}

/// A case of A on a per-thread allocator: each thread makes its own with `new()` and ends each
/// round with `round` (which resets it).
fn bump_per_thread<S>(
    d: &mut Driver<'_, '_>,
    threads: usize,
    sizes: Sizes,
    new: impl Fn() -> S + Sync,
    round: impl Fn(&mut S) + Sync,
    teardown: impl Fn(S) + Sync,
) {
    drive(d, |iters| {
        run_steps(
            threads,
            iters * sizes.rounds,
            &|_, gate| {
                let mut state = new();
                while gate.next() {
                    round(&mut state);
                    gate.done();
                }
                teardown(state);
            },
            || {},
        )
    });
}

/// A for `System` and `mimalloc`: a `Box` per object, kept in per-thread lists (made and freed
/// outside the memory count) and dropped at the end of each round.
fn bump_boxes<A: Allocator + Copy + Sync>(
    d: &mut Driver<'_, '_>,
    threads: usize,
    sizes: Sizes,
    a: A,
) {
    type Lists<A> = (Vec<Box<u64, A>>, Vec<Box<[u8], A>>);
    let half = (sizes.objects / 2) as usize;
    bump_per_thread(
        d,
        threads,
        sizes,
        || unmetered(|| (Vec::with_capacity(half), Vec::with_capacity(half))),
        |(words, strings): &mut Lists<A>| {
            bump_round(
                sizes.objects,
                |v| words.push(Box::new_in(v, a)),
                |s| strings.push(boxed_bytes(s, a)),
            );
            black_box(&mut *words);
            black_box(&mut *strings);
            words.clear();
            strings.clear();
        },
        |lists| unmetered(|| drop(lists)),
    );
}

/// A boxed copy of `s`'s bytes in `a` (one allocation of `s.len()` bytes).
#[inline(always)]
fn boxed_bytes<A: Allocator>(s: &str, a: A) -> Box<[u8], A> {
    let mut v = allocator_api2::vec::Vec::with_capacity_in(s.len(), a);
    v.extend_from_slice(s.as_bytes());
    v.into_boxed_slice()
}

/// Every crate's case of A at `threads` threads.
fn scenario_a(r: &mut Runner<'_>, sizes: Sizes, threads: usize, memory: bool) {
    let name = format!(
        "A: bump {} (u64, str) x {} rounds, reset, T={threads}",
        sizes.objects, sizes.rounds
    );
    let ops = threads as u64 * sizes.rounds * sizes.objects;
    let n = sizes.objects;
    r.bench("arena-pool-LocalArena", &name, ops, |d| {
        bump_shared(
            d,
            threads,
            sizes,
            SyncArena::new,
            |arena| {
                let local = arena.local();
                bump_round(
                    n,
                    |v| {
                        black_box(local.alloc(v));
                    },
                    |s| {
                        black_box(local.alloc_str(s));
                    },
                );
            },
            SyncArena::reset,
        );
    });
    r.bench("arena-pool-LocalArena-per-job", &name, ops, |d| {
        bump_shared(
            d,
            threads,
            sizes,
            SyncArena::new,
            |arena| {
                for _ in 0..n / JOB_OBJECTS {
                    let local = arena.local();
                    bump_round(
                        JOB_OBJECTS,
                        |v| {
                            black_box(local.alloc(v));
                        },
                        |s| {
                            black_box(local.alloc_str(s));
                        },
                    );
                }
            },
            SyncArena::reset,
        );
    });
    r.bench("arena-pool-SyncArena", &name, ops, |d| {
        bump_shared(
            d,
            threads,
            sizes,
            SyncArena::new,
            |arena| {
                bump_round(
                    n,
                    |v| {
                        black_box(arena.alloc(v));
                    },
                    |s| {
                        black_box(arena.alloc_str(s));
                    },
                );
            },
            SyncArena::reset,
        );
    });
    r.bench("blink-alloc", &name, ops, |d| {
        bump_shared(
            d,
            threads,
            sizes,
            blink_alloc::SyncBlinkAlloc::new,
            |sync| {
                let blink = blink_alloc::Blink::new_in(sync.local());
                bump_round(
                    n,
                    |v| {
                        black_box(blink.put_no_drop(v));
                    },
                    |s| {
                        black_box(blink.copy_str(s));
                    },
                );
            },
            blink_alloc::SyncBlinkAlloc::reset,
        );
    });
    r.bench("bumpalo-herd", &name, ops, |d| {
        bump_shared(
            d,
            threads,
            sizes,
            bumpalo_herd::Herd::new,
            |herd| {
                let member = herd.get();
                bump_round(
                    n,
                    |v| {
                        black_box(member.alloc(v));
                    },
                    |s| {
                        black_box(member.alloc_str(s));
                    },
                );
            },
            bumpalo_herd::Herd::reset,
        );
    });
    r.bench("bumpalo", &name, ops, |d| {
        bump_per_thread(
            d,
            threads,
            sizes,
            bumpalo::Bump::new,
            |bump| {
                bump_round(
                    n,
                    |v| {
                        black_box(bump.alloc(v));
                    },
                    |s| {
                        black_box(bump.alloc_str(s));
                    },
                );
                bump.reset();
            },
            drop,
        );
    });
    r.bench("System", &name, ops, |d| {
        bump_boxes(d, threads, sizes, Global)
    });
    if !memory {
        r.bench("mimalloc", &name, ops, |d| {
            bump_boxes(d, threads, sizes, Mi)
        });
    }
}

// ---- B. Pool churn ----

/// The seed of thread `index`'s replacement sequence in B2.
fn seed(index: usize) -> u64 {
    0x2545_f491_4f6c_dd1d ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// What B and C need of a store of 64-byte objects shared by the threads.
trait Store: Sync {
    /// An owning handle (or key) of one object.
    type Handle: Send;
    fn insert(&self, x: u64) -> Self::Handle;
    fn remove(&self, h: Self::Handle);
}

/// An allocator-api2 allocator as a store: a handle is a `Box`.
struct Boxes<A>(A);

impl<A: Allocator + Copy + Send + Sync> Store for Boxes<A> {
    type Handle = Box<Object, A>;
    #[inline(always)]
    fn insert(&self, x: u64) -> Self::Handle {
        Box::new_in(Object::new(x), self.0)
    }
    #[inline(always)]
    fn remove(&self, h: Self::Handle) {
        drop(h);
    }
}

/// sharded-slab: a handle is the key `insert` returns.
impl Store for sharded_slab::Slab<Object> {
    type Handle = usize;
    #[inline(always)]
    fn insert(&self, x: u64) -> usize {
        sharded_slab::Slab::insert(self, Object::new(x)).expect("the slab has room")
    }
    #[inline(always)]
    fn remove(&self, key: usize) {
        assert!(sharded_slab::Slab::remove(self, key), "a live key");
    }
}

/// B1 on `store`: each thread inserts and removes at once, `steps` times an iteration.
fn churn<S: Store>(d: &mut Driver<'_, '_>, threads: usize, sizes: Sizes, store: &S) {
    drive(d, |iters| {
        run_steps(
            threads,
            iters,
            &|_, gate| {
                while gate.next() {
                    for i in 0..sizes.steps {
                        let h = store.insert(i);
                        store.remove(black_box(h));
                    }
                    gate.done();
                }
            },
            || {},
        )
    });
}

/// B2 on `store`: each thread keeps `live` objects and replaces a random one `steps` times an
/// iteration (the same sequence every iteration).
fn replace<S: Store>(d: &mut Driver<'_, '_>, threads: usize, sizes: Sizes, store: &S) {
    drive(d, |iters| {
        run_steps(
            threads,
            iters,
            &|index, gate| {
                let mut live: Vec<Option<S::Handle>> = unmetered(|| Vec::with_capacity(sizes.live));
                for i in 0..sizes.live as u64 {
                    live.push(Some(store.insert(i)));
                }
                while gate.next() {
                    let mut rng = XorShift::new(seed(index));
                    for step in 0..sizes.steps {
                        let slot = &mut live[rng.below(sizes.live as u64) as usize];
                        store.remove(slot.take().expect("every slot is live"));
                        *slot = Some(store.insert(step));
                    }
                    black_box(&mut live);
                    gate.done();
                }
                for slot in &mut live {
                    store.remove(slot.take().expect("every slot is live"));
                }
                unmetered(|| drop(live));
            },
            || {},
        )
    });
}

// ---- C. Cross-thread free ----

/// C on `store`: `threads / 2` producers, each sending `batches` batches of [`BATCH`] objects an
/// iteration to a consumer of its own, which removes them.
fn cross<S: Store>(d: &mut Driver<'_, '_>, threads: usize, sizes: Sizes, store: &S) {
    let pairs = threads / 2;
    drive(d, |iters| {
        // Made and dropped here, on the coordinating thread, outside the memory count (the
        // channels' buffers are the benchmark's, not the store's); the workers borrow them.
        type Channel<H> = (SyncSender<[H; BATCH]>, Mutex<Receiver<[H; BATCH]>>);
        let channels: Vec<Channel<S::Handle>> = unmetered(|| {
            (0..pairs)
                .map(|_| {
                    let (tx, rx) = sync_channel(CHANNEL_BOUND);
                    (tx, Mutex::new(rx))
                })
                .collect()
        });
        let elapsed = run_steps(
            2 * pairs,
            iters,
            &|index, gate| {
                if index < pairs {
                    let tx = &channels[index].0;
                    while gate.next() {
                        for b in 0..sizes.batches {
                            let base = b * BATCH as u64;
                            let batch = core::array::from_fn(|i| store.insert(base + i as u64));
                            tx.send(batch).expect("the consumer is alive");
                        }
                        gate.done();
                    }
                } else {
                    // Locked once, by its only consumer, for the whole case.
                    let rx = channels[index - pairs].1.lock().expect("not poisoned");
                    while gate.next() {
                        for _ in 0..sizes.batches {
                            for h in rx.recv().expect("the producer is alive") {
                                store.remove(h);
                            }
                        }
                        gate.done();
                    }
                }
            },
            || {},
        );
        unmetered(|| drop(channels));
        elapsed
    });
}

/// Every crate's case of B1, B2 and C at `threads` threads.
fn scenario_bc(r: &mut Runner<'_>, sizes: Sizes, threads: usize, memory: bool) {
    #[derive(Clone, Copy)]
    enum Case {
        Churn,
        Replace,
        Cross,
    }
    fn run<S: Store>(case: Case, d: &mut Driver<'_, '_>, threads: usize, sizes: Sizes, s: &S) {
        match case {
            Case::Churn => churn(d, threads, sizes, s),
            Case::Replace => replace(d, threads, sizes, s),
            Case::Cross => cross(d, threads, sizes, s),
        }
    }
    let t = threads as u64;
    let mut cases = vec![
        (
            Case::Churn,
            format!("B1: 64 B alloc + free x {}, T={threads}", sizes.steps),
            t * sizes.steps,
        ),
        (
            Case::Replace,
            format!(
                "B2: replace 1 of {} live 64 B x {}, T={threads}",
                sizes.live, sizes.steps
            ),
            t * sizes.steps,
        ),
    ];
    if threads >= 2 && threads.is_multiple_of(2) {
        cases.push((
            Case::Cross,
            format!(
                "C: 64 B x {} sent in batches of {BATCH}, freed by another thread, T={threads}",
                sizes.batches * BATCH as u64
            ),
            t / 2 * sizes.batches * BATCH as u64,
        ));
    }
    for (case, name, ops) in cases {
        r.bench("arena-pool-SyncPool", &name, ops, |d| {
            let pool = SyncPool::for_type::<Object>();
            run(case, d, threads, sizes, &Boxes(&pool));
        });
        r.bench("sharded-slab", &name, ops, |d| {
            let slab = sharded_slab::Slab::<Object>::new();
            run(case, d, threads, sizes, &slab);
        });
        r.bench("System", &name, ops, |d| {
            run(case, d, threads, sizes, &Boxes(Global));
        });
        if !memory {
            r.bench("mimalloc", &name, ops, |d| {
                run(case, d, threads, sizes, &Boxes(Mi));
            });
        }
    }
}

/// The thread counts: `BENCH_THREADS` (numbers separated by spaces or commas) if set; 2 for the
/// smoke run; otherwise 1, 2, 4, ... up to the available parallelism, and that count itself.
fn thread_counts(smoke: bool) -> Vec<usize> {
    if let Ok(list) = std::env::var("BENCH_THREADS") {
        let counts: Vec<usize> = list
            .split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(|s| match s.parse() {
                Ok(n) if n >= 1 => n,
                _ => panic!("BENCH_THREADS: '{s}' is not a thread count"),
            })
            .collect();
        assert!(!counts.is_empty(), "BENCH_THREADS is empty");
        return counts;
    }
    if smoke {
        return vec![2];
    }
    let max = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts: Vec<usize> = core::iter::successors(Some(1usize), |&n| n.checked_mul(2))
        .take_while(|&n| n <= max)
        .collect();
    if !max.is_power_of_two() {
        counts.push(max);
    }
    counts
}

fn threads(r: &mut Runner<'_>) {
    let smoke = std::env::var_os("BENCH_THREADS_SMOKE").is_some();
    let memory = memory_mode();
    let sizes = if smoke { Sizes::SMOKE } else { Sizes::FULL };
    // Iterations of tens of milliseconds: the same number in every sample.
    r.long_running();
    let counts = thread_counts(smoke);
    for &t in &counts {
        scenario_a(r, sizes, t, memory);
    }
    for &t in &counts {
        scenario_bc(r, sizes, t, memory);
    }
}

fn main() {
    if std::env::var("BENCH_COUNT").is_ok_and(|v| v != "list") {
        eprintln!(
            "threads: no counting mode (callgrind runs one thread at a time: its counts say \
             little about threads); nothing run"
        );
        std::process::exit(2);
    }
    run_suite("threads", threads);
}
