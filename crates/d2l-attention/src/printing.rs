//! Printing tensors and rows of numbers the way PyTorch prints them, for the
//! listings' captured output.

use burn::tensor::Tensor;

/// Formats a tensor as nested rows, like a printed PyTorch tensor:
/// `[[0.1000, 0.2000], [0.3000, 0.4000]]` (inner rows on lines of their
/// own), with `decimals` digits after the point. A row too long for
/// PyTorch's line width of 80 wraps as PyTorch wraps it (`_vector_str` in
/// `torch/_tensor_str.py`): as many numbers to a line as fit their widest
/// one, continuation lines under the row's first number.
///
/// # Panics
/// When the tensor cannot be read back from its device.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::printing::format_tensor;
///
/// let x = Tensor::<2>::from_floats([[0.1, 0.2], [0.3, 0.4]], &Device::flex());
/// assert_eq!(format_tensor(x, 2), "[[0.10, 0.20],\n [0.30, 0.40]]");
///
/// // 12 numbers of 6 characters: 9 fit in a line indented by 1.
/// let row = Tensor::<2>::ones([1, 12], &Device::flex());
/// let text = format_tensor(row, 4);
/// let lines: Vec<&str> = text.lines().collect();
/// assert_eq!(lines[0], format!("[[{}1.0000,", "1.0000, ".repeat(8)));
/// assert_eq!(lines[1], "  1.0000, 1.0000, 1.0000]]");
/// ```
pub fn format_tensor<const D: usize>(
    tensor: Tensor<D>,
    decimals: usize,
) -> String {
    let dims = tensor.dims();
    let values = tensor
        .try_into_vec_as::<f32>()
        .expect("tensor readable on the host");
    nest(&values, &dims, decimals, 0)
}

fn nest(
    values: &[f32],
    dims: &[usize],
    decimals: usize,
    depth: usize,
) -> String {
    if dims.len() <= 1 {
        return wrapped_row(values, decimals, depth);
    }
    let chunk = values.len() / dims[0].max(1);
    let rows: Vec<String> = values
        .chunks(chunk.max(1))
        .map(|c| nest(c, &dims[1..], decimals, depth + 1))
        .collect();
    let sep = format!(",\n{}", " ".repeat(depth + 1));
    format!("[{}]", rows.join(&sep))
}

/// PyTorch's default print width (`torch.set_printoptions(linewidth=80)`).
const LINE_WIDTH: usize = 80;

/// A row of numbers whose `[` stands in column `indent`, wrapped to
/// [`LINE_WIDTH`] as PyTorch's `_vector_str` wraps it.
fn wrapped_row(values: &[f32], decimals: usize, indent: usize) -> String {
    let items: Vec<String> =
        values.iter().map(|v| format!("{v:.decimals$}")).collect();
    let width = items.iter().map(String::len).max().unwrap_or(0) + 2;
    let per_line = (LINE_WIDTH.saturating_sub(indent) / width).max(1);
    let lines: Vec<String> =
        items.chunks(per_line).map(|line| line.join(", ")).collect();
    let sep = format!(",\n{}", " ".repeat(indent + 1));
    format!("[{}]", lines.join(&sep))
}

/// Formats a slice of numbers like a printed tensor row: `[0.1000, 0.2000]`,
/// with `decimals` digits after the point.
///
/// # Examples
/// ```
/// use d2l_attention::printing::format_row;
///
/// assert_eq!(format_row(&[0.5, 1.0 / 3.0], 3), "[0.500, 0.333]");
/// ```
pub fn format_row(values: &[f32], decimals: usize) -> String {
    let items: Vec<String> =
        values.iter().map(|v| format!("{v:.decimals$}")).collect();
    format!("[{}]", items.join(", "))
}

/// Formats a matrix as PyTorch prints a large one: only the first and last
/// `edge` rows and columns, with `...` for the rest (torch's `edgeitems`;
/// a side of at most 2·`edge` is printed whole).
///
/// # Panics
/// When the tensor cannot be read back from its device.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::printing::format_summary;
///
/// let x = Tensor::<1, Int>::arange(0..25, &Device::flex()).float().reshape([5, 5]);
/// assert_eq!(
///     format_summary(x, 0, 1),
///     "[[0, ..., 4],\n ...,\n [20, ..., 24]]"
/// );
/// ```
pub fn format_summary(
    matrix: Tensor<2>,
    decimals: usize,
    edge: usize,
) -> String {
    let [rows, cols] = matrix.dims();
    let values = matrix
        .try_into_vec_as::<f32>()
        .expect("tensor readable on the host");
    // the indices shown along a side of length n, None for the ellipsis
    let shown = |n: usize| -> Vec<Option<usize>> {
        if n <= 2 * edge {
            (0..n).map(Some).collect()
        } else {
            (0..edge)
                .map(Some)
                .chain([None])
                .chain((n - edge..n).map(Some))
                .collect()
        }
    };
    let lines: Vec<String> = shown(rows)
        .into_iter()
        .map(|r| match r {
            None => "...".to_owned(),
            Some(r) => {
                let items: Vec<String> = shown(cols)
                    .into_iter()
                    .map(|c| match c {
                        None => "...".to_owned(),
                        Some(c) => {
                            format!("{:.decimals$}", values[r * cols + c])
                        }
                    })
                    .collect();
                format!("[{}]", items.join(", "))
            }
        })
        .collect();
    format!("[{}]", lines.join(",\n "))
}

/// Formats a long row of numbers as PyTorch wraps one: `per_line` numbers
/// to a line, continuation lines indented by one space.
///
/// # Examples
/// ```
/// use d2l_attention::printing::format_wrapped;
///
/// assert_eq!(format_wrapped(&[1.0, 2.0, 3.0], 1, 2), "[1.0, 2.0,\n 3.0]");
/// ```
pub fn format_wrapped(
    values: &[f32],
    decimals: usize,
    per_line: usize,
) -> String {
    let lines: Vec<String> = values
        .chunks(per_line.max(1))
        .map(|chunk| {
            let items: Vec<String> =
                chunk.iter().map(|v| format!("{v:.decimals$}")).collect();
            items.join(", ")
        })
        .collect();
    format!("[{}]", lines.join(",\n "))
}
