//! The corpus as a file the trainings read: d2l's first pairs with a check
//! that there are enough, a split by source sentence for validation, and
//! held-out pairs for BLEU.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::*;

/// The English–French corpus, read from the file it was found in.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("fra.txt"), "Go.\tVa !\n".repeat(3)).unwrap();
/// let corpus = Corpus::load(Some(dir.path())).unwrap();
/// assert!(!corpus.is_d2l()); // a warning on stderr says so
/// assert_eq!(corpus.training_data(5, 3).unwrap().len(), 3);
/// // Asking for more pairs than the file holds is an error naming it.
/// let err = corpus.training_data(5, 600).unwrap_err().to_string();
/// assert!(err.contains("fra.txt") && err.contains("holds 3") && err.contains("600"));
/// ```
#[derive(Clone, Debug)]
pub struct Corpus {
    /// The file read.
    pub path: PathBuf,
    /// Its text, with `\n` line endings (see [`read_corpus`]).
    pub text: String,
}

impl Corpus {
    /// Finds and reads the corpus as [`load_fra_eng`] does, and warns on
    /// stderr when it is not d2l's `fra.txt` (see [`Corpus::is_d2l`]): the
    /// book's printed results then do not apply.
    ///
    /// # Errors
    /// See [`load_fra_eng`].
    ///
    /// # Examples
    /// See [`Corpus`].
    pub fn load(explicit: Option<&Path>) -> Result<Self, DataError> {
        let path = locate(explicit)?;
        let corpus = Corpus {
            text: read_corpus(&path)?,
            path,
        };
        if !corpus.is_d2l() {
            eprintln!(
                "warning: `{}` is not d2l's fra.txt (its SHA-256 differs); \
                 trainings on it will not print what the book's pages show",
                corpus.path.display()
            );
        }
        Ok(corpus)
    }

    /// Whether the text is d2l's `fra.txt`: its SHA-256 with `\n` line
    /// endings is [`FRA_TXT_SHA256`], so a copy saved with Windows line
    /// endings counts as d2l's.
    ///
    /// # Examples
    /// See [`Corpus`].
    pub fn is_d2l(&self) -> bool {
        format!("{:x}", Sha256::digest(&self.text)) == FRA_TXT_SHA256
    }

    /// d2l's `load_data_nmt`: the first `num_examples` pairs as
    /// [`NmtData::new`] makes them, checked to be all there.
    ///
    /// # Errors
    /// [`DataError::TooFewPairs`] naming the file and both counts when it
    /// holds fewer than `num_examples` pairs; [`DataError::NoPairs`].
    ///
    /// # Examples
    /// See [`Corpus`].
    pub fn training_data(
        &self,
        num_steps: usize,
        num_examples: usize,
    ) -> Result<NmtData, DataError> {
        let data = NmtData::new(&self.text, num_steps, num_examples)?;
        self.check_count(data.len(), num_examples)?;
        Ok(data)
    }

    /// The first `num_examples` pairs split by source sentence: the pairs
    /// of a random `valid_fraction` of the distinct English sentences
    /// (shuffled by `seed`) for validation, the others for training, so no
    /// validation source is ever trained on. Both are encoded with the
    /// training pairs' vocabularies.
    ///
    /// # Errors
    /// As [`Corpus::training_data`].
    ///
    /// # Panics
    /// When `valid_fraction` is not in (0, 1).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let text: String = (0..20).map(|i| format!("go {i} .\tva {i} !\n")).collect();
    /// let corpus = Corpus { path: "fra.txt".into(), text };
    /// let (train, valid) = corpus.split_by_source(5, 20, 0.25, 0).unwrap();
    /// assert_eq!((train.len(), valid.len()), (15, 5));
    /// ```
    pub fn split_by_source(
        &self,
        num_steps: usize,
        num_examples: usize,
        valid_fraction: f64,
        seed: u64,
    ) -> Result<(NmtData, NmtData), DataError> {
        assert!(
            valid_fraction > 0.0 && valid_fraction < 1.0,
            "`valid_fraction` must be in (0, 1), got {valid_fraction}"
        );
        let pairs = self.pairs(Some(num_examples))?;
        self.check_count(pairs.source.len(), num_examples)?;
        let mut sources: Vec<&Vec<String>> = Vec::new();
        let mut seen = HashSet::new();
        for source in &pairs.source {
            if seen.insert(source) {
                sources.push(source);
            }
        }
        sources.shuffle(&mut ChaCha12Rng::seed_from_u64(seed));
        let num_valid = (sources.len() as f64 * valid_fraction).ceil();
        let held: HashSet<_> = sources[..num_valid as usize].iter().collect();
        let (valid, train) = partition(&pairs, |src| held.contains(&src));
        let data = NmtData::new_from_pairs(&train, num_steps);
        let valid = data.encode(&valid);
        Ok((data, valid))
    }

    /// Held-out pairs for `train`, which was made from the first
    /// `num_train` pairs: among the `window` pairs after them, those
    /// whose English sentence is not a training source and whose tokens,
    /// on both sides, are all in `train`'s vocabularies; as preprocessed
    /// (source, target) text.
    ///
    /// # Errors
    /// As [`Corpus::training_data`] for `num_train + window` pairs.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let text = "go .\tva !\nhi .\tsalut !\n".repeat(2) + "hi .\tva !\nhi go .\tsalut !\nno .\tnon .\n";
    /// let corpus = Corpus { path: "fra.txt".into(), text };
    /// let train = corpus.training_data(5, 4).unwrap();
    /// // "hi ." was trained on; "no ." has unknown tokens.
    /// let held = corpus.held_out(&train, 4, 3).unwrap();
    /// assert_eq!(held, [("hi go .".to_string(), "salut !".to_string())]);
    /// ```
    pub fn held_out(
        &self,
        train: &NmtData,
        num_train: usize,
        window: usize,
    ) -> Result<Vec<(String, String)>, DataError> {
        let pairs = self.pairs(Some(num_train + window))?;
        self.check_count(pairs.source.len(), num_train + window)?;
        let trained: HashSet<_> = pairs.source[..num_train].iter().collect();
        let known = |tokens: &[String], vocab: &Vocab| {
            tokens.iter().all(|t| vocab.index(t) != 0)
        };
        let held = pairs.source[num_train..]
            .iter()
            .zip(&pairs.target[num_train..])
            .filter(|(src, tgt)| {
                !trained.contains(src)
                    && known(src, &train.src_vocab)
                    && known(tgt, &train.tgt_vocab)
            })
            .map(|(src, tgt)| (src.join(" "), tgt.join(" ")))
            .collect();
        Ok(held)
    }

    /// The distinct English sentences among the first `num_pairs` pairs, in
    /// order of first appearance, as tokens: one language, for pretraining
    /// (the corpus lists one English sentence once per French translation).
    ///
    /// # Errors
    /// As [`Corpus::training_data`] for `num_pairs` pairs.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::machine_translation::*;
    ///
    /// let text = "Go.\tVa !\nGo.\tMarche.\nHi.\tSalut !\n";
    /// let corpus = Corpus { path: "fra.txt".into(), text: text.into() };
    /// assert_eq!(corpus.english_sentences(3).unwrap(), [["go", "."], ["hi", "."]]);
    /// assert!(corpus.english_sentences(4).unwrap_err().to_string().contains("holds 3"));
    /// ```
    pub fn english_sentences(
        &self,
        num_pairs: usize,
    ) -> Result<Vec<Vec<String>>, DataError> {
        let pairs = self.pairs(Some(num_pairs))?;
        self.check_count(pairs.source.len(), num_pairs)?;
        let mut seen = HashSet::new();
        Ok(pairs
            .source
            .into_iter()
            .filter(|s| seen.insert(s.clone()))
            .collect())
    }

    fn pairs(&self, num_examples: Option<usize>) -> Result<Pairs, DataError> {
        let pairs = tokenize_nmt(&preprocess_nmt(&self.text), num_examples);
        if pairs.source.is_empty() {
            return Err(DataError::NoPairs {
                skipped: pairs.skipped,
            });
        }
        Ok(pairs)
    }

    fn check_count(
        &self,
        found: usize,
        needed: usize,
    ) -> Result<(), DataError> {
        if found < needed {
            return Err(DataError::TooFewPairs {
                path: self.path.clone(),
                found,
                needed,
            });
        }
        Ok(())
    }
}

/// `pairs` cut in two: those whose source `test` accepts, and the others.
fn partition(
    pairs: &Pairs,
    test: impl Fn(&Vec<String>) -> bool,
) -> (Pairs, Pairs) {
    let (mut yes, mut no) = (Pairs::default(), Pairs::default());
    for (src, tgt) in pairs.source.iter().zip(&pairs.target) {
        let side = if test(src) { &mut yes } else { &mut no };
        side.source.push(src.clone());
        side.target.push(tgt.clone());
    }
    (yes, no)
}
