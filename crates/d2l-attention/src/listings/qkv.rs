//! The listings of "Queries, Keys, and Values" (d2l zh §10.1, en §11.1):
//! attention weights as a heatmap.

use std::fmt::Write;

use burn::tensor::{Device, Tensor, activation::softmax};

use super::{Listing, Output};
use crate::plot::{Diagram, Node};
use crate::printing::format_wrapped;
use crate::random::randn;
use crate::{HeatmapOptions, show_heatmaps};
use plotters::style::RGBColor;

/// This chapter's listings.
pub const LISTINGS: &[Listing] = &[
    Listing::new("qkv-cues", file!(), cues_diagrams),
    Listing::new("qkv-eye", file!(), eye),
    Listing::new("qkv-softmax-rows", file!(), softmax_rows),
    Listing::new("qkv-pooling-diagram", file!(), pooling_diagram),
    Listing::new("qkv-covariance", file!(), covariance_exercise),
];

/// d2l zh §10.1.1's two cues as diagrams: five objects on a desk, all
/// printed in black and white but the red coffee cup; the gaze is first
/// drawn to the cup (nonvolitional cue), then steered to the book
/// (volitional cue).
fn cues_diagrams(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: cues
    let objects = [
        "newspaper",
        "research\npaper",
        "coffee\ncup",
        "notebook",
        "book",
    ];
    let desk = |looked_at: usize, cue: &str| {
        let eye = Node::new((300, 16), (120, 40), "eye").fill(QUERY);
        let mut diagram = Diagram::new((720, 216)).label((360, 196), cue);
        for (i, name) in objects.into_iter().enumerate() {
            let node = Node::new((20 + 140 * i as i32, 120), (120, 52), name);
            let node = if i == 2 {
                node.fill(RED)
            } else {
                node.fill(PAPER)
            };
            if i == looked_at {
                diagram = diagram.arrow(eye.side('b'), node.side('t'));
            }
            diagram = diagram.node(node);
        }
        diagram.node(eye).draw()
    };
    let salient = desk(2, "nonvolitional cue: the red cup stands out");
    out.figure("qkv-cue-coffee", salient?);
    let wanted = desk(4, "volitional cue: after the coffee, I want to read");
    out.figure("qkv-cue-book", wanted?);
    // ANCHOR_END: cues
    Ok(())
}

/// Attention pooling as a diagram: a query scores every key, a softmax
/// turns the scores into weights, and the weights average the values.
fn pooling_diagram(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: pooling_diagram
    let (w, h) = (100, 36);
    let column = |i: i32| 170 + 120 * i; // x of item i's column
    let keys: Vec<Node> = (0..3)
        .map(|i| {
            Node::new((column(i), 20), (w, h), &format!("key k_{{{}}}", i + 1))
        })
        .collect();
    let query = Node::new((20, 92), (w, h), "query q").fill(QUERY);
    let scores = Node::new((170, 92), (340, h), "scores a(q, k_{i})");
    let softmax = Node::new((170, 164), (340, h), "softmax");
    let weights: Vec<Node> = (0..3)
        .map(|i| {
            Node::new((column(i), 236), (w, h), &format!("α_{{{}}}", i + 1))
        })
        .collect();
    let values: Vec<Node> = (0..3)
        .map(|i| {
            let text = format!("value v_{{{}}}", i + 1);
            Node::new((column(i), 308), (w, h), &text).fill(VALUE)
        })
        .collect();
    let output =
        Node::new((560, 290), (120, 72), "output\nΣ α_{i} v_{i}").fill(QUERY);
    let mut diagram =
        Diagram::new((700, 396)).arrow(query.side('r'), scores.side('l'));
    // every weighted value runs along one line into the output: the sum
    let (sum, into) = (380, output.side('b'));
    for i in 0..3 {
        let x = column(i as i32) + w / 2;
        diagram = diagram
            .arrow(keys[i].side('b'), (x, 92))
            .arrow((x, 128), (x, 164))
            .arrow((x, 200), weights[i].side('t'))
            .arrow(weights[i].side('b'), values[i].side('t'))
            .path(&[values[i].side('b'), (x, sum), (into.0, sum), into]);
    }
    let nodes = [keys, vec![query, scores, softmax], weights, values];
    for node in nodes.into_iter().flatten().chain([output]) {
        diagram = diagram.node(node);
    }
    let figure = diagram.draw()?;
    // ANCHOR_END: pooling_diagram
    out.figure("qkv-pooling-diagram", figure);
    Ok(())
}

/// Fills of the diagrams: what asks (the query, the result) and what is
/// read (the values).
const QUERY: RGBColor = RGBColor(0xfd, 0xe0, 0xd2);
const VALUE: RGBColor = RGBColor(0xde, 0xeb, 0xf7);
/// Fills of the desk's objects: printed paper, and the one red object.
const PAPER: RGBColor = RGBColor(0xff, 0xff, 0xff);
const RED: RGBColor = RGBColor(0xf2, 0x7d, 0x72);

/// The identity as attention weights: each query attends only to the key
/// with its own index (d2l zh §10.1.3, `chapter10.ipynb` In[4]).
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
    let row_sums = row_sums.try_into_vec_as::<f32>()?;
    writeln!(out, "row sums:\n{}", format_wrapped(&row_sums, 4, 5))?;
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

// ANCHOR: covariance
/// Attention pooling with dot-product scores over keys that are also the
/// values (d2l en §11.1, exercise 2): f(q) = Σ_i softmax_i(qᵀk_i) k_i for
/// a query (d,) and keys (m, d); returns (d,).
pub fn dot_product_pooling(query: Tensor<1>, keys: Tensor<2>) -> Tensor<1> {
    let [_, d] = keys.dims();
    let scores = keys.clone().matmul(query.reshape([d, 1])); // (m, 1)
    let weights = softmax(scores, 0); // a distribution over the keys
    (keys * weights).sum_dim(0).reshape([d])
}

/// The Jacobian ∂f_j/∂q_l of [`dot_product_pooling`] by autodiff, one
/// backward pass per output component j (row j); `query` and `keys` on an
/// autodiff device.
pub fn pooling_jacobian(query: &Tensor<1>, keys: &Tensor<2>) -> Vec<Vec<f64>> {
    let [_, d] = keys.dims();
    (0..d)
        .map(|j| {
            let q = query.clone().require_grad();
            let f = dot_product_pooling(q.clone(), keys.clone());
            let grads = f.narrow(0, j, 1).sum().backward();
            let row = q.grad(&grads).expect("the query requires a gradient");
            row.try_into_vec_as::<f64>().expect("readable")
        })
        .collect()
}

/// The covariance of the keys under p_i = softmax_i(qᵀk_i), from its
/// definition: Σ_i p_i k_i k_iᵀ − μμᵀ with μ = Σ_i p_i k_i; (d, d).
pub fn key_covariance(query: &Tensor<1>, keys: &Tensor<2>) -> Vec<Vec<f64>> {
    let [m, d] = keys.dims();
    let k = keys.clone().try_into_vec_as::<f64>().expect("readable");
    let q = query.clone().try_into_vec_as::<f64>().expect("readable");
    let key = |i: usize| &k[i * d..(i + 1) * d];
    let scores: Vec<f64> = (0..m)
        .map(|i| key(i).iter().zip(&q).map(|(a, b)| a * b).sum())
        .collect();
    let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
    let p: Vec<f64> =
        exps.iter().map(|e| e / exps.iter().sum::<f64>()).collect();
    let mean = |l: usize| (0..m).map(|i| p[i] * key(i)[l]).sum::<f64>();
    (0..d)
        .map(|j| {
            (0..d)
                .map(|l| {
                    let second: f64 =
                        (0..m).map(|i| p[i] * key(i)[j] * key(i)[l]).sum();
                    second - mean(j) * mean(l)
                })
                .collect()
        })
        .collect()
}
// ANCHOR_END: covariance

/// Exercise 2 of d2l en §11.1: the gradient of dot-product pooling with
/// respect to the query is the covariance of the keys.
fn covariance_exercise(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: covariance_demo
    let device = device.clone().autodiff();
    let query = randn([3], 0, &device); // d = 3
    let keys = randn([5, 3], 1, &device); // m = 5 keys, also the values
    let jacobian = pooling_jacobian(&query, &keys);
    let covariance = key_covariance(&query, &keys);
    for (name, matrix) in [("autodiff", &jacobian), ("covariance", &covariance)]
    {
        writeln!(out, "{name}:")?;
        for row in matrix {
            let row: Vec<String> =
                row.iter().map(|v| format!("{v:8.4}")).collect();
            writeln!(out, "  {}", row.join(""))?;
        }
    }
    // ANCHOR_END: covariance_demo
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::run_named;
    use super::*;
    use crate::BackendChoice;

    fn count(svg: &str, needle: &str) -> usize {
        svg.matches(needle).count()
    }

    #[test]
    fn eye_draws_ten_dark_cells_on_ninety_light_ones() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let device = backend.device().unwrap();
            let out = run_named(LISTINGS, "qkv-eye", &device);
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

    /// d2l zh §10.1.1's two cues: five objects, the cup alone red; the
    /// gaze goes to the cup in the first diagram, to the book in the second.
    #[test]
    fn the_cues_point_the_eye_at_the_red_cup_then_at_the_book() {
        let out = run_named(LISTINGS, "qkv-cues", &Device::flex());
        let [(coffee, first), (book, second)] = out.figures() else {
            panic!("two figures expected")
        };
        assert_eq!(
            (coffee.as_str(), book.as_str()),
            ("qkv-cue-coffee", "qkv-cue-book")
        );
        for (svg, target) in [(first, "coffee"), (second, "book")] {
            let svg = svg.as_str();
            // One red object, the third box: the cup.
            assert_eq!(count(svg, "fill=\"#F27D72\""), 1, "one red object");
            assert!(svg.contains(
                "<rect x=\"300\" y=\"120\" width=\"120\" height=\"52\" opacity=\"1\" fill=\"#F27D72\""
            ));
            for name in ["newspaper", "research", "coffee", "notebook", "book"]
            {
                assert!(svg.contains(&format!(">\n{name}\n</text>")), "{name}");
            }
            assert_eq!(count(svg, "<polyline"), 1, "one arrow");
            // The arrow runs from the eye's bottom (360, 56) to the top
            // of the object looked at (the cup's middle is at x 360, the
            // book's at 640).
            let end = if target == "coffee" {
                "360,120"
            } else {
                "640,120"
            };
            assert!(svg.contains(&format!("360,56 {end}")), "{target}: {svg}");
        }
    }

    /// d2l en §11.1, exercise 2: every entry of autodiff's Jacobian, one
    /// backward pass per output component, equals the keys' covariance
    /// under the attention weights, for several sizes and seeds; the
    /// covariance is not trivially small.
    #[test]
    fn the_gradient_of_dot_product_pooling_is_the_keys_covariance() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let device = backend.device().unwrap().autodiff();
            for (seed, m, d) in [(0, 5, 3), (1, 8, 4), (2, 3, 6), (3, 12, 2)] {
                let query = randn([d], seed, &device);
                let keys = randn([m, d], seed + 100, &device);
                let jacobian = pooling_jacobian(&query, &keys);
                let covariance = key_covariance(&query, &keys);
                let mut largest = 0.0f64;
                for (j, (a, b)) in jacobian.iter().zip(&covariance).enumerate()
                {
                    for (l, (x, y)) in a.iter().zip(b).enumerate() {
                        assert!(
                            (x - y).abs() < 1e-5,
                            "{backend}, seed {seed}: [{j}][{l}] {x} vs {y}"
                        );
                        largest = largest.max(y.abs());
                    }
                }
                assert!(largest > 0.01, "{backend}, seed {seed}: {largest}");
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
            let out = run_named(LISTINGS, "qkv-softmax-rows", &device);
            let first: Vec<&str> = out.text().lines().take(3).collect();
            assert_eq!(
                first.join("\n"),
                format!("row sums:\n{}", format_wrapped(&[1.0; 10], 4, 5))
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
