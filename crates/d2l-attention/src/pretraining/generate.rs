//! Using a pretrained model: filling in a masked word, and continuing a
//! prompt greedily or by sampling.

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use chacha20::ChaCha12Rng;
use rand::{RngExt, SeedableRng};

use super::data::{BOS, CLS, EOS, MASK};
use super::models::{CausalLm, MaskedLm};
use crate::attention_scoring::{AttentionWeights, ValidLens};
use crate::seq2seq::predict::check_device;
use crate::seq2seq::{AttentionMap, Seq2SeqError};

/// The tokens a [`MaskedLm`] finds likeliest for a masked word.
#[derive(Clone, Debug)]
pub struct Filled {
    /// The `k` likeliest (token index, probability), likeliest first.
    pub candidates: Vec<(usize, f64)>,
    /// Each block's self-attention over `<cls>`, the words and `<eos>`:
    /// (1, num_heads, n, n).
    pub attention_weights: Vec<AttentionWeights<4>>,
}

/// `words` (indices, exactly one of them [`MASK`]) read by `model` as
/// `<cls>` words `<eos>`, and its `k` likeliest tokens for the masked one.
/// Runs the inference copy `model.valid()` on `device.inner()` whatever
/// mode `model` is in; `device` is where it lives.
///
/// # Errors
/// [`Seq2SeqError::Invalid`] naming `words` when it does not hold exactly
/// one `<mask>`, holds an index past the vocabulary, or is longer than the
/// model reads (words + 2 ≤ [`MaskedLm::max_len`]), `k` when it is 0, or
/// `device` when the model lives elsewhere; all before any work.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let device = Device::flex();
/// let model = MaskedLm::new(&TransformerConfig::new(20, 20), &device);
/// let filled = fill_mask(&model, &[7, MASK, 9], 3, &device).unwrap();
/// assert_eq!(filled.candidates.len(), 3);
/// assert!(filled.candidates[0].1 >= filled.candidates[1].1);
/// assert_eq!(filled.attention_weights[0].dims(), [1, 4, 5, 5]);
/// assert!(fill_mask(&model, &[7, 9], 3, &device).is_err());
/// ```
pub fn fill_mask(
    model: &MaskedLm,
    words: &[usize],
    k: usize,
    device: &Device,
) -> Result<Filled, Seq2SeqError> {
    check_device(model, device)?;
    let vocab_size = model.mlm.output.weight.dims()[1];
    check_tokens("words", words, vocab_size)?;
    let masked: Vec<usize> =
        (0..words.len()).filter(|&i| words[i] == MASK).collect();
    let [at] = masked[..] else {
        return Err(invalid("words", "must hold exactly one <mask>".into()));
    };
    if k == 0 {
        return Err(invalid("k", "must be at least 1".into()));
    }
    let max_len = model.max_len();
    if words.len() + 2 > max_len {
        let reason = format!(
            "has {} tokens; with <cls> and <eos> the model reads at most \
             {max_len} (its max_len), so at most {} words",
            words.len(),
            max_len.saturating_sub(2)
        );
        return Err(invalid("words", reason));
    }
    let (model, device) = (model.valid(), &device.clone().inner());
    let tokens: Vec<usize> = [CLS]
        .into_iter()
        .chain(words.iter().copied())
        .chain([EOS])
        .collect();
    let n = tokens.len();
    let positions = Tensor::<2, Int>::from_ints([[at as i64 + 1]], device);
    let out = model.forward(
        ints(&tokens, device),
        &ValidLens::new(&[n], device),
        positions,
    );
    let probs = burn::tensor::activation::softmax(out.logits, 2)
        .try_into_vec_as::<f32>()
        .expect("the probabilities");
    let mut ranked: Vec<(usize, f64)> =
        probs.iter().map(|&p| p as f64).enumerate().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked.truncate(k);
    Ok(Filled {
        candidates: ranked,
        attention_weights: out.attention_weights,
    })
}

/// How [`generate`] picks each next token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampling {
    /// The likeliest token.
    Greedy,
    /// A token drawn from softmax(scores / `temperature`), by a generator
    /// seeded with `seed`: below 1 sharper than the model, above 1 flatter.
    Temperature {
        /// Divides the scores; must be positive.
        temperature: f64,
        /// Seeds the draws.
        seed: u64,
    },
}

/// What [`generate`] wrote.
#[derive(Clone, Debug)]
pub struct Continuation {
    /// The new tokens, without the `<eos>` that ended them.
    pub tokens: Vec<usize>,
    /// Whether the model wrote `<eos>` (else it reached `max_new`).
    pub ended: bool,
    /// The self-attention maps over `<bos>`, the prompt and the new tokens,
    /// read in one pass (the causal mask makes it the same as reading one
    /// token at a time): per layer and head, (1, n, n).
    pub attention: Vec<AttentionMap>,
}

/// Continues `prompt` (word indices) after `<bos>`: the model reads the
/// prompt in one call, then one token per call from its key–value cache,
/// picking each next token as `sampling` says, until it writes `<eos>` or
/// `max_new` tokens. Runs the inference copy `model.valid()` on
/// `device.inner()` whatever mode `model` is in; `device` is where it
/// lives.
///
/// # Errors
/// [`Seq2SeqError::Invalid`] naming `prompt` (an index past the
/// vocabulary), `max_new` (0), `sampling` (a temperature that is not a
/// positive number) or `device`; naming `prompt` or `max_new` when
/// `<bos>`, the prompt and `max_new` tokens would not fit the model's
/// positions (1 + prompt length + `max_new` ≤ [`CausalLm::max_len`], as
/// [`Continuation::attention`] reads them all); all before any work.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let device = Device::flex();
/// let model = CausalLm::new(&TransformerConfig::new(20, 20), &device);
/// let sampled = Sampling::Temperature { temperature: 1.0, seed: 7 };
/// let a = generate(&model, &[7, 8], 5, sampled, &device).unwrap();
/// // The same seed draws the same tokens.
/// assert_eq!(generate(&model, &[7, 8], 5, sampled, &device).unwrap().tokens, a.tokens);
/// assert!(a.tokens.len() <= 5);
/// let greedy = generate(&model, &[7, 8], 5, Sampling::Greedy, &device).unwrap();
/// let n = 3 + greedy.tokens.len();
/// assert_eq!(greedy.attention[0].weights.dims(), [1, n, n]);
/// ```
pub fn generate(
    model: &CausalLm,
    prompt: &[usize],
    max_new: usize,
    sampling: Sampling,
    device: &Device,
) -> Result<Continuation, Seq2SeqError> {
    check_device(model, device)?;
    let vocab_size = model.decoder.dense.weight.dims()[1];
    check_tokens("prompt", prompt, vocab_size)?;
    if max_new == 0 {
        return Err(invalid("max_new", "must be at least 1".into()));
    }
    check_length(prompt.len(), max_new, model.max_len())?;
    let mut rng = match sampling {
        Sampling::Greedy => None,
        Sampling::Temperature { temperature, seed } => {
            if !(temperature > 0.0 && temperature.is_finite()) {
                let reason = format!(
                    "temperature {temperature} is not a positive number"
                );
                return Err(invalid("sampling", reason));
            }
            Some((temperature, ChaCha12Rng::seed_from_u64(seed)))
        }
    };
    let (model, device) = (model.valid(), &device.clone().inner());
    let mut read: Vec<usize> =
        [BOS].into_iter().chain(prompt.iter().copied()).collect();
    let (mut input, mut state): (Vec<usize>, _) =
        (read.clone(), model.init_state(1));
    let (mut tokens, mut ended) = (Vec::new(), false);
    while tokens.len() < max_new {
        let decoded = model.forward(ints(&input, device), state);
        state = decoded.state;
        let n = input.len();
        let scores = decoded.output.narrow(1, n - 1, 1);
        let scores = scores.try_into_vec_as::<f32>().expect("the scores");
        let next = match &mut rng {
            None => argmax(&scores),
            Some((temperature, rng)) => draw(&scores, *temperature, rng),
        };
        if next == EOS {
            ended = true;
            break;
        }
        tokens.push(next);
        read.push(next);
        input = vec![next];
    }
    let attention = model
        .forward(ints(&read, device), model.init_state(1))
        .attention;
    Ok(Continuation {
        tokens,
        ended,
        attention,
    })
}

/// Whether `<bos>`, `prompt_len` words and `max_new` more fit `max_len`
/// positions; else an error naming what is too long.
fn check_length(
    prompt_len: usize,
    max_new: usize,
    max_len: usize,
) -> Result<(), Seq2SeqError> {
    if 1 + prompt_len >= max_len {
        let reason = format!(
            "has {prompt_len} tokens; after <bos> the model reads at most \
             {max_len} (its max_len), leaving no room for a new token: at \
             most {} prompt tokens",
            max_len.saturating_sub(2)
        );
        return Err(invalid("prompt", reason));
    }
    let room = max_len - 1 - prompt_len;
    if max_new > room {
        let reason = format!(
            "is {max_new}; <bos> and the prompt's {prompt_len} tokens leave \
             {room} of the model's {max_len} positions (its max_len)"
        );
        return Err(invalid("max_new", reason));
    }
    Ok(())
}

fn argmax(scores: &[f32]) -> usize {
    (0..scores.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .expect("a vocabulary")
}

/// A token drawn from softmax(`scores` / `temperature`).
fn draw(scores: &[f32], temperature: f64, rng: &mut ChaCha12Rng) -> usize {
    let top = scores.iter().copied().fold(f32::MIN, f32::max) as f64;
    let weights: Vec<f64> = scores
        .iter()
        .map(|&s| ((s as f64 - top) / temperature).exp())
        .collect();
    let mut u = rng.random::<f64>() * weights.iter().sum::<f64>();
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    argmax(scores)
}

fn ints(tokens: &[usize], device: &Device) -> Tensor<2, Int> {
    let data: Vec<i64> = tokens.iter().map(|&t| t as i64).collect();
    Tensor::from_data(TensorData::new(data, [1, tokens.len()]), device)
}

fn check_tokens(
    arg: &'static str,
    tokens: &[usize],
    vocab_size: usize,
) -> Result<(), Seq2SeqError> {
    match tokens.iter().find(|&&t| t >= vocab_size) {
        Some(t) => Err(invalid(
            arg,
            format!("index {t} is past the vocabulary of {vocab_size}"),
        )),
        None => Ok(()),
    }
}

fn invalid(arg: &'static str, reason: String) -> Seq2SeqError {
    Seq2SeqError::Invalid { arg, reason }
}
