//! The listings of "Self-Attention and Positional Encoding" (d2l zh §10.6,
//! en §11.6).

use std::fmt::Write;

use burn::module::{Module, Param};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, Linear};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor, activation::softmax};

use super::{Check, Listing, Output};
use crate::attention_scoring::{
    DotProductAttentionConfig, ValidLens, self_attention,
};
use crate::multihead_attention::*;
use crate::plot::{Diagram, Node, Scale};
use crate::positional_encoding::*;
use crate::random::{randn, seeded_linear, seeded_multihead};
use crate::{Axes, Series, plot};

/// This chapter's listings.
pub const LISTINGS: &[Listing] = &[
    Listing::new("sa-shapes", file!(), shapes_demo),
    Listing::new("sa-matrix-form", file!(), matrix_form_demo),
    Listing::new("sa-layers-diagram", file!(), layers_diagram),
    Listing::new("sa-complexity", file!(), complexity_demo),
    Listing::new("pe-columns", file!(), columns_demo),
    Listing::new("pe-binary", file!(), binary_demo),
    Listing::new("pe-heatmap", file!(), heatmap_demo),
    Listing::new("pe-relative", file!(), relative_demo),
    Listing::new("sa-permutation", file!(), permutation_exercise),
    Listing::new("pe-learned", file!(), learned_exercise),
    Listing {
        name: "pe-shaw",
        file: file!(),
        check: Check::Facts(shaw_facts),
        run: shaw_exercise,
    },
];

fn shapes_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: shapes
    let (num_hiddens, num_heads) = (100, 5);
    let attention = MultiHeadAttentionConfig::new(
        num_hiddens,
        num_hiddens,
        num_hiddens,
        num_hiddens,
        num_heads,
    )
    .with_dropout(0.5)
    .init(device);
    let (batch_size, num_queries) = (2, 4);
    let valid_lens = ValidLens::new(&[3, 2], device);
    let x = Tensor::<3>::ones([batch_size, num_queries, num_hiddens], device);
    // queries, keys and values are all X
    let attended =
        attention.forward(x.clone(), x.clone(), x, Some(&valid_lens));
    writeln!(out, "output:  {:?}", attended.output.dims())?;
    writeln!(out, "weights: {:?}", attended.attention_weights.dims())?;
    // ANCHOR_END: shapes
    Ok(())
}

fn matrix_form_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: matrix_form
    // Five tokens of size 6 as the columns of X (the scoring chapter's
    // layout), projections to size 4.
    let x = randn([6, 5], 8, device);
    let (w_q, w_k, w_v) = (
        randn([4, 6], 9, device),
        randn([4, 6], 10, device),
        randn([4, 6], 11, device),
    );
    let (h, _) = self_attention(&x, &w_q, &w_k, &w_v);
    // The same with DotProductAttention: tokens as rows, a batch of one.
    let rows = |w: &Tensor<2>| w.clone().matmul(x.clone()).transpose();
    let attended = DotProductAttentionConfig::new().init().forward(
        rows(&w_q).unsqueeze(),
        rows(&w_k).unsqueeze(),
        rows(&w_v).unsqueeze(),
        None,
    );
    let layer: Tensor<2> = attended.output.squeeze_dim(0);
    let gap = (layer - h.transpose()).abs().max().into_scalar::<f32>();
    writeln!(out, "largest difference below 1e-5: {}", gap < 1e-5)?;
    // ANCHOR_END: matrix_form
    Ok(())
}

// ANCHOR: costs
/// Multiply-adds, sequential steps and the longest path between two of
/// n ≥ 2 tokens of size d (d2l zh §10.6.2) for a convolution of width
/// k ≥ 2, a recurrent layer and self-attention. The paths count what lies
/// between the first token and the last: each convolution widens what an
/// output reads by k − 1 positions, so ⌈(n − 1)/(k − 1)⌉ stacked layers
/// before one output reads both, O(n/k); n − 1 recurrent steps; one
/// attention.
fn costs(n: usize, d: usize, k: usize) -> [(&'static str, [usize; 3]); 3] {
    [
        ("CNN", [k * n * d * d, 1, (n - 1).div_ceil(k - 1)]),
        ("RNN", [n * d * d, n, n - 1]),
        ("self-attention", [n * n * d, 1, 1]),
    ]
}
// ANCHOR_END: costs

// ANCHOR: layer_reads
/// The inputs that output `j` of one layer reads, over `n` tokens: for
/// `panel` 0 a convolution of width 3 (no padding: the end outputs read
/// two), 1 a recurrent layer (its own input; the previous output comes by
/// the recurrence), 2 self-attention (every input).
fn reads(panel: usize, j: usize, n: usize) -> std::ops::Range<usize> {
    match panel {
        0 => j.saturating_sub(1)..(j + 2).min(n),
        1 => j..j + 1,
        _ => 0..n,
    }
}
// ANCHOR_END: layer_reads

/// What one layer of each kind connects, over five tokens (d2l zh §10.6.2,
/// fig. 10.6.1): a convolution of width 3, a recurrent layer, and
/// self-attention.
fn layers_diagram(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: layers_diagram
    let n = 5;
    let mut figure = Diagram::new((730, 230));
    for (panel, name) in
        ["CNN (k = 3)", "RNN", "self-attention"].iter().enumerate()
    {
        let left = 20 + 245 * panel as i32;
        let token = |i: usize, y: i32, text: &str| {
            Node::new((left + 44 * i as i32, y), (32, 28), text)
        };
        let inputs: Vec<Node> = (0..n)
            .map(|i| token(i, 150, &format!("x_{{{}}}", i + 1)))
            .collect();
        let outputs: Vec<Node> = (0..n)
            .map(|i| token(i, 30, &format!("y_{{{}}}", i + 1)))
            .collect();
        for (j, output) in outputs.iter().enumerate() {
            for i in reads(panel, j, n) {
                figure = figure.arrow(inputs[i].side('t'), output.side('b'));
            }
            if panel == 1 && j > 0 {
                // the recurrence: step j waits for step j − 1
                figure =
                    figure.arrow(outputs[j - 1].side('r'), output.side('l'));
            }
        }
        figure = figure.label((left + 98, 205), name);
        for node in inputs.into_iter().chain(outputs) {
            figure = figure.node(node);
        }
    }
    let figure = figure.draw()?;
    // ANCHOR_END: layers_diagram
    out.figure("sa-layers-diagram", figure);
    Ok(())
}

fn complexity_demo(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: complexity
    let (d, k) = (64, 3);
    writeln!(
        out,
        "{:>14} {:>5} {:>12} {:>10} {:>5}",
        "", "n", "mult-adds", "sequential", "path"
    )?;
    for n in [16, 64, 256] {
        for (name, [flops, steps, path]) in costs(n, d, k) {
            writeln!(
                out,
                "{name:>14} {n:>5} {flops:>12} {steps:>10} {path:>5}"
            )?;
        }
    }
    let ns: Vec<f64> = (2..=256).map(|n| n as f64).collect();
    // layer i's `metric` (0: multiply-adds, 2: path) over n, divided by `unit`
    let series = |i: usize, metric: usize, unit: f64| -> Series {
        let y: Vec<f64> = ns
            .iter()
            .map(|&n| costs(n as usize, d, k)[i].1[metric] as f64 / unit)
            .collect();
        Series::line(&ns, &y).label(costs(2, d, k)[i].0)
    };
    let flops = plot(
        &[series(0, 0, 1e6), series(1, 0, 1e6), series(2, 0, 1e6)],
        &Axes::new("tokens n", "multiply-adds, millions"),
    )?;
    let path = plot(
        &[series(0, 2, 1.0), series(1, 2, 1.0), series(2, 2, 1.0)],
        // log scales: self-attention's path of 1 sits on the bottom line
        &Axes::new("tokens n", "longest path between tokens")
            .xscale(Scale::Log)
            .yscale(Scale::Log),
    )?;
    // ANCHOR_END: complexity
    out.figure("sa-complexity-flops", flops);
    out.figure("sa-complexity-path", path);
    Ok(())
}

fn columns_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: columns
    // columns 6 to 9 of a 32-column encoding, over 60 positions
    let figure = encoding_columns(32, 60, 6..10, device)?;
    // ANCHOR_END: columns
    out.figure("pe-columns", figure);
    Ok(())
}

fn binary_demo(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: binary
    for i in 0..8 {
        writeln!(out, "{i} in binary is {i:03b}")?;
    }
    // ANCHOR_END: binary
    Ok(())
}

fn heatmap_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: heatmap
    // 60 positions of a 32-column encoding, as one heatmap
    let figure = encoding_heatmap(32, 60, device)?;
    // ANCHOR_END: heatmap
    out.figure("pe-heatmap", figure);
    Ok(())
}

fn relative_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: relative
    let d = 32;
    let p = PositionalEncodingConfig::new(d)
        .init(device)
        .p
        .squeeze_dim(0);
    let n = 100; // positions 0..100
    for delta in [1, 5, 20] {
        let mut worst = 0.0f32;
        for j in 0..d / 2 {
            let omega = 1.0 / 10000f64.powf(2.0 * j as f64 / d as f64);
            let (s, c) =
                ((delta as f64 * omega).sin(), (delta as f64 * omega).cos());
            // [sin, cos] at i + δ = [sin, cos] at i times Rᵀ, for every i
            let r = Tensor::<2>::from_floats(
                [[c as f32, -s as f32], [s as f32, c as f32]],
                device,
            );
            let pair: Tensor<2> = p.clone().narrow(1, 2 * j, 2);
            let moved = pair.clone().narrow(0, 0, n).matmul(r);
            let target = pair.narrow(0, delta, n);
            let gap = (moved - target).abs().max().into_scalar::<f32>();
            worst = worst.max(gap);
        }
        writeln!(out, "offset {delta:>2}: largest error {worst:.1e}")?;
    }
    // ANCHOR_END: relative
    Ok(())
}

/// Exercise 1: without positions, self-attention cannot tell token order:
/// permuting the tokens only permutes the outputs.
fn permutation_exercise(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: permutation
    let attention = seeded_multihead(16, 4, 80, device);
    let pe = PositionalEncodingConfig::new(16).init(device);
    let x = randn([1, 5, 16], 84, device);
    let order = Tensor::<1, Int>::from_ints([4, 2, 0, 3, 1], device);
    let permute = |t: Tensor<3>| t.select(1, order.clone());
    let layer =
        |t: Tensor<3>| attention.forward(t.clone(), t.clone(), t, None).output;
    for (name, encode) in [("without", false), ("with", true)] {
        let input = |t: Tensor<3>| if encode { pe.forward(t) } else { t };
        let a = layer(input(permute(x.clone()))); // permute, then attend
        let b = permute(layer(input(x.clone()))); // attend, then permute
        let same = (a - b).abs().max().into_scalar::<f32>() < 1e-5;
        writeln!(out, "{name} positions, order does not matter: {same}")?;
    }
    // ANCHOR_END: permutation
    Ok(())
}

// ANCHOR: learned_model
/// A model that must say where each token is: self-attention over the
/// tokens (all equal) plus, optionally, a learned position embedding, then
/// a linear layer scoring the `max_len` positions.
#[derive(Module, Debug)]
struct WhereAmI {
    positions: Option<Embedding>,
    attention: MultiHeadAttention,
    output: Linear,
}

impl WhereAmI {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch_size, num_steps, size] = x.dims();
        let x = match &self.positions {
            Some(embedding) => {
                let p = embedding.weight.val().narrow(0, 0, num_steps);
                x + p.unsqueeze::<3>().expand([batch_size, num_steps, size])
            }
            None => x,
        };
        let attended = self.attention.forward(x.clone(), x.clone(), x, None);
        self.output.forward(attended.output)
    }
}
// ANCHOR_END: learned_model

/// Exercise 2: a learnable positional encoding, trained on a task that
/// needs positions.
fn learned_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: learned
    let (num_steps, size) = (6, 16);
    let device = device.clone().autodiff();
    // every token is the same vector; the label is its position
    let x = Tensor::<3>::ones([8, num_steps, size], &device);
    let labels =
        Tensor::<1, Int>::arange(0..num_steps as i64, &device).repeat_dim(0, 8);
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    for learned in [false, true] {
        let mut model = WhereAmI {
            positions: learned.then(|| Embedding {
                weight: Param::from_tensor(randn(
                    [num_steps, size],
                    90,
                    &device,
                )),
            }),
            attention: seeded_multihead(size, 4, 91, &device),
            output: seeded_linear(size, num_steps, 95, &device),
        };
        let mut optimizer = AdamConfig::new().init();
        let mut loss = 0.0;
        for _ in 0..100 {
            let logits =
                model.forward(x.clone()).reshape([8 * num_steps, num_steps]);
            let l = loss_fn.forward(logits, labels.clone());
            loss = l.clone().into_scalar::<f64>();
            let grads = GradientsParams::from_grads(l.backward(), &model);
            model = optimizer.step(0.05, model, grads);
        }
        let name = if learned {
            "learned positions"
        } else {
            "no positions"
        };
        writeln!(
            out,
            "{name:>17}: loss below 0.05 after 100 steps: {}",
            loss < 0.05
        )?;
        if !learned {
            writeln!(
                out,
                "{:>17}  loss {loss:.2} (ln 6 = {:.2})",
                "",
                6f64.ln()
            )?;
        }
    }
    // ANCHOR_END: learned
    Ok(())
}

// ANCHOR: shaw_model
/// Self-attention with learned relative positions (Shaw, Uszkoreit and
/// Vaswani, 2018, "Self-Attention with Relative Position Representations"),
/// one head: the offset j − i, clipped to ±`clip`, picks a
/// learned vector added to key j and one added to value j when query i
/// looks at them.
#[derive(Module, Debug)]
struct RelativeSelfAttention {
    w_q: Linear,
    w_k: Linear,
    w_v: Linear,
    /// a^K and a^V: (2·clip + 1, d), row clip + o for offset o.
    keys_by_offset: Embedding,
    values_by_offset: Embedding,
    clip: usize,
}

impl RelativeSelfAttention {
    /// x (batch, n, d) → (batch, n, d).
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [_, n, d] = x.dims();
        let (q, k, v) = (
            self.w_q.forward(x.clone()),
            self.w_k.forward(x.clone()),
            self.w_v.forward(x),
        );
        // offsets j − i, clipped, as rows of the tables: (n, n)
        let c = self.clip as i64;
        let offsets: Vec<i64> = (0..n as i64)
            .flat_map(|i| (0..n as i64).map(move |j| (j - i).clamp(-c, c) + c))
            .collect();
        let offsets =
            Tensor::<1, Int>::from_data(offsets.as_slice(), &q.device())
                .reshape([1, n * n]);
        // (1, n, n, d): the vectors added for each (query, key) pair
        let rel_k = self
            .keys_by_offset
            .forward(offsets.clone())
            .reshape([1, n, n, d]);
        let rel_v =
            self.values_by_offset.forward(offsets).reshape([1, n, n, d]);
        // e_ij = q_i · (k_j + a^K_ij) / √d
        let scores = q.clone().matmul(k.swap_dims(1, 2))
            + (q.unsqueeze_dim::<4>(2) * rel_k).sum_dim(3).squeeze_dim(3);
        let weights = softmax(scores / (d as f64).sqrt(), 2);
        // z_i = Σ_j α_ij (v_j + a^V_ij)
        weights.clone().matmul(v)
            + (weights.unsqueeze_dim::<4>(3) * rel_v)
                .sum_dim(2)
                .squeeze_dim(2)
    }
}

/// Exercise 2's model with relative positions in place of absolute ones.
#[derive(Module, Debug)]
struct WhereAmIRelative {
    attention: RelativeSelfAttention,
    output: Linear,
}

impl WhereAmIRelative {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.output.forward(self.attention.forward(x))
    }
}
// ANCHOR_END: shaw_model

/// What exercise 3's trainings print on any machine: without offsets
/// (clipped to 0) the loss stays at ln 6, a uniform guess; with every
/// offset of six tokens told apart (±5) it falls below 1.
///
/// # Errors
/// The first fact that fails, quoting the text.
fn shaw_facts(text: &str) -> anyhow::Result<()> {
    let losses: Vec<f64> = text
        .lines()
        .filter_map(|l| l.rsplit("loss ").next()?.parse().ok())
        .collect();
    anyhow::ensure!(losses.len() == 2, "two losses expected: `{text}`");
    anyhow::ensure!(
        (losses[0] - 6f64.ln()).abs() < 0.01 && losses[1] < 1.0,
        "expected ln 6 without offsets and below 1 with them: `{text}`"
    );
    Ok(())
}

/// Adam steps of exercise 3's trainings.
const SHAW_STEPS: usize = 300;

/// Exercise 3: relative positions (Shaw et al., 2018) on exercise 2's
/// task: say where each of six equal tokens stands.
fn shaw_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: shaw
    let (num_steps, size, batch) = (6, 16, 8);
    let device = device.clone().autodiff();
    let x = Tensor::<3>::ones([batch, num_steps, size], &device);
    let labels = Tensor::<1, Int>::arange(0..num_steps as i64, &device)
        .repeat_dim(0, batch);
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    for clip in [0, 5] {
        let table = |seed| Embedding {
            weight: Param::from_tensor(randn(
                [2 * clip + 1, size],
                seed,
                &device,
            )),
        };
        let mut model = WhereAmIRelative {
            attention: RelativeSelfAttention {
                w_q: seeded_linear(size, size, 96, &device),
                w_k: seeded_linear(size, size, 97, &device),
                w_v: seeded_linear(size, size, 98, &device),
                keys_by_offset: table(99),
                values_by_offset: table(100),
                clip,
            },
            output: seeded_linear(size, num_steps, 95, &device),
        };
        let mut optimizer = AdamConfig::new().init();
        let mut loss = 0.0;
        for _ in 0..SHAW_STEPS {
            let logits = model
                .forward(x.clone())
                .reshape([batch * num_steps, num_steps]);
            let l = loss_fn.forward(logits, labels.clone());
            loss = l.clone().into_scalar::<f64>();
            let grads = GradientsParams::from_grads(l.backward(), &model);
            model = optimizer.step(0.05, model, grads);
        }
        writeln!(out, "offsets clipped to ±{clip}: loss {loss:.3}")?;
    }
    // ANCHOR_END: shaw
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
    fn self_attention_keeps_d2l_s_shape_on_every_backend() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let device = backend.device().unwrap();
            let text = run("sa-shapes", &device).text().to_owned();
            assert_eq!(text, "output:  [2, 4, 100]\nweights: [2, 5, 4, 4]\n");
            let text = run("sa-matrix-form", &device).text().to_owned();
            assert_eq!(text, "largest difference below 1e-5: true\n");
        }
    }

    /// d2l's table: CNN O(k n d²), RNN O(n d²), self-attention O(n² d);
    /// only the RNN is sequential; paths O(n / k), O(n), O(1).
    #[test]
    fn the_costs_follow_the_table_s_orders() {
        let [(_, cnn), (_, rnn), (_, sa)] = costs(256, 64, 3);
        // 128 layers of width 3 reach 1 + 2 · 128 = 257 ≥ 256 tokens, 127
        // reach only 255
        assert_eq!(cnn, [3 * 256 * 64 * 64, 1, 128]);
        // with k = 2 each layer adds one token: n − 1 layers
        assert_eq!(costs(10, 64, 2)[0].1[2], 9);
        assert_eq!(rnn, [256 * 64 * 64, 256, 255]);
        assert_eq!(sa, [256 * 256 * 64, 1, 1]);
        // The curves cross where the figure's caption says: n = 64 = d
        // for the RNN, n = 3d = 192 for the CNN.
        let [(_, cnn), (_, rnn), (_, sa)] = costs(64, 64, 3);
        assert_eq!((sa[0], rnn[0]), (262_144, 262_144));
        assert!(cnn[0] > sa[0]);
        let [(_, cnn), _, (_, sa)] = costs(192, 64, 3);
        assert_eq!(sa[0], cnn[0]);
        // Self-attention is cheaper than the RNN exactly while n < d.
        for n in [32, 63, 64, 65, 100] {
            let [_, (_, rnn), (_, sa)] = costs(n, 64, 3);
            assert_eq!(sa[0] < rnn[0], n < 64, "n = {n}");
        }
    }

    #[test]
    fn order_matters_only_with_positions_and_learned_positions_train() {
        let text = run("sa-permutation", &Device::flex()).text().to_owned();
        assert_eq!(
            text,
            "without positions, order does not matter: true\nwith positions, order does not matter: false\n"
        );
        let text = run("pe-learned", &Device::flex()).text().to_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "     no positions: loss below 0.05 after 100 steps: false"
        );
        assert!(
            lines[1].trim_start().starts_with("loss 1.79 (ln 6 = 1.79)"),
            "{text}"
        );
        assert_eq!(
            lines[2],
            "learned positions: loss below 0.05 after 100 steps: true"
        );
    }

    /// Layers of the diagram's convolution (panel 0) or self-attention
    /// (panel 2) stacked until one output reads all `n` inputs.
    fn layers_until_one_output_reads_all(panel: usize, n: usize) -> usize {
        // what each output of the stack so far reads: (first, last) input
        let mut seen: Vec<(usize, usize)> = (0..n).map(|j| (j, j)).collect();
        let mut layers = 0;
        while !seen.contains(&(0, n - 1)) {
            seen = (0..n)
                .map(|j| {
                    let below = reads(panel, j, n);
                    (seen[below.start].0, seen[below.end - 1].1)
                })
                .collect();
            layers += 1;
        }
        layers
    }

    /// The convolution's and self-attention's paths in `costs` are those of
    /// the layers the diagram draws: the layers stacked until one output
    /// reads the first token and the last (the recurrent layer's n − 1
    /// steps are checked with the table).
    #[test]
    fn the_diagram_s_paths_are_those_of_costs() {
        for n in 2..=40 {
            let [(_, cnn), _, (_, sa)] = costs(n, 64, 3);
            assert_eq!(cnn[2], layers_until_one_output_reads_all(0, n), "{n}");
            assert_eq!(sa[2], layers_until_one_output_reads_all(2, n), "{n}");
        }
        let paths = costs(5, 64, 3).map(|(_, [_, _, path])| path);
        assert_eq!(paths, [2, 4, 1]);
        let out = run("sa-layers-diagram", &Device::flex());
        assert_eq!(out.figures().len(), 1);
    }

    /// Exercise 3: the committed run's facts hold, and a run that does not
    /// learn with offsets fails them.
    #[test]
    fn the_shaw_facts_hold_and_catch_a_failed_run() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../figures/pe-shaw.txt"
        ))
        .unwrap();
        shaw_facts(&text).unwrap();
        let stuck = "offsets clipped to ±0: loss 1.792\n\
                     offsets clipped to ±5: loss 1.790\n";
        assert!(shaw_facts(stuck).is_err());
    }
}
