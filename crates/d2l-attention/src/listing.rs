//! Listings: the code the book shows, run to make its figures and printed
//! output.
//!
//! A listing is a function of a chapter module whose body the chapter pulls
//! in between `// ANCHOR: name` and `// ANCHOR_END: name`. It writes what it
//! prints into an [`Output`] (`writeln!(out, …)`) and hands over its figures;
//! the book's preprocessor (`mdbook-listings`) saves them under `figures/`
//! as `<name>.txt` and `<figure>.svg`, and the tests compare them with what
//! the code produces now.

use std::fmt;

use burn::tensor::Device;
use sha2::{Digest, Sha256};

use crate::{Backend, Svg};

/// A listing's run: the device to compute on, and where its printed text
/// and figures go.
pub type RunFn = fn(&Device, &mut Output) -> anyhow::Result<()>;

/// One listing of the book.
#[derive(Clone, Copy)]
pub struct Listing {
    /// Its name: the stem of its captured text file `figures/<name>.txt`.
    pub name: &'static str,
    /// The text of the source files it depends on beyond [`COMMON_SOURCES`]
    /// (its chapter module, and modules of earlier chapters it uses).
    pub sources: &'static [&'static str],
    /// How its committed outputs are checked.
    pub check: Check,
    /// The code.
    pub run: RunFn,
}

/// How the tests check a listing's committed outputs.
#[derive(Clone, Copy)]
pub enum Check {
    /// `cargo test` (and `mdbook-listings check`) run the listing again
    /// and compare what it prints and draws with the committed files, within
    /// the tolerance of f32 results on another machine.
    Compare,
    /// A long training whose exact outcome depends on the machine (the
    /// last digits of f32 sums steer which word greedy decoding picks): only
    /// `mdbook-listings check`, a release build, runs it, and instead of a
    /// comparison asserts these facts about its printed text, which hold on
    /// any machine. `cargo test` asserts them of the committed text.
    Facts(fn(&str) -> anyhow::Result<()>),
}

/// Sources that every listing depends on: the shared library code, its
/// manifest and the lock file (so a dependency upgrade re-runs everything).
pub const COMMON_SOURCES: &[&str] = &[
    include_str!("lib.rs"),
    include_str!("data.rs"),
    include_str!("device.rs"),
    include_str!("files.rs"),
    include_str!("listing.rs"),
    include_str!("plot/mod.rs"),
    include_str!("plot/colormap.rs"),
    include_str!("plot/heatmap.rs"),
    include_str!("plot/lines.rs"),
    include_str!("../Cargo.toml"),
    include_str!("../../../Cargo.lock"),
];

/// Every listing of the book, in reading order.
pub fn all() -> Vec<Listing> {
    [
        crate::queries_keys_values::LISTINGS,
        crate::nadaraya_watson::LISTINGS,
        crate::attention_scoring::LISTINGS,
        crate::bahdanau::LISTINGS,
    ]
    .concat()
}

/// The listing called `name`, if the book has one.
pub fn by_name(name: &str) -> Option<Listing> {
    all().into_iter().find(|l| l.name == name)
}

impl Listing {
    /// A listing whose outputs the tests compare ([`Check::Compare`]).
    pub const fn new(name: &'static str, sources: &'static [&'static str], run: RunFn) -> Self {
        Listing {
            name,
            sources,
            check: Check::Compare,
            run,
        }
    }

    /// A content hash of everything this listing's outputs depend on: its
    /// name, the backend it runs on, [`COMMON_SOURCES`] and its own
    /// sources. Outputs made under the same fingerprint are up to date.
    pub fn fingerprint(&self, backend: Backend) -> String {
        let mut hash = Sha256::new();
        for part in [self.name, &backend.to_string()]
            .into_iter()
            .chain(COMMON_SOURCES.iter().copied())
            .chain(self.sources.iter().copied())
        {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part.as_bytes());
        }
        format!("{:x}", hash.finalize())
    }

    /// Runs the listing on `device` and returns what it printed and drew.
    ///
    /// # Errors
    /// Whatever the listing's code returns, prefixed with the listing's name.
    pub fn execute(&self, device: &Device) -> anyhow::Result<Output> {
        let mut out = Output::default();
        (self.run)(device, &mut out)
            .map_err(|e| e.context(format!("listing `{}` failed", self.name)))?;
        Ok(out)
    }
}

/// What a listing printed and drew.
#[derive(Default, Debug)]
pub struct Output {
    text: String,
    figures: Vec<(String, Svg)>,
}

impl fmt::Write for Output {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl Output {
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
        let text = (!self.text.is_empty()).then(|| (format!("{listing}.txt"), self.text.as_str()));
        let figures = self
            .figures
            .iter()
            .map(|(name, svg)| (format!("{name}.svg"), svg.as_str()));
        text.into_iter().chain(figures).collect()
    }
}
