//! The pretraining data: the corpus's English sentences as one language,
//! split by sentence, with a vocabulary built from the training split.

use chacha20::ChaCha12Rng;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::machine_translation::{Corpus, DataError, Vocab};

/// The reserved tokens of [`LmData::vocab`], after `<unk>` (index 0), so
/// that `<pad>` is 1, `<bos>` 2, `<eos>` 3, `<cls>` 4 and `<mask>` 5 (see
/// [`PAD`] … [`MASK`]); words start at [`FIRST_WORD`].
pub const RESERVED: [&str; 5] = ["<pad>", "<bos>", "<eos>", "<cls>", "<mask>"];
/// The index of `<pad>`.
pub const PAD: usize = 1;
/// The index of `<bos>`, which starts a causal language model's input.
pub const BOS: usize = 2;
/// The index of `<eos>`, which ends every sentence.
pub const EOS: usize = 3;
/// The index of `<cls>`, which starts a masked language model's input.
pub const CLS: usize = 4;
/// The index of `<mask>`.
pub const MASK: usize = 5;
/// The index of the most frequent word.
pub const FIRST_WORD: usize = 6;

/// Sentences of one language as token indices, without reserved tokens,
/// split by sentence into training and validation sets.
///
/// # Examples
/// ```
/// use d2l_attention::pretraining::*;
///
/// let sentences: Vec<Vec<String>> = ["i am here .", "you are here .", "i run ."]
///     .iter().map(|s| s.split(' ').map(String::from).collect()).collect();
/// let data = LmData::from_sentences(sentences, 1.0 / 3.0, 1, 0);
/// assert_eq!((data.train.len(), data.valid.len()), (2, 1));
/// // <unk>, the five reserved tokens, then the training split's words.
/// assert_eq!(data.vocab.token(MASK), "<mask>");
/// assert_eq!(data.decode(&data.encode("i am here .")), "i am here .");
/// ```
#[derive(Clone, Debug)]
pub struct LmData {
    /// `<unk>`, [`RESERVED`], then the words seen at least `min_freq`
    /// times in the training split, most frequent first.
    pub vocab: Vocab,
    /// Training sentences.
    pub train: Vec<Vec<usize>>,
    /// Validation sentences (words unseen in training are `<unk>`).
    pub valid: Vec<Vec<usize>>,
}

impl LmData {
    /// The distinct English sentences of the corpus's first `num_pairs`
    /// pairs ([`Corpus::english_sentences`]), split as
    /// [`LmData::from_sentences`] splits them.
    ///
    /// # Errors
    /// When the corpus holds fewer than `num_pairs` pairs (the error names
    /// the file), or none.
    ///
    /// # Panics
    /// As [`LmData::from_sentences`].
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::Corpus;
    /// use d2l_attention::pretraining::LmData;
    ///
    /// let text = "Go.\tVa !\nGo.\tMarche.\nHi.\tSalut !\nRun!\tCours !\n";
    /// let corpus = Corpus { path: "fra.txt".into(), text: text.into() };
    /// let data = LmData::english(&corpus, 4, 0.3, 1, 0).unwrap();
    /// assert_eq!(data.train.len() + data.valid.len(), 3);
    /// assert!(LmData::english(&corpus, 5, 0.3, 1, 0).is_err());
    /// ```
    pub fn english(
        corpus: &Corpus,
        num_pairs: usize,
        valid_fraction: f64,
        min_freq: usize,
        seed: u64,
    ) -> Result<Self, DataError> {
        let sentences = corpus.english_sentences(num_pairs)?;
        Ok(Self::from_sentences(
            sentences,
            valid_fraction,
            min_freq,
            seed,
        ))
    }

    /// `sentences` shuffled by `seed`, the first `valid_fraction` of them
    /// (rounded up) for validation, the others for training; the vocabulary
    /// from the training sentences only.
    ///
    /// # Panics
    /// When `valid_fraction` is not in (0, 1), or leaves no sentence for
    /// training.
    ///
    /// # Examples
    /// See [`LmData`].
    pub fn from_sentences(
        mut sentences: Vec<Vec<String>>,
        valid_fraction: f64,
        min_freq: usize,
        seed: u64,
    ) -> Self {
        assert!(
            valid_fraction > 0.0 && valid_fraction < 1.0,
            "`valid_fraction` must be in (0, 1), got {valid_fraction}"
        );
        sentences.shuffle(&mut ChaCha12Rng::seed_from_u64(seed));
        let num_valid =
            (sentences.len() as f64 * valid_fraction).ceil() as usize;
        assert!(
            num_valid < sentences.len(),
            "`valid_fraction` {valid_fraction} leaves none of the {} sentences for training",
            sentences.len()
        );
        let (valid, train) = sentences.split_at(num_valid);
        let vocab = Vocab::new(train, min_freq, &RESERVED);
        let encode = |lines: &[Vec<String>]| {
            lines
                .iter()
                .map(|s| s.iter().map(|t| vocab.index(t)).collect())
                .collect()
        };
        LmData {
            train: encode(train),
            valid: encode(valid),
            vocab,
        }
    }

    /// The indices of `sentence`'s space-separated tokens (`<unk>` for
    /// unknown ones; reserved tokens such as `<mask>` keep their index).
    ///
    /// # Examples
    /// See [`LmData`].
    pub fn encode(&self, sentence: &str) -> Vec<usize> {
        sentence
            .split_whitespace()
            .map(|t| self.vocab.index(t))
            .collect()
    }

    /// The tokens of `indices`, space-separated.
    ///
    /// # Examples
    /// See [`LmData`].
    pub fn decode(&self, indices: &[usize]) -> String {
        let tokens: Vec<&str> =
            indices.iter().map(|&i| self.vocab.token(i)).collect();
        tokens.join(" ")
    }

    /// The number of tokens in `sentences`, each with its `<eos>`: what a
    /// causal language model predicts in one pass over them.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::pretraining::LmData;
    ///
    /// assert_eq!(LmData::num_tokens(&[vec![7, 8], vec![9]]), 5);
    /// ```
    pub fn num_tokens(sentences: &[Vec<usize>]) -> usize {
        sentences.iter().map(|s| s.len() + 1).sum()
    }
}
