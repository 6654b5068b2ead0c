//! Bahdanau attention (d2l zh §10.4, en §11.4): an RNN encoder–decoder for
//! English→French whose decoder attends over the encoder's outputs at every
//! step (Bahdanau et al., 2015, "Neural Machine Translation by Jointly
//! Learning to Align and Translate").

use std::path::Path;
use std::time::Instant;

use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::{
    Dropout, DropoutConfig, Embedding, EmbeddingConfig, Initializer, Linear, LinearConfig,
};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::prelude::Config;
use burn::tensor::{
    Device, Int, Tensor, TensorData,
    activation::{log_softmax, sigmoid},
};

use crate::attention_scoring::{
    AdditiveAttention, AdditiveAttentionConfig, AttentionError, ValidLens,
};
use crate::machine_translation::{Batch, NmtData, Vocab, truncate_pad};

/// d2l initialises every weight matrix of the seq2seq models with
/// Xavier-uniform (`xavier_init_weights`); burn applies it to biases too.
const XAVIER: Initializer = Initializer::XavierUniform { gain: 1.0 };

/// Configuration of a [`StackedGru`]: torch's `nn.GRU(input_size,
/// num_hiddens, num_layers, dropout)`.
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
    /// faster on flex (see [`AdditiveAttention::attend`]).
    ///
    /// # Panics
    /// When `x` or `h` does not fit the layer's sizes, or their batch sizes
    /// differ.
    pub fn step(&self, x: Tensor<2>, h: Tensor<2>) -> Tensor<2> {
        let d = h.dims()[1];
        let x = self.input.forward(x);
        let g = self.hidden.forward(h.clone());
        let rz = sigmoid((x.clone() + g.clone()).narrow(1, 0, 2 * d));
        let (r, z) = (rz.clone().narrow(1, 0, d), rz.narrow(1, d, d));
        let n = sigmoid((x.narrow(1, 2 * d, d) + r * g.narrow(1, 2 * d, d)) * 2.0) * 2.0 - 1.0;
        (h - n.clone()) * z + n
    }
}

/// A multi-layer GRU (torch's `nn.GRU`): each layer reads the previous
/// one's outputs, with dropout in between. It runs one step at a time, so
/// that the encoder and the decoder feed it alike and no step's input is
/// cut out of a larger tensor (in burn, the gradient of such a cut is a
/// zero tensor of the whole size).
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
    pub fn zero_states(&self, batch_size: usize, device: &Device) -> Vec<Tensor<2>> {
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
    pub fn step(&self, x: Tensor<2>, states: &mut [Tensor<2>]) -> Tensor<2> {
        assert_eq!(
            states.len(),
            self.layers.len(),
            "`states` must hold one state per layer"
        );
        let mut x = x;
        for (i, (layer, h)) in self.layers.iter().zip(states.iter_mut()).enumerate() {
            if i > 0 {
                x = self.dropout.forward(x);
            }
            x = layer.step(x, h.clone());
            *h = x.clone();
        }
        x
    }
}

/// Configuration shared by [`Seq2SeqEncoder`] and
/// [`Seq2SeqAttentionDecoder`] (d2l's constructor arguments).
#[derive(Config, Debug)]
pub struct Seq2SeqConfig {
    /// Number of tokens in the vocabulary.
    pub vocab_size: usize,
    /// Size of a token embedding.
    pub embed_size: usize,
    /// Size of the GRU's hidden state (and of the attention layer).
    pub num_hiddens: usize,
    /// Number of GRU layers.
    pub num_layers: usize,
    /// Dropout between GRU layers (and on the attention weights).
    #[config(default = 0.0)]
    pub dropout: f64,
}

impl Seq2SeqConfig {
    /// The encoder: Embedding, then a [`StackedGru`] (d2l's `Seq2SeqEncoder`).
    pub fn init_encoder(&self, device: &Device) -> Seq2SeqEncoder {
        Seq2SeqEncoder {
            embedding: EmbeddingConfig::new(self.vocab_size, self.embed_size).init(device),
            rnn: self.gru(self.embed_size, device),
        }
    }

    /// The decoder of d2l zh §10.4.2.
    pub fn init_decoder(&self, device: &Device) -> Seq2SeqAttentionDecoder {
        let h = self.num_hiddens;
        Seq2SeqAttentionDecoder {
            attention: AdditiveAttentionConfig::new(h, h, h)
                .with_dropout(self.dropout)
                .with_initializer(XAVIER)
                .init(device),
            embedding: EmbeddingConfig::new(self.vocab_size, self.embed_size).init(device),
            rnn: self.gru(self.embed_size + h, device),
            dense: LinearConfig::new(h, self.vocab_size)
                .with_initializer(XAVIER)
                .init(device),
        }
    }

    fn gru(&self, input_size: usize, device: &Device) -> StackedGru {
        StackedGruConfig::new(input_size, self.num_hiddens, self.num_layers)
            .with_dropout(self.dropout)
            .init(device)
    }
}

/// The encoder of d2l zh §9.7 (en §10.7): it embeds the source tokens and
/// runs them through a multi-layer GRU.
#[derive(Module, Debug)]
pub struct Seq2SeqEncoder {
    /// Token embedding, (vocab_size → embed_size).
    pub embedding: Embedding,
    /// The GRU.
    pub rnn: StackedGru,
}

/// What the encoder returns.
#[derive(Clone, Debug)]
pub struct Encoded {
    /// The last layer's state at every step: (batch_size, num_steps, num_hiddens).
    pub outputs: Tensor<3>,
    /// Every layer's final state: (num_layers, batch_size, num_hiddens).
    pub state: Tensor<3>,
}

impl Seq2SeqEncoder {
    /// Encodes the source token indices `x` (batch_size, num_steps),
    /// embedding one step at a time.
    ///
    /// # Panics
    /// When `x` has no steps, or an index is not below the vocabulary size.
    pub fn forward(&self, x: Tensor<2, Int>) -> Encoded {
        let [batch_size, num_steps] = x.dims();
        assert!(num_steps > 0, "`x` has no steps: {:?}", x.dims());
        let mut states = self.rnn.zero_states(batch_size, &x.device());
        let outputs: Vec<Tensor<2>> = (0..num_steps)
            .map(|t| {
                let embedded = self.embedding.forward(x.clone().narrow(1, t, 1));
                self.rnn.step(embedded.squeeze_dim(1), &mut states)
            })
            .collect();
        Encoded {
            outputs: Tensor::stack(outputs, 1),
            state: Tensor::stack(states, 0),
        }
    }
}

/// The decoder's state between calls (d2l's `[enc_outputs, hidden_state,
/// enc_valid_lens]`).
#[derive(Clone, Debug)]
pub struct DecoderState {
    /// The encoder's outputs, the attention's keys and values:
    /// (batch_size, num_src_steps, num_hiddens).
    pub enc_outputs: Tensor<3>,
    /// The GRU's state: (num_layers, batch_size, num_hiddens).
    pub hidden_state: Tensor<3>,
    /// Valid source lengths, (batch_size,): padding past them is not attended.
    pub enc_valid_lens: Option<Tensor<1, Int>>,
}

/// What the decoder returns.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// Scores over the target vocabulary: (batch_size, num_steps, vocab_size).
    pub output: Tensor<3>,
    /// The state after the last step.
    pub state: DecoderState,
    /// The attention weights of every step over the source positions:
    /// (batch_size, num_steps, num_src_steps).
    pub attention_weights: Tensor<3>,
}

/// The attention decoder (d2l zh §10.4.2): before each step it attends over
/// the encoder's outputs with the last layer's previous hidden state as
/// query, and feeds the context together with the embedded token to the GRU.
#[derive(Module, Debug)]
pub struct Seq2SeqAttentionDecoder {
    /// Additive attention, (num_hiddens, num_hiddens) → num_hiddens.
    pub attention: AdditiveAttention,
    /// Token embedding, (vocab_size → embed_size).
    pub embedding: Embedding,
    /// The GRU over [context; embedding].
    pub rnn: StackedGru,
    /// Output layer, (num_hiddens → vocab_size).
    pub dense: Linear,
}

impl Seq2SeqAttentionDecoder {
    /// The first state: the encoder's outputs as keys and values, and its
    /// final state of all layers as the decoder's initial state.
    pub fn init_state(
        &self,
        encoded: Encoded,
        enc_valid_lens: Option<Tensor<1, Int>>,
    ) -> DecoderState {
        DecoderState {
            enc_outputs: encoded.outputs,
            hidden_state: encoded.state,
            enc_valid_lens,
        }
    }

    /// Decodes the target token indices `x` (batch_size, num_steps), one
    /// step after another, from `state`.
    ///
    /// # Errors
    /// [`AttentionError::Shape`] when `x`, the hidden state or the
    /// encoder's outputs do not fit this decoder or each other, or when
    /// `enc_valid_lens` is malformed (see
    /// [`masked_softmax`](crate::attention_scoring::masked_softmax)).
    // ANCHOR: decoder_forward
    pub fn forward(
        &self,
        x: Tensor<2, Int>,
        state: DecoderState,
    ) -> Result<Decoded, AttentionError> {
        self.check_state(&x, &state)?;
        let DecoderState {
            enc_outputs,
            hidden_state,
            enc_valid_lens,
        } = state;
        let (mut outputs, mut weights) = (Vec::new(), Vec::new());
        // The keys (the encoder's outputs) are the same at every step.
        let keys = self.attention.project_keys(
            enc_outputs.clone(),
            enc_outputs.clone(),
            enc_valid_lens.clone(),
        )?;
        // The first query is the top layer of the encoder's final state.
        let mut states: Vec<Tensor<2>> =
            hidden_state.iter_dim(0).map(|h| h.squeeze_dim(0)).collect();
        let mut query = states
            .last()
            .expect("at least one layer")
            .clone()
            .unsqueeze_dim(1);
        for t in 0..x.dims()[1] {
            let attended = self.attention.attend(query, &keys)?; // context: (batch_size, 1, num_hiddens)
            let embedded = self.embedding.forward(x.clone().narrow(1, t, 1)); // (batch_size, 1, embed_size)
            let input = Tensor::cat(vec![attended.output, embedded], 2).squeeze_dim(1);
            query = self.rnn.step(input, &mut states).unsqueeze_dim(1); // the top layer's new state
            outputs.push(query.clone());
            weights.push(attended.attention_weights);
        }
        let hidden_state = Tensor::stack(states, 0);
        Ok(Decoded {
            output: self.dense.forward(Tensor::cat(outputs, 1)),
            state: DecoderState {
                enc_outputs,
                hidden_state,
                enc_valid_lens,
            },
            attention_weights: Tensor::cat(weights, 1),
        })
    }
    // ANCHOR_END: decoder_forward

    fn check_state(&self, x: &Tensor<2, Int>, state: &DecoderState) -> Result<(), AttentionError> {
        let [batch_size, num_steps] = x.dims();
        if num_steps == 0 {
            return Err(AttentionError::Shape {
                arg: "x",
                got: x.dims().to_vec(),
                expected: "(batch_size, num_steps) with at least one step".into(),
            });
        }
        let num_layers = self.rnn.layers.len();
        let num_hiddens = self.dense.weight.dims()[0];
        let hidden = state.hidden_state.dims();
        if hidden[0] != num_layers || hidden[2] != num_hiddens {
            return Err(AttentionError::Shape {
                arg: "state.hidden_state",
                got: hidden.to_vec(),
                expected: format!(
                    "(num_layers, batch_size, num_hiddens) = ({num_layers}, {batch_size}, {num_hiddens})"
                ),
            });
        }
        if hidden[1] != batch_size {
            return Err(AttentionError::mismatch(
                "x",
                x.dims().to_vec(),
                "state.hidden_state",
                hidden.to_vec(),
                "the batch sizes (dimension 0 of `x`, 1 of the state) differ",
            ));
        }
        let enc = state.enc_outputs.dims();
        if enc[0] != batch_size || enc[2] != num_hiddens {
            return Err(AttentionError::Shape {
                arg: "state.enc_outputs",
                got: enc.to_vec(),
                expected: format!("({batch_size}, num_src_steps, {num_hiddens})"),
            });
        }
        Ok(())
    }
}

/// An encoder and a decoder trained together (d2l's `EncoderDecoder`).
#[derive(Module, Debug)]
pub struct EncoderDecoder {
    /// Reads the source sentence.
    pub encoder: Seq2SeqEncoder,
    /// Writes the target sentence.
    pub decoder: Seq2SeqAttentionDecoder,
}

impl EncoderDecoder {
    /// Encodes `enc_x` (batch_size, num_src_steps) and decodes `dec_x`
    /// (batch_size, num_steps) from there; `enc_valid_lens` (batch_size,)
    /// hides the source padding from the attention.
    ///
    /// # Errors
    /// As [`Seq2SeqAttentionDecoder::forward`].
    pub fn forward(
        &self,
        enc_x: Tensor<2, Int>,
        dec_x: Tensor<2, Int>,
        enc_valid_lens: Option<Tensor<1, Int>>,
    ) -> Result<Decoded, AttentionError> {
        let state = self
            .decoder
            .init_state(self.encoder.forward(enc_x), enc_valid_lens);
        self.decoder.forward(dec_x, state)
    }
}

/// Softmax cross-entropy that ignores padding (d2l zh §9.7.3,
/// `MaskedSoftmaxCELoss`): `pred` (batch_size, num_steps, vocab_size)
/// holds scores, `label` (batch_size, num_steps) the target indices, and
/// steps at or past `valid_len` (batch_size,) count 0.
///
/// Returns each sequence's loss (batch_size,): its summed token losses
/// divided by num_steps, as d2l does (not by the valid length).
///
/// # Errors
/// [`AttentionError`] when `valid_len` is not (batch_size,) or holds a
/// length outside 0..=num_steps.
///
/// # Panics
/// When `label` is not (batch_size, num_steps).
// ANCHOR: masked_ce
pub fn masked_softmax_ce_loss(
    pred: Tensor<3>,
    label: Tensor<2, Int>,
    valid_len: Tensor<1, Int>,
) -> Result<Tensor<1>, AttentionError> {
    let [batch_size, num_steps, _] = pred.dims();
    let device = pred.device();
    let token_loss = log_softmax(pred, 2)
        .gather(2, label.unsqueeze_dim(2))
        .reshape([batch_size, num_steps])
        .neg();
    // The padding mask of masked_softmax, one row per sequence.
    let padding = ValidLens::from(valid_len)
        .mask(batch_size, 1, num_steps, &device)?
        .reshape([batch_size, num_steps]);
    Ok(token_loss
        .mask_fill(padding, 0.0)
        .mean_dim(1)
        .reshape([batch_size]))
}
// ANCHOR_END: masked_ce

// ANCHOR: grad_clipping
/// Adds up the squared entries of every parameter's gradient.
struct SquaredNorm<'a> {
    grads: &'a GradientsParams,
    total: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.get::<D>(param.id) {
            let squares = grad.square().sum();
            self.total = Some(match self.total.take() {
                Some(total) => total + squares,
                None => squares,
            });
        }
    }
}

/// Multiplies every parameter's gradient by `factor`.
struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: f64,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, grad * self.factor);
        }
    }
}

/// Rescales `grads` so that their norm over **all** parameters of `model`
/// together is at most `theta` (d2l zh §8.5.5, `grad_clipping`; burn's
/// own clipping works per parameter). Returns the norm before clipping.
///
/// # Panics
/// When `theta` is not a positive number.
pub fn grad_clipping<M: Module>(model: &M, grads: &mut GradientsParams, theta: f64) -> f64 {
    assert!(theta > 0.0, "`theta` must be positive, got {theta}");
    let mut squares = SquaredNorm { grads, total: None };
    model.visit(&mut squares);
    let norm = squares.total.map_or(0.0, |t| t.into_scalar::<f64>().sqrt());
    if norm > theta {
        model.visit(&mut Scale {
            grads,
            factor: theta / norm,
        });
    }
    norm
}
// ANCHOR_END: grad_clipping

/// Why training or translating could not go on.
#[derive(Debug, thiserror::Error)]
pub enum Seq2SeqError {
    /// An argument or setting is out of range.
    #[error("invalid `{arg}`: {reason}")]
    Invalid {
        /// The argument or setting.
        arg: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Training needs gradients.
    #[error(
        "`device` is {0:?}, not an autodiff device: pass `device.autodiff()` and a model made on it"
    )]
    NotAutodiff(Device),
    /// A batch did not fit the model.
    #[error(transparent)]
    Attention(#[from] AttentionError),
    /// The loss stopped being a number.
    #[error("the loss became {loss} in epoch {epoch}; lower the learning rate")]
    Diverged {
        /// The epoch (1-based).
        epoch: usize,
        /// The loss.
        loss: f64,
    },
}

/// The training settings of d2l zh §10.4.3.
#[derive(Config, Debug)]
pub struct TrainConfig {
    /// Adam's learning rate.
    #[config(default = 0.005)]
    pub lr: f64,
    /// Passes over the data.
    #[config(default = 250)]
    pub num_epochs: usize,
    /// Sentence pairs per mini-batch.
    #[config(default = 64)]
    pub batch_size: usize,
    /// The largest gradient norm (over all parameters) a step may take.
    #[config(default = 1.0)]
    pub clip_norm: f64,
    /// Seeds the order of the mini-batches.
    #[config(default = 0)]
    pub seed: u64,
}

impl TrainConfig {
    /// Checks that the settings can train.
    ///
    /// # Errors
    /// [`Seq2SeqError::Invalid`] naming a learning rate or clipping norm
    /// that is not a positive number, or a batch size or epoch count of 0.
    pub fn check(&self) -> Result<(), Seq2SeqError> {
        let invalid = |arg, reason: &str| {
            Err(Seq2SeqError::Invalid {
                arg,
                reason: reason.into(),
            })
        };
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return invalid("lr", &format!("{} is not a positive number", self.lr));
        }
        if self.clip_norm.is_nan() || self.clip_norm <= 0.0 {
            return invalid("clip_norm", &format!("{} is not positive", self.clip_norm));
        }
        if self.batch_size == 0 {
            return invalid("batch_size", "must be at least 1");
        }
        if self.num_epochs == 0 {
            return invalid("num_epochs", "must be at least 1");
        }
        Ok(())
    }
}

/// What one epoch of training did.
#[derive(Clone, Copy, Debug)]
pub struct Epoch {
    /// The epoch (1-based).
    pub epoch: usize,
    /// d2l's loss metric: the summed sequence losses (see
    /// [`masked_softmax_ce_loss`]) divided by the number of valid target tokens.
    pub loss: f64,
    /// Valid target tokens seen so far.
    pub tokens: usize,
    /// Seconds of training so far.
    pub seconds: f64,
}

impl Epoch {
    /// Target tokens trained on per second.
    pub fn tokens_per_sec(&self) -> f64 {
        self.tokens as f64 / self.seconds
    }
}

/// Adam with torch's defaults (burn's ε is 1e-5, torch's 1e-8).
pub fn adam() -> ModuleOptimizer {
    AdamConfig::new().with_epsilon(1e-8).init()
}

/// What one training step returns.
pub struct Step {
    /// The model after the update.
    pub model: EncoderDecoder,
    /// The batch's summed sequence losses (see [`masked_softmax_ce_loss`]),
    /// before the update.
    pub loss_sum: f64,
    /// The batch's valid target tokens.
    pub num_tokens: usize,
    /// The gradients' global norm before clipping.
    pub grad_norm: f64,
}

/// One step of [`train_seq2seq`] on `batch`: teacher forcing from `bos`
/// (the index of `<bos>`), the summed masked loss, backward, clipping to a
/// global norm of `config.clip_norm`, and an `optimizer` update with
/// learning rate `config.lr`.
///
/// # Errors
/// [`Seq2SeqError::NotAutodiff`] when the batch is not on an autodiff
/// device; [`Seq2SeqError::Invalid`] for bad settings (see
/// [`TrainConfig::check`]) or targets without steps;
/// [`Seq2SeqError::Attention`] when the batch does not fit the model.
// ANCHOR: train_batch
pub fn train_batch(
    model: EncoderDecoder,
    optimizer: &mut ModuleOptimizer,
    batch: Batch,
    bos: i64,
    config: &TrainConfig,
) -> Result<Step, Seq2SeqError> {
    let [batch_size, num_steps] = batch.y.dims();
    let device = batch.y.device();
    check_training(config, &device, num_steps)?;
    // Skip padding where that changes nothing: target steps past the longest
    // target only add masked losses, and keys past the longest source get
    // weight 0 (unless a source is empty: its row is uniform over all keys).
    // The encoder still reads every step: its final state passes through the
    // padding, as in d2l.
    let longest = |lens: &Tensor<1, Int>| lens.clone().max().into_scalar::<i64>() as usize;
    let tgt_len = longest(&batch.y_valid_len).clamp(1, num_steps);
    let src_len = match batch.x_valid_len.clone().min().into_scalar::<i64>() {
        0 => batch.x.dims()[1],
        _ => longest(&batch.x_valid_len),
    };
    // Teacher forcing: the decoder reads <bos> and the target without its last token.
    let bos = Tensor::<2, Int>::full([batch_size, 1], bos, &device);
    let dec_input = Tensor::cat(vec![bos, batch.y.clone().narrow(1, 0, tgt_len - 1)], 1);
    let encoded = model.encoder.forward(batch.x);
    let keys = Encoded {
        outputs: encoded.outputs.narrow(1, 0, src_len),
        state: encoded.state,
    };
    let state = model.decoder.init_state(keys, Some(batch.x_valid_len));
    let decoded = model.decoder.forward(dec_input, state)?;
    let num_tokens = batch.y_valid_len.clone().sum().into_scalar::<i64>() as usize;
    let label = batch.y.narrow(1, 0, tgt_len);
    // Rescaled so that each sequence's loss is still averaged over num_steps.
    let loss = masked_softmax_ce_loss(decoded.output, label, batch.y_valid_len)?.sum()
        * (tgt_len as f64 / num_steps as f64);
    let loss_sum = loss.clone().into_scalar::<f64>();
    let mut grads = GradientsParams::from_grads(loss.backward(), &model);
    let grad_norm = grad_clipping(&model, &mut grads, config.clip_norm);
    let model = optimizer.step(config.lr, model, grads);
    Ok(Step {
        model,
        loss_sum,
        num_tokens,
        grad_norm,
    })
}
// ANCHOR_END: train_batch

/// The checks of [`train_batch`], before anything is computed.
fn check_training(
    config: &TrainConfig,
    device: &Device,
    num_steps: usize,
) -> Result<(), Seq2SeqError> {
    config.check()?;
    if !device.is_autodiff() {
        return Err(Seq2SeqError::NotAutodiff(device.clone()));
    }
    if num_steps == 0 {
        return Err(Seq2SeqError::Invalid {
            arg: "batch.y",
            reason: "the targets have no steps".into(),
        });
    }
    Ok(())
}

/// Trains `model` on `data` as d2l's `train_seq2seq` (zh §9.7.4): teacher
/// forcing (the decoder reads `<bos>` and the target shifted right),
/// [`masked_softmax_ce_loss`] summed over the batch, Adam (ε = 1e-8, as
/// torch), gradients clipped to a global norm of `clip_norm`.
/// `on_epoch` sees every epoch's [`Epoch`] as it ends.
///
/// `model` must live on `device`, an autodiff device.
///
/// # Errors
/// As [`train_batch`], and [`Seq2SeqError::Diverged`] when the loss is no
/// longer finite.
// ANCHOR: train_seq2seq
pub fn train_seq2seq(
    mut model: EncoderDecoder,
    data: &NmtData,
    config: &TrainConfig,
    device: &Device,
    mut on_epoch: impl FnMut(Epoch),
) -> Result<EncoderDecoder, Seq2SeqError> {
    check_training(config, device, 1)?;
    let mut optimizer = adam();
    let bos = data.tgt_vocab.index("<bos>") as i64;
    let (start, mut tokens) = (Instant::now(), 0);
    for epoch in 1..=config.num_epochs {
        let (mut loss_sum, mut epoch_tokens) = (0.0, 0);
        let seed = config.seed.wrapping_add(epoch as u64);
        for batch in data.batches(config.batch_size, seed, device) {
            let step = train_batch(model, &mut optimizer, batch, bos, config)?;
            model = step.model;
            loss_sum += step.loss_sum;
            epoch_tokens += step.num_tokens;
        }
        tokens += epoch_tokens;
        let loss = loss_sum / epoch_tokens as f64;
        if !loss.is_finite() {
            return Err(Seq2SeqError::Diverged { epoch, loss });
        }
        let seconds = start.elapsed().as_secs_f64();
        on_epoch(Epoch {
            epoch,
            loss,
            tokens,
            seconds,
        });
    }
    Ok(model)
}
// ANCHOR_END: train_seq2seq

/// A translation and where the decoder looked while writing it.
#[derive(Clone, Debug)]
pub struct Translation {
    /// The predicted target tokens, space-separated, without `<eos>`.
    pub text: String,
    /// The attention weights of every decoding step, the one that wrote
    /// `<eos>` included, over the `num_steps` source positions:
    /// (num_predicted + 1, num_steps) when `<eos>` came in time.
    pub attention_weights: Tensor<2>,
}

/// Translates `src_sentence` greedily (d2l zh §9.7.5, `predict_seq2seq`):
/// the source is lowercased, split on spaces, ended with `<eos>` and
/// padded to `num_steps`; the decoder starts from `<bos>` and feeds each
/// most likely token back in until it writes `<eos>` or `num_steps` tokens.
///
/// `model` should be an inference copy (`model.valid()`) on `device`, so
/// that no dropout applies. A source longer than `num_steps - 1` tokens is
/// cut to `num_steps` with no `<eos>`.
///
/// # Errors
/// [`Seq2SeqError::Invalid`] when `num_steps` is 0 or a vocabulary is
/// larger than the model's (`src_vocab` than the encoder's embedding,
/// `tgt_vocab` than the decoder's output layer).
// ANCHOR: predict
pub fn predict_seq2seq(
    model: &EncoderDecoder,
    src_sentence: &str,
    src_vocab: &Vocab,
    tgt_vocab: &Vocab,
    num_steps: usize,
    device: &Device,
) -> Result<Translation, Seq2SeqError> {
    check_vocabs(model, src_vocab, tgt_vocab, num_steps)?;
    let lowercase = src_sentence.to_lowercase();
    let mut src_tokens: Vec<usize> = lowercase.split(' ').map(|t| src_vocab.index(t)).collect();
    src_tokens.push(src_vocab.index("<eos>"));
    let enc_valid_len = src_tokens.len().min(num_steps) as i64;
    let src_tokens = truncate_pad(&src_tokens, num_steps, src_vocab.index("<pad>"));
    let enc_x = Tensor::<2, Int>::from_data(
        TensorData::new(
            src_tokens.iter().map(|&i| i as i64).collect(),
            [1, num_steps],
        ),
        device,
    );
    let enc_valid_lens = Tensor::<1, Int>::from_ints([enc_valid_len], device);
    let encoded = model.encoder.forward(enc_x);
    let mut state = model.decoder.init_state(encoded, Some(enc_valid_lens));
    let mut dec_x = Tensor::<2, Int>::from_ints([[tgt_vocab.index("<bos>") as i64]], device);
    let (mut output, mut weights) = (Vec::new(), Vec::new());
    for _ in 0..num_steps {
        let decoded = model.decoder.forward(dec_x, state)?;
        state = decoded.state;
        weights.push(decoded.attention_weights.reshape([1, num_steps]));
        dec_x = decoded.output.argmax(2).reshape([1, 1]);
        let pred = dec_x.clone().into_scalar::<i64>() as usize;
        if pred == tgt_vocab.index("<eos>") {
            break;
        }
        output.push(tgt_vocab.token(pred));
    }
    Ok(Translation {
        text: output.join(" "),
        attention_weights: Tensor::cat(weights, 0),
    })
}
// ANCHOR_END: predict

fn check_vocabs(
    model: &EncoderDecoder,
    src_vocab: &Vocab,
    tgt_vocab: &Vocab,
    num_steps: usize,
) -> Result<(), Seq2SeqError> {
    let src_size = model.encoder.embedding.weight.dims()[0];
    let tgt_size = model.decoder.dense.weight.dims()[1];
    let invalid = |arg, reason| Err(Seq2SeqError::Invalid { arg, reason });
    if num_steps == 0 {
        return invalid("num_steps", "must be at least 1".into());
    }
    if src_vocab.len() > src_size {
        return invalid(
            "src_vocab",
            format!(
                "{} tokens, but the encoder embeds {src_size}",
                src_vocab.len()
            ),
        );
    }
    if tgt_vocab.len() > tgt_size {
        return invalid(
            "tgt_vocab",
            format!(
                "{} tokens, but the decoder scores {tgt_size}",
                tgt_vocab.len()
            ),
        );
    }
    Ok(())
}

/// Saves `model`'s parameters as a burnpack file at `path`, atomically
/// (the folder is created if needed).
///
/// # Errors
/// When the folder cannot be created or the file written.
pub fn save_model(model: &EncoderDecoder, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", dir.display()))?;
    }
    let bytes = model.clone().into_record().into_bytes()?;
    crate::files::write_atomic(path, &bytes)?;
    Ok(())
}
