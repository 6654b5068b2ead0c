//! The logarithmic law: a straight line through points on a log-x axis.

/// L = a − b·ln x: the loss falls by the same b·ln 2 at every doubling of
/// x, with no floor (against a [`PowerLaw`](super::PowerLaw), which falls
/// by the same factor). Fitted by least squares in L.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLaw {
    /// The loss at x = 1.
    pub a: f64,
    /// The fall per unit of ln x: b·ln 2 a doubling.
    pub b: f64,
}

impl LogLaw {
    /// The least-squares line through (ln x, y).
    ///
    /// # Panics
    /// When there are fewer than two points, the lengths differ, an `x` is
    /// not a positive finite number or a `y` not finite (the message names
    /// the argument, the index and the value), or all x are equal.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::pretraining::LogLaw;
    ///
    /// // y = 5 − 0.25 ln x exactly.
    /// let x = [10.0, 100.0, 1000.0];
    /// let y: Vec<f64> = x.iter().map(|x: &f64| 5.0 - 0.25 * x.ln()).collect();
    /// let fit = LogLaw::fit(&x, &y);
    /// assert!((fit.a - 5.0).abs() < 1e-12 && (fit.b - 0.25).abs() < 1e-12);
    /// assert!((fit.at(1.0) - 5.0).abs() < 1e-12);
    /// ```
    pub fn fit(x: &[f64], y: &[f64]) -> Self {
        assert!(
            x.len() == y.len() && x.len() >= 2,
            "`x` and `y` need the same length, at least 2"
        );
        let bad = |values: &[f64], ok: fn(f64) -> bool| {
            values.iter().position(|v| !ok(*v))
        };
        if let Some(i) = bad(x, |v| v.is_finite() && v > 0.0) {
            panic!("`x[{i}]` is {}: ln x needs positive finite x", x[i]);
        }
        if let Some(i) = bad(y, f64::is_finite) {
            panic!("`y[{i}]` is {}: not a finite number", y[i]);
        }
        let lx: Vec<f64> = x.iter().map(|v| v.ln()).collect();
        let n = x.len() as f64;
        let (mx, my) = (lx.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
        let sxx: f64 = lx.iter().map(|a| (a - mx).powi(2)).sum();
        assert!(sxx > 0.0, "all `x` are equal");
        let sxy: f64 = lx.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
        let b = -sxy / sxx;
        LogLaw { a: my + b * mx, b }
    }

    /// The fitted y at `x`.
    ///
    /// # Examples
    /// See [`LogLaw::fit`].
    pub fn at(&self, x: f64) -> f64 {
        self.a - self.b * x.ln()
    }
}
