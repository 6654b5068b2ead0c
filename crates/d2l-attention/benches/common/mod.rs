//! What the benchmarks share: the two chapters' models, and the CPU's name.
#![allow(dead_code)] // each bench uses its own part

use burn::tensor::Device;
use d2l_attention::bahdanau::BahdanauModel;
use d2l_attention::listings::bahdanau_exercises::chapter_config;
use d2l_attention::machine_translation::NmtData;
use d2l_attention::transformer::{TransformerConfig, TransformerModel};

/// The Bahdanau chapter's model (d2l zh §10.4: embed 32, hidden 32, two
/// layers, dropout 0.1) for `data`, on `device`.
pub fn bahdanau(data: &NmtData, device: &Device) -> BahdanauModel {
    chapter_config(data).init(device)
}

/// The Transformer chapter's model (d2l zh §10.7.6: 32 hidden, FFN 64,
/// 4 heads, 2 blocks, dropout 0.1: the config's defaults) for `data`.
pub fn transformer(data: &NmtData, device: &Device) -> TransformerModel {
    TransformerConfig::new(data.src_vocab.len(), data.tgt_vocab.len())
        .init(device)
}

/// The CPU's model name and its vector extensions that matter for f32
/// products, from /proc/cpuinfo ("unknown" elsewhere).
pub fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_owned())
    };
    let flags = field("flags").unwrap_or_default();
    let has: Vec<&str> = ["avx2", "fma", "avx512f"]
        .into_iter()
        .filter(|f| flags.split(' ').any(|x| x == *f))
        .collect();
    let model = field("model name").unwrap_or_else(|| "unknown CPU".into());
    match has.is_empty() {
        true => model,
        false => format!("{model} ({})", has.join(", ")),
    }
}
