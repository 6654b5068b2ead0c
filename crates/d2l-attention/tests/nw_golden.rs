//! Nadaraya–Watson kernel regression against PyTorch 2.9.0 running d2l's
//! code (`tests/golden/nadaraya_watson.json`), and its properties.

mod common;

use burn::tensor::{Device, Tensor};
use common::{array, assert_close, devices, float, golden};
use d2l_attention::nadaraya_watson::*;

// The training loop amplifies rounding differences: the README's bound for case g.
const ATOL: f64 = 1e-4;
const RTOL: f64 = 1e-5;

#[test]
fn nonparametric_pooling_matches_pytorch() {
    let g = golden("nadaraya_watson.json");
    for (backend, device) in devices() {
        let (x_train, y_train, x_test) = (
            float::<1>(&g["x_train"], &device),
            float::<1>(&g["y_train"], &device),
            float::<1>(&g["x_test"], &device),
        );
        let (y_hat, weights) =
            nonparametric_pooling(x_train, y_train, x_test).unwrap();
        let w = assert_close(
            &format!("{backend} weights"),
            weights,
            &g["nonparametric"]["attention_weights"],
            1e-5,
            1e-5,
        );
        let y = assert_close(
            &format!("{backend} y_hat"),
            y_hat,
            &g["nonparametric"]["y_hat"],
            1e-5,
            1e-5,
        );
        eprintln!(
            "{backend}: non-parametric max deviation: weights {w:.1e}, y_hat {y:.1e}"
        );
    }
}

#[test]
fn parametric_training_matches_pytorch_epoch_by_epoch() {
    let g = golden("nadaraya_watson.json");
    let p = &g["parametric"];
    let numbers = |key: &str| {
        p[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect::<Vec<f64>>()
    };
    let (losses, grads, ws) = (
        numbers("losses_per_epoch"),
        numbers("grad_w_per_epoch"),
        numbers("w_after_epoch"),
    );
    for (backend, device) in devices() {
        let device = device.autodiff();
        let (x_train, y_train) = (
            float::<1>(&g["x_train"], &device),
            float::<1>(&g["y_train"], &device),
        );
        let (keys, values) =
            leave_one_out(x_train.clone(), y_train.clone()).unwrap();
        assert_close(
            &format!("{backend} keys"),
            keys,
            &p["train_keys"],
            1e-12,
            0.0,
        );
        assert_close(
            &format!("{backend} values"),
            values,
            &p["train_values"],
            1e-12,
            0.0,
        );

        let mut logs = Vec::new();
        let model = train(
            NWKernelRegression::new(1.0, &device),
            x_train.clone(),
            y_train.clone(),
            0.5,
            5,
            |log| logs.push(*log),
        )
        .unwrap();
        let mut worst = 0.0f64;
        for (i, log) in logs.iter().enumerate() {
            for (what, got, want) in [
                ("loss", log.loss, losses[i]),
                ("grad", log.grad, grads[i]),
                ("w", log.w, ws[i]),
            ] {
                let dev = (got as f64 - want).abs();
                assert!(
                    dev <= ATOL + RTOL * want.abs(),
                    "{backend} epoch {}: {what} {got}, PyTorch {want}",
                    i + 1
                );
                worst = worst.max(dev);
            }
        }
        let x_test = float::<1>(&g["x_test"], &device);
        let keys = x_train.unsqueeze::<2>().expand([50, 50]);
        let values = y_train.unsqueeze::<2>().expand([50, 50]);
        let (y_hat, weights) = model.forward(x_test, keys, values);
        let y = assert_close(
            &format!("{backend} y_hat_test"),
            y_hat,
            &p["y_hat_test"],
            ATOL,
            RTOL,
        );
        let w = assert_close(
            &format!("{backend} weights_test"),
            weights,
            &p["attention_weights_test"],
            ATOL,
            RTOL,
        );
        eprintln!(
            "{backend}: parametric max deviation: loss/grad/w {worst:.1e}, y_hat {y:.1e}, weights {w:.1e}"
        );
    }
}

#[test]
fn kernels_at_zero_and_at_their_support_edges() {
    let device = Device::flex();
    let u =
        Tensor::<1>::from_floats([0.0, -1.0, 1.0, 0.5, 0.999, 3.0], &device);
    let half = (-0.5f32).exp();
    let expected: [(Kernel, [f32; 6]); 5] = [
        (
            Kernel::Gaussian { sigma: 1.0 },
            [
                1.0,
                half,
                half,
                (-0.125f32).exp(),
                (-0.999f32 * 0.999 / 2.0).exp(),
                (-4.5f32).exp(),
            ],
        ),
        (
            Kernel::Gaussian { sigma: 0.5 },
            [
                1.0,
                (-2.0f32).exp(),
                (-2.0f32).exp(),
                half,
                (-2.0f32 * 0.999 * 0.999).exp(),
                (-18.0f32).exp(),
            ],
        ),
        (Kernel::Boxcar, [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]),
        (Kernel::Constant, [1.0; 6]),
        (Kernel::Epanechikov, [1.0, 0.0, 0.0, 0.5, 0.001, 0.0]),
    ];
    for (kernel, want) in expected {
        let got = kernel.apply(u.clone()).try_into_vec_as::<f32>().unwrap();
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() < 1e-6,
                "{kernel}: got {got:?}, want {want:?}"
            );
        }
    }
}

#[test]
fn every_weight_matrix_has_rows_summing_to_one() {
    let device = Device::flex();
    let data = Dataset::generate(50, 1, &device);
    let kernels = [
        Kernel::Gaussian { sigma: 0.1 },
        Kernel::Gaussian { sigma: 1.0 },
        Kernel::Boxcar,
        Kernel::Constant,
        Kernel::Epanechikov,
    ];
    let mut matrices: Vec<Tensor<2>> = kernels
        .iter()
        .map(|k| {
            nadaraya_watson(
                data.x_train.clone(),
                data.y_train.clone(),
                data.x_test.clone(),
                *k,
            )
            .unwrap()
            .1
        })
        .collect();
    matrices.push(
        nonparametric_pooling(
            data.x_train.clone(),
            data.y_train.clone(),
            data.x_test.clone(),
        )
        .unwrap()
        .1,
    );
    for (i, m) in matrices.into_iter().enumerate() {
        let sums = m.sum_dim(1).try_into_vec_as::<f32>().unwrap();
        assert!(
            sums.iter().all(|s| (s - 1.0).abs() < 1e-5),
            "matrix {i}: {sums:?}"
        );
    }
}

#[test]
fn the_gaussian_kernel_with_unit_width_is_the_softmax_form() {
    let g = golden("nadaraya_watson.json");
    let device = Device::flex();
    let (x_train, y_train, x_test) = (
        float::<1>(&g["x_train"], &device),
        float::<1>(&g["y_train"], &device),
        float::<1>(&g["x_test"], &device),
    );
    let (y_hat, _) = nadaraya_watson(
        x_train,
        y_train,
        x_test,
        Kernel::Gaussian { sigma: 1.0 },
    )
    .unwrap();
    assert_close(
        "Gaussian σ = 1",
        y_hat,
        &g["nonparametric"]["y_hat"],
        1e-5,
        1e-5,
    );
}

#[test]
fn consistency_more_data_and_a_narrower_kernel_lower_the_test_error() {
    let device = Device::flex();
    let errors: Vec<f32> = [50, 500, 5000]
        .iter()
        .map(|&n| {
            let data = Dataset::generate(n, 0, &device);
            let sigma = (n as f32).powf(-0.2);
            let (y_hat, _) = nadaraya_watson(
                data.x_train,
                data.y_train,
                data.x_test,
                Kernel::Gaussian { sigma },
            )
            .unwrap();
            (y_hat - data.y_truth)
                .powi_scalar(2)
                .mean()
                .into_scalar::<f32>()
        })
        .collect();
    assert!(errors[0] > errors[1] && errors[1] > errors[2], "{errors:?}");
    assert!(errors[2] < 0.02, "{errors:?}");
}

#[test]
fn bad_training_sets_and_empty_supports_are_errors_not_nan() {
    let device = Device::flex();
    let empty = Tensor::<1>::from_floats([0.0f32; 0], &device);
    let queries = Tensor::<1>::from_floats([0.0, 1.0], &device);
    assert_eq!(
        nonparametric_pooling(empty.clone(), empty.clone(), queries.clone())
            .unwrap_err(),
        RegressionError::NoTrainingData
    );
    let x = Tensor::<1>::from_floats([0.0, 1.0, 2.0], &device);
    let y2 = Tensor::<1>::from_floats([0.0, 1.0], &device);
    assert_eq!(
        nadaraya_watson(x.clone(), y2, queries.clone(), Kernel::Boxcar)
            .unwrap_err(),
        RegressionError::Mismatch { x: 3, y: 2 }
    );
    let far = Tensor::<1>::from_floats([1.0, 10.0], &device);
    let err =
        nadaraya_watson(x.clone(), x.clone(), far, Kernel::Boxcar).unwrap_err();
    assert_eq!(
        err,
        RegressionError::EmptySupport {
            query: 1,
            x: 10.0,
            kernel: "Boxcar".into()
        }
    );
    assert!(err.to_string().contains("query 1 (x = 10)"), "{err}");
    // The Gaussian kernel reaches everywhere: a finite answer far away, even
    // where every exp(−u²/2σ²) underflows to 0 in f32.
    let (y, _) = nadaraya_watson(
        x.clone(),
        x.clone(),
        Tensor::from_floats([10.0], &device),
        Kernel::Gaussian { sigma: 0.1 },
    )
    .unwrap();
    assert_eq!(y.into_scalar::<f32>(), 2.0);
    for sigma in [0.0, -1.0, f32::NAN] {
        let err = nadaraya_watson(
            x.clone(),
            x.clone(),
            queries.clone(),
            Kernel::Gaussian { sigma },
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("`sigma` is"), "{err}");
    }
    let (y, _) = nadaraya_watson(
        x.clone(),
        x,
        Tensor::from_floats([10.0], &device),
        Kernel::Gaussian { sigma: 1.0 },
    )
    .unwrap();
    let y = y.into_scalar::<f32>();
    // Weight e^-8.5 relative on x = 1, the rest negligible: y = 2 − 2·10⁻⁴.
    assert!((y - 2.0).abs() < 3e-4 && y < 2.0, "{y}");
}

#[test]
fn a_w_that_turns_nan_stops_training_with_an_error() {
    let device = Device::flex().autodiff();
    let data = Dataset::generate(10, 0, &device);
    let err = train(
        NWKernelRegression::new(f32::NAN, &device),
        data.x_train,
        data.y_train,
        0.5,
        5,
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, RegressionError::Diverged { epoch: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("lower the learning rate"));
}

#[test]
fn w_zero_is_average_pooling_and_the_demo_values_are_exact() {
    let device = Device::flex();
    let g = golden("nadaraya_watson.json");
    let (x_train, y_train) = (
        float::<1>(&g["x_train"], &device),
        float::<1>(&g["y_train"], &device),
    );
    let keys = x_train.unsqueeze::<2>().expand([3, 50]);
    let values = y_train.clone().unsqueeze::<2>().expand([3, 50]);
    let (y_hat, weights) = NWKernelRegression::new(0.0, &device).forward(
        Tensor::from_floats([0.0, 2.5, 5.0], &device),
        keys,
        values,
    );
    let mean = array(&g["y_train"]).1.iter().sum::<f64>() / 50.0;
    for v in y_hat.try_into_vec_as::<f64>().unwrap() {
        assert!((v - mean).abs() < 1e-5, "{v} vs {mean}");
    }
    assert!(
        weights
            .try_into_vec_as::<f32>()
            .unwrap()
            .iter()
            .all(|&w| w == 0.02)
    );
}
