//! A translation's attention maps drawn as the chapters draw them: one
//! figure per kind of attention, a grid of layers (rows) by heads
//! (columns), tokens on the axes, cut to the tokens that exist.

use burn::tensor::Tensor;

use super::{AttentionKind, Translation};
use crate::plot::PlotError;
use crate::{HeatmapOptions, Svg, show_heatmaps};

/// One drawn kind of attention of a [`Translation`].
#[derive(Clone, Debug)]
pub struct AttentionFigure {
    /// Which attention it shows.
    pub kind: AttentionKind,
    /// The number of layers (rows of the grid) and of heads (columns).
    pub grid: (usize, usize),
    /// The query tokens, one per row of a map.
    pub queries: Vec<String>,
    /// The key tokens, one per column of a map.
    pub keys: Vec<String>,
    /// The weights drawn, (layers, heads, queries, keys).
    pub weights: Tensor<4>,
    /// The figure.
    pub svg: Svg,
}

/// The attention maps of `t`, the translation of `source` (the
/// preprocessed sentence given to [`super::predict_seq2seq`]), one figure
/// per kind the model has, in the order encoder self-attention, decoder
/// self-attention, encoder–decoder attention. A one-map kind (Bahdanau's)
/// is drawn as the Bahdanau chapter draws it, 3.5 inches square; a grid
/// gets "layer i" and "head j" titles. The Transformer chapter's figures
/// and the book's widgets are drawn by this function.
///
/// # Errors
/// [`PlotError`] when a map cannot be drawn.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::{AttentionKind, attention_figures, predict_seq2seq};
///
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let device = Device::flex();
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&device);
/// let t = predict_seq2seq(&model, "go .", &data.src_vocab, &data.tgt_vocab, 5, &device).unwrap();
/// let figures = attention_figures(&t, "go .").unwrap();
/// // Bahdanau's one map: the tokens written by the source with <eos>.
/// assert_eq!(figures.len(), 1);
/// assert_eq!(figures[0].kind, AttentionKind::EncoderDecoder);
/// assert_eq!(figures[0].keys, ["go", ".", "<eos>"]);
/// assert_eq!(figures[0].grid, (1, 1));
/// ```
pub fn attention_figures(
    t: &Translation,
    source: &str,
) -> Result<Vec<AttentionFigure>, PlotError> {
    let kinds = [
        AttentionKind::EncoderSelfAttention,
        AttentionKind::DecoderSelfAttention,
        AttentionKind::EncoderDecoder,
    ];
    kinds
        .into_iter()
        .filter(|&kind| t.weights(kind, 0, 0).is_some())
        .map(|kind| attention_figure(t, source, kind))
        .collect()
}

/// The figure of one kind of attention of `t` (which has it).
fn attention_figure(
    t: &Translation,
    source: &str,
    kind: AttentionKind,
) -> Result<AttentionFigure, PlotError> {
    let count = |f: fn(&super::AttentionMap) -> usize| {
        t.attention
            .iter()
            .filter(|m| m.kind == kind)
            .map(f)
            .max()
            .map_or(0, |n| n + 1)
    };
    let (num_layers, num_heads) = (count(|m| m.layer), count(|m| m.head));
    // ANCHOR: heatmaps
    let source: Vec<&str> =
        source.split_whitespace().chain(["<eos>"]).collect();
    // one row per decoding step; a translation cut at num_steps has no <eos>
    let written: Vec<&str> =
        t.text.split_whitespace().chain(["<eos>"]).collect();
    // the decoder's inputs: <bos>, then each token written
    let read: Vec<&str> =
        ["<bos>"].into_iter().chain(written.clone()).collect();
    // (layers, heads, queries, keys), cut to the tokens that exist
    let grid: Vec<Tensor<3>> = (0..num_layers)
        .map(|layer| {
            let heads = (0..num_heads)
                .map(|head| t.weights(kind, layer, head).expect("a map"))
                .collect();
            Tensor::stack(heads, 0)
        })
        .collect();
    let grid: Tensor<4> = Tensor::stack(grid, 0);
    let [_, _, num_queries, num_keys] = grid.dims();
    let (queries, keys, xlabel, ylabel) = match kind {
        AttentionKind::EncoderSelfAttention => (
            &source,
            &source,
            "Source tokens (keys)",
            "Source tokens (queries)",
        ),
        AttentionKind::DecoderSelfAttention => (
            &written,
            &read,
            "Tokens read (keys)",
            "Tokens written (queries)",
        ),
        AttentionKind::EncoderDecoder => (
            &written,
            &source,
            "Source tokens (keys)",
            "Tokens written (queries)",
        ),
    };
    let (num_queries, num_keys) =
        (num_queries.min(queries.len()), num_keys.min(keys.len()));
    let grid = grid.narrow(2, 0, num_queries).narrow(3, 0, num_keys);
    let name = |what: &str, n: usize| -> Vec<String> {
        (1..=n).map(|i| format!("{what} {i}")).collect()
    };
    let (titles, layers) = (name("head", num_heads), name("layer", num_layers));
    let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
    let layers: Vec<&str> = layers.iter().map(String::as_str).collect();
    let one_map = num_layers * num_heads == 1;
    let options = HeatmapOptions {
        titles: (!one_map).then_some(&titles[..]),
        row_titles: (!one_map).then_some(&layers[..]),
        figsize: if one_map { (3.5, 3.5) } else { (7.0, 4.4) },
        xticks: Some(&keys[..num_keys]),
        yticks: Some(&queries[..num_queries]),
        ..HeatmapOptions::default()
    };
    let svg = show_heatmaps(&grid, xlabel, ylabel, options)?;
    // ANCHOR_END: heatmaps
    let owned =
        |tokens: &[&str]| tokens.iter().map(|s| s.to_string()).collect();
    Ok(AttentionFigure {
        kind,
        grid: (num_layers, num_heads),
        queries: owned(&queries[..num_queries]),
        keys: owned(&keys[..num_keys]),
        weights: grid,
        svg,
    })
}
