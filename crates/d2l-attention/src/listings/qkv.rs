//! The listings of "Queries, Keys, and Values" (d2l zh §10.1, en §11.1):
//! attention weights as a heatmap.

use std::fmt::Write;

use burn::tensor::{Device, Tensor, activation::softmax};

use super::{Listing, Output};
use crate::printing::format_row;
use crate::random::randn;
use crate::{HeatmapOptions, show_heatmaps};

/// This chapter's listings.
pub const LISTINGS: &[Listing] = &[
    Listing::new("qkv-eye", file!(), eye),
    Listing::new("qkv-softmax-rows", file!(), softmax_rows),
];

/// The identity as attention weights: each query attends only to the key
/// with its own index (d2l zh §10.1.3, seed notebook In[4]).
fn eye(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: eye
    let attention_weights =
        Tensor::<2>::eye(10, device).reshape([1, 1, 10, 10]);
    let figure = show_heatmaps(
        &attention_weights,
        "Keys",
        "Queries",
        HeatmapOptions::default(),
    )?;
    // ANCHOR_END: eye
    out.figure("qkv-eye", figure);
    Ok(())
}

/// Exercise 2 of the section: softmax turns any 10 × 10 score matrix into
/// rows that are probability distributions.
fn softmax_rows(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: softmax_rows
    // Scores from N(0, 1), seeded: one row of scores per query.
    let scores = randn([10, 10], 0, device);
    let attention_weights = softmax(scores, 1);
    let row_sums = attention_weights.clone().sum_dim(1).reshape([10]);
    writeln!(
        out,
        "row sums: {}",
        format_row(&row_sums.try_into_vec_as::<f32>()?, 4)
    )?;
    let smallest = attention_weights.clone().min().into_scalar::<f32>();
    let largest = attention_weights.clone().max().into_scalar::<f32>();
    writeln!(out, "weights between {smallest:.4} and {largest:.4}")?;
    let figure = show_heatmaps(
        &attention_weights.reshape([1, 1, 10, 10]),
        "Keys",
        "Queries",
        HeatmapOptions::default(),
    )?;
    // ANCHOR_END: softmax_rows
    out.figure("qkv-softmax-rows", figure);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    fn count(svg: &str, needle: &str) -> usize {
        svg.matches(needle).count()
    }

    #[test]
    fn eye_draws_ten_dark_cells_on_ninety_light_ones() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let out = LISTINGS[0].execute(&backend.device().unwrap()).unwrap();
            let [(name, svg)] = out.figures() else {
                panic!("one figure expected")
            };
            assert_eq!(name, "qkv-eye");
            // Reds at 1 (#67000d) on the diagonal, Reds at 0 (#fff5f0) elsewhere
            // (the colorbar's bands take the colours of their midpoints).
            assert_eq!(
                count(svg.as_str(), "fill=\"#67000D\""),
                10,
                "{backend}"
            );
            assert_eq!(
                count(svg.as_str(), "fill=\"#FFF5F0\""),
                90,
                "{backend}"
            );
            for label in ["Keys", "Queries", "8", "1"] {
                assert!(
                    svg.as_str().contains(&format!(">\n{label}\n</text>")),
                    "{backend}: {label} missing"
                );
            }
        }
    }

    #[test]
    fn softmax_rows_are_distributions_equal_to_the_closed_form() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let device = backend.device().unwrap();
            let scores = randn([10, 10], 0, &device)
                .try_into_vec_as::<f64>()
                .unwrap();
            let out = LISTINGS[1].execute(&device).unwrap();
            assert_eq!(
                out.text().lines().next().unwrap(),
                format!("row sums: {}", format_row(&[1.0; 10], 4))
            );
            // The same weights by hand: exp(s_ij) / sum_k exp(s_ik).
            let weights = softmax(randn([10, 10], 0, &device), 1)
                .try_into_vec_as::<f64>()
                .unwrap();
            for (row_scores, row) in scores.chunks(10).zip(weights.chunks(10)) {
                let z: f64 = row_scores.iter().map(|s| s.exp()).sum();
                for (s, w) in row_scores.iter().zip(row) {
                    assert!(
                        (w - s.exp() / z).abs() < 1e-6,
                        "{backend}: {w} vs {}",
                        s.exp() / z
                    );
                }
                assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-6);
            }
        }
    }
}
