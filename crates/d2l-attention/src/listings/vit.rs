//! The listings of "Transformers for Vision" (d2l en §11.8) that need no
//! data: the architecture, d2l's shape checks, the model's size at d2l's
//! settings and at the book's, and pre- against post-normalisation at
//! initialisation. The trainings are in `vit_training`.

use std::fmt::Write;

use burn::module::Module;
use burn::nn::{LayerNormConfig, LinearConfig};
use burn::tensor::{Device, Int, Tensor};

use super::{Listing, Output};
use crate::classify::cross_entropy;
use crate::plot::{Diagram, Node};
use crate::transformer::TransformerBlockConfig;
use crate::vit::*;

/// The listings of this section.
pub const LISTINGS: &[Listing] = &[
    Listing::new("vit-diagram", file!(), model_diagram),
    Listing::new("vit-patch-embedding", file!(), patch_embedding_demo),
    Listing::new("vit-block", file!(), block_demo),
    Listing::new("vit-sizes", file!(), sizes_demo),
    Listing::new("vit-norm-gradients", file!(), norm_gradients_demo),
];

/// The model as a diagram (after d2l en fig. 11.8.1 and Dosovitskiy et
/// al. 2021, fig. 1): an image's patches and the `<cls>` token, embedded
/// with positions, n pre-normalisation blocks, the head on `<cls>`.
fn model_diagram(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: diagram
    // Rows of boxes 58 px apart, row 0 at the top; the column at x = 143.
    let y = |row: i32| 10 + 58 * row;
    let node = |row, text| Node::new((143, y(row)), (300, 40), text);
    let column = [
        node(8, "image, cut into 16 patches of 7 × 7"),
        node(
            7,
            "patch embedding: one convolution\n(kernel = stride = patch size)",
        ),
        node(
            6,
            "prepend <cls>, add learned\npositional embeddings, dropout",
        ),
        node(5, "layer norm"),
        node(4, "multi-head self-attention"),
        node(3, "layer norm"),
        node(2, "MLP: dense, GELU, dense"),
        node(1, "<cls> output: layer norm, dense"),
        node(0, "class scores"),
    ];
    let mut figure = Diagram::new((580, 530))
        // the block, framed: it repeats n times
        .frame((115, y(2) - 14), (376, 3 * 58 + 58))
        .label((80, y(4) + 10), "n ×")
        .label((512, y(6) + 10), "16 + 1 tokens")
        .label((512, y(0) + 10), "10 classes");
    for pair in column.windows(2).rev() {
        figure = figure.arrow(pair[0].side('t'), pair[1].side('b'));
    }
    // The residual connections: each sub-layer's input leaves the main
    // line below its norm and is added (+) to the sub-layer's output just
    // above it; nothing normalises the sum.
    let right = column[0].side('r').0 + 30;
    for (from, to) in [(2, 4), (4, 6)] {
        let (x, below) = column[from].side('t');
        let above = column[to].side('t').1;
        let (leave, join) = (below - 13 + 4 * i32::from(from == 2), above - 5);
        figure = figure
            .path(&[(x, leave), (right, leave), (right, join), (x + 4, join)])
            .label((x - 12, join - 3), "+");
    }
    for node in column {
        figure = figure.node(node);
    }
    let figure = figure.draw()?;
    // ANCHOR_END: diagram
    out.figure("vit-diagram", figure);
    Ok(())
}

fn patch_embedding_demo(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: patch_embedding
    // d2l's check: 96 × 96 colour images, patches of 16, 512 hidden units.
    let (img_size, patch_size, num_hiddens, batch_size) = (96, 16, 512, 4);
    let patch_emb = PatchEmbedding::new(3, patch_size, num_hiddens, device);
    let x = Tensor::<4>::zeros([batch_size, 3, img_size, img_size], device);
    let y = patch_emb.forward(x);
    writeln!(out, "patches: {:?}", y.dims())?; // (batch, (96/16)², 512)
    assert_eq!(
        y.dims(),
        [batch_size, (img_size / patch_size).pow(2), num_hiddens]
    );
    // ANCHOR_END: patch_embedding
    Ok(())
}

fn block_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: block
    // d2l's check: 24 hidden units, an MLP of 48, 8 heads, dropout 0.5.
    let config = ViTConfig::new(28, 7, 24, 48, 8, 1).with_blk_dropout(0.5);
    let encoder_blk = config.init_block(device);
    let x = Tensor::<3>::ones([2, 100, 24], device);
    let y = encoder_blk.forward(x.clone(), None).output;
    writeln!(out, "block output: {:?}", y.dims())?; // the input's shape
    assert_eq!(y.dims(), x.dims());
    // ANCHOR_END: block
    Ok(())
}

fn sizes_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: sizes
    // d2l's settings (96 × 96 inputs, patch 16, 512 hidden, MLP 2048, 8
    // heads, 2 blocks) and this book's for a 2-core CPU on 28 × 28 inputs.
    let d2l = ViTConfig::new(96, 16, 512, 2048, 8, 2);
    let book = ViTConfig::new(28, 7, 64, 128, 4, 2);
    for (name, config) in [("d2l", &d2l), ("book", &book)] {
        let model = config.init(device);
        let side = config.img_size;
        let logits = model
            .forward(Tensor::zeros([2, 1, side, side], device))
            .logits;
        writeln!(
            out,
            "{name}: {} tokens, {} parameters, logits {:?}",
            config.num_patches() + 1,
            model.num_params(),
            logits.dims()
        )?;
    }
    // ANCHOR_END: sizes
    Ok(())
}

/// Pre- against post-normalisation in stacks of 12 blocks at
/// initialisation: the scale of the residual stream after each block, and
/// the gradient of each block's last dense weight (Xiong et al. 2020
/// analyse those gradients).
fn norm_gradients_demo(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: norm_gradients
    let (num_hiddens, mlp_num_hiddens, num_heads, num_blks) = (64, 128, 4, 12);
    let device = &device.clone().autodiff();
    device.seed(0);
    let x = crate::random::randn([16, 17, num_hiddens], 1, device);
    let labels = Tensor::<1, Int>::from_ints(
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5],
        device,
    );
    let head = LinearConfig::new(num_hiddens, 10).init(device);
    let head_norm = LayerNormConfig::new(num_hiddens).init(device);
    // a ViT's loss: class scores from token 0
    let loss = |y: Tensor<3>| {
        cross_entropy(
            head.forward(y.narrow(1, 0, 1).squeeze_dim::<2>(1)),
            labels.clone(),
        )
    };
    let rms = |y: &Tensor<3>| {
        y.clone().powi_scalar(2).mean().sqrt().into_scalar::<f32>()
    };
    let norm =
        |w: Tensor<2>| w.powi_scalar(2).sum().sqrt().into_scalar::<f32>();
    let vit_block =
        ViTConfig::new(28, 7, num_hiddens, mlp_num_hiddens, num_heads, 1)
            .with_blk_dropout(0.0);
    let pre: Vec<ViTBlock> = (0..num_blks)
        .map(|_| vit_block.init_block(device))
        .collect();
    let post: Vec<_> = (0..num_blks)
        .map(|_| {
            TransformerBlockConfig::new(num_hiddens, mlp_num_hiddens, num_heads)
                .init_encoder_block(device)
        })
        .collect();
    let (mut y, mut pre_rms) = (x.clone(), Vec::new());
    for blk in &pre {
        y = blk.forward(y, None).output;
        pre_rms.push(rms(&y));
    }
    // pre-norm normalises once more, in the head
    let grads = loss(head_norm.forward(y)).backward();
    let pre_grads: Vec<f32> = pre
        .iter()
        .map(|b| norm(b.mlp.dense2.weight.grad(&grads).unwrap()))
        .collect();
    let (mut y, mut post_rms) = (x, Vec::new());
    for blk in &post {
        y = blk.forward(y, None).output;
        post_rms.push(rms(&y));
    }
    let grads = loss(y).backward();
    let post_grads: Vec<f32> = post
        .iter()
        .map(|b| norm(b.ffn.dense2.weight.grad(&grads).unwrap()))
        .collect();
    let row = |v: &[f32]| {
        v.iter()
            .map(|n| format!("{n:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    writeln!(out, "blocks 1 to {num_blks}, input to output")?;
    writeln!(out, "stream scale, pre:  {}", row(&pre_rms))?;
    writeln!(out, "stream scale, post: {}", row(&post_rms))?;
    writeln!(out, "gradient, pre:      {}", row(&pre_grads))?;
    writeln!(out, "gradient, post:     {}", row(&post_grads))?;
    // ANCHOR_END: norm_gradients
    Ok(())
}
