//! The library behind *Attention Mechanisms in Rust*, an executable retelling
//! of the attention chapter of *Dive into Deep Learning* (d2l; zh v2 ch. 10,
//! en v1 ch. 11) on [burn](https://burn.dev).
//!
//! One module per book section holds that section's reusable pieces (what
//! d2l marks `#@save`); [`listings`] holds the code the pages show, one file
//! per chapter, built on them. [`plot()`] draws the figures and [`device`]
//! turns a reader's backend choice into a [`burn::tensor::Device`].
//!
//! # Errors and panics
//!
//! The crate follows burn's policy. A forward pass (of a layer, a loss or a
//! model) **panics** when it is misused: a tensor of the wrong shape, or a
//! valid length past the number of keys. The message names the argument
//! and gives its shape, e.g. ``"`keys` has shape [2, 10, 3], expected
//! vectors of size 2 (dimension 2)"``. What reads or writes files, or checks
//! data and settings a reader supplies (the corpus, a model file, a
//! training configuration), returns a `Result` whose error names the file
//! or setting and keeps its cause as [`std::error::Error::source`].
//!
//! Valid lengths are checked once, where they are made:
//! [`attention_scoring::ValidLens`] is built from host values and keeps a
//! copy, so that forward passes and training steps never read a tensor back
//! from the device (the test `no_host_reads` proves it).
//!
//! # Features
//!
//! `native` (default) holds what only a native build has: the corpus's
//! download and the user cache folder, files written atomically, the
//! listings, the chapters that read their data from files (Fashion-MNIST,
//! pretraining), burn's capture device and PyTorch reader. Without it the
//! library builds for `wasm32-unknown-unknown`, as the book's widgets use
//! it. `tch` adds the libtorch backend.

pub mod attention_scoring;
pub mod bahdanau;
#[cfg(feature = "native")]
pub mod classify;
pub mod device;
pub mod efficient_attention;
#[cfg(feature = "native")]
pub mod fashion_mnist;
pub mod files;
pub mod kernels;
#[cfg(feature = "native")]
pub mod listings;
pub mod machine_translation;
pub mod masks;
pub mod memory;
pub mod multihead_attention;
pub mod nadaraya_watson;
pub mod performance;
pub mod plot;
pub mod positional_encoding;
#[cfg(feature = "native")]
pub mod pretraining;
pub mod printing;
pub mod random;
pub mod resnet;
pub mod rnn;
pub mod seq2seq;
pub mod transformer;
pub mod vit;
pub mod widgets;

pub use device::BackendChoice;
pub use plot::{Axes, Cmap, HeatmapOptions, Series, Svg, plot, show_heatmaps};
