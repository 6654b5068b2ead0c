//! The benchmark suite's items and results: what `cargo bench --bench
//! suite` measures, on our side and in PyTorch running d2l's code, and the
//! ratio table and figure the Performance appendix shows of a dated run.
//!
//! Every figure is in seconds per operation (per target token for the
//! translation trainings, per training image for the ViT's); a ratio is
//! PyTorch's seconds over ours, so above 1 ours is faster. Products count
//! 2·m·n·k FLOPs, and a backward pass twice its forward pass; attention
//! counts its dense products, also where valid lengths or a causal mask
//! let a fused kernel skip part of them (the nominal count).

use plotters::style::RGBColor;
use serde::{Deserialize, Serialize};

use crate::plot::{LineStyle, Scale, TAB10};
use crate::{Axes, Series, Svg, plot};

/// How an item's figure reads best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Billions of FLOPs per second (matrix products).
    Gflops,
    /// Milliseconds per call.
    Millis,
    /// Microseconds per call.
    Micros,
    /// Target tokens trained on per second (d2l's `train_seq2seq` figure).
    TokensPerSec,
    /// Training images per second (an image classifier's training).
    ImagesPerSec,
}

impl Unit {
    /// `seconds` per operation of `flops` FLOPs in this unit.
    fn value(self, seconds: f64, flops: Option<f64>) -> f64 {
        match self {
            Unit::Gflops => flops.unwrap_or(f64::NAN) / seconds / 1e9,
            Unit::Millis => seconds * 1e3,
            Unit::Micros => seconds * 1e6,
            Unit::TokensPerSec | Unit::ImagesPerSec => 1.0 / seconds,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Gflops => "GFLOP/s",
            Unit::Millis => "ms",
            Unit::Micros => "µs",
            Unit::TokensPerSec => "tokens/s",
            Unit::ImagesPerSec => "images/s",
        }
    }
}

/// One item of the suite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Item {
    /// Its id on both sides (`benches/suite.rs`, `python/bench_pytorch.py`).
    pub id: &'static str,
    /// What the table calls it.
    pub title: &'static str,
    /// FLOPs of one operation, for the items whose cost is mostly products.
    pub flops: Option<f64>,
    /// How the table shows it.
    pub unit: Unit,
}

/// 2·m·n·k: the FLOPs of an (m × k) by (k × n) product.
const fn product(m: usize, k: usize, n: usize) -> f64 {
    2.0 * (m * k * n) as f64
}

/// Scaled dot-product attention's two batched products: scores (n × d by
/// d × n) and the weighted values (n × n by n × d), for `batch` matrices.
const fn attention(batch: usize, n: usize, d: usize) -> f64 {
    2.0 * batch as f64 * product(n, d, n)
}

/// d2l's multi-head attention forward: four projections of
/// (batch·steps × hidden) by (hidden × hidden), and the heads' attention.
const fn multihead(
    batch: usize,
    steps: usize,
    hidden: usize,
    heads: usize,
) -> f64 {
    4.0 * product(batch * steps, hidden, hidden)
        + attention(batch * heads, steps, hidden / heads)
}

/// The suite's items, in the order of its table (new items go last, so
/// that a run's numbers keep their meaning).
pub const ITEMS: [Item; 13] = [
    Item {
        id: "gemm_square",
        title: "f32 GEMM 2048³",
        flops: Some(product(2048, 2048, 2048)),
        unit: Unit::Gflops,
    },
    Item {
        id: "gemm_proj",
        title: "f32 GEMM 4096×512 · 512×512",
        flops: Some(product(4096, 512, 512)),
        unit: Unit::Gflops,
    },
    Item {
        id: "sdpa_demo",
        title: "attention fwd, d2l's demo",
        flops: None,
        unit: Unit::Micros,
    },
    Item {
        id: "sdpa",
        title: "attention fwd (256, 128, 64)",
        flops: Some(attention(256, 128, 64)),
        unit: Unit::Millis,
    },
    Item {
        id: "mha_fwd",
        title: "multi-head fwd (32,128,512,8)",
        flops: Some(multihead(32, 128, 512, 8)),
        unit: Unit::Millis,
    },
    Item {
        id: "mha_fwd_bwd",
        title: "multi-head fwd + bwd",
        flops: Some(3.0 * multihead(32, 128, 512, 8)),
        unit: Unit::Millis,
    },
    Item {
        id: "nw_epoch",
        title: "parametric NW, one epoch",
        flops: None,
        unit: Unit::Micros,
    },
    Item {
        id: "bahdanau",
        title: "Bahdanau training",
        flops: None,
        unit: Unit::TokensPerSec,
    },
    Item {
        id: "transformer",
        title: "Transformer training",
        flops: None,
        unit: Unit::TokensPerSec,
    },
    Item {
        id: "vit",
        title: "ViT training, Fashion-MNIST",
        flops: None,
        unit: Unit::ImagesPerSec,
    },
    Item {
        id: "sdpa_fwd_bwd",
        title: "attention fwd + bwd",
        flops: Some(3.0 * attention(256, 128, 64)),
        unit: Unit::Millis,
    },
    Item {
        id: "sdpa_long_fwd",
        title: "attention fwd, 4,096 causal",
        flops: Some(attention(8, 4096, 64)),
        unit: Unit::Millis,
    },
    Item {
        id: "sdpa_long_fwd_bwd",
        title: "attention 4,096 fwd + bwd",
        flops: Some(3.0 * attention(8, 4096, 64)),
        unit: Unit::Millis,
    },
];

/// The items whose peak memory the suite measures (`suite --memory`).
pub const MEMORY_ITEMS: [&str; 2] = ["sdpa_long_fwd", "sdpa_long_fwd_bwd"];

/// The item with this id.
///
/// # Examples
/// ```
/// use d2l_attention::performance::item;
///
/// assert_eq!(item("sdpa").unwrap().flops, Some(2.0 * 256.0 * 2.0 * 128.0 * 64.0 * 128.0));
/// assert!(item("gemm").is_none());
/// ```
pub fn item(id: &str) -> Option<&'static Item> {
    ITEMS.iter().find(|i| i.id == id)
}

/// One item on one of our backends, with PyTorch's figure of the same
/// round: seconds per operation, one entry per round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The item's id.
    pub item: String,
    /// Our backend (`flex`, `libtorch`, …).
    pub backend: String,
    /// Our seconds per operation, round by round.
    pub ours: Vec<f64>,
    /// PyTorch's, on the same kind of device, the same rounds.
    pub pytorch: Vec<f64>,
    /// PyTorch's fused kernel on the same problem, the same rounds (the
    /// scaled dot-product items; empty for the others and in older runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pytorch_fused: Vec<f64>,
    /// The kernel PyTorch's profiler saw run there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pytorch_fused_backend: Option<String>,
    /// Peak memory of one call ([`MEMORY_ITEMS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bytes: Option<PeakBytes>,
}

/// Peak memory of one call of an item, in bytes: each process's VmHWM
/// after the call minus its VmRSS before it, the high-water mark reset
/// first (`/proc/self/clear_refs`), one process per item and side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeakBytes {
    /// Ours (the library's fused operation).
    pub ours: u64,
    /// Our d2l-form operation (`masked_softmax`, then the product).
    pub ours_unfused: u64,
    /// d2l's code in PyTorch.
    pub pytorch: u64,
    /// PyTorch's fused kernel.
    pub pytorch_fused: u64,
}

impl Measured {
    /// PyTorch's seconds over ours, round by round.
    pub fn ratios(&self) -> Vec<f64> {
        self.pytorch
            .iter()
            .zip(&self.ours)
            .map(|(p, o)| p / o)
            .collect()
    }
}

/// A run of the suite: where and how it ran, and every figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The day it ran (YYYY-MM-DD).
    pub date: String,
    /// The commit it ran on.
    pub commit: String,
    /// The CPU's model name and the vector extensions that matter here.
    pub cpu: String,
    /// The CPU's vendor, family and model numbers and cache sizes (empty
    /// in older runs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_id: String,
    /// The GPU both sides ran on, for a run on one.
    #[serde(default)]
    pub gpu: Option<String>,
    /// Threads on both sides (rayon's pool; `torch.set_num_threads`).
    pub threads: usize,
    /// burn's version.
    pub burn: String,
    /// PyTorch's version.
    pub torch: String,
    /// Alternating rounds (ours, then PyTorch, item by item).
    pub rounds: usize,
    /// Untimed runs before the timed ones.
    pub warmup: usize,
    /// Timed runs per item and round; the figure is their median.
    pub runs: usize,
    /// Epochs per training (the first is the warm-up).
    pub epochs: usize,
    /// The figures.
    pub results: Vec<Measured>,
}

/// The median of `values` (the mean of the middle two for an even count),
/// as Python's `statistics.median`: the one both sides of the suite use.
///
/// # Panics
/// When `values` is empty.
///
/// # Examples
/// ```
/// use d2l_attention::performance::median;
///
/// assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
/// ```
pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "`values` is empty: no median");
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median over `runs` timed runs, after `warmup` untimed ones, of the
/// seconds one call of `f` takes; each run makes `reps` calls, then calls
/// `sync` once (to wait for a device that computes asynchronously). The
/// suite times every item of ours with it, and the chapters their timings.
///
/// # Panics
/// When `runs` or `reps` is 0.
///
/// # Examples
/// ```
/// use d2l_attention::performance::median_seconds;
///
/// let seconds = median_seconds(
///     (1, 3, 2),
///     || std::thread::sleep(std::time::Duration::from_millis(2)),
///     || {},
/// );
/// assert!(seconds >= 0.002, "{seconds}");
/// ```
pub fn median_seconds(
    (warmup, runs, reps): (usize, usize, usize),
    mut f: impl FnMut(),
    sync: impl Fn(),
) -> f64 {
    assert!(reps > 0, "`reps` is 0: nothing to time");
    let mut run = || {
        let start = std::time::Instant::now();
        (0..reps).for_each(|_| f());
        sync();
        start.elapsed().as_secs_f64() / reps as f64
    };
    (0..warmup).for_each(|_| {
        run();
    });
    let times: Vec<f64> = (0..runs).map(|_| run()).collect();
    median(&times)
}

impl Run {
    /// The backends measured, in the order first met.
    pub fn backends(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for m in &self.results {
            if !seen.contains(&m.backend.as_str()) {
                seen.push(&m.backend);
            }
        }
        seen
    }

    fn find(&self, id: &str, backend: &str) -> Option<&Measured> {
        self.results
            .iter()
            .find(|m| m.item == id && m.backend == backend)
    }

    /// The ratio table: for each backend, each item's figure in PyTorch and
    /// ours (the median over the rounds of each round's figure, so the mean
    /// of two rounds) and each round's ratio; then each
    /// product-heavy item's FLOP rate as a share of the same side's GEMM
    /// rate at 2048³; then, where the run has them, PyTorch's fused kernel
    /// against ours and the peak memory of one call. Lines fit 80 columns
    /// for up to three rounds.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::performance::{Measured, Run};
    ///
    /// let run = Run {
    ///     date: "2026-12-02".into(), commit: "abc1234".into(), cpu: "CPU".into(),
    ///     cpu_id: String::new(), gpu: None,
    ///     threads: 2, burn: "0.22.1".into(), torch: "2.9.0".into(),
    ///     rounds: 2, warmup: 2, runs: 7, epochs: 20,
    ///     results: vec![Measured {
    ///         item: "sdpa".into(), backend: "flex".into(),
    ///         ours: vec![0.010, 0.020], pytorch: vec![0.020, 0.020],
    ///         pytorch_fused: vec![0.010, 0.010],
    ///         pytorch_fused_backend: Some("flash".into()), peak_bytes: None,
    ///     }],
    /// };
    /// let table = run.table();
    /// // 15 ms ours (the median of two rounds), 20 ms PyTorch's; ratios 2 and 1.
    /// assert!(table.contains("attention fwd (256, 128, 64)   ms"), "{table}");
    /// assert!(table.contains("20.00    15.00  2.00 1.00"), "{table}");
    /// // PyTorch's fused kernel: 10 ms, ratios 1 and 0.5.
    /// assert!(table.contains("10.00    15.00  1.00 0.50"), "{table}");
    /// assert!(table.contains("(PyTorch ran flash)"), "{table}");
    /// ```
    pub fn table(&self) -> String {
        let gpu = self
            .gpu
            .as_ref()
            .map_or(String::new(), |g| format!("GPU: {g}\n"));
        let cpu_id = match self.cpu_id.as_str() {
            "" => String::new(),
            id => format!("     {id}\n"),
        };
        let mut out = format!(
            "{}, commit {}, {} threads on each side\nCPU: {}\n{cpu_id}{gpu}\
             burn {} against PyTorch {} running d2l's code, in turns,\n\
             {} × each item; each figure the median of {} runs after {} \
             warm-up runs\n(trainings: of {} epochs after the first)\n",
            self.date,
            self.commit,
            self.threads,
            self.cpu,
            self.burn,
            self.torch,
            self.rounds,
            self.runs,
            self.warmup,
            self.epochs.saturating_sub(1)
        );
        for backend in self.backends() {
            out += &format!(
                "\nours on {backend}:\n {:<2} {:<30} {:<8} {:>8} {:>8}  ratio\n",
                "#", "item", "unit", "PyTorch", "ours"
            );
            for (i, item) in ITEMS.iter().enumerate() {
                let Some(m) = self.find(item.id, backend) else {
                    continue;
                };
                out += &ratio_line(i, item, &m.pytorch, &m.ours);
            }
        }
        out + &self.gemm_shares() + &self.fused() + &self.memory()
    }

    /// Each item measured against PyTorch's fused kernel: its figure and
    /// ours, and each round's ratio, per backend, with the kernels seen.
    fn fused(&self) -> String {
        let mut out = String::new();
        for backend in self.backends() {
            let rows: Vec<_> = ITEMS
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let m = self.find(item.id, backend)?;
                    (!m.pytorch_fused.is_empty()).then_some((i, item, m))
                })
                .collect();
            if rows.is_empty() {
                continue;
            }
            out += &format!(
                "\nPyTorch's fused kernel, ours on {backend}:\n {:<2} {:<30} \
                 {:<8} {:>8} {:>8}  ratio\n",
                "#", "item", "unit", "fused", "ours"
            );
            let mut kernels: Vec<&str> = Vec::new();
            for (i, item, m) in rows {
                out += &ratio_line(i, item, &m.pytorch_fused, &m.ours);
                let kernel = m.pytorch_fused_backend.as_deref();
                if let Some(k) = kernel.filter(|k| !kernels.contains(k)) {
                    kernels.push(k);
                }
            }
            out += &format!(" (PyTorch ran {})\n", kernels.join(", "));
        }
        out
    }

    /// The peak memory of one call of each item that measured it, in MiB:
    /// ours fused and unfused, d2l's code and the fused kernel in PyTorch.
    fn memory(&self) -> String {
        let mut out = String::new();
        for backend in self.backends() {
            let rows: Vec<_> = ITEMS
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let peak = self.find(item.id, backend)?.peak_bytes?;
                    Some((i, item, peak))
                })
                .collect();
            if rows.is_empty() {
                continue;
            }
            out += &format!(
                "\npeak memory of one call (MiB; VmHWM after minus VmRSS \
                 before), ours on {backend}:\n {:<2} {:<30} {:>8} {:>8} \
                 {:>8} {:>8}\n",
                "#", "item", "ours", "unfused", "d2l", "fused"
            );
            let mib = |b: u64| figure(b as f64 / (1u64 << 20) as f64);
            for (i, item, p) in rows {
                out += &format!(
                    " {:<2} {:<30} {:>8} {:>8} {:>8} {:>8}\n",
                    i + 1,
                    item.title,
                    mib(p.ours),
                    mib(p.ours_unfused),
                    mib(p.pytorch),
                    mib(p.pytorch_fused)
                );
            }
        }
        out
    }

    /// Each product-heavy item's FLOP rate as a share of its side's GEMM
    /// rate at 2048³ (item 1, the reference; a product of another shape
    /// may run faster), per backend.
    fn gemm_shares(&self) -> String {
        let Some(gemm) = item("gemm_square") else {
            return String::new();
        };
        let mut out = String::new();
        for backend in self.backends() {
            let Some(ceiling) = self.find(gemm.id, backend) else {
                continue;
            };
            out += &format!(
                "\nshare of the reference GEMM rate (item 1; GFLOP: the \
                 nominal dense count),\nours on {backend}:\n {:<2} {:<30} \
                 {:>8} {:>8} {:>8}\n",
                "#", "item", "GFLOP", "PyTorch", "ours"
            );
            for (i, item) in ITEMS.iter().enumerate().skip(1) {
                let (Some(flops), Some(m)) =
                    (item.flops, self.find(item.id, backend))
                else {
                    continue;
                };
                // seconds of the ceiling's FLOPs / seconds of these FLOPs
                let share = |s: &[f64], c: &[f64]| {
                    let rate = flops / median(s);
                    let ceiling = gemm.flops.unwrap_or(f64::NAN) / median(c);
                    format!("{:.0} %", 100.0 * rate / ceiling)
                };
                out += &format!(
                    " {:<2} {:<30} {:>8.2} {:>8} {:>8}\n",
                    i + 1,
                    item.title,
                    flops / 1e9,
                    share(&m.pytorch, &ceiling.pytorch),
                    share(&m.ours, &ceiling.ours)
                );
            }
        }
        out
    }

    /// The ratios as a figure: one point per item and round for each
    /// backend, on a log axis, with the line where both sides are equally
    /// fast; x is the item's number in [`Run::table`], each (backend,
    /// round) set a little apart from the others around it. The axis ends
    /// at the last item the run measured, so that a run made before items
    /// were added at the end draws as it did.
    ///
    /// # Errors
    /// When the run holds no figures (nothing to draw).
    pub fn figure(&self) -> Result<Svg, crate::plot::PlotError> {
        let mut series = Vec::new();
        let backends = self.backends();
        let rounds = self.results.iter().map(|m| m.ratios().len()).max();
        // Each (backend, round) has a place of its own beside the item's
        // number, so that no two points of an item cover each other.
        let slots = backends.len() * rounds.unwrap_or(1);
        let spacing = (0.7 / slots as f64).min(0.2);
        let offset =
            |slot: usize| (slot as f64 - (slots - 1) as f64 / 2.0) * spacing;
        let shown = ITEMS
            .iter()
            .rposition(|item| self.results.iter().any(|m| m.item == item.id))
            .map_or(ITEMS.len(), |last| last + 1);
        for (b, backend) in backends.iter().enumerate() {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            for (i, item) in ITEMS.iter().enumerate() {
                let ratios =
                    self.find(item.id, backend).map_or(vec![], |m| m.ratios());
                for (round, r) in ratios.into_iter().enumerate() {
                    x.push(
                        (i + 1) as f64
                            + offset(b * rounds.unwrap_or(1) + round),
                    );
                    y.push(r);
                }
            }
            let color = COLORS[series.len() % COLORS.len()];
            series.push(Series::points(&x, &y).label(backend).color(color));
        }
        let n = shown as f64;
        series.push(
            Series::line(&[0.5, n + 0.5], &[1.0, 1.0])
                .label("as fast as PyTorch")
                .style(LineStyle::Dashed)
                .color(RGBColor(0x55, 0x55, 0x55)),
        );
        let ratios = self.results.iter().flat_map(Measured::ratios);
        let (lo, hi) =
            ratios.fold((1.0f64, 1.0f64), |(lo, hi), r| (lo.min(r), hi.max(r)));
        let items: Vec<f64> = (1..=shown).map(|i| i as f64).collect();
        let axes = Axes::new(
            "item (as numbered in the table)",
            "PyTorch's time / ours",
        )
        .xlim(0.5, n + 0.5)
        .xticks(&items)
        .ylim(step_125(lo, true), step_125(hi, false))
        .yscale(Scale::Log)
        .figsize(6.0, 3.0);
        plot(&series, &axes)
    }
}

/// A line of a ratio table: item `i`'s number, title and unit, their
/// figure and ours (medians over the rounds), and each round's ratio.
fn ratio_line(i: usize, item: &Item, theirs: &[f64], ours: &[f64]) -> String {
    let value = |s: &[f64]| item.unit.value(median(s), item.flops);
    let ratios: Vec<String> = theirs
        .iter()
        .zip(ours)
        .map(|(t, o)| format!("{:.2}", t / o))
        .collect();
    format!(
        " {:<2} {:<30} {:<8} {:>8} {:>8}  {}\n",
        i + 1,
        item.title,
        item.unit.name(),
        figure(value(theirs)),
        figure(value(ours)),
        ratios.join(" ")
    )
}

/// The backends' colours in the figure: matplotlib's first three.
const COLORS: [RGBColor; 3] = [TAB10[0], TAB10[1], TAB10[2]];

/// A figure with four significant digits (no more than two decimals).
fn figure(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 2) as usize;
    format!("{v:.decimals$}")
}

/// The nearest of …, 0.5, 1, 2, 5, 10, … at or below `v` (`below`) or at
/// or above it: an end for a log axis that falls on one of its ticks.
fn step_125(v: f64, below: bool) -> f64 {
    let e = v.log10().floor() as i32;
    let mut steps = (e - 1..=e + 1)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)));
    let close = |s: f64| (s - v).abs() <= 1e-9 * v;
    let found = if below {
        steps.rev().find(|&s| s <= v || close(s))
    } else {
        steps.find(|&s| s >= v || close(s))
    };
    found.unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flop_counts_follow_two_m_n_k() {
        let flops = |id| item(id).unwrap().flops.unwrap();
        assert_eq!(flops("gemm_square"), 2.0 * 2048f64.powi(3));
        assert_eq!(flops("gemm_proj"), 2.0 * 4096.0 * 512.0 * 512.0);
        // Four 4096 × 512 by 512 × 512 projections, and 256 heads'
        // attention of 128 queries over 128 keys of 64 features.
        let heads = 2.0 * 256.0 * 2.0 * 128.0 * 64.0 * 128.0;
        assert_eq!(flops("mha_fwd"), 4.0 * flops("gemm_proj") + heads);
        assert_eq!(flops("mha_fwd_bwd"), 3.0 * flops("mha_fwd"));
    }

    #[test]
    fn ids_are_unique_and_titles_fit_the_table() {
        for (i, a) in ITEMS.iter().enumerate() {
            assert!(a.title.chars().count() <= 30, "{}", a.title);
            assert!(ITEMS[i + 1..].iter().all(|b| b.id != a.id), "{}", a.id);
        }
    }

    #[test]
    fn the_pytorch_script_has_the_same_items() {
        let script = include_str!("../python/bench_pytorch.py");
        let table = &script[script.find("ITEMS = {").unwrap()..];
        let table = &table[..table.find('}').unwrap()];
        let ids: Vec<&str> = table
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
            .collect();
        assert_eq!(ids, ITEMS.map(|i| i.id));
    }

    /// No two points of the appendix's figure cover each other (they are
    /// 3 px in radius), across backends and rounds.
    #[test]
    fn the_figure_s_points_stand_apart() {
        let run: Run = serde_json::from_str(include_str!(
            "../benches/reports/2026-12-02-tuned-suite.json"
        ))
        .unwrap();
        let svg = run.figure().unwrap().as_str().to_owned();
        let attr = |c: &str, name: &str| -> f64 {
            let at = c.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            c[at..].split('"').next().unwrap().parse().unwrap()
        };
        let points: Vec<(f64, f64)> = svg
            .split("<circle")
            .filter(|c| c.contains("r=\"3\"><title>"))
            .map(|c| (attr(c, "cx"), attr(c, "cy")))
            .collect();
        assert_eq!(points.len(), 36);
        for (i, a) in points.iter().enumerate() {
            for b in &points[i + 1..] {
                let d = (a.0 - b.0).hypot(a.1 - b.1);
                assert!(d >= 6.0, "points at {a:?} and {b:?}, {d:.1} px apart");
            }
        }
    }

    #[test]
    fn log_axis_ends_fall_on_one_two_five() {
        assert_eq!(step_125(0.6, true), 0.5);
        assert_eq!(step_125(1.0, true), 1.0);
        assert_eq!(step_125(0.99, true), 0.5);
        assert_eq!(step_125(18.9, false), 20.0);
        assert_eq!(step_125(2.0, false), 2.0);
        assert_eq!(step_125(2.3, false), 5.0);
    }

    #[test]
    fn units_convert_seconds() {
        assert_eq!(Unit::Gflops.value(0.5, Some(2e9)), 4.0);
        assert_eq!(Unit::Millis.value(0.25, None), 250.0);
        assert_eq!(Unit::TokensPerSec.value(0.001, None), 1000.0);
        assert_eq!(Unit::ImagesPerSec.value(0.0025, None), 400.0);
        assert_eq!(Unit::ImagesPerSec.name(), "images/s");
        assert_eq!(figure(1234.567), "1235");
        assert_eq!(figure(12.3456), "12.35");
        assert_eq!(figure(0.5), "0.50");
        assert_eq!(figure(0.0), "0");
    }
}
