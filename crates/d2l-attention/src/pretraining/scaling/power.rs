//! Power laws: the straight line through points on log–log axes.

/// A power law y = (c / x)^alpha, as Kaplan et al. 2020 write the loss
/// against model size (L(N) = (N_c / N)^α_N) and data (L(D) = (D_c /
/// D)^α_D).
#[derive(Clone, Debug, PartialEq)]
pub struct PowerLaw {
    /// The exponent α: y falls by a factor 2^α when x doubles.
    pub alpha: f64,
    /// The scale c, in the units of x.
    pub c: f64,
    /// ln y − ln of the fitted y at each point, in the points' order.
    pub residuals: Vec<f64>,
}

impl PowerLaw {
    /// The least-squares line through (ln x, ln y): slope −α, intercept
    /// α ln c.
    ///
    /// # Panics
    /// When there are fewer than two points, the lengths differ, a value
    /// is not a positive finite number (0, a negative number, ±∞ or NaN:
    /// the message names `x` or `y`, the index and the value), all x are
    /// equal, or the line is flat (α = 0, no power law). A fit is never
    /// NaN.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::pretraining::PowerLaw;
    ///
    /// // y = (100 / x)^0.5 exactly.
    /// let x = [1.0, 4.0, 25.0];
    /// let y: Vec<f64> = x.iter().map(|x: &f64| (100.0 / x).sqrt()).collect();
    /// let fit = PowerLaw::fit(&x, &y);
    /// assert!((fit.alpha - 0.5).abs() < 1e-12 && (fit.c - 100.0).abs() < 1e-9);
    /// assert!(fit.residuals.iter().all(|r| r.abs() < 1e-12));
    /// assert!((fit.at(400.0) - 0.5).abs() < 1e-12);
    /// ```
    pub fn fit(x: &[f64], y: &[f64]) -> Self {
        assert!(
            x.len() == y.len() && x.len() >= 2,
            "`x` and `y` need the same length, at least 2"
        );
        for (arg, values) in [("x", x), ("y", y)] {
            if let Some(i) =
                values.iter().position(|v| !(v.is_finite() && *v > 0.0))
            {
                panic!(
                    "`{arg}[{i}]` is {}: a power law needs positive finite \
                     values",
                    values[i]
                );
            }
        }
        let (lx, ly): (Vec<f64>, Vec<f64>) =
            x.iter().zip(y).map(|(x, y)| (x.ln(), y.ln())).unzip();
        let n = lx.len() as f64;
        let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
        let sxx: f64 = lx.iter().map(|a| (a - mx).powi(2)).sum();
        assert!(sxx > 0.0, "all `x` are equal");
        let sxy: f64 =
            lx.iter().zip(&ly).map(|(a, b)| (a - mx) * (b - my)).sum();
        let slope = sxy / sxx;
        let intercept = my - slope * mx;
        let alpha = -slope;
        assert!(alpha != 0.0, "the points lie on a flat line: no power law");
        let residuals = lx
            .iter()
            .zip(&ly)
            .map(|(a, b)| b - (intercept + slope * a))
            .collect();
        PowerLaw {
            alpha,
            c: (intercept / alpha).exp(),
            residuals,
        }
    }

    /// The fitted y at `x`.
    ///
    /// # Examples
    /// See [`PowerLaw::fit`].
    pub fn at(&self, x: f64) -> f64 {
        (self.c / x).powf(self.alpha)
    }
}
