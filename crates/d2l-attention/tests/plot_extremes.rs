//! Plots of what a diverged training gives: extreme, infinite and NaN
//! values draw a well-formed figure or return the module's error naming
//! the argument, never a hang, a panic or a huge allocation. Each call runs
//! under a time limit, and this test binary holds at most 2 GiB (an
//! allocation past that aborts the process, failing the run).

use std::alloc::System;
use std::sync::mpsc;
use std::time::Duration;

use burn::tensor::{Device, Tensor, TensorData};
use cap::Cap;
use d2l_attention::plot::{PlotError, Scale, svg_size};
use d2l_attention::{Axes, HeatmapOptions, Series, Svg, plot, show_heatmaps};
use proptest::prelude::*;

/// The system allocator, refusing to hold more than 2 GiB in all.
#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, 2 << 30);

/// `f`'s result, or a panic when it takes longer than 60 s (a debug build
/// draws an ordinary figure in well under a second).
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || send.send(f()));
    receive
        .recv_timeout(Duration::from_secs(60))
        .expect("the call did not return within 60 s (or it panicked)")
}

fn draw(series: Vec<Series>, axes: Axes) -> Result<Svg, PlotError> {
    bounded(move || plot(&series, &axes))
}

fn heatmap(values: Vec<f32>, shape: [usize; 4]) -> Result<Svg, PlotError> {
    bounded(move || {
        let device = Device::flex();
        let m = Tensor::<4>::from_data(TensorData::new(values, shape), &device);
        show_heatmaps(&m, "keys", "queries", HeatmapOptions::default())
    })
}

/// Every number after `name="` in `svg`.
fn attributes(svg: &str, name: &str) -> Vec<f64> {
    svg.split(&format!(" {name}=\""))
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().parse().unwrap())
        .collect()
}

/// A figure as a reader needs it: an SVG with a size, no NaN or infinity
/// anywhere in it, and every scatter point inside the figure.
fn assert_well_formed(svg: &Svg) {
    let text = svg.as_str();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    let (width, height) = svg_size(text).expect("a width and a height");
    for bad in ["NaN", "inf"] {
        assert!(!text.contains(bad), "`{bad}` in the figure");
    }
    for (name, limit) in [("cx", width), ("cy", height)] {
        for v in attributes(text, name) {
            assert!((0.0..=limit as f64).contains(&v), "{name} {v} outside");
        }
    }
    assert!(text.len() < 4 << 20, "{} bytes", text.len());
}

/// The text of every `<text>` element (tick labels, axis labels), not the
/// hover `<title>`s.
fn texts(svg: &Svg) -> Vec<String> {
    svg.as_str()
        .split("<text")
        .skip(1)
        .filter_map(|rest| {
            let body = rest.split_once('>')?.1;
            Some(body.split("</text>").next()?.trim().to_owned())
        })
        .collect()
}

/// The y coordinates of the figure's first data line (the data is drawn
/// in the group clipped to the axes; plotters' axes are polylines too).
fn line_ys(svg: &Svg) -> Vec<f64> {
    let text = svg.as_str();
    let data = text.find("clip-path=\"url(#axes)\"").unwrap();
    let start = data + text[data..].find("<polyline").unwrap();
    let points = text[start..].split("points=\"").nth(1).unwrap();
    let points = points.split('"').next().unwrap();
    points
        .split_whitespace()
        .map(|p| p.split(',').nth(1).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn the_widest_finite_range_on_y_draws_at_the_top_and_bottom() {
    let svg = draw(
        vec![Series::points(&[0.0, 1.0], &[-1e308, 1e308])],
        Axes::new("x", "y"),
    )
    .unwrap();
    assert_well_formed(&svg);
    let ys = attributes(svg.as_str(), "cy");
    let (_, height) = svg_size(svg.as_str()).unwrap();
    assert!(ys[0] - ys[1] > height as f64 / 2.0, "{ys:?}");
    let labels = texts(&svg);
    assert!(labels.iter().any(|l| l == "1e308"), "{labels:?}");
}

#[test]
fn the_widest_finite_range_on_x_draws_at_the_left_and_right() {
    let svg = draw(
        vec![Series::line(&[-1e308, 1e308], &[0.0, 1.0])],
        Axes::new("x", "y"),
    )
    .unwrap();
    assert_well_formed(&svg);
    let extremes = vec![Series::points(&[-f64::MAX, f64::MAX], &[1.0, 2.0])];
    assert_well_formed(&draw(extremes, Axes::new("x", "y")).unwrap());
}

#[test]
fn a_subnormal_on_a_log_axis_gets_decade_ticks_not_a_4_gb_allocation() {
    let axes = Axes::new("x", "y").yscale(Scale::Log);
    let svg =
        draw(vec![Series::line(&[0.0, 1.0], &[1e-310, 1.0])], axes).unwrap();
    assert_well_formed(&svg);
    let ys = line_ys(&svg);
    let (_, height) = svg_size(svg.as_str()).unwrap();
    assert!(ys[0] - ys[1] > height as f64 / 2.0, "{ys:?}");
    // Ticks at decades, labelled so that they differ (not all "0").
    let labels = texts(&svg);
    assert!(labels.iter().any(|l| l == "1e-308"), "{labels:?}");
    let numbers: Vec<&String> =
        labels.iter().filter(|l| l.starts_with("1e")).collect();
    let mut distinct = numbers.clone();
    distinct.dedup();
    assert!(numbers.len() >= 3 && distinct == numbers, "{labels:?}");
}

/// Ranges at the edges of f64: subnormal widths on linear axes, and log
/// axes whose padded ends pass f64::MAX (a tick there would be infinite).
#[test]
fn ranges_at_the_edges_of_f64_draw() {
    let tiny = f64::from_bits(1);
    let linear = Axes::new("x", "y");
    let log = Axes::new("x", "y").yscale(Scale::Log);
    let cases = [
        (vec![0.0, 1.0], vec![0.0, 1e-310], linear.clone()),
        (vec![0.0, 1e-310], vec![0.0, 1.0], linear.clone()),
        (vec![0.0, 1.0], vec![tiny, 2e-322], linear.clone()),
        (
            vec![0.0, 1.0],
            vec![0.0, 1e-310],
            linear.clone().ylim(0.0, 2e-310),
        ),
        (vec![1.0], vec![1e300], log.clone()),
        (vec![0.0, 1.0], vec![1e302, 1e308], log.clone()),
        (vec![0.0, 1.0], vec![1e308, f64::MAX], log),
    ];
    for (x, y, axes) in cases {
        let what = format!("x {x:?}, y {y:?}");
        let svg = draw(vec![Series::points(&x, &y)], axes).expect(&what);
        assert_well_formed(&svg);
    }
}

#[test]
fn a_constant_line_at_1e17_is_drawn_in_the_middle() {
    let svg = draw(
        vec![Series::line(&[0.0, 1.0, 2.0], &[1e17; 3])],
        Axes::new("x", "y"),
    )
    .unwrap();
    assert_well_formed(&svg);
    let ys = line_ys(&svg);
    let (_, height) = svg_size(svg.as_str()).unwrap();
    let middle = height as f64 / 2.0;
    assert!(
        ys.iter().all(|y| (y - middle).abs() < 0.2 * middle),
        "{ys:?}"
    );
}

#[test]
fn a_constant_heatmap_at_1e17_draws_in_the_middle_colour() {
    let svg = heatmap(vec![1e17; 4], [1, 1, 2, 2]).unwrap();
    assert_well_formed(&svg);
    let constant = heatmap(vec![0.3; 4], [1, 1, 2, 2]).unwrap();
    // matplotlib's Reds at 0.5, the colour of a constant input at any size.
    for svg in [&svg, &constant] {
        assert!(svg.as_str().contains("#FB6A4A"), "middle colour");
    }
}

#[test]
fn a_diverged_loss_curve_is_refused_naming_its_label_and_point() {
    let loss = [2.0, 1.0, 1e30, f64::INFINITY, f64::NAN];
    let epochs = [1.0, 2.0, 3.0, 4.0, 5.0];
    let err = draw(
        vec![Series::line(&epochs, &loss).label("loss")],
        Axes::new("epoch", "loss"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid `series`: series[0] (\"loss\") point 3 is (4, inf), not finite \
         (the first such point: where a loss curve has diverged, say)"
    );
}

/// Ordinary, extreme and non-finite f64 values.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -10.0..10.0f64,
        2 => any::<f64>().prop_filter("finite", |v| v.is_finite()),
        4 => prop::sample::select(vec![
            0.0, -0.0, f64::MAX, -f64::MAX, 1e308, -1e308, f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE, f64::from_bits(1), 1e-310, 1e17, -1e17,
        ]),
        1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY]),
    ]
}

/// Ordinary, extreme and non-finite f32 values.
fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => 0.0..1.0f32,
        2 => any::<f32>().prop_filter("finite", |v| v.is_finite()),
        1 => prop::sample::select(vec![
            0.0, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, f32::from_bits(1), 1e17,
        ]),
        1 => prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY]),
    ]
}

/// A well-formed figure for usable input; for `bad` input, the module's
/// error naming `argument`.
fn check_outcome(
    result: Result<Svg, PlotError>,
    bad: bool,
    argument: &str,
) -> Result<(), TestCaseError> {
    match result {
        Ok(svg) => {
            prop_assert!(!bad, "drew unusable values");
            assert_well_formed(&svg);
        }
        Err(PlotError::InvalidArgument { arg, .. }) => {
            prop_assert!(bad && arg == argument, "refused `{arg}`");
        }
        Err(e) => prop_assert!(false, "{e}"),
    }
    Ok(())
}

fn scale() -> impl Strategy<Value = Scale> {
    prop_oneof![Just(Scale::Linear), Just(Scale::Log)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Lines and points over any values: a well-formed figure, or an error
    /// naming `series` exactly when a value is not finite, or not positive
    /// on a log axis.
    #[test]
    fn lines_and_points_draw_or_name_the_series(
        points in prop::collection::vec((any_f64(), any_f64()), 1..8),
        xscale in scale(),
        yscale in scale(),
        as_points in any::<bool>(),
    ) {
        let (x, y): (Vec<f64>, Vec<f64>) = points.into_iter().unzip();
        let series = if as_points { Series::points(&x, &y) } else { Series::line(&x, &y) };
        let axes = Axes::new("x", "y").xscale(xscale).yscale(yscale);
        let unusable = |v: &f64, s: Scale| !v.is_finite() || (s == Scale::Log && *v <= 0.0);
        let bad = x.iter().any(|v| unusable(v, xscale)) || y.iter().any(|v| unusable(v, yscale));
        check_outcome(draw(vec![series], axes), bad, "series")?;
    }

    /// Heatmaps over any values: a well-formed figure, or an error naming
    /// `matrices` exactly when a value is not finite.
    #[test]
    fn heatmaps_draw_or_name_the_matrices(
        values in prop::collection::vec(any_f32(), 1..16),
    ) {
        let n = values.len();
        let bad = values.iter().any(|v| !v.is_finite());
        check_outcome(heatmap(values, [1, 1, 1, n]), bad, "matrices")?;
    }
}
