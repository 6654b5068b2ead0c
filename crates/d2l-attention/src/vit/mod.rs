//! The vision Transformer (Dosovitskiy et al. 2021) as d2l en §11.8 builds
//! it: images cut into patches ([`PatchEmbedding`]), a `<cls>` token and
//! learned positional embeddings, pre-normalisation encoder blocks
//! ([`ViTBlock`]) and a head on the `<cls>` token ([`ViT`]).

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{
    Dropout, DropoutConfig, Initializer, LayerNormConfig, Linear, LinearConfig,
};
use burn::tensor::{Device, Tensor};

use crate::attention_scoring::{AttentionWeights, TORCH_LINEAR, ValidLens};
use crate::kernels::{LayerNorm, dropout, gelu};
use crate::multihead_attention::{
    MultiHeadAttended, MultiHeadAttention, MultiHeadAttentionConfig,
};

/// d2l's `PatchEmbedding`: one convolution whose kernel and stride are the
/// patch size, so that each output position is one patch's linear
/// projection.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::vit::PatchEmbedding;
///
/// let device = Device::flex();
/// // 28 × 28 grey images in patches of 7: 16 patches of 32 values.
/// let embedding = PatchEmbedding::new(1, 7, 32, &device);
/// let x = Tensor::<4>::zeros([2, 1, 28, 28], &device);
/// assert_eq!(embedding.forward(x).dims(), [2, 16, 32]);
/// ```
#[derive(Module, Debug)]
pub struct PatchEmbedding {
    /// (num_channels → num_hiddens), kernel = stride = patch size.
    pub conv: Conv2d,
}

impl PatchEmbedding {
    /// Patches of `patch_size` × `patch_size` pixels of `num_channels`
    /// channels, projected to `num_hiddens`, initialised as PyTorch's
    /// `Conv2d` is.
    pub fn new(
        num_channels: usize,
        patch_size: usize,
        num_hiddens: usize,
        device: &Device,
    ) -> Self {
        let conv =
            Conv2dConfig::new([num_channels, num_hiddens], [patch_size; 2])
                .with_stride([patch_size; 2])
                .with_initializer(TORCH_LINEAR)
                .init(device);
        PatchEmbedding { conv }
    }

    /// The patches of `x` (batch_size, num_channels, height, width) as
    /// (batch_size, num_patches, num_hiddens), row by row; pixels past the
    /// last whole patch are dropped, as the convolution drops them.
    ///
    /// # Panics
    /// When `x` has another number of channels, naming it.
    // ANCHOR: patch_forward
    pub fn forward(&self, x: Tensor<4>) -> Tensor<3> {
        let channels = self.conv.weight.dims()[1];
        assert_eq!(
            x.dims()[1],
            channels,
            "`x` has shape {:?}, expected {channels} channels (dimension 1)",
            x.dims()
        );
        // (batch, num_hiddens, h/p, w/p) → (batch, num_patches, num_hiddens)
        self.conv.forward(x).flatten::<3>(2, 3).swap_dims(1, 2)
    }
    // ANCHOR_END: patch_forward
}

/// d2l's `ViTMLP`: dense, GELU, dropout, dense, dropout.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::vit::ViTMLP;
///
/// let mlp = ViTMLP::new(8, 16, 8, 0.5, &Device::flex());
/// assert_eq!(mlp.forward(Tensor::<3>::ones([2, 5, 8], &Device::flex())).dims(), [2, 5, 8]);
/// ```
#[derive(Module, Debug)]
pub struct ViTMLP {
    /// (num_inputs → mlp_num_hiddens).
    pub dense1: Linear,
    /// (mlp_num_hiddens → mlp_num_outputs).
    pub dense2: Linear,
    /// After each dense layer.
    pub dropout: Dropout,
}

impl ViTMLP {
    /// The MLP with PyTorch's `Linear` initialisation.
    pub fn new(
        num_inputs: usize,
        mlp_num_hiddens: usize,
        mlp_num_outputs: usize,
        p: f64,
        device: &Device,
    ) -> Self {
        let linear = |i, o| {
            LinearConfig::new(i, o)
                .with_initializer(TORCH_LINEAR)
                .init(device)
        };
        ViTMLP {
            dense1: linear(num_inputs, mlp_num_hiddens),
            dense2: linear(mlp_num_hiddens, mlp_num_outputs),
            dropout: DropoutConfig::new(p).init(),
        }
    }

    /// The MLP applied to the last dimension of `x`.
    ///
    /// # Panics
    /// When `x` is not num_inputs wide.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        // exact (erf) GELU, PyTorch's `nn.GELU()` default
        let x = dropout(&self.dropout, gelu(self.dense1.forward(x)));
        dropout(&self.dropout, self.dense2.forward(x))
    }
}

/// d2l's `ViTBlock`: pre-normalisation, X + attention(norm(X)), then
/// X + MLP(norm(X)), with d2l's multi-head attention (no biases).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::vit::ViTConfig;
///
/// // d2l's check: 24 hidden units, MLP 48, 8 heads; the shape is kept.
/// let block = ViTConfig::new(96, 16, 24, 48, 8, 1).init_block(&Device::flex());
/// let x = Tensor::<3>::ones([2, 100, 24], &Device::flex());
/// assert_eq!(block.forward(x, None).output.dims(), [2, 100, 24]);
/// ```
#[derive(Module, Debug)]
pub struct ViTBlock {
    /// Before the attention.
    pub ln1: LayerNorm,
    /// Multi-head self-attention.
    pub attention: MultiHeadAttention,
    /// Before the MLP.
    pub ln2: LayerNorm,
    /// The MLP.
    pub mlp: ViTMLP,
}

impl ViTBlock {
    /// The block's output for `x` (batch_size, num_steps, num_hiddens),
    /// keys past `valid_lens` hidden, and its attention weights
    /// (batch_size, num_heads, num_steps, num_steps).
    ///
    /// # Panics
    /// When `x` is not num_hiddens wide or `valid_lens` does not fit it.
    // ANCHOR: block_forward
    pub fn forward(
        &self,
        x: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> MultiHeadAttended {
        let normed = self.ln1.forward(x.clone());
        let attended = self.attention.forward(
            normed.clone(),
            normed.clone(),
            normed,
            valid_lens,
        );
        let x = x + attended.output;
        MultiHeadAttended {
            output: x.clone() + self.mlp.forward(self.ln2.forward(x)),
            attention_weights: attended.attention_weights,
        }
    }
    // ANCHOR_END: block_forward
}

/// What the head reads: the `<cls>` token (d2l) or the mean of the
/// patches' representations (d2l en §11.8, exercise 2).
#[derive(Config, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The `<cls>` token's output.
    Cls,
    /// The patches' outputs, averaged.
    Mean,
}

/// The settings of d2l's `ViT`; `ViTConfig::new(img_size, patch_size,
/// num_hiddens, mlp_num_hiddens, num_heads, num_blks)` with one channel,
/// ten classes and d2l's dropouts of 0.1.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::vit::ViTConfig;
///
/// let device = Device::flex();
/// let vit = ViTConfig::new(28, 7, 32, 64, 4, 2).init(&device);
/// let logits = vit.forward(Tensor::<4>::zeros([3, 1, 28, 28], &device)).logits;
/// assert_eq!(logits.dims(), [3, 10]);
/// ```
#[derive(Config, Debug)]
pub struct ViTConfig {
    /// Image side, in pixels.
    pub img_size: usize,
    /// Patch side, in pixels.
    pub patch_size: usize,
    /// Size of every token's vector.
    pub num_hiddens: usize,
    /// Hidden size of each block's MLP.
    pub mlp_num_hiddens: usize,
    /// Heads of each block's attention.
    pub num_heads: usize,
    /// Blocks.
    pub num_blks: usize,
    /// Dropout after the positional embeddings are added.
    #[config(default = 0.1)]
    pub emb_dropout: f64,
    /// Dropout in the blocks: attention weights and MLP.
    #[config(default = 0.1)]
    pub blk_dropout: f64,
    /// Image channels.
    #[config(default = 1)]
    pub num_channels: usize,
    /// Classes.
    #[config(default = 10)]
    pub num_classes: usize,
    /// What the head reads.
    #[config(default = "Pool::Cls")]
    pub pool: Pool,
}

impl ViTConfig {
    /// Patches per image: (img_size / patch_size)².
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::vit::ViTConfig;
    ///
    /// // d2l's: 96 × 96 in patches of 16.
    /// assert_eq!(ViTConfig::new(96, 16, 512, 2048, 8, 2).num_patches(), 36);
    /// ```
    pub fn num_patches(&self) -> usize {
        (self.img_size / self.patch_size).pow(2)
    }

    /// One block.
    ///
    /// # Panics
    /// When `num_heads` does not divide `num_hiddens`.
    pub fn init_block(&self, device: &Device) -> ViTBlock {
        let n = self.num_hiddens;
        let ln = || LayerNorm::new(&LayerNormConfig::new(n), device);
        ViTBlock {
            ln1: ln(),
            attention: MultiHeadAttentionConfig::new(
                n,
                n,
                n,
                n,
                self.num_heads,
            )
            .with_dropout(self.blk_dropout)
            .init(device),
            ln2: ln(),
            mlp: ViTMLP::new(
                n,
                self.mlp_num_hiddens,
                n,
                self.blk_dropout,
                device,
            ),
        }
    }

    /// The model, initialised as d2l's: `<cls>` zeros, positional
    /// embeddings standard normal, layers as PyTorch's.
    ///
    /// # Panics
    /// When `patch_size` is 0 or above `img_size`, or `num_heads` does
    /// not divide `num_hiddens`.
    pub fn init(&self, device: &Device) -> ViT {
        assert!(
            self.patch_size > 0 && self.patch_size <= self.img_size,
            "`patch_size` ({}) must be in 1..=img_size ({})",
            self.patch_size,
            self.img_size
        );
        let n = self.num_hiddens;
        let steps = self.num_patches() + 1;
        ViT {
            patch_embedding: PatchEmbedding::new(
                self.num_channels,
                self.patch_size,
                n,
                device,
            ),
            cls_token: Initializer::Zeros.init([1, 1, n], device),
            pos_embedding: Initializer::Normal {
                mean: 0.0,
                std: 1.0,
            }
            .init([1, steps, n], device),
            dropout: DropoutConfig::new(self.emb_dropout).init(),
            blks: (0..self.num_blks)
                .map(|_| self.init_block(device))
                .collect(),
            head_norm: LayerNorm::new(&LayerNormConfig::new(n), device),
            head: LinearConfig::new(n, self.num_classes)
                .with_initializer(TORCH_LINEAR)
                .init(device),
            pool: self.pool,
            img_size: self.img_size,
        }
    }
}

/// d2l's `ViT` (a vision Transformer), built by [`ViTConfig::init`].
#[derive(Module, Debug)]
pub struct ViT {
    /// Patches to vectors.
    pub patch_embedding: PatchEmbedding,
    /// The `<cls>` token's vector, (1, 1, num_hiddens).
    pub cls_token: Param<Tensor<3>>,
    /// Learned positional embeddings, (1, num_patches + 1, num_hiddens).
    pub pos_embedding: Param<Tensor<3>>,
    /// After the positional embeddings.
    pub dropout: Dropout,
    /// The encoder blocks.
    pub blks: Vec<ViTBlock>,
    /// The head's layer norm.
    pub head_norm: LayerNorm,
    /// The head's dense layer, (num_hiddens → num_classes).
    pub head: Linear,
    /// What the head reads.
    #[module(skip)]
    pub pool: Pool,
    /// The side of the images it reads, in pixels (`ViTConfig::img_size`;
    /// sizes with the same number of patches build the same layers).
    #[module(skip)]
    pub img_size: usize,
}

/// What [`ViT::forward`] returns.
#[derive(Clone, Debug)]
pub struct ViTOutput {
    /// Class scores, (batch_size, num_classes).
    pub logits: Tensor<2>,
    /// Each block's attention weights, (batch_size, num_heads,
    /// num_patches + 1, num_patches + 1), `<cls>` first.
    pub attention_weights: Vec<AttentionWeights<4>>,
}

impl ViT {
    /// The class scores of `x` (batch_size, num_channels, img_size,
    /// img_size), and every block's attention weights.
    ///
    /// # Panics
    /// When `x` has another number of channels, or images of another size
    /// than `img_size` × `img_size` (even one that makes as many patches),
    /// naming `x` and both sizes.
    // ANCHOR: vit_forward
    pub fn forward(&self, x: Tensor<4>) -> ViTOutput {
        self.check_size(&x);
        let patches = self.patch_embedding.forward(x);
        let [batch_size, num_patches, _] = patches.dims();
        let cls = self.cls_token.val().expand([batch_size as i64, -1, -1]);
        let mut x =
            Tensor::cat(vec![cls, patches], 1) + self.pos_embedding.val();
        x = dropout(&self.dropout, x);
        let mut attention_weights = Vec::with_capacity(self.blks.len());
        for blk in &self.blks {
            let attended = blk.forward(x, None);
            x = attended.output;
            attention_weights.push(attended.attention_weights);
        }
        let pooled = match self.pool {
            Pool::Cls => x.narrow(1, 0, 1),
            Pool::Mean => x.narrow(1, 1, num_patches).mean_dim(1),
        };
        let logits = self
            .head
            .forward(self.head_norm.forward(pooled))
            .squeeze_dim::<2>(1);
        ViTOutput {
            logits,
            attention_weights,
        }
    }
    // ANCHOR_END: vit_forward

    /// Panics, naming `x`, unless its images are `img_size` on each side.
    fn check_size(&self, x: &Tensor<4>) {
        let [.., height, width] = x.dims();
        let side = self.img_size;
        assert!(
            height == side && width == side,
            "`x` has shape {:?}: images of {height} × {width} pixels, \
             expected {side} × {side} (the model's img_size)",
            x.dims()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panic_message(f: impl FnOnce()) -> String {
        let f = std::panic::AssertUnwindSafe(f);
        let payload = std::panic::catch_unwind(f).expect_err("a panic");
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    }

    /// Every size but the configured one is refused by name, even those
    /// that make the same 16 patches of 7 (and 5 × 5, which makes none).
    #[test]
    fn a_vit_reads_only_images_of_its_size() {
        let device = Device::flex();
        let vit = ViTConfig::new(28, 7, 8, 16, 2, 1).init(&device);
        assert_eq!(vit.img_size, 28);
        let logits = vit.forward(Tensor::zeros([2, 1, 28, 28], &device)).logits;
        assert_eq!(logits.dims(), [2, 10]);
        for [h, w] in [[14, 56], [30, 30], [28, 34], [5, 5], [28, 27]] {
            let x = Tensor::<4>::zeros([1, 1, h, w], &device);
            let message = panic_message(|| {
                vit.forward(x);
            });
            let expected = format!(
                "`x` has shape [1, 1, {h}, {w}]: images of {h} × {w} pixels, \
                 expected 28 × 28"
            );
            assert!(message.starts_with(&expected), "{message}");
        }
        // 30 with patch 7 builds the same layers as 28, but reads 30 only
        let vit30 = ViTConfig::new(30, 7, 8, 16, 2, 1).init(&device);
        assert_eq!(vit30.pos_embedding.dims(), vit.pos_embedding.dims());
        let x = Tensor::<4>::zeros([1, 1, 30, 30], &device);
        assert_eq!(vit30.forward(x).logits.dims(), [1, 10]);
        // PatchEmbedding keeps dropping the pixels past the last patch
        let x = Tensor::<4>::zeros([1, 1, 30, 30], &device);
        assert_eq!(vit.patch_embedding.forward(x).dims(), [1, 16, 8]);
    }
}
