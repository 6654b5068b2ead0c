//! Hoffmann et al.'s parametric loss, fitted their way.

use argmin::core::{CostFunction, Error, Executor, Gradient};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use rayon::prelude::*;

/// The Huber loss's threshold δ of Hoffmann et al. 2022, §3.3 eq. 3.
pub const HUBER_DELTA: f64 = 1e-3;

/// A loss that falls as a sum of power laws towards a floor:
/// L̂ = E + Σₖ Aₖ / xₖ^αₖ. With two variables, model size N and training
/// tokens D, it is the form Hoffmann et al. 2022 ("Chinchilla") fit,
/// §3.3 eq. 2: L̂(N, D) = E + A/N^α + B/D^β; with one, a power law with an
/// irreducible loss E.
#[derive(Clone, Debug, PartialEq)]
pub struct ParametricLoss {
    /// The irreducible loss E, in the loss' units.
    pub e: f64,
    /// (Aₖ, αₖ) for each variable, in the order of the fit's columns.
    pub terms: Vec<(f64, f64)>,
}

impl ParametricLoss {
    /// The fit of Hoffmann et al. 2022, §3.3 and appendix D.2: write
    /// A = eᵃ, E = eᵉ, so that ln L̂ = LSE(e, aₖ − αₖ ln xₖ), and minimise
    /// Σᵢ Huber_δ(ln L̂ᵢ − ln Lᵢ) ([`HUBER_DELTA`]) with L-BFGS (argmin's,
    /// with a Moré–Thuente line search) from every point of their grid:
    /// αₖ ∈ {0, 0.5, …, 2}, e ∈ {−1, −0.5, …, 1}, aₖ ∈ {0, 5, …, 25}
    /// (5 · 30ᵏ starts: 150 for one variable, 4,500 for two). The lowest
    /// objective wins; a start whose line search fails ends at the best
    /// point it reached, and one whose objective overflows is dropped.
    /// Where most residuals exceed δ (a loss that moves by more than 0.1 %
    /// between neighbouring points), the Huber loss is close to the sum of
    /// absolute residuals. [`ParametricLoss::fit_huber`] takes another δ.
    ///
    /// `columns[k][i]` is variable k at point i; `loss[i]` the loss there.
    ///
    /// # Panics
    /// When there are no columns or more than two (the grid has 150ᵏ × 5
    /// points), a column's length differs from `loss`'s, there are no
    /// more points than the form's 1 + 2k parameters, or a value is not a
    /// positive finite number (the message names `columns[k][i]` or
    /// `loss[i]` and the value).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::pretraining::ParametricLoss;
    ///
    /// // L = 2 + 400 / N^0.3 exactly, at seven sizes.
    /// let n: Vec<f64> = (0..7).map(|i| 10f64.powi(3 + i)).collect();
    /// let loss: Vec<f64> = n.iter().map(|n| 2.0 + 400.0 / n.powf(0.3)).collect();
    /// let fit = ParametricLoss::fit(&[&n], &loss);
    /// let (a, alpha) = fit.terms[0];
    /// assert!((fit.e - 2.0).abs() < 1e-3 && (alpha - 0.3).abs() < 1e-3);
    /// assert!((a / 400.0 - 1.0).abs() < 1e-2);
    /// assert!((fit.at(&[1e6]) / (2.0 + 400.0 / 1e6f64.powf(0.3)) - 1.0).abs() < 1e-4);
    /// ```
    pub fn fit(columns: &[&[f64]], loss: &[f64]) -> Self {
        Self::fit_huber(columns, loss, HUBER_DELTA)
    }

    /// [`ParametricLoss::fit`] with the Huber loss' threshold `delta`
    /// instead of Hoffmann et al.'s: `f64::INFINITY` makes it least squares
    /// in ln L.
    ///
    /// # Panics
    /// As [`ParametricLoss::fit`], and when `delta` is not positive.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::pretraining::ParametricLoss;
    ///
    /// let n: Vec<f64> = (0..7).map(|i| 10f64.powi(3 + i)).collect();
    /// let loss: Vec<f64> = n.iter().map(|n| 2.0 + 400.0 / n.powf(0.3)).collect();
    /// let fit = ParametricLoss::fit_huber(&[&n], &loss, f64::INFINITY);
    /// assert!((fit.e - 2.0).abs() < 1e-3 && (fit.terms[0].1 - 0.3).abs() < 1e-3);
    /// ```
    pub fn fit_huber(columns: &[&[f64]], loss: &[f64], delta: f64) -> Self {
        assert!(delta > 0.0, "`delta` is {delta}: it must be positive");
        let k = columns.len();
        assert!(
            (1..=2).contains(&k),
            "`columns`: {k} variables; the fit takes 1 or 2"
        );
        for (j, column) in columns.iter().enumerate() {
            assert!(
                column.len() == loss.len(),
                "`columns[{j}]` has {} values, `loss` {}",
                column.len(),
                loss.len()
            );
            check_positive(&format!("columns[{j}]"), column);
        }
        check_positive("loss", loss);
        assert!(
            loss.len() > 2 * k + 1,
            "{} points for {} parameters: the fit needs more points",
            loss.len(),
            2 * k + 1
        );
        let problem = Objective {
            logs: columns
                .iter()
                .map(|c| c.iter().map(|v| v.ln()).collect())
                .collect(),
            log_loss: loss.iter().map(|v| v.ln()).collect(),
            delta,
        };
        let (_, _, best) = starts(k)
            .into_par_iter()
            .enumerate()
            .filter_map(|(i, start)| {
                let (cost, theta) = problem.minimise(start)?;
                Some((cost, i, theta))
            })
            .reduce_with(|x, y| if (y.0, y.1) < (x.0, x.1) { y } else { x })
            .expect("L-BFGS failed from every start");
        ParametricLoss {
            e: best[0].exp(),
            terms: best[1..].chunks(2).map(|t| (t[0].exp(), t[1])).collect(),
        }
    }

    /// The fitted loss at the variables `x` (in the columns' order).
    ///
    /// # Examples
    /// See [`ParametricLoss::fit`].
    pub fn at(&self, x: &[f64]) -> f64 {
        self.e
            + self
                .terms
                .iter()
                .zip(x)
                .map(|((a, alpha), x)| a / x.powf(*alpha))
                .sum::<f64>()
    }
}

fn check_positive(name: &str, values: &[f64]) {
    if let Some(i) = values.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
        panic!(
            "`{name}[{i}]` is {}: the fit needs positive finite values",
            values[i]
        );
    }
}

/// Hoffmann et al.'s grid of starting points θ = (e, a₁, α₁, …).
fn starts(k: usize) -> Vec<Vec<f64>> {
    let steps = |lo: f64, step: f64, n: usize| -> Vec<f64> {
        (0..n).map(|i| lo + step * i as f64).collect()
    };
    let mut grid: Vec<Vec<f64>> =
        steps(-1.0, 0.5, 5).into_iter().map(|e| vec![e]).collect();
    for _ in 0..k {
        grid = grid
            .into_iter()
            .flat_map(|theta| {
                steps(0.0, 5.0, 6).into_iter().flat_map(move |a| {
                    let theta = theta.clone();
                    steps(0.0, 0.5, 5).into_iter().map(move |alpha| {
                        let mut t = theta.clone();
                        t.extend([a, alpha]);
                        t
                    })
                })
            })
            .collect();
    }
    grid
}

/// Σᵢ Huber_δ(LSE(e, aₖ − αₖ ln xᵢₖ) − ln Lᵢ) over θ = (e, a₁, α₁, …).
struct Objective {
    logs: Vec<Vec<f64>>,
    log_loss: Vec<f64>,
    delta: f64,
}

impl Objective {
    /// The objective and its gradient at θ.
    fn eval(&self, theta: &[f64]) -> (f64, Vec<f64>) {
        let mut cost = 0.0;
        let mut grad = vec![0.0; theta.len()];
        let mut parts = vec![0.0; 1 + self.logs.len()];
        for (i, log_loss) in self.log_loss.iter().enumerate() {
            parts[0] = theta[0];
            for (k, logs) in self.logs.iter().enumerate() {
                parts[1 + k] = theta[1 + 2 * k] - theta[2 + 2 * k] * logs[i];
            }
            let max = parts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = parts.iter().map(|p| (p - max).exp()).sum();
            let r = max + sum.ln() - log_loss;
            let delta = self.delta;
            let (huber, slope) = if r.abs() <= delta {
                (0.5 * r * r, r)
            } else {
                (delta * (r.abs() - 0.5 * delta), delta * r.signum())
            };
            cost += huber;
            grad[0] += slope * (parts[0] - max).exp() / sum;
            for (k, logs) in self.logs.iter().enumerate() {
                let w = slope * (parts[1 + k] - max).exp() / sum;
                grad[1 + 2 * k] += w;
                grad[2 + 2 * k] -= w * logs[i];
            }
        }
        (cost, grad)
    }

    /// [`Objective::eval`], or an error where it overflows (a step too
    /// far: the line search would chase NaN forever), which ends that
    /// start.
    fn finite(&self, theta: &[f64]) -> Result<(f64, Vec<f64>), Error> {
        let (cost, grad) = self.eval(theta);
        if cost.is_finite() && grad.iter().all(|g| g.is_finite()) {
            Ok((cost, grad))
        } else {
            Err(Error::msg("the objective overflowed"))
        }
    }

    /// L-BFGS from `start`: the objective and θ at its end, or `None`
    /// when the line search fails or the result is not finite.
    fn minimise(&self, start: Vec<f64>) -> Option<(f64, Vec<f64>)> {
        let solver = LBFGS::new(MoreThuenteLineSearch::new(), 10)
            .with_tolerance_grad(1e-12)
            .ok()?
            .with_tolerance_cost(0.0)
            .ok()?;
        let result = Executor::new(self, solver)
            .configure(|state| state.param(start).max_iters(500))
            .run()
            .ok()?;
        let state = result.state();
        let theta = state.best_param.clone()?;
        let cost = state.best_cost;
        (cost.is_finite() && theta.iter().all(|t| t.is_finite()))
            .then_some((cost, theta))
    }
}

impl CostFunction for &Objective {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, theta: &Vec<f64>) -> Result<f64, Error> {
        Ok(self.finite(theta)?.0)
    }
}

impl Gradient for &Objective {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, theta: &Vec<f64>) -> Result<Vec<f64>, Error> {
        Ok(self.finite(theta)?.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hoffmann et al.'s own law (eq. 10) on a grid of their sizes.
    #[test]
    fn recovers_hoffmanns_law_from_exact_values() {
        let law = ParametricLoss {
            e: 1.69,
            terms: vec![(406.4, 0.34), (410.7, 0.28)],
        };
        let (mut n, mut d, mut loss) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..5 {
            for j in 0..5 {
                let (ni, dj) = (1e7 * 5f64.powi(i), 1e9 * 5f64.powi(j));
                n.push(ni);
                d.push(dj);
                loss.push(law.at(&[ni, dj]));
            }
        }
        let fit = ParametricLoss::fit(&[&n, &d], &loss);
        assert!((fit.e - 1.69).abs() < 1e-3, "{fit:?}");
        for ((a, alpha), (a0, alpha0)) in fit.terms.iter().zip(&law.terms) {
            assert!((alpha - alpha0).abs() < 1e-3, "{fit:?}");
            assert!((a / a0 - 1.0).abs() < 1e-2, "{fit:?}");
        }
        let far = [1e11, 1e13];
        assert!((fit.at(&far) / law.at(&far) - 1.0).abs() < 1e-4);
    }

    #[test]
    fn the_gradient_is_the_objectives() {
        let problem = Objective {
            logs: vec![vec![5.0, 7.0, 9.0], vec![9.0, 10.0, 11.0]],
            log_loss: vec![1.3, 1.2, 1.1],
            delta: HUBER_DELTA,
        };
        let theta = [0.4, 3.0, 0.3, 4.0, 0.5];
        let (_, grad) = problem.eval(&theta);
        for j in 0..theta.len() {
            let h = 1e-6;
            let (mut up, mut down) = (theta.to_vec(), theta.to_vec());
            up[j] += h;
            down[j] -= h;
            let numeric =
                (problem.eval(&up).0 - problem.eval(&down).0) / (2.0 * h);
            assert!((numeric - grad[j]).abs() < 1e-7, "{j}: {grad:?}");
        }
    }

    /// One residual inside δ and one beyond it, by hand: at θ = (e, a, α)
    /// = (ln 2, 0, 0) the model is ln(2 + 1) at every point.
    #[test]
    fn the_objective_is_hoffmanns_huber_loss() {
        let at = |log_loss: f64| Objective {
            logs: vec![vec![1.0]],
            log_loss: vec![log_loss],
            delta: HUBER_DELTA,
        };
        let theta = [2f64.ln(), 0.0, 0.0];
        let inside = 3f64.ln() - 5e-4;
        assert!((at(inside).eval(&theta).0 - 0.5 * 5e-4 * 5e-4).abs() < 1e-15);
        let beyond = 3f64.ln() + 0.1;
        let expected = HUBER_DELTA * (0.1 - 0.5 * HUBER_DELTA);
        assert!((at(beyond).eval(&theta).0 - expected).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_named() {
        let bad = std::panic::catch_unwind(|| {
            ParametricLoss::fit(&[&[1.0, 2.0, 0.0, 4.0]], &[3.0; 4])
        })
        .unwrap_err();
        let message = bad.downcast_ref::<String>().unwrap();
        assert!(message.contains("`columns[0][2]` is 0"), "{message}");
        let few = std::panic::catch_unwind(|| {
            ParametricLoss::fit(&[&[1.0, 2.0, 3.0]], &[3.0; 3])
        })
        .unwrap_err();
        let message = few.downcast_ref::<String>().unwrap();
        assert!(message.contains("3 points for 3 parameters"), "{message}");
    }
}
