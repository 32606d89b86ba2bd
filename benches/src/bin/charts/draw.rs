//! Drawing a chart: the title and legend, the stripes, the bars and their labels, the ratio axis
//! and the footnotes, placed by the chart's [`Layout`].

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    AXIS_SIZE, BAR_HEIGHT, BAR_LABEL_SIZE, BAR_STEP, BOTTOM_AXIS_HEIGHT, FONT, GREY_TEXT,
    GROUP_GAP, Group, LABEL_LINE_STEP, LABEL_SIZE, LEGEND_ROW_HEIGHT, Layout, MARGIN, Metric,
    NOTE_HEIGHT, NOTE_SIZE, STRIPE, Suite, TEXT, TITLE_HEIGHT, TITLE_SIZE, TOP_AXIS_HEIGHT,
    bar_label, format_axis_number, groups, header_height, layout, legend_item_width,
};

/// Turns any drawing error into a message naming the chart's file.
fn drawing_error<E: fmt::Display>(path: &Path) -> impl Fn(E) -> String + '_ {
    move |e| format!("cannot draw {}: {e}", path.display())
}

/// Draws one suite's chart for `metric` into the SVG file `path`.
pub(super) fn draw_chart(
    suite: &Suite,
    metric: Metric,
    colors: &HashMap<String, RGBColor>,
    cap: f64,
    path: &Path,
) -> Result<(), String> {
    let groups = groups(suite);
    let layout = layout(suite, metric, &groups, cap);
    let root =
        SVGBackend::new(path, (layout.width as u32, layout.height as u32)).into_drawing_area();
    let error = drawing_error(path);
    root.fill(&WHITE).map_err(&error)?;
    draw_header(&root, suite, metric, colors, &layout).map_err(&error)?;

    let (_, below) = root.split_vertically(header_height(layout.legend_rows.len()));
    let (middle, footer) =
        below.split_vertically(TOP_AXIS_HEIGHT + layout.plot_height + BOTTOM_AXIS_HEIGHT);
    let mut chart = ChartBuilder::on(&middle)
        .margin_left(MARGIN)
        .margin_right(layout.right_width)
        .set_label_area_size(LabelAreaPosition::Top, TOP_AXIS_HEIGHT)
        .set_label_area_size(LabelAreaPosition::Bottom, BOTTOM_AXIS_HEIGHT)
        .set_label_area_size(LabelAreaPosition::Left, layout.label_width)
        .build_cartesian_2d(0.0..cap, 0.0..1.0)
        .map_err(&error)?;
    let (x_range, y_range) = chart.plotting_area().get_pixel_range();
    let plot = Plot {
        left: x_range.start,
        right: x_range.end - 1,
        top: y_range.start,
        bottom: y_range.end - 1,
        cap,
    };
    draw_stripes(&root, &groups, &plot).map_err(&error)?;
    let tick_format = |v: &f64| format!("{}x", format_axis_number(*v));
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(axis_ticks(cap))
        .x_label_formatter(&tick_format)
        .x_max_light_lines(1)
        .x_label_style((FONT, AXIS_SIZE).into_font().color(&TEXT))
        .draw()
        .map_err(&error)?;
    draw_axis_description(&root, metric, &plot).map_err(&error)?;
    for group in &groups {
        draw_group(&root, suite, metric, colors, group, &plot).map_err(&error)?;
    }
    draw_reference_line(&root, &plot).map_err(&error)?;
    draw_notes(&footer, &layout.notes).map_err(&error)?;
    root.present().map_err(&error)?;
    Ok(())
}

/// The plotting area's pixel bounds and the ratio at its right end.
struct Plot {
    left: i32,
    right: i32,
    top: i32,
    bottom: i32,
    cap: f64,
}

impl Plot {
    /// The pixel column of a ratio (cut at the cap).
    fn x(&self, ratio: f64) -> i32 {
        let fraction = (ratio / self.cap).clamp(0.0, 1.0);
        self.left + (fraction * f64::from(self.right - self.left)).round() as i32
    }
}

/// The number of ticks on the ratio axis: one every 0.5 up to a cap of 5, fewer beyond.
fn axis_ticks(cap: f64) -> usize {
    ((cap * 2.0).ceil() as usize + 1).min(12)
}

/// The drawing area of the whole image.
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
/// The result of drawing on it.
type DrawResult<'a> =
    Result<(), DrawingAreaErrorKind<<SVGBackend<'a> as DrawingBackend>::ErrorType>>;

/// Draws the title and the legend (a colour square and the name of each crate).
fn draw_header<'a>(
    root: &Area<'a>,
    suite: &Suite,
    metric: Metric,
    colors: &HashMap<String, RGBColor>,
    layout: &Layout,
) -> DrawResult<'a> {
    let title = (FONT, TITLE_SIZE, FontStyle::Bold).into_font().color(&TEXT);
    root.draw(&Text::new(
        metric.title(&suite.name),
        (MARGIN, MARGIN),
        title,
    ))?;
    let style = (FONT, LABEL_SIZE)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (row_index, row) in layout.legend_rows.iter().enumerate() {
        let y =
            MARGIN + TITLE_HEIGHT + row_index as i32 * LEGEND_ROW_HEIGHT + LEGEND_ROW_HEIGHT / 2;
        let mut x = MARGIN;
        for &index in row {
            let krate = &suite.crates[index];
            let color = crate_color(colors, krate);
            root.draw(&Rectangle::new(
                [(x, y - 7), (x + 14, y + 7)],
                color.filled(),
            ))?;
            root.draw(&Text::new(krate.clone(), (x + 20, y), style.clone()))?;
            x += legend_item_width(krate);
        }
    }
    Ok(())
}

/// A crate's colour (grey for one the palette did not see, which cannot happen).
fn crate_color(colors: &HashMap<String, RGBColor>, krate: &str) -> RGBColor {
    colors
        .get(krate)
        .copied()
        .unwrap_or(RGBColor(128, 128, 128))
}

/// Shades every other group, from the case labels to the end of the axis.
fn draw_stripes<'a>(root: &Area<'a>, groups: &[Group], plot: &Plot) -> DrawResult<'a> {
    for group in groups.iter().skip(1).step_by(2) {
        let top = plot.top + group.top - GROUP_GAP / 2;
        let bottom = plot.top + group.top + group.height + GROUP_GAP / 2;
        root.draw(&Rectangle::new(
            [(MARGIN, top), (plot.right, bottom)],
            STRIPE.filled(),
        ))?;
    }
    Ok(())
}

/// Draws one group: its case label, then a bar and a label per crate (or, in a row without a
/// ratio, a colour square and the value).
fn draw_group<'a>(
    root: &Area<'a>,
    suite: &Suite,
    metric: Metric,
    colors: &HashMap<String, RGBColor>,
    group: &Group,
    plot: &Plot,
) -> DrawResult<'a> {
    draw_case_label(root, group, plot)?;
    let bars_height = group.cells.len() as i32 * BAR_STEP;
    let first_top =
        plot.top + group.top + (group.height - bars_height) / 2 + (BAR_STEP - BAR_HEIGHT) / 2;
    for (slot, &(krate, value)) in group.cells.iter().enumerate() {
        let color = crate_color(colors, &suite.crates[krate]);
        let top = first_top + slot as i32 * BAR_STEP;
        let middle = top + BAR_HEIGHT / 2;
        let label = bar_label(metric, value, group.reference);
        let Some(lowest) = group.reference else {
            root.draw(&Rectangle::new(
                [(plot.left + 2, middle - 5), (plot.left + 12, middle + 5)],
                color.filled(),
            ))?;
            root.draw(&Text::new(
                label,
                (plot.left + 18, middle),
                bar_label_style(FontStyle::Normal),
            ))?;
            continue;
        };
        let ratio = value / lowest;
        let end = plot.x(ratio).max(plot.left + 1);
        root.draw(&Rectangle::new(
            [(plot.left, top), (end, top + BAR_HEIGHT)],
            color.filled(),
        ))?;
        let mut font_style = FontStyle::Normal;
        if ratio > plot.cap {
            draw_cut_mark(root, end, top)?;
            font_style = FontStyle::Bold;
        }
        root.draw(&Text::new(
            label,
            (end + 5, middle),
            bar_label_style(font_style),
        ))?;
    }
    Ok(())
}

/// The style of a bar's label: left-aligned, vertically centred on its bar.
fn bar_label_style(font_style: FontStyle) -> TextStyle<'static> {
    (FONT, BAR_LABEL_SIZE, font_style)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Left, VPos::Center))
}

/// Draws a case's label, right-aligned left of the bars and centred on its group.
fn draw_case_label<'a>(root: &Area<'a>, group: &Group, plot: &Plot) -> DrawResult<'a> {
    let (color, font_style) = match group.reference {
        Some(_) => (TEXT, FontStyle::Normal),
        None => (GREY_TEXT, FontStyle::Italic),
    };
    let style = (FONT, LABEL_SIZE, font_style)
        .into_font()
        .color(&color)
        .pos(Pos::new(HPos::Right, VPos::Center));
    let lines_height = group.lines.len() as i32 * LABEL_LINE_STEP;
    let first = plot.top + group.top + (group.height - lines_height) / 2 + LABEL_LINE_STEP / 2;
    for (index, line) in group.lines.iter().enumerate() {
        let y = first + index as i32 * LABEL_LINE_STEP;
        root.draw(&Text::new(line.clone(), (plot.left - 8, y), style.clone()))?;
    }
    Ok(())
}

/// Marks a bar cut at the axis' end with two white slanted strokes (`//`) near its end.
fn draw_cut_mark<'a>(root: &Area<'a>, end: i32, top: i32) -> DrawResult<'a> {
    let stroke = WHITE.stroke_width(2);
    for offset in [14, 8] {
        let x = end - offset;
        root.draw(&PathElement::new(
            vec![(x - 2, top + BAR_HEIGHT + 1), (x + 3, top - 1)],
            stroke,
        ))?;
    }
    Ok(())
}

/// Writes what the ratio axis measures under its tick labels, centred on it. (Plotters would
/// write it in the top label area too, over the tick labels there.)
fn draw_axis_description<'a>(root: &Area<'a>, metric: Metric, plot: &Plot) -> DrawResult<'a> {
    let style = (FONT, AXIS_SIZE)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let x = (plot.left + plot.right) / 2;
    root.draw(&Text::new(
        metric.axis_description(),
        (x, plot.bottom + 28),
        style,
    ))
}

/// Draws the vertical line at ratio 1 (the row's lowest) across the plotting area.
fn draw_reference_line<'a>(root: &Area<'a>, plot: &Plot) -> DrawResult<'a> {
    let x = plot.x(1.0);
    root.draw(&PathElement::new(
        vec![(x, plot.top), (x, plot.bottom)],
        TEXT.stroke_width(2),
    ))
}

/// Draws the footnotes, one a line, under the chart.
fn draw_notes<'a>(footer: &Area<'a>, notes: &[String]) -> DrawResult<'a> {
    let style = (FONT, NOTE_SIZE)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (index, note) in notes.iter().enumerate() {
        let y = index as i32 * NOTE_HEIGHT + NOTE_HEIGHT / 2;
        footer.draw(&Text::new(note.clone(), (MARGIN, y), style.clone()))?;
    }
    Ok(())
}
