//! The library behind *Attention Mechanisms in Rust*, an executable retelling
//! of the attention chapter of *Dive into Deep Learning* (d2l; zh v2 ch. 10,
//! en v1 ch. 11) on [burn](https://burn.dev).
//!
//! One module per book section holds that section's reusable pieces (what
//! d2l marks `#@save`); [`listings`] holds the code the pages show, one file
//! per chapter, built on them. [`plot()`] draws the figures and [`device`]
//! turns a reader's backend choice into a [`burn::tensor::Device`].

pub mod attention_scoring;
pub mod bahdanau;
pub mod device;
pub mod files;
pub mod listings;
pub mod machine_translation;
pub mod nadaraya_watson;
pub mod plot;
pub mod printing;
pub mod random;
pub mod rnn;
pub mod seq2seq;

pub use device::BackendChoice;
pub use plot::{Axes, Cmap, HeatmapOptions, Series, Svg, plot, show_heatmaps};
