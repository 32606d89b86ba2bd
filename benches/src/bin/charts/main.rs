//! Draws SVG bar charts of the benchmark results that `benches/report.sh` collects.
//!
//! ```text
//! charts [--criterion FILE] [--counts FILE] [--memory FILE] --out DIR [--cap RATIO]
//! ```
//!
//! - `--criterion`: cargo-criterion's `--message-format=json` output; one chart per suite,
//!   `DIR/<suite>-time.svg`, from each `benchmark-complete` message's typical estimate.
//! - `--counts`: lines `<id>\t<operations>\t<instructions>`; one chart per suite,
//!   `DIR/<suite>-instructions.svg`, of the instructions per operation.
//! - `--memory`: the suites' memory-mode lines (`<id>\t<peak>\t...`, twelve fields or the first
//!   nine: see `benches/src/harness.rs`); one chart per suite, `DIR/<suite>-memory.svg`, of the
//!   peak bytes (counted from before each case's allocator was built).
//!
//! An id is `<suite>/<crate>/<case>`, split on its first two `/` only. In every chart each case is
//! a group of horizontal bars, one per crate that has a result for it, each bar the crate's value
//! divided by the lowest of the group (1.0 = the fastest or smallest). The axis runs from 0 to the
//! cap (3 by default); a longer bar stops at the cap and its label gives the ratio. Cases and
//! crates keep their order of first appearance, and a crate has the same colour in every chart.
//! The SVG backend writes text as SVG text: no font files are read.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use plotters::prelude::*;

use arena_pool_benches::report_data::{Id, parse_criterion_line, parse_memory_line, split_id};

mod draw;

use draw::draw_chart;

/// The usage text, printed for `--help` and after a usage error.
const USAGE: &str =
    "usage: charts [--criterion FILE] [--counts FILE] [--memory FILE] --out DIR [--cap RATIO]
  --criterion FILE  cargo-criterion --message-format=json output: DIR/<suite>-time.svg
  --counts FILE     <id>\\t<operations>\\t<instructions> lines: DIR/<suite>-instructions.svg
  --memory FILE     memory-mode lines (<id>\\t<peak bytes>\\t...): DIR/<suite>-memory.svg
  --out DIR         where to write the charts (created if missing)
  --cap RATIO       where the ratio axis ends (default 3; longer bars are cut and labelled)";

/// The default end of the ratio axis.
const DEFAULT_CAP: f64 = 3.0;

/// Font family of every text (the SVG viewer picks the font).
const FONT: &str = "sans-serif";
/// Font sizes, in plotters' units (the SVG backend writes `size / 1.24` pixels).
const TITLE_SIZE: f64 = 22.0;
const LABEL_SIZE: f64 = 15.0;
const BAR_LABEL_SIZE: f64 = 13.0;
const NOTE_SIZE: f64 = 13.0;
const AXIS_SIZE: f64 = 14.0;

/// Outer margin of the image, in pixels.
const MARGIN: i32 = 16;
/// Height of a bar, and the distance from one bar's top to the next one's.
const BAR_HEIGHT: i32 = 14;
const BAR_STEP: i32 = 18;
/// Space between two groups of bars (and above the first, below the last).
const GROUP_GAP: i32 = 14;
/// Distance between two lines of a case label.
const LABEL_LINE_STEP: i32 = 16;
/// Case labels are wrapped at this many characters, on at most this many lines.
const LABEL_CHARS: usize = 44;
const LABEL_LINES: usize = 2;
/// Width of the ratio axis, from 0 to the cap.
const PLOT_WIDTH: i32 = 640;
/// Heights of the axis label areas above and below the bars.
const TOP_AXIS_HEIGHT: i32 = 28;
const BOTTOM_AXIS_HEIGHT: i32 = 50;
/// Height of the title line, of a legend row and of a footnote line.
const TITLE_HEIGHT: i32 = 32;
const LEGEND_ROW_HEIGHT: i32 = 22;
const NOTE_HEIGHT: i32 = 18;

/// Colours given to the crates in their order of first appearance (over all the inputs): one for
/// each of the 17 crates the suites measure, and one to spare.
const PALETTE: [(u8, u8, u8); 18] = [
    (78, 121, 167),
    (242, 142, 43),
    (225, 87, 89),
    (118, 183, 178),
    (89, 161, 79),
    (237, 201, 72),
    (176, 122, 161),
    (255, 157, 167),
    (156, 117, 95),
    (186, 176, 172),
    (23, 190, 207),
    (188, 189, 34),
    (40, 40, 120),
    (200, 50, 170),
    (60, 60, 60),
    (150, 220, 80),
    (140, 90, 40),
    (0, 130, 110),
];

/// Text colours.
const TEXT: RGBColor = RGBColor(30, 30, 30);
const GREY_TEXT: RGBColor = RGBColor(120, 120, 120);
/// Background of every other group of bars.
const STRIPE: RGBColor = RGBColor(244, 244, 246);

/// A failure of the program: a usage error (exit code 2) or any other error (exit code 1).
#[derive(Debug)]
enum Failure {
    Usage(String),
    Error(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Error(message)
    }
}

/// The command-line options.
#[derive(Debug, Default)]
struct Options {
    criterion: Option<PathBuf>,
    counts: Option<PathBuf>,
    memory: Option<PathBuf>,
    out: Option<PathBuf>,
    cap: Option<f64>,
    help: bool,
}

/// What a chart shows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Metric {
    Time,
    Instructions,
    Memory,
}

impl Metric {
    /// The end of the chart's file name: `<suite>-<suffix>.svg`.
    fn suffix(self) -> &'static str {
        match self {
            Metric::Time => "time",
            Metric::Instructions => "instructions",
            Metric::Memory => "memory",
        }
    }

    /// The chart's title.
    fn title(self, suite: &str) -> String {
        match self {
            Metric::Time => {
                format!("{suite}: time relative to the fastest crate per row (shorter is better)")
            }
            Metric::Instructions => format!(
                "{suite}: instructions per operation relative to the lowest crate per row (shorter is better)"
            ),
            Metric::Memory => {
                format!(
                    "{suite}: peak bytes relative to the lowest crate per row (shorter is better)"
                )
            }
        }
    }

    /// The description under the ratio axis.
    fn axis_description(self) -> &'static str {
        match self {
            Metric::Time => "time / the fastest time of the row",
            Metric::Instructions => "instructions per operation / the lowest of the row",
            Metric::Memory => "peak bytes / the lowest peak of the row",
        }
    }

    /// The footnote that says what a bar and its label are.
    fn note(self) -> &'static str {
        match self {
            Metric::Time => {
                "Each bar: the crate's time (cargo-criterion's typical estimate) divided by the fastest crate's time in its row; its label: that ratio and the time."
            }
            Metric::Instructions => {
                "Each bar: the crate's instructions per operation (callgrind's Ir / operations) divided by the lowest of its row; its label: that ratio and the count."
            }
            Metric::Memory => {
                "Each bar: the crate's peak bytes held (from before its allocator was built) divided by the lowest peak of its row; its label: that ratio and the peak."
            }
        }
    }

    /// A value in the metric's unit (nanoseconds, instructions per operation, bytes), for a label.
    fn format_value(self, value: f64) -> String {
        match self {
            Metric::Time => format_time(value),
            Metric::Instructions => format!("{} instr/op", format_count(value)),
            Metric::Memory => format_bytes(value),
        }
    }
}

/// One suite's values for one metric: crates and cases in order of first appearance.
#[derive(Debug, Default)]
struct Suite {
    name: String,
    crates: Vec<String>,
    cases: Vec<String>,
    /// The value of each (case index, crate index) that has one.
    values: HashMap<(usize, usize), f64>,
}

/// Every suite of one input, in order of first appearance.
#[derive(Debug)]
struct Dataset {
    metric: Metric,
    suites: Vec<Suite>,
}

/// One group of bars as drawn: a case and its crates' values.
#[derive(Debug)]
struct Group {
    /// The case name, wrapped (and cut if too long).
    lines: Vec<String>,
    /// (crate index in the suite, value), in the suite's crate order.
    cells: Vec<(usize, f64)>,
    /// The lowest value of the row; `None` if it is not above 0 (no ratio can be drawn).
    reference: Option<f64>,
    /// Offset of the group's top from the top of the plotting area, and its height, in pixels.
    top: i32,
    height: i32,
}

/// Where the parts of a chart go, in pixels.
#[derive(Debug)]
struct Layout {
    width: i32,
    height: i32,
    /// Width of the case labels' area, left of the bars.
    label_width: i32,
    /// Room right of the axis' end for the labels of the longest bars.
    right_width: i32,
    /// Height of the plotting area (every group and the gaps around them).
    plot_height: i32,
    /// Crate indices of each legend row.
    legend_rows: Vec<Vec<usize>>,
    /// Footnotes printed under the chart.
    notes: Vec<String>,
}

/// Runs the program: exit code 0, 1 on an error, 2 on a usage error.
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("charts: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Error(message)) => {
            eprintln!("charts: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Reads the inputs named in `args` and writes their charts.
fn run(args: &[String]) -> Result<(), Failure> {
    let options = parse_args(args)?;
    if options.help {
        println!("{USAGE}");
        return Ok(());
    }
    let out = options
        .out
        .clone()
        .ok_or_else(|| Failure::Usage("--out DIR is required".into()))?;
    let cap = options.cap.unwrap_or(DEFAULT_CAP);
    let inputs = [
        (Metric::Time, &options.criterion),
        (Metric::Instructions, &options.counts),
        (Metric::Memory, &options.memory),
    ];
    if inputs.iter().all(|(_, path)| path.is_none()) {
        return Err(Failure::Usage(
            "no input: give --criterion, --counts or --memory".into(),
        ));
    }
    let mut datasets = Vec::new();
    for (metric, path) in inputs {
        if let Some(path) = path {
            let dataset = load(metric, path)?;
            if dataset.suites.is_empty() {
                eprintln!(
                    "charts: note: no results in {}: no {} chart",
                    path.display(),
                    metric.suffix()
                );
            }
            datasets.push(dataset);
        }
    }
    let colors = assign_colors(&datasets);
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    for dataset in &datasets {
        for suite in &dataset.suites {
            let path = out.join(format!("{}-{}.svg", suite.name, dataset.metric.suffix()));
            draw_chart(suite, dataset.metric, &colors, cap, &path)?;
            println!("{}", path.display());
        }
    }
    Ok(())
}

/// Parses the command line (`--name VALUE` or `--name=VALUE`).
fn parse_args(args: &[String]) -> Result<Options, Failure> {
    let mut options = Options::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "-h" || arg == "--help" {
            options.help = true;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| rest.next().cloned())
                .ok_or_else(|| Failure::Usage(format!("{name} needs a value")))
        };
        match name {
            "--criterion" => options.criterion = Some(value()?.into()),
            "--counts" => options.counts = Some(value()?.into()),
            "--memory" => options.memory = Some(value()?.into()),
            "--out" => options.out = Some(value()?.into()),
            "--cap" => options.cap = Some(parse_cap(&value()?)?),
            _ => return Err(Failure::Usage(format!("unknown argument '{arg}'"))),
        }
    }
    Ok(options)
}

/// Parses `--cap`'s value: a finite number above 1.
fn parse_cap(text: &str) -> Result<f64, Failure> {
    match text.parse::<f64>() {
        Ok(cap) if cap.is_finite() && cap > 1.0 => Ok(cap),
        _ => Err(Failure::Usage(format!(
            "--cap needs a number above 1, not '{text}'"
        ))),
    }
}

/// Reads one input file and parses it for `metric`.
fn load(metric: Metric, path: &Path) -> Result<Dataset, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let parse_line = match metric {
        Metric::Time => parse_criterion_line,
        Metric::Instructions => parse_counts_line,
        Metric::Memory => parse_memory_peak,
    };
    parse_lines(metric, &text, parse_line).map_err(|e| format!("{}:{e}", path.display()))
}

/// What a line parser gives: an id and its value, nothing for a line to skip, or an error.
type ParsedLine = Result<Option<(String, f64)>, String>;

/// Parses every non-blank line of `text` with `parse_line` (which gives an id and a value, or
/// nothing for a line to skip) into a dataset. An error names its line: `<line>: <message>`.
fn parse_lines(
    metric: Metric,
    text: &str,
    parse_line: fn(&str) -> ParsedLine,
) -> Result<Dataset, String> {
    let mut dataset = Dataset {
        metric,
        suites: Vec::new(),
    };
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let number = index + 1;
        let Some((id, value)) = parse_line(line).map_err(|e| format!("{number}: {e}"))? else {
            continue;
        };
        let id = split_id(&id).map_err(|e| format!("{number}: {e}"))?;
        if insert(&mut dataset.suites, &id, value) {
            eprintln!(
                "charts: note: line {number}: a second result for '{}/{}/{}' replaces the first",
                id.suite, id.krate, id.case
            );
        }
    }
    Ok(dataset)
}

/// Records `value` for `id`, adding the suite, crate and case where first seen. Returns whether
/// it replaced a value already recorded for the same id.
fn insert(suites: &mut Vec<Suite>, id: &Id<'_>, value: f64) -> bool {
    let suite = match suites.iter().position(|s| s.name == id.suite) {
        Some(index) => &mut suites[index],
        None => {
            suites.push(Suite {
                name: id.suite.to_string(),
                ..Suite::default()
            });
            suites.last_mut().expect("just pushed")
        }
    };
    let krate = index_of(&mut suite.crates, id.krate);
    let case = index_of(&mut suite.cases, id.case);
    suite.values.insert((case, krate), value).is_some()
}

/// The index of `name` in `names`, appending it if it is not there.
fn index_of(names: &mut Vec<String>, name: &str) -> usize {
    names.iter().position(|n| n == name).unwrap_or_else(|| {
        names.push(name.to_string());
        names.len() - 1
    })
}

/// Parses a line `<id>\t<operations>\t<instructions>`: the id and instructions per operation.
fn parse_counts_line(line: &str) -> ParsedLine {
    let fields = tab_fields(line, 3)?;
    let operations = parse_integer(fields[1], "operations")?;
    let instructions = parse_integer(fields[2], "instructions")?;
    if operations == 0 {
        return Err("0 operations".into());
    }
    Ok(Some((
        fields[0].to_string(),
        instructions as f64 / operations as f64,
    )))
}

/// Parses a memory-mode line (see [`parse_memory_line`]): the id and the case's peak bytes,
/// counted from before its allocator was built (for a reuse loop, over all its cycles).
fn parse_memory_peak(line: &str) -> ParsedLine {
    let line = parse_memory_line(line)?;
    Ok(Some((line.id, line.peak as f64)))
}

/// Splits a line on tabs into exactly `count` fields.
fn tab_fields(line: &str, count: usize) -> Result<Vec<&str>, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() == count {
        Ok(fields)
    } else {
        Err(format!(
            "{} tab-separated fields, expected {count}",
            fields.len()
        ))
    }
}

/// Parses an unsigned integer field named `name`.
fn parse_integer(field: &str, name: &str) -> Result<u64, String> {
    field
        .parse()
        .map_err(|_| format!("{name} '{field}' is not an unsigned integer"))
}

/// Gives each crate a colour, in order of first appearance over all datasets (so a crate has the
/// same colour in every chart of one run). The palette repeats past its 18 colours.
fn assign_colors(datasets: &[Dataset]) -> HashMap<String, RGBColor> {
    let mut colors = HashMap::new();
    for krate in datasets
        .iter()
        .flat_map(|d| &d.suites)
        .flat_map(|s| &s.crates)
    {
        let next = colors.len() % PALETTE.len();
        colors.entry(krate.clone()).or_insert_with(|| {
            let (r, g, b) = PALETTE[next];
            RGBColor(r, g, b)
        });
    }
    colors
}

/// The groups of bars of a suite, in case order, stacked from the top of the plotting area.
fn groups(suite: &Suite) -> Vec<Group> {
    let mut top = GROUP_GAP;
    let mut groups = Vec::with_capacity(suite.cases.len());
    for (case_index, case) in suite.cases.iter().enumerate() {
        let cells: Vec<(usize, f64)> = (0..suite.crates.len())
            .filter_map(|k| suite.values.get(&(case_index, k)).map(|&v| (k, v)))
            .collect();
        if cells.is_empty() {
            continue;
        }
        let lowest = cells.iter().map(|&(_, v)| v).fold(f64::INFINITY, f64::min);
        let lines = wrap_label(case, LABEL_CHARS, LABEL_LINES);
        let height = (cells.len() as i32 * BAR_STEP).max(lines.len() as i32 * LABEL_LINE_STEP);
        groups.push(Group {
            lines,
            cells,
            reference: (lowest > 0.0).then_some(lowest),
            top,
            height,
        });
        top += height + GROUP_GAP;
    }
    groups
}

/// Wraps `text` at spaces into lines of at most `width` characters (a longer word is split), on
/// at most `max_lines` lines: the last one ends with `…` where text was cut.
fn wrap_label(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if !current.is_empty() {
                lines.push(std::mem::take(&mut current));
            }
            lines.push(word.drain(..width).collect());
        }
        let word: String = word.into_iter().collect();
        if current.is_empty() {
            current = word;
        } else if current.chars().count() + 1 + word.chars().count() <= width {
            current.push(' ');
            current.push_str(&word);
        } else {
            lines.push(std::mem::replace(&mut current, word));
        }
    }
    if !current.is_empty() || lines.is_empty() {
        lines.push(current);
    }
    if lines.len() > max_lines {
        let rest = lines.split_off(max_lines - 1).join(" ");
        let kept: String = rest.chars().take(width.saturating_sub(1)).collect();
        lines.push(format!("{}…", kept.trim_end()));
    }
    lines
}

/// The estimated width in pixels of `text` at plotters font size `size` (an average glyph of a
/// sans-serif font is about 0.6 em wide; the SVG backend writes `size / 1.24` pixels).
fn text_width(text: &str, size: f64) -> i32 {
    (text.chars().count() as f64 * size / 1.24 * 0.6).ceil() as i32
}

/// A ratio for a label: `1.35x`, `12.3x`, `123x`.
fn format_ratio(ratio: f64) -> String {
    format!("{}x", format_significant(ratio))
}

/// A number with three or four significant digits: `1.23`, `12.3`, `123`, `1234`.
fn format_significant(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.2}")
    } else if value < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// A time in nanoseconds, in the unit that keeps it below 1000 (up to seconds).
fn format_time(nanoseconds: f64) -> String {
    let units = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6)];
    for (unit, scale) in units {
        if nanoseconds < scale * 1e3 {
            return format!("{} {unit}", format_significant(nanoseconds / scale));
        }
    }
    format!("{} s", format_significant(nanoseconds / 1e9))
}

/// A count such as instructions per operation: two decimals below 10, one below 1000.
fn format_count(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.2}")
    } else if value < 1000.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// A byte count: `512 B`, `12.5 KiB`, `3.25 MiB`, `1.50 GiB`.
fn format_bytes(bytes: f64) -> String {
    if bytes < 1024.0 {
        format!("{bytes:.0} B")
    } else if bytes < 1024.0 * 1024.0 {
        format!("{:.1} KiB", bytes / 1024.0)
    } else if bytes < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} MiB", bytes / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", bytes / (1024.0 * 1024.0 * 1024.0))
    }
}

/// An axis number without useless decimals: `1`, `1.5`, `2.25`.
fn format_axis_number(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The label of a bar (or, in a row without a ratio, of a value): the ratio and the value.
fn bar_label(metric: Metric, value: f64, reference: Option<f64>) -> String {
    match reference {
        Some(lowest) => format!(
            "{} · {}",
            format_ratio(value / lowest),
            metric.format_value(value)
        ),
        None => metric.format_value(value),
    }
}

/// Computes the chart's size and footnotes from its groups.
fn layout(suite: &Suite, metric: Metric, groups: &[Group], cap: f64) -> Layout {
    let label_width = groups
        .iter()
        .flat_map(|g| &g.lines)
        .map(|line| text_width(line, LABEL_SIZE))
        .max()
        .unwrap_or(0)
        .max(80)
        + 2 * MARGIN;
    let right_width = groups
        .iter()
        .flat_map(|g| g.cells.iter().map(move |&(_, v)| (v, g.reference)))
        .map(|(v, reference)| {
            // A bar's label starts at its end: only those near the cap reach past the axis.
            let end = reference.map_or(0.0, |lowest| (v / lowest).min(cap) / cap);
            let label = text_width(&bar_label(metric, v, reference), BAR_LABEL_SIZE) + 24;
            label - ((1.0 - end) * f64::from(PLOT_WIDTH)) as i32
        })
        .max()
        .unwrap_or(0)
        .max(MARGIN * 2);
    let notes = notes(suite, metric, groups, cap);
    let title_width = text_width(&metric.title(&suite.name), TITLE_SIZE);
    let notes_width = notes
        .iter()
        .map(|n| text_width(n, NOTE_SIZE))
        .max()
        .unwrap_or(0);
    let width = (MARGIN + label_width + PLOT_WIDTH + right_width)
        .max(title_width.max(notes_width) + 2 * MARGIN);
    let legend_rows = legend_rows(&suite.crates, width - 2 * MARGIN);
    let plot_height = groups.last().map_or(GROUP_GAP, |g| g.top + g.height) + GROUP_GAP;
    let height = header_height(legend_rows.len())
        + TOP_AXIS_HEIGHT
        + plot_height
        + BOTTOM_AXIS_HEIGHT
        + notes.len() as i32 * NOTE_HEIGHT
        + MARGIN;
    Layout {
        width,
        height,
        label_width,
        right_width,
        plot_height,
        legend_rows,
        notes,
    }
}

/// The height of the title and the legend above the chart.
fn header_height(legend_rows: usize) -> i32 {
    MARGIN + TITLE_HEIGHT + legend_rows as i32 * LEGEND_ROW_HEIGHT + 8
}

/// The footnotes of a chart: what the bars are, and the notes that apply to this one.
fn notes(suite: &Suite, metric: Metric, groups: &[Group], cap: f64) -> Vec<String> {
    let mut notes = vec![metric.note().to_string()];
    let over_cap = groups.iter().any(|g| {
        g.reference
            .is_some_and(|lowest| g.cells.iter().any(|&(_, v)| v / lowest > cap))
    });
    if over_cap {
        notes.push(format!(
            "Bars longer than {} stop at the axis' end (marked //): their label gives the whole ratio.",
            format_ratio(cap)
        ));
    }
    if groups.iter().any(|g| g.reference.is_none()) {
        notes.push(
            "Rows in grey italics: the lowest value of the row is 0, so there is no ratio: each crate's value is printed instead of a bar."
                .to_string(),
        );
    }
    if groups.iter().any(|g| g.cells.len() < suite.crates.len()) {
        notes.push(
            "A crate with no bar in a row has no result for that case (bars keep the legend's order)."
                .to_string(),
        );
    }
    notes
}

/// Splits the crates into legend rows that fit in `width` pixels.
fn legend_rows(crates: &[String], width: i32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut used = width;
    for (index, krate) in crates.iter().enumerate() {
        let item = legend_item_width(krate);
        if used + item > width {
            rows.push(Vec::new());
            used = 0;
        }
        rows.last_mut().expect("a row was pushed").push(index);
        used += item;
    }
    rows
}

/// The width of one legend item: its colour square, its name and the space after it.
fn legend_item_width(krate: &str) -> i32 {
    14 + 6 + text_width(krate, LABEL_SIZE) + 22
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_wrap_and_are_cut() {
        assert_eq!(
            wrap_label("Vec<u64> push x 100000", 44, 2),
            ["Vec<u64> push x 100000"]
        );
        let lines = wrap_label("aaaa bbbb cccc dddd eeee", 9, 2);
        assert_eq!(lines, ["aaaa bbbb", "cccc ddd…"]);
        assert_eq!(wrap_label("abcdefghij", 4, 3), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_label("", 4, 2), [""]);
    }

    #[test]
    fn values_are_formatted() {
        assert_eq!(format_ratio(1.0), "1.00x");
        assert_eq!(format_ratio(12.34), "12.3x");
        assert_eq!(format_ratio(123.4), "123x");
        assert_eq!(format_time(20698.8), "20.7 µs");
        assert_eq!(format_time(0.45), "0.45 ns");
        assert_eq!(format_time(2.5e9), "2.50 s");
        assert_eq!(format_bytes(1187808.0), "1.13 MiB");
        assert_eq!(format_count(5.126), "5.13");
        assert_eq!(format_axis_number(1.5), "1.5");
        assert_eq!(format_axis_number(2.0), "2");
    }

    #[test]
    fn count_and_memory_lines() {
        assert_eq!(
            parse_counts_line("s/k/c\t4\t10").unwrap(),
            Some(("s/k/c".to_string(), 2.5))
        );
        assert!(parse_counts_line("s/k/c\t0\t10").is_err());
        assert!(parse_counts_line("s/k/c\t4").is_err());
        let line = "s/k/Vec<u64> push\t100\t200\t3\t-\t-\t1\t1\t1";
        assert_eq!(
            parse_memory_peak(line).unwrap(),
            Some(("s/k/Vec<u64> push".to_string(), 100.0))
        );
        let line = "s/k/c\t300\t900\t6\t64\t0\t3\t3\t0\t300\t120\t150";
        assert_eq!(
            parse_memory_peak(line).unwrap(),
            Some(("s/k/c".to_string(), 300.0))
        );
        assert!(parse_memory_peak("s/k/c\t100\t200\t3\tx\t-\t1\t1\t1").is_err());
    }

    #[test]
    fn errors_name_their_line() {
        let text = "s/a/c\t1\t5\n\ns/b/c\tx\t5\n";
        let error = parse_lines(Metric::Instructions, text, parse_counts_line).unwrap_err();
        assert!(error.starts_with("3: "), "{error}");
    }

    #[test]
    fn order_of_first_appearance_and_missing_cells() {
        let text = "s/a/one\t1\t10\ns/b/one\t1\t20\ns/b/two\t1\t5\nt/c/x\t1\t0\n";
        let dataset = parse_lines(Metric::Instructions, text, parse_counts_line).unwrap();
        let suite = &dataset.suites[0];
        assert_eq!(suite.crates, ["a", "b"]);
        assert_eq!(suite.cases, ["one", "two"]);
        let rows = groups(suite);
        assert_eq!(rows[0].cells, [(0, 10.0), (1, 20.0)]);
        assert_eq!(rows[1].cells, [(1, 5.0)]);
        assert_eq!(rows[1].reference, Some(5.0));
        let zero = groups(&dataset.suites[1]);
        assert_eq!(zero[0].reference, None);
        let colors = assign_colors(&[dataset]);
        assert_ne!(colors["a"], colors["b"]);
    }
}
