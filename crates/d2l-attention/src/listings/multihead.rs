//! The listings of "Multi-Head Attention" (d2l zh §10.5, en §11.5).

use std::fmt::Write;

use burn::module::Module;
use burn::tensor::{Device, Tensor};

use super::{Listing, Output};
use crate::attention_scoring::ValidLens;
use crate::multihead_attention::*;
use crate::plot::{Diagram, Node};
use crate::random::{rand, randn, seeded_multihead};
use crate::{HeatmapOptions, show_heatmaps};

/// This chapter's listings.
pub const LISTINGS: &[Listing] = &[
    Listing::new("mha-diagram", file!(), model_diagram),
    Listing::new("mha-cost", file!(), cost_demo),
    Listing::new("mha-module", file!(), module_demo),
    Listing::new("mha-shapes", file!(), shapes_demo),
    Listing::new("mha-heads", file!(), heads_demo),
    Listing::new("mha-pytorch", file!(), pytorch_demo),
    Listing::new("mha-burn", file!(), burn_demo),
    Listing::new("mha-pruning", file!(), pruning_exercise),
];

/// The layer as a diagram (d2l zh §10.5, fig. 10.5.1): h heads, each
/// projecting queries, keys and values and attending, then the heads
/// concatenated and mixed by W_o.
fn model_diagram(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: diagram
    let node = |x, y, width, text: &str| Node::new((x, y), (width, 40), text);
    let inputs = [(70, "queries"), (290, "keys"), (510, "values")]
        .map(|(x, text)| node(x, 430, 120, text));
    let mut figure = Diagram::new((700, 484)).label((350, 284), "…");
    for (left, head) in [(20, "1"), (380, "h")] {
        let attention = node(
            left,
            250,
            300,
            &format!("scaled dot-product attention, head {head}"),
        );
        for (j, input) in inputs.iter().enumerate() {
            let kind = ["q", "k", "v"][j];
            let text = format!("W_{{{kind},{head}}}");
            let projection = node(left + 95 * j as i32, 340, 80, &text);
            let x = projection.side('t').0;
            figure = figure
                .arrow(input.side('t'), projection.side('b'))
                .arrow(projection.side('t'), (x, 290))
                .node(projection);
        }
        let x = attention.side('t').0;
        figure = figure.arrow(attention.side('t'), (x, 200)).node(attention);
    }
    let concat = node(20, 160, 660, "concatenate the h heads' outputs");
    let w_o = node(250, 80, 200, "W_{o}");
    let output = node(250, 10, 200, "output");
    let figure = figure
        .arrow(concat.side('t'), w_o.side('b'))
        .arrow(w_o.side('t'), output.side('b'));
    let mut figure = figure.node(concat).node(w_o).node(output);
    for input in inputs {
        figure = figure.node(input);
    }
    let figure = figure.draw()?;
    // ANCHOR_END: diagram
    out.figure("mha-diagram", figure);
    Ok(())
}

/// Parameters and multiply-adds of the layer for several head counts,
/// next to h heads of full width (d2l zh §10.5.2: p_q = p_k = p_v = p_o / h
/// keeps the cost from growing).
fn cost_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: cost
    let (d, p_o, n) = (512, 512, 128); // input size, num_hiddens, tokens
    writeln!(out, "      p_q = p_o / h (d2l)         p_q = p_o")?;
    writeln!(out, "h   parameters   mult-adds    parameters   mult-adds")?;
    for h in [1, 2, 8] {
        let layer = MultiHeadAttentionConfig::new(d, d, d, p_o, h).init(device);
        let parameters = layer.num_params();
        // n tokens through W_q, W_k, W_v (d → p_o) and W_o (p_o → p_o),
        // then each head's n × n scores and weighted sums over its p_o / h
        // features
        let mult_adds = n * (3 * d + p_o) * p_o + h * 2 * n * n * (p_o / h);
        // h heads of p_o features each; W_o then takes h · p_o inputs
        let wide_parameters = 3 * d * h * p_o + h * p_o * p_o;
        let wide_mult_adds = n * wide_parameters + h * 2 * n * n * p_o;
        writeln!(
            out,
            "{h} {parameters:>12} {mult_adds:>11} {wide_parameters:>13} \
             {wide_mult_adds:>11}"
        )?;
    }
    // ANCHOR_END: cost
    Ok(())
}

fn module_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: module
    let (num_hiddens, num_heads) = (100, 5);
    // key, query and value sizes, num_hiddens, num_heads
    let attention = MultiHeadAttentionConfig::new(
        num_hiddens,
        num_hiddens,
        num_hiddens,
        num_hiddens,
        num_heads,
    )
    .with_dropout(0.5)
    .init(device);
    writeln!(out, "{attention}")?;
    // ANCHOR_END: module
    Ok(())
}

fn shapes_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: shapes
    let attention =
        MultiHeadAttentionConfig::new(100, 100, 100, 100, 5).init(device);
    let (batch_size, num_queries, num_kvpairs) = (2, 4, 6);
    let valid_lens = ValidLens::new(&[3, 2], device);
    let x = Tensor::<3>::ones([batch_size, num_queries, 100], device);
    let y = Tensor::<3>::ones([batch_size, num_kvpairs, 100], device);
    let heads = transpose_qkv(x.clone(), 5);
    writeln!(out, "queries, split:  {:?}", heads.dims())?;
    writeln!(
        out,
        "heads, joined:   {:?}",
        transpose_output(heads, 5).dims()
    )?;
    let attended = attention.forward(x, y.clone(), y, Some(&valid_lens));
    writeln!(out, "output:          {:?}", attended.output.dims())?;
    let weights = attended.attention_weights.dims();
    writeln!(out, "weights:         {weights:?}")?;
    // ANCHOR_END: shapes
    Ok(())
}

fn heads_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: heads
    // One sequence of 6 tokens attends to itself, 4 heads of size 4; the
    // last token is padding.
    let attention = seeded_multihead(16, 4, 30, device);
    let x = randn([1, 6, 16], 34, device) * 2.0;
    let valid_lens = ValidLens::new(&[5], device);
    let attended =
        attention.forward(x.clone(), x.clone(), x, Some(&valid_lens));
    // (1, num_heads, 6, 6): one row of panels, one panel per head
    let weights = attended.attention_weights.tensor();
    let titles = ["Head 0", "Head 1", "Head 2", "Head 3"];
    let options = HeatmapOptions {
        titles: Some(&titles),
        figsize: (7.0, 2.5),
        ..HeatmapOptions::default()
    };
    let figure = show_heatmaps(&weights, "Keys", "Queries", options)?;
    // Where each head's first query looks most.
    for (head, row) in weights.iter_dim(1).enumerate() {
        let row = row.narrow(2, 0, 1).try_into_vec_as::<f32>()?;
        let (key, w) =
            row.iter().enumerate().fold((0, 0.0), |best, (k, &w)| {
                if w > best.1 { (k, w) } else { best }
            });
        writeln!(out, "head {head}: query 0 looks at key {key} ({w:.2})")?;
    }
    // ANCHOR_END: heads
    out.figure("mha-heads", figure);
    Ok(())
}

fn pytorch_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: pytorch
    // A module configured like the notebook 注意力机制's, saved with
    // torch.save(mha.state_dict(), "notebook.pt"): embed_dim 10, 10 heads.
    let golden = "crates/d2l-attention/tests/golden/torch_mha";
    let path = out.root().join(golden).join("notebook.pt");
    let mha = MultiHeadAttention::from_pytorch(&path, 10, device)?;
    let (l, n, e, s) = (3, 4, 10, 6);
    // sequence first, as PyTorch's default: (L, N, E) and (S, N, E)
    let query = rand([l, n, e], 60, device);
    let key = rand([s, n, e], 61, device);
    let value = rand([s, n, e], 62, device);
    let result = mha.forward_pytorch(PytorchMhaInput {
        query,
        key,
        value,
        batch_first: false,
        key_padding_mask: None,
        attn_mask: None,
    });
    writeln!(out, "attn_output:  {:?}", result.attn_output.dims())?;
    writeln!(out, "attn_weights: {:?}", result.attn_weights.dims())?;
    let per_head = result.attn_weights_per_head.dims();
    writeln!(out, "per head:     {per_head:?}")?;
    // ANCHOR_END: pytorch
    Ok(())
}

fn burn_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: burn
    use burn::nn::attention::{MhaInput, MultiHeadAttentionConfig as Burn};
    // Ours with biases, as burn's always has; d_model 8, 2 heads.
    let ours = MultiHeadAttentionConfig::new(8, 8, 8, 8, 2)
        .with_bias(true)
        .init(device);
    let mut theirs = Burn::new(8, 2).with_dropout(0.0).init(device);
    theirs.query = ours.w_q.clone();
    theirs.key = ours.w_k.clone();
    theirs.value = ours.w_v.clone();
    theirs.output = ours.w_o.clone();
    let x = randn([2, 5, 8], 50, device);
    let valid_lens = ValidLens::new(&[5, 3], device);
    // burn masks padding with a (batch_size, num_keys) mask, true = hidden
    let mask_pad = valid_lens.mask(2, 1, 5).reshape([2, 5]);
    let a = ours.forward(x.clone(), x.clone(), x.clone(), Some(&valid_lens));
    let b = theirs.forward(MhaInput::self_attn(x).mask_pad(mask_pad));
    let gap =
        |a: Tensor<4>, b: Tensor<4>| (a - b).abs().max().into_scalar::<f32>();
    let output_gap = gap(a.output.unsqueeze(), b.context.unsqueeze());
    let weights_gap = gap(a.attention_weights.tensor(), b.weights);
    writeln!(out, "outputs agree within 1e-5: {}", output_gap < 1e-5)?;
    writeln!(out, "weights agree within 1e-5: {}", weights_gap < 1e-5)?;
    // ANCHOR_END: burn
    Ok(())
}

/// Exercise 2: how much does each head matter? Silence one head at a time
/// (zero its part of the concatenation before W_o) and measure how far
/// the output moves.
fn pruning_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: pruning
    let mut attention = seeded_multihead(16, 4, 40, device);
    // Make head 2 useless: W_o ignores its 4 features (rows 8..12).
    let w_o = attention.w_o.weight.val();
    let rows = Tensor::<1, burn::tensor::Int>::arange(0..16, device);
    let head_2 = rows
        .clone()
        .greater_equal_elem(8)
        .bool_and(rows.lower_elem(12));
    let w_o = w_o.mask_fill(head_2.reshape([16, 1]).expand([16, 16]), 0.0);
    attention.w_o.weight = burn::module::Param::from_tensor(w_o);
    let x = randn([8, 6, 16], 44, device);
    let full = attention
        .forward(x.clone(), x.clone(), x.clone(), None)
        .output;
    for head in 0..4 {
        let pruned = without_head(&attention, x.clone(), head);
        let change = (pruned - full.clone()).abs().mean().into_scalar::<f32>();
        writeln!(out, "without head {head}: mean output change {change:.4}")?;
    }
    // ANCHOR_END: pruning
    Ok(())
}

// ANCHOR: without_head
/// The layer's self-attention output for `x` with head `head`'s output set
/// to 0 before W_o mixes the heads.
fn without_head(
    attention: &MultiHeadAttention,
    x: Tensor<3>,
    head: usize,
) -> Tensor<3> {
    let h = attention.num_heads;
    let (q, k, v) = (
        transpose_qkv(attention.w_q.forward(x.clone()), h),
        transpose_qkv(attention.w_k.forward(x.clone()), h),
        transpose_qkv(attention.w_v.forward(x), h),
    );
    let heads = attention.attention.forward(q, k, v, None).output;
    let [rows, n, d] = heads.dims();
    // (batch, heads, n, d) with head `head` zeroed
    let heads = heads.reshape([rows / h, h, n, d]);
    let keep =
        Tensor::<1, burn::tensor::Int>::arange(0..h as i64, &heads.device())
            .not_equal_elem(head as i64)
            .float()
            .reshape([1, h, 1, 1]);
    let heads = (heads * keep).reshape([rows, n, d]);
    attention.w_o.forward(transpose_output(heads, h))
}
// ANCHOR_END: without_head

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    fn run(name: &str, device: &Device) -> Output {
        super::super::run_named(LISTINGS, name, device)
    }

    /// d2l's printout: four bias-free 100 → 100 projections, dropout 0.5.
    #[test]
    fn the_module_summary_shows_d2l_s_layers() {
        let text = run("mha-module", &Device::flex()).text().to_owned();
        for line in ["w_q", "w_k", "w_v", "w_o"] {
            assert!(text.contains(line), "{text}");
        }
        assert_eq!(
            text.matches("d_input: 100, d_output: 100").count(),
            4,
            "{text}"
        );
        assert_eq!(text.matches("bias: false").count(), 4, "{text}");
        assert!(text.contains("0.5"), "{text}");
    }

    /// d2l's shape check: [2, 4, 100], on every backend.
    #[test]
    fn the_shape_check_prints_d2l_s_shapes() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let out = run("mha-shapes", &backend.device().unwrap());
            let lines: Vec<&str> = out.text().lines().collect();
            assert_eq!(lines[0], "queries, split:  [10, 4, 20]");
            assert_eq!(lines[1], "heads, joined:   [2, 4, 100]");
            assert_eq!(lines[2], "output:          [2, 4, 100]");
            assert_eq!(lines[3], "weights:         [2, 5, 4, 6]");
        }
    }

    /// Loaded PyTorch weights and our layer agree with burn's module.
    #[test]
    fn the_framework_listings_print_pytorch_s_shapes_and_agreement() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let device = backend.device().unwrap();
            let text = run("mha-pytorch", &device).text().to_owned();
            assert_eq!(
                text,
                "attn_output:  [3, 4, 10]\nattn_weights: [4, 3, 6]\nper head:     [4, 10, 3, 6]\n"
            );
            let text = run("mha-burn", &device).text().to_owned();
            assert_eq!(
                text,
                "outputs agree within 1e-5: true\nweights agree within 1e-5: true\n"
            );
        }
    }

    /// Removing the head W_o ignores changes nothing; removing any other
    /// head changes the output.
    #[test]
    fn the_useless_head_is_the_one_whose_removal_changes_nothing() {
        let out = run("mha-pruning", &Device::flex());
        let changes: Vec<f64> = out
            .text()
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(changes.len(), 4);
        assert_eq!(changes[2], 0.0, "{changes:?}");
        for head in [0, 1, 3] {
            assert!(changes[head] > 0.01, "{changes:?}");
        }
    }

    /// `without_head` is the layer's own forward when no head is removed
    /// (a head index past the last one removes nothing).
    #[test]
    fn without_a_missing_head_the_output_is_forward_s() {
        let device = Device::flex();
        let attention = seeded_multihead(16, 4, 40, &device);
        let x = randn([2, 3, 16], 1, &device);
        let full = attention.forward(x.clone(), x.clone(), x.clone(), None);
        let same = without_head(&attention, x, 9);
        let gap = (same - full.output).abs().max().into_scalar::<f32>();
        assert!(gap < 1e-6, "{gap}");
    }

    /// d2l's reason for p_q = p_o / h: the layer's parameters (burn's own
    /// count) and multiply-adds do not grow with the heads; h heads of
    /// full width cost h times as much. The split layer's multiply-adds are
    /// counted again from its weights' shapes and the shapes its forward
    /// pass gives each head.
    #[test]
    fn splitting_the_width_keeps_the_cost_of_one_head() {
        let out = run("mha-cost", &Device::flex());
        let rows: Vec<Vec<u64>> = out
            .text()
            .lines()
            .skip(2)
            .map(|l| l.split_whitespace().map(|w| w.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows.len(), 3, "{}", out.text());
        for row in &rows {
            let h = row[0];
            // four 512 × 512 projections without biases
            assert_eq!(row[1], 4 * 512 * 512, "{row:?}");
            assert_eq!(row[2], rows[0][2], "{row:?}");
            assert_eq!(row[3], h * rows[0][3], "{row:?}");
            assert_eq!(row[4], h * rows[0][4], "{row:?}");
        }
        assert_eq!(rows[0][1..3], rows[0][3..5], "h = 1: the same layer");
        let device = Device::flex();
        let (d, n) = (512, 128);
        for row in &rows {
            let h = row[0] as usize;
            let layer =
                MultiHeadAttentionConfig::new(d, d, d, 512, h).init(&device);
            let linears = [&layer.w_q, &layer.w_k, &layer.w_v, &layer.w_o];
            let projections: usize = linears
                .into_iter()
                .map(|linear| {
                    n * linear.weight.dims().iter().product::<usize>()
                })
                .sum();
            let x = randn([1, n, d], 7, &device);
            // each head's queries: (heads, n, width)
            let [heads, _, width] =
                transpose_qkv(layer.w_q.forward(x.clone()), h).dims();
            let weights = layer.forward(x.clone(), x.clone(), x, None);
            let [_, _, queries, keys] = weights.attention_weights.dims();
            // scores and weighted sums: queries × keys × width per head each
            let attention = heads * 2 * queries * keys * width;
            assert_eq!(row[2] as usize, projections + attention, "{row:?}");
        }
        assert_eq!(run("mha-diagram", &Device::flex()).figures().len(), 1);
    }
}
