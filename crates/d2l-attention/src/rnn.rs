//! A stacked GRU like PyTorch's `nn.GRU` (d2l zh §9.3–9.4, en §10.2–10.3),
//! the recurrent layer of the seq2seq models: burn's `Gru` is a single
//! layer, so layers are stacked here with dropout between them.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Initializer, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Tensor, activation::sigmoid};

/// d2l initialises every weight matrix of the seq2seq models with
/// Xavier-uniform (`xavier_init_weights`, applied by its `train_seq2seq`
/// to every linear and GRU layer); burn applies it to biases too, where
/// d2l keeps PyTorch's.
pub const XAVIER: Initializer = Initializer::XavierUniform { gain: 1.0 };

/// Configuration of a [`StackedGru`]: torch's `nn.GRU(input_size,
/// num_hiddens, num_layers, dropout)`.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::rnn::StackedGruConfig;
///
/// let device = Device::flex();
/// // torch's nn.GRU(8, 16, num_layers=2, dropout=0.1).
/// let gru = StackedGruConfig::new(8, 16, 2).with_dropout(0.1).init(&device);
/// assert_eq!(gru.layers.len(), 2);
/// ```
#[derive(Config, Debug)]
pub struct StackedGruConfig {
    /// Size of an input vector.
    pub input_size: usize,
    /// Size of each layer's hidden state.
    pub num_hiddens: usize,
    /// Number of stacked layers.
    pub num_layers: usize,
    /// Dropout on the outputs of every layer but the last.
    #[config(default = 0.0)]
    pub dropout: f64,
}

impl StackedGruConfig {
    /// The layers, Xavier-initialised on `device`.
    ///
    /// # Panics
    /// When `num_layers` is 0.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::StackedGruConfig;
    ///
    /// let device = Device::flex();
    /// let gru = StackedGruConfig::new(8, 16, 2).init(&device);
    /// // The three gates side by side: input 8 → 3 × 16.
    /// assert_eq!(gru.layers[0].input.weight.dims(), [8, 48]);
    /// assert_eq!(gru.layers[1].input.weight.dims(), [16, 48]);
    /// ```
    pub fn init(&self, device: &Device) -> StackedGru {
        assert!(self.num_layers > 0, "`num_layers` must be at least 1");
        let h = self.num_hiddens;
        let linear = |i, o| {
            LinearConfig::new(i, o)
                .with_initializer(XAVIER)
                .init(device)
        };
        let layers = (0..self.num_layers)
            .map(|i| GruLayer {
                input: linear(if i == 0 { self.input_size } else { h }, 3 * h),
                hidden: linear(h, 3 * h),
            })
            .collect();
        StackedGru {
            layers,
            dropout: DropoutConfig::new(self.dropout).init(),
        }
    }
}

/// One GRU layer with its three gates side by side, as torch stores them:
/// the reset gate r, the update gate z and the candidate n (d2l zh §9.1).
/// One product per weight matrix (input and hidden) serves all three gates.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::rnn::StackedGruConfig;
///
/// let device = Device::flex();
/// let layer = &StackedGruConfig::new(3, 5, 1).init(&device).layers[0];
/// let h = layer.step(Tensor::ones([2, 3], &device), Tensor::zeros([2, 5], &device));
/// assert_eq!(h.dims(), [2, 5]);
/// ```
#[derive(Module, Debug)]
pub struct GruLayer {
    /// [W_ir W_iz W_in] and their biases, (input_size → 3·num_hiddens).
    pub input: Linear,
    /// [W_hr W_hz W_hn] and their biases, (num_hiddens → 3·num_hiddens).
    pub hidden: Linear,
}

impl GruLayer {
    /// One step from the input `x` (batch_size, input_size) and the
    /// previous state `h` (batch_size, num_hiddens):
    /// r, z = σ(W_i,rz x + W_h,rz h + b), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),
    /// h' = z ⊙ h + (1 − z) ⊙ n (torch's formula). Returns h'
    /// (batch_size, num_hiddens). The tanh is taken as 2σ(2x) − 1, which is
    /// faster on flex (see [`AdditiveAttention::attend`](crate::attention_scoring::AdditiveAttention::attend)).
    ///
    /// # Panics
    /// When `x` or `h` does not fit the layer's sizes, or their batch sizes
    /// differ.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::StackedGruConfig;
    ///
    /// let device = Device::flex();
    /// let layer = &StackedGruConfig::new(3, 5, 1).init(&device).layers[0];
    /// let h = layer.step(Tensor::ones([2, 3], &device), Tensor::zeros([2, 5], &device));
    /// // A GRU state is a convex mix of tanh values: inside (-1, 1).
    /// assert!(h.abs().max().into_scalar::<f32>() < 1.0);
    /// ```
    pub fn step(&self, x: Tensor<2>, h: Tensor<2>) -> Tensor<2> {
        let d = h.dims()[1];
        let x = self.input.forward(x);
        let g = self.hidden.forward(h.clone());
        let rz = sigmoid((x.clone() + g.clone()).narrow(1, 0, 2 * d));
        let (r, z) = (rz.clone().narrow(1, 0, d), rz.narrow(1, d, d));
        let n =
            sigmoid((x.narrow(1, 2 * d, d) + r * g.narrow(1, 2 * d, d)) * 2.0)
                * 2.0
                - 1.0;
        (h - n.clone()) * z + n
    }
}

/// A multi-layer GRU (torch's `nn.GRU`): each layer reads the previous
/// one's outputs, with dropout in between. It runs one step at a time, so
/// that the encoder and the decoder feed it alike and no step's input is
/// cut out of a larger tensor (in burn, the gradient of such a cut is a
/// zero tensor of the whole size).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::rnn::StackedGruConfig;
///
/// let device = Device::flex();
/// let gru = StackedGruConfig::new(8, 16, 2).init(&device);
/// let mut states = gru.zero_states(4, &device);
/// let top = gru.step(Tensor::ones([4, 8], &device), &mut states);
/// assert_eq!((top.dims(), states.len()), ([4, 16], 2));
/// ```
#[derive(Module, Debug)]
pub struct StackedGru {
    /// The layers, bottom first.
    pub layers: Vec<GruLayer>,
    /// Dropout between layers.
    pub dropout: Dropout,
}

impl StackedGru {
    /// Zero states for `batch_size` sequences, one (batch_size,
    /// num_hiddens) per layer, bottom first.
    ///
    /// # Panics
    /// When the GRU has no layers.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::StackedGruConfig;
    ///
    /// let device = Device::flex();
    /// let gru = StackedGruConfig::new(8, 16, 2).init(&device);
    /// let states = gru.zero_states(4, &device);
    /// assert_eq!(states.iter().map(|s| s.dims()).collect::<Vec<_>>(), [[4, 16], [4, 16]]);
    /// ```
    pub fn zero_states(
        &self,
        batch_size: usize,
        device: &Device,
    ) -> Vec<Tensor<2>> {
        let first = self
            .layers
            .first()
            .expect("a StackedGru needs at least one layer");
        let num_hiddens = first.hidden.weight.dims()[0];
        (0..self.layers.len())
            .map(|_| Tensor::zeros([batch_size, num_hiddens], device))
            .collect()
    }

    /// One step: `x` (batch_size, input_size) and each layer's state
    /// (batch_size, num_hiddens), bottom first, give the top layer's output
    /// (batch_size, num_hiddens); `states` are updated.
    ///
    /// # Panics
    /// When there is not one state per layer, or `x` or a state does not
    /// fit the layers (the encoder and decoder check their inputs before
    /// they get here).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::StackedGruConfig;
    ///
    /// let device = Device::flex();
    /// let gru = StackedGruConfig::new(8, 16, 2).init(&device);
    /// let mut states = gru.zero_states(4, &device);
    /// let top = gru.step(Tensor::ones([4, 8], &device), &mut states);
    /// // The output is the top layer's new state.
    /// assert_eq!(top.to_data(), states[1].to_data());
    /// ```
    pub fn step(&self, x: Tensor<2>, states: &mut [Tensor<2>]) -> Tensor<2> {
        assert_eq!(
            states.len(),
            self.layers.len(),
            "`states` must hold one state per layer"
        );
        let mut x = x;
        for (i, (layer, h)) in
            self.layers.iter().zip(states.iter_mut()).enumerate()
        {
            if i > 0 {
                x = self.dropout.forward(x);
            }
            x = layer.step(x, h.clone());
            *h = x.clone();
        }
        x
    }
}
