//! Peak memory of many small blocks on a fresh arena, over a sweep of block counts: what a bump
//! crate's chunk growth costs on average, rather than at the one count a row of the memory tables
//! happens to use. Needs the `meter` feature (its counting global allocator):
//!
//! ```text
//! cargo run --profile bench -p arena-pool-benches --features meter --bin memory_sweep
//! ```
//!
//! For each block size, and each count `n` of a geometric sweep ([`COUNTS`] counts from
//! [`FIRST`] to [`LAST`]), each crate allocates `n` blocks on a fresh allocator through its
//! allocator-api2 `Allocator` impl, then drops the allocator. Its peak is the highest number of
//! bytes it held from the global allocator meanwhile; the data is `n` times the block size. The
//! binary prints a markdown table: per block size and crate, the geometric mean over the sweep of
//! peak / data, the largest peak / data, and on how many counts the crate held the least (ties
//! count for each crate tied). A chunked arena's peak is a step function of `n` (a new chunk at
//! each threshold), so a single count can land just below one crate's threshold and just above
//! another's; the sweep averages that out.

use std::hint::black_box;
use std::process::ExitCode;

use arena_pool_benches::{BenchAlloc, Layout, meter};

/// The first and last block counts of the sweep, and how many counts it has (a geometric series).
const FIRST: usize = 1_000;
const LAST: usize = 100_000;
const COUNTS: usize = 60;

/// The block layouts swept: (label, size, alignment).
const BLOCKS: [(&str, usize, usize); 4] = [
    ("8 B (u64)", 8, 8),
    ("13 B, align 1", 13, 1),
    ("24 B, align 8", 24, 8),
    ("64 B, align 8", 64, 8),
];

/// One crate's figures over the sweep for one block layout.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Summary {
    /// The geometric mean of peak / data.
    geometric_mean: f64,
    /// The largest peak / data.
    worst: f64,
    /// On how many counts this crate's peak was the lowest (ties count for each).
    lowest: usize,
}

fn main() -> ExitCode {
    if !meter::INSTALLED {
        eprintln!("memory_sweep: build it with `--features meter` (the counting global allocator)");
        return ExitCode::from(2);
    }
    let counts = sweep_counts(FIRST, LAST, COUNTS);
    let names = [
        <arena_pool::Arena as BenchAlloc>::NAME,
        <bumpalo::Bump as BenchAlloc>::NAME,
        <bump_scope::Bump as BenchAlloc>::NAME,
        <blink_alloc::Blink as BenchAlloc>::NAME,
        <stumpalo::Arena as BenchAlloc>::NAME,
    ];
    let mut rows = Vec::new();
    for (label, size, align) in BLOCKS {
        let layout = Layout::from_size_align(size, align).expect("a valid layout");
        let peaks: Vec<[u64; 5]> = counts
            .iter()
            .map(|&n| {
                [
                    peak_of::<arena_pool::Arena>(layout, n),
                    peak_of::<bumpalo::Bump>(layout, n),
                    peak_of::<bump_scope::Bump>(layout, n),
                    peak_of::<blink_alloc::Blink>(layout, n),
                    peak_of::<stumpalo::Arena>(layout, n),
                ]
            })
            .collect();
        let data: Vec<u64> = counts.iter().map(|&n| (n * size) as u64).collect();
        rows.push((label, summarize(&peaks, &data)));
    }
    print!("{}", markdown(&names, &rows));
    ExitCode::SUCCESS
}

/// `len` counts from `first` to `last` (both included), each about the same factor above the
/// one before, rounded to whole numbers.
fn sweep_counts(first: usize, last: usize, len: usize) -> Vec<usize> {
    assert!(len >= 2 && first >= 1 && last > first);
    let factor = (last as f64 / first as f64).powf(1.0 / (len - 1) as f64);
    (0..len)
        .map(|i| (first as f64 * factor.powi(i as i32)).round() as usize)
        .collect()
}

/// The peak bytes `A` holds from the global allocator while a fresh `A` takes `n` blocks of
/// `layout` (the allocator dropped at the end, its blocks with it).
fn peak_of<A: BenchAlloc>(layout: Layout, n: usize) -> u64 {
    let before = meter::counts().held;
    meter::reset_peak();
    {
        let a = A::new();
        for _ in 0..n {
            black_box(a.allocate(black_box(layout)).expect("out of memory"));
        }
    }
    let peak = meter::peak() - before;
    assert_eq!(
        meter::counts().held,
        before,
        "{} kept memory after its drop",
        A::NAME
    );
    peak as u64
}

/// Per crate (the columns of `peaks`), its figures over the rows of `peaks` (one per count,
/// whose data bytes `data` gives).
fn summarize<const N: usize>(peaks: &[[u64; N]], data: &[u64]) -> [Summary; N] {
    assert_eq!(peaks.len(), data.len());
    let mut log_sum = [0.0f64; N];
    let mut summaries = [Summary {
        geometric_mean: 0.0,
        worst: 0.0,
        lowest: 0,
    }; N];
    for (row, &bytes) in peaks.iter().zip(data) {
        let least = row.iter().copied().min().unwrap_or(0);
        for (k, &peak) in row.iter().enumerate() {
            let ratio = peak as f64 / bytes as f64;
            log_sum[k] += ratio.ln();
            summaries[k].worst = summaries[k].worst.max(ratio);
            if peak == least {
                summaries[k].lowest += 1;
            }
        }
    }
    for (summary, sum) in summaries.iter_mut().zip(log_sum) {
        summary.geometric_mean = (sum / peaks.len() as f64).exp();
    }
    summaries
}

/// The markdown table: a row per block layout, a column per crate; each cell the geometric mean
/// (bold where it is the lowest of the row), the worst ratio, and the counts where it was lowest.
fn markdown<const N: usize>(names: &[&str; N], rows: &[(&str, [Summary; N])]) -> String {
    let mut out = format!(
        "**Size sweep** ({COUNTS} block counts from {FIRST} to {LAST}, each about {:.1}% above \
         the one before; `benches/src/bin/memory_sweep.rs`): peak bytes held over the data's bytes, \
         the geometric mean over the sweep, then the largest, then on how many of the {COUNTS} \
         counts the crate held the least.\n\n| |",
        (sweep_counts(FIRST, LAST, COUNTS)[1] as f64 / FIRST as f64 - 1.0) * 100.0
    );
    for name in names {
        out.push_str(&format!(" `{name}` |"));
    }
    out.push_str("\n|:--|");
    out.push_str(&"--:|".repeat(N));
    out.push('\n');
    for (label, summaries) in rows {
        let best = summaries
            .iter()
            .map(|s| s.geometric_mean)
            .fold(f64::INFINITY, f64::min);
        out.push_str(&format!("| **{label}** |"));
        for s in summaries {
            let mean = format!("{:.2}x", s.geometric_mean);
            let mean = if s.geometric_mean == best {
                format!("**{mean}**")
            } else {
                mean
            };
            out.push_str(&format!(
                " {mean} (worst {:.2}x, least on {}) |",
                s.worst, s.lowest
            ));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_is_geometric_and_ends_where_asked() {
        let counts = sweep_counts(1_000, 100_000, 60);
        assert_eq!(counts.len(), 60);
        assert_eq!((counts[0], counts[59]), (1_000, 100_000));
        assert!(counts.windows(2).all(|w| w[1] > w[0]));
        assert_eq!(sweep_counts(10, 40, 3), [10, 20, 40]);
    }

    #[test]
    fn summaries_average_in_logs_and_count_ties() {
        // Two counts of 100 data bytes: crate 0 holds 100 then 400, crate 1 200 twice.
        let s = summarize(&[[100, 200], [400, 200]], &[100, 100]);
        assert!((s[0].geometric_mean - 2.0).abs() < 1e-12);
        assert!((s[1].geometric_mean - 2.0).abs() < 1e-12);
        assert_eq!((s[0].worst, s[1].worst), (4.0, 2.0));
        assert_eq!((s[0].lowest, s[1].lowest), (1, 1));
        let tie = summarize(&[[5, 5]], &[5]);
        assert_eq!((tie[0].lowest, tie[1].lowest), (1, 1));
    }

    #[test]
    fn the_table_marks_the_lowest_mean() {
        let s = summarize(&[[100, 300]], &[100]);
        let table = markdown(&["a", "b"], &[("8 B", s)]);
        assert!(table.contains(
            "| **8 B** | **1.00x** (worst 1.00x, least on 1) | 3.00x (worst 3.00x, least on 0) |"
        ));
        assert!(table.contains("| | `a` | `b` |"));
    }
}
