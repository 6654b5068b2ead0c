//! The listings of "Attention Pooling: Nadaraya–Watson Kernel Regression"
//! (d2l zh §10.2, en §11.2).

use std::fmt::Write;

use burn::tensor::{Device, Int, Tensor};

use super::{Listing, Output};
use crate::nadaraya_watson::*;
use crate::printing::{format_row, format_tensor};
use crate::random::{rand, randn};
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
    Listing::new("nw-kernels", file!(), kernels_demo),
    Listing::new("nw-bandwidth", file!(), bandwidth_demo),
    Listing::new("nw-exercise-w-zero", file!(), w_zero_exercise),
];

/// The seed every listing of this section draws its data with.
pub const SEED: u64 = 0;

fn data_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: data
    let data = Dataset::generate(50, SEED, device);
    writeln!(
        out,
        "n_train = {}, n_test = {}",
        data.x_train.dims()[0],
        data.x_test.dims()[0]
    )?;
    writeln!(
        out,
        "first training inputs: {}",
        format_row(
            &data
                .x_train
                .clone()
                .narrow(0, 0, 5)
                .try_into_vec_as::<f32>()?,
            4
        )
    )?;
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
    let prediction = plot_kernel_reg(&data, y_hat)?;
    let heatmap = show_heatmaps(
        &attention_weights.unsqueeze::<4>(),
        "Sorted training inputs",
        "Sorted testing inputs",
        HeatmapOptions::default(),
    )?;
    // ANCHOR_END: nonparametric_demo
    out.figure("nw-nonparametric", prediction);
    out.figure("nw-nonparametric-heatmap", heatmap);
    Ok(())
}

/// Test mean squared error of the Gaussian estimate against f.
fn test_error(data: &Dataset, kernel: Kernel) -> anyhow::Result<f32> {
    let (y_hat, _) = nadaraya_watson(
        data.x_train.clone(),
        data.y_train.clone(),
        data.x_test.clone(),
        kernel,
    )?;
    Ok((y_hat - data.y_truth.clone())
        .powi_scalar(2)
        .mean()
        .into_scalar::<f32>())
}

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

/// Trains from `w0` and draws the three figures of the parametric model,
/// named `<prefix>-loss`, `<prefix>` and `<prefix>-heatmap`.
fn train_and_draw(
    device: &Device,
    out: &mut Output,
    w0: f32,
    lr: f64,
    epochs: usize,
    prefix: &str,
) -> anyhow::Result<NWKernelRegression> {
    let device = device.clone().autodiff();
    let data = Dataset::generate(50, SEED, &device);
    let mut losses = Vec::new();
    let model = NWKernelRegression::new(w0, &device);
    let progress = indicatif::ProgressBar::new(epochs as u64);
    let model = train(
        model,
        data.x_train.clone(),
        data.y_train.clone(),
        lr,
        epochs,
        |log| {
            progress.inc(1);
            losses.push(log.loss as f64);
            if epochs <= 10 || log.epoch % 10 == 0 {
                // Printed (and captured) like d2l's training loop.
                writeln!(out, "epoch {}, loss {:.6}", log.epoch, log.loss)
                    .expect("an Output takes any text");
            }
        },
    )?;
    progress.finish_and_clear();
    let epochs_axis: Vec<f64> = (1..=epochs).map(|e| e as f64).collect();
    let loss_curve = plot(
        &[Series::line(&epochs_axis, &losses)],
        &Axes::new("epoch", "loss").xlim(1.0, epochs as f64),
    )?;
    // Test predictions with all fifty training points as keys and values.
    let n_test = data.x_test.dims()[0];
    let keys = data.x_train.clone().unsqueeze::<2>().expand([n_test, 50]);
    let values = data.y_train.clone().unsqueeze::<2>().expand([n_test, 50]);
    let (y_hat, attention_weights) =
        model.forward(data.x_test.clone(), keys, values);
    out.figure(&format!("{prefix}-loss"), loss_curve);
    out.figure(prefix, plot_kernel_reg(&data, y_hat)?);
    let heatmap = show_heatmaps(
        &attention_weights.unsqueeze::<4>(),
        "Sorted training inputs",
        "Sorted testing inputs",
        HeatmapOptions::default(),
    )?;
    out.figure(&format!("{prefix}-heatmap"), heatmap);
    Ok(model)
}

fn parametric_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: parametric
    // w starts from a seeded N(0, 1) draw, as the seed notebook's
    // `torch.randn((1,))`.
    let w0 = randn([1], SEED, device).into_scalar::<f32>();
    let model = train_and_draw(device, out, w0, 0.5, 5, "nw-parametric")?;
    writeln!(out, "w = {:.4} (started at {w0:.4})", model.w())?;
    // ANCHOR_END: parametric
    Ok(())
}

fn parametric_blog_demo(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: parametric_blog
    // The blog's configuration: w ~ U(0, 1), learning rate 0.01, 50 epochs.
    let w0 = rand([1], SEED, device).into_scalar::<f32>();
    let model =
        train_and_draw(device, out, w0, 0.01, 50, "nw-parametric-blog")?;
    writeln!(out, "w = {:.4} (started at {w0:.4})", model.w())?;
    // ANCHOR_END: parametric_blog
    Ok(())
}

/// The four kernels of d2l en §11.2.
const KERNELS: [Kernel; 4] = [
    Kernel::Gaussian { sigma: 1.0 },
    Kernel::Boxcar,
    Kernel::Constant,
    Kernel::Epanechikov,
];

/// Estimates for several kernels: a figure of the predictions, and a row
/// of their weight heatmaps titled `titles`.
fn compare_kernels(
    data: &Dataset,
    kernels: &[Kernel],
    titles: &[&str],
) -> anyhow::Result<(Svg, Svg)> {
    let x_test = host(&data.x_test);
    let mut series = vec![
        Series::line(&x_test, &host(&data.y_truth))
            .label("Truth")
            .color(plotters::style::RGBColor(0, 0, 0)),
    ];
    let mut weights = Vec::new();
    for (kernel, title) in kernels.iter().zip(titles) {
        let (y_hat, w) = nadaraya_watson(
            data.x_train.clone(),
            data.y_train.clone(),
            data.x_test.clone(),
            *kernel,
        )?;
        series.push(Series::line(&x_test, &host(&y_hat)).label(title));
        weights.push(w.unsqueeze::<3>());
    }
    series.push(
        Series::points(&host(&data.x_train), &host(&data.y_train)).alpha(0.4),
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
        "Training inputs",
        "Test inputs",
        HeatmapOptions {
            titles: Some(titles),
            figsize: (10.0, 3.0),
            ..Default::default()
        },
    )?;
    Ok((estimates, heatmaps))
}

fn kernels_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: kernels_demo
    let u: Vec<f32> = (0..=60).map(|i| -3.0 + 0.1 * i as f32).collect();
    let u_tensor = Tensor::<1>::from_floats(u.as_slice(), device);
    let u_axis: Vec<f64> = u.iter().map(|&x| x as f64).collect();
    let names = ["Gaussian", "Boxcar", "Constant", "Epanechikov"];
    let shapes: Vec<Series> = KERNELS
        .iter()
        .zip(names)
        .map(|(k, name)| {
            Series::line(&u_axis, &host(&k.apply(u_tensor.clone()))).label(name)
        })
        .collect();
    let shapes = plot(
        &shapes,
        &Axes::new("u", "K(u)")
            .xlim(-3.0, 3.0)
            .ylim(-0.1, 1.3)
            .figsize(4.5, 2.5),
    )?;
    let data = Dataset::generate(50, SEED, device);
    let (estimates, heatmaps) = compare_kernels(&data, &KERNELS, &names)?;
    // ANCHOR_END: kernels_demo
    for (kernel, name) in KERNELS.iter().zip(names) {
        writeln!(
            out,
            "{name:<12} test MSE {:.4}",
            test_error(&data, *kernel)?
        )?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    fn run(name: &str, device: &Device) -> Output {
        super::super::run_named(LISTINGS, name, device)
    }

    #[test]
    fn batched_matmul_demo_gives_the_seeds_values() {
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
    fn parametric_training_lowers_the_loss_and_sharpens_the_window() {
        let out = run("nw-parametric", &Device::flex());
        let losses: Vec<f32> = out
            .text()
            .lines()
            .filter_map(|l| l.split("loss ").nth(1))
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(losses.len(), 5);
        assert!(losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
        let last = out.text().lines().last().unwrap();
        let w: f32 = last
            .trim_start_matches("w = ")
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(w > 5.0, "{last}");
        assert_eq!(out.figures().len(), 3);
    }
}
