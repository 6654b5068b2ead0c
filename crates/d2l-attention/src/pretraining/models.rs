//! The encoder-only and decoder-only language models, built from the
//! chapter's Transformer blocks.

use burn::module::Module;
use burn::nn::{LayerNormConfig, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor, activation::relu};
use chacha20::ChaCha12Rng;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::kernels::LayerNorm;

use super::batch::{LmBatch, causal_batch, mlm_batch};
use super::masking::{check_words, mask_tokens};
use crate::attention_scoring::{AttentionWeights, ValidLens};
use crate::seq2seq::{Decoded, Decoder, Encoder};
use crate::transformer::{
    TransformerConfig, TransformerDecoder, TransformerDecoderState,
    TransformerEncoded, TransformerEncoder,
};

/// A model that scores the labels of an [`LmBatch`]: what the training
/// loop needs.
pub trait Scores: Module + Clone {
    /// Scores for the batch's labels, (batch_size, labels per sequence,
    /// number of choices: the vocabulary, or the classes).
    fn logits(&self, batch: &LmBatch) -> Tensor<3>;
}

/// A model that a language-modelling objective can train
/// ([`pretrain`](super::pretrain)): how it batches sentences.
pub trait LanguageModel: Scores {
    /// One epoch's batches of `sentences` (word indices, no reserved
    /// tokens) for a vocabulary of `vocab_len`, shuffled and (for a masked
    /// model) masked by `seed`.
    ///
    /// # Panics
    /// For a masked model, when a sentence is empty or holds a reserved
    /// token other than `<unk>` ([`mask_tokens`]'s rule; the message names
    /// the sentence, as `sentences`[i]).
    fn batches(
        sentences: &[Vec<usize>],
        vocab_len: usize,
        batch_size: usize,
        seed: u64,
        device: &Device,
    ) -> Vec<LmBatch>;
}

/// `sentences` in a random order (from `seed`), cut into runs of
/// `batch_size` (the last may be shorter).
fn shuffled<'a>(
    sentences: &'a [Vec<usize>],
    batch_size: usize,
    rng: &mut ChaCha12Rng,
) -> Vec<Vec<&'a Vec<usize>>> {
    let mut order: Vec<&Vec<usize>> = sentences.iter().collect();
    order.shuffle(rng);
    order.chunks(batch_size).map(<[_]>::to_vec).collect()
}

/// BERT's masked-language-model head (d2l en §15.8's `MaskLM`): a dense
/// layer, ReLU, layer normalisation, and a dense layer to the vocabulary.
#[derive(Module, Debug)]
pub struct MaskLm {
    /// (num_hiddens → num_hiddens).
    pub dense: Linear,
    /// After the ReLU.
    pub norm: LayerNorm,
    /// (num_hiddens → vocab_size).
    pub output: Linear,
}

impl MaskLm {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.output
            .forward(self.norm.forward(relu(self.dense.forward(x))))
    }
}

/// An encoder-only masked language model (BERT's pretraining without the
/// next-sentence task; Devlin et al. 2018): the chapter's
/// [`TransformerEncoder`] and a [`MaskLm`] head on the masked positions.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
/// use d2l_attention::pretraining::MaskedLm;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let device = Device::flex();
/// let model = MaskedLm::new(&TransformerConfig::new(20, 20), &device);
/// let tokens = Tensor::<2, Int>::from_ints([[4, 5, 9, 3], [4, 8, 5, 3]], &device);
/// let positions = Tensor::<2, Int>::from_ints([[1], [2]], &device);
/// let out = model.forward(tokens, &ValidLens::new(&[4, 4], &device), positions);
/// assert_eq!(out.logits.dims(), [2, 1, 20]);
/// // Two blocks' self-attention, (batch_size, num_heads, 4, 4) each.
/// assert_eq!(out.attention_weights[1].dims(), [2, 4, 4, 4]);
/// ```
#[derive(Module, Debug)]
pub struct MaskedLm {
    /// The Transformer encoder (its `src_vocab_size` is the vocabulary).
    pub encoder: TransformerEncoder,
    /// The head that scores the vocabulary at masked positions.
    pub mlm: MaskLm,
}

/// What [`MaskedLm::forward`] returns.
#[derive(Clone, Debug)]
pub struct MlmOutput {
    /// Scores at the positions asked for: (batch_size, num_positions,
    /// vocab_size).
    pub logits: Tensor<3>,
    /// Each block's self-attention weights, (batch_size, num_heads,
    /// num_steps, num_steps): every token attends to every token.
    pub attention_weights: Vec<AttentionWeights<4>>,
    /// The encoder's outputs, (batch_size, num_steps, num_hiddens).
    pub encoded: Tensor<3>,
}

impl MaskedLm {
    /// The model for `config`'s `src_vocab_size`, sizes and dropout, on
    /// `device`; the head's layers start as `config.initializer` says.
    ///
    /// # Examples
    /// See [`MaskedLm`].
    pub fn new(config: &TransformerConfig, device: &Device) -> Self {
        let (h, v) = (config.num_hiddens, config.src_vocab_size);
        let linear = |i, o| {
            LinearConfig::new(i, o)
                .with_initializer(config.initializer.clone())
                .init(device)
        };
        MaskedLm {
            encoder: config.init_encoder(device),
            mlm: MaskLm {
                dense: linear(h, h),
                norm: LayerNorm::new(&LayerNormConfig::new(h), device),
                output: linear(h, v),
            },
        }
    }

    /// The longest input it reads, `<cls>` and `<eos>` included: its
    /// positional encoding's `max_len` (`config.max_len`).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::pretraining::MaskedLm;
    /// use d2l_attention::transformer::TransformerConfig;
    ///
    /// let config = TransformerConfig::new(20, 20).with_max_len(8);
    /// assert_eq!(MaskedLm::new(&config, &Device::flex()).max_len(), 8);
    /// ```
    pub fn max_len(&self) -> usize {
        self.encoder.pos_encoding.max_len()
    }

    /// Encodes `tokens` (batch_size, num_steps), keys past `valid_lens`
    /// hidden, and scores the vocabulary at `positions` (batch_size,
    /// num_positions).
    ///
    /// # Panics
    /// When the shapes do not fit each other or a token or position is out
    /// of range.
    ///
    /// # Examples
    /// See [`MaskedLm`].
    pub fn forward(
        &self,
        tokens: Tensor<2, Int>,
        valid_lens: &ValidLens,
        positions: Tensor<2, Int>,
    ) -> MlmOutput {
        let TransformerEncoded {
            outputs,
            attention_weights,
        } = self.encoder.forward(tokens, Some(valid_lens));
        let [batch_size, _, num_hiddens] = outputs.dims();
        let num_positions = positions.dims()[1];
        let index = positions.unsqueeze_dim::<3>(2).expand([
            batch_size,
            num_positions,
            num_hiddens,
        ]);
        MlmOutput {
            logits: self.mlm.forward(outputs.clone().gather(1, index)),
            attention_weights,
            encoded: outputs,
        }
    }
}

impl LanguageModel for MaskedLm {
    /// Each sentence masked anew in every epoch ([`mask_tokens`]; RoBERTa's
    /// dynamic masking, where BERT masked its data once).
    fn batches(
        sentences: &[Vec<usize>],
        vocab_len: usize,
        batch_size: usize,
        seed: u64,
        device: &Device,
    ) -> Vec<LmBatch> {
        for (i, s) in sentences.iter().enumerate() {
            if let Err(e) = check_words(s, &format!("`sentences`[{i}]"), vocab_len) {
                panic!("{e}");
            }
        }
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        shuffled(sentences, batch_size, &mut rng)
            .into_iter()
            .map(|batch| {
                let examples: Vec<_> = batch
                    .iter()
                    .map(|s| mask_tokens(s, vocab_len, &mut rng))
                    .collect();
                mlm_batch(&examples, device)
            })
            .collect()
    }
}

impl Scores for MaskedLm {
    fn logits(&self, batch: &LmBatch) -> Tensor<3> {
        let positions = batch.positions.clone().expect("a masked batch");
        self.forward(batch.tokens.clone(), &batch.valid_lens, positions)
            .logits
    }
}

/// A decoder-only (causal) language model (GPT; Radford et al. 2018): the
/// chapter's [`TransformerDecoder`] without encoder–decoder attention,
/// trained to predict each next token. Its causal mask lets step t see
/// steps ≤ t only, and its key–value cache makes generation one token per
/// call.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::pretraining::CausalLm;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let device = Device::flex();
/// let model = CausalLm::new(&TransformerConfig::new(20, 20), &device);
/// let tokens = Tensor::<2, Int>::from_ints([[2, 7, 9]], &device);
/// let decoded = model.forward(tokens, model.init_state(1));
/// assert_eq!(decoded.output.dims(), [1, 3, 20]);
/// assert!(model.decoder.blks.iter().all(|b| b.cross.is_none()));
/// ```
#[derive(Module, Debug)]
pub struct CausalLm {
    /// The decoder; its `dense` layer scores the vocabulary.
    pub decoder: TransformerDecoder,
}

impl CausalLm {
    /// The model for `config`'s `tgt_vocab_size`, sizes and dropout, with
    /// `cross_attention` off, on `device`.
    ///
    /// # Examples
    /// See [`CausalLm`].
    pub fn new(config: &TransformerConfig, device: &Device) -> Self {
        let config = config.clone().with_cross_attention(false);
        CausalLm {
            decoder: config.init_decoder(device),
        }
    }

    /// The state before the first token, for `batch_size` sequences. The
    /// decoder's state holds encoder outputs; without cross-attention no
    /// block reads them, so they are one step of zeros.
    ///
    /// # Examples
    /// See [`CausalLm`].
    pub fn init_state(&self, batch_size: usize) -> TransformerDecoderState {
        let weight = &self.decoder.embedding.weight;
        let num_hiddens = weight.dims()[1];
        let unused =
            Tensor::zeros([batch_size, 1, num_hiddens], &weight.device());
        let encoded = TransformerEncoded {
            outputs: unused,
            attention_weights: Vec::new(),
        };
        self.decoder.init_state(encoded, None)
    }

    /// Scores for the token after each of `tokens` (batch_size, num_steps),
    /// which follow the steps in `state`; the self-attention maps.
    ///
    /// # Panics
    /// As [`TransformerDecoder`]'s `forward`.
    ///
    /// # Examples
    /// See [`CausalLm`].
    pub fn forward(
        &self,
        tokens: Tensor<2, Int>,
        state: TransformerDecoderState,
    ) -> Decoded<TransformerDecoderState> {
        self.decoder.forward(tokens, state)
    }

    /// The longest sequence it reads, `<bos>` included (cached steps
    /// count): its positional encoding's `max_len` (`config.max_len`).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::pretraining::CausalLm;
    /// use d2l_attention::transformer::TransformerConfig;
    ///
    /// let config = TransformerConfig::new(20, 20).with_max_len(8);
    /// assert_eq!(CausalLm::new(&config, &Device::flex()).max_len(), 8);
    /// ```
    pub fn max_len(&self) -> usize {
        self.decoder.pos_encoding.max_len()
    }

    /// Parameters outside the token embedding and the output layer (both
    /// map to or from the vocabulary; GPT-2 shares one matrix for them):
    /// what Kaplan et al. 2020 count as a model's size N.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::pretraining::CausalLm;
    /// use d2l_attention::transformer::TransformerConfig;
    ///
    /// let model = CausalLm::new(&TransformerConfig::new(20, 20), &Device::flex());
    /// // Per block: 4 projections of 32 × 32 (no biases), an FFN 32 → 64 → 32
    /// // with biases, two layer norms of 2 × 32.
    /// let block = 4 * 32 * 32 + (32 * 64 + 64 + 64 * 32 + 32) + 2 * 64;
    /// assert_eq!(model.non_embedding_params(), 2 * block);
    /// ```
    pub fn non_embedding_params(&self) -> usize {
        self.decoder.blks.iter().map(|b| b.num_params()).sum()
    }
}

impl LanguageModel for CausalLm {
    fn batches(
        sentences: &[Vec<usize>],
        _vocab_len: usize,
        batch_size: usize,
        seed: u64,
        device: &Device,
    ) -> Vec<LmBatch> {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        shuffled(sentences, batch_size, &mut rng)
            .iter()
            .map(|batch| causal_batch(batch, device))
            .collect()
    }
}

impl Scores for CausalLm {
    fn logits(&self, batch: &LmBatch) -> Tensor<3> {
        let batch_size = batch.tokens.dims()[0];
        self.forward(batch.tokens.clone(), self.init_state(batch_size))
            .output
    }
}
