//! What the pretraining objectives hide: BERT's masked tokens and T5's
//! corrupted spans.

use rand::{Rng, RngExt};

use super::data::{CLS, EOS, FIRST_WORD, MASK};

/// A sentence prepared for masked language modelling.
///
/// # Examples
/// See [`mask_tokens`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlmExample {
    /// `<cls>`, the sentence with some tokens replaced, `<eos>`.
    pub tokens: Vec<usize>,
    /// Where the model must restore a token, ascending, into `tokens`.
    pub positions: Vec<usize>,
    /// The original token at each position.
    pub labels: Vec<usize>,
}

/// BERT's masking (Devlin et al. 2018, the masked LM task; d2l en §15.9's
/// `_replace_mlm_tokens`): picks max(1, round(15 % of the words)) of
/// `words` at random; each picked word becomes `<mask>` with probability
/// 0.8, stays itself with 0.1, and becomes a random word of the vocabulary
/// (indices `FIRST_WORD..vocab_len`) with 0.1. The model must restore the
/// picked words, whatever they became. Unlike d2l, which counts `<cls>` and
/// `<sep>` among the tokens and may draw a reserved token as the random
/// one, only words are counted and drawn. `<unk>` (index 0) counts as a
/// word that can be picked, as in d2l (whose `_get_mlm_data_from_tokens`
/// skips only `<cls>` and `<sep>`) and BERT's `create_pretraining_data.py`
/// (only `[CLS]` and `[SEP]`); the random replacement is never `<unk>`.
///
/// # Panics
/// When `words` is empty or holds a reserved token other than `<unk>`
/// (indices 1 to [`FIRST_WORD`] − 1: `<pad>`, `<bos>`, `<eos>`, `<cls>`,
/// `<mask>`) or an index past `vocab_len`, or `vocab_len` holds no word;
/// the message names the argument (and the position and index).
///
/// # Examples
/// ```
/// use chacha20::ChaCha12Rng;
/// use rand::SeedableRng;
/// use d2l_attention::pretraining::*;
///
/// let mut rng = ChaCha12Rng::seed_from_u64(0);
/// let words = [10, 11, 12, 13, 14, 15, 16];
/// let example = mask_tokens(&words, 20, &mut rng);
/// // round(0.15 × 7) = 1 word to restore, inside <cls> … <eos>.
/// assert_eq!((example.tokens[0], example.tokens[8]), (CLS, EOS));
/// assert_eq!(example.positions.len(), 1);
/// let p = example.positions[0];
/// assert_eq!(example.labels, [words[p - 1]]);
/// ```
// ANCHOR: mask_tokens
pub fn mask_tokens(
    words: &[usize],
    vocab_len: usize,
    rng: &mut impl Rng,
) -> MlmExample {
    if let Err(e) = check_words(words, "`words`", vocab_len) {
        panic!("{e}");
    }
    let mut tokens = Vec::with_capacity(words.len() + 2);
    tokens.push(CLS);
    tokens.extend_from_slice(words);
    tokens.push(EOS);
    let num_preds = ((words.len() as f64 * 0.15).round() as usize).max(1);
    let mut positions: Vec<usize> =
        rand::seq::index::sample(rng, words.len(), num_preds)
            .into_iter()
            .map(|i| i + 1)
            .collect();
    positions.sort_unstable();
    let labels = positions.iter().map(|&p| tokens[p]).collect();
    for &p in &positions {
        let draw: f64 = rng.random();
        if draw < 0.8 {
            tokens[p] = MASK;
        } else if draw >= 0.9 {
            tokens[p] = rng.random_range(FIRST_WORD..vocab_len);
        }
    }
    MlmExample {
        tokens,
        positions,
        labels,
    }
}
// ANCHOR_END: mask_tokens

/// What [`mask_tokens`] accepts: some words, each `<unk>` or a word of a
/// vocabulary that holds one; else what is wrong, naming the argument as
/// `name` (such as "`words`").
pub(crate) fn check_words(
    words: &[usize],
    name: &str,
    vocab_len: usize,
) -> Result<(), String> {
    if words.is_empty() {
        return Err(format!("{name} is empty"));
    }
    if vocab_len <= FIRST_WORD {
        return Err(format!(
            "`vocab_len` {vocab_len} holds no word (words start at {FIRST_WORD})"
        ));
    }
    let word = |w: usize| w == 0 || (FIRST_WORD..vocab_len).contains(&w);
    match words.iter().enumerate().find(|&(_, &w)| !word(w)) {
        Some((i, w)) => Err(format!(
            "{name} holds {w} at position {i}: a word is <unk> (0) or an \
             index in {FIRST_WORD}..{vocab_len}, never a reserved token"
        )),
        None => Ok(()),
    }
}

/// The sentinels that stand for corrupted spans, in order (d2l en §11.9's
/// `<X>`, `<Y>`, `<Z>`; T5 calls them `<extra_id_0>`, …).
pub const SENTINELS: [&str; 4] = ["<X>", "<Y>", "<Z>", "<W>"];

/// T5's span corruption (Raffel et al. 2020; `span_corruption`
/// and `random_spans_noise_mask` in the T5 code, google-research/
/// text-to-text-transfer-transformer, `t5/data/preprocessors.py`): hides
/// round(`noise_density` × length) of `words`, at least 1 and at most all
/// but one, in round(hidden / `mean_span_length`) spans (at least 1, and no
/// more than the words left), with random lengths and places. As with T5's
/// `random_roll` (off by default there, so that a single span always ends
/// the sequence), the pattern is then rotated by a random offset, so a span
/// may also start the sentence, or wrap round into two. The input keeps
/// the other words with a sentinel in place of each span; the target lists
/// each span after its sentinel and ends with the next sentinel. Returns
/// (input, target).
///
/// # Panics
/// When `words` has fewer than 2 words, `noise_density` is not in (0, 1),
/// `mean_span_length` is below 1, or the spans could need more sentinels
/// than [`SENTINELS`] holds.
///
/// # Examples
/// ```
/// use chacha20::ChaCha12Rng;
/// use rand::SeedableRng;
/// use d2l_attention::pretraining::corrupt_spans;
///
/// let words: Vec<String> = "i love this red car".split(' ').map(String::from).collect();
/// let mut rng = ChaCha12Rng::seed_from_u64(3);
/// let (input, target) = corrupt_spans(&words, 0.6, 1.5, &mut rng);
/// // round(0.6 × 5) = 3 words hidden, in round(3 / 1.5) = 2 spans (3 if
/// // one wraps round), as in d2l's "i <X> this <Y>" → "<X> love <Y> red car <Z>".
/// let is_sentinel = |w: &&String| w.starts_with('<');
/// assert_eq!(target.iter().filter(|w| !is_sentinel(w)).count(), 3);
/// assert_eq!(input.iter().filter(|w| !is_sentinel(w)).count(), 2);
/// let spans = input.iter().filter(is_sentinel).count();
/// assert!(spans == 2 || spans == 3);
/// assert_eq!(target.iter().filter(is_sentinel).count(), spans + 1);
/// ```
pub fn corrupt_spans(
    words: &[String],
    noise_density: f64,
    mean_span_length: f64,
    rng: &mut impl Rng,
) -> (Vec<String>, Vec<String>) {
    let length = words.len();
    assert!(length >= 2, "`words` has {length} words, at least 2 needed");
    assert!(
        noise_density > 0.0 && noise_density < 1.0,
        "`noise_density` must be in (0, 1), got {noise_density}"
    );
    assert!(
        mean_span_length >= 1.0,
        "`mean_span_length` must be at least 1, got {mean_span_length}"
    );
    let num_noise =
        ((length as f64 * noise_density).round() as usize).clamp(1, length - 1);
    let num_spans = ((num_noise as f64 / mean_span_length).round() as usize)
        .clamp(1, num_noise.min(length - num_noise));
    // a wrapped span becomes two, and the target ends with one more
    assert!(
        num_spans + 2 <= SENTINELS.len(),
        "{num_spans} spans could need more than the {} sentinels",
        SENTINELS.len()
    );
    let noise = segment(num_noise, num_spans, rng);
    let kept = segment(length - num_noise, num_spans, rng);
    let mut hidden = Vec::with_capacity(length);
    for (&keep, &hide) in kept.iter().zip(&noise) {
        hidden.extend(std::iter::repeat_n(false, keep));
        hidden.extend(std::iter::repeat_n(true, hide));
    }
    hidden.rotate_right(rng.random_range(0..length));
    let (mut input, mut target) = (Vec::new(), Vec::new());
    let mut sentinels = SENTINELS.iter().map(|s| s.to_string());
    for (i, word) in words.iter().enumerate() {
        if !hidden[i] {
            input.push(word.clone());
            continue;
        }
        if i == 0 || !hidden[i - 1] {
            let sentinel = sentinels.next().expect("checked above");
            input.push(sentinel.clone());
            target.push(sentinel);
        }
        target.push(word.clone());
    }
    target.push(sentinels.next().expect("checked above"));
    (input, target)
}

/// `num_items` cut into `num_segments` non-empty runs at random (T5's
/// `_random_segmentation`): their lengths, in order.
fn segment(
    num_items: usize,
    num_segments: usize,
    rng: &mut impl Rng,
) -> Vec<usize> {
    let mut cuts: Vec<usize> =
        rand::seq::index::sample(rng, num_items - 1, num_segments - 1)
            .into_iter()
            .map(|i| i + 1)
            .collect();
    cuts.sort_unstable();
    cuts.push(num_items);
    let mut last = 0;
    cuts.into_iter()
        .map(|cut| cut - std::mem::replace(&mut last, cut))
        .collect()
}
