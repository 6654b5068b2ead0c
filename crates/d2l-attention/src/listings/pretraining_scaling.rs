//! "Scaling, measured here" of "Large-Scale Pretraining with
//! Transformers": decoder-only models of six sizes, each trained once over
//! four shares of the sentences, and three laws fitted to their held-out
//! losses. The release check trains seed 1 of the grid
//! (`pretrain-scaling`); seeds 1 to 5 ran in the ignored test
//! `pretrain_scaling_seeds`, whose committed report `pretrain-scaling-fits`
//! reads. `llm-sizes`, of the section "Large language models", prints
//! the published sizes of large models and plots them; it trains nothing.

use std::fmt::Write;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use super::pretraining::{book_lm, chapter_data};
use super::{Check, Listing, Output};
use crate::plot::{LineStyle, POINTS_COLOR, Scale, TAB10};
use crate::pretraining::*;
use crate::seq2seq::TrainConfig;
use crate::transformer::TransformerConfig;
use crate::{Axes, Series, plot};

/// The listings of the scaling study and of the large models.
pub const LISTINGS: &[Listing] = &[
    Listing {
        name: "pretrain-scaling",
        file: file!(),
        check: Check::Facts(scaling_facts),
        run: scaling_demo,
    },
    Listing::new("pretrain-scaling-fits", file!(), fits_demo),
    Listing::new("llm-sizes", file!(), sizes_demo),
];

/// The decoder-only models of the scaling study, as (num_hiddens,
/// num_layers); each has an FFN twice as wide and 4 heads.
// ANCHOR: design
pub const SIZES: [(usize, usize); 6] =
    [(8, 1), (16, 1), (24, 2), (32, 2), (48, 2), (64, 3)];
/// Each size trains once over 1/share of the training sentences.
pub const SHARES: [usize; 4] = [8, 4, 2, 1];
/// The seeds of the report (weights and the order of the batches).
pub const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];
// ANCHOR_END: design

/// The committed report of seeds [`SEEDS`] (`pretrain_scaling_seeds`).
pub const REPORT_PATH: &str = "tests/reports/pretrain-scaling-seeds.json";
const REPORT: &str =
    include_str!("../../tests/reports/pretrain-scaling-seeds.json");

/// The configuration of one size of [`SIZES`].
pub fn scaling_config(
    vocab_len: usize,
    (h, layers): (usize, usize),
) -> TransformerConfig {
    book_lm(vocab_len)
        .with_num_hiddens(h)
        .with_ffn_num_hiddens(2 * h)
        .with_num_layers(layers)
}

/// One training of the grid.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ScalingRun {
    /// The seed of the weights and of the batches' order.
    pub seed: u64,
    /// The model, one of [`SIZES`].
    pub size: (usize, usize),
    /// The share of the sentences: 1/`share`.
    pub share: usize,
    /// Non-embedding parameters N.
    pub n: usize,
    /// Training tokens D (each seen once).
    pub d: usize,
    /// The held-out loss after the pass, nats per token.
    pub loss: f64,
}

/// Trains the model of `size` with `seed` once over 1/`share` of `data`'s
/// training sentences (their first ones).
// ANCHOR: run
pub fn scaling_run(
    data: &LmData,
    size: (usize, usize),
    share: usize,
    seed: u64,
    device: &Device,
) -> anyhow::Result<ScalingRun> {
    let part = LmData {
        train: data.train[..data.train.len() / share].to_vec(),
        ..data.clone()
    };
    let train_device = device.clone().autodiff();
    train_device.seed(seed);
    let model =
        CausalLm::new(&scaling_config(data.vocab.len(), size), &train_device);
    let n = model.non_embedding_params();
    let config = TrainConfig::new() // Adam, lr 0.005, clipping at 1.0
        .with_batch_size(128)
        .with_num_epochs(1)
        .with_seed(seed);
    let mut loss = f64::NAN;
    pretrain(model, &part, &config, &train_device, |e| {
        loss = e.valid_loss
    })?;
    let d = LmData::num_tokens(&part.train);
    Ok(ScalingRun {
        seed,
        size,
        share,
        n,
        d,
        loss,
    })
}
// ANCHOR_END: run

/// Every size and share of the design for `seed`, in the order of
/// [`SIZES`] then [`SHARES`].
pub fn scaling_grid(
    data: &LmData,
    seed: u64,
    device: &Device,
) -> anyhow::Result<Vec<ScalingRun>> {
    let mut runs = Vec::new();
    for size in SIZES {
        for share in SHARES {
            runs.push(scaling_run(data, size, share, seed, device)?);
        }
    }
    Ok(runs)
}

fn scaling_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    let data = chapter_data()?;
    let runs = scaling_grid(&data, 1, device)?;
    let steps: Vec<String> = SHARES
        .iter()
        .map(|s| (data.train.len() / s).div_ceil(128).to_string())
        .collect();
    writeln!(out, "steps (batches of 128 sentences): {}", steps.join(" "))?;
    writeln!(out, "held-out loss (nats per token), seed 1")?;
    print_table(out, &runs, |cell| format!("{:.3}", cell[0].loss))?;
    Ok(())
}

/// A table of the grid: a row per size, a column per share, `cell` of the
/// runs there (at most 11 characters).
fn print_table(
    out: &mut Output,
    runs: &[ScalingRun],
    cell: impl Fn(&[&ScalingRun]) -> String,
) -> anyhow::Result<()> {
    let at = |size, share| -> Vec<&ScalingRun> {
        runs.iter()
            .filter(|r| r.size == size && r.share == share)
            .collect()
    };
    let tokens: Vec<String> = SHARES
        .iter()
        .map(|&s| format!("{:>11}", format!("1/{s}: {}", at(SIZES[0], s)[0].d)))
        .collect();
    writeln!(out, "{:>14} D = {}", "", tokens.join(" "))?;
    for size in SIZES {
        let cells: Vec<String> = SHARES
            .iter()
            .map(|&s| format!("{:>11}", cell(&at(size, s))))
            .collect();
        let n = at(size, 1)[0].n;
        writeln!(
            out,
            "{:>2} × {} (N = {n:>5}) {}",
            size.0,
            size.1,
            cells.join(" ")
        )?;
    }
    Ok(())
}

/// What `pretrain-scaling` prints on any machine: the grid whole; sizes
/// spanning more than one and a half decades of N; every size's loss lower
/// after all the sentences than after an eighth of them.
pub fn scaling_facts(text: &str) -> anyhow::Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    anyhow::ensure!(lines.len() == 9, "{} lines, expected 9", lines.len());
    let mut params = Vec::new();
    for row in &lines[3..] {
        let (head, cells) = row.split_once(')').unwrap_or_default();
        let n: f64 = head
            .rsplit("N =")
            .next()
            .unwrap_or_default()
            .trim()
            .parse()?;
        params.push(n);
        let losses: Vec<f64> = cells
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        anyhow::ensure!(losses.len() == 4, "`{row}`");
        anyhow::ensure!(losses[3] < losses[0], "`{row}`");
    }
    anyhow::ensure!(params[5] / params[0] > 10f64.powf(1.5), "{params:?}");
    Ok(())
}

/// The runs of the committed report.
pub fn report_runs() -> anyhow::Result<Vec<ScalingRun>> {
    Ok(serde_json::from_str(REPORT)?)
}

/// The mean, lowest and highest of `values`, and their sample standard
/// deviation.
fn spread(values: &[f64]) -> (f64, f64, f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var =
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, lo, hi, var.sqrt())
}

fn fits_demo(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    let runs = report_runs()?;
    writeln!(out, "held-out loss, mean over seeds 1-5")?;
    print_table(out, &runs, |cell| format!("{:.3}", spread(&losses(cell)).0))?;
    writeln!(out, "lowest-highest over the seeds")?;
    print_table(out, &runs, |cell| {
        let (_, lo, hi, _) = spread(&losses(cell));
        format!("{lo:.2}-{hi:.2}")
    })?;
    size_fits(&runs, out)?;
    grid_fit(&runs, out)
}

fn losses(runs: &[&ScalingRun]) -> Vec<f64> {
    runs.iter().map(|r| r.loss).collect()
}

/// The runs at all the sentences, a list per size (seeds in order).
fn all_data(runs: &[ScalingRun]) -> Vec<Vec<&ScalingRun>> {
    SIZES
        .iter()
        .map(|&size| {
            runs.iter()
                .filter(|r| r.size == size && r.share == 1)
                .collect()
        })
        .collect()
}

/// The three laws of the loss against N at all the sentences, fitted to
/// the means over seeds, their residuals, each seed's own exponents, and
/// the two figures.
fn size_fits(runs: &[ScalingRun], out: &mut Output) -> anyhow::Result<()> {
    let column = all_data(runs);
    let stats: Vec<_> = column.iter().map(|r| spread(&losses(r))).collect();
    let sd: Vec<String> = stats.iter().map(|s| format!("{:.3}", s.3)).collect();
    let se: Vec<String> = stats
        .iter()
        .map(|s| format!("{:.3}", s.3 / (SEEDS.len() as f64).sqrt()))
        .collect();
    writeln!(out, "all the sentences, 6 sizes")?;
    writeln!(out, "  sd over seeds:     {}", sd.join(" "))?;
    writeln!(out, "  sd of the mean:    {}", se.join(" "))?;
    // ANCHOR: fits
    let n: Vec<f64> = column.iter().map(|r| r[0].n as f64).collect();
    let mean: Vec<f64> = stats.iter().map(|s| s.0).collect();
    let power = PowerLaw::fit(&n, &mean); // least squares in ln L
    let log = LogLaw::fit(&n, &mean); // least squares in L
    let floor = ParametricLoss::fit(&[&n], &mean); // Huber, L-BFGS
    // the same form by least squares in ln L
    let squares = ParametricLoss::fit_huber(&[&n], &mean, f64::INFINITY);
    // ANCHOR_END: fits
    let (a, alpha) = floor.terms[0];
    let laws: [(String, &dyn Fn(f64) -> f64); 3] = [
        (
            format!("(N_c/N)^α: α = {:.3}, N_c = {:.2e}", power.alpha, power.c),
            &|x| power.at(x),
        ),
        (
            format!("a − b ln N: a = {:.3}, b = {:.4}", log.a, log.b),
            &|x| log.at(x),
        ),
        (
            format!(
                "E + A/N^α: E = {:.2}, A = {a:.2}, α = {alpha:.2}",
                floor.e
            ),
            &|x| floor.at(&[x]),
        ),
    ];
    let (a2, alpha2) = squares.terms[0];
    let squares_law: (String, &dyn Fn(f64) -> f64) = (
        format!(
            "the same, least squares: E = {:.2}, A = {a2:.2}, α = {alpha2:.2}",
            squares.e
        ),
        &|x| squares.at(&[x]),
    );
    for (name, law) in laws.iter().chain([&squares_law]) {
        let residuals: Vec<String> = n
            .iter()
            .zip(&mean)
            .map(|(&x, y)| format!("{:+.3}", y - law(x)))
            .collect();
        writeln!(out, "  {name}\n    mean − law: {}", residuals.join(" "))?;
    }
    let (mut powers, mut alphas, mut floors) = (vec![], vec![], vec![]);
    for i in 0..SEEDS.len() {
        let seed: Vec<f64> = column.iter().map(|r| r[i].loss).collect();
        powers.push(format!("{:.3}", PowerLaw::fit(&n, &seed).alpha));
        let fit = ParametricLoss::fit(&[&n], &seed);
        alphas.push(format!("{:.2}", fit.terms[0].1));
        floors.push(format!("{:.2}", fit.e));
    }
    writeln!(out, "  each seed alone:")?;
    writeln!(out, "    α of (N_c/N)^α: {}", powers.join(" "))?;
    writeln!(out, "    α of E + A/N^α: {}", alphas.join(" "))?;
    writeln!(out, "    E of E + A/N^α: {}", floors.join(" "))?;
    let figures = [
        ("pretrain-scaling-params", Scale::Log),
        ("pretrain-scaling-params-linear", Scale::Linear),
    ];
    for (name, scale) in figures {
        out.figure(name, size_figure(&n, &stats, &laws, scale)?);
    }
    Ok(())
}

/// Hoffmann et al.'s form fitted to the 24 means of the grid, the table
/// of its residuals, and the figure against D.
fn grid_fit(runs: &[ScalingRun], out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: chinchilla
    let cells: Vec<Vec<&ScalingRun>> = SIZES
        .iter()
        .flat_map(|&size| SHARES.map(|share| (size, share)))
        .map(|(size, share)| {
            runs.iter()
                .filter(|r| r.size == size && r.share == share)
                .collect()
        })
        .collect();
    let n: Vec<f64> = cells.iter().map(|c| c[0].n as f64).collect();
    let d: Vec<f64> = cells.iter().map(|c| c[0].d as f64).collect();
    let mean: Vec<f64> = cells.iter().map(|c| spread(&losses(c)).0).collect();
    let law = ParametricLoss::fit(&[&n, &d], &mean);
    // ANCHOR_END: chinchilla
    let [(a, alpha), (b, beta)] = law.terms[..] else {
        unreachable!("two variables, two terms")
    };
    writeln!(
        out,
        "the grid, 24 means: E + A/N^α + B/D^β\n  E = {:.2}, A = {a:.2}, \
         α = {alpha:.2}, B = {b:.2}, β = {beta:.2}\nmean − law:",
        law.e
    )?;
    print_table(out, runs, |cell| {
        let (r, mean) = (cell[0], spread(&losses(cell)).0);
        format!("{:+.3}", mean - law.at(&[r.n as f64, r.d as f64]))
    })?;
    out.figure("pretrain-scaling-data", data_figure(&cells, &mean, &law)?);
    Ok(())
}

const LAW_LABELS: [&str; 3] = ["power law", "log law", "E + A/N^α"];

/// The means at all the sentences with bars from the lowest to the highest
/// seed, and the three laws over the sizes they were fitted to.
fn size_figure(
    n: &[f64],
    stats: &[(f64, f64, f64, f64)],
    laws: &[(String, &dyn Fn(f64) -> f64); 3],
    scale: Scale,
) -> anyhow::Result<crate::Svg> {
    let mean: Vec<f64> = stats.iter().map(|s| s.0).collect();
    let dense: Vec<f64> = (0..=60)
        .map(|i| n[0] * (n[5] / n[0]).powf(i as f64 / 60.0))
        .collect();
    let mut series = vec![Series::points(n, &mean).label("mean of 5 seeds")];
    for (x, s) in n.iter().zip(stats) {
        series.push(Series::line(&[*x, *x], &[s.1, s.2]).color(POINTS_COLOR));
    }
    for ((_, law), label) in laws.iter().zip(LAW_LABELS) {
        let y: Vec<f64> = dense.iter().map(|&x| law(x)).collect();
        series.push(Series::line(&dense, &y).label(label));
    }
    let mut axes =
        Axes::new("non-embedding parameters N", "held-out loss (nats)")
            .xscale(scale)
            .yscale(scale)
            .figsize(4.5, 3.0);
    axes = match scale {
        Scale::Log => axes.xlim(300.0, 200_000.0),
        Scale::Linear => axes.xlim(0.0, 105_000.0),
    };
    Ok(plot(&series, &axes)?)
}

/// The means (one per cell, in the cells' order) against D, a colour per
/// size, and Hoffmann et al.'s form fitted to the grid, dashed in the same
/// colour.
fn data_figure(
    cells: &[Vec<&ScalingRun>],
    means: &[f64],
    law: &ParametricLoss,
) -> anyhow::Result<crate::Svg> {
    let mut series = Vec::new();
    let rows = cells.chunks(SHARES.len()).zip(means.chunks(SHARES.len()));
    for ((row, mean), color) in rows.zip(TAB10) {
        let d: Vec<f64> = row.iter().map(|c| c[0].d as f64).collect();
        let n = row[0][0].n as f64;
        let fitted: Vec<f64> = d.iter().map(|&d| law.at(&[n, d])).collect();
        let (h, blocks) = row[0][0].size;
        series.push(
            Series::points(&d, mean)
                .color(color)
                .label(&format!("{h} × {blocks}")),
        );
        series.push(
            Series::line(&d, &fitted)
                .color(color)
                .style(LineStyle::Dashed),
        );
    }
    let axes = Axes::new("training tokens D", "held-out loss (nats)")
        .xscale(Scale::Log)
        .yscale(Scale::Log)
        .xlim(20_000.0, 300_000.0)
        .figsize(4.5, 3.0);
    Ok(plot(&series, &axes)?)
}

fn sizes_demo(_device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // Each model's parameters and training tokens (billions) as its source
    // prints them: Hoffmann et al. (2022), Table 1; Chowdhery et al. (2022),
    // §1 (PaLM); Touvron et al. (2023), Table 2 (LLaMA). Chinchilla last, so
    // that its point is drawn over LLaMA-65B's.
    // ANCHOR: models
    const MODELS: [(&str, f64, f64, &str); 11] = [
        ("LaMDA", 137.0, 168.0, "Hoffmann, Table 1"),
        ("GPT-3", 175.0, 300.0, "Hoffmann, Table 1"),
        ("Jurassic", 178.0, 300.0, "Hoffmann, Table 1"),
        ("Gopher", 280.0, 300.0, "Hoffmann, Table 1"),
        ("MT-NLG", 530.0, 270.0, "Hoffmann, Table 1"),
        ("PaLM", 540.0, 780.0, "Chowdhery, §1"),
        ("LLaMA-7B", 6.7, 1000.0, "Touvron, Table 2"),
        ("LLaMA-13B", 13.0, 1000.0, "Touvron, Table 2"),
        ("LLaMA-33B", 32.5, 1400.0, "Touvron, Table 2"),
        ("LLaMA-65B", 65.2, 1400.0, "Touvron, Table 2"),
        ("Chinchilla", 70.0, 1400.0, "Hoffmann, Table 1"),
    ];
    // Hoffmann et al.'s projections of the tokens that train a model of each
    // size compute-optimally (billions; up to a trillion parameters): their
    // approach 1 (Table 3) and approach 3 (appendix D.3, Table A3).
    const PARAMETERS: [f64; 8] =
        [0.4, 1.0, 10.0, 67.0, 175.0, 280.0, 520.0, 1000.0];
    const APPROACH_1: [f64; 8] =
        [8.0, 20.2, 205.1, 1500.0, 3700.0, 5900.0, 11000.0, 21200.0];
    const APPROACH_3: [f64; 8] =
        [9.2, 27.1, 410.1, 4100.0, 12000.0, 20100.0, 43500.0, 94100.0];
    // ANCHOR_END: models
    // ANCHOR: table
    writeln!(
        out,
        "model         N (billions)  D (billions)   D/N  6ND (FLOPs)"
    )?;
    for (model, n, d, source) in MODELS {
        let flops = 6.0 * n * d * 1e18; // 6 FLOPs a parameter and token
        writeln!(
            out,
            "{model:<12} {n:>13} {d:>13} {:>5.1} {flops:>12.1e}  {source}",
            d / n
        )?;
    }
    for (name, tokens) in [("1", APPROACH_1), ("3", APPROACH_3)] {
        writeln!(out, "compute-optimal D/N (Hoffmann, approach {name}):")?;
        let ratios: Vec<String> = PARAMETERS
            .iter()
            .zip(tokens)
            .map(|(n, d)| format!("{n} B: {:.1}", d / n))
            .collect();
        for row in ratios.chunks(4) {
            writeln!(out, "  {}", row.join(", "))?;
        }
    }
    // ANCHOR_END: table
    out.figure(
        "llm-sizes",
        sizes_figure(&MODELS, &PARAMETERS, [&APPROACH_1, &APPROACH_3])?,
    );
    Ok(())
}

/// Training tokens against parameters on log–log axes: the models as
/// points, a colour per source and Chinchilla apart; Hoffmann et al.'s
/// two projections; and the models that 6ND gives Gopher's compute.
fn sizes_figure(
    models: &[(&str, f64, f64, &str)],
    parameters: &[f64],
    [approach_1, approach_3]: [&[f64]; 2],
) -> anyhow::Result<crate::Svg> {
    let group = |from: usize, to: usize| -> (Vec<f64>, Vec<f64>) {
        models[from..to].iter().map(|m| (m.1, m.2)).unzip()
    };
    let grey = TAB10[7];
    let gopher = 6.0 * 280.0 * 300.0; // 6ND in 10^18 FLOPs
    let same_n = [40.0, 2000.0];
    let same_d = same_n.map(|n| gopher / (6.0 * n));
    let points = [
        (group(0, 5), "Hoffmann, Table 1", TAB10[1]),
        (group(5, 6), "PaLM", TAB10[2]),
        (group(6, 10), "LLaMA", TAB10[3]),
        (group(10, 11), "Chinchilla", TAB10[4]),
    ];
    let mut series = vec![
        Series::line(parameters, approach_1)
            .style(LineStyle::Dashed)
            .color(grey)
            .label("optimal, approach 1 (Table 3)"),
        Series::line(parameters, approach_3)
            .style(LineStyle::Dotted)
            .color(grey)
            .label("optimal, approach 3 (Table A3)"),
        Series::line(&same_n, &same_d)
            .color(TAB10[9])
            .label("Gopher's compute (6ND)"),
    ];
    for ((n, d), label, color) in points {
        series.push(Series::points(&n, &d).color(color).label(label));
    }
    let axes =
        Axes::new("parameters N (billions)", "training tokens D (billions)")
            .xscale(Scale::Log)
            .yscale(Scale::Log)
            .xlim(0.3, 2000.0)
            .ylim(5.0, 200_000.0)
            .figsize(4.5, 3.6);
    Ok(plot(&series, &axes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_holds_the_whole_design_once() {
        let runs = report_runs().unwrap();
        assert_eq!(runs.len(), SEEDS.len() * SIZES.len() * SHARES.len());
        for seed in SEEDS {
            for size in SIZES {
                for share in SHARES {
                    let found = runs.iter().filter(|r| {
                        (r.seed, r.size, r.share) == (seed, size, share)
                    });
                    assert_eq!(found.count(), 1, "{seed} {size:?} {share}");
                }
            }
        }
    }

    #[test]
    fn spread_is_mean_range_and_sample_sd() {
        let (mean, lo, hi, sd) = spread(&[1.0, 2.0, 3.0, 6.0]);
        assert_eq!((mean, lo, hi), (3.0, 1.0, 6.0));
        assert!((sd - (14.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn the_facts_refuse_a_size_that_data_did_not_help() {
        let rows = [
            " 8 × 1 (N =   568) 5.9 4.8 4.2 3.8",
            "16 × 1 (N =  2160) 5.1 4.3 3.9 3.6",
            "24 × 2 (N =  9552) 4.6 4.1 3.7 3.5",
            "32 × 2 (N = 16832) 4.3 4.0 3.6 3.3",
            "48 × 2 (N = 37536) 4.2 3.9 3.6 3.3",
            "64 × 3 (N = 99648) 4.1 4.0 3.6 3.3",
        ];
        let text =
            |rows: &[&str]| format!("steps\nloss\nD\n{}\n", rows.join("\n"));
        scaling_facts(&text(&rows)).unwrap();
        let mut flat = rows;
        flat[5] = "64 × 3 (N = 99648) 4.1 4.0 3.6 4.2";
        assert!(scaling_facts(&text(&flat)).is_err());
        let mut narrow = rows;
        narrow[5] = "64 × 3 (N =  9999) 4.1 4.0 3.6 3.3";
        assert!(scaling_facts(&text(&narrow)).is_err());
    }
}
