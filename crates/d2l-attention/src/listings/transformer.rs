//! The listings of "The Transformer" (d2l zh §10.7, en §11.7): the
//! architecture, each component's shape check, burn's encoder beside ours;
//! the training, comparisons and exercises are in `transformer_training`.

use std::fmt::Write;

use burn::module::Module;
use burn::nn::{BatchNormConfig, LayerNormConfig};
use burn::tensor::{Device, Int, Tensor};

use super::{Listing, Output};
use crate::attention_scoring::ValidLens;
use crate::plot::{Diagram, Node};
use crate::printing::format_tensor;
use crate::seq2seq::{Decoder, Encoder};
use crate::transformer::*;

/// The listings of this section.
pub const LISTINGS: &[Listing] = &[
    Listing::new("transformer-diagram", file!(), model_diagram),
    Listing::new("transformer-ffn", file!(), ffn_demo),
    Listing::new("transformer-norms", file!(), norms_demo),
    Listing::new("transformer-causal-mask", file!(), causal_mask_demo),
    Listing::new("transformer-shapes", file!(), shapes_demo),
    Listing::new("transformer-burn", file!(), burn_demo),
];

/// The model as a diagram (after Vaswani et al. 2017, fig. 1, and d2l zh
/// fig. 10.7.1): the encoder's column (left), the decoder's (right), each
/// block framed as the part that repeats N times, with its residual
/// connections and where the masks act.
fn model_diagram(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: diagram
    // Rows of boxes 66 px apart, row 0 at the top.
    let y = |row: i32| 16 + 66 * row;
    let enc = |row, text| Node::new((100, y(row)), (230, 44), text);
    let dec = |row, text| Node::new((450, y(row)), (270, 44), text);
    let embedding = "embedding × √d\n+ positional encoding";
    let encoder = [
        enc(8, "source tokens"),
        enc(7, embedding),
        enc(6, "multi-head self-attention\n(padding masked)"),
        enc(5, "add & norm"),
        enc(4, "position-wise FFN"),
        enc(3, "add & norm"),
    ];
    let decoder = [
        dec(8, "target tokens, shifted right"),
        dec(7, embedding),
        dec(6, "masked multi-head self-attention\n(no look ahead)"),
        dec(5, "add & norm"),
        dec(4, "encoder–decoder attention\n(source padding masked)"),
        dec(3, "add & norm"),
        dec(2, "position-wise FFN"),
        dec(1, "add & norm"),
        dec(0, "dense: scores over\nthe target vocabulary"),
    ];
    let mut figure = Diagram::new((810, 628))
        // each stack's block, framed: it repeats N times
        .frame((72, y(3) - 14), (274, 4 * 66 + 8))
        .frame((434, y(1) - 14), (318, 6 * 66 + 8))
        .label((44, y(5)), "N ×")
        .label((781, y(4)), "× N")
        .label((215, y(9) + 6), "encoder")
        .label((585, y(9) + 6), "decoder")
        .label((215, y(0) + 12), "each add & norm:")
        .label((215, y(0) + 36), "LayerNorm(x + dropout(f(x)))");
    for (column, left) in [(&encoder[..], true), (&decoder[..], false)] {
        // bottom to top, each box into the next
        for pair in column.windows(2) {
            figure = figure.arrow(pair[0].side('t'), pair[1].side('b'));
        }
        // the residual connections: each sub-layer's input, around it, into
        // its add & norm (on the left in the encoder, the right in the
        // decoder)
        for i in (3..column.len()).step_by(2) {
            let (x, top) = column[i - 2].side('t');
            let (side, to) = column[i].side(if left { 'l' } else { 'r' });
            let bend = if left { side - 16 } else { side + 16 };
            let from = top - 11;
            figure =
                figure.path(&[(x, from), (bend, from), (bend, to), (side, to)]);
        }
    }
    // the encoder's output, the keys and values of every decoder block's
    // encoder–decoder attention
    let (x, top) = encoder[5].side('t');
    let turn = y(2) + 10;
    figure = figure.path(&[
        (x, top),
        (x, turn),
        (395, turn),
        (395, decoder[4].side('l').1),
        decoder[4].side('l'),
    ]);
    for node in encoder.into_iter().chain(decoder) {
        figure = figure.node(node);
    }
    let figure = figure.draw()?;
    // ANCHOR_END: diagram
    out.figure("transformer-diagram", figure);
    Ok(())
}

fn ffn_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: ffn
    // 4 inputs, 4 hidden units, 8 outputs
    let ffn = PositionWiseFFNConfig::new(4, 4, 8).init(device);
    let x = Tensor::<3>::ones([2, 3, 4], device); // (batch, steps, features)
    let y = ffn.forward(x);
    writeln!(out, "output: {:?}", y.dims())?;
    // the same MLP at every position: equal inputs, equal outputs
    let first = y.clone().narrow(1, 0, 1).expand([2, 3, 8]);
    let gap = (y - first).abs().max().into_scalar::<f32>();
    writeln!(
        out,
        "every position's output equals the first: {}",
        gap == 0.0
    )?;
    // ANCHOR_END: ffn
    Ok(())
}

/// The causal mask of four target steps, as a matrix.
fn causal_mask_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: causal_mask
    // the valid lengths the decoder gives its self-attention in training:
    // query i may see keys 0 … i
    let num_steps = 4;
    let lens: Vec<usize> = (1..=num_steps).collect();
    let valid = ValidLens::per_query(&[lens], device);
    let hidden = valid.mask(1, num_steps, num_steps).into_data();
    writeln!(out, "         keys 0 1 2 3")?;
    let hidden = hidden
        .try_to_vec::<bool>()
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    for (i, row) in hidden.chunks(num_steps).enumerate() {
        let row: Vec<&str> =
            row.iter().map(|&h| if h { "·" } else { "1" }).collect();
        writeln!(out, "query {i}:      {}", row.join(" "))?;
    }
    // ANCHOR_END: causal_mask
    Ok(())
}

fn norms_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: norms
    // Batch norm uses the batch's statistics only when training.
    let device = &device.clone().autodiff();
    let x = Tensor::<2>::from_floats([[1.0, 2.0], [2.0, 3.0]], device);
    let ln = LayerNormConfig::new(2).init(device);
    let bn = BatchNormConfig::new(2).init(device);
    let layer_norm = ln.forward(x.clone()); // over each row's features
    let batch_norm = bn.forward(x); // over the batch
    writeln!(out, "layer norm:\n{}", format_tensor(layer_norm, 4))?;
    writeln!(out, "batch norm:\n{}", format_tensor(batch_norm, 4))?;
    // ANCHOR_END: norms
    Ok(())
}

fn shapes_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: shapes
    let (num_hiddens, ffn_num_hiddens, num_heads) = (24, 48, 8);
    let block =
        TransformerBlockConfig::new(num_hiddens, ffn_num_hiddens, num_heads)
            .with_dropout(0.5);
    let add_norm = AddNormConfig::new(num_hiddens)
        .with_dropout(0.5)
        .init(device);
    let x = Tensor::<3>::ones([2, 100, num_hiddens], device);
    let y = add_norm.forward(x.clone(), x.clone());
    writeln!(out, "add & norm:      {:?}", y.dims())?;
    let valid_lens = ValidLens::new(&[3, 2], device);
    let encoder_blk = block.init_encoder_block(device);
    let y = encoder_blk.forward(x.clone(), Some(&valid_lens)).output;
    writeln!(out, "encoder block:   {:?}", y.dims())?;
    let config = TransformerConfig::new(200, 200)
        .with_num_hiddens(num_hiddens)
        .with_ffn_num_hiddens(ffn_num_hiddens)
        .with_num_heads(num_heads)
        .with_dropout(0.5);
    let encoder = config.init_encoder(device);
    let tokens = Tensor::<2, Int>::ones([2, 100], device);
    let encoded = encoder.forward(tokens.clone(), Some(&valid_lens));
    writeln!(out, "encoder:         {:?}", encoded.outputs.dims())?;
    let decoder_blk = block.init_decoder_block(device);
    let z = decoder_blk.forward(x, None, &encoded.outputs, Some(&valid_lens));
    writeln!(out, "decoder block:   {:?}", z.output.dims())?;
    let decoder = config.init_decoder(device);
    let state = decoder.init_state(encoded, Some(valid_lens));
    let decoded = decoder.forward(tokens, state);
    writeln!(out, "decoder:         {:?}", decoded.output.dims())?;
    // ANCHOR_END: shapes
    Ok(())
}

fn burn_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: burn
    use burn::nn::DropoutConfig;
    use burn::nn::activation::ActivationConfig;
    use burn::nn::transformer::{
        TransformerEncoderConfig as Burn, TransformerEncoderInput,
    };
    // burn's defaults, and where they differ from d2l's
    let defaults = Burn::new(8, 16, 2, 2);
    writeln!(
        out,
        "burn: norm_first {}, dropout {}, layer_norm_eps {:e}",
        defaults.norm_first, defaults.dropout, defaults.layer_norm_eps
    )?;
    writeln!(out, "burn: activation {:?}", defaults.activation)?;
    // Ours: d_model 8, FFN 16, 2 heads, 2 blocks, no dropout.
    let block = TransformerBlockConfig::new(8, 16, 2);
    let ours: Vec<TransformerEncoderBlock> =
        (0..2).map(|_| block.init_encoder_block(device)).collect();
    let mut theirs = defaults
        .with_activation(ActivationConfig::Relu)
        .with_dropout(0.0)
        .init(device);
    for (layer, blk) in theirs.layers.iter_mut().zip(&ours) {
        layer.mha.query = blk.attention.w_q.clone(); // no biases, as d2l's
        layer.mha.key = blk.attention.w_k.clone();
        layer.mha.value = blk.attention.w_v.clone();
        layer.mha.output = blk.attention.w_o.clone();
        layer.pwff.linear_inner = blk.ffn.dense1.clone();
        layer.pwff.linear_outer = blk.ffn.dense2.clone();
        layer.pwff.dropout = DropoutConfig::new(0.0).init();
        // post-norm: after attention, and after the FFN (ε 10⁻⁵ in both)
        layer.norm_1.gamma = blk.addnorm1.ln.gamma.clone();
        layer.norm_1.beta = blk.addnorm1.ln.beta.clone();
        layer.norm_2.gamma = blk.addnorm2.ln.gamma.clone();
        layer.norm_2.beta = blk.addnorm2.ln.beta.clone();
    }
    let x = crate::random::randn([2, 5, 8], 70, device);
    let valid_lens = ValidLens::new(&[5, 3], device);
    let mask_pad = valid_lens.mask(2, 1, 5).reshape([2, 5]); // true = hidden
    let mut a = x.clone();
    for blk in &ours {
        a = blk.forward(a, Some(&valid_lens)).output;
    }
    let b = theirs.forward(TransformerEncoderInput::new(x).mask_pad(mask_pad));
    let gap = (a - b).abs().max().into_scalar::<f32>();
    writeln!(
        out,
        "same weights, outputs agree within 1e-5: {}",
        gap < 1e-5
    )?;
    writeln!(
        out,
        "parameters: ours {}, burn's {}",
        ours.iter().map(|b| b.num_params()).sum::<usize>(),
        theirs.num_params()
    )?;
    // ANCHOR_END: burn
    Ok(())
}
