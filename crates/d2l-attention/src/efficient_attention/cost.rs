//! What one call of attention costs in memory: d2l's form against the fused
//! operation, each measured in a fresh process of the running program (as
//! the benchmark suite measures its items), so that memory an earlier
//! computation freed, and the allocator kept, cannot hide a call's own.

use std::fmt;
use std::str::FromStr;

use anyhow::{Context, bail};
use burn::nn::DropoutConfig;
use burn::tensor::{Device, Distribution, Tensor};

use crate::BackendChoice;
use crate::attention_scoring::DotProductAttentionConfig;
use crate::kernels::{AttentionMask, attention};
use crate::memory::peak_bytes;

/// One of the two ways the chapter computes attention without a mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// d2l's: the (n_q × n_k) weights (`DotProductAttention::weights`),
    /// then their product with the values.
    D2l,
    /// The library's fused operation ([`attention`]): blocks of scores only.
    Fused,
}

impl Form {
    /// Attention of `queries` (heads, n_q, d) over `keys` (heads, n_k, d)
    /// and `values` (heads, n_k, v) in this form: (heads, n_q, v).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::efficient_attention::Form;
    ///
    /// let x = Tensor::<3>::from_data([[[1.0, 0.0], [0.0, 1.0]]], &Device::flex());
    /// let [a, b] = [Form::D2l, Form::Fused]
    ///     .map(|f| f.attend(x.clone(), x.clone(), x.clone()));
    /// let gap = (a - b).abs().max().into_scalar::<f32>();
    /// assert!(gap < 1e-6);
    /// ```
    pub fn attend(
        self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
    ) -> Tensor<3> {
        match self {
            Form::D2l => DotProductAttentionConfig::new()
                .init()
                .weights(queries, keys, None)
                .matmul(values),
            Form::Fused => {
                let heads = |x: Tensor<3>| x.unsqueeze_dim::<4>(0);
                let no_dropout = DropoutConfig::new(0.0).init();
                let (q, k, v) = (heads(queries), heads(keys), heads(values));
                attention(q, k, v, AttentionMask::None, &no_dropout)
                    .squeeze_dim(0)
            }
        }
    }
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Form::D2l => "d2l",
            Form::Fused => "fused",
        })
    }
}

impl FromStr for Form {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "d2l" => Ok(Form::D2l),
            "fused" => Ok(Form::Fused),
            _ => bail!("unknown form `{s}`: expected `d2l` or `fused`"),
        }
    }
}

/// The argument that starts a program as [`peak_in_fresh_process`]'s
/// measurement (see [`serve_peak_request`]).
pub const PEAK_FLAG: &str = "--attention-peak";

/// Peak bytes ([`peak_bytes`]) of one call of `form` on `heads` random
/// sequences of `n` queries, keys and values of `d` features, on
/// `backend`, measured in a fresh process of the running program, which
/// must answer [`serve_peak_request`] first thing in its `main` (the
/// book's listing runner does).
///
/// # Errors
/// When the program cannot be started, or its measurement fails (its
/// error is passed on), or it prints no number.
pub fn peak_in_fresh_process(
    form: Form,
    [heads, n, d]: [usize; 3],
    backend: BackendChoice,
) -> anyhow::Result<u64> {
    let program = std::env::current_exe()?;
    let args = [form.to_string(), heads.to_string(), n.to_string()];
    let output = std::process::Command::new(&program)
        .arg(PEAK_FLAG)
        .args(args)
        .args([d.to_string(), backend.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("starting {}", program.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{} {PEAK_FLAG} failed (its error is above)",
            program.display()
        );
    }
    text.trim()
        .parse()
        .with_context(|| format!("{PEAK_FLAG} printed `{}`", text.trim()))
}

/// When this program was started by [`peak_in_fresh_process`] (its first
/// argument is [`PEAK_FLAG`]): measures, prints the bytes and returns
/// `Some` of the outcome, for `main` to exit with; otherwise `None`.
pub fn serve_peak_request() -> Option<anyhow::Result<()>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    (args.first().map(String::as_str) == Some(PEAK_FLAG))
        .then(|| measure(&args[1..]))
}

fn measure(args: &[String]) -> anyhow::Result<()> {
    let [form, heads, n, d, backend] = args else {
        bail!("{PEAK_FLAG} FORM HEADS N D BACKEND: got {args:?}");
    };
    let form: Form = form.parse()?;
    let [heads, n, d] = [heads, n, d].map(|x| x.parse::<usize>());
    let (heads, n, d) = (heads?, n?, d?);
    let device = backend.parse::<BackendChoice>()?.device()?;
    device.seed(1);
    let input = |n: usize| -> Tensor<3> {
        Tensor::random([heads, n, d], Distribution::Normal(0.0, 1.0), &device)
    };
    let sync = |device: &Device| device.sync().expect("the device computes");
    // a call on 8 tokens first starts the threads (stacks, allocator
    // arenas), which are not the call's own memory
    drop(form.attend(input(8), input(8), input(8)));
    sync(&device);
    let (q, k, v) = (input(n), input(n), input(n));
    let bytes = peak_bytes(|| {
        let output = form.attend(q, k, v);
        sync(&device);
        drop(output);
    })?;
    println!("{bytes}");
    Ok(())
}
