//! Pretraining with Transformers (d2l en §11.9), small: the corpus's
//! English sentences as one language, the objectives of the three
//! families (BERT's masked tokens, T5's corrupted spans, GPT's next
//! token), an encoder-only and a decoder-only model built from the
//! chapter's Transformer blocks, their training loop, and using them
//! (filling a mask, generating). T5's encoder–decoder is the chapter's
//! [`TransformerModel`](crate::transformer::TransformerModel), trained by
//! [`train_seq2seq`](crate::seq2seq::train_seq2seq) on pairs that
//! [`corrupt_spans`] makes.
//!
//! Modes, as everywhere in this crate: training needs an autodiff device;
//! [`fill_mask`], [`generate`] and [`lm_valid_loss`] run the inference copy
//! (`model.valid()`, no dropout) whatever mode the model is in.

mod batch;
mod data;
mod finetune;
mod generate;
mod masking;
mod models;
mod scaling;
mod train;

pub use batch::{LmBatch, causal_batch, lm_loss, mlm_batch};
pub use data::{BOS, CLS, EOS, FIRST_WORD, LmData, MASK, PAD, RESERVED};
pub use finetune::{
    Labelled, SentenceClassifier, accuracy, classify_batch, fine_tune,
};
pub use generate::{Continuation, Filled, Sampling, fill_mask, generate};
pub use masking::{MlmExample, SENTINELS, corrupt_spans, mask_tokens};
pub use models::{
    CausalLm, LanguageModel, MaskLm, MaskedLm, MlmOutput, Scores,
};
pub use scaling::{HUBER_DELTA, LogLaw, ParametricLoss, PowerLaw};
pub use train::{LmEpoch, lm_valid_loss, pretrain};
