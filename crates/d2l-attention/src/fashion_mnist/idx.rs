//! The IDX format of (Fashion-)MNIST's files (LeCun et al.'s MNIST page):
//! two zero bytes, a type byte (0x08: unsigned bytes), the number of
//! dimensions, each dimension as a big-endian u32, then the data in row-major
//! order. The original files are gzip-compressed; the cache is not.

use std::io::Read;
use std::path::Path;

use super::FashionMnistError;

/// The dimensions and bytes of the IDX file at `path` (gzip-compressed when
/// its name ends in `.gz`).
///
/// # Errors
/// [`FashionMnistError::Io`] when it cannot be read (or unzipped);
/// [`FashionMnistError::Format`] naming the file when it is not an IDX file
/// of unsigned bytes, or holds fewer or more bytes than its header states.
///
/// # Examples
/// ```
/// use d2l_attention::fashion_mnist::idx::{idx_bytes, read_idx};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("labels-idx1-ubyte");
/// std::fs::write(&path, idx_bytes(&[3], &[9, 0, 4])).unwrap();
/// assert_eq!(read_idx(&path).unwrap(), (vec![3], vec![9, 0, 4]));
/// ```
pub fn read_idx(
    path: &Path,
) -> Result<(Vec<usize>, Vec<u8>), FashionMnistError> {
    let io = |error| FashionMnistError::Io {
        path: path.to_owned(),
        error,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file).read_to_end(&mut bytes)
    } else {
        std::io::BufReader::new(file).read_to_end(&mut bytes)
    }
    .map_err(io)?;
    parse_idx(&bytes).map_err(|reason| FashionMnistError::Format {
        path: path.to_owned(),
        reason,
    })
}

fn parse_idx(bytes: &[u8]) -> Result<(Vec<usize>, Vec<u8>), String> {
    let [0, 0, kind, rank, ..] = *bytes else {
        return Err(format!("{} bytes are no IDX header", bytes.len()));
    };
    if kind != 0x08 {
        return Err(format!("type 0x{kind:02x}, expected 0x08 (u8)"));
    }
    let header = 4 + 4 * rank as usize;
    let dims: Vec<usize> = bytes
        .get(4..header)
        .ok_or_else(|| format!("truncated header of {rank} dimensions"))?
        .chunks(4)
        .map(|d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize)
        .collect();
    let expected = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("dimensions {dims:?} overflow"))?;
    let data = &bytes[header..];
    if data.len() != expected {
        return Err(format!(
            "{} data bytes, expected {expected} for dimensions {dims:?}",
            data.len()
        ));
    }
    Ok((dims, data.to_vec()))
}

/// The bytes of an IDX file of unsigned bytes with dimensions `dims`.
///
/// # Panics
/// When `data` does not hold the product of `dims` bytes, or `dims` has
/// more than 255 entries or one of 2³² or more (the format's limits).
///
/// # Examples
/// ```
/// use d2l_attention::fashion_mnist::idx::idx_bytes;
///
/// // Magic 0x00000801 (u8, one dimension), the length 2, the data.
/// assert_eq!(idx_bytes(&[2], &[7, 8]), [0, 0, 8, 1, 0, 0, 0, 2, 7, 8]);
/// ```
pub fn idx_bytes(dims: &[usize], data: &[u8]) -> Vec<u8> {
    assert_eq!(dims.iter().product::<usize>(), data.len(), "`dims`");
    assert!(
        dims.len() <= 255 && dims.iter().all(|&d| u32::try_from(d).is_ok()),
        "`dims` {dims:?}: at most 255 of them, each below 2³²"
    );
    let mut bytes = vec![0, 0, 0x08, dims.len() as u8];
    for &d in dims {
        bytes.extend((d as u32).to_be_bytes());
    }
    bytes.extend(data);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_plain_and_gzipped() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let bytes = idx_bytes(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        std::fs::write(dir.path().join("a"), &bytes).unwrap();
        let gz = std::fs::File::create(dir.path().join("a.gz")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(gz, Default::default());
        gz.write_all(&bytes).unwrap();
        gz.finish().unwrap();
        for name in ["a", "a.gz"] {
            let read = read_idx(&dir.path().join(name)).unwrap();
            assert_eq!(read, (vec![2, 3], vec![1, 2, 3, 4, 5, 6]), "{name}");
        }
    }

    #[test]
    fn bad_files_are_errors_naming_what_is_wrong() {
        let truncated = &idx_bytes(&[2, 3], &[0; 6])[..14];
        let err = parse_idx(truncated).unwrap_err();
        assert!(err.contains("2 data bytes, expected 6"), "{err}");
        let mut floats = idx_bytes(&[1], &[0]);
        floats[2] = 0x0D;
        assert!(parse_idx(&floats).unwrap_err().contains("type 0x0d"));
        assert!(parse_idx(&[0, 0]).unwrap_err().contains("no IDX header"));
    }
}
