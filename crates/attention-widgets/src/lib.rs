//! The book's widgets in the reader's browser: `wasm-bindgen` bindings of
//! the `d2l-attention` library's [`widgets`] module, built for
//! `wasm32-unknown-unknown` on flex (README, "The widgets"). Each function
//! returns JSON for the page's script, or an error whose message the
//! widget shows. Nothing is computed here.

use std::cell::OnceCell;

use d2l_attention::bahdanau::{BahdanauModel, Seq2SeqConfig};
use d2l_attention::transformer::{TransformerConfig, TransformerModel};
use d2l_attention::widgets::{self, Translator, WidgetError, kernel_named};
use serde_json::json;
use wasm_bindgen::prelude::*;

/// The committed models (`models/`, trained by the chapters' listings).
const BAHDANAU: &[u8] = include_bytes!("../../../models/bahdanau-fra-eng.bpk");
const TRANSFORMER: &[u8] =
    include_bytes!("../../../models/transformer-fra-eng.bpk");

thread_local! {
    static BAHDANAU_MODEL: OnceCell<Translator<BahdanauModel>> =
        const { OnceCell::new() };
    static TRANSFORMER_MODEL: OnceCell<Translator<TransformerModel>> =
        const { OnceCell::new() };
}

fn js(err: WidgetError) -> JsError {
    JsError::new(&err.to_string())
}

/// Translates the reader's `sentence` with the chapter's trained `model`
/// (`"bahdanau"` or `"transformer"`): JSON with the sentence as read
/// (`source`), its `unknown` tokens, the translation (`text`) and the
/// attention `figures` (kind, grid, queries, keys, weights, svg).
///
/// # Errors
/// The message of the library's [`WidgetError`], or one naming `model`.
#[wasm_bindgen]
pub fn translate(model: &str, sentence: &str) -> Result<String, JsError> {
    let translation = match model {
        "bahdanau" => with_model(
            &BAHDANAU_MODEL,
            || {
                let name = "models/bahdanau-fra-eng.bpk";
                Translator::from_bytes(BAHDANAU, name, Seq2SeqConfig::init)
            },
            |t| t.translate(sentence),
        ),
        "transformer" => with_model(
            &TRANSFORMER_MODEL,
            || {
                let name = "models/transformer-fra-eng.bpk";
                Translator::from_bytes(
                    TRANSFORMER,
                    name,
                    TransformerConfig::init,
                )
            },
            |t| t.translate(sentence),
        ),
        _ => {
            return Err(JsError::new(&format!(
                "`model` is `{model}`; choose bahdanau or transformer"
            )));
        }
    };
    translation.map(|t| t.to_json().to_string()).map_err(js)
}

/// Runs `f` on the model in `cell`, loaded by `load` the first time.
fn with_model<M: 'static, T>(
    cell: &'static std::thread::LocalKey<OnceCell<Translator<M>>>,
    load: impl FnOnce() -> Result<Translator<M>, WidgetError>,
    f: impl FnOnce(&Translator<M>) -> Result<T, WidgetError>,
) -> Result<T, WidgetError> {
    cell.with(|cell| {
        if cell.get().is_none() {
            let _ = cell.set(load()?);
        }
        f(cell.get().expect("set above"))
    })
}

/// Nadaraya–Watson regression on the chapter's data with `kernel`
/// (gaussian, boxcar, constant, epanechikov) at `bandwidth`: JSON with
/// `test_mse` and the `estimate` and `heatmap` figures.
///
/// # Errors
/// The message of the library's [`WidgetError`].
#[wasm_bindgen]
pub fn nadaraya_watson(
    kernel: &str,
    bandwidth: f32,
) -> Result<String, JsError> {
    let kernel = kernel_named(kernel).map_err(js)?;
    let e = widgets::nadaraya_watson_at(kernel, bandwidth).map_err(js)?;
    Ok(e.to_json().to_string())
}

/// The positional encoding of `num_steps` positions in `encoding_dim`
/// columns: JSON with the `heatmap` and `columns` figures.
///
/// # Errors
/// The message of the library's [`WidgetError`].
#[wasm_bindgen]
pub fn positional_encoding(
    encoding_dim: usize,
    num_steps: usize,
) -> Result<String, JsError> {
    let (heatmap, columns) =
        widgets::positional_encoding_figures(encoding_dim, num_steps)
            .map_err(js)?;
    Ok(
        json!({ "heatmap": heatmap.as_str(), "columns": columns.as_str() })
            .to_string(),
    )
}
