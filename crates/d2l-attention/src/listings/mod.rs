//! The book's listings: the code its pages show, one file per chapter, run
//! to make the figures and printed output (d2l's cells that are not
//! `#@save`d; the reusable code they call lives in the library modules).
//!
//! A listing is a function whose body the chapter pulls in between
//! `// ANCHOR: name` and `// ANCHOR_END: name`, registered with one line in
//! its chapter's `LISTINGS` table. It writes what it
//! prints into an [`Output`] (`writeln!(out, …)`) and hands over its figures;
//! the book's listing runner (`listing-runner`) saves them under `figures/`
//! as `<name>.txt` and `<figure>.svg`, and the tests compare them with what
//! the code produces now.

use std::fmt;

use burn::tensor::Device;

use crate::Svg;

pub mod bahdanau;
pub mod bahdanau_exercises;
pub mod efficient;
pub mod multihead;
pub mod nw;
pub mod performance;
pub mod pretraining;
pub mod pretraining_scaling;
pub mod qkv;
pub mod scoring;
pub mod self_attention;
pub mod transformer;
pub mod transformer_exercises;
pub mod transformer_training;
pub mod vit;
pub mod vit_exercises;
pub mod vit_training;

/// The book's committed trained models: `models/` under the book's
/// `root` ([`Output::root`]). The translation chapters' trainings save
/// there (so a rerun changes the committed file, as it changes the
/// figures), their other listings and the book's widgets load from there.
pub fn models_dir(root: &std::path::Path) -> std::path::PathBuf {
    root.join("models")
}

/// The book's root (the workspace) this library was compiled in. The
/// listing runner compares it with the root it is asked to work on, to
/// stop when cargo reused a build of another checkout (a shared
/// `CARGO_TARGET_DIR`); no listing finds a file through it: they use
/// [`Output::root`].
pub const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// A chapter's trained model for `data`, built by `init` from `config`, in
/// inference mode (`valid()`): loaded from `path` when the file there was
/// made for that configuration and data's vocabularies, else trained
/// first by `train` (which saves it there) and then loaded.
///
/// # Errors
/// When the training fails, or the file it saved still does not load.
pub fn load_or_train<C: burn::config::Config, M: burn::module::Module>(
    (config, data): (&C, &crate::machine_translation::NmtData),
    path: &std::path::Path,
    init: impl Fn(&C) -> M,
    train: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<M> {
    use crate::seq2seq::{ModelInfo, load_model};
    let info = ModelInfo::new(config, &data.src_vocab, &data.tgt_vocab);
    let model = match load_model(init(config), &info, path) {
        Ok(model) => model,
        Err(err) => {
            eprintln!("{err}: training it again");
            train()?;
            load_model(init(config), &info, path)?
        }
    };
    Ok(model.valid())
}

/// The progress bar of a training listing, which also keeps its epochs.
pub struct Progress {
    bar: indicatif::ProgressBar,
    epochs: Vec<crate::seq2seq::Epoch>,
}

impl Progress {
    /// A bar for `num_epochs` epochs, on stderr.
    ///
    /// # Errors
    /// When indicatif rejects the bar's template.
    pub fn new(num_epochs: usize) -> anyhow::Result<Self> {
        let style = indicatif::ProgressStyle::with_template(
            "{bar:30} epoch {pos}/{len}, {msg}",
        )?;
        let bar =
            indicatif::ProgressBar::new(num_epochs as u64).with_style(style);
        Ok(Progress {
            bar,
            epochs: Vec::new(),
        })
    }

    /// Shows `epoch`'s loss and speed, and keeps it.
    pub fn epoch(&mut self, epoch: crate::seq2seq::Epoch) {
        self.bar.set_message(format!(
            "loss {:.3}, {:.0} tokens/s",
            epoch.loss,
            epoch.tokens_per_sec()
        ));
        self.bar.inc(1);
        self.epochs.push(epoch);
    }

    /// Clears the bar; returns the epochs seen.
    pub fn finish(self) -> Vec<crate::seq2seq::Epoch> {
        self.bar.finish_and_clear();
        self.epochs
    }
}

/// A listing's run: the device to compute on, and where its printed text
/// and figures go.
pub type RunFn = fn(&Device, &mut Output) -> anyhow::Result<()>;

/// One listing of the book.
#[derive(Clone, Copy)]
pub struct Listing {
    /// Its name: the stem of its captured text file `figures/<name>.txt`.
    pub name: &'static str,
    /// The source file that defines it (`file!()`): the book tool
    /// fingerprints it, and the library modules it uses, to know when the
    /// listing must run again.
    pub file: &'static str,
    /// How its committed outputs are checked.
    pub check: Check,
    /// The code.
    pub run: RunFn,
}

/// How the tests check a listing's committed outputs.
#[derive(Clone, Copy)]
pub enum Check {
    /// `cargo test` (and `listing-runner check`) run the listing again
    /// and compare what it prints and draws with the committed files, within
    /// the tolerance of f32 results on another machine.
    Compare,
    /// A long training whose exact outcome depends on the machine (the
    /// last digits of f32 sums steer which word greedy decoding picks): only
    /// `listing-runner check`, a release build, runs it, and instead of a
    /// comparison asserts these facts about its printed text, which hold on
    /// any machine. `cargo test` asserts them of the committed text.
    Facts(fn(&str) -> anyhow::Result<()>),
}

/// Every listing of the book, in reading order.
pub fn all() -> Vec<Listing> {
    [
        qkv::LISTINGS,
        nw::LISTINGS,
        scoring::LISTINGS,
        bahdanau::LISTINGS,
        bahdanau_exercises::LISTINGS,
        multihead::LISTINGS,
        self_attention::LISTINGS,
        transformer::LISTINGS,
        transformer_training::LISTINGS,
        transformer_exercises::LISTINGS,
        vit::LISTINGS,
        vit_training::LISTINGS,
        vit_exercises::LISTINGS,
        pretraining::LISTINGS,
        pretraining_scaling::LISTINGS,
        efficient::LISTINGS,
        performance::LISTINGS,
    ]
    .concat()
}

/// Runs the listing of `table` called `name` on `device`, for a chapter's
/// tests (which may not name `crate::listings`, or every chapter's listings
/// would count among their dependencies).
///
/// # Panics
/// When there is no such listing or it fails.
#[cfg(test)]
pub(crate) fn run_named(
    table: &[Listing],
    name: &str,
    device: &Device,
) -> Output {
    let listing = table.iter().find(|l| l.name == name).expect(name);
    let root = std::path::Path::new(BUILT_FROM);
    listing.execute(device, root).expect(name)
}

impl Listing {
    /// A listing defined in `file` (pass `file!()`) whose outputs the
    /// tests compare ([`Check::Compare`]).
    pub const fn new(
        name: &'static str,
        file: &'static str,
        run: RunFn,
    ) -> Self {
        Listing {
            name,
            file,
            check: Check::Compare,
            run,
        }
    }

    /// Runs the listing on `device` for the book at `root` (where it reads
    /// and saves files, see [`Output::root`]) and returns what it printed
    /// and drew.
    ///
    /// # Errors
    /// Whatever the listing's code returns, prefixed with the listing's name.
    pub fn execute(
        &self,
        device: &Device,
        root: &std::path::Path,
    ) -> anyhow::Result<Output> {
        let mut out = Output::new(root);
        (self.run)(device, &mut out).map_err(|e| {
            e.context(format!("listing `{}` failed", self.name))
        })?;
        Ok(out)
    }
}

/// What a listing printed and drew, and the book it runs for.
#[derive(Debug)]
pub struct Output {
    text: String,
    figures: Vec<(String, Svg)>,
    root: std::path::PathBuf,
}

impl fmt::Write for Output {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl Output {
    /// An empty output of a listing run for the book at `root`.
    pub fn new(root: &std::path::Path) -> Self {
        Output {
            text: String::new(),
            figures: Vec::new(),
            root: root.to_owned(),
        }
    }

    /// The book's root folder, as the runner was given it (or the tests
    /// found it): where a listing reads the book's files.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Hands over a figure, saved as `figures/<name>.svg`.
    pub fn figure(&mut self, name: &str, svg: Svg) {
        self.figures.push((name.to_owned(), svg));
    }

    /// The printed text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The figures, by name.
    pub fn figures(&self) -> &[(String, Svg)] {
        &self.figures
    }

    /// Every file this output becomes, as (file name, contents): the text as
    /// `<listing>.txt` when the listing printed something, each figure as
    /// `<figure>.svg`.
    pub fn files(&self, listing: &str) -> Vec<(String, &str)> {
        let text = (!self.text.is_empty())
            .then(|| (format!("{listing}.txt"), self.text.as_str()));
        let figures = self
            .figures
            .iter()
            .map(|(name, svg)| (format!("{name}.svg"), svg.as_str()));
        text.into_iter().chain(figures).collect()
    }
}
