//! Running a suite: under criterion (`cargo bench`, `cargo criterion`), or once per case for the
//! instruction counts.
//!
//! A suite registers its cases with [`Runner::bench`]; each case drives its work through a
//! [`Driver`], so that the timed run and the counted run execute the same code.
//!
//! **Counting mode.** With the environment variable `BENCH_COUNT` set, a suite binary does not
//! start criterion: it runs every case whose id (`<suite>/<crate>/<case>`) starts with the
//! variable's value, once warmed up and then for a number of repetitions, inside
//! [`arena_pool_bench_measured`]. Run under valgrind's callgrind with collection switched on only
//! inside that function, each case's instruction count is exactly its measured work:
//!
//! ```text
//! BENCH_COUNT=typed/bumpalo/ valgrind --tool=callgrind --collect-atstart=no \
//!     --toggle-collect=arena_pool_bench_measured --toggle-collect=arena_pool_bench_measured_worker \
//!     --dump-after=arena_pool_bench_measured <bench binary>
//! ```
//!
//! (callgrind collects per thread: a case that runs threads runs each worker's share inside
//! [`arena_pool_bench_measured_worker`].)
//!
//! Each case prints `<id>\t<operations>` before it runs (the operations of all its measured
//! repetitions), and each exit from the measured function writes one profile part, so part `k` of
//! the output holds the instructions of the `k`-th printed case. `BENCH_COUNT=list` only prints
//! the ids with the operations of one repetition. `benches/report.sh` does all of this.

use std::hint::black_box;
use std::io::Write as _;

use criterion::measurement::WallTime;
use criterion::{BatchSize, Bencher, BenchmarkGroup, BenchmarkId, Criterion};

use crate::fix_malloc_thresholds;

/// Inputs prepared per timed batch in [`Driver::batched`] (one timer read per batch instead of
/// one per input).
const BATCH: u64 = 64;

/// Counting mode: about this many operations are measured per case ...
const COUNT_OPS: u64 = 100_000;
/// ... in at most this many repetitions (and at least one).
const MAX_REPS: u64 = 100;

/// The measured region of the counting mode: the instruction counts are those of the code run
/// inside this function. It is a plain, unmangled, never-inlined symbol so that valgrind can name
/// it; the call through `dyn` costs the same few instructions for every crate.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn arena_pool_bench_measured(f: &mut dyn FnMut()) {
    f();
}

/// The measured region of a worker thread, for the cases that run threads: callgrind collects
/// per thread, so each worker's share is counted when it runs inside this function (the report
/// script toggles collection on it too; only the main thread's region ends a profile part).
#[unsafe(no_mangle)]
#[inline(never)]
pub fn arena_pool_bench_measured_worker(f: &mut dyn FnMut()) {
    f();
    // A body of its own: were it identical to `arena_pool_bench_measured`, the linker could fold
    // the two into one address, which callgrind would name after either.
    black_box(0u8);
}

/// How a case's work is run: timed by criterion, or counted.
pub enum Driver<'a, 'b> {
    /// Under criterion.
    Timed(&'a mut Bencher<'b, WallTime>),
    /// Counting mode: two unmeasured warm-up runs, then `reps` measured ones.
    Counted {
        /// Measured repetitions.
        reps: u64,
    },
}

impl Driver<'_, '_> {
    /// Measures `cycle`, run again and again on state it keeps (the steady state of a reuse
    /// loop: criterion's warm-up, or the two warm-up runs, reach it before measuring).
    pub fn steady(&mut self, mut cycle: impl FnMut()) {
        match self {
            Driver::Timed(b) => b.iter(&mut cycle),
            Driver::Counted { reps } => {
                let reps = *reps;
                cycle();
                cycle();
                arena_pool_bench_measured(&mut || {
                    for _ in 0..reps {
                        cycle();
                    }
                });
            }
        }
    }

    /// Measures `routine` on a fresh `setup()` each time, in place (the input is not moved
    /// while measured, so the size of the allocator's struct does not count); neither `setup`
    /// nor dropping the input is measured.
    pub fn batched<I>(&mut self, mut setup: impl FnMut() -> I, mut routine: impl FnMut(&mut I)) {
        match self {
            Driver::Timed(b) => {
                b.iter_batched_ref(&mut setup, &mut routine, BatchSize::NumIterations(BATCH));
            }
            Driver::Counted { reps } => {
                for _ in 0..2 {
                    let mut input = setup();
                    routine(&mut input);
                    drop(black_box(input));
                }
                let mut inputs: Vec<I> = (0..*reps).map(|_| setup()).collect();
                arena_pool_bench_measured(&mut || {
                    for input in inputs.iter_mut() {
                        routine(input);
                    }
                });
                drop(black_box(inputs));
            }
        }
    }
}

enum Mode<'c> {
    Timed(BenchmarkGroup<'c, WallTime>),
    Count(String),
    List,
}

/// Where a suite registers its cases.
pub struct Runner<'c> {
    suite: &'static str,
    mode: Mode<'c>,
}

impl Runner<'_> {
    /// One case for one crate, with id `<suite>/<krate>/<case>` (criterion-table renders one row
    /// per case, one column per crate, in registration order). `ops` is the number of operations
    /// one run of the case does, the divisor of the instructions per operation.
    pub fn bench(
        &mut self,
        krate: &str,
        case: &str,
        ops: u64,
        mut f: impl FnMut(&mut Driver<'_, '_>),
    ) {
        // criterion-table splits ids on '/'.
        assert!(
            !krate.contains('/') && !case.contains('/'),
            "'/' in a benchmark name: {krate} {case}"
        );
        let id = format!("{}/{krate}/{case}", self.suite);
        match &mut self.mode {
            Mode::Timed(g) => {
                g.bench_function(BenchmarkId::new(krate, case), |b| f(&mut Driver::Timed(b)));
            }
            Mode::List => println!("{id}\t{ops}"),
            Mode::Count(filter) => {
                if id.starts_with(filter.as_str()) {
                    let reps = (COUNT_OPS / ops.max(1)).clamp(1, MAX_REPS);
                    println!("{id}\t{}", ops * reps);
                    // The line must be out before the profile part of this case is written.
                    std::io::stdout().flush().expect("stdout");
                    f(&mut Driver::Counted { reps });
                }
            }
        }
    }
}

/// The `main` of a suite binary: fixes malloc's thresholds, then runs the suite under criterion,
/// or in counting mode when `BENCH_COUNT` is set (see the module docs).
pub fn run_suite(suite: &'static str, register: impl FnOnce(&mut Runner<'_>)) {
    fix_malloc_thresholds();
    match std::env::var("BENCH_COUNT") {
        Ok(filter) if filter == "list" => register(&mut Runner {
            suite,
            mode: Mode::List,
        }),
        Ok(filter) => register(&mut Runner {
            suite,
            mode: Mode::Count(filter),
        }),
        Err(_) => {
            let mut c = Criterion::default().configure_from_args();
            {
                let mut runner = Runner {
                    suite,
                    mode: Mode::Timed(c.benchmark_group(suite)),
                };
                register(&mut runner);
                if let Mode::Timed(g) = runner.mode {
                    g.finish();
                }
            }
            c.final_summary();
        }
    }
}
