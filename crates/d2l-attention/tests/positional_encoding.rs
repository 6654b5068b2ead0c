//! The sinusoidal positional encoding against its closed form (d2l zh eq.
//! 10.6.2), on every backend: values at small and large positions, shape,
//! range, the odd-size rule, and the refusal of a sequence that is too long.

mod common;

use burn::tensor::{Device, Tensor};
use common::devices;
use d2l_attention::positional_encoding::*;

/// The closed form, in f64.
fn closed_form(i: usize, column: usize, d: usize) -> f64 {
    let two_j = (column - column % 2) as f64;
    let angle = i as f64 / 10000f64.powf(two_j / d as f64);
    if column.is_multiple_of(2) {
        angle.sin()
    } else {
        angle.cos()
    }
}

#[test]
fn the_encoding_is_the_closed_form_at_small_and_large_positions() {
    for (backend, device) in devices() {
        let pe = PositionalEncodingConfig::new(32).init(&device);
        assert_eq!(pe.p.dims(), [1, 1000, 32]);
        let p = pe.p.squeeze_dim::<2>(0).try_into_vec_as::<f32>().unwrap();
        for i in [0, 1, 2, 7, 59, 500, 998, 999] {
            for column in [0, 1, 6, 7, 8, 9, 30, 31] {
                let want = closed_form(i, column, 32);
                let got = p[i * 32 + column] as f64;
                // Computed in f64 and rounded once: within one f32 rounding.
                assert!(
                    (got - want).abs() <= 6e-8,
                    "{backend}: p[{i}, {column}] = {got}, closed form {want}"
                );
            }
        }
        // Sines and cosines: every entry in [-1, 1], and sin² + cos² = 1
        // for each pair of columns.
        assert!(p.iter().all(|x| (-1.0..=1.0).contains(x)));
        for row in p.chunks(32) {
            for pair in row.chunks(2) {
                let norm = pair[0] * pair[0] + pair[1] * pair[1];
                assert!((norm - 1.0).abs() < 1e-6, "{pair:?}");
            }
        }
    }
}

#[test]
fn forward_adds_the_first_positions_to_every_sequence() {
    for (backend, device) in devices() {
        let pe = PositionalEncodingConfig::new(8).init(&device);
        let x = Tensor::<3>::ones([3, 5, 8], &device);
        let y = pe.forward(x.clone()) - x;
        let want = Tensor::<1>::from_floats(encoding(5, 8).as_slice(), &device)
            .reshape([1, 5, 8])
            .expand([3, 5, 8]);
        let gap = (y - want).abs().max().into_scalar::<f32>();
        assert!(gap < 1e-6, "{backend}: {gap}");
    }
}

/// d2l's code cannot encode an odd size; ours gives the last column a sine.
#[test]
fn an_odd_size_ends_in_a_sine_column() {
    let p = encoding(4, 5);
    for i in 0..4 {
        for column in 0..5 {
            let want = closed_form(i, column, 5);
            assert!((p[i * 5 + column] as f64 - want).abs() <= 6e-8);
        }
        assert_eq!(p[i * 5 + 4], (i as f64 / 10000f64.powf(0.8)).sin() as f32);
    }
}

#[test]
#[should_panic(
    expected = "`x` has shape [1, 11, 4] at position 0, expected (batch_size, at most 10 steps, 4)"
)]
fn a_sequence_longer_than_max_len_is_refused() {
    let device = Device::flex();
    let pe = PositionalEncodingConfig::new(4)
        .with_max_len(10)
        .init(&device);
    pe.forward(Tensor::zeros([1, 11, 4], &device));
}
