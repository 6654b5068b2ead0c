//! The ResNet of d2l en §8.6 (He et al. 2016), the convolutional network
//! "Transformers for Vision" measures its vision Transformer against:
//! [`Residual`] blocks behind d2l's stem, global average pooling and a
//! dense layer, with d2l's Xavier initialisation (`init_cnn`) of the
//! weights. burn's initialiser also draws the biases (from the same
//! Xavier range), where d2l's `init_cnn` leaves PyTorch's; the trainings
//! start from other biases than d2l's would.

use burn::config::Config;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{
    AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig,
};
use burn::nn::{
    BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d,
};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use crate::rnn::XAVIER;

fn conv(
    channels: [usize; 2],
    kernel: usize,
    stride: usize,
    padding: usize,
    device: &Device,
) -> Conv2d {
    Conv2dConfig::new(channels, [kernel; 2])
        .with_stride([stride; 2])
        .with_padding(PaddingConfig2d::Explicit(
            padding, padding, padding, padding,
        ))
        .with_initializer(XAVIER)
        .init(device)
}

/// d2l's `Residual`: two 3 × 3 convolutions with batch norm, added to the
/// input (through a 1 × 1 convolution when the shape changes), then ReLU.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::resnet::Residual;
///
/// // d2l's check: 6 channels, stride 2 halves the side.
/// let blk = Residual::new(3, 6, true, 2, &Device::flex());
/// let x = Tensor::<4>::ones([4, 3, 6, 6], &Device::flex());
/// assert_eq!(blk.forward(x).dims(), [4, 6, 3, 3]);
/// ```
#[derive(Module, Debug)]
pub struct Residual {
    /// 3 × 3, padding 1, the block's stride.
    pub conv1: Conv2d,
    /// 3 × 3, padding 1.
    pub conv2: Conv2d,
    /// 1 × 1 with the block's stride, on the shortcut, when present.
    pub conv3: Option<Conv2d>,
    /// After `conv1`.
    pub bn1: BatchNorm,
    /// After `conv2`.
    pub bn2: BatchNorm,
}

impl Residual {
    /// A block from `input_channels` to `num_channels`; `use_1x1conv`
    /// puts a 1 × 1 convolution on the shortcut.
    pub fn new(
        input_channels: usize,
        num_channels: usize,
        use_1x1conv: bool,
        strides: usize,
        device: &Device,
    ) -> Self {
        let n = num_channels;
        Residual {
            conv1: conv([input_channels, n], 3, strides, 1, device),
            conv2: conv([n, n], 3, 1, 1, device),
            conv3: use_1x1conv
                .then(|| conv([input_channels, n], 1, strides, 0, device)),
            bn1: BatchNormConfig::new(n).init(device),
            bn2: BatchNormConfig::new(n).init(device),
        }
    }

    /// The block applied to `x` (batch_size, input_channels, h, w): batch
    /// statistics on an autodiff device (updating the running ones),
    /// running statistics otherwise.
    ///
    /// # Panics
    /// When `x` has another number of channels.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let y = relu(self.bn1.forward(self.conv1.forward(x.clone())));
        let y = self.bn2.forward(self.conv2.forward(y));
        let x = match &self.conv3 {
            Some(conv3) => conv3.forward(x),
            None => x,
        };
        relu(y + x)
    }
}

/// A ResNet's shape: d2l's `ResNet(arch)` with the stem's width given (d2l:
/// 64) and the input's channels.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::resnet::ResNetConfig;
///
/// // ResNet-18 (d2l's `ResNet18`): 4 stages of 2 blocks.
/// let config = ResNetConfig::new(64, vec![(2, 64), (2, 128), (2, 256), (2, 512)]);
/// let net = config.init(&Device::flex());
/// assert_eq!(net.stages.iter().map(Vec::len).sum::<usize>(), 8);
/// let logits = net.forward(Tensor::<4>::zeros([2, 1, 96, 96], &Device::flex()));
/// assert_eq!(logits.dims(), [2, 10]);
/// ```
#[derive(Config, Debug)]
pub struct ResNetConfig {
    /// Channels of the stem's 7 × 7 convolution.
    pub stem_channels: usize,
    /// (blocks, channels) of each stage.
    pub arch: Vec<(usize, usize)>,
    /// Image channels.
    #[config(default = 1)]
    pub num_channels: usize,
    /// Classes.
    #[config(default = 10)]
    pub num_classes: usize,
}

impl ResNetConfig {
    /// The network: d2l's stem (7 × 7 convolution, stride 2, batch norm,
    /// ReLU, 3 × 3 max-pooling, stride 2), the stages (each but the first
    /// halves the side in its first block, with a 1 × 1 convolution on the
    /// shortcut there, as d2l's `block`, and wherever else the width
    /// changes), average pooling, a dense layer; Xavier-uniform weights.
    pub fn init(&self, device: &Device) -> ResNet {
        let mut channels = self.stem_channels;
        let stages = self
            .arch
            .iter()
            .enumerate()
            .map(|(i, &(num_residuals, n))| {
                (0..num_residuals)
                    .map(|j| {
                        let first = j == 0 && i > 0;
                        let blk = Residual::new(
                            channels,
                            n,
                            first || channels != n,
                            if first { 2 } else { 1 },
                            device,
                        );
                        channels = n;
                        blk
                    })
                    .collect()
            })
            .collect();
        ResNet {
            stem: conv(
                [self.num_channels, self.stem_channels],
                7,
                2,
                3,
                device,
            ),
            stem_bn: BatchNormConfig::new(self.stem_channels).init(device),
            pool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            stages,
            avg: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            dense: LinearConfig::new(channels, self.num_classes)
                .with_initializer(XAVIER)
                .init(device),
        }
    }
}

/// d2l's `ResNet`, built by [`ResNetConfig::init`].
#[derive(Module, Debug)]
pub struct ResNet {
    /// The stem's convolution.
    pub stem: Conv2d,
    /// The stem's batch norm.
    pub stem_bn: BatchNorm,
    /// The stem's max-pooling.
    pub pool: MaxPool2d,
    /// The residual blocks, stage by stage.
    pub stages: Vec<Vec<Residual>>,
    /// Global average pooling.
    pub avg: AdaptiveAvgPool2d,
    /// To the classes.
    pub dense: Linear,
}

impl ResNet {
    /// Class scores (batch_size, num_classes) of `x` (batch_size,
    /// num_channels, h, w).
    ///
    /// # Panics
    /// When `x` has another number of channels.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let mut x = self
            .pool
            .forward(relu(self.stem_bn.forward(self.stem.forward(x))));
        for blk in self.stages.iter().flatten() {
            x = blk.forward(x);
        }
        self.dense.forward(self.avg.forward(x).flatten::<2>(1, 3))
    }

    /// The (height, width) of the last stage's feature maps, the smallest
    /// the network makes, for an image of `size` = (height, width): each
    /// convolution and the pooling map a side n to ⌊(n + 2p − k) / s⌋ + 1.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::resnet::ResNetConfig;
    ///
    /// // ResNet-18 on 28 × 28: 14 after the stem, 7 after pooling, then 4, 2, 1.
    /// let config = ResNetConfig::new(64, vec![(2, 64), (2, 128), (2, 256), (2, 512)]);
    /// assert_eq!(config.init(&Device::flex()).last_map([28, 28]), [1, 1]);
    /// ```
    pub fn last_map(&self, size: [usize; 2]) -> [usize; 2] {
        let pool = &self.pool;
        let pool =
            (pool.kernel_size[0], pool.stride[0], padding(&pool.padding));
        let mut layers = vec![conv_shape(&self.stem), pool];
        let blocks = self.stages.iter().flatten();
        layers.extend(blocks.map(|b| conv_shape(&b.conv1)));
        size.map(|n| {
            layers
                .iter()
                .fold(n, |n, &(k, s, p)| (n + 2 * p).saturating_sub(k) / s + 1)
        })
    }
}

/// A square convolution's (kernel, stride, padding).
fn conv_shape(conv: &Conv2d) -> (usize, usize, usize) {
    (conv.kernel_size[0], conv.stride[0], padding(&conv.padding))
}

/// The padding on each side of the network's layers (all explicit and
/// equal on every side, or none).
fn padding(config: &PaddingConfig2d) -> usize {
    match config {
        PaddingConfig2d::Explicit(p, ..) => *p,
        _ => 0,
    }
}
