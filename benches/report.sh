#!/usr/bin/env bash
# Regenerates BENCHMARKS.md (at the repository root) from scratch, in one command:
#   1. criterion timings of every suite (cargo-criterion's JSON rendered by criterion-table, with
#      each cell's ratio to the fastest crate of its row);
#   2. instructions per operation of every case for every crate, under valgrind's callgrind
#      (the suites' counting mode, see benches/src/harness.rs);
#   3. memory: peak bytes (counted from before each case's allocator was built; for the reuse
#      loops also their first cycle's and their steady state's), bytes requested and calls into
#      the global allocator of every case for every crate (the suites' memory mode, in a second
#      build with the `meter` feature, whose global allocator counts: see benches/src/meter.rs),
#      and the arenas' peaks over a sweep of block counts (benches/src/bin/memory_sweep.rs);
#   4. SVG charts of the three (benches/src/bin/charts/, with plotters): per suite, each
#      crate's time, instructions and peak memory relative to the best crate of each row;
#   5. the machine, the toolchain, the crate versions and how malloc was set up.
# The threads suite (benches/benches/threads.rs) has a section of its own: its timings, as ns per
# operation and speed-up per thread count (benches/src/bin/threads_table.rs), are not fed to
# criterion-table nor timed again, and it has no instruction counts (callgrind runs one thread at
# a time); its memory figures join the memory section like any suite's.
#
# Usage:
#   benches/report.sh                  full run (0.5 s warm-up, 2 s measurement, 50 samples per
#                                      benchmark: about an hour)
#   BENCH_QUICK=1 benches/report.sh    short measurement times, a trial of the whole pipeline
#   BENCH_ONLY=memory benches/report.sh
#                                      step 3 alone (a few minutes, most of it the build): replaces
#                                      the memory section of the existing report and the memory
#                                      charts, keeps the rest
#   BENCH_ONLY=threads benches/report.sh
#                                      the threads suite alone (its timings: about 5 minutes at
#                                      T = 1, 2): replaces the Threads section of the existing
#                                      report (or adds it) and its time chart, keeps the rest
# Environment:
#   BENCH_QUICK=1     warm-up 0.1 s, measurement 0.3 s, 10 samples per benchmark
#   BENCH_ONLY=memory only the memory pass (needs neither criterion's tools nor valgrind)
#   BENCH_ONLY=threads only the threads suite's timings (needs cargo-criterion, not valgrind)
#   BENCH_SUITES="a b" only these suites, in this order (a partial report, for trials; default:
#                     allocator_api collections typed pools memory workloads threads)
#   BENCH_THREADS="1 2 4"
#                     the threads suite's thread counts (default: 1, 2, 4 ... up to the available
#                     parallelism, and that count itself)
#   BENCH_JOBS=N      callgrind runs in parallel (default 2; counts do not depend on load)
#   BENCH_OUT=PATH    where to write the report (default BENCHMARKS.md at the repository root)
#   BENCH_CHARTS=DIR  where to write the charts (default benches/charts; the report links them
#                     by that path from the repository root)
#   CARGO_TARGET_DIR  honoured as usual (the meter's build shares it: the feature gives its
#                     artifacts other names, so neither build replaces the other)
# Needs: cargo (installs cargo-criterion and criterion-table with `cargo install --locked` when
# missing), valgrind, awk, sed. Run it on an otherwise idle machine: other work skews timings.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${BENCH_OUT:-$root/BENCHMARKS.md}
charts_dir=${BENCH_CHARTS:-$root/benches/charts}
jobs=${BENCH_JOBS:-2}
read -r -a suites <<<"${BENCH_SUITES:-allocator_api collections typed pools memory workloads threads}"
# The suites of the criterion-table tables and of the instruction counts: all but threads.
table_suites=()
threads_suite=
for suite in "${suites[@]}"; do
  if [[ $suite == threads ]]; then threads_suite=1; else table_suites+=("$suite"); fi
done
only=${BENCH_ONLY:-}
case $only in
  "" | memory | threads) ;;
  *) echo "BENCH_ONLY: only 'memory' and 'threads' are supported (got '$only')" >&2; exit 2 ;;
esac
# The threads suite's timing: criterion's least number of samples (an iteration of its scenario A
# takes up to seconds with the system allocator).
threads_args=(-- --warm-up-time 1 --measurement-time 3 --sample-size 10)
threads_kind="1 s warm-up, 3 s measurement, 10 samples per benchmark"
if [[ -n ${BENCH_QUICK:-} ]]; then
  threads_args=(-- --warm-up-time 0.1 --measurement-time 0.3 --sample-size 10)
  threads_kind="**quick trial run**: 0.1 s warm-up, 0.3 s measurement, 10 samples; the timings are rough"
fi
if [[ -z $only ]] && ((${#table_suites[@]} == 0)); then
  echo "BENCH_SUITES: the report needs a suite besides threads (e.g. BENCH_SUITES=\"pools threads\")" >&2
  exit 2
fi

export RUSTUP_AUTO_INSTALL=0 CARGO_TERM_COLOR=never
# Line tables let callgrind_annotate map instructions to source lines; they change no code. The
# same setting for the build, cargo-criterion and the counting run means one build serves all.
export CARGO_PROFILE_BENCH_DEBUG=line-tables-only

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
log() { printf '[%4ss] %s\n' "$(($(date +%s) - start))" "$*" >&2; }

if [[ $only != memory ]]; then
  tools=(cargo-criterion)
  [[ -n $only ]] || tools+=(criterion-table)
  for tool in "${tools[@]}"; do
    if ! command -v "$tool" >/dev/null; then
      log "installing $tool"
      cargo install --locked "$tool"
    fi
  done
fi
if [[ -z $only ]]; then
  command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
fi

# ---- 3. memory: the pass, its tables and its text (run after step 2, or alone) ----
# A second build of the suites with the `meter` feature (same target directory, other
# artifacts), then each suite binary once with BENCH_MEMORY=<suite>/, which prints one line per
# case: id, peak, requested, calls, held at end, calls after settling, allocs, deallocs, reallocs,
# first-cycle peak, steady peak, bytes requested per steady cycle (see benches/src/harness.rs;
# the tables below also read lines of the first nine fields alone).
memory_pass() {
  log "memory: building the suites with the meter (--features meter)"
  cargo bench -p arena-pool-benches --features meter --no-run --message-format=json \
    2>"$work/build-meter.log" \
    | sed -n 's/.*"kind":\["bench"\].*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*/\1 \2/p' \
    >"$work/meter-bins" || { cat "$work/build-meter.log" >&2; exit 1; }
  local suite bin
  : >"$work/memory.tsv"
  for suite in "${suites[@]}"; do
    bin=$(awk -v s="$suite" '$1 == s { print $2 }' "$work/meter-bins")
    [[ -x $bin ]] || { echo "no meter build of suite $suite" >&2; exit 1; }
    BENCH_MEMORY="$suite/" "$bin" >>"$work/memory.tsv" 2>>"$work/memory.log" \
      || { tail -30 "$work/memory.log" >&2; exit 1; }
    log "memory: $suite done"
  done
  log "memory: $(wc -l <"$work/memory.tsv") cases metered"
  # The arenas' peaks over a sweep of block counts (benches/src/bin/memory_sweep.rs).
  cargo run --profile bench --quiet -p arena-pool-benches --features meter --bin memory_sweep \
    >"$work/sweep.md" 2>"$work/sweep.log" || { cat "$work/sweep.log" >&2; exit 1; }
  log "memory: the size sweep done"
  memory_section >"$work/memory.md"
}

# One table per suite and figure: rows = cases, columns = crates; each cell the figure, its ratio
# to the lowest of the row (bold) and its ratio to the System column of the row. A suite with
# reuse loops also gets their first-cycle and steady peaks (one table, side by side) and their
# bytes requested per steady cycle; the memory suite the held-at-end and calls-after-settling
# tables.
memory_awk='
function human(b) {
  if (b < 1024) return sprintf("%d B", b)
  if (b < 1048576) return sprintf("%.1f KiB", b / 1024)
  return sprintf("%.2f MiB", b / 1048576)
}
# The ratio of v to r; empty where there is none (no reference, or a reference of zero).
function ratio(v, r) {
  if (r == "" || r == 0) return v == r ? "1.00x" : ""
  if (v > 0 && v / r < 0.01) return "<0.01x"
  return sprintf("%.2fx", v / r)
}
# " (a, b)", with "-" for a missing one; nothing if both are missing.
function ratios(a, b) {
  if (a == "" && b == "") return ""
  return " (" (a == "" ? "-" : a) ", " (b == "" ? "-" : b) ")"
}
# One table of figure m; with pre, each cell shows figure pre before it ("pre → m"), only in rows
# that have both; the ratios and the bold are those of figure m.
function table(s, m, title, bytes, pre,   i, j, r, k, v, min, any, sys, cell) {
  any = 0
  for (i = 1; i <= nrow[s]; i++)
    for (j = 1; j <= ncol[s]; j++)
      if ((s, row[s, i], col[s, j], m) in val) any = 1
  if (!any) return
  printf "%s\n\n| |", title
  for (j = 1; j <= ncol[s]; j++) printf " `%s` |", col[s, j]
  printf "\n|:--|"
  for (j = 1; j <= ncol[s]; j++) printf "--:|"
  printf "\n"
  for (i = 1; i <= nrow[s]; i++) {
    r = row[s, i]; min = ""; any = 0
    for (j = 1; j <= ncol[s]; j++) {
      k = col[s, j]
      if (!((s, r, k, m) in val)) continue
      any = 1
      if (min == "" || val[s, r, k, m] < min) min = val[s, r, k, m]
    }
    if (!any) continue
    sys = ((s, r, "System", m) in val) ? val[s, r, "System", m] : ""
    printf "| **`%s`** |", r
    for (j = 1; j <= ncol[s]; j++) {
      k = col[s, j]
      if (!((s, r, k, m) in val) || (pre && !((s, r, k, pre) in val))) { printf " N/A |"; continue }
      v = val[s, r, k, m]
      cell = bytes ? human(v) : v
      if (v == min) cell = "**" cell "**"
      if (pre) cell = (bytes ? human(val[s, r, k, pre]) : val[s, r, k, pre]) " → " cell
      if (v == min) printf " %s%s |", cell, ratios("**1.00x**", ratio(v, sys))
      else printf " %s%s |", cell, ratios(ratio(v, min), ratio(v, sys))
    }
    printf "\n"
  }
  printf "\n"
}
BEGIN { FS = "\t" }
{
  split($1, id, "/")
  s = id[1]; k = id[2]; r = substr($1, length(s) + length(k) + 3)
  if (!(s in ns)) { suite[++nsuite] = s; ns[s] = 1 }
  if (!((s, k) in colseen)) { colseen[s, k] = 1; col[s, ++ncol[s]] = k }
  if (!((s, r) in rowseen)) { rowseen[s, r] = 1; row[s, ++nrow[s]] = r }
  for (m = 2; m <= 6; m++) if ($m != "-") val[s, r, k, m] = $m + 0
  # The figures of a reuse loop (fields 10 to 12; a line of nine fields has none).
  for (m = 10; m <= 12 && m <= NF; m++) if ($m != "-") val[s, r, k, m] = $m + 0
}
END {
  for (a = 1; a <= nsuite; a++) {
    s = suite[a]
    printf "### %s\n\n", s
    table(s, 2, "**Peak bytes** held during the case (counted from before its allocator was built):", 1)
    table(s, 11, "**First cycle → steady state** (reuse loops): the peak bytes of the first cycle, then the highest of the measured cycles, both counted from before the allocator was built; bold and ratios: the steady state:", 1, 10)
    table(s, 3, "**Bytes requested** (the sizes of `alloc`, `alloc_zeroed` and `realloc`, summed):", 1)
    table(s, 12, "**Bytes requested per steady cycle** (reuse loops; the average of the measured cycles):", 1)
    table(s, 4, "**Calls** (`alloc` + `dealloc` + `realloc`, summed):", 0)
    if (s == "memory") {
      table(s, 5, "**Held at end** (bytes; where each unit marks it, see above):", 1)
      table(s, 6, "**Calls after settling** (see above):", 0)
    }
  }
}
'

memory_section() {
  local commit
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    commit="$commit, with uncommitted changes"
  fi
  cat <<EOF
## Memory use

What each crate holds from the allocator below it, for every case of every suite (counted on
$(date -u '+%Y-%m-%d %H:%M UTC'), commit \`${commit}\`; the counts are exact and repeatable, the
thread rows aside, and depend neither on the machine's load nor on malloc). The suites are built
a second time with the benches' \`meter\` feature (\`cargo bench -p arena-pool-benches --features
meter\`), whose \`#[global_allocator]\` forwards every call to \`std::alloc::System\` and counts
it; the timed and counted builds above are built without it. Every crate measured takes its memory
from the global allocator: arena-pool's default backing allocator is \`Global\`, bumpalo,
bump-scope, blink-alloc and stumpalo allocate their chunks from it, and the pools and \`System\`
call it directly. Each suite binary runs with \`BENCH_MEMORY=<suite>/\` (its memory mode, see
\`benches/src/harness.rs\`): each case once unrecorded, then recorded from before its allocator is
built to after its teardown, through the same code as the timed run. A reuse loop (one allocator
for all its cycles, the crate's reset after each) runs 3 warm-up cycles, the first among them,
then 3 measured cycles; a case on a fresh allocator (the \`batched\` ones, and the memory suite's
rows other than its reuse loops) runs one unit.

**Memory is what the process holds.** Every figure in bytes counts each byte taken from the
allocator below and not yet given back, counted from before the case's allocator was built: what
a reset keeps from one cycle (a chunk kept for reuse, whatever its size) counts in every cycle
after it, as it stays the process's memory. A reuse loop's first cycle and its steady state
(after the warm-up cycles) are given side by side.

- **Bytes** are the sizes requested (the \`Layout\`s), not what malloc makes of them: glibc
  adds 8 bytes to a block and rounds it up to 16 (32 at the least), so for small blocks the
  \`System\` column is below the memory malloc really uses. An arena's bytes are its chunks,
  headers included.
- **Peak**: the highest number of bytes held during the case, counted from before its allocator
  was built (its construction, what its resets kept and, for a reuse loop, all its cycles count;
  a \`realloc\` that moves its block counts both blocks, held together while it copies).
- **First cycle → steady state** (reuse loops): the peak from before the allocator was built to
  the end of the first cycle (the allocator's construction and the case's set-up included), then
  the highest peak of the 3 measured cycles, each counted from before the allocator was built
  too: the bytes the resets before kept count there with those the cycle takes. A steady state
  above the first cycle is memory held for reuse beyond what the first cycle needed. Bold and
  ratios are those of the steady state.
- **Bytes requested**: the sizes asked for by \`alloc\`, \`alloc_zeroed\` and \`realloc\` (a
  \`realloc\` counts its whole new size), summed over the case; **per steady cycle** (reuse loops):
  those of the 3 measured cycles, divided by 3 (0: a loop that takes nothing new once settled).
- **Calls**: \`alloc\` + \`dealloc\` + \`realloc\` calls, summed, each counting one (the memory
  mode's lines also give the three apart).
- The \`arena-pool-LocalArena\` column is a \`SyncArena\` in a \`Box\` with one handle taken from it
  (the handle borrows the arena, so the benchmarks keep the arena on the heap). The \`Box\` (240
  bytes on x86-64) is not counted, as no column counts the allocator's own struct: the other
  adapters hold theirs inline.
- Not counted: the cases' own data (copy sources, orders of indices, lists of handles) and the
  list of live blocks \`System\` keeps for its reset, all made outside the count.
- No \`mimalloc\` column: mimalloc, used as an allocator instance in the pools, workloads and
  threads suites, takes its memory from the operating system, not from the global allocator the
  meter counts, so its cases are not run in memory mode (the bytes requested from it are not its
  memory).
- The thread rows (pools, and every row of the threads suite) count spawning and joining the
  threads, in every column. A thread's
  last frees (about 144 bytes, 3 calls) come just before or just after its case ends, so these
  rows can differ by that much from one run to the next. The two-thread arena rows differ by
  more: two threads that find the chunk full at once both take one (the one not installed
  stays a spare), and the chunk sizes then follow the order of the refills (\`SyncArena\`'s
  peak has been seen from 168 to 285 KiB). Every other row is the same each run.
- Each cell: the figure, its ratio to the lowest of the row (bold), and its ratio to the
  \`System\` column of the row; \`-\` for a ratio with nothing to divide by (no \`System\` column
  in the row, or a zero: \`System\` holds nothing after its reset), and no parentheses where
  both are missing.

**The memory suite.** Each unit runs on a fresh allocator and drops it at its end, but in the
three reuse loops (rows \`reuse loop: ...\`), which run as the other suites' reuse loops (3 + 3
cycles, one allocator for all of them) and so have first-cycle and steady-state figures: a
\`Vec<u64>\` pushed to 100 000 with a \`u64\` placed in the allocator after every 10th push, from
the first on (so the vector is never the last block when it grows); an interner, 50 000 strings
\`key{i}\` each looked up in a hashbrown \`HashMap<&str, u32>\` that lives in the allocator and,
not found, copied into the allocator and inserted; a \`HashMap<u64, u64>\` of 100 000 inserts.
Each of their cycles drops its collections and ends with the crate's reset; \`System\` has none:
its reset frees what the cycle left (the placed values, the strings). Two more tables: **held at
end**, the bytes still held where the unit marks them: after its collections are dropped (the
allocator not yet), after the scope has ended, after the reset loop's last (20th) reset, after the
8th cycle (and reset) following the spike, and after a reuse loop's last (6th) reset; **calls
after settling**, the calls the reset loop makes after its 4th cycle (its cycles 5 to 20), those
of the 8 further cycles after the spike case's held mark, and those of a reuse loop's 3 measured
cycles. A loop that has settled makes none. The scoped row is arena-pool's \`Arena::with_scope\`,
bump-scope's \`Bump::scoped\` and stumpalo's \`Arena::with_scope\`; for \`System\` the vector
lives in a block and is freed at its end; bumpalo and blink-alloc have no scope and no checkpoint
to return to, so no cell.

**The threads suite** (see its own section above for the scenarios): each case runs one warm-up
step and one measured step (for A, a warm-up round and then 20 rounds), from before its allocator
is built to after its threads are joined; the lists of handles and boxes the threads keep (and
C's channels) are not counted. There is no \`mimalloc\` column: mimalloc takes its memory from
the system directly, not through the global allocator the meter counts.

EOF
  awk "$memory_awk" "$work/memory.tsv"
  echo "### size sweep"
  echo
  cat "$work/sweep.md"
}

# BENCH_ONLY=memory: the memory section of the report replaced (or, if it has none, added before
# the machine section and to the table of contents); the rest of the report stays as it was.
splice_memory_section() {
  if [[ -f $out ]]; then
    awk -v sec="$work/memory.md" '
      BEGIN { while ((getline line < sec) > 0) text = text line "\n" }
      /^- \[Memory use\]/ { toc = 1 }
      /^- \[Machine, toolchain and versions\]/ && !toc { print "- [Memory use](#memory-use)" }
      /^## Memory use$/ { skip = 1; if (!done) { printf "%s", text; done = 1 }; next }
      skip && /^## / { skip = 0 }
      /^## Machine, toolchain and versions$/ && !done { printf "%s", text; done = 1 }
      !skip { print }
      END { if (!done) printf "\n%s", text }
    ' "$out" >"$work/out.md"
  else
    { printf '# Benchmarks\n\n'; cat "$work/memory.md"; } >"$work/out.md"
  fi
  cp "$work/out.md" "$out"
  log "wrote the memory section of $out"
}

# Draws the charts of the data files given (options of benches/src/bin/charts/) into
# $charts_dir, after removing the charts of the figures it redraws (`$1`: a glob of them).
draw_charts() {
  local old=$1
  shift
  mkdir -p "$charts_dir"
  # shellcheck disable=SC2086 # the glob is meant to expand
  rm -f "$charts_dir"/$old
  cargo run --profile bench --quiet -p arena-pool-benches --bin charts -- "$@" \
    --out "$charts_dir" >"$work/charts.list" 2>"$work/charts.log" \
    || { cat "$work/charts.log" >&2; exit 1; }
  log "charts: $(wc -l <"$work/charts.list") SVG files in $charts_dir"
}

# The threads suite: its own criterion run (not timed again, not in criterion-table's tables),
# the operations of each case from its list mode, and its tables (benches/src/bin/threads_table.rs).
threads_section() {
  cat <<EOF
## Threads

How each allocator scales with threads (\`benches/benches/threads.rs\`, whose module docs give
the method in full). Each criterion sample spawns its T worker threads once, and the sample's
thread steps them through a barrier: all meet, the workers do one step (a round of A, an
iteration of B or C), all meet again. The clock runs from the second step (the first is a
warm-up) to the end of the last: neither spawning nor joining the threads, nor their set-up (B2's
live sets) or teardown, is timed; the barriers are, in every column alike. Each cell: the
nanoseconds per operation (the time of an iteration divided by the operations of all T threads)
and, in parentheses, the crate's throughput at this T over its own at the smallest T of the
scenario (T = 1; T = 2 for C): 2.00x at T = 2 is perfect scaling, below 1.00x the threads slow
each other down. The fastest cell of each row in bold. Timing: ${threads_kind}.

- **A. Parallel bump + reset**: each thread allocates 200 000 objects a round, a \`u64\` and a copy
  of a 24-byte \`str\` alternately, through each crate's own typed calls; all threads wait for
  each other at the end of each round, and the allocator is reset between rounds; 20 rounds an
  iteration; an operation is one object. \`arena-pool-LocalArena\`: one \`SyncArena\`, a
  \`LocalArena\` handle per thread and round; \`arena-pool-LocalArena-per-job\`: the same with a
  handle per job of 10 objects (20 000 jobs per thread and round), made and dropped in the round,
  as a job queue would; \`arena-pool-SyncArena\`: every thread calls
  \`&SyncArena\` (the shared path); \`blink-alloc\`: one \`SyncBlinkAlloc\`, a \`LocalBlinkAlloc\`
  per thread and round (through blink-alloc's \`Blink\` front end); \`bumpalo-herd\`: one \`Herd\`,
  a member (\`get()\`) per thread and round; \`bumpalo\`: a \`Bump\` per thread, reset by its
  thread; \`System\` and \`mimalloc\`: a \`Box\` per object, kept in a list per thread and all
  dropped at the end of the round (the list's pushes are in their time). The shared allocators sit
  in an \`RwLock\`, held for reading by each thread for a round and for writing by the reset.
- **B1. Pool churn**: each thread allocates a 64-byte object and frees it at once, 100 000 times an
  iteration. **B2**: each thread keeps 1 000 live 64-byte objects and replaces a random one
  (a fixed sequence per thread) 100 000 times an iteration, the old one freed first.
  \`arena-pool-SyncPool\`: one \`SyncPool\` for all threads, \`Box<T, &SyncPool>\`;
  \`sharded-slab\`: one \`Slab\` for all threads, \`insert\` and \`remove\`; \`System\` and
  \`mimalloc\`: allocator-api2's \`Box<T, A>\`.
- **C. Cross-thread free** (even T): T/2 producers each allocate 102 400 objects of 64 bytes an
  iteration and send them, in batches of 64 (an array, moved), over a bounded channel
  (\`std::sync::mpsc::sync_channel\`, 16 batches) to a consumer of their own, which frees them
  (\`sharded-slab\`: sends keys, its consumers call \`remove\`); an operation is one object.
- \`System\` is glibc malloc, the global allocator of the benchmarks (with the thresholds fixed
  below); \`mimalloc\` is \`mimalloc::MiMalloc\` used as an allocator instance (allocator-api2's
  \`Box<T, A>\` over its \`GlobalAlloc\` impl), not installed as the global allocator, so every
  other crate here still runs on glibc malloc.
- No instruction counts for this suite: callgrind runs one thread at a time, so its counts say
  little about threads. Its memory figures are in the memory section.

EOF
  cat "$work/threads-tables.md"
  echo
}
threads_pass() { # the suite's binary
  BENCH_COUNT=list "$1" >"$work/threads-ops.tsv"
  log "criterion: threads, T = $(sed -n 's/.*, T=\([0-9]*\)\t.*/\1/p' "$work/threads-ops.tsv" | sort -nu | paste -sd' ' -)"
  cargo criterion -p arena-pool-benches --bench threads --message-format=json \
    --plotting-backend disabled "${threads_args[@]}" 2>>"$work/criterion.log" \
    >"$work/threads.json" || { tail -30 "$work/criterion.log" >&2; exit 1; }
  cargo run --profile bench --quiet -p arena-pool-benches --bin threads_table -- \
    --ops "$work/threads-ops.tsv" "$work/threads.json" >"$work/threads-tables.md" \
    2>"$work/threads-table.err" || { cat "$work/threads-table.err" >&2; exit 1; }
  threads_section >"$work/threads.md"
  log "criterion: threads done"
}

# BENCH_ONLY=threads: the Threads section of the report replaced (or, if it has none, added before
# the charts section and to the table of contents); the rest of the report stays as it was.
splice_threads_section() {
  [[ -f $out ]] || { echo "BENCH_ONLY=threads: no $out to add the section to" >&2; exit 1; }
  awk -v sec="$work/threads.md" '
    BEGIN { while ((getline line < sec) > 0) text = text line "\n" }
    /^- \[Threads\]/ { toc = 1 }
    /^- \[Charts\]/ && !toc { print "- [Threads](#threads)"; toc = 1 }
    /^## Threads$/ { skip = 1; if (!done) { printf "%s", text; done = 1 }; next }
    skip && /^## / { skip = 0 }
    /^## Charts$/ && !done { printf "%s", text; done = 1 }
    !skip { print }
    END { if (!done) printf "\n%s", text }
  ' "$out" >"$work/out.md"
  cp "$work/out.md" "$out"
  log "wrote the threads section of $out"
}

if [[ $only == threads ]]; then
  log "building the threads suite"
  bin=$(cargo bench -p arena-pool-benches --bench threads --no-run --message-format=json \
    2>"$work/build.log" \
    | sed -n 's/.*"kind":\["bench"\].*"name":"threads".*"executable":"\([^"]*\)".*/\1/p') \
    || { cat "$work/build.log" >&2; exit 1; }
  [[ -x $bin ]] || { cat "$work/build.log" >&2; exit 1; }
  threads_pass "$bin"
  draw_charts 'threads-time.svg' --criterion "$work/threads.json"
  splice_threads_section
  exit 0
fi

if [[ $only == memory ]]; then
  memory_pass
  draw_charts '*-memory.svg' --memory "$work/memory.tsv"
  splice_memory_section
  exit 0
fi

# ---- build once, and find the suite binaries ----
log "building the suites"
cargo bench -p arena-pool-benches --no-run --message-format=json 2>"$work/build.log" \
  | sed -n 's/.*"kind":\["bench"\].*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*/\1 \2/p' \
  > "$work/bins" || { cat "$work/build.log" >&2; exit 1; }
bin_of() { awk -v s="$1" '$1 == s { print $2 }' "$work/bins"; }
for suite in "${suites[@]}"; do
  [[ -x $(bin_of "$suite") ]] || { echo "no binary for suite $suite" >&2; exit 1; }
done

# ---- 1. timings ----
# Shorter than criterion's defaults (3 s warm-up, 5 s measurement, 100 samples, 100 000
# bootstrap resamples), so that the whole report of the suites' 386 benchmarks runs in about an
# hour on two cores: the rows that decide a comparison get the median of three runs (below)
# rather than one longer run.
criterion_args=(-- --warm-up-time 0.5 --measurement-time 2 --sample-size 50 --nresamples 20000)
run_kind=", full run (0.5 s warm-up, 2 s measurement, 50 samples per benchmark)"
if [[ -n ${BENCH_QUICK:-} ]]; then
  criterion_args=(-- --warm-up-time 0.1 --measurement-time 0.3 --sample-size 10)
  run_kind=", **quick trial run** (BENCH_QUICK=1: 0.1 s warm-up, 0.3 s measurement, 10 samples; the timings are rough)"
fi
log "criterion: every suite${BENCH_QUICK:+ (quick)}"
: >"$work/criterion.json"
for suite in "${table_suites[@]}"; do
  cargo criterion -p arena-pool-benches --bench "$suite" --message-format=json \
    --plotting-backend disabled "${criterion_args[@]}" 2>>"$work/criterion.log" \
    >>"$work/criterion.json" || { tail -30 "$work/criterion.log" >&2; exit 1; }
  log "criterion: $suite done"
done
# The rows where no arena-pool column is the fastest are timed twice more (their arena-pool cells
# and the cells faster than those), each run in processes of its own (one per suite), and each of
# those cells is the median of the three runs
# (benches/src/bin/timings.rs): a single run's wall-clock time of a row can differ by tens of
# percent from another's at equal instruction counts.
timings() {
  cargo run --profile bench --quiet -p arena-pool-benches --bin timings -- "$@"
}
timings rows --prefix arena-pool "$work/criterion.json" >"$work/rerun-rows"
timings filters --prefix arena-pool "$work/criterion.json" >"$work/rerun-filters"
log "criterion: $(wc -l <"$work/rerun-rows") rows where arena-pool is not the fastest, timed twice more"
for run in 2 3; do
  : >"$work/criterion-$run.json"
  while IFS=$'\t' read -r suite filter; do
    cargo criterion -p arena-pool-benches --bench "$suite" --message-format=json \
      --plotting-backend disabled "${criterion_args[@]}" "$filter" 2>>"$work/criterion.log" \
      >>"$work/criterion-$run.json" || { tail -30 "$work/criterion.log" >&2; exit 1; }
  done <"$work/rerun-filters"
  log "criterion: run $run of those rows done"
done
timings median "$work/criterion.json" "$work/criterion-2.json" "$work/criterion-3.json" \
  >"$work/criterion-median.json" 2>"$work/median.log" || { cat "$work/median.log" >&2; exit 1; }
log "criterion: $(cat "$work/median.log")"
mv "$work/criterion-median.json" "$work/criterion.json"
# criterion-table reads tables.toml (headings, comments) from the current directory.
(cd benches && criterion-table <"$work/criterion.json" >"$work/tables.md" 2>"$work/table.err")
if [[ -s $work/table.err ]] || ! grep -q '^### ' "$work/tables.md"; then
  cat "$work/table.err" >&2
  exit 1
fi

# The threads suite (threads_pass above).
: >"$work/threads.json"
: >"$work/threads.md"
if [[ -n $threads_suite ]]; then
  threads_pass "$(bin_of threads)"
fi

# ---- 2. instruction counts ----
# One callgrind process per suite and crate. Each case of the process writes one profile part
# when it leaves the measured function; the binary prints the case ids in the same order.
count() { # suite crate index
  local bin dir
  bin=$(bin_of "$1")
  dir=$work/cg/$1-$3
  mkdir -p "$dir"
  # An environment of the same size for every run: the stack then starts at the same address,
  # and a copy to or from a stack buffer costs the same instructions whatever the crate's name.
  local filter="$1/$2/" pad
  pad=$(printf '%*s' $((128 - ${#filter})) '' | tr ' ' x)
  env -i BENCH_COUNT="$filter" BENCH_PAD="$pad" valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect=arena_pool_bench_measured --toggle-collect=arena_pool_bench_measured_worker \
    --dump-after=arena_pool_bench_measured \
    --callgrind-out-file="$dir/cg.out" "$bin" >"$dir/ids" 2>"$dir/valgrind.log" \
    || { echo "callgrind failed for $1/$2" >&2; tail "$dir/valgrind.log" >&2; return 1; }
  local k=0 id ops ir
  while IFS=$'\t' read -r id ops; do
    k=$((k + 1))
    ir=$(sed -n 's/^totals: *//p' "$dir/cg.out.$k")
    [[ -n $ir ]] || { echo "no profile part $k for $id" >&2; return 1; }
    printf '%s\t%s\t%s\n' "$id" "$ops" "$ir"
  done <"$dir/ids" >"$dir/counts"
}
log "callgrind: every case of every crate, $jobs at a time (the threads suite aside)"
pids=()
for suite in "${table_suites[@]}"; do
  i=0
  while IFS= read -r krate; do
    i=$((i + 1))
    echo "$work/cg/$suite-$i/counts" >>"$work/order"
    count "$suite" "$krate" "$i" &
    pids+=($!)
    if ((${#pids[@]} >= jobs)); then
      wait "${pids[0]}"
      pids=("${pids[@]:1}")
    fi
  done < <(BENCH_COUNT=list "$(bin_of "$suite")" | cut -f1 | cut -d/ -f2 | awk '!seen[$0]++')
done
for pid in "${pids[@]}"; do wait "$pid"; done
# In registration order: suite by suite, and within a suite crate by crate (the table below
# takes rows and columns in order of first appearance).
while IFS= read -r f; do cat "$f"; done <"$work/order" >"$work/counts.tsv"
log "callgrind: $(wc -l <"$work/counts.tsv") cases counted"

# ---- 3. memory (see memory_pass above) ----
memory_pass

# ---- 4. charts ----
cat "$work/criterion.json" "$work/threads.json" >"$work/criterion-all.json"
draw_charts '*.svg' --criterion "$work/criterion-all.json" --counts "$work/counts.tsv" \
  --memory "$work/memory.tsv"
# The charts section of the report: the workloads' charts shown, every suite's linked.
charts_md() {
  local rel=${charts_dir#"$root"/} suite kind
  echo "## Charts"
  echo
  echo "Each crate's figure relative to the best crate of each row (1.0x: the best; shorter is"
  echo "better), drawn by \`benches/src/bin/charts/\` from the data of the tables below (SVG files"
  echo "in \`$rel\`)."
  echo
  if [[ -f $charts_dir/workloads-time.svg ]]; then
    for kind in time instructions memory; do
      [[ -f $charts_dir/workloads-$kind.svg ]] \
        && echo "![workloads: $kind]($rel/workloads-$kind.svg)" && echo
    done
  fi
  for suite in "${suites[@]}"; do
    printf -- '- **%s**:' "$suite"
    for kind in time instructions memory; do
      [[ -f $charts_dir/$suite-$kind.svg ]] && printf ' [%s](%s/%s-%s.svg)' "$kind" "$rel" "$suite" "$kind"
    done
    echo
  done
  echo
}

# ---- assemble ----
# Timing cells: criterion-table compares each crate with the first column; recompute each cell's
# ratio against the fastest crate of its row (bold), from the times it printed.
fastest_awk='
function ps(v, u) {
  return v * (u == "s" ? 1e12 : u == "ms" ? 1e9 : u == "us" ? 1e6 : u == "ns" ? 1e3 : 1)
}
/^## Table of Contents/ { toc = 1 }
toc && /^$/ && seen_entry {
  if (threads) print "- [Threads](#threads)"
  print "- [Charts](#charts)"
  print "- [Instructions per operation](#instructions-per-operation)"
  print "- [Memory use](#memory-use)"
  print "- [Machine, toolchain and versions](#machine-toolchain-and-versions)"
  toc = 0
}
toc && /^- / { seen_entry = 1 }
BEGIN {
  while ((getline l <rerun_rows) > 0) {
    split(l, f, "\t")
    rerun[f[1], f[2]] = 1
  }
}
/^### / { suite = substr($0, 5) }
/^---$/ || /^Made with \[criterion-table\]/ { next }
/^\| \*\*`/ {
  n = split($0, c, "|")
  # A row timed three times says so after its name.
  if (match(c[2], /`[^`]*`/) && ((suite, substr(c[2], RSTART + 1, RLENGTH - 2)) in rerun))
    sub(/`\*\*/, "`** (median of 3)", c[2])
  min = -1
  for (i = 3; i < n; i++) {
    v[i] = -1
    if (match(c[i], /`[0-9.]+ (s|ms|us|ns|ps)`/)) {
      t[i] = substr(c[i], RSTART + 1, RLENGTH - 2)
      split(t[i], p, " ")
      v[i] = ps(p[1], p[2])
      if (min < 0 || v[i] < min) min = v[i]
    }
  }
  line = "|" c[2]
  for (i = 3; i < n; i++) {
    if (v[i] < 0) cell = " `N/A` "
    else if (v[i] == min) cell = sprintf(" **`%s`** (**1.00x**) ", t[i])
    else cell = sprintf(" `%s` (%.2fx) ", t[i], v[i] / min)
    line = line "|" cell
  }
  print line "|"
  next
}
{ print }
'

# Instruction table: one table per suite, rows = cases, columns = crates, each cell the
# instructions per operation and the ratio to the lowest of the row (bold).
counts_awk='
function fmt(x) { return x < 10 ? sprintf("%.2f", x) : x < 1000 ? sprintf("%.1f", x) : sprintf("%.0f", x) }
BEGIN { FS = "\t" }
{
  split($1, id, "/")
  s = id[1]; k = id[2]; r = substr($1, length(s) + length(k) + 3)
  if (!(s in ns)) { suite[++nsuite] = s; ns[s] = 1 }
  if (!((s, k) in colseen)) { colseen[s, k] = 1; col[s, ++ncol[s]] = k }
  if (!((s, r) in rowseen)) { rowseen[s, r] = 1; row[s, ++nrow[s]] = r }
  val[s, r, k] = $3 / $2
}
END {
  for (a = 1; a <= nsuite; a++) {
    s = suite[a]
    printf "### %s\n\n| |", s
    for (j = 1; j <= ncol[s]; j++) printf " `%s` |", col[s, j]
    printf "\n|:--|"
    for (j = 1; j <= ncol[s]; j++) printf "--:|"
    printf "\n"
    for (i = 1; i <= nrow[s]; i++) {
      r = row[s, i]; min = -1
      for (j = 1; j <= ncol[s]; j++)
        if (((s, r, col[s, j]) in val) && (min < 0 || val[s, r, col[s, j]] < min)) min = val[s, r, col[s, j]]
      printf "| **`%s`** |", r
      for (j = 1; j <= ncol[s]; j++) {
        if (!((s, r, col[s, j]) in val)) { printf " N/A |"; continue }
        x = val[s, r, col[s, j]]
        if (x == min) printf " **%s** (**1.00x**) |", fmt(x)
        else printf " %s (%.2fx) |", fmt(x), (min > 0 ? x / min : 0)
      }
      printf "\n"
    }
    printf "\n"
  }
}
'

malloc_line=$(grep -o 'set(M_[A-Z_]*, [^)]*)' benches/src/lib.rs | paste -sd';' - | sed 's/;/; /g' \
  || echo "(see fix_malloc_thresholds)")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
{
  awk -v rerun_rows="$work/rerun-rows" -v threads="$threads_suite" "$fastest_awk" "$work/tables.md"
  cat "$work/threads.md"
  charts_md
  cat <<EOF
## Instructions per operation

Instructions executed (callgrind's \`Ir\`) per operation, exact and repeatable: each case runs
twice unmeasured, then (about 100 000 operations' worth of) measured repetitions inside the
suites' measured function, the only code callgrind counts (\`BENCH_COUNT=<suite>/<crate>/ valgrind
--tool=callgrind --collect-atstart=no --toggle-collect=arena_pool_bench_measured
--toggle-collect=arena_pool_bench_measured_worker --dump-after=arena_pool_bench_measured <suite
binary>\`, in an environment of the same size for every crate, so that stack buffers have the same
alignment; callgrind counts per thread, so the thread rows' workers run inside the second
function, and their counts include spawning and joining the threads and, with 2 threads, waiting
on locks as callgrind runs one thread at a time). The count includes everything the case
does, the crate's reset at the end of each iteration and the loop around the calls included; it
is divided by the case's operations (the calls, pushes, inserts, nodes, strings, blocks or
replacements its name counts; a first allocation or a reset counts one; in the memory suite a
buffer, a 4 KiB step of the scoped vector, a block of the reset loops; in the workloads suite a
token, a line parsed, an edge of the graph, or of each frame's graph in the churn case; there a
repetition holds 50 000 operations or more, so it runs once or twice). Each cell: instructions per operation and the
ratio to the lowest of the row (bold). Instruction counts ignore cache misses and branch
mispredictions, which the timings above include.

EOF
  awk "$counts_awk" "$work/counts.tsv"
  cat "$work/memory.md"
  cat <<EOF
## Machine, toolchain and versions

- Generated: $(date -u '+%Y-%m-%d %H:%M UTC')${run_kind}
- CPU: ${cpu:-unknown}; $(nproc) cores available (\`nproc\`); $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) of memory
- Kernel: $(uname -sr)
- $(valgrind --version), $(cargo criterion --version 2>/dev/null | head -1), criterion-table $(cargo install --list | sed -n 's/^criterion-table v\([^:]*\):/\1/p')
- Build: the \`bench\` profile (release settings) plus line tables, \`CARGO_PROFILE_BENCH_DEBUG=line-tables-only\`

\`rustc -vV\`:

\`\`\`text
$(rustc -vV)
\`\`\`

Crates measured (\`cargo tree -p arena-pool-benches -e normal --depth 1\`):

\`\`\`text
$(cargo tree -p arena-pool-benches -e normal --depth 1 --prefix none 2>/dev/null | sed 's/ (\/.*//' | sort -u)
\`\`\`

**malloc.** Every suite binary starts by fixing glibc malloc's thresholds with \`mallopt\`
(\`fix_malloc_thresholds\` in \`benches/src/lib.rs\`: \`${malloc_line}\`): blocks up to 32 MiB
come from the heap instead of fresh \`mmap\`s, and freed memory is not returned to the system.
With glibc's default, *dynamic* mmap threshold, whichever crate ran first paid page faults on
every large chunk and raised the threshold for the crates after it; fixed thresholds make each
crate's numbers independent of the order of the runs. The system allocator's columns are glibc
malloc with these settings. The \`mimalloc\` columns (pools, workloads, threads) are the mimalloc
crate's bundled library used as an allocator instance, with its default options; these settings
do not reach it.

---
Timing tables made with [criterion-table](https://github.com/nu11ptr/criterion-table).
EOF
} >"$out"
log "wrote $out"
