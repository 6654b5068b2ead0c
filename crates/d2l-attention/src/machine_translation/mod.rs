//! The English–French data set of d2l's translation chapters (d2l zh §9.5,
//! en §10.5), used by Bahdanau attention: finding or downloading the
//! corpus, preprocessing, tokenising, vocabularies, padded mini-batches,
//! and the BLEU score (d2l zh §9.7.4).
//!
//! The corpus is Tatoeba's (tatoeba.org), packaged by manythings.org/anki,
//! licence CC-BY 2.0 France.

#[cfg(feature = "native")]
mod corpus;
#[cfg(feature = "native")]
mod split;

#[cfg(feature = "native")]
use corpus::locate;
mod source;

#[cfg(feature = "native")]
pub use corpus::{
    cache_dir, extract_fra_eng, load_fra_eng, locate_fra_eng, read_corpus,
};
pub use source::{
    DATA_DIR_ENV, DataError, FRA_ENG, FRA_ENG_MEMBER, FRA_TXT_SHA256, Source,
};
#[cfg(feature = "native")]
pub use split::Corpus;

use std::collections::HashMap;

use crate::attention_scoring::ValidLens;
use burn::tensor::{Device, Int, Tensor, TensorData};
use chacha20::ChaCha12Rng;
use rand::SeedableRng;
use rand::seq::SliceRandom;

/// Turns every Unicode space other than tab and line breaks into a plain
/// space: U+2009 (thin space) included, which [`preprocess_nmt`] keeps as
/// d2l does, so that `"Recule\u{2009}!"` tokenises as `recule !` rather
/// than `recule\u{2009} !`. Apply it before [`preprocess_nmt`] (or
/// [`NmtData::new`]) for the normalised form of the corpus.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert_eq!(normalize_spaces("Recule\u{2009}!"), "Recule !");
/// ```
pub fn normalize_spaces(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_whitespace() && !matches!(c, '\t' | '\n' | '\r') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// d2l's `preprocess_nmt`: U+202F and U+00A0 become plain spaces (U+2009
/// and other spaces are left alone, as d2l does), letters are lowercased,
/// and a space is inserted before `,` `.` `!` `?` not already preceded by
/// one. `"Ça alors\u{202f}!"` becomes `"ça alors !"`.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert_eq!(preprocess_nmt("Go.\tVa !"), "go .\tva !");
/// ```
pub fn preprocess_nmt(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut previous: Option<char> = None;
    for c in text.chars() {
        let c = if c == '\u{202f}' || c == '\u{a0}' {
            ' '
        } else {
            c
        };
        if matches!(c, ',' | '.' | '!' | '?')
            && previous.is_some_and(|p| p != ' ')
        {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
        previous = Some(c);
    }
    out
}

/// Tokenised sentence pairs.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// let pairs = tokenize_nmt("go .\tva !\nno tab\n", None);
/// assert_eq!((pairs.source.len(), pairs.skipped), (1, 1));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairs {
    /// Source (English) sentences, as tokens.
    pub source: Vec<Vec<String>>,
    /// Target (French) sentences, as tokens.
    pub target: Vec<Vec<String>>,
    /// Lines skipped because they did not hold exactly one tab.
    pub skipped: usize,
}

/// d2l's `tokenize_nmt`: splits each line `english<TAB>french` into two
/// token lists at spaces, keeping the first `num_examples` well-formed
/// pairs (all of them with `None`). A line without exactly one tab is
/// skipped and counted; empty lines are not counted. Lines may end in
/// `\n` or `\r\n`.
///
/// d2l's own `tokenize_nmt(text, 600)` returns 601 pairs (it stops after
/// line index 600, not before it); this function returns exactly
/// `num_examples`.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// let pairs = tokenize_nmt("go .\tva !\nhi .\tsalut !\n", Some(1));
/// assert_eq!(pairs.target, [["va", "!"]]);
/// ```
pub fn tokenize_nmt(text: &str, num_examples: Option<usize>) -> Pairs {
    let mut pairs = Pairs::default();
    let limit = num_examples.unwrap_or(usize::MAX);
    for line in text.lines() {
        if pairs.source.len() == limit {
            break;
        }
        let parts: Vec<&str> = line.split('\t').collect();
        match parts.as_slice() {
            [src, tgt] => {
                pairs
                    .source
                    .push(src.split(' ').map(str::to_owned).collect());
                pairs
                    .target
                    .push(tgt.split(' ').map(str::to_owned).collect());
            }
            [""] => {}
            _ => pairs.skipped += 1,
        }
    }
    pairs
}

/// The reserved tokens of the translation vocabularies, after `<unk>`:
/// `<pad>` (1), `<bos>` (2) and `<eos>` (3), as d2l's `Vocab` gets them.
pub const RESERVED: [&str; 3] = ["<pad>", "<bos>", "<eos>"];

/// A vocabulary (d2l zh §8.2.3): `<unk>` is 0, then the reserved tokens in
/// order, then every token seen at least `min_freq` times, by descending
/// frequency; ties keep the order of first appearance in the corpus.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// let lines = tokenize_nmt("go .\tva !\ngo away .\tva-t'en !\n", None).source;
/// let vocab = Vocab::new(&lines, 2, &["<pad>", "<bos>", "<eos>"]);
/// // <unk>, the reserved tokens, then "go" and "." (seen twice); "away" is not.
/// assert_eq!(vocab.len(), 6);
/// assert_eq!(vocab.index("away"), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vocab {
    idx_to_token: Vec<String>,
    token_to_idx: HashMap<String, usize>,
}

impl Vocab {
    /// Builds a vocabulary from tokenised lines.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let lines = tokenize_nmt("go .\tva !\ngo away .\tva-t'en !\n", None).source;
    /// let vocab = Vocab::new(&lines, 2, &["<pad>", "<bos>", "<eos>"]);
    /// assert_eq!((vocab.token(0), vocab.token(1)), ("<unk>", "<pad>"));
    /// ```
    pub fn new(
        lines: &[Vec<String>],
        min_freq: usize,
        reserved: &[&str],
    ) -> Self {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        let mut position: HashMap<&str, usize> = HashMap::new();
        for token in lines.iter().flatten() {
            let i = *position.entry(token.as_str()).or_insert_with(|| {
                counts.push((token.as_str(), 0));
                counts.len() - 1
            });
            counts[i].1 += 1;
        }
        counts.sort_by_key(|c| std::cmp::Reverse(c.1)); // stable: ties stay in order of first appearance
        let mut vocab = Vocab {
            idx_to_token: Vec::new(),
            token_to_idx: HashMap::new(),
        };
        let frequent = counts
            .iter()
            .filter(|(_, n)| *n >= min_freq)
            .map(|(t, _)| *t);
        for token in ["<unk>"]
            .into_iter()
            .chain(reserved.iter().copied())
            .chain(frequent)
        {
            if !vocab.token_to_idx.contains_key(token) {
                vocab
                    .token_to_idx
                    .insert(token.to_owned(), vocab.idx_to_token.len());
                vocab.idx_to_token.push(token.to_owned());
            }
        }
        vocab
    }

    /// The number of tokens.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let lines = tokenize_nmt("go .\tva !\ngo away .\tva-t'en !\n", None).source;
    /// let vocab = Vocab::new(&lines, 2, &["<pad>", "<bos>", "<eos>"]);
    /// assert_eq!(vocab.len(), 6);
    /// ```
    pub fn len(&self) -> usize {
        self.idx_to_token.len()
    }

    /// Whether it is empty (never: `<unk>` is always there).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let lines = tokenize_nmt("go .\tva !\ngo away .\tva-t'en !\n", None).source;
    /// let vocab = Vocab::new(&lines, 2, &["<pad>", "<bos>", "<eos>"]);
    /// assert!(!vocab.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.idx_to_token.is_empty()
    }

    /// The index of `token`, or that of `<unk>` (0).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let lines = tokenize_nmt("go .\tva !\ngo away .\tva-t'en !\n", None).source;
    /// let vocab = Vocab::new(&lines, 2, &["<pad>", "<bos>", "<eos>"]);
    /// assert_eq!(vocab.index("<pad>"), 1);
    /// assert_eq!(vocab.index("never seen"), 0);
    /// ```
    pub fn index(&self, token: &str) -> usize {
        self.token_to_idx.get(token).copied().unwrap_or(0)
    }

    /// The token at `index`, or `<unk>` when out of range.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let lines = tokenize_nmt("go .\tva !\ngo away .\tva-t'en !\n", None).source;
    /// let vocab = Vocab::new(&lines, 2, &["<pad>", "<bos>", "<eos>"]);
    /// assert_eq!(vocab.token(vocab.index("go")), "go");
    /// assert_eq!(vocab.token(99), "<unk>");
    /// ```
    pub fn token(&self, index: usize) -> &str {
        self.idx_to_token.get(index).map_or("<unk>", String::as_str)
    }

    /// The tokens in index order.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let lines = tokenize_nmt("go .\tva !\n", None).source;
    /// let vocab = Vocab::new(&lines, 0, &["<pad>"]);
    /// assert_eq!(vocab.tokens(), ["<unk>", "<pad>", "go", "."]);
    /// ```
    pub fn tokens(&self) -> &[String] {
        &self.idx_to_token
    }

    /// The vocabulary whose tokens are `tokens`, in index order (as
    /// [`Vocab::tokens`] gave them), or `None` unless the first is `<unk>`
    /// and no token repeats.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let lines = tokenize_nmt("go .\tva !\n", None).source;
    /// let vocab = Vocab::new(&lines, 0, &["<pad>"]);
    /// assert_eq!(Vocab::from_tokens(vocab.tokens()), Some(vocab));
    /// assert_eq!(Vocab::from_tokens(&["go".to_owned()]), None);
    /// ```
    pub fn from_tokens(tokens: &[String]) -> Option<Self> {
        let token_to_idx: HashMap<String, usize> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i))
            .collect();
        let valid = tokens.first().is_some_and(|t| t == "<unk>")
            && token_to_idx.len() == tokens.len();
        valid.then(|| Vocab {
            idx_to_token: tokens.to_vec(),
            token_to_idx,
        })
    }
}

/// d2l's `truncate_pad`: cuts `line` to `num_steps` or pads it with
/// `padding` to that length.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert_eq!(truncate_pad(&[5, 6], 4, 1), [5, 6, 1, 1]);
/// assert_eq!(truncate_pad(&[5, 6, 7], 2, 1), [5, 6]);
/// ```
pub fn truncate_pad(
    line: &[usize],
    num_steps: usize,
    padding: usize,
) -> Vec<usize> {
    let mut out: Vec<usize> = line.iter().copied().take(num_steps).collect();
    out.resize(num_steps, padding);
    out
}

/// d2l's `build_array_nmt`: each line as indices with `<eos>` appended,
/// truncated or padded to `num_steps`; returns the flat (lines × num_steps)
/// indices and each line's valid length (its tokens that are not `<pad>`).
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// let lines = tokenize_nmt("go .\tva !\n", None).source;
/// let vocab = Vocab::new(&lines, 1, &["<pad>", "<bos>", "<eos>"]);
/// let (array, valid_lens) = build_array_nmt(&lines, &vocab, 4);
/// // go . <eos> <pad>: three valid tokens.
/// assert_eq!(valid_lens, [3]);
/// assert_eq!(array[2], vocab.index("<eos>") as i64);
/// ```
pub fn build_array_nmt(
    lines: &[Vec<String>],
    vocab: &Vocab,
    num_steps: usize,
) -> (Vec<i64>, Vec<usize>) {
    let (pad, eos) = (vocab.index("<pad>"), vocab.index("<eos>"));
    let mut array = Vec::with_capacity(lines.len() * num_steps);
    let mut valid_lens = Vec::with_capacity(lines.len());
    for line in lines {
        let indices: Vec<usize> =
            line.iter().map(|t| vocab.index(t)).chain([eos]).collect();
        let row = truncate_pad(&indices, num_steps, pad);
        valid_lens.push(row.iter().filter(|&&i| i != pad).count());
        array.extend(row.into_iter().map(|i| i as i64));
    }
    (array, valid_lens)
}

/// One mini-batch of translation pairs.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::machine_translation::*;
///
/// let text = "go .\tva !\nhi .\tsalut !\n".repeat(3);
/// let data = NmtData::new(&text, 5, 6).unwrap();
/// let batch = &data.batches(4, 0, &Device::flex())[0];
/// assert_eq!((batch.x.dims(), batch.y.dims(), batch.y_valid_len.batch_size()), ([4, 5], [4, 5], 4));
/// ```
#[derive(Clone, Debug)]
pub struct Batch {
    /// Source indices, (batch_size, num_steps).
    pub x: Tensor<2, Int>,
    /// Source valid lengths, (batch_size,), on the device and the host.
    pub x_valid_len: ValidLens,
    /// Target indices, (batch_size, num_steps).
    pub y: Tensor<2, Int>,
    /// Target valid lengths, (batch_size,), on the device and the host.
    pub y_valid_len: ValidLens,
}

/// The translation data of d2l's `load_data_nmt`, ready to be batched.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::machine_translation::*;
///
/// let text = "go .\tva !\nhi .\tsalut !\n".repeat(3);
/// let data = NmtData::new(&text, 5, 6).unwrap();
/// assert_eq!((data.len(), data.src_vocab.len(), data.tgt_vocab.len()), (6, 7, 7));
/// ```
#[derive(Clone, Debug)]
pub struct NmtData {
    /// The source vocabulary.
    pub src_vocab: Vocab,
    /// The target vocabulary.
    pub tgt_vocab: Vocab,
    num_steps: usize,
    source: (Vec<i64>, Vec<usize>),
    target: (Vec<i64>, Vec<usize>),
}

impl NmtData {
    /// d2l's `load_data_nmt` on a corpus text: preprocess, take the first
    /// `num_examples` pairs (or all there are, when fewer: trainings read
    /// the corpus through [`Corpus::training_data`], which refuses that),
    /// build vocabularies (min_freq 2, reserved `<pad>`, `<bos>`, `<eos>`)
    /// and padded arrays of `num_steps` tokens.
    ///
    /// # Errors
    /// [`DataError::NoPairs`] when no line holds a pair (a file of another
    /// format, such as an HTML error page or a three-column export).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::machine_translation::*;
    ///
    /// let text = "go .\tva !\nhi .\tsalut !\n".repeat(3);
    /// let data = NmtData::new(&text, 5, 6).unwrap();
    /// assert_eq!(data.len(), 6);
    /// // A file of another format is an error.
    /// assert!(NmtData::new("<html>not a corpus</html>", 5, 6).is_err());
    /// ```
    pub fn new(
        text: &str,
        num_steps: usize,
        num_examples: usize,
    ) -> Result<Self, DataError> {
        let pairs = tokenize_nmt(&preprocess_nmt(text), Some(num_examples));
        if pairs.source.is_empty() {
            return Err(DataError::NoPairs {
                skipped: pairs.skipped,
            });
        }
        Ok(Self::new_from_pairs(&pairs, num_steps))
    }

    /// The data of tokenised `pairs`, with vocabularies built from them as
    /// [`NmtData::new`] builds them.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let pairs = tokenize_nmt("go .\tva !\n", None);
    /// assert_eq!(NmtData::new_from_pairs(&pairs, 5).len(), 1);
    /// ```
    pub fn new_from_pairs(pairs: &Pairs, num_steps: usize) -> Self {
        let vocabs = (
            Vocab::new(&pairs.source, 2, &RESERVED),
            Vocab::new(&pairs.target, 2, &RESERVED),
        );
        Self::encode_with(pairs, vocabs, num_steps)
    }

    /// Other `pairs` encoded with this data's vocabularies and number of
    /// steps (validation data: unseen tokens become `<unk>`).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let data = NmtData::new(&"go .\tva !\n".repeat(2), 5, 2).unwrap();
    /// let other = data.encode(&tokenize_nmt("go away .\tva !\n", None));
    /// assert_eq!((other.len(), other.src_vocab.len()), (1, data.src_vocab.len()));
    /// ```
    pub fn encode(&self, pairs: &Pairs) -> Self {
        let vocabs = (self.src_vocab.clone(), self.tgt_vocab.clone());
        Self::encode_with(pairs, vocabs, self.num_steps)
    }

    fn encode_with(
        pairs: &Pairs,
        (src_vocab, tgt_vocab): (Vocab, Vocab),
        num_steps: usize,
    ) -> Self {
        let source = build_array_nmt(&pairs.source, &src_vocab, num_steps);
        let target = build_array_nmt(&pairs.target, &tgt_vocab, num_steps);
        NmtData {
            src_vocab,
            tgt_vocab,
            num_steps,
            source,
            target,
        }
    }

    /// The number of sentence pairs.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::machine_translation::*;
    ///
    /// let text = "go .\tva !\nhi .\tsalut !\n".repeat(3);
    /// let data = NmtData::new(&text, 5, 6).unwrap();
    /// assert_eq!(data.len(), 6);
    /// ```
    pub fn len(&self) -> usize {
        self.source.1.len()
    }

    /// Whether there are no pairs.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::machine_translation::*;
    ///
    /// let text = "go .\tva !\nhi .\tsalut !\n".repeat(3);
    /// let data = NmtData::new(&text, 5, 6).unwrap();
    /// assert!(!data.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pairs in shuffled mini-batches of `batch_size` (the last one may
    /// be smaller), shuffled by a generator seeded with `seed`; pass the
    /// epoch number for a new order each epoch.
    ///
    /// # Panics
    /// When `batch_size` is 0.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::machine_translation::*;
    ///
    /// let text = "go .\tva !\nhi .\tsalut !\n".repeat(3);
    /// let data = NmtData::new(&text, 5, 6).unwrap();
    /// let batches = data.batches(4, 0, &Device::flex());
    /// // Six pairs: a batch of 4, then one of 2.
    /// assert_eq!(batches.iter().map(|b| b.x.dims()[0]).collect::<Vec<_>>(), [4, 2]);
    /// ```
    pub fn batches(
        &self,
        batch_size: usize,
        seed: u64,
        device: &Device,
    ) -> Vec<Batch> {
        assert!(batch_size > 0, "`batch_size` must be at least 1");
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.shuffle(&mut ChaCha12Rng::seed_from_u64(seed));
        let n = self.num_steps;
        let rows = |data: &(Vec<i64>, Vec<usize>), idx: &[usize]| {
            let tokens: Vec<i64> = idx
                .iter()
                .flat_map(|&i| data.0[i * n..(i + 1) * n].iter().copied())
                .collect();
            let lens: Vec<usize> = idx.iter().map(|&i| data.1[i]).collect();
            (
                Tensor::from_data(
                    TensorData::new(tokens, [idx.len(), n]),
                    device,
                ),
                ValidLens::new(&lens, device),
            )
        };
        order
            .chunks(batch_size)
            .map(|idx| {
                let (x, x_valid_len) = rows(&self.source, idx);
                let (y, y_valid_len) = rows(&self.target, idx);
                Batch {
                    x,
                    x_valid_len,
                    y,
                    y_valid_len,
                }
            })
            .collect()
    }
}

/// BLEU as d2l en §10.7.2 defines it: the brevity penalty
/// exp(min(0, 1 − len_label/len_pred)) times, for n = 1 ..= min(k,
/// len_pred), the n-gram precision raised to 1/2ⁿ. Sequences are
/// space-separated tokens; an empty prediction scores 0.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert_eq!(bleu("il est calme .", "il est calme .", 2), 1.0);
/// // One wrong word of four: one bigram match out of three.
/// let score = bleu("il est bon .", "il est calme .", 2);
/// assert!((score - 0.658).abs() < 1e-3);
/// ```
pub fn bleu(pred_seq: &str, label_seq: &str, k: usize) -> f64 {
    let pred: Vec<&str> = pred_seq.split_whitespace().collect();
    let label: Vec<&str> = label_seq.split_whitespace().collect();
    let (len_pred, len_label) = (pred.len(), label.len());
    if len_pred == 0 {
        return 0.0;
    }
    let mut score = (1.0 - len_label as f64 / len_pred as f64).min(0.0).exp();
    for n in 1..=k.min(len_pred) {
        let mut label_ngrams: HashMap<&[&str], usize> = HashMap::new();
        for gram in label.windows(n) {
            *label_ngrams.entry(gram).or_default() += 1;
        }
        let mut matches = 0;
        for gram in pred.windows(n) {
            if let Some(count) = label_ngrams.get_mut(gram).filter(|c| **c > 0)
            {
                matches += 1;
                *count -= 1;
            }
        }
        score *= (matches as f64 / (len_pred - n + 1) as f64)
            .powf(0.5f64.powi(n as i32));
    }
    score
}
