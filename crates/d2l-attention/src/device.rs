//! The one place where a reader's choice of backend becomes a burn
//! [`Device`]: `--device` on the command line or the `D2L_DEVICE`
//! environment variable, with the values `flex`, `libtorch` and
//! `libtorch-cuda:N`.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;

/// The environment variable that picks the backend when no `--device` is given.
///
/// # Examples
/// ```
/// assert_eq!(d2l_attention::device::DEVICE_ENV, "D2L_DEVICE");
/// ```
pub const DEVICE_ENV: &str = "D2L_DEVICE";

/// The values `--device` and [`DEVICE_ENV`] accept.
///
/// # Examples
/// ```
/// use d2l_attention::device::VALID_DEVICES;
///
/// assert!(VALID_DEVICES.starts_with("flex, libtorch"));
/// ```
pub const VALID_DEVICES: &str =
    "flex, libtorch, libtorch-cuda:N (N = GPU index)";

/// A reader's choice of backend for the book's code (named so as not to
/// collide with burn's `Backend` trait).
///
/// # Examples
/// ```
/// use d2l_attention::BackendChoice;
///
/// let choice: BackendChoice = "libtorch-cuda:1".parse().unwrap();
/// assert_eq!(choice, BackendChoice::LibTorchCuda(1));
/// assert_eq!(choice.to_string(), "libtorch-cuda:1");
/// assert_eq!(BackendChoice::default(), BackendChoice::Flex);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// burn's pure-Rust CPU backend; needs nothing but cargo. The default.
    #[default]
    Flex,
    /// PyTorch's libtorch on the CPU (cargo feature `tch`).
    LibTorch,
    /// PyTorch's libtorch on CUDA GPU number `N` (cargo feature `tch`).
    LibTorchCuda(usize),
}

/// Why a backend choice could not be honoured.
///
/// # Examples
/// ```
/// use d2l_attention::BackendChoice;
/// use d2l_attention::device::DeviceError;
///
/// let err = "cuda".parse::<BackendChoice>().unwrap_err();
/// assert!(matches!(err, DeviceError::Unknown { .. }));
/// assert!(err.to_string().contains("valid choices: flex, libtorch"));
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeviceError {
    /// The name is not one of [`VALID_DEVICES`].
    #[error("unknown device `{given}`; valid choices: {VALID_DEVICES}")]
    Unknown {
        /// What the reader asked for.
        given: String,
    },
    /// [`DEVICE_ENV`] names no backend.
    #[error(
        "{DEVICE_ENV}=`{given}` names an unknown device; valid choices: {VALID_DEVICES}"
    )]
    UnknownInEnv {
        /// The variable's value.
        given: String,
    },
    /// The backend exists but this build does not include it.
    #[error(
        "device `{given}` needs the cargo feature `{feature}`, which this build lacks; \
         rebuild with `--features {feature}` (see the README, \"Running on libtorch\")"
    )]
    NotCompiled {
        /// What the reader asked for.
        given: String,
        /// The cargo feature of `d2l-attention` that adds it.
        feature: &'static str,
    },
}

impl FromStr for BackendChoice {
    type Err = DeviceError;

    /// Parses `flex`, `libtorch` or `libtorch-cuda:N` (case-insensitive,
    /// surrounding spaces ignored).
    fn from_str(s: &str) -> Result<Self, DeviceError> {
        let name = s.trim().to_ascii_lowercase();
        let unknown = || DeviceError::Unknown {
            given: s.to_owned(),
        };
        match name.as_str() {
            "flex" => Ok(BackendChoice::Flex),
            "libtorch" => Ok(BackendChoice::LibTorch),
            _ => {
                let index =
                    name.strip_prefix("libtorch-cuda:").ok_or_else(unknown)?;
                index
                    .parse()
                    .map(BackendChoice::LibTorchCuda)
                    .map_err(|_| unknown())
            }
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendChoice::Flex => write!(f, "flex"),
            BackendChoice::LibTorch => write!(f, "libtorch"),
            BackendChoice::LibTorchCuda(i) => write!(f, "libtorch-cuda:{i}"),
        }
    }
}

impl BackendChoice {
    /// The backend named by [`DEVICE_ENV`], or [`BackendChoice::Flex`] when it is
    /// unset or empty.
    ///
    /// # Errors
    /// [`DeviceError::UnknownInEnv`] when the variable holds something else.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::BackendChoice;
    ///
    /// // With D2L_DEVICE unset (as in the doc-tests), the default.
    /// if std::env::var_os("D2L_DEVICE").is_none() {
    ///     assert_eq!(BackendChoice::from_env(), Ok(BackendChoice::Flex));
    /// }
    /// ```
    pub fn from_env() -> Result<Self, DeviceError> {
        match std::env::var(DEVICE_ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .parse()
                .map_err(|_| DeviceError::UnknownInEnv { given: v }),
            _ => Ok(BackendChoice::Flex),
        }
    }

    /// The burn device for this backend (without autodiff; call
    /// `.autodiff()` on it to train).
    ///
    /// # Errors
    /// [`DeviceError::NotCompiled`] for a libtorch backend in a build
    /// without the `tch` feature.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::BackendChoice;
    ///
    /// let device = BackendChoice::Flex.device().unwrap();
    /// assert_eq!(device, Device::flex());
    /// let x = Tensor::<1>::from_floats([1.0, 2.0], &device);
    /// assert_eq!(x.sum().into_scalar::<f32>(), 3.0);
    /// ```
    pub fn device(self) -> Result<Device, DeviceError> {
        match self {
            BackendChoice::Flex => Ok(Device::flex()),
            #[cfg(feature = "tch")]
            #[allow(deprecated)]
            // burn marks tch for removal; it is our second backend
            BackendChoice::LibTorch => Ok(Device::libtorch()),
            #[cfg(feature = "tch")]
            #[allow(deprecated)]
            BackendChoice::LibTorchCuda(i) => Ok(Device::libtorch_cuda(i)),
            #[cfg(not(feature = "tch"))]
            _ => Err(DeviceError::NotCompiled {
                given: self.to_string(),
                feature: "tch",
            }),
        }
    }

    /// The backends this build can run on the CPU: flex, plus libtorch with
    /// the `tch` feature. Tests run every listing on each of them.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::BackendChoice;
    ///
    /// let backends = BackendChoice::compiled_cpu_backends();
    /// assert_eq!(backends[0], BackendChoice::Flex);
    /// assert_eq!(backends.len(), if cfg!(feature = "tch") { 2 } else { 1 });
    /// ```
    pub fn compiled_cpu_backends() -> Vec<BackendChoice> {
        let mut all = vec![BackendChoice::Flex];
        if cfg!(feature = "tch") {
            all.push(BackendChoice::LibTorch);
        }
        all
    }
}

/// The name of the backend `device` computes on (with or without
/// autodiff): `flex`, `libtorch`, … as [`BackendChoice`] writes it, or burn's
/// own description of a device that is not one of this build's CPU backends.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::device::name;
///
/// assert_eq!(name(&Device::flex()), "flex");
/// assert_eq!(name(&Device::flex().autodiff()), "flex");
/// ```
pub fn name(device: &Device) -> String {
    let inner = if device.is_autodiff() {
        device.clone().inner()
    } else {
        device.clone()
    };
    BackendChoice::compiled_cpu_backends()
        .into_iter()
        .find(|b| b.device().is_ok_and(|d| d == inner))
        .map_or_else(|| format!("{inner:?}"), |b| b.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in [
            BackendChoice::Flex,
            BackendChoice::LibTorch,
            BackendChoice::LibTorchCuda(3),
        ] {
            assert_eq!(b.to_string().parse::<BackendChoice>(), Ok(b));
        }
        assert_eq!(" FLEX ".parse::<BackendChoice>(), Ok(BackendChoice::Flex));
    }

    #[test]
    fn unknown_name_lists_the_choices() {
        for bad in ["cuda", "libtorch-cuda:x", "libtorch-cuda:", ""] {
            let err = bad.parse::<BackendChoice>().unwrap_err();
            assert_eq!(
                err,
                DeviceError::Unknown {
                    given: bad.to_owned()
                }
            );
            let msg = err.to_string();
            assert!(msg.contains("flex, libtorch, libtorch-cuda:N"), "{msg}");
        }
    }

    #[cfg(not(feature = "tch"))]
    #[test]
    fn libtorch_without_the_feature_names_it() {
        let err = BackendChoice::LibTorch.device().unwrap_err();
        assert_eq!(
            err,
            DeviceError::NotCompiled {
                given: "libtorch".into(),
                feature: "tch"
            }
        );
        assert!(err.to_string().contains("--features tch"));
    }

    #[test]
    fn flex_is_always_there() {
        assert!(BackendChoice::Flex.device().is_ok());
    }

    #[test]
    fn devices_are_named_by_their_backend() {
        for backend in BackendChoice::compiled_cpu_backends() {
            let device = backend.device().unwrap();
            assert_eq!(name(&device), backend.to_string());
            assert_eq!(name(&device.autodiff()), backend.to_string());
        }
    }
}
