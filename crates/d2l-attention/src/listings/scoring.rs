//! The listings of "Attention Scoring Functions" (d2l zh §10.3, en §11.3).

use std::fmt::Write;

use burn::tensor::{Device, Int, Tensor, activation::softmax};

use super::{Listing, Output};
use crate::attention_scoring::*;
use crate::printing::format_tensor;
use crate::random::{rand, randn, seeded_linear};
use crate::{HeatmapOptions, show_heatmaps};

/// This chapter's listings.
pub const LISTINGS: &[Listing] = &[
    Listing::new("scoring-masked-softmax", file!(), masked_softmax_demo),
    Listing::new("scoring-additive", file!(), additive_demo),
    Listing::new("scoring-dot-product", file!(), dot_product_demo),
    Listing::new("scoring-variance", file!(), variance_demo),
    Listing::new("scoring-table", file!(), table_demo),
    Listing::new("scoring-self-attention", file!(), self_attention_demo),
    Listing::new("scoring-projection", file!(), projection_exercise),
    Listing::new("scoring-other-keys", file!(), other_keys_exercise),
    Listing::new("scoring-sum", file!(), sum_exercise),
    Listing::new("scoring-distance", file!(), distance_exercise),
    Listing::new("scoring-cost", file!(), cost_exercise),
];

fn masked_softmax_demo(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: masked_softmax_demo
    let scores = rand([2, 2, 4], 0, device);
    let per_sequence = ValidLens::new(&[2, 3], device);
    let weights = masked_softmax(scores.clone(), Some(&per_sequence));
    writeln!(out, "valid_lens [2, 3]:\n{}", format_tensor(weights, 4))?;
    let per_query = ValidLens::per_query(&[[1, 3], [2, 4]], device);
    let weights = masked_softmax(scores, Some(&per_query));
    writeln!(
        out,
        "valid_lens [[1, 3], [2, 4]]:\n{}",
        format_tensor(weights, 4)
    )?;
    // ANCHOR_END: masked_softmax_demo
    Ok(())
}

/// The demo values of d2l §10.3: arange(40) as ten 4-vectors, for both batch elements.
fn demo_values(device: &Device) -> Tensor<3> {
    Tensor::<1, Int>::arange(0..40, device)
        .float()
        .reshape([1, 10, 4])
        .repeat_dim(0, 2)
}

fn additive_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: additive_demo
    let queries = randn([2, 1, 20], 1, device);
    let keys = Tensor::<3>::ones([2, 10, 2], device);
    // (2, 10, 4): 0, 1, …, 39 in both batch elements
    let values = demo_values(device);
    let valid_lens = ValidLens::new(&[2, 6], device);
    let attention = AdditiveAttentionConfig::new(2, 20, 8)
        .with_dropout(0.1)
        .init(device);
    let attended = attention.forward(queries, keys, values, Some(&valid_lens));
    writeln!(out, "{}", format_tensor(attended.output, 4))?;
    let weights = attended.attention_weights.tensor().reshape([1, 1, 2, 10]);
    // 2 queries × 10 keys: a wide figure
    let options = HeatmapOptions {
        figsize: (5.0, 1.6),
        ..HeatmapOptions::default()
    };
    let figure = show_heatmaps(&weights, "Keys", "Queries", options)?;
    // ANCHOR_END: additive_demo
    out.figure("scoring-additive", figure);
    Ok(())
}

fn dot_product_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: dot_product_demo
    let queries = randn([2, 1, 2], 2, device);
    let keys = Tensor::<3>::ones([2, 10, 2], device);
    let valid_lens = ValidLens::new(&[2, 6], device);
    let attention = DotProductAttentionConfig::new().with_dropout(0.5).init();
    let attended = attention.forward(
        queries,
        keys,
        demo_values(device),
        Some(&valid_lens),
    );
    writeln!(out, "{}", format_tensor(attended.output, 4))?;
    let weights = attended.attention_weights.tensor().reshape([1, 1, 2, 10]);
    // 2 queries × 10 keys: a wide figure
    let options = HeatmapOptions {
        figsize: (5.0, 1.6),
        ..HeatmapOptions::default()
    };
    let figure = show_heatmaps(&weights, "Keys", "Queries", options)?;
    // ANCHOR_END: dot_product_demo
    out.figure("scoring-dot-product", figure);
    Ok(())
}

fn variance_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: variance_demo
    // 10 000 pairs of N(0, 1) vectors of size d: how spread out are their dot
    // products?
    for d in [2, 16, 128, 1024] {
        let queries = randn([10_000, d], 3, device);
        let keys = randn([10_000, d], 4, device);
        let dots = (queries * keys).sum_dim(1);
        let variance = |x: Tensor<2>| {
            x.clone().powi_scalar(2).mean().into_scalar::<f32>()
                - x.mean().into_scalar::<f32>().powi(2)
        };
        let (raw, scaled) =
            (variance(dots.clone()), variance(dots / (d as f64).sqrt()));
        writeln!(
            out,
            "d = {d:>4}: variance of q·k {raw:>8.2}, of q·k/√d {scaled:.2}"
        )?;
    }
    // What unscaled scores do to a softmax: one query, 10 keys, d = 1024.
    let scores = randn([1, 1024], 20, device)
        .matmul(randn([10, 1024], 21, device).transpose());
    for (name, s) in [("q·k", scores.clone()), ("q·k/√d", scores / 32.0)] {
        let largest = softmax(s, 1).max().into_scalar::<f32>();
        writeln!(
            out,
            "softmax of {name:<6} over 10 keys: largest {largest:.2}"
        )?;
    }
    // ANCHOR_END: variance_demo
    Ok(())
}

fn table_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: table_demo
    // One batch element, two queries, four keys, all of size 3.
    let queries = randn([1, 2, 3], 5, device);
    let keys = randn([1, 4, 3], 6, device);
    // Parameters from our seeded generator, so that every build prints the
    // same.
    let additive = AdditiveAttention {
        w_q: seeded_linear(3, 8, 20, device),
        w_k: seeded_linear(3, 8, 21, device),
        w_v: seeded_linear(8, 1, 22, device),
        ..AdditiveAttentionConfig::new(3, 3, 8).init(device)
    };
    let dot = DotProductAttentionConfig::new().with_scaled(false).init();
    let scaled_dot = DotProductAttentionConfig::new().init();
    let w = randn([3, 3], 7, device);
    let table = [
        (
            "additive      wᵀtanh(W_q q + W_k k)",
            additive.scores(queries.clone(), keys.clone()),
        ),
        (
            "dot product   kᵀq",
            dot.scores(queries.clone(), keys.clone()),
        ),
        (
            "scaled dot    kᵀq / √d",
            scaled_dot.scores(queries.clone(), keys.clone()),
        ),
        ("bilinear      kᵀ W q", bilinear_scores(queries, keys, w)),
    ];
    // a matrix after a label of 10 columns, its second row under its first
    let show = |matrix: Tensor<3>| {
        format_tensor(matrix.squeeze::<2>(), 3).replace('\n', "\n          ")
    };
    for (name, scores) in table {
        let weights = masked_softmax(scores.clone(), None);
        writeln!(
            out,
            "{name}\n  scores  {}\n  weights {}",
            show(scores),
            show(weights)
        )?;
    }
    // ANCHOR_END: table_demo
    Ok(())
}

fn self_attention_demo(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: self_attention_demo
    // Five tokens of size d1 = 6; d3 = 4 for queries and keys, d2 = 3 for
    // values.
    let x = randn([6, 5], 8, device);
    let (w_q, w_k, w_v) = (
        randn([4, 6], 9, device),
        randn([4, 6], 10, device),
        randn([3, 6], 11, device),
    );
    let by_loop = self_attention_loop(&x, &w_q, &w_k, &w_v);
    let (vectorised, weights) = self_attention(&x, &w_q, &w_k, &w_v);
    let gap = (by_loop - vectorised.clone())
        .abs()
        .max()
        .into_scalar::<f32>();
    writeln!(
        out,
        "H =\n{}\nlargest difference between loop and vectorised: {gap:.1e}",
        format_tensor(vectorised, 4)
    )?;
    let figure = show_heatmaps(
        &weights.reshape([1, 1, 5, 5]),
        "Keys",
        "Queries",
        HeatmapOptions::default(),
    )?;
    // ANCHOR_END: self_attention_demo
    out.figure("scoring-self-attention", figure);
    Ok(())
}

/// Exercise: dot-product attention between queries and keys of different
/// sizes, by projecting the queries to the key size first.
fn projection_exercise(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: projection_exercise
    let queries = randn([2, 1, 20], 1, device); // query_size 20
    let keys = randn([2, 10, 2], 12, device); // key_size 2
    let valid_lens = ValidLens::new(&[2, 6], device);
    let attention = DotProductAttentionConfig::new().init();
    // Without a projection the sizes cannot meet (the layer would panic):
    let (q, k) = (queries.dims(), keys.dims());
    writeln!(out, "queries {q:?}, keys {k:?}: {} ≠ {}", q[2], k[2])?;
    // A learnable W (query_size → key_size) makes them comparable: score = kᵀ(W
    // q) / √2.
    let project = seeded_linear(20, 2, 13, device);
    let attended = attention.forward(
        project.forward(queries),
        keys,
        demo_values(device),
        Some(&valid_lens),
    );
    writeln!(
        out,
        "weights:\n{}",
        format_tensor(attended.attention_weights.tensor(), 4)
    )?;
    // ANCHOR_END: projection_exercise
    Ok(())
}

/// Exercise 1: the two demos with keys that differ.
fn other_keys_exercise(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: other_keys_exercise
    // Seeded N(0, 1) keys instead of ones; everything else as in the demos.
    let keys = randn([2, 10, 2], 14, device);
    let valid_lens = ValidLens::new(&[2, 6], device);
    // seeded weights, so that every build prints the same
    let additive = AdditiveAttention {
        w_q: seeded_linear(20, 8, 15, device),
        w_k: seeded_linear(2, 8, 16, device),
        w_v: seeded_linear(8, 1, 17, device),
        ..AdditiveAttentionConfig::new(2, 20, 8).init(device)
    };
    let dot = DotProductAttentionConfig::new().init();
    let (values, lens) = (demo_values(device), Some(&valid_lens));
    let queries = randn([2, 1, 20], 1, device);
    let a = additive.forward(queries, keys.clone(), values.clone(), lens);
    let queries = randn([2, 1, 2], 2, device);
    let d = dot.forward(queries, keys, values, lens);
    let (a, d) = (a.attention_weights.tensor(), d.attention_weights.tensor());
    writeln!(out, "additive:\n{}", format_tensor(a.clone(), 4))?;
    writeln!(out, "dot product:\n{}", format_tensor(d.clone(), 4))?;
    // (1, 2, 2, 10): the two layers side by side
    let both = Tensor::stack::<4>(vec![a, d], 0).reshape([1, 2, 2, 10]);
    let options = HeatmapOptions {
        titles: Some(&["Additive", "Dot product"]),
        figsize: (6.0, 1.5),
        ..HeatmapOptions::default()
    };
    let figure = show_heatmaps(&both, "Keys", "Queries", options)?;
    // ANCHOR_END: other_keys_exercise
    out.figure("scoring-other-keys", figure);
    Ok(())
}

/// Exercise 3: the sum of query and key as a score.
fn sum_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: sum_exercise
    // Three different queries, five keys, all of size 4.
    let queries = randn([1, 3, 4], 18, device);
    let keys = randn([1, 5, 4], 19, device);
    // a(q, k) = Σᵢ (qᵢ + kᵢ) = Σ q + Σ k: (1, 3, 1) + (1, 1, 5) → (1, 3, 5)
    let scores = queries.sum_dim(2) + keys.sum_dim(2).swap_dims(1, 2);
    let weights = masked_softmax(scores, None);
    writeln!(out, "{}", format_tensor(weights, 4))?;
    // ANCHOR_END: sum_exercise
    Ok(())
}

// ANCHOR: distance_scores
/// a(q, k) = −‖q − k‖² / (2√d) without the −‖q‖² / (2√d) that every key of
/// a row shares: (qᵀk − ‖k‖²/2) / √d, for queries (b, q, d) and keys (b,
/// k, d).
fn distance_scores(queries: Tensor<3>, keys: Tensor<3>) -> Tensor<3> {
    let d = (queries.dims()[2] as f64).sqrt();
    // ‖kᵢ‖², once per key: (b, k, 1) → (b, 1, k)
    let norms = keys.clone().powi_scalar(2).sum_dim(2).swap_dims(1, 2);
    (queries.matmul(keys.swap_dims(1, 2)) - norms / 2.0) / d
}
// ANCHOR_END: distance_scores

/// Exercise 5: distance-based attention (d2l en §11.3, exercise 1).
fn distance_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: distance_exercise
    let queries = randn([1, 2, 4], 20, device);
    let keys = randn([1, 6, 4], 21, device);
    // the same keys scaled to norm 1
    let unit = keys.clone() / keys.clone().powi_scalar(2).sum_dim(2).sqrt();
    let dot = DotProductAttentionConfig::new().init();
    for (name, keys) in [("random keys", keys), ("keys of norm 1", unit)] {
        let by_distance = distance_scores(queries.clone(), keys.clone());
        let by_dot = dot.scores(queries.clone(), keys);
        let (a, b) = (softmax(by_distance, 2), softmax(by_dot, 2));
        writeln!(out, "{name}, distance:\n{}", format_tensor(a, 4))?;
        writeln!(out, "{name}, dot product:\n{}", format_tensor(b, 4))?;
    }
    // ANCHOR_END: distance_exercise
    Ok(())
}

// ANCHOR: cost_count
/// The work of one forward pass over `b` batches of `n` queries and `n`
/// keys of `d` features (values of `d` too), in FLOPs (a multiply-add is
/// 2, a sum, tanh or exp 1), and the entries of its largest intermediate
/// tensor: additive attention with `h` hidden units, or (h = None) scaled
/// dot products. The size of the values, d here, enters only the pooling
/// both share.
fn cost(b: usize, n: usize, d: usize, h: Option<usize>) -> (usize, usize) {
    // exp, sum, divide (the subtraction of each row's maximum, which
    // keeps exp finite, is left out: it is the same for both layers)
    let softmax = 3 * b * n * n;
    let pooling = 2 * b * n * n * d; // weights (n × n) by values (n × d)
    match h {
        // W_q q and W_k k; then per (query, key) pair, h sums, h tanh
        // and h multiply-adds with w_v, in a (b, n, n, h) tensor
        Some(h) => {
            let scores = 4 * b * n * d * h + 4 * b * n * n * h;
            (scores + softmax + pooling, b * n * n * h)
        }
        // a d-long dot product per pair, then one division by √d
        None => (2 * b * n * n * d + b * n * n + softmax + pooling, b * n * n),
    }
}
// ANCHOR_END: cost_count

/// Exercise 4: the cost of additive and scaled dot-product attention as
/// the sizes grow (d2l en §11.3, exercise 3).
fn cost_exercise(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: cost_exercise
    let b = 2;
    writeln!(
        out,
        "               MFLOP                 largest tensor, MB"
    )?;
    writeln!(
        out,
        "  n    d    h  additive    dot  ratio  additive    dot  ratio"
    )?;
    let sizes = [
        (64, 64, 64),
        (256, 64, 64),
        (256, 64, 16),
        (256, 64, 256),
        (256, 256, 64),
    ];
    for (n, d, h) in sizes {
        let (add, add_largest) = cost(b, n, d, Some(h));
        let (dot, dot_largest) = cost(b, n, d, None);
        let (mb, mflop) =
            (|e: usize| e as f64 * 4e-6, |f: usize| f as f64 / 1e6);
        writeln!(
            out,
            "{n:3} {d:4} {h:4} {:9.1} {:6.1} {:6.2} {:9.2} {:6.2} {:6}",
            mflop(add),
            mflop(dot),
            add as f64 / dot as f64,
            mb(add_largest),
            mb(dot_largest),
            add_largest / dot_largest,
        )?;
    }
    // ANCHOR_END: cost_exercise
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    fn run(name: &str, device: &Device) -> Output {
        super::super::run_named(LISTINGS, name, device)
    }

    /// The closed form of d2l's demo: with identical keys the weights are
    /// uniform over the valid keys, so the output is the mean of the first
    /// 2 (and 6) values.
    const CLOSED_FORM: &str = "[[[2.0000, 3.0000, 4.0000, 5.0000]],\n [[10.0000, 11.0000, 12.0000, 13.0000]]]\n";

    #[test]
    fn identical_keys_give_the_closed_form_for_both_layers() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let device = backend.device().unwrap();
            assert_eq!(
                run("scoring-additive", &device).text(),
                CLOSED_FORM,
                "{backend}"
            );
            assert_eq!(
                run("scoring-dot-product", &device).text(),
                CLOSED_FORM,
                "{backend}"
            );
        }
    }

    #[test]
    fn scaling_brings_the_variance_of_dot_products_to_one() {
        let out = run("scoring-variance", &Device::flex());
        let (lines, softmax): (Vec<&str>, Vec<&str>) =
            out.text().lines().partition(|l| l.starts_with("d ="));
        // Unscaled, one key takes nearly all the weight; scaled, none does.
        let largest =
            |l: &str| -> f32 { l.rsplit(' ').next().unwrap().parse().unwrap() };
        assert!(
            largest(softmax[0]) > 0.99 && largest(softmax[1]) < 0.5,
            "{softmax:?}"
        );
        for line in lines {
            let d: f32 = line
                .split(':')
                .next()
                .unwrap()
                .trim_start_matches("d =")
                .trim()
                .parse()
                .unwrap();
            let numbers: Vec<f32> = line
                .split_whitespace()
                .filter_map(|w| w.trim_end_matches(',').parse().ok())
                .collect();
            let (raw, scaled) =
                (numbers[numbers.len() - 2], numbers[numbers.len() - 1]);
            assert!(
                (raw / d - 1.0).abs() < 0.1 && (scaled - 1.0).abs() < 0.1,
                "{line}"
            );
        }
    }

    #[test]
    fn loop_and_vectorised_self_attention_agree() {
        let out = run("scoring-self-attention", &Device::flex());
        let gap: f32 = out
            .text()
            .rsplit(": ")
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(gap < 1e-5, "{gap}");
    }

    /// Exercise 1's answer: with identical keys both layers give uniform
    /// weights over the valid keys; with keys that differ they disagree.
    #[test]
    fn the_layers_agree_only_on_identical_keys() {
        let device = Device::flex();
        let weights = |keys: Tensor<3>| {
            let lens = ValidLens::new(&[2, 6], &device);
            let additive = AdditiveAttention {
                w_q: seeded_linear(20, 8, 15, &device),
                w_k: seeded_linear(2, 8, 16, &device),
                w_v: seeded_linear(8, 1, 17, &device),
                ..AdditiveAttentionConfig::new(2, 20, 8).init(&device)
            };
            let dot = DotProductAttentionConfig::new().init();
            let values = demo_values(&device);
            let a = additive.forward(
                randn([2, 1, 20], 1, &device),
                keys.clone(),
                values.clone(),
                Some(&lens),
            );
            let d = dot.forward(
                randn([2, 1, 2], 2, &device),
                keys,
                values,
                Some(&lens),
            );
            (a.attention_weights.tensor(), d.attention_weights.tensor())
        };
        let (a, d) = weights(Tensor::ones([2, 10, 2], &device));
        let gap = (a - d).abs().max().into_scalar::<f32>();
        assert!(gap < 1e-6, "{gap}");
        let (a, d) = weights(randn([2, 10, 2], 14, &device));
        let gap = (a - d).abs().max().into_scalar::<f32>();
        assert!(gap > 0.05, "{gap}");
        assert_eq!(run("scoring-other-keys", &device).figures().len(), 1);
    }

    /// Exercise 3's answer: with a sum as score every query gets the same
    /// weights.
    #[test]
    fn a_sum_score_gives_every_query_the_same_weights() {
        let text = run("scoring-sum", &Device::flex()).text().to_owned();
        let rows: Vec<&str> = text
            .lines()
            .map(|l| l.trim_matches(|c| "[], ".contains(c)))
            .collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[1] == rows[0] && rows[2] == rows[0], "{text}");
    }

    /// Exercise 5's answer: distance scores from one product and the key
    /// norms give the weights of −‖q − k‖² / (2√d) computed directly, and
    /// the dot product's weights when every key has norm 1, not otherwise.
    #[test]
    fn distance_attention_is_dot_product_attention_with_a_key_bias() {
        let device = Device::flex();
        let queries = randn([2, 3, 4], 5, &device);
        let keys = randn([2, 7, 4], 6, &device) * 2.0;
        let gap = |a: Tensor<3>, b: Tensor<3>| {
            (a - b).abs().max().into_scalar::<f32>()
        };
        // (b, q, 1, d) − (b, 1, k, d): every difference q − k
        let differences = queries.clone().unsqueeze_dim::<4>(2)
            - keys.clone().unsqueeze_dim::<4>(1);
        let squared: Tensor<3> =
            differences.powi_scalar(2).sum_dim(3).squeeze_dim(3);
        let direct = softmax(-squared / 4.0, 2); // 2√d = 4
        let ours = softmax(distance_scores(queries.clone(), keys.clone()), 2);
        assert!(gap(direct, ours.clone()) < 1e-6);
        let dot = DotProductAttentionConfig::new().init();
        let by_dot = softmax(dot.scores(queries.clone(), keys.clone()), 2);
        assert!(gap(ours, by_dot) > 0.05);
        let unit = keys.clone() / keys.powi_scalar(2).sum_dim(2).sqrt();
        let ours = softmax(distance_scores(queries.clone(), unit.clone()), 2);
        let by_dot = softmax(dot.scores(queries, unit), 2);
        assert!(gap(ours, by_dot) < 1e-6);
        let text = run("scoring-distance", &device).text().to_owned();
        assert_eq!(text.matches("dot product:").count(), 2, "{text}");
    }

    /// Exercise 4: the counts agree with the shapes the two layers build
    /// (weights, scores, the (b, n, n, h) features), the largest tensors
    /// differ by exactly h, and for long sequences the scores' ratio of
    /// FLOPs tends to 4h/(2d + 1), about 2h/d.
    #[test]
    fn the_cost_counts_follow_the_shapes() {
        let device = Device::flex();
        for (b, n, d, h) in [(2, 64, 64, 64), (1, 10, 8, 3), (3, 7, 5, 16)] {
            let (q, k) =
                (randn([b, n, d], 1, &device), randn([b, n, d], 2, &device));
            let layer = AdditiveAttentionConfig::new(d, d, h).init(&device);
            let entries = |dims: &[usize]| dims.iter().product::<usize>();
            let projected = [&layer.w_q, &layer.w_k]
                .map(|w| 2 * b * n * entries(&w.weight.dims()));
            let features = (layer.w_q.forward(q.clone()).unsqueeze_dim::<4>(2)
                + layer.w_k.forward(k.clone()).unsqueeze_dim::<4>(1))
            .dims();
            let scores = layer.scores(q.clone(), k.clone()).dims();
            let [w_v_in, w_v_out] = layer.w_v.weight.dims();
            assert!(layer.w_q.bias.is_none() && w_v_out == 1);
            // sum and tanh per entry, a multiply-add with w_v
            let per_feature = 1 + 1 + 2 * w_v_out;
            let shared = 3 * entries(&scores) + 2 * entries(&scores) * d;
            let additive = projected.iter().sum::<usize>()
                + per_feature * entries(&features)
                + shared;
            assert_eq!(w_v_in, h);
            assert_eq!(cost(b, n, d, Some(h)), (additive, entries(&features)));
            let dot_scores =
                DotProductAttentionConfig::new().init().scores(q, k).dims();
            let dot =
                2 * entries(&dot_scores) * d + entries(&dot_scores) + shared;
            assert_eq!(cost(b, n, d, None), (dot, entries(&dot_scores)));
            assert_eq!(entries(&features), h * entries(&dot_scores));
        }
        let (d, h) = (64, 16);
        let ratio = |n| {
            let (add, dot) = (cost(1, n, d, Some(h)).0, cost(1, n, d, None).0);
            // the scores alone: drop the shared softmax and pooling
            let shared = 3 * n * n + 2 * n * n * d;
            (add - shared) as f64 / (dot - shared) as f64
        };
        let limit = 4.0 * h as f64 / (2 * d + 1) as f64;
        assert!(
            (ratio(1 << 20) - limit).abs() < 1e-4 * limit,
            "{}",
            ratio(1 << 20)
        );
        assert!(ratio(64) > 1.5 * limit);
    }
}
