//! Stacked recurrent layers like PyTorch's `nn.GRU` and `nn.LSTM` (d2l zh
//! §9.1–9.4, en §10.1–10.3), the recurrent part of the seq2seq models:
//! burn's `Gru` and `Lstm` are single layers, so layers are stacked here
//! with dropout between them.

use burn::module::{Module, ModuleDisplay};
use burn::nn::{Dropout, DropoutConfig, Initializer, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Tensor};

use crate::kernels::{dropout, sigmoid};

/// d2l initialises every weight matrix of the seq2seq models with
/// Xavier-uniform (`xavier_init_weights`, applied by its `train_seq2seq`
/// to every linear and GRU layer); burn applies it to biases too, where
/// d2l keeps PyTorch's.
pub const XAVIER: Initializer = Initializer::XavierUniform { gain: 1.0 };

/// Configuration of a [`StackedRnn`]: torch's `nn.GRU(input_size,
/// num_hiddens, num_layers, dropout)`, or `nn.LSTM` with the same
/// arguments.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::rnn::{StackedGru, StackedLstm, StackedRnnConfig};
///
/// let device = Device::flex();
/// // torch's nn.GRU(8, 16, num_layers=2, dropout=0.1), and nn.LSTM alike.
/// let config = StackedRnnConfig::new(8, 16, 2).with_dropout(0.1);
/// let gru: StackedGru = config.init(&device);
/// let lstm: StackedLstm = config.init(&device);
/// assert_eq!((gru.layers.len(), lstm.layers.len()), (2, 2));
/// ```
#[derive(Config, Debug)]
pub struct StackedRnnConfig {
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

impl StackedRnnConfig {
    /// The layers, Xavier-initialised on `device`.
    ///
    /// # Panics
    /// When `num_layers` is 0.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::rnn::{StackedGru, StackedLstm, StackedRnnConfig};
    ///
    /// let device = Device::flex();
    /// let gru: StackedGru = StackedRnnConfig::new(8, 16, 2).init(&device);
    /// // The three gates side by side: input 8 → 3 × 16.
    /// assert_eq!(gru.layers[0].input.weight.dims(), [8, 48]);
    /// assert_eq!(gru.layers[1].input.weight.dims(), [16, 48]);
    /// // An LSTM's four: 8 → 4 × 16.
    /// let lstm: StackedLstm = StackedRnnConfig::new(8, 16, 2).init(&device);
    /// assert_eq!(lstm.layers[0].input.weight.dims(), [8, 64]);
    /// ```
    pub fn init<L: RnnLayer>(&self, device: &Device) -> StackedRnn<L> {
        assert!(self.num_layers > 0, "`num_layers` must be at least 1");
        let h = self.num_hiddens;
        let layers = (0..self.num_layers)
            .map(|i| {
                L::init(if i == 0 { self.input_size } else { h }, h, device)
            })
            .collect();
        StackedRnn {
            layers,
            dropout: DropoutConfig::new(self.dropout).init(),
        }
    }
}

/// One recurrent layer that [`StackedRnn`] stacks. Its state is one
/// (batch_size, `STATE_PARTS` · num_hiddens) tensor whose first num_hiddens
/// columns are the layer's output h.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::rnn::{GruLayer, LstmLayer, RnnLayer};
///
/// let device = Device::flex();
/// // A GRU's state is h; an LSTM's is [h, c].
/// let gru = GruLayer::init(3, 5, &device);
/// let lstm = LstmLayer::init(3, 5, &device);
/// let x = Tensor::<2>::ones([2, 3], &device);
/// let zeros = |layer: usize| Tensor::zeros([2, layer * 5], &device);
/// assert_eq!(gru.step(x.clone(), zeros(GruLayer::STATE_PARTS)).dims(), [2, 5]);
/// assert_eq!(lstm.step(x, zeros(LstmLayer::STATE_PARTS)).dims(), [2, 10]);
/// ```
pub trait RnnLayer: Module + ModuleDisplay {
    /// How many num_hiddens-wide parts a state holds side by side: 1 for
    /// the GRU (h), 2 for the LSTM (h, then the memory cell c).
    const STATE_PARTS: usize;

    /// A layer from `input_size` to `num_hiddens`, Xavier-initialised.
    fn init(input_size: usize, num_hiddens: usize, device: &Device) -> Self;

    /// Size of the layer's output h. It reads (and so initialises) the
    /// hidden weight: burn's parameters are lazy, and seeded runs depend on
    /// the order in which they are first read.
    fn num_hiddens(&self) -> usize;

    /// One step from the input `x` (batch_size, input_size) and the
    /// previous `state`; returns the new state.
    ///
    /// # Panics
    /// When `x` or `state` does not fit the layer, or their batch sizes
    /// differ.
    fn step(&self, x: Tensor<2>, state: Tensor<2>) -> Tensor<2>;
}

/// tanh(x) as 2σ(2x) − 1, which is faster on flex (see
/// [`AdditiveAttention::attend`](crate::attention_scoring::AdditiveAttention::attend)).
fn tanh(x: Tensor<2>) -> Tensor<2> {
    sigmoid(x * 2.0) * 2.0 - 1.0
}

/// The shape checks of a layer's step, on the host: `x` must be
/// (batch_size, the input size of `input`) and `state` (batch_size,
/// `state_size`). Reads no parameter value, so initialises none.
fn check_step(input: &Linear, x: &Tensor<2>, state: &Tensor<2>, size: usize) {
    let input_size = input.weight.lazy_shape()[0];
    let (x, state) = (x.dims(), state.dims());
    assert!(
        x[1] == input_size,
        "`x` has shape {x:?}, expected (batch_size, {input_size})"
    );
    assert!(
        state == [x[0], size],
        "`state` has shape {state:?}, expected ({}, {size}) for `x` {x:?}",
        x[0]
    );
}

/// `input → gates · num_hiddens` and `num_hiddens → gates · num_hiddens`,
/// the gates side by side as torch stores them.
fn gate_weights(
    input_size: usize,
    num_hiddens: usize,
    gates: usize,
    device: &Device,
) -> (Linear, Linear) {
    let linear = |i| {
        LinearConfig::new(i, gates * num_hiddens)
            .with_initializer(XAVIER)
            .init(device)
    };
    (linear(input_size), linear(num_hiddens))
}

/// One GRU layer with its three gates side by side, as torch stores them:
/// the reset gate r, the update gate z and the candidate n (d2l zh §9.1).
/// One product per weight matrix (input and hidden) serves all three gates.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::rnn::{RnnLayer, StackedGru, StackedRnnConfig};
///
/// let device = Device::flex();
/// let gru: StackedGru = StackedRnnConfig::new(3, 5, 1).init(&device);
/// let h = gru.layers[0].step(Tensor::ones([2, 3], &device), Tensor::zeros([2, 5], &device));
/// assert_eq!(h.dims(), [2, 5]);
/// ```
#[derive(Module, Debug)]
pub struct GruLayer {
    /// [W_ir W_iz W_in] and their biases, (input_size → 3·num_hiddens).
    pub input: Linear,
    /// [W_hr W_hz W_hn] and their biases, (num_hiddens → 3·num_hiddens).
    pub hidden: Linear,
}

impl RnnLayer for GruLayer {
    const STATE_PARTS: usize = 1;

    fn init(input_size: usize, num_hiddens: usize, device: &Device) -> Self {
        let (input, hidden) = gate_weights(input_size, num_hiddens, 3, device);
        GruLayer { input, hidden }
    }

    fn num_hiddens(&self) -> usize {
        self.hidden.weight.dims()[0]
    }

    /// r, z = σ(W_i,rz x + W_h,rz h + b), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),
    /// h' = z ⊙ h + (1 − z) ⊙ n (torch's formula); the state is h
    /// (batch_size, num_hiddens). The tanh is taken as 2σ(2x) − 1, which is
    /// faster on flex (see [`AdditiveAttention::attend`](crate::attention_scoring::AdditiveAttention::attend)).
    ///
    /// # Panics
    /// When `x` is not (batch_size, input_size) or `h` not (batch_size,
    /// num_hiddens), naming the argument.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::{RnnLayer, StackedGru, StackedRnnConfig};
    ///
    /// let device = Device::flex();
    /// let gru: StackedGru = StackedRnnConfig::new(3, 5, 1).init(&device);
    /// let h = gru.layers[0].step(Tensor::ones([2, 3], &device), Tensor::zeros([2, 5], &device));
    /// // A GRU state is a convex mix of tanh values: inside (-1, 1).
    /// assert!(h.abs().max().into_scalar::<f32>() < 1.0);
    /// ```
    fn step(&self, x: Tensor<2>, h: Tensor<2>) -> Tensor<2> {
        let d = self.hidden.weight.lazy_shape()[0];
        check_step(&self.input, &x, &h, d);
        let x = self.input.forward(x);
        let g = self.hidden.forward(h.clone());
        let rz = sigmoid((x.clone() + g.clone()).narrow(1, 0, 2 * d));
        let (r, z) = (rz.clone().narrow(1, 0, d), rz.narrow(1, d, d));
        let n = tanh(x.narrow(1, 2 * d, d) + r * g.narrow(1, 2 * d, d));
        (h - n.clone()) * z + n
    }
}

/// One LSTM layer with its four gates side by side, as torch stores them:
/// the input gate i, the forget gate f, the candidate g and the output
/// gate o (d2l zh §9.2, en §10.1).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::rnn::{LstmLayer, RnnLayer};
///
/// let device = Device::flex();
/// let layer = LstmLayer::init(3, 5, &device);
/// // The state is [h, c]: (batch_size, 2 · num_hiddens).
/// let state = layer.step(Tensor::ones([2, 3], &device), Tensor::zeros([2, 10], &device));
/// assert_eq!(state.dims(), [2, 10]);
/// ```
#[derive(Module, Debug)]
pub struct LstmLayer {
    /// [W_ii W_if W_ig W_io] and their biases, (input_size → 4·num_hiddens).
    pub input: Linear,
    /// [W_hi W_hf W_hg W_ho] and their biases, (num_hiddens → 4·num_hiddens).
    pub hidden: Linear,
}

impl RnnLayer for LstmLayer {
    const STATE_PARTS: usize = 2;

    fn init(input_size: usize, num_hiddens: usize, device: &Device) -> Self {
        let (input, hidden) = gate_weights(input_size, num_hiddens, 4, device);
        LstmLayer { input, hidden }
    }

    fn num_hiddens(&self) -> usize {
        self.hidden.weight.dims()[0]
    }

    /// i, f, o = σ(W_i x + b_i + W_h h + b_h), g = tanh(…) likewise,
    /// c' = f ⊙ c + i ⊙ g, h' = o ⊙ tanh(c') (torch's `nn.LSTM` formula),
    /// from the state [h, c] (batch_size, 2·num_hiddens); returns [h', c'].
    /// Both tanh are taken as 2σ(2x) − 1, as in [`GruLayer`].
    ///
    /// # Panics
    /// When `x` is not (batch_size, input_size) or `state` not
    /// (batch_size, 2·num_hiddens), naming the argument.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::{LstmLayer, RnnLayer};
    ///
    /// let device = Device::flex();
    /// let layer = LstmLayer::init(3, 5, &device);
    /// let x = Tensor::ones([2, 3], &device);
    /// let state = layer.step(x, Tensor::zeros([2, 10], &device));
    /// // From c = 0, c' = i ⊙ g: each |c'| < 1, and |h'| = |o ⊙ tanh c'| < |c'|.
    /// let (h, c) = (state.clone().narrow(1, 0, 5), state.narrow(1, 5, 5));
    /// assert!(c.clone().abs().max().into_scalar::<f32>() < 1.0);
    /// assert!((h.abs() - c.abs()).max().into_scalar::<f32>() <= 0.0);
    /// ```
    fn step(&self, x: Tensor<2>, state: Tensor<2>) -> Tensor<2> {
        let d = self.hidden.weight.lazy_shape()[0];
        check_step(&self.input, &x, &state, 2 * d);
        let (h, c) = (state.clone().narrow(1, 0, d), state.narrow(1, d, d));
        let gates = self.input.forward(x) + self.hidden.forward(h);
        let ifo = sigmoid(gates.clone());
        let (i, f) = (ifo.clone().narrow(1, 0, d), ifo.clone().narrow(1, d, d));
        let o = ifo.narrow(1, 3 * d, d);
        let c = f * c + i * tanh(gates.narrow(1, 2 * d, d));
        let h = o * tanh(c.clone());
        Tensor::cat(vec![h, c], 1)
    }
}

/// Several recurrent layers (torch's `nn.GRU` or `nn.LSTM` with
/// `num_layers`): each layer reads the previous one's outputs, with
/// dropout in between. It runs one step at a time, so that the encoder and
/// the decoder feed it alike and no step's input is cut out of a larger
/// tensor (in burn, the gradient of such a cut is a zero tensor of the
/// whole size).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::rnn::{StackedGru, StackedRnnConfig};
///
/// let device = Device::flex();
/// let gru: StackedGru = StackedRnnConfig::new(8, 16, 2).init(&device);
/// let mut states = gru.zero_states(4, &device);
/// let top = gru.step(Tensor::ones([4, 8], &device), &mut states);
/// assert_eq!((top.dims(), states.len()), ([4, 16], 2));
/// ```
#[derive(Module, Debug)]
pub struct StackedRnn<L> {
    /// The layers, bottom first.
    pub layers: Vec<L>,
    /// Dropout between layers.
    pub dropout: Dropout,
}

/// A multi-layer GRU (torch's `nn.GRU`).
pub type StackedGru = StackedRnn<GruLayer>;

/// A multi-layer LSTM (torch's `nn.LSTM`).
pub type StackedLstm = StackedRnn<LstmLayer>;

impl<L: RnnLayer> StackedRnn<L> {
    fn first(&self) -> &L {
        self.layers
            .first()
            .expect("a StackedRnn needs at least one layer")
    }

    /// Size of a layer's output h (see [`RnnLayer::num_hiddens`]).
    ///
    /// # Panics
    /// When there are no layers.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::rnn::{StackedLstm, StackedRnnConfig};
    ///
    /// let lstm: StackedLstm = StackedRnnConfig::new(8, 16, 2).init(&Device::flex());
    /// assert_eq!(lstm.num_hiddens(), 16);
    /// ```
    pub fn num_hiddens(&self) -> usize {
        self.first().num_hiddens()
    }

    /// Width of one layer's state: num_hiddens for a GRU, 2 · num_hiddens
    /// for an LSTM ([h, c]).
    ///
    /// # Panics
    /// When there are no layers.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::rnn::{StackedGru, StackedLstm, StackedRnnConfig};
    ///
    /// let device = Device::flex();
    /// let gru: StackedGru = StackedRnnConfig::new(8, 16, 2).init(&device);
    /// let lstm: StackedLstm = StackedRnnConfig::new(8, 16, 2).init(&device);
    /// assert_eq!((gru.state_size(), lstm.state_size()), (16, 32));
    /// ```
    pub fn state_size(&self) -> usize {
        L::STATE_PARTS * self.num_hiddens()
    }

    /// Zero states for `batch_size` sequences, one (batch_size,
    /// [`state_size`](Self::state_size)) per layer, bottom first.
    ///
    /// # Panics
    /// When there are no layers.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::rnn::{StackedGru, StackedRnnConfig};
    ///
    /// let device = Device::flex();
    /// let gru: StackedGru = StackedRnnConfig::new(8, 16, 2).init(&device);
    /// let states = gru.zero_states(4, &device);
    /// assert_eq!(states.iter().map(|s| s.dims()).collect::<Vec<_>>(), [[4, 16], [4, 16]]);
    /// ```
    pub fn zero_states(
        &self,
        batch_size: usize,
        device: &Device,
    ) -> Vec<Tensor<2>> {
        let size = self.state_size();
        (0..self.layers.len())
            .map(|_| Tensor::zeros([batch_size, size], device))
            .collect()
    }

    /// A layer's output h, (batch_size, num_hiddens), from its `state`
    /// (batch_size, [`state_size`](Self::state_size)): the GRU's whole
    /// state, the first half of the LSTM's. Takes the sizes from `state`
    /// and reads no parameter (so initialises none).
    ///
    /// # Panics
    /// When `state`'s width is not a multiple of the parts of a state (2
    /// for an LSTM), naming it.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::{StackedLstm, StackedRnnConfig};
    ///
    /// let device = Device::flex();
    /// let lstm: StackedLstm = StackedRnnConfig::new(8, 2, 1).init(&device);
    /// // [h, c] = [1, 2, 3, 4]: h = [1, 2].
    /// let state = Tensor::<2>::from_floats([[1.0, 2.0, 3.0, 4.0]], &device);
    /// assert_eq!(lstm.output(state).to_data(), Tensor::<2>::from_floats([[1.0, 2.0]], &device).to_data());
    /// ```
    pub fn output(&self, state: Tensor<2>) -> Tensor<2> {
        let dims = state.dims();
        let parts = L::STATE_PARTS;
        assert!(
            dims[1] % parts == 0,
            "`state` has shape {dims:?}, expected (batch_size, {parts} · num_hiddens)"
        );
        if parts == 1 {
            state
        } else {
            state.narrow(1, 0, dims[1] / parts)
        }
    }

    /// One step: `x` (batch_size, input_size) and each layer's state,
    /// bottom first, give the top layer's output (batch_size,
    /// num_hiddens); `states` are updated.
    ///
    /// # Panics
    /// When there is not one state per layer, or `x` or a state does not
    /// fit the layers (the encoder and decoder check their inputs before
    /// they get here).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::rnn::{StackedLstm, StackedRnnConfig};
    ///
    /// let device = Device::flex();
    /// let lstm: StackedLstm = StackedRnnConfig::new(8, 16, 2).init(&device);
    /// let mut states = lstm.zero_states(4, &device);
    /// let top = lstm.step(Tensor::ones([4, 8], &device), &mut states);
    /// // The output is the top layer's new h, the first half of its state.
    /// assert_eq!(top.to_data(), states[1].clone().narrow(1, 0, 16).to_data());
    /// ```
    pub fn step(&self, x: Tensor<2>, states: &mut [Tensor<2>]) -> Tensor<2> {
        assert_eq!(
            states.len(),
            self.layers.len(),
            "`states` must hold one state per layer"
        );
        let mut x = x;
        for (i, (layer, state)) in
            self.layers.iter().zip(states.iter_mut()).enumerate()
        {
            if i > 0 {
                x = dropout(&self.dropout, x);
            }
            *state = layer.step(x, state.clone());
            x = self.output(state.clone());
        }
        x
    }
}
