//! The listings of "Attention Pooling: Nadaraya–Watson Kernel Regression"
//! (d2l zh §10.2, en §11.2).

use std::fmt::Write;

use burn::module::{Module, Param};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Int, Tensor, activation::softmax};

use super::{Check, Listing, Output};
use crate::nadaraya_watson::*;
use crate::printing::{format_summary, format_tensor, format_wrapped};
use crate::random::{rand, randn};
use plotters::style::RGBColor;

use crate::plot::{LineStyle, Norm, TAB10};
use crate::{Axes, HeatmapOptions, Series, Svg, plot, show_heatmaps};

/// This chapter's listings.
pub const LISTINGS: &[Listing] = &[
    Listing::new("nw-data", file!(), data_demo),
    Listing::new("nw-average", file!(), average_demo),
    Listing::new("nw-nonparametric", file!(), nonparametric_demo),
    Listing::new("nw-consistency", file!(), consistency_demo),
    Listing::new("nw-bmm", file!(), bmm_demo),
    Listing::new("nw-parametric", file!(), parametric_demo),
    Listing::new("nw-parametric-blog", file!(), parametric_blog_demo),
    Listing::new("nw-loss-landscape", file!(), landscape_demo),
    Listing::new("nw-kernels", file!(), kernels_demo),
    Listing::new("nw-bandwidth", file!(), bandwidth_demo),
    Listing::new("nw-exercise-bandwidth", file!(), bandwidth_exercise),
    Listing::new("nw-exercise-w-zero", file!(), w_zero_exercise),
    Listing::new("nw-exercise-parzen", file!(), parzen_exercise),
    Listing::new("nw-exercise-unit-sphere", file!(), unit_sphere_exercise),
    Listing {
        name: "nw-exercise-laplace",
        file: file!(),
        check: Check::Facts(laplace_facts),
        run: laplace_exercise,
    },
    Listing::new("nw-exercise-dimension", file!(), dimension_exercise),
    Listing::new("nw-exercise-own-point", file!(), own_point_exercise),
];

pub use crate::nadaraya_watson::SEED;

fn data_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: data
    let data = Dataset::generate(50, SEED, device);
    writeln!(
        out,
        "n_train = {}, n_test = {}",
        data.x_train.dims()[0],
        data.x_test.dims()[0]
    )?;
    let x_train = data.x_train.clone().try_into_vec_as::<f32>()?;
    writeln!(out, "x_train:\n{}", format_wrapped(&x_train, 4, 8))?;
    // ANCHOR_END: data
    Ok(())
}

fn average_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    let data = Dataset::generate(50, SEED, device);
    // ANCHOR: average
    let y_hat = average_pooling(data.y_train.clone(), 50);
    let figure = plot_kernel_reg(&data, y_hat)?;
    // ANCHOR_END: average
    out.figure("nw-average", figure);
    Ok(())
}

fn nonparametric_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    let data = Dataset::generate(50, SEED, device);
    // ANCHOR: nonparametric_demo
    let (y_hat, attention_weights) = nonparametric_pooling(
        data.x_train.clone(),
        data.y_train.clone(),
        data.x_test.clone(),
    )?;
    // the queries as d2l repeats them, one row of 50 per test input (our
    // function broadcasts instead); each row of weights sums to 1
    let x_repeat = data.x_test.clone().unsqueeze_dim::<2>(1).expand([50, 50]);
    writeln!(out, "X_repeat:\n{}", format_summary(x_repeat, 4, 3))?;
    let summary = format_summary(attention_weights.clone(), 4, 3);
    writeln!(out, "attention_weights:\n{summary}")?;
    writeln!(out, "test MSE {:.3}", data.test_mse(y_hat.clone()))?;
    let at = |t: &Tensor<1>| t.clone().narrow(0, 0, 1).into_scalar::<f32>();
    let (first, truth) = (at(&y_hat), at(&data.y_truth));
    writeln!(out, "at x = 0: prediction {first:.2}, truth {truth:.2}")?;
    let prediction = plot_kernel_reg(&data, y_hat)?;
    let heatmap = plot_attention_weights(attention_weights)?;
    // ANCHOR_END: nonparametric_demo
    out.figure("nw-nonparametric", prediction);
    out.figure("nw-nonparametric-heatmap", heatmap);
    Ok(())
}

// ANCHOR: test_error
/// The test MSE of the estimate with `kernel` (against f).
fn test_error(data: &Dataset, kernel: Kernel) -> anyhow::Result<f32> {
    let (y_hat, _) = nadaraya_watson(
        data.x_train.clone(),
        data.y_train.clone(),
        data.x_test.clone(),
        kernel,
    )?;
    Ok(data.test_mse(y_hat))
}
// ANCHOR_END: test_error

fn consistency_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: consistency
    writeln!(
        out,
        "{:>7} {:>16} {:>26}",
        "n_train", "MSE, σ = 1", "MSE, σ = n_train^(-1/5)"
    )?;
    for n_train in [50, 500, 5000] {
        let data = Dataset::generate(n_train, SEED, device);
        let fixed = test_error(&data, Kernel::Gaussian { sigma: 1.0 })?;
        let shrinking = test_error(
            &data,
            Kernel::Gaussian {
                sigma: (n_train as f32).powf(-0.2),
            },
        )?;
        writeln!(out, "{n_train:>7} {fixed:>16.4} {shrinking:>26.4}")?;
    }
    // ANCHOR_END: consistency
    Ok(())
}

fn bmm_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: bmm
    let x = Tensor::<3>::ones([2, 1, 4], device);
    let y = Tensor::<3>::ones([2, 4, 6], device);
    writeln!(
        out,
        "{:?} × {:?} → {:?}",
        x.dims(),
        y.dims(),
        x.matmul(y).dims()
    )?;
    let weights = Tensor::<2>::ones([2, 10], device) * 0.1;
    let values = Tensor::<1, Int>::arange(0..20, device)
        .float()
        .reshape([2, 10]);
    let pooled = weights
        .unsqueeze_dim::<3>(1)
        .matmul(values.unsqueeze_dim::<3>(2));
    writeln!(out, "{}", format_tensor(pooled, 1))?;
    // ANCHOR_END: bmm
    Ok(())
}

// ANCHOR: runs
/// A training run: the model, where `w` started, and every epoch's log.
type Run = (NWKernelRegression, f32, Vec<EpochLog>);

/// Trains from `w0` on the leave-one-out keys and values of `data`.
fn run(data: &Dataset, w0: f32, lr: f64, epochs: usize) -> anyhow::Result<Run> {
    let model = NWKernelRegression::new(w0, &data.x_train.device());
    let mut logs = Vec::new();
    let (x, y) = (data.x_train.clone(), data.y_train.clone());
    let model = train(model, x, y, lr, epochs, |log| logs.push(*log))?;
    Ok((model, w0, logs))
}

/// The run of `chapter10.ipynb`: w from a seeded N(0, 1) draw (its
/// `torch.randn((1,))`), learning rate 0.5, 5 epochs.
fn notebook_run(data: &Dataset) -> anyhow::Result<Run> {
    let w0 = randn([1], SEED, &data.x_train.device()).into_scalar::<f32>();
    run(data, w0, 0.5, 5)
}

/// The blog post's run: w ~ U(0, 1), learning rate 0.01, 50 epochs.
fn blog_run(data: &Dataset) -> anyhow::Result<Run> {
    let w0 = rand([1], SEED, &data.x_train.device()).into_scalar::<f32>();
    run(data, w0, 0.01, 50)
}
// ANCHOR_END: runs

// ANCHOR: test_and_draw
/// Predicts the test points with all 50 training points as keys and
/// values, prints the test MSE, and draws the loss curve, the prediction
/// and the weights as `<name>-loss`, `<name>` and `<name>-heatmap`.
fn test_and_draw(
    (model, _, logs): &Run,
    data: &Dataset,
    name: &str,
    out: &mut Output,
) -> anyhow::Result<()> {
    let n_test = data.x_test.dims()[0];
    // every test input gets the same 50 keys and values
    let keys = data.x_train.clone().unsqueeze::<2>().expand([n_test, 50]);
    let values = data.y_train.clone().unsqueeze::<2>().expand([n_test, 50]);
    let (y_hat, weights) = model.forward(data.x_test.clone(), keys, values);
    writeln!(out, "test MSE {:.3}", data.test_mse(y_hat.clone()))?;
    let epochs: Vec<f64> = logs.iter().map(|l| l.epoch as f64).collect();
    let losses: Vec<f64> = logs.iter().map(|l| l.loss as f64).collect();
    let axes = Axes::new("epoch", "loss").xlim(1.0, epochs.len() as f64);
    out.figure(
        &format!("{name}-loss"),
        plot(&[Series::line(&epochs, &losses)], &axes)?,
    );
    out.figure(name, plot_kernel_reg(data, y_hat)?);
    let heatmap = plot_attention_weights(weights)?;
    out.figure(&format!("{name}-heatmap"), heatmap);
    Ok(())
}
// ANCHOR_END: test_and_draw

fn parametric_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: parametric
    let data = Dataset::generate(50, SEED, &device.clone().autodiff());
    let notebook = notebook_run(&data)?;
    writeln!(out, "start: w {:.4}", notebook.1)?;
    for log in &notebook.2 {
        // the loss at the start of the epoch, w after its step
        let (epoch, loss, w) = (log.epoch, log.loss, log.w);
        writeln!(out, "epoch {epoch}, loss {loss:.6}, w {w:.4}")?;
    }
    test_and_draw(&notebook, &data, "nw-parametric", out)?;
    // ANCHOR_END: parametric
    Ok(())
}

fn parametric_blog_demo(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: parametric_blog
    let data = Dataset::generate(50, SEED, &device.clone().autodiff());
    // the blog prints the shapes of the leave-one-out keys and values
    let (keys, values) =
        leave_one_out(data.x_train.clone(), data.y_train.clone())?;
    let tiled = [50, 50];
    writeln!(out, "x_train {:?}, tiled {tiled:?}", data.x_train.dims())?;
    writeln!(out, "keys {:?}, values {:?}", keys.dims(), values.dims())?;
    let blog = blog_run(&data)?;
    writeln!(out, "start: w {:.4}", blog.1)?;
    for log in blog.2.iter().filter(|log| log.epoch % 5 == 0) {
        let (epoch, loss, w) = (log.epoch, log.loss, log.w);
        writeln!(out, "epoch {epoch}, loss {loss:.6}, w {w:.4}")?;
    }
    test_and_draw(&blog, &data, "nw-parametric-blog", out)?;
    // ANCHOR_END: parametric_blog
    Ok(())
}

fn landscape_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: landscape
    let data = Dataset::generate(50, SEED, &device.clone().autodiff());
    let loo = |w: f32| {
        leave_one_out_loss(w, data.x_train.clone(), data.y_train.clone())
    };
    // the leave-one-out loss for w = 0, 0.05, …, 16
    let ws: Vec<f32> = (0..=320).map(|i| 0.05 * i as f32).collect();
    let losses = ws.iter().map(|&w| loo(w)).collect::<Result<Vec<_>, _>>()?;
    let (best, lowest) =
        ws.iter()
            .zip(&losses)
            .fold(
                (0.0, f32::INFINITY),
                |a, (&w, &l)| if l < a.1 { (w, l) } else { a },
            );
    writeln!(
        out,
        "lowest leave-one-out loss {lowest:.2} at w = {best:.2}"
    )?;
    let to_f64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let mut series =
        vec![Series::line(&to_f64(&ws), &to_f64(&losses)).label("loss(w)")];
    let runs = [
        ("chapter10.ipynb", notebook_run(&data)?, TAB10[3]),
        ("blog", blog_run(&data)?, TAB10[2]),
    ];
    for (name, (model, w0, logs), color) in runs {
        let w = model.w();
        writeln!(
            out,
            "{name:>15} run ends at w = {w:.2}: leave-one-out loss {:.2}",
            loo(w)?
        )?;
        // each epoch's loss was computed at the w it started from
        let mut path_w = vec![w0];
        path_w.extend(logs.iter().map(|l| l.w));
        let mut path_loss: Vec<f32> = logs.iter().map(|l| l.loss).collect();
        path_loss.push(loo(w)?);
        let path = Series::points(&to_f64(&path_w), &to_f64(&path_loss));
        series.push(path.label(name).color(color));
    }
    let figure = plot(
        &series,
        &Axes::new("w", "leave-one-out loss").xlim(0.0, 16.0),
    )?;
    // ANCHOR_END: landscape
    out.figure("nw-loss-landscape", figure);
    Ok(())
}

/// The four kernels of d2l en §11.2.
const KERNELS: [Kernel; 4] = [
    Kernel::Gaussian { sigma: 1.0 },
    Kernel::Boxcar,
    Kernel::Constant,
    Kernel::Epanechikov,
];

// ANCHOR: compare_kernels
/// How the i-th kernel (or bandwidth) is drawn, the same in every figure:
/// colours after matplotlib's blue, which the truth keeps.
const LOOKS: [(RGBColor, LineStyle); 4] = [
    (TAB10[2], LineStyle::Solid),
    (TAB10[3], LineStyle::Dashed),
    (TAB10[4], LineStyle::DashDot),
    (TAB10[5], LineStyle::Dotted),
];

/// Kernel `i`'s line.
fn kernel_line(x: &[f64], y: &[f64], i: usize, label: &str) -> Series {
    let (color, style) = LOOKS[i % LOOKS.len()];
    Series::line(x, y).label(label).color(color).style(style)
}

/// Estimates for several kernels: a figure of the predictions, and a row
/// of their weight heatmaps titled `titles`.
fn compare_kernels(
    data: &Dataset,
    kernels: &[Kernel],
    titles: &[&str],
) -> anyhow::Result<(Svg, Svg)> {
    let x_test = host(&data.x_test);
    let mut series = vec![
        // as in plot_kernel_reg: matplotlib's blue
        Series::line(&x_test, &host(&data.y_truth))
            .label("Truth")
            .color(TAB10[0]),
    ];
    let mut weights = Vec::new();
    for (i, (kernel, title)) in kernels.iter().zip(titles).enumerate() {
        let (y_hat, w) = nadaraya_watson(
            data.x_train.clone(),
            data.y_train.clone(),
            data.x_test.clone(),
            *kernel,
        )?;
        series.push(kernel_line(&x_test, &host(&y_hat), i, title));
        weights.push(w.unsqueeze::<3>());
    }
    series.push(
        Series::points(&host(&data.x_train), &host(&data.y_train)).alpha(0.5),
    );
    let estimates = plot(
        &series,
        &Axes::new("x", "y")
            .xlim(0.0, 5.0)
            .ylim(-1.0, 5.0)
            .figsize(4.5, 3.0),
    )?;
    let grid = Tensor::cat(weights, 0).unsqueeze::<4>();
    let heatmaps = show_heatmaps(
        &grid,
        "Sorted training inputs",
        "Sorted test inputs",
        HeatmapOptions {
            titles: Some(titles),
            figsize: (10.0, 3.0),
            // one colorbar for panels of very different ranges: by square
            // root, so that the widest kernel's small weights stay visible
            norm: Norm::Sqrt,
            ..Default::default()
        },
    )?;
    Ok((estimates, heatmaps))
}
// ANCHOR_END: compare_kernels

fn kernels_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: kernels_demo
    // fine steps, so that the boxcar's jumps look vertical
    let u: Vec<f32> = (0..=600).map(|i| -3.0 + 0.01 * i as f32).collect();
    let u_tensor = Tensor::<1>::from_floats(u.as_slice(), device);
    let u_axis: Vec<f64> = u.iter().map(|&x| x as f64).collect();
    let names = ["Gaussian", "Boxcar", "Constant", "Epanechikov"];
    let shapes: Vec<Series> = KERNELS
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (k, name))| {
            let y = host(&k.apply(u_tensor.clone()));
            kernel_line(&u_axis, &y, i, name)
        })
        .collect();
    let shapes = plot(
        &shapes,
        &Axes::new("u", "K(u)")
            .xlim(-3.0, 3.0)
            .ylim(-0.1, 1.8)
            .figsize(4.5, 3.2),
    )?;
    let data = Dataset::generate(50, SEED, device);
    let (estimates, heatmaps) = compare_kernels(&data, &KERNELS, &names)?;
    for (kernel, name) in KERNELS.iter().zip(names) {
        let mse = test_error(&data, *kernel)?;
        writeln!(out, "{name:<12} test MSE {mse:.4}")?;
    }
    // ANCHOR_END: kernels_demo
    out.figure("nw-kernel-shapes", shapes);
    out.figure("nw-kernel-estimates", estimates);
    out.figure("nw-kernel-heatmaps", heatmaps);
    Ok(())
}

fn bandwidth_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: bandwidth
    let sigmas = [0.1, 0.2, 0.5, 1.0];
    let kernels = sigmas.map(|sigma| Kernel::Gaussian { sigma });
    let titles = ["σ = 0.1", "σ = 0.2", "σ = 0.5", "σ = 1"];
    let data = Dataset::generate(50, SEED, device);
    let (estimates, heatmaps) = compare_kernels(&data, &kernels, &titles)?;
    for (kernel, title) in kernels.iter().zip(titles) {
        writeln!(
            out,
            "{title:<8} test MSE {:.4}",
            test_error(&data, *kernel)?
        )?;
    }
    // ANCHOR_END: bandwidth
    out.figure("nw-bandwidth-estimates", estimates);
    out.figure("nw-bandwidth-heatmaps", heatmaps);
    Ok(())
}

/// Exercise 3: the bandwidth σ as a hyperparameter, chosen on the
/// training data alone by the leave-one-out loss.
fn bandwidth_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: bandwidth_exercise
    let data = Dataset::generate(50, SEED, device);
    // A Gaussian of width σ is the parametric model with w = 1 / σ.
    let loo = |sigma: f32| {
        let (x, y) = (data.x_train.clone(), data.y_train.clone());
        leave_one_out_loss(1.0 / sigma, x, y)
    };
    let sigmas: Vec<f32> = (5..=100).map(|i| 0.01 * i as f32).collect();
    let mut best = (1.0, loo(1.0)?);
    for &sigma in &sigmas {
        let loss = loo(sigma)?;
        if loss < best.1 {
            best = (sigma, loss);
        }
    }
    let (sigma, loss) = best;
    writeln!(out, "chosen σ = {sigma:.2} (leave-one-out loss {loss:.2})")?;
    for sigma in [1.0, sigma] {
        let mse = test_error(&data, Kernel::Gaussian { sigma })?;
        writeln!(out, "σ = {sigma:.2}: test MSE {mse:.3}")?;
    }
    // ANCHOR_END: bandwidth_exercise
    Ok(())
}

fn w_zero_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: w_zero
    let data = Dataset::generate(50, SEED, device);
    let keys = data.x_train.clone().unsqueeze::<2>().expand([50, 50]);
    let values = data.y_train.clone().unsqueeze::<2>().expand([50, 50]);
    let (y_hat, _) = NWKernelRegression::new(0.0, device).forward(
        data.x_test.clone(),
        keys,
        values,
    );
    let gap = (y_hat - average_pooling(data.y_train.clone(), 50))
        .abs()
        .max()
        .into_scalar::<f32>();
    writeln!(out, "w = 0: largest gap to average pooling {gap:.1e}")?;
    // ANCHOR_END: w_zero
    Ok(())
}

/// Exercise 6: Parzen windows and Nadaraya–Watson classification (d2l en
/// §11.2, exercise 1).
fn parzen_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: parzen
    // 40 points of class +1 around 1, 40 of class −1 around 3
    let x = Tensor::cat(
        vec![
            randn([40], 24, device) * 0.8 + 1.0,
            randn([40], 25, device) * 0.8 + 3.0,
        ],
        0,
    );
    let ones = Tensor::<1>::ones([40], device);
    let y = Tensor::cat(vec![ones.clone(), -ones], 0);
    let queries = Tensor::<1, Int>::arange(0..9, device).float() / 2.0;
    // k(q, xᵢ): (9 queries, 80 points), a Gaussian of width 0.5
    let differences =
        queries.clone().unsqueeze_dim::<2>(1) - x.unsqueeze_dim::<2>(0);
    let k = Kernel::Gaussian { sigma: 0.5 }.apply(differences);
    // Nadaraya–Watson: the labels ±1 pooled with weights k / Σ k
    let f = (k.clone() * y.clone().unsqueeze_dim(0)).sum_dim(1)
        / k.clone().sum_dim(1);
    // Parzen: p̂(q, y = ±1) = (1/n) Σ of k(q, xᵢ) over that class
    let positive = y.greater_elem(0.0).float().unsqueeze_dim::<2>(0);
    let p_plus = (k.clone() * positive.clone()).sum_dim(1) / 80.0;
    let p_minus = (k * (-positive + 1.0)).sum_dim(1) / 80.0;
    let p = p_plus.clone() + p_minus.clone(); // p̂(q)
    let columns = [f, p_plus.clone() - p_minus.clone(), (p_plus - p_minus) / p]
        .map(|c| c.squeeze_dim::<1>(1).try_into_vec_as::<f32>());
    let [f, difference, ratio] = columns.map(|c| c.expect("on the host"));
    let queries = queries.try_into_vec_as::<f32>()?;
    writeln!(
        out,
        "   q    NW f(q)  p̂(q,+1) − p̂(q,−1)  (p̂(q,+1) − p̂(q,−1)) / p̂(q)"
    )?;
    for i in 0..9 {
        writeln!(
            out,
            "{:4.1} {:10.4} {:18.4} {:28.4}",
            queries[i], f[i], difference[i], ratio[i]
        )?;
    }
    // ANCHOR_END: parzen
    Ok(())
}

/// Exercise 7: the Gaussian kernel on the unit sphere (d2l en §11.2,
/// exercise 3).
fn unit_sphere_exercise(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: unit_sphere
    // 8 keys and 3 queries in 3 dimensions, each scaled to norm 1
    let unit = |x: Tensor<2>| x.clone() / x.powi_scalar(2).sum_dim(1).sqrt();
    let keys = unit(randn([8, 3], 22, device));
    let queries = unit(randn([3, 3], 23, device));
    let sigma2 = 0.25; // σ = 0.5
    // Gaussian kernel: weights ∝ exp(−‖q − kᵢ‖² / (2σ²))
    let differences =
        queries.clone().unsqueeze_dim::<3>(1) - keys.clone().unsqueeze_dim(0);
    let squared: Tensor<2> =
        differences.powi_scalar(2).sum_dim(2).squeeze_dim(2);
    let gaussian = softmax(-squared / (2.0 * sigma2), 1);
    // on the sphere ‖q − kᵢ‖² = 2 − 2qᵀkᵢ: weights ∝ exp(qᵀkᵢ / σ²)
    let dot_product = softmax(queries.matmul(keys.transpose()) / sigma2, 1);
    let gap = (gaussian.clone() - dot_product)
        .abs()
        .max()
        .into_scalar::<f32>();
    writeln!(
        out,
        "Gaussian kernel weights:\n{}",
        format_tensor(gaussian, 4)
    )?;
    writeln!(out, "largest gap to softmax(qᵀk / σ²): {gap:.1e}")?;
    // ANCHOR_END: unit_sphere
    Ok(())
}

// ANCHOR: laplace_pooling
/// Exercise 8's pooling: a Laplace kernel, scores −w·|q − k| with a
/// learnable w: weights fall off with the distance itself, not its square.
#[derive(Module, Debug)]
struct LaplacePooling {
    w: Param<Tensor<1>>,
}

impl LaplacePooling {
    /// Predictions (n,) and weights (n, m) for `queries` (n,), each with
    /// its own row of `keys` and `values` (n, m).
    fn forward(
        &self,
        queries: Tensor<1>,
        keys: Tensor<2>,
        values: Tensor<2>,
    ) -> (Tensor<1>, Tensor<2>) {
        let w = self.w.val().unsqueeze::<2>(); // (1, 1)
        let scores = -(queries.unsqueeze_dim::<2>(1) - keys).abs() * w;
        let weights = softmax(scores, 1);
        let y_hat = (weights.clone() * values).sum_dim(1).squeeze_dim(1);
        (y_hat, weights)
    }
}
// ANCHOR_END: laplace_pooling

/// Exercise 8: the Laplace pooling trained as d2l trains its model (d2l zh
/// §10.2, exercise 4).
fn laplace_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: laplace
    let device = &device.clone().autodiff();
    let data = Dataset::generate(50, SEED, device);
    let (keys, values) =
        leave_one_out(data.x_train.clone(), data.y_train.clone())?;
    let w = Param::from_tensor(Tensor::from_floats([1.0], device));
    let mut model = LaplacePooling { w };
    let mut optimizer = SgdConfig::new().init();
    for epoch in 1..=LAPLACE_EPOCHS {
        let x = data.x_train.clone();
        let (y_hat, _) = model.forward(x, keys.clone(), values.clone());
        let loss = (y_hat - data.y_train.clone()).powi_scalar(2).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(LAPLACE_LR, model, grads);
        let (loss, w) = (loss.into_scalar::<f32>(), model.w.val());
        let w = w.into_scalar::<f32>();
        writeln!(out, "epoch {epoch}, loss {loss:.4}, w {w:.4}")?;
    }
    // every test input sees all 50 training points
    let keys = data.x_train.clone().unsqueeze::<2>().expand([50, 50]);
    let values = data.y_train.clone().unsqueeze::<2>().expand([50, 50]);
    let (y_hat, weights) = model.forward(data.x_test.clone(), keys, values);
    writeln!(out, "test MSE {:.3}", data.test_mse(y_hat))?;
    let heatmap = plot_attention_weights(weights)?;
    // ANCHOR_END: laplace
    out.figure("nw-exercise-laplace", heatmap);
    Ok(())
}

/// What exercise 8's training prints on any machine: the loss falls at
/// every epoch, w stays positive (a kernel that narrows around the query),
/// and the test error ends below a third of the non-parametric Gaussian
/// pooling's (0.494 at σ = 1).
///
/// # Errors
/// The first fact that fails, quoting the text.
fn laplace_facts(text: &str) -> anyhow::Result<()> {
    let numbers = |l: &str| -> Vec<f64> {
        l.split([' ', ',']).filter_map(|t| t.parse().ok()).collect()
    };
    let epochs: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| l.starts_with("epoch"))
        .map(numbers)
        .collect();
    anyhow::ensure!(epochs.len() == LAPLACE_EPOCHS, "epochs: `{text}`");
    for pair in epochs.windows(2) {
        anyhow::ensure!(pair[1][1] < pair[0][1], "loss rose: {pair:?}");
    }
    anyhow::ensure!(epochs.iter().all(|e| e[2] > 0.0), "w ≤ 0: `{text}`");
    let mse = text.lines().last().map(numbers).unwrap_or_default();
    anyhow::ensure!(
        mse.first().is_some_and(|&m| m < 0.494 / 3.0),
        "test MSE: `{text}`"
    );
    Ok(())
}

/// Epochs and learning rate of exercise 8's training.
const LAPLACE_EPOCHS: usize = 10;
const LAPLACE_LR: f64 = 0.5;

// ANCHOR: effective_keys
/// How many keys the Gaussian kernel of width `sigma` effectively averages
/// for a query at the centre of the unit cube, 1 / Σᵢ αᵢ², over `points`
/// (n, d) (n when all weigh alike, 1 when one takes all).
fn effective_keys(points: Tensor<2>, sigma: f32) -> f32 {
    let [_, d] = points.dims();
    let centre = Tensor::<2>::full([1, d], 0.5, &points.device());
    let squared = (points - centre).powi_scalar(2).sum_dim(1);
    let weights = softmax(-squared / (2.0 * sigma * sigma), 0);
    1.0 / weights.powi_scalar(2).sum().into_scalar::<f32>()
}

/// The width at which [`effective_keys`] is `keys`, by bisection (it grows
/// with the width).
fn width_for(points: &Tensor<2>, keys: f32) -> f32 {
    let (mut lo, mut hi) = (1e-4_f32, 10.0_f32);
    for _ in 0..40 {
        let mid = (lo * hi).sqrt();
        if effective_keys(points.clone(), mid) < keys {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}
// ANCHOR_END: effective_keys

/// Exercise 9: how the width must shrink with more data, by dimension (d2l
/// en §11.2, exercise 4).
fn dimension_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: dimension
    // uniform points in the unit cube; the width that keeps 20 keys
    writeln!(
        out,
        "d   n = 250  n = 1000  n = 4000  σ(250)/σ(4000)  16^(1/d)"
    )?;
    for d in [1, 2, 4, 8] {
        let widths: Vec<f32> = [250, 1000, 4000]
            .iter()
            .map(|&n| width_for(&rand([n, d], 30 + d as u64, device), 20.0))
            .collect();
        let ratio = widths[0] / widths[2];
        let scaling = 16f32.powf(1.0 / d as f32);
        writeln!(
            out,
            "{d} {:9.4} {:9.4} {:9.4} {ratio:15.2} {scaling:9.2}",
            widths[0], widths[1], widths[2]
        )?;
    }
    // ANCHOR_END: dimension
    Ok(())
}

/// Exercise 10: training `w` with each training point among its own keys
/// (d2l en §11.2, exercise 2).
fn own_point_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: own_point
    let data_set = Dataset::generate(50, SEED, &device.clone().autodiff());
    let (x, y) = (data_set.x_train.clone(), data_set.y_train.clone());
    // Every query's keys and values: all 50 points, itself among them.
    let all = |t: &Tensor<1>| t.clone().unsqueeze::<2>().expand([50, 50]);
    let own_point_loss = |w: f32| {
        let model = NWKernelRegression::new(w, &x.device());
        let (y_hat, _) = model.forward(x.clone(), all(&x), all(&y));
        (y_hat - y.clone())
            .powi_scalar(2)
            .sum()
            .into_scalar::<f32>()
    };
    // The same SGD from w = 1, with its own point in and left out.
    let sgd = |(keys, values): (Tensor<2>, Tensor<2>)| {
        let model = NWKernelRegression::new(1.0, &x.device());
        let mut logs = Vec::new();
        let data = (x.clone(), keys, values);
        let trained =
            train_on(model, data, y.clone(), 0.5, 100, |l| logs.push(*l))?;
        let sigma = 1.0 / trained.w();
        anyhow::Ok((logs, test_error(&data_set, Kernel::Gaussian { sigma })?))
    };
    let (own, own_mse) = sgd((all(&x), all(&y)))?;
    let (left, left_mse) = sgd(leave_one_out(x.clone(), y.clone())?)?;
    writeln!(out, "         own point in      left out")?;
    writeln!(out, "epoch     loss      w      loss      w")?;
    for (a, b) in own.iter().zip(&left) {
        if a.epoch == 1 || a.epoch % 25 == 0 {
            let (e, l1, w1, l2, w2) = (a.epoch, a.loss, a.w, b.loss, b.w);
            writeln!(out, "{e:5} {l1:8.3} {w1:6.2} {l2:9.3} {w2:6.2}")?;
        }
    }
    writeln!(out, "test MSE {own_mse:12.3} {left_mse:16.3}\n")?;
    // Along w: the loss trained above, the section's, and the test error.
    writeln!(out, "    w   own point in   left out   test MSE")?;
    for w in [1.0, 2.0, 3.4, 8.0, 16.0, 32.0, 64.0, 128.0] {
        let left_out = leave_one_out_loss(w, x.clone(), y.clone())?;
        let mse = test_error(&data_set, Kernel::Gaussian { sigma: 1.0 / w })?;
        let own = own_point_loss(w);
        writeln!(out, "{w:5.1} {own:14.3} {left_out:10.3} {mse:10.3}")?;
    }
    // ANCHOR_END: own_point
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    fn run(name: &str, device: &Device) -> Output {
        super::super::run_named(LISTINGS, name, device)
    }

    /// The numbers of a printed line, in order.
    fn numbers(line: &str) -> Vec<f32> {
        line.split([' ', ',', '(', ')', ':', '='])
            .filter_map(|t| t.parse().ok())
            .collect()
    }

    #[test]
    fn batched_matmul_demo_gives_d2l_s_values() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let out = run("nw-bmm", &backend.device().unwrap());
            assert_eq!(
                out.text(),
                "[2, 1, 4] × [2, 4, 6] → [2, 1, 6]\n[[[4.5]],\n [[14.5]]]\n",
                "{backend}"
            );
        }
    }

    #[test]
    fn data_are_sorted_inputs_in_range_with_d2l_test_points() {
        let data = Dataset::generate(50, SEED, &Device::flex());
        let x = data.x_train.try_into_vec_as::<f32>().unwrap();
        assert!(
            x.windows(2).all(|w| w[0] <= w[1])
                && x.iter().all(|v| (0.0..5.0).contains(v))
        );
        let x_test = data.x_test.try_into_vec_as::<f32>().unwrap();
        assert_eq!((x_test.len(), x_test[0], x_test[49]), (50, 0.0, 4.9));
    }

    #[test]
    fn parametric_training_overshoots_then_creeps_back() {
        let out = run("nw-parametric", &Device::flex());
        // "epoch k, loss L, w W" lines
        let epochs: Vec<(f32, f32)> = out
            .text()
            .lines()
            .filter(|l| l.starts_with("epoch"))
            .map(|l| {
                let v: Vec<f32> = l
                    .split(", ")
                    .skip(1)
                    .map(|f| f.rsplit(' ').next().unwrap().parse().unwrap())
                    .collect();
                (v[0], v[1])
            })
            .collect();
        assert_eq!(epochs.len(), 5);
        let (losses, ws): (Vec<f32>, Vec<f32>) = epochs.into_iter().unzip();
        // The loss falls every epoch; w jumps past 14 in the first step,
        // then falls back: the page's "overshoots" and "creeps back".
        assert!(losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
        assert!(ws[0] > 14.0, "{ws:?}");
        assert!(ws.windows(2).all(|w| w[1] < w[0]), "{ws:?}");
        assert_eq!(out.figures().len(), 3);
    }

    /// The page's reading of the loss landscape: the minimum lies near
    /// w = 3.4, the `chapter10.ipynb` run ends far past it with a higher
    /// leave-one-out loss than the blog post's run.
    #[test]
    fn the_leave_one_out_loss_is_lowest_near_w_3() {
        let out = run("nw-loss-landscape", &Device::flex());
        let lines: Vec<&str> = out.text().lines().collect();
        let lowest = numbers(lines[0]);
        assert!((2.5..4.5).contains(&lowest[1]), "{lowest:?}");
        let (nb, blog) = (numbers(lines[1]), numbers(lines[2]));
        assert!(nb[0] > 10.0 && blog[0] < 4.0, "{nb:?} {blog:?}");
        assert!(nb[1] > blog[1] && blog[1] > lowest[0], "{nb:?} {blog:?}");
    }

    /// Exercise 3's answer: the chosen σ is narrower than 1 (1 / 3.4 from
    /// the loss landscape) and its test error is far lower.
    #[test]
    fn leave_one_out_chooses_a_narrower_bandwidth_that_predicts_better() {
        let out = run("nw-exercise-bandwidth", &Device::flex());
        let lines: Vec<Vec<f32>> = out.text().lines().map(numbers).collect();
        assert!((0.25..0.35).contains(&lines[0][0]), "{lines:?}");
        let (wide, chosen) = (lines[1][1], lines[2][1]);
        assert!(chosen < wide / 2.0, "{lines:?}");
    }

    /// Exercise 6's answer: Nadaraya–Watson's f(q) is (p̂(q, +1) −
    /// p̂(q, −1)) / p̂(q), so it has the sign of the Parzen difference; it
    /// says +1 near the first class and −1 near the second.
    #[test]
    fn parzen_and_nadaraya_watson_classify_alike() {
        let out = run("nw-exercise-parzen", &Device::flex());
        let rows: Vec<Vec<f32>> =
            out.text().lines().skip(1).map(numbers).collect();
        assert_eq!(rows.len(), 9, "{}", out.text());
        for row in &rows {
            let [_, f, difference, ratio] = row[..] else {
                panic!("{row:?}")
            };
            assert!((f - ratio).abs() < 2e-4, "{row:?}");
            assert_eq!(f > 0.0, difference > 0.0, "{row:?}");
        }
        assert!(rows[0][1] > 0.9 && rows[8][1] < -0.9, "{}", out.text());
    }

    /// Exercise 7's answer: on the unit sphere the Gaussian kernel's
    /// weights are softmax(qᵀk / σ²); off the sphere they are not.
    #[test]
    fn on_the_unit_sphere_the_gaussian_kernel_is_dot_product_attention() {
        let out = run("nw-exercise-unit-sphere", &Device::flex());
        let gap = numbers(out.text().lines().last().unwrap())[0];
        assert!(gap < 1e-6, "{}", out.text());
        let device = Device::flex();
        let (keys, queries) =
            (randn([8, 3], 22, &device), randn([3, 3], 23, &device));
        let differences = queries.clone().unsqueeze_dim::<3>(1)
            - keys.clone().unsqueeze_dim(0);
        let squared: Tensor<2> =
            differences.powi_scalar(2).sum_dim(2).squeeze_dim(2);
        let gaussian = softmax(-squared / 0.5, 1);
        let dot_product = softmax(queries.matmul(keys.transpose()) / 0.25, 1);
        let gap = (gaussian - dot_product).abs().max().into_scalar::<f32>();
        assert!(gap > 0.05, "{gap}");
    }

    /// Exercise 8: the committed run's facts hold, and a run whose loss
    /// rises or whose test error stays near the non-parametric model's
    /// fails them.
    #[test]
    fn the_laplace_facts_hold_and_catch_a_failed_run() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../figures/nw-exercise-laplace.txt"
        ))
        .unwrap();
        laplace_facts(&text).unwrap();
        let rising = text.replacen("loss 19.2151", "loss 99.0", 1);
        assert!(laplace_facts(&rising).is_err());
        let poor = text.replacen("test MSE 0.132", "test MSE 0.400", 1);
        assert!(laplace_facts(&poor).is_err());
    }

    /// Exercise 9's answer: the width that keeps 20 keys shrinks with n in
    /// every dimension, about as n^(−1/d): 16 times the data narrows it by
    /// about 16^(1/d), less and less as d grows.
    #[test]
    fn the_width_shrinks_as_n_to_the_minus_one_over_d() {
        let out = run("nw-exercise-dimension", &Device::flex());
        let rows: Vec<Vec<f32>> =
            out.text().lines().skip(1).map(numbers).collect();
        assert_eq!(rows.len(), 4, "{}", out.text());
        for row in &rows {
            let [_, w250, w1000, w4000, ratio, scaling] = row[..] else {
                panic!("{row:?}")
            };
            assert!(w250 > w1000 && w1000 > w4000, "{row:?}");
            assert!((ratio / scaling - 1.0).abs() < 0.4, "{row:?}");
        }
        assert!(rows.windows(2).all(|r| r[1][4] < r[0][4]), "{}", out.text());
    }

    /// d2l en §11.2, exercise 2: with each point among its own keys the
    /// loss falls all along w (checked against the sum computed in f64
    /// from the data), SGD keeps increasing w (narrowing the window) and
    /// the test error grows; left out, the loss has its minimum inside the
    /// range, and the same SGD ends at a smaller w that predicts better.
    #[test]
    fn a_point_among_its_own_keys_drives_w_up_and_overfits() {
        let out = run("nw-exercise-own-point", &Device::flex());
        let text = out.text();
        // epoch, then loss and w with its own point in, then left out
        let epochs: Vec<Vec<f32>> = text
            .lines()
            .skip_while(|l| !l.starts_with("epoch"))
            .skip(1)
            .take_while(|l| !l.starts_with("test"))
            .map(numbers)
            .collect();
        assert_eq!(epochs.len(), 5, "{text}");
        for pair in epochs.windows(2) {
            assert!(
                pair[1][1] < pair[0][1] && pair[1][2] > pair[0][2],
                "{text}"
            );
        }
        let (own_w, left_w) = (epochs[4][2], epochs[4][4]);
        assert!(left_w < 4.0 && left_w < own_w, "{text}");
        let mse =
            numbers(text.lines().find(|l| l.starts_with("test")).unwrap());
        assert!(mse[1] < mse[0], "{text}");
        let table: Vec<Vec<f32>> = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("w "))
            .skip(1)
            .map(numbers)
            .collect();
        assert_eq!(table.len(), 8, "{text}");
        let data = Dataset::generate(50, SEED, &Device::flex());
        let x = data.x_train.try_into_vec_as::<f64>().unwrap();
        let y = data.y_train.try_into_vec_as::<f64>().unwrap();
        for row in &table {
            let (w, own, left_out) = (row[0] as f64, row[1], row[2]);
            let expected: f64 = (0..50)
                .map(|i| {
                    let k: Vec<f64> = (0..50)
                        .map(|j| (-((x[i] - x[j]) * w).powi(2) / 2.0).exp())
                        .collect();
                    let f: f64 =
                        k.iter().zip(&y).map(|(k, y)| k * y).sum::<f64>()
                            / k.iter().sum::<f64>();
                    (f - y[i]).powi(2)
                })
                .sum();
            assert!(
                (own as f64 - expected).abs() < 2e-3,
                "w {w}: {own} vs {expected}"
            );
            assert!(own < left_out, "{row:?}");
        }
        for pair in table.windows(2) {
            assert!(pair[1][1] < pair[0][1], "own-point loss rose: {pair:?}");
        }
        assert!(table[7][1] < 0.05 * table[0][1], "{text}");
        let best = (0..8).min_by(|&a, &b| table[a][2].total_cmp(&table[b][2]));
        assert_eq!(
            best,
            Some(2),
            "the left-out minimum sits at w = 3.4: {text}"
        );
        assert!(table[7][3] > 2.0 * table[2][3], "{text}");
        // left out, SGD ends near 3.4, and predicts as w = 3.4 does
        assert!((mse[1] - table[2][3]).abs() < 0.005, "{text}");
    }
}
