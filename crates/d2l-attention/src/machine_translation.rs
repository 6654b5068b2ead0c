//! The English–French data set of d2l's translation chapters (d2l zh §9.5,
//! en §10.5), used by Bahdanau attention: finding or downloading the
//! corpus, preprocessing, tokenising, vocabularies, padded mini-batches,
//! and the BLEU score (d2l zh §9.7.4).
//!
//! The corpus is Tatoeba's (tatoeba.org), packaged by manythings.org/anki,
//! licence CC-BY 2.0 France.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::seq::SliceRandom;
use rand::{SeedableRng, rngs::StdRng};
use sha1::{Digest, Sha1};

use crate::files::write_atomic;

/// A downloadable zip and its SHA-1.
#[derive(Clone, Copy, Debug)]
pub struct Source {
    /// Where to download it.
    pub url: &'static str,
    /// Its SHA-1, in hex.
    pub sha1: &'static str,
}

/// d2l's copy of the corpus.
pub const FRA_ENG: Source = Source {
    url: "http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip",
    sha1: "94646ad1522d915e7b0f9296181140edcf86a4f5",
};
/// The zip member holding the sentence pairs.
pub const FRA_ENG_MEMBER: &str = "fra-eng/fra.txt";
/// The environment variable naming a folder (holding `fra.txt` or
/// `fra-eng.zip`) or one of those files.
pub const DATA_DIR_ENV: &str = "D2L_DATA_DIR";

/// Why the corpus could not be had.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// Nothing found and no download possible.
    #[error(
        "the English–French corpus was not found (looked in: {}) and could not be downloaded from {url}: {reason}.\n\
         Download fra-eng.zip from {url} (or copy fra.txt) into {}, or set {DATA_DIR_ENV} to the folder that holds it",
        .tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        .cache.display()
    )]
    NotFound {
        /// The places searched.
        tried: Vec<PathBuf>,
        /// The cache folder a download would have gone to.
        cache: PathBuf,
        /// Where the zip can be downloaded.
        url: &'static str,
        /// Why the download failed.
        reason: String,
    },
    /// The path given for the corpus does not exist.
    #[error("`{}` (the corpus path given, or {DATA_DIR_ENV}) does not exist", .path.display())]
    MissingPath {
        /// The path.
        path: PathBuf,
    },
    /// The corpus has no usable sentence pair.
    #[error(
        "the corpus has {skipped} lines without exactly one tab and no usable pair; is it d2l's fra.txt (English<TAB>French per line)?"
    )]
    NoPairs {
        /// Lines skipped.
        skipped: usize,
    },
    /// The zip's checksum is wrong (a truncated or altered download).
    #[error("`{}` has SHA-1 {got}, expected {expected}: the file is damaged or not d2l's fra-eng.zip; delete it and download it again", .path.display())]
    Checksum {
        /// The zip.
        path: PathBuf,
        /// Its SHA-1.
        got: String,
        /// The expected one.
        expected: &'static str,
    },
    /// The zip could not be read.
    #[error("`{}` is not a readable zip archive: {reason}", .path.display())]
    BadZip {
        /// The zip.
        path: PathBuf,
        /// What the zip reader said.
        reason: String,
    },
    /// The zip lacks the corpus.
    #[error("`{}` has no member `{FRA_ENG_MEMBER}`", .path.display())]
    MissingMember {
        /// The zip.
        path: PathBuf,
    },
    /// A member would be written outside the target folder (zip slip).
    #[error("`{}` holds the member `{member}`, which would escape its folder; refusing to extract", .path.display())]
    UnsafeMember {
        /// The zip.
        path: PathBuf,
        /// The member's name.
        member: String,
    },
    /// The text is not UTF-8.
    #[error("`{}` is not UTF-8 text (first bad byte at offset {offset})", .path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// Reading or writing a file failed.
    #[error("`{}`: {error}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DataError + '_ {
    move |error| DataError::Io {
        path: path.to_owned(),
        error,
    }
}

/// The per-user cache folder the corpus is kept in after a download.
pub fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("d2l-attention")
        .join("fra-eng")
}

/// The corpus text: [`locate_fra_eng`] with `explicit` (or else the path
/// in [`DATA_DIR_ENV`]), the user cache folder and d2l's download, then
/// [`read_corpus`].
///
/// # Errors
/// See [`locate_fra_eng`] and [`read_corpus`].
pub fn load_fra_eng(explicit: Option<&Path>) -> Result<String, DataError> {
    let from_env = std::env::var_os(DATA_DIR_ENV).map(PathBuf::from);
    read_corpus(&locate_fra_eng(
        explicit.or(from_env.as_deref()),
        &cache_dir(),
        FRA_ENG,
    )?)
}

/// Finds `fra.txt`, in this order: `explicit`, a folder holding `fra.txt`
/// or `fra-eng.zip`, or one of those files; then
/// the cache folder `cache`; then a download of `source` (normally
/// [`FRA_ENG`]) into `cache`. A zip is checked against `source.sha1` and
/// its `fra.txt` extracted into `cache`. Returns the path of `fra.txt`.
///
/// # Errors
/// [`DataError::NotFound`] telling where to put the file when nothing was
/// found and the download failed (e.g. offline); [`DataError::Checksum`],
/// [`DataError::BadZip`], [`DataError::MissingMember`] or
/// [`DataError::UnsafeMember`] for a damaged zip; [`DataError::MissingPath`]
/// when `explicit` does not exist (a typo is not papered over by the
/// cache). Files are written
/// atomically and a download is kept only once verified, so nothing
/// half-written is ever reused.
pub fn locate_fra_eng(
    explicit: Option<&Path>,
    cache: &Path,
    source: Source,
) -> Result<PathBuf, DataError> {
    if let Some(path) = explicit.filter(|p| !p.exists()) {
        return Err(DataError::MissingPath {
            path: path.to_owned(),
        });
    }
    let mut tried = Vec::new();
    for place in explicit
        .map(Path::to_owned)
        .into_iter()
        .chain([cache.to_owned()])
    {
        let candidates = if place.is_dir() {
            vec![place.join("fra.txt"), place.join("fra-eng.zip")]
        } else {
            vec![place.clone()]
        };
        for candidate in candidates {
            if candidate.is_file() {
                return if candidate.extension().is_some_and(|e| e == "zip") {
                    extract_fra_eng(&candidate, source.sha1, cache)
                } else {
                    Ok(candidate)
                };
            }
            tried.push(candidate);
        }
    }
    let not_found = |reason: String| DataError::NotFound {
        tried: tried.clone(),
        cache: cache.to_owned(),
        url: source.url,
        reason,
    };
    let bytes = download(source.url).map_err(not_found)?;
    let zip = cache.join("fra-eng.zip");
    check_sha1(&bytes, source.sha1, &zip)?;
    fs::create_dir_all(cache).map_err(io_err(cache))?;
    write_atomic(&zip, &bytes).map_err(|e| DataError::Io {
        path: e.path,
        error: e.error,
    })?;
    extract_fra_eng(&zip, source.sha1, cache)
}

/// Downloads `url` into memory, with a progress bar on stderr.
fn download(url: &str) -> Result<Vec<u8>, String> {
    let response = ureq::get(url).call().map_err(|e| e.to_string())?;
    let length = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let bar =
        indicatif::ProgressBar::new(length.unwrap_or(0)).with_message(format!("downloading {url}"));
    let mut bytes = Vec::new();
    bar.wrap_read(response.into_body().into_reader())
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    Ok(bytes)
}

fn check_sha1(bytes: &[u8], expected: &'static str, path: &Path) -> Result<(), DataError> {
    let got = format!("{:x}", Sha1::digest(bytes));
    if got != expected {
        return Err(DataError::Checksum {
            path: path.to_owned(),
            got,
            expected,
        });
    }
    Ok(())
}

/// Checks `zip` against `sha1` and writes its `fra.txt` to
/// `dest_dir/fra.txt` atomically; returns that path.
///
/// # Errors
/// See [`locate_fra_eng`].
pub fn extract_fra_eng(
    zip: &Path,
    sha1: &'static str,
    dest_dir: &Path,
) -> Result<PathBuf, DataError> {
    let bytes = fs::read(zip).map_err(io_err(zip))?;
    check_sha1(&bytes, sha1, zip)?;
    let text = read_member(std::io::Cursor::new(bytes), zip)?;
    fs::create_dir_all(dest_dir).map_err(io_err(dest_dir))?;
    let dest = dest_dir.join("fra.txt");
    write_atomic(&dest, &text).map_err(|e| DataError::Io {
        path: e.path,
        error: e.error,
    })?;
    Ok(dest)
}

/// Reads [`FRA_ENG_MEMBER`] from a zip archive, refusing archives with a
/// member that would escape its folder.
fn read_member(reader: impl Read + Seek, path: &Path) -> Result<Vec<u8>, DataError> {
    let bad_zip = |e: zip::result::ZipError| DataError::BadZip {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let mut archive = zip::ZipArchive::new(reader).map_err(bad_zip)?;
    for i in 0..archive.len() {
        let member = archive.by_index(i).map_err(bad_zip)?;
        if member.enclosed_name().is_none() {
            return Err(DataError::UnsafeMember {
                path: path.to_owned(),
                member: member
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.into_owned()),
            });
        }
    }
    let mut member = archive.by_name(FRA_ENG_MEMBER).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => DataError::MissingMember {
            path: path.to_owned(),
        },
        e => bad_zip(e),
    })?;
    let mut text = Vec::new();
    member
        .read_to_end(&mut text)
        .map_err(|e| DataError::BadZip {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    Ok(text)
}

/// Reads a corpus file as UTF-8 text, with Windows line endings (`\r\n`)
/// turned into `\n` and a leading byte-order mark dropped, as a copy
/// edited on Windows may have them (a `fra.txt` supplied directly is not
/// checked against the zip's SHA-1).
///
/// # Errors
/// [`DataError::NotUtf8`] with the offset of the first bad byte, or
/// [`DataError::Io`].
pub fn read_corpus(path: &Path) -> Result<String, DataError> {
    let bytes = fs::read(path).map_err(io_err(path))?;
    let text = String::from_utf8(bytes).map_err(|e| DataError::NotUtf8 {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(text.replace("\r\n", "\n"))
}

/// Turns every Unicode space other than tab and line breaks into a plain
/// space: U+2009 (thin space) included, which [`preprocess_nmt`] keeps as
/// d2l does, so that `"Recule\u{2009}!"` tokenises as `recule !` rather
/// than `recule\u{2009} !`. Apply it before [`preprocess_nmt`] (or
/// [`NmtData::new`]) for the normalised form of the corpus.
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
pub fn preprocess_nmt(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut previous: Option<char> = None;
    for c in text.chars() {
        let c = if c == '\u{202f}' || c == '\u{a0}' {
            ' '
        } else {
            c
        };
        if matches!(c, ',' | '.' | '!' | '?') && previous.is_some_and(|p| p != ' ') {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
        previous = Some(c);
    }
    out
}

/// Tokenised sentence pairs.
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

/// A vocabulary (d2l zh §8.2.3): `<unk>` is 0, then the reserved tokens in
/// order, then every token seen at least `min_freq` times, by descending
/// frequency; ties keep the order of first appearance in the corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vocab {
    idx_to_token: Vec<String>,
    token_to_idx: HashMap<String, usize>,
}

impl Vocab {
    /// Builds a vocabulary from tokenised lines.
    pub fn new(lines: &[Vec<String>], min_freq: usize, reserved: &[&str]) -> Self {
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
    pub fn len(&self) -> usize {
        self.idx_to_token.len()
    }

    /// Whether it is empty (never: `<unk>` is always there).
    pub fn is_empty(&self) -> bool {
        self.idx_to_token.is_empty()
    }

    /// The index of `token`, or that of `<unk>` (0).
    pub fn index(&self, token: &str) -> usize {
        self.token_to_idx.get(token).copied().unwrap_or(0)
    }

    /// The token at `index`, or `<unk>` when out of range.
    pub fn token(&self, index: usize) -> &str {
        self.idx_to_token.get(index).map_or("<unk>", String::as_str)
    }
}

/// d2l's `truncate_pad`: cuts `line` to `num_steps` or pads it with
/// `padding` to that length.
pub fn truncate_pad(line: &[usize], num_steps: usize, padding: usize) -> Vec<usize> {
    let mut out: Vec<usize> = line.iter().copied().take(num_steps).collect();
    out.resize(num_steps, padding);
    out
}

/// d2l's `build_array_nmt`: each line as indices with `<eos>` appended,
/// truncated or padded to `num_steps`; returns the flat (lines × num_steps)
/// indices and each line's valid length (its tokens that are not `<pad>`).
pub fn build_array_nmt(
    lines: &[Vec<String>],
    vocab: &Vocab,
    num_steps: usize,
) -> (Vec<i64>, Vec<i64>) {
    let (pad, eos) = (vocab.index("<pad>"), vocab.index("<eos>"));
    let mut array = Vec::with_capacity(lines.len() * num_steps);
    let mut valid_lens = Vec::with_capacity(lines.len());
    for line in lines {
        let indices: Vec<usize> = line.iter().map(|t| vocab.index(t)).chain([eos]).collect();
        let row = truncate_pad(&indices, num_steps, pad);
        valid_lens.push(row.iter().filter(|&&i| i != pad).count() as i64);
        array.extend(row.into_iter().map(|i| i as i64));
    }
    (array, valid_lens)
}

/// One mini-batch of translation pairs.
#[derive(Clone, Debug)]
pub struct Batch {
    /// Source indices, (batch_size, num_steps).
    pub x: Tensor<2, Int>,
    /// Source valid lengths, (batch_size,).
    pub x_valid_len: Tensor<1, Int>,
    /// Target indices, (batch_size, num_steps).
    pub y: Tensor<2, Int>,
    /// Target valid lengths, (batch_size,).
    pub y_valid_len: Tensor<1, Int>,
}

/// The translation data of d2l's `load_data_nmt`, ready to be batched.
#[derive(Clone, Debug)]
pub struct NmtData {
    /// The source vocabulary.
    pub src_vocab: Vocab,
    /// The target vocabulary.
    pub tgt_vocab: Vocab,
    num_steps: usize,
    source: (Vec<i64>, Vec<i64>),
    target: (Vec<i64>, Vec<i64>),
}

impl NmtData {
    /// d2l's `load_data_nmt` on a corpus text: preprocess, take the first
    /// `num_examples` pairs, build vocabularies (min_freq 2, reserved
    /// `<pad>`, `<bos>`, `<eos>`) and padded arrays of `num_steps` tokens.
    ///
    /// # Errors
    /// [`DataError::NoPairs`] when no line holds a pair (a file of another
    /// format, such as an HTML error page or a three-column export).
    pub fn new(text: &str, num_steps: usize, num_examples: usize) -> Result<Self, DataError> {
        let pairs = tokenize_nmt(&preprocess_nmt(text), Some(num_examples));
        if pairs.source.is_empty() {
            return Err(DataError::NoPairs {
                skipped: pairs.skipped,
            });
        }
        let reserved = ["<pad>", "<bos>", "<eos>"];
        let src_vocab = Vocab::new(&pairs.source, 2, &reserved);
        let tgt_vocab = Vocab::new(&pairs.target, 2, &reserved);
        let source = build_array_nmt(&pairs.source, &src_vocab, num_steps);
        let target = build_array_nmt(&pairs.target, &tgt_vocab, num_steps);
        Ok(NmtData {
            src_vocab,
            tgt_vocab,
            num_steps,
            source,
            target,
        })
    }

    /// The number of sentence pairs.
    pub fn len(&self) -> usize {
        self.source.1.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pairs in shuffled mini-batches of `batch_size` (the last one may
    /// be smaller), shuffled by a generator seeded with `seed`; pass the
    /// epoch number for a new order each epoch.
    ///
    /// # Panics
    /// When `batch_size` is 0.
    pub fn batches(&self, batch_size: usize, seed: u64, device: &Device) -> Vec<Batch> {
        assert!(batch_size > 0, "`batch_size` must be at least 1");
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.shuffle(&mut StdRng::seed_from_u64(seed));
        let n = self.num_steps;
        let rows = |data: &(Vec<i64>, Vec<i64>), idx: &[usize]| {
            let tokens: Vec<i64> = idx
                .iter()
                .flat_map(|&i| data.0[i * n..(i + 1) * n].iter().copied())
                .collect();
            let lens: Vec<i64> = idx.iter().map(|&i| data.1[i]).collect();
            (
                Tensor::from_data(TensorData::new(tokens, [idx.len(), n]), device),
                Tensor::from_data(TensorData::new(lens, [idx.len()]), device),
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
            if let Some(count) = label_ngrams.get_mut(gram).filter(|c| **c > 0) {
                matches += 1;
                *count -= 1;
            }
        }
        score *= (matches as f64 / (len_pred - n + 1) as f64).powf(0.5f64.powi(n as i32));
    }
    score
}
