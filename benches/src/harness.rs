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
//!
//! **Memory mode.** With `BENCH_MEMORY` set (in a build with the `meter` feature, whose global
//! allocator counts every call: see [`crate::meter`]), a suite binary runs every case whose id
//! starts with the variable's value through the same [`Driver`] code paths, untimed:
//! [`Driver::steady`] runs [`WARM_CYCLES`] + [`MEASURED_CYCLES`] cycles, [`Driver::batched`] one
//! setup and its routine, [`Driver::fresh`] one unit of work. Each case runs twice: once
//! unrecorded (so that state a process makes once, on first use, is not charged to the first
//! case), then recorded from its start, before its allocator is built, to its end, after its
//! teardown. Every byte figure counts what the process holds from the global allocator: each
//! byte taken and not yet given back, counted from the case's start, so the chunks a reset kept
//! from a cycle before count in every cycle after it. It prints, after the case, one line:
//!
//! ```text
//! <id>\t<peak>\t<requested>\t<calls>\t<held_at_end>\t<calls_after_settling>\t<allocs>\t<deallocs>\t<reallocs>\t<first_cycle_peak>\t<steady_peak>\t<requested_per_steady_cycle>
//! ```
//!
//! - `peak`: the highest number of bytes held during the case, above what was held at its start
//!   (before its allocator was built: its construction, what it kept, and all its cycles count);
//! - `requested`: the bytes requested from it during the case; `calls`: its calls (`alloc` and
//!   `alloc_zeroed`, `dealloc`, `realloc`, each one call), split into the allocs, deallocs and
//!   reallocs fields;
//! - `held_at_end`: the bytes still held (above the start) where the case called [`mark_held`];
//!   [`Driver::steady`] marks it after its last cycle; `-` where nothing marked it;
//! - `calls_after_settling`: the calls made inside [`settled`]; [`Driver::steady`] counts its
//!   measured cycles (those after the warm-up ones) so; `-` where nothing counted them;
//! - `first_cycle_peak`: for a case run by [`Driver::steady`], the highest number of bytes held
//!   from the case's start to the end of its first cycle (the allocator's construction and the
//!   case's set-up included); `steady_peak`: the highest number held during any of its measured
//!   cycles, still above the case's start (what the resets before kept counts); and
//!   `requested_per_steady_cycle`: the bytes requested by its measured cycles, divided by
//!   [`MEASURED_CYCLES`] (rounded to the nearest byte). `-` in all three for the other cases
//!   ([`Driver::fresh`], [`Driver::batched`]), whose one unit is counted in `peak` from before
//!   its allocator was built.
//!
//! The readers of these lines ([`crate::report_data::parse_memory_line`], `benches/report.sh`)
//! also take a line of the first nine fields alone, which has no first-cycle and steady figures.
//!
//! The harness allocates nothing while a case is recorded (the id is made before, the line
//! printed after), and criterion does not run in this mode. `BENCH_MEMORY=list` prints the ids.

use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicI64};
use std::hint::black_box;
use std::io::Write as _;

use criterion::measurement::WallTime;
use criterion::{BatchSize, Bencher, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode};

use crate::{BenchAlloc, fix_malloc_thresholds, meter};

/// Inputs prepared per timed batch in [`Driver::batched`] (one timer read per batch instead of
/// one per input).
const BATCH: u64 = 64;

/// Counting mode: about this many operations are measured per case ...
const COUNT_OPS: u64 = 100_000;
/// ... in at most this many repetitions (and at least one).
const MAX_REPS: u64 = 100;

/// Memory mode: warm-up cycles of [`Driver::steady`], the first cycle among them ...
pub const WARM_CYCLES: u32 = 3;
/// ... then measured cycles (the steady state: their calls are the case's calls after settling,
/// their highest peak its steady peak).
pub const MEASURED_CYCLES: u32 = 3;
// The first cycle is a warm-up one, and a steady state needs a cycle to be read from.
const _: () = assert!(WARM_CYCLES >= 1 && MEASURED_CYCLES >= 1);

/// Memory mode: the `held` count of the meter at the last [`mark_held`] of the recorded case
/// (`NONE` if none), and the calls of its last [`settled`] (`NONE` if none).
static HELD_MARK: AtomicI64 = AtomicI64::new(NONE);
static SETTLED_CALLS: AtomicI64 = AtomicI64::new(NONE);
/// Memory mode: of the last [`Driver::steady`] of the recorded case (`NONE` if none), the peak
/// `held` from the case's start to the end of its first cycle and the highest peak of its
/// measured cycles (both absolute counts of the meter, from which the case's start is subtracted
/// when printed), and the bytes its measured cycles requested.
static FIRST_PEAK: AtomicI64 = AtomicI64::new(NONE);
static STEADY_PEAK: AtomicI64 = AtomicI64::new(NONE);
static STEADY_REQUESTED: AtomicI64 = AtomicI64::new(NONE);
const NONE: i64 = i64::MIN;
/// Whether a case is being run in memory mode (the marks are no-ops otherwise).
static METERING: AtomicBool = AtomicBool::new(false);

/// Memory mode: records the bytes held now as the case's "held at end" (the last call of a case
/// wins). Elsewhere it does nothing.
#[inline(always)]
pub fn mark_held() {
    if meter::INSTALLED && METERING.load(Relaxed) {
        HELD_MARK.store(meter::counts().held, Relaxed);
    }
}

/// Runs `f`; in memory mode, the calls into the global allocator made inside it are the case's
/// "calls after settling" (the last call of a case wins). Elsewhere it is `f()`.
#[inline(always)]
pub fn settled<R>(f: impl FnOnce() -> R) -> R {
    if meter::INSTALLED && METERING.load(Relaxed) {
        let before = meter::counts().calls();
        let r = f();
        SETTLED_CALLS.store((meter::counts().calls() - before) as i64, Relaxed);
        r
    } else {
        f()
    }
}

/// Whether this process runs its suite in memory mode (`BENCH_MEMORY` set, `list` included).
/// The suites do not register the cases whose allocator the meter cannot see there (the
/// `mimalloc` columns: see [`crate::Mi`]), so that memory mode lists and runs only cases it
/// measures.
pub fn memory_mode() -> bool {
    std::env::var_os("BENCH_MEMORY").is_some()
}

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

/// How a case's work is run: timed by criterion, counted, or metered.
pub enum Driver<'a, 'b> {
    /// Under criterion.
    Timed(&'a mut Bencher<'b, WallTime>),
    /// Counting mode: two unmeasured warm-up runs, then `reps` measured ones.
    Counted {
        /// Measured repetitions.
        reps: u64,
    },
    /// Memory mode: a fixed number of runs (see the module docs).
    Metered,
}

impl Driver<'_, '_> {
    /// Measures `cycle`, run again and again on state it keeps (the steady state of a reuse
    /// loop: criterion's warm-up, the counting mode's two warm-up runs or the memory mode's
    /// [`WARM_CYCLES`] reach it before measuring). In memory mode it also records the peak of
    /// the first cycle, the highest peak of the measured ones and the bytes they requested (see
    /// the module docs).
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
            Driver::Metered => {
                // The meter's running peak has not been reset since the case started, so after
                // the first cycle it is the case's peak up to there.
                cycle();
                let first = meter::peak();
                for _ in 1..WARM_CYCLES {
                    cycle();
                }
                let requested = meter::counts().requested;
                let mut steady = i64::MIN;
                settled(|| {
                    for _ in 0..MEASURED_CYCLES {
                        let ((), peak) = meter::peak_within(&mut cycle);
                        steady = steady.max(peak);
                    }
                });
                if meter::INSTALLED && METERING.load(Relaxed) {
                    FIRST_PEAK.store(first, Relaxed);
                    STEADY_PEAK.store(steady, Relaxed);
                    let requested = meter::counts().requested - requested;
                    STEADY_REQUESTED.store(requested as i64, Relaxed);
                }
                mark_held();
            }
        }
    }

    /// Measures `unit`, a whole unit of work that makes and drops its own allocator (what a
    /// case on a fresh allocator measures, construction and teardown included). Timed and
    /// counted as [`steady`](Driver::steady) (it keeps no state between runs); in memory mode it
    /// runs once, and the marks are the unit's own ([`mark_held`], [`settled`]).
    pub fn fresh(&mut self, mut unit: impl FnMut()) {
        match self {
            Driver::Metered => unit(),
            _ => self.steady(unit),
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
            Driver::Metered => {
                let mut input = setup();
                routine(&mut input);
                drop(black_box(input));
            }
        }
    }
}

/// One allocator for all iterations of a case: each iteration runs `cycle` on it, then the
/// crate's `reset` (the steady state of a reuse loop, as [`Driver::steady`] measures it).
pub fn reset_loop<A: BenchAlloc>(d: &mut Driver<'_, '_>, mut cycle: impl FnMut(&A)) {
    let mut a = A::new();
    d.steady(|| {
        cycle(&a);
        a.reset();
    });
}

enum Mode<'c> {
    Timed(BenchmarkGroup<'c, WallTime>),
    Count(String),
    List,
    Memory(String),
}

/// Where a suite registers its cases.
pub struct Runner<'c> {
    suite: &'static str,
    mode: Mode<'c>,
}

impl Runner<'_> {
    /// For suites whose iterations are long (milliseconds each): asks criterion for flat
    /// sampling ([`SamplingMode::Flat`]: the same number of iterations in every sample) for
    /// every case. Criterion's default (`Auto`) picks linear sampling (1, 2, 3 ... iterations
    /// per sample) unless the warm-up predicts it would take more than twice the measurement
    /// time, so with long iterations the cells of one row could be sampled in different ways, or
    /// a run could take far longer than asked. The setting belongs to the suite's benchmark
    /// group: it applies to the cases registered after this call. The counting and memory modes
    /// run a fixed number of cycles: there it does nothing.
    pub fn long_running(&mut self) {
        if let Mode::Timed(g) = &mut self.mode {
            g.sampling_mode(SamplingMode::Flat);
        }
    }

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
            Mode::Memory(filter) => {
                if id.starts_with(filter.as_str()) {
                    memory_case(&id, &mut f);
                }
            }
        }
    }
}

/// Runs one case in memory mode (see the module docs) and prints its line.
fn memory_case(id: &str, f: &mut dyn FnMut(&mut Driver<'_, '_>)) {
    // Unrecorded: whatever the process makes once, on first use, is made here.
    f(&mut Driver::Metered);
    for mark in [
        &HELD_MARK,
        &SETTLED_CALLS,
        &FIRST_PEAK,
        &STEADY_PEAK,
        &STEADY_REQUESTED,
    ] {
        mark.store(NONE, Relaxed);
    }
    METERING.store(true, Relaxed);
    meter::reset_peak();
    let start = meter::counts();
    f(&mut Driver::Metered);
    let end = meter::counts();
    let peak = meter::peak() - start.held;
    METERING.store(false, Relaxed);
    let mark = |v: i64, base: i64| {
        if v == NONE {
            "-".to_string()
        } else {
            (v - base).to_string()
        }
    };
    let per_cycle = |v: i64| {
        if v == NONE {
            NONE
        } else {
            let cycles = i64::from(MEASURED_CYCLES);
            (v + cycles / 2) / cycles
        }
    };
    println!(
        "{id}\t{peak}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        end.requested - start.requested,
        end.calls() - start.calls(),
        mark(HELD_MARK.load(Relaxed), start.held),
        mark(SETTLED_CALLS.load(Relaxed), 0),
        end.allocs - start.allocs,
        end.deallocs - start.deallocs,
        end.reallocs - start.reallocs,
        mark(FIRST_PEAK.load(Relaxed), start.held),
        mark(STEADY_PEAK.load(Relaxed), start.held),
        mark(per_cycle(STEADY_REQUESTED.load(Relaxed)), 0),
    );
    if end.held != start.held {
        // Not an error of the meter: the case keeps memory past its end (a leak, or state a
        // crate makes once and keeps); the next case's baseline includes it.
        eprintln!(
            "note: {id}: {} bytes still held after the case",
            end.held - start.held
        );
    }
}

/// The `main` of a suite binary: fixes malloc's thresholds, then runs the suite under criterion,
/// in counting mode when `BENCH_COUNT` is set, or in memory mode when `BENCH_MEMORY` is set (see
/// the module docs).
pub fn run_suite(suite: &'static str, register: impl FnOnce(&mut Runner<'_>)) {
    fix_malloc_thresholds();
    if let Ok(filter) = std::env::var("BENCH_MEMORY") {
        if !meter::INSTALLED {
            eprintln!(
                "BENCH_MEMORY needs the meter: build with `--features meter` \
                 (cargo bench -p arena-pool-benches --features meter --bench {suite})"
            );
            std::process::exit(2);
        }
        let mode = if filter == "list" {
            Mode::List
        } else {
            Mode::Memory(filter)
        };
        register(&mut Runner { suite, mode });
        return;
    }
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
