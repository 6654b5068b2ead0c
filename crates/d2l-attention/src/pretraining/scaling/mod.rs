//! Laws of how the loss falls with model size and data, and their fits:
//! the power law (Kaplan et al. 2020), the logarithmic law, and Hoffmann
//! et al.'s parametric loss with an irreducible term (2022).

mod log_law;
mod parametric;
mod power;

pub use log_law::LogLaw;
pub use parametric::{HUBER_DELTA, ParametricLoss};
pub use power::PowerLaw;
