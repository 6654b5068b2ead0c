//! Dropout masks from a counter-based generator, filled in parallel.
//!
//! Element i of a mask is decided by word i of the ChaCha8 stream of the
//! call's seed (Bernstein's ChaCha, as the `chacha20` crate implements it).
//! ChaCha is counter-based (the block counter is its input), so each chunk
//! jumps to its own first word: the mask is the same whatever the chunking
//! and the number of threads, as PyTorch's Philox-based masks are.

use chacha20::ChaCha8Rng;
use chacha20::rand_core::{Rng, SeedableRng};
use rayon::prelude::*;

/// Elements per parallel task.
const CHUNK: usize = 1 << 14;

/// Words drawn from the stream at a time.
const WORDS: usize = 256;

/// Which weights dropout keeps: word w of the ChaCha8 stream of `seed`
/// keeps weight w when it is below (1 − p) · 2³², and a kept weight is
/// scaled by 1/(1 − p). Weight w of a (…, rows, cols) tensor is its
/// row-major index, so the fused attention and the unfused dropout keep
/// the same weights.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keep {
    seed: u64,
    threshold: u64,
    scale: f32,
}

impl Keep {
    /// Dropout with probability `prob` from the stream of `seed`.
    ///
    /// # Panics
    /// When `prob` is not in [0, 1) (the message names `prob`).
    pub(crate) fn new(seed: u64, prob: f64) -> Self {
        assert!(
            (0.0..1.0).contains(&prob),
            "`prob` is {prob}, expected a probability in [0, 1)"
        );
        let keep = 1.0 - prob;
        Self {
            seed,
            threshold: (keep * 4_294_967_296.0) as u64,
            scale: (1.0 / keep) as f32,
        }
    }

    /// Writes the factors of weights `start` … `start + out.len() − 1`:
    /// 1/(1 − p) where kept, 0 where dropped.
    pub(crate) fn fill(&self, start: usize, out: &mut [f32]) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_word_pos(start as u128);
        // The stream's words in blocks (little-endian bytes, the order
        // `next_u32` reads them in), then one comparison per weight.
        let mut bytes = [0u8; 4 * WORDS];
        for chunk in out.chunks_mut(WORDS) {
            let bytes = &mut bytes[..4 * chunk.len()];
            rng.fill_bytes(bytes);
            for (m, word) in chunk.iter_mut().zip(bytes.chunks_exact(4)) {
                let word = u32::from_le_bytes(word.try_into().expect("4"));
                *m = if u64::from(word) < self.threshold {
                    self.scale
                } else {
                    0.0
                };
            }
        }
    }
}

/// A dropout mask of `n` elements: 1/(1 − `prob`) where kept, 0 where
/// dropped, each kept with probability 1 − `prob` ([`Keep`]).
///
/// # Panics
/// When `prob` is not in [0, 1) (the message names `prob`).
pub(crate) fn dropout_mask(seed: u64, n: usize, prob: f64) -> Vec<f32> {
    let keep = Keep::new(seed, prob);
    let mut mask = vec![0.0f32; n];
    mask.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| keep.fill(i * CHUNK, chunk));
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mask is word i of one stream, whatever the threads.
    #[test]
    fn masks_follow_one_stream_whatever_the_threads() {
        let n = 3 * CHUNK + 17;
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| dropout_mask(7, n, 0.25))
        };
        let one = on(1);
        assert_eq!(one, on(2));
        assert_eq!(one, on(3));
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let threshold = (0.75 * 4_294_967_296.0) as u64;
        for (i, &m) in one.iter().enumerate() {
            let kept = u64::from(rng.next_u32()) < threshold;
            assert_eq!(m, if kept { 1.0 / 0.75 } else { 0.0 }, "element {i}");
        }
    }

    /// The kept fraction lies within 5 standard deviations of 1 − p.
    #[test]
    fn the_kept_fraction_is_binomial() {
        let n = 200_000;
        for (seed, prob) in [(1, 0.1), (2, 0.5), (3, 0.9)] {
            let kept = dropout_mask(seed, n, prob)
                .iter()
                .filter(|&&m| m > 0.0)
                .count();
            let (mean, sd) = (
                n as f64 * (1.0 - prob),
                (n as f64 * prob * (1.0 - prob)).sqrt(),
            );
            assert!(
                (kept as f64 - mean).abs() < 5.0 * sd,
                "p = {prob}: kept {kept}, expected {mean} ± {sd}"
            );
        }
        assert!(dropout_mask(4, 1000, 0.0).iter().all(|&m| m == 1.0));
    }

    #[test]
    #[should_panic(expected = "`prob` is 1")]
    fn a_probability_of_one_is_refused() {
        dropout_mask(0, 4, 1.0);
    }
}
