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

/// The model as a diagram: the encoder's block (left), the decoder's
/// (right), each repeated N times, with where the masks act.
fn model_diagram(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: diagram
    let size = (250, 44);
    let at = |column: i32, row: i32| (10 + 310 * column, 14 + 62 * row);
    let node = |column, row, text| Node::new(at(column, row), size, text);
    let src = node(0, 8, "source tokens");
    let src_embed = node(0, 7, "embedding × √d + positions");
    let enc_attention =
        node(0, 6, "multi-head self-attention\n(padding masked)");
    let enc_norm1 = node(0, 5, "add & norm");
    let enc_ffn = node(0, 4, "position-wise FFN");
    let enc_norm2 = node(0, 3, "add & norm");
    let tgt = node(1, 8, "target tokens, shifted right");
    let tgt_embed = node(1, 7, "embedding × √d + positions");
    let dec_attention =
        node(1, 6, "masked multi-head self-attention\n(no look ahead)");
    let dec_norm1 = node(1, 5, "add & norm");
    let cross =
        node(1, 4, "encoder–decoder attention\n(source padding masked)");
    let dec_norm2 = node(1, 3, "add & norm");
    let dec_ffn = node(1, 2, "position-wise FFN");
    let dec_norm3 = node(1, 1, "add & norm");
    let dense = node(1, 0, "dense: scores over\nthe target vocabulary");
    let (x, y) = (|n: &Node| n.side('l').0, |n: &Node| n.side('l').1);
    let figure = Diagram::new((580, 580))
        .arrow(src.side('t'), src_embed.side('b'))
        .arrow(src_embed.side('t'), enc_attention.side('b'))
        .arrow(enc_attention.side('t'), enc_norm1.side('b'))
        .arrow(enc_norm1.side('t'), enc_ffn.side('b'))
        .arrow(enc_ffn.side('t'), enc_norm2.side('b'))
        .arrow(enc_norm2.side('t'), (x(&cross) - 60, y(&enc_norm2) - 30))
        .arrow((x(&cross) - 60, y(&enc_norm2) - 30), cross.side('l'))
        .arrow(tgt.side('t'), tgt_embed.side('b'))
        .arrow(tgt_embed.side('t'), dec_attention.side('b'))
        .arrow(dec_attention.side('t'), dec_norm1.side('b'))
        .arrow(dec_norm1.side('t'), cross.side('b'))
        .arrow(cross.side('t'), dec_norm2.side('b'))
        .arrow(dec_norm2.side('t'), dec_ffn.side('b'))
        .arrow(dec_ffn.side('t'), dec_norm3.side('b'))
        .arrow(dec_norm3.side('t'), dense.side('b'))
        .label((135, 40), "right: decoder block, N times")
        .label((135, 64), "left: encoder block, N times")
        .label((135, 104), "each add & norm:")
        .label((135, 124), "LayerNorm(x + dropout(f(x)))")
        .node(src)
        .node(src_embed)
        .node(enc_attention)
        .node(enc_norm1)
        .node(enc_ffn)
        .node(enc_norm2)
        .node(tgt)
        .node(tgt_embed)
        .node(dec_attention)
        .node(dec_norm1)
        .node(cross)
        .node(dec_norm2)
        .node(dec_ffn)
        .node(dec_norm3)
        .node(dense)
        .draw()?;
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
        layer.norm_1 = blk.addnorm1.ln.clone(); // post-norm: after attention
        layer.norm_2 = blk.addnorm2.ln.clone(); // and after the FFN
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
